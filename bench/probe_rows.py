"""Probe: the unmasked rows kernels (dispatch's 'rows' family) re-tiled, beside the peers (GPU).

    python bench/probe_rows.py --dtypes float32,bfloat16 --ns 781,1024 --dirs fwd,bwd [--rules] \
        > bench/results/h200/probe_rows.log

For each case (dtype, N, op, direction; M = min(65536, 256 MB / row), the benchmark's sweep) it times
  * dispatch: the launch `dispatch.plan_forward` / `plan_backward` makes for this GPU, as the adapters
    plan it (`gpu=`: dispatch.tuned_gpu of its name; --rules: the H100's rules, no ROWS_TILINGS) (its
    header: BLOCK_M, warps, "p" PEEL, "s" fills_shared);
  * mBwW[rR]: the same kernel at B rows a program and W warps (EVEN_M / ALIGN_M as dispatch gives that
    tiling, `dispatch._rows_m`), compiled under Triton's register cap maxnreg=R where "rR" is given;
  * the peers of the benchmark on that case: torch.softmax (aten's backward), torch.compile (softmax
    forward) and Liger-Kernel (softmax), where installed;
launched from torch, each timed --rounds times by the benchmark's clock (bench/timing.py: CUDA graph or
back-to-back calls, kernel time, fresh outputs), with registers a thread and the largest error against
float64 over 4096 rows (ERR past 2e-2 relative to max(1, |ref|)). GB/s count x and y (backward y, dy
and dx), from the fastest round. The copy bandwidth of the same run heads the log.

    --tilings 2x4,4x8r64,...   (default: 2, 4, 8 and 16 warps, 32 from 8192 lanes, at 8, 16 and 32 values a thread;
                                "none": no re-tiling)
    --variants 'ftz:FTZ=1;w8:num_warps=8'   dispatch's launch with its meta replaced (KEY=VALUE,..., ints; a key
                                the kernel does not take is added: a kernel's constexpr default); two keys are
                                not meta: peel=1 (0) plans the case with dispatch's force_peel=True (False) first
                                (PEEL: a head, a 16-byte-aligned body and a tail), gpu=H200 with another GPU's
                                tables (dispatch.GPU_CONSTANTS), m=B re-tiles that plan to B rows a program (at
                                num_warps=, where given) as --tilings does
    --ms 64,528,4096            M of each case (default: the sweep's, min(65536, 256 MB / row)): small grids
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import re
import subprocess
import sys
from datetime import datetime, timezone

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import torch  # noqa: E402
import triton  # noqa: E402

import peers  # noqa: E402
import timing  # noqa: E402
import tune  # noqa: E402
from multisoftmax import dispatch, launch  # noqa: E402

SWEEP_BYTES = 256 * 2**20
M_CAP = 65536


def tilings(lanes: int, M: int, spec: str):
    """(BLOCK_M, num_warps, maxnreg or None) tuples: from `spec` ("2x4,4x8r64"), else 2-16 warps at 8,
    16 and 32 values a thread of `lanes` lanes (at least one row a program; 32 warps from 8192 lanes)."""
    if spec == "none":
        return []
    if spec:
        out = []
        for t in spec.split(","):
            m = re.fullmatch(r"(\d+)x(\d+)(?:r(\d+))?", t)
            if m is None:
                raise SystemExit(f"--tilings: {t!r} is not BLOCK_MxWARPS[rREGS]")
            out.append((int(m[1]), int(m[2]), int(m[3]) if m[3] else None))
        return out
    out = []
    for warps in (2, 4, 8, 16) + ((32,) if lanes >= 8192 else ()):
        for per_thread in (8, 16, 32):
            block_m = per_thread * 32 * warps // lanes
            if 1 <= block_m <= triton.next_power_of_2(M) and block_m * lanes == per_thread * 32 * warps:
                out.append((block_m, warps, None))
    return out


def dispatch_plan(M: int, N: int, dtype: str, log: bool, fwd: bool, sms: int, gpu: str, force_peel=None):
    """dispatch's launch for a contiguous M x N case (uncached), as the adapters plan it on `sms` SMs of GPU `gpu`."""
    return (dispatch.plan_forward.__wrapped__(M, N, N, N, dtype, log, sms, force_peel=force_peel, gpu=gpu) if fwd
            else dispatch.plan_backward.__wrapped__(M, N, N, N, N, dtype, log, sms, force_peel=force_peel, gpu=gpu))


def variant_plan(plan, spec: str, M: int, N: int, dtype: str, log: bool, fwd: bool, sms: int, gpu: str):
    """A --variants entry's plan: `spec` "KEY=VALUE,..." replaces dispatch's meta; peel=1 (0) plans with
    force_peel=True (False) first, gpu=NAME with that GPU's tables (dispatch.GPU_CONSTANTS' key, e.g. H200; "" the
    module's), m=B re-tiles to B rows a program (tune.with_rows_tiling, at num_warps= where given)."""
    meta = {k: v if k == "gpu" else int(v) for k, v in (kv.split("=") for kv in spec.split(","))}
    if "peel" in meta or "gpu" in meta:
        peel = meta.pop("peel", None)
        plan = dispatch_plan(M, N, dtype, log, fwd, sms, meta.pop("gpu", gpu),
                             force_peel=None if peel is None else bool(peel))
    if "m" in meta:
        (l,) = plan
        warps = meta.pop("num_warps", l.kwargs["num_warps"])
        plan = tune.with_rows_tiling(plan, M, meta.pop("m"), warps, getattr(torch, dtype).itemsize, log, fwd)
    return tune.with_meta(plan, **meta) if meta else plan


