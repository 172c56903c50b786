"""Probe: the long rows' launches (the cooperative and pipelined kernels) re-tiled and re-flagged, any plan forced to
another family (GPU).

    python bench/probe_coop_tilings.py --dtypes float32 --shapes 64x1048576 --dirs fwd \
        --variants 'STAGGER=0;STAGGER=7200;c16384w16;maxnreg=48' > bench/results/h200/probe_coop_tilings.log

For each case (dtype, MxN, op, direction) it times, by the benchmark's clock (bench/timing.py: CUDA graph,
kernel time, fresh outputs), --rounds times each:
  * dispatch: the plan `dispatch.plan_forward` / `plan_backward` makes for this GPU (as the adapters plan
    it, `gpu=` dispatch.tuned_gpu of its name), its header giving the kernel, grid and constexprs;
  * each variant of --variants (';' between variants, ',' between a variant's tokens), built from the
    dispatch plan in order:
      cCHUNKwWARPS    the cooperative kernel in chunks of exactly CHUNK values at WARPS warps
                      (bench/tune.py's coop_plan: dispatch's rules for every other constexpr);
      pCHUNKwWARPSxK  the pipelined kernel (softmax_bwd_pipe, softmax_fwd_pipe) at CHUNK values, WARPS warps,
                      K programs an SM (dispatch.PIPE_PLANS's or PIPE_FWD_PLANS's entry for this dtype and op
                      replaced);
      coop / pipe / rows / online / split  dispatch's plan of that family (force=), its own constants;
      grid=G          the (one-launch) plan's grid, its first axis: G programs, or M with grid=M (the online
                      kernel's programs loop over rows: grid=M is one row a program, as the blog's seed kernel);
      KEY=VALUE       a constexpr, num_warps, num_stages or maxnreg (0: no cap) of the (one-launch) plan replaced;
    (a variant dispatch refuses, e.g. more chunks a row than SMs, prints as "refused"; one that does not
    compile or run, e.g. a constexpr the kernel's static asserts refuse, as "failed");
  * with --peers, torch.softmax (aten's backward) and Liger-Kernel (softmax), where installed; with --seeds,
    the seed kernels (bench/seed_kernels.py: forward softmax).
Each variant's registers a thread (and spills, sN) and, past 2e-2 (or NaN), its largest error relative to
its row's largest |ref| against float64 over up to 64 rows are printed (before 2026-11-28 22:05 UTC relative
to max(1, |ref|), which a softmax's values of 1e-3 and less left unwritten passed); GB/s count x and y
(backward y, dy and dx) at the fastest round. The copy bandwidth of the same run heads the log.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import re
import subprocess
import sys
from datetime import datetime, timezone
from unittest import mock

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import torch  # noqa: E402
import triton  # noqa: E402

import peers  # noqa: E402
import timing  # noqa: E402
import tune  # noqa: E402
from multisoftmax import dispatch, kernels, launch  # noqa: E402

FLAGS = ("CHUNK_N", "num_warps", "maxnreg", "PACK", "TAG", "SPLIT_SUM", "SENT", "CVT_X2", "POLY", "LATE_LEAVE",
         "STAGGER", "FIRST", "DEFER_Y", "RELOAD", "PEEL")


def _plan(M, N, dtype, direction, log, sms, gpu, force=None):
    if direction == "fwd":
        return dispatch.plan_forward.__wrapped__(M, N, N, N, dtype, log, sms, force, gpu=gpu)
    return dispatch.plan_backward.__wrapped__(M, N, N, N, N, dtype, log, sms, force, gpu=gpu)


def _constexprs(kernel: str) -> set:
    """The constexpr parameters of `kernel` (those with defaults too, which a plan may leave out)."""
    return {p.name for p in kernels.get(kernel).params if p.is_constexpr}


def variant(spec, M, N, dtype, direction, log, sms, gpu):
    """The plan `spec` ("c16384w16,maxnreg=48") makes of dispatch's plan for this case (see the
    module's docstring); ValueError where dispatch refuses it, SystemExit on a bad token."""
    plan = _plan(M, N, dtype, direction, log, sms, gpu)
    itemsize = getattr(torch, dtype).itemsize
    for tok in spec.split(","):
        if m := re.fullmatch(r"c(\d+)w(\d+)", tok):
            plan = tune.coop_plan(M, N, dtype, direction, sms, int(m[1]), int(m[2]), log)
        elif m := re.fullmatch(r"p(\d+)w(\d+)x(\d+)", tok):
            table = "PIPE_FWD_PLANS" if direction == "fwd" else "PIPE_PLANS"
            pipes = dict(getattr(dispatch, table))
            pipes[(itemsize, log)] = (int(m[1]), int(m[2]), int(m[3]))
            with mock.patch.object(dispatch, table, pipes):
                plan = _plan(M, N, dtype, direction, log, sms, "", "pipe")  # the module's table, not a GPU's own
        elif tok in ("coop", "pipe", "rows", "online", "split"):
            plan = _plan(M, N, dtype, direction, log, sms, gpu, tok)
        elif m := re.fullmatch(r"grid=(\d+|M)", tok):
            (l,) = plan
            plan = (dataclasses.replace(l, grid=(M if m[1] == "M" else int(m[1]),) + tuple(l.grid[1:])),)
        elif m := re.fullmatch(r"(\w+)=(\d+)", tok):
            key, value = m[1], int(m[2])
            (l,) = plan
            meta = {k: v for k, v in l.meta if k != key}
            if key not in l.kwargs and key not in ("num_warps", "num_stages", "maxnreg") \
                    and key not in _constexprs(l.kernel):
                raise ValueError(f"{key} is not a constexpr of {l.kernel}")
            if not (key == "maxnreg" and value == 0):
                meta[key] = value
            plan = (dataclasses.replace(l, meta=tuple(meta.items())),)
        else:
            raise SystemExit(f"--variants: {tok!r} is not cCHUNKwWARPS, pCHUNKwWARPSxK, coop, pipe, rows, online, "
                             "split, grid=G or KEY=VALUE")
    return plan


