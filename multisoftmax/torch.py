"""PyTorch adapter: `softmax`, `log_softmax`, `Softmax`, `LogSoftmax` on multisoftmax's kernels.

The adapter only checks arguments, views the tensor as M rows by N columns (`dim` moved
last) or, for a middle dim, as (B, N, T) reduced over N, and calls registered custom ops,
`torch.ops.multisoftmax.softmax_fwd(x, log)` and `softmax_bwd(y, dy, log)` (rows),
`softmax_cols_fwd` and `softmax_cols_bwd` (columns), which launch what `multisoftmax.dispatch`
plans. The ops carry autograd (the backward saves y, not x, and is
itself differentiable) and fake implementations, so `torch.compile(fullgraph=True)` traces
them with no graph break. In eager mode the adapter skips the dispatcher's host time: their
implementations are called directly, under a `torch.autograd.Function` when autograd records.

Devices: CUDA tensors run the compiled Triton kernels. CPU tensors run torch's native
softmax by default, or the very same Triton kernels through Triton's interpreter when the
environment variable MULTISOFTMAX_INTERPRET=1 is set before import (slow: meant for tests).
The raw ops accept CPU tensors only in that interpreted mode.
"""

from __future__ import annotations

import functools
import math

import torch
import torch.autograd.forward_ad as _fwad

from . import dispatch, launch, sms
from .kernels import interpret_requested

__all__ = ["softmax", "log_softmax", "Softmax", "LogSoftmax"]

_DTYPE_NAMES = {torch.float16: "float16", torch.bfloat16: "bfloat16", torch.float32: "float32",
                torch.float64: "float64"}
# Programs the interpreter's persistent grid is sized for: a few, since it runs them one by one.
_INTERPRETER_SMS = 4


@functools.cache
def _num_sms(device_index: int) -> int:
    return torch.cuda.get_device_properties(device_index).multi_processor_count


@functools.cache
def _tuned_kw(device_index: int) -> dict:
    """`{"gpu": key}`, the GPU's key of dispatch.ROWS_TILINGS and GPU_CONSTANTS, its tuned tilings and
    constants ("": the H100's rules), as the planners' keyword: one dict a device, not one a call (the
    planners unpack it, never change it)."""
    return {"gpu": dispatch.tuned_gpu(torch.cuda.get_device_name(device_index))}


def _launch(launches, buffers: dict, out: torch.Tensor) -> torch.Tensor:
    """Execute dispatch's launches in order, the last one writing into `out`."""
    # A device guard costs a few microseconds a call: only when out is not on the current GPU.
    if out.is_cuda and out.get_device() != _current_device():
        with torch.cuda.device(out.device):
            return _launch(launches, buffers, out)
    if len(launches) == 1:  # the common case, without execute's bookkeeping
        (only,) = launches
        return launch.torch_call(only, [buffers[name] for name in only.inputs], buffers, out.dtype, out.device,
                                 out)[-1]
    return launch.execute(launches, buffers,
                          lambda l, ins, bufs: launch.torch_call(l, ins, bufs, out.dtype, out.device, out))


def _check_tensors(op: str, rank: int = 2, /, **tensors: torch.Tensor) -> None:
    """Device, dtype and shape checks shared by the ops (2-D: rows, 3-D: columns); names the
    offending argument."""
    (first_name, first), *rest = tensors.items()
    for name, t in tensors.items():
        if t.dim() != rank:
            raise ValueError(f"{op}: {name} must be {'2-D (M, N)' if rank == 2 else '3-D (B, N, T)'}, "
                             f"got shape {tuple(t.shape)}")
        if t.dtype not in _DTYPE_NAMES:
            raise TypeError(f"{op}: {name} has dtype {t.dtype}; supported: float16, bfloat16, "
                            f"float32, float64")
        if t.device.type not in ("cuda", "cpu"):
            raise ValueError(f"{op}: {name} is on {t.device}; multisoftmax runs on CUDA, or on the CPU "
                             f"through Triton's interpreter. Move it with .cuda() or .cpu().")
    for name, t in rest:
        if t.device != first.device:
            raise ValueError(f"{op}: {first_name} is on {first.device} but {name} is on {t.device}; "
                             f"move both to one device")
        if t.shape != first.shape or t.dtype != first.dtype:
            raise ValueError(f"{op}: {first_name} {tuple(first.shape)} {first.dtype} and {name} "
                             f"{tuple(t.shape)} {t.dtype} must have one shape and dtype")


