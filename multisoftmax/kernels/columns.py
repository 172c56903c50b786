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
  read, one write, as `softmax_fwd_rows`; the forward's TAIL_N holds a column just past a power of
  two as two tiles, BLOCK_N positions then TAIL_N.
* coop (`softmax_fwd_coop_cols`, `softmax_bwd_coop_cols`): longer columns cut into chunks of CHUNK_N
  positions, a program a chunk held in registers, which publishes each column's partials, waits for
  the other chunks of its group of columns and writes: one read, one write, as `softmax_fwd_coop`
  (whose waiting helpers these share).
* split (`softmax_fwd_stats_cols` then `softmax_fwd_norm_cols`; backward `softmax_bwd_dot_cols`
  then `softmax_bwd_apply_cols`): chunks too, in two launches, the first writing the partials, the
  second combining them and writing, in reverse order; x read twice.
* otherwise a loop over N in BLOCK_N steps: a running max and a rescaled running sum per
  column (Milakov & Gimelshein 2018, "Online normalizer calculation for softmax", as
  `softmax_fwd_online`), or with PER_VALUE (16-bit types: dispatch.COLS16_PER_VALUE) per value of
  the tile, reduced over the tile's rows once after the loop (FTZ: its exps by ex2.approx.ftz, about half
  the instructions: dispatch.COLS16_FTZ, as the one tile's); then a second pass, backwards, that
  normalizes (the backward: a first pass accumulating the dot product per value, reduced once,
  a second writing dx). x is read twice. The split plans' kernels walk their chunks the same way.

