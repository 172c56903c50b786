"""JAX adapter: `softmax` and `log_softmax` on multisoftmax's Triton kernels.

The adapter checks arguments, moves the reduced axes last and views the array as M rows by
N columns (one middle axis: views it as (B, N, T), reduced over N, with no transpose), and runs
the launches that `multisoftmax.dispatch` plans:

* on a GPU backend through `jax_triton.triton_call` (imported lazily: jax-triton refuses
  to import on a CPU-only jaxlib);
* on the CPU with MULTISOFTMAX_INTERPRET=1, through `jax.pure_callback` into Triton's
  interpreter, the same kernels, so jit/grad/vmap are exercised without a GPU;
* on the CPU otherwise, `jax.nn.softmax` itself, so a model runs anywhere.

Differentiation is a `jax.custom_vjp` whose backward is the Triton backward kernel and
saves y, not x; that backward is itself differentiable (a second custom_vjp with the
closed-form derivatives), so grad-of-grad works. `triton_call` has no batching rule, so
each kernel call is wrapped in `jax.custom_batching.custom_vmap`: the op is row-wise, so a
batch axis just becomes more rows. vmap, grad, jit, value_and_grad and their nestings work.
"""

from __future__ import annotations

import functools
import itertools
import math
import os

import jax
import jax.numpy as jnp
import numpy as np

from . import dispatch, kernels, launch, occupancy, sms
from .kernels import interpret_requested

__all__ = ["softmax", "log_softmax"]

_DTYPE_NAMES = {jnp.dtype(jnp.float16): "float16", jnp.dtype(jnp.bfloat16): "bfloat16",
                jnp.dtype(jnp.float32): "float32", jnp.dtype(jnp.float64): "float64"}
_INTERPRETER_SMS = 4  # as in multisoftmax.torch: a small persistent grid for the interpreter


# --------------------------------------------------------------------------------------
# running a plan
# --------------------------------------------------------------------------------------
def _use_kernels() -> bool:
    """Kernels on a GPU backend, or on the CPU when the interpreter was asked for."""
    return jax.default_backend() == "gpu" or interpret_requested()


@functools.cache
def _num_sms() -> int:
    """SMs to plan for: the GPU's, or fewer under an MPS limit (multisoftmax.sms: XLA's
    streams are not a green context's, so the process's share is the whole answer)."""
    if jax.default_backend() == "gpu":
        return sms.share(jax.devices()[0].core_count)
    return _INTERPRETER_SMS


@functools.cache
def _gpu() -> str:
    """The GPU's key of dispatch.ROWS_TILINGS and GPU_CONSTANTS, its tuned tilings and constants ("": the
    H100's rules; the interpreter)."""
    return dispatch.tuned_gpu(jax.devices()[0].device_kind) if jax.default_backend() == "gpu" else ""


@functools.cache
def _jax_triton():
    """Import jax_triton lazily (it refuses to import without a GPU jaxlib).

    jax-triton 0.3.1 sets os.environ["TRITON_CACHE_DIR"] = "" when imported, after which
    every Triton JIT compile in the process (the torch adapter's, anyone's) fails with
    "Could not create or locate cache dir". Its own compile path does not use that cache,
    so the variable is put back as it was (unset if it was unset).
    """
    saved = os.environ.get("TRITON_CACHE_DIR")
    import jax_triton

    if os.environ.get("TRITON_CACHE_DIR") == "":
        if saved:
            os.environ["TRITON_CACHE_DIR"] = saved
        else:
            del os.environ["TRITON_CACHE_DIR"]
    _hook_compile(jax_triton)
    return jax_triton


# The hook on jax-triton's compile. jax_triton.triton_call (0.3.1) lowers each kernel through
# `triton_lib.get_or_create_triton_kernel(backend_init_func, platform, fn, ...)`, looked up at each
# lowering; `_hook_compile` wraps it, for the kernels of multisoftmax.kernels alone, to do three
# things jax-triton has no option for:
#
# * Register caps (Triton's maxnreg; dispatch.COOP_CAP32_REGS). triton_call builds the compiler's
#   options itself from num_warps, num_stages and num_ctas and passes any other keyword to the
#   kernel as a constexpr. For a kernel copy with a cap (`_COPIES`) the backend's parse_options adds
#   maxnreg, so the PTX carries `.maxnreg`, as under Triton's own launcher (the torch adapter). A
#   capped kernel is a copy of the JITFunction (`_kernel_copy`): jax-triton keys its compiled
#   kernels by the function object, not by options. Where the hook cannot be placed (another
#   jax-triton), the plans are made uncapped (slower, the same results).
# * A lean payload. The custom call's payload is a zlib-compressed proto holding the kernel's PTX
#   and its TTIR, and jaxlib finds the loaded kernel on every call by hashing and comparing that
#   whole payload. jaxlib's CUDA path reads only the PTX, and builds it with ptxas without line
#   info, so the PTX's line info (`.loc`, debug sections) is dead weight there too. The hook
#   compiles our kernels without line info (Triton's disable_line_info knob, for the compile
#   alone) and hands back a kernel with an empty TTIR: 32 x 1024 float32's payload goes from 6.7
#   to 2.1 kB, 64 x 128256 bf16's coop kernel from 19.7 to 6.5 kB, and a jitted call takes
#   ~0.8 us less of host time, with the same results bit for bit and the same GPU times
#   (bench/results/h100/probe_jax_host.log, the benchmark's run at 5c5babf). The torch adapter's
#   kernels keep their line info: profile those for source lines.
# * Filled shared memory (dispatch.FILL_SHARED, multisoftmax/occupancy.py): the kernel jaxlib gets
#   asks for the SM's shared memory over the programs it holds, which needs the registers a thread
#   the kernel takes; jaxlib assembles the PTX itself and says nothing of them, so the hook runs
#   Triton's ptxas on it once and reads them from the cubin (`_filled_shared`). Such a kernel is a
#   copy of the JITFunction too (`_kernel_copy`), as for a cap.
_COPIES: dict = {}  # a kernel's copy (`_kernel_copy`) -> (its maxnreg or None, whether it fills shared memory)
_LEAN: dict = {}  # id(jax-triton's kernel) -> (that kernel, its lean twin)


