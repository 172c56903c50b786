"""dispatch's SPLIT_FRESH_* rule inside whole jitted steps (GPU): the JAX adapter's split plan for
few long rows against the cooperative plan (the rule off), where the call is one op among others.

The benchmark times a jitted chain of calls, where XLA makes the cooperative kernels' zeroed
counters of all the calls in one kernel; `probe_coop.py --jax-lone` times lone calls, each with a
zeros kernel of its own, and the two clocks disagree on which plan wins (probe_jax_lone.log). A
model's step is neither: the call sits among other ops that XLA may fuse the zeros with. Three
steps, each jitted whole and called again and again (its GPU events summed, timing.py's clock):

  decode:  y = softmax(h @ W)                                  (logits from a matmul)
  scaled:  y = softmax(x * (1 / T) + b)                        (logits from a loop fusion)
  train:   value_and_grad of -mean(sum(log_softmax(h @ W) * onehot)) with respect to W
           (the forward and its backward in one step, dy from a loop fusion)

with the kernels each step ran (name, count a step, median us), so one can see whether the zeros
stood alone or were fused with a neighbour.

    python bench/probe_jax_step.py > bench/results/h100/probe_jax_step.log

With --kept, the same steps through the JAX adapter as it stands since 2026-11-27 (kept scratch:
the cooperative plans, no zeros; multisoftmax.jax's "Kept scratch") against the adapter before it
(MULTISOFTMAX_JAX_KEPT_SCRATCH=0: zeros that XLA makes for each call, with the split plans):

    python bench/probe_jax_step.py --kept > bench/results/h100/probe_jax_step_kept.log
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

K = 256  # hidden size of the matmul: small, so the softmax's share of the step stays visible
SHAPES = [("bfloat16", 1, 128256), ("bfloat16", 8, 128256), ("bfloat16", 1, 256000), ("bfloat16", 8, 256000),
          ("float32", 1, 128256), ("float32", 8, 128256)]
CALLS = 20


def steps(M, N, dtype):
    """{name: (jitted step, args)} for an M x N softmax in each kind of step."""
    import jax
    import jax.numpy as jnp

    import multisoftmax.jax as msj
    dt = getattr(jnp, dtype)
    key = jax.random.split(jax.random.PRNGKey(M + N), 4)
    h = jax.random.normal(key[0], (M, K), dt)
    W = (jax.random.normal(key[1], (K, N), dt) * 0.05).astype(dt)
    x = jax.random.normal(key[2], (M, N), dt)
    b = jax.random.normal(key[3], (N,), dt)
    onehot = jax.nn.one_hot(jnp.arange(M) % N, N, dtype=dt)

    def loss(w, h, onehot):
        return -jnp.mean(jnp.sum(msj.log_softmax(h @ w, axis=-1).astype(jnp.float32) * onehot, axis=-1))

    return {
        "decode sm": (jax.jit(lambda h, w: msj.softmax(h @ w, axis=-1)), (h, W)),
        "decode log": (jax.jit(lambda h, w: msj.log_softmax(h @ w, axis=-1)), (h, W)),
        "scaled sm": (jax.jit(lambda x, b: msj.softmax(x * dt(0.7) + b, axis=-1)), (x, b)),
        "train log": (jax.jit(jax.value_and_grad(loss)), (W, h, onehot)),
    }


def main():
    import jax
    import torch

    import timing
    from probe_coop import _split_fresh_rule
    from probe_events import _events

    kept = "--kept" in sys.argv
    labels = ("fresh", "kept") if kept else ("split", "coop")
    print(f"{torch.cuda.get_device_name()}  jax {jax.__version__}  K = {K}, {CALLS} steps a run", flush=True)
    for dtype, M, N in SHAPES:
        for name in ("decode sm", "decode log", "scaled sm", "train log"):
            row = []
            for rule_on in (True, False):
                if kept:  # read when the step is traced: _split_fresh_rule clears JAX's traces
                    os.environ["MULTISOFTMAX_JAX_KEPT_SCRATCH"] = "0" if rule_on else "1"
                with _split_fresh_rule(rule_on or kept):
                    f, args = steps(M, N, dtype)[name]

                    def run():
                        for _ in range(CALLS):
                            out = f(*args)
                        jax.block_until_ready(out)

                    us = timing.profiled_gpu_us(run, CALLS)
                    ev, _ = _events(run)
                    row.append((us, ev))
            (split_us, split_ev), (coop_us, coop_ev) = row
            a, b = labels
            print(f"{dtype} {M}x{N} {name}: {a} {split_us:.2f} us a step, {b} {coop_us:.2f} "
                  f"({b} - {a} {coop_us - split_us:+.2f})", flush=True)
            print(f"    {a}: {split_ev}\n    {b}: {coop_ev}", flush=True)


if __name__ == "__main__":
    main()