def _words_fit(t: torch.Tensor) -> bool:
    """Whether t's first element may start a 32-bit word: kernels that hold 16-bit values packed
    (PACK) load two at a time as one word, which must be 4-byte aligned. A 16-bit view one element
    into its storage is not (on the H100 such calls failed with a CUDA error: bench/results/h100/
    probe_misaligned.log); torch allocates on 512-byte boundaries, so every other is."""
    return t.element_size() != 2 or t.data_ptr() % 4 == 0


def _row_major(t: torch.Tensor) -> torch.Tensor:
    """The tensor itself if its columns are contiguous (and `_words_fit`), else a contiguous copy."""
    if (t.stride(1) == 1 or t.shape[1] <= 1) and _words_fit(t):
        return t
    return t.clone(memory_format=torch.contiguous_format)


# The current stream's CUstream handle on a device index: torch's raw getter where it has one
# (a fraction of a microsecond), else through the Stream object.
_current_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None) or (
    lambda index: torch.cuda.current_stream(index).cuda_stream)
# The current CUDA device's index: torch's raw getter where it has one (0.14 us against 0.26 for
# torch.cuda.current_device, bench/results/h100/probe_host.log; callers hold a CUDA tensor, so
# CUDA is initialised), else torch.cuda.current_device.
_current_device = getattr(torch._C, "_cuda_getDevice", None) or torch.cuda.current_device


def _empty(t: torch.Tensor) -> torch.Tensor:
    """A new contiguous tensor of t's shape, dtype and device: y or dx. (`torch.empty_like`
    parses one argument where torch.empty(shape, dtype=, device=) parses three: 1.9 against 4.4
    us a call on the H100 machine, bench/results/h100/probe_host.log.)"""
    return torch.empty_like(t, memory_format=torch.contiguous_format)


def _num_programs_hint(t: torch.Tensor) -> int:
    """The SMs plans for t's device start from: the device's, or a few under the interpreter."""
    return _INTERPRETER_SMS if not t.is_cuda else _num_sms(t.get_device())


def _plan(plan, t: torch.Tensor, *args, tuned: bool = False):
    """`plan(*args, num_sms)` (dispatch.plan_forward or plan_backward) for tensors on t's
    device; `tuned`: with `gpu=`, the device's tuned tilings and constants (dispatch.ROWS_TILINGS,
    GPU_CONSTANTS). A plan with a cooperative launch, whose programs wait for each other, is made
    again for the SMs the device's current stream can run on where that is fewer than the device has
    (a green context, an MPS limit: multisoftmax.sms)."""
    device_sms = _num_programs_hint(t)
    kw = _tuned_kw(t.get_device()) if tuned and t.is_cuda else {}
    launches = plan(*args, device_sms, **kw)
    if t.is_cuda and dispatch.cooperative(launches):
        share = sms.share(device_sms, _current_stream(t.get_device()))
        if share < device_sms:
            launches = plan(*args, share, **kw)
    return launches


def _forward(x: torch.Tensor, log: bool) -> torch.Tensor:
    """y = softmax(x) (log_softmax if `log`) along the rows of x (M, N); y is contiguous."""
    _check_tensors("softmax_fwd", x=x)
    return _forward_checked(x, log)


