"""Launch heuristics: (M, N, dtype, direction, #SMs, GPU) -> which kernels to launch, and how.

The adapters only reshape a tensor into an M x N row-major view with a row stride (or, for a
softmax over a middle axis, a (B, N, T) view: plan_columns_forward / plan_columns_backward, at
the end); this module picks the kernel family (`multisoftmax/kernels/softmax.py` explains the three) and
its launch parameters, and returns a list of `Launch` records that both the torch and the
JAX launchers execute in order. Every number below is a heuristic with its reason and the
H100 figure that chose it (but ROWS_TILINGS and GPU_CONSTANTS: tilings and constants tuned on
another GPU, keyed by its name); `bench/DISPATCH.md` keeps each rule's fuller measurements, and the H100 benchmark
(`bench/results/h100/results.md`) is the measurement that checks them all.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

import triton

from . import kernels

ITEMSIZE = {"float16": 2, "bfloat16": 2, "float32": 4, "float64": 8}

# Longest row held in registers: 32768 values over 32 warps (forward) or 16 (backward). On
# the H100 that beat the looped kernel at N = 16385 ... 32768 (fp32 29440: 2875 vs 2158 GB/s
# forward, 2808 vs 2740 backward; tune_2.json). float64 needs two registers a value: half.
MAX_ROWS_BLOCK_N = {2: 32768, 4: 32768, 8: 8192}
# ...but rows that start 16-byte aligned (no PEEL) and would take more lanes than this (N past
# 16384 + a short tail, row_segments) are cut into chunks instead (the cooperative kernels, which
# wait through TAG there): on the H100 bf16 4559 x 29440 went from 2,636 to 2,835 GB/s forward.
# Peeled rows lost and stay; chunks lost at 16-bit 64 x 32768 forward, float32 132 x 32768 backward.
# Measured: bench/DISPATCH.md, MAX_ROWS_ALIGNED_BLOCK_N.
MAX_ROWS_ALIGNED_BLOCK_N = 16384
# Rows kernel: 16 values a thread, at least 4 warps (short rows share a program: BLOCK_M
# rows of BLOCK_N), at most 16, one tile a program. On the H100 this rule is within 1.5% of
# the best of 9 (values a thread x warps) variants on the fp32/bf16 shapes from N = 128 to
# 16384 but one (bf16 N = 3000 backward: 5%), and a persistent grid (a few programs per SM
# looping over tiles) lost 2-8%: bench/results/h100/tune.json, made by `python bench/tune.py`.
VALUES_PER_THREAD = 16
# ...but the 16-bit forward of unpeeled rows that fill less than SPARSE_ROWS_FILL of their lanes
# (1152 in 2048 lanes), of SPARSE_ROWS_LANES lanes (those measured), holds twice the rows a program:
# 16 lanes a thread carried only ~9 values there (H100: bf16 65536 x 1152 2,898-2,901 to 2,980-2,985
# GB/s). float32 and the backward gained nothing; peeled rows lost.
# Measured: bench/DISPATCH.md, SPARSE_ROWS_FILL.
SPARSE_ROWS_FILL = 0.6
SPARSE_ROWS_LANES = (512, 2048)
# ...and the 16-bit log_softmax backward of unpeeled rows in this many lanes (N = 513 ... 1024)
# holds twice the rows a program too (4, not 2): H100 bf16 N = 781 (odd rows, a value a lane) 2,720
# to 2,862 GB/s. Other lane counts lost (255 in 256: -3.5%), and so did the softmax backward.
# Measured: bench/DISPATCH.md, ROWS_LOG_BWD16_DOUBLE_LANES. Since ROWS_BWD_ONE_ROW_WARPS (below), which
# runs those rows one a program, only the where kernels' rows (kernels/where.py) keep it.
ROWS_LOG_BWD16_DOUBLE_LANES = 1024
# ...and the forward of rows of ROWS_SHORT_FWD_LANES lanes that they fill (N = 128 or 256) runs
# programs of ROWS_SHORT_FWD_WARPS warps, not 4: the same 16 values a thread, half the rows a
# program. H100, 65536 rows: float32 2,895 to 2,925 GB/s at N = 256. The float32 log_softmax of 128
# lanes lost (it takes EVEN_M) and keeps 4 warps; 512 lanes and the backward: not taken.
# Measured: bench/DISPATCH.md, ROWS_SHORT_FWD_LANES.
ROWS_SHORT_FWD_LANES = (128, 256)
ROWS_SHORT_FWD_WARPS = 2
# ...and smaller programs at 4 warps: the backward of full rows of ROWS_BWD_1KB_N values (by bytes a
# value) holds 1 KB of each tensor a program (8 bytes a thread; one row of float32 256 values), the
# 16-bit forward of full rows of ROWS_FWD_ONE_ROW_N values one row a program (16 bytes a thread).
# Peeled rows are left alone (not measured). H100 float32 256 backward: 2,978 -> 3,026 GB/s.
# Measured: bench/DISPATCH.md, ROWS_BWD_1KB_N.
ROWS_BWD_1KB_N = {2: (128, 256, 512), 4: (128, 256)}
ROWS_FWD_ONE_ROW_N = {2: (1024,)}
# ...those 16-bit forward rows (one a program, N == BLOCK_N) run with no mask at all (EVEN_N and EVEN_M:
# every load and store unpredicated, as inductor's kernels of static shapes). H100, the benchmark's clock:
# 65536 x 1024 log_softmax 90.1-90.4 -> 89.6-89.8 us (bf16; XLA's 89.9), the softmax within 0.2%; at 16384
# and 4096 rows 0.2-1.5% faster, both ops. Measured: bench/DISPATCH.md, ROWS_FWD_ONE_ROW_N
# (probe_rows_code*.log).
# ...and the 16-bit forward of several rows a program in at most ROWS_FWD16_OFFS32_LANES lanes computes its
# offsets in 32 bits (OFFS32), not 64, where every row's fit (fits_int32): 32 registers a thread, not 36-38
# in the log_softmax. H100, the benchmark's clock: the log_softmax 0-16% faster at ~256 MB (bf16 65536 x 256
# 24.5 -> 24.25 us, XLA's 24.4; float16 65536 x 40 5.97 -> 5.13) and 9-29% at 4096 rows; the softmax up to
# 5% at ~256 MB, but 0.3-2.6% slower (0.02-0.06 us) in grids of fewer than ~8 programs an SM, so only from
# ROWS_FWD16_OFFS32_SOFTMAX_MIN_PER_SM (4096 x 256, 7.8 an SM: 0.7% slower; 16384 x 80: 5% faster). Not
# taken: 512 lanes (bf16 65536 x 300 softmax 13% slower, 384 and 500 mixed), float32 (0.4-2% slower at 256
# and 512), the backward (within 0.2%); peeled rows are left alone (not measured). Measured:
# bench/DISPATCH.md, ROWS_FWD16_OFFS32_LANES (probe_rows_code*.log, probe_rows_offs32*.log).
ROWS_FWD16_OFFS32_LANES = 256
ROWS_FWD16_OFFS32_SOFTMAX_MIN_PER_SM = 7.5
# ROWS_FWD32_OFFS32 (whole rows' BLOCK_N, peeled rows' N) at most (the H200's: GPU_CONSTANTS (16, 32); the H100's:
# (32, 0), below): the float32 forward of rows not 16-byte aligned (ALIGN < 4), whole in that many lanes (a tail
# past them included; of ALIGN 2 only in grids of ROWS_WHOLE32_MIN_PROGRAMS programs an SM) or peeled and that short,
# computes its offsets in 32 bits (OFFS32, where they fit) and y's offsets are x's (SAME_STRIDES, where stride_ym ==
# stride_xm). A row of 5 values in 8 lanes holds one value a thread, so the kernel's 64-bit offset arithmetic, twice
# (x's and y's), was a large part of its instructions. H200, the benchmark's clock (probe_rows_same32.log, _check.log,
# probe_rows_fwd32_offs32_check.log; 1056-1048576 rows): 1048576 x 5 softmax 17.8 -> 14.1 us (XLA's 14.6),
# log_softmax 23.0 -> 19.0 (XLA's 19.2); odd 9-15 values 1.02-1.22x, 17 (16 + 1) 1.00-1.10x, 1-7 0.99-1.25x; the
# peeled log_softmax of 19-31 1.02-1.07x; 110 changed cases, geomean 1.07, the 8 under 1.00x at 0.991-0.998. Left:
# ALIGN 2 in smaller grids (6, 10 and 14 on 1056 and 4224 rows 0.97-1.01x), whole rows in 32 lanes (18 1.00-1.09x,
# the softmax of 19-31 0.91-1.02x), aligned rows (4-64 values: 1.00x), EVEN_M (16-lane softmax 1.03-1.10x more, 7's
# log_softmax 0.90x). H100 (probe_rows_h100_short32.log, _whole32_fwd.log): measured with ROWS_WHOLE32's whole rows,
# in up to 32 lanes (1048576 x 3 log_softmax 17.7 -> 11.2 us, whole 5-31 values 1.00-1.47x over whole alone);
# peeled rows of 13-31 values 0.97-1.03x (none). Measured: bench/DISPATCH.md, ROWS_FWD32_OFFS32 and "ROWS_WHOLE32 and
# ROWS_FWD32_OFFS32 on the H100".
ROWS_FWD32_OFFS32 = (32, 0)
# ROWS_FWD16_SAME_LANES (every GPU's, as ROWS_PEEL16, whose peeled rows it serves): the 16-bit forward of
# peeled rows whose body runs in these lanes (BLOCK_N) takes OFFS32 and SAME_STRIDES as ROWS_FWD32_OFFS32 does
# (where stride_ym == stride_xm and the offsets fit in 32 bits). H200, the benchmark's clock
# (probe_rows_same16_peeled.log): bf16 peeled rows of 81-255 values 1.00-1.12x (1048576 x 150 softmax 191.4 ->
# 175.1 us), those in 64 lanes (65, 67) 0.98-1.00x; checked there since (probe_rows_h200_same16_check.log: bf16 and
# float16, 73-263 values on 1056 and 65536 rows, 0.987-1.14x, geomean 1.03); H100: measured with the tables it serves
# (bench/DISPATCH.md, "The 16-bit short-row tables on the H100"). Measured: bench/DISPATCH.md, that section.
ROWS_FWD16_SAME_LANES = (128, 256)
# ROWS16_FWD_FTZ (the H200's: GPU_CONSTANTS; the H100's: False: 1.00x there but 65536 x 781's 1.01-1.02x,
# probe_rows_h100_ftz.log, 16-bit forwards of 128-16384 values before the 16-bit tables): the 16-bit rows forward takes
# its exps by ex2.approx.ftz (kernels/softmax.py softmax_fwd_rows' FTZ: a y below 2 ** -126, a bfloat16 subnormal,
# becomes 0, as the cooperative and where kernels' 16-bit forwards), in rows aligned to VEC or peeled. H200, the
# benchmark's clock (probe_rows_ftz.log, probe_rows_ftz_unaligned.log): 1.00-1.07x on the sweep's aligned lengths,
# most where the kernel's instructions show (bf16 8192 x 16384 log_softmax 3,716 -> 3,915 GB/s, softmax 3,877 ->
# 3,990; 44739 x 3000 log_softmax 4,002 -> 4,205; 65536 x 128 log_softmax 3,340 -> 3,441), peeled 8191 x 16385
# 1.03-1.06x; unaligned rows not peeled left out (bf16 65536 x 781 log_softmax 3,286 -> 3,009: 0.92x; the softmax
# and float16 1.01-1.02x). Measured: bench/DISPATCH.md, ROWS16_FWD_FTZ.
ROWS16_FWD_FTZ = False
# ROWS16_FWD_FTZ_WARPS {lanes: (warps, fill)} (the H200's: GPU_CONSTANTS; the H100's: none): and with FTZ, rows
# of that many lanes (no tail, not peeled, one a program) that fill at most `fill` of them take `warps`. H200,
# the benchmark's clock (probe_rows_ftz_warps.log): in 8192 lanes at 4 warps, not the rules' 16, 5200 values
# 1.15-1.17x (bf16 25811 x 5200 softmax 3,442 -> 3,977 GB/s), 6000 1.11-1.12x, 7000 1.03-1.04x; at 7680 and 8000
# 0.98-1.00x, so up to 0.875 of the lanes. (Without FTZ 4 warps ran 6000 within 1-4%: probe_rows_ftz_unaligned.log.)
# 16384 lanes: mixed (12000's softmax 0.96x at 4 warps, the log_softmax 1.07-1.11x): not taken. Measured:
# bench/DISPATCH.md, ROWS16_FWD_FTZ.
ROWS16_FWD_FTZ_WARPS = {}
# ROWS16_FWD_FTZ_WARPS_MIN_PER_SM: ...in grids of at least this many rows an SM. H200 (probe_rows_ftz_warps_small*.log,
# bf16 5200 and 7000 values): at 4 warps the log_softmax ran 0.85-0.99x of the rules' 16 warps on 64-528 rows (the
# softmax 0.99-1.01x), 1.07-1.15x from 792 (6 an SM). Measured: bench/DISPATCH.md, ROWS16_FWD_FTZ.
ROWS16_FWD_FTZ_WARPS_MIN_PER_SM = 6
# ...and the float32 softmax (not log_softmax) forward of full rows of ROWS_FWD32_HALF_N values holds
# half the rows a program (4 at 2 warps: 8 values a thread, not 16). H100 65536 x 128, the
# benchmark's clock: 24.49-24.56 -> 24.16-24.18 us (torch.compile 24.18-24.22). The log_softmax (16
# rows at 4 warps) ran no faster so, 16-bit rows at most 0.3% faster: not taken. Measured:
# bench/results/h100/probe_rows_fwd32_128.log.
ROWS_FWD32_HALF_N = (128,)
# ...and the float32 backward of unpeeled rows in ROWS_BWD32_WIDE_LANES lanes (N = 1025 ... 2048) runs
# one row a program at ROWS_BWD32_WIDE_WARPS warps (8 values a thread of each tensor, not 16). H100, ~256
# MB, the benchmark's clock, both ops: 0.15-0.6% faster at N = 1152, 1536, 1792, 2000 and 2048 (32768 x
# 2048 log_softmax 263.3 -> 262.3 us; torch.softmax's 262.8-263.0); 16 warps gained more from N = 1536
# (up to 1.5%) but lost 1.2% at 1152; bf16 at 16 warps lost 4.6%; 4096 lanes at 2 rows and 16 warps were
# mixed. Measured: bench/DISPATCH.md, ROWS_BWD32_WIDE_LANES (probe_rows_bwd32.log, probe_rows_bwd32_more.log).
ROWS_BWD32_WIDE_LANES = 2048
ROWS_BWD32_WIDE_WARPS = 8
# ...and the backward of rows in these lanes (no tail, unpeeled; float32 rows that start 16-byte aligned)
# runs one row a program at ROWS_BWD_ONE_ROW_WARPS[itemsize][lanes] warps (4 values a thread of each tensor
# in float32, 8 in 16-bit), not 2 or 4 rows at 4 warps; asking for the SM's shared memory where the row is
# whole 128-byte lines that fill at least ROWS_BWD_ONE_ROW_FILL of its lanes (fills_shared). H100, the
# benchmark's clock, both ops: float32 (N = 273 ... 512, 545 ... 1024) 0.4-1.5% faster at ~256 MB at every N
# measured from 288 to 1024 (65536 x 512 softmax 132.8 -> 131.4-131.6 us, Liger's 132.5; 65536 x 1024
# 264.2-264.5 -> 261.2-261.5), up to 4% at fewer rows (4096 x 768 14.6 -> 14.0); 16-bit (N = 545 ... 1024)
# 0.2-0.5% at ~256 MB (float16 781 softmax 105.8-105.9 -> 105.6, Liger's 105.4), 1-20% at fewer rows (bf16
# 1000 x 781 log_softmax 4.25 -> 3.48); filled ahead of plain by 0.3-1% from 3/4 of the lanes (384, 448,
# 512, 896, 1024), even or behind below (288, 640) and on rows that end mid-line (600, 781, 1000: 1-2.7%).
# Not taken: rows with a tail (float32 520, 544 as 512 + 8 and + 32: at 8 warps 7-13% slower), peeled
# rows (float32 781: even), the forward (float32: 0.1-0.5% at ~256 MB, but 3% slower at 4096 x 1024), the
# where kernels (not measured). Measured: bench/DISPATCH.md, ROWS_BWD_ONE_ROW_WARPS
# (probe_rows_small32*.log, probe_rows_bwd32_one*.log, probe_rows_bwd16_one*.log).
ROWS_BWD_ONE_ROW_WARPS = {4: {512: 4, 1024: 8}, 2: {1024: 4}}
ROWS_BWD_ONE_ROW_FILL = 0.75
# ...and the 16-bit backward of aligned, unpeeled rows in ROWS_BWD16_WIDE_LANES lanes (no tail) that fill at least
# ROWS_BWD_ONE_ROW_FILL of them (N = 1536 ... 2048) runs its one row a program at ROWS_BWD16_WIDE_WARPS warps (8
# values a thread of each tensor, not 16). H100, ~256 MB, the benchmark's clock, both ops, both dtypes: 1536
# 0.5-0.8% faster (197.5-198.3 -> 196.2-196.8 us), 2000 0.3-1.0% (258.3-260.3 -> 257.4-257.9), 2048 0.3%
# (261.9-262.2 -> 261.1-261.2, filled by FILL_SHARED as before); 1152 (56% of the lanes) 0.3-1% slower, so
# not below 3/4 (1153 ... 1535 not measured). Measured: bench/DISPATCH.md, ROWS_BWD16_WIDE_LANES
# (probe_rows_bwd16_2k.log).
ROWS_BWD16_WIDE_LANES = 2048
ROWS_BWD16_WIDE_WARPS = 8
# The rules above were measured on the H100 and hold on every GPU but those named here (and in GPU_CONSTANTS,
# below, for the long rows' kernels), which a run of
# `bench/probe_rows.py` on that GPU tuned: ROWS_TILINGS[gpu][(forward, itemsize, log, lanes, filled)] =
# (BLOCK_M, num_warps) replaces the rules' tiling of the unmasked rows kernels (not the where kernels'), where
# `lanes` is BLOCK_N (and TAIL_N), `filled`: rows of exactly BLOCK_N values that start 16-byte aligned.
# The H200 (the H100's 132 SMs and clocks, HBM3e: copy 4,266 GB/s against 3,004) spread 3-12% over tilings
# of the same rows that the H100 ran within ~1% (bench/results/h100/tune.json): its forward ran rows that fill
# part of their lanes faster in 2-4 warps, full rows of 2048-4096 on 2-4 rows at 8 warps, its backward on 2-8
# rows a program at 8-16 warps.
# Taken where the best tiling ran >= 2% ahead of the rules' at ~256 MB (H200, both ops unless named): the
# 16-bit forward of 512-4096 lanes 3-13% (bf16 65536 x 1024 3,803 -> 4,180 GB/s, torch.compile's 4,167), the
# float32 forward 2-12% (65536 x 781 3,764 -> 4,151, Liger's 4,148), the backward 2-9% (bf16 65536 x 2048
# 4,209 -> 4,402, Liger's 4,392). Left to the rules: within 2% (16-bit 128, 256, 8192, 16384 forwards and
# 781, 1152, 4096, 16384 backwards; float32 128, 256, 1152, 8192 forwards, the 16384 softmax forward, 781 and
# 4096 backwards). Measured: bench/DISPATCH.md, ROWS_TILINGS (bench/results/h200/probe_rows.log).
_H200_ROWS = {  # (forward, itemsize, lanes, filled): (BLOCK_M, num_warps), softmax and log_softmax
    (True, 2, 512, True): (2, 2), (True, 2, 1024, True): (1, 2), (True, 2, 1024, False): (2, 2),
    (True, 2, 2048, True): (4, 8), (True, 2, 2048, False): (1, 2), (True, 2, 4096, True): (2, 8),
    (True, 2, 4096, False): (1, 4),
    (True, 4, 512, True): (1, 2), (True, 4, 1024, True): (4, 16), (True, 4, 1024, False): (1, 2),
    (True, 4, 2048, True): (2, 16), (True, 4, 4096, True): (1, 16),
    (False, 2, 128, True): (4, 2), (False, 2, 256, True): (8, 8), (False, 2, 512, True): (8, 8),
    (False, 2, 1024, True): (4, 16), (False, 2, 2048, True): (2, 16),
    (False, 4, 128, True): (4, 2), (False, 4, 256, True): (4, 4), (False, 4, 512, True): (8, 8),
    (False, 4, 1024, True): (4, 16), (False, 4, 2048, True): (2, 16), (False, 4, 2048, False): (2, 16),
    # Short full rows (8-64 values, a router's softmax over its experts; results/h200/probe_rows_short_aligned.log,
    # 65536 and 1048576 rows): the rules' 16 values a thread at 4 warps left 65536 rows of 8 float32 values in 256
    # programs, under 2 an SM. float32 8 values at 64 rows: 1.13-1.25x on 65536 rows, 1.01-1.06x on 1048576; 16 values
    # at 32 rows, 1 warp: 1.10-1.14x and 1.01-1.03x; 32 and 64 values 1.00-1.05x. The 16-bit backward of 8 and 16
    # values: 1.02-1.16x on 65536 rows, 1.00-1.01x on 1048576; its forward and its longer rows within 4% (left). The
    # check (probe_rows_short_aligned_check.log, also 8192 rows and float16): 0.998-1.60x, 1.006-1.60x on 8192 rows.
    (True, 4, 8, True): (64, 4), (False, 4, 8, True): (64, 4), (True, 4, 16, True): (32, 1),
    (False, 4, 16, True): (32, 1), (True, 4, 32, True): (16, 2), (False, 4, 32, True): (16, 1),
    (True, 4, 64, True): (8, 1), (False, 4, 64, True): (8, 1), (False, 2, 8, True): (64, 2),
    (False, 2, 16, True): (32, 1),
}
# A third value, True, has the backward reload y and dy after the row sum (softmax_bwd_rows' RELOAD) instead of
# holding them across it: the H200's 16-bit softmax backward of 16384 values (8192 rows) 193.1 -> 185.1 us at 32
# warps (82 -> 32 registers a thread), Liger-Kernel's 185.6; at 1024 and 264 rows 6% and 12% faster; at 16 warps
# it was 8% slower, and 8192-value rows and the float32 backward were slower reloading (bench/DISPATCH.md,
# ROWS_PEELED16_BWD_RELOAD; results/h200/probe_rows_reload*.log).
ROWS_TILINGS = {"H200": {**{(forward, itemsize, log, lanes, filled): tiling
                            for (forward, itemsize, lanes, filled), tiling in _H200_ROWS.items()
                            for log in (False, True)},
                         (True, 4, True, 16384, True): (2, 32),  # the float32 log_softmax forward alone: 12%
                         # ...and of rows in part of 16384 lanes (9216-16000): 16 warps took 77 registers a thread
                         # (1 program an SM), 8 ran 1.15-1.40x (bench/results/h200/probe_rows_wide_fill.log)
                         (True, 4, True, 16384, False): (1, 8),
                         # ...and the 16-bit forward of rows in part of 512 lanes (257-511 values, unpeeled: aligned,
                         # or ALIGN 2 or 4) at 4 rows a program and 2 warps, not 4-8 at 4: 1.006-1.15x aligned (bf16
                         # 65536 x 384 log_softmax 3,257 -> 3,754 GB/s), 1.01-1.31x unaligned (302-506), and there
                         # 0.985-1.06x of the same rows peeled (probe_rows_512_fwd16.log; ROWS_PEEL16 peels only the
                         # odd ones)
                         **{(True, 2, log, 512, False): (4, 2) for log in (False, True)},
                         (False, 2, False, 16384, True): (1, 32, True)}}  # the 16-bit softmax backward: RELOAD


def tuned_gpu(name: str) -> str:
    """The key of ROWS_TILINGS and GPU_CONSTANTS for a GPU named `name` (torch.cuda.get_device_name, a JAX
    device's device_kind: "NVIDIA H200"), or "" (the H100's rules): the name as a word, so "GH200", not
    measured, is "". Raises nothing."""
    return next((gpu for gpu in (*ROWS_TILINGS, *GPU_CONSTANTS) if re.search(rf"\b{gpu}\b", name)), "")


# EVEN_M (M a multiple of BLOCK_M: no row mask), else ALIGN_M (16 where M is a multiple of 16), make
# the rows kernels compile alike under torch's launcher (which tells the compiler M is a multiple of
# 16) and jax_triton's; only where BLOCK_M > 1, and no EVEN_M for the float32 forward of 32 rows a
# program or more, 16 for log_softmax (H100 float32 65536 x 64: 3,405 to 3,065 GB/s with it). Looped
# kernels (8192-wide tiles, 8 warps, 2 programs per SM) are memory-bound on their second pass.
# Measured: bench/DISPATCH.md, LOOP_BLOCK_N.
LOOP_BLOCK_N = {2: 8192, 4: 8192, 8: 4096}
LOOP_PROGRAMS_PER_SM = 2
# Cooperative kernel (long rows read once): a chunk of COOP_CHUNK_N values a program at COOP_WARPS
# warps, held in registers, at most one chunk per SM a row (see _coop_launches): N <= 132 * 8192 =
# 1081344 on an H100, float64 half that. 8192 x 8 warps was within 3.3% of the best of 5 variants
# but at bf16 N = 50257 (4096 x 4 warps: 10% faster forward). A row's last chunk may be short.
# Measured: bench/DISPATCH.md, COOP_CHUNK_N.
COOP_CHUNK_N = {2: 8192, 4: 8192, 8: 4096}
COOP_WARPS = 8
# The softmax (not log_softmax) forward of aligned 16-bit rows up to COOP_WIDE_MAX_N takes
# chunks twice as wide (16384 at 8 warps): H100 bf16 N = 262144 2,365 to 2,633 GB/s. It lost at
# 1048576, for the log_softmax everywhere, and on unaligned rows (50257).
# Measured: bench/DISPATCH.md, COOP_WIDE_MAX_N.
COOP_WIDE_MAX_N = 262144
# COOP_WIDE_MIN_PER_SM: and only where the grid of wide chunks has more than this many programs
# an SM. Unpacked, they take 80 registers a thread (3 programs an SM at once), so a grid of 3.88 an
# SM runs in two waves: on the H100 bf16 64 x 128256 (3.88) took 16.2-17.9 us wide, 15.3 in packed
# 8192-value chunks; at 7.76 an SM the wide chunks stay ahead. 3.88 to 7.76 is not measured.
# Measured: bench/DISPATCH.md, COOP_WIDE_MIN_PER_SM.
COOP_WIDE_MIN_PER_SM = 4
# COOP_PACK_MIN_CHUNKS: the cooperative backward of 16-bit rows of whole words of at least this
# many chunks (peeled: COOP_PACK_PEELED_MIN_CHUNKS) holds y and dy across the row's wait as packed
# 32-bit words of two values (PACK): 63 registers a thread instead of 80 (bf16, 8192 x 8 warps). On
# the H100 bf16 softmax 128 x 1048576 went from 2,520 to 2,723 GB/s. Unpeeled grids of at most
# COOP_UNPACKED_PER_SM an SM lose; so do peeled rows of fewer chunks, which reload y, dy (RELOAD).
# Measured: bench/DISPATCH.md, COOP_PACK_MIN_CHUNKS.
COOP_PACK_MIN_CHUNKS = 4
COOP_PACK_PEELED_MIN_CHUNKS = 32
# COOP_UNPACKED_PER_SM: and only where the grid has more programs an SM than the GPU holds at once
# unpacked (70-80 registers a thread at 8 warps: 3 programs an SM; packed, 62-64: 4): a grid it
# holds whole gains no occupancy and pays for the packing. H100 bf16 softmax backward, PACK off ->
# on: 13 x 256000 (3.15 an SM) 11.92 -> 9.98 us; fewer programs lost. Peeled rows keep PACK.
# Measured: bench/DISPATCH.md, COOP_UNPACKED_PER_SM.
COOP_UNPACKED_PER_SM = 3
# COOP_FWD_UNPACKED_PER_SM: the cooperative forward of 16-bit rows of whole words holds x across its
# wait packed (PACK, unpacked anew for each use) where its grid of 8192-value chunks has more than
# this many programs an SM: 32 registers a thread, not 48 (8 programs an SM, not 5); few rows lost.
# H100 bf16 log_softmax forward 128 x 1048576: 2,348 to 2,663 GB/s. Not COOP_WIDE_MAX_N's chunks.
# Measured: bench/DISPATCH.md, COOP_FWD_UNPACKED_PER_SM.
COOP_FWD_UNPACKED_PER_SM = 5
# COOP_PACK_WIDE_MIN_PER_SM: packed, the forward takes chunks twice as wide (16384 values, 8 warps,
# 63 registers: 4 programs an SM) on unpeeled rows where its grid of 8192-value chunks has at least
# this many programs an SM; with SENT they leave their row late at every grid. H100 bf16 softmax
# 32 x 1048576: 62.4-62.7 -> 56.9-58.5 us; 15.5 an SM did not gain, 15.5-17.45 is unmeasured.
# Measured: bench/DISPATCH.md, COOP_PACK_WIDE_MIN_PER_SM.
COOP_PACK_WIDE_MIN_PER_SM = 17
# COOP_NARROW_MIN_SMS_PER_PROGRAM: where the grid of the cooperative kernels has at most one program
# every this many SMs (single rows: 33 programs at 132 SMs, N <= 270336), chunks are half as wide
# (4096 values for 16-bit and float32; 8 warps): twice the programs, each waiting for half the
# bytes. On the H100 float32 1 x 128256 forward: 4.58-4.65 to 3.93-3.95 us. 8 rows of 128256 lost.
# Measured: bench/DISPATCH.md, COOP_NARROW_MIN_SMS_PER_PROGRAM.
COOP_NARROW_MIN_SMS_PER_PROGRAM = 4
# COOP_DEFER_Y: the cooperative log_softmax backward loads y after the row's wait (its row sum is
# of dy alone): 16-bit rows in grids past COOP_UNPACKED_PER_SM programs an SM (dy packed, PACK), and
# unpeeled float32 rows under a register cap of COOP_CAP32_REGS (4 programs an SM, not 3) in grids
# past COOP_CAP32_MIN_PER_SM an SM (TAG: COOP_CAP32_TAG_MIN_PER_SM) up to COOP_CAP32_MAX_PER_SM, or
# of rows past COOP_CAP32_MIN_CHUNKS chunks (`_coop_cap32`): float32 64 x 65536 22.3 -> 20.4 us.
# Measured: bench/DISPATCH.md, COOP_CAP32_REGS.
COOP_CAP32_REGS = 64
COOP_CAP32_MIN_PER_SM = 3
COOP_CAP32_TAG_MIN_PER_SM = 2
COOP_CAP32_MAX_PER_SM = 16
COOP_CAP32_MIN_CHUNKS = 96
# COOP_BWD32_TAG_CAP_REGS: the float32 cooperative backward with TAG that COOP_CAP32 leaves uncapped (85-93
# registers a thread at 8 warps under Triton 3.6: 2 programs an SM) is compiled under this cap (maxnreg; 80: 3 an
# SM, 4-6 bytes spilled) where the grid has more programs than COOP_BWD32_TAG_CAP_MIN_PER_SM an SM (what the GPU
# holds uncapped) and the launcher can pass it. None here (the H100: not measured); the H200's 80 (GPU_CONSTANTS:
# 4096 x 50257 softmax 611.7 -> 581.2 us, log_softmax 637.5 -> 589.0; 24 x 128256 14.1 -> 12.9; 0.7-8.6% on 24
# grids of 2.9-217 programs an SM; 1 an SM even). Measured: bench/DISPATCH.md, COOP_BWD32_TAG_CAP_REGS.
COOP_BWD32_TAG_CAP_REGS = None
COOP_BWD32_TAG_CAP_MIN_PER_SM = 2
# COOP_LATE_LEAVE: in the cooperative kernels (not an unpacked log_softmax's), a program's second
# arrival at its row's counter comes after its stores, not before its compute (LATE_LEAVE), mostly
# through occupancy (H100 bf16 N = 50257 forward: 2,131 to 2,326 GB/s; log_softmax lost on some).
# COOP_LATE_LEAVE_MIN_PER_SM: only from this many programs an SM; below, late leaves end the kernel.
# Measured: bench/DISPATCH.md, COOP_LATE_LEAVE_MIN_PER_SM.
COOP_LATE_LEAVE_MIN_PER_SM = 12
# COOP_TAG_MAX_CHUNKS: the cooperative kernels wait for a row through tagged partials (TAG: 64-bit
# slots of tag and value, read until all hold the tag: one L2 round trip on a complete row, four on
# counters) for float32 partials of rows of at most this many chunks, as every waiting program reads
# every slot (n_chunks ** 2 reads a round). H100 bf16 2048 x 65536 backward: 2,664 to 3,033 GB/s.
# Measured: bench/DISPATCH.md, COOP_TAG_MAX_CHUNKS.
COOP_TAG_MAX_CHUNKS = 32
# COOP_TAG_FWD_MIN_PER_SM: the 16-bit forward of peeled rows and rows not of whole words takes TAG
# only from this many programs an SM (unpeeled whole-word rows: COOP_TAG_FWD16_SM_FEW_MAX_PER_SM),
# rows of whole words packed (PACK); fewer programs lost or tied. H100 bf16 2048 x 65536 softmax:
# 2,640 to 2,892 GB/s. Rows of over COOP_TAG_MAX_CHUNKS chunks wait on counters (TAG lost 17-25%).
# Measured: bench/DISPATCH.md, COOP_TAG_FWD_MIN_PER_SM.
COOP_TAG_FWD_MIN_PER_SM = 32
# COOP_TAG_FWD32_MIN_PER_SM: float32 rows (unpacked chunks) take TAG in the forward, peeled or not,
# from this many programs an SM. On the H100 (counters -> TAG) the forward went from 2,707 to 2,938
# GB/s at 1335 x 50257 (peeled, 70.8 programs an SM); at 0.48 an SM and fewer it lost 1-4%. (16-bit
# rows: COOP_TAG_FWD_MIN_PER_SM above.)
# Measured: bench/DISPATCH.md, COOP_TAG_FWD32_MIN_PER_SM.
COOP_TAG_FWD32_MIN_PER_SM = 0.75
# COOP_FWD16_WARPS: with TAG, 16-bit rows of whole words (peeled or not) are held packed in
# 8192-value chunks at this many warps, summed in halves (SPLIT_SUM: 56-64 registers a thread, 8-9
# programs an SM). H100 bf16 softmax 2670 x 50257: 2,622 to 2,855 GB/s. Unpeeled log_softmax rows,
# which lost at 124 an SM and more, keep wide chunks from COOP_FWD16_LOG_WIDE_MIN_PER_SM an SM.
# Measured: bench/DISPATCH.md, COOP_FWD16_WARPS.
COOP_FWD16_WARPS = 4
COOP_FWD16_LOG_WIDE_MIN_PER_SM = 96
# Unpeeled 16-bit rows in grids of COOP_TAG_FWD16_FEW_MIN_PER_SM programs an SM and more, under
# COOP_TAG_FWD16_FEW_MAX_PER_SM (the softmax: COOP_TAG_FWD16_SM_FEW_MAX_PER_SM), take TAG in
# 8192-value chunks at COOP_WARPS warps, packed. log_softmax 16 x 256000: 10.9 to 9.65 us. The
# softmax was held unpacked, and from 1.5 an SM only (unpacked it lost at 0.97), until CVT_X2 made
# the packed one quicker (2026-11-27): bf16 8 x 256000 7.32 -> 7.03 us, 6 x 256000 6.85 -> 6.37;
# even from 0.75 an SM to 0.97, as the log_softmax.
# Measured: bench/DISPATCH.md, COOP_TAG_FWD16_FEW_MAX_PER_SM.
COOP_TAG_FWD16_FEW_MAX_PER_SM = 6
COOP_TAG_FWD16_FEW_MIN_PER_SM = 0.75
# COOP_TAG_FWD16_SM_FEW_MAX_PER_SM: the softmax's few rows end here (COOP_TAG_FWD16_FEW_MAX_PER_SM
# is the log_softmax's); from here unpeeled 16-bit rows of whole words take TAG's COOP_FWD16_WARPS
# chunks (packed, summed in halves) at every grid: with CVT_X2 they beat the plans before (H100 bf16
# 64 x 128256: 17.3-17.6 -> 15.4-15.6 us). At 1.9 to 3.9 an SM they ran even: 8 warps kept.
# Measured: bench/DISPATCH.md, COOP_TAG_FWD16_SM_FEW_MAX_PER_SM.
COOP_TAG_FWD16_SM_FEW_MAX_PER_SM = 4
# Keyed partials (SENT: relaxed atomic exchanges, no release fence before the arrival): the
# cooperative forward on counters (rows of more than COOP_TAG_MAX_CHUNKS chunks) waits on them for
# 16-bit rows packed in wide chunks or in COOP_SPLIT_SUM_MAX_CHUNKS's; the backward keeps the fenced
# counters. COOP_SENT32_MIN_PER_SM, COOP_SENT32_LOG_MIN_PER_SM: float32 from these grids (programs
# an SM; the log_softmax always with LATE_LEAVE): H100 64 x 1048576 2,681 to 2,787 GB/s; fewer lost.
# Measured: bench/DISPATCH.md, COOP_SENT32_MIN_PER_SM.
COOP_SENT32_MIN_PER_SM = 6
COOP_SENT32_LOG_MIN_PER_SM = 10
# COOP_POLY: the 16-bit softmax forward packed in wide chunks (COOP_PACK_WIDE_MIN_PER_SM, with SENT)
# computed the post-wait exps of its words' high halves by a polynomial on the FMA pipe (POLY,
# `_exp2_poly`), the low halves' by MUFU.EX2 (H100: bf16 128 x 1048576 2,684-2,693 to 2,740-2,746
# GB/s when it came). Since CVT_X2 under its cap it loses there (193.1-193.6 us without it against
# 196.5-197.9; with COOP_STAGGER_CYCLES 190.0-191.0 against 205.2-207.6): off, the kernel's POLY kept.
# Measured: bench/DISPATCH.md, COOP_POLY.
COOP_POLY = False
# COOP_CVT_X2: packed 16-bit forwards write y by one cvt.rn.bf16x2.f32 (cvt.rn.f16x2.f32) a word,
# not two scalar conversions and byte permutes (CVT_X2; the same bits): bf16 softmax 16 x 1048576
# 32.2-32.8 to 30.2-30.9 us. The softmax's wide chunks on counters and the log_softmax's in TAG's wide
# ones, past an occupancy step, take it capped at COOP_X2_CAP_REGS (maxnreg) only where the launcher can; the
# log_softmax in TAG's 4-warp chunks only if peeled, in 8-warp ones to COOP_X2_FEW_MAX_PER_SM an SM.
# Measured: bench/DISPATCH.md, COOP_CVT_X2.
COOP_CVT_X2 = True
COOP_X2_CAP_REGS = 64
COOP_X2_FEW_MAX_PER_SM = 5
# COOP_X2_PEELED_CAP: the packed softmax forward of peeled rows in TAG's COOP_FWD16_WARPS chunks (CVT_X2,
# 71 registers a thread uncapped under Triton 3.6 at most N, 7 programs an SM) is compiled under
# COOP_X2_CAP_REGS (64, no spill: 8 an SM) where the launcher can pass the cap. Off here: the H100 kept
# those plans uncapped (COOP_CVT_X2's 1-2%, not measured capped); on for the H200 (GPU_CONSTANTS: bf16 4096 x
# 50257 231.7 -> 219.7 us, 3-8% on every grid of that family; 64 registers uncapped at N = 100001: even).
# Measured: bench/DISPATCH.md, COOP_X2_PEELED_CAP.
COOP_X2_PEELED_CAP = False
# COOP_STAGGER_CYCLES: the cooperative forward's first wave (the programs the GPU holds at once, taken
# at 64 registers a thread: 32 // num_warps an SM) starts over a ramp of this many SM cycles (8 us at
# 1.8 GHz; the kernel's STAGGER), where the grid has more programs than that wave. Started at once,
# those programs load, wait and store together, and leave the memory idle between; the waves after
# inherit it (a launch cost ~6-10 us beside a copy's, bench/results/h100/probe_scale_1m.log). H100
# float32 64 x 1048576 log_softmax 196.97-197.27 -> 192.84-193.29 us, bf16 12 x 1048576 25.1 -> 22.9
# (S8); 4 us and 12 us ramps gained less. Only chunks of COOP_STAGGER_HELD registers of x a thread, whose
# kernels take 56-64 (FIRST right): the packed 8-warp 8192-value chunks (16, 40-44 registers: 5-6 an SM)
# lost, their grid held whole (bf16 36 x 128256 log_softmax 10.7 -> 14.0 us). Not float64 (not measured).
# Measured: bench/DISPATCH.md, COOP_STAGGER_CYCLES.
COOP_STAGGER_CYCLES = 14400
COOP_STAGGER_HELD = 32
# Unpeeled 16-bit rows of more than COOP_TAG_MAX_CHUNKS and at most COOP_SPLIT_SUM_MAX_CHUNKS chunks
# of 8192 values are held packed at COOP_FWD16_WARPS warps with SPLIT_SUM, SENT and LATE_LEAVE from
# COOP_SPLIT_SUM_MIN_PER_SM programs an SM (bf16 softmax 256 x 524288: 2,577 to 2,724 GB/s; it lost
# at 3.88 an SM); longer rows only where they would be packed at 8 warps, not wide.
# Measured: bench/DISPATCH.md, COOP_SPLIT_SUM_MAX_CHUNKS.
COOP_SPLIT_SUM_MAX_CHUNKS = 64
COOP_SPLIT_SUM_MIN_PER_SM = 4
# Rows not 16-byte aligned are cut into a head, an aligned body and a tail (PEEL), so the body moves
# in vectors, not a value a lane. A peeled row of the rows kernel runs on half the warps (16-bit;
# float32 from 16 warps; not the log_softmax backward past 8192 lanes): H100 bf16 N = 16385 forward
# 1,844 to 2,791 GB/s. 16-bit rows peel from PEEL_MIN_N or with a tail anyway; wider ones always.
# Measured: bench/DISPATCH.md, PEEL_MIN_N.
PEEL_MIN_N = 2048
# ROWS_PEEL16 {(forward, lanes): (BLOCK_M, num_warps, fill, align)} (every GPU's: measured on the H200, then on the
# H100, 2026-12-06, where the same tables ran 0.89-3.3x the rules' plans: bench/DISPATCH.md, "The 16-bit short-row
# tables on the H100"): 16-bit rows not 16-byte aligned, of ALIGN at most `align` (1: an odd N or stride, so every value
# moves alone; 2, 4: pairs, quads), shorter than PEEL_MIN_N, peel where their aligned body takes `lanes` lanes
# (triton.next_power_of_2(N // 8 * 8)) and N is at least `fill` of them, at BLOCK_M rows a program and num_warps, in
# grids of at least ROWS_PEEL16_MIN_PER_SM rows an SM; in smaller grids the odd rows (ALIGN 1) of an entry's lanes up to
# ROWS_PEEL16_SMALL_LANES[forward] peel one row a program at 1 warp (or ROWS_PEEL16_SMALL_M's). ROWS_PEEL16_TAILS: rows
# that `peel` peels for a tail take the same tilings. H200, the benchmark's clock, M = 65536 unless named (bf16 and
# float16; probe_rows_peel16*.log, probe_rows_1024_odd_fwd16*.log): odd N, every lane count at 1 warp (the backward in
# 2048 at 2), against the plans before: 17-39 values (16 and 32 lanes, 16 rows a program; whole at 32-64 rows and 4
# warps before, 17 and 33 peeled at 64-128 rows and 2) 0.986-3.07x, geomean 1.49, on 65536 and 1048576 rows
# (probe_rows_peel16_32_check.log: 1048576 x 35 log_softmax forward 739 -> 2,269 GB/s; under 1.0 only 23's log_softmax
# backward on 65536 rows; the backwards of 19-31 ran up to 1.26x faster whole at 16 rows, not taken); 41-127 values
# (64 and 128 lanes, 8 rows a program; unpeeled before) forward 1.89-3.07x
# (65536 x 77 softmax 969 -> 2,231 GB/s), backward 1.13-1.79x; 193-511 (256 and 512 lanes, 4 and 2 rows; peeled at 2
# warps before) 1.01-1.17x but two backwards within 0.5%; 521-1023 (1024 lanes, one row) 1.15-1.46x forward from 521
# (781: 3,368 -> 3,938, 0.79 -> 0.93 of the copy), backward 1.15-1.43x to 701 values and 1.00-1.13x past them (781
# softmax at 2 warps 3,796 -> 4,292 GB/s); 1101-2047 forward 1.15-1.47x, backward at 2 warps 1.03-1.37x (1201
# log_softmax 2,875 -> 3,848). Even N (ALIGN 2, 4) forward in 256 lanes 1.07-1.61x; past 256 lanes, and in 64 and 128
# (50, 60, 100), 0.40-1.14x, and their backwards 0.83-1.04x: not peeled (in 512 lanes ROWS_TILINGS' 4 rows at 2 warps
# unpeeled ran 0.985-1.06x of peeled). With a tail (65, 129, 257, 521, 1025) 1.005-1.84x over the rules' peeled tiling.
# The gain is the peel's: unpeeled at the peeled tiling the odd rows ran 0.04-0.93x of it. Grids of 264-2112 rows (2-16
# an SM): one odd row a program at 1 warp 1.09-2.54x forward (64-2048 lanes), backward 1.11-2.05x to 512 lanes and
# 0.71-1.12x past them (kept). probe_rows_peel16_check2_*.log: 163 changed plans 1.0005-3.07x of the plan before, one at
# 0.996x.
# Measured: bench/DISPATCH.md, ROWS_PEEL16.
ROWS_PEEL16 = {(True, 16): (16, 1, 0.0, 1), (True, 32): (16, 1, 0.0, 1), (False, 16): (16, 1, 0.0, 1),
               (False, 32): (16, 1, 0.0, 1),
               (True, 64): (8, 1, 0.0, 1), (True, 128): (8, 1, 0.0, 1), (True, 256): (4, 1, 0.0, 4),
               (True, 512): (2, 1, 0.0, 1), (True, 1024): (1, 1, 0.0, 1), (True, 2048): (1, 1, 0.0, 1),
               (False, 64): (8, 1, 0.0, 1), (False, 128): (8, 1, 0.0, 1), (False, 256): (4, 1, 0.0, 1),
               (False, 512): (2, 1, 0.0, 1), (False, 1024): (1, 1, 0.0, 1), (False, 2048): (1, 2, 0.0, 1)}
ROWS_PEEL16_MIN_PER_SM = 32
# ROWS_PEEL16_GRIDS {(forward, lanes): ((logs, first N, last N, rows an SM at most, BLOCK_M, num_warps), ...)} (the
# H100's: the module's; the H200's: GPU_CONSTANTS, none): ROWS_PEEL16's rows of these lanes, of an op in `logs`
# (False: softmax, True: log_softmax) and first-last values, in grids of ROWS_PEEL16_MIN_PER_SM up to this many rows an
# SM take this tiling; the first entry that matches wins. H100, bf16 (probe_rows_h100_77_bwd.log, _bwd16_128_grids.log,
# _odd16_fwd_grids*.log; bench/DISPATCH.md, ROWS_PEEL16_GRIDS), against ROWS_PEEL16's 8 rows at 1 warp in 128 lanes
# and 16 rows at 1 warp in 32: the backward of 77-127 values at 4 rows and 1 warp log_softmax 1.00-1.39x (softmax
# 0.92-1.00x), at 8 rows and 2 warps softmax 1.01-1.04x to 65536 rows (1.00x past them); the forward of 25-39 values at
# 8 rows and 1 warp 1.19-1.33x on 16896 rows (0.66-1.16x from 131072), at 16 rows and 2 warps 1.00-1.20x on
# 16896-131072 rows, past them softmax 31-39 1.01-1.20x and log_softmax 35-39 1.01-1.13x (25-29 0.84-1.04x, 31's
# log_softmax 0.92-1.01x: kept). The check of that table (probe_rows_h100_grids16_*_check.log: 1.00-1.33x forward,
# 1.00-1.39x backward, over the plans before): 8 rows and 1 warp ahead of 16 and 2 for 31-39 values at 256 rows an SM
# (1.01-1.15x) and 35-39 at 496 (1.01-1.10x), taken to 256 and 512 rows an SM (_grids16b_fwd_check.log: 1.00-1.19x).
# Small grids, half the rows a program (probe_rows_h100_peel16_lanes_*_small.log, bf16, against ROWS_PEEL16's tiling):
# the forward in 64 lanes (41-71 values) at 4 rows 1.09-1.12x to 48 rows an SM and 1.00-1.06x at 64 (0.94-1.01x at
# 80), in 128 lanes (73-135) 1.07-1.25x to 96 and 1.00-1.07x at 128; the log_softmax backward in 64 lanes at 4 rows
# 1.01-1.14x to 80 rows an SM, in 256 (137-263) at 2 rows 1.01-1.08x to 48 (softmax 0.90-1.03x: kept). Checked
# (probe_rows_h100_grids16c_*_check.log, bf16 and float16): the forward 0.99-1.26x, the backward 1.00-1.17x. Then
# the forward in 256 lanes at 2 rows 1.00-1.19x to 48 rows an SM, even rows (ALIGN 2 and 4, which its ROWS_PEEL16
# entry peels too) alike (probe_rows_h100_peel16_256_fwd_even.log); the softmax backward in 64 lanes at 16 rows and 2
# warps 1.00-1.16x to 48 on 41-59 values (probe_rows_h100_peel16_64_bwd_softmax.log), on 41-47 to 64 (1.02-1.11x).
# Checked (probe_rows_h100_grids16d_*_check.log, _grids16e_bwd_check.log): the forward 1.003-1.19x, the backward
# 1.01-1.16x. Past those bounds (probe_rows_h100_peel16_256_fwd_bounds.log, _64_bwd_61.log): the forward at 2 rows
# 1.005-1.09x on 171-263 values at 56 rows an SM and 1.005-1.08x on 211-263 to 72; the softmax backward at 16 rows
# and 2 warps 1.06-1.09x on 61-71 values at 32, 1.006-1.05x on 61-69 at 40, 1.007-1.04x on 49-53 at 49-56. Checked
# (probe_rows_h100_grids16f_*_check.log): the forward 0.998-1.10x (geomean 1.05), the backward 1.004-1.10x (1.04).
# Past those (probe_rows_h100_peel16_256_fwd_bounds2.log, _bounds3.log): 2 rows on 221-263 values 1.00-1.05x at 80 rows
# an SM (211: 0.99-1.00x; 96-112 rows an SM 0.95-1.04x, mixed), on 171-209 0.98-1.01x at 64 and 0.94-1.01x at 72.
# Checked (probe_rows_h100_grids16g_fwd_check.log, 73-80 rows an SM): 0.995-1.05x, geomean 1.02. The log_softmax
# backward past its bounds (probe_rows_h100_peel16_bwd_log_bounds.log): in 64 lanes at 4 rows 1.02-1.06x on 55-71
# values at 88 rows an SM (41: 0.97x; 96-128 rows an SM 0.86-1.04x), in 256 at 2 rows 1.00-1.05x on 171-221 at 56
# (137: 0.98-1.01x, 263: 0.99-1.01x; 64-96 rows an SM 0.93-1.03x).
# Measured: bench/DISPATCH.md, ROWS_PEEL16_GRIDS.
ROWS_PEEL16_GRIDS = {(True, 64): (((False, True), 41, 71, 64, 4, 1),),
                     (True, 128): (((False, True), 73, 135, 128, 4, 1),),
                     (True, 256): (((False, True), 221, 263, 80, 2, 1), ((False, True), 211, 263, 72, 2, 1),
                                   ((False, True), 171, 263, 56, 2, 1), ((False, True), 137, 263, 48, 2, 1)),
                     (False, 64): (((True,), 55, 71, 88, 4, 1), ((True,), 41, 71, 80, 4, 1),
                                   ((False,), 41, 47, 64, 16, 2), ((False,), 41, 53, 56, 16, 2),
                                   ((False,), 41, 59, 48, 16, 2), ((False,), 41, 69, 40, 16, 2),
                                   ((False,), 41, 71, 32, 16, 2)),
                     (False, 256): (((True,), 171, 221, 56, 2, 1), ((True,), 137, 263, 48, 2, 1)),
                     (False, 128): (((True,), 73, 127, float("inf"), 4, 1), ((False,), 73, 127, 512, 8, 2)),
                     (True, 32): (((False, True), 25, 39, 128, 8, 1), ((False, True), 31, 39, 256, 8, 1),
                                  ((False, True), 35, 39, 512, 8, 1), ((False, True), 25, 39, 1024, 16, 2),
                                  ((False,), 31, 39, float("inf"), 16, 2), ((True,), 35, 39, float("inf"), 16, 2))}
ROWS_PEEL16_SMALL_LANES = {True: 2048, False: 512}
ROWS_PEEL16_TAILS = True
# ROWS_PEEL16_SMALL_M {lanes: BLOCK_M} (every GPU's, as ROWS_PEEL16): the rows a program of ROWS_PEEL16_SMALL_LANES' odd
# rows in smaller grids where not one. H200 (probe_rows_peel16_32_grids.log, bf16 17-39 odd values on 264-4223 rows):
# in 16 and 32 lanes 4 rows at 1 warp ran 0.82-1.98x of one (1.01-1.98x from 2112 rows, 0.82-1.28x on 264 and 1056)
# and 1.09-4.0x of the plan before (whole, or the rules' peeled 64-128 rows at 2 warps for 17 and 33).
# Measured: bench/DISPATCH.md, ROWS_PEEL16.
ROWS_PEEL16_SMALL_M = {16: 4, 32: 4}
# ROWS_PEEL16_WHOLE_FILL {(forward, lanes): fill} (every GPU's, as ROWS_PEEL16): rows that ROWS_PEEL16's entry of these
# lanes takes but that fill less than `fill` of them run whole (unpeeled) at its tiling, in small grids too. H200: the
# odd backward of 25-31 values (a body of 24 in 32 lanes) whole at 16 rows and 1 warp ran 1.08-1.25x of it peeled
# (probe_rows_odd_whole16_check.log, bf16 and float16 on 65536 and 1048576 rows, 32 cases, geomean 1.18; bf16 1048576
# x 27 softmax 2,553 -> 3,162 GB/s), at 4 rows on 264-4223 rows 1.03-1.29x (softmax 1.16-1.29x; _grids.log, 64 cases).
# Their forward ran 0.60-1.04x whole at 16-64 rows (kept peeled), and 19-23 values (a body of 16) 0.89-0.97x whole in
# the softmax backward (probe_rows_odd_whole16.log; the log_softmax backward's 1.01-1.26x not taken: one entry serves
# both ops).
# Measured: bench/DISPATCH.md, ROWS_PEEL16.
ROWS_PEEL16_WHOLE_FILL = {(False, 32): 1.0}
# ROWS_WHOLE16_TAILS {(forward, BLOCK_N, odd): (BLOCK_M, num_warps)} (every GPU's, as ROWS_PEEL16): 16-bit rows
# shorter than PEEL_MIN_N that `peel` peels only for their tail (row_segments: BLOCK_N and a tail of at most BLOCK_N /
# 16), of ALIGN 1 (`odd`: an odd N or stride) or 2 and 4, run whole at this tiling in grids
# of at least ROWS_PEEL16_MIN_PER_SM rows an SM, before ROWS_PEEL16. H200, bf16 65536 and 1048576 rows: even N
# (probe_rows_even_tails16.log, against the rules' peeled 64 and 32 rows at 2 warps) 34 values (32 + 2) whole at 16
# rows and 1 warp forward 2.29-2.49x, backward 1.77-1.93x; 66 and 68 (64 + 2, 4) forward 1.43-1.81x, backward
# 1.19-1.56x; 130 and 132 (128 lanes) 0.94-1.16x and 260 0.81-0.97x (kept peeled). Odd N (probe_rows_odd_whole16*.log,
# against ROWS_PEEL16's 16 rows peeled; also float16): 17 (16 + 1) whole at 32 rows and 1 warp forward 1.31-1.47x,
# backward 1.08-1.45x (bf16 65536 x 17 log_softmax 1,104 -> 1,595 GB/s), 33 forward 1.17-1.32x; 33's backward
# 0.93-1.14x (softmax 0.93-1.00x: kept peeled); 65-67 and 129-135 0.34-0.99x whole at 8-32 rows
# (probe_rows_odd_tails16.log).
# Measured: bench/DISPATCH.md, ROWS_PEEL16.
ROWS_WHOLE16_TAILS = {**{(forward, BLOCK_N, False): (16, 1) for forward in (True, False) for BLOCK_N in (32, 64)},
                      (True, 16, True): (32, 1), (False, 16, True): (32, 1), (True, 32, True): (32, 1)}
# ROWS_ODD16_TILINGS {(forward, BLOCK_N): (BLOCK_M, num_warps)} (every GPU's, as ROWS_PEEL16): 16-bit rows of ALIGN
# 1 (an odd N or stride) in BLOCK_N lanes, no tail, that neither ROWS_WHOLE16_TAILS nor ROWS_PEEL16 takes, run whole
# at this tiling, in any grid. H200
# (probe_rows_short16_5_7.log, _9_15.log, bf16 65536 and 1048576 rows, against the rules' 256 and 128 rows at 4
# warps): the backward of 5 and 7 values at 64 rows and 1 warp 1.07-1.58x, of 9-15 at 32 rows 1.04-1.37x (512 values
# a program, as ROWS_PEEL16's 16 rows of 32 lanes); their forward 0.94-1.24x (softmax ahead on 65536 rows, log_softmax
# behind: left), the even rows' (6, 10-14) backward 0.90-1.29x (left). The check (probe_rows_odd16_bwd_check.log,
# _grids.log; bf16 and float16, 264-1048576 rows): 1.00-1.86x, geomean 1.31 (bf16 65536 x 5 softmax 444 -> 696 GB/s,
# 1048576 x 15 2,391 -> 2,792); ties (1.00x) only on 264 rows (4-13 GB/s) and bf16 4224 x 7 softmax, none behind.
# Measured: bench/DISPATCH.md, ROWS_PEEL16.
ROWS_ODD16_TILINGS = {(False, 8): (64, 1), (False, 16): (32, 1)}
# ROWS_WHOLE32 {(forward, log, BLOCK_N, TAIL_N, odd): (BLOCK_M, num_warps, SMALL_BLOCK_M, SMALL_NUM_WARPS)} (the
# H200's: GPU_CONSTANTS; the H100's: the module's, below): float32 rows not 16-byte aligned (N or a stride not a
# multiple of 4; `odd`: ALIGN 1, else 2), which `peel` peels from 4 values, in BLOCK_N + TAIL_N lanes (row_segments),
# run whole at this tiling, and where it leaves fewer than ROWS_WHOLE32_MIN_PROGRAMS programs an SM at SMALL_BLOCK_M
# rows and SMALL_NUM_WARPS. H200 (probe_rows_short32_8_16.log, _32_64.log, _2_4.log; 4224, 65536 and 1048576 rows,
# against the rules' peeled 64-2048 rows at 4 warps): 5 and 6 values (8 lanes) at 64 rows and 2 warps 1.52-2.29x
# (1048576 x 6 softmax forward 31.3 -> 13.7 us), 16 rows at 1 warp on 4224 1.76-2.75x; 9, 10 and 13 (16 lanes) at 32
# rows and 1 warp 1.10-1.77x from 65536 rows, 16 rows on 4224 1.24-2.13x (32 there: 0.95-1.97x); 17 (16 + 1) at 16
# rows 1.09-1.53x, 4 rows on 4224 1.33-1.81x; 30 (32 lanes, ALIGN 2) at 16 rows 1.01-1.45x, 4 on 4224 1.22-1.79x; 25
# (ALIGN 1) alike 1.08-1.58x but its log_softmax forward 0.84-0.96x whole at 8-32 rows (kept peeled); 3 values (4
# lanes, no body: `peel` no longer peels them) at 64 rows and 1 warp 2.9-23.6x, 32 rows on 4224; 2 at 256 rows and 4
# warps 4.3-27x (1048576 x 2 softmax backward 201 -> 7.4 us). 33 (32 + 1) 0.78-1.22x and 63 (64 lanes) 1.00-1.14x
# from 65536 rows: left. The check (probe_rows_whole32_check*.log, 1056-1048576 rows, the float32 rows of 1-31 values
# and float64's 1, 415 changed plans against the plans before): 1.00-25x, geomean 1.98, none behind (1048576 x 21
# softmax forward 1.00x, 18 and 30 1.01x). The H100 (probe_rows_h100_whole32_fwd.log, _bwd.log: 2-30 values on 4224,
# 65536 and 1048576 rows at 16-256 rows a program, the forward with ROWS_FWD32_OFFS32's flags): 2 at 256 rows and 4
# warps (backward 128), 3 at 128 and 4, 5-7 at 64 and 2 (backward 32 and 1: 1048576 x 5 38.5 -> 22.3 us), 9-15 and 17
# at 32 and 1 (backward 16), 18-32 at 16 and 1, but the softmax forward of odd 19-31 at 32 and 2 (1048576 x 21: 0.95x
# the plan before at 16 rows, 1.05x at 32 and 2; probe_rows_h100_whole32_odd32.log); smaller grids at 16 rows and 1
# warp. The check (probe_rows_h100_whole32_check.log; 1-31 values, 1056-1048576 rows, 470 cases against the plans
# before, the first table): 0.954-3.26x, geomean 1.41 (1048576 x 5 softmax forward 35.9 -> 16.1 us, x 7 53.2 ->
# 21.9); the log_softmax forward of odd 19-31 (unchanged) within 0.8%. Measured: bench/DISPATCH.md, "ROWS_WHOLE32
# and ROWS_FWD32_OFFS32 on the H100".
ROWS_WHOLE32: dict = {(forward, log, BLOCK_N, TAIL_N, odd): tiling
                      for forwards, (BLOCK_N, TAIL_N), tiling, odds in (
                          ((True,), (2, 0), (256, 4, 256, 4), (False, True)),
                          ((False,), (2, 0), (128, 4, 128, 4), (False, True)),
                          ((True, False), (4, 0), (128, 4, 128, 4), (True,)),
                          ((True,), (8, 0), (64, 2, 16, 1), (False, True)),
                          ((False,), (8, 0), (32, 1, 16, 1), (False, True)),
                          ((True,), (16, 0), (32, 1, 16, 1), (False, True)),
                          ((False,), (16, 0), (16, 1, 16, 1), (False, True)),
                          ((True,), (16, 1), (32, 1, 16, 1), (True,)), ((False,), (16, 1), (16, 1, 16, 1), (True,)),
                          ((True, False), (32, 0), (16, 1, 16, 1), (False, True)))
                      for forward in forwards for log in (False, True) for odd in odds
                      if not (forward and log and odd and BLOCK_N == 32)}
ROWS_WHOLE32[True, False, 32, 0, True] = (32, 2, 16, 1)  # (the softmax forward of odd 19-31 values)
ROWS_WHOLE32_MIN_PROGRAMS = 4
# A chunk of a split row is at least this many elements, so each program streams long
# enough to hide its start-up and the partials stay few.
MIN_CHUNK = 8192
# The looped kernel walks one row a program; with fewer rows than this many per SM the GPU
# idles, and rows are split across programs instead.
ROWS_PER_SM_FOR_ONLINE = 4
# A launcher that zeroes the cooperative kernels' counters (or TAG's words) on every call (the JAX
# adapter in the interpreter or with MULTISOFTMAX_JAX_KEPT_SCRATCH=0; on a GPU it keeps them in a
# constant since 2026-11-27, multisoftmax.jax's "Kept scratch": counters_per_call=True) pays that
# each call, so up to these grids (programs an SM of the cooperative plan in COOP_CHUNK_N chunks)
# it gets the split plan: two kernels with nothing to zero,
# the second reading x (y and dy) again from L2; backward: the log_softmax, the softmax on counters;
# not float64. H100 bf16 1 x 128256 forward: 4.55 -> 3.96 us; float32 16 x 128256 softmax lost.
# The benchmark's chains (one zeros kernel for all calls) favour the cooperative plan; whole jitted
# steps, where XLA makes each call's zeros alone, favour the split plan (0.36-1.42 us a step).
# Measured: bench/DISPATCH.md, SPLIT_FRESH_FWD_MAX_PER_SM.
SPLIT_FRESH_FWD_MAX_PER_SM = 2
SPLIT_FRESH_BWD_MAX_PER_SM = 0.5
# Those split plans take the shortest of these chunks (values, one tile a program) that keeps
# the grid within SPLIT_FRESH_FWD_MAX_PER_SM programs an SM (probe_split_tiny.log: 2048 won at
# 1 x 128256 and 1 x 256000, 4096 at 8 x 128256, 8192 at 8 x 256000 forward; 2048 won in
# nearly every backward there).
SPLIT_FRESH_CHUNKS = (2048, 4096, 8192)
# PIPE_*: the pipelined backward (softmax_bwd_pipe: persistent programs load and publish their next
# chunk before they wait for the row of the one they hold) in place of softmax_bwd_coop. PIPE_PLANS:
# (itemsize, log) -> (CHUNK_N, num_warps, programs an SM); none for the 16-bit log_softmax (DEFER_Y
# stayed ahead) or float64. 16-bit rows on counters only, by PIPE16_* grids; float32 by PIPE32_*
# (TAG's only to PIPE32_TAG_MAX_PER_SM[log] programs an SM). H100 bf16 16 x 1048576 43.6-45.1 -> 40.3-40.9 us.
# Measured: bench/DISPATCH.md, PIPE_PLANS.
PIPE_PLANS = {(2, False): (4096, 4, 4), (4, False): (2048, 4, 5), (4, True): (4096, 8, 4)}
PIPE16_MIN_PER_SM = 6
PIPE16_MAX_PER_SM = 32
PIPE16_ANY_GRID_CHUNKS = 128
PIPE32_MIN_PER_SM = 3
PIPE32_MIN_CHUNKS = 16
PIPE32_TAG_MAX_PER_SM = {False: 16, True: float("inf")}
# PIPE_FWD_*: the pipelined forward (softmax_fwd_pipe: as softmax_bwd_pipe, a persistent program loads and
# publishes its next chunk's max and sum before it waits for the row of the one it holds) in place of
# softmax_fwd_coop. PIPE_FWD_PLANS: (itemsize, log) -> (CHUNK_N, num_warps, programs an SM), where it is forced
# ("pipe") or taken; none for 16-bit types (the kernel holds float32 values, not packed words) or float64. It is
# taken for rows of at least PIPE_FWD_MIN_CHUNKS chunks of COOP_CHUNK_N in grids of at least PIPE_FWD_MIN_PER_SM[log]
# of those chunks an SM (H100: never, not measured there). Measured: bench/DISPATCH.md, PIPE_FWD_*.
PIPE_FWD_PLANS = {(4, False): (4096, 4, 5), (4, True): (4096, 4, 5)}
PIPE_FWD_MIN_CHUNKS = float("inf")
PIPE_FWD_MIN_PER_SM = {False: float("inf"), True: float("inf")}
# Peeled 16-bit rows (PEEL: rows that do not start 16-byte aligned) by the rows kernels, as the H100 ran them:
# ROWS_PEELED16_BWD_RELOAD[log]: the backward of rows in these lanes (BLOCK_N) reloads y and dy (RELOAD; H100:
# none, not measured). ROWS_PEELED16_FWD_MAX_LANES: the forward of rows in more lanes runs cooperative (H100:
# never; peeled chunks lost there, MAX_ROWS_ALIGNED_BLOCK_N). Measured: bench/DISPATCH.md, ROWS_PEELED16_BWD_RELOAD.
ROWS_PEELED16_BWD_RELOAD = {False: (), True: ()}
ROWS_PEELED16_FWD_MAX_LANES = MAX_ROWS_BLOCK_N[2]
# ROWS_PEELED16_FWD_WARPS[lanes]: the forward of peeled 16-bit rows in these lanes at this many warps, not the
# halved rule's (H100: none). ROWS_PEELED16_FWD_COOP[(lanes, log)] = (rows an SM, fill): the forward of peeled
# 16-bit rows in these lanes runs cooperative where there are at least that many rows an SM and N is at most `fill`
# of the lanes (H100: never). ROWS_TAIL16_BWD_RELOAD[log][BLOCK_N] = TAIL_N: the backward of aligned 16-bit rows
# in BLOCK_N lanes and a tail of at least TAIL_N lanes reloads y and dy (RELOAD; H100: none). ROWS_BWD16_RELOAD_*:
# the 16-bit softmax backward of aligned rows of at most ROWS_BWD16_RELOAD_MAX_N values that the rules give the
# cooperative kernel runs as rows (one a program, 32 warps under a cap of ROWS_BWD16_RELOAD_REGS registers,
# RELOAD) where there are at least ROWS_BWD16_RELOAD_MIN_PER_SM rows an SM and the launcher can cap registers
# (H100: never). ROWS_PEELED16_BWD_WARPS[(lanes, log)] = (num_warps, fill): the backward of peeled 16-bit rows
# in these lanes of at least `fill` of them at this many warps (H100: none). Measured: bench/DISPATCH.md,
# ROWS_PEELED16_FWD_WARPS ... ROWS_BWD16_RELOAD_*.
ROWS_PEELED16_FWD_WARPS: dict = {}
ROWS_PEELED16_BWD_WARPS: dict = {}
# ROWS_TAIL_FWD_WARPS[(itemsize, BLOCK_N)], ROWS_TAIL_BWD_WARPS: aligned rows of a power of two and a short tail
# (row_segments: N = 4352 as 4096 + 256) one a program at this many warps, forward and backward (H100: the rules',
# not measured). The rules size warps by all the lanes, so a tail doubles them (4352: 16 warps, 8 values a thread);
# on the H200 that ran 10-45% behind fewer warps (bf16 30840 x 4352 forward 227.1 -> 154.6 us at 4 warps).
# Measured: bench/DISPATCH.md, ROWS_TAIL_FWD_WARPS.
ROWS_TAIL_FWD_WARPS: dict = {}
ROWS_TAIL_BWD_WARPS: dict = {}
# ROWS_FWD_TAILS[(itemsize, BLOCK_N)] = most tail lanes: the forward of aligned rows of more than BLOCK_N values and
# at most BLOCK_N + this many runs as BLOCK_N + a tail (row_segments' `tails`), where the rules allow BLOCK_N / 16
# and take 2 * BLOCK_N lanes past it (H100: none, not measured); one row a program at ROWS_TAIL_FWD_WARPS' warps.
# ROWS_TAIL_FWD_CAP_REGS[(itemsize, BLOCK_N)]: such rows, with a tail of any length, compiled under this register
# cap (maxnreg) where the launcher can pass it (H100: none). On the H200 bf16 14563 x 9216 (8192 + 1024) ran
# 1.11-1.19x, 116508 x 1152 (1024 + 128) 1.13-1.18x, float32 58254 x 1152 1.03x; the cap of 56 on 4096 + a tail
# binds where ptxas takes more (bf16 softmax 4800, 5120: 1.04x), elsewhere within 0.4%. Measured: bench/DISPATCH.md,
# ROWS_FWD_TAILS.
ROWS_FWD_TAILS: dict = {}
ROWS_TAIL_FWD_CAP_REGS: dict = {}
ROWS_PEELED16_FWD_COOP: dict = {}
ROWS_TAIL16_BWD_RELOAD: dict = {False: {}, True: {}}
ROWS_BWD16_RELOAD_MAX_N = 0
ROWS_BWD16_RELOAD_MIN_PER_SM = 12
ROWS_BWD16_RELOAD_REGS = 64
# ROWS_FWD32_WIDE_*: the float32 forward of aligned rows of at least ROWS_FWD32_WIDE_MIN_N values (and at most
# MAX_ROWS_BLOCK_N, one row a program) runs as rows (32 warps), not cooperative, where there are at least
# ROWS_FWD32_WIDE_MIN_PER_SM rows an SM. H100: never (MAX_ROWS_ALIGNED_BLOCK_N's chunks measured ahead there).
# Measured: bench/DISPATCH.md, ROWS_PEELED16_BWD_RELOAD (ROWS_FWD32_WIDE_*).
ROWS_FWD32_WIDE_MIN_N = float("inf")
ROWS_FWD32_WIDE_MIN_PER_SM = 12
# The constants above are the H100's; a GPU named here takes these in place of some (`_tuned`), measured
# there by bench/probe_coop_tilings.py against the H100's value (bench/DISPATCH.md, GPU_CONSTANTS). The
# H200 (bench/results/h200/probe_coop_*.log), whose memory moves a wave of the cooperative forward in ~0.7 of
# the H100's time at the same SM clock:
# * COOP_STAGGER_CYCLES 7200 (a ramp of ~4 us): 12 of 14 grids of few long rows up to 5% faster (bf16
#   16 x 1048576 softmax 26.8 -> 25.6 us, 64 x 256000 24.2 -> 23.1; float32 64 x 128256 log_softmax 23.0 ->
#   22.3; two 64 x 256000 log_softmax 0.8% slower), the ~256 MB sweeps within -0.7 ... +0.9% (35 of 58
#   ahead); 10800 alike at 16 x 1048576 (bf16 1.6% faster, float32 1.3% slower); 21600 and 28800 1-14% slower
#   than 14400.
# * PIPE_PLANS: the float32 softmax in 4096-value chunks at 4 warps (152 registers a thread: 3 programs an
#   SM), 2-19% faster than 2048 at 5 an SM (16 x 1048576 65.7 -> 55.4 us, 64 x 1048576 214.3 -> 199.1) and
#   than the TAG plans of 32 chunks (256 x 262144 212.1 -> 200.6), so PIPE32_TAG_MAX_PER_SM goes (the TAG
#   grids of 16-19 chunks within 0.4%); the 16-bit softmax at 5 programs an SM, not 4 (128 x 1048576
#   234.7 -> 219.7 us). The float32 log_softmax's plan stayed the fastest.
# * ROWS_PEELED16_BWD_RELOAD: the softmax's in 16384 and 32768 lanes (at the rules' 8 warps), the log_softmax's in
#   16384 (16 warps): bf16 softmax 14913 x 9001 303.1 -> 222.1 us, 11184 x 12001 258.5 -> 218.4, 5592 x 24001
#   244.6 -> 199.6 (float16 5%), log_softmax 14913 x 9001 325.9 -> 260.6, 8191 x 16385 226.0 -> 210.7; the
#   softmax's 8191 x 16385 0.9% slower (bf16; float16 0.4% faster), the log_softmax's 24001 10% slower (stays).
# * ROWS_PEELED16_FWD_MAX_LANES 16384: the forward of peeled rows past 16391 values runs cooperative, 1.6-1.9x
#   (bf16 6710 x 20001 softmax 264.7 -> 155.7 us, log_softmax 266.5 -> 137.8; 5592 x 24001 float16 alike); at
#   16385 (16384 lanes) the cooperative forward was 1.6% slower at 8191 rows (log_softmax 19% faster), 14-30%
#   slower at 1024 and 264 rows.
# * ROWS_FWD32_WIDE_MIN_N 24577 (rows that fill more than 3/4 of 32768 lanes): at 12 rows an SM and more the rows
#   kernel ran 0.8-5.4% ahead of the cooperative chunks (2279 x 29440 138.0 -> 133.9 us, 2621 x 25600 144.2 ->
#   136.7, 8192 x 29440 482.2 -> 459.2, 2048 x 32768 135.1 -> 134.1, both ops), 0.4-4.9% behind at 4-8 rows an SM
#   (1024 and 512 x 29440), 2.7% and 6% behind at 24000 and 20000 values (0.73 and 0.61 of the lanes).
# * ROWS_PEELED16_FWD_WARPS {16384: 16}: with kernels/softmax.py's interleaved edges (61 registers a thread, not 86,
#   at 16 warps) the peeled 16-bit forward in 16384 lanes ran 2-9% faster at 16 warps than at 8 (bf16 8191 x 16385
#   softmax 173.9 -> 159.7 us, 2048 x 12289 42.9 -> 39.7; float16 alike), 2-4% slower at 264 rows (8 us).
# * ROWS_PEELED16_FWD_COOP: the cooperative forward of those rows, from 10 rows an SM (log_softmax, 16384 lanes),
#   24 (softmax, 16384 lanes) and 32 (8192 lanes): 1.1-1.5x (bf16 14913 x 9001 log_softmax 244.5 -> 164.2 us,
#   softmax 248.8 -> 198.6; 4096 x 12289 softmax 75.4 -> 64.7; 8191 x 16385 log_softmax 168.9 -> 147.2); 5-20%
#   slower at 1024-2048 rows (those stay; the log_softmax of 2048 x 12289, 1-3% slower, goes with the rule). The
#   softmax of rows that fill the lanes (N <= lanes: whole chunks) since COOP_X2_PEELED_CAP too, 5-19% (bf16 8192 x
#   15361 156.0 -> 130.9, 8191 x 8191 74.4 -> 69.5); past them (16385: a third chunk of one value) 2% slower, rows.
# * ROWS_TAIL16_BWD_RELOAD {False: {16384: 512}}: the 16-bit softmax backward of rows of 16384 + a 512-1024-lane
#   tail reloads at 16 warps, 18-24% faster (bf16 7944 x 16896 267.1 -> 215.9 us, 7710 x 17408 265.8 -> 224.0;
#   Liger-Kernel's 195.9, 194.8); with an 8-lane tail (16392) it was 4% slower (stays).
# * ROWS_BWD16_RELOAD_MAX_N 31744: the 16-bit softmax backward of 17409-31744 aligned values (cooperative by the
#   rules) as rows at 32 warps under maxnreg 64, reloading: 1-8% faster from 12 rows an SM (bf16 5120 x 25600
#   201.3 -> 186.4 us, 4559 x 29440 193.7 -> 187.4, 6710 x 20000 221.0 -> 212.4; Liger-Kernel's 181.6, 186.3,
#   187.3), within 0.3% at 32000, 1-2% slower at 32768 and 1-6% slower at 512-1024 rows (those stay); the
#   log_softmax's 9% slower at 20000 (stays).
# * ROWS_PEELED16_BWD_WARPS {(16384, True): (32, 0.7)}: with the interleaved edges the peeled 16-bit log_softmax
#   backward in 16384 lanes (RELOAD) ran 5-14% faster at 32 warps than at 16 from 0.7 of the lanes (bf16 8191 x 16385
#   217.6 -> 191.2 us, 11184 x 12001 231.2 -> 221.0, 1024 and 264 rows 10-11%), 3.5% slower at 9001 (stays); the
#   softmax's stays at 8 warps (32: 1.4-1.9x slower).
# * PIPE_FWD_MIN_CHUNKS 64, PIPE_FWD_MIN_PER_SM {softmax: 12, log_softmax: 6}: the float32 forward of rows of 64 or
#   more chunks pipelined (4096 values at 4 warps, 5 programs an SM: 95-96 registers a thread): 64 x 1048576
#   softmax 156.7 -> 150.5 us, log_softmax 160.1 -> 148.6; 16 x 1048576 43.7 -> 42.2 and 44.3 -> 41.6; 8 x 1048576
#   log_softmax 26.2 -> 24.1; within 0.5% at 128 x 524288. Slower, left cooperative: the softmax at 8 x 1048576
#   (3.8%), both at 4 x 1048576 (4-10%), rows of 48 chunks (160 x 393216: 0-1.5%) and of 32, whose TAG plans ran 7%
#   ahead (256 x 262144). The 16-bit forward pipelined (packed words, a draft) ran 2-20% behind its cooperative
#   plans (bf16 128 x 1048576, 512 x 262144, 16 x 1048576, 64 x 256000): not kept.
# * COOP_X2_PEELED_CAP True: the 16-bit softmax forward of peeled rows in TAG's 4-warp chunks under maxnreg 64
#   (71 -> 64 registers, 7 -> 8 programs an SM, no spill): 3-8% faster from 32 programs an SM up (bf16 604 x 50257
#   39.9 -> 37.0 us, 4096 x 50257 231.7 -> 219.7, 600 x 262143 184.9 -> 177.5; float16 alike), even where the
#   plan took 64 uncapped (325 x 100001). The log_softmax (56 registers) stays uncapped: capped, it took 64, 2% slower.
# * COOP_BWD32_TAG_CAP_REGS 80: the float32 cooperative backward with TAG, uncapped 85-93 registers a thread (2
#   programs an SM), under maxnreg 80 (3 an SM; 4-6 bytes spilled) past 2 programs an SM: 0.7-8.6% faster on 24
#   grids of 2.9-217 programs an SM, both ops (4096 x 50257 softmax 611.7 -> 581.2 us, log_softmax 637.5 -> 589.0,
#   2279 x 29440 log_softmax 200.4 -> 189.3), even at 1 an SM (16 x 65536) and 3.9 (64 x 65536). So capped, TAG's
#   plan ran ahead of the pipelined one (PIPE_PLANS') from 15.5 programs an SM (softmax; 9.7 and 7.8: 1.8-1.9% behind)
#   and 4.8 (log_softmax): 1-9% (1024 x 128256 softmax 388.8 -> 368.9 us, 512 x 151936 log_softmax 239.8 -> 220.9),
#   so PIPE32_TAG_MAX_PER_SM {softmax: 12, log_softmax: 4} (the H100's: 16, and every log_softmax grid).
GPU_CONSTANTS = {
    "H200": dict(COOP_STAGGER_CYCLES=7200, PIPE32_TAG_MAX_PER_SM={False: 12, True: 4},
                 PIPE_PLANS={**PIPE_PLANS, (2, False): (4096, 4, 5), (4, False): (4096, 4, 3)},
                 ROWS_PEELED16_BWD_RELOAD={False: (16384, 32768), True: (16384,)}, ROWS_PEELED16_FWD_MAX_LANES=16384,
                 ROWS_FWD32_WIDE_MIN_N=24577, ROWS_PEELED16_FWD_WARPS={16384: 16},
                 ROWS_PEELED16_FWD_COOP={(16384, False): (24, 1.0), (8192, False): (32, 1.0),
                                         (16384, True): (10, float("inf")), (8192, True): (32, float("inf"))},
                 ROWS_TAIL16_BWD_RELOAD={False: {16384: 512}, True: {}}, ROWS_BWD16_RELOAD_MAX_N=31744,
                 ROWS_PEELED16_BWD_WARPS={(16384, True): (32, 0.7)}, PIPE_FWD_MIN_CHUNKS=64,
                 PIPE_FWD_MIN_PER_SM={False: 12, True: 6}, COOP_X2_PEELED_CAP=True, COOP_BWD32_TAG_CAP_REGS=80,
                 ROWS_TAIL_FWD_WARPS={(4, 1024): 1, (4, 2048): 4, (4, 4096): 4, (4, 8192): 4, (4, 16384): 8,
                                      (2, 1024): 1, (2, 2048): 1, (2, 4096): 4, (2, 8192): 8, (2, 16384): 16},
                 ROWS_FWD_TAILS={(2, 1024): 256, (2, 2048): 512, (2, 4096): 1024, (2, 8192): 2048, (4, 1024): 256,
                                 (4, 2048): 512},
                 ROWS_TAIL_FWD_CAP_REGS={(2, 4096): 56, (2, 8192): 48},
                 ROWS_TAIL_BWD_WARPS={(2, 2048): 2, (2, 4096): 4, (2, 8192): 8},
                 COLS16_BWD_COOP_MAX_CHUNKS=16, COLS16_BWD_SPLIT_TILE=(128, 8, 4),
                 COLS16_FWD_SPLIT_TILE=(128, 32, 4), COLS16_FWD_SPLIT_CHUNKS=(5, 17), COLS16_MIN_VALUES=32,
                 COLS16_SHORT_MIN_VALUES=32, COLS16_BWD_MIN_VALUES=(32, 128, 512, 0.8), COLS32_MIN_VALUES=32,
                 COLS16_FWD_TAIL=True, COLS16_FTZ=True, COLS16_FWD_STATS_N=16, ROWS16_FWD_FTZ=True,
                 ROWS16_FWD_FTZ_WARPS={8192: (4, 0.875)},
                 ROWS_FWD32_OFFS32=(16, 32), ROWS_PEEL16_GRIDS={},
                 ROWS_WHOLE32={**{(forward, log, BLOCK_N, TAIL_N, odd): tiling
                                  for (BLOCK_N, TAIL_N), tiling, odds in (
                                      ((2, 0), (256, 4, 256, 4), (False, True)), ((4, 0), (64, 1, 32, 1), (True,)),
                                      ((8, 0), (64, 2, 16, 1), (False, True)), ((16, 0), (32, 1, 16, 1), (False, True)),
                                      ((16, 1), (16, 1, 4, 1), (True,)), ((32, 0), (16, 1, 4, 1), (False, True)))
                                  for forward in (True, False) for log in (False, True) for odd in odds
                                  if not (forward and log and odd and BLOCK_N == 32)}}),
}


def _tuned(name: str, gpu: str):
    """The module's constant `name` (read at the call) or, where GPU_CONSTANTS has one for the GPU of key
    `gpu` (`tuned_gpu`), that GPU's. Raises KeyError for a name the module has not."""
    return GPU_CONSTANTS.get(gpu, {}).get(name, globals()[name])


