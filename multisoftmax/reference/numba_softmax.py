"""Softmax and log_softmax, forward and backward, as Numba-CUDA kernels (OneFlow's design).

An implementation independent of the Triton kernels, to hold them to. The design is
OneFlow's CUDA softmax, as described in the study note kept in the project's shared seeds
(shared/seeds/004_76fe1dd108fb736d.txt): two kernel families chosen by the row length N.

warp path (N <= WARP_MAX_COLS)
    A group of `width` threads owns one row (width = 32, one warp, except for rows of at
    most 32 values, where a smaller power of two lets one warp serve several rows). Each
    thread loads its `cols_per_thread` values into registers once, in packs of consecutive
    elements, and the row max and sum are exchanged with a butterfly of warp shuffles
    (`shfl_xor_sync` with offsets width/2, ..., 2, 1): no shared memory, no barrier.
    `cols_per_thread` is a compile-time constant from a small set of specializations.
block path (any N)
    A block of `threads_per_block` threads owns one row and strides over it, so nothing
    bounds N. Block-wide max and sum: a warp shuffle inside each warp, then one value per
    warp through shared memory, read back by every thread. The row is read from global
    memory three times (max, sum, write) instead of being kept on chip.

Numerics: values are accumulated in float32 for float16/float32 inputs and in float64 for
float64 inputs; outputs have the input's dtype. The row max is subtracted before exp, so
large magnitudes do not overflow. Special values follow torch.softmax: a NaN or +inf
anywhere in a row, or a row of only -inf, makes the whole row NaN (exp(NaN) or exp(inf -
inf) poisons the row sum, which every output of the row is divided by or subtracts the log
of).

Numba's CUDA simulator (NUMBA_ENABLE_CUDASIM=1) has no warp shuffles; under it the shuffle
is emulated with a per-warp barrier (`_simulated_shfl_xor_sync`), so the kernels run
unchanged on a machine without a GPU.
"""

from __future__ import annotations

import functools
import math
import threading
import warnings
import weakref

import numpy as np
from numba import cuda

__all__ = ["softmax", "log_softmax", "softmax_backward", "log_softmax_backward"]

WARP_SIZE = 32
FULL_MASK = 0xFFFFFFFF
# The warp path keeps the whole row in registers: 32 lanes x at most 32 values a thread
# (64 in the backward pass, which keeps y and dy). Past that the compiler would spill the
# arrays to local memory, and streaming the row with a whole block is the better trade.
# OneFlow draws its register-resident limit at the same 1024 columns.
WARP_MAX_COLS = 1024
WARP_COLS_PER_THREAD = (1, 2, 4, 8, 16, 32)
# Consecutive elements a thread handles together: 4 values make one 16-byte access for
# float32. Numba emits scalar loads, but a thread's loads still fall on adjacent addresses.
PACK_SIZE = 4
# Warp path: 4 warps a block (4 rows, or more for rows of <= 16 values). Small blocks keep
# many of them resident per SM and make the last, partially filled wave short.
WARP_PATH_THREADS = 128
# Block path: 8 warps a row. Enough loads in flight to stream one row per block while
# several blocks share an SM; the cross-warp step reduces only 8 partial values.
BLOCK_PATH_THREADS = 256

_ACC_DTYPE = {np.dtype(np.float16): np.float32, np.dtype(np.float32): np.float32,
              np.dtype(np.float64): np.float64}
_NEG_INF = -math.inf


# --- warp shuffle: the real intrinsic, or an emulation for the simulator -------------------

