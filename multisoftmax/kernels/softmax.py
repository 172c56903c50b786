"""Triton kernels for softmax and log_softmax, forward and backward: the single source of truth.

Every kernel works on a 2-D view: M rows by N columns, the reduction runs along a row,
columns are contiguous (unit stride) and rows are `stride_*m` elements apart. The
adapters (`multisoftmax.torch`, `multisoftmax.jax`) reshape any tensor into that view and
`multisoftmax.dispatch` picks the kernel family and its launch parameters.

Argument order follows `jax_triton.triton_call`: input pointers, then runtime scalars,
then output pointers, then `tl.constexpr` parameters (passed by keyword). The torch
launcher calls them in the same order, so one signature serves both frameworks. The
cooperative kernels (here, in `columns` and in `where`) take one more pointer just before
their outputs, `count_init_ptr`: their int32 scratch (counters, TAG's words), which they read
and write through that input, leaving it as the next launch needs it (zero, or TAG's words),
so that a launcher can hand in a buffer kept from call to call, not an output. The output
`count_ptr` after it is not touched. The torch launcher passes its kept scratch as both
(dispatch.Launch, kind "init"). The JAX adapter passes a constant of its jitted program
(`multisoftmax.jax`, "Kept scratch": XLA loads it once and the kernels leave it fit for the
next call), or zeros that XLA makes for each call, aliased to the output (`input_output_aliases`;
MULTISOFTMAX_JAX_KEPT_SCRATCH=0, and scratch past multisoftmax.jax._KEPT_MAX_WORDS).

Four families, each for softmax (LOG=False) and log_softmax (LOG=True):

* ``*_rows``   BLOCK_M rows x BLOCK_N (>= N) columns per program, held in registers: one
  read, one write. Short rows pack several rows into a program so each moves enough bytes.
* ``*_online`` one row per step, looped in BLOCK_N tiles: a first pass keeps a running max
  and a rescaled running sum (Milakov & Gimelshein 2018, "Online normalizer calculation
  for softmax"; the blog seed's two-pass kernel), a second pass normalizes. The second pass
  walks the row backwards, so it starts on the tiles read last, the likeliest still cached.
* ``*_split``  few long rows: a row is cut into chunks handled by separate programs. The
  first kernel writes per-chunk partial statistics (max and sum, or the backward's dot
  product), the second combines the partials of its row and writes its chunk. It walks
  the chunks in reverse order so the chunks read last by the first kernel, still in L2,
  are read first.

* ``*_coop``   long rows, one read: a row is cut into CHUNK_N-wide chunks, one a program,
  held in registers. A program publishes its chunk's partial statistics, waits until
  every chunk of the row has (a per-row arrival counter), combines them and writes its
  chunk from registers. Programs take their chunk from a ticket counter in the order
  they start, which with at most one chunk a row per SM guarantees the wait ends
  (`dispatch._coop_launches` has the argument); a grid of at most one program per SM is
  resident at once and skips the ticket (TICKET=False: the program id is the item).
  Triton's interpreter runs programs one after another, where a wait would never end:
  there the same kernel runs as two launches, PHASE=1 (partials) then PHASE=2 (combine,
  reload, write); PHASE=3 is the one-launch GPU form. Both directions may hold a 16-bit
  chunk as packed 32-bit words of two values across the wait (PACK), half the registers;
  the log_softmax backward, whose row sum needs dy alone, may load y after it (DEFER_Y).
  Rows of few chunks wait without a counter (TAG): each partial carries the launch's tag,
  and a program reads its row's partials until all do (see "Tagged partials" below). The
  forward of some long rows waits on the counter without a release fence (SENT: partials
  as keyed words that show whether they are written yet; see "Keyed partials" below). The
  softmax forward may compute half its exps after the wait by a polynomial on the FMA pipe,
  beside the MUFU unit's ex2 (POLY, `_exp2_poly`), and the forward may round its packed y to
  16-bit pairs by one conversion instruction a word (CVT_X2, `_pack_x2`); its first wave (the programs
  the GPU holds at once) may start over a ramp rather than all at once (STAGGER, `_stagger`). The backward of long
  rows in larger grids runs pipelined (``softmax_bwd_pipe``): a persistent grid whose programs
  load and publish their next chunk before they wait for the row of the chunk they hold; the
  float32 forward may run alike (``softmax_fwd_pipe``).

Arithmetic: float16/bfloat16/float32 inputs are computed in float32, float64 in float64
(ACC_FP64), and the result is stored in the output pointer's dtype.

Special values follow torch/jax: a NaN or a +inf anywhere in a row makes the whole row
NaN, an all -inf row is NaN, large magnitudes don't overflow (the row max is subtracted
first). Masked lanes load -inf (forward) or 0 (backward) so they add nothing to a
reduction; the running statistics guard the max == -inf case so that a leading all -inf
tile does not poison the sum of a row that has finite values further on.

Offsets are 64-bit (row index cast to int64 before it meets a stride), so tensors of more
than 2**31 elements are addressed correctly; N itself must be < 2**31. The one exception is
softmax_fwd_rows with OFFS32, which dispatch sets only where every offset fits in 32 bits
(dispatch.fits_int32).

ALIGN: a constexpr power of two, up to 16, that divides N and every stride and chunk length
of the launch (dispatch.alignment). Each such value v is rewritten as (v // ALIGN) * ALIGN:
the same number, in a form whose divisibility the compiler can prove (tl.multiple_of on a
scalar argument is dropped), so masks are uniform over 16-byte vectors and rows start
aligned, and loads are vectorized. Triton's own launcher infers this from the values (the
torch path), but jax_triton.triton_call gives scalars no such specialization.
"""

import triton
import triton.language as tl

LOG2E = tl.constexpr(1.4426950408889634)  # log2(e): exp(v) = 2 ** (v * LOG2E)
# The packed cooperative forward (PACK) writes y after its wait in one op a value, x - (m + log(s)) and
# 2 ** (x * log2(e) - (m * log2(e) + log2(s))): right for rows whose max m lies below COOP_FAST_MAX in
# magnitude, where each rounding of those sums is 2 ** -16 at most (at m = 1e8 it is 4: log(s) is lost).
# Other rows take `_coop_fwd_exact`. Its sum before the wait takes l = log2(e) * 2 ** 15 / |m| in place
# of log2(e) in chunks whose max reaches COOP_SCALED_L_MIN in magnitude (bfloat16 alone).
COOP_FAST_MAX = tl.constexpr(256.0)
COOP_SCALED_L_MIN = tl.constexpr(16777216.0)


