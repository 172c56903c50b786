"""Probe: the columns family's split plans (kernels/columns.py: softmax_fwd_stats_cols + softmax_fwd_norm_cols,
softmax_bwd_dot_cols + softmax_bwd_apply_cols) in wider runs of columns than dispatch's COLS_RUN_BYTES (GPU):
BLOCK_T values a row of a tile, BLOCK_N rows a step, num_warps, COLS_SPLIT_PROGRAMS_PER_SM, beside dispatch's
plan; GPU time by the benchmark's clock (bench/timing.py), GB/s of the fewest bytes.

    python bench/probe_cols_wide.py --shapes 1x8192x8192 --variants 256x16w4p8,512x8w4p8 \
        > bench/results/h200/probe_cols_wide.log

"dispatch" is the plan the adapters make on this GPU (`gpu=` dispatch.tuned_gpu of its name: its tuned constants,
COLS16_BWD_*, COLS16_FWD_*), "rules" the H100's rules' plan where that differs.

A variant BLOCK_TxBLOCK_NwWARPSpPER_SM patches dispatch's COLS_RUN_BYTES (BLOCK_T * itemsize), COLS_TILE_SHORT
(BLOCK_T * BLOCK_N), COLS_SPLIT_WARPS / COLS_SPLIT_BWD_WARPS and COLS_SPLIT_PROGRAMS_PER_SM for the call of
plan_columns_forward / _backward with force="split".
"""
from __future__ import annotations

import os
import re
import sys
from unittest import mock

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import probe_cols  # noqa: E402
from multisoftmax import dispatch  # noqa: E402


def plan(B, N, T, dtype, direction, sms, spec=None, gpu=""):
    """dispatch's plan for the GPU of key `gpu` (spec None) or the split plan of variant `spec` (the module's
    docstring)."""
    args = (B, N, T, N * T, T, N * T, T) + ((N * T, T) if direction == "bwd" else ())
    make = dispatch.plan_columns_forward if direction == "fwd" else dispatch.plan_columns_backward
    if spec is None:
        return make.__wrapped__(*args, dtype, False, sms, gpu=gpu)
    block_t, block_n, warps, per_sm = map(int, re.fullmatch(r"(\d+)x(\d+)w(\d+)p(\d+)", spec).groups())
    itemsize = getattr(torch, dtype).itemsize
    with mock.patch.multiple(dispatch, COLS_RUN_BYTES=block_t * itemsize, COLS_TILE_SHORT=block_t * block_n,
                             COLS_SPLIT_WARPS=warps, COLS_SPLIT_BWD_WARPS=warps, COLS_SPLIT_PROGRAMS_PER_SM=per_sm):
        return make.__wrapped__(*args, dtype, False, sms, "split")


def main():
    args, sms, l2, gpu = probe_cols.probe_args(__doc__.splitlines()[0], "1x8192x8192,64x4096x64", "bfloat16,float32",
                                               "BLOCK_TxBLOCK_NwWARPSpPER_SM,...")
    for dtype, (B, N, T), direction, bufs, names, nbytes, ref, out in probe_cols.cases(args.dtypes, args.shapes,
                                                                                         args.dirs):
        variants = [("dispatch", plan(B, N, T, dtype, direction, sms, gpu=gpu))]
        rules = plan(B, N, T, dtype, direction, sms)
        if rules != variants[0][1]:
            variants.append(("rules", rules))
        variants += [(f"{s}c{p[0].grid[1]}", p) for s in args.variants.split(",")
                     for p in [plan(B, N, T, dtype, direction, sms, s)]]
        cells = probe_cols.gbps_cells(variants, bufs, names, out, ref, nbytes, l2)
        d = variants[0][1]
        print(f"{dtype} {B}x{N}x{T} {direction} | {'+'.join(l.kernel for l in d)} grid={d[0].grid} "
              f"BLOCK_T={d[0].kwargs['BLOCK_T']} | GB/s " + " | ".join(cells), flush=True)


if __name__ == "__main__":
    main()