@dataclass(frozen=True)
class Launch:
    """One kernel launch.

    kernel:  name in `multisoftmax.kernels.softmax`.
    inputs:  names of the buffers read, in the kernel's argument order ("x", "y", "dy", or
             an earlier launch's output such as "m_part").
    scalars: runtime integer arguments that follow the inputs.
    outputs: (name, shape, dtype) of the buffers written, after the scalars; dtype "io" is
             the tensor's own dtype, "acc" the accumulation dtype (float32, or float64),
             "zeros" int32 set to 0 before the launch, "sync" int32 zeroed once and then
             handed from launch to launch as the kernels leave it (TAG's words; a fresh
             zeroed one will do), "init" the buffer that the kernel reads and writes as the
             "zeros" or "sync" output of the same name that follows (which it does not touch):
             the torch launcher passes that output itself, the JAX adapter a constant it keeps
             or zeros made by XLA, aliased to it (`coop_outputs`). A name an earlier launch of the plan
             already made is passed on, not made anew (the cooperative kernel's PHASE 2).
    grid:    launch grid.
    meta:    constexpr parameters plus num_warps and num_stages (and maxnreg, Triton's register
             cap, where a plan takes one), as (key, value) pairs.
    """

    kernel: str
    inputs: tuple
    scalars: tuple
    outputs: tuple
    grid: tuple
    meta: tuple

    @property
    def kwargs(self) -> dict:
        return dict(self.meta)