def _ours(fn) -> bool:
    """Whether `fn` (a JITFunction) is one of multisoftmax.kernels' (or a copy of one)."""
    return getattr(getattr(fn, "fn", None), "__module__", "").startswith("multisoftmax.kernels")


def _hook_compile(jax_triton) -> None:
    import triton

    lib = getattr(jax_triton, "triton_lib", None)
    original = getattr(lib, "get_or_create_triton_kernel", None)
    if original is None or getattr(original, "_multisoftmax_hook", False):
        return

    @functools.wraps(original)
    def get_or_create_triton_kernel(backend_init_func, platform, fn, *args, **kwargs):
        if not _ours(fn):
            return original(backend_init_func, platform, fn, *args, **kwargs)
        (maxnreg, fill), built = _COPIES.get(fn, (None, False)), {}
        num_warps = kwargs.get("num_warps") or 4
        init = backend_init_func

        def backend_init_func(device, compute_capability):
            backend = init(device, compute_capability)
            parse, make_llir, make_ptx = backend.parse_options, backend.make_llir, backend.make_ptx
            if maxnreg is not None:
                backend.parse_options = lambda opts: parse({**opts, "maxnreg": maxnreg})

            def llir_without_line_info(*a, **k):
                compilation = getattr(getattr(triton, "knobs", None), "compilation", None)
                if not hasattr(compilation, "scope"):  # a Triton without knobs: line info stays
                    return make_llir(*a, **k)
                with compilation.scope():
                    compilation.disable_line_info = True
                    return make_llir(*a, **k)

            def ptx_kept(src, metadata, options, capability):
                ptx = make_ptx(src, metadata, options, capability)
                built.update(ptx=ptx, name=metadata["name"], shared=metadata["shared"], capability=capability)
                if fill:
                    built["shared"] = _filled_shared(backend, ptx, dict(metadata), options, capability, device,
                                                     num_warps)
                return ptx

            backend.make_llir, backend.make_ptx = llir_without_line_info, ptx_kept
            return backend

        kernel, *rest = original(backend_init_func, platform, fn, *args, **kwargs)
        if id(kernel) not in _LEAN and built:
            try:
                lean = lib.triton_kernel_call_lib.TritonKernel(
                    built["name"], num_warps, kwargs.get("num_ctas") or 1, built["shared"],
                    built["ptx"], "", built["capability"])
            except Exception:  # noqa: BLE001  (another jaxlib's constructor: keep jax-triton's kernel)
                lean = kernel
            _LEAN[id(kernel)] = (kernel, lean)
        return (_LEAN.get(id(kernel), (kernel, kernel))[1], *rest)

    get_or_create_triton_kernel._multisoftmax_hook = True
    lib.get_or_create_triton_kernel = get_or_create_triton_kernel


def _register_caps_work() -> bool:
    """Whether the JAX adapter's plans may ask for a register cap: through the hook on a GPU, and
    in the interpreter (which has no registers to cap: the plan is only the same as on the GPU)."""
    if jax.default_backend() != "gpu" or kernels.INTERPRETED:
        return True
    lib = _jax_triton().triton_lib
    return getattr(lib.get_or_create_triton_kernel, "_multisoftmax_hook", False)


def _filled_shared(backend, ptx, metadata, options, capability, device: int, num_warps: int) -> int:
    """The dynamic shared memory a launch of the kernel `ptx` asks for where dispatch.fills_shared
    says so: occupancy.fill_shared at the registers a thread it takes, which Triton's ptxas gives
    (the cubin loaded once to read them, as Triton's CompiledKernel does); the kernel's own shared
    memory where that fails (another Triton, no driver)."""
    shared = metadata["shared"]
    try:
        from triton.backends.nvidia.driver import CudaUtils

        cubin = backend.make_cubin(ptx, metadata, options, capability)
        n_regs = CudaUtils().load_binary(metadata["name"], cubin, shared, device)[2]
    except Exception:  # noqa: BLE001
        return shared
    return occupancy.fill_shared(n_regs, num_warps, shared, occupancy.limits(device))


