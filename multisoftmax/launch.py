"""Executing a dispatch plan: a tuple of `dispatch.Launch` records, run in order.

`execute` is framework-neutral: `call(launch, inputs, buffers)` launches one kernel and
returns its outputs. `torch_call` is that function for torch tensors, used by the torch
adapter and by the JAX adapter's interpreter path (Triton's interpreter works on torch CPU
tensors).

Host time matters for small calls (issue: <= 20 us a call at 32 x 1024). Triton's
`kernel[grid](...)` binds and specializes every argument on each call (~20 us on the H100
machine); once a launch has been compiled, `torch_call` keeps the compiled kernel, keyed
by the launch record (which fixes the scalars, hence their specialization), the dtype, the
device and the 16-byte alignment of each pointer (the only other thing Triton specializes
on), and calls its launcher directly, with the tensors' addresses, and where it can with no
Python between (`_launcher`). The same pattern as `CompiledKernel.__getitem__` in Triton
itself; whenever a launch hook is set (profilers) the ordinary path is taken. A cached launch
that dispatch.fills_shared names asks for occupancy.fill_shared's dynamic shared memory (the
first, compiling, call asks for the kernel's own).
"""

from __future__ import annotations

import inspect
import threading

from . import dispatch, kernels, occupancy

# (id(launch), dtype, device index, pointer alignments) -> (launch, compiled kernel, constexprs)
_COMPILED: dict = {}
# (device index, stream) -> [int32 zeros tensors]: the cooperative kernels' counters, which the
# kernels leave at zero (see softmax_fwd_coop), so they are zeroed once, not on every call.
_COUNTERS: dict = {}
# The same for TAG's words ("sync" outputs), which the kernels leave fit for the next launch
# (kernels/softmax.py, TAG) but not zero: a pool of their own.
_SYNCS: dict = {}
# Triton's interpreter patches triton.language's functions while a kernel runs and restores them
# after, process-wide, so two kernels interpreted at once on two threads break each other ("Did you
# forget to add @triton.jit ?"). XLA's CPU runtime runs the JAX adapter's pure_callbacks on threads
# of its own, several at once; interpreted launches therefore take turns.
_INTERPRETER_LOCK = threading.Lock()


def execute(launches, buffers: dict, call):
    """Run `launches`; `buffers` maps names ("x", "y", "dy", ...) to arrays and gains each
    launch's outputs. `call(launch, inputs, buffers)` gets `buffers` too: an output whose
    name is already there, made by an earlier launch, is passed on rather than allocated.
    Returns the last output of the last launch (y or dx)."""
    for launch in launches:
        outs = call(launch, [buffers[name] for name in launch.inputs], buffers)
        buffers.update(zip((name for name, _, _ in launch.outputs), outs))
    return outs[-1]


def kernel_meta(launch) -> dict:
    """`launch.kwargs` (its constexprs, num_warps, num_stages, maxnreg) with the kernel's default for each
    constexpr with one that the plan leaves out (softmax_bwd_rows' RELOAD, left out where off): a compiled
    kernel's launcher, jax_triton.triton_call and Triton's compiler take every constexpr. Raises nothing."""
    fn = kernels.get(launch.kernel)  # a JITFunction, or the interpreter's InterpretedFunction: both keep `fn`
    params = inspect.signature(fn.fn).parameters.values()
    return {**{p.name: p.default for p in params if p.default is not p.empty}, **launch.kwargs}


def _counters(size: int, device, pools: dict = _COUNTERS):
    """Zeroed int32 counters for the current stream of `device`, at least `size` of them,
    reused across calls (the kernels leave them zero; `pools=_SYNCS`: TAG's words, which they
    leave fit for the next launch). Grown by allocating a larger set; the old ones are kept
    alive, since a captured CUDA graph may still point at them. While a graph is being
    captured, a set too small is not grown: None (the caller zeroes its own)."""
    import torch

    stream = torch.cuda.current_stream(device).cuda_stream
    pool = pools.setdefault((device.index, stream), [])
    if pool and pool[-1].numel() >= size:
        return pool[-1][:size]
    if torch.cuda.is_current_stream_capturing():
        return None
    pool.append(torch.zeros(max(size, 2 * pool[-1].numel() if pool else 1024), dtype=torch.int32, device=device))
    return pool[-1][:size]


def torch_call(launch, inputs, buffers, io_dtype, device, out=None):
    """Launch one kernel on torch tensors; an output already in `buffers` (by name) is that
    tensor, the "y"/"dx" output is `out` when given, the others are allocated."""
    cuda = device.type == "cuda"
    if not cuda and not kernels.INTERPRETED:
        raise RuntimeError("multisoftmax's kernels run on the CPU only through Triton's interpreter: "
                           "set MULTISOFTMAX_INTERPRET=1 before importing multisoftmax, or use CUDA")
    outs = torch_outputs(launch, buffers, io_dtype, device, out)
    if cuda:
        launch_compiled(launch, inputs, outs, io_dtype, device.index)
    else:
        with _INTERPRETER_LOCK:
            kernels.get(launch.kernel)[launch.grid](*inputs, *launch.scalars, *outs, **launch.kwargs)
    return outs


