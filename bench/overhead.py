"""Host overhead per call of each layer of the torch path, at 32 x 1024 float32 (GPU), or
at another shape and dtype (`--shape M N --dtype bfloat16`: e.g. few long rows, whose plan is
cooperative: the adapter's short path keeps its partials and counters per stream).

Times N back-to-back calls with one synchronize at the end (wall clock), for: torch.softmax,
multisoftmax.torch.softmax (no grad / with grad), the backward alone (torch's and ours as
autograd calls it, with no grad recorded), a forward and backward through autograd.grad
(torch's and ours), the raw custom op, the plan executed directly, the cached compiled kernel
launched alone, and allocating y alone, so the cost of each layer (argument checks, custom-op
dispatch, planning, Triton's launcher, allocation) can be read off as differences. Where JAX
has a GPU backend (and jax-triton is installed) the same rounds also time jitted calls of
jax.nn.softmax, multisoftmax.jax.softmax, the plan's jax_triton.triton_call alone and `2 * x`
(what XLA's dispatch of a one-kernel executable costs), with one block_until_ready at the end:
the issue's target is the jitted adapter within 1.1x of the jitted jax.nn.softmax.

    python bench/overhead.py [--calls 2000] [--rounds 7] [--out overhead.json] [--shape M N] [--dtype D]
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import multisoftmax.torch as mt  # noqa: E402
import timing  # noqa: E402  (bench/, this script's folder)
from multisoftmax import dispatch, launch, sms as sm_share  # noqa: E402


def jax_rows(x, sms, dtype: str) -> dict:
    """{name: jitted call of the JAX rows} (module docstring), or {} without a JAX GPU backend."""
    try:
        import jax
        if jax.default_backend() != "gpu":
            return {}
        import multisoftmax.jax as mj
        from multisoftmax.jax import _gpu_execute
    except ImportError:
        return {}
    M, N = x.shape
    xj = jax.numpy.asarray(x.float().cpu().numpy()).astype(dtype)
    plan = dispatch.plan_forward(M, N, N, N, dtype, False, sms, counters_per_call=True)  # the adapter's
    jitted = {
        "jax.jit(jax.nn.softmax)": jax.jit(jax.nn.softmax),
        "jax.jit(multisoftmax.jax.softmax)": jax.jit(mj.softmax),
        "jax.jit(the plan's triton_call alone)": jax.jit(lambda a: _gpu_execute(plan, {"x": a}, a.dtype)),
        "jax.jit(2 * x)": jax.jit(lambda a: 2 * a),
    }
    return {name: functools.partial(f, xj) for name, f in jitted.items()}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--calls", type=int, default=2000)
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--out", default=None)
    p.add_argument("--shape", type=int, nargs=2, default=(32, 1024), metavar=("M", "N"))
    p.add_argument("--dtype", default="float32", choices=("float32", "bfloat16", "float16"))
    args = p.parse_args()
    M, N = args.shape
    x = torch.randn(M, N, device="cuda").to(getattr(torch, args.dtype))
    xg = x.clone().requires_grad_()
    y = torch.empty_like(x)
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    plan = dispatch.plan_forward(M, N, N, N, args.dtype, False, sms)
    print(f"# {M} x {N} {args.dtype}: plan " + " + ".join(f"{one.kernel}{list(one.grid)}" for one in plan))
    stream = torch.cuda.current_stream().cuda_stream

    def direct():
        return launch.execute(plan, {"x": x}, lambda l, ins, bufs: launch.torch_call(l, ins, bufs, y.dtype, y.device, y))

    rows = {
        "torch.softmax": lambda: torch.softmax(x, -1),
        "multisoftmax.torch.softmax": lambda: mt.softmax(x),
        "multisoftmax.torch.softmax (requires_grad)": lambda: mt.softmax(xg),
        "torch.ops.multisoftmax.softmax_fwd": lambda: torch.ops.multisoftmax.softmax_fwd(x, False),
        "plan executed directly (launch.execute)": direct,
        "planning (dispatch.plan_forward, cached)": lambda: dispatch.plan_forward(M, N, N, N, args.dtype, False, sms),
        "allocating y as the adapter does (torch.empty_like)": lambda: mt._empty(x),
    }
    yb, dy = torch.softmax(x.float(), -1).to(x.dtype), torch.randn_like(x)

    def full_backward(y, dy):  # the adapter's backward before its short path: checks, plan, _launch
        mt._check_tensors("softmax_bwd", y=y, dy=dy)
        dx = mt._empty(y)
        launches = mt._plan(dispatch.plan_backward, y, M, N, N, N, N, args.dtype, False)
        return mt._launch(launches, {"y": y, "dy": dy}, dx)

    rows.update({
        "torch backward (torch._softmax_backward_data)": lambda: torch._softmax_backward_data(dy, yb, -1, yb.dtype),
        "multisoftmax backward (eager, as autograd calls it)": lambda: mt._backward_fast(yb, dy, False),
        "multisoftmax backward, full path (as before its short path)": lambda: full_backward(yb, dy),
        "torch.softmax forward + backward (autograd.grad)": lambda: torch.autograd.grad(torch.softmax(xg, -1), xg, dy),
        "multisoftmax forward + backward (autograd.grad)": lambda: torch.autograd.grad(mt.softmax(xg), xg, dy),
    })
    if dispatch.cooperative(plan):
        rows["the stream's SMs (multisoftmax.sms.share)"] = lambda: sm_share.share(sms, stream)
    if len(plan) == 1:  # its outputs as the adapter passes them (counters from the per-stream pool)
        outs = tuple(launch.torch_call(plan[0], [x], {}, y.dtype, y.device, y))
        rows["cached compiled kernel only (launch.launch_compiled)"] = \
            lambda: launch.launch_compiled(plan[0], (x,), outs, x.dtype, x.get_device())
    waits = dict.fromkeys(rows, lambda r: torch.cuda.synchronize())
    jax_calls = jax_rows(x, sms, args.dtype)
    if jax_calls:
        import jax
        rows.update(jax_calls)
        waits.update(dict.fromkeys(jax_calls, jax.block_until_ready))
    direct()  # compiles and caches the kernel that launch_compiled reuses
    for fn in rows.values():  # warm-up
        for _ in range(20):
            fn()
    # Each row's figure is its best round of interleaved rounds (timing.host_rounds).
    rounds = timing.host_rounds({name: (fn, waits[name]) for name, fn in rows.items()}, args.calls, args.rounds)
    out = {name: min(us) for name, us in rounds.items()}
    for name, us in out.items():
        print(f"{us:8.1f} us  {name}")
    if args.out:
        with open(args.out, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
