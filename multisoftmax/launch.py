"""Executing a dispatch plan: a tuple of `dispatch.Launch` records, run in order.

`execute` is framework-neutral: `call(launch, inputs)` launches one kernel and returns its
outputs. `torch_call` is that function for torch tensors, used by the torch adapter and by
the JAX adapter's interpreter path (Triton's interpreter works on torch CPU tensors).
"""

from __future__ import annotations

from . import kernels


def execute(launches, buffers: dict, call):
    """Run `launches`; `buffers` maps names ("x", "y", "dy", ...) to arrays and gains each
    launch's outputs. Returns the first output of the last launch (y or dx)."""
    for launch in launches:
        outs = call(launch, [buffers[name] for name in launch.inputs])
        buffers.update(zip((name for name, _, _ in launch.outputs), outs))
    return outs[0]


def torch_call(launch, inputs, io_dtype, device, out=None):
    """Launch one kernel on torch tensors; the "y"/"dx" output is `out` when given."""
    import torch

    if device.type == "cpu" and not kernels.INTERPRETED:
        raise RuntimeError("multisoftmax's kernels run on the CPU only through Triton's interpreter: "
                           "set MULTISOFTMAX_INTERPRET=1 before importing multisoftmax, or use CUDA")
    acc_dtype = torch.float64 if io_dtype == torch.float64 else torch.float32
    outs = []
    for name, shape, kind in launch.outputs:
        if out is not None and name in ("y", "dx"):
            outs.append(out)
        else:
            outs.append(torch.empty(shape, dtype=io_dtype if kind == "io" else acc_dtype, device=device))
    kernels.get(launch.kernel)[launch.grid](*inputs, *launch.scalars, *outs, **launch.kwargs)
    return outs