# The short path of eager calls (`_forward_fast`, `_backward_fast`): a plan of one launch, kept
# by its call's key (direction, shape, strides, dtype, log, device index), skips the layers
# between the adapter and the cached compiled kernel (host time: bench/overhead.py).
# _SHORT_PATH: key -> (the launch, ()), for launches that write y (dx) alone.
_SHORT_PATH: dict = {}
# _SHORT_COOP: key + (stream, the stream's SMs) -> (the launch, the tensors it writes before y),
# for one cooperative launch (few long rows: LLM logits at decode), which also writes partials and
# counters. Those tensors are the stream's own: calls on one stream run in order, so each call may
# reuse them (the kernels leave their counters fit for the next launch), and the SMs the plan was
# made for are asked again each call (a stream handle may be reused by a stream of another green
# context). Not while a CUDA graph is captured: a graph keeps its own partials (the full path
# allocates them from the graph's pool).
_SHORT_COOP: dict = {}
_capturing = getattr(torch._C, "_cuda_isCurrentStreamCapturing", torch.cuda.is_current_stream_capturing)


def _short_get(key, device: int):
    """The short path's (launch, outputs before y) for `key` on CUDA device `device`, or None
    (not seen yet, or the device is not the current one)."""
    if device != _current_device():
        return None
    hit = _SHORT_PATH.get(key)
    if hit is not None or not _SHORT_COOP or _capturing():
        return hit
    stream = _current_stream(device)
    return _SHORT_COOP.get(key + (stream, sms.share(_num_sms(device), stream)))


def _short_put(key, launches, out: torch.Tensor):
    """Keep `launches` for the short path where it can take them (one launch, on the current
    CUDA device; cooperative ones not during a capture) and return the outputs to launch it
    with (`out` last), else None (the caller runs the full path)."""
    if not out.is_cuda or len(launches) != 1 or out.get_device() != _current_device():
        return None
    (only,) = launches
    if len(_SHORT_PATH) + len(_SHORT_COOP) > 16384:  # shapes without end (dynamic lengths): start again
        _SHORT_PATH.clear()
        _SHORT_COOP.clear()
    if len(only.outputs) == 1:
        _SHORT_PATH[key] = (only, ())
        return (out,)
    if not dispatch.cooperative(launches) or _capturing():
        return None
    device = out.get_device()
    stream = _current_stream(device)
    outs = launch.torch_outputs(only, {}, out.dtype, out.device, out)
    _SHORT_COOP[key + (stream, sms.share(_num_sms(device), stream))] = (only, tuple(outs[:-1]))
    return tuple(outs)


def _forward_checked(x: torch.Tensor, log: bool) -> torch.Tensor:
    y = _empty(x)
    M, N = x.shape
    if M == 0 or N == 0:
        return y
    xr = _row_major(x)
    launches = _plan(dispatch.plan_forward, x, M, N, xr.stride(0), N, _DTYPE_NAMES[x.dtype], log, tuned=True)
    outs = _short_put(("fwd", x.shape, x.stride(), x.dtype, log, x.get_device()), launches, y) if xr is x else None
    if outs is not None:
        launch.launch_compiled(launches[0], (x,), outs, x.dtype, x.get_device())
        return y
    return _launch(launches, {"x": xr}, y)


def _backward(y: torch.Tensor, dy: torch.Tensor, log: bool) -> torch.Tensor:
    """dx from y = softmax(x) (log_softmax if `log`) and dy, all (M, N); dx is contiguous."""
    _check_tensors("softmax_bwd", y=y, dy=dy)
    dx = _empty(y)
    M, N = y.shape
    if M == 0 or N == 0:
        return dx
    yr, dyr = _row_major(y), _row_major(dy)
    launches = _plan(dispatch.plan_backward, yr, M, N, yr.stride(0), dyr.stride(0), N, _DTYPE_NAMES[y.dtype], log,
                     tuned=True)
    outs = _short_put(("bwd", y.shape, y.stride(), dy.stride(), y.dtype, log, y.get_device()), launches, dx) \
        if yr is y and dyr is dy else None
    if outs is not None:
        launch.launch_compiled(launches[0], (y, dy), outs, y.dtype, y.get_device())
        return dx
    return _launch(launches, {"y": yr, "dy": dyr}, dx)


