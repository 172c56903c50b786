"""Probe (GPU): what zeroing a scratch buffer costs a JAX call, by the benchmark's JAX clock.

The JAX adapter's cooperative kernels need their counters (or TAG's words) at zero when they
start, and jax-triton zeroes them per call (`triton_call(zeroed_outputs=...)`: a memset that
CUPTI records as an event of its own, ~1.1 us). This times a minimal kernel (y = x + 1, plus one
atomic add into the scratch buffer and one back, so the buffer is really used) three ways:

  * memset: the scratch buffer is an output zeroed by jax-triton (the adapter today);
  * xla:    the scratch buffer is `jnp.zeros` made by XLA inside the jitted function, passed as
            an input and aliased to the output (`input_output_aliases`), so XLA zeroes it;
  * none:   the scratch buffer is an output no one zeroes (the kernel alone; wrong in general,
            timed only as the floor).

For each: the GPU events (names, counts, medians) of 20 calls of a jitted function making one
call ("lone"), of a jitted chain of 20 calls as bench/timing.py makes it ("chain": XLA may make
the 20 zero buffers in one fused kernel), and of a jitted `lax.scan` of 20 steps ("scan": one
call a step); and the per-call GPU time of the chain (bench/timing.py's clock). Scratch sizes: 514
int32 (TAG's words of 8 x 256000) and 16449 (SENT's words of 64 x 1048576).

    python bench/probe_zeros.py > bench/results/h100/probe_zeros.log
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

import timing  # noqa: E402
from probe_events import _events  # noqa: E402


@triton.jit
def _body(x_ptr, n, c_ptr, y_ptr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    if pid == 0:  # use the scratch: up and back down, as the cooperative kernels leave it
        tl.atomic_add(c_ptr, 1)
        tl.atomic_add(c_ptr, -1)
    tl.store(y_ptr + offs, x + 1.0, mask=offs < n)


@triton.jit
def k_out(x_ptr, n, c_ptr, y_ptr, BLOCK: tl.constexpr):
    _body(x_ptr, n, c_ptr, y_ptr, BLOCK)


@triton.jit
def k_alias(x_ptr, z_ptr, n, c_ptr, y_ptr, BLOCK: tl.constexpr):
    _body(x_ptr, n, c_ptr, y_ptr, BLOCK)


def make(mode: str, words: int, n: int):
    import jax_triton as jt

    block = 1024
    out = [jax.ShapeDtypeStruct((words,), jnp.int32), jax.ShapeDtypeStruct((n,), jnp.float32)]
    grid = (triton.cdiv(n, block),)

    def f(x):
        if mode == "xla":
            z = jnp.zeros((words,), jnp.int32)
            return jt.triton_call(x, z, n, kernel=k_alias, out_shape=out, grid=grid, input_output_aliases={1: 0},
                                  BLOCK=block)[1]
        zeroed = (0,) if mode == "memset" else ()
        return jt.triton_call(x, n, kernel=k_out, out_shape=out, grid=grid, zeroed_outputs=zeroed, BLOCK=block)[1]

    return f


def events(run):
    """{event name: (count, median us)} of the GPU events of one profiled `run()` (probe_events')."""
    return _events(run)[0]


def main():
    print(f"{jax.devices()[0].device_kind}  jax {jax.__version__}", flush=True)
    l2 = 50 * 2**20
    for n in (1 << 20,):
        x = jax.random.normal(jax.random.PRNGKey(0), (n,), jnp.float32)
        for words in (514, 16449):
            line = []
            for mode in ("memset", "xla", "none"):
                f = make(mode, words, n)
                jf = jax.jit(f)
                y = jax.block_until_ready(jf(x))
                assert float(jnp.max(jnp.abs(y - (x + 1)))) == 0.0

                def run():
                    for _ in range(20):
                        r = jf(x)
                    r.block_until_ready()

                def chain(a):
                    outs, prev = [], None
                    for _ in range(20):
                        if prev is not None:
                            prev, a = jax.lax.optimization_barrier((prev, a))
                        prev = f(a)
                        outs.append(prev)
                    return tuple(outs)

                jchain = jax.jit(chain)
                jscan = jax.jit(lambda a: jax.lax.scan(lambda c, _: (f(c), None), a, None, length=20)[0])
                ev = {"lone": events(run), "chain": events(lambda: jax.block_until_ready(jchain(x))),
                      "scan": events(lambda: jax.block_until_ready(jscan(x)))}
                times = [timing.jax_time(f, (x,), 8 * n, gpu=True, l2_bytes=l2)[1] for _ in range(2)]
                line.append(f"{mode}: " + "/".join(f"{t:.2f}" for t in times) + f" us {ev}")
            print(f"n={n} words={words}\n  " + "\n  ".join(line), flush=True)


if __name__ == "__main__":
    main()
