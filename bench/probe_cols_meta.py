"""Probe: the columns family's plans (kernels/columns.py) with dispatch's constants or the launches' meta
replaced (GPU): GPU time by the benchmark's clock (bench/timing.py), GB/s of the fewest bytes, beside the plan
the adapters make on this GPU.

    python bench/probe_cols_meta.py --dtypes bfloat16 --dirs fwd --shapes 8x150x65536,64x4096x64 \
        --variants 'cap96:maxnreg=96;w1:num_warps=1;rules:gpu=rules;v16k:force=coop,COLS_COOP_VALUES=16384'

A variant is LABEL:KEY=VALUE,...: `force` is plan_columns_forward / _backward's force ("one_tile", "loop",
"split", "coop"), `gpu` the key of dispatch.GPU_CONSTANTS planned for ("rules": the H100's rules); a KEY that
names a constant of multisoftmax.dispatch (COLS_COOP_VALUES, COLS16_COOP_FWD, ...) replaces it while the plan is
made; any other KEY (maxnreg, num_warps, BLOCK_T, ONE_EXP, ...) replaces that meta value of every launch of the plan
whose kernel takes it (a launch option: num_warps, num_stages, maxnreg; or a constexpr of the kernel's; a one-launch
columns plan's grid follows BLOCK_T); `I.KEY` (e.g. `1.PREFETCH=1`) replaces it in launch I only; `first=K` keeps the
plan's first K launches (timed against the plan's bytes; the result is not the softmax: ERR).
"""
from __future__ import annotations

import contextlib
import dataclasses
import os
import sys
from unittest import mock

import triton

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import probe_cols  # noqa: E402
from multisoftmax import dispatch, kernels  # noqa: E402


def plan(B, N, T, dtype, direction, sms, spec="", gpu=""):
    """The plan of (B, N, T) for variant `spec` (KEY=VALUE,...; the module's docstring)."""
    kv = dict(item.split("=") for item in spec.split(",") if item)
    force = kv.pop("force", None)
    first = int(kv.pop("first", 0))
    if "gpu" in kv:
        gpu = kv.pop("gpu").replace("rules", "")
    consts = {k: eval(v) for k, v in kv.items() if hasattr(dispatch, k)}  # numbers, booleans, tuples
    meta = {k: int(v) for k, v in kv.items() if not hasattr(dispatch, k)}
    args = (B, N, T, N * T, T, N * T, T) + ((N * T, T) if direction == "bwd" else ())
    make = dispatch.plan_columns_forward if direction == "fwd" else dispatch.plan_columns_backward
    with mock.patch.multiple(dispatch, **consts) if consts else contextlib.nullcontext():
        launches = make.__wrapped__(*args, dtype, False, sms, force, gpu=gpu)
    out = []
    for i, launch in enumerate(launches):
        takes = set(kernels.get(launch.kernel).arg_names) | {"num_warps", "num_stages", "maxnreg"}
        mine = {k.partition(".")[2] if "." in k else k: v for k, v in meta.items()
                if "." not in k or k.partition(".")[0] == str(i)}
        kw = {**launch.kwargs, **{k: v for k, v in mine.items() if k in takes}}
        grid = launch.grid
        if "BLOCK_T" in meta and len(launches) == 1 and launch.kernel in ("softmax_fwd_cols", "softmax_bwd_cols"):
            grid = (B * triton.cdiv(T, kw["BLOCK_T"]),)
        out.append(dataclasses.replace(launch, meta=tuple(kw.items()), grid=grid))
    return tuple(out[:first] if first else out)


def describe(launches):
    keys = ("BLOCK_N", "BLOCK_T", "CHUNK_N", "num_warps", "maxnreg")
    return " + ".join(f"{l.kernel}{list(l.grid)} " + ",".join(f"{k}={l.kwargs[k]}" for k in keys if k in l.kwargs)
                      for l in launches)


def main():
    args, sms, l2, gpu = probe_cols.probe_args(__doc__.splitlines()[0], "8x150x65536,64x4096x64,1x8192x8192",
                                               "bfloat16", "LABEL:KEY=VALUE,...;...")
    for dtype, (B, N, T), direction, bufs, names, nbytes, ref, out in probe_cols.cases(args.dtypes, args.shapes,
                                                                                         args.dirs):
        variants = [("dispatch", plan(B, N, T, dtype, direction, sms, gpu=gpu))]
        for v in args.variants.split(";"):
            label, _, spec = v.partition(":")
            variants.append((label, plan(B, N, T, dtype, direction, sms, spec, gpu)))
        cells = probe_cols.gbps_cells(variants, bufs, names, out, ref, nbytes, l2)
        print(f"{dtype} {B}x{N}x{T} {direction} ({nbytes / 2**20:.0f} MB) | GB/s " + " | ".join(cells), flush=True)
        for (label, p) in variants:
            print(f"    {label}: {describe(p)}", flush=True)

if __name__ == "__main__":
    main()