@functools.cache
def _kernel_copy(name: str, maxnreg: int | None, fill: bool):
    """Kernel `name` as a JITFunction of its own (jax-triton keys compiled kernels by it), which the
    compile hook builds under Triton's `maxnreg` where given, and whose launches ask for the SM's
    shared memory where `fill` (dispatch.fills_shared); see `_COPIES`. Pass all three by position:
    the cache keys on the arguments as given."""
    import triton

    fn = triton.jit(kernels.get(name).fn)
    _COPIES[fn] = (maxnreg, fill)
    return fn


# Kept scratch. The cooperative kernels read and write their scratch (counters, TAG's words)
# through its "init" argument and leave it as the next launch needs it (kernels/softmax.py's
# docstring), so that a launcher can keep one buffer from call to call, as the torch launcher
# does per stream. A JAX call is functional, but a constant of a jitted program is such a buffer:
# XLA loads each constant once with the compiled program (per device) and hands that same buffer
# to every execution, and a kernel's writes through it stay (bench/probe_kept_scratch.py,
# bench/results/h100/probe_kept_scratch.log; tests/test_gpu.py checks it on each jaxlib). So on a
# GPU the adapter passes, as each cooperative call's "init", a constant `_kept_scratch` makes:
# no zeros kernel before each call, and dispatch plans as for torch (counters_per_call=False,
# no SPLIT_FRESH plans). An XLA that copied constants anew for each execution would still give
# right results (the constant holds what the kernels leave: zeros); what the scheme needs is
# that two calls holding the same constant never run at once, which holds while XLA runs a
# program's custom calls one after another on one stream, as it does. MULTISOFTMAX_JAX_KEPT_SCRATCH=0
# goes back to zeros that XLA makes for each call, aliased to the scratch output (the adapter
# before): cheaper than jax-triton's memset (zeroed_outputs), one kernel for the zeros of
# several calls where XLA can (dispatch.py, "A launcher that zeroes").
# A call whose scratch is larger than _KEPT_MAX_WORDS (TAG's words of many rows: 2 a chunk and row)
# takes zeros made for it instead: a constant that size would weigh on the compiled program, and
# the zeros kernel is small beside a launch that moves that many rows.
_KEPT_TAGS = itertools.count(1)
_KEPT_MAGIC = {"zeros": 0x6D736D30, "sync": 0x6D736D31}  # "msm0", "msm1": no constant of the user's
_KEPT_MAX_WORDS = 1 << 18  # 1 MiB


def _kept_scratch_on() -> bool:
    """Whether cooperative calls get kept scratch (above): compiled on a GPU, unless
    MULTISOFTMAX_JAX_KEPT_SCRATCH=0."""
    return (jax.default_backend() == "gpu" and not kernels.INTERPRETED
            and os.environ.get("MULTISOFTMAX_JAX_KEPT_SCRATCH", "1") != "0")


def _kept_scratch(shape: tuple, kind: str) -> np.ndarray:
    """The constant a cooperative call's kernel keeps its scratch of `shape` (int32 words) and
    `kind` ("zeros": counters that rest at 0; "sync": TAG's words) in: zeros, as the kernels
    leave it, and two more words they never touch, the kind's magic and a number new to each
    call made, so that XLA neither merges the constant with another (a constant of the user's,
    or another call's, whose kernel might leave other words) nor makes it a broadcast anew for
    each execution, which it does with a constant of one value."""
    words = np.zeros(math.prod(shape) + 2, np.int32)
    words[-2], words[-1] = _KEPT_MAGIC[kind], next(_KEPT_TAGS)
    return words


def _gpu_execute(launches, buffers: dict, io_dtype):
    jt = _jax_triton()
    acc_dtype = jnp.float64 if io_dtype == jnp.float64 else jnp.float32
    kept = _kept_scratch_on()

    dtypes = {"io": io_dtype, "acc": acc_dtype, "zeros": jnp.int32, "sync": jnp.int32}

    def call(l, inputs, bufs):
        assert not any(name in bufs for name, _, _ in l.outputs), "GPU plans make every buffer once"
        # The cooperative kernels' scratch (dispatch.coop_outputs): its "init" argument, just before
        # the outputs, is the buffer the kernels use: kept scratch (above), or zeros that XLA makes
        # for the call, aliased to the scratch output.
        inits = [(name, shape) for name, shape, kind in l.outputs if kind == "init"]
        outs = l.outputs[len(inits):]
        assert all(kind != "init" for _, _, kind in outs), "a launch's init arguments come before its outputs"
        names = [name for name, _, _ in outs]
        kinds = {name: kind for name, _, kind in outs}
        scratch = {name for name, _ in inits}  # the outputs the inits stand for: kept or aliased, never zeroed
        if kept and sum(math.prod(shape) for _, shape in inits) <= _KEPT_MAX_WORDS:
            # the scratch outputs are not touched: one word each
            outs = [(name, (1,) if name in scratch else shape, kind) for name, shape, kind in outs]
            init_args = [_kept_scratch(shape, kinds[name]) for name, shape in inits]
            aliases = {}
        else:
            init_args = [jnp.zeros(shape, jnp.int32) for _, shape in inits]
            aliases = {len(inputs) + i: names.index(name) for i, (name, _) in enumerate(inits)}
        out_shape = [jax.ShapeDtypeStruct(shape, dtypes[kind]) for _, shape, kind in outs]
        zeroed = tuple(i for i, (name, _, kind) in enumerate(outs) if kind in ("zeros", "sync") and name not in scratch)
        meta = launch.kernel_meta(l)
        maxnreg, fill = meta.pop("maxnreg", None), dispatch.fills_shared(l)
        kernel = _kernel_copy(l.kernel, maxnreg, fill) if maxnreg or fill else kernels.get(l.kernel)
        written = jt.triton_call(*inputs, *l.scalars, *init_args,
                                 kernel=kernel, out_shape=out_shape, grid=l.grid, input_output_aliases=aliases,
                                 zeroed_outputs=zeroed, **meta)
        return [written[names.index(name)] for name, _ in inits] + list(written)

    return launch.execute(launches, buffers, call)