def _backward_fast(y: torch.Tensor, dy: torch.Tensor, log: bool) -> torch.Tensor:
    """`_backward` for the autograd Functions' eager backward (y is the forward's output, dy
    the gradient autograd passes: one shape, dtype and device), through the short path when this
    call's shapes and strides were seen before on CUDA."""
    if y.is_cuda and dy.is_cuda and dy.dtype == y.dtype and dy.dim() == 2:
        device = y.get_device()
        hit = _short_get(("bwd", y.shape, y.stride(), dy.stride(), y.dtype, log, device), device)
        if hit is not None and dy.get_device() == device and dy.shape == y.shape and _words_fit(y) \
                and _words_fit(dy):
            only, scratch = hit
            dx = _empty(y)
            launch.launch_compiled(only, (y, dy), (*scratch, dx), y.dtype, device)
            return dx
    return _backward(y, dy, log)


def _inner_contiguous(t: torch.Tensor) -> torch.Tensor:
    """A (B, N, T) tensor whose last axis is contiguous (itself, else a contiguous copy)."""
    return t if t.stride(2) == 1 or t.shape[2] <= 1 else t.contiguous()


def _columns_forward(x: torch.Tensor, log: bool) -> torch.Tensor:
    """y = softmax(x) (log_softmax if `log`) over axis 1 of x (B, N, T); y is contiguous."""
    _check_tensors("softmax_cols_fwd", 3, x=x)
    y = _empty(x)
    if y.numel() == 0:
        return y
    B, N, T = x.shape
    xc = _inner_contiguous(x)
    launches = _plan(dispatch.plan_columns_forward, x, B, N, T, xc.stride(0), xc.stride(1), N * T, T,
                     _DTYPE_NAMES[x.dtype], log, tuned=True)
    return _launch(launches, {"x": xc}, y)


def _columns_backward(y: torch.Tensor, dy: torch.Tensor, log: bool) -> torch.Tensor:
    """dx from y = softmax(x) (log_softmax if `log`) over axis 1 and dy, all (B, N, T); dx is
    contiguous."""
    _check_tensors("softmax_cols_bwd", 3, y=y, dy=dy)
    dx = _empty(y)
    if dx.numel() == 0:
        return dx
    B, N, T = y.shape
    yc, dyc = _inner_contiguous(y), _inner_contiguous(dy)
    launches = _plan(dispatch.plan_columns_backward, y, B, N, T, yc.stride(0), yc.stride(1), dyc.stride(0),
                     dyc.stride(1), N * T, T, _DTYPE_NAMES[y.dtype], log, tuned=True)
    return _launch(launches, {"y": yc, "dy": dyc}, dx)


# The registered ops: what torch.compile traces and tensor subclasses dispatch through. Eager
# calls use their implementations directly (see _call_forward): the dispatcher costs ~20-40 us
# a call on the H100 machine (bench/overhead.py).
_softmax_fwd = torch.library.custom_op("multisoftmax::softmax_fwd", _forward, mutates_args=())
_softmax_bwd = torch.library.custom_op("multisoftmax::softmax_bwd", _backward, mutates_args=())
# The same over axis 1 of (B, N, T) tensors: a softmax over a middle dim (kernels/columns.py).
_softmax_cols_fwd = torch.library.custom_op("multisoftmax::softmax_cols_fwd", _columns_forward, mutates_args=())
_softmax_cols_bwd = torch.library.custom_op("multisoftmax::softmax_cols_bwd", _columns_backward, mutates_args=())


@_softmax_fwd.register_fake
def _(x, log):
    _check_tensors("softmax_fwd", x=x)
    return _empty(x)


@_softmax_bwd.register_fake
def _(y, dy, log):
    _check_tensors("softmax_bwd", y=y, dy=dy)
    return _empty(y)


@_softmax_cols_fwd.register_fake
def _(x, log):
    _check_tensors("softmax_cols_fwd", 3, x=x)
    return _empty(x)


@_softmax_cols_bwd.register_fake
def _(y, dy, log):
    _check_tensors("softmax_cols_bwd", 3, y=y, dy=dy)
    return _empty(y)


def _fwd_setup(ctx, inputs, output):
    ctx.log = inputs[1]
    ctx.save_for_backward(output)


