"""Triton kernels for jax.nn's `where=`: softmax and log_softmax over the elements a boolean mask keeps.

The same 2-D view as `kernels/softmax.py` (M rows by N columns, rows `stride_*m` apart,
unit-stride columns), rows held in registers as its ``*_rows`` family does (BLOCK_M rows of
BLOCK_N >= N lanes a program), plus the mask `w`: a contiguous bool array of Mw rows, each of N
values (W_COLS) or of one value for the whole row (not W_COLS: a mask broadcast along the
reduced axes). Row m of x reads mask row `(m // row_div) % row_mod`, or `wrow[m]` (ROW_TABLE):
that is how a mask broadcast over leading axes (a causal (T, T) mask over (B, H, T, T)) is read
where it lies, never broadcast in memory. `multisoftmax.jax` works out the three.

Semantics are jax.nn.softmax's with `where` (jax/_src/nn/functions.py): masked-out values take no
part in the max or the sum and come out 0 (log_softmax: -inf); a fully masked row comes out
all 0 (-inf); kept values follow the unmasked rules (a kept NaN or +inf makes the row's kept
values NaN). SKIP: masked-out values of x (of y and dy in the backward) are not read at all, so
a causal mask moves about half the input bytes, but each value is loaded alone (a per-value
predicate); else rows are read whole in 16-byte vectors and the mask applied after. The backward
of both ops:
dx = where(w, y * (dy - sum(w * y * dy)), 0), dx = where(w, dy - exp(y) * sum(w * dy), 0).

Arithmetic as `kernels/softmax.py`: float32 for 16-bit and float32 inputs, float64 for float64
(ACC_FP64), the result stored in the output's dtype. ALIGN: as there, a power of two dividing N
and the strides, so that loads vectorize under jax_triton too.
"""

import triton
import triton.language as tl

from .softmax import _aligned, _bwd_apply, _bwd_terms


@triton.jit
def _kept(w_ptr, wrow_ptr, rows, cols, M, N, row_div, row_mod, ROW_TABLE: tl.constexpr, W_COLS: tl.constexpr):
    """(in_bounds, keep): the (BLOCK_M, BLOCK_N) lanes of `rows` x `cols` inside the M x N view,
    and those of them the mask keeps."""
    row_ok = rows < M
    in_bounds = row_ok[:, None] & (cols < N)[None, :]
    if ROW_TABLE:
        wrow = tl.load(wrow_ptr + rows, mask=row_ok, other=0).to(tl.int64)
    else:
        wrow = (rows // row_div) % row_mod
    if W_COLS:
        w = tl.load(w_ptr + wrow[:, None] * N + cols[None, :], mask=in_bounds, other=0)
    else:  # one value a row
        w = tl.load(w_ptr + wrow, mask=row_ok, other=0)[:, None]
    return in_bounds, in_bounds & (w != 0)


@triton.jit
def softmax_fwd_rows_where(
    x_ptr, w_ptr, wrow_ptr, M, N, stride_xm, stride_ym, row_div, row_mod, y_ptr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, LOG: tl.constexpr, ALIGN: tl.constexpr,
    ACC_FP64: tl.constexpr, ROW_TABLE: tl.constexpr, W_COLS: tl.constexpr, SKIP: tl.constexpr,
):
    """y = softmax(x) over the kept values of each row (log_softmax if LOG), 0 (-inf) elsewhere."""
    N, stride_xm, stride_ym = _aligned(N, ALIGN), _aligned(stride_xm, ALIGN), _aligned(stride_ym, ALIGN)
    acc_ty = tl.float64 if ACC_FP64 else tl.float32
    rows = tl.program_id(0).to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    in_bounds, keep = _kept(w_ptr, wrow_ptr, rows, cols, M, N, row_div, row_mod, ROW_TABLE, W_COLS)
    x = tl.load(x_ptr + rows[:, None] * stride_xm + cols[None, :], mask=keep if SKIP else in_bounds,
                other=-float("inf")).to(acc_ty)
    x = tl.where(keep, x, -float("inf"))
    z = x - tl.max(x, axis=1)[:, None]  # a fully masked row: NaN here, masked below
    e = tl.exp(z)
    s = tl.sum(e, axis=1)[:, None]
    if LOG:
        y = tl.where(keep, z - tl.log(s), -float("inf"))
    else:
        y = tl.where(keep, e * (1.0 / s), 0.0)
    tl.store(y_ptr + rows[:, None] * stride_ym + cols[None, :], y.to(y_ptr.dtype.element_ty), mask=in_bounds)


@triton.jit
def softmax_bwd_rows_where(
    y_ptr, dy_ptr, w_ptr, wrow_ptr, M, N, stride_ym, stride_dym, stride_dxm, row_div, row_mod, dx_ptr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, LOG: tl.constexpr, ALIGN: tl.constexpr,
    ACC_FP64: tl.constexpr, ROW_TABLE: tl.constexpr, W_COLS: tl.constexpr, SKIP: tl.constexpr,
):
    """dx from y = softmax_fwd_rows_where's output and dy: the row sums over kept values, dx 0
    at masked-out ones (whatever dy holds there)."""
    N, stride_ym, stride_dym, stride_dxm = (
        _aligned(N, ALIGN), _aligned(stride_ym, ALIGN), _aligned(stride_dym, ALIGN), _aligned(stride_dxm, ALIGN))
    acc_ty = tl.float64 if ACC_FP64 else tl.float32
    rows = tl.program_id(0).to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    in_bounds, keep = _kept(w_ptr, wrow_ptr, rows, cols, M, N, row_div, row_mod, ROW_TABLE, W_COLS)
    other_y = -float("inf") if LOG else 0.0  # lanes not read: exp(y) = 0 or y = 0, dy = 0
    read = keep if SKIP else in_bounds
    y = tl.load(y_ptr + rows[:, None] * stride_ym + cols[None, :], mask=read, other=other_y).to(acc_ty)
    dy = tl.load(dy_ptr + rows[:, None] * stride_dym + cols[None, :], mask=read, other=0.0).to(acc_ty)
    y, dy = tl.where(keep, y, other_y), tl.where(keep, dy, 0.0)
    dot = tl.sum(_bwd_terms(y, dy, LOG), axis=1)[:, None]
    dx = tl.where(keep, _bwd_apply(y, dy, dot, LOG), 0.0)
    tl.store(dx_ptr + rows[:, None] * stride_dxm + cols[None, :], dx.to(dx_ptr.dtype.element_ty), mask=in_bounds)
