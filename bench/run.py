"""The multisoftmax benchmark: GB/s of softmax / log_softmax, forward and backward, against peers.

    python bench/run.py [--out DIR] [--smoke] [--only REGEX] [--n N,N,...] [--max-seconds S]

One run measures, in this order (so that a budget cut loses the least important part):
the copy bandwidth; host overhead per call; the N sweep in float32 and bfloat16; the LLM
shapes in bfloat16 and float32; the N sweep in float16. Every measurement checks its output
once against torch's float32 softmax of the same input. Writes results.json (after every
shape, so a killed run still leaves one), then results.md and PNG plots (bench/report.py).

GB/s counts the fewest bytes a fused kernel must move: forward reads x and writes y (2
tensors), backward reads y and dy and writes dx (3 tensors); divided by the median GPU time.
--smoke runs tiny shapes on the CPU (no CUDA needed) to exercise every code path; with
TRITON_INTERPRET=1 in the environment the Triton kernels (ours and the Triton peers) run
through Triton's interpreter.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import math
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time

T0 = time.time()
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.dirname(HERE), HERE]

# Shapes. Sweep: M = min(M_CAP, 256 MB / (N * itemsize)), as in ../shared/anchors/h100-peers.md.
SWEEP_N = [128, 256, 512, 781, 1024, 1152, 2048, 3000, 4096, 8192, 16384, 16385, 29440, 32768, 50257,
           65536, 131072, 262144, 1048576]
SWEEP_BYTES = 256 * 2**20
M_CAP = 65536
LLM_SHAPES = [(65536, 128), (65536, 256), (65536, 1024), (32768, 2048), (8192, 8192),  # attention rows
              (4096, 32000), (4096, 50257), (1024, 128256), (512, 151936), (256, 256000),  # vocab logits
              (1, 128256), (8, 128256), (64, 128256), (1, 256000), (8, 256000), (64, 256000),
              (16, 1048576)]  # few long rows
SMOKE_SWEEP_N, SMOKE_M = [8, 33], 4
SMOKE_LLM_SHAPES = [(1, 300), (2, 1000)]
VOCAB_N = 32000  # LLM shapes from this N on also get log_softmax (cross-entropy's op)
HOST_SHAPE = (32, 1024)
HOST_CALLS = 1000
HOST_ROUNDS = 7
# max |error| allowed, times max(1, max |reference|): a few units of the dtype's rounding.
TOL = {"float32": 1e-4, "float16": 2**-8, "bfloat16": 2**-5}
LOG_IMPLS = ("ms-torch", "ms-jax", "torch", "xla")  # log_softmax: ours and the frameworks'


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", help="output folder (default bench/results/<device>/, a temp folder with --smoke)")
    p.add_argument("--smoke", action="store_true", help="tiny shapes on the CPU: exercise the code paths")
    p.add_argument("--only", help="regex on 'suite/dtype/op/direction/impl' (e.g. 'ms-|torch$'); "
                                  "host overhead keys are 'host/impl'")
    p.add_argument("--max-seconds", type=float, default=420.0,
                   help="stop starting measurements this long after start (outputs are still written)")
    p.add_argument("--m-cap", type=int, default=M_CAP, help="largest M of the sweep (anchors: 65536)")
    p.add_argument("--max-n", type=int, default=None, help="only shapes with N <= this (to re-measure short rows)")
    p.add_argument("--n", default=None, help="only shapes with these N, comma-separated (to re-measure a change); "
                   "an N off the sweep is measured as a sweep shape (~256 MB)")
    return p.parse_args(argv)


# --------------------------------------------------------------------------------------
# environment
# --------------------------------------------------------------------------------------
def setup_env(smoke: bool):
    """Environment that must be set before torch / jax / triton are imported."""
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # torch and JAX share the GPU
    os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")  # one kernel a graph: no worker pool
    if smoke:
        os.environ.setdefault("JAX_PLATFORMS", "cpu")
        if os.environ.get("TRITON_INTERPRET") == "1":
            os.environ.setdefault("MULTISOFTMAX_INTERPRET", "1")


def git_tree(folder: str) -> str | None:
    """git's id for the tree of `folder`'s .py files (`__pycache__` left out), computed without git.

    For the benchmark's record of which code ran: `git rev-parse <commit>:multisoftmax` prints
    this id for exactly the commits whose package holds these files. (The GPU machine gets a copy
    of the working tree whose own git metadata need not match it, so asking git there can name
    the wrong commit.) Files count as mode 100644, as every tracked file of the package is.
    Returns None for a folder holding no .py file, which git would not record either.
    Source: git's object format (`git hash-object`, `git mktree`).
    """
    entries = []
    for name in os.listdir(folder):
        path = os.path.join(folder, name)
        if os.path.isdir(path):
            sub = None if name == "__pycache__" else git_tree(path)
            if sub:  # git sorts a folder as its name followed by "/"
                entries.append((name + "/", b"40000 %s\0%s" % (name.encode(), bytes.fromhex(sub))))
        elif name.endswith(".py"):
            with open(path, "rb") as f:
                data = f.read()
            blob = hashlib.sha1(b"blob %d\0%s" % (len(data), data)).digest()
            entries.append((name, b"100644 %s\0%s" % (name.encode(), blob)))
    if not entries:
        return None
    body = b"".join(e for _, e in sorted(entries, key=lambda e: e[0].encode()))
    return hashlib.sha1(b"tree %d\0%s" % (len(body), body)).hexdigest()


def versions() -> dict:
    import importlib.metadata as md

    out = {"python": platform.python_version()}
    for dist in ("torch", "triton", "jax", "jaxlib", "jax-triton", "numba", "numba-cuda", "numpy",
                 "liger-kernel", "matplotlib"):
        try:
            out[dist] = md.version(dist)
        except md.PackageNotFoundError:
            out[dist] = None
    return out


def device_info(cuda: bool) -> dict:
    import torch

    if not cuda:
        return {"name": f"CPU ({platform.processor() or platform.machine()})", "slug": "cpu-smoke", "sms": 4,
                "l2_bytes": 32 * 2**20, "cuda": None, "driver": None}
    props = torch.cuda.get_device_properties(0)
    try:
        driver = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                capture_output=True, text=True, timeout=20).stdout.strip().splitlines()[0]
    except Exception:  # noqa: BLE001
        driver = None
    known = re.search(r"\b([ABHL]\d{2,3}S?|GB?\d{3})\b", props.name)
    slug = known.group(1).lower() if known else re.sub(r"[^a-z0-9]+", "-", props.name.lower()).strip("-")
    return {"name": props.name, "slug": slug, "sms": props.multi_processor_count,
            "l2_bytes": getattr(props, "L2_cache_size", 50 * 2**20), "memory_GiB": round(props.total_memory / 2**30, 1),
            "cuda": torch.version.cuda, "driver": driver}


# --------------------------------------------------------------------------------------
# one (M, N, dtype) problem: inputs and float32 references
# --------------------------------------------------------------------------------------
class Case:
    def __init__(self, M: int, N: int, dtype: str, device: str, seed: int):
        import torch

        self.M, self.N, self.dtype = M, N, dtype
        tdt = getattr(torch, dtype)
        g = torch.Generator(device).manual_seed(seed)
        # randn * 2: logits with a realistic spread (never zeros, never constant rows)
        self.x = (torch.randn(M, N, device=device, generator=g) * 2).to(tdt)
        self.dy = torch.randn(M, N, device=device, generator=g).to(tdt)
        self._refs, self._jax = {}, {}

    def ref(self, op: str) -> dict:
        """float32 y and dx computed by torch from this x and dy; y_in = y in x's dtype."""
        import torch

        if op not in self._refs:
            x32, dy32 = self.x.float(), self.dy.float()
            if op == "softmax":
                y32 = torch.softmax(x32, -1)
                dx32 = torch.ops.aten._softmax_backward_data(dy32, y32, 1, torch.float32)
            else:
                y32 = torch.log_softmax(x32, -1)
                dx32 = torch.ops.aten._log_softmax_backward_data(dy32, y32, 1, torch.float32)
            del x32, dy32
            self._refs[op] = {"y": y32, "dx": dx32, "y_in": y32.to(self.x.dtype),
                              "scale": {"fwd": max(1.0, y32.abs().max().item()),
                                        "bwd": max(1.0, dx32.abs().max().item())}}
        return self._refs[op]

    def jax(self, name: str):
        """x or dy as a JAX array on the same device (zero-copy through DLPack where possible)."""
        if name not in self._jax:
            self._jax[name] = to_jax(getattr(self, name))
        return self._jax[name]

    def nbytes(self, direction: str) -> int:
        return (2 if direction == "fwd" else 3) * self.x.numel() * self.x.element_size()