def _fwd_backward(ctx, dy):
    (y,) = ctx.saved_tensors
    return torch.ops.multisoftmax.softmax_bwd(y, dy, ctx.log), None


def _cols_fwd_backward(ctx, dy):
    (y,) = ctx.saved_tensors
    return torch.ops.multisoftmax.softmax_cols_bwd(y, dy, ctx.log), None


def _bwd_setup(ctx, inputs, output):
    y, dy, ctx.log = inputs
    ctx.save_for_backward(y, dy)


def _bwd_backward(ctx, ddx, dim: int = -1):
    """Derivatives of dx(y, dy), for double backward (torch ops; rarely on a hot path), the
    sums <.,.> over `dim` (-1: rows; 1: the columns ops).

    softmax:     dx = y * (dy - <dy, y>)     -> d/dy: ddx*(dy - <dy,y>) - dy*<ddx,y>,
                                                d/d(dy): y*(ddx - <ddx,y>)
    log_softmax: dx = dy - exp(y) * sum(dy)  -> d/dy: -ddx*exp(y)*sum(dy),
                                                d/d(dy): ddx - <ddx, exp(y)>
    """
    y, dy = ctx.saved_tensors
    if ctx.log:
        p = torch.exp(y)
        return -ddx * p * dy.sum(dim, keepdim=True), ddx - (ddx * p).sum(dim, keepdim=True), None
    dot = (dy * y).sum(dim, keepdim=True)
    c = (ddx * y).sum(dim, keepdim=True)
    return ddx * (dy - dot) - dy * c, y * (ddx - c), None


torch.library.register_autograd("multisoftmax::softmax_fwd", _fwd_backward, setup_context=_fwd_setup)
torch.library.register_autograd("multisoftmax::softmax_bwd", _bwd_backward, setup_context=_bwd_setup)
torch.library.register_autograd("multisoftmax::softmax_cols_fwd", _cols_fwd_backward, setup_context=_fwd_setup)
torch.library.register_autograd("multisoftmax::softmax_cols_bwd", lambda ctx, ddx: _bwd_backward(ctx, ddx, 1),
                                setup_context=_bwd_setup)


def _softmax(x: torch.Tensor, dim: int, dtype: torch.dtype | None, log: bool) -> torch.Tensor:
    name = "log_softmax" if log else "softmax"
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name}: x must be a torch.Tensor, got {type(x).__name__}")
    if dtype is not None:
        if dtype not in _DTYPE_NAMES:
            raise TypeError(f"{name}: dtype={dtype} is not supported; use torch.float16, torch.bfloat16, "
                            f"torch.float32 or torch.float64")
        x = x.to(dtype)
    elif x.dtype not in _DTYPE_NAMES:
        hint = "pass dtype=torch.float32 (as torch.softmax requires)" if not (
            x.is_floating_point() or x.is_complex()) else "cast x to float32 first"
        raise TypeError(f"{name}: x has dtype {x.dtype}, which multisoftmax does not support "
                        f"(float16, bfloat16, float32, float64); {hint}")
    if not isinstance(dim, int) or isinstance(dim, bool):
        raise TypeError(f"{name}: dim must be an int, got {dim!r}")
    rank = max(x.dim(), 1)
    if not -rank <= dim < rank:
        raise IndexError(f"{name}: dim={dim} is out of range for a tensor of {x.dim()} dimensions "
                         f"(expected a value in [{-rank}, {rank - 1}])")
    if not x.is_cuda:
        if x.device.type != "cpu":
            raise ValueError(f"{name}: x is on {x.device}; multisoftmax runs on CUDA (or the CPU). "
                             f"Move it with .cuda().")
        if not interpret_requested():
            return torch.log_softmax(x, dim) if log else torch.softmax(x, dim)
    nd = x.dim()
    if nd == 0:
        return _call_forward(x.reshape(1, 1), log).reshape(())
    dim %= nd
    if dim == nd - 1 and nd == 2:  # already the (M, N) view: no view objects to build
        return _call_forward(x, log)
    if dim != nd - 1 and x.stride(dim) != 1 and x.shape[dim] > 1 and math.prod(x.shape[dim + 1:]) > 1 \
            and (torch.compiler.is_compiling() or not (_functorch_wrapped(x) or _fwad._current_level >= 0)):
        # A middle dim, not contiguous: the columns kernels read x where it lies, as (B, N, T).
        B, N, T = math.prod(x.shape[:dim]), x.shape[dim], math.prod(x.shape[dim + 1:])
        try:
            x3 = x.view(B, N, T)
        except RuntimeError:  # the dims around `dim` do not merge into one stride each
            x3 = x.contiguous().view(B, N, T)
        return _call_columns(x3, log).view(x.shape)
    xt = x.movedim(dim, -1) if dim != nd - 1 else x
    y = _call_forward(xt.reshape(math.prod(xt.shape[:-1]), xt.shape[-1]), log)
    y = y.view(xt.shape)
    return y.movedim(-1, dim) if dim != nd - 1 else y