# FILL_SHARED: a rows launch whose rows fill their lanes (N == BLOCK_N: no tail, no peel) of
# FILL_SHARED_N[0] to FILL_SHARED_N[1] values, in tiles of at least FILL_SHARED_MIN_TILE bytes a tensor,
# asks for the SM's shared memory over the programs it holds at once (multisoftmax/occupancy.py: the
# driver then splits the SM's L1 / shared memory with the most shared memory). On the H100
# (bench/results/h100/probe_rows_fill.log, the benchmark's clock, two runs) those launches ran 0.2-0.9%
# faster, 26 of 32 (bf16 65536 x 2048 softmax forward 179.0 -> 177.4 us, float32 32768 x 2048 log_softmax
# forward 179.1 -> 177.8, backward 264.8 -> 263.3), the other 6 within 0.15%; where XLA's fused kernel,
# one row a program as ours, had been that much ahead. Lost: 16-bit rows in part of their lanes, whole
# lines or not (bf16 N = 1152 forward 2-3%, N = 3000 forward 2%; probe_rows_fill_part.log: -6.4% to +0.9%
# by N, with no rule between), float32 rows in part of their lanes whose bytes are not whole 128-byte
# lines (N = 600, 1000, 1100, 2000, 3000: up to 3.2%; 781 peeled 5%), tiles of 1-2 KB (bf16 N = 1024
# forward 0.4%), N = 128 (float32 log_softmax 1.6%); even at N >= 8192; the cooperative kernels lost 2-12%
# (probe_coop_carve.log). float32 rows in part of their lanes that are whole lines (N a multiple of
# FILL_SHARED_LINE_BYTES / 4: 768, 1152, 1280, 1536, 1792, 2304, 2560, 3584) gained 0.1-0.9% filled in 31
# of 32 cases, the other within 0.13% (probe_rows_fill_part.log), and are filled too (past FILL_SHARED_N
# they did not gain: probe_rows_fill_edge.log). float64 not measured: left out. Measured:
# bench/DISPATCH.md, FILL_SHARED.
FILL_SHARED_N = (512, 4096)
FILL_SHARED_MIN_TILE = 4096
FILL_SHARED_LINE_BYTES = 128


