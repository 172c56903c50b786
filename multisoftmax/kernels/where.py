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
values NaN). The backward of both ops:
dx = where(w, y * (dy - sum(w * y * dy)), 0), dx = where(w, dy - exp(y) * sum(w * dy), 0).

A program holds its rows as (BLOCK_M, BLOCK_N // VEC, VEC) tiles, VEC values a 16-byte vector, and
reads x (y and dy in the backward) by whole vectors, but only the vectors holding a kept value:
the rows of a causal mask move about half the input bytes, a dense mask's all of them, both in
vector loads (a mask that varies inside a vector would load each value alone, bench/results/h100/
probe_where_skip*.log). The masked-out values of a vector read are masked after.

Arithmetic as `kernels/softmax.py`: float32 for 16-bit and float32 inputs, float64 for float64
(ACC_FP64), the result stored in the output's dtype. ALIGN: as there, a power of two dividing N
and the strides, so that loads vectorize under jax_triton too.
"""

import triton
import triton.language as tl

from .softmax import _aligned, _bwd_apply, _bwd_terms


@triton.jit
def _tile(w_ptr, wrow_ptr, M, N, row_div, row_mod, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
          VEC: tl.constexpr, ROW_TABLE: tl.constexpr, W_COLS: tl.constexpr):
    """This program's (BLOCK_M, BLOCK_N // VEC, VEC) tile of the M x N view: (rows, cols, in_bounds,
    keep, read): its rows (BLOCK_M, 1, 1) and columns (1, BLOCK_N // VEC, VEC), the lanes inside
    the view, those of them the mask keeps, and those of the vectors that hold a kept value."""
    rows = tl.program_id(0).to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = (tl.arange(0, BLOCK_N // VEC)[:, None] * VEC + tl.arange(0, VEC)[None, :])[None, :, :]
    row_ok = rows < M
    in_bounds = row_ok[:, None, None] & (cols < N)
    if ROW_TABLE:
        wrow = tl.load(wrow_ptr + rows, mask=row_ok, other=0).to(tl.int64)
    else:
        wrow = (rows // row_div) % row_mod
    if W_COLS:
        w = tl.load(w_ptr + wrow[:, None, None] * N + cols, mask=in_bounds, other=0)
    else:  # one value a row
        w = tl.load(w_ptr + wrow, mask=row_ok, other=0)[:, None, None]
    keep = in_bounds & (w != 0)
    read = in_bounds & (tl.max(keep.to(tl.int32), axis=2)[:, :, None] != 0)
    return rows[:, None, None], cols, in_bounds, keep, read


@triton.jit
def _row_max(v):
    return tl.max(tl.max(v, axis=2), axis=1)[:, None, None]


@triton.jit
def _row_sum(v):
    return tl.sum(tl.sum(v, axis=2), axis=1)[:, None, None]


@triton.jit
def softmax_fwd_rows_where(
    x_ptr, w_ptr, wrow_ptr, M, N, stride_xm, stride_ym, row_div, row_mod, y_ptr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, VEC: tl.constexpr, LOG: tl.constexpr, ALIGN: tl.constexpr,
    ACC_FP64: tl.constexpr, ROW_TABLE: tl.constexpr, W_COLS: tl.constexpr,
):
    """y = softmax(x) over the kept values of each row (log_softmax if LOG), 0 (-inf) elsewhere."""
    N, stride_xm, stride_ym = _aligned(N, ALIGN), _aligned(stride_xm, ALIGN), _aligned(stride_ym, ALIGN)
    acc_ty = tl.float64 if ACC_FP64 else tl.float32
    rows, cols, in_bounds, keep, read = _tile(w_ptr, wrow_ptr, M, N, row_div, row_mod, BLOCK_M, BLOCK_N, VEC,
                                              ROW_TABLE, W_COLS)
    x = tl.load(x_ptr + rows * stride_xm + cols, mask=read, other=-float("inf"))
    x = tl.where(keep, x.to(acc_ty), -float("inf"))
    z = x - _row_max(x)  # a fully masked row: NaN here, masked below
    e = tl.exp(z)
    s = _row_sum(e)
    if LOG:
        y = tl.where(keep, z - tl.log(s), -float("inf"))
    else:
        y = tl.where(keep, e * (1.0 / s), 0.0)
    tl.store(y_ptr + rows * stride_ym + cols, y.to(y_ptr.dtype.element_ty), mask=in_bounds)


@triton.jit
def softmax_bwd_rows_where(
    y_ptr, dy_ptr, w_ptr, wrow_ptr, M, N, stride_ym, stride_dym, stride_dxm, row_div, row_mod, dx_ptr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, VEC: tl.constexpr, LOG: tl.constexpr, ALIGN: tl.constexpr,
    ACC_FP64: tl.constexpr, ROW_TABLE: tl.constexpr, W_COLS: tl.constexpr,
):
    """dx from y = softmax_fwd_rows_where's output and dy: the row sums over kept values, dx 0
    at masked-out ones (whatever dy holds there)."""
    N, stride_ym, stride_dym, stride_dxm = (
        _aligned(N, ALIGN), _aligned(stride_ym, ALIGN), _aligned(stride_dym, ALIGN), _aligned(stride_dxm, ALIGN))
    acc_ty = tl.float64 if ACC_FP64 else tl.float32
    rows, cols, in_bounds, keep, read = _tile(w_ptr, wrow_ptr, M, N, row_div, row_mod, BLOCK_M, BLOCK_N, VEC,
                                              ROW_TABLE, W_COLS)
    other_y = -float("inf") if LOG else 0.0  # lanes not kept: exp(y) = 0 or y = 0, dy = 0
    y = tl.load(y_ptr + rows * stride_ym + cols, mask=read, other=other_y)
    dy = tl.load(dy_ptr + rows * stride_dym + cols, mask=read, other=0.0)
    y, dy = tl.where(keep, y.to(acc_ty), other_y), tl.where(keep, dy.to(acc_ty), 0.0)
    dot = _row_sum(_bwd_terms(y, dy, LOG))
    dx = tl.where(keep, _bwd_apply(y, dy, dot, LOG), 0.0)
    tl.store(dx_ptr + rows * stride_dxm + cols, dx.to(dx_ptr.dtype.element_ty), mask=in_bounds)