def _call_forward(x2: torch.Tensor, log: bool) -> torch.Tensor:
    """The registered op where torch.compile or a tensor subclass needs it; in eager mode its
    implementation, under an autograd.Function where autograd or torch.func needs one."""
    if type(x2) is not torch.Tensor or torch.compiler.is_compiling():
        return torch.ops.multisoftmax.softmax_fwd(x2, log)
    if _functorch_wrapped(x2) or _fwad._current_level >= 0:
        return _TransformSoftmax.apply(x2, log)
    if x2.requires_grad and torch.is_grad_enabled():
        return _EagerSoftmax.apply(x2, log)
    return _forward_fast(x2, log)


def _call_columns(x3: torch.Tensor, log: bool) -> torch.Tensor:
    """`_call_forward` for a (B, N, T) view reduced over axis 1: the registered op where
    torch.compile or a tensor subclass needs it; in eager mode its implementation, under
    `_EagerColumns` where autograd records. (torch.func transforms and forward-mode AD take the
    rows path, `_TransformSoftmax`, whose rules they need.)"""
    if type(x3) is not torch.Tensor or torch.compiler.is_compiling():
        return torch.ops.multisoftmax.softmax_cols_fwd(x3, log)
    if x3.requires_grad and torch.is_grad_enabled():
        return _EagerColumns.apply(x3, log)
    return _columns_forward(x3, log)


def _forward_fast(x2: torch.Tensor, log: bool) -> torch.Tensor:
    """`_forward_checked`, through the short path (`_short_get`) when this shape was seen
    before on CUDA."""
    if x2.is_cuda:
        device = x2.get_device()
        hit = _short_get(("fwd", x2.shape, x2.stride(), x2.dtype, log, device), device)
        if hit is not None and _words_fit(x2):
            only, scratch = hit
            y = _empty(x2)
            launch.launch_compiled(only, (x2,), (*scratch, y), x2.dtype, device)
            return y
    return _forward_checked(x2, log)  # _softmax checked dtype and device; x2 is 2-D


# torch.func transforms (vmap, grad, jacrev) wrap tensors, and forward-mode AD
# (torch.autograd.forward_ad) attaches tangents inside a dual level: those calls go through
# _TransformSoftmax, whose setup_context, vmap and jvp rules they need.
_functorch_wrapped = getattr(torch._C._functorch, "is_functorch_wrapped_tensor", lambda t: False)
# The older in-core vmap (torch._vmap_internals) batches tensors that no kernel can read:
# a backward under it is computed with torch ops.
_legacy_batched = getattr(torch._C._functorch, "is_legacy_batchedtensor", lambda t: False)


def _softmax_vjp(y: torch.Tensor, dy: torch.Tensor, log: bool) -> torch.Tensor:
    """dx for the autograd.Functions below: the backward kernels, differentiable
    (`_SoftmaxVJP`) where the backward itself is differentiated (create_graph=True,
    torch.func), torch ops under the in-core vmap."""
    if _legacy_batched(dy):  # autograd.grad(is_grads_batched=True), gradcheck's batched check
        return dy - torch.exp(y) * dy.sum(-1, keepdim=True) if log else y * (dy - (dy * y).sum(-1, keepdim=True))
    if torch.is_grad_enabled() or _functorch_wrapped(dy) or _fwad._current_level >= 0:
        return _SoftmaxVJP.apply(y, dy, log)
    return _backward_fast(y, dy, log)