def _to_torch(a: np.ndarray):
    import torch

    a = np.ascontiguousarray(a)
    if a.dtype == jnp.bfloat16:  # numpy's bfloat16 (ml_dtypes) has no torch counterpart
        return torch.from_numpy(a.view(np.uint16).copy()).view(torch.bfloat16)
    return torch.from_numpy(a.copy())


def _to_numpy(t, dtype) -> np.ndarray:
    import torch

    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view(jnp.bfloat16)
    return t.numpy().astype(dtype, copy=False)


def _interpret_execute(launches, buffers: dict, io_dtype):
    """The same launches on the host, through Triton's interpreter, as a pure_callback."""
    names = list(buffers)
    out_struct = jax.ShapeDtypeStruct(next(iter(buffers.values())).shape, io_dtype)

    def host(*arrays):
        import torch

        host_buffers = {n: _to_torch(a) for n, a in zip(names, arrays)}
        dtype = next(iter(host_buffers.values())).dtype
        out = launch.execute(launches, host_buffers,
                             lambda l, ins, bufs: launch.torch_call(l, ins, bufs, dtype, torch.device("cpu")))
        return _to_numpy(out, io_dtype)

    return jax.pure_callback(host, out_struct, *buffers.values())


def _execute(launches, buffers: dict, io_dtype):
    if jax.default_backend() == "gpu" and not kernels.INTERPRETED:
        return _gpu_execute(launches, buffers, io_dtype)
    return _interpret_execute(launches, buffers, io_dtype)


# --------------------------------------------------------------------------------------
# kernel calls on (M, N) arrays, batched by custom_vmap
# --------------------------------------------------------------------------------------
def _rows(a):
    return a.reshape(math.prod(a.shape[:-1]), a.shape[-1])


@functools.cache
def _fwd_call(log: bool):
    @jax.custom_batching.custom_vmap
    def call(x):
        M, N = x.shape
        plan = dispatch.plan_forward(M, N, N, N, _DTYPE_NAMES[x.dtype], log, _num_sms(),
                                     counters_per_call=not _kept_scratch_on(), register_cap=_register_caps_work(),
                                     gpu=_gpu())
        return _execute(plan, {"x": x}, x.dtype)

    @call.def_vmap
    def _(axis_size, in_batched, x):
        # Row-wise op: the batch axis (moved to the front by custom_vmap) is more rows.
        return call(_rows(x)).reshape(x.shape), True

    return call


@functools.cache
def _bwd_call(log: bool):
    @jax.custom_batching.custom_vmap
    def call(y, dy):
        M, N = y.shape
        plan = dispatch.plan_backward(M, N, N, N, N, _DTYPE_NAMES[y.dtype], log, _num_sms(),
                                      counters_per_call=not _kept_scratch_on(), register_cap=_register_caps_work(),
                                      gpu=_gpu())
        return _execute(plan, {"y": y, "dy": dy}, y.dtype)

    @call.def_vmap
    def _(axis_size, in_batched, y, dy):
        y, dy = (a if b else jnp.broadcast_to(a, (axis_size, *a.shape)) for a, b in zip((y, dy), in_batched))
        return call(_rows(y), _rows(dy)).reshape(y.shape), True

    return call


@functools.cache
def _fwd_cols_call(log: bool):
    """`_fwd_call` for (B, N, T) arrays reduced over axis 1 (kernels/columns.py)."""
    @jax.custom_batching.custom_vmap
    def call(x):
        B, N, T = x.shape
        plan = dispatch.plan_columns_forward(B, N, T, N * T, T, N * T, T, _DTYPE_NAMES[x.dtype], log, _num_sms(),
                                             gpu=_gpu())
        return _execute(plan, {"x": x}, x.dtype)

    @call.def_vmap
    def _(axis_size, in_batched, x):
        # Columns are independent: the batch axis (in front) is more of B.
        return call(x.reshape(-1, *x.shape[2:])).reshape(x.shape), True

    return call


