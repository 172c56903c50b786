"""The rows kernel's forward at N = 128 (GPU): dispatch's tiling against others, by the benchmark's
torch clock (timing.torch_time: a CUDA graph of calls over input copies, fresh outputs), rounds
interleaved, torch.compile beside them (dispatch.ROWS_FWD32_HALF_N).

    python bench/probe_rows_fwd32.py > bench/results/h100/probe_rows_fwd32_128.log

Each line: a case, then `bmBwW` (B rows a program at W warps) min / median us over the rounds.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

M = 65536
CASES = [("float32", 128, False), ("float32", 128, True), ("float32", 256, False), ("float16", 128, False),
         ("bfloat16", 128, False)]
TILINGS = [(8, 2), (4, 2), (8, 4), (16, 4), (2, 1)]
ROUNDS = 4


def main():
    import statistics

    import torch

    import timing
    import tune
    from multisoftmax import dispatch

    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    print(f"{torch.cuda.get_device_name()}  torch {torch.__version__}  SMs {sms}", flush=True)
    for dtype, N, log in CASES:
        tdt = getattr(torch, dtype)
        x = torch.randn(M, N, device="cuda", dtype=tdt)
        plan = dispatch.plan_forward(M, N, N, N, dtype, log, sms)
        kw = plan[0].kwargs
        op = torch.log_softmax if log else torch.softmax
        fns = {f"dispatch bm{kw['BLOCK_M']}w{kw['num_warps']}": plan}
        for bm, w in TILINGS:
            fns[f"bm{bm}w{w}"] = tune.with_rows_tiling(plan, M, bm, w, tdt.itemsize, log, True)
        fns = {k: (lambda p: lambda a: tune.run_plan(p, {"x": a}, torch.empty_like(a)))(p) for k, p in fns.items()}
        fns["torch.compile"] = torch.compile(lambda a: op(a, -1), fullgraph=True, dynamic=False)
        ref = op(x.double(), -1)
        for name, fn in fns.items():
            err = (fn(x).double() - ref).abs().max().item()
            assert err < 1e-2, (name, err)
        times = {k: [] for k in fns}
        for _ in range(ROUNDS):
            for name, fn in fns.items():
                times[name].append(timing.torch_time(fn, (x,), 2 * x.nbytes, cuda=True, graphable=True,
                                                     l2_bytes=l2)[0])
        print(f"{dtype} {M}x{N} {'log_softmax' if log else 'softmax'} fwd: " + " | ".join(
            f"{k} {min(v):.2f}/{statistics.median(v):.2f}" for k, v in times.items()), flush=True)
        torch.compiler.reset()


if __name__ == "__main__":
    main()