class _EagerSoftmax(torch.autograd.Function):
    """Eager-mode autograd without the dispatcher: the same forward and backward as the
    registered ops (saves y, not x). In the classic form (forward takes ctx): a Function with
    setup_context costs ~35 us more a call in `apply` (bench/overhead.py, "requires_grad")."""

    @staticmethod
    def forward(ctx, x: torch.Tensor, log: bool) -> torch.Tensor:
        y = _forward_fast(x, log)
        ctx.log = log
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, dy: torch.Tensor):
        return _softmax_vjp(ctx.saved_tensors[0], dy, ctx.log), None


class _EagerColumns(torch.autograd.Function):
    """`_EagerSoftmax` for (B, N, T) views reduced over axis 1 (kernels/columns.py); a backward
    that is itself differentiated (create_graph=True) goes through the registered op, whose
    autograd has the double backward."""

    @staticmethod
    def forward(ctx, x: torch.Tensor, log: bool) -> torch.Tensor:
        y = _columns_forward(x, log)
        ctx.log = log
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, dy: torch.Tensor):
        (y,) = ctx.saved_tensors
        if _legacy_batched(dy):  # as in _softmax_vjp: torch ops
            return (dy - torch.exp(y) * dy.sum(1, keepdim=True) if ctx.log
                    else y * (dy - (dy * y).sum(1, keepdim=True))), None
        if torch.is_grad_enabled():
            return torch.ops.multisoftmax.softmax_cols_bwd(y, dy, ctx.log), None
        return _columns_backward(y, dy, ctx.log), None


def _batch_first(t: torch.Tensor, dim: int | None, size: int) -> torch.Tensor:
    """A vmap rule's argument with its batch dimension first (expanded when it has none)."""
    return t.expand(size, *t.shape) if dim is None else t.movedim(dim, 0)


class _TransformSoftmax(torch.autograd.Function):
    """`_EagerSoftmax` with the rules torch.func and forward-mode AD need."""

    @staticmethod
    def forward(x: torch.Tensor, log: bool) -> torch.Tensor:
        return _forward_fast(x, log)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.log = inputs[1]
        ctx.save_for_backward(output)
        ctx.save_for_forward(output)

    @staticmethod
    def jvp(ctx, dx, _):
        """Forward mode (torch.func.jacfwd, hessian; rare): torch formulas. softmax's Jacobian
        is symmetric, so its jvp is the backward's formula; log_softmax's is dx - <exp(y), dx>."""
        (y,) = ctx.saved_tensors
        if ctx.log:
            return dx - (dx * torch.exp(y)).sum(-1, keepdim=True)
        return y * (dx - (dx * y).sum(-1, keepdim=True))

    @staticmethod
    def vmap(info, in_dims, x, log):
        """Rows are independent: the batched (B, M, N) input is B*M rows."""
        x = _batch_first(x, in_dims[0], info.batch_size)
        return _TransformSoftmax.apply(x.reshape(-1, x.shape[-1]), log).view(x.shape), 0

    @staticmethod
    def backward(ctx, dy: torch.Tensor):
        return _softmax_vjp(ctx.saved_tensors[0], dy, ctx.log), None


