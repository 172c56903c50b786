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
whole vectors in the chunks, and a tail, the edges taken by the row's first and last chunk. The
16-bit forward may hold x as that family's packed words (PACK), the values the mask drops made -inf
in the words themselves, so that y needs no mask after the wait.

Arithmetic as `kernels/softmax.py`: float32 for 16-bit and float32 inputs, float64 for float64
(ACC_FP64), the result stored in the output's dtype. ALIGN: as there, a power of two dividing N
and the strides, so that loads vectorize under jax_triton too.
"""

import triton
import triton.language as tl

from .softmax import (COOP_FAST_MAX, LOG2E, _aligned, _base, _bwd_apply, _bwd_terms, _combine, _coop_edges, _coop_item,
                      _exp, _exp2_ftz, _fresh, _leave_row, _pack, _pack_x2, _packed_sum, _tag_gather, _tag_of,
                      _tag_publish, _tag_take, _unpack, _wait_for_row, _words)


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
def _coop_mask_row(wrow_ptr, row, row_div, row_mod, ROW_TABLE: tl.constexpr):
    """`_mask_row` of the cooperative kernels' one row `row` (int64), divided in 32 bits: a
    cooperative launch's M * n_chunks programs fit a grid, so row < 2 ** 31 (compiled for sm_90, the
    64-bit division and its slow path took ~180 more SASS instructions a thread)."""
    if ROW_TABLE:
        wrow = tl.load(wrow_ptr + row).to(tl.int64)
    else:
        wrow = ((row.to(tl.int32) // row_div) % row_mod).to(tl.int64)
    return wrow


@triton.jit
def _coop_edge_tile(w_ptr, wrow, chunk, n_chunks, N, row_start, VEC: tl.constexpr, W_COLS: tl.constexpr):
    """A PEEL row's edges (`_tile`), 2 * VEC lanes, shared out as kernels/softmax.py's `_coop_edges`
    does (the head to the row's first chunk, the tail to its last): (cols, ok, keep): their columns
    in the row, the lanes of this chunk's edges, those of them the mask keeps. The row's x starts
    at element `row_start`; it reads mask row `wrow`."""
    offs, ok = _coop_edges(row_start, N, chunk, n_chunks, VEC)
    cols = offs - row_start
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
    e = _exp(z, FTZ)
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
def _keep_words(w_ptr, wrow, lo_w, N, ok, BLOCK_W: tl.constexpr, PEEL: tl.constexpr, VEC: tl.constexpr,
                ALIGN: tl.constexpr, PHASE: tl.constexpr):
    """PACK's mask: for the BLOCK_W words of `_words` from word `lo_w` of mask row `wrow` (as x's
    rows: N values, the same offset from a 16-byte boundary), int32 words with each 16-bit half
    0xFFFF where the mask keeps that value, else 0 (0 too outside `ok`). The mask's bytes are read
    in pairs and taken as jax's bools, 0 or 1 (the JAX adapter passes only bool masks): a pair
    b0 | b1 << 8 becomes (b0 | b1 << 16) * 0xFFFF. On the GPU (PHASE 3) by a byte permute and a
    multiply (prmt.b32, mul.lo.u32; ptxas adds one permute a word to take the pair out of the loaded
    register), where testing each byte and selecting each value took three instructions a value.
    Two pairs an asm call (pack=2) saved that permute but needs two words a thread, which a chunk of
    few words lacks (tests/test_kernels.py compiles one). The interpreter runs no asm: there by
    shifts and masks."""
    offs, _ = _words(wrow * N, lo_w, N, N, wrow, BLOCK_W, PEEL, VEC, ALIGN)
    p = tl.load(w_ptr.to(tl.pointer_type(tl.int16)) + offs, mask=ok, other=0)
    if PHASE == 3:
        # the pair as bytes 0 and 1 of t; selector nibbles 4 take a zero byte from the second source (0)
        keep = tl.inline_asm_elementwise(
            "{ .reg .b32 t; mov.b32 t, {$1, $1}; prmt.b32 t, t, 0, 0x4140; mul.lo.u32 $0, t, 0xFFFF; }",
            "=r,h", [p], dtype=tl.int32, is_pure=True, pack=1)
    else:
        p = p.to(tl.int32)
        keep = ((p & 0xFF) | ((p & 0xFF00) << 8)) * 0xFFFF
    return keep


@triton.jit
def _coop_where_exact(x_ptr, y_ptr, w_ptr, row, wrow, chunk, N, stride_xm, stride_ym, m, s, LOG: tl.constexpr,
                      io_ty: tl.constexpr, acc_ty: tl.constexpr, CHUNK_W: tl.constexpr, BLOCK_W: tl.constexpr,
                      PEEL: tl.constexpr, VEC: tl.constexpr, ALIGN: tl.constexpr, PHASE: tl.constexpr):
    """PACK's y for chunk `chunk` (CHUNK_W words) of row `row` where the one-op forms do not hold (the
    row max `m` not finite or COOP_FAST_MAX or more in magnitude, or the sum `s` NaN; `m` 0 for a row
    with no kept value): as the unpacked kernel computes it, (x - m) - log(s) and exp(x - m) / s at
    the kept values, 0 (-inf) at the others, from x and the mask read again in tiles of BLOCK_W words
    (kernels/softmax.py's `_coop_fwd_exact`, with the mask)."""
    log_s, inv_s = tl.log(s), 1.0 / s
    xs, ys, lo_w = row * stride_xm, row * stride_ym, chunk * CHUNK_W
    for k in range(0, CHUNK_W, BLOCK_W):
        x_offs, ok = _words(xs, lo_w + k, N, stride_xm, row, BLOCK_W, PEEL, VEC, ALIGN)
        y_offs, _ = _words(ys, lo_w + k, N, stride_ym, row, BLOCK_W, PEEL, VEC, ALIGN)
        keep = _keep_words(w_ptr, wrow, lo_w + k, N, ok, BLOCK_W, PEEL, VEC, ALIGN, PHASE)
        x_lo, x_hi = _unpack(tl.load(x_ptr.to(tl.pointer_type(tl.int32)) + x_offs, mask=ok, other=0), io_ty,
                             acc_ty, False)
        keep_lo, keep_hi = (keep & 0xFFFF) != 0, (keep >> 16) != 0
        if LOG:
            y_lo = tl.where(keep_lo, (x_lo - m) - log_s, -float("inf"))
            y_hi = tl.where(keep_hi, (x_hi - m) - log_s, -float("inf"))
        else:
            y_lo = tl.where(keep_lo, tl.exp(x_lo - m) * inv_s, 0.0)
            y_hi = tl.where(keep_hi, tl.exp(x_hi - m) * inv_s, 0.0)
        tl.store(y_ptr.to(tl.pointer_type(tl.int32)) + y_offs, _pack_x2(y_lo, y_hi, io_ty, True, PHASE), mask=ok)


@triton.jit
def softmax_fwd_coop_where(
    x_ptr, w_ptr, wrow_ptr, M, N, stride_xm, stride_ym, row_div, row_mod, n_chunks, count_init_ptr, part_ptr, count_ptr,
    y_ptr,
    CHUNK_N: tl.constexpr, BLOCK_C: tl.constexpr, TICKET: tl.constexpr, VEC: tl.constexpr, LOG: tl.constexpr,
    ALIGN: tl.constexpr, ACC_FP64: tl.constexpr, ROW_TABLE: tl.constexpr, W_COLS: tl.constexpr,
    SKIP: tl.constexpr, TAG: tl.constexpr, PHASE: tl.constexpr, PEEL: tl.constexpr = False,
    W_PEEL: tl.constexpr = False, PACK: tl.constexpr = False,
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
    (`_coop_edge_tile`) go to the row's first and last chunk. W_PEEL: the mask's rows too (`_tile`).
    PACK (16-bit x, W_COLS, not SKIP; PEEL only with W_PEEL): as kernels/softmax.py's softmax_fwd_coop
    PACK, x is read as 32-bit words of two values and the mask as pairs of bytes (`_keep_words`);
    the values the mask drops become -inf in the words themselves (one LOP3 a word), and only the
    words are held across the wait: y is then computed from them in one op a value, 0 (-inf) at
    the dropped values by itself, but in rows whose max is not finite or COOP_FAST_MAX or more in
    magnitude, or whose sum is NaN (`_coop_where_exact`: x and the mask read again)."""
    count_ptr = count_init_ptr  # the scratch is read and written through its input (module docstring)
    tl.static_assert(not (TAG and ACC_FP64), "TAG: float32 partials only")
    tl.static_assert(not PACK or (W_COLS and not SKIP and (W_PEEL or not PEEL)),
                     "PACK: a mask of N values a row, read by whole words (W_PEEL where PEEL), SKIP off")
    N, stride_xm, stride_ym = _aligned(N, ALIGN), _aligned(stride_xm, ALIGN), _aligned(stride_ym, ALIGN)
    acc_ty = tl.float64 if ACC_FP64 else tl.float32
    row, chunk, t = _coop_take(count_ptr, M, n_chunks, PHASE, TICKET, TAG)
    xs, ys = row * stride_xm, row * stride_ym
    if PACK:
        io_ty = x_ptr.dtype.element_ty
        wrow = _coop_mask_row(wrow_ptr, row, row_div, row_mod, ROW_TABLE)
        lo_w = chunk * (CHUNK_N // 2)
        x_offs, ok = _words(xs, lo_w, N, stride_xm, row, CHUNK_N // 2, PEEL, VEC, ALIGN)
        y_offs, _ = _words(ys, lo_w, N, stride_ym, row, CHUNK_N // 2, PEEL, VEC, ALIGN)
        wx = tl.load(x_ptr.to(tl.pointer_type(tl.int32)) + x_offs, mask=ok, other=0)
        keep_w = _keep_words(w_ptr, wrow, lo_w, N, ok, CHUNK_N // 2, PEEL, VEC, ALIGN, PHASE)
        ninf = tl.full((), -float("inf"), acc_ty)
        wx = (wx & keep_w) | (_pack(ninf, ninf, io_ty) & ~keep_w)  # dropped values (and words past the row): -inf
    else:
        rows, cols, in_bounds, keep, read = _tile(w_ptr, wrow_ptr, row + tl.arange(0, 1), chunk * CHUNK_N, M, N,
                                                  row_div, row_mod, CHUNK_N, VEC, ROW_TABLE, W_COLS, SKIP, False, PEEL,
                                                  W_PEEL, xs)
        x = tl.load(x_ptr + _base(rows * stride_xm, PEEL, VEC) + cols, mask=read, other=-float("inf"))
    if PEEL:
        if not PACK:
            wrow = _mask_row(wrow_ptr, row, row < M, row_div, row_mod, ROW_TABLE)
        e_cols, e_ok, e_keep = _coop_edge_tile(w_ptr, wrow, chunk, n_chunks, N, xs, VEC, W_COLS)
        xe = tl.load(x_ptr + xs + e_cols, mask=e_keep, other=-float("inf")).to(acc_ty)
    tag = _tag_of(count_ptr.to(tl.pointer_type(tl.int64)), t, M * n_chunks, PHASE, TICKET) if TAG else 0
    # The chunk's own max and sum of exp(x - max): a chunk with no kept value (or all -inf) gets
    # max 0 and sum 0 here, and publishes max -inf.
    if PACK:
        x_lo, x_hi = _unpack(wx, io_ty, acc_ty, False)
        m_own = tl.max(tl.maximum(x_lo, x_hi), axis=0)
    else:
        x = tl.where(keep, x.to(acc_ty), -float("inf"))
        m_own = tl.max(tl.max(tl.max(x, axis=2), axis=1), axis=0)
    if PEEL:
        m_own = tl.maximum(m_own, tl.max(xe, axis=0))
    m_own = tl.where(m_own == -float("inf"), 0.0, m_own)
    if PACK:
        s_own = _packed_sum(wx, m_own, io_ty, acc_ty, False, PHASE)
    else:
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
        m, m_safe, s = _combine(m_c, s_c)  # a fully masked row (m_safe 0): every y masked out below
        if not LOG:  # exp(x - m) / s = exp(x - m_own) * (exp(m_own - m) / s), capped at 1 for a chunk of max 0
            # and sum 0 (its e is 0: 0, not 0 * inf)
            scale = tl.minimum(tl.exp(m_own - m_safe), 1.0) / s
        if PACK:  # y from the words held across the wait, one op a value (the dropped values: -inf in)
            if (tl.abs(m) < COOP_FAST_MAX) & (s == s):
                x_lo, x_hi = _unpack(_fresh(wx, PHASE), io_ty, acc_ty, False)
                if LOG:
                    shift = m + tl.log(s)
                    w = _pack_x2(x_lo - shift, x_hi - shift, io_ty, True, PHASE)
                else:  # exp(x - m) / s = 2 ** (x * log2(e) - (m * log2(e) + log2(s)))
                    shift2 = m * LOG2E + tl.log2(s)
                    w = _pack_x2(_exp2_ftz(x_lo * LOG2E - shift2, PHASE), _exp2_ftz(x_hi * LOG2E - shift2, PHASE),
                                 io_ty, True, PHASE)
                tl.store(y_ptr.to(tl.pointer_type(tl.int32)) + y_offs, w, mask=ok)
            else:
                _coop_where_exact(x_ptr, y_ptr, w_ptr, row, wrow, chunk, N, stride_xm, stride_ym, m_safe, s, LOG,
                                  io_ty, acc_ty, CHUNK_N // 2, CHUNK_N // 16, PEEL, VEC, ALIGN, PHASE)
        else:
            if LOG:
                y = tl.where(keep, (x - m_safe) - tl.log(s), -float("inf"))
            else:
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
        e_cols, e_ok, e_keep = _coop_edge_tile(w_ptr, _mask_row(wrow_ptr, row, row < M, row_div, row_mod, ROW_TABLE),
                                               chunk, n_chunks, N, ys, VEC, W_COLS)
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
