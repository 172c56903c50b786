"""Launch heuristics: (M, N, dtype, direction, #SMs) -> which kernels to launch, and how.

The adapters only reshape a tensor into an M x N row-major view with a row stride (or, for a
softmax over a middle axis, a (B, N, T) view: plan_columns_forward / plan_columns_backward, at
the end); this module picks the kernel family (`multisoftmax/kernels/softmax.py` explains the three) and
its launch parameters, and returns a list of `Launch` records that both the torch and the
JAX launchers execute in order. Every number below is a heuristic with its reason; the
H100 benchmark (`bench/results/h100/results.md`) is the measurement that checks them.
"""

from __future__ import annotations

import functools
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
# came later and wait through TAG there): on the H100 (bench/results/h100/probe_rows_coop.log,
# rows -> coop, the benchmark's clock, two runs) bf16 4559 x 29440 went from 2,636 to 2,835 GB/s
# forward (log_softmax 2,649 to 2,956) and 2,992 to 3,021 backward, 6000 x 22000 from 2,261 to
# 2,462 forward (2,279 to 2,757; backward 2,834 to 3,022), 4096 x 32768 from 2,822 to 2,903;
# float32 2279 x 29440 from 2,925 to 2,962 forward and 2,836 to 3,039 backward. Peeled rows lost
# (bf16 8191 x 16385 forward: 2,789 to 2,176; float32 4095 x 16385: 2,929 to 2,892): they stay.
# Few rows (probe_rows_coop_few.log): chunks won from 1 to 32 rows (bf16 1 x 32768: 4.70 to 3.08 us
# forward, 3.89 to 2.42 backward; float32 32 x 32768: 7.18 to 5.68 and 7.54 to 5.82), but lost
# in between, where the rule rests on nothing finer: the 16-bit forward of 64 x 32768 (1.94
# programs an SM, counters: 6.15 to 6.5 us, float16 5.87 to 6.5) and float32's backward of
# 132 x 32768 (4 an SM: 20.9 to 22.0 us, log_softmax 20.0 to 22.3).
MAX_ROWS_ALIGNED_BLOCK_N = 16384
# Rows kernel: 16 values a thread, at least 4 warps (short rows share a program: BLOCK_M
# rows of BLOCK_N), at most 16, one tile a program. On the H100 this rule is within 1.5% of
# the best of 9 (values a thread x warps) variants on the fp32/bf16 shapes from N = 128 to
# 16384 but one (bf16 N = 3000 backward: 5%), and a persistent grid (a few programs per SM
# looping over tiles) lost 2-8%: bench/results/h100/tune.json, made by `python bench/tune.py`.
VALUES_PER_THREAD = 16
# ...but the 16-bit forward of unpeeled rows that fill less than SPARSE_ROWS_FILL of their lanes
# (N just past a power of two: 1152 in 2048 lanes), of SPARSE_ROWS_LANES lanes (those measured),
# holds twice the rows a program: 16 lanes a thread carried only ~9 values there. On the H100
# (bench/results/h100/probe_rows16.log, probe_rows_odd.log, the benchmark's clock, two runs, GB/s
# at ~256 MB, dispatch -> twice the rows) bf16 65536 x 1152 went from 2,898-2,901 to 2,980-2,985
# forward (log_softmax 2,854-2,857 to 2,939-2,940; XLA ran it at 2,965 in results.md), 65536 x 600
# from 2,775 to 2,919 (2,620 to 2,780), 65536 x 300 from 2,450 to 2,555 (2,149 to 2,229); float16
# 1152 from 2,962 to 2,981 (2,924 to 2,976; float16 300 and 600 not measured). Not taken where
# nothing gained: 1280 (62.5% full: 3,001 to 2,988), float32 (1152, 1280, 300, 600, 2500: -0.3%
# to +0.2%), the backward (within 0.3%, but bf16 300: 2,812 to 2,728, log_softmax 2,908 to 2,707),
# peeled rows (bf16 2500: 2,829 to 2,325 forward, twice the registers; log_softmax backward 3,071
# to 2,945). Rows of fewer lanes than 512 were not measured.
SPARSE_ROWS_FILL = 0.6
SPARSE_ROWS_LANES = (512, 2048)
# ...and the 16-bit log_softmax backward of unpeeled rows in this many lanes (N = 513 ... 1024)
# holds twice the rows a program too (4, not 2). On the H100 (bench/results/h100/
# probe_rows_odd16.log, the benchmark's clock, two runs) bf16 went from 2,720 to 2,862 GB/s at N =
# 781 (odd rows, a value a lane), 2,856 to 2,897 at 1001, 3,002 to 3,013 at 780 and 2,993 to 2,991
# at 1002 (float16 alike: 2,720 to 2,853 at 781; probe_rows_odd.log: bf16 600, 3,000 to 3,010);
# other lane counts lost (255 in 256: -3.5%; 513 in 512 + 16: -1.1%; 1537 in 2048: -1.5%), and so
# did the softmax backward (-1% at 781 and 1001).
ROWS_LOG_BWD16_DOUBLE_LANES = 1024
# ...and the forward of rows of ROWS_SHORT_FWD_LANES lanes that they fill (N = 128 or 256) runs
# programs of ROWS_SHORT_FWD_WARPS warps, not 4: the same 16 values a thread, half the rows a
# program. On the H100 (bench/results/h100/probe_rows_short.log, 65536 rows, the benchmark's clock
# with fresh outputs, two runs, GB/s) float32 went from 2,895 to 2,925 at N = 256 (log_softmax
# 2,893 to 2,926) and 2,725 to 2,739 at 128, bfloat16 2,565 to 2,569 at 128 (log_softmax 2,522 to
# 2,557) and 2,758 to 2,775 at 256 (2,744 to 2,750), float16 2,568 to 2,587 at 128 (2,514 to 2,564)
# and 2,765 to 2,772 at 256 (2,718 to 2,768), where XLA's fused softmax had been up to 1.7% ahead
# (results.md); the float32 log_softmax of 128 lanes lost (2,770 to 2,680: with 8 rows a program
# it takes EVEN_M, see below) and keeps 4 warps; at 512 lanes 2 warps lost 0.3-0.6%, and the
# backward moved by -0.3% to +0.8%: not taken.
ROWS_SHORT_FWD_LANES = (128, 256)
ROWS_SHORT_FWD_WARPS = 2
# ...and, measured the same way (bench/results/h100/probe_rows_few.log), smaller programs at 4 warps:
# the backward of full rows of ROWS_BWD_1KB_N values (by bytes a value) holds 1 KB of each tensor
# a program (8 bytes a thread: one row of float32 256 or 16-bit 512 values, two of float32 128 or
# 16-bit 256, four of 16-bit 128), as Liger-Kernel's backward runs one row a program; the 16-bit
# forward of full rows of ROWS_FWD_ONE_ROW_N values, one row a program (16 bytes a thread). Both
# rules, as ROWS_SHORT_FWD_LANES, leave peeled rows alone (not measured). GB/s, dispatch -> this:
# float32 256 backward 2,978 -> 3,026 (log_softmax 2,973 -> 3,025; Liger's in results.md:
# 3,027), bfloat16 512 2,973 -> 3,016 (2,970 -> 3,018), float16 512 2,977 -> 3,024 (2,995 ->
# 3,021), bfloat16 256 in two rows 2,877 -> 2,941 (2,868 -> 2,946; in one 2,363); the forward of
# bfloat16 1024 2,963 -> 2,997 (log_softmax 2,963 -> 2,981), float16 2,966 -> 2,991 (2,967 ->
# 2,996), where XLA had been 1.1-1.4% ahead. float32 512 (2 KB rows) and 16-bit 1024 backward
# moved by at most 0.3%: not taken. Then (probe_rows_few2.log) the backward of 128 values: float32
# 2,860 -> 2,944 in two rows (log_softmax 2,863 -> 2,948), bfloat16 2,723 -> 2,782 in four (2,709 ->
# 2,778), float16 2,726 -> 2,786 (2,716 -> 2,778); forward rows in programs of 16 bytes a thread
# (16-bit 512 in two rows, float32 512 in one) gained at most 0.7%, float32 1024 and 2048 nothing.
ROWS_BWD_1KB_N = {2: (128, 256, 512), 4: (128, 256)}
ROWS_FWD_ONE_ROW_N = {2: (1024,)}
# EVEN_M (M a multiple of BLOCK_M: no row mask) and ALIGN_M (below) are passed to the rows
# kernels so that their code does not hang on whether the launcher tells the compiler that M is
# a multiple of 16: Triton's own launcher (torch) does, jax_triton's does not. Compiled for sm_90
# with Triton 3.6 without either, bf16 65536 x 781 took 48 registers and 456 instructions as the
# JAX adapter launches it, 40 and 400 as torch's does (on the H100 the JAX adapter ran 1-6%
# slower at 16-bit N = 781: results.md at 431ee20); with either, the same PTX for both
# (tests/test_kernels.py::test_jax_and_torch_launchers_compile_alike_subprocess). EVEN_M, the
# first of the two, is kept where, against the row mask (torch's code), it measured -1.5% to
# +3.7% (bench/results/h100/probe_even_m.log, means of its two runs: float32 65536 x 128
# softmax forward 2,717 to 2,771 GB/s, 65536 x 512 log_softmax forward 2,915 to 2,979, fp16
# 65536 x 64 softmax forward +3.7%; bf16 65536 x 128 softmax forward -1.5%, float32 65536 x 64
# log_softmax backward -1.1%). Only where
# BLOCK_M > 1: a program of one row compiles alike without it, and with it fp16 8192 x 16384's
# backward (BLOCK_M = 1, 16 warps) lost 23% (4,168 to 3,197 GB/s on an H200,
# bench/results/h200/probe_even_m.log; 262 to 287 us in the H100 benchmark, run_softmax.log).
# Nor for the float32 forward of 32 rows a program or more (N <= 64), 16 for log_softmax
# (N <= 128): on the H100 (bench/results/h100/probe_even_m.log, EVEN_M off -> on, first of two
# runs) 65536 x 64 went from 3,405 to 3,065 GB/s (log_softmax 3,236 to 2,847) and the
# log_softmax forward of 65536 x 128 from 2,810 to 2,675 (25.3 us in the benchmark with EVEN_M,
# 24.2 without), while its softmax forward gained (2,715 to 2,771); 16-bit types lost at most 1.5%.
# Compiled, that log_softmax forward issues its four row loads a thread one after another's
# reduction with EVEN_M, all at once without (Triton 3.6, sm_90 SASS); the softmax forward at
# N = 64 shows no such sign. Without EVEN_M, ALIGN_M = 16 (M a multiple of 16)
# rewrites M so that the compiler knows what Triton's launcher would tell it (see ALIGN in
# kernels/softmax.py): the JAX adapter then runs torch's code there too. Not for one row a
# program, which compiles alike without it.
# Looped kernels: 8192-wide tiles, 8 warps, 2 programs per SM: within 6.5% of the best of 5
# variants (tile x warps x programs per SM) at N = 65536 and 262144, fp32 and bf16, fwd and
# bwd (tune_2.json); no single variant won everywhere. These rows are memory-bound on their
# second pass, which the choice barely moves (1,700-2,050 GB/s).
LOOP_BLOCK_N = {2: 8192, 4: 8192, 8: 4096}
LOOP_PROGRAMS_PER_SM = 2
# Cooperative kernel (long rows read once): a chunk of COOP_CHUNK_N values a program, held
# in registers (32 values a thread at 8 warps). A row may have at most one chunk per SM
# (see _coop_launches): N <= 132 * 8192 = 1081344 on an H100, float64 half that. On the H100,
# 8192 x 8 warps was within 3.3% of the best of 5 (chunk x warps) variants on fp32/bf16,
# N = 50257 ... 1048576 (~256 MB, and M = 16, 64), forward and backward, but bf16 N = 50257
# (4096 x 4 warps: 10% faster forward, 7% backward; unaligned rows, see README):
# bench/results/h100/tune_coop.json, `python bench/tune.py --coop` (its 8-row shapes are
# host-bound under do_bench and say nothing). The looped kernels it replaced there ran at
# 1,700-2,050 GB/s; coop at 2,100-2,950.
# Where COOP_CHUNK_N does not divide N the row's last chunk is short (256000 in 8192-value
# chunks: 31 full, one a quarter full). Chunks of equal length instead (cdiv(N, n_chunks) rounded
# up to ALIGN, a runtime step; tried at 8aefeb6, bench/results/h100/probe_balanced.log, every
# dtype, op and direction on the LLM vocabularies and N = 29440) gained nothing where meant to
# (bf16 256 x 256000 softmax forward 97.7 -> 98.1 us; 64 x 256000 31.3 -> 34.3) and took more
# registers (the offsets no longer fold a constant chunk width), which cost the unpacked
# backward its occupancy (bf16 4096 x 32000 258 -> 305 us); its few gains, 1-4% on some float32
# backward and few-row shapes, were not worth a second addressing in both kernels.
COOP_CHUNK_N = {2: 8192, 4: 8192, 8: 4096}
COOP_WARPS = 8
# The softmax (not log_softmax) forward of aligned 16-bit rows up to COOP_WIDE_MAX_N takes
# chunks twice as wide (16384 at 8 warps). On the H100 (bench/results/h100/probe_chunk.log,
# bf16 and fp16, two repeats) it went from 2,463-2,485 to 2,583-2,608 GB/s at N = 65536 and
# 131072, 2,365 to 2,633 at 262144, 2,266 to 2,441 at 151936, 2,465 to 2,576 at 128256, but
# lost at 1048576 (2,115 to 2,065); log_softmax lost everywhere (65536: 2,451 to 2,282), and
# unaligned rows lost at 50257 (probe_coop.log: 2,138 to 1,900).
COOP_WIDE_MAX_N = 262144
# COOP_WIDE_MIN_PER_SM: and only where the grid of wide chunks has more than this many programs
# an SM. Unpacked, they take 80 registers a thread: 3 programs an SM at once, so a grid of 3.88
# an SM runs in two waves, the second a third full. On the H100 (bench/results/h100/
# probe_wide_few.log, bf16, the benchmark's clock, two runs) 8192-value chunks packed (PACK, 8
# an SM) took 15.3 us at 64 x 128256 against 16.2-17.9 wide, 15.7-16.0 at 32 x 256000 against
# 18.0-18.5, and unpacked 9.4-9.6 at 32 x 128256 (1.94 an SM) against 9.8-10.0; at 7.76 an SM
# (64 x 256000) the wide chunks stayed ahead, 30.2-31.3 us against 31.6-32.6. Between 3.88 and
# 7.76 the threshold rests on nothing measured.
COOP_WIDE_MIN_PER_SM = 4
# COOP_RELOAD: the cooperative backward of peeled 16-bit rows loads its chunk of y and dy
# again after the row's wait rather than holding them in registers across it. Its edges take
# it from 80 registers a thread (3 programs of 8 warps an SM) to 86 (2 programs); reloaded,
# 47 (5). On the H100 (bench/results/h100/probe_coop.log: chunk x warps x RELOAD, bf16 and
# float32, N = 50257 ... 1048576) bf16 2670 x 50257 went from 2,082 to 2,480 GB/s (log_softmax
# 2,237 to 2,534; 4096 x 50257: 2,117 to 2,522), but the aligned rows lost (65536: 2,597 to
# 2,099; 1048576: 2,474 to 2,029), as did float32 at 50257 (2,653 to 2,400) and the forward
# kernel (whose registers peak before the wait: 63 either way at bf16 50257) on 7 of 8 shapes.
# COOP_PACK_MIN_CHUNKS: the cooperative backward of 16-bit rows of at least this many chunks
# holds y and dy across the wait as packed 32-bit words of two values (PACK), not as float32
# values: 63 registers a thread instead of 80 (bf16, 8192 x 8 warps). On the H100
# (bench/results/h100/probe_pack.log, first of two runs, PACK off -> on, each with the
# LATE_LEAVE it gets) bf16 softmax 128 x 1048576 went from 2,520 to 2,723 GB/s (log_softmax
# 2,430 to 2,591), 16 x 1048576 from 1,919 to 2,027 (1,831 to 1,944), 64 x 256000 from 2,025 to
# 2,137 (1,908 to 2,063) and 512 x 262144 from 2,736 to 2,756 (2,658 to 2,664), but rows of 8
# chunks or fewer lost: 2048 x 65536 2,645 to 2,586 (2,574 to 2,556), 2670 x 50257, peeled
# (RELOAD then), 2,590 to 2,556 (2,537 to 2,371). A forward PACK, which must compute exp again
# after the wait, lost on every shape (probe_pack_fwd.log: bf16 8192 x 8, 2,468 to 2,254 at
# N = 65536, 2,117 to 1,956 at 1048576) and was not kept.
# Since TAG (rows of at most COOP_TAG_MAX_CHUNKS chunks wait through tagged partials) the unpeeled
# rows of fewer chunks gain too: on the H100 (bench/results/h100/probe_pack_mid.log and
# probe_pack_mid2.log, the benchmark's clock, two runs, the softmax backward with PACK flipped) bf16
# 1024 x 128256 went from 263.8 to 258.2-258.6 us, 2621 x 100000 from 524.7-526.0 to 513.1-513.5, 512 x
# 151936 from 157.8-157.9 to 155.3-155.6, 150 x 196608 from 62.8-63.2 to 62.1-62.4, 32 x 128256 (3.88
# programs an SM) from 12.7-12.9 to 11.9-12.0, 4559 x 29440 (4 chunks) from 267.2-267.7 to 263.0-263.5,
# 2048 x 65536 from 265.3-265.4 to 263.5-263.6 (float16 alike), even at 64 x 128256 (20.6-20.9 against
# 20.7-21.0), 4096 x 32768 and 4096 x 32000; peeled rows still lost (2670 x 50257: 271.2-271.4 against
# 291.1-291.5 packed, RELOAD kept), as did grids of at most COOP_UNPACKED_PER_SM programs an SM (8 x
# 256000 7.05-7.12 to 7.47-7.53, 24 x 128256 9.0-9.1 to 9.2-9.4). So COOP_PACK_MIN_CHUNKS holds for
# unpeeled rows, COOP_PACK_PEELED_MIN_CHUNKS for peeled ones. Rows of 2 or 3 chunks rest on nothing
# measured (unpacked).
COOP_PACK_MIN_CHUNKS = 4
COOP_PACK_PEELED_MIN_CHUNKS = 32
# COOP_UNPACKED_PER_SM: and only where the grid has more programs an SM than the GPU holds at
# once unpacked (70-80 registers a thread at 8 warps: 3 programs of 256 threads in an SM's
# 65,536 registers; packed, 62-64: 4). A grid it holds whole gains no occupancy and pays for
# the packing. On the H100 (bench/results/h100/probe_pack_few.log: dispatch's plans on few
# long rows, PACK off -> on, the benchmark's clock, first of two runs) bf16 softmax backward
# took 3.82 -> 4.08 us at 1 x 256000, 7.27 -> 7.49 at 8 x 256000, 9.08 -> 9.29 at 12 x 256000
# (2.91 programs an SM; log_softmax 8.46 -> 9.08) and 9.25 -> 9.63 at 3 x 1048576, but 11.92 ->
# 9.98 at 13 x 256000 (3.15 an SM; log_softmax 11.49 -> 9.61), 13.64 -> 11.68 at 4 x 1048576
# and 40.72 -> 40.25 at 64 x 256000; float16 alike. Peeled rows, not measured so, keep PACK.
COOP_UNPACKED_PER_SM = 3
# COOP_FWD_UNPACKED_PER_SM: the cooperative forward of 16-bit rows of whole words holds x
# across its wait as packed 32-bit words (PACK) and unpacks them anew for each use (the max,
# the sum, y; softmax computes exp(x - max) again after the wait) where its grid of 8192-value
# chunks has more than this many programs an SM: 32 registers a thread instead of 48, that is
# 8 programs of 8 warps an SM instead of 5 (Triton 3.6, sm_90). On the H100
# (bench/results/h100/probe_pack_fwd2.log, the benchmark's clock, bf16; fp16 alike) the
# log_softmax forward went from 2,506 to 2,784 GB/s at 2048 x 65536 (16384-value chunks, see
# below), 2,348 to 2,663 at 128 x 1048576, 2,333 to 2,642 at 2670 x 50257 (peeled), 16.9 to 15.0
# us at 64 x 128256 (7.76 programs an SM) and 32.0 to 29.9 at 64 x 256000; the softmax forward
# from 2,388 to 2,510 at 128 x 1048576, 36.0 to 34.6 us at 16 x 1048576 and 2,369 to 2,431 at
# 2670 x 50257. But few rows lost: 1 x 256000 4.23 to 4.41 us, 8 x 256000 (1.94 an SM) 6.52 to
# 6.81. Between 1.94 and 7.76 the rule rests on the register count: a grid the GPU holds whole
# unpacked (5 an SM) gains nothing from packing and pays for it. Those figures are with tl.exp;
# the packed kernel now takes exp as one FFMA and one ex2.approx.ftz a value (kernels'
# _exp2_ftz: 1,632 -> 1,072 SASS instructions at bf16 128 x 1048576), which took the softmax
# forward at 128 x 1048576 from 2,514 to 2,573 GB/s and the log_softmax at 2048 x 65536 from
# 2,784 to 2,837 (probe_pack_fwd3.log; benchmark: run_rerun_pack_fwd.log). The unpacked wide
# chunks of the softmax (COOP_WIDE_MAX_N) stay: in their place the packed ones (16384 values)
# gained 3-4% at 2048 x 65536 and 64 x 128256 but lost 1-6% at 1024 x 131072, 1024 x 128256,
# 64 x 256000 and 256 x 256000 (run_rerun_softmax_packed.log against run_rerun_pack_fwd.log).
COOP_FWD_UNPACKED_PER_SM = 5
# COOP_PACK_WIDE_MIN_PER_SM: packed, the forward takes chunks twice as wide (16384 values,
# 8 warps, 63 registers: 4 programs an SM) on unpeeled rows where its grid of 8192-value chunks
# has at least this many programs an SM. The softmax at 128 x 1048576 (124 an SM): 2,510
# against 2,155 GB/s in 8192-value chunks (probe_pack_fwd2.log); but at 16 x 1048576 (15.5 an
# SM) 33.6-33.7 us against 32.9-33.3 (LATE_LEAVE) and at 8 x 1048576 (7.76) 16.8-17.2 against
# 16.3-16.9 (probe_wide_few.log). The log_softmax (probe_pack_fwd2.log, bf16,
# 8192 -> 16384 packed: 7.76 an SM, 64 x 128256: 15.0 -> 15.6 us; 15.5, 64 x 256000: 29.9 ->
# 31.4, 16 x 1048576: even; 73.7, 512 x 151936: 2,625 -> 2,613 GB/s; 124: 2,758 -> 2,784 at N =
# 65536, 2,605 -> 2,716 at 131072, 2,675 -> 2,739 at 262144, 2,575 -> 2,702 at 128256). Peeled
# rows keep 8192 (2670 x 50257: 2,642 against 2,541). Packed, the log_softmax forward takes
# LATE_LEAVE by its rule too (7.76 an SM: 15.0 us without, 15.6 with; 124: 2,784 with, 2,750
# without at 65536). That threshold was 32 until the wide chunks took SENT (keyed partials, below,
# at the same grids): then they gained from 23.3 programs an SM (probe_sent_wide.log, the
# benchmark's clock, two runs, 8192 -> 16384 packed with SENT and LATE_LEAVE: bf16 softmax 48.0 ->
# 45.1-46.9 us at 24 x 1048576, 62.4-62.7 -> 56.9-58.5 at 32 x 1048576; log_softmax 45.1-46.4 ->
# 42.8-43.5 and 58.2-58.6 -> 53.2-54.5; float16 47.5-47.7 -> 46.7-47.1, 61.5-61.7 -> 57.7-59.4,
# 45.7-45.8 -> 41.1-43.7 and 58.2-58.6 -> 54.4-54.6), but not at 15.5 (16 x 1048576: bf16 33.2-33.3
# -> 34.4 us, log_softmax 31.8-32.1 -> 30.2-32.0; float16 33.0 -> 33.3-33.8, 31.5-31.7 -> 31.8-32.1);
# then (probe_sent_wide_gap.log) bf16 at 17.45 (18 x 1048576) gained too: 38.7-38.8 -> 36.4-36.5 us,
# log_softmax 36.3-36.6 -> 33.4-33.5. Between 15.5 and 17.45 the threshold rests on nothing
# measured. The wide chunks with SENT leave their row late at every grid: at 24 x 1048576 (11.6
# wide programs an SM, below COOP_LATE_LEAVE_MIN_PER_SM) leaving early lost to the 8192-value
# chunks (bf16 48.0 -> 49.5-50.8 us).
COOP_PACK_WIDE_MIN_PER_SM = 17
# COOP_NARROW_MIN_SMS_PER_PROGRAM: where the grid of the cooperative kernels has at most one
# program every this many SMs (single rows: 33 programs at 132 SMs, N <= 270336), chunks are
# half as wide (4096 values for 16-bit and float32; 8 warps): twice the programs, each waiting
# for half the bytes. On the H100 (bench/results/h100/probe_few_chunks.log, the benchmark's
# clock, two runs) float32 1 x 128256 went from 4.58-4.65 to 3.93-3.95 us forward (log_softmax
# 4.60-4.71 to 3.98-4.00) and 4.01-4.09 to 3.72-3.85 backward, 1 x 256000 from 4.81-4.96 to
# 4.33-4.34 forward and 4.60-4.69 to 3.98-4.01 log_softmax backward, bf16 1 x 128256 from 4.01-
# 4.04 to 3.79-3.80 forward; but 8 rows of 128256 (0.97 programs an SM) lost: float32 6.07 to
# 6.28 us forward, 6.64 to 7.05 backward, bf16 4.91 to 5.56 forward. float64 (not measured)
# keeps its chunks.
COOP_NARROW_MIN_SMS_PER_PROGRAM = 4
# COOP_DEFER_Y: the cooperative log_softmax backward of 16-bit rows first loads y after the
# row's wait, where its grid has more than COOP_UNPACKED_PER_SM programs an SM (DEFER_Y: its
# row sum is of dy alone, so only dy is held across the wait), and then holds dy packed (PACK)
# whatever its chunks. Registers a thread (bf16 2048 x 65536, Triton 3.6, sm_90): 70 unpacked,
# 59 deferred, 58 deferred and packed (float16: 40). On the H100 (bench/results/h100/
# probe_defer_y.log, the benchmark's clock, two runs; dispatch's plan -> deferred unpacked ->
# deferred packed) bf16 went from 2,576 to 2,727 / 2,713 GB/s at 2048 x 65536, 2,592 to 2,805 /
# 2,775 at 1024 x 131072, 2,778 to 2,874 / 2,845 at 512 x 262144, 2,728 to 2,757 / 2,880 at 128 x
# 1048576, 2,596 to 2,610 / 2,682 at 2670 x 50257 (peeled), 41.5 to 38.1 / 38.8 us at 64 x 256000
# and 44.8 to 41.9 / 41.1 at 16 x 1048576; float16 from 2,529 to 2,743 / 2,873 at 2048 x 65536
# and 2,767 to 2,783 / 2,934 at 128 x 1048576. The packed form won on 5 of those 9 shapes by
# 2-5%, lost on the other 4 by 0.5-2%: it is the one kept. A grid the GPU holds whole gains no
# occupancy and waits for y after the wait: 8 x 256000 (1.94 an SM) 6.8 to 7.3 us, 1 x 256000
# 3.9 to 4.7. float32 lost (2048 x 65536: 3,026 to 2,869 GB/s; 128 x 1048576: 2,758 to 2,741).
# Deferred and unpeeled, bfloat16 words are unpacked by bit operations (BITS: a bfloat16 is a
# float32's high half), not by conversions: 40 registers a thread instead of 48-58, 6 programs
# an SM instead of 4 (as float16). On the H100 (bench/results/h100/probe_bits.log, BITS off ->
# on, the benchmark's clock, two runs) the log_softmax backward went from 2,703 to 2,870 GB/s at
# 2048 x 65536, 2,786 to 2,884 at 1024 x 131072, 2,856 to 2,951 at 512 x 262144, 2,902 to 2,942
# at 128 x 1048576 and 41.1 to 40.2 us at 16 x 1048576 (64 x 256000: 38.5 to 38.9). Peeled rows
# (62 to 54 registers, 4 programs an SM either way) lost: 2670 x 50257, 2,689 to 2,623; so did
# the packed softmax backward, 61-64 registers either way, by up to 1.4% (16 x 1048576; it moved
# by -1.4% to +0.9%): neither takes it. (The forward, whose packed kernels are built around
# `_fresh`, took more registers with it: 32 to 40 at bf16 128 x 1048576.)
# COOP_CAP32_REGS: the cooperative log_softmax backward of unpeeled float32 rows defers y
# (DEFER_Y) and is compiled under Triton's maxnreg option at this many registers a thread: 4
# programs of 8 warps an SM, where the plan before took 80 registers on counters (3 an SM) and
# 86-88 with TAG (2); deferred alone, 64-68. The cap spills 4 of them on counters, 6 with TAG.
# It pays where the grid is more than the GPU holds uncapped (COOP_CAP32_MIN_PER_SM programs an
# SM on counters, COOP_CAP32_TAG_MIN_PER_SM with TAG) and either at most COOP_CAP32_MAX_PER_SM
# programs an SM or on rows of more than COOP_CAP32_MIN_CHUNKS chunks (about 3 such rows in
# flight uncapped). On the H100 (bench/results/h100/probe_cap_log32.log, probe_cap_log32b.log
# and probe_cap_bwd.log; uncapped -> deferred and capped, the benchmark's clock, two runs):
#   taken: 64 x 1048576 294-300 -> 284-285 us, 128 x 1048576 583-587 -> 562, 100 x 917504
#   405-410 -> 387, 48 x 1048576 224 -> 213.5, 32 x 1048576 150.5 -> 145.1, 16 x 1048576 81.1 ->
#   75.1, 8 x 1048576 44.5 -> 40.1, 4 x 1048576 25.2 -> 22.0; 32 x 256000 40.3 -> 37.3, 64 x
#   256000 72.6 -> 70.7, 24 x 128256 17.7 -> 16.0, 64 x 128256 39.1 -> 36.9, 128 x 131072 72.2
#   -> 71.3, 16 x 262144 23.1 -> 21.1, 64 x 65536 22.3 -> 20.4, 256 x 65536 71.2 -> 71.3;
#   not taken: grids the GPU holds whole uncapped (1 x 1048576 7.8 -> 9.0, 3 x 1048576 17.3 ->
#   17.8, 8 x 128256 7.05 -> 7.74; 2 x 1048576 and 8 x 256000 within 1%), rows of at most 96
#   chunks at 31 programs an SM and more (512 x 65536 136.0 -> 139.4; 1024 x 65536 265.8 ->
#   275.8; 256 x 262144 272.1 -> 275.7; 128 x 524288 277.3 -> 283.8; 85 x 786432 285.0 ->
#   286.3), peeled rows (1335 x 50257 268.0 -> 289.0, 10 spills).
# The deferred kernel at 16 warps (40 registers: 3 programs an SM) or with its dx in two halves
# (67) gains no program; the cap spills the softmax backward (22 at 64: float32 64 x 1048576 284
# -> 401 us) and the 16-bit ones lose (bf16 16 x 1048576 softmax 44.5 -> 48.2 at 56).
# Unmeasured: 17 to 30 programs an SM on rows of at most 96 chunks (left uncapped).
# Since the pipelined backward (PIPE_*, below) most of these grids take softmax_bwd_pipe instead:
# the cap stays where it does not, rows of fewer than PIPE32_MIN_CHUNKS chunks (64 x 65536, 256 x
# 65536) and TAG grids of 2 to 3 programs an SM (24 x 128256).
# jax_triton.triton_call (0.3.1) takes no maxnreg: the JAX adapter passes it to the compiler
# through a hook on jax-triton's compile (multisoftmax/jax.py, _REGISTER_CAPS); a launcher that
# cannot plans with plan_backward(register_cap=False), the uncapped kernel (plan_forward alike:
# COOP_X2_CAP_REGS).
COOP_CAP32_REGS = 64
COOP_CAP32_MIN_PER_SM = 3
COOP_CAP32_TAG_MIN_PER_SM = 2
COOP_CAP32_MAX_PER_SM = 16
COOP_CAP32_MIN_CHUNKS = 96
# COOP_LATE_LEAVE: in the cooperative softmax (not log_softmax) kernels, a program's second
# arrival at its row's counter, an atomic whose result it waits for, comes after its stores
# instead of before its compute (LATE_LEAVE). On the H100 (probe_pack.log, off -> on) the
# softmax forward went from 2,131 to 2,326 GB/s at bf16 N = 50257, 2,108 to 2,344 at 128 x
# 1048576, 1,592 to 1,695 at 16 x 1048576 and 2,694 to 2,819 at float32 1024 x 65536; the
# softmax backward gained 0.2-6% on every shape. But the log_softmax kernels lost on some
# (float32 64 x 1048576 backward: 2,636 to 2,273; bf16 50257 forward: 2,300 to 2,168; bf16 128 x
# 1048576 backward, packed: 2,591 to 2,342), and so did the wide forward chunks (bf16 64 x
# 256000: 1,822 to 1,758). Registers a thread, compiled for sm_90 with Triton 3.6 (the H100's;
# tests/compile_check.py), follow the same lines, so the move works mostly through occupancy:
# late, the softmax forward takes 48 instead of 59-63 (bf16 50257 and 1048576), but the float32
# log_softmax backward at 1048576 86 instead of 80 and the bf16 log_softmax forward at 50257 56
# instead of 48, a program fewer an SM.
# COOP_LATE_LEAVE_MIN_PER_SM: and only where the grid has at least this many programs an SM.
# Late, the leave's round trip ends each program; with few programs an SM that is the
# kernel's end. On the H100 (probe_late.log: dispatch's plans on few long rows, LATE_LEAVE
# off -> on, the benchmark's clock, first of two runs) one row of bf16 N = 128256 took 4.09
# -> 4.41 us forward and 3.70 -> 3.95 backward, 8 rows 4.91 -> 5.47 and 4.97 -> 5.10, float32
# 64 x 128256 (7.8 programs an SM) 27.6 -> 29.3 us forward and 38.5 -> 38.5 backward (below
# 12, only the bf16 backward gained: 64 x 128256 24.0 -> 22.5, 16 x 256000 11.7 -> 11.6; every
# forward of 3.9-7.8 programs an SM lost, 0.5-13%). At 15.5 programs an SM it
# gained or tied: bf16 16 x 1048576 35.3 -> 34.7 us forward, 46.0 -> 44.8 backward, float32 128
# x 128256 51.4 -> 51.5 and 71.2 -> 70.6, float32 64 x 256000 forward 50.9 -> 51.3 (the most it
# lost there); the ~256 MB sweeps above run at 60 programs an SM and more.
COOP_LATE_LEAVE_MIN_PER_SM = 12
# COOP_TAG_MAX_CHUNKS: the cooperative kernels wait for a row through tagged partials (TAG,
# kernels/softmax.py: each partial is a 64-bit slot holding the launch's tag and the value; a
# program reads its row's slots until all hold the tag) rather than through arrival counters
# (store the partial, arrive, spin on the counter, load the partials, leave: four round trips
# to L2 where TAG needs one when the row is complete), for float32 partials (not float64) of rows
# of at most this many chunks. Every waiting program reads every slot of its row by atomics,
# n_chunks ** 2 reads a round, which is what limits it. On the H100 (bench/results/h100/
# probe_tag_variants.log, runs 3 and 4, scratch copies of the kernels, the benchmark's clock, two
# runs each; the benchmark: run_rerun_tag_*.log) the backward went from 2,664 to 3,033 GB/s
# at bf16 2048 x 65536 (8 chunks; log_softmax 2,876 to 3,042), 2,655 to 2,965 at 2670 x 50257
# (peeled), 2,685 to 2,993 at float32 1335 x 50257 (log_softmax), 2,875 to 3,025 at 512 x 262144
# (32 chunks), 7.2 to 6.3 us at 8 x 256000 and 3.8 to 3.1 us at float32 1 x 128256; the forward
# from 2,833 to 2,951 at bf16 2048 x 65536 (log_softmax) and 2,870 to 2,963 at float32 1024 x
# 65536. But rows of 64 and 128 chunks lost (bf16 128 x 1048576 backward 2,777 to 2,158, float32
# 64 x 1048576 2,819 to 2,183, forward 2,572 to 2,202), and so did spinning on one slot before
# reading all (one more round trip: 2048 x 65536 backward 2,690) and volatile loads in place of
# the atomic reads (2,716).
COOP_TAG_MAX_CHUNKS = 32
# COOP_TAG_FWD_MIN_PER_SM: the forward of 16-bit rows takes TAG only where its grid has at least
# this many programs an SM (since COOP_TAG_FWD16_SM_FEW_MAX_PER_SM: peeled rows, and rows not of whole
# words; unpeeled rows of whole words at every grid), and there rows of whole words are held packed (PACK; the chunks:
# COOP_FWD16_WARPS; float32: COOP_TAG_FWD32_MIN_PER_SM). When TAG came, in packed chunks of 16384
# values at 8 warps, the softmax went from 2,640 to 2,892 GB/s at bf16 2048 x 65536 (probe_tag.log,
# dispatch's plans: 2,645 to 2,890; the log_softmax 2,833 to 2,955) (unpacked wide
# chunks before; with TAG unpacked they took 98 registers a thread, 80 without, and ran at 2,401),
# 2,656 to 2,862 at 1024 x 131072 and 2,583 to 2,609 at 256 x 256000. Fewer programs lost or tied
# (bf16 64 x 256000, 7.8 an SM: 30.2 to 32.1 us; 1 x 256000: 4.1 to 4.4; 8 x 256000: 6.6 to 6.3),
# and so did peeled rows in 8192-value chunks (bf16 2670 x 50257: 2,443 to 2,428; 32 to 44 registers).
# Rows of more than COOP_TAG_MAX_CHUNKS chunks of 8192 values (262144 < N <= 524288: 17 to 32 wide
# ones) took TAG in wide chunks until the wide chunks on counters took keyed partials (SENT, below):
# at 92-93 registers a thread (61-62 on counters) that TAG lost to counters by 17-25% (bench/results/
# h100/probe_tag_wide.log, the benchmark's clock, two runs: bf16 256 x 524288 softmax 2,023 -> 2,513
# GB/s, log_softmax 2,181 -> 2,718; 128 x 524288 1,971 -> 2,386 and 2,129 -> 2,569; 66 x 524288,
# 116 x 300000 and 160 x 393216 alike; fp16 alike), so those rows wait on counters (where they have
# since taken COOP_SPLIT_SUM_MAX_CHUNKS's chunks: 2,724 GB/s at bf16 256 x 524288 softmax).
COOP_TAG_FWD_MIN_PER_SM = 32
# COOP_TAG_FWD32_MIN_PER_SM: float32 rows (unpacked chunks) take TAG in the forward, peeled or not,
# from this many programs an SM. On the H100 (bench/results/h100/probe_tag32.log, counters -> TAG,
# the benchmark's clock, two runs) the forward went from 2,707 to 2,938 GB/s at 1335 x 50257
# (peeled, 70.8 programs an SM; log_softmax 2,779 to 2,937), 2,403 to 2,590 at 256 x 50257, 2,543
# to 2,671 at 64 x 256000 (15.5), 14.0 to 13.4 us at 32 x 128256 (3.9), 6.2 to 5.85 us at 4 x 256000
# (0.97; 8 x 128256: even, log_softmax 6.08 to 5.83); at 0.48 an SM and fewer it lost 1-4% (1 x
# 128256: 3.94 to 4.09 us; 4 x 128256: 5.27 to 5.38, log_softmax 5.37 to 5.22; 1 x 50257: 4.05 to
# 4.21). (16-bit rows: COOP_TAG_FWD_MIN_PER_SM above.)
COOP_TAG_FWD32_MIN_PER_SM = 0.75
# COOP_FWD16_WARPS: with TAG, 16-bit rows of whole words (peeled or not) are held packed (PACK) in
# chunks of 8192 values at this many warps, their sum taken in two halves (the kernel's SPLIT_SUM:
# 56-64 registers a thread, 8-9 programs an SM; summed at once they took 90-96 registers, 5 an SM,
# and the 16384-value chunks at 8 warps take 63-64, 4 an SM). On the H100
# (bench/results/h100/probe_fwd16_4w.log: dispatch's plan against the one it made before, 16384
# values at 8 warps, peeled rows 4096 at 4; the benchmark's clock, two runs) the bf16 softmax
# forward went from 2,622 to 2,855 GB/s at 2670 x 50257 (peeled; 4096 x 50257: 2,646 to 2,874),
# 2,637 to 2,789 at 512 x 151936, 2,597 to 2,684 at 256 x 256000, 2,844 to 2,893 at 1024 x 131072,
# 2,828 to 2,883 at 1024 x 128256, 2,755 to 2,821 at 512 x 262144, 2,702 to 2,766 at 2048 x 29440
# and 2,900 to 2,917 at 2048 x 65536; float16 alike (2670 x 50257: 2,610 to 2,854). The
# log_softmax gained on peeled rows (2,739 to 2,915 at 2670 x 50257) and on grids of up to 74
# programs an SM (2,787 to 2,828 at 256 x 256000, 2,850 to 2,892 at 512 x 151936, 2,845 to 2,874 at
# 2048 x 29440), but lost 0.1-1.8% on unpeeled rows at 124 an SM and more (2,958 to 2,942 at 2048
# x 65536, 2,947 to 2,929 at 4096 x 32000, 2,989 to 2,934 at 8192 x 29440): those keep the wide
# chunks, from COOP_FWD16_LOG_WIDE_MIN_PER_SM programs of 8192 values an SM (between 74 and 124
# the threshold rests on nothing measured). 8192 values at 4 warps also lost where a row has more
# than COOP_TAG_MAX_CHUNKS of them (128 x 1048576 with TAG: 1,954 against 2,570 GB/s), and 4096 at
# 2 warps lost everywhere (probe_fwd16_4w_split_all.log). Below TAG's grids (counters, 6 to 31
# programs an SM) 4 warps moved by -13% to +3%, summed in halves or not (probe_few16_4w.log): not
# taken. (probe_maxnreg16.log: the 8192 x 4 chunks summed at once and capped at 64 registers by
# Triton's maxnreg option spilled and lost on unpeeled rows.)
COOP_FWD16_WARPS = 4
COOP_FWD16_LOG_WIDE_MIN_PER_SM = 96
# COOP_TAG_FWD16_FEW_MAX_PER_SM, COOP_TAG_FWD16_FEW_MIN_PER_SM, COOP_TAG_FWD16_LOG_MIN_PER_SM: few
# long rows. Unpeeled 16-bit rows in a grid of fewer than COOP_TAG_FWD16_FEW_MAX_PER_SM programs of
# 8192 values an SM take TAG too (below COOP_TAG_FWD_MIN_PER_SM, so on counters before), in
# 8192-value chunks at COOP_WARPS warps: the log_softmax packed, from COOP_TAG_FWD16_LOG_MIN_PER_SM
# programs an SM, the softmax unpacked, from COOP_TAG_FWD16_FEW_MIN_PER_SM; from
# COOP_TAG_FWD16_FEW_MAX_PER_SM on, the log_softmax takes COOP_FWD16_WARPS's chunks at every grid,
# the softmax stayed on counters up to COOP_TAG_FWD_MIN_PER_SM (since:
# COOP_TAG_FWD16_SM_FEW_MAX_PER_SM, below). On the H100 (bench/results/h100/probe_few_tag16.log,
# bf16 and fp16 alike, the benchmark's clock with fresh outputs, two runs) the log_softmax went from
# 5.53 to 5.33 us at 4 x 256000 (0.97 an SM), 7.57 to 7.14-7.44 at 8 x 256000 and 7.58 to 6.85 at 16
# x 128256 (1.94), 8.82 to 8.02 at 12 x 256000 (2.91), 10.9 to 9.65 at 16 x 256000 (3.88); in
# COOP_FWD16_WARPS's chunks 17.3 to 16.1 at 32 x 256000 (7.76, where 8 warps tied) and 30.2 to 27.7
# at 64 x 256000 (15.5); the softmax, unpacked, 7.63 to 7.23-7.48 at 8 x 256000, 7.6 to 7.25 at 16 x
# 128256, 8.9 to 8.64 at 12 x 256000 and 10.62 to 10.16 at 16 x 256000, but lost at 0.97 an SM (4 x
# 256000: 5.44 to 5.68) and at 7.76 (64 x 128256: 17.2 to 17.5; packed 18.9). Rows of more than
# COOP_TAG_MAX_CHUNKS chunks lost every way (16 x 1048576: 33.3 to 35.8-44.4). Between 3.88 and 7.76
# an SM the bound of 6 rests on nothing measured; peeled rows were not measured (they keep the rule
# above).
COOP_TAG_FWD16_FEW_MAX_PER_SM = 6
COOP_TAG_FWD16_FEW_MIN_PER_SM = 1.5
COOP_TAG_FWD16_LOG_MIN_PER_SM = 0.75
# COOP_TAG_FWD16_SM_FEW_MAX_PER_SM: the softmax's few rows end here, not at COOP_TAG_FWD16_FEW_MAX_PER_SM,
# and from here unpeeled 16-bit rows of whole words take TAG's COOP_FWD16_WARPS chunks (packed, summed in
# halves) at every grid, where they waited on counters up to COOP_TAG_FWD_MIN_PER_SM. Those chunks took
# CVT_X2 (46cddde) after that rule was measured, and on the H100 they now run ahead of every plan the
# rule made between (bench/results/h100/probe_few_t4.log, probe_few_tp.log: the benchmark's clock, two
# runs, dispatch -> TAG's chunks; grids in programs of 8192 values an SM): bf16 64 x 128256 (7.8)
# 17.3-17.6 -> 15.4-15.6 us, 64 x 256000 (15.5) 30.0-31.6 -> 27.4-27.7, 32 x 256000 (7.8) 17.8-18.2 ->
# 16.0-16.2, 128 x 128256 29.8-30.7 -> 26.8-27.0, 256 x 128256 (31) 54.2-54.4 -> 48.5-48.6, 128 x 256000
# (31) 55.1-55.3 -> 49.6-49.7, 512 x 65536 (31) 54.5-54.9 -> 48.8, 48 x 128256 (5.8, unpacked 8-warp
# TAG before) 13.9 -> 13.0-13.1, 24 x 256000 (5.8) 14.3-15.6 -> 13.7-13.8; float16 alike (64 x 128256
# 16.9-17.2 -> 15.4-15.6). At 1.9 to 3.9 an SM the two ran even (bf16 32 x 128256 9.8-10.1 both, 16 x
# 256000 9.8-10.0 -> 10.0-10.2, float16 10.4-10.5 -> 10.6): those keep their 8 warps. POLY on those
# chunks (T4P, 72 registers; capped at 64, T4P64) lost 3-9% (probe_few_tp.log).
COOP_TAG_FWD16_SM_FEW_MAX_PER_SM = 4
# Keyed partials: the cooperative forward on counters (rows of more than COOP_TAG_MAX_CHUNKS
# chunks) waits through keyed partials (SENT, kernels/softmax.py: published by relaxed atomic
# exchanges, the arrival and polls relaxed: no release fence before the arrival) wherever 16-bit
# rows are held packed in wide chunks (COOP_PACK_WIDE_MIN_PER_SM) or in COOP_SPLIT_SUM_MAX_CHUNKS's
# (float32: below). On the H100
# (bench/results/h100/probe_sentinel.log and probe_sentinel_rerun.log, the benchmark's clock, two
# runs; 63-64 registers a thread either way at 16-bit) the softmax forward went from 2,571 to
# 2,685 GB/s at bf16 128 x 1048576 (fp16 2,555 to 2,666), the log_softmax from 2,711 to 2,844
# (fp16 2,707 to 2,809), the float32 softmax from 2,687 to 2,795 at 64 x 1048576 (54 -> 63
# registers, 4 programs an SM either way). Where its loop over the words costs an occupancy
# step it lost: the float32 log_softmax leaving early (48 -> 68 registers: 2,700 to 2,402; late:
# below), bf16 16 x 1048576
# (15.5 an SM, 32 -> 40-44: 33.5 to 36.9 us), 64 x 128256 (32 -> 44); the backward (bf16 128 x
# 1048576: even; float32: 80 -> 94 registers, lost) keeps the fenced counters. The benchmark
# (run_rerun_sent.log, torch adapter): 2,575 -> 2,693 GB/s bf16 softmax, 2,705 -> 2,832 log_softmax,
# fp16 2,551 -> 2,657 and 2,713 -> 2,820, float32 softmax 2,677 -> 2,814 (128 and 64 x 1048576).
# (It took them from 32 programs an SM then, as the wide chunks did; both came down together:
# probe_sent_wide.log, at COOP_PACK_WIDE_MIN_PER_SM.)
# COOP_SENT32_MIN_PER_SM, COOP_SENT32_LOG_MIN_PER_SM: the float32 forward on counters takes SENT
# from these grids instead (programs an SM), the softmax with LATE_LEAVE by its rule, the log_softmax
# always with LATE_LEAVE: so its kernel takes 62 registers a thread, 4 programs an SM (48 on fenced
# counters: 5; 68 with SENT and an early leave: 3). On the H100 (bench/results/h100/
# probe_sent_more.log, probe_sent_more_few.log, the benchmark's clock, two runs each) the log_softmax
# went from 2,681 to 2,787 GB/s at 64 x 1048576 (62 programs an SM), 2,535 to 2,628 at 32 x 1048576,
# 56.7-59.8 to 53.4-55.2 us at 16 x 1048576 (15.5) and 47.1-47.4 to 41.8-44.4 at 12 x 1048576 (11.6),
# but lost at 8 x 1048576 (7.76: 31.4-32.4 to 32.4-32.6) and fewer; the softmax (early leave below
# COOP_LATE_LEAVE_MIN_PER_SM) from 2,612 to 2,685 GB/s at 32 x 1048576, 55.1-56.9 to 54.0-55.9 us at
# 16 x 1048576, 42.5-44.2 to 41.5-43.7 at 12 x 1048576 and 31.4-31.8 to 29.1-29.3 at 8 x 1048576,
# but lost at 4 x 1048576 (3.88: 16.8-17.3 to 17.0) and fewer (1 x 1048576: 7.5 to 7.7-7.8). Between
# 3.88 and 7.76 (softmax) and between 7.76 and 11.6 (log_softmax) the thresholds rest on nothing
# measured.
COOP_SENT32_MIN_PER_SM = 6
COOP_SENT32_LOG_MIN_PER_SM = 10
# COOP_POLY: the 16-bit softmax forward packed in wide chunks (COOP_PACK_WIDE_MIN_PER_SM, with SENT)
# computes the post-wait exps of its words' high halves by a polynomial on the FMA pipe (the
# kernel's POLY, `_exp2_poly`), the low halves' by MUFU.EX2, whose 4 lanes an SM quarter bound that
# phase. These kernels keep their 61-64 registers a thread. On the H100 (bench/results/h100/
# probe_poly.log, probe_poly_wide.log, the benchmark's clock, two runs; degree 4 here, degree 3
# measured alike) the softmax went from 2,684-2,693 to 2,740-2,746 GB/s at bf16 128 x 1048576
# (fp16 2,664-2,668 to 2,721-2,742), 2,541 to 2,616 at 64 x 1048576, 36.3 to 35.3-35.9 us at 18 x
# 1048576, 48.3-48.6 to 47.8-48.0 at 48 x 524288, and on counters 2,513 to 2,567 at 256 x 524288
# (probe_tag_wide.log; rows of at most 64 chunks of 8192 have since taken COOP_SPLIT_SUM_MAX_CHUNKS's
# chunks instead). The same polynomial elsewhere lost: on the high halves' pre-wait exps too
# (79-80 registers: 200 to 225-266 us at 128 x 1048576), on a quarter of the values (71-73
# registers: 200 to 218), on the high halves in the 8192-value chunks (32 -> 40-54 registers: bf16
# 16 x 1048576 33.3 to 36.8 us, 64 x 128256 17.3 to 17.8). On a quarter of the values there it kept
# 32 registers on rows of 1048576 and gained 1-2% (16 x 1048576: 33.4 to 32.8-33.2 us), but took 40
# and lost at 64 x 128256 (probe_poly_few.log): not taken. In the tagged chunks of 4 warps (1024 x
# 128256, 56 -> 64-70 registers) it moved by -1% to +1%: not taken. Nor a smaller share in the wide
# chunks at the same 64 registers (probe_poly_mix.log: 1/8, 1/4 or 3/8 of the values, in four parts of
# the words): 0-2% behind (bf16 128 x 1048576: 196.3-197.1 -> 198.5-200.3 us).
COOP_POLY = True
# COOP_CVT_X2: the packed 16-bit forward writes y's words by one cvt.rn.bf16x2.f32 (cvt.rn.f16x2.f32) a
# word (the kernel's CVT_X2), as Triton converts tensors itself, not by two scalar conversions and the
# byte permutes that pair them; the same bits. On the H100 (bench/results/
# h100/probe_pack_x2.log, probe_pack_x2_fwd.log, the benchmark's clock, two runs, every packed plan
# of the benchmark's 16-bit shapes; registers a thread under Triton 3.6 before -> after) the softmax
# went from 32.2-32.8 to 30.2-30.9 us at bf16 16 x 1048576 (float16 32.1-33.1 to 30.1-30.9; 64 ->
# 60-63), 17.4-17.8 to 16.8-17.0 at 64 x 128256 (float16 17.2-17.7 to 16.4-16.8; 32), 96 to 93.1-93.6
# at 256 x 256000, 110.2-111.0 to 108.0-108.8 at 512 x 151936 and 1-2% faster at the ~256 MB rows of
# 29440 to 262144 values (TAG's 4-warp chunks, though at 56 -> 64 registers 9 programs an SM to 8;
# peeled 50257: 64 -> 72); the kernel's own CVT_X2, flipped, measured the same (probe_cvt_x2.log) and
# wrote the same bits, NaN's included (probe_cvt_x2_bits.log). On counters the log_softmax keeps its
# registers (56-58, 64) and gained 0-7% on every plan (probe_cvt_x2_log.log: rows of 300000 to
# 1048576 values, 8 to 447 rows; bf16 16 x 1048576 30.6 to 29.6-29.9 us, 24 x 1048576 42.4-43.5 to
# 40.6, 128 x 1048576 190.1-191.8 to 188.1-188.4). Where it took registers past an occupancy step, it
# is compiled under Triton's maxnreg at COOP_X2_CAP_REGS, the plan's registers without it, which
# ptxas meets there without spilling (Triton 3.6, sm_90; checked off the GPU by tests/
# compile_check.py and cuobjdump; under Triton 3.9 POLY's spills 8 bytes a thread there, where it took
# 75 registers uncapped and without CVT_X2), and only where the launcher can pass the cap (else the
# plan goes without CVT_X2, as before: plan_forward's register_cap): POLY's wide chunks (64 -> 78
# registers uncapped: 197 to 215 us at 128 x 1048576) and the log_softmax in TAG's wide chunks (64 ->
# 67-69: 181 to 185 us at 2048 x 65536).
# On the H100 (bench/results/h100/probe_capped.log, the benchmark's clock, two runs) POLY's went
# from 197.8-198.0 to 193.8-195.4 us at bf16 128 x 1048576 (float16 197.5-198.0 to 194.1-195.6) and
# 56.4-58.3 to 55.1-56.7 at 32 x 1048576 (float16 55.5-56.7 to 54.4), the log_softmax's wide chunks by
# 0-0.8% (bf16 512 x 262144 183.7-183.9 to 182.5-182.8 us, 1024 x 128256 178.1-178.4 to 177.8-178.0;
# float16 2048 x 65536 even). The log_softmax in TAG's 4-warp chunks takes it where its registers stay
# (peeled rows: 56, float16 63 -> 56; 2670 x 50257 185.1-185.7 to 184.3-184.5 us, float16 184.7-184.9 to
# 183.4-183.7; 4096 x 50257 282.4 to 281.0-281.8, probe_pack_x2_fwd.log), not on unpeeled rows (56 ->
# 66; capped at 56 it spills; 256 x 256000 92.3 to 94.2 us uncapped), and in the 8-warp chunks of few
# rows (40 -> 42-44 registers: 6 programs an SM to 5) in grids of at most COOP_X2_FEW_MAX_PER_SM
# programs an SM, which lose no residency so (probe_pack_x2_fwd.log: bf16 8 x 128256 5.47-5.48 to
# 5.32-5.33 us, 8 x 256000 7.18-7.19 to 6.94-7.28; float16 alike; between 1.94 and 5 programs an SM
# the rule rests on the register count). Not taken: the capped POLY in the other softmax plans
# (probe_capped.log: 8192-value chunks, TAG's 4-warp ones, 8-warp ones of few rows; 60, 64 and 32
# registers kept, but 0-13% slower: bf16 16 x 1048576 30.3-30.6 to 34.2 us, 2048 x 65536 181.9-182.3
# to 183.1-184.0); the backward's packed dx (probe_pack_x2.log: 128 x 1048576, 512 x 262144, 16 x
# 1048576) moved by -4% to +1% (its log_softmax 40 -> 48 registers).
COOP_CVT_X2 = True
COOP_X2_CAP_REGS = 64
COOP_X2_FEW_MAX_PER_SM = 5
# COOP_SPLIT_SUM_MAX_CHUNKS, COOP_SPLIT_SUM_MIN_PER_SM: unpeeled 16-bit rows of more than
# COOP_TAG_MAX_CHUNKS and at most COOP_SPLIT_SUM_MAX_CHUNKS chunks of 8192 values (262144 < N <=
# 524288), which wait on counters, are held packed in 8192-value chunks at COOP_FWD16_WARPS warps
# summed in halves (SPLIT_SUM, as under TAG), with keyed partials (SENT) and LATE_LEAVE, in grids
# of at least COOP_SPLIT_SUM_MIN_PER_SM programs an SM, both ops (no POLY: it costs registers in
# these chunks). On the H100 (bench/results/h100/probe_mid16.log, the benchmark's clock, two runs,
# dispatch's plan before -> this one; probe_scan.log found these rows at 0.86-0.88 of copy) the bf16
# softmax forward went from 2,616 to 2,725 GB/s at 447 x 300000, 2,618 to 2,735 at 341 x 393216,
# 2,577 to 2,724 at 256 x 524288 (fp16 2,593 to 2,725), 2,428 to 2,658 at 128 x 524288, 41.9 to
# 37.9 us at 40 x 524288 (9.7 wide programs an SM), 18.2 to 17.9 at 16 x 524288 (7.76 an SM) and
# 12.9 to 12.4 at 12 x 393216 (4.36), but lost at 8 x 524288 (3.88: 10.9 to 11.5); the log_softmax
# from 2,757 to 2,820 at 341 x 393216, 2,731 to 2,815 at 256 x 524288 and 17.5 to 16.7 us at 16 x
# 524288 (it won at 3.88 too: 11.2 to 10.9). Rows of more chunks keep the wide ones: 2,769 against
# 2,676 at 170 x 786432 (96 chunks), 2,710 against 2,600 at 128 x 655360 (80); rows of at most
# COOP_TAG_MAX_CHUNKS gained 1.5-2% on counters (100 x 262144, 150 x 196608, unpacked wide chunks):
# not taken. Between 64 and 80 chunks the bound rests on nothing measured.
# Rows of more chunks take the same plan in grids of few programs, where they would be packed in
# 8192-value chunks at 8 warps (more than COOP_FWD_UNPACKED_PER_SM programs an SM and fewer than
# COOP_PACK_WIDE_MIN_PER_SM). On the H100 (probe_mid16f.log, two runs; probe_tag_poly.log) the
# log_softmax went from 17.6-17.8 to 16.9-17.1 us at bf16 8 x 1048576 (fp16 17.6-17.8 to
# 16.5-16.8), 25.9-26.0 to 25.1-25.3 at 12 x 1048576, 31.7-32.4 to 30.0-31.1 at 16 x 1048576 (fp16
# 31.5-32.0 to 30.5-31.8) and 25.5-25.8 to 24.8-25.0 at 16 x 786432; the softmax from 18.5-18.6 to
# 17.7-17.8 at 8 x 1048576, 27.1-27.4 to 26.5 at 12 x 1048576, 33.1-33.8 to 32.8-33.3 at 16 x
# 1048576 (fp16 32.7-33.5 to 32.2-32.6) and 27.0-27.1 to 26.4-26.7 at 16 x 786432 (fp16 26.9-27.2
# to 26.6-27.2). In the wide chunks (24 and 32 x 1048576, 11.6 and 15.5 wide programs an SM) it
# lost by 2-10%.
COOP_SPLIT_SUM_MAX_CHUNKS = 64
COOP_SPLIT_SUM_MIN_PER_SM = 4
# Rows that are not 16-byte aligned (N or a row stride not a multiple of 16 bytes: N = 3001,
# 16385 or 50257 in 16-bit types) are cut into a head, an aligned body and a tail (PEEL), so
# the body moves in 16-byte vectors instead of one value a lane. A peeled row of the rows
# kernel runs on half the warps of an unpeeled one (twice the values a thread, the same rows a
# program): every 16-bit one, float32 ones from 16 warps, but not the log_softmax backward of
# rows past 8192 lanes. Measured on the H100 (`python bench/tune.py --peel [--log]`: PEEL
# off/on, the rows kernel at 2x, 1/2 and 1/4 of its warps; tune_peel.json for softmax at
# N = 129 ... 100003, tune_peel_log.json for both ops at 3001 ... 29441), halving took bf16 PEEL
# rows from 1,844 to 2,791 GB/s forward at N = 16385, 1,526 to 2,490 at 12289, 2,065 to 2,717
# at 8191, 2,118 to 2,340 at 29441 (log_softmax forward alike: 1,835 to 2,708 at 16385;
# softmax backward: 2,362 to 2,997 at 8191, 2,595 to 2,831 at 29441), float32 log_softmax
# forward from 2,476 to 2,897 at 12289 and softmax backward from 2,486 to 2,712 at 29441;
# float32 at 8 warps or fewer moved by 1% or less either way. The bf16 log_softmax backward
# lost past 8192 lanes (12289: 2,651 to 2,206; 16385: 2,827 to 2,609; 29441: 2,986 to 2,716;
# 8191 and 3001 gained 1-6%), and float32's was even there: those keep their warps. float64
# (not measured) keeps its warps. Peeled that way, 16-bit rows
# beat unpeeled ones from N = 3001 on (2,789 vs 2,630 forward; 8191: 2,717 vs 2,677; 12289:
# 2,490 vs 1,614) but not at 781 or 1001 (2,136 vs 2,642; 2,565 vs 2,766): 16-bit rows are
# peeled from PEEL_MIN_N on, or when their register row would carry a tail segment anyway
# (N = 129 = 128 + 1). float32 rows gained up to 1.34x (N = 129, 16385, 50257, 100003) and lost
# nowhere more than 1%: always peeled.
PEEL_MIN_N = 2048
# A chunk of a split row is at least this many elements, so each program streams long
# enough to hide its start-up and the partials stay few.
MIN_CHUNK = 8192
# The looped kernel walks one row a program; with fewer rows than this many per SM the GPU
# idles, and rows are split across programs instead.
ROWS_PER_SM_FOR_ONLINE = 4
# A launcher that zeroes the cooperative kernels' counters (or TAG's words) on every call pays that
# on every call: plan_forward/plan_backward(counters_per_call=True). The JAX adapter did so by
# jax_triton.triton_call's zeroed_outputs (a memset of 0.77-1.09 us on the GPU before the kernel,
# bench/results/h100/probe_events.log; the torch adapter zeroes them once), and since 2026-11-26
# by zeros that XLA makes, aliased through the kernels' count_init_ptr (`coop_outputs`): a kernel of
# 0.86-0.96 us before each call made alone, one for all of them where XLA may make them together (a
# jitted chain of 20 calls: 1.06-1.38 us in all; bench/results/h100/probe_zeros.log). The bounds
# below were measured with the memset and are kept: measured again since (probe_jax_lone.log, bf16
# and float32 rows of 1-8 x 32768 to 1048576), the cooperative plan won both as the benchmark times
# it (a chain, one zeros kernel for all its calls) and as lone calls (a zeros kernel each) only at
# bf16 1 x 128256's log_softmax backward, float32 8 x 128256's forwards and 8 x 256000's softmax
# forward (yet not float32 1 x 1048576's, of as many programs as 8 x 128256); elsewhere the chain
# favoured it and lone calls the split plan, or they tied, with no grid bound between (again for float32 forwards
# with TAG, probe_jax_lone_tag32.log: the cooperative plan won both ways only on rows of 4-8 chunks at 32 x
# 65536 and 32-64 x 32768, not at 16 x 65536, and lost 8 x 128256 as lone calls). Up to these grids (programs
# an SM of the cooperative plan in COOP_CHUNK_N chunks) it gets the split plan instead, two
# kernels with nothing to zero, the second reading x (y and dy) again from L2, in chunks of
# SPLIT_FRESH_CHUNKS; in the backward for the log_softmax, and for the softmax where its
# cooperative plan would wait on counters (rows of more than COOP_TAG_MAX_CHUNKS chunks: at these
# grids one row of more than 131072 values, or two of more than 262144). On the H100, through the JAX
# adapter (bench/results/h100/probe_jax_fresh.log, the benchmark's JAX clock, memset included,
# two runs; bf16 and float32 rows of 1-16 x 32768 to 1048576), the forward went from coop to
# split 1.04-1.33x faster (bf16 1 x 128256: 4.55 -> 3.96 us, 16 x 128256: 8.28 -> 7.33, 1 x
# 1048576: 6.34 -> 5.86; float32 1 x 256000: 5.57 -> 4.72) but for float32 16 x 128256's softmax
# (1.94 programs an SM: 11.02 -> 11.34); the log_softmax backward 0.94-1.21x (bf16 1 x 256000:
# 4.68 -> 3.93; bf16 1 x 128256 and 2 x 128256 behind: 3.47 -> 3.55-3.69, 3.87 -> 3.90, also in
# probe_jax_fresh_bwd.log, where 1 x 256000 gained 1.10-1.17x again), the softmax
# backward 0.96-1.21x: ahead by 1.12-1.21x on counters (1 x 256000: bf16 4.70 -> 3.89, float32
# 4.84 -> 4.33), within -4% to +11% with TAG (float32 1 x 65536 and 8 x 32768: 3.61 -> 3.75, 4.19
# -> 4.34), where it keeps the cooperative kernel. Beyond these grids split and coop ran within ~1%
# (bench/results/h100/probe_split_tiny.log: kernel times alone, the cooperative plan ahead by
# 0.3-2 us from 4 programs an SM, and from 1 in the backward). float16 behaves as bf16
# (probe_jax_fresh_fp16.log: forward 1.05-1.19x, 1 x 256000's backward 1.18-1.19x, 1 x 128256's
# log_softmax backward 3.48 -> 3.67 us). float64 (not measured) keeps the cooperative kernel.
SPLIT_FRESH_FWD_MAX_PER_SM = 2
SPLIT_FRESH_BWD_MAX_PER_SM = 0.5
# Those split plans take the shortest of these chunks (values, one tile a program) that keeps
# the grid within SPLIT_FRESH_FWD_MAX_PER_SM programs an SM (probe_split_tiny.log: 2048 won at
# 1 x 128256 and 1 x 256000, 4096 at 8 x 128256, 8192 at 8 x 256000 forward; 2048 won in
# nearly every backward there).
SPLIT_FRESH_CHUNKS = (2048, 4096, 8192)
# PIPE_*: the pipelined cooperative backward (kernels/softmax.py's softmax_bwd_pipe: a persistent
# grid whose programs load and publish their next chunk before they wait for the row of the one
# they hold) in place of softmax_bwd_coop. PIPE_PLANS: (itemsize, log) -> (CHUNK_N, num_warps,
# programs an SM); none for the 16-bit log_softmax, whose deferred-y cooperative kernel (DEFER_Y,
# 40 registers a thread) stayed ahead on every shape. On the H100 (bench/results/h100/
# probe_pipe*.log: PIPE2 there, the benchmark's clock, two runs each; 8192-value chunks of the
# cooperative plan an SM given as "/SM"):
#   16-bit softmax, rows on counters (more than COOP_TAG_MAX_CHUNKS chunks), 4096-value chunks at
#   4 warps, 4 an SM (96 registers): bf16 16 x 1048576 (15.5/SM) 43.6-45.1 -> 40.3-40.9 us, 8 x
#   1048576 (7.8) 24.5-25.1 -> 23.3-23.5, 12 x 1048576 34.3-35.1 -> 32.0, 64 x 1048576 150.1-150.4 ->
#   142.8-142.9, 128 x 1048576 (124) 291.0-292.9 -> 282.0-282.5 (float16 289.8-294.7 -> 284.0-284.4),
#   64 x 524288 76.5-76.6 -> 74.4-74.6, 16 x 524288 24.1-25.1 -> 23.4, 22 x 393216 24.8-25.8 ->
#   23.9-24.2; even at 128 x 524288 (62: 144.4-144.7 both); behind on 4 x 1048576 (3.9: 13.6-13.7
#   -> 14.8), 2 x 1048576 and 1 x 1048576, and on grids of 124 an SM of rows under 128 chunks (256 x
#   524288 279.5-280.5 -> 281.3, 341 x 393216 279.7-280.0 -> 282.9-283.3); with TAG behind
#   everywhere (1024 x 131072 264.1 -> 283.8, 64 x 256000 37.1-37.6 -> 39.1-39.3). Hence
#   PIPE16_MIN_PER_SM, PIPE16_MAX_PER_SM and PIPE16_ANY_GRID_CHUNKS, counters only.
#   float32 softmax, 2048-value chunks at 4 warps, 5 an SM (80-85 registers): 64 x 1048576 (62/SM)
#   285.0-286.3 -> 269.0-269.5 us, 16 x 1048576 76.5-77.0 -> 73.5-74.7, 4 x 1048576 (3.9) 24.6 ->
#   23.7, 128 x 524288 273.3-274.2 -> 267.9-268.1, 64 x 256000 (15.5, TAG) 71.2-71.7 -> 69.9-70.1,
#   64 x 128256 (7.8, TAG) 38.5-39.1 -> 37.6-37.7; behind on 2 x 1048576 (1.9) and fewer, on 8 x
#   128256 and 8 x 256000, and with TAG on 62 an SM and more (512 x 131072 266.1-266.4 -> 270.4-270.5,
#   1024 x 128256 515.5-515.8 -> 526.9-528.3, 1024 x 65536 264.7-265.5 -> 272.4-273.5; 256 x 262144
#   and 256 x 256000 even), and even at 32 x 131072 (3.9).
#   float32 log_softmax, y first loaded after the wait (DEFER_Y), 4096-value chunks at 8 warps, 4 an
#   SM (64 registers): 64 x 1048576 283.8-285.1 -> 265.7-266.2 us, 16 x 1048576 75.1-75.8 -> 70.3-70.5,
#   4 x 1048576 21.8-22.2 -> 20.7, 128 x 524288 277.6-278.4 -> 267.1-267.3, 256 x 256000 266.8-268.0
#   -> 261.9-262.1, 256 x 262144 272.1-273.5 -> 268.2-268.7, 64 x 256000 70.6-70.9 -> 69.2-69.6, 64 x
#   128256 36.9-37.3 -> 36.5; even (within 0.3%) on 512 x 131072, 1024 x 128256, 512 x 151936, 32 x
#   131072, 1024 x 65536 and 4096 x 32000; behind on 2 x 1048576 and 8 x 128256 and 8 x 256000.
# Hence PIPE32_MIN_PER_SM, PIPE32_MIN_CHUNKS and (softmax with TAG) PIPE32_TAG_MAX_PER_SM. The wait
# needs rows of at most 2 * min(grid, num_sms * max(1, 8 // num_warps)) chunks (kernels/softmax.py's
# comment above softmax_bwd_pipe; every PIPE_PLANS plan meets it wherever the cooperative kernel's
# one chunk an SM holds). float64 never takes it.
# Tried and not taken (probe_pipe.log): PIPE, which took the next ticket at the start of each
# step and left each row (a second arrival, whose result it waits for), won only at bf16 16 x
# 1048576's softmax (45.0 -> 41.7 us); and (probe_reload_dy.log) softmax_bwd_coop holding y alone
# and loading dy again after the wait (RELOAD_DY: 48 registers instead of 64 at bf16 16 x 1048576)
# lost everywhere, by 1-16%.
PIPE_PLANS = {(2, False): (4096, 4, 4), (4, False): (2048, 4, 5), (4, True): (4096, 8, 4)}
PIPE16_MIN_PER_SM = 6
PIPE16_MAX_PER_SM = 32
PIPE16_ANY_GRID_CHUNKS = 128
PIPE32_MIN_PER_SM = 3
PIPE32_MIN_CHUNKS = 16
PIPE32_TAG_MAX_PER_SM = 16


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
             zeroed one will do), "init" the initial contents of the "zeros" or "sync" output
             of the same name that follows: a kernel argument not read, which the torch
             launcher fills with that output itself and the JAX adapter with zeros made by
             XLA, aliased to it (`coop_outputs`). A name an earlier launch of the plan
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


