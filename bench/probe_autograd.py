"""Probe (GPU): host time of a forward and backward through autograd at 32 x 1024 float32.

bench/overhead.py has multisoftmax's forward + backward through `torch.autograd.grad` 55-80 us
a call slower than torch.softmax's, far more than the two calls' own host time apart. This times,
in interleaved rounds (timing.host_rounds), `torch.autograd.grad(f(x), x, dy)` for: torch.softmax;
a Python autograd.Function whose forward and backward are torch's own ops (torch.softmax,
torch._softmax_backward_data), i.e. what any Python Function costs; the same Function with a
setup_context (the newer form); multisoftmax.torch.softmax; Python Functions with one half
multisoftmax's and the other torch's, or with one more call into torch in the forward; and,
without autograd, the forward
and the backward of each, so the engine's share can be read off.

    python bench/probe_autograd.py [--calls 1000] [--rounds 7]
"""

from __future__ import annotations

import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import multisoftmax.torch as mt  # noqa: E402
from probe_host import time_rows  # noqa: E402  (bench/, this script's folder)


def python_function(name: str, forward, backward, doc: str):
    """A Python autograd.Function (classic form: forward takes ctx, as the adapter's
    _EagerSoftmax) computing y = forward(x), saving y, and dx = backward(y, dy)."""

    def fwd(ctx, x):
        y = forward(x)
        ctx.save_for_backward(y)
        return y

    def bwd(ctx, dy):
        (y,) = ctx.saved_tensors
        return backward(y, dy)

    return type(name, (torch.autograd.Function,), {"__doc__": doc, "forward": staticmethod(fwd),
                                                   "backward": staticmethod(bwd)})


def torch_forward(x):
    return torch.softmax(x, -1)


def torch_backward(y, dy):
    return torch._softmax_backward_data(dy, y, -1, y.dtype)


def torch_forward_one_more_call(x):
    """torch's forward after one more call into torch (torch.empty_like, its result dropped: a
    second time the forward lets go of the GIL, as the adapter's forward does, once to allocate y
    and once in Triton's launcher)."""
    torch.empty_like(x)
    return torch.softmax(x, -1)


TorchOpsFunction = python_function("TorchOpsFunction", torch_forward, torch_backward,
                                   "torch's softmax forward and backward ops")
OursForward = python_function("OursForward", lambda x: mt._forward_fast(x, False), torch_backward,
                              "multisoftmax's forward (the adapter's eager short path) with torch's backward")
OursBackward = python_function("OursBackward", torch_forward, lambda y, dy: mt._backward_fast(y, dy, False),
                               "torch's forward with multisoftmax's backward (the adapter's eager short path)")
TorchOpsTwoCalls = python_function("TorchOpsTwoCalls", torch_forward_one_more_call, torch_backward,
                                   "TorchOpsFunction with one more call into torch in its forward")


class TorchOpsSetup(torch.autograd.Function):
    """TorchOpsFunction with setup_context (forward without ctx)."""

    @staticmethod
    def forward(x):
        return torch.softmax(x, -1)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(output)

    @staticmethod
    def backward(ctx, dy):
        (y,) = ctx.saved_tensors
        return torch_backward(y, dy)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--calls", type=int, default=1000)
    p.add_argument("--rounds", type=int, default=7)
    args = p.parse_args()
    x = torch.randn(32, 1024, device="cuda")
    xg = x.clone().requires_grad_()
    dy = torch.randn_like(x)
    y = torch.softmax(x, -1)
    rows = {
        "grad: torch.softmax": lambda: torch.autograd.grad(torch.softmax(xg, -1), xg, dy),
        "grad: Python Function on torch's ops": lambda: torch.autograd.grad(TorchOpsFunction.apply(xg), xg, dy),
        "grad: Python Function on torch's ops, setup_context": lambda: torch.autograd.grad(TorchOpsSetup.apply(xg),
                                                                                           xg, dy),
        "grad: multisoftmax.torch.softmax": lambda: torch.autograd.grad(mt.softmax(xg), xg, dy),
        "grad: Python Function, multisoftmax's forward, torch's backward":
            lambda: torch.autograd.grad(OursForward.apply(xg), xg, dy),
        "grad: Python Function, torch's forward, multisoftmax's backward":
            lambda: torch.autograd.grad(OursBackward.apply(xg), xg, dy),
        "grad: Python Function on torch's ops, one more call in the forward":
            lambda: torch.autograd.grad(TorchOpsTwoCalls.apply(xg), xg, dy),
        "torch.empty_like(x) alone": lambda: torch.empty_like(x),
        "torch.softmax(xg) (records the graph)": lambda: torch.softmax(xg, -1),
        "Python Function forward (records the graph)": lambda: TorchOpsFunction.apply(xg),
        "multisoftmax.torch.softmax(xg) (records the graph)": lambda: mt.softmax(xg),
        "torch._softmax_backward_data alone": lambda: torch._softmax_backward_data(dy, y, -1, y.dtype),
        "multisoftmax backward alone (_backward_fast)": lambda: mt._backward_fast(y, dy, False),
    }
    time_rows(rows, args.calls, args.rounds)

if __name__ == "__main__":
    main()