class _SoftmaxVJP(torch.autograd.Function):
    """dx(y, dy) as a differentiable function in eager mode (double backward): the kernels
    forward, `_bwd_backward`'s torch formulas backward; what `softmax_bwd` registers."""

    @staticmethod
    def forward(y: torch.Tensor, dy: torch.Tensor, log: bool) -> torch.Tensor:
        return _backward(y, dy, log)

    @staticmethod
    def setup_context(ctx, inputs, output):
        _bwd_setup(ctx, inputs, output)
        ctx.save_for_forward(*inputs[:2])

    @staticmethod
    def jvp(ctx, d_y, d_dy, _):
        """Forward mode of dx(y, dy) (torch.func.hessian): torch formulas, as _bwd_backward."""
        y, dy = ctx.saved_tensors
        if ctx.log:
            p = torch.exp(y)
            return d_dy - p * (d_y * dy.sum(-1, keepdim=True) + d_dy.sum(-1, keepdim=True))
        dot = (dy * y).sum(-1, keepdim=True)
        return d_y * (dy - dot) + y * (d_dy - (d_dy * y).sum(-1, keepdim=True) - (dy * d_y).sum(-1, keepdim=True))

    @staticmethod
    def vmap(info, in_dims, y, dy, log):
        y, dy = (_batch_first(t, d, info.batch_size) for t, d in zip((y, dy), in_dims[:2]))
        n = y.shape[-1]
        return _SoftmaxVJP.apply(y.reshape(-1, n), dy.reshape(-1, n), log).view(y.shape), 0

    @staticmethod
    def backward(ctx, ddx: torch.Tensor):
        return _bwd_backward(ctx, ddx)


def softmax(x: torch.Tensor, dim: int = -1, *, dtype: torch.dtype | None = None) -> torch.Tensor:
    """Softmax of `x` along `dim`: exp(x - max) / sum(exp(x - max)), like `torch.softmax`.

    Args:
        x: a tensor of any shape (0-d included), any strides (non-contiguous and expanded
            views are fine), dtype float16, bfloat16, float32 or float64, on a CUDA device
            (or the CPU, see below).
        dim: the axis to normalize over; negative values count from the end.
        dtype: if given, x is cast to it first (as torch.softmax's `dtype=`); required for
            integer inputs.
    Returns:
        A tensor of x's shape and dtype (or `dtype`), differentiable (backward by the Triton
        backward kernel, saving y). Arithmetic is float32 for 16- and 32-bit inputs,
        float64 for float64. NaN or +inf in a slice makes that slice NaN; an all -inf slice
        is NaN, as in torch. A dim other than the last whose values are not contiguous runs the
        columns kernels on x where it lies, as (B, N, T), and the result is contiguous, as
        torch's; a dim of stride 1 (channels-last over C) runs the rows kernels on a view, and the
        result then has `dim`'s stride 1 (values equal torch's; strides differ).
    Raises:
        TypeError: x not a tensor, unsupported dtype (integer input without `dtype=`,
            complex, float8), dim not an int.
        IndexError: dim out of range.
        ValueError: x on a device other than CUDA or CPU.
    CPU: torch.softmax itself, unless MULTISOFTMAX_INTERPRET=1, which runs the Triton kernels
    through Triton's interpreter. Algorithm: a row in registers for rows up to 16384 values,
    longer rows cut into chunks held by cooperating programs (partial max and sum combined), the
    online-normalizer two-pass loop (Milakov & Gimelshein 2018) for rows past ~1M values; a
    middle dim: columns of up to 1024 held in registers, longer ones looped
    (multisoftmax/dispatch.py picks; multisoftmax/kernels/ has the kernels).
    """
    return _softmax(x, dim, dtype, log=False)


def log_softmax(x: torch.Tensor, dim: int = -1, *, dtype: torch.dtype | None = None) -> torch.Tensor:
    """log(softmax(x)) along `dim`, computed as x - max - log(sum(exp(x - max))).

    Same arguments, shapes, dtypes, errors and CPU/GPU behaviour as `softmax`; matches
    `torch.log_softmax` (an all -inf slice is NaN, a +inf or NaN makes the slice NaN).
    """
    return _softmax(x, dim, dtype, log=True)


class Softmax(torch.nn.Module):
    """`torch.nn.Softmax` on multisoftmax: `Softmax(dim)(x) == softmax(x, dim)`.

    Unlike torch.nn.Softmax, `dim` has no legacy implicit choice: it defaults to -1.
    """

    def __init__(self, dim: int = -1) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return softmax(x, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class LogSoftmax(Softmax):
    """`torch.nn.LogSoftmax` on multisoftmax: `LogSoftmax(dim)(x) == log_softmax(x, dim)`."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return log_softmax(x, self.dim)
