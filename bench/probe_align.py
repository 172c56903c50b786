"""Probe (GPU): does where y starts cost the cooperative forward of ~256 MB rows time?

The JAX adapter runs the forwards of bf16 128 x 1048576 and float32 64 x 1048576 1-2% slower
than the torch adapter, the same PTX (bench/results/h100/probe_events_big.log), while XLA's own
`2 * x` on buffers it places moves as much as torch's (probe_copy_jax.log). This prints where
XLA puts the outputs of a jitted chain of 5 adapter calls (timing.call_chain, the benchmark's:
offsets in a 2 MiB page), then times, by the benchmark's clock (bench/timing.py), the torch
adapter's plan writing y at those offsets and at others from a 2 MiB-aligned allocation, twice
each.

    python bench/probe_align.py
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import jax  # noqa: E402
import torch  # noqa: E402

import multisoftmax.jax as mj  # noqa: E402
import timing  # noqa: E402
import tune  # noqa: E402
from multisoftmax import dispatch  # noqa: E402
from run import to_jax  # noqa: E402

PAGE = 2**21
CASES = [("bfloat16", 128, 1048576, False), ("float32", 64, 1048576, True)]


def main():
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    print(f"{torch.cuda.get_device_name()}  jax {jax.__version__}  torch {torch.__version__}", flush=True)
    for dtype, M, N, log in CASES:
        T = getattr(torch, dtype)
        x = torch.randn(M, N, device="cuda", dtype=T)
        nbytes = 2 * x.numel() * x.element_size()
        xj = to_jax(x)
        f = mj.log_softmax if log else mj.softmax
        chain = jax.jit(lambda a: timing.call_chain(lambda t: f(t, -1), ((a,),), 5))
        ys = jax.block_until_ready(chain(xj))
        where = [y.unsafe_buffer_pointer() % PAGE for y in ys]
        print(f"{dtype} {M}x{N} {'log' if log else 'sm'}: x at {x.data_ptr() % PAGE} in its 2 MiB page; "
              f"XLA's 5 outputs at {where}", flush=True)
        figs = [timing.jax_time(lambda a: f(a, -1), (xj,), nbytes, gpu=True, l2_bytes=l2)[1] for _ in range(2)]
        print("  JAX adapter (jitted chain): " + "/".join(f"{u:.1f}" for u in figs) + " us", flush=True)
        del ys
        plan = dispatch.plan_forward(M, N, N, N, dtype, log, sms)
        offsets = sorted({0, 256, 4096, 65536} | {w % 65536 for w in where} | set(where))
        for off in offsets:
            item = x.element_size()

            def fn(a, off=off):
                base = torch.empty(x.numel() * item + PAGE + off, device="cuda", dtype=torch.uint8)
                start = (-base.data_ptr()) % PAGE + off
                y = base[start:start + x.numel() * item].view(T).view(M, N)
                tune.run_plan(plan, {"x": a}, y)
                return y

            figs = [timing.torch_time(fn, (x,), nbytes, cuda=True, graphable=True, l2_bytes=l2)[0] for _ in range(2)]
            print(f"  torch plan, y at {off:7d} in a 2 MiB page: " + "/".join(f"{u:.1f}" for u in figs) + " us",
                  flush=True)
        del xj
        x = None  # not del: a closure above names it
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
