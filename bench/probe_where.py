"""Probe: the JAX adapter's `where=` (masked softmax) against jax.nn.softmax's, by the benchmark's clock.

`multisoftmax.jax.softmax(x, axis, where=m)` over the trailing axes runs the where kernels
(kernels/where.py: the mask read beside x where it lies): the rows kernels for rows of at most
dispatch.WHERE_MAX_N values (backward: WHERE_BWD_MAX_N), the cooperative ones past that; elsewhere
its forward is XLA's, jnp.where(m, jax.nn.softmax(jnp.where(m, x, -inf)), 0) in float32, and its
backward the unmasked Triton kernel from saved y (the log_softmax's XLA's, in float32). This times, jitted
(bench/timing.py: a chain of calls on rotating input copies, the kernels' GPU time summed), the
forward and the backward (the vjp pullback, from a forward outside the timed function) of:
  * ms-jax where: multisoftmax.jax with where=;
  * xla path: multisoftmax.jax with the where kernels turned off (the XLA forward above; the adapter
    from f1ba5be to 5239573);
  * coop CHUNKxWARPS (--coop): multisoftmax.jax with where=, the cooperative where kernels in chunks
    of CHUNK values at WARPS warps (dispatch.WHERE_COOP_CHUNK_N, WHERE_COOP_WARPS, its tilings
    WHERE_COOP_*_TILINGS set aside; float64 keeps its chunk); a trailing "s": reading only the vectors
    that hold a kept value (WHERE_COOP_SKIP), "c": on arrival counters, not TAG (WHERE_COOP_TAG); "rN":
    the 16-bit forward under Triton's maxnreg N
    (WHERE_COOP_MAXNREG);
  * around: the unmasked kernels with the mask applied around them, jnp.where(m, f(jnp.where(m, x,
    -inf)), 0) (log_softmax: -inf), two elementwise XLA passes (the JAX adapter's first where=, 5ead106);
  * xla where: jax.nn.softmax / log_softmax with where=, as is;
and checks the others against the last. GB/s count x and y (backward: y, dy, dx) alone, as the
benchmark does: the masks here are broadcast over rows and small.

Cases: a causal mask (S, S) over a batch of attention rows (B, S, S), half the values kept; a
vocabulary mask (1, V) over logits (M, V) (V = 32000, and 128256 and 256000, whose rows the
cooperative kernels take) and a padding mask (1, 1, S) over (B, S, S), 90% kept.

    python bench/probe_where.py [--dtypes bfloat16,float32] [--cases causal,vocabulary]
                                [--variants "ms-jax where,xla where"] [--ops softmax,log_softmax]
                                [--coop 8192x8,4096x8]
    (--cases: names' beginnings, causal,vocabulary,padding,long,short; default causal,vocabulary)

"ms-jax where I" (in --variants): the adapter with the where rows kernels' row offsets and mask rows
computed in 32 bits (as softmax_fwd_rows's OFFS32), from an edited copy of kernels/where.py.
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import multisoftmax.jax as mj  # noqa: E402
import timing  # noqa: E402

L2_BYTES = 50 * 2**20  # H100


def cases(dtype):
    rng = np.random.default_rng(0)
    causal = np.tril(np.ones((2048, 2048), bool))
    vocab = rng.random((1, 32000)) < 0.9
    batch = 16 if dtype != "float32" else 8  # 128 MB of x
    padding = rng.random((1, 1, 2048)) < 0.9
    long_vocab = rng.random((1, 128256)) < 0.9
    few = rng.random((1, 256000)) < 0.9
    return [("causal (2048, 2048)", (batch, 2048, 2048), causal), ("vocabulary (1, 32000)", (4096, 32000), vocab),
            ("padding (1, 1, 2048)", (batch, 2048, 2048), padding),
            ("long vocabulary (1, 128256)", (1024 if dtype != "float32" else 512, 128256), long_vocab),
            ("long rows, few (1, 256000)", (64, 256000), few),
            ("short causal (128, 128)", (8192 if dtype != "float32" else 4096, 128, 128), np.tril(np.ones((128, 128), bool))),
            ("short padding (1, 1, 128)", (8192 if dtype != "float32" else 4096, 128, 128),
             rng.random((1, 1, 128)) < 0.9)]


def picked(name: str, wanted: str) -> bool:
    return any(name.startswith(w) for w in wanted.split(","))


def variants(log: bool, coop: list[str]):
    ours, theirs = (mj.log_softmax, jax.nn.log_softmax) if log else (mj.softmax, jax.nn.softmax)
    fill = -jnp.inf if log else 0.0

    def where():  # a function of its own for each variant: jax.jit would reuse another's executable
        return lambda a, m: ours(a, -1, where=m)

    return {"ms-jax where": where(), "ms-jax where I": where(), "xla path": where(), **{f"coop {c}": where() for c in coop},
            "around": lambda a, m: jnp.where(m, ours(jnp.where(m, a, -jnp.inf), -1), fill),
            "xla where": lambda a, m: theirs(a, -1, where=m)}


def _where_i32():
    """kernels/where.py's rows kernels with their rows' offsets and mask rows in 32 bits (the program id
    not widened to int64: "ms-jax where I"), from an edited copy of the module."""
    import importlib.util
    import tempfile
    from multisoftmax.kernels import where
    src = open(where.__file__).read().replace("from .softmax import", "from multisoftmax.kernels.softmax import")
    old = "rows = tl.program_id(0).to(tl.int64) * BLOCK_M"
    assert src.count(old) == 1
    path = os.path.join(tempfile.mkdtemp(), "where_i32.py")
    with open(path, "w") as f:
        f.write(src.replace(old, "rows = tl.program_id(0) * BLOCK_M"))
    spec = importlib.util.spec_from_file_location("where_i32", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return {name: getattr(mod, name) for name in ("softmax_fwd_rows_where", "softmax_bwd_rows_where")}


def setup(impl: str):
    """Set the adapter up for variant `impl` (before its functions are traced)."""
    jax.clear_caches()  # no trace of the adapter's inner calls made for another variant
    from multisoftmax.kernels import where
    for name, fn in (WHERE_I32 if impl == "ms-jax where I" else WHERE_ROWS).items():
        setattr(where, name, fn)
    mj._kernel_copy.cache_clear()
    mj.dispatch.plan_where.cache_clear()
    mj._where_kernels = (lambda *a, **k: False) if impl == "xla path" else WHERE_KERNELS
    spec = impl.split()[1] if impl.startswith("coop ") else ""
    spec, _, cap = spec.partition("r")
    chunk, warps = map(int, spec.rstrip("sc").split("x")) if spec else (None, None)
    flags = spec[len(spec.rstrip("sc")):]
    mj.dispatch.WHERE_COOP_MAXNREG = {2: int(cap)} if cap else COOP_MAXNREG
    mj.dispatch.WHERE_COOP_CHUNK_N = {**COOP_CHUNK_N, **({2: chunk, 4: chunk} if chunk else {})}
    mj.dispatch.WHERE_COOP_WARPS = warps or COOP_WARPS
    mj.dispatch.WHERE_COOP_SKIP = "s" in flags if spec else COOP_SKIP
    mj.dispatch.WHERE_COOP_TAG = "c" not in flags if spec else COOP_TAG
    (mj.dispatch.WHERE_COOP_FWD_TILINGS, mj.dispatch.WHERE_COOP_BWD_TILINGS, mj.dispatch.WHERE_COOP_PEEL_BWD32_TILINGS,
     mj.dispatch.WHERE_COOP_PACK_TILINGS) = ({}, {}, (), ()) if spec else COOP_TILINGS


WHERE_KERNELS = mj._where_kernels
WHERE_ROWS = {name: getattr(mj.kernels.where, name) for name in ("softmax_fwd_rows_where", "softmax_bwd_rows_where")}
WHERE_I32 = _where_i32()
COOP_CHUNK_N, COOP_WARPS, COOP_SKIP, COOP_TAG, COOP_MAXNREG = (
    mj.dispatch.WHERE_COOP_CHUNK_N, mj.dispatch.WHERE_COOP_WARPS, mj.dispatch.WHERE_COOP_SKIP,
    mj.dispatch.WHERE_COOP_TAG, mj.dispatch.WHERE_COOP_MAXNREG)
COOP_TILINGS = (mj.dispatch.WHERE_COOP_FWD_TILINGS, mj.dispatch.WHERE_COOP_BWD_TILINGS,
                mj.dispatch.WHERE_COOP_PEEL_BWD32_TILINGS, mj.dispatch.WHERE_COOP_PACK_TILINGS)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dtypes", default="bfloat16,float32")
    ap.add_argument("--cases", default="causal,vocabulary")
    ap.add_argument("--variants", default="ms-jax where,xla where")
    ap.add_argument("--ops", default="softmax,log_softmax")
    ap.add_argument("--coop", default="", help="cooperative tilings to time as variants, CHUNKxWARPS,...")
    args = ap.parse_args()
    coop = [c for c in args.coop.split(",") if c]
    chosen = args.variants.split(",") + [f"coop {c}" for c in coop]
    copy = timing.copy_bandwidth(True) if _torch_cuda() else float("nan")
    print(f"{jax.devices()[0].device_kind}  copy {copy:.0f} GB/s  jax {jax.__version__}", flush=True)
    for dtype in args.dtypes.split(","):
        for name, shape, mask in cases(dtype):
            if not picked(name, args.cases):
                continue
            x = (jax.random.normal(jax.random.PRNGKey(0), shape, jnp.float32) * 3).astype(dtype)
            dy = jax.random.normal(jax.random.PRNGKey(1), shape, jnp.float32).astype(dtype)
            m = jnp.asarray(mask)
            nb = 2 * x.size * x.dtype.itemsize
            for log in [op == "log_softmax" for op in args.ops.split(",")]:
                line, outs = [], {}
                for impl, f in variants(log, coop).items():
                    if impl not in chosen:
                        continue
                    setup(impl)
                    o, us, _, _ = timing.jax_time(f, (x, m), nb, gpu=True, l2_bytes=L2_BYTES)
                    _, pull = jax.vjp(lambda a, f=f: f(a, m), x)
                    do, us_b, _, _ = timing.jax_time(lambda d, pull=pull: pull(d)[0], (dy,), 1.5 * nb, gpu=True,
                                                     l2_bytes=L2_BYTES)
                    outs[impl] = (o, do)
                    line.append(f"{impl} {us:6.1f} us {nb / us / 1e3:5.0f} GB/s, bwd {us_b:6.1f} us "
                                f"{1.5 * nb / us_b / 1e3:5.0f} GB/s")
                diffs = []
                ref = outs.get("xla where")
                for impl, pair in outs.items():
                    if impl == "xla where" or ref is None:
                        continue
                    d = []
                    for a, b in zip(pair, ref):
                        a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
                        both = np.isfinite(a) & np.isfinite(b)
                        same = np.array_equal(np.isfinite(a), np.isfinite(b))
                        d.append(f"{np.max(np.abs(a[both] - b[both])):.1e}{'' if same else ' (!inf)'}")
                    diffs.append(f"{impl} {d[0]}, {d[1]}")
                op = "log_softmax" if log else "softmax"
                print(f"{dtype:8s} {'x'.join(map(str, shape)):14s} {name:22s} {op:11s} | " + " | ".join(line)
                      + " | max |diff| vs xla where (y, dx): " + "; ".join(diffs), flush=True)
    setup("ms-jax where")


def _torch_cuda() -> bool:
    try:
        import torch
        return torch.cuda.is_available()
    except ImportError:
        return False


if __name__ == "__main__":
    main()
