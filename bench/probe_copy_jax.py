"""Probe (GPU): does an elementwise pass through XLA move bytes as fast as one through torch?

The issue's ceiling is torch's device-to-device copy. The JAX adapter's ~195 us forwards of
~256 MB rows run 1-2% slower than the torch adapter's with the same PTX
(bench/results/h100/probe_events_big.log): the same kernel, buffers placed by XLA's allocator.
This times, by the benchmark's clock (bench/timing.py: torch in a CUDA graph, JAX in a jitted
chain, fresh outputs in both), `2 * x` through torch and through XLA, and torch's copy, at the
sweep's sizes (256 MB and 1 GiB a tensor, float32 and bfloat16), twice each:
whether XLA's own kernels pay the same on buffers it places.

    python bench/probe_copy_jax.py
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import jax  # noqa: E402
import torch  # noqa: E402

import timing  # noqa: E402
from run import to_jax  # noqa: E402


def main():
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    print(f"{torch.cuda.get_device_name()}  jax {jax.__version__}  torch {torch.__version__}  "
          f"allocator {os.environ.get('XLA_PYTHON_CLIENT_ALLOCATOR', 'default')}  "
          f"copy (timing.copy_bandwidth) {timing.copy_bandwidth(True):.0f} GB/s", flush=True)
    for dtype, numel in [("float32", 2**26), ("bfloat16", 2**27), ("float32", 2**28)]:
        x = torch.randn(numel, device="cuda").to(getattr(torch, dtype))
        nbytes = 2 * x.numel() * x.element_size()
        xj = to_jax(x)
        figures = {}
        for rep in range(2):
            us, _ = timing.torch_time(lambda a: a * 2, (x,), nbytes, cuda=True, graphable=True, l2_bytes=l2)
            figures.setdefault("torch 2 * x", []).append(us)
            b = torch.empty_like(x)
            us, _ = timing.torch_time(lambda a: b.copy_(a), (x,), nbytes, cuda=True, graphable=True, l2_bytes=l2)
            figures.setdefault("torch copy_ (graph)", []).append(us)
            _, us, _, _ = timing.jax_time(lambda a: 2 * a, (xj,), nbytes, gpu=True, l2_bytes=l2)
            figures.setdefault("XLA 2 * x", []).append(us)
        print(f"{dtype} {nbytes // 2 // 2**20} MB a tensor: " + " | ".join(
            f"{name} " + "/".join(f"{u:.1f}" for u in v) + f" us {nbytes / min(v) / 1e3:.0f} GB/s"
            for name, v in figures.items()), flush=True)
        del x, xj
        b = None  # not del: a closure above names it
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
