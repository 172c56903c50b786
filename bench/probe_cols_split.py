"""The columns family's plans for long columns (kernels/columns.py): the loop, the split plans
(dispatch.COLS_SPLIT_*: several programs an SM, warps) and the cooperative plans (COLS_COOP_*: values
a program, warps), GPU time by the benchmark's clock (bench/timing.py), GB/s of the fewest bytes
(forward: x, y; backward: y, dy, dx), both directions.

    python bench/probe_cols_split.py > bench/results/h100/probe_cols_split.log
"""
from __future__ import annotations

import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import probe_cols  # noqa: E402
from multisoftmax import dispatch  # noqa: E402

# (B, N, T): 64 x 4096 x 64 and 8192 x 8192 over dim 0 (probe_dim.py's looped shapes), and more.
SHAPES = [(64, 4096, 64), (1, 8192, 8192), (32, 2048, 196), (16, 4096, 1024), (256, 2048, 64), (4, 32768, 512)]


def plan(B, N, T, dtype, direction, sms, force, per_sm=None, warps=None, values=None, run=None):
    names = ("COLS_SPLIT_PROGRAMS_PER_SM", "COLS_SPLIT_WARPS", "COLS_SPLIT_BWD_WARPS", "COLS_COOP_VALUES",
             "COLS_COOP_WARPS", "COLS_COOP_RUN_BYTES")
    saved = [getattr(dispatch, n) for n in names]
    try:
        if per_sm:
            dispatch.COLS_SPLIT_PROGRAMS_PER_SM = per_sm
        if warps:
            dispatch.COLS_SPLIT_WARPS = dispatch.COLS_SPLIT_BWD_WARPS = dispatch.COLS_COOP_WARPS = warps
        if values:
            dispatch.COLS_COOP_VALUES = values
        if run:
            dispatch.COLS_COOP_RUN_BYTES = run
        if direction == "fwd":
            return dispatch.plan_columns_forward.__wrapped__(B, N, T, N * T, T, N * T, T, dtype, False, sms, force)
        return dispatch.plan_columns_backward.__wrapped__(B, N, T, N * T, T, N * T, T, N * T, T, dtype, False, sms, force)
    finally:
        for n, v in zip(names, saved):
            setattr(dispatch, n, v)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", help="BxNxT,... (default: SHAPES)")
    ap.add_argument("--dtypes", default="bfloat16,float32")
    ap.add_argument("--per-sm", default="8,32", help="COLS_SPLIT_PROGRAMS_PER_SM values")
    ap.add_argument("--warps", default="4,8")
    ap.add_argument("--coop", default="4096x4x128,8192x4x128,8192x8x128",
                    help="cooperative variants VALUESxWARPSxRUN_BYTES,... (COLS_COOP_VALUES, _WARPS, _RUN_BYTES)")
    args = ap.parse_args()
    shapes = [tuple(int(v) for v in s.split("x")) for s in args.shapes.split(",")] if args.shapes else SHAPES
    sms, l2 = probe_cols.device_header()
    for dtype in args.dtypes.split(","):
        for B, N, T in shapes:
            x = torch.randn(B, N, T, device="cuda", dtype=getattr(torch, dtype)) * 3
            for direction, bufs, names, nbytes, ref in probe_cols.directions(x):
                variants = [("dispatch", plan(B, N, T, dtype, direction, sms, None)),
                            ("loop", plan(B, N, T, dtype, direction, sms, "loop"))]
                for per_sm in (int(v) for v in args.per_sm.split(",")):
                    for w in (int(v) for v in args.warps.split(",")):
                        p = plan(B, N, T, dtype, direction, sms, "split", per_sm, w)
                        variants.append((f"p{per_sm}w{w}c{p[0].grid[1]}", p))
                for values, w, run in (tuple(int(v) for v in c.split("x")) for c in args.coop.split(",")):
                    p = plan(B, N, T, dtype, direction, sms, "coop", warps=w, values=values, run=run)
                    if p[0].kernel.endswith("_coop_cols"):
                        variants.append((f"coop{values}w{w}r{run}c{p[0].scalars[-1]}", p))
                cells = probe_cols.gbps_cells(variants, bufs, names, torch.empty_like(x), ref, nbytes, l2)
                d = variants[0][1]
                desc = "+".join(l.kernel for l in d) + f" grid={d[0].grid} BLOCK_T={d[0].kwargs['BLOCK_T']}"
                print(f"{dtype} {B}x{N}x{T} {direction} ({nbytes / 2**20:.0f} MB) | {desc} | GB/s " + " | ".join(cells),
                      flush=True)
            del x
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
