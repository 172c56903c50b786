"""The columns kernels' tiles (kernels/columns.py, dispatch._columns_tiling): dispatch's plan for a
softmax over a middle axis against other (BLOCK_T, num_warps) of the one-tile or looped kernel (for
long columns, which dispatch runs cooperatively or split: the loop's tiles; bench/probe_cols_split.py
compares those plans), forward and backward, GPU time by the benchmark's clock (bench/timing.py),
GB/s of the fewest bytes.

    python bench/probe_cols.py > bench/results/h100/probe_cols.log
    python bench/probe_cols.py --shapes 4096x21x1024,... --tiles 16x1,32x2,... --max-values 128   # a sweep
"""
from __future__ import annotations

import argparse
import os
import sys

import torch
import triton

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import timing  # noqa: E402
import tune  # noqa: E402
from multisoftmax import dispatch  # noqa: E402

# (B, N, T): 16 x 21 x 512 x 512 over C, 1024 x 32 x 2048, 8 x 150 x 256 x 256, 32 x 1000 x 14 x 14.
SHAPES = [(16, 21, 262144), (1024, 32, 2048), (8, 150, 65536), (32, 1000, 196), (64, 4096, 64), (1, 8192, 8192)]
VARIANTS = [(16, 4), (16, 8), (32, 4), (32, 8), (64, 4), (64, 8), (128, 4), (128, 8), (256, 4)]


def device_header():
    """Print the GPU's name, the copy bandwidth, SMs and L2; return (SMs, L2 bytes)."""
    props = torch.cuda.get_device_properties(0)
    print(f"{torch.cuda.get_device_name()}  copy {tune.copy_bandwidth():.0f} GB/s  SMs {props.multi_processor_count}"
          f"  L2 {props.L2_cache_size >> 20} MB", flush=True)
    return props.multi_processor_count, props.L2_cache_size


def directions(x):
    """For the softmax over axis 1 of x (B, N, T) forward, then backward: (direction, the kernel's
    input buffers, their names in order, the fewest bytes moved, a float32 reference of the output)."""
    y = torch.softmax(x.float(), 1).to(x.dtype)
    size = x.numel() * x.element_size()
    yield "fwd", {"x": x}, ("x",), 2 * size, y.float()
    dy = torch.randn_like(x)
    yf = y.float()
    yield "bwd", {"y": y, "dy": dy}, ("y", "dy"), 3 * size, yf * (dy.float() - (dy.float() * yf).sum(1, keepdim=True))


def probe_args(description: str, shapes: str, dtypes: str, variants_help: str):
    """The columns probes' command line (--shapes, --dtypes, --dirs, --variants), parsed, and the device's header
    printed: (args, SMs, L2 bytes, the GPU's key of dispatch.GPU_CONSTANTS)."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--shapes", default=shapes, help="BxNxT,...")
    ap.add_argument("--dtypes", default=dtypes)
    ap.add_argument("--dirs", default="fwd,bwd")
    ap.add_argument("--variants", required=True, help=variants_help)
    args = ap.parse_args()
    sms, l2 = device_header()
    return args, sms, l2, dispatch.tuned_gpu(torch.cuda.get_device_name())


def cases(dtypes: str, shapes: str, dirs: str = "fwd,bwd"):
    """For each dtype of `dtypes` and (B, N, T) of `shapes` ("BxNxT,..."), a random x (B, N, T) (times 3) and each
    direction of `dirs` ("fwd,bwd"): (dtype, (B, N, T), direction, then `directions`' tuple but the direction, then
    an empty tensor like x for the output); the GPU's memory freed after each shape."""
    for dtype in dtypes.split(","):
        for B, N, T in (tuple(int(v) for v in s.split("x")) for s in shapes.split(",")):
            x = torch.randn(B, N, T, device="cuda", dtype=getattr(torch, dtype)) * 3
            for direction, *rest in directions(x):
                if direction in dirs.split(","):
                    yield (dtype, (B, N, T), direction, *rest, torch.empty_like(x))
            del x
            torch.cuda.empty_cache()