def torch_outputs(launch, buffers, io_dtype, device, out=None):
    """The tensors `launch` writes, in the kernel's order (torch_call's): an output already in
    `buffers` (by name) is that tensor, "y"/"dx" is `out` when given, "zeros" and "sync" outputs
    are the current stream's pooled counters on CUDA (`_counters`), the others new tensors; an
    "init" argument (dispatch.coop_outputs) is the tensor of the output of its name."""
    import torch

    cuda = device.type == "cuda"
    outs, inits = [], []
    for name, shape, kind in launch.outputs:
        if kind == "init":  # filled below, once the output it stands for is made
            inits.append((len(outs), name))
            outs.append(None)
        elif name in buffers:
            outs.append(buffers[name])
        elif out is not None and name in ("y", "dx"):
            outs.append(out)
        elif kind in ("zeros", "sync"):
            counters = _counters(shape[0], device, _SYNCS if kind == "sync" else _COUNTERS) if cuda else None
            outs.append(torch.zeros(shape, dtype=torch.int32, device=device) if counters is None else counters)
        else:
            acc_dtype = torch.float64 if io_dtype == torch.float64 else torch.float32
            outs.append(torch.empty(shape, dtype=io_dtype if kind == "io" else acc_dtype, device=device))
    for i, name in inits:
        outs[i] = next(t for (n, _, kind), t in zip(launch.outputs, outs) if n == name and kind != "init")
    return outs


_get_stream = None  # Triton's driver.active.get_current_stream, looked up once
_runtime_knobs = None  # triton.knobs.runtime


def launch_compiled(launch, inputs, outs, io_dtype, device_index):
    """Launch `launch` on CUDA tensors (`inputs`, `outs`: in the kernel's order) on the
    current stream of the current device, which must be `device_index`, through the cached
    compiled kernel (module docstring); compiles and caches on a miss.

    On a hit the tensors go to Triton's launcher as their addresses (ints), which it takes as
    they are; a tensor makes it call `data_ptr()` and ask the driver for the pointer's
    attributes (cuPointerGetAttribute) once per argument. The callers pass CUDA tensors on
    the current device, checked before (the adapters), so that check is redundant here."""
    global _get_stream, _runtime_knobs
    in_ptrs = [t.data_ptr() for t in inputs]
    out_ptrs = [t.data_ptr() for t in outs]
    key = (id(launch), io_dtype, device_index, tuple([p % 16 == 0 for p in in_ptrs + out_ptrs]))
    hit = _COMPILED.get(key)
    if hit is not None and _no_hook(_runtime_knobs.launch_enter_hook) and _no_hook(_runtime_knobs.launch_exit_hook):
        _, _, grid, call, head, constexprs = hit  # hit holds `launch` itself, so its id stays unique
        call(*grid, _get_stream(device_index), *head, *in_ptrs, *launch.scalars, *out_ptrs, *constexprs)
        return
    import triton
    from triton.runtime import driver

    fn = kernels.get(launch.kernel)
    compiled = fn[launch.grid](*inputs, *launch.scalars, *outs, **launch.kwargs)
    if all(hasattr(compiled, a) for a in ("run", "function", "packed_metadata")):
        if len(_COMPILED) > 16384:  # shapes without end (dynamic lengths): start again
            _COMPILED.clear()
        _get_stream, _runtime_knobs = driver.active.get_current_stream, triton.knobs.runtime
        grid = launch.grid + (1,) * (3 - len(launch.grid))
        n_args = len(inputs) + len(launch.scalars) + len(outs)
        kw = kernel_meta(launch)
        constexprs = tuple(kw[name] for name in fn.arg_names[n_args:])
        packed = compiled.packed_metadata
        if dispatch.fills_shared(launch) and len(packed) == 3:  # (num_warps, num_ctas, shared): occupancy.py
            shared = occupancy.fill_shared(compiled.n_regs, packed[0], packed[2], occupancy.limits(device_index))
            packed = (packed[0], packed[1], shared)
        _COMPILED[key] = (launch, compiled, grid, *_launcher(compiled, packed), constexprs)


# CudaLauncher.__call__'s parameters where Triton's launcher is the Python wrapper of a C module
# built for the kernel's signature (Triton 3.6, the GPU machine's): it only asks its allocators
# for scratch memory, then calls that module's `launch`.
_MODULE_LAUNCHER = ("self", "gridX", "gridY", "gridZ", "stream", "function", "args")


def _launcher(compiled, packed=None):
    """(call, head) such that `call(gridX, gridY, gridZ, stream, *head, *args)` launches
    `compiled` with no launch hooks: its C launch function itself where Triton's launcher
    (CompiledKernel.run) is the Python wrapper of a per-signature C module and the kernel
    needs no scratch memory (4.1 against 5.0 us a call on the H100 machine,
    bench/results/h100/probe_host.log), else `run`. `packed`: the launch's (num_warps,
    num_ctas, shared memory) where not the kernel's own (`occupancy.fill_shared`)."""
    run = compiled.run
    # the metadata; the launch metadata, enter and exit hooks
    common = (compiled.packed_metadata if packed is None else packed, None, None, None)
    code = getattr(type(run).__call__, "__code__", None)
    if code is not None and code.co_flags & inspect.CO_VARARGS \
            and code.co_varnames[:code.co_argcount + 1] == _MODULE_LAUNCHER \
            and all(getattr(run, a, None) == 0 for a in ("global_scratch_size", "profile_scratch_size")) \
            and callable(getattr(run, "launch", None)) and hasattr(run, "launch_cooperative_grid") \
            and hasattr(run, "launch_pdl"):
        return run.launch, (compiled.function, run.launch_cooperative_grid, run.launch_pdl, None, None, *common)
    return run, (compiled.function, *common)


def _no_hook(hook) -> bool:
    """No launch hook set: None (older Triton) or an empty HookChain (Triton 3.5+)."""
    return hook is None or getattr(hook, "calls", None) == []
