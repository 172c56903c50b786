"""Probe: the tiling XLA picks for jax.nn.softmax / log_softmax's fused Triton kernel (GPU).

    python bench/probe_xla_tiles.py > bench/results/h100/probe_xla_tiles.log
    python bench/probe_xla_tiles.py bfloat16:15420x8704:log float16:30840x4352:softmax   # these cases instead

For the sweep shapes where XLA's forward ran at or just ahead of multisoftmax in the published
runs, prints the optimized HLO's fusion line(s) with their backend_config (XLA's block-level
fusion config: output tile sizes, num_warps, num_ctas, num_stages), beside dispatch's rows plan
for the same shape, to compare the two tilings.
"""

from __future__ import annotations

import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

from multisoftmax import dispatch  # noqa: E402

CASES = [("bfloat16", 65536, 1024, True), ("float16", 65536, 1024, True), ("bfloat16", 65536, 1024, False),
         ("bfloat16", 65536, 1152, True), ("float32", 58254, 1152, True), ("float32", 65536, 512, True),
         ("bfloat16", 65536, 2048, True), ("bfloat16", 65536, 256, True)]


def _cases(argv):
    """CASES, or the cases given as DTYPE:MxN:log|softmax."""
    out = []
    for a in argv:
        dtype, shape, op = a.split(":")
        M, N = map(int, shape.split("x"))
        out.append((dtype, M, N, op == "log"))
    return out or CASES


def main():
    print(f"# {jax.devices()[0].device_kind}, jax {jax.__version__}")
    for dtype, M, N, log in _cases(sys.argv[1:]):
        f = jax.nn.log_softmax if log else jax.nn.softmax
        x = jax.ShapeDtypeStruct((M, N), jnp.dtype(dtype))
        hlo = jax.jit(lambda a: f(a, axis=-1)).lower(x).compile().as_text()
        plan = dispatch.plan_forward(M, N, N, N, dtype, log, getattr(jax.devices()[0], "core_count", 132),
                                     gpu=dispatch.tuned_gpu(jax.devices()[0].device_kind))
        kw = plan[0].kwargs
        print(f"{dtype} {M}x{N} {'log_softmax' if log else 'softmax'} fwd | dispatch: {plan[0].kernel} "
              f"BLOCK_M={kw.get('BLOCK_M')} BLOCK_N={kw.get('BLOCK_N')} num_warps={kw.get('num_warps')}")
        for line in hlo.splitlines():
            if "fusion(" in line and ("backend_config" in line) and "ENTRY" not in line:
                cfg = re.search(r'backend_config=(\{.*\})', line)
                name = line.strip().split(" = ")[0]
                print(f"  {name}: {cfg.group(1)[:600] if cfg else ''}")


if __name__ == "__main__":
    main()
