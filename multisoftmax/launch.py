"""Executing a dispatch plan: a tuple of `dispatch.Launch` records, run in order.

`execute` is framework-neutral: `call(launch, inputs)` launches one kernel and returns its
outputs. `torch_call` is that function for torch tensors, used by the torch adapter and by
the JAX adapter's interpreter path (Triton's interpreter works on torch CPU tensors).
"""

from __future__ import annotations

from . import kernels


def execute(launches, buffers: dict, call):
    """Run `launches`; `buffers` maps names ("x", "y", "dy", ...) to arrays and gains each
    launch's outputs. `call(launch, inputs, buffers)` gets `buffers` too: an output whose
    name is already there, made by an earlier launch, is passed on rather than allocated.
    Returns the last output of the last launch (y or dx)."""
    for launch in launches:
        outs = call(launch, [buffers[name] for name in launch.inputs], buffers)
        buffers.update(zip((name for name, _, _ in launch.outputs), outs))
    return outs[-1]


def torch_call(launch, inputs, buffers, io_dtype, device, out=None):
    """Launch one kernel on torch tensors; an output already in `buffers` (by name) is that
    tensor, the "y"/"dx" output is `out` when given, the others are allocated."""
    import torch

    if device.type == "cpu" and not kernels.INTERPRETED:
        raise RuntimeError("multisoftmax's kernels run on the CPU only through Triton's interpreter: "
                           "set MULTISOFTMAX_INTERPRET=1 before importing multisoftmax, or use CUDA")
    acc_dtype = torch.float64 if io_dtype == torch.float64 else torch.float32
    outs = []
    for name, shape, kind in launch.outputs:
        if name in buffers:
            outs.append(buffers[name])
        elif out is not None and name in ("y", "dx"):
            outs.append(out)
        elif kind == "zeros":
            outs.append(torch.zeros(shape, dtype=torch.int32, device=device))
        else:
            outs.append(torch.empty(shape, dtype=io_dtype if kind == "io" else acc_dtype, device=device))
    kernels.get(launch.kernel)[launch.grid](*inputs, *launch.scalars, *outs, **launch.kwargs)
    return outs
