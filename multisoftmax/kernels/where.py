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
probe_where_skip*.log). The masked-out values of a vector read are masked after. SKIP off (dispatch:
float32 forward rows of WHERE_FWD32_EVERY_LANES lanes and more) reads every vector of the row beside
the mask instead, its load then waiting on no mask load.

Rows longer than a program holds (dispatch.WHERE_MAX_N, WHERE_BWD_MAX_N) take the ``*_coop_where``
kernels (but for the softmax backward, which the JAX adapter leaves to the unmasked kernels there:
dispatch.WHERE_COOP_*): a row cut into CHUNK_N-value chunks, one a program, each held in registers
as above; a program publishes its chunk's partials (max and sum of exp; the backward's sum), waits
until every chunk of its row has, combines them and writes its chunk: one read and one write. Items
are taken, partials published and waited for as `kernels/softmax.py`'s ``*_coop`` family does, with
its helpers: a ticket counter, and tagged partials (TAG) or the row's arrival counter; why every
wait ends is told there (and in dispatch._coop_launches). Rows not 16-byte aligned (PEEL) are cut as
that family cuts them: a head, a body between the row's first and last 16-byte boundaries, read by
whole vectors in the chunks, and a tail, the edges taken by the row's first and last chunk.

Arithmetic as `kernels/softmax.py`: float32 for 16-bit and float32 inputs, float64 for float64
(ACC_FP64), the result stored in the output's dtype. ALIGN: as there, a power of two dividing N
and the strides, so that loads vectorize under jax_triton too.
"""

import triton
import triton.language as tl

from .softmax import (LOG2E, _aligned, _bwd_apply, _bwd_terms, _coop_edges, _coop_item, _exp2_ftz, _leave_row,
                      _tag_gather, _tag_of, _tag_publish, _tag_take, _wait_for_row)


@triton.jit
def _base(row_start, PEEL: tl.constexpr, VEC: tl.constexpr):
    """Where a tile's columns start counting, in elements from the tensor's start: the row's start
    `row_start`, or with PEEL the row's first 16-byte boundary (a multiple of VEC the compiler sees,
    so that loads from it vectorize; kernels/softmax.py's `_body`)."""
    if PEEL:
        row_start = ((row_start + (VEC - 1)) // VEC) * VEC
    return row_start


@triton.jit
def _mask_row(wrow_ptr, rows, row_ok, row_div, row_mod, ROW_TABLE: tl.constexpr):
    """The mask row (int64) that row(s) `rows` of x read: `wrow[rows]` (ROW_TABLE), else
    (rows // row_div) % row_mod (module docstring)."""
    if ROW_TABLE:
        wrow = tl.load(wrow_ptr + rows, mask=row_ok, other=0).to(tl.int64)
    else:
        wrow = (rows // row_div) % row_mod
    return wrow


@triton.jit
def _tile(w_ptr, wrow_ptr, rows, lo, M, N, row_div, row_mod, BLOCK_N: tl.constexpr, VEC: tl.constexpr,
          ROW_TABLE: tl.constexpr, W_COLS: tl.constexpr, SKIP: tl.constexpr, EVEN: tl.constexpr = False,
          PEEL: tl.constexpr = False, W_PEEL: tl.constexpr = False, row_start=0):
    """The (BLOCK_M, BLOCK_N // VEC, VEC) tile of the M x N view at rows `rows` (BLOCK_M,) and columns
    lo to lo + BLOCK_N: (rows, cols, in_bounds, keep, read): its rows (BLOCK_M, 1, 1) and columns
    (1, BLOCK_N // VEC, VEC), counted from `_base` (a tensor's lanes: `_base(rows * stride, PEEL, VEC)
    + cols`), the lanes inside the view, those of them the mask keeps, and the lanes to load: those
    of the vectors that hold a kept value (SKIP), else every lane in the view.
    EVEN: every lane of the tile is inside the view (the launcher has checked), so none is compared
    with M or N.
    PEEL (one row, the cooperative kernels, its x starting at element `row_start`; every tensor of the
    launch of one stride): the columns count from the row's first 16-byte boundary (`_base`) and the
    lanes in the view stop at its last, so the tile is whole vectors; the values before and after are
    the row's edges (`_coop_edge_tile`). W_PEEL: each row's mask row starts as far from a boundary of
    VEC values as its x row does (the launcher has checked), so the mask is read by whole vectors too;
    else value by value."""
    cols = lo + (tl.arange(0, BLOCK_N // VEC)[:, None] * VEC + tl.arange(0, VEC)[None, :])[None, :, :]
    if EVEN:
        row_ok = tl.full(rows.shape, 1, tl.int1)
        in_bounds = tl.full((rows.shape[0], BLOCK_N // VEC, VEC), 1, tl.int1)
    elif PEEL:  # in 32 bits, as kernels/softmax.py's `_body`
        row_ok = rows < M
        start = _base(row_start, True, VEC)
        in_bounds = row_ok[:, None, None] & (cols < (((row_start + N) // VEC) * VEC - start).to(tl.int32))
    else:
        row_ok = rows < M
        in_bounds = row_ok[:, None, None] & (cols < N)
    wrow = _mask_row(wrow_ptr, rows, row_ok, row_div, row_mod, ROW_TABLE)
    if W_COLS:
        if PEEL and W_PEEL:
            w_offs = _base(wrow[:, None, None] * N, True, VEC) + cols
        elif PEEL:  # the mask's columns from x's first boundary
            w_offs = wrow[:, None, None] * N + (start - row_start) + cols
        else:
            w_offs = wrow[:, None, None] * N + cols
        if EVEN:
            w = tl.load(w_ptr + w_offs)
        else:
            w = tl.load(w_ptr + w_offs, mask=in_bounds, other=0)
    else:  # one value a row
        w = tl.load(w_ptr + wrow, mask=row_ok, other=0)[:, None, None]
    keep = in_bounds & (w != 0)
    if SKIP:
        read = in_bounds & (tl.max(keep.to(tl.int32), axis=2)[:, :, None] != 0)
    else:
        read = in_bounds
    return rows[:, None, None], cols, in_bounds, keep, read


@triton.jit
def _coop_edge_tile(w_ptr, wrow_ptr, row, chunk, n_chunks, M, N, row_start, row_div, row_mod, VEC: tl.constexpr,
                    ROW_TABLE: tl.constexpr, W_COLS: tl.constexpr):
    """A PEEL row's edges (`_tile`), 2 * VEC lanes, shared out as kernels/softmax.py's `_coop_edges`
    does (the head to the row's first chunk, the tail to its last): (cols, ok, keep): their columns
    in the row, the lanes of this chunk's edges, those of them the mask keeps. Row `row`'s x starts
    at element `row_start`."""
    offs, ok = _coop_edges(row_start, N, chunk, n_chunks, VEC)
    cols = offs - row_start
    wrow = _mask_row(wrow_ptr, row, row < M, row_div, row_mod, ROW_TABLE)
    if W_COLS:
        w = tl.load(w_ptr + wrow * N + cols, mask=ok, other=0)
    else:  # one value a row, read for each lane
        w = tl.load(w_ptr + wrow + 0 * cols, mask=ok, other=0)
    return cols, ok, ok & (w != 0)


@triton.jit
def _rows_tile(w_ptr, wrow_ptr, M, N, row_div, row_mod, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
               VEC: tl.constexpr, ROW_TABLE: tl.constexpr, W_COLS: tl.constexpr, SKIP: tl.constexpr,
               EVEN: tl.constexpr = False):
    """`_tile` of the rows kernels: this program's BLOCK_M rows, whole (BLOCK_N >= N)."""
    rows = tl.program_id(0).to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
    return _tile(w_ptr, wrow_ptr, rows, 0, M, N, row_div, row_mod, BLOCK_N, VEC, ROW_TABLE, W_COLS, SKIP, EVEN)


@triton.jit
def _row_max(v):
    return tl.max(tl.max(v, axis=2), axis=1)[:, None, None]


@triton.jit
def _row_sum(v):
    return tl.sum(tl.sum(v, axis=2), axis=1)[:, None, None]


@triton.jit
def _store(ptrs, v, in_bounds, EVEN: tl.constexpr):
    """v into `ptrs`' dtype at the lanes in bounds (EVEN: every lane, no mask)."""
    if EVEN:
        tl.store(ptrs, v.to(ptrs.dtype.element_ty))
    else:
        tl.store(ptrs, v.to(ptrs.dtype.element_ty), mask=in_bounds)


@triton.jit
def _all_rows(v):
    """Whether every row's flag `v` (BLOCK_M, 1, 1) of 0 or 1 is 1: a scalar for the program."""
    return tl.min(tl.min(tl.min(v, axis=2), axis=1), axis=0) != 0


@triton.jit
def _bwd_kept(y, dy, keep, LOG: tl.constexpr):
    """dx of the rows kernels' tile over the kept lanes (`keep`), 0 elsewhere, whatever y and dy
    hold there: each row's sum taken over its kept values alone."""
    y, dy = tl.where(keep, y, -float("inf") if LOG else 0.0), tl.where(keep, dy, 0.0)
    return tl.where(keep, _bwd_apply(y, dy, _row_sum(_bwd_terms(y, dy, LOG)), LOG), 0.0)


@triton.jit
def softmax_fwd_rows_where(
    x_ptr, w_ptr, wrow_ptr, M, N, stride_xm, stride_ym, row_div, row_mod, y_ptr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, VEC: tl.constexpr, LOG: tl.constexpr, ALIGN: tl.constexpr,
    ACC_FP64: tl.constexpr, ROW_TABLE: tl.constexpr, W_COLS: tl.constexpr, SKIP: tl.constexpr,
    EVEN: tl.constexpr = False, FTZ: tl.constexpr = False,
):
    """y = softmax(x) over the kept values of each row (log_softmax if LOG), 0 (-inf) elsewhere.
    SKIP: x read only by the vectors that hold a kept value (after the mask), else by every vector
    of the row (beside the mask). EVEN: N == BLOCK_N and M a multiple of BLOCK_M (`_tile`). FTZ
    (16-bit y, on the GPU): exp by one ex2.approx.ftz a value (kernels/softmax.py's `_exp2_ftz`).

    Where every row of the program has a finite max and a sum that is a number (no row fully
    masked, no kept NaN or +inf), the masked-out lanes come out 0 (-inf) by themselves: x there is
    -inf, so exp(x - max) is 0 (x - max is -inf). The store then needs no mask a lane: the program
    stores y from x and its row's max and sum alone, and only the other programs read the mask
    again to store y where it keeps a value. On the H100 the per-lane selects and compares were
    most of the kernel's instructions (bf16, 32 values a thread: 848 against 528 a thread;
    bench/DISPATCH.md, where=: the forward's store)."""
    N, stride_xm, stride_ym = _aligned(N, ALIGN), _aligned(stride_xm, ALIGN), _aligned(stride_ym, ALIGN)
    acc_ty = tl.float64 if ACC_FP64 else tl.float32
    rows, cols, in_bounds, keep, read = _rows_tile(w_ptr, wrow_ptr, M, N, row_div, row_mod, BLOCK_M, BLOCK_N,
                                                   VEC, ROW_TABLE, W_COLS, SKIP, EVEN)
    if EVEN and not SKIP:
        x = tl.load(x_ptr + rows * stride_xm + cols)
    else:
        x = tl.load(x_ptr + rows * stride_xm + cols, mask=read, other=-float("inf"))
    x = tl.where(keep, x.to(acc_ty), -float("inf"))
    m = _row_max(x)
    z = x - m  # a fully masked row: NaN here, masked below
    if FTZ:
        e = _exp2_ftz(z * LOG2E, 3)
    else:
        e = tl.exp(z)
    s = _row_sum(e)
    y_ptrs = y_ptr + rows * stride_ym + cols
    if _all_rows(((m > -float("inf")) & (m < float("inf")) & (s == s)).to(tl.int32)):
        if LOG:
            y = z - tl.log(s)
        else:
            y = e * (1.0 / s)
        _store(y_ptrs, y, in_bounds, EVEN)
    else:  # the mask read again, not kept in registers through the sum
        keep = _rows_tile(w_ptr, wrow_ptr, M, N, row_div, row_mod, BLOCK_M, BLOCK_N, VEC, ROW_TABLE, W_COLS, SKIP,
                          EVEN)[3]
        if LOG:
            y = tl.where(keep, z - tl.log(s), -float("inf"))
        else:
            y = tl.where(keep, e * (1.0 / s), 0.0)
        _store(y_ptrs, y, in_bounds, EVEN)


@triton.jit
def softmax_bwd_rows_where(
    y_ptr, dy_ptr, w_ptr, wrow_ptr, M, N, stride_ym, stride_dym, stride_dxm, row_div, row_mod, dx_ptr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, VEC: tl.constexpr, LOG: tl.constexpr, ALIGN: tl.constexpr,
    ACC_FP64: tl.constexpr, ROW_TABLE: tl.constexpr, W_COLS: tl.constexpr, SKIP: tl.constexpr,
    EVEN: tl.constexpr = False,
):
    """dx from y = softmax_fwd_rows_where's output and dy: the row sums over kept values, dx 0
    at masked-out ones (whatever dy holds there). SKIP and EVEN as softmax_fwd_rows_where's.

    The softmax's y is 0 where masked out, so where y * dy sums to a finite number over every lane
    of each row of the program (no masked-out dy is inf or NaN, no kept value NaN), that sum is the
    kept values' and y * (dy - sum) is 0 at masked-out lanes by itself: the program then computes
    and stores dx with no mask a lane, as the forward does (the mask read again otherwise)."""
    N, stride_ym, stride_dym, stride_dxm = (
        _aligned(N, ALIGN), _aligned(stride_ym, ALIGN), _aligned(stride_dym, ALIGN), _aligned(stride_dxm, ALIGN))
    acc_ty = tl.float64 if ACC_FP64 else tl.float32
    rows, cols, in_bounds, keep, read = _rows_tile(w_ptr, wrow_ptr, M, N, row_div, row_mod, BLOCK_M, BLOCK_N,
                                                   VEC, ROW_TABLE, W_COLS, SKIP, EVEN)
    other_y = -float("inf") if LOG else 0.0  # lanes not kept: exp(y) = 0 or y = 0, dy = 0
    y = tl.load(y_ptr + rows * stride_ym + cols, mask=read, other=other_y).to(acc_ty)
    dy = tl.load(dy_ptr + rows * stride_dym + cols, mask=read, other=0.0).to(acc_ty)
    dx_ptrs = dx_ptr + rows * stride_dxm + cols
    if LOG:
        _store(dx_ptrs, _bwd_kept(y, dy, keep, LOG), in_bounds, EVEN)
    else:
        dot = _row_sum(y * dy)
        if _all_rows(((dot == dot) & (tl.abs(dot) < float("inf"))).to(tl.int32)):
            _store(dx_ptrs, y * (dy - dot), in_bounds, EVEN)
        else:  # the mask read again, not kept in registers through the sum
            keep = _rows_tile(w_ptr, wrow_ptr, M, N, row_div, row_mod, BLOCK_M, BLOCK_N, VEC, ROW_TABLE, W_COLS, SKIP,
                              EVEN)[3]
            _store(dx_ptrs, _bwd_kept(y, dy, keep, LOG), in_bounds, EVEN)


# --------------------------------------------------------------------------------------
# rows longer than the rows kernels hold: cooperative, as kernels/softmax.py's *_coop family
# --------------------------------------------------------------------------------------
@triton.jit
def _coop_take(count_ptr, M, n_chunks, PHASE: tl.constexpr, TICKET: tl.constexpr, TAG: tl.constexpr):
    """This program's item, chunk `chunk` of row `row`, taken as kernels/softmax.py's cooperative
    kernels take theirs: (row, chunk, t), t the TAG ticket word (`_tag_take`; 0 without TAG)."""
    if TAG:
        row, chunk, t = _tag_take(count_ptr.to(tl.pointer_type(tl.int64)), n_chunks, PHASE, TICKET)
    else:
        row, chunk = _coop_item(count_ptr, M, n_chunks, PHASE, TICKET)
        t = tl.full((), 0, tl.int64)
    return row, chunk, t


@triton.jit
def _coop_publish(count_ptr, part_row, row, chunk, n_chunks, v, tag, PARTS: tl.constexpr, PHASE: tl.constexpr,
                  TAG: tl.constexpr):
    """Publish this chunk's partials `v` (PARTS of them: a tuple for 2) and wait for the row's
    (PHASE 3), as kernels/softmax.py's cooperative kernels: tagged slots (TAG) or plain stores
    and the row's arrival counter."""
    if TAG:
        if PARTS == 2:
            _tag_publish(part_row + chunk, v[0], tag)
            _tag_publish(part_row + n_chunks + chunk, v[1], tag)
        else:
            _tag_publish(part_row + chunk, v, tag)
    else:
        if PARTS == 2:
            tl.store(part_row + chunk, v[0])
            tl.store(part_row + n_chunks + chunk, v[1])
        else:
            tl.store(part_row + chunk, v)
        if PHASE == 3:
            _wait_for_row(count_ptr, row, n_chunks)


@triton.jit
def _coop_gather(count_ptr, part_row, row, n_chunks, tag, BLOCK_C: tl.constexpr, PARTS: tl.constexpr,
                 PHASE: tl.constexpr, TAG: tl.constexpr):
    """The row's partials, as BLOCK_C vectors (lanes past n_chunks: -inf for the first of two,
    else 0), once every chunk has published (`_coop_publish`); on counters, this program then
    leaves the row (`_leave_row`)."""
    if TAG:
        a, b = _tag_gather(part_row, n_chunks, tag, BLOCK_C, PARTS, PHASE)
    else:
        c = tl.arange(0, BLOCK_C)
        a = tl.load(part_row + c, mask=c < n_chunks, other=-float("inf") if PARTS == 2 else 0.0, volatile=True)
        b = a
        if PARTS == 2:
            b = tl.load(part_row + n_chunks + c, mask=c < n_chunks, other=0.0, volatile=True)
        if PHASE == 3:
            _leave_row(count_ptr, row, n_chunks)
    return a, b


@triton.jit
def _coop_parts(part_ptr, count_ptr, row, n_chunks, PARTS: tl.constexpr, TAG: tl.constexpr):
    """Where row `row`'s PARTS x n_chunks partials lie: part (M, PARTS, n_chunks), or TAG's slots
    after its ticket word in count_ptr (int64)."""
    if TAG:
        part_row = count_ptr.to(tl.pointer_type(tl.int64)) + 1 + row * PARTS * n_chunks
    else:
        part_row = part_ptr + row * PARTS * n_chunks
    return part_row


@triton.jit
def softmax_fwd_coop_where(
    x_ptr, w_ptr, wrow_ptr, M, N, stride_xm, stride_ym, row_div, row_mod, n_chunks, count_init_ptr, part_ptr, count_ptr,
    y_ptr,
    CHUNK_N: tl.constexpr, BLOCK_C: tl.constexpr, TICKET: tl.constexpr, VEC: tl.constexpr, LOG: tl.constexpr,
    ALIGN: tl.constexpr, ACC_FP64: tl.constexpr, ROW_TABLE: tl.constexpr, W_COLS: tl.constexpr,
    SKIP: tl.constexpr, TAG: tl.constexpr, PHASE: tl.constexpr, PEEL: tl.constexpr = False,
    W_PEEL: tl.constexpr = False,
):
    """softmax_fwd_rows_where for rows longer than a program holds: one item a program, chunk
    `item % n_chunks` (CHUNK_N values, held in registers) of row `item // n_chunks`, as
    kernels/softmax.py's softmax_fwd_coop. part (M, 2, n_chunks): per chunk, the max of its kept
    values and the sum of their exp(x - max); count (M + 1,) int32, zero at launch and left zero:
    the rows' arrival counters, then the ticket. TAG (float32 partials): the partials are tagged
    slots in count_ptr, as there (an int64 buffer of 1 + M * 2 * n_chunks words; part_ptr is not
    used). PHASE and TICKET as there (3: one launch on the GPU; 1 then 2: the partials, then the
    rest, under Triton's interpreter). SKIP: x read only by the vectors that hold a kept value
    (the rows kernels' way), else by every vector of the chunk, while the mask is read.
    PEEL (rows not 16-byte aligned; stride_xm == stride_ym): the chunks cut the row's body between its
    first and last 16-byte boundaries, read and written by whole vectors; the head and the tail
    (`_coop_edge_tile`) go to the row's first and last chunk. W_PEEL: the mask's rows too (`_tile`)."""
    count_ptr = count_init_ptr  # the scratch is read and written through its input (module docstring)
    tl.static_assert(not (TAG and ACC_FP64), "TAG: float32 partials only")
    N, stride_xm, stride_ym = _aligned(N, ALIGN), _aligned(stride_xm, ALIGN), _aligned(stride_ym, ALIGN)
    acc_ty = tl.float64 if ACC_FP64 else tl.float32
    row, chunk, t = _coop_take(count_ptr, M, n_chunks, PHASE, TICKET, TAG)
    xs, ys = row * stride_xm, row * stride_ym
    rows, cols, in_bounds, keep, read = _tile(w_ptr, wrow_ptr, row + tl.arange(0, 1), chunk * CHUNK_N, M, N,
                                              row_div, row_mod, CHUNK_N, VEC, ROW_TABLE, W_COLS, SKIP, False, PEEL,
                                              W_PEEL, xs)
    x = tl.load(x_ptr + _base(rows * stride_xm, PEEL, VEC) + cols, mask=read, other=-float("inf"))
    if PEEL:
        e_cols, e_ok, e_keep = _coop_edge_tile(w_ptr, wrow_ptr, row, chunk, n_chunks, M, N, xs, row_div, row_mod,
                                               VEC, ROW_TABLE, W_COLS)
        xe = tl.load(x_ptr + xs + e_cols, mask=e_keep, other=-float("inf")).to(acc_ty)
    tag = _tag_of(count_ptr.to(tl.pointer_type(tl.int64)), t, M * n_chunks, PHASE, TICKET) if TAG else 0
    x = tl.where(keep, x.to(acc_ty), -float("inf"))
    # The chunk's own max and sum of exp(x - max): a chunk with no kept value (or all -inf) gets
    # max 0 and sum 0 here, and publishes max -inf.
    m_own = tl.max(tl.max(tl.max(x, axis=2), axis=1), axis=0)
    if PEEL:
        m_own = tl.maximum(m_own, tl.max(xe, axis=0))
    m_own = tl.where(m_own == -float("inf"), 0.0, m_own)
    e = tl.exp(x - m_own)
    s_own = tl.sum(tl.sum(tl.sum(e, axis=2), axis=1), axis=0)
    if PEEL:
        ee = tl.exp(xe - m_own)
        s_own += tl.sum(ee, axis=0)
    part_row = _coop_parts(part_ptr, count_ptr, row, n_chunks, 2, TAG)
    if PHASE % 2 == 1:
        _coop_publish(count_ptr, part_row, row, chunk, n_chunks, (tl.where(s_own == 0.0, -float("inf"), m_own), s_own),
                      tag, 2, PHASE, TAG)
    if PHASE >= 2:
        m_c, s_c = _coop_gather(count_ptr, part_row, row, n_chunks, tag, BLOCK_C, 2, PHASE, TAG)
        m = tl.max(m_c, axis=0)
        m_safe = tl.where(m == -float("inf"), 0.0, m)  # a fully masked row: every y masked out below
        s = tl.sum(s_c * tl.exp(m_c - m_safe), axis=0)
        if LOG:
            y = tl.where(keep, (x - m_safe) - tl.log(s), -float("inf"))
        else:  # exp(x - m) / s = exp(x - m_own) * (exp(m_own - m) / s), capped at 1 for a chunk of max 0
            # and sum 0 (its e is 0: 0, not 0 * inf)
            scale = tl.minimum(tl.exp(m_own - m_safe), 1.0) / s
            y = tl.where(keep, e * scale, 0.0)
        tl.store(y_ptr + _base(rows * stride_ym, PEEL, VEC) + cols, y.to(y_ptr.dtype.element_ty), mask=in_bounds)
        if PEEL:
            if LOG:
                ye = tl.where(e_keep, (xe - m_safe) - tl.log(s), -float("inf"))
            else:
                ye = tl.where(e_keep, ee * scale, 0.0)
            tl.store(y_ptr + ys + e_cols, ye.to(y_ptr.dtype.element_ty), mask=e_ok)


@triton.jit
def softmax_bwd_coop_where(
    y_ptr, dy_ptr, w_ptr, wrow_ptr, M, N, stride_ym, stride_dym, stride_dxm, row_div, row_mod, n_chunks,
    count_init_ptr, part_ptr, count_ptr, dx_ptr,
    CHUNK_N: tl.constexpr, BLOCK_C: tl.constexpr, TICKET: tl.constexpr, VEC: tl.constexpr, LOG: tl.constexpr,
    ALIGN: tl.constexpr, ACC_FP64: tl.constexpr, ROW_TABLE: tl.constexpr, W_COLS: tl.constexpr,
    SKIP: tl.constexpr, TAG: tl.constexpr, PHASE: tl.constexpr, PEEL: tl.constexpr = False,
    W_PEEL: tl.constexpr = False,
):
    """softmax_bwd_rows_where for long rows, cooperative as softmax_fwd_coop_where (PEEL and W_PEEL
    too, the three tensors of one stride): part (M, 1, n_chunks) holds each chunk's sum over its kept
    values (of y * dy; log_softmax: of dy)."""
    count_ptr = count_init_ptr  # the scratch is read and written through its input (module docstring)
    tl.static_assert(not (TAG and ACC_FP64), "TAG: float32 partials only")
    N, stride_ym, stride_dym, stride_dxm = (
        _aligned(N, ALIGN), _aligned(stride_ym, ALIGN), _aligned(stride_dym, ALIGN), _aligned(stride_dxm, ALIGN))
    acc_ty = tl.float64 if ACC_FP64 else tl.float32
    row, chunk, t = _coop_take(count_ptr, M, n_chunks, PHASE, TICKET, TAG)
    ys = row * stride_ym
    rows, cols, in_bounds, keep, read = _tile(w_ptr, wrow_ptr, row + tl.arange(0, 1), chunk * CHUNK_N, M, N,
                                              row_div, row_mod, CHUNK_N, VEC, ROW_TABLE, W_COLS, SKIP, False, PEEL,
                                              W_PEEL, ys)
    other_y = -float("inf") if LOG else 0.0  # lanes not kept: exp(y) = 0 or y = 0, dy = 0
    y = tl.load(y_ptr + _base(rows * stride_ym, PEEL, VEC) + cols, mask=read, other=other_y)
    dy = tl.load(dy_ptr + _base(rows * stride_dym, PEEL, VEC) + cols, mask=read, other=0.0)
    if PEEL:
        e_cols, e_ok, e_keep = _coop_edge_tile(w_ptr, wrow_ptr, row, chunk, n_chunks, M, N, ys, row_div, row_mod,
                                               VEC, ROW_TABLE, W_COLS)
        ye = tl.load(y_ptr + ys + e_cols, mask=e_keep, other=other_y).to(acc_ty)
        dye = tl.load(dy_ptr + row * stride_dym + e_cols, mask=e_keep, other=0.0).to(acc_ty)
    tag = _tag_of(count_ptr.to(tl.pointer_type(tl.int64)), t, M * n_chunks, PHASE, TICKET) if TAG else 0
    y, dy = tl.where(keep, y.to(acc_ty), other_y), tl.where(keep, dy.to(acc_ty), 0.0)
    part_row = _coop_parts(part_ptr, count_ptr, row, n_chunks, 1, TAG)
    if PHASE % 2 == 1:
        own = tl.sum(tl.sum(tl.sum(_bwd_terms(y, dy, LOG), axis=2), axis=1), axis=0)
        if PEEL:
            own += tl.sum(_bwd_terms(ye, dye, LOG), axis=0)
        _coop_publish(count_ptr, part_row, row, chunk, n_chunks, own, tag, 1, PHASE, TAG)
    if PHASE >= 2:
        dot = tl.sum(_coop_gather(count_ptr, part_row, row, n_chunks, tag, BLOCK_C, 1, PHASE, TAG)[0], axis=0)
        dx = tl.where(keep, _bwd_apply(y, dy, dot, LOG), 0.0)
        tl.store(dx_ptr + _base(rows * stride_dxm, PEEL, VEC) + cols, dx.to(dx_ptr.dtype.element_ty), mask=in_bounds)
        if PEEL:
            dxe = tl.where(e_keep, _bwd_apply(ye, dye, dot, LOG), 0.0)
            tl.store(dx_ptr + row * stride_dxm + e_cols, dxe.to(dx_ptr.dtype.element_ty), mask=e_ok)