@functools.cache
def _bwd_cols_call(log: bool):
    @jax.custom_batching.custom_vmap
    def call(y, dy):
        B, N, T = y.shape
        plan = dispatch.plan_columns_backward(B, N, T, N * T, T, N * T, T, N * T, T, _DTYPE_NAMES[y.dtype], log,
                                              _num_sms(), gpu=_gpu())
        return _execute(plan, {"y": y, "dy": dy}, y.dtype)

    @call.def_vmap
    def _(axis_size, in_batched, y, dy):
        y, dy = (a if b else jnp.broadcast_to(a, (axis_size, *a.shape)) for a, b in zip((y, dy), in_batched))
        return call(y.reshape(-1, *y.shape[2:]), dy.reshape(-1, *dy.shape[2:])).reshape(y.shape), True

    return call


def _where_view(shape: tuple, w, k: int):
    """How the where kernels read mask `w` (bool, of x's rank, broadcastable to x's `shape`) for an
    x reduced over its last `k` axes: (w2, where_rows, row_div, row_mod, row_table, w_cols), w2 the
    mask as (Mw, N) (`w_cols`) or (Mw, 1) (broadcast along the reduced axes). Row m of x's (M, N)
    view reads mask row (m // row_div) % row_mod where the leading axes the mask does not
    broadcast over are one run (a causal (T, T) mask over (B, H, T, T): m % T; a (B, 1, 1, T)
    padding mask: m // (H * T)), else where_rows[m] (int32, (M,), made by XLA). A mask that
    broadcasts over some reduced axes but not all is broadcast over them here (its Mw x N)."""
    ndim = len(shape)
    lead, tail, w_lead, w_tail = shape[:ndim - k], shape[ndim - k:], w.shape[:ndim - k], w.shape[ndim - k:]
    w_cols = any(t != 1 for t in w_tail)
    if w_cols and tuple(w_tail) != tuple(tail):
        w = jnp.broadcast_to(w, (*w_lead, *tail))
    Mw = math.prod(w_lead)
    big = [(n, wl == n) for n, wl in zip(lead, w_lead) if n > 1]  # x's leading axes of size > 1: does w follow?
    follows = [f for _, f in big]
    runs = sum(1 for i, f in enumerate(follows) if f and (i == 0 or not follows[i - 1]))
    no_table = jnp.zeros((1,), jnp.int32)
    if runs == 0:
        return w.reshape(1, -1), no_table, 1, 1, False, w_cols
    if runs == 1:
        last = max(i for i, f in enumerate(follows) if f)
        row_div = math.prod(n for n, _ in big[last + 1:])  # the axes inside the run, broadcast
        return w.reshape(Mw, -1), no_table, row_div, Mw, False, w_cols
    table = jnp.broadcast_to(jnp.arange(Mw, dtype=jnp.int32).reshape(w_lead), lead).reshape(-1)
    return w.reshape(Mw, -1), table, 1, 1, True, w_cols


def _where_plan(shape: tuple, dtype, k: int, log: bool, forward: bool, view=None):
    """dispatch.plan_where for x of `shape` reduced over its last `k` axes (`view`: _where_view's
    last four), or None where the where kernels do not take it (rows of more chunks than SMs)."""
    N = math.prod(shape[len(shape) - k:])
    row_div, row_mod, row_table, w_cols = view or (1, 1, False, True)
    return dispatch.plan_where(math.prod(shape) // N, N, _DTYPE_NAMES[jnp.dtype(dtype)], log, forward, row_div,
                               row_mod, row_table, w_cols, _num_sms(), _register_caps_work())


def _where_execute(arrays: dict, w, k: int, log: bool, forward: bool):
    """Run the where kernel on `arrays` ("x", or "y" and "dy": one shape and dtype, reduced over
    the last `k` axes) under mask `w` (at their rank): the output in their shape."""
    first = next(iter(arrays.values()))
    w2, rows, *view = _where_view(first.shape, w, k)
    plan = _where_plan(first.shape, first.dtype, k, log, forward, view)
    N = math.prod(first.shape[first.ndim - k:])
    buffers = {name: a.reshape(-1, N) for name, a in arrays.items()}
    return _execute(plan, {**buffers, "where": w2, "where_rows": rows}, first.dtype).reshape(first.shape)


@functools.cache
def _where_fwd_call(log: bool, k: int):
    """y = the masked softmax of x over its last `k` axes (kernels/where.py); `w`: the mask at x's
    rank. Batched (custom_vmap) as more leading axes, of the mask too."""
    @jax.custom_batching.custom_vmap
    def call(x, w):
        return _where_execute({"x": x}, w, k, log, True)

    @call.def_vmap
    def _(axis_size, in_batched, x, w):
        x = x if in_batched[0] else jnp.broadcast_to(x, (axis_size, *x.shape))
        return call(x, w if in_batched[1] else w[None]), True

    return call