def fills_shared(launch: "Launch") -> bool:
    """Whether `launch` (a `Launch` of this module) asks for the SM's shared memory: a rows launch
    (softmax_fwd_rows / softmax_bwd_rows), no tail and no peel, of 16- or 32-bit rows that fill
    BLOCK_N lanes, or of float32 rows that are whole FILL_SHARED_LINE_BYTES lines, with
    FILL_SHARED_N[0] <= N <= FILL_SHARED_N[1], in tiles of BLOCK_M x N values of at least
    FILL_SHARED_MIN_TILE bytes (the comment above; bench/DISPATCH.md has the figures); and the
    backward's one row a program of ROWS_BWD_ONE_ROW_WARPS where its row is whole lines that fill at
    least ROWS_BWD_ONE_ROW_FILL of its lanes, whatever the tile. The launcher asks for
    occupancy.fill_shared's bytes. Raises nothing: any other launch is False."""
    if launch.kernel not in ("softmax_fwd_rows", "softmax_bwd_rows"):
        return False
    kw = launch.kwargs
    N, itemsize = launch.scalars[1], 16 // kw["VEC"]
    whole_lines = N * itemsize % FILL_SHARED_LINE_BYTES == 0
    if (launch.kernel == "softmax_bwd_rows" and kw["BLOCK_M"] == 1 and not kw["TAIL_N"] and not kw["PEEL"]
            and ROWS_BWD_ONE_ROW_WARPS.get(itemsize, {}).get(kw["BLOCK_N"]) == kw["num_warps"]):
        return whole_lines and N >= ROWS_BWD_ONE_ROW_FILL * kw["BLOCK_N"]  # ROWS_BWD_ONE_ROW_WARPS
    lanes = N == kw["BLOCK_N"] or (itemsize == 4 and whole_lines)
    return (itemsize <= 4 and lanes and not kw["TAIL_N"] and not kw["PEEL"]
            and FILL_SHARED_N[0] <= N <= FILL_SHARED_N[1]
            and kw["BLOCK_M"] * N * itemsize >= FILL_SHARED_MIN_TILE)