Argument order as in softmax.py (jax_triton.triton_call's): input pointers, runtime scalars,
output pointers, constexprs. Arithmetic in float32 (float64 for float64: ACC_FP64); special
values as the row kernels (a NaN or +inf in a column makes it NaN, an all -inf column is NaN).
Offsets along B and N are 64-bit. `multisoftmax.dispatch.plan_columns_forward` / `_backward`
pick the plan, BLOCK_N, BLOCK_T and the warps (4 a program for most tiles: on the H100, 8 lost to 4 on
short columns by up to 2.5x; 8 where a thread would hold more than 64 values, and in the looped
backward, where they measured faster; 1 or 2 for 16-bit tiles of BLOCK_N <= 128, whose reductions
across warps went through conflicting shared-memory accesses and halved the forward's bandwidth:
dispatch.py's COLS_*, COLS16_*, COLS_COOP_* and COLS_SPLIT_* notes). ALIGN_N (the split and
cooperative kernels) divides N, the chunk and their count, as ALIGN the rest.
"""

import triton
import triton.language as tl

from .softmax import (_aligned, _bwd_apply, _bwd_terms, _coop_item, _exp, _exp_ftz, _leave_row, _normalize,
                      _online_update, _wait_for_row)


@triton.jit
def _columns(B, T, BLOCK_T: tl.constexpr, REVERSE: tl.constexpr):
    """This program's b (int64) and its columns t, a (1, BLOCK_T) block, with their mask. REVERSE:
    the last group first (the split plans' second kernel, whose first reads are then the first
    kernel's last, the likeliest still in L2)."""
    n_blocks = tl.cdiv(T, BLOCK_T)
    pid = tl.program_id(0)
    if REVERSE:
        pid = B * n_blocks - 1 - pid
    b = (pid // n_blocks).to(tl.int64)
    t = (pid % n_blocks) * BLOCK_T + tl.arange(0, BLOCK_T)[None, :]
    return b, t, t < T


@triton.jit
def _chunk(N, CHUNK, n_chunks, REVERSE: tl.constexpr):
    """The positions [lo, hi) of this program's chunk of N (program_id(1); REVERSE as _columns)."""
    chunk = tl.program_id(1)
    if REVERSE:
        chunk = n_chunks - 1 - chunk
    lo = chunk * CHUNK
    return chunk, lo, tl.minimum(lo + CHUNK, N)


@triton.jit
def _cols_max_sum(x_cols, stride_xn, lo, hi, n, t_ok, BLOCK_N: tl.constexpr, BLOCK_T: tl.constexpr,
                  ACC_FP64: tl.constexpr, PER_VALUE: tl.constexpr, FTZ: tl.constexpr = False):
    """Each column's max and sum of exp(x - max) over positions [lo, hi), BLOCK_N a step: two
    (BLOCK_T,) blocks; a column all -inf there has max -inf and sum 0. Online (Milakov &
    Gimelshein 2018); with PER_VALUE the running max and sum are kept per value of the tile, so
    the loop has no reduction across threads (one exp more a value), and are reduced once after it.
    FTZ (PER_VALUE, float32 arithmetic): the loop's exps by `_exp_ftz`, and the running maxes start at the
    lowest float32, not -inf, so that no -inf - -inf needs a guard (a -inf adds exp(-inf) = 0, a NaN or +inf
    makes the sum NaN as before); ~11 instructions a value, not ~20. A term flushed is below 2 ** -126
    of a sum of at least 1 (its own max's term), so the sums keep their float32 accuracy."""
    acc_ty = tl.float64 if ACC_FP64 else tl.float32
    if PER_VALUE:
        m_v = tl.full((BLOCK_N, BLOCK_T), -3.4028234663852886e38 if FTZ else -float("inf"), acc_ty)
        s_v = tl.zeros((BLOCK_N, BLOCK_T), acc_ty)
        for start in range(lo, hi, BLOCK_N):
            mask = (start + n < hi) & t_ok
            x = tl.load(x_cols + (start + n) * stride_xn, mask=mask, other=-float("inf")).to(acc_ty)
            m_new = tl.maximum(m_v, x)
            if FTZ:
                s_v = s_v * _exp_ftz(m_v - m_new) + _exp_ftz(x - m_new)
            else:
                m_safe = tl.where(m_new == -float("inf"), 0.0, m_new)  # as _online_update
                s_v = s_v * tl.exp(m_v - m_safe) + tl.exp(x - m_safe)
            m_v = m_new
        m = tl.max(m_v, axis=0)
        # A value never above -inf holds s_v = 0 (its term is 0, even where m = -inf).
        m_safe = tl.where(m == -float("inf"), 0.0, m)
        s = tl.sum(s_v * tl.exp(m_v - m_safe[None, :]), axis=0)
        if FTZ:  # a column all -inf: its max back to -inf
            m = tl.where(s == 0.0, -float("inf"), m)
    else:
        m = tl.full((BLOCK_T,), -float("inf"), acc_ty)
        s = tl.zeros((BLOCK_T,), acc_ty)
        for start in range(lo, hi, BLOCK_N):
            mask = (start + n < hi) & t_ok
            x = tl.load(x_cols + (start + n) * stride_xn, mask=mask, other=-float("inf")).to(acc_ty)
            m, s = _online_update(m, s, x)
    return m, s


@triton.jit
def _cols_combine(m_c, s_c):
    """Each column's max and sum from its chunks' partials m_c, s_c ((BLOCK_C, BLOCK_T), a chunk a
    row): the max of the maxes, the same with 0 where every one is -inf, and the sums rescaled to
    the latter (an all -inf chunk has sum 0: its term stays 0), three (BLOCK_T,) blocks (softmax.py's
    `_combine`, for a row)."""
    m = tl.max(m_c, axis=0)
    m_safe = tl.where(m == -float("inf"), 0.0, m)
    return m, m_safe, tl.sum(s_c * tl.exp(m_c - m_safe[None, :]), axis=0)


@triton.jit
def _cols_write_y(x_cols, y_cols, stride_xn, stride_yn, lo, hi, n, t_ok, m, s, BLOCK_N: tl.constexpr,
                  LOG: tl.constexpr, ACC_FP64: tl.constexpr):
    """y over positions [lo, hi) from x and each column's max `m` and sum `s` ((BLOCK_T,) blocks),
    BLOCK_N a step, backwards: the steps read last are the likeliest still in L2."""
    acc_ty = tl.float64 if ACC_FP64 else tl.float32
    n_steps = tl.cdiv(hi - lo, BLOCK_N)
    for i in range(0, n_steps):
        start = lo + (n_steps - 1 - i) * BLOCK_N
        mask = (start + n < hi) & t_ok
        x = tl.load(x_cols + (start + n) * stride_xn, mask=mask, other=-float("inf")).to(acc_ty)
        y = _normalize(x, m[None, :], s[None, :], LOG)
        tl.store(y_cols + (start + n) * stride_yn, y.to(y_cols.dtype.element_ty), mask=mask)


@triton.jit
def _cols_dot(y_cols, dy_cols, stride_yn, stride_dyn, lo, hi, n, t_ok, BLOCK_N: tl.constexpr,
              BLOCK_T: tl.constexpr, LOG: tl.constexpr, ACC_FP64: tl.constexpr):
    """Each column's sum over positions [lo, hi) of the backward's term (dy * y; log_softmax: dy),
    a (BLOCK_T,) block, summed per value of the tile and reduced once after the loop."""
    acc_ty = tl.float64 if ACC_FP64 else tl.float32
    other_y = -float("inf") if LOG else 0.0  # masked lanes: exp(y) = 0 or y = 0; dy = 0
    acc = tl.zeros((BLOCK_N, BLOCK_T), acc_ty)
    for start in range(lo, hi, BLOCK_N):
        mask = (start + n < hi) & t_ok
        y = tl.load(y_cols + (start + n) * stride_yn, mask=mask, other=other_y).to(acc_ty)
        dy = tl.load(dy_cols + (start + n) * stride_dyn, mask=mask, other=0.0).to(acc_ty)
        acc += _bwd_terms(y, dy, LOG)
    return tl.sum(acc, axis=0)


@triton.jit
def _cols_write_dx(y_cols, dy_cols, dx_cols, stride_yn, stride_dyn, stride_dxn, lo, hi, n, t_ok, dot,
                   BLOCK_N: tl.constexpr, LOG: tl.constexpr, ACC_FP64: tl.constexpr):
    """dx over positions [lo, hi) from y, dy and each column's `dot` ((BLOCK_T,)), backwards as
    _cols_write_y."""
    acc_ty = tl.float64 if ACC_FP64 else tl.float32
    other_y = -float("inf") if LOG else 0.0
    n_steps = tl.cdiv(hi - lo, BLOCK_N)
    for i in range(0, n_steps):
        start = lo + (n_steps - 1 - i) * BLOCK_N
        mask = (start + n < hi) & t_ok
        y = tl.load(y_cols + (start + n) * stride_yn, mask=mask, other=other_y).to(acc_ty)
        dy = tl.load(dy_cols + (start + n) * stride_dyn, mask=mask, other=0.0).to(acc_ty)
        dx = _bwd_apply(y, dy, dot[None, :], LOG)
        tl.store(dx_cols + (start + n) * stride_dxn, dx.to(dx_cols.dtype.element_ty), mask=mask)


@triton.jit
def softmax_fwd_cols(
    x_ptr, B, N, T, stride_xb, stride_xn, stride_yb, stride_yn, y_ptr,
    BLOCK_N: tl.constexpr, BLOCK_T: tl.constexpr, ONE_TILE: tl.constexpr, LOG: tl.constexpr,
    ALIGN: tl.constexpr, ACC_FP64: tl.constexpr, PER_VALUE: tl.constexpr, TAIL_N: tl.constexpr = 0,
    FTZ: tl.constexpr = False,
):
    """y = softmax(x) (log_softmax if LOG) over axis 1 of (B, N, T) views of x and y, their
    last axis contiguous; grid (B * cdiv(T, BLOCK_T),). ALIGN divides T and the strides.
    PER_VALUE (looped only): the first pass keeps its running max and sum per value.
    FTZ (16-bit y; dispatch.COLS16_FTZ): one tile, its exps by `_exp_ftz` (a y below 2 ** -126, a bfloat16
    subnormal, becomes 0: float16 has none so small; as softmax.py's 16-bit forwards); looped, `_cols_max_sum`'s.
    TAIL_N (one tile only): the column in two tiles, BLOCK_N positions then TAIL_N (N <= BLOCK_N + TAIL_N), so that a
    column just past a power of two does not take twice the registers (dispatch.COLS16_FWD_TAIL)."""
    T, stride_xb, stride_xn = _aligned(T, ALIGN), _aligned(stride_xb, ALIGN), _aligned(stride_xn, ALIGN)
    stride_yb, stride_yn = _aligned(stride_yb, ALIGN), _aligned(stride_yn, ALIGN)
    acc_ty = tl.float64 if ACC_FP64 else tl.float32
    b, t, t_ok = _columns(B, T, BLOCK_T, False)
    n = tl.arange(0, BLOCK_N).to(tl.int64)[:, None]
    x_cols = x_ptr + b * stride_xb + t
    y_cols = y_ptr + b * stride_yb + t
    if ONE_TILE and TAIL_N:
        mask = (n < N) & t_ok
        n2 = BLOCK_N + tl.arange(0, TAIL_N).to(tl.int64)[:, None]
        mask2 = (n2 < N) & t_ok
        x = tl.load(x_cols + n * stride_xn, mask=mask, other=-float("inf")).to(acc_ty)
        x2 = tl.load(x_cols + n2 * stride_xn, mask=mask2, other=-float("inf")).to(acc_ty)
        m = tl.maximum(tl.max(x, axis=0), tl.max(x2, axis=0))[None, :]
        z, z2 = x - m, x2 - m
        e, e2 = _exp(z, FTZ), _exp(z2, FTZ)
        s = (tl.sum(e, axis=0) + tl.sum(e2, axis=0))[None, :]
        if LOG:
            y, y2 = z - tl.log(s), z2 - tl.log(s)
        else:
            y, y2 = e * (1.0 / s), e2 * (1.0 / s)
        tl.store(y_cols + n * stride_yn, y.to(y_ptr.dtype.element_ty), mask=mask)
        tl.store(y_cols + n2 * stride_yn, y2.to(y_ptr.dtype.element_ty), mask=mask2)
    elif ONE_TILE:
        mask = (n < N) & t_ok
        x = tl.load(x_cols + n * stride_xn, mask=mask, other=-float("inf")).to(acc_ty)
        m = tl.max(x, axis=0)[None, :]
        z = x - m
        e = _exp(z, FTZ)
        s = tl.sum(e, axis=0)[None, :]
        if LOG:
            y = z - tl.log(s)
        else:
            y = e * (1.0 / s)
        tl.store(y_cols + n * stride_yn, y.to(y_ptr.dtype.element_ty), mask=mask)
    else:
        m, s = _cols_max_sum(x_cols, stride_xn, 0, N, n, t_ok, BLOCK_N, BLOCK_T, ACC_FP64, PER_VALUE, FTZ)
        _cols_write_y(x_cols, y_cols, stride_xn, stride_yn, 0, N, n, t_ok, m, s, BLOCK_N, LOG, ACC_FP64)


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
    b, t, t_ok = _columns(B, T, BLOCK_T, False)
    n = tl.arange(0, BLOCK_N).to(tl.int64)[:, None]
    y_cols, dy_cols, dx_cols = y_ptr + b * stride_yb + t, dy_ptr + b * stride_dyb + t, dx_ptr + b * stride_dxb + t
    if ONE_TILE:
        mask = (n < N) & t_ok
        y = tl.load(y_cols + n * stride_yn, mask=mask, other=other_y).to(acc_ty)
        dy = tl.load(dy_cols + n * stride_dyn, mask=mask, other=0.0).to(acc_ty)
        dot = tl.sum(_bwd_terms(y, dy, LOG), axis=0)[None, :]
        tl.store(dx_cols + n * stride_dxn, _bwd_apply(y, dy, dot, LOG).to(dx_ptr.dtype.element_ty), mask=mask)
    else:
        dot = _cols_dot(y_cols, dy_cols, stride_yn, stride_dyn, 0, N, n, t_ok, BLOCK_N, BLOCK_T, LOG, ACC_FP64)
        _cols_write_dx(y_cols, dy_cols, dx_cols, stride_yn, stride_dyn, stride_dxn, 0, N, n, t_ok, dot, BLOCK_N,
                       LOG, ACC_FP64)


# --------------------------------------------------------------------------------------
# The split plans: long columns in few groups (dispatch.COLS_SPLIT_*). N is cut into n_chunks
# chunks of CHUNK positions, a program a chunk of a group of BLOCK_T columns, grid
# (B * cdiv(T, BLOCK_T), n_chunks): a first kernel writes each chunk's partials, (B, n_chunks, T)
# in float32 (float64 for float64), a second combines a column's and writes its chunk, taking
# the groups and chunks in reverse order. As the rows' split plan (softmax_fwd_split_stats).
# --------------------------------------------------------------------------------------
@triton.jit
def softmax_fwd_stats_cols(
    x_ptr, B, N, T, stride_xb, stride_xn, CHUNK, n_chunks, m_part_ptr, s_part_ptr,
    BLOCK_N: tl.constexpr, BLOCK_T: tl.constexpr, ALIGN: tl.constexpr, ALIGN_N: tl.constexpr, ACC_FP64: tl.constexpr,
    PER_VALUE: tl.constexpr, FTZ: tl.constexpr = False,
):
    """Each column's max and sum of exp(x - max) over chunk program_id(1) of N (a column all -inf
    there: -inf and 0), into m_part and s_part, (B, n_chunks, T). PER_VALUE, FTZ: `_cols_max_sum`'s."""
    N, CHUNK, n_chunks = _aligned(N, ALIGN_N), _aligned(CHUNK, ALIGN_N), _aligned(n_chunks, ALIGN_N)
    T, stride_xb, stride_xn = _aligned(T, ALIGN), _aligned(stride_xb, ALIGN), _aligned(stride_xn, ALIGN)
    b, t, t_ok = _columns(B, T, BLOCK_T, False)
    chunk, lo, hi = _chunk(N, CHUNK, n_chunks, False)
    n = tl.arange(0, BLOCK_N).to(tl.int64)[:, None]
    m, s = _cols_max_sum(x_ptr + b * stride_xb + t, stride_xn, lo, hi, n, t_ok, BLOCK_N, BLOCK_T, ACC_FP64,
                         PER_VALUE, FTZ)
    part = (b * n_chunks + chunk) * T + t
    tl.store(m_part_ptr + part, m[None, :], mask=t_ok)
    tl.store(s_part_ptr + part, s[None, :], mask=t_ok)


@triton.jit
def softmax_fwd_norm_cols(
    x_ptr, m_part_ptr, s_part_ptr, B, N, T, stride_xb, stride_xn, stride_yb, stride_yn, CHUNK, n_chunks, y_ptr,
    BLOCK_N: tl.constexpr, BLOCK_T: tl.constexpr, BLOCK_C: tl.constexpr, LOG: tl.constexpr,
    ALIGN: tl.constexpr, ALIGN_N: tl.constexpr, ACC_FP64: tl.constexpr,
):
    """y over a chunk of N: the column's partials combined (max of the maxes, the sums rescaled to
    it), then its chunk normalized. BLOCK_C >= n_chunks."""
    N, CHUNK, n_chunks = _aligned(N, ALIGN_N), _aligned(CHUNK, ALIGN_N), _aligned(n_chunks, ALIGN_N)
    T, stride_xb, stride_xn = _aligned(T, ALIGN), _aligned(stride_xb, ALIGN), _aligned(stride_xn, ALIGN)
    stride_yb, stride_yn = _aligned(stride_yb, ALIGN), _aligned(stride_yn, ALIGN)
    b, t, t_ok = _columns(B, T, BLOCK_T, True)
    chunk, lo, hi = _chunk(N, CHUNK, n_chunks, True)
    c = tl.arange(0, BLOCK_C)[:, None]
    part, ok = (b * n_chunks + c) * T + t, (c < n_chunks) & t_ok
    m_c = tl.load(m_part_ptr + part, mask=ok, other=-float("inf"))
    s_c = tl.load(s_part_ptr + part, mask=ok, other=0.0)
    m, _, s = _cols_combine(m_c, s_c)
    n = tl.arange(0, BLOCK_N).to(tl.int64)[:, None]
    _cols_write_y(x_ptr + b * stride_xb + t, y_ptr + b * stride_yb + t, stride_xn, stride_yn, lo, hi, n, t_ok,
                  m, s, BLOCK_N, LOG, ACC_FP64)


@triton.jit
def softmax_bwd_dot_cols(
    y_ptr, dy_ptr, B, N, T, stride_yb, stride_yn, stride_dyb, stride_dyn, CHUNK, n_chunks, dot_part_ptr,
    BLOCK_N: tl.constexpr, BLOCK_T: tl.constexpr, LOG: tl.constexpr, ALIGN: tl.constexpr, ALIGN_N: tl.constexpr,
    ACC_FP64: tl.constexpr,
):
    """Each column's sum of the backward's term over chunk program_id(1) of N, into dot_part
    (B, n_chunks, T)."""
    N, CHUNK, n_chunks = _aligned(N, ALIGN_N), _aligned(CHUNK, ALIGN_N), _aligned(n_chunks, ALIGN_N)
    T, stride_yb, stride_yn = _aligned(T, ALIGN), _aligned(stride_yb, ALIGN), _aligned(stride_yn, ALIGN)
    stride_dyb, stride_dyn = _aligned(stride_dyb, ALIGN), _aligned(stride_dyn, ALIGN)
    b, t, t_ok = _columns(B, T, BLOCK_T, False)
    chunk, lo, hi = _chunk(N, CHUNK, n_chunks, False)
    n = tl.arange(0, BLOCK_N).to(tl.int64)[:, None]
    dot = _cols_dot(y_ptr + b * stride_yb + t, dy_ptr + b * stride_dyb + t, stride_yn, stride_dyn, lo, hi, n,
                    t_ok, BLOCK_N, BLOCK_T, LOG, ACC_FP64)
    tl.store(dot_part_ptr + (b * n_chunks + chunk) * T + t, dot[None, :], mask=t_ok)


@triton.jit
def softmax_bwd_apply_cols(
    y_ptr, dy_ptr, dot_part_ptr, B, N, T, stride_yb, stride_yn, stride_dyb, stride_dyn, stride_dxb, stride_dxn,
    CHUNK, n_chunks, dx_ptr,
    BLOCK_N: tl.constexpr, BLOCK_T: tl.constexpr, BLOCK_C: tl.constexpr, LOG: tl.constexpr,
    ALIGN: tl.constexpr, ALIGN_N: tl.constexpr, ACC_FP64: tl.constexpr,
):
    """dx over a chunk of N, from the column's partial dot products summed."""
    N, CHUNK, n_chunks = _aligned(N, ALIGN_N), _aligned(CHUNK, ALIGN_N), _aligned(n_chunks, ALIGN_N)
    T, stride_yb, stride_yn = _aligned(T, ALIGN), _aligned(stride_yb, ALIGN), _aligned(stride_yn, ALIGN)
    stride_dyb, stride_dyn = _aligned(stride_dyb, ALIGN), _aligned(stride_dyn, ALIGN)
    stride_dxb, stride_dxn = _aligned(stride_dxb, ALIGN), _aligned(stride_dxn, ALIGN)
    b, t, t_ok = _columns(B, T, BLOCK_T, True)
    chunk, lo, hi = _chunk(N, CHUNK, n_chunks, True)
    c = tl.arange(0, BLOCK_C)[:, None]
    dot = tl.sum(tl.load(dot_part_ptr + (b * n_chunks + c) * T + t, mask=(c < n_chunks) & t_ok, other=0.0), axis=0)
    n = tl.arange(0, BLOCK_N).to(tl.int64)[:, None]
    _cols_write_dx(y_ptr + b * stride_yb + t, dy_ptr + b * stride_dyb + t, dx_ptr + b * stride_dxb + t, stride_yn,
                   stride_dyn, stride_dxn, lo, hi, n, t_ok, dot, BLOCK_N, LOG, ACC_FP64)


# --------------------------------------------------------------------------------------
# The cooperative plans: long columns (N of at most one chunk an SM), one read and one write.
# As softmax_fwd_coop on counters (its PHASE and TICKET, `_coop_item`, `_wait_for_row`,
# `_leave_row`; dispatch._coop_launches: why every wait ends): a program holds a chunk of CHUNK_N
# positions of a group of BLOCK_T columns in registers, publishes each column's partials, waits
# until the group's other chunks have, combines them and writes its chunk. The items are the
# groups' chunks, item = group * n_chunks + chunk, group = b * cdiv(T, BLOCK_T) + t // BLOCK_T; part
# (groups, 2, n_chunks, BLOCK_T) in float32 (float64 for float64), count (groups + 1,) int32 zeros
# (the groups' arrival counters, then the ticket), left zero.
# --------------------------------------------------------------------------------------
@triton.jit
def _coop_tile(count_ptr, B, N, T, n_chunks, CHUNK_N: tl.constexpr, BLOCK_T: tl.constexpr, PHASE: tl.constexpr,
               TICKET: tl.constexpr):
    """This program's group (int64), b (int64), columns t ((1, BLOCK_T)), positions n
    ((CHUNK_N, 1), int64) and the tile's mask."""
    n_blocks = tl.cdiv(T, BLOCK_T)
    group, chunk = _coop_item(count_ptr, B * n_blocks, n_chunks, PHASE, TICKET)
    b = group // n_blocks
    t = (group % n_blocks) * BLOCK_T + tl.arange(0, BLOCK_T)[None, :]
    n = chunk * CHUNK_N + tl.arange(0, CHUNK_N).to(tl.int64)[:, None]
    return group, chunk, b, t, n, (n < N) & (t < T)


@triton.jit
def softmax_fwd_coop_cols(
    x_ptr, B, N, T, stride_xb, stride_xn, stride_yb, stride_yn, n_chunks, count_init_ptr, part_ptr, count_ptr, y_ptr,
    CHUNK_N: tl.constexpr, BLOCK_T: tl.constexpr, BLOCK_C: tl.constexpr, PHASE: tl.constexpr,
    TICKET: tl.constexpr, LOG: tl.constexpr, ALIGN: tl.constexpr, ALIGN_N: tl.constexpr, ACC_FP64: tl.constexpr,
):
    """y over chunk `item % n_chunks` of the group `item // n_chunks` (see above)."""
    count_ptr = count_init_ptr  # the scratch is read and written through its input (module docstring)
    N, n_chunks = _aligned(N, ALIGN_N), _aligned(n_chunks, ALIGN_N)
    T, stride_xb, stride_xn = _aligned(T, ALIGN), _aligned(stride_xb, ALIGN), _aligned(stride_xn, ALIGN)
    stride_yb, stride_yn = _aligned(stride_yb, ALIGN), _aligned(stride_yn, ALIGN)
    acc_ty = tl.float64 if ACC_FP64 else tl.float32
    group, chunk, b, t, n, mask = _coop_tile(count_ptr, B, N, T, n_chunks, CHUNK_N, BLOCK_T, PHASE, TICKET)
    x = tl.load(x_ptr + b * stride_xb + n * stride_xn + t, mask=mask, other=-float("inf")).to(acc_ty)
    # Each column's max over the chunk and exp(x - max), as softmax_fwd_coop: a column all -inf in
    # the chunk takes 0 as its max (exp(-inf) = 0), sum 0, and publishes max -inf.
    m_own = tl.max(x, axis=0)
    m_own = tl.where(m_own == -float("inf"), 0.0, m_own)
    e = tl.exp(x - m_own[None, :])
    tt = tl.arange(0, BLOCK_T)
    part_group = part_ptr + group * 2 * n_chunks * BLOCK_T
    if PHASE % 2 == 1:
        s_own = tl.sum(e, axis=0)
        tl.store(part_group + chunk * BLOCK_T + tt, tl.where(s_own == 0.0, -float("inf"), m_own))
        tl.store(part_group + (n_chunks + chunk) * BLOCK_T + tt, s_own)
        if PHASE == 3:
            _wait_for_row(count_ptr, group, n_chunks)
    if PHASE >= 2:
        c = tl.arange(0, BLOCK_C)[:, None]
        parts = part_group + c * BLOCK_T + tt[None, :]
        m_c = tl.load(parts, mask=c < n_chunks, other=-float("inf"), volatile=True)
        s_c = tl.load(parts + n_chunks * BLOCK_T, mask=c < n_chunks, other=0.0, volatile=True)
        if PHASE == 3:
            _leave_row(count_ptr, group, n_chunks)
        _, m_safe, s = _cols_combine(m_c, s_c)
        if LOG:
            y = (x - m_safe[None, :]) - tl.log(s)[None, :]  # x - max first, as torch
        else:  # exp(x - m) / s = e * (exp(m_own - m) / s), capped at 1 as softmax_fwd_coop's scale
            y = e * (tl.minimum(tl.exp(m_own - m_safe), 1.0) / s)[None, :]
        tl.store(y_ptr + b * stride_yb + n * stride_yn + t, y.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def softmax_bwd_coop_cols(
    y_ptr, dy_ptr, B, N, T, stride_yb, stride_yn, stride_dyb, stride_dyn, stride_dxb, stride_dxn, n_chunks,
    count_init_ptr, part_ptr, count_ptr, dx_ptr,
    CHUNK_N: tl.constexpr, BLOCK_T: tl.constexpr, BLOCK_C: tl.constexpr, PHASE: tl.constexpr,
    TICKET: tl.constexpr, LOG: tl.constexpr, ALIGN: tl.constexpr, ALIGN_N: tl.constexpr, ACC_FP64: tl.constexpr,
):
    """dx over chunk `item % n_chunks` of the group `item // n_chunks`: each column's partial sum of
    the backward's term published (part (groups, 1, n_chunks, BLOCK_T)), summed after the wait."""
    count_ptr = count_init_ptr  # the scratch is read and written through its input (module docstring)
    N, n_chunks = _aligned(N, ALIGN_N), _aligned(n_chunks, ALIGN_N)
    T, stride_yb, stride_yn = _aligned(T, ALIGN), _aligned(stride_yb, ALIGN), _aligned(stride_yn, ALIGN)
    stride_dyb, stride_dyn = _aligned(stride_dyb, ALIGN), _aligned(stride_dyn, ALIGN)
    stride_dxb, stride_dxn = _aligned(stride_dxb, ALIGN), _aligned(stride_dxn, ALIGN)
    acc_ty = tl.float64 if ACC_FP64 else tl.float32
    other_y = -float("inf") if LOG else 0.0  # masked lanes: exp(y) = 0 or y = 0; dy = 0
    group, chunk, b, t, n, mask = _coop_tile(count_ptr, B, N, T, n_chunks, CHUNK_N, BLOCK_T, PHASE, TICKET)
    y = tl.load(y_ptr + b * stride_yb + n * stride_yn + t, mask=mask, other=other_y).to(acc_ty)
    dy = tl.load(dy_ptr + b * stride_dyb + n * stride_dyn + t, mask=mask, other=0.0).to(acc_ty)
    tt = tl.arange(0, BLOCK_T)
    part_group = part_ptr + group * n_chunks * BLOCK_T
    if PHASE % 2 == 1:
        tl.store(part_group + chunk * BLOCK_T + tt, tl.sum(_bwd_terms(y, dy, LOG), axis=0))
        if PHASE == 3:
            _wait_for_row(count_ptr, group, n_chunks)
    if PHASE >= 2:
        c = tl.arange(0, BLOCK_C)[:, None]
        dot = tl.sum(tl.load(part_group + c * BLOCK_T + tt[None, :], mask=c < n_chunks, other=0.0, volatile=True),
                     axis=0)
        if PHASE == 3:
            _leave_row(count_ptr, group, n_chunks)
        dx = _bwd_apply(y, dy, dot[None, :], LOG)
        tl.store(dx_ptr + b * stride_dxb + n * stride_dxn + t, dx.to(dx_ptr.dtype.element_ty), mask=mask)