_sim_lock = threading.Lock()
_sim_warps: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _simulated_shfl_xor_sync(mask, value, lane_mask):
    """`cuda.shfl_xor_sync` for Numba's CUDA simulator, which runs each thread as a Python
    thread and has no shuffles: every lane of the warp posts its value, waits for the
    others, reads lane (laneid ^ lane_mask), and waits again before the slots are reused.
    Like the hardware instruction, it needs every lane of the warp to take part."""
    thread = threading.current_thread()
    manager = thread._manager  # the simulator's per-launch block manager
    lane, warp = thread.thread_id % WARP_SIZE, thread.thread_id // WARP_SIZE
    key = (tuple(thread.blockIdx), warp)
    with _sim_lock:
        warps = _sim_warps.setdefault(manager, {})
        state = warps.get(key)
        if state is None:
            block_threads = int(np.prod(manager._block_dim))
            lanes = min(WARP_SIZE, block_threads - warp * WARP_SIZE)
            # The timeout only frees threads left waiting after another thread raised.
            state = warps[key] = (threading.Barrier(lanes, timeout=120), [None] * WARP_SIZE)
    barrier, slots = state
    slots[lane] = value
    barrier.wait()
    out = slots[lane ^ lane_mask]
    barrier.wait()
    return out


_shfl_xor = getattr(cuda, "shfl_xor_sync", None) or _simulated_shfl_xor_sync


# --- device functions -----------------------------------------------------------------------

@cuda.jit(device=True)
def _nanmax(a, b):
    # NaN wins, so every lane of a butterfly ends with the same max. (A max that dropped
    # NaN would be fine too: exp(NaN - m) still puts NaN into the row sum.)
    if a != a or a > b:
        return a
    return b


@cuda.jit(device=True)
def _warp_max(v, width):
    """Max over the aligned group of `width` lanes (a power of two <= 32), in every lane."""
    offset = width // 2
    while offset > 0:
        v = _nanmax(v, _shfl_xor(FULL_MASK, v, offset))
        offset //= 2
    return v


@cuda.jit(device=True)
def _warp_sum(v, width):
    """Sum over the aligned group of `width` lanes, in every lane."""
    offset = width // 2
    while offset > 0:
        v += _shfl_xor(FULL_MASK, v, offset)
        offset //= 2
    return v


