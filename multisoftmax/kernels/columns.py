"""Triton kernels for softmax and log_softmax over a middle axis: the "columns" family.

`softmax.py`'s kernels reduce along a row whose values are contiguous. A softmax over any
other axis (torch.softmax(x, dim=1) of an (N, C, H, W) tensor, jax.nn.softmax(x, axis=0))
reduces along a strided axis. Before this family the adapters moved that axis last and
copied the tensor into rows: a copy (read and write) before the kernel's own read and write,
and a result in the moved layout. These kernels read x where it lies instead.

The view: x as (B, N, T), B the product of the axes before the reduced one, N its length,
T the product of the axes after it, whose values are contiguous (unit stride); the reduction
runs over N, at stride `stride_xn`, for each of the B * T columns (b, t). A program takes BLOCK_T
neighbouring columns of one b, so each of its loads reads BLOCK_T contiguous values of each of
BLOCK_N reduced positions: coalesced as in a row, the reduction runs across the tile's rows
(axis 0) instead of along them.

* ONE_TILE (N <= BLOCK_N): the program holds its (BLOCK_N, BLOCK_T) tile in registers: one
  read, one write, as `softmax_fwd_rows`.
* otherwise a loop over N in BLOCK_N steps: a running max and a rescaled running sum per
  column (Milakov & Gimelshein 2018, "Online normalizer calculation for softmax", as
  `softmax_fwd_online`), or with PER_VALUE (16-bit types: dispatch.COLS16_PER_VALUE) per value of
  the tile, reduced over the tile's rows once after the loop; then a second pass, backwards, that
  normalizes (the backward: a first pass accumulating the dot product per value, reduced once,
  a second writing dx). x is read twice.

Argument order as in softmax.py (jax_triton.triton_call's): input pointers, runtime scalars,
output pointers, constexprs. Arithmetic in float32 (float64 for float64: ACC_FP64); special
values as the row kernels (a NaN or +inf in a column makes it NaN, an all -inf column is NaN).
Offsets along B and N are 64-bit. `multisoftmax.dispatch.plan_columns_forward` / `_backward`
pick BLOCK_N, BLOCK_T and the warps (4 a program for most tiles: on the H100, 8 lost to 4 on
short columns by up to 2.5x; 8 where a thread would hold more than 64 values, and in the looped
backward, where they measured faster; 1 or 2 for 16-bit tiles of BLOCK_N <= 128, whose reductions
across warps went through conflicting shared-memory accesses and halved the forward's bandwidth:
dispatch.py's COLS_* and COLS16_* notes).
"""

import triton
import triton.language as tl

from .softmax import _aligned, _bwd_apply, _bwd_terms, _normalize, _online_update