def describe(plan):
    return " + ".join(f"{l.kernel}{list(l.grid)} " + ",".join(f"{k}={l.kwargs[k]:d}" for k in FLAGS if k in l.kwargs
                                                            and l.kwargs[k] is not None) for l in plan)


def case(dtype, M, N, op, direction, specs, sms, l2, rounds, others, gpu):
    T = getattr(torch, dtype)
    log = op == "log_softmax"
    fwd = direction == "fwd"
    x, y, dy, out, bufs, nbytes = tune.make_inputs(M, N, T, direction, log)
    names = ("x",) if fwd else ("y", "dy")
    rows = slice(0, M, max(1, M // 64))
    ref = tune.reference(x[rows], y[rows], dy[rows], log, direction)
    base = _plan(M, N, dtype, direction, log, sms, gpu)
    lines = [f"{dtype:8s} {M}x{N} {op:11s} {direction} dispatch: {describe(base)}"]
    fns, info = {}, {}
    for spec in ["dispatch"] + specs:
        try:
            p = base if spec == "dispatch" else variant(spec, M, N, dtype, direction, log, sms, gpu)
        except ValueError as e:
            lines.append(f"    {spec}: refused ({e})")
            continue
        launch._COMPILED.clear()
        try:
            got = tune.run_plan(p, bufs, out)
        except Exception as e:  # e.g. a constexpr the kernel's static asserts refuse with the others
            lines.append(f"    {spec}: failed ({type(e).__name__}: {str(e).strip().splitlines()[-1]})")
            continue
        # relative to the row's largest |ref|: a softmax's values of 1e-3 left unwritten show
        err = ((got[rows].double() - ref).abs() / ref.abs().amax(-1, keepdim=True).clamp(min=1e-30)).max().item()
        err = err if err == err else float("inf")  # NaN
        regs = max(c[1].n_regs for c in launch._COMPILED.values())
        spills = max(c[1].n_spills for c in launch._COMPILED.values())
        info[spec] = f"r{regs}" + (f"s{spills}" if spills else "") + (f" ERR {err:.0e}" if err > 2e-2 else "")
        if spec != "dispatch":
            info[spec] += f"  [{describe(p)}]"
        fns[spec] = lambda *a, p=p, o=out: tune.run_plan(p, dict(zip(names, a)), torch.empty_like(o))
    res = tune.time_rounds(fns, tuple(bufs[n] for n in names), nbytes, l2, rounds, others, (dtype, N, op, direction))
    best = min(min(v) for v in res.values())
    for name, us in res.items():
        lines.append(f"    {name:28s} " + "/".join(f"{u:7.2f}" for u in us) + f" us {nbytes / min(us) / 1e3:5.0f} GB/s"
                     f" {best / min(us):.3f} of best  {info.get(name, '')}")
    del x, y, dy, out, bufs, ref
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dtypes", default="float32,bfloat16")
    ap.add_argument("--shapes", default="64x1048576", help="MxN,...")
    ap.add_argument("--ops", default="softmax,log_softmax")
    ap.add_argument("--dirs", default="fwd")
    ap.add_argument("--variants", default="", help="';'-separated variants of ','-separated tokens (see above)")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--peers", action="store_true", help="time torch.softmax and Liger-Kernel beside")
    ap.add_argument("--seeds", action="store_true", help="time the seed kernels beside (bench/seed_kernels.py)")
    args = ap.parse_args()
    commit = os.environ.get("COMMIT") or subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                                                        text=True).stdout.strip()
    print(f"# {commit}, {datetime.now(timezone.utc):%Y-%m-%dT%H:%M:%SZ}, python bench/probe_coop_tilings.py "
          + " ".join(repr(a) if ";" in a else a for a in sys.argv[1:]))
    props = torch.cuda.get_device_properties(0)
    gpu = dispatch.tuned_gpu(torch.cuda.get_device_name())
    print(f"{torch.cuda.get_device_name()}  {props.multi_processor_count} SMs  copy "
          f"{timing.copy_bandwidth(True):.0f} GB/s  triton {triton.__version__}  dispatch's key {gpu!r}  "
          "(us per round, GB/s of the fastest)", flush=True)
    others = []
    if args.peers:
        others = [peers.torch_native()]
        try:
            others.append(peers.liger())
        except ImportError:
            pass
    if args.seeds:
        others += [peers.seed001(props.multi_processor_count), peers.seed000(False)]
    specs = [s for s in args.variants.split(";") if s]
    for dtype in args.dtypes.split(","):
        for shape in args.shapes.split(","):
            M, N = map(int, shape.split("x"))
            for op in args.ops.split(","):
                for direction in args.dirs.split(","):
                    print(case(dtype, M, N, op, direction, specs, props.multi_processor_count, props.L2_cache_size,
                               args.rounds, others, gpu), flush=True)
                    torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