@cuda.jit(device=True)
def _block_max(v, partials):
    """Max over the block: per warp by shuffles, then over the warps' partials in shared
    memory (one slot a warp). Every thread reads all slots in the same order, so all end
    with the same value and no second barrier is needed to broadcast it."""
    v = _warp_max(v, WARP_SIZE)
    tid = cuda.threadIdx.x
    if tid % WARP_SIZE == 0:
        partials[tid // WARP_SIZE] = v
    cuda.syncthreads()
    v = partials[0]
    for w in range(1, partials.shape[0]):
        v = _nanmax(v, partials[w])
    return v


@cuda.jit(device=True)
def _block_sum(v, partials):
    """Sum over the block, as `_block_max`."""
    v = _warp_sum(v, WARP_SIZE)
    tid = cuda.threadIdx.x
    if tid % WARP_SIZE == 0:
        partials[tid // WARP_SIZE] = v
    cuda.syncthreads()
    v = partials[0]
    for w in range(1, partials.shape[0]):
        v += partials[w]
    return v


# --- kernels: one factory per family, specialized on compile-time constants ----------------
# Each factory returns a lazily compiled kernel (Numba compiles it on the first launch, per
# argument dtype). Its closure variables (log, width, cols_per_thread, acc) are constants to
# Numba, so the register arrays have fixed sizes and the loops over them unroll.

@functools.lru_cache(maxsize=None)
def _warp_forward_kernel(log: bool, width: int, cols_per_thread: int, acc):
    pack_size = min(cols_per_thread, PACK_SIZE)
    num_packs = cols_per_thread // pack_size
    rows_per_block = WARP_PATH_THREADS // width

    @cuda.jit
    def kernel(x, y):
        M, N = x.shape
        lane = cuda.threadIdx.x % width
        row = cuda.blockIdx.x * rows_per_block + cuda.threadIdx.x // width
        # Threads past the last row still take part in every shuffle (the mask names the
        # whole warp); they only load padding and store nothing.
        row_ok = row < M
        buf = cuda.local.array(cols_per_thread, acc)
        m = acc(_NEG_INF)
        for p in range(num_packs):
            for j in range(pack_size):
                col = (p * width + lane) * pack_size + j
                v = acc(_NEG_INF)
                if row_ok and col < N:
                    v = acc(x[row, col])
                buf[p * pack_size + j] = v
                m = _nanmax(m, v)
        m = _warp_max(m, width)
        s = acc(0)
        for i in range(cols_per_thread):
            col = ((i // pack_size) * width + lane) * pack_size + i % pack_size
            if row_ok and col < N:
                e = math.exp(buf[i] - m)
                if not log:
                    buf[i] = e
                s += e
        s = _warp_sum(s, width)
        if not row_ok:
            return
        log_s = math.log(s) if log else acc(0)
        for i in range(cols_per_thread):
            col = ((i // pack_size) * width + lane) * pack_size + i % pack_size
            if col < N:
                if log:
                    y[row, col] = (buf[i] - m) - log_s
                else:
                    y[row, col] = buf[i] / s

    return kernel


@functools.lru_cache(maxsize=None)
def _warp_backward_kernel(log: bool, width: int, cols_per_thread: int, acc):
    pack_size = min(cols_per_thread, PACK_SIZE)
    num_packs = cols_per_thread // pack_size
    rows_per_block = WARP_PATH_THREADS // width

    @cuda.jit
    def kernel(y, dy, dx):
        M, N = y.shape
        lane = cuda.threadIdx.x % width
        row = cuda.blockIdx.x * rows_per_block + cuda.threadIdx.x // width
        row_ok = row < M
        y_buf = cuda.local.array(cols_per_thread, acc)
        dy_buf = cuda.local.array(cols_per_thread, acc)
        # softmax: s = sum(dy * y); log_softmax: s = sum(dy).
        s = acc(0)
        for p in range(num_packs):
            for j in range(pack_size):
                col = (p * width + lane) * pack_size + j
                yv = acc(0)
                dyv = acc(0)
                if row_ok and col < N:
                    yv = acc(y[row, col])
                    dyv = acc(dy[row, col])
                y_buf[p * pack_size + j] = yv
                dy_buf[p * pack_size + j] = dyv
                s += dyv if log else dyv * yv
        s = _warp_sum(s, width)
        if not row_ok:
            return
        for i in range(cols_per_thread):
            col = ((i // pack_size) * width + lane) * pack_size + i % pack_size
            if col < N:
                if log:
                    dx[row, col] = dy_buf[i] - math.exp(y_buf[i]) * s
                else:
                    dx[row, col] = y_buf[i] * (dy_buf[i] - s)

    return kernel


@functools.lru_cache(maxsize=None)
def _block_forward_kernel(log: bool, acc):
    threads_per_block = BLOCK_PATH_THREADS
    num_warps = threads_per_block // WARP_SIZE

    @cuda.jit
    def kernel(x, y):
        N = x.shape[1]
        row = cuda.blockIdx.x
        tid = cuda.threadIdx.x
        # Two separate slots arrays: a thread may write its sum partial while a slower warp
        # still reads the max partials.
        max_partials = cuda.shared.array(num_warps, acc)
        sum_partials = cuda.shared.array(num_warps, acc)
        m = acc(_NEG_INF)
        for col in range(tid, N, threads_per_block):
            m = _nanmax(m, acc(x[row, col]))
        m = _block_max(m, max_partials)
        s = acc(0)
        for col in range(tid, N, threads_per_block):
            s += math.exp(acc(x[row, col]) - m)
        s = _block_sum(s, sum_partials)
        log_s = math.log(s) if log else acc(0)
        for col in range(tid, N, threads_per_block):
            z = acc(x[row, col]) - m
            if log:
                y[row, col] = z - log_s
            else:
                y[row, col] = math.exp(z) / s

    return kernel


@functools.lru_cache(maxsize=None)
def _block_backward_kernel(log: bool, acc):
    threads_per_block = BLOCK_PATH_THREADS
    num_warps = threads_per_block // WARP_SIZE

    @cuda.jit
    def kernel(y, dy, dx):
        N = y.shape[1]
        row = cuda.blockIdx.x
        tid = cuda.threadIdx.x
        partials = cuda.shared.array(num_warps, acc)
        s = acc(0)
        for col in range(tid, N, threads_per_block):
            if log:
                s += acc(dy[row, col])
            else:
                s += acc(dy[row, col]) * acc(y[row, col])
        s = _block_sum(s, partials)
        for col in range(tid, N, threads_per_block):
            yv = acc(y[row, col])
            dyv = acc(dy[row, col])
            if log:
                dx[row, col] = dyv - math.exp(yv) * s
            else:
                dx[row, col] = yv * (dyv - s)

    return kernel


# --- launch ------------------------------------------------------------------------------------

def _choose_path(N: int) -> str:
    """The warp path while a row fits in one warp's registers (N <= 1024: at most 32
    values a lane), the block path beyond, where a row is streamed, never held."""
    return "warp" if N <= WARP_MAX_COLS else "block"


def _warp_config(N: int) -> tuple[int, int]:
    """(width, cols_per_thread) for a row of N <= WARP_MAX_COLS values.

    Rows of at most 32 values: one value a thread, on the smallest power-of-two group that
    covers the row, so a warp serves 32 // width rows instead of idling most lanes.
    Longer rows: a full warp, with the fewest values a thread from WARP_COLS_PER_THREAD.
    """
    if N <= WARP_SIZE:
        width = 1
        while width < N:
            width *= 2
        return width, 1
    for cols_per_thread in WARP_COLS_PER_THREAD:
        if WARP_SIZE * cols_per_thread >= N:
            return WARP_SIZE, cols_per_thread
    raise ValueError(f"the warp path holds rows of at most {WARP_MAX_COLS} values; got N = {N}")


def _resolve_path(N: int, path: str | None) -> str:
    if path is None:
        return _choose_path(N)
    if path not in ("warp", "block"):
        raise ValueError(f"path must be None, 'warp' or 'block'; got {path!r}")
    if path == "warp" and N > WARP_MAX_COLS:
        raise ValueError(f"the warp path holds rows of at most {WARP_MAX_COLS} values; got N = {N}")
    return path


try:  # numba-cuda's own warning class; older layouts kept it in numba.core
    from numba.cuda.core.errors import NumbaPerformanceWarning as _PerformanceWarning
except ImportError:  # pragma: no cover
    from numba.core.errors import NumbaPerformanceWarning as _PerformanceWarning


def _launch(kernel, grid: int, threads: int, *args) -> None:
    # Numba warns about grids too small to fill the GPU; a reference launched on a few rows
    # is expected to be small.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", _PerformanceWarning)
        kernel[grid, threads](*args)


def _forward(x2d, y2d, log: bool, path: str) -> None:
    M, N = x2d.shape
    acc = _ACC_DTYPE[np.dtype(x2d.dtype)]
    if path == "warp":
        width, cols_per_thread = _warp_config(N)
        rows_per_block = WARP_PATH_THREADS // width
        kernel = _warp_forward_kernel(log, width, cols_per_thread, acc)
        _launch(kernel, -(-M // rows_per_block), WARP_PATH_THREADS, x2d, y2d)
    else:
        _launch(_block_forward_kernel(log, acc), M, BLOCK_PATH_THREADS, x2d, y2d)


def _backward(y2d, dy2d, dx2d, log: bool, path: str) -> None:
    M, N = y2d.shape
    acc = _ACC_DTYPE[np.dtype(y2d.dtype)]
    if path == "warp":
        width, cols_per_thread = _warp_config(N)
        rows_per_block = WARP_PATH_THREADS // width
        kernel = _warp_backward_kernel(log, width, cols_per_thread, acc)
        _launch(kernel, -(-M // rows_per_block), WARP_PATH_THREADS, y2d, dy2d, dx2d)
    else:
        _launch(_block_backward_kernel(log, acc), M, BLOCK_PATH_THREADS, y2d, dy2d, dx2d)


# --- arguments -----------------------------------------------------------------------------

def _is_device_array(a) -> bool:
    # Numba's own device arrays (also the simulator's) carry __cuda_ndarray__; torch, CuPy
    # and others expose __cuda_array_interface__.
    return bool(getattr(a, "__cuda_ndarray__", False)) or hasattr(a, "__cuda_array_interface__")


def _check_dtype(dtype, name: str) -> None:
    if np.dtype(dtype) not in _ACC_DTYPE:
        raise TypeError(f"{name} has dtype {dtype}; the Numba reference supports float16, "
                        "float32 and float64")


def _as_device(a, name: str):
    """(a C-contiguous device array viewing or holding `a`, whether `a` was on the host)."""
    # torch refuses __cuda_array_interface__ for bfloat16, so name the dtype first.
    if "bfloat16" in str(getattr(a, "dtype", "")):
        raise TypeError(f"{name} has dtype bfloat16, which Numba does not support; cast it to "
                        "float32 first")
    if isinstance(a, np.ndarray):
        _check_dtype(a.dtype, name)
        if a.ndim == 0:
            raise ValueError(f"{name} must have at least one dimension (softmax runs over the "
                             "last axis); got a 0-d array")
        if a.size == 0:  # nothing to compute: the caller returns an empty result
            return a, True
        # A copy goes to the device either way; the caller's array is never written.
        return cuda.to_device(np.ascontiguousarray(a)), True
    if not _is_device_array(a):
        raise TypeError(f"{name} must be a NumPy array or a CUDA array (an object with "
                        f"__cuda_array_interface__); got {type(a).__name__}")
    d = a if getattr(a, "__cuda_ndarray__", False) else cuda.as_cuda_array(a)
    _check_dtype(d.dtype, name)
    if d.ndim == 0:
        raise ValueError(f"{name} must have at least one dimension (softmax runs over the "
                         "last axis); got a 0-d array")
    if d.size and not d.is_c_contiguous():
        raise ValueError(f"{name} is a non-contiguous device array (shape {tuple(d.shape)}, "
                         f"strides {tuple(d.strides)}); pass a contiguous one")
    return d, False


def _rows(d):
    """The (M, N) view of a C-contiguous array: leading dimensions flattened into rows."""
    shape = tuple(d.shape)
    N = shape[-1]
    M = int(np.prod(shape[:-1], dtype=np.int64))
    return d.reshape(M, N), M, N


def _result(out_dev, shape, on_host):
    if on_host:
        return out_dev.copy_to_host().reshape(shape)
    return out_dev.reshape(shape)


def _empty(shape, dtype, on_host):
    return np.empty(shape, dtype) if on_host else cuda.device_array(shape, dtype)


def _forward_api(x, log: bool, path: str | None):
    xd, on_host = _as_device(x, "x")
    shape = tuple(xd.shape)
    if xd.size == 0:
        return _empty(shape, xd.dtype, on_host)
    x2d, M, N = _rows(xd)
    y2d = cuda.device_array((M, N), xd.dtype)
    _forward(x2d, y2d, log, _resolve_path(N, path))
    return _result(y2d, shape, on_host)


def _backward_api(y, dy, log: bool, path: str | None):
    yd, y_host = _as_device(y, "y")
    dyd, dy_host = _as_device(dy, "dy")
    y_shape, dy_shape = tuple(yd.shape), tuple(dyd.shape)
    if y_shape != dy_shape:
        raise ValueError(f"y and dy must have the same shape; got y {y_shape} and dy {dy_shape}")
    if np.dtype(yd.dtype) != np.dtype(dyd.dtype):
        raise TypeError(f"y and dy must have the same dtype; got y {yd.dtype} and dy {dyd.dtype}")
    on_host = y_host and dy_host  # a device array in, a device array out
    if yd.size == 0:
        return _empty(y_shape, yd.dtype, on_host)
    y2d, M, N = _rows(yd)
    dy2d, _, _ = _rows(dyd)
    dx2d = cuda.device_array((M, N), yd.dtype)
    _backward(y2d, dy2d, dx2d, log, _resolve_path(N, path))
    return _result(dx2d, y_shape, on_host)


# --- public API ----------------------------------------------------------------------------

_ARGS_DOC = """
    Input: a NumPy array (copied to the GPU, the result copied back: returns a NumPy array)
    or a CUDA array exposing __cuda_array_interface__ (torch CUDA tensor, CuPy array, Numba
    device array: used in place, no host round trip; returns a Numba device array, which
    itself exposes __cuda_array_interface__, e.g. torch.as_tensor(out, device="cuda")).
    A non-contiguous NumPy array is copied contiguous first; the caller's array is never
    modified. Empty inputs (M == 0 rows or N == 0) return an empty result without a launch.

    path: "warp" or "block" forces a kernel family (tests); None picks by N (warp for
    N <= 1024, block beyond; see `_choose_path`).

    Algorithm: OneFlow's CUDA softmax (warp-per-row kernels holding the row in registers
    for short rows, block-per-row kernels streaming it for long rows), as described in the
    study note shared/seeds/004_76fe1dd108fb736d.txt.
"""


def softmax(x, *, path: str | None = None):
    """softmax over the last axis: y = exp(x - max) / sum(exp(x - max)).

    x: shape (..., N), rank >= 1, dtype float16, float32 or float64; leading dimensions
    are flattened into M rows. Returns y with x's shape and dtype. Accumulates in float32
    (float64 for float64 input). A row with a NaN or +inf, or of only -inf, gives NaN;
    N == 1 gives 1.0.

    Raises TypeError if x is not floating point (bfloat16 included: cast to float32 first)
    or not an array; ValueError if x is 0-d, or a non-contiguous device array, or path is
    invalid.
    """
    return _forward_api(x, False, path)


def log_softmax(x, *, path: str | None = None):
    """log_softmax over the last axis: y = (x - max) - log(sum(exp(x - max))).

    x: shape (..., N), rank >= 1, dtype float16, float32 or float64; leading dimensions
    are flattened into M rows. Returns y with x's shape and dtype. Accumulates in float32
    (float64 for float64 input). A row with a NaN or +inf, or of only -inf, gives NaN;
    N == 1 gives 0.0.

    Raises TypeError if x is not floating point (bfloat16 included: cast to float32 first)
    or not an array; ValueError if x is 0-d, or a non-contiguous device array, or path is
    invalid.
    """
    return _forward_api(x, True, path)


def softmax_backward(y, dy, *, path: str | None = None):
    """Gradient of softmax: dx = y * (dy - sum(dy * y)), the sum over the last axis.

    y: the softmax output, dy: the gradient of the loss with respect to y; the same shape
    (..., N), rank >= 1, and the same dtype, float16, float32 or float64. Returns dx with
    that shape and dtype, accumulated in float32 (float64 for float64). The result is a
    NumPy array when both inputs are NumPy arrays, a device array otherwise.

    Raises TypeError if y or dy is not floating point (bfloat16: cast to float32 first),
    not an array, or their dtypes differ; ValueError if their shapes differ, either is
    0-d or a non-contiguous device array, or path is invalid.
    """
    return _backward_api(y, dy, False, path)


def log_softmax_backward(y, dy, *, path: str | None = None):
    """Gradient of log_softmax: dx = dy - exp(y) * sum(dy), the sum over the last axis.

    y: the log_softmax output, dy: the gradient of the loss with respect to y; the same
    shape (..., N), rank >= 1, and the same dtype, float16, float32 or float64. Returns dx
    with that shape and dtype, accumulated in float32 (float64 for float64). The result is
    a NumPy array when both inputs are NumPy arrays, a device array otherwise.

    Raises TypeError if y or dy is not floating point (bfloat16: cast to float32 first),
    not an array, or their dtypes differ; ValueError if their shapes differ, either is
    0-d or a non-contiguous device array, or path is invalid.
    """
    return _backward_api(y, dy, True, path)


for _f in (softmax, log_softmax, softmax_backward, log_softmax_backward):
    if _f.__doc__:  # None under python -OO
        _f.__doc__ += _ARGS_DOC
del _f
