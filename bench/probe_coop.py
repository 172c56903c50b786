"""Probe the cooperative kernels on long rows: chunk x warps x RELOAD, GB/s and registers (GPU).

    python bench/probe_coop.py > bench/results/h100/probe_coop.log

For bf16 and float32 rows of N = 50257 (not 16-byte aligned in bf16: PEEL), 65536 and
1048576 at ~256 MB, forward and backward, softmax (and log_softmax at the sweep shapes), it
times the cooperative plan with other chunk sizes and warps and, for the backward kernel,
with RELOAD off and on (y and dy held in registers across the row's wait, or loaded again
after it), and prints the registers a thread and spills of each compiled kernel: fewer
registers let more programs share an SM. dispatch.py's COOP_RELOAD rule was read from it.
Each line's err is the largest error relative to max(1, |ref|) against float64.

    python bench/probe_coop.py --wide > bench/results/h100/probe_chunk.log

instead times the 16-bit forward at chunks of 8192 and 16384 (8 warps), softmax and
log_softmax, twice each, on aligned long rows: dispatch.py's COOP_WIDE_MAX_N rule.
"""

from __future__ import annotations

import os
import sys

import torch
import triton.testing

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import tune  # noqa: E402
from multisoftmax import launch  # noqa: E402

SHAPES = {"bfloat16": [(2670, 50257), (2048, 65536), (128, 1048576), (4096, 50257)],
          "float32": [(1335, 50257), (64, 1048576)]}
VARIANTS = [(8192, 8), (16384, 8), (8192, 4), (16384, 16), (4096, 4)]  # (CHUNK_N, num_warps)


def reference(x, y, dy, log, direction):
    if direction == "fwd":
        return (torch.log_softmax if log else torch.softmax)(x.double(), -1)
    yd, dyd = y.double(), dy.double()
    if log:
        return dyd - yd.exp() * dyd.sum(-1, keepdim=True)
    return yd * (dyd - (yd * dyd).sum(-1, keepdim=True))


WIDE_SHAPES = [(2048, 65536), (1024, 131072), (512, 262144), (128, 1048576), (1024, 128256), (512, 151936),
               (64, 256000)]


def wide(sms):
    for dtype in ("bfloat16", "float16"):
        for M, N in WIDE_SHAPES:
            for log in (False, True):
                x, y, dy, out, bufs, nbytes = tune.make_inputs(M, N, getattr(torch, dtype), "fwd", log)
                res = []
                for _ in range(2):
                    for chunk in (8192, 16384):
                        p = tune.coop_plan(M, N, dtype, "fwd", sms, chunk, 8, log)
                        ms = triton.testing.do_bench(lambda: tune.run_plan(p, bufs, out), warmup=5, rep=40,
                                                     return_mode="median")
                        res.append(f"{chunk}:{nbytes / ms / 1e6:.0f}")
                print(dtype, M, N, "log" if log else "sm", " ".join(res), flush=True)
                del x, y, dy, out, bufs
                torch.cuda.empty_cache()


def main():
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    print(f"{torch.cuda.get_device_name()}  copy {tune.copy_bandwidth():.0f} GB/s  SMs {sms}", flush=True)
    if "--wide" in sys.argv[1:]:
        return wide(sms)
    for dtype, shapes in SHAPES.items():
        for M, N in shapes:
            for log in (False, True):
                if log and (M, N) not in ((2670, 50257), (2048, 65536)):
                    continue
                for direction in ("fwd", "bwd"):
                    x, y, dy, out, bufs, nbytes = tune.make_inputs(M, N, tune.DTYPES[dtype], direction, log)
                    ref = reference(x, y, dy, log, direction)
                    for chunk, warps in VARIANTS:
                        try:
                            plan = tune.coop_plan(M, N, dtype, direction, sms, chunk, warps, log)
                        except ValueError:  # more chunks than SMs: dispatch refuses it
                            continue
                        for reload in ((False, True) if direction == "bwd" else (False,)):
                            p = tune.with_meta(plan, RELOAD=reload) if direction == "bwd" else plan
                            launch._COMPILED.clear()
                            got = tune.run_plan(p, bufs, out)
                            err = ((got.double() - ref).abs() / ref.abs().clamp(min=1)).max().item()
                            regs = [(c[1].n_regs, c[1].n_spills) for c in launch._COMPILED.values()]
                            ms = triton.testing.do_bench(lambda: tune.run_plan(p, bufs, out), warmup=5, rep=40,
                                                         return_mode="median")
                            print(f"{dtype:8s} {M:5d}x{N:7d} {'log' if log else 'sm '} {direction} chunk={chunk:5d} "
                                  f"warps={warps:2d} RELOAD={reload:d} {nbytes / ms / 1e6:6.0f} GB/s "
                                  f"regs,spills={regs} err={err:.1e}", flush=True)
                    del x, y, dy, out, bufs, ref
                    torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