def case(dtype, N, op, direction, spec, sms, l2, rounds, others, gpu="", meta_variants="", M=None):
    T = getattr(torch, dtype)
    M = M or min(M_CAP, SWEEP_BYTES // (N * T.itemsize))
    log = op == "log_softmax"
    x, y, dy, out, bufs, nbytes = tune.make_inputs(M, N, T, direction, log)
    fwd = direction == "fwd"
    plan = dispatch_plan(M, N, dtype, log, fwd, sms, gpu)
    (l,) = plan
    kw = l.kwargs
    if "BLOCK_M" not in kw:
        return f"{dtype:8s} {M}x{N} {op} {direction}: dispatch takes {l.kernel}, not the rows family"
    lanes = kw["BLOCK_N"] + (0 if kw.get("PEEL") else kw.get("TAIL_N", 0))  # a peeled row's edges are not lanes
    variants = [("dispatch", plan)]
    for block_m, warps, cap in tilings(lanes, M, spec):
        if (block_m, warps, cap) == (kw["BLOCK_M"], kw["num_warps"], kw.get("maxnreg")):
            continue
        (t,) = tune.with_rows_tiling(plan, M, block_m, warps, T.itemsize, log, fwd)
        meta = tuple((k, v) for k, v in t.meta if k != "maxnreg") + ((("maxnreg", cap),) if cap else ())
        variants.append((f"m{block_m}w{warps}" + (f"r{cap}" if cap else ""), (dataclasses.replace(t, meta=meta),)))
    for spec_v in filter(None, meta_variants.split(";")):
        label, _, kvs = spec_v.partition(":")
        variants.append((label, variant_plan(plan, kvs, M, N, dtype, log, fwd, sms, gpu)))
    names = ("x",) if fwd else ("y", "dy")
    fns, regs = {}, {}
    sel = slice(0, M, max(1, M // 4096))
    ref = tune.reference(x[sel], y[sel], dy[sel], log, direction)
    errs = {}
    for name, p in variants:
        launch._COMPILED.clear()
        fns[name] = lambda *a, p=p: tune.run_plan(p, dict(zip(names, a)), torch.empty_like(out))
        got = tune.run_plan(p, bufs, out)
        errs[name] = ((got[sel].double() - ref).abs() / ref.abs().clamp(min=1)).max().item()
        regs[name] = max(c[1].n_regs for c in launch._COMPILED.values())
    res = tune.time_rounds(fns, tuple(bufs[n] for n in names), nbytes, l2, rounds, others, (dtype, N, op, direction))
    head = (f"{dtype:8s} {M}x{N} {op:11s} {direction} dispatch m{kw['BLOCK_M']}w{kw['num_warps']}"
            f"{'p' if kw.get('PEEL') else ''}{'s' if dispatch.fills_shared(l) else ''} | ")
    return head + " | ".join(
        f"{name}{' r%d' % regs[name] if name in regs else ''} " + "/".join(f"{us:.2f}" for us in res[name])
        + f" us {nbytes / min(res[name]) / 1e3:.0f}" + (f" ERR {errs[name]:.0e}" if errs.get(name, 0) > 2e-2 else "")
        for name in res)  # the peers too: time_rounds adds them to its own copy of fns


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dtypes", default="float32,bfloat16")
    ap.add_argument("--ns", default="781,1024")
    ap.add_argument("--ops", default="softmax,log_softmax")
    ap.add_argument("--dirs", default="fwd")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--tilings", default="",
                    help="BLOCK_MxWARPS[rREGS],... (default: 2-16 warps, 8-32 values a thread)")
    ap.add_argument("--variants", default="", help="LABEL:KEY=VALUE,...;... dispatch's launch, meta replaced")
    ap.add_argument("--ms", default="", help="M,... of each case (default: the sweep's)")
    ap.add_argument("--no-peers", action="store_true", help="time multisoftmax's launches alone")
    ap.add_argument("--rules", action="store_true", help="dispatch: the H100's rules, not this GPU's ROWS_TILINGS")
    args = ap.parse_args()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    print(f"# {commit}, {datetime.now(timezone.utc):%Y-%m-%dT%H:%M:%SZ}, python bench/probe_rows.py "
          + " ".join(sys.argv[1:]))
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    gpu = "" if args.rules else dispatch.tuned_gpu(torch.cuda.get_device_name())
    print(f"{torch.cuda.get_device_name()}  copy {timing.copy_bandwidth(True):.0f} GB/s  triton {triton.__version__}"
          f"  dispatch's key {gpu!r}  (times in us per round, then GB/s of the fastest)", flush=True)
    others = [] if args.no_peers else [peers.torch_native(), peers.torch_compiled(False)]
    if not args.no_peers:
        try:
            others.append(peers.liger())
        except ImportError:
            pass
    for dtype in args.dtypes.split(","):
        for N in map(int, args.ns.split(",")):
            for M in [int(m) for m in args.ms.split(",") if m] or [None]:
                for op in args.ops.split(","):
                    for direction in args.dirs.split(","):
                        print(case(dtype, N, op, direction, args.tilings, sms, l2, args.rounds, others, gpu,
                                   args.variants, M), flush=True)
                        torch.cuda.empty_cache()
                        torch.compiler.reset()


if __name__ == "__main__":
    main()