def row_segments(N: int) -> tuple[int, int]:
    """(BLOCK_N, TAIL_N): a row as one power of two, or a power of two and a short tail.

    N = 16385 -> (16384, 1) rather than 32768 lanes, which measured 2505 vs 2153 GB/s (fp32
    forward, H100). A long tail measured slower than one block (N = 3000 as 2048 + 1024:
    2% slower than 4096), so a tail is used only up to 1/16 of the block.
    """
    whole = triton.next_power_of_2(N)
    main = whole // 2
    tail = triton.next_power_of_2(N - main) if whole > N else 0
    return (main, tail) if 0 < tail <= main // 16 else (whole, 0)


def peel(N: int, itemsize: int, align: int, strides_equal: bool, force: bool | None = None) -> bool:
    """Whether rows are cut into head, 16-byte-aligned body and tail (kernels' PEEL).

    When N or a stride is not a multiple of 16 bytes (`align`, in values, below 16 / itemsize),
    rows start unaligned and masks are not uniform over a vector, so every value would move
    alone. The head and tail are computed from the row's own start, which needs one stride
    for every tensor of the launch (`strides_equal`). `force` overrides (tests, benchmark).
    """
    if not strides_equal:
        return False
    if force is not None:
        return force
    if align >= 16 // itemsize:
        return False  # aligned already
    return itemsize >= 4 or N >= PEEL_MIN_N or row_segments(N)[1] > 0


