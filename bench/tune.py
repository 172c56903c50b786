"""Tune the launch heuristics of multisoftmax/dispatch.py on the GPU (reproducible, no autotuner).

For each (dtype, N) of the sweep (M chosen so x is ~256 MB) it times the plan that
dispatch picks today and a few alternatives (elements per thread, persistent or one tile a
program, loop tile, family), forward and backward, and prints GB/s for each; the JSON
written to --out is what the heuristic constants in dispatch.py were chosen from.

    python bench/tune.py --out bench/results/h100/tune.json [--quick]
    python bench/tune.py --coop --out bench/results/h100/tune_coop.json   (long rows only)
    python bench/tune.py --peel --out bench/results/h100/tune_peel.json   (unaligned rows: PEEL on/off)
    python bench/tune.py --peel --log --dtypes bfloat16 --n 3001,16385 --out ...   (log_softmax too)
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import os
import sys
import time

import torch
import triton
import triton.testing

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from multisoftmax import dispatch, launch  # noqa: E402

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}


def copy_bandwidth() -> float:
    a = torch.randn(256 * 2**20, device="cuda")  # 1 GiB
    b = torch.empty_like(a)
    ms = triton.testing.do_bench(lambda: b.copy_(a), warmup=25, rep=200, return_mode="median")
    return 2 * a.numel() * 4 / ms / 1e6


def run_plan(plan, buffers, out):
    return launch.execute(plan, dict(buffers), lambda l, ins, bufs: launch.torch_call(l, ins, bufs, out.dtype, out.device, out))


def with_meta(plan, grid=None, **meta):
    """A copy of a one-launch plan with some constexprs / num_warps / grid replaced."""
    (l,) = plan
    kw = l.kwargs
    kw.update(meta)
    return (dataclasses.replace(l, meta=tuple(kw.items()), grid=grid or l.grid),)


def with_rows_tiling(plan, M, BLOCK_M, num_warps, itemsize, log, forward):
    """A copy of a rows-family plan for M rows re-tiled to BLOCK_M rows a program at num_warps
    warps, with the EVEN_M / ALIGN_M that dispatch gives such a tiling (`dispatch._rows_m`)."""
    return with_meta(plan, grid=(triton.cdiv(M, BLOCK_M),), BLOCK_M=BLOCK_M, num_warps=num_warps,
                     **dispatch._rows_m(M, BLOCK_M, itemsize, log, forward))


def variants(M, N, dtype, direction, sms):
    """(label, plan) pairs: the current choice first, then alternatives."""
    fwd = direction == "fwd"
    make = (lambda force=None: dispatch.plan_forward(M, N, N, N, dtype, False, sms, force)) if fwd else \
        (lambda force=None: dispatch.plan_backward(M, N, N, N, N, dtype, False, sms, force))
    current = make()
    yield "current:" + "+".join(l.kernel.split("_", 2)[-1] for l in current), current
    fam = current[0].kernel.split("_")[2]  # the family dispatch took: softmax_fwd_<family>...
    if fam == "rows":
        lanes = sum(dispatch.row_segments(N))
        for ept in (8, 16, 32):
            for warps in (4, 8, 16):
                BLOCK_M = max(1, min(ept * 32 * warps // lanes, triton.next_power_of_2(M)))
                BLOCK_M = triton.next_power_of_2(BLOCK_M + 1) // 2
                if BLOCK_M * lanes < ept * 32 * warps // 2:
                    continue  # fewer than half the intended values a thread: not this shape's variant
                grid = (triton.cdiv(M, BLOCK_M),)
                yield f"rows ept={ept} warps={warps} BM={BLOCK_M}", with_meta(current, grid=grid, BLOCK_M=BLOCK_M,
                                                                          num_warps=warps)
        if current[0].kwargs.get("TAIL_N"):
            yield "rows one pow2 block", with_meta(current, BLOCK_N=triton.next_power_of_2(N), TAIL_N=0)
        if N > 4096:
            yield "online", make("online")
    elif N <= 32768:
        rows = make("rows")  # a row in registers past MAX_ROWS_BLOCK_N: does it spill?
        for warps in (16, 32):
            yield f"rows(forced) warps={warps}", with_meta(rows, num_warps=warps)
    if fam != "rows":
        base = make("online")
        for block, warps, per_sm in ((2048, 4, 4), (4096, 8, 2), (4096, 8, 4), (8192, 16, 1), (8192, 8, 2)):
            grid = (min(M, sms * per_sm),)
            yield f"online BN={block} warps={warps} grid={per_sm}/SM", with_meta(base, grid=grid, BLOCK_N=block, num_warps=warps)
        if fam != "split" and M < 4 * sms * 4:
            yield "split", make("split")
        if fam == "split":
            yield "split(current)", current


def probe_header(script: str) -> tuple[int, int, str]:
    """Print a probe log's header (the commit, the UTC time and `script`'s command line; the GPU, the copy bandwidth
    of bench/timing.py and Triton's version) and return the GPU's (SMs, L2 bytes, dispatch's key)."""
    import subprocess
    from datetime import datetime, timezone

    import timing  # bench/timing.py (bench/ is on the path of every script that imports this module)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    now = datetime.now(timezone.utc)
    print(f"# {commit}, {now:%Y-%m-%dT%H:%M:%SZ}, python bench/{script} " + " ".join(sys.argv[1:]))
    props = torch.cuda.get_device_properties(0)
    print(f"{torch.cuda.get_device_name()}  copy {timing.copy_bandwidth(True):.0f} GB/s  triton {triton.__version__}",
          flush=True)
    return props.multi_processor_count, props.L2_cache_size, dispatch.tuned_gpu(torch.cuda.get_device_name())


def make_inputs(M, N, tdt, direction, log=False):
    """x, y = softmax(x) (or log_softmax), dy, an output buffer, the plan's buffers and the bytes
    a call moves."""
    x = torch.randn(M, N, device="cuda", dtype=tdt)
    y = (torch.log_softmax if log else torch.softmax)(x.float(), -1).to(tdt)
    dy = torch.randn_like(x)
    bufs = {"x": x} if direction == "fwd" else {"y": y, "dy": dy}
    return x, y, dy, torch.empty_like(x), bufs, x.numel() * tdt.itemsize * (2 if direction == "fwd" else 3)


def reference(x, y, dy, log, direction):
    """float64 y = softmax(x) (log_softmax if `log`) for "fwd", else dx of y and dy: the probes' reference."""
    if direction == "fwd":
        return (torch.log_softmax if log else torch.softmax)(x.double(), -1)
    yd, dyd = y.double(), dy.double()
    if log:
        return dyd - yd.exp() * dyd.sum(-1, keepdim=True)
    return yd * (dyd - (yd * dyd).sum(-1, keepdim=True))


def time_rounds(fns, args, nbytes, l2, rounds, others=(), case=None):
    """{name: [us a round]}: each of `fns` ({name: f(*args)}) and each peer of `others` (bench/peers.py) that
    supports `case` (dtype, N, op, direction), in turn, `rounds` times, by the benchmark's clock (bench/timing.py:
    CUDA graph or back-to-back calls, kernel time)."""
    import timing  # bench/timing.py (bench/ is on the path of every script that imports this module)
    fns = dict(fns)
    for impl in others:
        dtype, N, op, direction = case
        if impl.supports(dtype, N, op, direction) is None:
            f = impl.fwd if direction == "fwd" else impl.bwd
            fns[impl.name] = lambda *a, f=f, op=op: f(*a, op)
    res = {name: [] for name in fns}
    for _ in range(rounds):
        for name, f in fns.items():
            res[name].append(timing.torch_time(f, args, nbytes, cuda=True, graphable=True, l2_bytes=l2)[0])
    return res


COOP_VARIANTS = [(4096, 4), (4096, 8), (8192, 8), (8192, 16), (16384, 16)]  # (CHUNK_N, num_warps)


def coop_plan(M, N, dtype, direction, sms, chunk, warps, log=False):
    """The cooperative plan with other constants (dispatch's module values swapped in and back):
    chunks of exactly `chunk` values (no wide chunks, unpacked or packed, nor narrow ones),
    `warps` warps."""
    names = ("COOP_CHUNK_N", "COOP_WARPS", "COOP_WIDE_MAX_N", "_coop_pack_wide", "_coop_narrow")
    saved = {name: getattr(dispatch, name) for name in names}
    dispatch.COOP_CHUNK_N, dispatch.COOP_WARPS = {2: chunk, 4: chunk, 8: chunk}, warps
    dispatch.COOP_WIDE_MAX_N = 0  # exactly this chunk
    dispatch._coop_pack_wide = dispatch._coop_narrow = lambda *a: False
    try:
        if direction == "fwd":
            return dispatch.plan_forward.__wrapped__(M, N, N, N, dtype, log, sms, "coop")
        return dispatch.plan_backward.__wrapped__(M, N, N, N, N, dtype, log, sms, "coop")
    finally:
        for name, value in saved.items():
            setattr(dispatch, name, value)


def tune_coop(args, sms, copy, t0):
    """Cooperative-kernel variants on the long-row shapes: ~256 MB sweeps and few long rows."""
    rows = []
    shapes = [(N, None) for N in (50257, 65536, 131072, 262144, 1048576)] + \
        [(256000, 64), (1048576, 16), (128256, 8)]
    for dtype in DTYPES:
        tdt = DTYPES[dtype]
        for N, M in shapes:
            M = M or max(1, 256 * 2**20 // (N * tdt.itemsize))
            for direction in ("fwd", "bwd"):
                if time.time() - t0 > args.max_seconds:
                    print("time budget reached", flush=True)
                    return rows
                x, y, dy, out, bufs, nbytes = make_inputs(M, N, tdt, direction)
                cands = [("current:" + "+".join(l.kernel.split("_", 2)[-1] for l in p), p) for p in [
                    (dispatch.plan_forward(M, N, N, N, dtype, False, sms) if direction == "fwd"
                     else dispatch.plan_backward(M, N, N, N, N, dtype, False, sms))]]
                for chunk, warps in COOP_VARIANTS:
                    try:
                        plan = coop_plan(M, N, dtype, direction, sms, chunk, warps)
                    except ValueError:  # more than one chunk per SM: dispatch refuses it
                        continue
                    cands.append((f"coop chunk={chunk} warps={warps}", plan))
                ref = torch.softmax(x.double(), -1) if direction == "fwd" else None
                for label, plan in cands:
                    got = run_plan(plan, bufs, out)
                    if ref is not None:
                        err = (got.double() - ref).abs().max().item()
                        assert err < 1e-2, (label, err)
                    ms = triton.testing.do_bench(lambda: run_plan(plan, bufs, out), warmup=5, rep=30,
                                                 return_mode="median")
                    gbps = nbytes / ms / 1e6
                    rows.append(dict(dtype=dtype, N=N, M=M, direction=direction, variant=label, ms=ms, GBps=gbps))
                    print(f"{dtype:8s} {M:5d}x{N:7d} {direction} {gbps:7.0f} GB/s {ms * 1e3:8.1f} us  {label}",
                          flush=True)
                del x, y, dy, ref
                out = bufs = None  # not del: a closure above names them
                torch.cuda.empty_cache()
    return rows


PEEL_NS = [129, 781, 1001, 3001, 8191, 12289, 16385, 29441, 50257, 100003]


def tune_peel(args, sms, copy, t0):
    """Rows that are not 16-byte aligned: the dispatched plan with PEEL forced off and on, and
    for the rows kernel each with twice, half and a quarter of its warps (--log: log_softmax
    too; --n: only these N)."""
    rows = []
    ops = (False, True) if args.log else (False,)
    Ns = [int(n) for n in args.n.split(",")] if args.n else PEEL_NS
    for dtype in DTYPES:
        tdt = DTYPES[dtype]
        for N in Ns:
            M = max(1, 256 * 2**20 // (N * tdt.itemsize))
            for log, direction in itertools.product(ops, ("fwd", "bwd")):
                if time.time() - t0 > args.max_seconds:
                    print("time budget reached", flush=True)
                    return rows
                x, y, dy, out, bufs, nbytes = make_inputs(M, N, tdt, direction, log)
                cands = []
                for peel in (False, True):
                    plan = (dispatch.plan_forward(M, N, N, N, dtype, log, sms, None, peel) if direction == "fwd"
                            else dispatch.plan_backward(M, N, N, N, N, dtype, log, sms, None, peel))
                    warps = plan[0].kwargs["num_warps"]
                    cands.append((peel, warps, plan))
                    if plan[0].kernel.endswith("_rows"):  # other warps: other values a thread
                        cands += [(peel, w, with_meta(plan, num_warps=w))
                                  for w in (warps * 2, warps // 2, warps // 4) if 2 <= w <= 32]
                op = "log_softmax" if log else "softmax"
                ref = getattr(torch, op)(x.double(), -1) if direction == "fwd" else None
                for peel, warps, plan in cands:
                    got = run_plan(plan, bufs, out)
                    if ref is not None:
                        err = ((got.double() - ref).abs() / ref.abs().clamp(min=1)).max().item()
                        assert err < 1e-2, (N, peel, err)
                    ms = triton.testing.do_bench(lambda: run_plan(plan, bufs, out), warmup=5, rep=30,
                                                 return_mode="median")
                    gbps = nbytes / ms / 1e6
                    label = f"{plan[0].kernel} PEEL={peel} warps={warps}"
                    rows.append(dict(dtype=dtype, N=N, M=M, op=op, direction=direction, variant=label, PEEL=peel,
                                     num_warps=warps, BLOCK_M=plan[0].kwargs.get("BLOCK_M"), ms=ms, GBps=gbps))
                    print(f"{dtype:8s} {M:6d}x{N:7d} {op:11s} {direction} {gbps:7.0f} GB/s  {label}", flush=True)
                del x, y, dy
                out = bufs = None  # not del: a closure above names them
                torch.cuda.empty_cache()
    return rows


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default="bench/results/h100/tune.json")
    p.add_argument("--quick", action="store_true", help="fewer N")
    p.add_argument("--coop", action="store_true", help="only the cooperative kernel's variants, long rows")
    p.add_argument("--peel", action="store_true", help="only PEEL on/off, rows not 16-byte aligned")
    p.add_argument("--log", action="store_true", help="--peel: log_softmax as well as softmax")
    p.add_argument("--n", default="", help="--peel: only these N, comma-separated")
    p.add_argument("--dtypes", default=",".join(DTYPES), help="comma-separated, of " + ",".join(DTYPES))
    p.add_argument("--max-seconds", type=float, default=420)
    args = p.parse_args()
    for name in set(DTYPES) - set(args.dtypes.split(",")):
        del DTYPES[name]
    t0 = time.time()
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    copy = copy_bandwidth()
    print(f"{torch.cuda.get_device_name()}  copy {copy:.0f} GB/s  SMs {sms}", flush=True)
    if args.coop or args.peel:
        rows = (tune_coop if args.coop else tune_peel)(args, sms, copy, t0)
        os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
        with open(args.out, "w") as f:
            json.dump(dict(device=torch.cuda.get_device_name(), copy_GBps=copy, triton=triton.__version__,
                           torch=torch.__version__, date=time.strftime("%Y-%m-%d"), rows=rows), f, indent=1)
        print(f"wrote {args.out} in {time.time() - t0:.0f} s")
        return
    Ns = [128, 256, 512, 781, 1024, 1152, 2048, 3000, 4096, 8192, 16384, 16385, 20000, 29440, 32768, 65536,
          262144]
    if args.quick:
        Ns = [128, 1024, 4096, 16384, 65536]
    rows = []
    for dtype in DTYPES:
        for N in Ns:
            for direction in ("fwd", "bwd"):
                if time.time() - t0 > args.max_seconds:
                    print("time budget reached", flush=True)
                    break
                tdt = DTYPES[dtype]
                M = max(1, 256 * 2**20 // (N * tdt.itemsize))
                x, y, dy, out, bufs, nbytes = make_inputs(M, N, tdt, direction)
                torch_ms = triton.testing.do_bench(
                    (lambda: torch.softmax(x, -1)) if direction == "fwd" else
                    (lambda: torch.ops.aten._softmax_backward_data(dy, y, 1, tdt)),
                    warmup=5, rep=30, return_mode="median")
                best = None
                for label, plan in variants(M, N, dtype, direction, sms):
                    try:
                        ms = triton.testing.do_bench(lambda: run_plan(plan, bufs, out), warmup=5, rep=30,
                                                     return_mode="median")
                    except Exception as e:  # noqa: BLE001  (a variant out of resources is just skipped)
                        print(f"  {label}: {type(e).__name__}: {str(e)[:80]}")
                        continue
                    gbps = nbytes / ms / 1e6
                    rows.append(dict(dtype=dtype, N=N, M=M, direction=direction, variant=label,
                                     ms=ms, GBps=gbps, torch_GBps=nbytes / torch_ms / 1e6))
                    best = max(best or (0, ""), (gbps, label))
                    print(f"{dtype:8s} N={N:7d} {direction} {gbps:7.0f} GB/s  {label}", flush=True)
                print(f"== {dtype} N={N} {direction}: best {best[0]:.0f} ({best[1]}), torch "
                      f"{nbytes / torch_ms / 1e6:.0f}, copy {copy:.0f}", flush=True)
                x = y = dy = out = bufs = None  # not del: a closure above names them
                torch.cuda.empty_cache()
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(dict(device=torch.cuda.get_device_name(), copy_GBps=copy, triton=triton.__version__,
                       torch=torch.__version__, date=time.strftime("%Y-%m-%d"), rows=rows), f, indent=1)
    print(f"wrote {args.out} in {time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