def gbps_cells(variants, bufs, names, out, ref, nbytes, l2):
    """'label GB/s' for each (label, plan) of `variants` run on `bufs` (the inputs `names`, in order)
    into tensors like `out`: GPU time by the benchmark's clock, GB/s of `nbytes`; " ERR" where the
    result is off `ref` by more than 3% of its largest value, or is not shaped like it (a plan cut short)."""
    cells = []
    for name, p in variants:
        got = tune.run_plan(p, bufs, out).float()
        err = ((got - ref).abs().max() / ref.abs().max()).item() if got.shape == ref.shape else float("inf")
        us, _ = timing.torch_time(lambda *a, p=p: tune.run_plan(p, dict(zip(names, a)), torch.empty_like(out)),
                                  tuple(bufs[n] for n in names), nbytes, cuda=True, graphable=True, l2_bytes=l2)
        cells.append(f"{name} {nbytes / us / 1e3:5.0f}" + (" ERR" if err > 3e-2 else ""))
    return cells


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", help="BxNxT,... (default: SHAPES)")
    ap.add_argument("--tiles", help="BLOCK_TxWARPS,... (default: VARIANTS)")
    ap.add_argument("--dtypes", default="float32,bfloat16")
    ap.add_argument("--min-values", type=int, default=4, help="least values a thread of a one-tile variant holds")
    ap.add_argument("--max-values", type=int, default=64, help="most values a thread of a one-tile variant holds")
    args = ap.parse_args()
    shapes = [tuple(int(v) for v in s.split("x")) for s in args.shapes.split(",")] if args.shapes else SHAPES
    tiles = [tuple(int(v) for v in s.split("x")) for s in args.tiles.split(",")] if args.tiles else VARIANTS
    sms, l2 = device_header()
    for dtype in args.dtypes.split(","):
        for B, N, T in shapes:
            x = torch.randn(B, N, T, device="cuda", dtype=getattr(torch, dtype))
            for direction, bufs, names, nbytes, ref in directions(x):
                if direction == "fwd":
                    plan = dispatch.plan_columns_forward(B, N, T, N * T, T, N * T, T, dtype, False, sms)
                else:
                    plan = dispatch.plan_columns_backward(B, N, T, N * T, T, N * T, T, N * T, T, dtype, False, sms)
                variants = [("dispatch", plan)]
                if plan[0].kernel not in ("softmax_fwd_cols", "softmax_bwd_cols"):  # long columns: coop or split
                    plan = (dispatch.plan_columns_forward(B, N, T, N * T, T, N * T, T, dtype, False, sms, "loop")
                            if direction == "fwd" else
                            dispatch.plan_columns_backward(B, N, T, N * T, T, N * T, T, N * T, T, dtype, False, sms, "loop"))
                    variants.append(("loop", plan))
                kw = plan[0].kwargs
                for bt, w in tiles:
                    if (bt, w) == (kw["BLOCK_T"], kw["num_warps"]) or bt > triton.next_power_of_2(T):
                        continue
                    if kw["ONE_TILE"] and not args.min_values <= kw["BLOCK_N"] * bt // (32 * w) <= args.max_values:
                        continue
                    block_n = kw["BLOCK_N"] if kw["ONE_TILE"] else min(triton.next_power_of_2(N), 4096 // bt)
                    variants.append((f"t{bt}w{w}", tune.with_meta(plan, grid=(B * triton.cdiv(T, bt),),
                                                                 BLOCK_T=bt, BLOCK_N=block_n, num_warps=w)))
                cells = gbps_cells(variants, bufs, names, torch.empty_like(x), ref, nbytes, l2)
                print(f"{dtype} {B}x{N}x{T} {direction} | {variants[0][1][0].kernel}; tiles of: BLOCK_N={kw['BLOCK_N']},"
                      f"BLOCK_T={kw['BLOCK_T']},one={kw['ONE_TILE']:d},warps={kw['num_warps']} | GB/s " + " | ".join(cells),
                      flush=True)
            del x
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