def _rows_tiling(M: int, N: int, forward: bool = True, vec: int = 0, log: bool = False, itemsize: int = 4,
                 aligned: bool = True):
    """BLOCK_M, BLOCK_N, TAIL_N, num_warps and grid for the rows family; `vec` > 0: PEEL rows
    of VEC = `vec` values a 16-byte vector (a body of at most N // vec * vec, 2 * vec edges);
    `log`: log_softmax (its backward keeps more warps, see PEEL_MIN_N); `itemsize`: bytes a
    value (16-bit forward rows that fill few of their lanes hold more rows, SPARSE_ROWS_FILL, and
    so does the 16-bit log_softmax backward in ROWS_LOG_BWD16_DOUBLE_LANES lanes; the forward of
    short full rows runs on fewer warps, ROWS_SHORT_FWD_LANES, and some full rows in smaller
    programs, ROWS_BWD_1KB_N, where `aligned`: rows that start 16-byte aligned)."""
    BLOCK_N, TAIL_N = row_segments(N) if not vec else (triton.next_power_of_2(max(1, N // vec * vec)), 2 * vec)
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
    sparse = N < SPARSE_ROWS_FILL * lanes and SPARSE_ROWS_LANES[0] <= lanes <= SPARSE_ROWS_LANES[1]
    if itemsize == 2 and not vec and (sparse if forward else log and lanes == ROWS_LOG_BWD16_DOUBLE_LANES):
        BLOCK_M = min(2 * BLOCK_M, triton.next_power_of_2(M))
    # A peeled row: half the warps, the same rows (measured; see PEEL_MIN_N).
    if (vec >= 8 or (vec == 4 and num_warps >= 16)) and not (log and not forward and BLOCK_N > 8192):
        num_warps //= 2
    return BLOCK_M, BLOCK_N, TAIL_N, num_warps, (triton.cdiv(M, BLOCK_M),)


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


def _coop_cvt_x2(packed: bool, log: bool, poly: bool, tag: dict | None, peeled: bool, programs: int,
                 num_sms: int, register_cap: bool = True) -> tuple[bool, int | None]:
    """CVT_X2 of the cooperative forward and the register cap it takes (Triton's maxnreg, or None; see
    COOP_CVT_X2): the packed softmax (POLY's under COOP_X2_CAP_REGS) and the packed log_softmax, on
    counters (`tag` None) or in TAG's chunks (`tag`: `_coop_tag_fwd`'s): wide ones under
    COOP_X2_CAP_REGS, COOP_FWD16_WARPS's of peeled rows, and COOP_WARPS's in grids of at most
    COOP_X2_FEW_MAX_PER_SM programs an SM; never COOP_FWD16_WARPS's of unpeeled rows. Where it needs
    the cap and the launcher cannot pass it (`register_cap` False), not at all."""
    if not (COOP_CVT_X2 and packed):
        return False, None
    if poly or (log and tag is not None and tag.get("wide")):
        return register_cap, COOP_X2_CAP_REGS if register_cap else None
    if not log or tag is None:
        return True, None
    if tag.get("warps") == COOP_FWD16_WARPS:
        return peeled, None
    return programs <= COOP_X2_FEW_MAX_PER_SM * num_sms, None


def _coop_tag_fwd(N: int, itemsize: int, words: bool, peeled: bool, programs: int, num_sms: int,
                  log: bool) -> dict | None:
    """TAG of the cooperative forward: the chunks it takes, as `_coop_launches`' keyword
    arguments (wide, narrow, warps) and `pack=False` where 16-bit rows of whole words are not held
    packed, or None where the forward waits on counters instead.
    float32 rows, peeled or not, from COOP_TAG_FWD32_MIN_PER_SM programs an SM (narrow chunks for
    the fewest programs, COOP_NARROW_MIN_SMS_PER_PROGRAM); 16-bit peeled rows, and rows not of whole
    words, from COOP_TAG_FWD_MIN_PER_SM, rows of whole words (`words`, peeled or not) at COOP_FWD16_WARPS
    warps, but the log_softmax's (`log`) in a grid of at least COOP_FWD16_LOG_WIDE_MIN_PER_SM programs
    an SM in wide ones, and never rows of more than COOP_TAG_MAX_CHUNKS such chunks; unpeeled rows of
    whole words at every grid, in grids of few programs as COOP_TAG_FWD16_FEW_MAX_PER_SM (the log_softmax)
    and COOP_TAG_FWD16_SM_FEW_MAX_PER_SM (the softmax) say; float64 never (as every TAG). Rows of at most
    COOP_TAG_MAX_CHUNKS chunks as TAG takes them, at most one an SM as every cooperative launch
    (_coop_launches)."""
    if itemsize == 4:
        take, min_per_sm = dict(narrow=_coop_narrow(programs, itemsize, num_sms)), COOP_TAG_FWD32_MIN_PER_SM
    elif not words:
        take, min_per_sm = {}, COOP_TAG_FWD_MIN_PER_SM
    elif not peeled and programs < num_sms * (COOP_TAG_FWD16_FEW_MAX_PER_SM if log
                                              else COOP_TAG_FWD16_SM_FEW_MAX_PER_SM):  # few programs: 8 warps
        take = {} if log else dict(pack=False)
        min_per_sm = COOP_TAG_FWD16_LOG_MIN_PER_SM if log else COOP_TAG_FWD16_FEW_MIN_PER_SM
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
          num_sms: int) -> tuple | None:
    """PIPE_PLANS's (CHUNK_N, num_warps, programs an SM) where the pipelined backward takes the place
    of the cooperative plan (M rows of `n_chunks` chunks of COOP_CHUNK_N values, waiting through
    TAG or counters; see PIPE_*), else None: rows `_pipe_rows` takes."""
    plan = PIPE_PLANS.get((itemsize, log))
    if plan is None or not _pipe_rows(itemsize, peeled, align):
        return None
    per_sm = M * n_chunks / num_sms
    if itemsize == 2:
        pays = (not tag and per_sm >= PIPE16_MIN_PER_SM
                and (per_sm <= PIPE16_MAX_PER_SM or n_chunks >= PIPE16_ANY_GRID_CHUNKS))
    else:
        pays = (per_sm >= PIPE32_MIN_PER_SM and n_chunks >= PIPE32_MIN_CHUNKS
                and (log or not tag or per_sm <= PIPE32_TAG_MAX_PER_SM))
    return plan if pays else None


def _pipe_launches(M: int, N: int, strides: tuple, itemsize: int, log: bool, align: int, plan: tuple,
                   num_sms: int) -> tuple[Launch, ...]:
    """The pipelined backward (softmax_bwd_pipe) with `plan` (CHUNK_N, num_warps, programs an SM):
    one launch (PHASE 3) or, interpreted, two (PHASE 1 and 2), as `_coop_launches`. Raises
    ValueError where a row has more chunks than its wait allows (2 * min(grid, num_sms * max(1, 8
    // num_warps)): kernels/softmax.py's argument above softmax_bwd_pipe)."""
    CHUNK_N, warps, per_sm = plan
    n_chunks = triton.cdiv(N, CHUNK_N)
    grid = (min(M * n_chunks, per_sm * num_sms),)
    if n_chunks > 2 * min(grid[0], num_sms * max(1, 8 // warps)):
        raise ValueError(f"N={N} needs {n_chunks} chunks of {CHUNK_N}, more than the pipelined kernel's wait allows "
                         f"on {num_sms} SMs at {warps} warps: use the 'coop' family")
    meta = dict(CHUNK_N=CHUNK_N, BLOCK_C=triton.next_power_of_2(n_chunks), VEC=16 // itemsize, LOG=log, ALIGN=align,
                PACK=itemsize == 2, BITS=itemsize == 2, DEFER_Y=log, num_warps=warps, num_stages=1)
    outputs = coop_outputs((M, n_chunks), (M + 2,), "zeros", "dx", (M, N))
    phases = (1, 2) if kernels.INTERPRETED else (3,)
    return tuple(Launch("softmax_bwd_pipe", ("y", "dy"), (M, N, *strides, n_chunks), outputs, grid,
                        tuple({**meta, "PHASE": p}.items())) for p in phases)


def _coop_launches(kernel: str, inputs: tuple, scalars: tuple, M: int, N: int, itemsize: int, num_sms: int,
                   acc: dict, part_rows: int, out: str, wide: bool = False,
                   narrow: bool = False, warps: int | None = None,
                   maxnreg: int | None = None, chunk: int | None = None) -> tuple[Launch, ...]:
    """The cooperative kernel: one program per chunk (grid M * n_chunks), n_chunks appended
    to `scalars`, `part_rows` partials a chunk, chunks as `_coop_chunks(N, itemsize, wide,
    narrow)` (or of `chunk` values where given), `warps` warps a program (default COOP_WARPS,
    read at the call), compiled under Triton's `maxnreg` register cap where given.
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
    meta = dict(CHUNK_N=CHUNK_N, BLOCK_C=triton.next_power_of_2(n_chunks), TICKET=ticket, **acc,
                num_warps=warps or COOP_WARPS, num_stages=1, **({"maxnreg": maxnreg} if maxnreg else {}))
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
    """The outputs of a cooperative launch, in its kernel's order: count's initial contents ("init":
    the kernel's count_init_ptr, not read), part ("acc": the partials), count (int32 scratch, `count_kind`
    "zeros" or "sync") and `out` ("io"). A launcher that must zero count on every call (the JAX adapter)
    aliases zeros made by its framework through the "init" argument (see kernels/softmax.py's docstring)."""
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


@functools.lru_cache(maxsize=4096)
def plan_forward(M: int, N: int, stride_xm: int, stride_ym: int, dtype: str, log: bool,
                 num_sms: int, force: str | None = None, force_peel: bool | None = None,
                 counters_per_call: bool = False, register_cap: bool = True) -> tuple[Launch, ...]:
    """Launches computing y = softmax(x) (log_softmax if `log`) over rows of an M x N view.

    `force` picks a family ("rows", "coop", "online", "split") and `force_peel` the PEEL
    choice of the rows and coop families regardless of the heuristics: for tests and the
    benchmark. `counters_per_call`: the launcher zeroes "zeros" and "sync" outputs on every
    call (the JAX adapter), not once (torch): see SPLIT_FRESH_FWD_MAX_PER_SM. `register_cap`: the
    launcher can pass Triton's maxnreg option (COOP_X2_CAP_REGS; see plan_backward). M and N must be
    >= 1.
    """
    itemsize = ITEMSIZE[dtype]
    acc = dict(LOG=log, ALIGN=alignment(N, stride_xm, stride_ym), ACC_FP64=dtype == "float64")
    fam = force or family(M, N, itemsize, num_sms, acc["ALIGN"] * itemsize >= 16)
    fresh = _split_fresh(M, N, itemsize, num_sms, True, True) if counters_per_call and fam == "coop" and not force \
        else None  # the split plan for the JAX adapter
    fam = "split" if fresh else fam
    vec = 16 // itemsize
    if fam in ("rows", "coop"):
        peeled = peel(N, itemsize, acc["ALIGN"], stride_xm == stride_ym, force_peel)
        acc = dict(PEEL=peeled, VEC=vec, **acc)
    if fam == "rows":
        BLOCK_M, BLOCK_N, TAIL_N, num_warps, grid = _rows_tiling(M, N, vec=vec if peeled else 0, log=log,
                                                              itemsize=itemsize, aligned=acc["ALIGN"] >= vec)
        meta = dict(BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, TAIL_N=TAIL_N, **acc, **_rows_m(M, BLOCK_M, itemsize, log, True),
                    num_warps=num_warps, num_stages=1)
        return (Launch("softmax_fwd_rows", ("x",), (M, N, stride_xm, stride_ym),
                       (("y", (M, N), "io"),), grid, tuple(meta.items())),)
    if fam == "coop":
        # TAG where it pays (COOP_TAG_FWD_MIN_PER_SM, COOP_TAG_FWD16_*FEW_MAX_PER_SM), packed where
        # rows are whole words, in the chunks of COOP_FWD16_WARPS (summed in halves) or wide ones.
        # Else, on counters: rows of 33 to 64 chunks in COOP_FWD16_WARPS's chunks with keyed partials
        # (COOP_SPLIT_SUM_MAX_CHUNKS), else unpacked wide chunks (COOP_WIDE_MAX_N), else PACK where it pays
        # (COOP_FWD_UNPACKED_PER_SM), packed in wide chunks where those pay (COOP_PACK_WIDE_MIN_PER_SM);
        # keyed partials where they pay (those chunks and the wide packed ones, COOP_SENT32_*), and POLY
        # in the wide packed softmax (COOP_POLY); LATE_LEAVE by the grid
        # of the chunks taken, never for the unpacked wide chunks, for log_softmax only packed
        # (COOP_LATE_LEAVE), but with keyed partials always (the float32 softmax: by the grid);
        # narrow chunks for grids of a few programs (COOP_NARROW_MIN_SMS_PER_PROGRAM), which take
        # none of the others.
        programs = M * _coop_chunks(N, itemsize)[1]
        words = _whole_words(itemsize, peeled, acc["ALIGN"])
        tag = _coop_tag_fwd(N, itemsize, words, peeled, programs, num_sms, log)  # the chunks TAG takes, if it does
        if tag is not None:  # SPLIT_SUM: see COOP_FWD16_WARPS
            take = {k: v for k, v in tag.items() if k != "pack"}
            acc.update(PACK=words and tag.get("pack", True), LATE_LEAVE=False, TAG=True,
                       SPLIT_SUM=take.get("warps") == COOP_FWD16_WARPS, SENT=False, POLY=False)
            acc["CVT_X2"], cap = _coop_cvt_x2(acc["PACK"], log, False, take, peeled, programs, num_sms,
                                             register_cap)
            return _coop_launches("softmax_fwd_coop", ("x",), (M, N, stride_xm, stride_ym), M, N, itemsize,
                                  num_sms, acc, 2, "y", maxnreg=cap, **take)
        split = _coop_split_sum(N, itemsize, words, peeled, programs, num_sms)
        acc.update(TAG=False, SPLIT_SUM=split)
        wide = not split and _coop_wide(M, N, itemsize, log, peeled, num_sms)
        acc["PACK"] = split or (not wide and _coop_pack_fwd(programs, words, num_sms))
        packed_wide = not split and acc["PACK"] and _coop_pack_wide(programs, peeled, num_sms)
        taken = M * _coop_chunks(N, itemsize, wide or packed_wide)[1]
        acc["SENT"] = _coop_sent(programs, itemsize, log, packed_wide or split, num_sms)
        acc["POLY"] = _coop_poly(log, packed_wide)
        acc["CVT_X2"], cap = _coop_cvt_x2(acc["PACK"], log, acc["POLY"], None, peeled, programs, num_sms,
                                         register_cap)
        acc["LATE_LEAVE"] = not wide and (_coop_late_leave(taken, log and not acc["PACK"], num_sms)
                                          or (acc["SENT"] and (log or itemsize == 2)))
        return _coop_launches("softmax_fwd_coop", ("x",), (M, N, stride_xm, stride_ym), M, N, itemsize,
                              num_sms, acc, 2, "y", wide=wide or packed_wide,
                              narrow=not split and _coop_narrow(programs, itemsize, num_sms),
                              warps=COOP_FWD16_WARPS if split else None, maxnreg=cap)
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
                  register_cap: bool = True) -> tuple[Launch, ...]:
    """Launches computing dx from y and dy over rows of an M x N view (see plan_forward; `force`
    may also be "pipe", the pipelined kernel of PIPE_PLANS whatever the grid). `register_cap`: the
    launcher can pass Triton's maxnreg option (COOP_CAP32_REGS): Triton's own launcher, and the JAX
    adapter's through its hook on jax-triton."""
    itemsize = ITEMSIZE[dtype]
    acc = dict(LOG=log, ALIGN=alignment(N, stride_ym, stride_dym, stride_dxm), ACC_FP64=dtype == "float64")
    fam = force or family(M, N, itemsize, num_sms, acc["ALIGN"] * itemsize >= 16)
    if fam == "coop":  # the cooperative kernel's grid, chunks and whether it waits through TAG
        n_chunks = _coop_chunks(N, itemsize)[1]
        programs = M * n_chunks
        narrow = _coop_narrow(programs, itemsize, num_sms)
        tag = _coop_tag(_coop_chunks(N, itemsize, narrow=narrow)[1], itemsize)
    # The split plan for the JAX adapter: the log_softmax's, or the softmax's on counters
    fresh = (_split_fresh(M, N, itemsize, num_sms, False, log or not tag)
             if counters_per_call and fam == "coop" and not force else None)
    fam = "split" if fresh else fam
    vec = 16 // itemsize
    if fam in ("rows", "coop", "pipe"):
        peeled = peel(N, itemsize, acc["ALIGN"], stride_ym == stride_dym == stride_dxm, force_peel)
        acc = dict(PEEL=peeled, VEC=vec, **acc)
    # The pipelined kernel where it pays over the cooperative one (PIPE_*), or where forced ("pipe":
    # PIPE_PLANS's plan for the dtype and op, whatever the grid).
    whole = fam == "pipe" and _pipe_rows(itemsize, peeled, acc["ALIGN"])
    pipe = (_pipe(M, itemsize, log, n_chunks, tag, peeled, acc["ALIGN"], num_sms) if fam == "coop" and not force
            else PIPE_PLANS.get((itemsize, log)) if whole else None)
    if pipe:
        return _pipe_launches(M, N, (stride_ym, stride_dym, stride_dxm), itemsize, log, acc["ALIGN"], pipe, num_sms)
    if fam == "pipe":
        why = "" if whole else " on peeled rows or 16-bit rows not of whole words"
        raise ValueError(f"force='pipe': no pipelined plan for {dtype} {'log_softmax' if log else 'softmax'}{why} "
                         "(dispatch.PIPE_PLANS)")
    if fam == "rows":
        BLOCK_M, BLOCK_N, TAIL_N, num_warps, grid = _rows_tiling(M, N, forward=False, vec=vec if peeled else 0,
                                                              log=log, itemsize=itemsize, aligned=acc["ALIGN"] >= vec)
        meta = dict(BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, TAIL_N=TAIL_N, **acc, **_rows_m(M, BLOCK_M, itemsize, log, False),
                    num_warps=num_warps, num_stages=1)
        return (Launch("softmax_bwd_rows", ("y", "dy"), (M, N, stride_ym, stride_dym, stride_dxm),
                       (("dx", (M, N), "io"),), grid, tuple(meta.items())),)
    if fam == "coop":
        # See COOP_PACK_MIN_CHUNKS (and _PEELED_), COOP_UNPACKED_PER_SM, COOP_DEFER_Y (which packs whole words
        # whatever the chunks, and unpacks unpeeled bfloat16 ones by bit operations: BITS),
        # COOP_RELOAD, COOP_LATE_LEAVE (not with TAG), COOP_NARROW_MIN_SMS_PER_PROGRAM,
        # COOP_TAG_MAX_CHUNKS and COOP_CAP32_REGS (float32 rows deferred under a register cap).
        words = _whole_words(itemsize, peeled, acc["ALIGN"])
        cap = register_cap and _coop_cap32(n_chunks, itemsize, log, peeled, tag, programs, num_sms)
        acc["DEFER_Y"] = _coop_defer_y(programs, itemsize, log, num_sms) or cap
        acc["PACK"] = _coop_pack(programs, n_chunks, words, peeled, num_sms) or (acc["DEFER_Y"] and words)
        acc["RELOAD"] = peeled and itemsize == 2 and not acc["PACK"]
        acc["LATE_LEAVE"] = not tag and _coop_late_leave(programs, log, num_sms)
        acc["BITS"] = acc["DEFER_Y"] and not peeled and itemsize == 2
        acc["TAG"] = tag
        return _coop_launches("softmax_bwd_coop", ("y", "dy"), (M, N, stride_ym, stride_dym, stride_dxm), M, N,
                              itemsize, num_sms, acc, 1, "dx", narrow=narrow, maxnreg=COOP_CAP32_REGS if cap else None)
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
# The kernels read x (y, dy) by 16-byte vectors, only those holding a kept value. Reading the
# kept values alone, one load a value, and reading every vector were measured before that on the
# H100 (bench/results/h100/probe_where_skip*.log, probe_where_padding.log, the benchmark's clock, us,
# alone / every vector): a causal (2048, 2048) mask, half the values kept, over bfloat16 16 x 2048 x
# 2048 took 97.5 / 95.8 forward and 119.5 / 143.5 backward (log_softmax 97.1 / 96.7, 124.2 / 143.6),
# over float32 8 x 2048 x 2048 80.4 / 99.7 and 106.8 / 143.4 (80.9 / 99.8, 107.7 / 143.6); a padding
# mask (1, 1, 2048) keeping 90% over the same arrays bfloat16 103.0 / 92.4 and 160.5 / 132.4, float32
# 92.9 / 90.4 and 151.9 / 132.8; a vocabulary mask (1, 32000) keeping 90% over 4096 x 32000 forward:
# bfloat16 322.8 / 228.9 (log_softmax 313.3 / 227.6), float32 486.6 / 356.8. Reading the vectors
# that hold a kept value (probe_where.log, probe_where_2.log) took 88.2 and 101.9 (bfloat16 causal),
# 82.4 and 104.4 (float32 causal), 91.3 and 132.5 (bfloat16 padding), 211.0 (bfloat16 vocabulary)
# and 371.3 (float32), where jax.nn's where= took 163.8 / 262.1, 142.9 / 241.6, 172.3 / 262.2, 413.4
# and 702.3.


# Rows past those limits take the cooperative where kernels (kernels/where.py's *_coop_where): a row
# in chunks of WHERE_COOP_CHUNK_N values (by itemsize), one a program at WHERE_COOP_WARPS warps, for
# rows of at most num_sms chunks (the bound of the wait, `_coop_launches`); longer rows are left to
# XLA. They wait through TAG (float32 partials of rows of at most COOP_TAG_MAX_CHUNKS chunks), else
# on counters, and read every vector of a chunk while the mask is read (WHERE_COOP_SKIP off: the x
# load then needs no mask load before it). The softmax backward of those rows is not planned (None):
# the JAX adapter runs the unmasked one from saved y there, exact as masked-out y is 0, and faster
# (bfloat16 1024 x 128256: 259.5 us against 323.8-357.8 for these kernels' tilings).
# On the H100 (bench/results/h100/probe_where_long*.log, the benchmark's JAX clock, us; vocabulary
# masks (1, N) keeping 90%; softmax / log_softmax forward, log_softmax backward):
#   tiling                    bf16 1024 x 128256      bf16 64 x 256000     fp32 512 x 128256     fp32 64 x 256000
#   8192 at 8 warps, counters 346.3 / 347.6, 392.0   -                    223.8 / 223.7, 277.9  -
#   4096 at 8, counters       324.7 / 328.1, 358.2   49.4 / 49.1, 50.4    216.1 / 216.6, 283.5  61.5 / 61.4, 77.3
#   4096 at 8, TAG            320.3 / 318.3, 324.4   48.8 / 49.8, 50.6    219.3 / 217.9, 275.1  61.7 / 61.4, 76.1
#   8192 at 16, TAG           269.0 / 342.4, 341.7   40.5 / 40.9, 46.2    233.0 / 190.4, 258.6  62.4 / 54.0, 69.5
#   2048 at 4, counters       430.7 / 431.4, 441.9   -                    262.2 / 261.1, 308.3  -
#   4096 at 8, SKIP           333.1 / 338.6, 349.5   -                    274.4 / 297.3, 329.6  -
#   jax.nn's where=           385.3 / 379.1, 426.2   57.4 / 56.5, 58.4    353.3 / 353.3, 388.7  98.4 / 98.3, 103.0
# The adapter before (XLA's forward, XLA's log_softmax backward): 387.6 / 382.7, 346.6 (bfloat16
# 1024 x 128256) and 57.7 / 56.8, 58.2 (64 x 256000) in probe_where_long_first.log, whose own
# kernel read x as SKIP does. 8192 at 16 warps was best on 7 of the 10 figures. Taken, it ran as
# above (probe_where_long.log: 266.9 / 342.4, 338.8 bfloat16 1024 x 128256), and the log_softmax
# backward of 4096 x 32000, cooperative now, 321.8 us bfloat16 and 511.5 float32 against 348.3 and
# 686.9 for XLA's before and 430.1 and 770.7 for jax.nn's (probe_where_vocab_coop.log).
# WHERE_COOP_MAXNREG: the 16-bit forward under Triton's maxnreg cap of 40 registers a thread (54-61
# uncapped, Triton 3.6, sm_90, no spill capped: 3 programs an SM of 16 warps, not 2), where the
# launcher passes it (`register_cap`, as plan_forward's): bfloat16 1024 x 128256's log_softmax 342.2 ->
# 268.9 us, its softmax 267.7 -> 266.5, 64 x 256000's 40.8 -> 40.3 and 40.4 -> 40.0
# (probe_where_long_cap.log; 4096-value chunks at 8 warps capped alike: 257.0 and 264.0, but 42.9
# and 41.2 at 64 x 256000). The float32 forward and the backwards spill at 40 (16-48 bytes a thread).
# The 16-bit figures stay below the unmasked cooperative kernels' (~2,900 GB/s on these shapes
# through PACK and more, kernels/softmax.py): these hold their values in float32 and the mask beside.
WHERE_COOP_CHUNK_N = {2: 8192, 4: 8192, 8: 4096}
WHERE_COOP_WARPS = 16
WHERE_COOP_SKIP = False
WHERE_COOP_TAG = True
WHERE_COOP_MAXNREG = {2: 40}


@functools.lru_cache(maxsize=4096)
def plan_where(M: int, N: int, dtype: str, log: bool, forward: bool, row_div: int, row_mod: int,
               row_table: bool, w_cols: bool, num_sms: int, register_cap: bool = True) -> tuple[Launch, ...] | None:
    """The launches of a masked softmax (log_softmax if `log`) over a contiguous M x N view, forward
    (inputs "x", "where", "where_rows"; output "y") or backward ("y", "dy", "where", "where_rows";
    "dx"). Row m reads mask row (m // row_div) % row_mod, or where_rows[m] if `row_table`;
    `w_cols`: the mask holds N values a row, else one (kernels/where.py).
    Rows of at most WHERE_MAX_N values (backward: WHERE_BWD_MAX_N; float64: MAX_ROWS_BLOCK_N): one
    launch of the rows kernel, a row in next_power_of_2(N) lanes, tiled as the rows family
    (`_rows_tiling`) without its aligned-row rules, which were measured unmasked. Longer rows: the
    cooperative kernel in WHERE_COOP_CHUNK_N-value chunks, planned for `num_sms` SMs (one launch;
    two under Triton's interpreter, as `_coop_launches`), or None where a row needs more than
    num_sms chunks, and for the softmax backward (the unmasked one serves, see WHERE_COOP_*);
    `register_cap`: the launcher can pass Triton's maxnreg (WHERE_COOP_MAXNREG).
    VEC: values a 16-byte vector (fewer for rows shorter than that)."""
    itemsize = ITEMSIZE[dtype]
    if forward:
        kernel, inputs, strides, out = "softmax_fwd_rows_where", ("x", "where", "where_rows"), (N, N), "y"
    else:
        kernel, inputs, strides, out = "softmax_bwd_rows_where", ("y", "dy", "where", "where_rows"), (N, N, N), "dx"
    scalars = (M, N, *strides, row_div, row_mod)
    meta = dict(LOG=log, ALIGN=alignment(N), ACC_FP64=dtype == "float64", ROW_TABLE=row_table, W_COLS=w_cols)
    if N > min(WHERE_MAX_N if forward else WHERE_BWD_MAX_N, MAX_ROWS_BLOCK_N[itemsize]):
        chunk = min(WHERE_COOP_CHUNK_N[itemsize], triton.next_power_of_2(N))
        n_chunks = triton.cdiv(N, chunk)
        if n_chunks > num_sms or not (forward or log):
            return None
        tag = WHERE_COOP_TAG and dtype != "float64" and n_chunks <= COOP_TAG_MAX_CHUNKS  # float32 partials
        return _coop_launches(kernel.replace("_rows_", "_coop_"), inputs, scalars, M, N, itemsize, num_sms,
                              dict(VEC=min(16 // itemsize, chunk), **meta, SKIP=WHERE_COOP_SKIP, TAG=tag),
                              2 if forward else 1, out, warps=WHERE_COOP_WARPS, chunk=chunk,
                              maxnreg=WHERE_COOP_MAXNREG.get(itemsize) if forward and register_cap else None)
    BLOCK_M, BLOCK_N, _, num_warps, grid = _rows_tiling(M, triton.next_power_of_2(N), forward, log=log,
                                                        itemsize=itemsize, aligned=False)
    meta = dict(BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, VEC=min(16 // itemsize, BLOCK_N), **meta, num_warps=num_warps,
                num_stages=1)
    return (Launch(kernel, inputs, scalars, ((out, (M, N), "io"),), grid, tuple(meta.items())),)


# --------------------------------------------------------------------------------------
# The softmax over a middle axis (kernels/columns.py): x as (B, N, T), reduced over N, T
# contiguous. A program holds BLOCK_N x BLOCK_T values: BLOCK_T neighbouring columns, each
# reduced position's BLOCK_T values read as one contiguous run.
# --------------------------------------------------------------------------------------
# COLS_MIN_RUN: a run is at least this many values where T allows (64 bytes of float32, one
# 32-byte sector of a 16-bit type). A column of N <= COLS_MAX_ONE_TILE / COLS_MIN_RUN (1024) is held
# whole (ONE_TILE) in BLOCK_T = COLS_TILE_SHORT // BLOCK_N columns where BLOCK_N <= COLS_SHORT_N, else
# COLS_TILE // BLOCK_N, at COLS_WARPS warps, more where a thread would hold more than
# COLS_MAX_PER_THREAD values; longer columns loop over N in COLS_TILE_SHORT-value steps of
# COLS_RUN_BYTES runs (a 128-byte line). BLOCK_T is halved (not below COLS_MIN_RUN) to keep
# COLS_MIN_PROGRAMS_PER_SM programs an SM. On the H100 (bench/results/h100/probe_cols_1.log: float32
# and bf16, (BLOCK_T, warps) variants of one-tile plans, the benchmark's clock) 8 warps lost to 4 on
# short columns: float32 16 x 21 x 262144 forward 1,166 GB/s in 128 columns at 8 warps, 2,913 at 4
# (64 at 4: 2,916; bf16 592 -> 1,144), 1024 x 32 x 2048 1,708 -> 2,987 (bf16 887 -> 1,693), the
# backward 2,799 -> 2,983 and 3,033 -> 3,033; at 150 x 65536 (BLOCK_N 256) 32 columns at 4 warps ran
# 2,819 / 2,882 forward / backward (bf16 2,329 / 2,857) against 2,710 / 2,631 in 16 at 8 (bf16 1,653
# / 2,466). 16-bit tiles of BLOCK_N <= 128 take COLS16_*'s rule instead.
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
# COLS16_*: a 16-bit one-tile forward of BLOCK_N <= COLS16_MAX_N (a backward of BLOCK_N <=
# COLS16_BWD_MAX_N) takes 1 warp where BLOCK_N <= COLS16_ONE_WARP_N, else 2, and the BLOCK_T that gives
# a thread COLS16_VALUES values. The cause (bench/results/h100/probe_cols_fwd.log): the layout Triton
# gives a tile of fewer than 8 x 32 x num_warps 16-bit columns puts warps along N, so each reduction
# over N crosses warps through shared memory, whose reads and writes of a reduced column conflict
# (Triton's scratch holds a column's partials at a num_warps x 4-byte stride); the forward reduces
# twice, and a 16-bit value gives it half the time a float32 one does. Skipping the max alone took
# bf16 1024 x 32 x 2048 from 1,695 to 2,926 GB/s (a copy of the tile: 2,944). One warp reduces by
# shuffles only. bf16 forward / backward, dispatch's tile before -> this rule (probe_cols_sweep16.log,
# probe_cols_sweep.log, probe_cols_fwd.log; 128 MB tensors): N = 8 1,693 -> 2,918 / 3,031 -> 3,007,
# N = 16 909 -> 2,946 / 2,430 -> 3,012, N = 21 1,140 -> 2,918 / 2,795 -> 2,988, N = 29 1,536 -> 2,890
# / 3,008 -> 2,967, N = 64 2,752 -> 2,917 (backward kept: 3,006), N = 100 2,535 -> 2,853 (3,008
# kept; 2 warps: 2,881). Float32 was at the copy bandwidth with either (probe_cols_sweep.log), and
# a BLOCK_N of 256 lost with fewer warps (bf16 N = 150: 2,376 at 4, 2,135 at 2).
COLS16_MAX_N = 128
COLS16_BWD_MAX_N = 32
COLS16_ONE_WARP_N = 32
COLS16_VALUES = 64
# COLS16_MIN_VALUES: a wider 16-bit one-tile forward keeps the general rule's warps, fewer where a
# thread would hold fewer than COLS16_MIN_VALUES values (a narrow T): bf16 65536 x 256 x 4 (4
# columns) 2,573 GB/s at 4 warps, 2,964 at 2, 2,947 at 1 (probe_cols_wide16.log; backward: 3,037
# at 4, kept). Wider tiles of BLOCK_N 256 to 1024 lost with fewer warps or more (the same log).
COLS16_MIN_VALUES = 16
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
                    forward: bool = True):
    """(BLOCK_N, BLOCK_T, ONE_TILE, num_warps) of the one-tile or looped plan for a (B, N, T)
    softmax over N. `force`: "one_tile", else the loop, regardless of N (tests)."""
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
        if one and forward and itemsize <= 2:  # COLS16_MIN_VALUES
            num_warps = max(1, min(num_warps, BLOCK_N * BLOCK_T // (32 * COLS16_MIN_VALUES)))
    return BLOCK_N, BLOCK_T, one, num_warps


# Long columns (N past one tile): three plans.
# * COLS_COOP_*: cooperative (kernels/columns.py's softmax_fwd_coop_cols, softmax_bwd_coop_cols): one
#   read and one write, as the rows' coop family. A program holds CHUNK_N positions of a group of
#   BLOCK_T columns (128-byte runs, COLS_COOP_RUN_BYTES) in registers, COLS_COOP_VALUES values
#   (float64: half) at COLS_COOP_WARPS warps; a forward of more than COLS_COOP_FWD_MAX_CHUNKS chunks
#   takes twice the values a program. Columns of more chunks than SMs (the wait needs at most one an
#   SM: `_coop_launches`) and 16-bit forwards (COLS16_COOP_FWD) take one of the next two.
# * COLS_SPLIT_*: in few groups (fewer than COLS_SPLIT_PROGRAMS_PER_SM an SM), N is cut into chunks
#   of at least COLS_SPLIT_MIN_STEPS loop steps, at most COLS_SPLIT_MAX_CHUNKS, a program a chunk: a
#   first kernel writes each chunk's partials, a second combines them and writes its chunk, in
#   reverse order (x read twice, as the loop, but on every SM). 128-byte runs (COLS_RUN_BYTES, not
#   halved for the grid), BLOCK_N = COLS_TILE_SHORT // BLOCK_T, COLS_SPLIT_WARPS warps
#   (COLS_SPLIT_BWD_WARPS backward).
# * otherwise the loop (`_columns_tiling`): a program a group, N walked twice.
# The loop had the GPU idle at few groups: bf16 64 x 4096 x 64 made 128 programs, 8192 x 8192 over
# dim 0 512. On the H100 (bench/results/h100/probe_cols_coop2.log, probe_cols_coop.log,
# probe_cols_split.log; GB/s forward / backward), loop -> dispatch now:
#   float32 64 x 4096 x 64          1,630 / 1,816 -> 2,199 / 2,496 (coop)
#   float32 1 x 8192 x 8192         1,663 / 1,765 -> 2,313 / 2,448 (coop)
#   float32 16 x 4096 x 1024        1,576 / 1,747 -> 2,501 / 2,652 (coop)
#   float32 4 x 32768 x 512         1,150 / 1,453 -> 2,204 (coop, 16384 values) / 2,187 (coop)
#   bf16 64 x 4096 x 64             1,163 / 1,335 -> 1,438 (split) / 1,892 (coop)
#   bf16 1 x 8192 x 8192            1,469 / 1,549 -> 1,593 (split) / 1,885 (coop)
#   bf16 4 x 32768 x 512              704 /   752 -> 1,556 (split) / 1,719 (split)
# The 16-bit cooperative forward measured 75-1,606 GB/s over its tiles (2,048-16,384 values, 1-8
# warps, 128- or 256-byte runs): its two reductions cross warps through shared memory, as
# COLS16_*'s note tells, and no tile beat the split plan on more than two of five shapes. Values a
# program: 8192 at 4 warps in 128-byte runs was best or within 2% of the best but for the float32
# forward at 64 chunks (16384: 2,204 against 1,643), 16-bit backwards (16384: up to 13% faster on two
# shapes, 16% slower on another) and float32 32 x 2048 x 196's backward (256-byte runs: 2,199 against
# 2,100); 8 warps lost everywhere. Split plans: 8 programs an SM against 32, 4 warps against 8
# forward (8 backward).
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


def _columns_split(B: int, N: int, T: int, itemsize: int, num_sms: int, forward: bool, force: str | None = None):
    """(BLOCK_N, BLOCK_T, CHUNK, n_chunks, num_warps) of the split plan for a (B, N, T) softmax over
    N, or None where the loop (or one tile) stays. `force`: "split" takes it wherever N has two steps."""
    if force not in (None, "split"):
        return None
    BLOCK_T = _columns_run(T, COLS_RUN_BYTES // itemsize)
    BLOCK_N = max(1, min(triton.next_power_of_2(N), COLS_TILE_SHORT // BLOCK_T))
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
    return BLOCK_N, BLOCK_T, CHUNK, triton.cdiv(N, CHUNK), COLS_SPLIT_WARPS if forward else COLS_SPLIT_BWD_WARPS


@functools.lru_cache(maxsize=4096)
def plan_columns_forward(B: int, N: int, T: int, stride_xb: int, stride_xn: int, stride_yb: int, stride_yn: int,
                         dtype: str, log: bool, num_sms: int, force: str | None = None) -> tuple[Launch, ...]:
    """The launches computing y = softmax(x) (log_softmax if `log`) over axis 1 of (B, N, T) views
    of x and y whose last axis is contiguous (kernels/columns.py): one (one tile, the loop, the
    cooperative kernel; under Triton's interpreter the latter takes two phases) or two (split).
    B, N, T >= 1. `force`: "one_tile", "loop", "split" or "coop" (tests, probes)."""
    coop = _columns_coop(B, N, T, ITEMSIZE[dtype], num_sms, True, force)
    if coop:
        return _columns_coop_launch("softmax_fwd_coop_cols", ("x",), (B, N, T, stride_xb, stride_xn, stride_yb,
                                    stride_yn), B, N, T, coop, 2, "y",
                                    dict(LOG=log, ALIGN=alignment(T, stride_xb, stride_xn, stride_yb, stride_yn),
                                         ALIGN_N=alignment(N, coop[2]), ACC_FP64=dtype == "float64", num_sms=num_sms))
    split = _columns_split(B, N, T, ITEMSIZE[dtype], num_sms, True, force)
    if split:
        BLOCK_N, BLOCK_T, CHUNK, n_chunks, num_warps = split
        align = alignment(T, stride_xb, stride_xn, stride_yb, stride_yn)
        common = dict(BLOCK_N=BLOCK_N, BLOCK_T=BLOCK_T)
        stats = dict(common, ALIGN=align, ALIGN_N=alignment(N, CHUNK, n_chunks), ACC_FP64=dtype == "float64",
                     PER_VALUE=COLS16_PER_VALUE and ITEMSIZE[dtype] <= 2, num_warps=num_warps, num_stages=2)
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
    BLOCK_N, BLOCK_T, one, num_warps = _columns_tiling(B, N, T, ITEMSIZE[dtype], num_sms, force)
    meta = dict(BLOCK_N=BLOCK_N, BLOCK_T=BLOCK_T, ONE_TILE=one, LOG=log,
                ALIGN=alignment(T, stride_xb, stride_xn, stride_yb, stride_yn), ACC_FP64=dtype == "float64",
                PER_VALUE=COLS16_PER_VALUE and not one and ITEMSIZE[dtype] <= 2,
                num_warps=num_warps, num_stages=1 if one else 2)
    return (Launch("softmax_fwd_cols", ("x",), (B, N, T, stride_xb, stride_xn, stride_yb, stride_yn),
                   (("y", (B, N, T), "io"),), (B * triton.cdiv(T, BLOCK_T),), tuple(meta.items())),)


@functools.lru_cache(maxsize=4096)
def plan_columns_backward(B: int, N: int, T: int, stride_yb: int, stride_yn: int, stride_dyb: int, stride_dyn: int,
                          stride_dxb: int, stride_dxn: int, dtype: str, log: bool, num_sms: int,
                          force: str | None = None) -> tuple[Launch, ...]:
    """The launches computing dx from y and dy over axis 1 of (B, N, T) views (see
    plan_columns_forward)."""
    coop = _columns_coop(B, N, T, ITEMSIZE[dtype], num_sms, False, force)
    if coop:
        align = alignment(T, stride_yb, stride_yn, stride_dyb, stride_dyn, stride_dxb, stride_dxn)
        return _columns_coop_launch("softmax_bwd_coop_cols", ("y", "dy"), (B, N, T, stride_yb, stride_yn, stride_dyb,
                                    stride_dyn, stride_dxb, stride_dxn), B, N, T, coop, 1, "dx",
                                    dict(LOG=log, ALIGN=align, ALIGN_N=alignment(N, coop[2]),
                                         ACC_FP64=dtype == "float64", num_sms=num_sms))
    split = _columns_split(B, N, T, ITEMSIZE[dtype], num_sms, False, force)
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
    BLOCK_N, BLOCK_T, one, num_warps = _columns_tiling(B, N, T, ITEMSIZE[dtype], num_sms, force, forward=False)
    meta = dict(BLOCK_N=BLOCK_N, BLOCK_T=BLOCK_T, ONE_TILE=one, LOG=log,
                ALIGN=alignment(T, stride_yb, stride_yn, stride_dyb, stride_dyn, stride_dxb, stride_dxn),
                ACC_FP64=dtype == "float64", num_warps=num_warps, num_stages=1 if one else 2)
    return (Launch("softmax_bwd_cols", ("y", "dy"),
                   (B, N, T, stride_yb, stride_yn, stride_dyb, stride_dyn, stride_dxb, stride_dxn),
                   (("dx", (B, N, T), "io"),), (B * triton.cdiv(T, BLOCK_T),), tuple(meta.items())),)