@triton.jit
def _columns(B, T, BLOCK_T: tl.constexpr):
    """This program's b (int64) and its columns t, a (1, BLOCK_T) block, with their mask."""
    n_blocks = tl.cdiv(T, BLOCK_T)
    pid = tl.program_id(0)
    b = (pid // n_blocks).to(tl.int64)
    t = (pid % n_blocks) * BLOCK_T + tl.arange(0, BLOCK_T)[None, :]
    return b, t, t < T


@triton.jit
def softmax_fwd_cols(
    x_ptr, B, N, T, stride_xb, stride_xn, stride_yb, stride_yn, y_ptr,
    BLOCK_N: tl.constexpr, BLOCK_T: tl.constexpr, ONE_TILE: tl.constexpr, LOG: tl.constexpr,
    ALIGN: tl.constexpr, ACC_FP64: tl.constexpr, PER_VALUE: tl.constexpr,
):
    """y = softmax(x) (log_softmax if LOG) over axis 1 of (B, N, T) views of x and y, their
    last axis contiguous; grid (B * cdiv(T, BLOCK_T),). ALIGN divides T and the strides.
    PER_VALUE (looped only): the first pass keeps its running max and sum per value."""
    T, stride_xb, stride_xn = _aligned(T, ALIGN), _aligned(stride_xb, ALIGN), _aligned(stride_xn, ALIGN)
    stride_yb, stride_yn = _aligned(stride_yb, ALIGN), _aligned(stride_yn, ALIGN)
    acc_ty = tl.float64 if ACC_FP64 else tl.float32
    b, t, t_ok = _columns(B, T, BLOCK_T)
    n = tl.arange(0, BLOCK_N).to(tl.int64)[:, None]
    x_cols = x_ptr + b * stride_xb + t
    y_cols = y_ptr + b * stride_yb + t
    if ONE_TILE:
        mask = (n < N) & t_ok
        x = tl.load(x_cols + n * stride_xn, mask=mask, other=-float("inf")).to(acc_ty)
        m = tl.max(x, axis=0)[None, :]
        z = x - m
        e = tl.exp(z)
        s = tl.sum(e, axis=0)[None, :]
        if LOG:
            y = z - tl.log(s)
        else:
            y = e * (1.0 / s)
        tl.store(y_cols + n * stride_yn, y.to(y_ptr.dtype.element_ty), mask=mask)
    else:
        if PER_VALUE:
            # The running max and sum kept per value of the tile, not per column: no reduction
            # across threads in the loop (one exp more a value), one after it.
            m_v = tl.full((BLOCK_N, BLOCK_T), -float("inf"), acc_ty)
            s_v = tl.zeros((BLOCK_N, BLOCK_T), acc_ty)
            for start in range(0, N, BLOCK_N):
                mask = (start + n < N) & t_ok
                x = tl.load(x_cols + (start + n) * stride_xn, mask=mask, other=-float("inf")).to(acc_ty)
                m_new = tl.maximum(m_v, x)
                m_safe = tl.where(m_new == -float("inf"), 0.0, m_new)  # as _online_update
                s_v = s_v * tl.exp(m_v - m_safe) + tl.exp(x - m_safe)
                m_v = m_new
            m = tl.max(m_v, axis=0)
            # A value never above -inf holds s_v = 0; an all -inf column gets m = -inf and s = NaN.
            s = tl.sum(s_v * tl.exp(m_v - m[None, :]), axis=0)
        else:
            m = tl.full((BLOCK_T,), -float("inf"), acc_ty)
            s = tl.zeros((BLOCK_T,), acc_ty)
            for start in range(0, N, BLOCK_N):
                mask = (start + n < N) & t_ok
                x = tl.load(x_cols + (start + n) * stride_xn, mask=mask, other=-float("inf")).to(acc_ty)
                m, s = _online_update(m, s, x)
        # Second pass backwards: the steps read last are the likeliest still in L2.
        n_steps = tl.cdiv(N, BLOCK_N)
        for i in range(0, n_steps):
            start = (n_steps - 1 - i) * BLOCK_N
            mask = (start + n < N) & t_ok
            x = tl.load(x_cols + (start + n) * stride_xn, mask=mask, other=-float("inf")).to(acc_ty)
            y = _normalize(x, m[None, :], s[None, :], LOG)
            tl.store(y_cols + (start + n) * stride_yn, y.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def softmax_bwd_cols(
    y_ptr, dy_ptr, B, N, T, stride_yb, stride_yn, stride_dyb, stride_dyn, stride_dxb, stride_dxn, dx_ptr,
    BLOCK_N: tl.constexpr, BLOCK_T: tl.constexpr, ONE_TILE: tl.constexpr, LOG: tl.constexpr,
    ALIGN: tl.constexpr, ACC_FP64: tl.constexpr,
):
    """dx from y = softmax(x) (log_softmax if LOG) and dy over axis 1 of (B, N, T) views, last
    axis contiguous: softmax dx = y * (dy - sum_n(dy * y)), log_softmax dx = dy - exp(y) * sum_n(dy)."""
    T, stride_yb, stride_yn = _aligned(T, ALIGN), _aligned(stride_yb, ALIGN), _aligned(stride_yn, ALIGN)
    stride_dyb, stride_dyn = _aligned(stride_dyb, ALIGN), _aligned(stride_dyn, ALIGN)
    stride_dxb, stride_dxn = _aligned(stride_dxb, ALIGN), _aligned(stride_dxn, ALIGN)
    acc_ty = tl.float64 if ACC_FP64 else tl.float32
    other_y = -float("inf") if LOG else 0.0  # masked lanes: exp(y) = 0 or y = 0; dy = 0
    b, t, t_ok = _columns(B, T, BLOCK_T)
    n = tl.arange(0, BLOCK_N).to(tl.int64)[:, None]
    y_cols, dy_cols, dx_cols = y_ptr + b * stride_yb + t, dy_ptr + b * stride_dyb + t, dx_ptr + b * stride_dxb + t
    if ONE_TILE:
        mask = (n < N) & t_ok
        y = tl.load(y_cols + n * stride_yn, mask=mask, other=other_y).to(acc_ty)
        dy = tl.load(dy_cols + n * stride_dyn, mask=mask, other=0.0).to(acc_ty)
        dot = tl.sum(_bwd_terms(y, dy, LOG), axis=0)[None, :]
        tl.store(dx_cols + n * stride_dxn, _bwd_apply(y, dy, dot, LOG).to(dx_ptr.dtype.element_ty), mask=mask)
    else:
        acc = tl.zeros((BLOCK_N, BLOCK_T), acc_ty)  # element-wise partial sums, reduced once
        for start in range(0, N, BLOCK_N):
            mask = (start + n < N) & t_ok
            y = tl.load(y_cols + (start + n) * stride_yn, mask=mask, other=other_y).to(acc_ty)
            dy = tl.load(dy_cols + (start + n) * stride_dyn, mask=mask, other=0.0).to(acc_ty)
            acc += _bwd_terms(y, dy, LOG)
        dot = tl.sum(acc, axis=0)[None, :]
        n_steps = tl.cdiv(N, BLOCK_N)
        for i in range(0, n_steps):  # backwards, as in the forward
            start = (n_steps - 1 - i) * BLOCK_N
            mask = (start + n < N) & t_ok
            y = tl.load(y_cols + (start + n) * stride_yn, mask=mask, other=other_y).to(acc_ty)
            dy = tl.load(dy_cols + (start + n) * stride_dyn, mask=mask, other=0.0).to(acc_ty)
            tl.store(dx_cols + (start + n) * stride_dxn, _bwd_apply(y, dy, dot, LOG).to(dx_ptr.dtype.element_ty),
                     mask=mask)