@functools.cache
def _where_bwd_call(log: bool, k: int):
    """dx from y (`_where_fwd_call`'s) and dy, masked as there (kernels/where.py)."""
    @jax.custom_batching.custom_vmap
    def call(y, dy, w):
        return _where_execute({"y": y, "dy": dy}, w, k, log, False)

    @call.def_vmap
    def _(axis_size, in_batched, y, dy, w):
        y, dy = (a if b else jnp.broadcast_to(a, (axis_size, *a.shape)) for a, b in zip((y, dy), in_batched))
        return call(y, dy, w if in_batched[2] else w[None]), True

    return call


# --------------------------------------------------------------------------------------
# differentiation
# --------------------------------------------------------------------------------------
def _backward_derivatives(log, res, ddx, axis):
    """Derivatives of dx(y, dy) (see multisoftmax.torch._bwd_backward for the formulas), the
    sums over `axis` (-1: rows; 1: the columns of (B, N, T) arrays; a tuple: where= over those axes)."""
    y, dy = res
    acc = jnp.promote_types(y.dtype, jnp.float32)
    y32, dy32, ddx32 = (a.astype(acc) for a in (y, dy, ddx))
    if log:
        p = jnp.exp(y32)
        gy = -ddx32 * p * dy32.sum(axis, keepdims=True)
        gdy = ddx32 - (ddx32 * p).sum(axis, keepdims=True)
    else:
        dot = (dy32 * y32).sum(axis, keepdims=True)
        c = (ddx32 * y32).sum(axis, keepdims=True)
        gy = ddx32 * (dy32 - dot) - dy32 * c
        gdy = y32 * (ddx32 - c)
    return gy.astype(y.dtype), gdy.astype(dy.dtype)


def _differentiable(fwd_call, bwd_call, axis: int):
    """(softmax, backward): softmax(x, log) through the kernel calls `fwd_call(log)` as a
    `jax.custom_vjp` whose backward is backward(y, dy, log), `bwd_call(log)`'s kernel from saved
    y, itself a custom_vjp (closed-form derivatives over `axis`), so that grad of grad works."""

    @functools.partial(jax.custom_vjp, nondiff_argnums=(2,))
    def backward(y, dy, log):
        return bwd_call(log)(y, dy)

    backward.defvjp(lambda y, dy, log: (backward(y, dy, log), (y, dy)),
                    lambda log, res, ddx: _backward_derivatives(log, res, ddx, axis))

    @functools.partial(jax.custom_vjp, nondiff_argnums=(1,))
    def softmax(x, log):
        return fwd_call(log)(x)

    def softmax_fwd(x, log):
        y = softmax(x, log)
        return y, y

    softmax.defvjp(softmax_fwd, lambda log, y, dy: (backward(y, dy, log),))
    return softmax, backward


_softmax_2d, _backward_2d = _differentiable(_fwd_call, _bwd_call, -1)  # rows of (M, N) arrays
_softmax_3d, _backward_3d = _differentiable(_fwd_cols_call, _bwd_cols_call, 1)  # axis 1 of (B, N, T) arrays


def _on_views(op_2d, op_3d, axes: tuple, *arrays):
    """op_3d(*views) on (B, N, T) views of `arrays` (all of one shape) where `axes` is one middle
    axis (the columns kernels read it where it lies), else op_2d(*views) on (M, N) views with the
    reduced axes moved last (a transpose; an identity permutation costs nothing); the result in
    the arrays' shape."""
    shape, ndim = arrays[0].shape, arrays[0].ndim
    if len(axes) == 1 and axes[0] != ndim - 1 and shape[axes[0]] > 1 and math.prod(shape[axes[0] + 1:]) > 1:
        a = axes[0]
        B, N, T = math.prod(shape[:a]), shape[a], math.prod(shape[a + 1:])
        return op_3d(*(t.reshape(B, N, T) for t in arrays)).reshape(shape)
    perm = [a for a in range(ndim) if a not in axes] + list(axes)
    moved = [jnp.transpose(t, perm) for t in arrays]
    M = math.prod(moved[0].shape[: ndim - len(axes)])
    out = op_2d(*(t.reshape(M, -1) for t in moved)).reshape(moved[0].shape)
    return jnp.transpose(out, np.argsort(perm))


def _padded(w, ndim: int):
    """Mask `w` at rank `ndim` (leading axes of size 1, as broadcasting adds them)."""
    return w.reshape((1,) * (ndim - w.ndim) + w.shape)


def _where_kernels(x, axes: tuple, log: bool, forward: bool = True) -> bool:
    """Whether the where kernels take x's masked softmax over `axes` (its backward if not
    `forward`): the trailing axes, rows of at most as many cooperative chunks as SMs
    (dispatch.plan_where: 1,081,344 values on an H100), but not the softmax backward past
    dispatch.WHERE_BWD_MAX_N (the unmasked one serves). Other axes would need x moved (XLA's
    fused softmax is one pass then), longer rows a kernel family of their own."""
    return axes == tuple(range(x.ndim - len(axes), x.ndim)) and _where_plan(x.shape, x.dtype, len(axes), log,
                                                                             forward) is not None