@triton.jit
def _aligned(v, ALIGN: tl.constexpr):
    """v itself, as (v // ALIGN) * ALIGN when ALIGN > 1: see ALIGN in the module docstring."""
    if ALIGN > 1:
        v = (v // ALIGN) * ALIGN
    return v


@triton.jit
def _row_ok(rows, M, BLOCK_M: tl.constexpr, EVEN_M: tl.constexpr, ALIGN_M: tl.constexpr):
    """(BLOCK_M, 1) mask of the rows kernels' `rows` that exist. EVEN_M (M a multiple of
    BLOCK_M): all of them, no compare. Otherwise rows < M, with M as (M // ALIGN_M) * ALIGN_M
    (ALIGN_M = 16 where M is a multiple of 16, else 1): what Triton's own launcher (torch) tells
    the compiler of M and jax_triton does not, so both launchers compile the same code."""
    if EVEN_M:
        ok = tl.full((BLOCK_M, 1), 1, tl.int1)
    else:
        ok = (rows < _aligned(M, ALIGN_M))[:, None]
    return ok


@triton.jit
def _base(row_start, PEEL: tl.constexpr, VEC: tl.constexpr):
    """Where a row's body starts, in elements from the tensor's start: the row's start `row_start`
    (a scalar or a column of rows), or with PEEL the row's first 16-byte boundary, a multiple of VEC
    the compiler can see, so that loads from it vectorize (`_body`, `_edges`, kernels/where.py)."""
    if PEEL:
        row_start = ((row_start + (VEC - 1)) // VEC) * VEC
    return row_start


@triton.jit
def _body(row_start, lo, N, BLOCK_N: tl.constexpr, PEEL: tl.constexpr, VEC: tl.constexpr):
    """Offsets (from the tensor's start) and mask of BLOCK_N values of the row that begins at
    element `row_start` (a scalar or a column of rows), starting `lo` values into its body.

    Without PEEL the body is the whole row. With PEEL (rows not 16-byte aligned) it runs from
    the row's first 16-byte boundary to its last, so it is loaded in VEC-wide vectors; the
    few values before and after it are the row's edges (`_edges`).
    """
    cols = lo + tl.arange(0, BLOCK_N)
    if PEEL:
        start = _base(row_start, True, VEC)
        offs = start + cols
        # The body's length, a multiple of VEC too; compared in 32 bits (64-bit compares per
        # value cost the forward pass ~10% of its bandwidth).
        mask = cols < (((row_start + N) // VEC) * VEC - start).to(tl.int32)
    else:
        offs = row_start + cols
        mask = cols < N
    return offs, mask


@triton.jit
def _edges(row_start, N, VEC: tl.constexpr):
    """Offsets and mask of a PEEL row's edges, 2 * VEC lanes: the head (values before the first
    16-byte boundary, even lanes) and the tail (after the last one, odd lanes).

    Interleaved, not head then tail. Either way Triton 3.6 (the GPU's) loads the edges in the body's
    layout, VEC values a thread and every thread a copy; with head then tail (offsets that run VEC
    in a row) it stored them laid out across the warps' rows, interleaved it stores them along a
    warp's lanes, and the H200's 16-bit forward of peeled 16385-value rows at 16 warps took 61
    registers a thread, not 86, and ran 1.7x faster (bench/DISPATCH.md, ROWS_PEELED16_FWD_WARPS)."""
    k = tl.arange(0, 2 * VEC)
    start = _base(row_start, True, VEC)
    end = row_start + N
    hi = (end // VEC) * VEC
    head = (k % 2) == 0
    offs = tl.where(head, row_start + k // 2, hi + k // 2)
    # A row inside one 16-byte cell (hi < start) is all head.
    mask = (offs < end) & ((head & (offs < start)) | (~head & (offs >= start)))
    return offs, mask, head


@triton.jit
def _words(row_start, lo_w, N, stride, row, BLOCK_W: tl.constexpr, PEEL: tl.constexpr, VEC: tl.constexpr,
           ALIGN: tl.constexpr):
    """As `_body`, in 32-bit words of two 16-bit values (PACK): word offsets (from the
    tensor's start) and mask of BLOCK_W words of the body of row `row` (which begins at
    element `row_start` = row * stride), starting `lo_w` words into it. With PEEL the body
    runs between the row's 16-byte boundaries; without, N and the stride are multiples of
    ALIGN >= 2 values, so the whole row is whole words."""
    cols = lo_w + tl.arange(0, BLOCK_W)
    if PEEL:
        start_w = ((row_start + (VEC - 1)) // VEC) * (VEC // 2)
        end_w = ((row_start + N) // VEC) * (VEC // 2)
        offs = start_w + cols
        mask = cols < (end_w - start_w).to(tl.int32)
    else:
        offs = row * ((stride // ALIGN) * (ALIGN // 2)) + cols
        mask = cols < (N // ALIGN) * (ALIGN // 2)
    return offs, mask


@triton.jit
def _unpack(w, dtype: tl.constexpr, acc_ty: tl.constexpr, BITS: tl.constexpr):
    """The two 16-bit values of each word of `w` (int32), as acc_ty: (low half, high half),
    that is (even element, odd element) on a little-endian GPU. BITS: bfloat16 to float32 by
    bit operations (a bfloat16 is a float32's high half), not by conversions."""
    if BITS and dtype == tl.bfloat16 and acc_ty == tl.float32:
        lo = (w << 16).to(tl.float32, bitcast=True)
        hi = (w & -65536).to(tl.float32, bitcast=True)
    else:
        lo = w.to(tl.int16).to(dtype, bitcast=True).to(acc_ty)
        hi = (w >> 16).to(tl.int16).to(dtype, bitcast=True).to(acc_ty)
    return lo, hi


@triton.jit
def _pack(lo, hi, dtype: tl.constexpr):
    """Words of two 16-bit values: `lo` and `hi` rounded to dtype (the inverse of _unpack)."""
    lo16 = lo.to(dtype).to(tl.int16, bitcast=True).to(tl.int32) & 0xFFFF
    hi16 = hi.to(dtype).to(tl.int16, bitcast=True).to(tl.int32)
    return lo16 | (hi16 << 16)


@triton.jit
def _pack_x2(lo, hi, dtype: tl.constexpr, X2: tl.constexpr, PHASE: tl.constexpr):
    """`_pack`, with X2 (softmax_fwd_coop's CVT_X2) by one cvt.rn.bf16x2.f32 (float16:
    cvt.rn.f16x2.f32) a word on the GPU (PHASE 3), as Triton itself converts float32 tensors to
    16-bit ones, where `_pack`'s two scalar conversions and the byte permutes that pair them take
    three to four instructions a word. The same bits: both round to nearest even (NaN's bits too:
    tests/test_gpu.py compares them). The interpreter runs no asm: there it is `_pack`."""
    if X2 and PHASE == 3:
        if dtype == tl.bfloat16:
            w = tl.inline_asm_elementwise("cvt.rn.bf16x2.f32 $0, $2, $1;", "=r,f,f", [lo, hi], dtype=tl.int32,
                                          is_pure=True, pack=1)
        else:
            w = tl.inline_asm_elementwise("cvt.rn.f16x2.f32 $0, $2, $1;", "=r,f,f", [lo, hi], dtype=tl.int32,
                                          is_pure=True, pack=1)
    else:
        w = _pack(lo, hi, dtype)
    return w


@triton.jit
def _fresh(w, PHASE: tl.constexpr):
    """`w` itself, through a copy the compiler cannot see through (PHASE 3, the GPU): values
    computed from it afterwards are computed anew there, so that only the packed words, not
    the float32 values unpacked from them earlier, stay in registers (PACK). The interpreter
    runs no asm: there it is `w`."""
    if PHASE == 3:
        w = tl.inline_asm_elementwise("mov.b32 $0, $1;", "=r,r", [w], dtype=tl.int32, is_pure=False, pack=1)
    return w


@triton.jit
def _exp2_ftz(z, PHASE: tl.constexpr):
    """2 ** z (float32) by one MUFU.EX2 on the GPU (PHASE 3): `ex2.approx.ftz`, which flushes
    results below 2 ** -126 to 0, where tl.exp's `ex2.approx` adds a compare and two
    multiplies a value to keep them. For 16-bit outputs only (PACK), whose smallest values
    (bfloat16: 2 ** -133, float16: 2 ** -24) such a result rounds to or near 0 anyway. The
    interpreter runs no asm: there it is tl.exp2."""
    if PHASE == 3:
        z = tl.inline_asm_elementwise("ex2.approx.ftz.f32 $0, $1;", "=f,f", [z], dtype=tl.float32, is_pure=True,
                                      pack=1)
    else:
        z = tl.exp2(z)
    return z


# `_exp2_ftz`'s PHASE for `_exp_ftz`: 3 (its ex2.approx.ftz) compiled; under Triton's interpreter, which runs no asm,
# 1 (tl.exp2), so that CI runs the arithmetic of the kernels' FTZ paths but for the flush.
_FTZ_PHASE = tl.constexpr(1 if triton.knobs.runtime.interpret else 3)


@triton.jit
def _exp_ftz(z):
    """exp(z) (float32) by one FMUL and one MUFU.EX2 (`_exp2_ftz`): results below 2 ** -126 are flushed to 0,
    where tl.exp adds a compare and two multiplies a value to keep them (the FTZ of kernels/columns.py,
    kernels/where.py and softmax_fwd_rows, through `_exp`)."""
    return _exp2_ftz(z * LOG2E, _FTZ_PHASE)


@triton.jit
def _exp(z, FTZ: tl.constexpr):
    """exp(z) (float32): by `_exp_ftz` where FTZ (results below 2 ** -126 flushed to 0), else tl.exp."""
    if FTZ:
        z = _exp_ftz(z)
    else:
        z = tl.exp(z)
    return z


@triton.jit
def _exp2_poly(z):
    """2 ** z (float32) on the FMA and integer pipes, not on MUFU (POLY): about ten instructions a
    value that issue beside the MUFU.EX2 of `_exp2_ftz`, whose 4 lanes an SM quarter (8 cycles a
    warp's instruction) bound the softmax forward's post-wait phase. 2 ** z = 2 ** j * p(f) with
    j = round(z) (adding then subtracting 1.5 * 2 ** 23), f = z - j in [-0.5, 0.5] and p a degree-4
    polynomial fitted to 2 ** f for least relative error, p(0) = 1: at most 2.9e-6 relative error
    (a float16 ulp is up to 2 ** -10 = 9.8e-4 of its value); 2 ** j is built in the exponent bits,
    j clamped below at -127, where the result is exactly 0 (so -inf gives 0), as `_exp2_ftz`
    flushes results below 2 ** -126; NaN stays NaN (a NaN-propagating max, then NaN * 2 ** j).
    The idea is FlashAttention-4's exponential emulation by polynomials (Zadouri, Hoehnerbach,
    Shah, Liu, Thakkar and Dao: part of the exps on the FMA units, the SFUs being the bound); the
    coefficients are our own fit (tests/test_kernels.py::test_exp2_poly checks the error bound)."""
    z = tl.maximum(z, -127.0, propagate_nan=tl.PropagateNan.ALL)
    r = z + 12582912.0  # 1.5 * 2 ** 23: the sum's low mantissa bits hold round(z)
    f = z - (r - 12582912.0)
    p = ((((0.009582726679034264 * f + 0.05590605891407117) * f + 0.2402409860715051) * f
          + 0.6931242444227651) * f + 1.0)
    scale = ((r.to(tl.int32, bitcast=True) << 23) + 0x3F800000).to(tl.float32, bitcast=True)  # 2 ** j
    return p * scale


@triton.jit
def _packed_sum(wx, m_own, io_ty: tl.constexpr, acc_ty: tl.constexpr, SPLIT_SUM: tl.constexpr, PHASE: tl.constexpr):
    """The sum of exp(x - m_own) over the 16-bit values of the words `wx` (int32, 1-D; -inf
    values add 0), m_own their max (0 where all are -inf), for the packed cooperative forwards
    (PACK): exp(x - m) as 2 ** (x * l - m2), m2 = m * l rounded, one FFMA and one MUFU a value,
    the words unpacked anew (`_fresh`). SPLIT_SUM: as softmax_fwd_coop's."""
    x_lo, x_hi = _unpack(_fresh(wx, PHASE), io_ty, acc_ty, False)
    # l = log2(e) for |m| < 2 ** 24. Past it (bfloat16 alone; m * log2(e) overflows float32 past 2 ** 127)
    # l = log2(e) * 2 ** 15 / |m|: another value lies at least |m| / 2 ** 8 below m, so its 2 ** ((x - m) * l)
    # is below 2 ** -184, 0, as its exp(x - m) is.
    l = tl.where(tl.abs(m_own) < COOP_SCALED_L_MIN, LOG2E, (LOG2E * 32768.0) / tl.abs(m_own))
    m2 = m_own * l
    if SPLIT_SUM:  # the low halves, then the high halves unpacked anew: fewer registers at 4 warps
        s_own = tl.sum(_exp2_ftz(tl.fma(x_lo, l, -m2), PHASE), axis=0)
        x_hi = _unpack(_fresh(wx, PHASE), io_ty, acc_ty, False)[1]
        s_own += tl.sum(_exp2_ftz(tl.fma(x_hi, l, -m2), PHASE), axis=0)
    else:
        s_own = tl.sum(_exp2_ftz(tl.fma(x_lo, l, -m2), PHASE)
                       + _exp2_ftz(tl.fma(x_hi, l, -m2), PHASE), axis=0)
    # The FMA takes x * l exactly, so a value at the max gives 2 ** r, r = m * l - m2 (the product's
    # rounding: up to 2 for |m| < 2 ** 24, 2 ** -9 past it), taken out here once, exactly (an FMA).
    return s_own * tl.exp2(-tl.fma(m_own, l, -m2))


# --------------------------------------------------------------------------------------
# forward
# --------------------------------------------------------------------------------------
@triton.jit
def softmax_fwd_rows(
    x_ptr, M, N, stride_xm, stride_ym, y_ptr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, TAIL_N: tl.constexpr, PEEL: tl.constexpr,
    VEC: tl.constexpr, LOG: tl.constexpr, ALIGN: tl.constexpr, ACC_FP64: tl.constexpr, EVEN_M: tl.constexpr,
    ALIGN_M: tl.constexpr, EVEN_N: tl.constexpr, OFFS32: tl.constexpr, FTZ: tl.constexpr = False,
    SAME_STRIDES: tl.constexpr = False,
):
    # A row is held as a BLOCK_N segment plus, when TAIL_N > 0, a TAIL_N segment: the values
    # past BLOCK_N (both powers of two: N = 16384 + 1 takes 16384 + 1 lanes, not 32768), or
    # with PEEL the row's unaligned edges (`_body`, `_edges`; then stride_ym == stride_xm).
    # EVEN_M: M is a multiple of BLOCK_M, so every row of every program exists and no row is
    # masked; else ALIGN_M (`_row_ok`). Triton's own launcher, the torch adapter's, tells the
    # compiler when M is a multiple of 16, jax_triton does not: without either the two
    # adapters ran different code. EVEN_N: N == BLOCK_N (no tail, no PEEL), so no column is
    # masked either; with EVEN_M every load and store is unpredicated. OFFS32: the offsets
    # are computed in 32 bits (the launcher has checked that every row's fit), not 64: fewer
    # registers for the 16-bit forward of short rows (dispatch.ROWS_FWD16_OFFS32_LANES). FTZ (16-bit y,
    # float32 arithmetic): the exps by `_exp_ftz`, a y below 2 ** -126 (a bfloat16 subnormal) becoming 0.
    # SAME_STRIDES (stride_ym == stride_xm, which dispatch has checked): y's offsets are x's, not
    # computed again (dispatch.ROWS_FWD32_OFFS32, ROWS_FWD16_SAME_LANES).
    N, stride_xm, stride_ym = _aligned(N, ALIGN), _aligned(stride_xm, ALIGN), _aligned(stride_ym, ALIGN)
    acc_ty = tl.float64 if ACC_FP64 else tl.float32
    pid = tl.program_id(0)
    rows = (pid if OFFS32 else pid.to(tl.int64)) * BLOCK_M + tl.arange(0, BLOCK_M)
    row_ok = _row_ok(rows, M, BLOCK_M, EVEN_M, ALIGN_M)
    xs = rows[:, None] * stride_xm
    ys = xs if SAME_STRIDES else rows[:, None] * stride_ym
    x_offs, mask = _body(xs, 0, N, BLOCK_N, PEEL, VEC)
    y_offs = x_offs if SAME_STRIDES else _body(ys, 0, N, BLOCK_N, PEEL, VEC)[0]
    if EVEN_N:
        mask = tl.full((1, BLOCK_N), 1, tl.int1)
    mask = row_ok & mask
    x = tl.load(x_ptr + x_offs, mask=mask, other=-float("inf")).to(acc_ty)
    x_max = tl.max(x, axis=1)
    if TAIL_N > 0:
        if PEEL:
            xt_offs, t_mask, _ = _edges(xs, N, VEC)
            yt_offs = xt_offs
        else:
            t_cols = BLOCK_N + tl.arange(0, TAIL_N)
            xt_offs, yt_offs, t_mask = xs + t_cols, ys + t_cols, t_cols < N
        t_mask = row_ok & t_mask
        xt = tl.load(x_ptr + xt_offs, mask=t_mask, other=-float("inf")).to(acc_ty)
        x_max = tl.maximum(x_max, tl.max(xt, axis=1))
    z = x - x_max[:, None]
    e = _exp(z, FTZ)
    s = tl.sum(e, axis=1)
    if TAIL_N > 0:
        zt = xt - x_max[:, None]
        et = _exp(zt, FTZ)
        s += tl.sum(et, axis=1)
    if LOG:
        log_s = tl.log(s)[:, None]
        y = z - log_s
    else:
        inv_s = (1.0 / s)[:, None]
        y = e * inv_s
    tl.store(y_ptr + y_offs, y.to(y_ptr.dtype.element_ty), mask=mask)
    if TAIL_N > 0:
        if LOG:
            yt = zt - log_s
        else:
            yt = et * inv_s
        tl.store(y_ptr + yt_offs, yt.to(y_ptr.dtype.element_ty), mask=t_mask)


@triton.jit
def _online_update(m, s, x):
    """Fold one tile `x` into the running max `m` and the sum `s` of exp(x - m)."""
    m_new = tl.maximum(m, tl.max(x, axis=0))
    # While every value seen is -inf, keep the sum at 0 instead of exp(-inf - -inf) = NaN.
    m_safe = tl.where(m_new == -float("inf"), 0.0, m_new)
    s = s * tl.exp(m - m_safe) + tl.sum(tl.exp(x - m_safe), axis=0)
    return m_new, s


@triton.jit
def _normalize(x, m, s, LOG: tl.constexpr):
    """y from x and the row's max `m` and sum `s` (an all -inf row gives NaN, as torch)."""
    if LOG:
        y = x - m - tl.log(s)
    else:
        y = tl.exp(x - m) * (1.0 / s)
    return y


@triton.jit
def softmax_fwd_online(
    x_ptr, M, N, stride_xm, stride_ym, y_ptr,
    BLOCK_N: tl.constexpr, LOG: tl.constexpr, ALIGN: tl.constexpr, ACC_FP64: tl.constexpr,
):
    N, stride_xm, stride_ym = _aligned(N, ALIGN), _aligned(stride_xm, ALIGN), _aligned(stride_ym, ALIGN)
    acc_ty = tl.float64 if ACC_FP64 else tl.float32
    cols = tl.arange(0, BLOCK_N)
    n_tiles = tl.cdiv(N, BLOCK_N)
    for row in range(tl.program_id(0), M, tl.num_programs(0)):
        x_row = x_ptr + tl.cast(row, tl.int64) * stride_xm
        y_row = y_ptr + tl.cast(row, tl.int64) * stride_ym
        m = tl.full((), -float("inf"), acc_ty)
        s = tl.zeros((), acc_ty)
        for start in range(0, N, BLOCK_N):
            x = tl.load(x_row + start + cols, mask=start + cols < N, other=-float("inf")).to(acc_ty)
            m, s = _online_update(m, s, x)
        # Second pass backwards: the tiles read last are the likeliest still in L2 (or L1).
        for i in range(0, n_tiles):
            start = (n_tiles - 1 - i) * BLOCK_N
            mask = start + cols < N
            x = tl.load(x_row + start + cols, mask=mask, other=-float("inf")).to(acc_ty)
            tl.store(y_row + start + cols, _normalize(x, m, s, LOG).to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def softmax_fwd_split_stats(
    x_ptr, M, N, stride_xm, CHUNK, n_chunks, m_part_ptr, s_part_ptr,
    BLOCK_N: tl.constexpr, ALIGN: tl.constexpr, ACC_FP64: tl.constexpr,
):
    """Partial max and sum of exp(x - max) of chunk `pid(1)` of row `pid(0)`: (M, n_chunks)."""
    N, stride_xm, CHUNK = _aligned(N, ALIGN), _aligned(stride_xm, ALIGN), _aligned(CHUNK, ALIGN)
    acc_ty = tl.float64 if ACC_FP64 else tl.float32
    row = tl.program_id(0).to(tl.int64)
    chunk = tl.program_id(1)
    cols = tl.arange(0, BLOCK_N)
    x_row = x_ptr + row * stride_xm
    lo = chunk * CHUNK
    hi = tl.minimum(lo + CHUNK, N)
    m = tl.full((), -float("inf"), acc_ty)
    s = tl.zeros((), acc_ty)
    for start in range(lo, hi, BLOCK_N):
        x = tl.load(x_row + start + cols, mask=start + cols < hi, other=-float("inf")).to(acc_ty)
        m, s = _online_update(m, s, x)
    tl.store(m_part_ptr + row * n_chunks + chunk, m)
    tl.store(s_part_ptr + row * n_chunks + chunk, s)


@triton.jit
def _combine(m_c, s_c):
    """A row's max and sum from its chunks' partials m_c, s_c (1-D: a chunk's max, -inf for an all -inf
    chunk, and its sum of exp(x - max)): the max of the maxes, the same with 0 where every one is -inf,
    and the sums rescaled to the latter (an all -inf chunk's sum, 0, stays 0). As columns.py's
    `_cols_combine`, a column at a time."""
    m = tl.max(m_c, axis=0)
    m_safe = tl.where(m == -float("inf"), 0.0, m)
    return m, m_safe, tl.sum(s_c * tl.exp(m_c - m_safe), axis=0)


@triton.jit
def _row_partials(part_row, n_chunks, BLOCK_C: tl.constexpr):
    """A row's n_chunks partials (its chunks' maxima, then their sums: 2 * n_chunks float32 from `part_row`) as
    BLOCK_C-lane vectors for `_combine` (masked lanes -inf and 0), read with volatile loads: after the row's
    wait, where other programs wrote them (softmax_fwd_coop on counters, softmax_fwd_pipe)."""
    c = tl.arange(0, BLOCK_C)
    m_c = tl.load(part_row + c, mask=c < n_chunks, other=-float("inf"), volatile=True)
    s_c = tl.load(part_row + n_chunks + c, mask=c < n_chunks, other=0.0, volatile=True)
    return m_c, s_c


@triton.jit
def softmax_fwd_split_norm(
    x_ptr, m_part_ptr, s_part_ptr, M, N, stride_xm, stride_ym, CHUNK, n_chunks, y_ptr,
    BLOCK_N: tl.constexpr, BLOCK_C: tl.constexpr, LOG: tl.constexpr, ALIGN: tl.constexpr,
    ACC_FP64: tl.constexpr,
):
    N, stride_xm, stride_ym, CHUNK = (
        _aligned(N, ALIGN), _aligned(stride_xm, ALIGN), _aligned(stride_ym, ALIGN), _aligned(CHUNK, ALIGN))
    acc_ty = tl.float64 if ACC_FP64 else tl.float32
    # Reverse order: the first kernel read the last chunks last, so they are still in L2.
    row = (M - 1 - tl.program_id(0)).to(tl.int64)
    chunk = n_chunks - 1 - tl.program_id(1)
    # Combine the row's partials: max of maxes, sums rescaled to it (an all -inf chunk has s = 0).
    c = tl.arange(0, BLOCK_C)
    m_c = tl.load(m_part_ptr + row * n_chunks + c, mask=c < n_chunks, other=-float("inf"))
    s_c = tl.load(s_part_ptr + row * n_chunks + c, mask=c < n_chunks, other=0.0)
    m, _, s = _combine(m_c, s_c)
    cols = tl.arange(0, BLOCK_N)
    x_row = x_ptr + row * stride_xm
    y_row = y_ptr + row * stride_ym
    lo = chunk * CHUNK
    hi = tl.minimum(lo + CHUNK, N)
    n_tiles = tl.cdiv(hi - lo, BLOCK_N)
    for i in range(0, n_tiles):  # backwards within the chunk as well
        start = lo + (n_tiles - 1 - i) * BLOCK_N
        mask = start + cols < hi
        x = tl.load(x_row + start + cols, mask=mask, other=-float("inf")).to(acc_ty)
        tl.store(y_row + start + cols, _normalize(x, m, s, LOG).to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _wait_for_row(count_ptr, row, n_chunks):
    """Arrive at the row's counter, then spin until all n_chunks programs of the row have.

    The partials stored before are made visible first: the CTA barrier orders every
    thread's stores before the release of the arrival; the acquire of the last read orders
    the partial loads after it.
    """
    tl.debug_barrier()
    arrived = tl.atomic_add(count_ptr + row, 1, sem="acq_rel", scope="gpu") + 1
    while arrived < n_chunks:
        arrived = tl.atomic_add(count_ptr + row, 0, sem="acquire", scope="gpu")
    tl.debug_barrier()


@triton.jit
def _leave_row(count_ptr, row, n_chunks):
    """Arrive a second time, past the wait; the last of the row's 2 * n_chunks arrivals (every
    program of the row has left its wait) sets the counter back to 0 for the next launch."""
    left = tl.atomic_add(count_ptr + row, 1, sem="relaxed", scope="gpu") + 1
    if left == 2 * n_chunks:
        tl.atomic_xchg(count_ptr + row, 0, sem="relaxed", scope="gpu")


@triton.jit
def _coop_item(count_ptr, M, n_chunks, PHASE: tl.constexpr, TICKET: tl.constexpr):
    """This program's (row, chunk). One launch (PHASE 3) with TICKET: the item
    (row * n_chunks + chunk) is the next ticket of the counter after the row counters, so
    items go out in the order programs start (dispatch._coop_launches: why every wait then
    ends); the program that takes the last ticket sets the counter back to 0 (no ticket is
    taken after it). Without TICKET (a grid the GPU holds at once) and interpreted phases:
    the program id."""
    if PHASE == 3 and TICKET:
        item = tl.atomic_add(count_ptr + M, 1, sem="relaxed", scope="gpu")
        if item == M * n_chunks - 1:
            tl.atomic_xchg(count_ptr + M, 0, sem="relaxed", scope="gpu")
    else:
        item = tl.program_id(0)
    return (item // n_chunks).to(tl.int64), item % n_chunks


@triton.jit
def _clock():
    """The SM's cycle counter (%clock64)."""
    return tl.inline_asm_elementwise("mov.u64 $0, %clock64;", "=l", [], dtype=tl.int64, is_pure=False, pack=1)


@triton.jit
def _stagger(item, STAGGER: tl.constexpr, FIRST: tl.constexpr):
    """STAGGER (the GPU's one-launch form, PHASE 3): the program of item `item` < FIRST (the first
    wave: the programs the GPU holds at once) spins item / FIRST of STAGGER SM cycles before its loads,
    so that the first wave starts as a ramp, not all at once (dispatch.COOP_STAGGER_CYCLES: why)."""
    if item < FIRST:
        wait = (item * STAGGER) // FIRST
        c0 = _clock()
        c1 = _clock()
        while c1 - c0 < wait:
            c1 = _clock()


# Tagged partials (TAG): the cooperative kernels' other way to wait for a row, without arrival
# counters. sync (int64, read through count_ptr): sync[0] = generation << 32 | ticket, then one
# 64-bit slot a partial: the launch's tag (generation + 1) << 32 | the partial's float32 bits.
# Each launch raises the generation by one (the program that takes its last ticket), so a slot
# holds this launch's tag only once this launch has written it: a program waits by reading
# its row's slots until all hold its tag. No counter to reset, no second arrival; the slots
# carry the data, so no release/acquire order is needed between a partial and a flag either.
# The buffer starts zeroed (the launchers) and never needs zeroing again.


@triton.jit
def _tag_take(sync_ptr, n_chunks, PHASE: tl.constexpr, TICKET: tl.constexpr):
    """TAG: this program's (row, chunk) and the ticket word it took (PHASE 3 with TICKET: the
    item is the ticket, so items go out in the order programs start), else 0 (none taken yet:
    the item is the program id)."""
    t = tl.full((), 0, tl.int64)
    if PHASE == 3 and TICKET:
        t = tl.atomic_add(sync_ptr, 1, sem="relaxed", scope="gpu")
        item = (t & 0xFFFFFFFF).to(tl.int32)
    else:
        item = tl.program_id(0)
    return (item // n_chunks).to(tl.int64), item % n_chunks, t


@triton.jit
def _tag_of(sync_ptr, t, total, PHASE: tl.constexpr, TICKET: tl.constexpr):
    """TAG: this launch's tag. A program that took no ticket (`_tag_take`) takes one now: called
    between its loads and their first use, so that the atomic's round trip overlaps theirs.
    The taker of the last of the `total` tickets raises the generation and sets the ticket back
    to 0 (every ticket of the launch is taken by then). PHASE 2 (interpreted, after PHASE 1):
    the generation PHASE 1 left, which is PHASE 1's tag."""
    if PHASE == 2:
        tag = tl.atomic_add(sync_ptr, 0, sem="relaxed", scope="gpu") >> 32
    else:
        if not (PHASE == 3 and TICKET):
            t = tl.atomic_add(sync_ptr, 1, sem="relaxed", scope="gpu")
        if (t & 0xFFFFFFFF).to(tl.int32) == total - 1:
            tl.atomic_add(sync_ptr, (tl.full((), 1, tl.int64) << 32) - total, sem="relaxed", scope="gpu")
        tag = (t >> 32) + 1
    return tag


@triton.jit
def _tag_publish(slot_ptr, v, tag):
    """TAG: write the float32 partial `v` with `tag` into its slot, by an atomic exchange: it goes
    to L2 at once, where the readers' atomics see it (a plain store measured slower)."""
    word = (tag << 32) | (v.to(tl.int32, bitcast=True).to(tl.int64) & 0xFFFFFFFF)
    tl.atomic_xchg(slot_ptr, word, sem="relaxed", scope="gpu")


@triton.jit
def _tag_read(slot_ptr, c, ok, tag):
    """TAG: the slots slot_ptr[c] where `ok`, by atomic reads (L2, never a stale copy; plain
    volatile loads measured slower); elsewhere a word holding `tag`."""
    return tl.where(ok, tl.atomic_add(slot_ptr + c, 0, mask=ok, sem="relaxed", scope="gpu"), tag << 32)


@triton.jit
def _tag_gather(slot_ptr, n_chunks, tag, BLOCK_C: tl.constexpr, PARTS: tl.constexpr, PHASE: tl.constexpr):
    """TAG: the row's partials (PARTS arrays of n_chunks slots from slot_ptr: the forward's max
    and sum, the backward's sum) as float32 vectors of BLOCK_C, once every slot holds `tag`
    (PHASE 3: read again until they do; PHASE 2, interpreted: read once, and a slot without the
    tag gives NaN). Lanes past n_chunks: -inf (first array of two), else 0."""
    c = tl.arange(0, BLOCK_C)
    ok = c < n_chunks
    a = _tag_read(slot_ptr, c, ok, tag)
    if PARTS == 2:
        b = _tag_read(slot_ptr + n_chunks, c, ok, tag)
        if PHASE == 3:
            while tl.min((((a >> 32) == tag) & ((b >> 32) == tag)).to(tl.int32), axis=0) == 0:
                a = _tag_read(slot_ptr, c, ok, tag)
                b = _tag_read(slot_ptr + n_chunks, c, ok, tag)
    else:  # (one loop-carried value: the same value carried twice crashed Triton 3.6's compiler)
        if PHASE == 3:
            while tl.min(((a >> 32) == tag).to(tl.int32), axis=0) == 0:
                a = _tag_read(slot_ptr, c, ok, tag)
        b = a
    a_f = tl.where((a >> 32) == tag, (a & 0xFFFFFFFF).to(tl.int32).to(tl.float32, bitcast=True), float("nan"))
    b_f = tl.where((b >> 32) == tag, (b & 0xFFFFFFFF).to(tl.int32).to(tl.float32, bitcast=True), float("nan"))
    if PARTS == 2:
        a_f = tl.where(ok, a_f, -float("inf"))
    else:
        a_f = tl.where(ok, a_f, 0.0)
    return a_f, tl.where(ok, b_f, 0.0)


# Keyed partials (SENT): the forward's arrival counters without the release fence of the
# arrival (an atomic with release semantics waits until the partials it publishes are stored).
# A float32 partial is published by a relaxed atomic exchange as its bits XOR SENT_KEY, a NaN
# payload no partial has once NaNs are made canonical, so a zero word is one not yet written.
# The arrival and the polls of the counter are relaxed; once the counter says every chunk of
# the row has arrived, a program reads the row's words until none is zero (the counter may be
# seen before a word is). The words follow the counters and the ticket in the "zeros" buffer
# (count_ptr + M + 1 + row * 2 * n_chunks), and the last of a row's 2 * n_chunks arrivals
# (every warp of every program of the row has read the words: `_sent_leave` waits for its
# program's warps first) sets them and the counter back to zero.
SENT_KEY = tl.constexpr(0x7FBADBAD)


@triton.jit
def _sent_word(v):
    """SENT: the float32 partial `v` as its keyed word (never zero: NaNs made canonical)."""
    v = tl.where(v != v, float("nan"), v)
    return v.to(tl.int32, bitcast=True) ^ SENT_KEY


@triton.jit
def _sent_arrive(count_ptr, row, n_chunks, PHASE: tl.constexpr):
    """SENT: arrive at the row's counter (relaxed: the words carry their own validity), then
    (PHASE 3) spin on it until all n_chunks programs of the row have."""
    tl.debug_barrier()
    arrived = tl.atomic_add(count_ptr + row, 1, sem="relaxed", scope="gpu") + 1
    if PHASE == 3:
        while arrived < n_chunks:
            arrived = tl.atomic_add(count_ptr + row, 0, sem="relaxed", scope="gpu")
    tl.debug_barrier()


@triton.jit
def _sent_gather(words_ptr, n_chunks, BLOCK_C: tl.constexpr, PHASE: tl.constexpr):
    """SENT: the row's max and sum partials (2 arrays of n_chunks words from words_ptr) as
    float32 vectors of BLOCK_C, once no word is zero (PHASE 3: read again by volatile loads
    until then; PHASE 2, interpreted: read once, and a zero word gives NaN). Lanes past
    n_chunks: -inf (max), 0 (sum)."""
    c = tl.arange(0, BLOCK_C)
    ok = c < n_chunks
    a = tl.load(words_ptr + c, mask=ok, other=1, volatile=True)
    b = tl.load(words_ptr + n_chunks + c, mask=ok, other=1, volatile=True)
    if PHASE == 3:
        while tl.min(((a != 0) & (b != 0)).to(tl.int32), axis=0) == 0:
            a = tl.load(words_ptr + c, mask=ok, other=1, volatile=True)
            b = tl.load(words_ptr + n_chunks + c, mask=ok, other=1, volatile=True)
    m_c = tl.where(ok, (a ^ SENT_KEY).to(tl.float32, bitcast=True), -float("inf"))
    return m_c, tl.where(ok, (b ^ SENT_KEY).to(tl.float32, bitcast=True), 0.0)


@triton.jit
def _sent_leave(count_ptr, words_ptr, row, n_chunks, BLOCK_C: tl.constexpr):
    """SENT: arrive a second time, past the read of the words; the last of the row's
    2 * n_chunks arrivals sets the row's words and counter back to 0 for the next launch.

    The barrier first: every warp of the program must be past `_sent_gather` before its
    thread 0 arrives. Where BLOCK_C is small (up to 32: each group of lanes holds the vector
    whole), `_sent_gather`'s reads and reduction are per warp, so one warp may leave that loop
    while another of the same program still spins in it; without the barrier, the row's last
    arrival could zero the words under that warp, which then spun forever (a hang seen on the
    H100 under load in plans of 3 chunks a row that tests force: `bench/results/h100/
    stress_sent.log`). dispatch's own SENT plans have 64 or more chunks a row; their reduction
    crosses warps through a barrier, so their warps left the loop together."""
    tl.debug_barrier()
    left = tl.atomic_add(count_ptr + row, 1, sem="relaxed", scope="gpu") + 1
    if left == 2 * n_chunks:
        c = tl.arange(0, BLOCK_C)
        tl.store(words_ptr + c, tl.zeros([BLOCK_C], tl.int32), mask=c < n_chunks)
        tl.store(words_ptr + n_chunks + c, tl.zeros([BLOCK_C], tl.int32), mask=c < n_chunks)
        tl.atomic_xchg(count_ptr + row, 0, sem="relaxed", scope="gpu")


@triton.jit
def _coop_edges(row_start, N, chunk, n_chunks, VEC: tl.constexpr):
    """A PEEL row's edges (`_edges`) as the cooperative kernels share them out: the head to
    the row's first chunk, the tail to its last."""
    offs, mask, head = _edges(row_start, N, VEC)
    return offs, mask & (tl.where(head, 0, n_chunks - 1) == chunk)


@triton.jit
def _coop_fwd_exact(x_ptr, y_ptr, row, chunk, N, stride_xm, stride_ym, m, s, LOG: tl.constexpr,
                    io_ty: tl.constexpr, acc_ty: tl.constexpr, CHUNK_W: tl.constexpr, BLOCK_W: tl.constexpr,
                    PEEL: tl.constexpr, VEC: tl.constexpr, ALIGN: tl.constexpr, CVT_X2: tl.constexpr,
                    PHASE: tl.constexpr):
    """The packed cooperative forward's y for chunk `chunk` (CHUNK_W words) of row `row` (N and the
    strides as the kernel takes them) where the row max `m` is COOP_FAST_MAX or more in magnitude, or
    not finite: as torch computes it, (x - m) - log(s) and exp(x - m) / s, from x read again in
    tiles of BLOCK_W words (few registers). The held words' one-op forms, x - (m + log(s)) and
    2 ** (x * log2(e) - (m * log2(e) + log2(s))), round m + log(s) to m's float32 ulp: at m = 1e8
    that loses log(s) whole. CVT_X2: y's words by `_pack_x2`, as the kernel's."""
    log_s, inv_s = tl.log(s), 1.0 / s
    # From the row and chunk alone: what the kernel holds across its wait for this path stays small.
    xs, ys, lo_w = row * _aligned(stride_xm, ALIGN), row * _aligned(stride_ym, ALIGN), chunk * CHUNK_W
    for k in range(0, CHUNK_W, BLOCK_W):
        x_offs, mask = _words(xs, lo_w + k, N, stride_xm, row, BLOCK_W, PEEL, VEC, ALIGN)
        y_offs, _ = _words(ys, lo_w + k, N, stride_ym, row, BLOCK_W, PEEL, VEC, ALIGN)
        x_lo, x_hi = _unpack(tl.load(x_ptr.to(tl.pointer_type(tl.int32)) + x_offs, mask=mask, other=0), io_ty,
                             acc_ty, False)
        if LOG:
            y_lo, y_hi = (x_lo - m) - log_s, (x_hi - m) - log_s
        else:
            y_lo, y_hi = tl.exp(x_lo - m) * inv_s, tl.exp(x_hi - m) * inv_s
        w = _pack_x2(y_lo, y_hi, io_ty, CVT_X2, PHASE)
        tl.store(y_ptr.to(tl.pointer_type(tl.int32)) + y_offs, w, mask=mask)


@triton.jit
def softmax_fwd_coop(
    x_ptr, M, N, stride_xm, stride_ym, n_chunks, count_init_ptr, part_ptr, count_ptr, y_ptr,
    CHUNK_N: tl.constexpr, BLOCK_C: tl.constexpr, PHASE: tl.constexpr, TICKET: tl.constexpr,
    PEEL: tl.constexpr,
    VEC: tl.constexpr, LOG: tl.constexpr, ALIGN: tl.constexpr, ACC_FP64: tl.constexpr,
    LATE_LEAVE: tl.constexpr, PACK: tl.constexpr, TAG: tl.constexpr, SPLIT_SUM: tl.constexpr,
    SENT: tl.constexpr, POLY: tl.constexpr, CVT_X2: tl.constexpr, STAGGER: tl.constexpr, FIRST: tl.constexpr,
):
    """One item a program: chunk `item % n_chunks` of row `item // n_chunks`.

    part (M, 2, n_chunks): per chunk, the max and the sum of exp(x - max); count (M + 1,)
    int32, zero at launch and left zero: the rows' arrival counters, then the ticket
    counter. PHASE and TICKET as in the module docstring; PEEL as in softmax_fwd_rows.
    LATE_LEAVE: the program's second arrival (`_leave_row`, whose result it waits for) comes
    after its stores rather than before its compute (dispatch.COOP_LATE_LEAVE: where that pays).
    PACK (16-bit types; PEEL, or N and the strides even): x is loaded as 32-bit words of two
    values and only the words are held; each use unpacks them anew, and the softmax computes
    exp(x - max) again after the wait (dispatch.COOP_FWD_UNPACKED_PER_SM: where that pays).
    TAG (float32 partials): the row's partials are tagged slots in count_ptr (an int64 buffer
    of 1 + M * 2 * n_chunks words; part_ptr is not used) and a program waits by reading them
    (`_tag_gather`), not through the arrival counters (dispatch.COOP_TAG_MAX_CHUNKS: where that
    pays); there is no second arrival, so LATE_LEAVE must be off.
    SPLIT_SUM (PACK): the chunk's sum of exp is taken over the words' low halves, then over their
    high halves unpacked anew, not over both at once: the compiler then holds fewer values at a
    time (packed chunks of 8192 values at 4 warps: 56-64 registers a thread instead of 90-96;
    dispatch.COOP_FWD16_WARPS: where that pays). The same sum, in another order.
    SENT (float32 partials, not TAG): the partials are keyed words in count_ptr (an int32 "zeros"
    buffer of M + 1 + M * 2 * n_chunks; part_ptr is not used), published and waited for with no
    release fence (`_sent_arrive`, `_sent_gather`; dispatch's "Keyed partials": where that pays).
    Large maxima (PACK): the sum before the wait is exp(x - m) as 2 ** (x * l - m * l) in one FMA,
    times 2 ** -(the rounding of m * l), so exact for any m; after the wait rows whose max is
    COOP_FAST_MAX or more in magnitude are written from x read again (`_coop_fwd_exact`).
    POLY (PACK, softmax): after the wait, the exps of the words' high halves are computed by
    `_exp2_poly` on the FMA pipe, the low halves' by MUFU.EX2, so that the two pipes share them
    (dispatch.COOP_POLY: where that pays).
    CVT_X2 (PACK): y's words by `_pack_x2`, one conversion instruction a word
    (dispatch.COOP_CVT_X2: where that pays).
    STAGGER, FIRST (PHASE 3, TICKET): the first FIRST items' programs start their loads over a ramp of
    STAGGER SM cycles (`_stagger`; dispatch.COOP_STAGGER_CYCLES: where that pays); 0: at once.
    """
    count_ptr = count_init_ptr  # the scratch is read and written through its input (module docstring)
    tl.static_assert(not PACK or PEEL or ALIGN >= 2, "PACK needs whole words: PEEL, or ALIGN >= 2")
    tl.static_assert(not POLY or (PACK and not LOG), "POLY: the packed softmax only")
    tl.static_assert(not CVT_X2 or PACK, "CVT_X2: packed words only")
    tl.static_assert(not (TAG and ACC_FP64), "TAG: float32 partials only")
    tl.static_assert(not (TAG and LATE_LEAVE), "TAG has no second arrival: LATE_LEAVE must be off")
    tl.static_assert(not (SENT and (TAG or ACC_FP64)), "SENT: float32 partials on counters only")
    acc_ty = tl.float64 if ACC_FP64 else tl.float32
    if TAG:
        sync = count_ptr.to(tl.pointer_type(tl.int64))
        row, chunk, t = _tag_take(sync, n_chunks, PHASE, TICKET)
    else:
        row, chunk = _coop_item(count_ptr, M, n_chunks, PHASE, TICKET)
    if PHASE == 3 and TICKET and STAGGER > 0:
        _stagger(row * n_chunks + chunk, STAGGER, FIRST)
    if PACK:
        N_w, sx_w, sy_w = N, stride_xm, stride_ym  # _words aligns them itself
    N, stride_xm, stride_ym = _aligned(N, ALIGN), _aligned(stride_xm, ALIGN), _aligned(stride_ym, ALIGN)
    xs, ys = row * stride_xm, row * stride_ym
    if PACK:
        io_ty = x_ptr.dtype.element_ty
        lo_w = chunk * (CHUNK_N // 2)
        x_offs, mask = _words(xs, lo_w, N_w, sx_w, row, CHUNK_N // 2, PEEL, VEC, ALIGN)
        y_offs, _ = _words(ys, lo_w, N_w, sy_w, row, CHUNK_N // 2, PEEL, VEC, ALIGN)
        # Masked words load two -inf values. Each use below unpacks the words anew (_fresh):
        # only the words, not the float32 values, are held in registers.
        ninf = tl.full((), -float("inf"), acc_ty)
        wx = tl.load(x_ptr.to(tl.pointer_type(tl.int32)) + x_offs, mask=mask, other=_pack(ninf, ninf, io_ty))
        if TAG:  # the launch's tag, taken while the loads are in flight
            tag = _tag_of(sync, t, M * n_chunks, PHASE, TICKET)
        x_lo, x_hi = _unpack(wx, io_ty, acc_ty, False)
        m_own = tl.max(tl.maximum(x_lo, x_hi), axis=0)
    else:
        x_offs, mask = _body(xs, chunk * CHUNK_N, N, CHUNK_N, PEEL, VEC)
        y_offs, _ = _body(ys, chunk * CHUNK_N, N, CHUNK_N, PEEL, VEC)
        x = tl.load(x_ptr + x_offs, mask=mask, other=-float("inf")).to(acc_ty)
        if TAG:  # the launch's tag, taken while the loads are in flight
            tag = _tag_of(sync, t, M * n_chunks, PHASE, TICKET)
        m_own = tl.max(x, axis=0)
    if PEEL:
        e_offs, e_mask = _coop_edges(xs, N, chunk, n_chunks, VEC)
        xe = tl.load(x_ptr + e_offs, mask=e_mask, other=-float("inf")).to(acc_ty)
        m_own = tl.maximum(m_own, tl.max(xe, axis=0))
    if TAG:
        part_row = sync + 1 + row * 2 * n_chunks
    elif SENT:  # the row's keyed words
        part_row = count_ptr + M + 1 + row * 2 * n_chunks
    else:
        part_row = part_ptr + row * 2 * n_chunks
    # The chunk's own max and exp(x - max): an all -inf chunk gets max 0 here, sum 0.
    m_own = tl.where(m_own == -float("inf"), 0.0, m_own)
    if PACK:  # exp(x - m) as 2 ** (x * l - m2), m2 = m * l rounded: one FFMA and one MUFU a value
        s_own = _packed_sum(wx, m_own, io_ty, acc_ty, SPLIT_SUM, PHASE)
    else:
        e = tl.exp(x - m_own)
        s_own = tl.sum(e, axis=0)
    if PEEL:
        ee = tl.exp(xe - m_own)
        s_own += tl.sum(ee, axis=0)
    if PHASE % 2 == 1:
        # An all -inf chunk (sum 0; any other has a value at its max: sum >= 1) publishes max -inf.
        # Publishing its 0 put a row whose other values are all below about -87 (float32's exp
        # underflows) at s = 0: NaN, not torch's result. (Derived here, not kept from before the
        # substitution: that kept value took the 16-bit unpacked forward from 80 to 99 registers.)
        m_pub = tl.where(s_own == 0.0, -float("inf"), m_own)
        if TAG:
            _tag_publish(part_row + chunk, m_pub, tag)
            _tag_publish(part_row + n_chunks + chunk, s_own, tag)
        elif SENT:
            tl.atomic_xchg(part_row + chunk, _sent_word(m_pub), sem="relaxed", scope="gpu")
            tl.atomic_xchg(part_row + n_chunks + chunk, _sent_word(s_own), sem="relaxed", scope="gpu")
            _sent_arrive(count_ptr, row, n_chunks, PHASE)
        else:
            tl.store(part_row + chunk, m_pub)
            tl.store(part_row + n_chunks + chunk, s_own)
            if PHASE == 3:
                _wait_for_row(count_ptr, row, n_chunks)
    if PHASE >= 2:
        # Combine the row's partials: max of maxes, sums rescaled to it.
        if TAG:
            m_c, s_c = _tag_gather(part_row, n_chunks, tag, BLOCK_C, 2, PHASE)
        elif SENT:
            m_c, s_c = _sent_gather(part_row, n_chunks, BLOCK_C, PHASE)
            if not LATE_LEAVE:
                _sent_leave(count_ptr, part_row, row, n_chunks, BLOCK_C)
        else:
            m_c, s_c = _row_partials(part_row, n_chunks, BLOCK_C)
            if PHASE == 3 and not LATE_LEAVE:
                _leave_row(count_ptr, row, n_chunks)
        _, m_safe, s = _combine(m_c, s_c)
        if LOG:
            log_s = tl.log(s)
            shift = m_safe + log_s  # the packed (16-bit) values' one subtraction
        else:  # exp(x - m) / s = exp(x - m_own) * (exp(m_own - m) / s), exp(m_own - m) <= 1 but for an
            # all -inf chunk (m_own 0), whose e is 0: capped at 1, its y is 0, not 0 * inf
            scale = tl.minimum(tl.exp(m_own - m_safe), 1.0) / s
        if PACK:  # y from the words held across the wait, one op a value; for a row max of COOP_FAST_MAX
            # or more in magnitude (or not finite) from x read again, as torch (`_coop_fwd_exact`). Where
            # that path stands and its tile were chosen for ptxas (sm_90, Triton 3.6), whose register
            # count for the held words' block follows what surrounds it: placed and tiled otherwise it
            # took the 8-warp log_softmax from 63-64 registers to 75-80 (4 programs an SM to 3: 2-10%
            # slower on the H100, bench/results/h100/probe_exact_branch.log). As it stands every packed
            # forward plan of the benchmark's shapes holds as many programs an SM as before but float16
            # 16 x 1048576's softmax (9 to 8) and both 64 x 128256 log_softmax plans (9 to 8; grids of 7.8).
            exact = tl.abs(m_safe) >= COOP_FAST_MAX
            if LOG:
                if exact:
                    _coop_fwd_exact(x_ptr, y_ptr, row, chunk, N_w, sx_w, sy_w, m_safe, s, LOG, io_ty, acc_ty,
                                    CHUNK_N // 2, (CHUNK_N + 63) // 64, PEEL, VEC, ALIGN, CVT_X2, PHASE)
                x_lo, x_hi = _unpack(_fresh(wx, PHASE), io_ty, acc_ty, False)
                w = _pack_x2(x_lo - shift, x_hi - shift, io_ty, CVT_X2, PHASE)
                tl.store(y_ptr.to(tl.pointer_type(tl.int32)) + y_offs, w, mask=mask & (not exact))
            elif not exact:  # exp(x - m) / s = 2 ** (x * log2(e) - (m * log2(e) + log2(s))), computed anew
                x_lo, x_hi = _unpack(_fresh(wx, PHASE), io_ty, acc_ty, False)
                shift2 = m_safe * LOG2E + tl.log2(s)
                y_lo = _exp2_ftz(x_lo * LOG2E - shift2, PHASE)
                if POLY:  # the high halves on the FMA pipe
                    y_hi = _exp2_poly(x_hi * LOG2E - shift2)
                else:
                    y_hi = _exp2_ftz(x_hi * LOG2E - shift2, PHASE)
                w = _pack_x2(y_lo, y_hi, io_ty, CVT_X2, PHASE)  # one conversion instruction a word (CVT_X2)
                tl.store(y_ptr.to(tl.pointer_type(tl.int32)) + y_offs, w, mask=mask)
            else:
                _coop_fwd_exact(x_ptr, y_ptr, row, chunk, N_w, sx_w, sy_w, m_safe, s, LOG, io_ty, acc_ty,
                                CHUNK_N // 2, CHUNK_N // 16 if POLY else (CHUNK_N + 63) // 64, PEEL, VEC, ALIGN,
                                CVT_X2, PHASE)
        else:
            if LOG:
                y = (x - m_safe) - log_s  # as torch: x - max first (exact), then log(s)
            else:  # reuse e
                y = e * scale
            tl.store(y_ptr + y_offs, y.to(y_ptr.dtype.element_ty), mask=mask)
        if PEEL:
            if LOG:
                ye = (xe - m_safe) - log_s
            else:
                ye = ee * scale
            tl.store(y_ptr + e_offs, ye.to(y_ptr.dtype.element_ty), mask=e_mask)
        if SENT and LATE_LEAVE:
            _sent_leave(count_ptr, part_row, row, n_chunks, BLOCK_C)
        elif PHASE == 3 and LATE_LEAVE:
            _leave_row(count_ptr, row, n_chunks)


# --------------------------------------------------------------------------------------
# backward: softmax dx = y * (dy - sum(dy * y)); log_softmax dx = dy - exp(y) * sum(dy)
# --------------------------------------------------------------------------------------
@triton.jit
def _bwd_terms(y, dy, LOG: tl.constexpr):
    """The per-element term whose row sum the backward needs."""
    if LOG:
        t = dy
    else:
        t = dy * y
    return t


@triton.jit
def _bwd_apply(y, dy, dot, LOG: tl.constexpr):
    if LOG:
        dx = dy - tl.exp(y) * dot
    else:
        dx = y * (dy - dot)
    return dx


@triton.jit
def softmax_bwd_rows(
    y_ptr, dy_ptr, M, N, stride_ym, stride_dym, stride_dxm, dx_ptr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, TAIL_N: tl.constexpr, PEEL: tl.constexpr,
    VEC: tl.constexpr, LOG: tl.constexpr, ALIGN: tl.constexpr, ACC_FP64: tl.constexpr, EVEN_M: tl.constexpr,
    ALIGN_M: tl.constexpr, RELOAD: tl.constexpr = False,
):
    """As softmax_fwd_rows (segments, EVEN_M, ALIGN_M; PEEL: then the three strides are equal).
    RELOAD: y and dy are loaded again for dx after the row sum (from L1 or L2, most of the time)
    instead of held in registers across it, as softmax_bwd_coop's RELOAD (there the row's wait
    keeps the compiler from merging the two loads; here the second load's cache modifier does)."""
    N, stride_ym, stride_dym, stride_dxm = (
        _aligned(N, ALIGN), _aligned(stride_ym, ALIGN), _aligned(stride_dym, ALIGN), _aligned(stride_dxm, ALIGN))
    acc_ty = tl.float64 if ACC_FP64 else tl.float32
    other_y = -float("inf") if LOG else 0.0  # masked lanes: exp(y) = 0 or y = 0; dy = 0
    rows = tl.program_id(0).to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
    row_ok = _row_ok(rows, M, BLOCK_M, EVEN_M, ALIGN_M)
    ys, dys, dxs = rows[:, None] * stride_ym, rows[:, None] * stride_dym, rows[:, None] * stride_dxm
    y_offs, mask = _body(ys, 0, N, BLOCK_N, PEEL, VEC)
    dy_offs, _ = _body(dys, 0, N, BLOCK_N, PEEL, VEC)
    dx_offs, _ = _body(dxs, 0, N, BLOCK_N, PEEL, VEC)
    mask = row_ok & mask
    y = tl.load(y_ptr + y_offs, mask=mask, other=other_y).to(acc_ty)
    dy = tl.load(dy_ptr + dy_offs, mask=mask, other=0.0).to(acc_ty)
    dot = tl.sum(_bwd_terms(y, dy, LOG), axis=1)
    if TAIL_N > 0:
        if PEEL:
            yt_offs, t_mask, _ = _edges(ys, N, VEC)
            dyt_offs, dxt_offs = yt_offs, yt_offs
        else:
            t_cols = BLOCK_N + tl.arange(0, TAIL_N)
            yt_offs, dyt_offs, dxt_offs, t_mask = ys + t_cols, dys + t_cols, dxs + t_cols, t_cols < N
        t_mask = row_ok & t_mask
        yt = tl.load(y_ptr + yt_offs, mask=t_mask, other=other_y).to(acc_ty)
        dyt = tl.load(dy_ptr + dyt_offs, mask=t_mask, other=0.0).to(acc_ty)
        dot += tl.sum(_bwd_terms(yt, dyt, LOG), axis=1)
    if RELOAD:  # ".ca" (L1 and L2, as a plain load): a load that differs, which the compiler does not merge
        y = tl.load(y_ptr + y_offs, mask=mask, other=other_y, cache_modifier=".ca").to(acc_ty)
        dy = tl.load(dy_ptr + dy_offs, mask=mask, other=0.0, cache_modifier=".ca").to(acc_ty)
    dx = _bwd_apply(y, dy, dot[:, None], LOG)
    tl.store(dx_ptr + dx_offs, dx.to(dx_ptr.dtype.element_ty), mask=mask)
    if TAIL_N > 0:
        if RELOAD:
            yt = tl.load(y_ptr + yt_offs, mask=t_mask, other=other_y, cache_modifier=".ca").to(acc_ty)
            dyt = tl.load(dy_ptr + dyt_offs, mask=t_mask, other=0.0, cache_modifier=".ca").to(acc_ty)
        dxt = _bwd_apply(yt, dyt, dot[:, None], LOG)
        tl.store(dx_ptr + dxt_offs, dxt.to(dx_ptr.dtype.element_ty), mask=t_mask)


@triton.jit
def softmax_bwd_online(
    y_ptr, dy_ptr, M, N, stride_ym, stride_dym, stride_dxm, dx_ptr,
    BLOCK_N: tl.constexpr, LOG: tl.constexpr, ALIGN: tl.constexpr, ACC_FP64: tl.constexpr,
):
    N, stride_ym, stride_dym, stride_dxm = (
        _aligned(N, ALIGN), _aligned(stride_ym, ALIGN), _aligned(stride_dym, ALIGN), _aligned(stride_dxm, ALIGN))
    acc_ty = tl.float64 if ACC_FP64 else tl.float32
    other_y = -float("inf") if LOG else 0.0
    cols = tl.arange(0, BLOCK_N)
    n_tiles = tl.cdiv(N, BLOCK_N)
    for row in range(tl.program_id(0), M, tl.num_programs(0)):
        y_row = y_ptr + tl.cast(row, tl.int64) * stride_ym
        dy_row = dy_ptr + tl.cast(row, tl.int64) * stride_dym
        dx_row = dx_ptr + tl.cast(row, tl.int64) * stride_dxm
        # Lane-wise partial sums, reduced once at the end: no reduction per tile.
        acc = tl.zeros((BLOCK_N,), acc_ty)
        for start in range(0, N, BLOCK_N):
            mask = start + cols < N
            y = tl.load(y_row + start + cols, mask=mask, other=other_y).to(acc_ty)
            dy = tl.load(dy_row + start + cols, mask=mask, other=0.0).to(acc_ty)
            acc += _bwd_terms(y, dy, LOG)
        dot = tl.sum(acc, axis=0)
        for i in range(0, n_tiles):  # backwards: see softmax_fwd_online
            start = (n_tiles - 1 - i) * BLOCK_N
            mask = start + cols < N
            y = tl.load(y_row + start + cols, mask=mask, other=other_y).to(acc_ty)
            dy = tl.load(dy_row + start + cols, mask=mask, other=0.0).to(acc_ty)
            tl.store(dx_row + start + cols, _bwd_apply(y, dy, dot, LOG).to(dx_ptr.dtype.element_ty), mask=mask)


@triton.jit
def softmax_bwd_split_dot(
    y_ptr, dy_ptr, M, N, stride_ym, stride_dym, CHUNK, n_chunks, dot_part_ptr,
    BLOCK_N: tl.constexpr, LOG: tl.constexpr, ALIGN: tl.constexpr, ACC_FP64: tl.constexpr,
):
    """Partial row sum of dy * y (log_softmax: of dy) over one chunk: (M, n_chunks)."""
    N, stride_ym, stride_dym, CHUNK = (
        _aligned(N, ALIGN), _aligned(stride_ym, ALIGN), _aligned(stride_dym, ALIGN), _aligned(CHUNK, ALIGN))
    acc_ty = tl.float64 if ACC_FP64 else tl.float32
    other_y = -float("inf") if LOG else 0.0
    row = tl.program_id(0).to(tl.int64)
    chunk = tl.program_id(1)
    cols = tl.arange(0, BLOCK_N)
    lo = chunk * CHUNK
    hi = tl.minimum(lo + CHUNK, N)
    acc = tl.zeros((BLOCK_N,), acc_ty)
    for start in range(lo, hi, BLOCK_N):
        mask = start + cols < hi
        y = tl.load(y_ptr + row * stride_ym + start + cols, mask=mask, other=other_y).to(acc_ty)
        dy = tl.load(dy_ptr + row * stride_dym + start + cols, mask=mask, other=0.0).to(acc_ty)
        acc += _bwd_terms(y, dy, LOG)
    tl.store(dot_part_ptr + row * n_chunks + chunk, tl.sum(acc, axis=0))


@triton.jit
def softmax_bwd_split_apply(
    y_ptr, dy_ptr, dot_part_ptr, M, N, stride_ym, stride_dym, stride_dxm, CHUNK, n_chunks, dx_ptr,
    BLOCK_N: tl.constexpr, BLOCK_C: tl.constexpr, LOG: tl.constexpr, ALIGN: tl.constexpr,
    ACC_FP64: tl.constexpr,
):
    N, stride_ym, stride_dym, stride_dxm, CHUNK = (
        _aligned(N, ALIGN), _aligned(stride_ym, ALIGN), _aligned(stride_dym, ALIGN), _aligned(stride_dxm, ALIGN),
        _aligned(CHUNK, ALIGN))
    acc_ty = tl.float64 if ACC_FP64 else tl.float32
    other_y = -float("inf") if LOG else 0.0
    # Reverse order, as in softmax_fwd_split_norm: start where the first kernel ended.
    row = (M - 1 - tl.program_id(0)).to(tl.int64)
    chunk = n_chunks - 1 - tl.program_id(1)
    c = tl.arange(0, BLOCK_C)
    dot = tl.sum(tl.load(dot_part_ptr + row * n_chunks + c, mask=c < n_chunks, other=0.0), axis=0)
    cols = tl.arange(0, BLOCK_N)
    lo = chunk * CHUNK
    hi = tl.minimum(lo + CHUNK, N)
    n_tiles = tl.cdiv(hi - lo, BLOCK_N)
    for i in range(0, n_tiles):  # backwards within the chunk as well
        start = lo + (n_tiles - 1 - i) * BLOCK_N
        mask = start + cols < hi
        y = tl.load(y_ptr + row * stride_ym + start + cols, mask=mask, other=other_y).to(acc_ty)
        dy = tl.load(dy_ptr + row * stride_dym + start + cols, mask=mask, other=0.0).to(acc_ty)
        tl.store(dx_ptr + row * stride_dxm + start + cols,
                 _bwd_apply(y, dy, dot, LOG).to(dx_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _dx_words(wy, wdy, dot, io_ty: tl.constexpr, acc_ty: tl.constexpr, LOG: tl.constexpr, BITS: tl.constexpr,
              PHASE: tl.constexpr):
    """The packed backward's dx words from y's and dy's words (PACK), each unpacked anew (`_fresh`):
    the softmax's y * (dy - dot); the log_softmax's dy - exp(y) * dot, exp(y) = 2 ** (y * log2(e)):
    one FFMA and one MUFU a value (`_exp2_ftz`)."""
    y_lo, y_hi = _unpack(_fresh(wy, PHASE), io_ty, acc_ty, BITS)
    dy_lo, dy_hi = _unpack(_fresh(wdy, PHASE), io_ty, acc_ty, BITS)
    if LOG:
        dx = _pack(dy_lo - _exp2_ftz(y_lo * LOG2E, PHASE) * dot, dy_hi - _exp2_ftz(y_hi * LOG2E, PHASE) * dot, io_ty)
    else:
        dx = _pack(_bwd_apply(y_lo, dy_lo, dot, LOG), _bwd_apply(y_hi, dy_hi, dot, LOG), io_ty)
    return dx


@triton.jit
def softmax_bwd_coop(
    y_ptr, dy_ptr, M, N, stride_ym, stride_dym, stride_dxm, n_chunks, count_init_ptr, part_ptr, count_ptr, dx_ptr,
    CHUNK_N: tl.constexpr, BLOCK_C: tl.constexpr, PHASE: tl.constexpr, TICKET: tl.constexpr,
    PEEL: tl.constexpr,
    VEC: tl.constexpr, LOG: tl.constexpr, ALIGN: tl.constexpr, ACC_FP64: tl.constexpr,
    RELOAD: tl.constexpr, PACK: tl.constexpr, LATE_LEAVE: tl.constexpr, DEFER_Y: tl.constexpr,
    BITS: tl.constexpr, TAG: tl.constexpr,
):
    """As softmax_fwd_coop, with the partial row sums of dy * y (log_softmax: of dy) in
    part (M, n_chunks). RELOAD: the chunk's y and dy are loaded again after the wait (from
    L2, most of the time) instead of held in registers across it, so that fewer registers a
    thread let more programs share an SM (dispatch.plan_backward: where that pays). PACK
    (16-bit types; PEEL, or N and the strides even): y and dy are loaded as 32-bit words of
    two values and held packed across the wait, half the registers of float32 values, and
    unpacked again after it (RELOAD is then ignored; dispatch.COOP_PACK_MIN_CHUNKS (_PEELED_) and
    COOP_UNPACKED_PER_SM: where that pays); the log_softmax's exp(y) is then one FFMA and one
    ex2.approx.ftz a value (`_exp2_ftz`). LATE_LEAVE as in softmax_fwd_coop. DEFER_Y
    (log_softmax only, whose row sum is of dy alone): y is first loaded after the wait, so
    only dy is held across it (dispatch.COOP_DEFER_Y: where that pays). BITS (PACK): bfloat16
    words are unpacked by bit operations (`_unpack`), which took fewer registers there. TAG as
    in softmax_fwd_coop (count_ptr: 1 + M * n_chunks words)."""
    count_ptr = count_init_ptr  # the scratch is read and written through its input (module docstring)
    tl.static_assert(not PACK or PEEL or ALIGN >= 2, "PACK needs whole words: PEEL, or ALIGN >= 2")
    tl.static_assert(not DEFER_Y or LOG, "DEFER_Y: log_softmax only (the softmax's row sum needs y)")
    tl.static_assert(not (TAG and ACC_FP64), "TAG: float32 partials only")
    tl.static_assert(not (TAG and LATE_LEAVE), "TAG has no second arrival: LATE_LEAVE must be off")
    acc_ty = tl.float64 if ACC_FP64 else tl.float32
    other_y = -float("inf") if LOG else 0.0
    if TAG:
        sync = count_ptr.to(tl.pointer_type(tl.int64))
        row, chunk, t = _tag_take(sync, n_chunks, PHASE, TICKET)
    else:
        row, chunk = _coop_item(count_ptr, M, n_chunks, PHASE, TICKET)
    if PACK:
        N_w, sy_w, sdy_w, sdx_w = N, stride_ym, stride_dym, stride_dxm  # _words aligns them itself
    N, stride_ym, stride_dym, stride_dxm = (
        _aligned(N, ALIGN), _aligned(stride_ym, ALIGN), _aligned(stride_dym, ALIGN), _aligned(stride_dxm, ALIGN))
    ys, dys, dxs = row * stride_ym, row * stride_dym, row * stride_dxm
    if PACK:
        io_ty = y_ptr.dtype.element_ty
        lo_w = chunk * (CHUNK_N // 2)
        y_offs, mask = _words(ys, lo_w, N_w, sy_w, row, CHUNK_N // 2, PEEL, VEC, ALIGN)
        dy_offs, _ = _words(dys, lo_w, N_w, sdy_w, row, CHUNK_N // 2, PEEL, VEC, ALIGN)
        dx_offs, _ = _words(dxs, lo_w, N_w, sdx_w, row, CHUNK_N // 2, PEEL, VEC, ALIGN)
        # Masked words load 0: dy = 0 adds nothing to either sum.
        if not DEFER_Y:
            wy = tl.load(y_ptr.to(tl.pointer_type(tl.int32)) + y_offs, mask=mask, other=0)
        wdy = tl.load(dy_ptr.to(tl.pointer_type(tl.int32)) + dy_offs, mask=mask, other=0)
        if TAG:  # the launch's tag, taken while the loads are in flight
            tag = _tag_of(sync, t, M * n_chunks, PHASE, TICKET)
        if LOG:
            dy_lo, dy_hi = _unpack(wdy, io_ty, acc_ty, BITS)
            dot_own = tl.sum(dy_lo + dy_hi, axis=0)
        else:
            y_lo, y_hi = _unpack(wy, io_ty, acc_ty, BITS)
            dy_lo, dy_hi = _unpack(wdy, io_ty, acc_ty, BITS)
            dot_own = tl.sum(_bwd_terms(y_lo, dy_lo, LOG) + _bwd_terms(y_hi, dy_hi, LOG), axis=0)
    else:
        y_offs, mask = _body(ys, chunk * CHUNK_N, N, CHUNK_N, PEEL, VEC)
        dy_offs, _ = _body(dys, chunk * CHUNK_N, N, CHUNK_N, PEEL, VEC)
        dx_offs, _ = _body(dxs, chunk * CHUNK_N, N, CHUNK_N, PEEL, VEC)
        if not DEFER_Y:
            y = tl.load(y_ptr + y_offs, mask=mask, other=other_y).to(acc_ty)
        dy = tl.load(dy_ptr + dy_offs, mask=mask, other=0.0).to(acc_ty)
        if TAG:  # the launch's tag, taken while the loads are in flight
            tag = _tag_of(sync, t, M * n_chunks, PHASE, TICKET)
        if LOG:
            dot_own = tl.sum(dy, axis=0)
        else:
            dot_own = tl.sum(dy * y, axis=0)
    if PEEL:  # the three strides are equal
        e_offs, e_mask = _coop_edges(ys, N, chunk, n_chunks, VEC)
        if not DEFER_Y:
            ye = tl.load(y_ptr + e_offs, mask=e_mask, other=other_y).to(acc_ty)
        dye = tl.load(dy_ptr + e_offs, mask=e_mask, other=0.0).to(acc_ty)
        if LOG:
            dot_own += tl.sum(dye, axis=0)
        else:
            dot_own += tl.sum(dye * ye, axis=0)
    if TAG:
        part_row = sync + 1 + row * n_chunks
    else:
        part_row = part_ptr + row * n_chunks
    if PHASE % 2 == 1:
        if TAG:
            _tag_publish(part_row + chunk, dot_own, tag)
        else:
            tl.store(part_row + chunk, dot_own)
            if PHASE == 3:
                _wait_for_row(count_ptr, row, n_chunks)
    if PHASE >= 2:
        if TAG:
            dot_c, _ = _tag_gather(part_row, n_chunks, tag, BLOCK_C, 1, PHASE)
            dot = tl.sum(dot_c, axis=0)
        else:
            c = tl.arange(0, BLOCK_C)
            dot = tl.sum(tl.load(part_row + c, mask=c < n_chunks, other=0.0, volatile=True), axis=0)
            if PHASE == 3 and not LATE_LEAVE:
                _leave_row(count_ptr, row, n_chunks)
        if PACK:
            if DEFER_Y:
                wy = tl.load(y_ptr.to(tl.pointer_type(tl.int32)) + y_offs, mask=mask, other=0)
            dx = _dx_words(wy, wdy, dot, io_ty, acc_ty, LOG, BITS, PHASE)
            tl.store(dx_ptr.to(tl.pointer_type(tl.int32)) + dx_offs, dx, mask=mask)
        else:
            if RELOAD or DEFER_Y:
                y = tl.load(y_ptr + y_offs, mask=mask, other=other_y).to(acc_ty)
            if RELOAD:
                dy = tl.load(dy_ptr + dy_offs, mask=mask, other=0.0).to(acc_ty)
            tl.store(dx_ptr + dx_offs, _bwd_apply(y, dy, dot, LOG).to(dx_ptr.dtype.element_ty), mask=mask)
        if PEEL:
            if DEFER_Y:
                ye = tl.load(y_ptr + e_offs, mask=e_mask, other=other_y).to(acc_ty)
            tl.store(dx_ptr + e_offs, _bwd_apply(ye, dye, dot, LOG).to(dx_ptr.dtype.element_ty), mask=e_mask)
        if PHASE == 3 and LATE_LEAVE:
            _leave_row(count_ptr, row, n_chunks)


# --------------------------------------------------------------------------------------
# The pipelined cooperative backward (softmax_bwd_pipe; the forward, softmax_fwd_pipe, at the end of
# this section, runs alike, a chunk's max and sum for its partial): a persistent grid whose programs each
# take the next item (ticket), load it and publish its partial, and only then wait for the row
# of the item they took before, write that item's dx and take the next ticket. So a program
# holds two items across a wait, and its loads of the newer one are in flight while the older
# one's row completes, where softmax_bwd_coop's programs hold one item and load nothing while
# they wait. Rows are not left: a row's counter stays at n_chunks once whole, and the program
# that finishes last (the exit counter count[M + 1]) sets every row counter back to 0; the
# ticket counter (count[M]) is set back to 0 by the launch's last take (each program takes
# exactly one ticket past the end: M * n_chunks + grid - 1 in all).
#
# Why every wait ends: every ticket a program takes is published before it next waits. Take
# the programs running, R of them, all waiting; the lowest item any waits for is t, in row r.
# Each holds two items at least t, published (or has taken a ticket past the end: then every
# item is taken), so at least 2R tickets from t on are taken and published, and every taken
# item of r below t was published too. Row r is whole once its last item is taken: once 2R >=
# n_chunks. dispatch._pipe_launches asks for n_chunks <= 2 * min(grid, num_sms * max(1, 8 //
# num_warps)): the programs the GPU holds at once whatever their registers (255 a thread: 8
# warps of them in an SM's 65,536 registers).
# --------------------------------------------------------------------------------------
@triton.jit
def _pipe_take(count_ptr, M, total):
    """The next ticket (item row * n_chunks + chunk; total: M * n_chunks) from count[M]; the
    launch's last take sets count[M] back to 0."""
    t = tl.atomic_add(count_ptr + M, 1, sem="relaxed", scope="gpu")
    if t == total + tl.num_programs(0) - 1:
        tl.atomic_xchg(count_ptr + M, 0, sem="relaxed", scope="gpu")
    return t


@triton.jit
def _pipe_values(p_ptr, t, total, n_chunks, N, stride, OTHER: tl.constexpr, CHUNK_N: tl.constexpr,
                 VEC: tl.constexpr, ALIGN: tl.constexpr, PACK: tl.constexpr):
    """Item t's chunk of one tensor (rows `stride` apart): 32-bit words of two values (PACK;
    masked words 0) or float32 values (masked ones OTHER), nothing loaded past the last item."""
    row = (t // n_chunks).to(tl.int64)
    chunk = t % n_chunks
    ok = t < total
    if PACK:
        offs, mask = _words(row * stride, chunk * (CHUNK_N // 2), N, stride, row, CHUNK_N // 2, False, VEC, ALIGN)
    else:
        cols = chunk * CHUNK_N + tl.arange(0, CHUNK_N)
        offs, mask = row * _aligned(stride, ALIGN) + cols, cols < _aligned(N, ALIGN)
    # (tl.where, not `mask & ok`: Triton's interpreter makes a block & a scalar int32, which tl.load refuses)
    mask = tl.where(ok, mask, False)
    if PACK:
        v = tl.load(p_ptr.to(tl.pointer_type(tl.int32)) + offs, mask=mask, other=0)
    else:
        v = tl.load(p_ptr + offs, mask=mask, other=OTHER).to(tl.float32)
    return v


@triton.jit
def _pipe_load(y_ptr, dy_ptr, t, total, n_chunks, N, stride_ym, stride_dym, CHUNK_N: tl.constexpr,
               VEC: tl.constexpr, ALIGN: tl.constexpr, PACK: tl.constexpr, LOG: tl.constexpr, DEFER_Y: tl.constexpr):
    """Item t's (y, dy) (`_pipe_values`). DEFER_Y: (dy, dy), y not loaded."""
    dy = _pipe_values(dy_ptr, t, total, n_chunks, N, stride_dym, 0.0, CHUNK_N, VEC, ALIGN, PACK)
    if DEFER_Y:
        y = dy
    else:
        y = _pipe_values(y_ptr, t, total, n_chunks, N, stride_ym, -float("inf") if LOG else 0.0, CHUNK_N, VEC, ALIGN,
                         PACK)
    return y, dy


@triton.jit
def _pipe_publish(part_ptr, count_ptr, t, n_chunks, y, dy, io_ty: tl.constexpr, PACK: tl.constexpr,
                  LOG: tl.constexpr, BITS: tl.constexpr, PHASE: tl.constexpr):
    """Item t's partial row sum (of dy * y; log_softmax: of dy) into part, then (PHASE 3) its
    arrival at its row's counter (`_pipe_arrive`)."""
    row = (t // n_chunks).to(tl.int64)
    if PACK:
        dy_lo, dy_hi = _unpack(dy, io_ty, tl.float32, BITS)
        if LOG:
            dot = tl.sum(dy_lo + dy_hi, axis=0)
        else:
            y_lo, y_hi = _unpack(y, io_ty, tl.float32, BITS)
            dot = tl.sum(_bwd_terms(y_lo, dy_lo, LOG) + _bwd_terms(y_hi, dy_hi, LOG), axis=0)
    else:
        dot = tl.sum(_bwd_terms(y, dy, LOG), axis=0)
    tl.store(part_ptr + row * n_chunks + t % n_chunks, dot)
    if PHASE == 3:
        _pipe_arrive(count_ptr, row)


@triton.jit
def _pipe_arrive(count_ptr, row):
    """An item's arrival at its row's counter once its partial is stored: after the CTA barrier (every warp's
    stores issued), released so that a reader that acquires the count sees the partial."""
    tl.debug_barrier()
    tl.atomic_add(count_ptr + row, 1, sem="release", scope="gpu")


@triton.jit
def _pipe_wait(count_ptr, row, n_chunks):
    """Read the row's arrival counter (acquire) until all n_chunks chunks have arrived; then
    the CTA barrier (as `_wait_for_row` after its arrival)."""
    arrived = tl.atomic_add(count_ptr + row, 0, sem="acquire", scope="gpu")
    while arrived < n_chunks:
        arrived = tl.atomic_add(count_ptr + row, 0, sem="acquire", scope="gpu")
    tl.debug_barrier()


@triton.jit
def _pipe_exit(count_ptr, M):
    """A program's last step: the exit counter (count[M + 1]) counts it, and the launch's last
    program, which every other one has passed its last wait before, sets the M row counters and
    the exit counter back to 0."""
    tl.debug_barrier()
    done = tl.atomic_add(count_ptr + M + 1, 1, sem="acq_rel", scope="gpu")
    if done == tl.num_programs(0) - 1:
        for r in range(0, M, 1024):
            rows = r + tl.arange(0, 1024)
            tl.store(count_ptr + rows, tl.zeros((1024,), tl.int32), mask=rows < M)
        tl.atomic_xchg(count_ptr + M + 1, 0, sem="relaxed", scope="gpu")


@triton.jit
def _pipe_finish(y_ptr, dx_ptr, part_ptr, count_ptr, t, total, n_chunks, N, stride_ym, stride_dxm, y, dy,
                 io_ty: tl.constexpr, CHUNK_N: tl.constexpr, BLOCK_C: tl.constexpr, VEC: tl.constexpr,
                 ALIGN: tl.constexpr, PACK: tl.constexpr, LOG: tl.constexpr, BITS: tl.constexpr,
                 DEFER_Y: tl.constexpr, PHASE: tl.constexpr):
    """Item t's dx from its held (y, dy) (DEFER_Y: y loaded now), once (PHASE 3) every chunk of
    its row has arrived: the arrival counter read (acquire) until it reaches n_chunks."""
    row = (t // n_chunks).to(tl.int64)
    chunk = t % n_chunks
    if PHASE == 3:
        _pipe_wait(count_ptr, row, n_chunks)
    c = tl.arange(0, BLOCK_C)
    dot = tl.sum(tl.load(part_ptr + row * n_chunks + c, mask=c < n_chunks, other=0.0, volatile=True), axis=0)
    if DEFER_Y:
        y = _pipe_values(y_ptr, t, total, n_chunks, N, stride_ym, -float("inf"), CHUNK_N, VEC, ALIGN, PACK)
    if PACK:
        dx_offs, mask = _words(row * stride_dxm, chunk * (CHUNK_N // 2), N, stride_dxm, row, CHUNK_N // 2, False, VEC,
                               ALIGN)
        dx = _dx_words(y, dy, dot, io_ty, tl.float32, LOG, BITS, PHASE)
        tl.store(dx_ptr.to(tl.pointer_type(tl.int32)) + dx_offs, dx, mask=mask)
    else:
        cols = chunk * CHUNK_N + tl.arange(0, CHUNK_N)
        tl.store(dx_ptr + row * _aligned(stride_dxm, ALIGN) + cols,
                 _bwd_apply(y, dy, dot, LOG).to(dx_ptr.dtype.element_ty), mask=cols < _aligned(N, ALIGN))


@triton.jit(do_not_specialize=["M", "n_chunks"])
def softmax_bwd_pipe(
    y_ptr, dy_ptr, M, N, stride_ym, stride_dym, stride_dxm, n_chunks, count_init_ptr, part_ptr, count_ptr, dx_ptr,
    CHUNK_N: tl.constexpr, BLOCK_C: tl.constexpr, PHASE: tl.constexpr, VEC: tl.constexpr, LOG: tl.constexpr,
    ALIGN: tl.constexpr, PACK: tl.constexpr, BITS: tl.constexpr, DEFER_Y: tl.constexpr,
):
    """The backward as softmax_bwd_coop computes it (partial row sums in part (M, n_chunks),
    count (M + 2,) int32: row counters, ticket, exit counter, zero at launch and left zero),
    pipelined on a persistent grid (see the section's comment above): a program holds two items
    (CHUNK_N values of a row each) and loads the next while it waits for a row. PACK (16-bit,
    N and the strides even: ALIGN >= 2), BITS and DEFER_Y (log_softmax: y loaded after the wait)
    as in softmax_bwd_coop; rows unpeeled; float32 arithmetic (no float64). M and n_chunks are not
    specialized (do_not_specialize), so that both launchers compile the same code: Triton's own
    marks integer arguments that are multiples of 16, jax_triton does not (read as multiples of 16
    through `_aligned`, as N is, 256 chunks took 18 more registers a thread: sm_90, Triton 3.6).
    Interpreted (PHASE 1, then 2) each program takes items program_id, program_id + grid, ... and
    neither waits nor touches count. dispatch.PIPE_PLANS: where it pays and its constants."""
    count_ptr = count_init_ptr  # the scratch is read and written through its input (module docstring)
    tl.static_assert(not PACK or ALIGN >= 2, "PACK needs whole words: N and the strides even")
    tl.static_assert(not DEFER_Y or LOG, "DEFER_Y: log_softmax only")
    tl.static_assert(y_ptr.dtype.element_ty != tl.float64, "float32 arithmetic: no float64")
    io_ty = y_ptr.dtype.element_ty
    total = M * n_chunks
    if PHASE == 3:
        t = _pipe_take(count_ptr, M, total)
        y, dy = _pipe_load(y_ptr, dy_ptr, t, total, n_chunks, N, stride_ym, stride_dym, CHUNK_N, VEC, ALIGN, PACK,
                           LOG, DEFER_Y)
        if t < total:
            _pipe_publish(part_ptr, count_ptr, t, n_chunks, y, dy, io_ty, PACK, LOG, BITS, PHASE)
            t2 = _pipe_take(count_ptr, M, total)
        else:
            t2 = t
        while t < total:
            y2, dy2 = _pipe_load(y_ptr, dy_ptr, t2, total, n_chunks, N, stride_ym, stride_dym, CHUNK_N, VEC, ALIGN,
                                 PACK, LOG, DEFER_Y)
            if t2 < total:
                _pipe_publish(part_ptr, count_ptr, t2, n_chunks, y2, dy2, io_ty, PACK, LOG, BITS, PHASE)
            _pipe_finish(y_ptr, dx_ptr, part_ptr, count_ptr, t, total, n_chunks, N, stride_ym, stride_dxm, y, dy,
                         io_ty, CHUNK_N, BLOCK_C, VEC, ALIGN, PACK, LOG, BITS, DEFER_Y, PHASE)
            t, y, dy = t2, y2, dy2
            if t < total:  # taken after the stores: no wait lies between a take and its publish
                t2 = _pipe_take(count_ptr, M, total)
        _pipe_exit(count_ptr, M)
    else:
        for t in range(tl.program_id(0), total, tl.num_programs(0)):
            y, dy = _pipe_load(y_ptr, dy_ptr, t, total, n_chunks, N, stride_ym, stride_dym, CHUNK_N, VEC, ALIGN, PACK,
                               LOG, DEFER_Y)
            if PHASE == 1:
                _pipe_publish(part_ptr, count_ptr, t, n_chunks, y, dy, io_ty, PACK, LOG, BITS, PHASE)
            else:
                _pipe_finish(y_ptr, dx_ptr, part_ptr, count_ptr, t, total, n_chunks, N, stride_ym, stride_dxm, y, dy,
                             io_ty, CHUNK_N, BLOCK_C, VEC, ALIGN, PACK, LOG, BITS, DEFER_Y, PHASE)


@triton.jit
def _fpipe_publish(part_ptr, count_ptr, t, n_chunks, x, PHASE: tl.constexpr):
    """Item t's partials from its chunk `x` (float32, masked values -inf) into part (M, 2, n_chunks): its max
    (-inf for an all -inf chunk, whose sum is 0, as softmax_fwd_coop publishes it) and its sum of exp(x - max);
    then (PHASE 3) its arrival at its row's counter (`_pipe_arrive`)."""
    row = (t // n_chunks).to(tl.int64)
    m_own = tl.max(x, axis=0)
    m_own = tl.where(m_own == -float("inf"), 0.0, m_own)
    s_own = tl.sum(tl.exp(x - m_own), axis=0)
    part_row = part_ptr + row * 2 * n_chunks
    tl.store(part_row + t % n_chunks, tl.where(s_own == 0.0, -float("inf"), m_own))
    tl.store(part_row + n_chunks + t % n_chunks, s_own)
    if PHASE == 3:
        _pipe_arrive(count_ptr, row)


@triton.jit
def _fpipe_finish(y_ptr, part_ptr, count_ptr, t, n_chunks, N, stride_ym, x, CHUNK_N: tl.constexpr,
                  BLOCK_C: tl.constexpr, ALIGN: tl.constexpr, LOG: tl.constexpr, PHASE: tl.constexpr):
    """Item t's y from its held chunk `x` (float32), once (PHASE 3) every chunk of its row has arrived: the
    row's max m and sum s combined from its partials (`_combine`, as softmax_fwd_coop), then y as torch
    computes it, (x - m) - log(s) or exp(x - m) / s."""
    row = (t // n_chunks).to(tl.int64)
    if PHASE == 3:
        _pipe_wait(count_ptr, row, n_chunks)
    m_c, s_c = _row_partials(part_ptr + row * 2 * n_chunks, n_chunks, BLOCK_C)
    _, m_safe, s = _combine(m_c, s_c)
    if LOG:
        y = (x - m_safe) - tl.log(s)
    else:
        y = tl.exp(x - m_safe) * (1.0 / s)
    cols = (t % n_chunks) * CHUNK_N + tl.arange(0, CHUNK_N)
    tl.store(y_ptr + row * _aligned(stride_ym, ALIGN) + cols, y.to(y_ptr.dtype.element_ty),
             mask=cols < _aligned(N, ALIGN))


@triton.jit(do_not_specialize=["M", "n_chunks"])
def softmax_fwd_pipe(
    x_ptr, M, N, stride_xm, stride_ym, n_chunks, count_init_ptr, part_ptr, count_ptr, y_ptr,
    CHUNK_N: tl.constexpr, BLOCK_C: tl.constexpr, PHASE: tl.constexpr, VEC: tl.constexpr, LOG: tl.constexpr,
    ALIGN: tl.constexpr,
):
    """The forward as softmax_fwd_coop computes it (partials (M, 2, n_chunks): each chunk's max and sum of
    exp(x - max); count (M + 2,) int32: row counters, ticket, exit counter, zero at launch and left zero),
    pipelined on a persistent grid as softmax_bwd_pipe (the section's comment above, which says why every
    wait ends): a program holds two items (CHUNK_N values of a row each) and loads and publishes the next
    while it waits for the row of the one it took before. It holds x (float32) across the wait and computes
    exp(x - m) anew after it, the softmax too: holding exp(x - max) instead ran the float32 softmax 3-6%
    slower on the H200 (bench/DISPATCH.md, PIPE_FWD_*). Rows unpeeled; float32 arithmetic (no float64;
    16-bit values are held as float32: no packed words); M and n_chunks are not specialized, as
    softmax_bwd_pipe's. Interpreted (PHASE 1, then 2) each program takes items program_id, program_id +
    grid, ... and neither waits nor touches count. dispatch.PIPE_FWD_*: where it pays and its constants."""
    count_ptr = count_init_ptr  # the scratch is read and written through its input (module docstring)
    tl.static_assert(x_ptr.dtype.element_ty != tl.float64, "float32 arithmetic: no float64")
    total = M * n_chunks
    if PHASE == 3:
        t = _pipe_take(count_ptr, M, total)
        x = _pipe_values(x_ptr, t, total, n_chunks, N, stride_xm, -float("inf"), CHUNK_N, VEC, ALIGN, False)
        if t < total:
            _fpipe_publish(part_ptr, count_ptr, t, n_chunks, x, PHASE)
            t2 = _pipe_take(count_ptr, M, total)
        else:
            t2 = t
        while t < total:
            x2 = _pipe_values(x_ptr, t2, total, n_chunks, N, stride_xm, -float("inf"), CHUNK_N, VEC, ALIGN, False)
            if t2 < total:
                _fpipe_publish(part_ptr, count_ptr, t2, n_chunks, x2, PHASE)
            _fpipe_finish(y_ptr, part_ptr, count_ptr, t, n_chunks, N, stride_ym, x, CHUNK_N, BLOCK_C, ALIGN, LOG,
                          PHASE)
            t, x = t2, x2
            if t < total:  # taken after the stores: no wait lies between a take and its publish
                t2 = _pipe_take(count_ptr, M, total)
        _pipe_exit(count_ptr, M)
    else:
        for t in range(tl.program_id(0), total, tl.num_programs(0)):
            x = _pipe_values(x_ptr, t, total, n_chunks, N, stride_xm, -float("inf"), CHUNK_N, VEC, ALIGN, False)
            if PHASE == 1:
                _fpipe_publish(part_ptr, count_ptr, t, n_chunks, x, PHASE)
            else:
                _fpipe_finish(y_ptr, part_ptr, count_ptr, t, n_chunks, N, stride_ym, x, CHUNK_N, BLOCK_C, ALIGN, LOG,
                              PHASE)