def row_segments(N: int, tails: dict | None = None) -> tuple[int, int]:
    """(BLOCK_N, TAIL_N): a row as one power of two, or a power of two and a short tail.

    N = 16385 -> (16384, 1) rather than 32768 lanes, which measured 2505 vs 2153 GB/s (fp32
    forward, H100). A long tail measured slower than one block (N = 3000 as 2048 + 1024:
    2% slower than 4096), so a tail is used only up to 1/16 of the block, or up to
    `tails`[BLOCK_N] lanes where given (ROWS_FWD_TAILS: a GPU's forward).
    """
    whole = triton.next_power_of_2(N)
    main = whole // 2
    tail = triton.next_power_of_2(N - main) if whole > N else 0
    return (main, tail) if 0 < tail <= max(main // 16, (tails or {}).get(main, 0)) else (whole, 0)


def peel(N: int, itemsize: int, align: int, strides_equal: bool, force: bool | None = None) -> bool:
    """Whether rows are cut into head, 16-byte-aligned body and tail (kernels' PEEL).

    When N or a stride is not a multiple of 16 bytes (`align`, in values, below 16 / itemsize),
    rows start unaligned and masks are not uniform over a vector, so every value would move
    alone. The head and tail are computed from the row's own start, which needs one stride
    for every tensor of the launch (`strides_equal`). Rows shorter than a vector (float32 N < 4,
    float64 N = 1) have no body and stay whole. `force` overrides (tests, benchmark).
    """
    if not strides_equal:
        return False
    if force is not None:
        return force
    if align >= 16 // itemsize or N < 16 // itemsize:
        return False  # aligned already, or no 16-byte body to move in vectors (float32 N < 4, float64 N = 1)
    return itemsize >= 4 or N >= PEEL_MIN_N or row_segments(N)[1] > 0


def _peel16(M: int, N: int, align: int, strides_equal: bool, forward: bool, log: bool, num_sms: int, gpu: str,
            peeled: bool) -> tuple[tuple[int, int], bool] | None:
    """((BLOCK_M, num_warps), whether they peel) where the 16-bit rows `_tiling16` passes (not 16-byte aligned,
    shorter than PEEL_MIN_N) run at this GPU's tiling (ROWS_PEEL16, or by op and grid ROWS_PEEL16_GRIDS'; in smaller
    grids one row a program, or ROWS_PEEL16_SMALL_M's, at 1 warp: ROWS_PEEL16_SMALL_LANES), peeled but under
    ROWS_PEEL16_WHOLE_FILL of an entry's lanes, else None; rows that `peel` already peels (`peeled`: for a tail) only
    where ROWS_PEEL16_TAILS."""
    if not strides_equal or peeled and not _tuned("ROWS_PEEL16_TAILS", gpu):
        return None
    lanes = triton.next_power_of_2(max(1, N // 8 * 8))
    block_m, num_warps, fill, most = _tuned("ROWS_PEEL16", gpu).get((forward, lanes), (0, 0, 0.0, 0))
    if not block_m or align > most or N < fill * lanes:
        return None
    peels = N >= _tuned("ROWS_PEEL16_WHOLE_FILL", gpu).get((forward, lanes), 0.0) * lanes
    if M >= ROWS_PEEL16_MIN_PER_SM * num_sms:
        grids = _tuned("ROWS_PEEL16_GRIDS", gpu).get((forward, lanes), ())
        block_m, num_warps = next(((m, w) for logs, first, last, per_sm, m, w in grids if log in logs
                                   and first <= N <= last and M <= per_sm * num_sms), (block_m, num_warps))
        return (min(block_m, triton.next_power_of_2(M)), num_warps), peels
    if align != 1 or lanes > _tuned("ROWS_PEEL16_SMALL_LANES", gpu)[forward]:
        return None
    return (min(_tuned("ROWS_PEEL16_SMALL_M", gpu).get(lanes, 1), triton.next_power_of_2(M)), 1), peels


def _whole16(M: int, BLOCK_N: int, TAIL_N: int, align: int, forward: bool, peeled: bool, num_sms: int,
             gpu: str) -> tuple[int, int] | None:
    """(BLOCK_M, num_warps) where this GPU runs the 16-bit rows `_tiling16` passes (in BLOCK_N + TAIL_N lanes:
    row_segments) that `peel` peels only for their tail (`peeled`) whole instead (ROWS_WHOLE16_TAILS, by direction,
    BLOCK_N and whether ALIGN is 1), else None."""
    tiling = _tuned("ROWS_WHOLE16_TAILS", gpu).get((forward, BLOCK_N, align == 1)) if peeled and TAIL_N else None
    if not tiling or M < ROWS_PEEL16_MIN_PER_SM * num_sms:
        return None
    return min(tiling[0], triton.next_power_of_2(M)), tiling[1]


def _tiling16(M: int, N: int, align: int, strides_equal: bool, forward: bool, log: bool, num_sms: int, gpu: str,
              peeled: bool) -> tuple[tuple[int, int] | None, bool]:
    """(this GPU's (BLOCK_M, num_warps) for its unaligned 16-bit rows shorter than PEEL_MIN_N, whole where `peel` peels
    them for a tail alone (`peeled`; ROWS_WHOLE16_TAILS), else peeled or whole at ROWS_PEEL16's tiling, else, of ALIGN
    1, whole at ROWS_ODD16_TILINGS', else None; whether the rows peel)."""
    if align >= 8 or N >= PEEL_MIN_N:
        return None, peeled
    BLOCK_N, TAIL_N = row_segments(N)
    whole16 = _whole16(M, BLOCK_N, TAIL_N, align, forward, peeled, num_sms, gpu)
    if whole16:
        return whole16, False
    peel16 = _peel16(M, N, align, strides_equal, forward, log, num_sms, gpu, peeled)
    if peel16:
        return peel16
    odd = _tuned("ROWS_ODD16_TILINGS", gpu).get((forward, BLOCK_N)) if align == 1 and not TAIL_N else None
    if odd and not peeled:
        return (min(odd[0], triton.next_power_of_2(M)), odd[1]), False
    return None, peeled


def _tiling32(M: int, N: int, align: int, forward: bool, log: bool, num_sms: int, gpu: str,
              peeled: bool) -> tuple[tuple[int, int] | None, bool]:
    """(this GPU's (BLOCK_M, num_warps) for its float32 rows not 16-byte aligned that ROWS_WHOLE32 runs whole (by
    direction, op, row_segments' lanes and whether ALIGN is 1; smaller grids: ROWS_WHOLE32_MIN_PROGRAMS), else None;
    whether the rows peel)."""
    if align >= 4:
        return None, peeled
    tiling = _tuned("ROWS_WHOLE32", gpu).get((forward, log, *row_segments(N), align == 1))
    if not tiling:
        return None, peeled
    block_m, num_warps = tiling[:2] if M >= ROWS_WHOLE32_MIN_PROGRAMS * num_sms * tiling[0] else tiling[2:]
    return (min(block_m, triton.next_power_of_2(M)), num_warps), False


def _retiled(M: int, N: int, itemsize: int, align: int, strides_equal: bool, forward: bool, log: bool, num_sms: int,
             gpu: str, peeled: bool) -> tuple[tuple[int, int] | None, bool]:
    """(this GPU's (BLOCK_M, num_warps) for rows not 16-byte aligned that the rows family runs at its own tiling,
    16-bit (`_tiling16`) or float32 (`_tiling32`), else None; whether the rows peel). `peeled`: what `peel` said."""
    if itemsize == 2:
        return _tiling16(M, N, align, strides_equal, forward, log, num_sms, gpu, peeled)
    if itemsize == 4:
        return _tiling32(M, N, align, forward, log, num_sms, gpu, peeled)
    return None, peeled


def _rows_tiling(M: int, N: int, forward: bool = True, vec: int = 0, log: bool = False, itemsize: int = 4,
                 aligned: bool = True, where: bool = False, gpu: str = ""):
    """BLOCK_M, BLOCK_N, TAIL_N, num_warps and grid for the rows family; `vec` > 0: PEEL rows
    of VEC = `vec` values a 16-byte vector (a body of at most N // vec * vec, 2 * vec edges);
    `log`: log_softmax (its backward keeps more warps, see PEEL_MIN_N); `itemsize`: bytes a
    value (16-bit forward rows that fill few of their lanes hold more rows, SPARSE_ROWS_FILL, and
    so does the 16-bit log_softmax backward in ROWS_LOG_BWD16_DOUBLE_LANES lanes; the forward of
    short full rows runs on fewer warps, ROWS_SHORT_FWD_LANES, and some full rows in smaller
    programs, ROWS_BWD_1KB_N and ROWS_FWD32_HALF_N, where `aligned`: rows that start 16-byte
    aligned; the float32 backward in ROWS_BWD32_WIDE_LANES lanes and the 16-bit one in
    ROWS_BWD16_WIDE_LANES lanes on more warps, and in ROWS_BWD_ONE_ROW_WARPS's lanes one row a
    program, but not the `where` kernels' rows); `gpu`: a key of ROWS_TILINGS (`tuned_gpu`), whose
    tilings replace those rules' for the unmasked kernels' rows, and of GPU_CONSTANTS, whose ROWS_TAIL_FWD_WARPS
    and ROWS_TAIL_BWD_WARPS give aligned rows with a tail their warps, one row a program, and whose ROWS_FWD_TAILS
    gives the forward's aligned rows longer tails)."""
    tails = ({lanes: most for (size, lanes), most in _tuned("ROWS_FWD_TAILS", gpu).items() if size == itemsize}
             if forward and aligned and not where else None)  # this GPU's longer tails (ROWS_FWD_TAILS)
    BLOCK_N, TAIL_N = row_segments(N, tails) if not vec else (triton.next_power_of_2(max(1, N // vec * vec)), 2 * vec)
    # The edges of PEEL rows are not counted: 16 more lanes must not double the warps or
    # halve the rows a program (bf16 N = 781 measured 1494 vs 2616 GB/s when they did).
    lanes = BLOCK_N + (TAIL_N if not vec else 0)
    # 32 warps only for the forward pass of rows past 16384 (measured; see MAX_ROWS_BLOCK_N).
    max_warps = 32 if forward and lanes > 16384 else 16
    num_warps = max(4, min(max_warps, triton.next_power_of_2(triton.cdiv(lanes, VALUES_PER_THREAD * 32))))
    # The rows ROWS_SHORT_FWD_LANES and ROWS_BWD_1KB_N were measured on: full, aligned, unpeeled, not float64.
    full = N == lanes and aligned and not vec and itemsize <= 4
    if (forward and full and lanes in ROWS_SHORT_FWD_LANES
            and not (log and itemsize == 4 and lanes == ROWS_SHORT_FWD_LANES[0])):
        num_warps = ROWS_SHORT_FWD_WARPS  # short rows that fill their lanes (ROWS_SHORT_FWD_LANES)
    BLOCK_M = max(1, min(VALUES_PER_THREAD * 32 * num_warps // lanes, triton.next_power_of_2(M)))
    BLOCK_M = triton.next_power_of_2(BLOCK_M + 1) // 2  # a power of two, rounded down
    if full and N in (ROWS_FWD_ONE_ROW_N if forward else ROWS_BWD_1KB_N).get(itemsize, ()):
        # smaller programs (ROWS_BWD_1KB_N): 1 KB of each tensor, or one row
        BLOCK_M = min(1 if forward else 1024 // (N * itemsize), triton.next_power_of_2(M))
    if forward and full and not log and itemsize == 4 and N in ROWS_FWD32_HALF_N:
        BLOCK_M = max(1, BLOCK_M // 2)  # 8 values a thread (ROWS_FWD32_HALF_N)
    if not forward and itemsize == 4 and not vec and not TAIL_N and BLOCK_N == ROWS_BWD32_WIDE_LANES:
        num_warps = ROWS_BWD32_WIDE_WARPS  # the same one row a program, 8 values a thread (ROWS_BWD32_WIDE_LANES)
    sparse = N < SPARSE_ROWS_FILL * lanes and SPARSE_ROWS_LANES[0] <= lanes <= SPARSE_ROWS_LANES[1]
    if itemsize == 2 and not vec and (sparse if forward else log and lanes == ROWS_LOG_BWD16_DOUBLE_LANES):
        BLOCK_M = min(2 * BLOCK_M, triton.next_power_of_2(M))
    bwd_rows = not forward and not where and not vec and not TAIL_N  # the two rules below measured these alone
    one_row = ROWS_BWD_ONE_ROW_WARPS.get(itemsize, {}).get(BLOCK_N)
    if bwd_rows and one_row and (aligned or itemsize == 2):
        BLOCK_M, num_warps = 1, one_row  # one row a program (ROWS_BWD_ONE_ROW_WARPS)
    if (bwd_rows and itemsize == 2 and aligned and BLOCK_N == ROWS_BWD16_WIDE_LANES
            and N >= ROWS_BWD_ONE_ROW_FILL * BLOCK_N and BLOCK_M == 1):
        num_warps = ROWS_BWD16_WIDE_WARPS  # the one row a program on 8 values a thread (ROWS_BWD16_WIDE_LANES)
    # A peeled row: half the warps, the same rows (measured; see PEEL_MIN_N), or this GPU's for peeled 16-bit rows
    # (ROWS_PEELED16_FWD_WARPS, ROWS_PEELED16_BWD_WARPS: the backward's where N fills enough of the lanes).
    if (vec >= 8 or (vec == 4 and num_warps >= 16)) and not (log and not forward and BLOCK_N > 8192):
        num_warps //= 2
    if vec and itemsize == 2 and not where:
        warps, fill = ((_tuned("ROWS_PEELED16_FWD_WARPS", gpu).get(BLOCK_N, num_warps), 0.0) if forward else
                       _tuned("ROWS_PEELED16_BWD_WARPS", gpu).get((BLOCK_N, log), (num_warps, 0.0)))
        num_warps = warps if N >= fill * BLOCK_N else num_warps
    tail_warps = _tuned("ROWS_TAIL_FWD_WARPS" if forward else "ROWS_TAIL_BWD_WARPS", gpu).get((itemsize, BLOCK_N))
    if TAIL_N and not vec and aligned and not where and tail_warps:  # this GPU's for rows with a tail, one a program
        BLOCK_M, num_warps = 1, tail_warps
    tuned = None if where else _rows_tuned(N, BLOCK_N, TAIL_N, vec, aligned, forward, itemsize, log, gpu)
    if tuned:  # this GPU's tiling of these rows (ROWS_TILINGS)
        BLOCK_M, num_warps = min(tuned[0], triton.next_power_of_2(M)), tuned[1]
    return BLOCK_M, BLOCK_N, TAIL_N, num_warps, (triton.cdiv(M, BLOCK_M),)


def _rows_tuned(N: int, BLOCK_N: int, TAIL_N: int, vec: int, aligned: bool, forward: bool, itemsize: int, log: bool,
                gpu: str):
    """ROWS_TILINGS' entry for the unmasked rows kernels' rows of N values in BLOCK_N (+ TAIL_N) lanes (`vec` > 0:
    peeled, edges not counted) on the GPU of key `gpu`: (BLOCK_M, num_warps[, RELOAD]), or None."""
    lanes = BLOCK_N + (TAIL_N if not vec else 0)
    full = N == lanes and aligned and not vec and itemsize <= 4
    return ROWS_TILINGS.get(gpu, {}).get((forward, itemsize, log, lanes, full))


def _rows_m(M: int, BLOCK_M: int, itemsize: int, log: bool, forward: bool) -> dict:
    """EVEN_M and ALIGN_M of the rows kernels (see the EVEN_M comment above). EVEN_M: M a
    multiple of BLOCK_M > 1, but not for the float32 forward of BLOCK_M >= 32 (softmax) or 16
    (log_softmax). ALIGN_M: 16 where M is a multiple of 16 and BLOCK_M > 1, else 1 (a program
    of one row compiles alike under both launchers without it)."""
    fp32_fwd_off = forward and itemsize == 4 and BLOCK_M >= (16 if log else 32)
    return dict(EVEN_M=BLOCK_M > 1 and M % BLOCK_M == 0 and not fp32_fwd_off,
                ALIGN_M=16 if BLOCK_M > 1 and M % 16 == 0 else 1)


def _split(M: int, N: int, itemsize: int, num_sms: int):
    """CHUNK, n_chunks so that M * n_chunks programs give every SM ~4 programs."""
    block = LOOP_BLOCK_N[itemsize]
    want = triton.cdiv(ROWS_PER_SM_FOR_ONLINE * num_sms, M)
    n_chunks = max(1, min(want, N // MIN_CHUNK))
    chunk = triton.cdiv(triton.cdiv(N, n_chunks), block) * block  # whole tiles per chunk
    return chunk, triton.cdiv(N, chunk)


def _split_fresh(M: int, N: int, itemsize: int, num_sms: int, forward: bool, backward_ok: bool) -> int | None:
    """The chunk of the split plan that replaces the cooperative one for a launcher that
    zeroes counters on every call (SPLIT_FRESH_FWD_MAX_PER_SM), or None where it does not
    (`backward_ok`: a backward that may take it, see SPLIT_FRESH_BWD_MAX_PER_SM)."""
    limit = SPLIT_FRESH_FWD_MAX_PER_SM if forward else SPLIT_FRESH_BWD_MAX_PER_SM * backward_ok
    if itemsize > 4 or M * _coop_chunks(N, itemsize)[1] > limit * num_sms:
        return None
    return next((c for c in SPLIT_FRESH_CHUNKS if M * triton.cdiv(N, c) <= SPLIT_FRESH_FWD_MAX_PER_SM * num_sms),
                SPLIT_FRESH_CHUNKS[-1])


def _coop_chunks(N: int, itemsize: int, wide: bool = False, narrow: bool = False) -> tuple[int, int]:
    """CHUNK_N and n_chunks of the cooperative kernels for rows of N values (`wide`: chunks
    twice as wide, see COOP_WIDE_MAX_N; `narrow`: half as wide, see
    COOP_NARROW_MIN_SMS_PER_PROGRAM)."""
    chunk = COOP_CHUNK_N[itemsize] * (2 if wide else 1) // (2 if narrow else 1)
    CHUNK_N = min(chunk, triton.next_power_of_2(N))
    return CHUNK_N, triton.cdiv(N, CHUNK_N)


# The rules below take `programs`, the grid of `_coop_chunks(N, itemsize)` chunks (M * n_chunks),
# whatever chunks the plan takes in the end: plan_forward and plan_backward count it once.


def _coop_narrow(programs: int, itemsize: int, num_sms: int) -> bool:
    """Whether the cooperative kernels take chunks half as wide (see
    COOP_NARROW_MIN_SMS_PER_PROGRAM): 16-bit and float32 rows whose grid has at most one
    program every COOP_NARROW_MIN_SMS_PER_PROGRAM SMs."""
    return itemsize <= 4 and programs * COOP_NARROW_MIN_SMS_PER_PROGRAM <= num_sms


def _coop_wide(M: int, N: int, itemsize: int, log: bool, peeled: bool, num_sms: int) -> bool:
    """Whether the cooperative forward takes chunks twice as wide (see COOP_WIDE_MAX_N):
    aligned 16-bit softmax rows up to COOP_WIDE_MAX_N whose grid of wide chunks has more than
    COOP_WIDE_MIN_PER_SM programs an SM."""
    chunk = 2 * COOP_CHUNK_N[itemsize]
    return (itemsize == 2 and not log and not peeled and chunk <= N <= COOP_WIDE_MAX_N
            and M * triton.cdiv(N, chunk) > COOP_WIDE_MIN_PER_SM * num_sms)


def _whole_words(itemsize: int, peeled: bool, align: int) -> bool:
    """Whether the cooperative kernels can move rows as 32-bit words of two values (PACK):
    16-bit rows, peeled (the body runs between 16-byte boundaries) or with N and the strides
    even (`align` >= 2)."""
    return itemsize == 2 and (peeled or align >= 2)


def _coop_pack(programs: int, n_chunks: int, words: bool, peeled: bool, num_sms: int) -> bool:
    """PACK of the cooperative backward: rows of whole words (`words`, `_whole_words`) of at
    least COOP_PACK_MIN_CHUNKS chunks (peeled ones: COOP_PACK_PEELED_MIN_CHUNKS); unpeeled ones
    only in a grid of more than COOP_UNPACKED_PER_SM programs an SM."""
    least = COOP_PACK_PEELED_MIN_CHUNKS if peeled else COOP_PACK_MIN_CHUNKS
    return words and n_chunks >= least and (peeled or programs > COOP_UNPACKED_PER_SM * num_sms)


def _coop_pack_fwd(programs: int, words: bool, num_sms: int) -> bool:
    """PACK of the cooperative forward (see COOP_FWD_UNPACKED_PER_SM): rows of whole words
    (`words`, `_whole_words`) whose grid has more than COOP_FWD_UNPACKED_PER_SM programs an SM."""
    return words and programs > COOP_FWD_UNPACKED_PER_SM * num_sms


def _coop_pack_wide(programs: int, peeled: bool, num_sms: int) -> bool:
    """Whether the packed (PACK) forward of 16-bit rows takes chunks twice as wide (see
    COOP_PACK_WIDE_MIN_PER_SM): unpeeled rows whose grid of 8192-value chunks has at least
    COOP_PACK_WIDE_MIN_PER_SM programs an SM."""
    return not peeled and programs >= COOP_PACK_WIDE_MIN_PER_SM * num_sms


def _coop_defer_y(programs: int, itemsize: int, log: bool, num_sms: int) -> bool:
    """DEFER_Y of the cooperative backward (see COOP_DEFER_Y): the log_softmax of 16-bit rows
    whose grid has more than COOP_UNPACKED_PER_SM programs an SM."""
    return log and itemsize == 2 and programs > COOP_UNPACKED_PER_SM * num_sms


def _coop_cap32(n_chunks: int, itemsize: int, log: bool, peeled: bool, tag: bool, programs: int,
                num_sms: int) -> bool:
    """Whether the cooperative backward defers y under a register cap (see COOP_CAP32_REGS): the
    log_softmax of unpeeled float32 rows in grids of more than COOP_CAP32_MIN_PER_SM programs an
    SM (with TAG: COOP_CAP32_TAG_MIN_PER_SM) and at most COOP_CAP32_MAX_PER_SM, or of rows of more
    than COOP_CAP32_MIN_CHUNKS chunks."""
    least = COOP_CAP32_TAG_MIN_PER_SM if tag else COOP_CAP32_MIN_PER_SM
    return (log and itemsize == 4 and not peeled and programs > least * num_sms
            and (programs <= COOP_CAP32_MAX_PER_SM * num_sms or n_chunks > COOP_CAP32_MIN_CHUNKS))


def _coop_late_leave(programs: int, log: bool, num_sms: int) -> bool:
    """LATE_LEAVE of the cooperative kernels for a grid of `programs` (of the chunks taken):
    see COOP_LATE_LEAVE (`log`: an unpacked log_softmax kernel, which never takes it)."""
    return not log and programs >= COOP_LATE_LEAVE_MIN_PER_SM * num_sms


def _coop_tag(n_chunks: int, itemsize: int) -> bool:
    """TAG of the cooperative kernels (see COOP_TAG_MAX_CHUNKS) for rows of `n_chunks` chunks (of
    the chunks taken): float32 partials, at most COOP_TAG_MAX_CHUNKS chunks."""
    return itemsize <= 4 and n_chunks <= COOP_TAG_MAX_CHUNKS


def _coop_sent(programs: int, itemsize: int, log: bool, packed16: bool, num_sms: int) -> bool:
    """Whether the forward on counters waits through keyed partials: 16-bit rows packed in wide
    chunks (COOP_PACK_WIDE_MIN_PER_SM) or in COOP_SPLIT_SUM_MAX_CHUNKS's (`packed16`), float32 rows
    from COOP_SENT32_MIN_PER_SM programs an SM (log_softmax: COOP_SENT32_LOG_MIN_PER_SM); never
    float64."""
    if itemsize == 4:
        return programs >= (COOP_SENT32_LOG_MIN_PER_SM if log else COOP_SENT32_MIN_PER_SM) * num_sms
    return itemsize == 2 and packed16


def _coop_split_sum(N: int, itemsize: int, words: bool, peeled: bool, programs: int, num_sms: int) -> bool:
    """Whether the cooperative forward on counters holds 16-bit rows packed in COOP_FWD16_WARPS's
    chunks summed in halves, with keyed partials (see COOP_SPLIT_SUM_MAX_CHUNKS): unpeeled rows of
    whole words (`words`) of more than COOP_TAG_MAX_CHUNKS and at most COOP_SPLIT_SUM_MAX_CHUNKS
    chunks of 8192 values, in grids of at least COOP_SPLIT_SUM_MIN_PER_SM programs an SM; rows of
    more chunks in grids that would pack them (`_coop_pack_fwd`) in 8192-value chunks (not
    `_coop_pack_wide`)."""
    n_chunks = _coop_chunks(N, itemsize)[1]
    if not (itemsize == 2 and words and not peeled and n_chunks > COOP_TAG_MAX_CHUNKS):
        return False
    if n_chunks <= COOP_SPLIT_SUM_MAX_CHUNKS:
        return programs >= COOP_SPLIT_SUM_MIN_PER_SM * num_sms
    return _coop_pack_fwd(programs, words, num_sms) and not _coop_pack_wide(programs, peeled, num_sms)


def _coop_poly(log: bool, packed_wide: bool) -> bool:
    """POLY of the cooperative forward (see COOP_POLY): the softmax of 16-bit rows packed in wide
    chunks (`packed_wide`, COOP_PACK_WIDE_MIN_PER_SM)."""
    return COOP_POLY and packed_wide and not log


def _coop_cvt_x2(packed: bool, log: bool, packed_wide: bool, tag: dict | None, peeled: bool, programs: int,
                 num_sms: int, register_cap: bool = True, gpu: str = "") -> tuple[bool, int | None]:
    """CVT_X2 of the cooperative forward and the register cap it takes (Triton's maxnreg, or None; see
    COOP_CVT_X2): the packed softmax (in wide chunks on counters, `packed_wide`, under COOP_X2_CAP_REGS;
    in TAG's COOP_FWD16_WARPS chunks of peeled rows under it where COOP_X2_PEELED_CAP holds for the GPU of
    key `gpu` and the launcher can pass it, else uncapped) and the packed log_softmax, on
    counters (`tag` None) or in TAG's chunks (`tag`: `_coop_tag_fwd`'s): wide ones under
    COOP_X2_CAP_REGS, COOP_FWD16_WARPS's of peeled rows, and COOP_WARPS's in grids of at most
    COOP_X2_FEW_MAX_PER_SM programs an SM; never COOP_FWD16_WARPS's of unpeeled rows. Where it needs
    the cap and the launcher cannot pass it (`register_cap` False), not at all."""
    if not (COOP_CVT_X2 and packed):
        return False, None
    if (packed_wide and not log) or (log and tag is not None and tag.get("wide")):
        return register_cap, COOP_X2_CAP_REGS if register_cap else None
    if (not log and peeled and tag is not None and tag.get("warps") == COOP_FWD16_WARPS and register_cap
            and _tuned("COOP_X2_PEELED_CAP", gpu)):
        return True, COOP_X2_CAP_REGS
    if not log or tag is None:
        return True, None
    if tag.get("warps") == COOP_FWD16_WARPS:
        return peeled, None
    return programs <= COOP_X2_FEW_MAX_PER_SM * num_sms, None


def _coop_stagger(programs: int, chunk: int, warps: int, packed: bool, fp64: bool, ticket: bool,
                  num_sms: int, gpu: str = "") -> tuple[int, int]:
    """STAGGER and FIRST of the cooperative forward (see COOP_STAGGER_CYCLES): FIRST the programs of
    `warps` warps the GPU holds at once at 64 registers a thread (an SM's 65,536), and the ramp over
    them where a thread holds COOP_STAGGER_HELD 32-bit registers of x (`chunk` values, `packed` two a
    word) and the grid (`programs`, taking tickets) has more, the ramp's cycles the GPU's (`gpu`,
    GPU_CONSTANTS); (0, 0) elsewhere and for float64."""
    first = num_sms * 65536 // (64 * 32 * warps)
    held = chunk // (32 * warps) // (2 if packed else 1)
    if ticket and not fp64 and held == COOP_STAGGER_HELD and programs > first:
        return _tuned("COOP_STAGGER_CYCLES", gpu), first
    return 0, 0


def _coop_tag_fwd(N: int, itemsize: int, words: bool, peeled: bool, programs: int, num_sms: int,
                  log: bool) -> dict | None:
    """TAG of the cooperative forward: the chunks it takes, as `_coop_launches`' keyword
    arguments (wide, narrow, warps), or None where the forward waits on counters instead (16-bit
    rows of whole words are held packed in every chunk TAG takes).
    float32 rows, peeled or not, from COOP_TAG_FWD32_MIN_PER_SM programs an SM (narrow chunks for
    the fewest programs, COOP_NARROW_MIN_SMS_PER_PROGRAM); 16-bit peeled rows, and rows not of whole
    words, from COOP_TAG_FWD_MIN_PER_SM, rows of whole words (`words`, peeled or not) at COOP_FWD16_WARPS
    warps, but the log_softmax's (`log`) in a grid of at least COOP_FWD16_LOG_WIDE_MIN_PER_SM programs
    an SM in wide ones, and never rows of more than COOP_TAG_MAX_CHUNKS such chunks; unpeeled rows of
    whole words at every grid, in grids of few programs from COOP_TAG_FWD16_FEW_MIN_PER_SM an SM as
    COOP_TAG_FWD16_FEW_MAX_PER_SM (the log_softmax) and COOP_TAG_FWD16_SM_FEW_MAX_PER_SM (the softmax) say;
    float64 never (as every TAG). Rows of at most COOP_TAG_MAX_CHUNKS chunks as TAG takes them, at
    most one an SM as every cooperative launch (_coop_launches)."""
    if itemsize == 4:
        take, min_per_sm = dict(narrow=_coop_narrow(programs, itemsize, num_sms)), COOP_TAG_FWD32_MIN_PER_SM
    elif not words:
        take, min_per_sm = {}, COOP_TAG_FWD_MIN_PER_SM
    elif not peeled and programs < num_sms * (COOP_TAG_FWD16_FEW_MAX_PER_SM if log
                                              else COOP_TAG_FWD16_SM_FEW_MAX_PER_SM):  # few programs: 8 warps
        take, min_per_sm = {}, COOP_TAG_FWD16_FEW_MIN_PER_SM
    elif _coop_chunks(N, itemsize)[1] > COOP_TAG_MAX_CHUNKS:  # counters (COOP_TAG_FWD_MIN_PER_SM)
        return None
    elif peeled or not (log and programs >= COOP_FWD16_LOG_WIDE_MIN_PER_SM * num_sms):
        take = dict(warps=COOP_FWD16_WARPS)  # peeled rows from 32 an SM; unpeeled ones past the few at every grid
        min_per_sm = COOP_TAG_FWD_MIN_PER_SM if peeled else 0
    else:
        take, min_per_sm = dict(wide=True), COOP_TAG_FWD_MIN_PER_SM
    n_chunks = _coop_chunks(N, itemsize, take.get("wide", False), take.get("narrow", False))[1]
    if programs >= min_per_sm * num_sms and n_chunks <= num_sms and _coop_tag(n_chunks, itemsize):
        return take
    return None


def _pipe_rows(itemsize: int, peeled: bool, align: int) -> bool:
    """Whether softmax_bwd_pipe can take these rows: unpeeled, and 16-bit ones whole words (N and
    the strides even: `align` >= 2)."""
    return not peeled and (itemsize != 2 or align >= 2)


def _pipe(M: int, itemsize: int, log: bool, n_chunks: int, tag: bool, peeled: bool, align: int,
          num_sms: int, gpu: str = "") -> tuple | None:
    """PIPE_PLANS's (CHUNK_N, num_warps, programs an SM) where the pipelined backward takes the place
    of the cooperative plan (M rows of `n_chunks` chunks of COOP_CHUNK_N values, waiting through
    TAG or counters; see PIPE_*), else None: rows `_pipe_rows` takes. PIPE_PLANS and
    PIPE32_TAG_MAX_PER_SM are the GPU's (`gpu`, GPU_CONSTANTS)."""
    plan = _tuned("PIPE_PLANS", gpu).get((itemsize, log))
    if plan is None or not _pipe_rows(itemsize, peeled, align):
        return None
    per_sm = M * n_chunks / num_sms
    if itemsize == 2:
        pays = (not tag and per_sm >= PIPE16_MIN_PER_SM
                and (per_sm <= PIPE16_MAX_PER_SM or n_chunks >= PIPE16_ANY_GRID_CHUNKS))
    else:
        pays = (per_sm >= PIPE32_MIN_PER_SM and n_chunks >= PIPE32_MIN_CHUNKS
                and (not tag or per_sm <= _tuned("PIPE32_TAG_MAX_PER_SM", gpu)[log]))
    return plan if pays else None


def _pipe_fwd(M: int, N: int, itemsize: int, log: bool, peeled: bool, align: int, num_sms: int,
              gpu: str = "") -> tuple | None:
    """PIPE_FWD_PLANS's (CHUNK_N, num_warps, programs an SM) where the pipelined forward takes the place of
    the cooperative plan (PIPE_FWD_*; the GPU's, `gpu`), else None: rows `_pipe_rows` takes."""
    plan = _tuned("PIPE_FWD_PLANS", gpu).get((itemsize, log))
    n_chunks = _coop_chunks(N, itemsize)[1]
    if plan is None or not _pipe_rows(itemsize, peeled, align) or n_chunks < _tuned("PIPE_FWD_MIN_CHUNKS", gpu):
        return None
    return plan if M * n_chunks >= _tuned("PIPE_FWD_MIN_PER_SM", gpu)[log] * num_sms else None


def _pipe_plan(fam: str, force: str | None, taken, table: str, dtype: str, log: bool, peeled: bool, align: int,
               gpu: str) -> tuple | None:
    """The pipelined plan (CHUNK_N, num_warps, programs an SM) of a plan_forward or plan_backward call in family
    `fam`: `taken()` (the rule's: `_pipe_fwd`, `_pipe`) in place of an unforced cooperative plan; where "pipe" is
    forced, `table`'s (PIPE_FWD_PLANS or PIPE_PLANS, the GPU's) for the dtype and op, whatever the grid; else
    None. Raises ValueError where "pipe" is forced and there is no plan, or the rows are not `_pipe_rows`'."""
    if fam == "coop" and not force:
        return taken()
    if fam != "pipe":
        return None
    itemsize = ITEMSIZE[dtype]
    whole = _pipe_rows(itemsize, peeled, align)
    plan = _tuned(table, gpu).get((itemsize, log)) if whole else None
    if plan is None:
        why = "" if whole else " on peeled rows" if peeled else " on 16-bit rows not of whole words"
        raise ValueError(f"force='pipe': no pipelined plan for {dtype} {'log_softmax' if log else 'softmax'}{why} "
                         f"(dispatch.{table})")
    return plan


def _pipe_launches(M: int, N: int, strides: tuple, itemsize: int, log: bool, align: int, plan: tuple,
                   num_sms: int, forward: bool = False) -> tuple[Launch, ...]:
    """The pipelined backward (softmax_bwd_pipe; `forward`: the forward, softmax_fwd_pipe, strides those of
    x and y) with `plan` (CHUNK_N, num_warps, programs an SM):
    one launch (PHASE 3) or, interpreted, two (PHASE 1 and 2), as `_coop_launches`. Raises
    ValueError where a row has more chunks than its wait allows (2 * min(grid, num_sms * max(1, 8
    // num_warps)): kernels/softmax.py's argument above softmax_bwd_pipe)."""
    CHUNK_N, warps, per_sm = plan
    n_chunks = triton.cdiv(N, CHUNK_N)
    grid = (min(M * n_chunks, per_sm * num_sms),)
    if n_chunks > 2 * min(grid[0], num_sms * max(1, 8 // warps)):
        raise ValueError(f"N={N} needs {n_chunks} chunks of {CHUNK_N}, more than the pipelined kernel's wait allows "
                         f"on {num_sms} SMs at {warps} warps: use the 'coop' family")
    meta = dict(CHUNK_N=CHUNK_N, BLOCK_C=triton.next_power_of_2(n_chunks), VEC=16 // itemsize, LOG=log, ALIGN=align)
    phases = (1, 2) if kernels.INTERPRETED else (3,)
    if forward:
        meta.update(num_warps=warps, num_stages=1)
        outputs = coop_outputs((M, 2, n_chunks), (M + 2,), "zeros", "y", (M, N))
        return tuple(Launch("softmax_fwd_pipe", ("x",), (M, N, *strides, n_chunks), outputs, grid,
                            tuple({**meta, "PHASE": p}.items())) for p in phases)
    meta.update(PACK=itemsize == 2, BITS=itemsize == 2, DEFER_Y=log, num_warps=warps, num_stages=1)
    outputs = coop_outputs((M, n_chunks), (M + 2,), "zeros", "dx", (M, N))
    return tuple(Launch("softmax_bwd_pipe", ("y", "dy"), (M, N, *strides, n_chunks), outputs, grid,
                        tuple({**meta, "PHASE": p}.items())) for p in phases)


def _coop_launches(kernel: str, inputs: tuple, scalars: tuple, M: int, N: int, itemsize: int, num_sms: int,
                   acc: dict, part_rows: int, out: str, wide: bool = False,
                   narrow: bool = False, warps: int | None = None,
                   maxnreg: int | None = None, chunk: int | None = None, stagger: bool = False,
                   gpu: str = "") -> tuple[Launch, ...]:
    """The cooperative kernel: one program per chunk (grid M * n_chunks), n_chunks appended
    to `scalars`, `part_rows` partials a chunk, chunks as `_coop_chunks(N, itemsize, wide,
    narrow)` (or of `chunk` values where given), `warps` warps a program (default COOP_WARPS,
    read at the call), compiled under Triton's `maxnreg` register cap where given. `stagger`
    (the forward kernel, which takes STAGGER and FIRST): its first wave over a ramp where that
    pays (COOP_STAGGER_CYCLES; the GPU's of key `gpu`, GPU_CONSTANTS), else STAGGER = FIRST = 0.
    One launch (PHASE 3) or, under Triton's interpreter, where programs run one by one and
    could never wait for each other, two (PHASE 1 writes the partials, PHASE 2 combines them
    and writes `out`).

    Why every wait ends: a program takes its item (row * n_chunks + chunk) from a ticket
    counter when it starts, so items go out in order to running programs. Take the lowest
    row r with a chunk that has not arrived. Rows before it have all arrived, so their
    programs finish. A taken item of row r arrives (arriving never waits). If an item of r
    is not yet taken, no later item is either, so the only programs that can be waiting
    hold items of r: fewer than n_chunks <= num_sms. The GPU holds at least one program
    per SM at once, so one more program starts, takes the next item of r, and so on until
    all of r has arrived. This holds whatever the register use, hence n_chunks <= num_sms.
    A grid of at most num_sms programs is held at once whole: there items are program ids
    (TICKET=False). With TAG the same holds: a program publishes its partials before it waits.
    So num_sms must be the SMs the launch can run on, not the device's where the launching
    stream has fewer (a green context, an MPS limit): the adapters plan cooperative launches
    for `multisoftmax.sms.share` (a row of 128 chunks on a 16-SM green context hung when
    planned for 132: bench/results/h100/probe_green.log). Other kernels' programs on those
    SMs delay the wait but do not stop it, unless they themselves wait on programs that
    cannot start: cooperative launches on several streams at once (ours, or other libraries')
    are safe only while their waiting programs fit on the SMs beside each other.
    """
    CHUNK_N, n_chunks = (chunk, triton.cdiv(N, chunk)) if chunk else _coop_chunks(N, itemsize, wide, narrow)
    if n_chunks > num_sms:
        raise ValueError(f"N={N} needs {n_chunks} chunks of {CHUNK_N}, more than one per SM ({num_sms}): "
                         f"the cooperative kernel's wait needs at most one; use the 'online' or 'split' family")
    # A grid of at most one program per SM is resident at once: the program id can be the
    # item, which saves each program the ticket's atomic round trip before its loads (few
    # long rows, where that latency is a good part of the time).
    ticket = M * n_chunks > num_sms
    warps = warps or COOP_WARPS
    if stagger:
        ramp, first = _coop_stagger(M * n_chunks, CHUNK_N, warps, acc.get("PACK", False), acc["ACC_FP64"], ticket,
                                    num_sms, gpu)
        acc = dict(acc, STAGGER=ramp, FIRST=first)
    meta = dict(CHUNK_N=CHUNK_N, BLOCK_C=triton.next_power_of_2(n_chunks), TICKET=ticket, **acc,
                num_warps=warps, num_stages=1, **({"maxnreg": maxnreg} if maxnreg else {}))
    if acc.get("TAG"):  # part is not used; count: the int64 words of TAG, as int32 pairs
        outputs = coop_outputs((1,), (2 * (1 + M * part_rows * n_chunks),), "sync", out, (M, N))
    elif acc.get("SENT"):  # part is not used; count: the counters, the ticket, then the keyed partials
        outputs = coop_outputs((1,), (M + 1 + M * part_rows * n_chunks,), "zeros", out, (M, N))
    else:
        outputs = coop_outputs((M, part_rows, n_chunks), (M + 1,), "zeros", out, (M, N))
    phases = (1, 2) if kernels.INTERPRETED else (3,)
    return tuple(Launch(kernel, inputs, (*scalars, n_chunks), outputs, (M * n_chunks,),
                        tuple({**meta, "PHASE": p}.items())) for p in phases)


def coop_outputs(part_shape: tuple, count_shape: tuple, count_kind: str, out: str, out_shape: tuple) -> tuple:
    """The outputs of a cooperative launch, in its kernel's order: the scratch the kernel uses ("init":
    its count_init_ptr, read and written, left as the next launch needs it), part ("acc": the partials),
    count (the int32 scratch's output, `count_kind` "zeros" or "sync", not touched) and `out` ("io"). The
    torch launcher passes its kept scratch as both; the JAX adapter a constant it keeps, or zeros its
    framework makes for each call, aliased to count (see kernels/softmax.py's docstring)."""
    return (("count", count_shape, "init"), ("part", part_shape, "acc"), ("count", count_shape, count_kind),
            (out, out_shape, "io"))


def cooperative(launches: tuple[Launch, ...]) -> bool:
    """Whether a plan has a cooperative launch, whose programs wait for each other: the
    num_sms it was planned for must be no more than the SMs it will run on (the adapters ask
    multisoftmax.sms for the share of a green context or an MPS limit)."""
    return any(one.kernel.endswith(("_coop", "_coop_cols", "_coop_where", "_pipe")) for one in launches)


def alignment(*values: int) -> int:
    """The largest power of two up to 16 dividing every value: the kernels' ALIGN.

    It tells the compiler that N, the strides and the chunk length are multiples of it, so
    masks are uniform over a 16-byte vector and rows start aligned: loads are vectorized.
    Triton's launcher infers this from the values (torch); jax_triton does not for scalars.
    """
    align = 16
    while align > 1 and any(v % align for v in values):
        align //= 2
    return align


def fits_int32(rows: int, N: int, *strides: int) -> bool:
    """Whether every offset (in values) of `rows` rows of N values `strides` apart, a 16-byte vector
    past the row's end included, is below 2**31: the rows kernel may compute them in 32 bits (OFFS32)."""
    return (rows - 1) * max((0, *strides)) + N + 16 < 2**31


def family(M: int, N: int, itemsize: int, num_sms: int, aligned: bool) -> str:
    """'rows', 'coop', 'online' or 'split' for an M x N problem (one choice both directions
    where their tensors are aligned alike).

    Rows that fit in registers: 'rows', but for rows past MAX_ROWS_ALIGNED_BLOCK_N lanes that
    start 16-byte aligned (`aligned`: N and every stride a multiple of 16 bytes). Longer rows,
    and those: 'coop' (one read) while a row has at most one chunk per SM; beyond (N > ~1M at
    132 SMs) the looped kernels.
    """
    if sum(row_segments(N)) <= MAX_ROWS_BLOCK_N[itemsize] and not (
            aligned and row_segments(N)[0] > MAX_ROWS_ALIGNED_BLOCK_N):
        return "rows"
    if _coop_chunks(N, itemsize)[1] <= num_sms:
        return "coop"
    if M >= ROWS_PER_SM_FOR_ONLINE * num_sms or N < 2 * MIN_CHUNK:
        return "online"
    return "split"


def _peeled16_fwd_coop(M: int, N: int, lanes: int, log: bool, num_sms: int, gpu: str) -> bool:
    """Whether the forward of M peeled 16-bit rows of N values, bodies in `lanes` lanes, runs cooperative on the GPU
    of key `gpu`: past ROWS_PEELED16_FWD_MAX_LANES lanes, or in lanes ROWS_PEELED16_FWD_COOP names, as it has it
    (at least its rows an SM, N at most its fill of the lanes)."""
    if lanes > _tuned("ROWS_PEELED16_FWD_MAX_LANES", gpu):
        return True
    per_sm, fill = _tuned("ROWS_PEELED16_FWD_COOP", gpu).get((lanes, log), (float("inf"), 0.0))
    return M >= per_sm * num_sms and N <= fill * lanes


@functools.lru_cache(maxsize=4096)
def plan_forward(M: int, N: int, stride_xm: int, stride_ym: int, dtype: str, log: bool,
                 num_sms: int, force: str | None = None, force_peel: bool | None = None,
                 counters_per_call: bool = False, register_cap: bool = True, gpu: str = "") -> tuple[Launch, ...]:
    """Launches computing y = softmax(x) (log_softmax if `log`) over rows of an M x N view.

    `force` picks a family ("rows", "coop", "online", "split", or "pipe": PIPE_FWD_PLANS's pipelined
    plan whatever the grid) and `force_peel` the PEEL choice of the rows and coop families
    regardless of the heuristics: for tests and the benchmark. `counters_per_call`: the launcher
    zeroes "zeros" and "sync" outputs on every call (the JAX adapter without its kept scratch),
    not once (torch; the JAX adapter's kept scratch): see SPLIT_FRESH_FWD_MAX_PER_SM. `register_cap`:
    the launcher can pass Triton's maxnreg option (COOP_X2_CAP_REGS, ROWS_TAIL_FWD_CAP_REGS; see
    plan_backward). `gpu`: the GPU's key of ROWS_TILINGS and GPU_CONSTANTS (`tuned_gpu`; "": the H100's
    rules). M and N must be >= 1.
    """
    itemsize = ITEMSIZE[dtype]
    acc = dict(LOG=log, ALIGN=alignment(N, stride_xm, stride_ym), ACC_FP64=dtype == "float64")
    fam = force or family(M, N, itemsize, num_sms, acc["ALIGN"] * itemsize >= 16)
    vec = 16 // itemsize
    peeled = peel(N, itemsize, acc["ALIGN"], stride_xm == stride_ym, force_peel)  # the rows and coop families'
    # this GPU's unaligned 16-bit rows peeled (ROWS_PEEL16), or whole where they peeled for a tail alone; its short
    # unaligned float32 rows whole (ROWS_WHOLE32)
    retiled, peeled = (_retiled(M, N, itemsize, acc["ALIGN"], stride_xm == stride_ym, True, log, num_sms, gpu, peeled)
                       if fam == "rows" and not force and force_peel is None else (None, peeled))
    if (fam == "rows" and not force and itemsize == 2 and peeled and _coop_chunks(N, itemsize)[1] <= num_sms
            and _peeled16_fwd_coop(M, N, triton.next_power_of_2(N // vec * vec), log, num_sms, gpu)):
        fam = "coop"  # peeled 16-bit rows this GPU runs faster cooperative (ROWS_PEELED16_FWD_MAX_LANES, _COOP)
    if (fam == "coop" and not force and itemsize == 4 and N >= _tuned("ROWS_FWD32_WIDE_MIN_N", gpu)
            and sum(row_segments(N)) <= MAX_ROWS_BLOCK_N[itemsize]
            and M >= _tuned("ROWS_FWD32_WIDE_MIN_PER_SM", gpu) * num_sms):
        fam = "rows"  # aligned float32 rows that fill most of 32768 lanes, many of them (ROWS_FWD32_WIDE_*)
    fresh = _split_fresh(M, N, itemsize, num_sms, True, True) if counters_per_call and fam == "coop" and not force \
        else None  # the split plan for the JAX adapter
    fam = "split" if fresh else fam
    # The pipelined kernel where it pays over the cooperative one (PIPE_FWD_*), or where forced ("pipe").
    pipe = _pipe_plan(fam, force, lambda: _pipe_fwd(M, N, itemsize, log, peeled, acc["ALIGN"], num_sms, gpu),
                      "PIPE_FWD_PLANS", dtype, log, peeled, acc["ALIGN"], gpu)
    if pipe:
        return _pipe_launches(M, N, (stride_xm, stride_ym), itemsize, log, acc["ALIGN"], pipe, num_sms, forward=True)
    if fam in ("rows", "coop"):
        acc = dict(PEEL=peeled, VEC=vec, **acc)
    if fam == "rows":
        BLOCK_M, BLOCK_N, TAIL_N, num_warps, grid = _rows_tiling(M, N, vec=vec if peeled else 0, log=log,
                                                              itemsize=itemsize, aligned=acc["ALIGN"] >= vec, gpu=gpu)
        if retiled:
            (BLOCK_M, num_warps), grid = retiled, (triton.cdiv(M, retiled[0]),)
        rows_m = _rows_m(M, BLOCK_M, itemsize, log, True)
        # ROWS_FWD_ONE_ROW_N's rows unmasked; 32-bit offsets (ROWS_FWD16_OFFS32_LANES) where they fit
        even_n = (BLOCK_M == 1 and N == BLOCK_N and not TAIL_N and not peeled
                  and N in ROWS_FWD_ONE_ROW_N.get(itemsize, ()))
        rows_m["EVEN_M"] |= even_n
        fits32 = fits_int32(grid[0] * BLOCK_M, N, stride_xm, stride_ym)
        offs32 = (itemsize == 2 and BLOCK_M > 1 and not peeled and BLOCK_N + TAIL_N <= ROWS_FWD16_OFFS32_LANES
                  and (log or grid[0] >= ROWS_FWD16_OFFS32_SOFTMAX_MIN_PER_SM * num_sms) and fits32)
        # ...and this GPU's short unaligned float32 rows, with y's offsets x's (ROWS_FWD32_OFFS32)
        whole32, peeled32 = _tuned("ROWS_FWD32_OFFS32", gpu)
        same = (itemsize == 4 and acc["ALIGN"] < vec and stride_xm == stride_ym and fits32
                and (N <= peeled32 if peeled else (BLOCK_N <= whole32 and (
                    acc["ALIGN"] == 1 or grid[0] >= ROWS_WHOLE32_MIN_PROGRAMS * num_sms))))
        # ...and this GPU's peeled 16-bit rows in ROWS_FWD16_SAME_LANES's lanes alike
        same |= (itemsize == 2 and peeled and stride_xm == stride_ym and fits32
                 and BLOCK_N in _tuned("ROWS_FWD16_SAME_LANES", gpu))
        offs32 |= same
        # aligned rows with a tail under this GPU's cap (ROWS_TAIL_FWD_CAP_REGS) where the launcher can pass it
        cap = (_tuned("ROWS_TAIL_FWD_CAP_REGS", gpu).get((itemsize, BLOCK_N))
               if TAIL_N and not peeled and acc["ALIGN"] >= vec and register_cap else None)
        # 16-bit exps by ex2.approx.ftz in rows aligned to VEC or peeled (ROWS16_FWD_FTZ; left out where off)
        ftz = itemsize == 2 and (peeled or acc["ALIGN"] >= vec) and _tuned("ROWS16_FWD_FTZ", gpu)
        warps, fill = _tuned("ROWS16_FWD_FTZ_WARPS", gpu).get(BLOCK_N, (num_warps, 1.0))
        if (ftz and BLOCK_M == 1 and not TAIL_N and not peeled and N <= fill * BLOCK_N
                and M >= ROWS16_FWD_FTZ_WARPS_MIN_PER_SM * num_sms):
            num_warps = warps  # and rows that fill few of their lanes at fewer warps (ROWS16_FWD_FTZ_WARPS)
        meta = dict(BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, TAIL_N=TAIL_N, **acc, **rows_m, EVEN_N=even_n,
                    OFFS32=offs32, **({"FTZ": True} if ftz else {}), **({"SAME_STRIDES": True} if same else {}),
                    num_warps=num_warps, num_stages=1,
                    **({"maxnreg": cap} if cap else {}))
        return (Launch("softmax_fwd_rows", ("x",), (M, N, stride_xm, stride_ym),
                       (("y", (M, N), "io"),), grid, tuple(meta.items())),)
    if fam == "coop":
        # TAG where it pays (COOP_TAG_FWD_MIN_PER_SM, COOP_TAG_FWD16_*FEW_MAX_PER_SM), packed where
        # rows are whole words, in the chunks of COOP_FWD16_WARPS (summed in halves) or wide ones.
        # Else, on counters: rows of 33 to 64 chunks in COOP_FWD16_WARPS's chunks with keyed partials
        # (COOP_SPLIT_SUM_MAX_CHUNKS), else unpacked wide chunks (COOP_WIDE_MAX_N), else PACK where it pays
        # (COOP_FWD_UNPACKED_PER_SM), packed in wide chunks where those pay (COOP_PACK_WIDE_MIN_PER_SM);
        # keyed partials where they pay (those chunks and the wide packed ones, COOP_SENT32_*), and POLY
        # in the wide packed softmax (COOP_POLY: off); the first wave over a ramp where the grid has more
        # (COOP_STAGGER_CYCLES, TAG's too); LATE_LEAVE by the grid
        # of the chunks taken, never for the unpacked wide chunks, for log_softmax only packed
        # (COOP_LATE_LEAVE), but with keyed partials always (the float32 softmax: by the grid);
        # narrow chunks for grids of a few programs (COOP_NARROW_MIN_SMS_PER_PROGRAM), which take
        # none of the others.
        programs = M * _coop_chunks(N, itemsize)[1]
        words = _whole_words(itemsize, peeled, acc["ALIGN"])
        tag = _coop_tag_fwd(N, itemsize, words, peeled, programs, num_sms, log)  # the chunks TAG takes, if it does
        if tag is not None:  # SPLIT_SUM: see COOP_FWD16_WARPS
            acc.update(PACK=words, LATE_LEAVE=False, TAG=True,
                       SPLIT_SUM=tag.get("warps") == COOP_FWD16_WARPS, SENT=False, POLY=False)
            acc["CVT_X2"], cap = _coop_cvt_x2(acc["PACK"], log, False, tag, peeled, programs, num_sms,
                                             register_cap, gpu)
            return _coop_launches("softmax_fwd_coop", ("x",), (M, N, stride_xm, stride_ym), M, N, itemsize,
                                  num_sms, acc, 2, "y", maxnreg=cap, stagger=True, gpu=gpu, **tag)
        split = _coop_split_sum(N, itemsize, words, peeled, programs, num_sms)
        acc.update(TAG=False, SPLIT_SUM=split)
        wide = not split and _coop_wide(M, N, itemsize, log, peeled, num_sms)
        acc["PACK"] = split or (not wide and _coop_pack_fwd(programs, words, num_sms))
        packed_wide = not split and acc["PACK"] and _coop_pack_wide(programs, peeled, num_sms)
        taken = M * _coop_chunks(N, itemsize, wide or packed_wide)[1]
        acc["SENT"] = _coop_sent(programs, itemsize, log, packed_wide or split, num_sms)
        acc["POLY"] = _coop_poly(log, packed_wide)
        acc["CVT_X2"], cap = _coop_cvt_x2(acc["PACK"], log, packed_wide, None, peeled, programs, num_sms,
                                         register_cap)
        acc["LATE_LEAVE"] = not wide and (_coop_late_leave(taken, log and not acc["PACK"], num_sms)
                                          or (acc["SENT"] and (log or itemsize == 2)))
        return _coop_launches("softmax_fwd_coop", ("x",), (M, N, stride_xm, stride_ym), M, N, itemsize,
                              num_sms, acc, 2, "y", wide=wide or packed_wide,
                              narrow=not split and _coop_narrow(programs, itemsize, num_sms),
                              warps=COOP_FWD16_WARPS if split else None, maxnreg=cap, stagger=True, gpu=gpu)
    BLOCK_N = min(LOOP_BLOCK_N[itemsize], triton.next_power_of_2(N))
    num_warps = 8
    if fam == "online":
        grid = (min(M, LOOP_PROGRAMS_PER_SM * num_sms),)  # each program loops over rows
        meta = dict(BLOCK_N=BLOCK_N, **acc, num_warps=num_warps, num_stages=2)
        return (Launch("softmax_fwd_online", ("x",), (M, N, stride_xm, stride_ym),
                       (("y", (M, N), "io"),), grid, tuple(meta.items())),)
    if fam != "split":
        raise ValueError(f"force={force!r}: expected 'rows', 'coop', 'online' or 'split'")
    chunk, n_chunks = (fresh, triton.cdiv(N, fresh)) if fresh else _split(M, N, itemsize, num_sms)
    BLOCK_N = min(BLOCK_N, chunk)
    acc["ALIGN"] = alignment(N, stride_xm, stride_ym, chunk)
    stats = dict(BLOCK_N=BLOCK_N, ALIGN=acc["ALIGN"], ACC_FP64=acc["ACC_FP64"], num_warps=num_warps,
                 num_stages=2)
    norm = dict(BLOCK_N=BLOCK_N, BLOCK_C=triton.next_power_of_2(n_chunks), **acc,
                num_warps=num_warps, num_stages=2)
    return (
        Launch("softmax_fwd_split_stats", ("x",), (M, N, stride_xm, chunk, n_chunks),
               (("m_part", (M, n_chunks), "acc"), ("s_part", (M, n_chunks), "acc")),
               (M, n_chunks), tuple(stats.items())),
        Launch("softmax_fwd_split_norm", ("x", "m_part", "s_part"),
               (M, N, stride_xm, stride_ym, chunk, n_chunks),
               (("y", (M, N), "io"),), (M, n_chunks), tuple(norm.items())),
    )


@functools.lru_cache(maxsize=4096)
def plan_backward(M: int, N: int, stride_ym: int, stride_dym: int, stride_dxm: int, dtype: str,
                  log: bool, num_sms: int, force: str | None = None,
                  force_peel: bool | None = None, counters_per_call: bool = False,
                  register_cap: bool = True, gpu: str = "") -> tuple[Launch, ...]:
    """Launches computing dx from y and dy over rows of an M x N view (see plan_forward, `gpu` too; `force`
    may also be "pipe", the pipelined kernel of PIPE_PLANS whatever the grid). `register_cap`: the
    launcher can pass Triton's maxnreg option (COOP_CAP32_REGS): Triton's own launcher, and the JAX
    adapter's through its hook on jax-triton."""
    itemsize = ITEMSIZE[dtype]
    acc = dict(LOG=log, ALIGN=alignment(N, stride_ym, stride_dym, stride_dxm), ACC_FP64=dtype == "float64")
    fam = force or family(M, N, itemsize, num_sms, acc["ALIGN"] * itemsize >= 16)
    vec = 16 // itemsize
    # Aligned 16-bit softmax rows this GPU runs faster one a program, reloading, under a register cap
    # (ROWS_BWD16_RELOAD_*) than cooperative.
    wide16 = (fam == "coop" and not force and itemsize == 2 and not log and register_cap and acc["ALIGN"] >= vec
              and N <= _tuned("ROWS_BWD16_RELOAD_MAX_N", gpu) and M >= ROWS_BWD16_RELOAD_MIN_PER_SM * num_sms)
    fam = "rows" if wide16 else fam
    if fam == "coop":  # the cooperative kernel's grid, chunks and whether it waits through TAG
        n_chunks = _coop_chunks(N, itemsize)[1]
        programs = M * n_chunks
        narrow = _coop_narrow(programs, itemsize, num_sms)
        tag = _coop_tag(_coop_chunks(N, itemsize, narrow=narrow)[1], itemsize)
    # The split plan for the JAX adapter: the log_softmax's, or the softmax's on counters
    fresh = (_split_fresh(M, N, itemsize, num_sms, False, log or not tag)
             if counters_per_call and fam == "coop" and not force else None)
    fam = "split" if fresh else fam
    peeled = peel(N, itemsize, acc["ALIGN"], stride_ym == stride_dym == stride_dxm, force_peel)  # as plan_forward's
    retiled, peeled = (_retiled(M, N, itemsize, acc["ALIGN"], stride_ym == stride_dym == stride_dxm, False, log,
                                num_sms, gpu, peeled) if fam == "rows" and not force and force_peel is None
                       else (None, peeled))  # as plan_forward's
    if fam in ("rows", "coop", "pipe"):
        acc = dict(PEEL=peeled, VEC=vec, **acc)
    # The pipelined kernel where it pays over the cooperative one (PIPE_*), or where forced ("pipe").
    pipe = _pipe_plan(fam, force, lambda: _pipe(M, itemsize, log, n_chunks, tag, peeled, acc["ALIGN"], num_sms, gpu),
                      "PIPE_PLANS", dtype, log, peeled, acc["ALIGN"], gpu)
    if pipe:
        return _pipe_launches(M, N, (stride_ym, stride_dym, stride_dxm), itemsize, log, acc["ALIGN"], pipe, num_sms)
    if fam == "rows":
        BLOCK_M, BLOCK_N, TAIL_N, num_warps, grid = _rows_tiling(M, N, forward=False, vec=vec if peeled else 0,
                                                              log=log, itemsize=itemsize, aligned=acc["ALIGN"] >= vec,
                                                              gpu=gpu)
        if retiled:
            (BLOCK_M, num_warps), grid = retiled, (triton.cdiv(M, retiled[0]),)
        # RELOAD where this GPU's tiling has it (ROWS_TILINGS), its peeled 16-bit rows (ROWS_PEELED16_BWD_RELOAD),
        # its aligned ones with a tail (ROWS_TAIL16_BWD_RELOAD) or its wide ones (ROWS_BWD16_RELOAD_*) take it; left
        # out of the launch where off, as on the H100.
        tuned = _rows_tuned(N, BLOCK_N, TAIL_N, vec if peeled else 0, acc["ALIGN"] >= vec, False, itemsize, log, gpu)
        tail = _tuned("ROWS_TAIL16_BWD_RELOAD", gpu)[log].get(BLOCK_N, float("inf"))
        edged = (BLOCK_N in _tuned("ROWS_PEELED16_BWD_RELOAD", gpu)[log] if peeled
                 else acc["ALIGN"] >= vec and TAIL_N >= tail)
        reload = (tuned is not None and len(tuned) > 2 and tuned[2]) or wide16 or (itemsize == 2 and edged)
        if wide16:
            BLOCK_M, num_warps, grid = 1, 32, (M,)
        meta = dict(BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, TAIL_N=TAIL_N, **acc, **_rows_m(M, BLOCK_M, itemsize, log, False),
                    **({"RELOAD": True} if reload else {}), num_warps=num_warps, num_stages=1,
                    **({"maxnreg": ROWS_BWD16_RELOAD_REGS} if wide16 else {}))
        return (Launch("softmax_bwd_rows", ("y", "dy"), (M, N, stride_ym, stride_dym, stride_dxm),
                       (("dx", (M, N), "io"),), grid, tuple(meta.items())),)
    if fam == "coop":
        # See COOP_PACK_MIN_CHUNKS (and _PEELED_; RELOAD there), COOP_UNPACKED_PER_SM, COOP_DEFER_Y
        # (which packs whole words whatever the chunks, and unpacks unpeeled bfloat16 ones by bit
        # operations: BITS, in bench/DISPATCH.md's COOP_CAP32_REGS), COOP_LATE_LEAVE (not with TAG),
        # COOP_NARROW_MIN_SMS_PER_PROGRAM, COOP_TAG_MAX_CHUNKS and COOP_CAP32_REGS.
        words = _whole_words(itemsize, peeled, acc["ALIGN"])
        cap = register_cap and _coop_cap32(n_chunks, itemsize, log, peeled, tag, programs, num_sms)
        acc["DEFER_Y"] = _coop_defer_y(programs, itemsize, log, num_sms) or cap
        acc["PACK"] = _coop_pack(programs, n_chunks, words, peeled, num_sms) or (acc["DEFER_Y"] and words)
        acc["RELOAD"] = peeled and itemsize == 2 and not acc["PACK"]
        acc["LATE_LEAVE"] = not tag and _coop_late_leave(programs, log, num_sms)
        acc["BITS"] = acc["DEFER_Y"] and not peeled and itemsize == 2
        acc["TAG"] = tag
        maxnreg = COOP_CAP32_REGS if cap else None
        if (maxnreg is None and itemsize == 4 and tag and register_cap
                and programs > COOP_BWD32_TAG_CAP_MIN_PER_SM * num_sms):  # COOP_BWD32_TAG_CAP_REGS (the H200's)
            maxnreg = _tuned("COOP_BWD32_TAG_CAP_REGS", gpu)
        return _coop_launches("softmax_bwd_coop", ("y", "dy"), (M, N, stride_ym, stride_dym, stride_dxm), M, N,
                              itemsize, num_sms, acc, 1, "dx", narrow=narrow, maxnreg=maxnreg)
    BLOCK_N = min(LOOP_BLOCK_N[itemsize], triton.next_power_of_2(N))
    num_warps = 8
    if fam == "online":
        grid = (min(M, LOOP_PROGRAMS_PER_SM * num_sms),)  # each program loops over rows
        meta = dict(BLOCK_N=BLOCK_N, **acc, num_warps=num_warps, num_stages=2)
        return (Launch("softmax_bwd_online", ("y", "dy"), (M, N, stride_ym, stride_dym, stride_dxm),
                       (("dx", (M, N), "io"),), grid, tuple(meta.items())),)
    if fam != "split":
        raise ValueError(f"force={force!r}: expected 'rows', 'coop', 'pipe', 'online' or 'split'")
    chunk, n_chunks = (fresh, triton.cdiv(N, fresh)) if fresh else _split(M, N, itemsize, num_sms)
    BLOCK_N = min(BLOCK_N, chunk)
    acc["ALIGN"] = alignment(N, stride_ym, stride_dym, stride_dxm, chunk)
    dot = dict(BLOCK_N=BLOCK_N, **acc, num_warps=num_warps, num_stages=2)
    apply = dict(BLOCK_N=BLOCK_N, BLOCK_C=triton.next_power_of_2(n_chunks), **acc,
                 num_warps=num_warps, num_stages=2)
    return (
        Launch("softmax_bwd_split_dot", ("y", "dy"), (M, N, stride_ym, stride_dym, chunk, n_chunks),
               (("dot_part", (M, n_chunks), "acc"),), (M, n_chunks), tuple(dot.items())),
        Launch("softmax_bwd_split_apply", ("y", "dy", "dot_part"),
               (M, N, stride_ym, stride_dym, stride_dxm, chunk, n_chunks),
               (("dx", (M, N), "io"),), (M, n_chunks), tuple(apply.items())),
    )


# --------------------------------------------------------------------------------------
# jax.nn's where= (kernels/where.py): rows of at most WHERE_MAX_N values (MAX_ROWS_BLOCK_N: those
# the rows family holds in registers), with the mask read beside them; longer rows cooperative
# (WHERE_COOP_*, below). A mask over axes that are not the trailing ones is left to XLA by the JAX
# adapter (its `_masked`).
# --------------------------------------------------------------------------------------
WHERE_MAX_N = 32768
# ...but the backward holds y and dy: past this many lanes it spilled registers at 16 warps and at
# 32 (Triton 3.6, sm_90: 56-176 bytes a thread at 32768 lanes, float32 and bfloat16), so longer rows
# take the cooperative kernel there.
WHERE_BWD_MAX_N = 16384
# The kernels read x (y, dy) by 16-byte vectors, only those holding a kept value. On the H100 a
# causal (2048, 2048) mask over bfloat16 16 x 2048 x 2048 took 97.5 us forward reading the kept
# values alone, one load a value, 95.8 reading every vector, and 88.2 reading the vectors that hold
# a kept value.
# Measured: bench/DISPATCH.md, where=: which vectors of x the kernels read.


# The rows kernels' tiles (dispatch._where_tiling): the forward's programs hold at least
# WHERE_FWD_MIN_BYTES of x and a warp's worth (one row past that), WHERE_FWD_THREAD_BYTES a thread
# (float32: two 16-byte vectors, 8 values; 16-bit: four, 32 values, under Triton's register cap
# WHERE_FWD_MAXNREG where the launcher can pass it) on at most WHERE_FWD_MAX_WARPS warps; the
# backward's programs at least WHERE_BWD_MIN_N values, WHERE_BWD_VALUES a thread, on at most
# WHERE_BWD_MAX_WARPS warps, but for the 16-bit log_softmax from WHERE_BWD16_LOG_LANES lanes
# (WHERE_BWD16_LOG_VALUES values under WHERE_BWD16_LOG_MAXNREG) and the 16-bit softmax up to
# WHERE_BWD16_SM_MAX_LANES (WHERE_BWD16_SM_VALUES). The rows family's rule (`_rows_tiling`: 4 warps up
# to 2048 lanes, 16 values a thread) left bf16 1048576 x 128 at 2,480-2,740 GB/s on the H100 (padding
# and causal masks); 1 KB programs of 32 bytes a thread took 2,970-3,230 (the causal mask's x read
# half), the unmasked kernels 3,000. Smaller programs fell off a cliff (512 bytes of x: 1,694 GB/s at
# any warps). In 16-bit, 32 values a thread compile to 80-96 registers uncapped, which leaves an SM too
# few rows in flight past 4096 lanes (16384: one row of 16 warps; 2,069 GB/s); capped at 64 they fit
# without spilling, and the cap took bf16 16384 lanes 2,069 -> 2,938 GB/s (causal 1,695 -> 2,663), 8192
# 2,797 -> 3,000, 4096 2,881 -> 2,996, and causal rows of 128-2048 lanes 3,062-3,308 -> 3,238-3,640
# (padding masks there within -1.1% to +1.6%). float32 forward rows of WHERE_FWD32_EVERY_LANES lanes or
# more read x by every vector beside the mask (SKIP off), not after it: 2,370 -> 2,950 GB/s at 16384.
# The 16-bit log_softmax backward of 16384 lanes took 2,485 -> 3,401 GB/s under a causal mask (padding:
# 2,946 -> 2,943). Measured on padding (one mask row, 90% kept) and causal (N x N) masks. Measured:
# bench/DISPATCH.md, WHERE_FWD_MIN_BYTES and WHERE_FWD_MAXNREG.
WHERE_FWD_MIN_BYTES = 1024
WHERE_FWD_THREAD_BYTES = {2: 64, 4: 32}
WHERE_FWD_MAXNREG = {2: 64}
WHERE_FWD_MAX_WARPS = 32
WHERE_FWD32_EVERY_LANES = 16384
WHERE_BWD_VALUES = 8
WHERE_BWD_MIN_N = 512
WHERE_BWD_MAX_WARPS = 32
WHERE_BWD16_LOG_LANES = 16384
WHERE_BWD16_LOG_VALUES = 32
WHERE_BWD16_LOG_MAXNREG = 64
# The 16-bit softmax backward (not the log_softmax's) takes WHERE_BWD16_SM_VALUES values a thread up
# to WHERE_BWD16_SM_MAX_LANES lanes, half the warps, uncapped (57-62 registers). Against 8 values a
# thread under a causal mask, bf16 / float16 (probe_where_rows_bwd16.log, one run): 128 lanes 3,792 /
# 3,855 -> 3,975 / 3,978 GB/s, 256 3,942 / 4,002 -> 4,196 / 4,203, 512 3,993 / 4,042 -> 4,276 / 4,294,
# 1024 3,988 / 4,019 -> 4,248 / 4,286, 2048 3,680 / 3,712 -> 4,000 / 4,039, 4096 3,053 / 3,052 ->
# 3,346 / 3,374; padding masks 0 to -0.9%. 8192 lanes gained nothing (3,115 / 3,129 -> 3,098 / 3,127);
# 16384 lanes hold 16 a thread already (32 warps). The 16-bit log_softmax backward and float32 gained
# nothing at 16 values (probe_where_rows_bwd.log: mixed, -5.5% to +1.6%). Measured: bench/DISPATCH.md,
# WHERE_BWD16_SM_VALUES.
WHERE_BWD16_SM_VALUES = 16
WHERE_BWD16_SM_MAX_LANES = 4096
# ...but no cap where a program's threads cannot have more anyway (the SM's WHERE_SM_REGISTERS: 32
# warps, 64 registers): compiled under the cap, bf16 4096 x 32768 under a padding mask took 0.7-1.2%
# longer at the same registers (probe_where_rows_old.log).
WHERE_SM_REGISTERS = 65536


# Rows past those limits take *_coop_where, a chunk a program (WHERE_COOP_FWD_TILINGS, _BWD_TILINGS below;
# float64, and rows those do not fit: a WHERE_COOP_CHUNK_N-value chunk at WHERE_COOP_WARPS warps, the
# 16-bit forward under WHERE_COOP_MAXNREG where the launcher can pass it), for at most num_sms chunks;
# TAG (WHERE_COOP_TAG) up to COOP_TAG_MAX_CHUNKS chunks, else counters; WHERE_COOP_SKIP off: no mask load
# before x's. No softmax backward: the unmasked one on saved y is exact. H100, before the tilings below:
# the cap took bf16 1024 x 128256's log_softmax 342.2 -> 268.9 us. Measured: bench/DISPATCH.md,
# WHERE_COOP_CHUNK_N.
WHERE_COOP_CHUNK_N = {2: 8192, 4: 8192, 8: 4096}
WHERE_COOP_WARPS = 16
WHERE_COOP_SKIP = False
WHERE_COOP_TAG = True
WHERE_COOP_MAXNREG = {2: 40}
# WHERE_COOP_FWD_TILINGS, _BWD_TILINGS: 16-bit and float32 rows take, by itemsize, the first (CHUNK_N,
# warps, maxnreg or None) of these whose chunks a row are at most COOP_TAG_MAX_CHUNKS (past them all: the
# last that fits the SMs; none: WHERE_COOP_CHUNK_N's), a forward's cap where the launcher passes it (else
# WHERE_COOP_CHUNK_N's, uncapped); float32's peeled backward WHERE_COOP_PEEL_BWD32_TILINGS. Smaller
# programs pay: H200, vocabulary mask, GB/s softmax forward and log_softmax backward against WHERE_COOP_CHUNK_N's
# tiling: bf16 2670 x 50264 1,918 -> 2,632 and 2,503 -> 3,078, float32 1335 x 50264 2,652 -> 3,788 and 3,889 ->
# 4,162; rows not 16-byte aligned (PEEL), bf16 2670 x 50257 1,586 -> 2,214 and 2,097 -> 2,669, float32
# 2,195 -> 3,530 and 2,552 -> 3,782. On counters (past TAG's chunks) the smaller backward lost: bf16 1046 x
# 128257 2,391 GB/s at 4096 x 8 warps, 1,868 at 2048 x 4. Measured: bench/DISPATCH.md, WHERE_COOP_FWD_TILINGS.
WHERE_COOP_FWD_TILINGS = {2: ((4096, 4, 64), (8192, 8, 64)), 4: ((4096, 4, 64), (8192, 16, 40))}
WHERE_COOP_BWD_TILINGS = {2: ((2048, 4, None), (4096, 8, None)), 4: ((4096, 8, None),)}
WHERE_COOP_PEEL_BWD32_TILINGS = ((2048, 4, None), (4096, 8, None))
# WHERE_COOP_PACK: the 16-bit forward of a mask of N values a row, read by whole words (rows of whole
# words, or peeled with W_PEEL), holds x as packed words with the dropped values -inf in them
# (kernels/where.py PACK), in WHERE_COOP_PACK_TILINGS' chunks (as WHERE_COOP_FWD_TILINGS': the first
# within COOP_TAG_MAX_CHUNKS, else the last that fits; for now WHERE_COOP_FWD_TILINGS' 16-bit ones, which
# the GPU suite ran). H200, bf16 GB/s softmax / log_softmax forward, PACK off -> on (probe_where_pack_final
# .log): 2670 x 50264 under a mask of its own rows 2,438 / 2,424 -> 2,827 / 2,879; 1046 x 128256 under a
# vocabulary mask 2,605 / 2,575 -> 2,864 / 2,901; peeled 2670 x 50257, own rows, 2,343 / 2,312 -> 2,642 /
# 2,713. Measured, not taken yet (no GPU suite ran it): 8192 values at 4 warps under 96 registers, +0.4 to
# +11% but on aligned rows of 32776 values and the softmax of 50264 under a vocabulary mask (-0.7 to -3.8%):
# 2,868 / 2,943, 3,022 / 3,127, 2,832 / 2,901 on those three. Measured: bench/DISPATCH.md, WHERE_COOP_PACK.
WHERE_COOP_PACK = True
WHERE_COOP_PACK_TILINGS = WHERE_COOP_FWD_TILINGS[2]


@functools.lru_cache(maxsize=4096)
def plan_where(M: int, N: int, dtype: str, log: bool, forward: bool, row_div: int, row_mod: int,
               row_table: bool, w_cols: bool, num_sms: int, register_cap: bool = True) -> tuple[Launch, ...] | None:
    """The launches of a masked softmax (log_softmax if `log`) over a contiguous M x N view, forward
    (inputs "x", "where", "where_rows"; output "y") or backward ("y", "dy", "where", "where_rows";
    "dx"). Row m reads mask row (m // row_div) % row_mod, or where_rows[m] if `row_table`;
    `w_cols`: the mask holds N values a row, else one (kernels/where.py).
    Rows of at most WHERE_MAX_N values (backward: WHERE_BWD_MAX_N; float64: MAX_ROWS_BLOCK_N): one
    launch of the rows kernel, a row in next_power_of_2(N) lanes, tiled by `_where_tiling`. Longer rows: the
    cooperative kernel in chunks of WHERE_COOP_FWD_TILINGS / _BWD_TILINGS (float64, and rows none fits:
    WHERE_COOP_CHUNK_N's; rows not 16-byte aligned peeled: PEEL), planned for `num_sms` SMs (one launch;
    two under Triton's interpreter, as `_coop_launches`), or None where a row needs more than
    num_sms chunks, and for the softmax backward (the unmasked one serves, see WHERE_COOP_*);
    `register_cap`: the launcher can pass Triton's maxnreg (WHERE_COOP_MAXNREG, and `_where_tiling`'s caps).
    VEC: values a 16-byte vector (fewer for rows shorter than that); the rows kernels' EVEN (rows that
    fill their tiles) and FTZ (the 16-bit forward's exp, compiled) as kernels/where.py states them."""
    itemsize = ITEMSIZE[dtype]
    if forward:
        kernel, inputs, strides, out = "softmax_fwd_rows_where", ("x", "where", "where_rows"), (N, N), "y"
    else:
        kernel, inputs, strides, out = "softmax_bwd_rows_where", ("y", "dy", "where", "where_rows"), (N, N, N), "dx"
    scalars = (M, N, *strides, row_div, row_mod)
    meta = dict(LOG=log, ALIGN=alignment(N), ACC_FP64=dtype == "float64", ROW_TABLE=row_table, W_COLS=w_cols)
    if N > min(WHERE_MAX_N if forward else WHERE_BWD_MAX_N, MAX_ROWS_BLOCK_N[itemsize]):
        chunk = min(WHERE_COOP_CHUNK_N[itemsize], triton.next_power_of_2(N))
        warps, cap = WHERE_COOP_WARPS, WHERE_COOP_MAXNREG.get(itemsize) if forward else None
        vec = min(16 // itemsize, chunk)
        # PEEL: rows not 16-byte aligned read and written by whole vectors between their boundaries (the
        # tensors share stride N); W_PEEL: mask rows as far from a boundary as their x rows (row m reads
        # mask row m, or rows a multiple of vec values apart), the mask by whole vectors too.
        peeled = meta["ALIGN"] < vec
        w_peel = peeled and w_cols and not row_table and row_div == 1 and (row_mod >= M or row_mod * N % vec == 0)
        # PACK (the forward): 16-bit x held as packed words, the mask read by whole words
        pack = (forward and WHERE_COOP_PACK and itemsize == 2 and w_cols and not WHERE_COOP_SKIP
                and (w_peel or not peeled))
        if forward and register_cap:
            tilings = WHERE_COOP_PACK_TILINGS if pack else WHERE_COOP_FWD_TILINGS.get(itemsize, ())
        elif forward:
            tilings = ()
        else:
            tilings = (WHERE_COOP_PEEL_BWD32_TILINGS if peeled and itemsize == 4
                       else WHERE_COOP_BWD_TILINGS.get(itemsize, ()))
        tilings = [t for t in tilings if triton.cdiv(N, t[0]) <= num_sms]
        if tilings:
            tiling = next((t for t in tilings if triton.cdiv(N, t[0]) <= COOP_TAG_MAX_CHUNKS), tilings[-1])
            chunk, warps, cap = min(tiling[0], triton.next_power_of_2(N)), tiling[1], tiling[2]
        n_chunks = triton.cdiv(N, chunk)
        if n_chunks > num_sms or not (forward or log):
            return None
        tag = WHERE_COOP_TAG and dtype != "float64" and n_chunks <= COOP_TAG_MAX_CHUNKS  # float32 partials
        if forward:
            meta.update(PACK=pack)
        return _coop_launches(kernel.replace("_rows_", "_coop_"), inputs, scalars, M, N, itemsize, num_sms,
                              dict(VEC=vec, **meta, SKIP=WHERE_COOP_SKIP, TAG=tag, PEEL=peeled, W_PEEL=w_peel),
                              2 if forward else 1, out, warps=warps, chunk=chunk,
                              maxnreg=cap if register_cap else None)
    BLOCK_N = triton.next_power_of_2(N)
    BLOCK_M, num_warps, skip, cap = _where_tiling(M, BLOCK_N, itemsize, log, forward, register_cap)
    meta = dict(BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, VEC=min(16 // itemsize, BLOCK_N), **meta, SKIP=skip)
    # EVEN: no bounds compared (kernels/where.py `_tile`) where the tile holds the rows exactly, but in
    # the backward under a register cap (Triton 3.6, sm_90: 112 bytes a thread spilled against 24);
    # FTZ: the forward's exp by one ex2.approx.ftz for 16-bit y, compiled. With the kernels' store
    # without a per-lane mask, H100 bf16 rows of 32768 under a padding mask 2,534 -> 2,799 GB/s forward
    # (EVEN off: 2,779; the log_softmax's 2,217). Measured: bench/DISPATCH.md, where=: the forward's store.
    meta.update(EVEN=N == BLOCK_N and M % BLOCK_M == 0 and (forward or not cap))
    if forward:
        meta.update(FTZ=itemsize == 2 and not kernels.INTERPRETED)
    meta.update(num_warps=num_warps, num_stages=1, **({"maxnreg": cap} if cap else {}))
    return (Launch(kernel, inputs, scalars, ((out, (M, N), "io"),), (triton.cdiv(M, BLOCK_M),), tuple(meta.items())),)


def _where_tiling(M: int, lanes: int, itemsize: int, log: bool, forward: bool,
                  register_cap: bool = True) -> tuple[int, int, bool, int | None]:
    """BLOCK_M, num_warps, SKIP and maxnreg (or None) of the where rows kernels, rows in `lanes` (a
    power of two) (WHERE_FWD_*, WHERE_BWD_*): forward programs of at least WHERE_FWD_MIN_BYTES of x
    and a warp's worth, WHERE_FWD_THREAD_BYTES a thread (16-bit: under WHERE_FWD_MAXNREG where
    `register_cap`, the launcher can pass it); backward programs of at least WHERE_BWD_MIN_N values,
    WHERE_BWD_VALUES a thread (the 16-bit log_softmax from WHERE_BWD16_LOG_LANES lanes, where
    `register_cap`: WHERE_BWD16_LOG_VALUES under WHERE_BWD16_LOG_MAXNREG; the 16-bit softmax up to
    WHERE_BWD16_SM_MAX_LANES: WHERE_BWD16_SM_VALUES); no more rows than M's next power of two, on the
    warps those rows fill, capped; no register cap where the SM's registers (WHERE_SM_REGISTERS) hold
    no more; SKIP off for float32 forward rows of WHERE_FWD32_EVERY_LANES lanes or more. float64 as
    the rows family (`_rows_tiling`)."""
    if itemsize == 8:
        BLOCK_M, _, _, num_warps, _ = _rows_tiling(M, lanes, forward, log=log, itemsize=itemsize, aligned=False,
                                                   where=True)
        return BLOCK_M, num_warps, True, None
    cap = None
    if forward:
        cap = WHERE_FWD_MAXNREG.get(itemsize) if register_cap else None
        values = WHERE_FWD_THREAD_BYTES[itemsize] // itemsize
        max_warps = WHERE_FWD_MAX_WARPS
        block_m = max(1, max(WHERE_FWD_MIN_BYTES, 32 * WHERE_FWD_THREAD_BYTES[itemsize]) // (lanes * itemsize))
    else:
        values, max_warps = WHERE_BWD_VALUES, WHERE_BWD_MAX_WARPS
        if itemsize == 2 and log and lanes >= WHERE_BWD16_LOG_LANES and register_cap:
            values, cap = WHERE_BWD16_LOG_VALUES, WHERE_BWD16_LOG_MAXNREG
        elif itemsize == 2 and not log and lanes <= WHERE_BWD16_SM_MAX_LANES:
            values = WHERE_BWD16_SM_VALUES
        block_m = max(1, WHERE_BWD_MIN_N // lanes)
    BLOCK_M = min(block_m, triton.next_power_of_2(M))
    num_warps = max(1, min(max_warps, BLOCK_M * lanes // (values * 32)))
    if cap and cap * 32 * num_warps >= WHERE_SM_REGISTERS:  # no cap where the SM's registers cap a program
        cap = None
    return BLOCK_M, num_warps, not (forward and itemsize == 4 and lanes >= WHERE_FWD32_EVERY_LANES), cap


# --------------------------------------------------------------------------------------
# The softmax over a middle axis (kernels/columns.py): x as (B, N, T), reduced over N, T
# contiguous. A program holds BLOCK_N x BLOCK_T values: BLOCK_T neighbouring columns, each
# reduced position's BLOCK_T values read as one contiguous run.
# --------------------------------------------------------------------------------------
# COLS_MIN_RUN: a run is at least this many values where T allows. A column of N <=
# COLS_MAX_ONE_TILE / COLS_MIN_RUN is held whole (ONE_TILE) in COLS_TILE_SHORT // BLOCK_N columns
# (BLOCK_N past COLS_SHORT_N: COLS_TILE // BLOCK_N) at COLS_WARPS warps (more past
# COLS_MAX_PER_THREAD values a thread); longer columns loop over N in COLS_RUN_BYTES runs. 8 warps
# lost to 4: H100 float32 16 x 21 x 262144 forward 1,166 -> 2,913 GB/s. 16-bit tiles: COLS16_*.
# Measured: bench/DISPATCH.md, COLS_MIN_RUN.
COLS_MIN_RUN = 16
COLS_RUN_BYTES = 128
COLS_SHORT_N = 64
COLS_TILE_SHORT = 4096
COLS_TILE = 8192
COLS_MAX_ONE_TILE = 16384
COLS_WARPS = 4
COLS_MAX_PER_THREAD = 64
COLS_MIN_PROGRAMS_PER_SM = 4
# COLS_LOOP_BWD_T, COLS_LOOP_BWD_WARPS: the looped backward takes 32 columns at 8 warps, whatever
# its grid (probe_cols.log, against the forward's rule of 16 at 4 at these grids: float32 64 x 4096 x
# 64 1,599 -> 1,813 GB/s, 1 x 8192 x 8192 1,469 -> 1,753; bf16 1,230 -> 1,342 and 1,422 -> 1,542;
# 16 columns at 8 warps took 1,484 at bf16 64 x 4096 x 64, 64 at 8 1,819 at float32 8192 x 8192).
# The looped forward lost with them (float32 64 x 4096 x 64 1,634 -> 1,349; bf16 1,099 -> 829).
COLS_LOOP_BWD_T = 32
COLS_LOOP_BWD_WARPS = 8
# COLS16_*: a 16-bit one-tile forward of BLOCK_N <= COLS16_MAX_N (backward: COLS16_BWD_MAX_N) takes
# 1 warp where BLOCK_N <= COLS16_ONE_WARP_N, else 2, and the BLOCK_T giving a thread COLS16_VALUES
# values: Triton puts these tiles' warps along N, so each reduction crosses warps through shared
# memory, with conflicts; one warp reduces by shuffles only. bf16 forward N = 16: 909 -> 2,946 GB/s.
# Measured: bench/DISPATCH.md, COLS16_MAX_N.
COLS16_MAX_N = 128
COLS16_BWD_MAX_N = 32
COLS16_ONE_WARP_N = 32
COLS16_VALUES = 64
# COLS16_MIN_VALUES: a wider 16-bit one-tile forward keeps the general rule's warps, fewer where a
# thread would hold fewer than COLS16_MIN_VALUES values (a narrow T): bf16 65536 x 256 x 4 (4
# columns) 2,573 GB/s at 4 warps, 2,964 at 2, 2,947 at 1 (probe_cols_wide16.log; backward: 3,037
# at 4, kept). Wider tiles of BLOCK_N 256 to 1024 lost with fewer warps or more (the same log).
COLS16_MIN_VALUES = 16
# COLS16_SHORT_MIN_VALUES, COLS16_BWD_MIN_VALUES (the H200's: GPU_CONSTANTS; the H100's: none): the same cap on the
# warps of the 16-bit one-tile forward of BLOCK_N <= COLS16_MAX_N (COLS16_SHORT_MIN_VALUES values a thread), and of
# the 16-bit one-tile backward (COLS16_BWD_MIN_VALUES (values, short, padded, fill): where BLOCK_N <= short, or
# BLOCK_N <= padded and N <= fill * BLOCK_N). COLS32_MIN_VALUES (the H200's; the H100's: none): the float32 one-tile
# forward's, as COLS16_MIN_VALUES. The H200 takes 32 for each (COLS16_MIN_VALUES too): narrow T ran 1.1-1.8x at
# fewer warps (bf16 65536 x 256 x 4 forward 3,543 -> 4,043 GB/s at 1 warp, 111848 x 150 x 4 backward 2,912 ->
# 4,258, 209715 x 40 x 8 forward 1,122 -> 2,071; float32 65536 x 150 x 4 forward 3,081 -> 4,133); the 16-bit
# backward of a full BLOCK_N of 256-1024 was fastest at 4 warps. Measured: bench/DISPATCH.md, COLS16_MIN_VALUES ...
COLS16_SHORT_MIN_VALUES = 0
COLS16_BWD_MIN_VALUES = None
COLS32_MIN_VALUES = 0
# COLS16_FWD_TAIL (the H200's: GPU_CONSTANTS; the H100's: False): the 16-bit one-tile forward of a column of N at most
# 1.5 x a power of two P of 128 to COLS16_TAIL_MAX_N holds it in two tiles, P positions and TAIL_N =
# next_power_of_2(N - P) (kernels/columns.py TAIL_N), not in one of 2P, at the warps that give a thread
# COLS16_TAIL_VALUES values (at most the rules'): on the H200 1.10-1.48x (bf16 8 x 150 x 65536 2,460 -> 2,839
# GB/s, 8 x 129 x 65536 2,199 -> 3,262, 4 x 280 x 65536 1,982 -> 2,553). Measured: bench/DISPATCH.md,
# COLS16_FWD_TAIL.
COLS16_FWD_TAIL = False
COLS16_TAIL_MAX_N = 256
COLS16_TAIL_VALUES = 64
# COLS16_PER_VALUE: the looped 16-bit forward keeps its running max and sum per value of the tile
# (kernels/columns.py PER_VALUE): the loop then has no reduction across warps, for one exp more a
# value. On the H100 at dispatch's tile (probe_cols_fwd.log, loop-t16n256w4): bf16 64 x 4096 x 64
# 1,100 -> 1,345 GB/s, 1 x 8192 x 8192 1,401 -> 1,486; float32 lost (1,637 -> 1,618, 1,651 -> 1,549).
# Through the torch adapter (results/h100/dim_bfloat16.log against dim_bfloat16_c20c638.log): 1,101
# -> 1,160 and 1,408 -> 1,471.
COLS16_PER_VALUE = True


def _columns_one_tile(N: int, T: int) -> bool:
    """Whether a (B, N, T) softmax over N holds its columns in one tile (COLS_MAX_ONE_TILE)."""
    return triton.next_power_of_2(N) * min(triton.next_power_of_2(T), COLS_MIN_RUN) <= COLS_MAX_ONE_TILE


def _columns_run(T: int, values: int) -> int:
    """BLOCK_T for runs of `values` values: a power of two, at most T's, at least COLS_MIN_RUN where
    T has that many."""
    t_pow = triton.next_power_of_2(T)
    return min(t_pow, max(min(t_pow, COLS_MIN_RUN), values))


def _columns_tiling(B: int, N: int, T: int, itemsize: int, num_sms: int, force: str | None = None,
                    forward: bool = True, gpu: str = ""):
    """(BLOCK_N, BLOCK_T, ONE_TILE, num_warps) of the one-tile or looped plan for a (B, N, T)
    softmax over N. `force`: "one_tile", else the loop, regardless of N (tests). `gpu`: the GPU's key of
    GPU_CONSTANTS (COLS16_MIN_VALUES, COLS16_SHORT_MIN_VALUES, COLS16_BWD_MIN_VALUES, COLS32_MIN_VALUES)."""
    t_min = min(triton.next_power_of_2(T), COLS_MIN_RUN)
    n_pow = triton.next_power_of_2(N)
    one = _columns_one_tile(N, T) if force is None else force == "one_tile"
    if not one and not forward:  # COLS_LOOP_BWD_*
        BLOCK_T = _columns_run(T, COLS_LOOP_BWD_T)
        return max(1, min(n_pow, COLS_TILE_SHORT // BLOCK_T)), BLOCK_T, False, COLS_LOOP_BWD_WARPS
    num_warps = None
    if one:
        BLOCK_N = n_pow
        if itemsize <= 2 and BLOCK_N <= (COLS16_MAX_N if forward else COLS16_BWD_MAX_N):  # COLS16_*
            num_warps = 1 if BLOCK_N <= COLS16_ONE_WARP_N else 2
            BLOCK_T = _columns_run(T, COLS16_VALUES * 32 * num_warps // BLOCK_N)
        else:
            BLOCK_T = _columns_run(T, (COLS_TILE_SHORT if BLOCK_N <= COLS_SHORT_N else COLS_TILE) // BLOCK_N)
    else:
        BLOCK_T = _columns_run(T, COLS_RUN_BYTES // itemsize)
    while BLOCK_T > t_min and B * triton.cdiv(T, BLOCK_T) < COLS_MIN_PROGRAMS_PER_SM * num_sms:
        BLOCK_T //= 2
    if not one:
        BLOCK_N = max(1, min(n_pow, COLS_TILE_SHORT // BLOCK_T))
    if num_warps is None:
        num_warps = min(16, max(COLS_WARPS, BLOCK_N * BLOCK_T // (32 * COLS_MAX_PER_THREAD)))
        name = {2: "COLS16_MIN_VALUES", 4: "COLS32_MIN_VALUES"}.get(itemsize) if one and forward else None
        values = _tuned(name, gpu) if name else 0
        if values:  # COLS16_MIN_VALUES, COLS32_MIN_VALUES
            num_warps = _cols_warps(num_warps, BLOCK_N * BLOCK_T, values)
    elif forward and (values := _tuned("COLS16_SHORT_MIN_VALUES", gpu)):  # a short 16-bit tile
        num_warps = _cols_warps(num_warps, BLOCK_N * BLOCK_T, values)
    cap = not forward and one and itemsize <= 2 and _tuned("COLS16_BWD_MIN_VALUES", gpu)
    if cap and (BLOCK_N <= cap[1] or BLOCK_N <= cap[2] and N <= cap[3] * BLOCK_N):  # COLS16_BWD_MIN_VALUES
        num_warps = _cols_warps(num_warps, BLOCK_N * BLOCK_T, cap[0])
    return BLOCK_N, BLOCK_T, one, num_warps


def _cols_warps(num_warps: int, tile: int, values: int) -> int:
    """At most `num_warps` warps (a power of two), fewer where a thread of a `tile`-value tile would hold fewer than
    `values` values: the largest power of two <= tile / (32 * values), at least 1 (COLS16_MIN_VALUES and its kin,
    COLS16_TAIL_VALUES)."""
    fit = max(1, tile // (32 * values))
    return min(num_warps, 1 << (fit.bit_length() - 1))


# Long columns (N past one tile; the loop idles the GPU at few groups): three plans. COLS_COOP_*:
# cooperative, one read and one write: COLS_COOP_VALUES values a program (float64: half; a forward
# of more than COLS_COOP_FWD_MAX_CHUNKS chunks: twice) of BLOCK_T columns (COLS_COOP_RUN_BYTES runs)
# at COLS_COOP_WARPS warps; not for more chunks than SMs or 16-bit forwards (COLS16_COOP_FWD).
# COLS_SPLIT_*: under COLS_SPLIT_PROGRAMS_PER_SM groups an SM, chunks of N in two kernels (x read
# twice, on every SM); else the loop. H100 float32 16 x 4096 x 1024 forward: 1,576 -> 2,501 GB/s.
# Measured: bench/DISPATCH.md, COLS_COOP_VALUES.
COLS_COOP_VALUES = 8192
COLS_COOP_WARPS = 4
COLS_COOP_RUN_BYTES = 128
COLS_COOP_FWD_MAX_CHUNKS = 64
COLS16_COOP_FWD = False
COLS_SPLIT_PROGRAMS_PER_SM = 8
COLS_SPLIT_MIN_STEPS = 2
COLS_SPLIT_MAX_CHUNKS = 64
COLS_SPLIT_WARPS = 4
COLS_SPLIT_BWD_WARPS = 8
# COLS16_BWD_COOP_MAX_CHUNKS, COLS16_BWD_SPLIT_TILE (the H200's: GPU_CONSTANTS; the H100's: none): the 16-bit
# backward of columns of T a multiple of the tile's BLOCK_T runs the split plan in that tile (BLOCK_T, BLOCK_N,
# num_warps: runs of 256 bytes, 8 positions a step, 4 warps) where the rules take the split plan, or the
# cooperative plan in more than COLS16_BWD_COOP_MAX_CHUNKS chunks of N, and the tile's split plan has 2 chunks or
# more (else the rules' plan stays: a loop stays a loop). On the H200 (bench/results/h200/
# probe_cols_wide_bwd16.log, bf16; float16 alike) the cooperative plan of 32 to 128 chunks ran 7-31% behind that
# split plan (1 x 8192 x 8192 2,086 -> 2,465 GB/s, 2 x 16384 x 4096 1,737 -> 2,517, 32 x 8192 x 256 2,170 ->
# 2,410), of 16 chunks 19-25% ahead of it (64 x 2048 x 512 2,996 against 2,406); the split plan of 4 x 32768 x 512
# in the rules' tile (64 values, 64 positions, 8 warps) 4% behind. Measured: bench/DISPATCH.md, COLS16_BWD_*.
COLS16_BWD_COOP_MAX_CHUNKS = float("inf")
COLS16_BWD_SPLIT_TILE = None
# COLS16_FWD_SPLIT_TILE, COLS16_FWD_SPLIT_CHUNKS (the H200's: GPU_CONSTANTS; the H100's: none): the 16-bit forward
# of columns of T a multiple of the tile's BLOCK_T, where the rules take the split plan, runs it in that tile
# (BLOCK_T, BLOCK_N, num_warps: runs of 256 bytes, 32 positions a step, 4 warps) where the tile's plan has
# COLS16_FWD_SPLIT_CHUNKS (lo, hi) chunks. On the H200 (bench/results/h200/probe_cols_wide_fwd16.log,
# probe_cols16_rule.log; bf16, float16 alike) the tile's plans of 5-17 chunks ran 1.004-1.094x the rules' (8 x 4096
# x 2048 1,773 -> 1,940 GB/s, 2 x 4096 x 8192 1,789 -> 1,945), of 3 chunks 0.98x, of 32 0.97-1.01x, of 64 0.99x.
# Measured: bench/DISPATCH.md, COLS16_FWD_*.
COLS16_FWD_SPLIT_TILE = None
COLS16_FWD_SPLIT_CHUNKS = (0, 0)
# COLS16_FTZ, COLS16_FWD_STATS_N (the H200's: GPU_CONSTANTS; the H100's: False, None): the 16-bit forward's first
# pass over long columns (the split plan's stats launch, the loop's first pass: PER_VALUE) takes its exps by
# ex2.approx.ftz and its running maxes from the lowest float32 (kernels/columns.py FTZ): ~11 instructions a value,
# not ~20. The stats launch was bound by its instructions (Nsight Compute on bf16 1 x 8192 x 8192: issue slots 67%
# busy, x read at 1.6 TB/s): alone 67 -> 52 us. Split plans ran bf16 1.08-1.13x (1 x 8192 x 8192 1,939 -> 2,150
# GB/s), float16 1.03-1.07x, loops 1.01-1.13x. The one-tile forward's exps too (FTZ: its y below 2 ** -126 flushed
# to 0, bfloat16's subnormals, as the rows kernels' 16-bit forwards): 1.00-1.18x (bf16 8 x 150 x 65536 2,851 ->
# 3,369, 16 x 21 x 262144 3,359 -> 3,820; probe_cols_one_tile_ftz.log). COLS16_FWD_STATS_N: the stats launch of
# COLS16_FWD_SPLIT_TILE's plans steps that many positions, not the tile's 32: 1.004-1.09x more (1 x 8192 x 8192
# 2,165 -> 2,236). Measured: bench/DISPATCH.md, COLS16_FTZ.
COLS16_FTZ = False
COLS16_FWD_STATS_N = None


def _columns_tail(N: int, BLOCK_N: int, BLOCK_T: int, num_warps: int, itemsize: int, one: bool, force: str | None,
                  gpu: str) -> tuple[int, int, int]:
    """(BLOCK_N, TAIL_N, num_warps) of the one-tile forward of tile (BLOCK_N, BLOCK_T) at num_warps
    (`_columns_tiling`'s) where COLS16_FWD_TAIL splits it on the GPU of key `gpu`, else (BLOCK_N, 0, num_warps)."""
    half = BLOCK_N // 2
    if not (force is None and one and itemsize <= 2 and 128 <= half <= COLS16_TAIL_MAX_N and N - half <= half // 2
            and _tuned("COLS16_FWD_TAIL", gpu)):
        return BLOCK_N, 0, num_warps
    tail = triton.next_power_of_2(N - half)
    return half, tail, _cols_warps(num_warps, (half + tail) * BLOCK_T, COLS16_TAIL_VALUES)


def _columns_coop(B: int, N: int, T: int, itemsize: int, num_sms: int, forward: bool, force: str | None = None):
    """(CHUNK_N, BLOCK_T, n_chunks, num_warps) of the cooperative plan for a (B, N, T) softmax over
    N (COLS_COOP_*), or None where one tile, the split plan or the loop runs it. `force`: "coop"
    wherever N takes 2 to num_sms chunks."""
    if force not in (None, "coop") or force is None and forward and itemsize <= 2 and not COLS16_COOP_FWD:
        return None
    BLOCK_T = _columns_run(T, COLS_COOP_RUN_BYTES // itemsize)
    values = COLS_COOP_VALUES * 4 // max(4, itemsize)
    n_pow = triton.next_power_of_2(N)
    CHUNK_N = max(1, min(n_pow, values // BLOCK_T))
    if forward and triton.cdiv(N, CHUNK_N) > COLS_COOP_FWD_MAX_CHUNKS:
        CHUNK_N = max(1, min(n_pow, 2 * values // BLOCK_T))
    n_chunks = triton.cdiv(N, CHUNK_N)
    if not 2 <= n_chunks <= num_sms or force is None and (
            _columns_one_tile(N, T) or forward and n_chunks > COLS_COOP_FWD_MAX_CHUNKS):
        return None
    return CHUNK_N, BLOCK_T, n_chunks, COLS_COOP_WARPS


def _columns_coop_launch(kernel: str, inputs: tuple, scalars: tuple, B: int, N: int, T: int, coop: tuple,
                         parts: int, out: str, meta: dict) -> tuple[Launch, ...]:
    """The cooperative columns launch (one, or under Triton's interpreter two: PHASE 1 writes the
    partials, PHASE 2 combines them and writes `out`), as `_coop_launches` for rows: items from a
    ticket counter where the grid exceeds one program an SM."""
    CHUNK_N, BLOCK_T, n_chunks, num_warps = coop
    groups = B * triton.cdiv(T, BLOCK_T)
    meta = dict(CHUNK_N=CHUNK_N, BLOCK_T=BLOCK_T, BLOCK_C=triton.next_power_of_2(n_chunks),
                TICKET=groups * n_chunks > meta.pop("num_sms"), **meta, num_warps=num_warps, num_stages=1)
    outputs = coop_outputs((groups, parts, n_chunks, BLOCK_T), (groups + 1,), "zeros", out, (B, N, T))
    phases = (1, 2) if kernels.INTERPRETED else (3,)
    return tuple(Launch(kernel, inputs, (*scalars, n_chunks), outputs, (groups * n_chunks,),
                        tuple({**meta, "PHASE": p}.items())) for p in phases)


def _columns_split(B: int, N: int, T: int, itemsize: int, num_sms: int, forward: bool, force: str | None = None,
                   tile: tuple | None = None):
    """(BLOCK_N, BLOCK_T, CHUNK, n_chunks, num_warps) of the split plan for a (B, N, T) softmax over
    N, or None where the loop (or one tile) stays; in `tile` (BLOCK_T, BLOCK_N, num_warps) where given, else
    in COLS_RUN_BYTES runs. `force`: "split" takes it wherever N has two steps."""
    if force not in (None, "split"):
        return None
    BLOCK_T = tile[0] if tile else _columns_run(T, COLS_RUN_BYTES // itemsize)
    BLOCK_N = max(1, min(triton.next_power_of_2(N), tile[1] if tile else COLS_TILE_SHORT // BLOCK_T))
    if force is None and _columns_one_tile(N, T):
        return None
    groups, steps = B * triton.cdiv(T, BLOCK_T), triton.cdiv(N, BLOCK_N)
    n_chunks = min(triton.cdiv(COLS_SPLIT_PROGRAMS_PER_SM * num_sms, groups), steps // COLS_SPLIT_MIN_STEPS,
                   COLS_SPLIT_MAX_CHUNKS)
    if force == "split":
        n_chunks = max(2, min(n_chunks, steps))
    if n_chunks < 2:
        return None
    CHUNK = triton.cdiv(steps, n_chunks) * BLOCK_N
    warps = tile[2] if tile else COLS_SPLIT_WARPS if forward else COLS_SPLIT_BWD_WARPS
    return BLOCK_N, BLOCK_T, CHUNK, triton.cdiv(N, CHUNK), warps


def _cols16_split(B: int, N: int, T: int, itemsize: int, num_sms: int, forward: bool, force: str | None, gpu: str):
    """The split plan (`_columns_split`) in the 16-bit tile of the GPU of key `gpu` (COLS16_FWD_SPLIT_TILE or
    COLS16_BWD_SPLIT_TILE) for unforced 16-bit columns of T a multiple of its BLOCK_T, else None; where the plans
    take it: plan_columns_forward and plan_columns_backward (COLS16_FWD_*, COLS16_BWD_*)."""
    tile = _tuned("COLS16_FWD_SPLIT_TILE" if forward else "COLS16_BWD_SPLIT_TILE", gpu)
    if force is None and tile and itemsize <= 2 and T % tile[0] == 0:
        return _columns_split(B, N, T, itemsize, num_sms, forward, None, tile)
    return None


@functools.lru_cache(maxsize=4096)
def plan_columns_forward(B: int, N: int, T: int, stride_xb: int, stride_xn: int, stride_yb: int, stride_yn: int,
                         dtype: str, log: bool, num_sms: int, force: str | None = None,
                         gpu: str = "") -> tuple[Launch, ...]:
    """The launches computing y = softmax(x) (log_softmax if `log`) over axis 1 of (B, N, T) views
    of x and y whose last axis is contiguous (kernels/columns.py): one (one tile, the loop, the
    cooperative kernel; under Triton's interpreter the latter takes two phases) or two (split).
    B, N, T >= 1. `force`: "one_tile", "loop", "split" or "coop" (tests, probes). `gpu`: the GPU's key
    of GPU_CONSTANTS (`tuned_gpu`; "": the H100's rules)."""
    coop = _columns_coop(B, N, T, ITEMSIZE[dtype], num_sms, True, force)
    if coop:
        return _columns_coop_launch("softmax_fwd_coop_cols", ("x",), (B, N, T, stride_xb, stride_xn, stride_yb,
                                    stride_yn), B, N, T, coop, 2, "y",
                                    dict(LOG=log, ALIGN=alignment(T, stride_xb, stride_xn, stride_yb, stride_yn),
                                         ALIGN_N=alignment(N, coop[2]), ACC_FP64=dtype == "float64", num_sms=num_sms))
    split = _columns_split(B, N, T, ITEMSIZE[dtype], num_sms, True, force)
    wide = split and _cols16_split(B, N, T, ITEMSIZE[dtype], num_sms, True, force, gpu)  # COLS16_FWD_*
    lo, hi = _tuned("COLS16_FWD_SPLIT_CHUNKS", gpu)
    split = wide if wide and lo <= wide[3] <= hi else split
    per_value = COLS16_PER_VALUE and ITEMSIZE[dtype] <= 2
    ftz = dict(FTZ=True) if ITEMSIZE[dtype] <= 2 and _tuned("COLS16_FTZ", gpu) else {}  # COLS16_FTZ (left out: off)
    if split:
        BLOCK_N, BLOCK_T, CHUNK, n_chunks, num_warps = split
        align = alignment(T, stride_xb, stride_xn, stride_yb, stride_yn)
        common = dict(BLOCK_N=BLOCK_N, BLOCK_T=BLOCK_T)
        stats_n = _tuned("COLS16_FWD_STATS_N", gpu) if split is wide else None  # COLS16_FWD_STATS_N
        stats = dict(common, **(dict(BLOCK_N=stats_n) if stats_n else {}), ALIGN=align,
                     ALIGN_N=alignment(N, CHUNK, n_chunks), ACC_FP64=dtype == "float64", PER_VALUE=per_value, **ftz,
                     num_warps=num_warps, num_stages=2)
        norm = dict(common, BLOCK_C=triton.next_power_of_2(n_chunks), LOG=log, ALIGN=align,
                    ALIGN_N=alignment(N, CHUNK, n_chunks), ACC_FP64=dtype == "float64", num_warps=num_warps,
                    num_stages=2)
        grid = (B * triton.cdiv(T, BLOCK_T), n_chunks)
        return (Launch("softmax_fwd_stats_cols", ("x",), (B, N, T, stride_xb, stride_xn, CHUNK, n_chunks),
                       (("m_part", (B, n_chunks, T), "acc"), ("s_part", (B, n_chunks, T), "acc")), grid,
                       tuple(stats.items())),
                Launch("softmax_fwd_norm_cols", ("x", "m_part", "s_part"),
                       (B, N, T, stride_xb, stride_xn, stride_yb, stride_yn, CHUNK, n_chunks),
                       (("y", (B, N, T), "io"),), grid, tuple(norm.items())))
    BLOCK_N, BLOCK_T, one, num_warps = _columns_tiling(B, N, T, ITEMSIZE[dtype], num_sms, force, gpu=gpu)
    BLOCK_N, TAIL_N, num_warps = _columns_tail(N, BLOCK_N, BLOCK_T, num_warps, ITEMSIZE[dtype], one, force, gpu)
    meta = dict(BLOCK_N=BLOCK_N, BLOCK_T=BLOCK_T, ONE_TILE=one, LOG=log,
                ALIGN=alignment(T, stride_xb, stride_xn, stride_yb, stride_yn), ACC_FP64=dtype == "float64",
                PER_VALUE=per_value and not one, **(dict(TAIL_N=TAIL_N) if TAIL_N else {}),
                **ftz, num_warps=num_warps, num_stages=1 if one else 2)
    return (Launch("softmax_fwd_cols", ("x",), (B, N, T, stride_xb, stride_xn, stride_yb, stride_yn),
                   (("y", (B, N, T), "io"),), (B * triton.cdiv(T, BLOCK_T),), tuple(meta.items())),)


@functools.lru_cache(maxsize=4096)
def plan_columns_backward(B: int, N: int, T: int, stride_yb: int, stride_yn: int, stride_dyb: int, stride_dyn: int,
                          stride_dxb: int, stride_dxn: int, dtype: str, log: bool, num_sms: int,
                          force: str | None = None, gpu: str = "") -> tuple[Launch, ...]:
    """The launches computing dx from y and dy over axis 1 of (B, N, T) views (see
    plan_columns_forward). `gpu`: the GPU's key of GPU_CONSTANTS (`tuned_gpu`; "": the H100's rules)."""
    coop = _columns_coop(B, N, T, ITEMSIZE[dtype], num_sms, False, force)
    split = _columns_split(B, N, T, ITEMSIZE[dtype], num_sms, False, force)
    if coop[2] > _tuned("COLS16_BWD_COOP_MAX_CHUNKS", gpu) if coop else split:  # COLS16_BWD_*
        wide = _cols16_split(B, N, T, ITEMSIZE[dtype], num_sms, False, force, gpu)
        coop, split = (None, wide) if wide else (coop, split)
    if coop:
        align = alignment(T, stride_yb, stride_yn, stride_dyb, stride_dyn, stride_dxb, stride_dxn)
        return _columns_coop_launch("softmax_bwd_coop_cols", ("y", "dy"), (B, N, T, stride_yb, stride_yn, stride_dyb,
                                    stride_dyn, stride_dxb, stride_dxn), B, N, T, coop, 1, "dx",
                                    dict(LOG=log, ALIGN=align, ALIGN_N=alignment(N, coop[2]),
                                         ACC_FP64=dtype == "float64", num_sms=num_sms))
    if split:
        BLOCK_N, BLOCK_T, CHUNK, n_chunks, num_warps = split
        common = dict(BLOCK_N=BLOCK_N, BLOCK_T=BLOCK_T)
        acc = dict(LOG=log, ALIGN=alignment(T, stride_yb, stride_yn, stride_dyb, stride_dyn, stride_dxb, stride_dxn),
                   ALIGN_N=alignment(N, CHUNK, n_chunks), ACC_FP64=dtype == "float64", num_warps=num_warps,
                   num_stages=2)
        grid = (B * triton.cdiv(T, BLOCK_T), n_chunks)
        return (Launch("softmax_bwd_dot_cols", ("y", "dy"),
                       (B, N, T, stride_yb, stride_yn, stride_dyb, stride_dyn, CHUNK, n_chunks),
                       (("dot_part", (B, n_chunks, T), "acc"),), grid, tuple(dict(common, **acc).items())),
                Launch("softmax_bwd_apply_cols", ("y", "dy", "dot_part"),
                       (B, N, T, stride_yb, stride_yn, stride_dyb, stride_dyn, stride_dxb, stride_dxn, CHUNK, n_chunks),
                       (("dx", (B, N, T), "io"),), grid,
                       tuple(dict(common, BLOCK_C=triton.next_power_of_2(n_chunks), **acc).items())))
    BLOCK_N, BLOCK_T, one, num_warps = _columns_tiling(B, N, T, ITEMSIZE[dtype], num_sms, force, forward=False,
                                                       gpu=gpu)
    meta = dict(BLOCK_N=BLOCK_N, BLOCK_T=BLOCK_T, ONE_TILE=one, LOG=log,
                ALIGN=alignment(T, stride_yb, stride_yn, stride_dyb, stride_dyn, stride_dxb, stride_dxn),
                ACC_FP64=dtype == "float64", num_warps=num_warps, num_stages=1 if one else 2)
    return (Launch("softmax_bwd_cols", ("y", "dy"),
                   (B, N, T, stride_yb, stride_yn, stride_dyb, stride_dyn, stride_dxb, stride_dxn),
                   (("dx", (B, N, T), "io"),), (B * triton.cdiv(T, BLOCK_T),), tuple(meta.items())),)