@functools.partial(jax.custom_vjp, nondiff_argnums=(3, 4))
def _where_backward(y, dy, w, axes: tuple, log: bool):
    """The where kernels' backward (`_where_bwd_call`), differentiable: the closed forms of
    _backward_derivatives with dy and ddx zeroed where the mask is False, and zero there."""
    return _where_bwd_call(log, len(axes))(y, dy, w)


def _where_backward_fwd(y, dy, w, axes, log):
    return _where_backward(y, dy, w, axes, log), (y, dy, w)


def _where_backward_bwd(axes, log, res, ddx):
    y, dy, w = res
    dy, ddx = jnp.where(w, dy, 0), jnp.where(w, ddx, 0)
    gy, gdy = _backward_derivatives(log, (y, dy), ddx, axes)
    return jnp.where(w, gy, 0).astype(y.dtype), jnp.where(w, gdy, 0).astype(dy.dtype), None


_where_backward.defvjp(_where_backward_fwd, _where_backward_bwd)


@functools.partial(jax.custom_vjp, nondiff_argnums=(2, 3))
def _masked(x, where, axes: tuple, log: bool):
    """jax.nn's masked softmax, `where` as passed (broadcastable to x).

    Over the trailing axes, the where kernels (kernels/where.py), which read the mask beside x
    where it lies: the rows kernels, or the cooperative ones for rows past dispatch.WHERE_MAX_N
    values (backward: WHERE_BWD_MAX_N), up to as many chunks as SMs (`_where_kernels`), but for
    the softmax backward of rows past WHERE_BWD_MAX_N (below). Otherwise (other axes, longer
    rows) the forward is XLA's: x masked with
    -inf, then jax.nn's unmasked softmax, then the output masked (0; log_softmax: -inf), which XLA
    fuses into one pass, in float32 for 16-bit x (as the kernels compute): masking x and y around
    the unmasked kernels would cost two more passes (bench/probe_where.py). That is jax.nn's
    `where` exactly: masked-out values add exp(-inf) = 0 to the sum and never win the max, and
    fully masked slices (NaN inside) come out 0. And the backward is the unmasked kernel from
    saved y for the softmax (masked-out y is 0, so dx is 0 there by itself; faster than the
    cooperative where kernel, dispatch.WHERE_COOP_*), XLA's in float32 for the log_softmax (dy's
    masked-out values zeroed, then dy - exp(y) * sum(dy), fused: a pass of its own to zero them
    before our kernel measured slower)."""
    if _where_kernels(x, axes, log):
        return _where_fwd_call(log, len(axes))(x, _padded(where, x.ndim))
    acc = jnp.promote_types(x.dtype, jnp.float32)
    f = jax.nn.log_softmax if log else jax.nn.softmax
    y = f(jnp.where(where, x.astype(acc), -jnp.inf), axes)
    return jnp.where(where, y, -jnp.inf if log else 0.0).astype(x.dtype)


def _masked_fwd(x, where, axes, log):
    y = _masked(x, where, axes, log)
    return y, (y, where)  # `where` as passed, not broadcast to x (test_where_is_not_broadcast_into_residuals)


def _masked_bwd(axes, log, res, dy):
    y, where = res
    if _where_kernels(y, axes, log, forward=False):
        return _where_backward(y, dy, _padded(where, y.ndim), axes, log), None
    if log:  # XLA's, in float32: dy's masked-out values zeroed, then dy - exp(y) * sum(dy), fused
        acc = jnp.promote_types(dy.dtype, jnp.float32)
        dy = jnp.where(where, dy.astype(acc), 0.0)
        dx = jnp.where(where, dy - jnp.exp(y.astype(acc)) * jnp.sum(dy, axes, keepdims=True), 0.0)
        return dx.astype(y.dtype), None
    return _on_views(lambda a, b: _backward_2d(a, b, log), lambda a, b: _backward_3d(a, b, log), axes, y, dy), None


_masked.defvjp(_masked_fwd, _masked_bwd)


# --------------------------------------------------------------------------------------
# public API
# --------------------------------------------------------------------------------------
def _normalize_axes(axis, ndim: int, name: str) -> tuple[int, ...]:
    if axis is None:  # as jax.nn: every axis
        return tuple(range(ndim))
    axes = (axis,) if isinstance(axis, (int, np.integer)) and not isinstance(axis, bool) else axis
    try:
        axes = tuple(axes)
    except TypeError:
        raise TypeError(f"{name}: axis must be an int or a tuple of ints, got {axis!r}") from None
    rank = ndim  # as jax.nn: a 0-d array has no axis to reduce over
    out = []
    for a in axes:
        if not isinstance(a, (int, np.integer)) or isinstance(a, bool):
            raise TypeError(f"{name}: axis must be an int, a tuple of ints or None, got {axis!r}")
        if not -rank <= a < rank:
            raise ValueError(f"{name}: axis {a} is out of range for an array of {ndim} dimensions "
                             f"(expected values in [{-rank}, {rank - 1}])")
        out.append(int(a) % rank)
    if len(set(out)) != len(out):
        raise ValueError(f"{name}: axis {axis!r} repeats an axis")
    return tuple(out)


