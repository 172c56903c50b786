"""Probe: the JAX adapter's `where=` (masked softmax) against jax.nn.softmax's, by the benchmark's clock.

multisoftmax.jax runs `where=` as two elementwise XLA passes around its kernels (x masked with -inf
before, the output masked after); XLA fuses jax.nn.softmax's mask into its own reduction and
elementwise kernels. This times, jitted (bench/timing.py: a chain of calls on rotating input copies,
the kernels' GPU time summed): the forward and the backward (the vjp pullback, from a forward outside
the timed function) of both, masked and unmasked, and checks the masked outputs against each other.
GB/s count x and y (backward: y, dy, dx) alone, as the benchmark does: a broadcast mask is small.

Cases: a causal mask (S, S) over a batch of attention rows (B, S, S); a vocabulary mask (1, V) over
logits (M, V); a mask as large as x, (M, N) random (its bytes are not counted).

    python bench/probe_where.py [--dtypes bfloat16,float32]
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import multisoftmax.jax as mj  # noqa: E402
import timing  # noqa: E402

L2_BYTES = 50 * 2**20  # H100


def cases():
    rng = np.random.default_rng(0)
    causal = np.tril(np.ones((2048, 2048), bool))
    vocab = rng.random((1, 32000)) < 0.9
    full = rng.random((4096, 4096)) < 0.5
    return [("causal (2048, 2048)", (32, 2048, 2048), causal),
            ("vocabulary (1, 32000)", (4096, 32000), vocab),
            ("random (4096, 4096)", (4096, 4096), full)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dtypes", default="bfloat16,float32")
    args = ap.parse_args()
    copy = timing.copy_bandwidth(True) if _torch_cuda() else float("nan")
    print(f"{jax.devices()[0].device_kind}  copy {copy:.0f} GB/s  jax {jax.__version__}", flush=True)
    for dtype in args.dtypes.split(","):
        for name, shape, mask in cases():
            key = jax.random.PRNGKey(0)
            x = (jax.random.normal(key, shape, jnp.float32) * 3).astype(dtype)
            dy = jax.random.normal(jax.random.PRNGKey(1), shape, jnp.float32).astype(dtype)
            m = jnp.asarray(mask)
            nb = 2 * x.size * x.dtype.itemsize
            line = []
            outs = {}
            for impl, f in (("ms-jax", mj.softmax), ("xla", jax.nn.softmax)):
                for masked in (True, False):
                    fn = (lambda a, f=f: f(a, -1, where=m)) if masked else (lambda a, f=f: f(a, -1))
                    o, us, _, _ = timing.jax_time(fn, (x,), nb, gpu=True, l2_bytes=L2_BYTES)
                    _, pull = jax.vjp(fn, x)
                    do, us_b, _, _ = timing.jax_time(lambda d, pull=pull: pull(d)[0], (dy,), 1.5 * nb, gpu=True,
                                                     l2_bytes=L2_BYTES)
                    if masked:
                        outs[impl] = (o, do)
                    tag = f"{impl}{' where' if masked else ''}"
                    line.append(f"{tag} {us:7.1f} us {nb / us / 1e3:5.0f} GB/s, bwd {us_b:7.1f} us "
                                f"{1.5 * nb / us_b / 1e3:5.0f} GB/s")
            diffs = [float(jnp.max(jnp.abs(a.astype(jnp.float32) - b.astype(jnp.float32))))
                     for a, b in zip(outs["ms-jax"], outs["xla"])]
            print(f"{dtype:8s} {'x'.join(map(str, shape)):14s} {name:22s} | " + " | ".join(line)
                  + f" | max |ms-jax - xla| masked: y {diffs[0]:.2e} dx {diffs[1]:.2e}", flush=True)


def _torch_cuda() -> bool:
    try:
        import torch
        return torch.cuda.is_available()
    except ImportError:
        return False


if __name__ == "__main__":
    main()