def to_jax(t):
    import jax
    import jax.numpy as jnp
    import torch

    if t.is_cuda:
        torch.cuda.synchronize()
    try:
        return jax.dlpack.from_dlpack(t.contiguous())
    except Exception:  # noqa: BLE001  (through the host)
        a = t.float().cpu().numpy()
        return jnp.asarray(a).astype(str(t.dtype).replace("torch.", ""))


def to_torch(a, device: str):
    import jax
    import numpy as np
    import torch

    jax.block_until_ready(a)
    try:
        return torch.from_dlpack(a)
    except Exception:  # noqa: BLE001
        return torch.from_numpy(np.asarray(a.astype("float32"))).to(device)


def max_err(out, ref32) -> float:
    err = (out.float() - ref32).abs().max().item()
    return err if math.isfinite(err) else float("nan")


# --------------------------------------------------------------------------------------
# the run
# --------------------------------------------------------------------------------------
class Bench:
    def __init__(self, args):
        self.args = args
        self.smoke = args.smoke
        self.deadline = T0 + args.max_seconds
        self.only = re.compile(args.only) if args.only else None
        self.records, self.done = [], {}
        self.skipped_by_budget, self.budget_hit_at = 0, None
        self.host, self.host_rounds = {}, {}

    # ---- bookkeeping -------------------------------------------------------------------
    def elapsed(self) -> float:
        return time.time() - T0

    def selected(self, key: str) -> bool:
        return self.only is None or bool(self.only.search(key))

    def over_budget(self, key: str) -> bool:
        if time.time() < self.deadline:
            return False
        self.skipped_by_budget += 1
        if self.budget_hit_at is None:
            self.budget_hit_at = key
            print(f"[{self.elapsed():5.0f}s] BUDGET: --max-seconds {self.args.max_seconds:.0f} reached at {key}; "
                  f"no new measurements", flush=True)
        return True

    def log(self, rec: dict):
        if rec["status"] == "ok":
            extra = f" (call {rec['call_us']:.1f} us)" if rec.get("call_us") is not None else ""
            flag = "  WRONG" if rec["wrong"] else ""
            msg = (f"{rec['GBps']:7.0f} GB/s {rec['median_us']:9.1f} us{extra}  err {rec['max_err']:.1e}{flag}  "
                   f"[{rec['method']}]")
        else:
            msg = f"{rec['status']}: {rec.get('error', '')[:120]}"
        print(f"[{self.elapsed():5.0f}s] {rec['suite']:5s} {rec['dtype']:8s} {rec['M']:>6d}x{rec['N']:<7d} "
              f"{rec['op']:11s} {rec['direction']} {rec['impl']:8s} {msg}", flush=True)

    # ---- which measurements ------------------------------------------------------------
    def wanted(self, suite, dtype, op, direction, impl, N) -> bool:
        """The cuts that make the full run fit in its time budget (see bench/README.md)."""
        if op == "log_softmax" and impl.name not in LOG_IMPLS:
            return False
        if impl.name == "compile" and (suite != "sweep" or dtype == "float16"):
            return False  # each shape recompiles (~1 s): float32/bfloat16 sweep only, as the anchors
        return impl.supports(dtype, N, op, direction) is None

    # ---- measuring ---------------------------------------------------------------------
    def run_case(self, suite: str, M: int, N: int, dtype: str, ops: tuple):
        todo = []
        for op in ops:
            for direction in ("fwd", "bwd"):
                for impl in self.impls:
                    key = f"{suite}/{dtype}/{op}/{direction}/{impl.name}"
                    if self.wanted(suite, dtype, op, direction, impl, N) and self.selected(key):
                        todo.append((op, direction, impl, key))
        if not todo:
            return
        case = None
        for op, direction, impl, key in todo:
            done = self.done.get((M, N, dtype, op, direction, impl.name))
            if done is not None:  # the same problem measured in another suite
                rec = dict(done, suite=suite, reused_from=done["suite"])
                self.records.append(rec)
                self.log(rec)
                continue
            if self.over_budget(key):
                continue
            if case is None:
                case = Case(M, N, dtype, self.device, seed=(M * 1_000_003 + N * 7 + len(dtype)) % 2**31)
            rec = self.measure(suite, case, op, direction, impl)
            self.records.append(rec)
            self.done[(M, N, dtype, op, direction, impl.name)] = rec
            self.log(rec)
        del case
        self.free()

    def measure(self, suite, case: Case, op, direction, impl) -> dict:
        import torch

        rec = dict(suite=suite, M=case.M, N=case.N, dtype=case.dtype, op=op, direction=direction, impl=impl.name)
        nbytes = case.nbytes(direction)
        t = time.time()
        try:
            ref = case.ref(op)
            if impl.framework == "jax":
                out, median_us, call_us, method = self.time_jax(impl, case, op, direction, nbytes)
            else:
                out, median_us, method = self.time_torch(impl, case, op, direction, nbytes)
                call_us = None
            err = max_err(out, ref["y" if direction == "fwd" else "dx"])
            del out
            tol = TOL[case.dtype] * ref["scale"][direction]
            rec.update(status="ok", median_us=median_us, GBps=nbytes / median_us / 1e3, call_us=call_us,
                       method=method, max_err=err, tol=tol, wrong=not err <= tol)
        except Exception as e:  # noqa: BLE001  (a peer refusing a shape is a result: ERR)
            msg = str(e).strip().splitlines()
            rec.update(status="ERR", error=f"{type(e).__name__}: {msg[0][:300] if msg else ''}")
            if self.cuda:
                try:
                    torch.cuda.synchronize()
                except Exception:  # noqa: BLE001
                    pass
        rec["wall_s"] = round(time.time() - t, 3)
        return rec

    def time_torch(self, impl, case, op, direction, nbytes):
        import timing
        import torch

        if direction == "fwd":
            fn, args = (lambda x: impl.fwd(x, op)), (case.x,)
        else:
            fn, args = (lambda y, dy: impl.bwd(y, dy, op)), (case.ref(op)["y_in"], case.dy)
        out = fn(*args)  # compiles / autotunes; the output that is checked
        if self.cuda:
            torch.cuda.synchronize()
        median_us, method = timing.torch_time(fn, args, nbytes, cuda=self.cuda, graphable=impl.graphable,
                                              l2_bytes=self.dev["l2_bytes"])
        return out, median_us, method

    def time_jax(self, impl, case, op, direction, nbytes):
        import jax

        import timing

        x = case.jax("x")
        if direction == "fwd":
            f, args = (lambda x: impl.fwd(x, op)), (x,)
        else:  # the residuals come from a (jitted) forward outside the timed function
            pullback = jax.jit(lambda x: jax.vjp(lambda a: impl.fwd(a, op), x)[1])(x)
            f, args = (lambda pb, dy: pb(dy)[0]), (pullback, case.jax("dy"))
        out, median_us, call_us, method = timing.jax_time(f, args, nbytes, gpu=self.cuda,
                                                          l2_bytes=self.dev["l2_bytes"])
        return to_torch(out, self.device), median_us, call_us, method

    def free(self):
        import gc

        import torch

        if self.cuda:
            gc.collect()
            torch.cuda.empty_cache()

    # ---- sections ----------------------------------------------------------------------
    def host_overhead(self) -> dict:
        """Host time a call at HOST_SHAPE float32 softmax forward, per impl: the best of
        HOST_ROUNDS interleaved rounds of HOST_CALLS back-to-back calls (timing.host_rounds, as
        bench/overhead.py); every round's figure goes to self.host_rounds."""
        import jax
        import torch

        import timing

        M, N = HOST_SHAPE
        # --smoke: few calls: through the interpreters a call takes ms (Triton) to s (Numba's simulator)
        warm, calls, rounds = (1, 2, 2) if self.smoke else (10, HOST_CALLS, HOST_ROUNDS)
        x = torch.randn(M, N, device=self.device)
        xj = to_jax(x)
        sync = torch.cuda.synchronize if self.cuda else (lambda: None)
        out, entries = {}, {}
        for impl in self.impls:
            key = f"host/{impl.name}"
            if impl.supports("float32", N, "softmax", "fwd") or not self.selected(key) or self.over_budget(key):
                continue
            if impl.framework == "jax":
                jf = jax.jit(lambda a, impl=impl: impl.fwd(a, "softmax"))
                fn, wait = functools.partial(jf, xj), jax.block_until_ready
            else:
                fn, wait = functools.partial(impl.fwd, x, "softmax"), lambda r: sync()
            try:  # compiles, and shows that the impl runs
                for _ in range(warm):
                    r = fn()
                wait(r)
            except Exception as e:  # noqa: BLE001
                out[impl.name] = None
                print(f"[{self.elapsed():5.0f}s] host  {impl.name:8s} ERR {type(e).__name__}: {e}", flush=True)
                continue
            entries[impl.name] = (fn, wait)
        self.host_rounds = timing.host_rounds(entries, calls, rounds)
        for name, per_round in self.host_rounds.items():
            out[name] = min(per_round)
            print(f"[{self.elapsed():5.0f}s] host  {name:8s} {out[name]:6.1f} us a call ({M}x{N} fp32, best of "
                  f"{rounds} interleaved rounds of {calls} back-to-back calls; median "
                  f"{statistics.median(per_round):.1f})", flush=True)
        return out

    def sections(self):
        """(suite, dtype, shapes, ops) in the order measured: most wanted first, so that a
        time-budget cut loses the least (softmax before log_softmax, float16 last)."""
        only_n = {int(n) for n in self.args.n.split(",")} if self.args.n else None
        sweep_n = SMOKE_SWEEP_N if self.smoke else SWEEP_N
        if only_n and not self.smoke:  # --n's values off the sweep are measured as sweep shapes too
            sweep_n = sorted({*sweep_n, *only_n})
        llm = SMOKE_LLM_SHAPES if self.smoke else LLM_SHAPES
        vocab = [s for s in llm if s[1] >= VOCAB_N or self.smoke]

        def sweep(dtype):
            itemsize = 4 if dtype == "float32" else 2
            if self.smoke:
                return [(SMOKE_M, N) for N in sweep_n]
            return [(max(1, min(self.args.m_cap, SWEEP_BYTES // (N * itemsize))), N) for N in sweep_n]

        sm, log = ("softmax",), ("log_softmax",)
        sections = [("sweep", "float32", sweep("float32"), sm), ("sweep", "bfloat16", sweep("bfloat16"), sm),
                    ("llm", "bfloat16", llm, sm), ("llm", "float32", llm, sm),
                    ("sweep", "float32", sweep("float32"), log), ("sweep", "bfloat16", sweep("bfloat16"), log),
                    ("llm", "bfloat16", vocab, log), ("llm", "float32", vocab, log),
                    ("sweep", "float16", sweep("float16"), sm + log)]
        max_n = self.args.max_n
        return [(suite, dtype, [s for s in shapes if (max_n is None or s[1] <= max_n)
                                and (only_n is None or s[1] in only_n)], ops)
                for suite, dtype, shapes, ops in sections]

    def data(self) -> dict:
        return {
            "meta": {"date": time.strftime("%Y-%m-%d %H:%M:%S"), "smoke": self.smoke, "device": self.dev,
                     "versions": self.versions, "source": self.source, "args": vars(self.args),
                     "elapsed_s": round(self.elapsed(), 1),
                     "budget": {"max_seconds": self.args.max_seconds, "hit_at": self.budget_hit_at,
                                "skipped_measurements": self.skipped_by_budget},
                     "bytes": "fwd: 2*M*N*itemsize (read x, write y); bwd: 3*M*N*itemsize (read y, dy; write dx)",
                     "tolerance": {k: f"{v:g} * max(1, max|ref|)" for k, v in TOL.items()},
                     "input": "x = randn*2, dy = randn (cast to dtype); reference = torch float32 on the same x, dy"},
            "copy_GBps": self.copy_GBps,
            "impls": {i.name: {"framework": i.framework, "note": i.note} for i in self.impls},
            "impl_order": [i.name for i in self.impls],
            "unavailable": self.unavailable,
            "host_overhead_us": self.host,
            "host_overhead_rounds_us": self.host_rounds,
            "results": self.records,
        }

    def write_json(self, data=None):
        path = os.path.join(self.out, "results.json")
        with open(path + ".tmp", "w") as f:
            json.dump(data or self.data(), f, indent=1)
        os.replace(path + ".tmp", path)
        return path

    def main(self):
        args = self.args
        setup_env(args.smoke)
        import torch

        import peers
        import timing

        self.cuda = torch.cuda.is_available() and not args.smoke
        if not self.cuda and not args.smoke:
            sys.exit("no CUDA device: run with --smoke for the CPU check")
        self.device = "cuda" if self.cuda else "cpu"
        self.dev = device_info(self.cuda)
        self.versions = versions()
        self.source = {"multisoftmax_tree": git_tree(os.path.join(os.path.dirname(HERE), "multisoftmax")),
                       "how": "git rev-parse <commit>:multisoftmax prints this for the commits whose package ran"}
        self.out = args.out or (os.path.join(HERE, "results", self.dev["slug"]) if self.cuda else
                                tempfile.mkdtemp(prefix="multisoftmax-bench-smoke-"))
        os.makedirs(self.out, exist_ok=True)
        interpret = os.environ.get("TRITON_INTERPRET") == "1"
        print(f"[{self.elapsed():5.0f}s] {self.dev['name']}  out={self.out}  smoke={self.smoke}  "
              f"interpret={interpret}  budget={args.max_seconds:.0f}s", flush=True)
        print(f"[{self.elapsed():5.0f}s] versions: " + ", ".join(f"{k} {v}" for k, v in self.versions.items())
              + f"; multisoftmax tree {self.source['multisoftmax_tree']}", flush=True)
        self.impls, self.unavailable = peers.make_impls(cuda=self.cuda, smoke=self.smoke, interpret=interpret,
                                                        num_sms=self.dev["sms"])
        print(f"[{self.elapsed():5.0f}s] impls: {', '.join(i.name for i in self.impls)}", flush=True)
        for name, why in self.unavailable.items():
            print(f"[{self.elapsed():5.0f}s] unavailable: {name}: {why}", flush=True)

        self.copy_GBps = timing.copy_bandwidth(self.cuda)
        print(f"[{self.elapsed():5.0f}s] copy bandwidth {self.copy_GBps:.0f} GB/s (b.copy_(a), read + write)",
              flush=True)
        self.host = self.host_overhead()
        self.free()
        self.write_json()
        for suite, dtype, shapes, ops in self.sections():
            for M, N in shapes:
                self.run_case(suite, M, N, dtype, ops)
                self.write_json()

        import report

        data = self.data()
        try:
            data["summary"] = report.summarize(data)
        except Exception as e:  # noqa: BLE001  (never lose the measurements to a report bug)
            data["summary"] = {"error": f"{type(e).__name__}: {e}"}
        path = self.write_json(data)
        try:
            written = report.write_all(data, self.out)
        except Exception as e:  # noqa: BLE001
            import traceback
            traceback.print_exc()
            written = [f"report failed: {e}"]
        ok = sum(r["status"] == "ok" for r in self.records)
        err = sum(r["status"] == "ERR" for r in self.records)
        wrong = sum(bool(r.get("wrong")) for r in self.records)
        print(f"[{self.elapsed():5.0f}s] {ok} measurements ok, {err} ERR, {wrong} over tolerance, "
              f"{self.skipped_by_budget} skipped by the time budget", flush=True)
        print(f"[{self.elapsed():5.0f}s] wrote {path}, " + ", ".join(written), flush=True)
        if "summary" in data and "text" in data["summary"]:
            print(data["summary"]["text"], flush=True)


if __name__ == "__main__":
    Bench(parse_args()).main()
