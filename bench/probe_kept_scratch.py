"""Probe (GPU): the JAX adapter's kept scratch (multisoftmax.jax, "Kept scratch") against the
fresh scratch it had before (MULTISOFTMAX_JAX_KEPT_SCRATCH=0: zeros that XLA makes for each call).

1. What it stands on: a constant of a jitted program that a Triton kernel adds to through its
   pointer is one buffer for every execution and keeps what the kernel left (a small constant,
   one of a cooperative 128 x 1048576 plan's size, one of a single value: XLA's broadcast).
2. On few long rows and 1048576-value rows: the GPU events of 20 lone jitted calls (the forward,
   and a jitted vjp: forward and backward; the kernels by name with their medians, and the sum a
   call) and the forward by the benchmark's clock (bench/timing.py's jitted chain), kept against
   fresh, each in a process of its own.

    python bench/probe_kept_scratch.py > bench/results/h100/probe_kept_scratch.log
"""

from __future__ import annotations

import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

SHAPES = [("bfloat16", 1, 128256), ("float32", 1, 128256), ("bfloat16", 1, 256000), ("bfloat16", 8, 128256),
          ("bfloat16", 8, 256000), ("float32", 8, 256000), ("bfloat16", 16, 1048576), ("bfloat16", 128, 1048576),
          ("float32", 64, 1048576)]


def keeps_constants():
    import jax
    import jax.numpy as jnp
    import numpy as np
    import triton
    import triton.language as tl

    import multisoftmax.jax as mj

    @triton.jit
    def add_one(x_ptr, words_ptr, old_ptr):
        tl.store(old_ptr, tl.atomic_add(words_ptr, 1) + tl.load(x_ptr) * 0)

    jt = mj._jax_triton()
    x = jnp.zeros((1,), jnp.int32)
    for label, words in (("small (64 words)", mj._kept_scratch((64,), "zeros")),
                         ("a 128 x 1048576 plan's (16513 words)", mj._kept_scratch((16513,), "zeros")),
                         ("of one value (64 zeros)", np.zeros(66, np.int32))):
        def f(a, words=words):
            return jt.triton_call(a, words, kernel=add_one, grid=(1,), out_shape=jax.ShapeDtypeStruct((1,), jnp.int32))
        lone = jax.jit(f)
        hlo = lone.lower(x).compile().as_text()
        how = "constant" if "constant({...})" in hlo else "broadcast" if "broadcast" in hlo else "other"
        print(f"constant {label}: in the compiled HLO as a {how}; word 0 seen by 4 calls: "
              f"{[int(lone(x)[0]) for _ in range(4)]}", flush=True)


def measure(mode: str):
    import jax
    import jax.numpy as jnp
    import numpy as np

    import multisoftmax.jax as mj
    import timing
    from probe_events import _events

    print(f"## {mode} scratch (kept scratch on: {mj._kept_scratch_on()})", flush=True)
    l2 = 50 * 2**20
    for dtype, M, N in SHAPES:
        rng = np.random.default_rng(M + N)
        x = jnp.asarray(rng.standard_normal((M, N)) * 2, getattr(jnp, dtype))
        dy = jnp.asarray(rng.standard_normal((M, N)), getattr(jnp, dtype))
        item = x.dtype.itemsize
        for log in (False, True):
            op = mj.log_softmax if log else mj.softmax
            fwd = jax.jit(lambda a: op(a, axis=-1))
            bwd = jax.jit(lambda a, g: jax.vjp(lambda t: op(t, axis=-1), a)[1](g)[0])
            ev_f, us_f = _events(lambda: jax.block_until_ready([fwd(x) for _ in range(20)]))
            ev_b, us_b = _events(lambda: jax.block_until_ready([bwd(x, dy) for _ in range(20)]))
            _, clock_f, _, _ = timing.jax_time(lambda a: op(a, axis=-1), (x,), 2 * M * N * item, gpu=True, l2_bytes=l2)
            name = "log_softmax" if log else "softmax"
            print(f"{dtype} {M}x{N} {name}: fwd lone {us_f:.2f} us a call {ev_f}; benchmark clock {clock_f:.2f} us",
                  flush=True)
            print(f"{dtype} {M}x{N} {name}: fwd+bwd lone {us_b:.2f} us a call {ev_b}", flush=True)


if __name__ == "__main__":
    if len(sys.argv) > 1:
        measure(sys.argv[1])
    else:
        keeps_constants()
        for mode, env in (("kept", "1"), ("fresh", "0")):
            subprocess.run([sys.executable, __file__, mode], check=True,
                           env={**os.environ, "MULTISOFTMAX_JAX_KEPT_SCRATCH": env})
