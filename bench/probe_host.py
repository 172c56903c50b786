"""Probe (GPU): host time of the pieces of the torch adapter's eager call at 32 x 1024 float32
(bench/overhead.py times the layers; this times the alternatives for some of them).

Rows: allocating y (torch.empty with shape, dtype and device against torch.empty_like), the
current device (torch.cuda.current_device against torch's raw getter), Triton's launcher given
the tensors against given their addresses (ints), through CompiledKernel.run and through the C
launch function it wraps (multisoftmax.launch._launcher), then the adapter's layers from the
inside out (each includes the ones below it) and torch.softmax. Each figure is the best of
interleaved rounds of back-to-back calls (timing.host_rounds), in microseconds a call.

    python bench/probe_host.py [--calls 2000] [--rounds 7]
"""

from __future__ import annotations

import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import timing  # noqa: E402  (bench/, this script's folder)
import multisoftmax.torch as mt  # noqa: E402
from multisoftmax import dispatch, launch  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--calls", type=int, default=2000)
    p.add_argument("--rounds", type=int, default=7)
    args = p.parse_args()
    M, N = 32, 1024
    x = torch.randn(M, N, device="cuda")
    y = torch.empty_like(x)
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    (only,) = dispatch.plan_forward(M, N, N, N, "float32", False, sms)
    launch.torch_call(only, [x], {}, y.dtype, y.device, y)  # compiles and caches
    (hit,) = [v for k, v in launch._COMPILED.items() if k[0] == id(only)]
    _, compiled, grid, call, head, constexprs = hit
    run = compiled.run
    stream = torch.cuda.current_stream().cuda_stream
    meta = (compiled.packed_metadata, None, None, None)
    xp, yp = x.data_ptr(), y.data_ptr()
    rows = {
        "torch.empty(x.shape, dtype=x.dtype, device=x.device)": lambda: torch.empty(x.shape, dtype=x.dtype,
                                                                                      device=x.device),
        "torch.empty_like(x, memory_format=torch.contiguous_format)": lambda: torch.empty_like(
            x, memory_format=torch.contiguous_format),
        "torch.cuda.current_device()": torch.cuda.current_device,
        "torch._C._cuda_getDevice()": torch._C._cuda_getDevice,
        "x.data_ptr()": x.data_ptr,
        "CompiledKernel.run, tensors": lambda: run(*grid, stream, compiled.function, *meta, x, *only.scalars, y,
                                                   *constexprs),
        "CompiledKernel.run, addresses": lambda: run(*grid, stream, compiled.function, *meta, xp, *only.scalars, yp,
                                                     *constexprs),
        f"launch._launcher's call ({getattr(call, '__qualname__', call)}), addresses":
            lambda: call(*grid, stream, *head, xp, *only.scalars, yp, *constexprs),
        "launch.launch_compiled (as the adapter calls it)":
            lambda: launch.launch_compiled(only, (x,), (y,), x.dtype, 0),
        "the adapter's _forward_fast(x, False)": lambda: mt._forward_fast(x, False),
        "the adapter's _call_forward(x, False)": lambda: mt._call_forward(x, False),
        "the adapter's _softmax(x, -1, None, False)": lambda: mt._softmax(x, -1, None, False),
        "multisoftmax.torch.softmax(x)": lambda: mt.softmax(x),
        "torch.softmax(x, -1)": lambda: torch.softmax(x, -1),
    }
    time_rows(rows, args.calls, args.rounds)


def time_rows(rows: dict, calls: int, rounds: int) -> dict:
    """Warm up each of `rows` ({name: fn making one call on CUDA tensors at 32 x 1024 float32}),
    time them in interleaved rounds of `calls` back-to-back calls, one synchronize at the end of
    each (timing.host_rounds), print each row's best round and median in microseconds a call,
    and return {name: [us of each round]}."""
    for fn in rows.values():
        for _ in range(20):
            fn()
    wait = lambda r: torch.cuda.synchronize()  # noqa: E731
    out = timing.host_rounds({name: (fn, wait) for name, fn in rows.items()}, calls, rounds)
    print(f"# {torch.cuda.get_device_name()}, torch {torch.__version__}, 32 x 1024 float32; best of "
          f"{rounds} rounds of {calls} calls (and the median)")
    for name, us in out.items():
        print(f"{min(us):8.2f} us  {sorted(us)[len(us) // 2]:8.2f}  {name}")
    return out


if __name__ == "__main__":
    main()
