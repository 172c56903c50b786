"""The columns kernels' tiles (kernels/columns.py, dispatch._columns_tiling): dispatch's plan for a
softmax over a middle axis against other (BLOCK_T, num_warps) of the same kernel, forward and
backward, GPU time by the benchmark's clock (bench/timing.py), GB/s of the fewest bytes.

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
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    print(f"{torch.cuda.get_device_name()}  copy {tune.copy_bandwidth():.0f} GB/s  SMs {sms}", flush=True)
    for dtype in args.dtypes.split(","):
        for B, N, T in shapes:
            T_ = getattr(torch, dtype)
            x = torch.randn(B, N, T, device="cuda", dtype=T_)
            y = torch.softmax(x.float(), 1).to(T_)
            dy = torch.randn_like(x)
            for direction in ("fwd", "bwd"):
                if direction == "fwd":
                    plan = dispatch.plan_columns_forward(B, N, T, N * T, T, N * T, T, dtype, False, sms)
                    bufs, names, nbytes, ref = {"x": x}, ("x",), 2 * x.numel() * x.element_size(), y.float()
                else:
                    plan = dispatch.plan_columns_backward(B, N, T, N * T, T, N * T, T, N * T, T, dtype, False, sms)
                    bufs, names, nbytes = {"y": y, "dy": dy}, ("y", "dy"), 3 * x.numel() * x.element_size()
                    yf = y.float()
                    ref = yf * (dy.float() - (dy.float() * yf).sum(1, keepdim=True))
                kw = plan[0].kwargs
                variants = [("dispatch", plan)]
                for bt, w in tiles:
                    if (bt, w) == (kw["BLOCK_T"], kw["num_warps"]) or bt > triton.next_power_of_2(T):
                        continue
                    if kw["ONE_TILE"] and not args.min_values <= kw["BLOCK_N"] * bt // (32 * w) <= args.max_values:
                        continue
                    block_n = kw["BLOCK_N"] if kw["ONE_TILE"] else min(triton.next_power_of_2(N), 4096 // bt)
                    variants.append((f"t{bt}w{w}", tune.with_meta(plan, grid=(B * triton.cdiv(T, bt),),
                                                                 BLOCK_T=bt, BLOCK_N=block_n, num_warps=w)))
                out = torch.empty_like(x)
                cells = []
                for name, p in variants:
                    got = tune.run_plan(p, bufs, out).float()
                    err = ((got - ref).abs().max() / ref.abs().max()).item()
                    us, _ = timing.torch_time(lambda *a, p=p: tune.run_plan(p, dict(zip(names, a)), torch.empty_like(out)),
                                              tuple(bufs[n] for n in names), nbytes, cuda=True, graphable=True, l2_bytes=l2)
                    cells.append(f"{name} {nbytes / us / 1e3:5.0f}" + (" ERR" if err > 3e-2 else ""))
                print(f"{dtype} {B}x{N}x{T} {direction} | dispatch: BLOCK_N={kw['BLOCK_N']},BLOCK_T={kw['BLOCK_T']},"
                      f"one={kw['ONE_TILE']:d},warps={kw['num_warps']} | GB/s " + " | ".join(cells), flush=True)
            del x, y, dy
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