def _check_where(where, shape: tuple, name: str):
    """`where` as a boolean array that broadcasts to x's `shape`, or None."""
    if where is None:
        return None
    where = jnp.asarray(where)
    if where.dtype != jnp.bool_:
        raise TypeError(f"{name}: where must be a boolean array (True: the element takes part), got dtype "
                        f"{where.dtype}; pass a comparison or mask.astype(bool)")
    try:
        fits = jnp.broadcast_shapes(where.shape, shape) == tuple(shape)
    except ValueError:
        fits = False
    if not fits:
        raise ValueError(f"{name}: where has shape {where.shape}, which does not broadcast to x's shape {shape}")
    return where


def _softmax(x, axis, log: bool, where=None):
    name = "log_softmax" if log else "softmax"
    x = jnp.asarray(x)
    if jnp.issubdtype(x.dtype, jnp.integer) or x.dtype == jnp.bool_:
        x = x.astype(jnp.result_type(float))  # jax.nn's promotion: to the default float
    if x.dtype not in _DTYPE_NAMES:
        raise TypeError(f"{name}: x has dtype {x.dtype}, which multisoftmax does not support "
                        f"(float16, bfloat16, float32, float64); cast x with x.astype(jnp.float32)")
    axes = _normalize_axes(axis, x.ndim, name)
    where = _check_where(where, x.shape, name)
    if not _use_kernels() or x.size == 0:
        return jax.nn.log_softmax(x, axis, where=where) if log else jax.nn.softmax(x, axis, where=where)
    if where is not None:
        return _masked(x, where, axes, log)  # as passed: XLA broadcasts it inside its fusions
    return _on_views(lambda t: _softmax_2d(t, log), lambda t: _softmax_3d(t, log), axes, x)


def softmax(x, axis: int | tuple[int, ...] | None = -1, where=None):
    """Softmax of `x` over `axis`, like `jax.nn.softmax`: exp(x - max) / sum(exp(x - max)).

    Args:
        x: an array (or array-like) of rank >= 1. float16, bfloat16, float32
            and float64 are computed as is (arithmetic in float32, float64 for float64);
            integer and bool inputs are promoted to the default float dtype as jax.nn does.
        axis: an int, a tuple of ints (negative counts from the end) or None (every axis);
            with a tuple the softmax runs over all those axes together.
        where: None, or a boolean array that broadcasts to x's shape: the elements that take
            part, as jax.nn.softmax's `where`. Masked-out elements take no part in the max
            and the sum, and their outputs are 0 (log_softmax: -inf); a fully masked slice
            gives 0 (-inf), and a zero gradient. Over the trailing axes the where kernels
            (kernels/where.py) read the mask where it lies, never broadcast in memory: rows in
            registers, longer ones (past 32768 values forward, 16384 backward) in chunks of
            cooperating programs, up to 1,081,344 values on an H100; past 16384 values the
            softmax backward is our unmasked one from saved y. Other axes and rows longer
            still take XLA's softmax with the mask fused around it (float32 for 16-bit x) and
            our unmasked backward from saved y (log_softmax: XLA's, in float32).
            bench/probe_where.py.
    Returns:
        An array of x's shape and (promoted) dtype. Differentiable by jax.grad / jax.vjp
        (backward: the Triton backward kernel, from saved y), batchable by jax.vmap,
        jittable. A NaN or +inf in a slice makes it NaN; an all -inf slice is NaN, as in
        jax.nn.softmax.
    Raises:
        TypeError: complex or other unsupported dtypes; axis not an int/tuple of ints/None;
            `where` not boolean.
        ValueError: axis out of range (an int axis of a 0-d array) or repeated; `where` that
            does not broadcast to x's shape.
    Backends: GPU runs `jax_triton.triton_call` (jax-triton 0.3.1 must be installed). CPU
    runs jax.nn.softmax, unless MULTISOFTMAX_INTERPRET=1 was set before import, which runs
    the Triton kernels through Triton's interpreter in a `jax.pure_callback` (needs torch,
    which the interpreter uses for buffers). The backend is `jax.default_backend()`.
    Algorithm: see multisoftmax/kernels/ (rows in registers, long rows in chunks of cooperating
    programs, the online two-pass loop of Milakov & Gimelshein 2018 past ~1M values, split rows for
    few long rows; one middle axis: the columns kernels on x as (B, N, T), no transpose; `where`:
    jax.nn's masked softmax, jax/_src/nn/functions.py, in the rows family's layout).
    """
    return _softmax(x, axis, log=False, where=where)


def log_softmax(x, axis: int | tuple[int, ...] | None = -1, where=None):
    """log(softmax(x)) over `axis`, computed as x - max - log(sum(exp(x - max))).

    Same arguments, dtypes, errors and backends as `softmax`; matches `jax.nn.log_softmax`
    (masked-out elements of `where` give -inf).
    """
    return _softmax(x, axis, log=True, where=where)
