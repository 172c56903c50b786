"""Probe the cooperative kernels on long rows: chunk x warps x RELOAD, GB/s and registers (GPU).

    python bench/probe_coop.py > bench/results/h100/probe_coop.log

For bf16 and float32 rows of N = 50257 (not 16-byte aligned in bf16: PEEL), 65536 and
1048576 at ~256 MB, forward and backward, softmax (and log_softmax at the sweep shapes), it
times the cooperative plan with other chunk sizes and warps and, for the backward kernel,
with RELOAD off and on (y and dy held in registers across the row's wait, or loaded again
after it), and prints the registers a thread and spills of each compiled kernel: fewer
registers let more programs share an SM. dispatch.py's COOP_RELOAD rule was read from it.
Each line's err is the largest error relative to max(1, |ref|) against float64.

    python bench/probe_coop.py --wide > bench/results/h100/probe_chunk.log

instead times the 16-bit forward at chunks of 8192 and 16384 (8 warps), softmax and
log_softmax, twice each, on aligned long rows: dispatch.py's COOP_WIDE_MAX_N rule.

    python bench/probe_coop.py --pack > bench/results/h100/probe_pack.log

times dispatch's cooperative plans (bf16 and float32, softmax and log_softmax, forward and
backward, ~256 MB sweeps and few long rows) with LATE_LEAVE off and on and, for the 16-bit
backward, PACK off and on (y and dy held as float32 values, or as packed 32-bit words of two
values), twice each, with registers: dispatch.py's COOP_PACK_MIN_CHUNKS and COOP_LATE_LEAVE.

    python bench/probe_coop.py --late > bench/results/h100/probe_late.log

times dispatch's cooperative softmax plans on few long rows (N = 128256, 256000, 1048576; M
from 1 up, bf16 and float32, forward and backward) with LATE_LEAVE off and on, twice each, by
the benchmark's clock (bench/timing.py: CUDA graph, kernel time): from how many programs an SM
LATE_LEAVE pays (dispatch.py's COOP_LATE_LEAVE_MIN_PER_SM).

    python bench/probe_coop.py --even-m > bench/results/h100/probe_even_m.log

times dispatch's rows plans (~256 MB sweeps, N = 64 ... 32768, float16, bfloat16 and float32,
softmax and log_softmax) with EVEN_M off and on, twice each, by the same clock (dispatch.py's
EVEN_M rule).

    python bench/probe_coop.py --pack-few > bench/results/h100/probe_pack_few.log

times dispatch's 16-bit cooperative backward plans on few long rows (N = 256000, 1048576; M
from 1) with PACK off and on, twice each, by the same clock: whether PACK, which buys
occupancy, costs time where the GPU holds the grid whole (dispatch.py's COOP_UNPACKED_PER_SM).

    python bench/probe_coop.py --pack-fwd > bench/results/h100/probe_pack_fwd2.log

times dispatch's 16-bit cooperative forward plans (~256 MB sweeps, LLM vocabularies, few long
rows; softmax and log_softmax) against x held as packed words across the wait (PACK) at chunks
of 8192 and 16384 values (8 warps; LATE_LEAVE by dispatch's rule, and flipped) and 32768 (16
warps), twice each, by the benchmark's clock, with registers and the largest error.

    python bench/probe_coop.py --tag > bench/results/h100/probe_tag.log

times dispatch's cooperative plans against the plans dispatch made before tagged partials
(TAG; COOP_TAG_MAX_CHUNKS set to 0), wherever they differ, twice each, by the benchmark's clock.

    python bench/probe_coop.py --tag32 > bench/results/h100/probe_tag32.log
    python bench/probe_coop.py --rows-coop > bench/results/h100/probe_rows_coop.log
    python bench/probe_coop.py --rows-coop-few > bench/results/h100/probe_rows_coop_few.log
    python bench/probe_coop.py --fwd16 > bench/results/h100/probe_fwd16.log

the same way: float32's cooperative forward with TAG against counters (dispatch.py's
COOP_TAG_FWD32_MIN_PER_SM); the rows kernel against the cooperative plan on rows up to 32768,
~256 MB and few rows (MAX_ROWS_ALIGNED_BLOCK_N); the 16-bit cooperative forward packed in
chunks of 4096 to 16384 values at 4 to 16 warps, with counters or TAG (COOP_TAG_FWD_PEELED_WARPS).

    python bench/probe_coop.py --defer-y > bench/results/h100/probe_defer_y.log
    python bench/probe_coop.py --wide-few > bench/results/h100/probe_wide_few.log
    python bench/probe_coop.py --few-chunks > bench/results/h100/probe_few_chunks.log

the same way: dispatch's log_softmax backward plans against y loaded only after the wait
(DEFER_Y), unpacked and packed (dispatch.py's COOP_DEFER_Y); the 16-bit softmax forward of
tens of long rows in unpacked wide, unpacked, packed and packed wide chunks
(COOP_WIDE_MIN_PER_SM, COOP_PACK_WIDE_MIN_PER_SM); single and 8 long rows in chunks of 4096,
2048 and 1024 values (COOP_NARROW_MIN_SMS_PER_PROGRAM).

    python bench/probe_coop.py --rows16 > bench/results/h100/probe_rows16.log
    python bench/probe_coop.py --rows-odd > bench/results/h100/probe_rows_odd.log

the rows kernels the same way: the 16-bit forward at N = 1152 and 128 against other warps and
rows a program (and, at 1152, a 1024-lane block with a 128-lane tail); bfloat16 and float32 rows
that fill few of their lanes (N = 1152, 1280, 300, 600, 2500), forward and backward, against
twice the rows a program (dispatch.py's SPARSE_ROWS_FILL).

    python bench/probe_coop.py --rows781 > bench/results/h100/probe_rows781.log
    python bench/probe_coop.py --rows-odd16 > bench/results/h100/probe_rows_odd16.log

the same tilings as --rows16 for 16-bit rows of N = 781 (1,562 bytes: not 16-byte aligned, too
short to peel), forward and backward; the 16-bit backward of odd rows (N = 255 ... 1999, one value
a lane: ALIGN 1) and of two even ones against twice the rows a program.

    python bench/probe_coop.py --maxnreg16 > bench/results/h100/probe_maxnreg16.log
    python bench/probe_coop.py --fwd16-4w > bench/results/h100/probe_fwd16_4w.log
    python bench/probe_coop.py --few16-4w > bench/results/h100/probe_few16_4w.log
    python bench/probe_coop.py --long-1m > bench/results/h100/probe_long_1m.log
    python bench/probe_coop.py --cap-fwd > bench/results/h100/probe_cap_fwd.log
    python bench/probe_coop.py --few-tag16 > bench/results/h100/probe_few_tag16.log
    python bench/probe_coop.py --tag-loads > bench/results/h100/probe_tag_loads.log
    python bench/probe_coop.py --tag-1m-cap > bench/results/h100/probe_tag_1m_cap.log
    python bench/probe_coop.py --rows-short > bench/results/h100/probe_rows_short.log
    python bench/probe_coop.py --rows-few > bench/results/h100/probe_rows_few.log
    python bench/probe_coop.py --rows-few2 > bench/results/h100/probe_rows_few2.log

the cooperative plans against the same under Triton's `maxnreg` register cap (--maxnreg: every
dtype; 16: 16-bit; 32: float32), and the 16-bit forward at 8192 values x 4 warps summed in
halves (SPLIT_SUM): dispatch's tagged plans against those it made before (dispatch.py's
COOP_FWD16_WARPS, COOP_FWD16_LOG_WIDE_MIN_PER_SM), its plans on counters against 4 warps, and
rows of 1M values in chunks twice as wide at 16 warps; (--cap-fwd) the cooperative forward under
caps that let one more program share an SM; (--few-tag16) the 16-bit forward of few long rows on
counters against TAG in four kinds of chunk (dispatch.py's COOP_TAG_FWD16_FEW_MAX_PER_SM);
(--tag-loads) TAG's slots read by volatile loads instead of atomics (lost); (--tag-1m-cap) TAG at
64 chunks a row capped to the counters' registers (lost); (--rows-short) the rows plans of N = 128,
256 and 512 against other tilings, as --rows16 (dispatch.py's ROWS_SHORT_FWD_LANES); (--rows-few)
programs of fewer rows and warps (ROWS_BWD_1KB_N, ROWS_FWD_ONE_ROW_N; --rows-few2: more lengths). Each line gives every variant's registers a
thread (and spill instructions: sN).

    python bench/probe_coop.py --split-few > bench/results/h100/probe_split_few.log
    python bench/probe_coop.py --split-tiny > bench/results/h100/probe_split_tiny.log
    python bench/probe_coop.py --jax-fresh > bench/results/h100/probe_jax_fresh.log
    python bench/probe_coop.py --jax-lone > bench/results/h100/probe_jax_lone.log

few long rows in the two-kernel split plan instead of the cooperative kernel: (--split-few) rows
whose x fits in L2, read again from there, with eviction hints or not (lost); (--split-tiny) the
smallest grids, kernel times, in chunks of 2048 to 16384 values; (--jax-fresh) through the JAX
adapter, whose memset of the counters the split plan avoids, dispatch's SPLIT_FRESH_* rule on and
off (dispatch.py's SPLIT_FRESH_FWD_MAX_PER_SM, SPLIT_FRESH_CHUNKS); (--jax-lone) the same since the
JAX adapter's zeros come from XLA, by the benchmark's clock and as lone calls; (--jax-lone-tag32) the
same for float32 forwards whose cooperative plan takes TAG (JAX_TAG32_SHAPES).

    python bench/probe_coop.py --few-tp > bench/results/h100/probe_few_tp.log

    python bench/probe_coop.py --few-t4 > bench/results/h100/probe_few_t4.log

the 16-bit softmax forward of tens of long rows against TAG's 4-warp chunks with POLY, capped or not;
then (--few-t4) against TAG's 4-warp chunks alone over grids of 1.9 to 31 programs an SM.

    python bench/probe_coop.py --sentinel > bench/results/h100/probe_sentinel.log

the plans on counters against scratch kernels that wait without the release fence of the
arrival (SENTINEL, below: partials as keyed words that say whether they are written yet).

    python bench/probe_coop.py --sent-more > bench/results/h100/probe_sent_more.log

the kernels' own SENT where dispatch does not take it: the float32 forward on counters (16, 32
and 64 rows of 1048576) with SENT and LATE_LEAVE each way, and the 16-bit 128 x 1048576 forward
in packed 8192-value chunks (4 and 8 warps, SPLIT_SUM) with SENT, against dispatch's plans;
(--sent-more-few) the float32 part on 16 down to 1 row of 1048576; (--sent-wide) the 16-bit
forward of 16 to 48 rows of 1048576 (below dispatch's SENT grids) in packed chunks of 16384 values
with SENT; (--sent-wide-gap) bf16 18 and 21 rows, between the grids measured there; (--sent-wide-llm)
the softmax of 64 x 256000, 64 x 128256 and 32 x 256000 (few LLM rows on counters) so; (--narrow-llm)
the softmax of 64 x 128256 and 64 x 256000 in packed 4096-value chunks at 4 warps; (--reload-x) a
scratch forward that holds nothing across the wait and reads its chunk again after it (RELOAD_X).

    python bench/probe_coop.py --poly > bench/results/h100/probe_poly.log
    python bench/probe_coop.py --poly-wide > bench/results/h100/probe_poly_wide.log
    python bench/probe_coop.py --poly-few > bench/results/h100/probe_poly_few.log
    python bench/probe_coop.py --tag-wide > bench/results/h100/probe_tag_wide.log

the 16-bit softmax forward with MUFU alone against scratch kernels that compute part of its exps
by a polynomial on the FMA pipe (POLY, below; dispatch.py's COOP_POLY): on the benchmark's
cooperative shapes, on every grid of wide packed chunks (--poly-wide), a quarter of the values in
the 8192-value chunks of few long rows (--poly-few); (--tag-wide) rows of 33 to 64 chunks of 8192
values in TAG's wide packed chunks against counters with SENT, with and without POLY
(COOP_TAG_FWD_MIN_PER_SM's note); (--poly-deg) the polynomial at degree 3 against 4.

    python bench/probe_coop.py --poly-mix > bench/results/h100/probe_poly_mix.log

dispatch's packed wide softmax forward (POLY on every high half after the wait) against POLY on
1/8 to 1/2 of the values, in four parts of each program's words (G<k>; poly_mix's `ks` and `parts`
add the forms that lost on registers: a branch by program, X<k>, and parts split with their
offsets, H<k>).

    python bench/probe_coop.py --capped > bench/results/h100/probe_capped.log

dispatch's packed 16-bit forward plans against the same with CVT_X2 and (softmax) POLY under
Triton's maxnreg at the plan's own registers a thread (`capped`).

    python bench/probe_coop.py --pack-mid > bench/results/h100/probe_pack_mid.log
    python bench/probe_coop.py --pack-mid2 > bench/results/h100/probe_pack_mid2.log

the 16-bit softmax backward on rows of 4 to 31 chunks (and, --pack-mid2, peeled rows and small
grids) with PACK flipped (`pack_mid`; dispatch.py's COOP_PACK_MIN_CHUNKS, 32 when these ran).

    python bench/probe_coop.py --scan > bench/results/h100/probe_scan.log
    python bench/probe_coop.py --mid16 --mid16b ... --mid16e > bench/results/h100/probe_mid16.log

dispatch's plans on ~256 MB rows of lengths the benchmark's sweep leaves out (N = 196608 to
786432), every dtype, op and direction, against the copy bandwidth; the 16-bit forward of rows
of 33 to 96 chunks of 8192 values against 8192-value chunks at 4 warps summed in halves with
keyed partials and others (dispatch.py's COOP_SPLIT_SUM_MAX_CHUNKS).

    python bench/probe_coop.py --tag-poly > bench/results/h100/probe_tag_poly.log
    python bench/probe_coop.py --mid16f > bench/results/h100/probe_mid16f.log

the 16-bit forward of rows of at most 32 chunks of 8192 values (TAG's) and of few long rows
against COOP_SPLIT_SUM_MAX_CHUNKS's plan on counters, with and without POLY; (--mid16f) that plan
(P4) on few rows of 96 and 128 chunks.

    python bench/probe_coop.py --cap-bwd > bench/results/h100/probe_cap_bwd.log

the backward of rows of 1M values under a register cap, the float32 log_softmax also with DEFER_Y;
(--cap-log32) that on every float32 log_softmax backward cooperative shape it might take, and
(--cap-log32b) on more grids within dispatch's COOP_CAP32 bounds and beside them; (--cap-fwd16) the
bf16 forward's plans under a register cap; (--bwd16-4w) the 16-bit backward of rows of 1M values in
8192-value chunks at 4 warps.

    python bench/probe_coop.py --evict > bench/results/h100/probe_evict.log

the cooperative forward with cache hints (scratch kernels): x loaded with evict_first and y
stored with evict_first (EF), y stored streaming, cache_modifier ".cs" (CS), both (EFCS); and
TAG's 4-warp chunks with POLY under a cap of 64 registers (TP64).

    python bench/probe_coop.py --exact > bench/results/h100/probe_exact.log

dispatch's packed 16-bit cooperative forward plans (softmax and log_softmax) against F, the same
kernel with the one-op forms alone (as before COOP_FAST_MAX and the sum's correction), and the
plan on rows whose max lies past COOP_FAST_MAX (x + 1000: `_coop_fwd_exact`), with its error.

    python bench/probe_coop.py --reload-dy > bench/results/h100/probe_reload_dy.log

dispatch's cooperative softmax backward plans against the same with dy loaded again after the
row's wait (RELOAD_DY: only y held across it), uncapped (D) and under Triton's maxnreg (Dc: 40
registers a thread for 16-bit rows on counters, 48 with TAG, 64 for float32), twice each, by
the benchmark's clock. It lost everywhere: not taken.
(One mode a call.)
"""

from __future__ import annotations

import contextlib
import os
import sys
from unittest import mock

import torch
import triton
import triton.testing

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import tune  # noqa: E402
from multisoftmax import launch  # noqa: E402

SHAPES = {"bfloat16": [(2670, 50257), (2048, 65536), (128, 1048576), (4096, 50257)],
          "float32": [(1335, 50257), (64, 1048576)]}
VARIANTS = [(8192, 8), (16384, 8), (8192, 4), (16384, 16), (4096, 4)]  # (CHUNK_N, num_warps)


WIDE_SHAPES = [(2048, 65536), (1024, 131072), (512, 262144), (128, 1048576), (1024, 128256), (512, 151936),
               (64, 256000)]


def wide(sms):
    for dtype in ("bfloat16", "float16"):
        for M, N in WIDE_SHAPES:
            for log in (False, True):
                x, y, dy, out, bufs, nbytes = tune.make_inputs(M, N, getattr(torch, dtype), "fwd", log)
                res = []
                for _ in range(2):
                    for chunk in (8192, 16384):
                        p = tune.coop_plan(M, N, dtype, "fwd", sms, chunk, 8, log)
                        ms = triton.testing.do_bench(lambda: tune.run_plan(p, bufs, out), warmup=5, rep=40,
                                                     return_mode="median")
                        res.append(f"{chunk}:{nbytes / ms / 1e6:.0f}")
                print(dtype, M, N, "log" if log else "sm", " ".join(res), flush=True)
                del x, y, dy
                out = bufs = None  # not del: a closure above names them
                torch.cuda.empty_cache()


PACK_SHAPES = [(50257, None), (65536, None), (262144, None), (1048576, None), (1048576, 16), (256000, 64)]


def pack(sms):
    """dispatch's own cooperative plans, with LATE_LEAVE off and on and, for the 16-bit
    backward, PACK off (RELOAD on peeled rows, as before PACK) and on, twice each."""
    for dtype in ("bfloat16", "float32"):
        T = tune.DTYPES[dtype]
        for N, M in PACK_SHAPES:
            M = M or 256 * 2**20 // (N * T.itemsize)
            for direction in ("fwd", "bwd"):
                for log in (False, True):
                    x, y, dy, out, bufs, nbytes = tune.make_inputs(M, N, T, direction, log)
                    ref = tune.reference(x, y, dy, log, direction)
                    plan, _ = _dispatch_plan(M, N, dtype, direction, sms, "coop", log)
                    if direction == "fwd":
                        variants = [(f"late={late:d}", dict(LATE_LEAVE=late)) for late in (False, True)]
                    else:
                        packs = (False, True) if T.itemsize == 2 else (False,)
                        reload = plan[0].kwargs["PEEL"] and T.itemsize == 2
                        variants = [(f"pack={pk:d},late={late:d}",
                                     dict(PACK=pk, RELOAD=reload and not pk, LATE_LEAVE=late))
                                    for pk in packs for late in (False, True)]
                    res = []
                    for _ in range(2):
                        for name, meta in variants:
                            p = tune.with_meta(plan, **meta)
                            launch._COMPILED.clear()
                            got = tune.run_plan(p, bufs, out)
                            err = ((got.double() - ref).abs() / ref.abs().clamp(min=1)).max().item()
                            regs = max(c[1].n_regs for c in launch._COMPILED.values())
                            ms = triton.testing.do_bench(lambda: tune.run_plan(p, bufs, out), warmup=5, rep=30,
                                                         return_mode="median")
                            res.append(f"{name} {nbytes / ms / 1e6:.0f} r{regs}"
                                       + (f" ERR {err:.0e}" if err > 2e-2 else ""))
                    kw = plan[0].kwargs
                    print(f"{dtype} {M}x{N} {'log' if log else 'sm'} {direction} chunk={kw['CHUNK_N']} "
                          f"peel={kw['PEEL']:d} | dispatch: {'pack=%d,' % kw['PACK'] if direction == 'bwd' else ''}"
                          f"late={kw['LATE_LEAVE']:d} | " + " | ".join(res), flush=True)
                    del x, y, dy, ref
                    out = bufs = None  # not del: a closure above names them
                    torch.cuda.empty_cache()


PACK_FEW_M = {256000: (1, 2, 8, 12, 13, 14, 16, 64), 1048576: (1, 2, 3, 4, 16)}
LATE_M = {128256: (1, 8, 16, 32, 64, 128), 256000: (1, 4, 8, 16, 32, 64), 1048576: (1, 2, 4, 16)}


def _bench_clock(plan, bufs, names, out, nbytes, l2_bytes):
    """us a call of `plan` as the benchmark times ms-torch (CUDA graph, kernel time), each call
    writing a fresh output as the adapters do (until 2026-11-24 09:00 UTC every call wrote `out`,
    which then stayed in L2 where it fits: bf16 8 x 256000's forward took 6.7 us so,
    bench/results/h100/probe_few_tag16_warm_y.log, against 7.6 with fresh outputs,
    probe_few_tag16.log; probe_events.log: the same kernel in both ways)."""
    import timing
    args = tuple(bufs[n] for n in names)
    us, _ = timing.torch_time(lambda *a: tune.run_plan(plan, dict(zip(names, a)), torch.empty_like(out)), args,
                              nbytes, cuda=True, graphable=True, l2_bytes=l2_bytes)
    return us


def _dispatch_plan(M, N, dtype, direction, sms, force=None, log=False):
    """dispatch's softmax (`log`: log_softmax) plan for M x N (contiguous) and the names of
    its inputs."""
    from multisoftmax import dispatch
    if direction == "fwd":
        return dispatch.plan_forward.__wrapped__(M, N, N, N, dtype, log, sms, force), ("x",)
    return dispatch.plan_backward.__wrapped__(M, N, N, N, N, dtype, log, sms, force), ("y", "dy")


def _off_on(M, N, dtype, direction, sms, key, force=None, log=False):
    """dispatch's plan and its times (us a call, by `_bench_clock`) with the boolean constexpr
    `key` off and on, twice over: [(False, us), (True, us), (False, us), (True, us)]."""
    T = getattr(torch, dtype)
    x, y, dy, out, bufs, nbytes = tune.make_inputs(M, N, T, direction, log)
    plan, names = _dispatch_plan(M, N, dtype, direction, sms, force, log)
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    times = [(on, _bench_clock(tune.with_meta(plan, **{key: on}), bufs, names, out, nbytes, l2))
             for _ in range(2) for on in (False, True)]
    del x, y, dy, out, bufs
    torch.cuda.empty_cache()
    return plan, nbytes, times


def late(sms):
    """dispatch's cooperative softmax plans on few long rows, LATE_LEAVE off and on."""
    for dtype in ("bfloat16", "float32"):
        for N, Ms in LATE_M.items():
            for M in Ms:
                for direction in ("fwd", "bwd"):
                    plan, _, times = _off_on(M, N, dtype, direction, sms, "LATE_LEAVE", force="coop")
                    kw = plan[0].kwargs
                    print(f"{dtype} {M}x{N} sm {direction} chunk={kw['CHUNK_N']} programs/SM="
                          f"{plan[0].grid[0] / sms:.2f} | dispatch: late={kw['LATE_LEAVE']:d} | "
                          + " | ".join(f"late={on:d} {us:7.2f} us" for on, us in times), flush=True)


def even_m(sms):
    """dispatch's rows plans with EVEN_M off and on (softmax and log_softmax)."""
    for dtype in ("float16", "bfloat16", "float32"):
        for N in (64, 128, 256, 512, 781, 4096, 16384, 32768):
            itemsize = getattr(torch, dtype).itemsize
            M = min(65536, 256 * 2**20 // (N * itemsize))
            for log in (False, True):
                for direction in ("fwd", "bwd"):
                    plan, nbytes, times = _off_on(M, N, dtype, direction, sms, "EVEN_M", log=log)
                    kw = plan[0].kwargs
                    print(f"{dtype} {M}x{N} {'log' if log else 'sm'} {direction} BLOCK_M={kw['BLOCK_M']} "
                          f"warps={kw['num_warps']} | dispatch: even_m={kw['EVEN_M']:d} | "
                          + " | ".join(f"even_m={on:d} {nbytes / us / 1e3:5.0f} GB/s" for on, us in times),
                          flush=True)


def pack_few(sms):
    """dispatch's 16-bit cooperative backward plans on few long rows, PACK off and on."""
    for dtype in ("bfloat16", "float16"):
        for N, Ms in PACK_FEW_M.items():
            for M in Ms:
                for log in (False, True):
                    plan, _, times = _off_on(M, N, dtype, "bwd", sms, "PACK", force="coop", log=log)
                    kw = plan[0].kwargs
                    assert not kw["RELOAD"], "aligned rows only: PACK off must not need RELOAD"
                    print(f"{dtype} {M}x{N} {'log' if log else 'sm'} bwd programs/SM={plan[0].grid[0] / sms:.2f} | "
                          f"dispatch: pack={kw['PACK']:d},late={kw['LATE_LEAVE']:d} | "
                          + " | ".join(f"pack={on:d} {us:7.2f} us" for on, us in times), flush=True)


PACK_FWD_SHAPES = [(2670, 50257), (2048, 65536), (1024, 131072), (512, 262144), (128, 1048576), (1024, 128256),
                   (512, 151936), (1, 128256), (8, 128256), (64, 128256), (1, 256000), (8, 256000), (64, 256000),
                   (16, 1048576)]


def _two_runs(variants, bufs, names, out, nbytes, l2, before=None, after=None):
    """{name: [us, us]}: each (name, plan) of `variants` timed by `_bench_clock`, in turn, twice;
    `before(name)` / `after(name)`, where given, run around each timing."""
    res = {name: [] for name, _ in variants}
    for _ in range(2):
        for name, p in variants:
            if before:
                before(name)
            res[name].append(_bench_clock(p, bufs, names, out, nbytes, l2))
            if after:
                after(name)
    return res


def _compare(M, N, dtype, direction, log, variants, sms):
    """One line: each (name, plan) of `variants` on the same inputs, with its registers a
    thread, the largest error relative to max(1, |ref|) (ERR over 2e-2) and its us a call of
    two runs by the benchmark's clock (`_bench_clock`), GB/s of the faster."""
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    T = getattr(torch, dtype)
    x, y, dy, out, bufs, nbytes = tune.make_inputs(M, N, T, direction, log)
    ref = tune.reference(x, y, dy, log, direction)
    names = ("x",) if direction == "fwd" else ("y", "dy")
    info = {}
    for name, p in variants:
        launch._COMPILED.clear()
        got = tune.run_plan(p, bufs, out)
        err = ((got.double() - ref).abs() / ref.abs().clamp(min=1)).max().item()
        info[name] = (max(c[1].n_regs for c in launch._COMPILED.values()), err,
                      max(c[1].n_spills for c in launch._COMPILED.values()))
    res = _two_runs(variants, bufs, names, out, nbytes, l2)
    del x, y, dy, out, bufs, ref
    torch.cuda.empty_cache()
    return " | ".join(f"{name} r{info[name][0]}" + (f"s{info[name][2]}" if info[name][2] else "") + " "
                      + "/".join(f"{us:.2f}" for us in res[name]) + f" us {nbytes / min(res[name]) / 1e3:.0f} GB/s"
                      + (f" ERR {info[name][1]:.0e}" if info[name][1] > 2e-2 else "") for name, _ in variants)


def _tagged(M, N, dtype, sms, chunk, warps, log):
    """The 16-bit cooperative forward plan with TAG whatever dispatch's rule, in packed chunks of
    2 * `chunk` values (wide) at `warps` warps, its sum in one pass."""
    from multisoftmax import dispatch
    with mock.patch.object(dispatch, "_coop_tag_fwd", lambda *a: dict(wide=True)):
        t = tune.with_meta(tune.coop_plan(M, N, dtype, "fwd", sms, chunk, warps, log), PACK=True)
    assert t[0].kwargs["TAG"] and t[0].kwargs["CHUNK_N"] == 2 * chunk and not t[0].kwargs["SPLIT_SUM"]
    return t


def _head(M, N, dtype, direction, log, plan, sms):
    kw = plan[0].kwargs
    flags = ",".join(f"{k.lower()}={kw[k]:d}" for k in ("PACK", "LATE_LEAVE", "PEEL", "DEFER_Y", "RELOAD") if k in kw)
    return (f"{dtype} {M}x{N} {'log' if log else 'sm'} {direction} programs/SM={plan[0].grid[0] / sms:.2f} | "
            f"dispatch: chunk={kw['CHUNK_N']},warps={kw['num_warps']},{flags} | ")


def pack_fwd(sms, dtypes=("bfloat16", "float16")):
    """dispatch's 16-bit cooperative forward plans against PACK variants."""
    for dtype in dtypes:
        for M, N in PACK_FWD_SHAPES:
            if dtype == "float16" and (M, N) not in PACK_FWD_SHAPES[:5] and M > 1:
                continue  # float16: the ~256 MB sweeps and single rows only
            for log in (False, True):
                plan, _ = _dispatch_plan(M, N, dtype, "fwd", sms, None, log)
                variants = [("dispatch", plan)]
                for chunk, warps in ((8192, 8), (16384, 8), (32768, 16)):
                    p = tune.coop_plan(M, N, dtype, "fwd", sms, chunk, warps, log)
                    late = p[0].kwargs["LATE_LEAVE"]
                    variants.append((f"{chunk}x{warps}P{'L' if late else ''}", tune.with_meta(p, PACK=True)))
                    if warps == 8:
                        variants.append((f"{chunk}x{warps}P{'' if late else 'L'}",
                                         tune.with_meta(p, PACK=True, LATE_LEAVE=not late)))
                print(_head(M, N, dtype, "fwd", log, plan, sms) + _compare(M, N, dtype, "fwd", log, variants, sms),
                      flush=True)


DEFER_SHAPES = [(2670, 50257), (2048, 65536), (1024, 131072), (512, 262144), (128, 1048576), (64, 256000),
                (16, 1048576), (8, 256000), (1, 256000)]


def defer_y(sms, shapes=DEFER_SHAPES, dtypes=("bfloat16", "float16", "float32")):
    """dispatch's log_softmax cooperative backward plans against 8192-value chunks with y held
    across the wait or first loaded after it (DEFER_Y), unpacked or packed (16-bit: PACK)."""
    for dtype in dtypes:
        for M, N in shapes:
            if dtype != "bfloat16" and (M, N) not in ((2048, 65536), (128, 1048576)):
                continue
            plan, _ = _dispatch_plan(M, N, dtype, "bwd", sms, None, True)
            p = tune.coop_plan(M, N, dtype, "bwd", sms, 8192, 8, True)
            peel = p[0].kwargs["PEEL"]
            variants = [("dispatch", plan)]
            for pack in ((False, True) if dtype != "float32" else (False,)):
                for defer in (False, True):
                    name = f"8192{'P' if pack else ''}{'D' if defer else ''}{'R' if peel and not pack else ''}"
                    variants.append((name, tune.with_meta(p, PACK=pack, DEFER_Y=defer,
                                                          RELOAD=peel and dtype != "float32" and not pack)))
            print(_head(M, N, dtype, "bwd", True, plan, sms) + _compare(M, N, dtype, "bwd", True, variants, sms),
                  flush=True)


FEW_SHAPES = [(1, 128256), (1, 256000), (8, 128256), (8, 256000)]


def few_chunks(sms, shapes=FEW_SHAPES, dtypes=("float32", "bfloat16")):
    """dispatch's cooperative plans on few long rows (one wave) against smaller chunks (CxW:
    chunk C, W warps; PACK and LATE_LEAVE off): more programs, each with fewer bytes to wait for."""
    for dtype in dtypes:
        for M, N in shapes:
            for direction in ("fwd", "bwd"):
                for log in (False, True):
                    if log and M > 1:
                        continue
                    plan, _ = _dispatch_plan(M, N, dtype, direction, sms, "coop", log)
                    variants = [("dispatch", plan)]
                    for chunk, warps in ((4096, 8), (4096, 4), (2048, 4), (1024, 4)):
                        try:
                            p = tune.coop_plan(M, N, dtype, direction, sms, chunk, warps, log)
                        except ValueError:  # more chunks than SMs
                            continue
                        variants.append((f"{chunk}x{warps}", tune.with_meta(p, PACK=False, LATE_LEAVE=False)))
                    print(_head(M, N, dtype, direction, log, plan, sms)
                          + _compare(M, N, dtype, direction, log, variants, sms), flush=True)


WIDE_FEW_SHAPES = [(16, 128256), (32, 128256), (64, 128256), (32, 256000), (64, 256000), (16, 1048576),
                   (8, 1048576)]


def wide_few(sms, shapes=WIDE_FEW_SHAPES, dtypes=("bfloat16",)):
    """dispatch's 16-bit softmax forward on tens of long rows against the unpacked wide chunks
    (16384 values, COOP_WIDE_MAX_N), 8192-value chunks unpacked and packed (L: LATE_LEAVE on,
    else off) and packed wide chunks."""
    for dtype in dtypes:
        for M, N in shapes:
            plan, _ = _dispatch_plan(M, N, dtype, "fwd", sms, None, False)
            p8 = tune.coop_plan(M, N, dtype, "fwd", sms, 8192, 8)
            p16 = tune.coop_plan(M, N, dtype, "fwd", sms, 16384, 8)
            variants = [("dispatch", plan), ("16384", tune.with_meta(p16, PACK=False, LATE_LEAVE=False)),
                        ("8192", tune.with_meta(p8, PACK=False, LATE_LEAVE=False)),
                        ("8192P", tune.with_meta(p8, PACK=True, LATE_LEAVE=False)),
                        ("8192PL", tune.with_meta(p8, PACK=True, LATE_LEAVE=True)),
                        ("16384P", tune.with_meta(p16, PACK=True, LATE_LEAVE=False))]
            print(_head(M, N, dtype, "fwd", False, plan, sms) + _compare(M, N, dtype, "fwd", False, variants, sms),
                  flush=True)


BITS_SHAPES = [(2670, 50257), (2048, 65536), (1024, 131072), (512, 262144), (128, 1048576), (64, 256000),
               (16, 1048576)]


def bits(sms, shapes=BITS_SHAPES):
    """dispatch's bf16 cooperative backward plans with packed words unpacked by conversions
    or by bit operations (BITS)."""
    for M, N in shapes:
        for log in (False, True):
            plan, _ = _dispatch_plan(M, N, "bfloat16", "bwd", sms, None, log)
            variants = [(f"bits={b:d}", tune.with_meta(plan, BITS=b)) for b in (False, True)]
            print(_head(M, N, "bfloat16", "bwd", log, plan, sms) + _compare(M, N, "bfloat16", "bwd", log, variants, sms),
                  flush=True)


TAG_SHAPES = [(2048, 65536), (1024, 131072), (512, 262144), (2670, 50257), (256, 256000), (64, 256000), (8, 256000),
              (1, 128256)]


def tag(sms, shapes=TAG_SHAPES):
    """dispatch's cooperative plans against dispatch's plans without TAG (COOP_TAG_MAX_CHUNKS = 0:
    arrival counters, and the rules as they were before TAG), softmax and log_softmax, forward and
    backward, bfloat16 and float32 (M halved: the same bytes)."""
    from multisoftmax import dispatch
    for dtype, M, N, direction, log in _cases(shapes, ("bfloat16", "float32")):
        plan, _ = _dispatch_plan(M, N, dtype, direction, sms, "coop", log)
        with mock.patch.object(dispatch, "COOP_TAG_MAX_CHUNKS", 0):
            old, _ = _dispatch_plan(M, N, dtype, direction, sms, "coop", log)
        if plan == old:
            continue
        print(_head(M, N, dtype, direction, log, plan, sms) + f"tag={plan[0].kwargs['TAG']:d} | "
              + _compare(M, N, dtype, direction, log, [("before", old), ("dispatch", plan)], sms), flush=True)


def _cases(shapes, dtypes):
    """(dtype, M, N, direction, log) for every shape, dtype, direction and op; float32 with M
    halved (the same bytes as 16-bit)."""
    for dtype in dtypes:
        for M, N in shapes:
            M = max(1, M // 2) if dtype == "float32" else M
            for direction in ("fwd", "bwd"):
                for log in (False, True):
                    yield dtype, M, N, direction, log


TAG32_SHAPES = [(1, 128256), (2, 128256), (4, 128256), (8, 128256), (16, 128256), (32, 128256), (64, 128256),
                (4, 256000), (8, 256000), (16, 256000), (32, 256000), (64, 256000), (1, 50257), (8, 50257),
                (64, 50257), (256, 50257), (1335, 50257), (64, 65536), (256, 65536)]


def tag32(sms, shapes=TAG32_SHAPES):
    """float32's cooperative forward with tagged partials (TAG; COOP_TAG_FWD32_MIN_PER_SM set to 0)
    against arrival counters (COOP_TAG_MAX_CHUNKS set to 0: the plans before TAG), softmax and
    log_softmax, twice each, by the benchmark's clock: from how many programs an SM TAG pays."""
    from multisoftmax import dispatch
    for M, N in shapes:
        for log in (False, True):
            with mock.patch.object(dispatch, "COOP_TAG_FWD32_MIN_PER_SM", 0):
                tagged, _ = _dispatch_plan(M, N, "float32", "fwd", sms, "coop", log)
            with mock.patch.object(dispatch, "COOP_TAG_MAX_CHUNKS", 0):
                counters, _ = _dispatch_plan(M, N, "float32", "fwd", sms, "coop", log)
            if not tagged[0].kwargs["TAG"]:
                continue
            print(_head(M, N, "float32", "fwd", log, counters, sms)
                  + _compare(M, N, "float32", "fwd", log, [("counters", counters), ("tag", tagged)], sms), flush=True)


ROWS_COOP_SHAPES = [(4559, 29440), (4096, 32000), (4096, 32768), (8191, 16385), (6000, 22000)]
ROWS_COOP_FEW_SHAPES = [(1, 32768), (8, 32768), (64, 32768), (264, 32768), (1, 20000), (32, 29440)]


def rows_coop(sms, shapes=ROWS_COOP_SHAPES, dtypes=("bfloat16", "float32")):
    """dispatch's rows plans (a row in registers, one program a row) against its cooperative plans
    (rows cut into chunks) on rows up to MAX_ROWS_BLOCK_N, softmax and log_softmax, forward and
    backward, twice each, by the benchmark's clock (float32: M halved, the same bytes)."""
    for dtype, M, N, direction, log in _cases(shapes, dtypes):
        rows, _ = _dispatch_plan(M, N, dtype, direction, sms, "rows", log)
        coop, _ = _dispatch_plan(M, N, dtype, direction, sms, "coop", log)
        print(_head(M, N, dtype, direction, log, coop, sms) + f"tag={coop[0].kwargs['TAG']:d} | "
              + _compare(M, N, dtype, direction, log, [("rows", rows), ("coop", coop)], sms), flush=True)


PEELED_FWD_SHAPES = [(2670, 50257), (4096, 50257), (512, 151936), (256, 256000)]


def fwd16(sms, shapes=PEELED_FWD_SHAPES, dtypes=("bfloat16",)):
    """dispatch's 16-bit cooperative forward plans against packed (PACK) chunks of 4096, 8192
    and 16384 values at 4, 8 and 16 warps, waiting through counters (LATE_LEAVE by dispatch's
    rule) or tagged partials (TAG), twice each, by the benchmark's clock."""
    for dtype in dtypes:
        for M, N in shapes:
            for log in (False, True):
                plan, _ = _dispatch_plan(M, N, dtype, "fwd", sms, None, log)
                variants = [("dispatch", plan)]
                for chunk, warps in ((4096, 4), (4096, 8), (8192, 8), (16384, 16)):
                    p = tune.coop_plan(M, N, dtype, "fwd", sms, chunk, warps, log)
                    variants.append((f"{chunk}x{warps}P", tune.with_meta(p, PACK=True)))
                    variants.append((f"{chunk}x{warps}PT", _tagged(M, N, dtype, sms, chunk // 2, warps, log)))
                print(_head(M, N, dtype, "fwd", log, plan, sms) + _compare(M, N, dtype, "fwd", log, variants, sms),
                      flush=True)


ROWS16_N = (1152, 128)
ROWS_ODD_N = (1152, 1280, 300, 600, 2500)
ROWS_SHORT_N = (128, 256, 512)  # the sweep's shortest rows, where XLA and Liger come within 2%
ROWS_ODD16_N = (255, 513, 781, 1001, 1537, 1999, 780, 1002)  # odd rows (ALIGN 1), and two even ones


def rows16(sms, Ns=ROWS16_N, dtypes=("bfloat16", "float16"), directions=("fwd",), only_double=False):
    """dispatch's rows plans (~256 MB, softmax and log_softmax) against other tilings: wN = N
    warps, bmB = B rows a program, tail = a 1024-lane block and a 128-lane tail (N = 1152), by
    the benchmark's clock, twice each. `only_double`: against twice the rows a program alone."""
    for dtype in dtypes:
        for N in Ns:
            itemsize = getattr(torch, dtype).itemsize
            M = min(65536, 256 * 2**20 // (N * itemsize))
            for direction in directions:
                for log in (False, True):
                    plan, _ = _dispatch_plan(M, N, dtype, direction, sms, None, log)
                    kw = plan[0].kwargs
                    bm, w = kw["BLOCK_M"], kw["num_warps"]
                    shapes = {"w2": (bm, 2), f"bm{2 * bm}": (2 * bm, w), f"bm{2 * bm}w{2 * w}": (2 * bm, 2 * w)}
                    if bm > 1:
                        shapes[f"bm{bm // 2}w{w // 2}"] = (bm // 2, w // 2)
                    if only_double:
                        shapes = {f"bm{2 * bm}": (2 * bm, w)}
                    variants = [("dispatch", plan)]
                    for name, (B, W) in shapes.items():
                        if W < 2:
                            continue
                        variants.append((name, tune.with_rows_tiling(plan, M, B, W, itemsize, log, direction == "fwd")))
                    if N == 1152 and not only_double:
                        variants.append(("tail", tune.with_meta(plan, BLOCK_N=1024, TAIL_N=128)))
                    print(f"{dtype} {M}x{N} {'log' if log else 'sm'} {direction} | dispatch: block_m={bm},"
                          f"block_n={kw['BLOCK_N']},tail_n={kw['TAIL_N']},warps={w},even_m={kw['EVEN_M']:d} | "
                          + _compare(M, N, dtype, direction, log, variants, sms), flush=True)


MAXNREG_SHAPES = [(512, 262144), (128, 1048576), (256, 256000), (512, 151936), (2670, 50257), (2048, 65536),
                  (64, 1048576)]


def maxnreg(sms, shapes=MAXNREG_SHAPES, dtypes=("bfloat16", "float32", "float16")):
    """dispatch's cooperative plans against the same plans compiled under a register cap
    (Triton's `maxnreg` option: more programs an SM, at the price of spills) and, for the 16-bit
    forward, packed tagged chunks of 8192 values at 4 warps (96 registers uncapped, 64 capped:
    8 programs an SM), twice each, by the benchmark's clock."""
    for dtype in dtypes:
        for M, N in shapes:
            itemsize = getattr(torch, dtype).itemsize
            if dtype == "float32":
                M = M // 2
            if dtype == "float16" and (M, N) not in ((512, 262144), (2670, 50257)):
                continue
            for direction in ("fwd", "bwd"):
                for log in (False, True):
                    plan, _ = _dispatch_plan(M, N, dtype, direction, sms, None, log)
                    if not plan[0].kernel.endswith("_coop"):
                        continue
                    variants = [("dispatch", plan)]
                    caps = {("fwd", 2): (), ("fwd", 4): (48,), ("bwd", 2): (48,), ("bwd", 4): (64,)}
                    for cap in caps[direction, itemsize]:
                        variants.append((f"cap{cap}", tune.with_meta(plan, maxnreg=cap)))
                    if direction == "fwd" and itemsize == 2:
                        t = _tagged(M, N, dtype, sms, 4096, 4, log)
                        variants += [("8192x4PT", t), ("8192x4PT-cap64", tune.with_meta(t, maxnreg=64))]
                    print(_head(M, N, dtype, direction, log, plan, sms)
                          + _compare(M, N, dtype, direction, log, variants, sms), flush=True)


FWD16_4W_SHAPES = [(512, 262144), (2048, 65536), (1024, 131072), (256, 256000), (512, 151936), (1024, 128256),
                   (2670, 50257), (4096, 50257), (4096, 32000), (8192, 29440), (2048, 29440), (128, 1048576)]


def fwd16_4w(sms, shapes=FWD16_4W_SHAPES, dtypes=("bfloat16", "float16")):
    """dispatch's 16-bit cooperative forward plans with TAG (packed 8192-value chunks at
    COOP_FWD16_WARPS warps, summed in halves: SPLIT_SUM) against the plans dispatch made before
    (packed 16384-value chunks at 8 warps, peeled rows 4096 at 4, one sum), twice each, by the
    benchmark's clock."""
    from multisoftmax import dispatch
    for dtype in dtypes:
        for M, N in shapes:
            if dtype == "float16" and (M, N) not in ((512, 262144), (2670, 50257), (1024, 131072)):
                continue
            for log in (False, True):
                plan, _ = _dispatch_plan(M, N, dtype, "fwd", sms, None, log)
                kw = plan[0].kwargs
                if not (plan[0].kernel.endswith("_coop") and kw["TAG"] and kw["SPLIT_SUM"]):
                    print(_head(M, N, dtype, "fwd", log, plan, sms) + "unchanged: skipped", flush=True)
                    continue
                before = dict(narrow=True, warps=4) if kw["PEEL"] else dict(wide=True)
                with mock.patch.object(dispatch, "_coop_tag_fwd", lambda *a: before):
                    old = dispatch.plan_forward.__wrapped__(M, N, N, N, dtype, log, sms, None)
                old = tune.with_meta(old, SPLIT_SUM=False)
                assert old[0].kwargs["TAG"] and old[0].kwargs["PACK"]
                print(_head(M, N, dtype, "fwd", log, plan, sms)
                      + _compare(M, N, dtype, "fwd", log, [("dispatch", plan), ("before", old)], sms), flush=True)


FEW16_4W_SHAPES = [(6, 1048576), (16, 1048576), (32, 1048576), (64, 128256), (128, 128256), (32, 256000),
                   (64, 256000), (256, 50257), (512, 50257), (16, 262144)]


def few16_4w(sms, shapes=FEW16_4W_SHAPES, dtypes=("bfloat16", "float16")):
    """dispatch's 16-bit cooperative forward plans that wait on counters (grids too small for
    TAG) against the same plans at 4 warps, their sums in halves or not (SPLIT_SUM), or (plans
    unpacked or in wide chunks) against packed 8192-value chunks at 4 warps summed in halves,
    twice each, by the benchmark's clock."""
    for dtype in dtypes:
        for M, N in shapes:
            if dtype == "float16" and (M, N) not in ((16, 1048576), (64, 256000)):
                continue
            for log in (False, True):
                plan, _ = _dispatch_plan(M, N, dtype, "fwd", sms, None, log)
                kw = plan[0].kwargs
                if not plan[0].kernel.endswith("_coop") or kw["TAG"]:
                    print(_head(M, N, dtype, "fwd", log, plan, sms) + f"tag={kw['TAG']:d}: skipped", flush=True)
                    continue
                variants = [("dispatch", plan)]
                if kw["PACK"] and kw["CHUNK_N"] == 8192:
                    variants += [("split", tune.with_meta(plan, SPLIT_SUM=True)),
                                 ("w4", tune.with_meta(plan, num_warps=4)),
                                 ("w4split", tune.with_meta(plan, num_warps=4, SPLIT_SUM=True))]
                else:  # unpacked or wide: against packed 8192-value chunks at 4 warps, summed in halves
                    p = tune.coop_plan(M, N, dtype, "fwd", sms, 8192, 4, log)
                    variants.append(("8192x4PS", tune.with_meta(p, PACK=True, SPLIT_SUM=True)))
                print(_head(M, N, dtype, "fwd", log, plan, sms) + _compare(M, N, dtype, "fwd", log, variants, sms),
                      flush=True)


LONG_1M_SHAPES = [(128, 1048576), (64, 1048576)]


def long_1m(sms, shapes=LONG_1M_SHAPES):
    """dispatch's cooperative forward plans for rows of 1048576 values (counters: more than
    COOP_TAG_MAX_CHUNKS chunks a row) against chunks twice as wide at twice the warps: 16-bit
    rows packed in 32768-value chunks at 16 warps, 32 a row, so with TAG, summed in halves
    (SPLIT_SUM) or not; float32 rows (M halved) in 16384-value chunks at 16 warps, 64 a row, on
    counters. Twice each, by the benchmark's clock."""
    for dtype in ("bfloat16", "float16", "float32"):
        for M, N in shapes:
            if dtype == "float32":
                M //= 2
            for log in (False, True):
                plan, _ = _dispatch_plan(M, N, dtype, "fwd", sms, None, log)
                variants = [("dispatch", plan)]
                if dtype == "float32":
                    variants.append(("16384x16", tune.coop_plan(M, N, dtype, "fwd", sms, 16384, 16, log)))
                else:
                    t = _tagged(M, N, dtype, sms, 16384, 16, log)
                    variants += [("32768x16PT", t), ("32768x16PTS", tune.with_meta(t, SPLIT_SUM=True))]
                print(_head(M, N, dtype, "fwd", log, plan, sms) + _compare(M, N, dtype, "fwd", log, variants, sms),
                      flush=True)


CAP_FWD_SHAPES = [(128, 1048576), (256, 256000), (512, 262144), (512, 151936)]


def cap_fwd(sms, shapes=CAP_FWD_SHAPES, dtypes=("bfloat16", "float16", "float32")):
    """dispatch's cooperative forward plans against the same under Triton's `maxnreg` cap that
    lets one more program share an SM (48 registers a thread for plans of 49-64 at 8 warps: 5
    programs an SM, not 4; 48 for 4 warps' 56: 10, not 9; 40 for 48 at 8 warps: 6, not 5), and,
    for 16-bit rows of 1048576 values (64 chunks a row: counters), the same chunks with TAG, capped
    and not. float32: M halved. Twice each, by the benchmark's clock."""
    for dtype in dtypes:
        for M, N in shapes:
            if dtype == "float32":
                M //= 2
            if dtype != "bfloat16" and N != 1048576:
                continue
            for log in (False, True):
                plan, _ = _dispatch_plan(M, N, dtype, "fwd", sms, None, log)
                if not plan[0].kernel.endswith("_coop"):
                    continue
                variants = [("dispatch", plan)]
                for cap in (48, 40):
                    variants.append((f"cap{cap}", tune.with_meta(plan, maxnreg=cap)))
                if N == 1048576 and dtype != "float32":
                    t = _tagged(M, N, dtype, sms, 8192, 8, log)
                    variants += [("16384x8PT", t), ("16384x8PT-cap48", tune.with_meta(t, maxnreg=48))]
                print(_head(M, N, dtype, "fwd", log, plan, sms) + _compare(M, N, dtype, "fwd", log, variants, sms),
                      flush=True)


FEW_TAG16_SHAPES = [(4, 256000), (8, 128256), (8, 256000), (16, 128256), (12, 256000), (16, 256000), (32, 128256),
                    (32, 256000), (64, 128256), (64, 256000), (16, 1048576)]


def few_tag16(sms, shapes=FEW_TAG16_SHAPES, dtypes=("bfloat16", "float16")):
    """The 16-bit cooperative forward of few long rows (counters: below COOP_TAG_FWD_MIN_PER_SM)
    against the same rows with TAG: packed 8192-value chunks at COOP_FWD16_WARPS warps summed in
    halves (T4), at 8 warps packed (T8) and not (T8u), packed 16384-value chunks at 8 warps (TW).
    Twice each, by the benchmark's clock."""
    from multisoftmax import dispatch
    for dtype in dtypes:
        for M, N in shapes:
            for log in (False, True):
                plan, _ = _dispatch_plan(M, N, dtype, "fwd", sms, None, log)
                variants = [("dispatch", plan)]
                for name, take in (("T4", dict(warps=dispatch.COOP_FWD16_WARPS)), ("T8", {}), ("TW", dict(wide=True))):
                    with mock.patch.object(dispatch, "_coop_tag_fwd", lambda *a, take=take: take):
                        t = dispatch.plan_forward.__wrapped__(M, N, N, N, dtype, log, sms, "coop")
                    assert t[0].kwargs["TAG"]
                    variants.append((name, t))
                    if name == "T8":
                        variants.append(("T8u", tune.with_meta(t, PACK=False)))
                print(_head(M, N, dtype, "fwd", log, plan, sms) + _compare(M, N, dtype, "fwd", log, variants, sms),
                      flush=True)


def _module_from_source(name, src):
    """The module `name` made of the source text `src` (a modified copy of kernels/softmax.py),
    from a temporary file."""
    import importlib.util
    import tempfile
    path = os.path.join(tempfile.mkdtemp(), f"{name}.py")
    with open(path, "w") as f:
        f.write(src)
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _kernel_variant(name, old, new):
    """Register as multisoftmax.kernels.softmax.<name> the softmax_fwd_coop of a copy of
    kernels/softmax.py in which `old` (once in the module) reads `new`; a plan runs it once its
    launch's kernel is `name`."""
    from multisoftmax.kernels import softmax as kernels_src
    src = open(kernels_src.__file__).read()
    assert src.count(old) == 1, old
    setattr(kernels_src, name, _module_from_source(name, src.replace(old, new)).softmax_fwd_coop)


# TAG's slot reads as volatile loads (to L2, as the atomics; no atomic unit) in place of atomics.
TAG_READ_ATOMIC = "tl.where(ok, tl.atomic_add(slot_ptr + c, 0, mask=ok, sem=\"relaxed\", scope=\"gpu\"), tag << 32)"
TAG_READ_VOLATILE = "tl.where(ok, tl.load(slot_ptr + c, mask=ok, other=0, volatile=True), tag << 32)"
TAG_LOADS_SHAPES = [(128, 1048576), (256, 256000), (512, 262144)]


def tag_loads(sms, shapes=TAG_LOADS_SHAPES, dtypes=("bfloat16", "float16", "float32")):
    """The cooperative forward's TAG reading its row's slots by volatile loads instead of atomics
    (scratch kernel softmax_fwd_coop_ldtag): for rows of 1M values (counters in dispatch) TAG in
    64 chunks a row, 16-bit packed 16384-value chunks at 8 warps, float32 16384 at 16 warps
    (M halved), atomics (T) against loads (TL); for the others dispatch's plan (TAG) against the
    same with loads (dispatchL). Twice each, by the benchmark's clock."""
    import dataclasses
    _kernel_variant("softmax_fwd_coop_ldtag", TAG_READ_ATOMIC, TAG_READ_VOLATILE)
    loads = lambda p: (dataclasses.replace(p[0], kernel="softmax_fwd_coop_ldtag"),)  # noqa: E731
    for dtype in dtypes:
        for M, N in shapes:
            if dtype == "float32":
                M //= 2
            if dtype == "float16" and N != 1048576:
                continue
            for log in (False, True):
                plan, _ = _dispatch_plan(M, N, dtype, "fwd", sms, None, log)
                variants = [("dispatch", plan)]
                if plan[0].kwargs["TAG"]:
                    variants.append(("dispatchL", loads(plan)))
                else:
                    if dtype == "float32":
                        from multisoftmax import dispatch
                        with mock.patch.object(dispatch, "_coop_tag_fwd", lambda *a: dict(wide=True)):
                            t = tune.with_meta(tune.coop_plan(M, N, dtype, "fwd", sms, 8192, 16, log), PACK=False)
                        assert t[0].kwargs["TAG"] and t[0].kwargs["CHUNK_N"] == 16384
                    else:
                        t = _tagged(M, N, dtype, sms, 8192, 8, log)
                    variants += [("T", t), ("TL", loads(t))]
                print(_head(M, N, dtype, "fwd", log, plan, sms) + _compare(M, N, dtype, "fwd", log, variants, sms),
                      flush=True)


def tag_1m_cap(sms, dtypes=("bfloat16", "float16")):
    """16-bit rows of 1048576 values: dispatch (counters, 63 registers a thread: 4 programs an SM)
    against TAG in 64 packed 16384-value chunks a row at 8 warps (79-80 registers: 3 an SM)
    uncapped (T) and under Triton's maxnreg cap of 64 (T-cap64: 4 an SM, no spills when compiled
    for sm_90 with Triton 3.6). Twice each, by the benchmark's clock."""
    for dtype in dtypes:
        for M in (128, 64):
            for log in (False, True):
                plan, _ = _dispatch_plan(M, 1048576, dtype, "fwd", sms, None, log)
                t = _tagged(M, 1048576, dtype, sms, 8192, 8, log)
                variants = [("dispatch", plan), ("T", t), ("T-cap64", tune.with_meta(t, maxnreg=64))]
                print(_head(M, 1048576, dtype, "fwd", log, plan, sms)
                      + _compare(M, 1048576, dtype, "fwd", log, variants, sms), flush=True)


ROWS_FEW2_FWD = [("float32", 512), ("float32", 1024), ("bfloat16", 512), ("float16", 512), ("bfloat16", 2048),
                 ("float32", 2048)]
ROWS_FEW2_BWD = [("float32", 128), ("bfloat16", 128), ("float16", 128), ("float16", 256)]
ROWS_FEW_SHAPES = [("float32", 256), ("float32", 512), ("bfloat16", 512), ("float16", 512), ("bfloat16", 256),
                   ("bfloat16", 1024)]


def rows_few(sms, shapes=ROWS_FEW_SHAPES, directions=("bwd",)):
    """The rows plans (65536 rows; softmax and log_softmax) against programs of fewer rows and
    warps, down to one row a program at 4 warps as Liger-Kernel's softmax backward runs
    (bmBwW: B rows a program, W warps), by the benchmark's clock, twice each."""
    for dtype, N in shapes:
        M = 65536
        itemsize = getattr(torch, dtype).itemsize
        for direction in directions:
            for log in (False, True):
                plan, _ = _dispatch_plan(M, N, dtype, direction, sms, None, log)
                kw = plan[0].kwargs
                variants = [("dispatch", plan)]
                kb = max(1, 1024 // (N * itemsize))  # rows of 1 KB a tensor
                for B, W in ((1, 4), (1, 2), (2, 2), (2, 4), (kb, 4), (kw["BLOCK_M"] // 2, kw["num_warps"] // 2)):
                    if B < 1 or W < 1 or (B, W) == (kw["BLOCK_M"], kw["num_warps"]) or any(
                            n == f"bm{B}w{W}" for n, _ in variants):
                        continue
                    variants.append((f"bm{B}w{W}", tune.with_rows_tiling(plan, M, B, W, itemsize, log, direction == "fwd")))
                print(f"{dtype} {M}x{N} {'log' if log else 'sm'} {direction} | dispatch: block_m={kw['BLOCK_M']},"
                      f"warps={kw['num_warps']} | " + _compare(M, N, dtype, direction, log, variants, sms), flush=True)


# Rows plans against other tilings (`rows_tilings`), each case (dtype, N, log, tilings):
# --rows-1k16: the 16-bit forward of 1024-value rows (one row a program at 4 warps, ROWS_FWD_ONE_ROW_N),
# which XLA (2 rows a program at 4 warps: probe_xla_tiles.log) and Liger ran 0.2-0.5% ahead in every
# published run.
ROWS_1K16 = [(dtype, 1024, log, ((2, 4), (2, 8), (4, 8), (1, 8), (4, 4), (1, 2)))
             for dtype in ("bfloat16", "float16") for log in (False, True)]
# --rows-bwd32: float32 backwards of 2048- and 4096-value rows (one row a program, FILL_SHARED), which
# torch.softmax's log_softmax backward ran 0.1-0.9% ahead in every published run.
ROWS_BWD32 = [("float32", N, log, ((1, 4), (1, 16), (2, 8), (2, 16), (4, 16)))
              for N, log in ((4096, True), (4096, False), (2048, True))]
# --rows-bwd32-more: the two tilings that led there (16 warps; 2 rows at 16 warps) on more rows of the same
# lanes, both ops, and bf16.
ROWS_BWD32_MORE = [("float32", N, log, ((1, 16), (1, 8))) for N in (1152, 1536, 1792, 2000, 2048) for log in (True, False)] + \
    [("float32", N, log, ((2, 16),)) for N in (2304, 3000, 3584, 4096) for log in (True, False)] + \
    [("bfloat16", 2048, True, ((1, 16),)), ("bfloat16", 4096, True, ((2, 16),))]
# --rows-small32: float32 512- and 1024-value rows (4 and 2 rows a program at 4 warps, filled), where
# torch.compile's and Liger's forward (one row a program at 4 warps: 2 and 4 KB tiles) and Liger's backward
# ran 0.2-0.8% ahead in the published runs: fewer rows a program, filled or not (FILL_SHARED_MIN_TILE
# leaves 2 KB tiles plain).
ROWS_SMALL32 = [("float32", N, log, ((1, 4, False), (1, 4, True), (2, 4, False), (2, 4, True), (4, 4, False),
                                     (4, 4, True), (1, 2, True), (2, 2, True), (1, 8, True)))
                for N in (512, 1024) for log in (False, True)]
# --rows-small32-rule: where one row a program, filled, led there (bm1w4f; the backward of 1024 at 8 warps,
# bm1w8f), the same on float32 rows of 256-1024 values, full or in part of their lanes, at ~256 MB and
# at fewer rows.
ROWS_SMALL32_RULE = {
    d: [("float32", N, log, t, *M) for N, M in [(n, ()) for n in (256, 384, 512, 640, 768, 896, 1000, 1024)]
        + [(512, (8192,)), (1024, (4096,)), (1024, (1024,))] for log in (False, True)]
    for d, t in (("fwd", ((1, 4, True), (1, 2, True), (2, 4, True), (1, 4, False))),
                 ("bwd", ((1, 4, True), (1, 8, True), (1, 2, True), (2, 4, True))))}
# --rows-bwd32-one: the float32 backward's one row a program (4 warps in 512 lanes, 8 in 1024), plain and
# filled, on rows FILL_SHARED leaves plain (N < 512, mid-line ends, peeled 781) and at fewer rows.
ROWS_BWD32_ONE = [("float32", N, log, ((1, 4, False), (1, 4, True), (1, 8, False), (1, 8, True)), *M)
                  for N, M in [(n, ()) for n in (384, 448, 600, 781, 1000, 1024)]
                  + [(512, (2048,)), (1024, (2048,)), (1024, (16384,)), (768, (4096,))] for log in (False, True)]
# --rows-bwd32-one-edge: the same at the short end of 512 lanes (N = 288-352) and more lengths in 1024 lanes.
ROWS_BWD32_ONE_EDGE = [("float32", N, log, ((1, 2, False), (1, 2, True), (1, 4, False), (1, 4, True), (1, 8, False),
                                            (1, 8, True))) for N in (288, 300, 320, 352, 544, 800) for log in (False, True)]
# --rows-bwd32-one-1k: 1024 lanes from 520 up, where 8 warps lost 13% at 544 and gained at 600.
ROWS_BWD32_ONE_1K = [("float32", N, log, ((1, 4, False), (1, 4, True), (1, 8, False), (1, 8, True)))
                     for N in (520, 560, 576, 592, 640, 704, 896) for log in (False, True)]
# --rows-bwd16-one: the 16-bit backward in 1024 lanes (2 rows a program at 4 warps; log_softmax 4,
# ROWS_LOG_BWD16_DOUBLE_LANES), where Liger's (one row a program at 4 warps) ran 0.1-0.5% ahead at 781:
# one row a program at 2, 4 and 8 warps, plain and filled.
ROWS_BWD16_ONE = [(dtype, N, log, ((1, 2, False), (1, 4, False), (1, 4, True), (1, 8, False), (1, 8, True),
                                   (2, 4, True)))
                  for dtype in ("float16", "bfloat16") for N in (640, 781, 1000, 1024) for log in (False, True)]
# --rows-bwd16-one-m: the same, one row a program at 4 warps plain and filled, at fewer rows and at 560 / 600.
ROWS_BWD16_ONE_M = [("bfloat16", N, log, ((1, 4, False), (1, 4, True)), *M)
                    for N, M in [(560, ()), (600, ()), (781, (16384,)), (781, (4096,)), (781, (1000,)), (1024, (16384,)),
                                 (1024, (4096,)), (1024, (2048,)), (1024, (1000,))] for log in (False, True)] + \
    [("float16", N, log, ((1, 4, False), (1, 4, True)), 4096) for N in (781, 1024) for log in (False, True)]
# --rows-bwd16-2k: the 16-bit backward in 2048 lanes (one row a program at 4 warps, 16 values a thread of
# each tensor) at 8 warps, as the float32 one (ROWS_BWD32_WIDE_LANES), and at 4, plain and filled.
ROWS_BWD16_2K = [(dtype, N, log, ((1, 8, False), (1, 8, True), (1, 4, True), (1, 4, False)))
                 for dtype in ("bfloat16", "float16") for N in (1152, 1536, 2000, 2048) for log in (False, True)]


# --rows-code: the rows kernels' code within a tile, on the shapes where a peer has stayed 0.2-0.8% ahead
# at every tiling (torch.compile's float32 512 forward, torch's float32 4096 log_softmax backward, XLA's
# and Liger's 16-bit forwards of 1024-2048 values), beside shapes the adapters lead: I, offsets in 32
# bits (the program id not widened to int64, as inductor indexes tensors of fewer than 2**31 values); U,
# no column mask where the row fills its lanes (N == BLOCK_N, no tail; the rows' own mask kept); F, no mask at all (every row of the grid exists: M a multiple of BLOCK_M, as
# inductor's kernels of static shapes); IU, IF. (dtype, N, log, direction, M or None for ~256 MB.)
ROWS_CODE_EDITS = {
    "I": {"softmax_fwd_rows": [("rows = (pid if OFFS32 else pid.to(tl.int64)) * BLOCK_M", "rows = pid * BLOCK_M")],
          "softmax_bwd_rows": [("rows = tl.program_id(0).to(tl.int64) * BLOCK_M", "rows = tl.program_id(0) * BLOCK_M")]},
    "U": {fn: [("    mask = row_ok & mask\n", "    mask = row_ok & tl.full((1, BLOCK_N), 1, tl.int1)\n")]
          for fn in ("softmax_fwd_rows", "softmax_bwd_rows")}}
ROWS_CODE_EDITS["F"] = {fn: [("    mask = row_ok & mask\n", "    mask = tl.full((BLOCK_M, BLOCK_N), 1, tl.int1)\n")]
                        for fn in ROWS_CODE_EDITS["U"]}
for _k in ("U", "F"):
    ROWS_CODE_EDITS["I" + _k] = {fn: ROWS_CODE_EDITS["I"][fn] + ROWS_CODE_EDITS[_k][fn] for fn in ROWS_CODE_EDITS["I"]}
ROWS_CODE_CASES = [("float32", 512, False, "fwd", None), ("float32", 512, True, "fwd", None),
                   ("bfloat16", 1024, False, "fwd", None), ("float16", 1024, True, "fwd", None),
                   ("bfloat16", 1024, True, "fwd", None), ("float16", 2048, True, "fwd", None),
                   ("bfloat16", 256, True, "fwd", None), ("float32", 8192, False, "fwd", 8192),
                   ("bfloat16", 8192, False, "fwd", 8192), ("float32", 4096, True, "bwd", 16384),
                   ("float32", 4096, False, "bwd", 16384), ("float32", 8192, False, "bwd", 8192),
                   ("bfloat16", 8192, True, "bwd", 16384), ("bfloat16", 512, False, "bwd", None),
                   ("float16", 512, False, "bwd", None), ("float32", 256, False, "bwd", None)]

# --rows-code-sweep: I, F and IF on every dtype's rows of 128-2048 values at ~256 MB, both ops and directions.
ROWS_CODE_SWEEP = [(dtype, N, log, direction, None) for dtype in ("bfloat16", "float16", "float32")
                   for N in (128, 256, 512, 1024, 2048) for direction in ("fwd", "bwd") for log in (False, True)]

# --rows-code-more: I on the 16-bit forwards of short rows (N = 32-384, and 1152, 2 rows of 2048 lanes), at
# ~256 MB and at 8192 rows; F, U, I and IF on the 16-bit forwards of 1024 values at fewer rows. Each case's
# sixth item names its variants.
ROWS_CODE_MORE = [(dtype, N, log, "fwd", M, ("I",)) for dtype in ("bfloat16", "float16")
                  for N, log, M in [(32, True, None), (64, True, None), (128, True, 8192), (192, True, None),
                                    (256, True, 8192), (384, True, None), (1152, True, None), (64, False, None),
                                    (192, False, None), (384, False, None)]] + \
    [(dtype, 1024, log, "fwd", M, ("U", "F", "I", "IF")) for dtype in ("bfloat16", "float16")
     for log in (True, False) for M in (16384, 4096)]

# --rows-offs32: dispatch's 16-bit forwards with OFFS32 (ROWS_FWD16_OFFS32_LANES) and EVEN_N
# (ROWS_FWD_ONE_ROW_N) against the same plans without (EVEN_M as dispatch._rows_m gives it), at ~256 MB
# and at 4096 rows. (dtype, N, log, M or None.)
ROWS_OFFS32_CASES = [(dtype, N, log, M) for dtype in ("bfloat16", "float16")
                     for N in (32, 64, 100, 128, 192, 256, 300, 384, 500, 1024) for log in (False, True)
                     for M in (None, 4096)]


# --rows-offs32-more: OFFS32 on and off (EVEN_N as dispatch has it) on more 16-bit forwards of several
# rows a program, rows that fill part of their lanes among them.
ROWS_OFFS32_MORE = [(dtype, N, log, M) for dtype in ("bfloat16", "float16")
                    for N in (40, 72, 80, 100, 120, 160, 200, 240, 300) for log in (False, True)
                    for M in (None, 4096)]

# --rows-offs32-m: the softmax forward (OFFS32 on and off) at 8192-32768 rows, between the ~256 MB sweep
# (on: 0-5% faster) and 4096 rows (on: mostly 0.5-2.6% slower).
ROWS_OFFS32_M = [(dtype, N, False, M) for dtype, N in [("bfloat16", 32), ("bfloat16", 64), ("bfloat16", 80),
                                                       ("bfloat16", 120), ("bfloat16", 128), ("bfloat16", 256),
                                                       ("float16", 64), ("float16", 120)]
                 for M in (8192, 16384, 32768)]

# --rows-segments: the 16-bit forward of 1152-value rows (bf16's log_softmax 1.5% behind float16's and 0.4%
# behind XLA's in the published run) in 2048 lanes, as dispatch holds them (2 rows a program, SPARSE_ROWS_FILL),
# against 1024 + 128 lanes (row_segments takes a tail of at most 1/16 of the block; this one is 1/8): (BLOCK_M,
# num_warps, OFFS32) a variant, ~256 MB.
ROWS_SEGMENTS = [(1, 4, False), (2, 4, False), (2, 8, False), (4, 8, False), (1, 2, False), (2, 4, True),
                 (4, 8, True)]


def rows_segments(sms, N=1152, variants=ROWS_SEGMENTS):
    """dispatch's 16-bit forward plan of ~256 MB of N-value rows against it as BLOCK_N + TAIL_N segments
    (row_segments without its 1/16 bound) at each variant's tiling, by the benchmark's clock."""
    from multisoftmax import dispatch
    main = triton.next_power_of_2(N) // 2
    tail = triton.next_power_of_2(N - main)
    for dtype in ("bfloat16", "float16"):
        for log in (True, False):
            M = min(65536, 256 * 2**20 // (N * 2))
            plan, _ = _dispatch_plan(M, N, dtype, "fwd", sms, None, log)
            kw = plan[0].kwargs
            cases = [("dispatch", plan), ("dispatch-o", tune.with_meta(plan, OFFS32=True))]
            for B, W, offs32 in variants:
                p = tune.with_rows_tiling(plan, M, B, W, 2, log, True)
                cases.append((f"s{main}+{tail}b{B}w{W}" + ("o" if offs32 else ""),
                              tune.with_meta(p, BLOCK_N=main, TAIL_N=tail, OFFS32=offs32)))
            print(f"{dtype} {M}x{N} {'log' if log else 'sm'} fwd | block_m={kw['BLOCK_M']},block_n={kw['BLOCK_N']},"
                  f"warps={kw['num_warps']} | " + _compare(M, N, dtype, "fwd", log, cases, sms), flush=True)
    assert dispatch.row_segments(N) == (2 * main, 0)


def rows_offs32(sms, cases=ROWS_OFFS32_CASES, both=False):
    """dispatch's rows plan of each case against it with OFFS32 and EVEN_N off (`both`: the plan with
    OFFS32 on and off, EVEN_N as dispatch has it), by the benchmark's clock."""
    from multisoftmax import dispatch
    for dtype, N, log, M in cases:
        itemsize = getattr(torch, dtype).itemsize
        M = M or min(65536, 256 * 2**20 // (N * itemsize))
        plan, _ = _dispatch_plan(M, N, dtype, "fwd", sms, None, log)
        kw = plan[0].kwargs
        old = tune.with_meta(plan, OFFS32=False, EVEN_N=False,
                             EVEN_M=dispatch._rows_m(M, kw["BLOCK_M"], itemsize, log, True)["EVEN_M"])
        variants = ([("on", tune.with_meta(plan, OFFS32=True)), ("off", tune.with_meta(plan, OFFS32=False))] if both
                    else [("dispatch", plan), ("off", old)])
        print(f"{dtype} {M}x{N} {'log' if log else 'sm'} fwd | block_m={kw['BLOCK_M']},warps={kw['num_warps']},"
              f"even_m={kw['EVEN_M']:d},even_n={kw['EVEN_N']:d},offs32={kw['OFFS32']:d} | "
              + _compare(M, N, dtype, "fwd", log, variants, sms), flush=True)


def rows_code(sms, cases=ROWS_CODE_CASES, edits=ROWS_CODE_EDITS):
    """dispatch's rows plan of each case against the same launch of the kernel variants of `edits`
    (or those a case's sixth item names; filled where dispatch.fills_shared fills the plan's launch), by the benchmark's clock, twice
    each (`_compare`)."""
    import dataclasses
    from multisoftmax import dispatch
    for suffix, fns in edits.items():
        _function_variants("_" + suffix, fns)
    rule = dispatch.fills_shared
    base = lambda one: dataclasses.replace(one, kernel=one.kernel.split("_rows")[0] + "_rows")  # noqa: E731
    for dtype, N, log, direction, M, *names in cases:
        itemsize = getattr(torch, dtype).itemsize
        M = M or min(65536, 256 * 2**20 // (N * itemsize))
        plan, _ = _dispatch_plan(M, N, dtype, direction, sms, None, log)
        kw = plan[0].kwargs
        names = names[0] if names else tuple(edits)
        assert len(plan) == 1 and plan[0].kernel.endswith("_rows"), (dtype, N, plan)
        assert all("U" not in k and "F" not in k for k in names) or (
            kw["BLOCK_N"] == N and not kw["TAIL_N"] and not kw["PEEL"] and M % kw["BLOCK_M"] == 0), (dtype, N, kw)
        variants = [("dispatch", plan)] + [
            (suffix, tuple(dataclasses.replace(one, kernel=one.kernel + "_" + suffix) for one in plan))
            for suffix in names]
        with mock.patch.object(dispatch, "fills_shared", lambda one: rule(base(one))):
            line = _compare(M, N, dtype, direction, log, variants, sms)
        print(f"{dtype} {M}x{N} {'log' if log else 'sm'} {direction} | block_m={kw['BLOCK_M']},warps={kw['num_warps']},"
              f"even_m={kw['EVEN_M']:d},fill={rule(plan[0]):d} | " + line, flush=True)


def inductor_code(sms):
    """The Triton source torch.compile(torch.softmax / log_softmax, dynamic=False) runs on float32 65536 x 512
    (the benchmark's compile peer), from torch._inductor.utils.run_and_get_code."""
    import functools
    from torch._inductor.utils import run_and_get_code
    for op in ("softmax", "log_softmax"):
        x = torch.randn(65536, 512, device="cuda")
        fn = torch.compile(functools.partial(getattr(torch, op), dim=-1), dynamic=False)
        _, code = run_and_get_code(fn, x)
        print(f"==== {op} 65536x512 float32: inductor's code", flush=True)
        for src in code:
            print(src, flush=True)


def rows_tilings(sms, cases, direction):
    """dispatch's rows plan of each case's `direction` (M for ~256 MB, at most 65536, or a case's fifth
    item, (dtype, N, log, tilings, M)) against its
    tilings ((B rows a program, W warps): bmBwW, with f where the launch asks for the SM's shared
    memory: where dispatch.fills_shared says, or as a tiling's third item, (B, W, fill), forces it;
    the dispatched tiling itself left out unless forced), by the benchmark's clock, twice each."""
    from multisoftmax import dispatch
    rule = dispatch.fills_shared
    for dtype, N, log, tilings, *M in cases:
        itemsize = getattr(torch, dtype).itemsize
        M = M[0] if M else min(65536, 256 * 2**20 // (N * itemsize))
        plan, _ = _dispatch_plan(M, N, dtype, direction, sms, None, log)
        kw = plan[0].kwargs
        forced, variants = {}, [("dispatch", plan)]
        for B, W, *fill in tilings:
            if not fill and (B, W) == (kw["BLOCK_M"], kw["num_warps"]):
                continue
            p = tune.with_rows_tiling(plan, M, B, W, itemsize, log, direction == "fwd")
            if fill:
                forced[id(p[0])] = fill[0]
            variants.append((f"bm{B}w{W}" + ("f" if forced.get(id(p[0]), rule(p[0])) else ""), p))
        with mock.patch.object(dispatch, "fills_shared", lambda one: forced.get(id(one), rule(one))):
            line = _compare(M, N, dtype, direction, log, variants, sms)
        print(f"{dtype} {M}x{N} {'log' if log else 'sm'} {direction} | dispatch: block_m={kw['BLOCK_M']},"
              f"warps={kw['num_warps']},fill={rule(plan[0]):d} | " + line, flush=True)


SPLIT_FEW_SHAPES = [(16, 1048576), (64, 256000), (64, 128256), (32, 256000), (8, 256000), (8, 128256), (1, 256000)]
# Eviction hints for the split forward (E): the first kernel's x stays in L2 (evict_last), the
# second kernel's read of it and its y go first (evict_first), so y's lines do not push out
# the x lines still to be read.
SPLIT_EVICT = {"softmax_fwd_split_stats": [(
    'x = tl.load(x_row + start + cols, mask=start + cols < hi, other=-float("inf")).to(acc_ty)',
    'x = tl.load(x_row + start + cols, mask=start + cols < hi, other=-float("inf"), eviction_policy="evict_last").to(acc_ty)')],
    "softmax_fwd_split_norm": [(
        'x = tl.load(x_row + start + cols, mask=mask, other=-float("inf")).to(acc_ty)',
        'x = tl.load(x_row + start + cols, mask=mask, other=-float("inf"), eviction_policy="evict_first").to(acc_ty)'), (
        'tl.store(y_row + start + cols, _normalize(x, m, s, LOG).to(y_ptr.dtype.element_ty), mask=mask)',
        'tl.store(y_row + start + cols, _normalize(x, m, s, LOG).to(y_ptr.dtype.element_ty), mask=mask, '
        'eviction_policy="evict_first")')]}


def _function_variants(suffix, edits, extra=""):
    """Register multisoftmax.kernels.softmax.<fn><suffix> for each fn of `edits` ({fn: [(old,
    new), ...]}): fn of a copy of kernels/softmax.py whose text inside fn's definition (up to
    the next @triton.jit) has each `old` (once there) replaced by `new`; `extra`: source text
    (helpers the edits call) appended to the copy."""
    from multisoftmax.kernels import softmax as kernels_src
    src = open(kernels_src.__file__).read()
    for fn, pairs in edits.items():
        start = src.index(f"def {fn}(")
        end = src.find("\n@triton.jit", start)
        body = src[start:end]
        for old, new in pairs:
            assert body.count(old) == 1, (fn, old)
            body = body.replace(old, new)
        src = src[:start] + body + src[end:]
    mod = _module_from_source(f"variant{suffix}", src + extra)
    for fn in edits:
        setattr(kernels_src, fn + suffix, getattr(mod, fn))


def _wall_us(plan, bufs, names, out, calls=20):
    """us a call of `plan` by CUDA events around a graph of `calls` calls (gaps between kernels
    included: timing.graph_event_us), fresh outputs each call, one input."""
    args = tuple(bufs[n] for n in names)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        tune.run_plan(plan, dict(zip(names, args)), torch.empty_like(out))
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    outs = [torch.empty_like(out) for _ in range(calls)]
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=side):
        for o in outs:
            tune.run_plan(plan, dict(zip(names, args)), o)
    graph.replay()
    torch.cuda.synchronize()
    import timing
    return timing.graph_event_us(graph, calls)


def split_few(sms, shapes=SPLIT_FEW_SHAPES, dtypes=("bfloat16", "float32")):
    """Few long rows whose x fits in L2: dispatch's cooperative forward against the two-kernel
    split forward (partials, then a second read of x, from L2, and the write): dispatch's split
    chunks (split), chunks of 8192/16384/32768 values (sC), and the best of those with the
    eviction hints of SPLIT_EVICT (sC-E). By the benchmark's clock (kernel time, fresh input
    copies) twice, then the wall time of a graph of 20 calls on one input (w: gaps between
    kernels included, x of the previous call partly in L2)."""
    import dataclasses
    from multisoftmax import dispatch
    _function_variants("_E", SPLIT_EVICT)
    evict = lambda p: tuple(dataclasses.replace(l, kernel=l.kernel + "_E") for l in p)  # noqa: E731
    for dtype in dtypes:
        for M, N in shapes:
            for log in (False, True):
                plan, names = _dispatch_plan(M, N, dtype, "fwd", sms, None, log)
                variants = [("dispatch", plan), ("split", _dispatch_plan(M, N, dtype, "fwd", sms, "split", log)[0])]
                for chunk in (8192, 16384, 32768):
                    n_chunks = triton.cdiv(N, chunk)
                    with mock.patch.object(dispatch, "_split", lambda *a, c=chunk, n=n_chunks: (c, n)):
                        p = dispatch.plan_forward.__wrapped__(M, N, N, N, dtype, log, sms, "split")
                    variants += [(f"s{chunk // 1024}k", p), (f"s{chunk // 1024}k-E", evict(p))]
                line = _head(M, N, dtype, "fwd", log, plan, sms) + _compare(M, N, dtype, "fwd", log, variants, sms)
                x, y, dy, out, bufs, nbytes = tune.make_inputs(M, N, getattr(torch, dtype), "fwd", log)
                line += " || w " + " ".join(f"{name} {_wall_us(p, bufs, names, out):.2f}" for name, p in variants)
                del x, y, dy, out, bufs
                torch.cuda.empty_cache()
                print(line, flush=True)


SPLIT_TINY_SHAPES = [(1, 128256), (1, 256000), (4, 128256), (8, 128256), (8, 256000), (16, 128256), (16, 256000),
                     (32, 128256)]


def _split_plan(M, N, dtype, direction, log, sms, chunk, warps=8):
    """The split plan (two kernels, no counters) in chunks of `chunk` values, tiles of
    min(chunk, LOOP_BLOCK_N) values, `warps` warps."""
    import dataclasses
    from multisoftmax import dispatch
    with mock.patch.object(dispatch, "_split", lambda *a: (chunk, triton.cdiv(N, chunk))):
        plan, _ = _dispatch_plan(M, N, dtype, direction, sms, "split", log)
    block = min(chunk, plan[0].kwargs["BLOCK_N"])
    return tuple(dataclasses.replace(l, meta=tuple({**l.kwargs, "BLOCK_N": block, "num_warps": warps}.items()))
                 for l in plan)


def split_tiny(sms, shapes=SPLIT_TINY_SHAPES, dtypes=("bfloat16", "float32")):
    """Few long rows, forward and backward: dispatch's cooperative plan (which the JAX adapter
    runs after a memset of its counters or TAG words: 0.77-1.09 us, probe_events.log) against
    the split plan (two kernels, nothing to zero) in chunks of 2048 to 16384 values (sCk; w4:
    4 warps), by the benchmark's clock (kernel time, no memset counted), twice each."""
    for dtype in dtypes:
        for M, N in shapes:
            for direction in ("fwd", "bwd"):
                for log in (False, True):
                    plan, _ = _dispatch_plan(M, N, dtype, direction, sms, None, log)
                    variants = [("dispatch", plan)]
                    for chunk in (2048, 4096, 8192, 16384):
                        variants.append((f"s{chunk // 1024}k", _split_plan(M, N, dtype, direction, log, sms, chunk)))
                    variants.append(("s4k-w4", _split_plan(M, N, dtype, direction, log, sms, 4096, 4)))
                    kw = plan[0].kwargs
                    print(f"{dtype} {M}x{N} {'log' if log else 'sm'} {direction} programs={plan[0].grid[0]} "
                          f"tag={kw.get('TAG', 0):d} | " + _compare(M, N, dtype, direction, log, variants, sms),
                          flush=True)


JAX_FRESH_SHAPES = [(1, 32768), (8, 32768), (1, 65536), (1, 128256), (2, 128256), (4, 128256), (8, 128256),
                    (16, 128256), (1, 256000), (8, 256000), (16, 256000), (1, 1048576)]


@contextlib.contextmanager
def _split_fresh_rule(on: bool):
    """dispatch's SPLIT_FRESH_* rule for the JAX adapter's few long rows on (as it stands) or off (both
    limits 0: the cooperative plan), with the plan caches and JAX's traces cleared on the way in and
    the plan caches on the way out."""
    import jax
    from multisoftmax import dispatch
    limit = 1 if on else 0  # a factor on both limits
    with mock.patch.multiple(dispatch, SPLIT_FRESH_FWD_MAX_PER_SM=dispatch.SPLIT_FRESH_FWD_MAX_PER_SM * limit,
                             SPLIT_FRESH_BWD_MAX_PER_SM=dispatch.SPLIT_FRESH_BWD_MAX_PER_SM * limit):
        dispatch.plan_forward.cache_clear()
        dispatch.plan_backward.cache_clear()
        jax.clear_caches()  # the adapter's inner functions are traced once per shape otherwise
        yield
    dispatch.plan_forward.cache_clear()
    dispatch.plan_backward.cache_clear()


def _jax_case(M, N, dtype, direction, log, residuals_as_argument):
    """(f, args, bytes moved) of the JAX adapter's call on an M x N case: the forward of x, or the
    backward of dy through the vjp pullback of a forward outside the timed function, its residuals
    an argument of f (`residuals_as_argument`, as bench/run.py times ms-jax) or held by f (as the
    jax_fresh probe did)."""
    import jax
    import jax.numpy as jnp
    import multisoftmax.jax as msj
    fn = msj.log_softmax if log else msj.softmax
    x = jax.random.normal(jax.random.PRNGKey(M + N), (M, N), getattr(jnp, dtype))
    if direction == "fwd":
        return (lambda a: fn(a, -1)), (x,), 2 * x.nbytes
    dy = jax.random.normal(jax.random.PRNGKey(1), (M, N), getattr(jnp, dtype))
    if residuals_as_argument:
        pullback = jax.jit(lambda a: jax.vjp(lambda t: fn(t, -1), a)[1])(x)
        return (lambda pb, d: pb(d)[0]), (pullback, dy), 3 * x.nbytes
    _, pull = jax.vjp(lambda a: fn(a, -1), x)
    return (lambda d: pull(d)[0]), (dy,), 3 * x.nbytes


def _jax_rule_cases(sms, shapes, dtypes, register_cap=True, directions=("fwd", "bwd")):
    """(dtype, M, N, direction, log, the JAX adapter's plan) for each case of the SPLIT_FRESH_* probes."""
    from multisoftmax import dispatch
    for dtype in dtypes:
        for M, N in shapes:
            for direction in directions:
                for log in (False, True):
                    yield dtype, M, N, direction, log, (
                        dispatch.plan_forward(M, N, N, N, dtype, log, sms, counters_per_call=True)
                        if direction == "fwd" else
                        dispatch.plan_backward(M, N, N, N, N, dtype, log, sms, counters_per_call=True,
                                               register_cap=register_cap))


def jax_fresh(sms, shapes=JAX_FRESH_SHAPES, dtypes=("bfloat16", "float32")):
    """The JAX adapter (jax-triton, which zeroed the cooperative kernels' counters or TAG words on
    every call until d56e883; XLA's zeros since: jax_lone) with dispatch's split plans for few long rows (SPLIT_FRESH_FWD_MAX_PER_SM and
    _BWD_) against the same with that rule off (the cooperative plan and its memset), forward
    and backward (the vjp pullback, as the benchmark times ms-jax), by the benchmark's JAX clock
    (profiler: GPU time of a jitted chain, the memset included), twice each."""
    import timing
    l2 = torch.cuda.get_device_properties(0).L2_cache_size

    def timed(M, N, dtype, direction, log, rule_on):
        with _split_fresh_rule(rule_on):
            f, args, nbytes = _jax_case(M, N, dtype, direction, log, residuals_as_argument=False)
            _, us, _, _ = timing.jax_time(f, args, nbytes, gpu=True, l2_bytes=l2)
        return us

    for dtype, M, N, direction, log, plan in _jax_rule_cases(sms, shapes, dtypes, register_cap=False):
        res = [(on, timed(M, N, dtype, direction, log, on)) for _ in range(2) for on in (False, True)]
        print(f"{dtype} {M}x{N} {'log' if log else 'sm'} {direction} | jax plan: "
              f"{'+'.join(l.kernel.split('_', 2)[2] for l in plan)} grid={plan[0].grid} | "
              + " | ".join(f"{'split' if on else 'coop'} {us:.2f} us" for on, us in res), flush=True)


JAX_LONE_SHAPES = [(1, 32768), (1, 65536), (1, 128256), (4, 128256), (8, 128256), (1, 256000), (8, 256000),
                   (1, 1048576)]


# --jax-lone-tag32: float32 forwards whose cooperative plan takes TAG (COOP_TAG_FWD32_MIN_PER_SM: from
# 0.75 programs an SM, rows of at most COOP_TAG_MAX_CHUNKS chunks) inside the JAX adapter's split grids,
# with rows just under TAG's grid (6 x 128256, 0.73 an SM) and on counters (1 x 1048576) beside them.
JAX_TAG32_SHAPES = [(6, 128256), (8, 128256), (12, 128256), (16, 128256), (4, 256000), (8, 256000), (16, 65536),
                    (32, 65536), (32, 32768), (64, 32768), (1, 1048576)]


def jax_lone(sms, shapes=JAX_LONE_SHAPES, dtypes=("bfloat16", "float32"), directions=("fwd", "bwd")):
    """dispatch's SPLIT_FRESH_* rule since the JAX adapter takes the cooperative kernels' scratch from
    zeros that XLA makes (d56e883): the split plan against the cooperative one (the rule off), the
    forward and the backward set up as the benchmark sets them (the pullback of a jitted forward, an
    argument of the timed function), each timed two ways: by the benchmark's clock ("chain": a jitted
    chain of calls, where XLA makes the zeros of all of them in one kernel) and as lone calls ("lone":
    the jitted function called again and again, each call its own dispatch with its own zeros
    kernel; the GPU events of each call summed, bench/timing.py's profiled_gpu_us), over the same
    input copies."""
    import jax
    import jax.numpy as jnp
    import timing
    l2 = torch.cuda.get_device_properties(0).L2_cache_size

    def timed(M, N, dtype, direction, log, rule_on):
        with _split_fresh_rule(rule_on):
            f, args, nbytes = _jax_case(M, N, dtype, direction, log, residuals_as_argument=True)
            _, chain_us, _, _ = timing.jax_time(f, args, nbytes, gpu=True, l2_bytes=l2)
            copies = timing._copies(nbytes, l2, timing.JAX_MAX_COPIES)
            sets = [args] + [jax.tree.map(lambda a: jnp.copy(a) if isinstance(a, jax.Array) else a, args)
                             for _ in range(copies - 1)]
            jf, calls = jax.jit(f), max(20, copies)

            def lone():
                for i in range(calls):
                    out = jf(*sets[i % copies])
                jax.block_until_ready(out)

            lone_us = timing.profiled_gpu_us(lone, calls)
            sets = None  # not del: a closure above names it
        return chain_us, lone_us

    for dtype, M, N, direction, log, plan in _jax_rule_cases(sms, shapes, dtypes, directions=directions):
        coop, split = timed(M, N, dtype, direction, log, False), timed(M, N, dtype, direction, log, True)
        print(f"{dtype} {M}x{N} {'log' if log else 'sm'} {direction} | jax plan: "
              f"{'+'.join(l.kernel.split('_', 2)[2] for l in plan)} | coop chain {coop[0]:.2f} lone "
              f"{coop[1]:.2f} us | split chain {split[0]:.2f} lone {split[1]:.2f} us", flush=True)


# SENTINEL (scratch kernels softmax_fwd_coop_S / softmax_bwd_coop_S): the arrival counters' wait
# without its release fence. A partial is published by a relaxed atomic exchange as its float32
# bits XOR SENT_KEY (a NaN payload no partial has once NaNs are made canonical), so a zero word
# is one not yet written; the arrival is a relaxed atomic add, the polls relaxed reads; after the
# counter a program reads its row's words (by atomics; SV: by volatile loads) until none is zero
# (the counter may be seen before a word). The last of the 2 * n_chunks arrivals sets the counter
# and the row's words back to zero. The words follow the counters and the ticket in the "zeros"
# buffer (count_ptr + M + 1), which the kernels leave zero; part_ptr is not used.
# SENT_KEY, _sent_word and _sent_arrive are the kernels' own (kernels/softmax.py's SENT, which
# came from this probe); the helpers below are the probe's, the backward's and its words' reads.
SENT_HELPERS = """

@triton.jit
def _sent_words(count_ptr, M, row, n_chunks, PARTS: tl.constexpr):
    return count_ptr + M + 1 + row * PARTS * n_chunks


@triton.jit
def _sent_read(w_ptr, c, ok):
    return tl.where(ok, tl.atomic_add(w_ptr + c, 0, mask=ok, sem="relaxed", scope="gpu"), 1)


@triton.jit
def _sent_gather2(w_ptr, n_chunks, BLOCK_C: tl.constexpr):
    c = tl.arange(0, BLOCK_C)
    ok = c < n_chunks
    a = _sent_read(w_ptr, c, ok)
    b = _sent_read(w_ptr + n_chunks, c, ok)
    while tl.min(((a != 0) & (b != 0)).to(tl.int32), axis=0) == 0:
        a = _sent_read(w_ptr, c, ok)
        b = _sent_read(w_ptr + n_chunks, c, ok)
    m_c = tl.where(ok, (a ^ SENT_KEY).to(tl.float32, bitcast=True), -float("inf"))
    s_c = tl.where(ok, (b ^ SENT_KEY).to(tl.float32, bitcast=True), 0.0)
    return m_c, s_c


@triton.jit
def _sent_gather1(w_ptr, n_chunks, BLOCK_C: tl.constexpr):
    c = tl.arange(0, BLOCK_C)
    ok = c < n_chunks
    a = _sent_read(w_ptr, c, ok)
    while tl.min((a != 0).to(tl.int32), axis=0) == 0:
        a = _sent_read(w_ptr, c, ok)
    return tl.where(ok, (a ^ SENT_KEY).to(tl.float32, bitcast=True), 0.0)


@triton.jit
def _sent_leave_parts(count_ptr, w_ptr, row, n_chunks, PARTS: tl.constexpr, BLOCK_C: tl.constexpr):
    left = tl.atomic_add(count_ptr + row, 1, sem="relaxed", scope="gpu") + 1
    if left == 2 * n_chunks:
        c = tl.arange(0, BLOCK_C)
        for p in tl.static_range(PARTS):
            tl.store(w_ptr + p * n_chunks + c, tl.zeros([BLOCK_C], tl.int32), mask=c < n_chunks)
        tl.atomic_xchg(count_ptr + row, 0, sem="relaxed", scope="gpu")
"""


def _sent_late(parts):
    """SENTINEL's edit of a cooperative kernel's late leave (`parts` partials a chunk; the
    forward's is an `elif` since the kernel's own SENT)."""
    return ("""PHASE == 3 and LATE_LEAVE:
            _leave_row(count_ptr, row, n_chunks)""",
            f"""LATE_LEAVE:
            _sent_leave_parts(count_ptr, _sent_words(count_ptr, M, row, n_chunks, {parts}), row, n_chunks, {parts}, BLOCK_C)""")


SENTINEL = {
    "softmax_fwd_coop": [
        ("""            tl.store(part_row + chunk, m_own)
            tl.store(part_row + n_chunks + chunk, s_own)
            if PHASE == 3:
                _wait_for_row(count_ptr, row, n_chunks)""",
         """            sw = _sent_words(count_ptr, M, row, n_chunks, 2)
            tl.atomic_xchg(sw + chunk, _sent_word(m_own), sem="relaxed", scope="gpu")
            tl.atomic_xchg(sw + n_chunks + chunk, _sent_word(s_own), sem="relaxed", scope="gpu")
            _sent_arrive(count_ptr, row, n_chunks, 3)"""),
        ("""            c = tl.arange(0, BLOCK_C)
            m_c = tl.load(part_row + c, mask=c < n_chunks, other=-float("inf"), volatile=True)
            s_c = tl.load(part_row + n_chunks + c, mask=c < n_chunks, other=0.0, volatile=True)
            if PHASE == 3 and not LATE_LEAVE:
                _leave_row(count_ptr, row, n_chunks)""",
         """            m_c, s_c = _sent_gather2(sw, n_chunks, BLOCK_C)
            if not LATE_LEAVE:
                _sent_leave_parts(count_ptr, sw, row, n_chunks, 2, BLOCK_C)"""),
        _sent_late(2)],
    "softmax_bwd_coop": [
        ("""            tl.store(part_row + chunk, dot_own)
            if PHASE == 3:
                _wait_for_row(count_ptr, row, n_chunks)""",
         """            sw = _sent_words(count_ptr, M, row, n_chunks, 1)
            tl.atomic_xchg(sw + chunk, _sent_word(dot_own), sem="relaxed", scope="gpu")
            _sent_arrive(count_ptr, row, n_chunks, 3)"""),
        ("""            c = tl.arange(0, BLOCK_C)
            dot = tl.sum(tl.load(part_row + c, mask=c < n_chunks, other=0.0, volatile=True), axis=0)
            if PHASE == 3 and not LATE_LEAVE:
                _leave_row(count_ptr, row, n_chunks)""",
         """            dot = tl.sum(_sent_gather1(sw, n_chunks, BLOCK_C), axis=0)
            if not LATE_LEAVE:
                _sent_leave_parts(count_ptr, sw, row, n_chunks, 1, BLOCK_C)"""),
        _sent_late(1)],
}


def _keyed_words(plan, late=None, suffix="", **meta):
    """A cooperative plan on counters (one launch, PHASE 3, not TAG) with its "zeros" buffer grown
    for keyed partials (the counters, the ticket, then a word a partial: 2 a chunk forward, 1
    backward; part_ptr not used), LATE_LEAVE `late` (None: the plan's), the constexprs `meta` set
    and `suffix` appended to its kernel's name."""
    import dataclasses
    from multisoftmax import dispatch
    (l,) = plan
    assert not l.kwargs["TAG"] and l.kwargs["PHASE"] == 3
    M, n_chunks, parts = l.scalars[0], l.scalars[-1], 2 if l.kernel.startswith("softmax_fwd") else 1
    kw = dict(l.kwargs, LATE_LEAVE=l.kwargs["LATE_LEAVE"] if late is None else late, **meta)
    outputs = dispatch.coop_outputs((1,), (M + 1 + M * parts * n_chunks,), "zeros", *l.outputs[-1][:2])
    return (dataclasses.replace(l, kernel=l.kernel + suffix, outputs=outputs, meta=tuple(kw.items())),)


def _as_sent(plan, late=None):
    """A cooperative plan on counters as SENTINEL's scratch kernel (`_keyed_words`): its chunks,
    packing and flags kept (but the kernel's own SENT, which came from this probe: off)."""
    return _keyed_words(plan, late, "_S", **({"SENT": False} if "SENT" in plan[0].kwargs else {}))


SENT_CASES = [("bfloat16", 128, 1048576, ("fwd", "bwd")), ("float16", 128, 1048576, ("fwd",)),
              ("bfloat16", 16, 1048576, ("fwd", "bwd")), ("float32", 64, 1048576, ("fwd", "bwd")),
              ("bfloat16", 64, 128256, ("fwd",)), ("bfloat16", 64, 256000, ("fwd",))]


# SENTINEL with the words read by volatile loads instead of atomics (SV).
SENT_READ_ATOMIC = 'return tl.where(ok, tl.atomic_add(w_ptr + c, 0, mask=ok, sem="relaxed", scope="gpu"), 1)'
SENT_READ_VOLATILE = "return tl.where(ok, tl.load(w_ptr + c, mask=ok, other=1, volatile=True), 1)"


def sentinel(sms, cases=SENT_CASES):
    """dispatch's cooperative plans on counters against SENTINEL's kernels (S; SV: the words
    read by volatile loads), LATE_LEAVE as dispatch's. Twice each, by the benchmark's clock."""
    import dataclasses
    _function_variants("_S", SENTINEL, SENT_HELPERS)
    assert SENT_HELPERS.count(SENT_READ_ATOMIC) == 1
    _function_variants("_SV", SENTINEL, SENT_HELPERS.replace(SENT_READ_ATOMIC, SENT_READ_VOLATILE))
    vol = lambda p: (dataclasses.replace(p[0], kernel=p[0].kernel[:-2] + "_SV"),)  # noqa: E731
    for dtype, M, N, directions in cases:
        for direction in directions:
            for log in (False, True):
                plan, _ = _dispatch_plan(M, N, dtype, direction, sms, None, log)
                if not plan[0].kernel.endswith("_coop") or plan[0].kwargs["TAG"]:
                    continue
                variants = [("dispatch", plan), ("S", _as_sent(plan)), ("SV", vol(_as_sent(plan)))]
                print(_head(M, N, dtype, direction, log, plan, sms)
                      + _compare(M, N, dtype, direction, log, variants, sms), flush=True)


def _with_sent(plan, late=None):
    """A cooperative forward plan on counters with the kernels' own SENT on (`_keyed_words`)."""
    assert plan[0].kernel == "softmax_fwd_coop"
    return _keyed_words(plan, late, SENT=True)


SENT_MORE_FP32 = [(64, 1048576), (32, 1048576), (16, 1048576)]
SENT_MORE_FEW = [(16, 1048576), (12, 1048576), (8, 1048576), (4, 1048576), (2, 1048576), (1, 1048576)]
SENT_MORE_16 = [(128, 1048576)]


def sent_more(sms, fp32_shapes=SENT_MORE_FP32, shapes16=SENT_MORE_16):
    """SENT where dispatch's rule does not take it (`_with_sent`), twice each, by the benchmark's
    clock: float32 (S0/S1: LATE_LEAVE off/on), 16-bit packed chunks of 8192 values (SPLIT_SUM) at
    4 and 8 warps with SENT and LATE_LEAVE (P4/P8)."""
    for M, N in fp32_shapes:
        for log in (False, True):
            plan, _ = _dispatch_plan(M, N, "float32", "fwd", sms, None, log)
            variants = [("dispatch", plan), ("S0", _with_sent(plan, False)), ("S1", _with_sent(plan, True))]
            print(_head(M, N, "float32", "fwd", log, plan, sms) + f"sent={plan[0].kwargs['SENT']:d} | "
                  + _compare(M, N, "float32", "fwd", log, variants, sms), flush=True)
    for dtype in ("bfloat16", "float16"):
        for M, N in shapes16:
            for log in (False, True):
                plan, _ = _dispatch_plan(M, N, dtype, "fwd", sms, None, log)
                variants = [("dispatch", plan)] + [
                    (f"P{w}", _with_sent(tune.with_meta(tune.coop_plan(M, N, dtype, "fwd", sms, 8192, w, log),
                                                        PACK=True, SPLIT_SUM=True), True)) for w in (4, 8)]
                print(_head(M, N, dtype, "fwd", log, plan, sms) + f"sent={plan[0].kwargs['SENT']:d} | "
                      + _compare(M, N, dtype, "fwd", log, variants, sms), flush=True)


SENT_WIDE_16 = [(16, 1048576), (24, 1048576), (32, 1048576), (48, 1048576)]


def sent_wide(sms, shapes=SENT_WIDE_16, dtypes=("bfloat16", "float16"), logs=(False, True)):
    """The 16-bit forward on counters below dispatch's SENT grids: dispatch's plan against packed
    chunks of 16384 values at 8 warps with SENT, LATE_LEAVE off and on (W0/W1), twice each, by the
    benchmark's clock."""
    from multisoftmax import dispatch
    for dtype in dtypes:
        for M, N in shapes:
            for log in logs:
                plan, _ = _dispatch_plan(M, N, dtype, "fwd", sms, None, log)
                with mock.patch.object(dispatch, "_coop_tag_fwd", lambda *a: None):  # counters, whatever TAG's rule
                    wide = tune.with_meta(tune.coop_plan(M, N, dtype, "fwd", sms, 16384, 8, log), PACK=True,
                                          SPLIT_SUM=False)
                variants = [("dispatch", plan), ("W0", _with_sent(wide, False)), ("W1", _with_sent(wide, True))]
                print(_head(M, N, dtype, "fwd", log, plan, sms) + f"sent={plan[0].kwargs['SENT']:d} | "
                      + _compare(M, N, dtype, "fwd", log, variants, sms), flush=True)


def narrow_llm(sms, shapes=((64, 128256), (64, 256000)), dtypes=("bfloat16", "float16")):
    """The 16-bit softmax forward of few LLM rows on counters in packed chunks of 4096 values at 4
    warps (N4: 32 registers, 16 programs an SM), on fenced counters and with SENT (N4S), against
    dispatch's plans; twice each, by the benchmark's clock."""
    for dtype in dtypes:
        for M, N in shapes:
            plan, _ = _dispatch_plan(M, N, dtype, "fwd", sms, None, False)
            n4 = tune.coop_plan(M, N, dtype, "fwd", sms, 4096, 4, False)
            assert n4[0].kwargs["PACK"] and not n4[0].kwargs["TAG"]
            variants = [("dispatch", plan), ("N4", n4), ("N4S", _with_sent(n4, True))]
            print(_head(M, N, dtype, "fwd", False, plan, sms) + _compare(M, N, dtype, "fwd", False, variants, sms),
                  flush=True)


# RELOAD_X (scratch): the cooperative forward for grids that must be resident whole at few registers.
# A program reads its chunk in tiles of BLOCK_N (running max and sum, as the online kernel), holds
# nothing across the row's wait (fenced counters), then reads the chunk again (from L2, where it
# has just been read; the tiles read last first) and writes y.
RELOAD_X_SRC = """
import triton
import triton.language as tl
from multisoftmax.kernels.softmax import _aligned, _coop_item, _online_update, _normalize, _wait_for_row, _leave_row


@triton.jit
def softmax_fwd_coop_rl(
    x_ptr, M, N, stride_xm, stride_ym, n_chunks, part_ptr, count_ptr, y_ptr,
    CHUNK_N: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_C: tl.constexpr, TICKET: tl.constexpr,
    ALIGN: tl.constexpr, LOG: tl.constexpr, LATE_LEAVE: tl.constexpr,
):
    row, chunk = _coop_item(count_ptr, M, n_chunks, 3, TICKET)
    N, stride_xm, stride_ym = _aligned(N, ALIGN), _aligned(stride_xm, ALIGN), _aligned(stride_ym, ALIGN)
    x_row = x_ptr + row * stride_xm
    y_row = y_ptr + row * stride_ym
    cols = tl.arange(0, BLOCK_N)
    lo = chunk * CHUNK_N
    m = tl.full((), -float("inf"), tl.float32)
    s = tl.zeros((), tl.float32)
    for t in range(0, CHUNK_N // BLOCK_N):  # a loop, not unrolled: one tile's registers
        offs = lo + t * BLOCK_N + cols
        x = tl.load(x_row + offs, mask=offs < N, other=-float("inf")).to(tl.float32)
        m, s = _online_update(m, s, x)
    part_row = part_ptr + row * 2 * n_chunks
    tl.store(part_row + chunk, m)
    tl.store(part_row + n_chunks + chunk, s)
    _wait_for_row(count_ptr, row, n_chunks)
    c = tl.arange(0, BLOCK_C)
    m_c = tl.load(part_row + c, mask=c < n_chunks, other=-float("inf"), volatile=True)
    s_c = tl.load(part_row + n_chunks + c, mask=c < n_chunks, other=0.0, volatile=True)
    if not LATE_LEAVE:
        _leave_row(count_ptr, row, n_chunks)
    m = tl.max(m_c, axis=0)
    m_safe = tl.where(m == -float("inf"), 0.0, m)
    s = tl.sum(s_c * tl.exp(m_c - m_safe), axis=0)
    for t in range(0, CHUNK_N // BLOCK_N):
        offs = lo + (CHUNK_N // BLOCK_N - 1 - t) * BLOCK_N + cols
        mask = offs < N
        x = tl.load(x_row + offs, mask=mask, other=-float("inf")).to(tl.float32)
        tl.store(y_row + offs, _normalize(x, m, s, LOG).to(y_ptr.dtype.element_ty), mask=mask)
    if LATE_LEAVE:
        _leave_row(count_ptr, row, n_chunks)
"""


def _reload_x_plan(M, N, chunk, block_n, warps, log, late=True):
    """A one-launch plan of RELOAD_X's scratch kernel: chunks of `chunk` values, tiles of `block_n`."""
    from multisoftmax import dispatch
    n_chunks = triton.cdiv(N, chunk)
    meta = dict(CHUNK_N=chunk, BLOCK_N=block_n, BLOCK_C=triton.next_power_of_2(n_chunks), TICKET=True,
                ALIGN=dispatch.alignment(N), LOG=log, LATE_LEAVE=late, num_warps=warps, num_stages=1)
    return (dispatch.Launch("softmax_fwd_coop_rl", ("x",), (M, N, N, N, n_chunks),
                            (("part", (M, 2, n_chunks), "acc"), ("count", (M + 1,), "zeros"), ("y", (M, N), "io")),
                            (M * n_chunks,), tuple(meta.items())),)


RELOAD_X_SHAPES = [(16, 1048576), (64, 256000), (128, 1048576)]


def reload_x(sms, shapes=RELOAD_X_SHAPES, dtypes=("bfloat16", "float32")):
    """dispatch's cooperative forward against RELOAD_X (R<tile>w<warps>), twice each, by the
    benchmark's clock."""
    from multisoftmax.kernels import softmax as kernels_src
    kernels_src.softmax_fwd_coop_rl = _module_from_source("reload_x", RELOAD_X_SRC).softmax_fwd_coop_rl
    for dtype in dtypes:
        for M, N in shapes:
            for log in (False, True):
                plan, _ = _dispatch_plan(M, N, dtype, "fwd", sms, None, log)
                variants = [("dispatch", plan)] + [(f"R{b}w{w}", _reload_x_plan(M, N, 8192, b, w, log))
                                                   for b, w in ((2048, 4), (1024, 4), (1024, 2))]
                print(_head(M, N, dtype, "fwd", log, plan, sms) + _compare(M, N, dtype, "fwd", log, variants, sms),
                      flush=True)


# POLY (scratch copies, before the kernels took POLY): part of the 16-bit forward's exps as a
# polynomial on the FMA pipe instead of MUFU.EX2 (4 lanes an SM quarter: 8 cycles a warp's
# instruction, the post-wait phase's bound): 2 ** z = 2 ** j * p(f), j = round(z) by the 1.5 * 2 ** 23
# trick, f = z - j in [-0.5, 0.5], p a relative-minimax polynomial with p(0) = 1 (degree 3: 1.0e-4,
# degree 4: 2.8e-6 relative error), 2 ** j built in the exponent bits (j clamped to -127: exactly 0).
# About 10 FMA/ALU instructions a value against one MUFU. The kernels' POLY is A4 (`_exp2_poly`).
POLY_HELPERS = """

@triton.jit
def _exp2_poly_deg(z, DEG: tl.constexpr):
    z = tl.maximum(z, -127.0, propagate_nan=tl.PropagateNan.ALL)
    r = z + 12582912.0
    f = z - (r - 12582912.0)
    if DEG == 3:
        p = ((0.05500818493638798 * f + 0.2422090571853994) * f + 0.693283026087641) * f + 1.0
    else:
        p = (((0.009582726679034264 * f + 0.05590605891407117) * f + 0.2402409860715051) * f
             + 0.6931242444227651) * f + 1.0
    scale = ((r.to(tl.int32, bitcast=True) << 23) + 0x3F800000).to(tl.float32, bitcast=True)
    return p * scale
"""
POLY_POST = ("y_hi = _exp2_ftz(x_hi * LOG2E - shift2, PHASE)", "y_hi = _exp2_poly_deg(x_hi * LOG2E - shift2, {deg})")
POLY_PRE = ("+ _exp2_ftz(tl.fma(x_hi, l, -m2), PHASE), axis=0)", "+ _exp2_poly_deg(tl.fma(x_hi, l, -m2), {deg}), axis=0)")
POLY_PRE_SPLIT = ("s_own += tl.sum(_exp2_ftz(tl.fma(x_hi, l, -m2), PHASE), axis=0)",
                  "s_own += tl.sum(_exp2_poly_deg(tl.fma(x_hi, l, -m2), {deg}), axis=0)")
# Q: a quarter, the high halves' odd pairs (a split of the held layout, no data moved).
POLY_QUARTER = ("y_hi = _exp2_ftz(x_hi * LOG2E - shift2, PHASE)",
                """h_a, h_b = tl.split(tl.reshape(x_hi, (CHUNK_N // 4, 2)))
                    y_hi = tl.reshape(tl.join(_exp2_ftz(h_a * LOG2E - shift2, PHASE),
                                              _exp2_poly_deg(h_b * LOG2E - shift2, {deg})), (CHUNK_N // 2,))""")
POLY_VARIANTS = {"A3": ((POLY_POST,), 3), "A4": ((POLY_POST,), 4), "B3": ((POLY_PRE, POLY_PRE_SPLIT), 3),
                 "C3": ((POLY_POST, POLY_PRE, POLY_PRE_SPLIT), 3), "Q3": ((POLY_QUARTER,), 3),
                 "Q4": ((POLY_QUARTER,), 4)}
POLY_SHAPES = [(128, 1048576), (16, 1048576), (64, 128256), (64, 256000), (1024, 128256)]
POLY_WIDE_SHAPES = [(18, 1048576), (24, 1048576), (32, 1048576), (64, 1048576), (128, 1048576), (48, 524288),
                    (256, 524288), (16, 2097152)]
POLY_DEG_SHAPES = [(128, 1048576), (64, 1048576), (256, 524288), (24, 1048576)]
POLY_FEW_SHAPES = [(16, 1048576), (12, 1048576), (8, 1048576), (64, 128256), (32, 128256)]


def _poly_variant(plan, name):
    """`plan` (a 16-bit cooperative forward, packed) with the kernels' POLY off, run by POLY's
    scratch kernel `name` (None: the kernels' own, MUFU only)."""
    import dataclasses
    p = tune.with_meta(plan, POLY=False)
    return p if name is None else (dataclasses.replace(p[0], kernel=p[0].kernel + "_" + name),)


def _poly_kernels(variants):
    for name, (edits, deg) in variants.items():
        _function_variants("_" + name, {"softmax_fwd_coop": [(o, n.format(deg=deg)) for o, n in edits]},
                           POLY_HELPERS)


def poly(sms, shapes=POLY_SHAPES, dtypes=("bfloat16", "float16"), variants=POLY_VARIANTS):
    """The 16-bit cooperative softmax forward with MUFU alone (M; dispatch's plan before POLY) against
    POLY's scratch kernels (A: the post-wait exps of the words' high halves by the polynomial; B:
    the pre-wait sum's; C: both; Q: a quarter of the post-wait ones; the digit: its degree), twice
    each, by the benchmark's clock. (Logs before POLY name M "dispatch".)"""
    _poly_kernels(variants)
    for dtype in dtypes:
        for M, N in shapes:
            plan, _ = _dispatch_plan(M, N, dtype, "fwd", sms, None, False)
            if plan[0].kernel != "softmax_fwd_coop" or not plan[0].kwargs["PACK"]:
                continue
            vs = [("M", _poly_variant(plan, None))] + [(name, _poly_variant(plan, name)) for name in variants]
            print(_head(M, N, dtype, "fwd", False, plan, sms) + _compare(M, N, dtype, "fwd", False, vs, sms),
                  flush=True)


# X<k>: the post-wait of the packed softmax (unpack, exps, pack, store) as it is, POLY's high halves
# by the polynomial, in the programs whose chunk % 8 < k, and with MUFU alone in the others: a branch
# at run time around the whole phase, so that only the held words live across it (a first try that
# branched around the high halves' exps alone held both halves' float32 values: 127 registers).
# POLY on k/16 of the values; the quarter (Q) had split the held layout and taken 71-73 registers.
_POST = ("                x_lo, x_hi = _unpack(_fresh(wx, PHASE), io_ty, acc_ty, False)\n"
         "                shift2 = m_safe * LOG2E + tl.log2(s)\n"
         "                y_lo = _exp2_ftz(x_lo * LOG2E - shift2, PHASE)\n"
         "                if POLY:  # the high halves on the FMA pipe\n"
         "                    y_hi = _exp2_poly(x_hi * LOG2E - shift2)\n"
         "                else:\n"
         "                    y_hi = _exp2_ftz(x_hi * LOG2E - shift2, PHASE)\n"
         "                tl.store(y_ptr.to(tl.pointer_type(tl.int32)) + y_offs, _pack(y_lo, y_hi, io_ty), mask=mask)\n")
_BRANCH = ("                shift2 = m_safe * LOG2E + tl.log2(s)\n"
           "                if chunk % 8 < {k}:\n"
           "                    x_lo, x_hi = _unpack(_fresh(wx, PHASE), io_ty, acc_ty, False)\n"
           "                    y_lo = _exp2_ftz(x_lo * LOG2E - shift2, PHASE)\n"
           "                    y_hi = _exp2_poly(x_hi * LOG2E - shift2)\n"
           "                    tl.store(y_ptr.to(tl.pointer_type(tl.int32)) + y_offs, _pack(y_lo, y_hi, io_ty), mask=mask)\n"
           "                else:\n"
           "                    x_lo, x_hi = _unpack(_fresh(wx, PHASE), io_ty, acc_ty, False)\n"
           "                    y_lo = _exp2_ftz(x_lo * LOG2E - shift2, PHASE)\n"
           "                    y_hi = _exp2_ftz(x_hi * LOG2E - shift2, PHASE)\n"
           "                    tl.store(y_ptr.to(tl.pointer_type(tl.int32)) + y_offs, _pack(y_lo, y_hi, io_ty), mask=mask)\n")
POLY_MIX = (_POST, _BRANCH)
# H<k>: the post-wait in four parts of the held words, split by the two highest bits of their index
# (register bits of the blocked layout: no data moved, each thread's 16-byte groups kept whole), each
# unpacked, exponentiated, packed and stored on its own; POLY's polynomial on the high halves of the
# first k parts (k/8 of the values), MUFU alone in the others.
PART_HELPERS = """

@triton.jit
def _halves(t, W: tl.constexpr):
    return tl.split(tl.permute(tl.reshape(t, (2, W // 2)), (1, 0)))


@triton.jit
def _post_part(y_ptr, w, offs, mask, shift2, io_ty: tl.constexpr, acc_ty: tl.constexpr, PHASE: tl.constexpr,
               P: tl.constexpr):
    x_lo, x_hi = _unpack(w, io_ty, acc_ty, False)
    y_lo = _exp2_ftz(x_lo * LOG2E - shift2, PHASE)
    if P:
        y_hi = _exp2_poly(x_hi * LOG2E - shift2)
    else:
        y_hi = _exp2_ftz(x_hi * LOG2E - shift2, PHASE)
    tl.store(y_ptr.to(tl.pointer_type(tl.int32)) + offs, _pack(y_lo, y_hi, io_ty), mask=mask)
"""
_PARTS = ("                shift2 = m_safe * LOG2E + tl.log2(s)\n"
          "                W2: tl.constexpr = CHUNK_N // 2\n"
          "                wa, wb = _halves(_fresh(wx, PHASE), W2)\n"
          "                oa, ob = _halves(y_offs, W2)\n"
          "                ma, mb = _halves(mask, W2)\n"
          "                w0, w1 = _halves(wa, W2 // 2)\n"
          "                o0, o1 = _halves(oa, W2 // 2)\n"
          "                m0, m1 = _halves(ma, W2 // 2)\n"
          "                w2, w3 = _halves(wb, W2 // 2)\n"
          "                o2, o3 = _halves(ob, W2 // 2)\n"
          "                m2_, m3 = _halves(mb, W2 // 2)\n"
          "                _post_part(y_ptr, w0, o0, m0, shift2, io_ty, acc_ty, PHASE, {k} > 0)\n"
          "                _post_part(y_ptr, w1, o1, m1, shift2, io_ty, acc_ty, PHASE, {k} > 1)\n"
          "                _post_part(y_ptr, w2, o2, m2_, shift2, io_ty, acc_ty, PHASE, {k} > 2)\n"
          "                _post_part(y_ptr, w3, o3, m3, shift2, io_ty, acc_ty, PHASE, {k} > 3)\n")
# G<k>: H<k> with only the held words split; each part's offsets and mask computed anew for its
# quarter of the chunk (`_words` over CHUNK_N // 8 words from lo_w + part * CHUNK_N // 8: the same
# elements a thread holds after the split, if that split moves no data).
_GPARTS = ("                shift2 = m_safe * LOG2E + tl.log2(s)\n"
           "                W2: tl.constexpr = CHUNK_N // 2\n"
           "                W4: tl.constexpr = CHUNK_N // 8\n"
           "                wa, wb = _halves(_fresh(wx, PHASE), W2)\n"
           "                w0, w1 = _halves(wa, W2 // 2)\n"
           "                w2, w3 = _halves(wb, W2 // 2)\n"
           "                o0, m0 = _words(ys, lo_w, N_w, sy_w, row, W4, PEEL, VEC, ALIGN)\n"
           "                _post_part(y_ptr, w0, o0, m0, shift2, io_ty, acc_ty, PHASE, {k} > 0)\n"
           "                o1, m1 = _words(ys, lo_w + W4, N_w, sy_w, row, W4, PEEL, VEC, ALIGN)\n"
           "                _post_part(y_ptr, w1, o1, m1, shift2, io_ty, acc_ty, PHASE, {k} > 1)\n"
           "                o2, m2_ = _words(ys, lo_w + 2 * W4, N_w, sy_w, row, W4, PEEL, VEC, ALIGN)\n"
           "                _post_part(y_ptr, w2, o2, m2_, shift2, io_ty, acc_ty, PHASE, {k} > 2)\n"
           "                o3, m3 = _words(ys, lo_w + 3 * W4, N_w, sy_w, row, W4, PEEL, VEC, ALIGN)\n"
           "                _post_part(y_ptr, w3, o3, m3, shift2, io_ty, acc_ty, PHASE, {k} > 3)\n")
POLY_MIX_SHAPES = [(128, 1048576), (64, 1048576), (96, 1048576)]


def poly_mix(sms, shapes=POLY_MIX_SHAPES, dtypes=("bfloat16", "float16"), ks=(), parts=(), gparts=(1, 2, 3, 4)):
    """The 16-bit packed wide softmax forward with POLY on a fraction of the programs (X<k>) or of
    each program's values (H<k>, above) against dispatch's plan (POLY on every high half) and MUFU
    alone (M), twice each, by the benchmark's clock."""
    import dataclasses
    for k in ks:
        _function_variants(f"_X{k}", {"softmax_fwd_coop": [(POLY_MIX[0], POLY_MIX[1].format(k=k))]})
    for k in parts:
        _function_variants(f"_H{k}", {"softmax_fwd_coop": [(POLY_MIX[0], _PARTS.format(k=k))]}, PART_HELPERS)
    for k in gparts:
        _function_variants(f"_G{k}", {"softmax_fwd_coop": [(POLY_MIX[0], _GPARTS.format(k=k))]}, PART_HELPERS)
    names = [f"X{k}" for k in ks] + [f"H{k}" for k in parts] + [f"G{k}" for k in gparts]
    for dtype in dtypes:
        for M, N in shapes:
            plan, _ = _dispatch_plan(M, N, dtype, "fwd", sms, None, False)
            if not plan[0].kwargs.get("POLY"):
                continue
            vs = [("dispatch", plan), ("M", tune.with_meta(plan, POLY=False))]
            vs += [(n, (dataclasses.replace(plan[0], kernel=plan[0].kernel + "_" + n),)) for n in names]
            print(_head(M, N, dtype, "fwd", False, plan, sms) + _compare(M, N, dtype, "fwd", False, vs, sms),
                  flush=True)


# P: the cooperative kernels with `_pack` (two float32 tensors rounded to 16-bit words) by one
# cvt.rn.bf16x2.f32 / cvt.rn.f16x2.f32 a word, as Triton converts tensors itself (the rows kernels'
# stores), where its two scalar cvt.rn.bf16.f32 and the byte permutes that pair them took three or
# four instructions a word: `_pack_x2` (the kernels' CVT_X2, which came of this probe) wherever the
# kernels pack, both ops' forwards and the backward; the masked load's scalar `other` keeps the old
# form. (The logs of 2026-11-26 02:42-02:44 UTC ran the same asm written out here, before `_pack_x2`.)
PACK_X2 = ('''def _pack(lo, hi, dtype: tl.constexpr):
    """Words of two 16-bit values: `lo` and `hi` rounded to dtype (the inverse of _unpack)."""
    lo16 = lo.to(dtype).to(tl.int16, bitcast=True).to(tl.int32) & 0xFFFF
    hi16 = hi.to(dtype).to(tl.int16, bitcast=True).to(tl.int32)
    return lo16 | (hi16 << 16)
''', '''def _pack(lo, hi, dtype: tl.constexpr):
    return _pack_x2(lo, hi, dtype, True, 3)


@triton.jit
def _pack_old(lo, hi, dtype: tl.constexpr):
    lo16 = lo.to(dtype).to(tl.int16, bitcast=True).to(tl.int32) & 0xFFFF
    hi16 = hi.to(dtype).to(tl.int16, bitcast=True).to(tl.int32)
    return lo16 | (hi16 << 16)
''')
PACK_X2_CASES = [("fwd", False, 128, 1048576), ("fwd", True, 128, 1048576), ("fwd", False, 256, 256000),
                 ("fwd", True, 256, 256000), ("fwd", False, 16, 1048576), ("fwd", False, 64, 128256),
                 ("fwd", False, 1024, 128256), ("fwd", False, 512, 262144), ("bwd", False, 128, 1048576),
                 ("bwd", True, 128, 1048576), ("bwd", False, 512, 262144), ("bwd", False, 16, 1048576)]


def pack_x2(sms, cases=PACK_X2_CASES, dtypes=("bfloat16", "float16")):
    """dispatch's 16-bit cooperative plans against the same run by P's kernels (above), twice each,
    by the benchmark's clock."""
    import dataclasses
    from multisoftmax.kernels import softmax as kernels_src
    src = open(kernels_src.__file__).read()
    x2_else = "        w = _pack(lo, hi, dtype)\n    return w"  # _pack_x2's form for the interpreter
    assert src.count(PACK_X2[0]) == 1 and src.count("other=_pack(ninf, ninf, io_ty)") == 1 and src.count(x2_else) == 1
    src = src.replace(PACK_X2[0], PACK_X2[1]).replace("other=_pack(ninf, ninf, io_ty)", "other=_pack_old(ninf, ninf, io_ty)")
    src = src.replace(x2_else, x2_else.replace("_pack(", "_pack_old("))
    mod = _module_from_source("variant_pack_x2", src)
    for fn in ("softmax_fwd_coop", "softmax_bwd_coop"):
        setattr(kernels_src, fn + "_P", getattr(mod, fn))
    for dtype in dtypes:
        for direction, log, M, N in cases:
            plan, _ = _dispatch_plan(M, N, dtype, direction, sms, None, log)
            if not plan[0].kernel.endswith("_coop") or not plan[0].kwargs.get("PACK"):
                continue
            p = tuple(dataclasses.replace(l, kernel=l.kernel + "_P") for l in plan)
            kw = plan[0].kwargs
            print(_head(M, N, dtype, direction, log, plan, sms) + f"tag={kw.get('TAG', 0):d},pack={kw.get('PACK', 0):d} | "
                  + _compare(M, N, dtype, direction, log, [("dispatch", plan), ("P", p)], sms), flush=True)


PACK_X2_FWD_SHAPES = [(16, 1048576), (64, 128256), (64, 256000), (8, 128256), (8, 256000), (128, 1048576),
                      (256, 256000), (512, 151936), (512, 262144), (1024, 128256), (1024, 131072), (2048, 65536),
                      (2670, 50257), (4096, 32000), (4096, 32768), (4096, 50257), (4559, 29440)]


def pack_x2_fwd(sms, shapes=PACK_X2_FWD_SHAPES, dtypes=("bfloat16", "float16")):
    """`pack_x2` on every packed cooperative forward plan of the benchmark's 16-bit shapes, softmax
    and log_softmax."""
    pack_x2(sms, [("fwd", log, M, N) for M, N in shapes for log in (False, True)], dtypes)


CVT_X2_LOG_SHAPES = [(16, 1048576), (128, 1048576), (8, 1048576), (12, 1048576), (24, 1048576), (32, 1048576),
                     (64, 1048576), (16, 524288), (40, 524288), (128, 524288), (256, 524288), (341, 393216),
                     (447, 300000)]


def cvt_x2(sms, shapes=PACK_X2_FWD_SHAPES, dtypes=("bfloat16", "float16"), time=True, log=False):
    """dispatch's packed cooperative softmax forward plans (COOP_CVT_X2; `log`: the log_softmax's
    on counters) against the same with the kernel's CVT_X2 flipped (and, for POLY's plans, CVT_X2
    without POLY), twice each, by the benchmark's clock; `bits`: whether CVT_X2 on and off wrote the same bits, on these inputs and on
    rows of special values (NaN, +-inf, all -inf, huge and tiny magnitudes)."""
    for dtype in dtypes:
        T = getattr(torch, dtype)
        for M, N in shapes:
            plan, _ = _dispatch_plan(M, N, dtype, "fwd", sms, None, log)
            kw = plan[0].kwargs
            if plan[0].kernel != "softmax_fwd_coop" or not kw.get("PACK") or (log and kw["TAG"]):
                continue
            on, off = tune.with_meta(plan, CVT_X2=True), tune.with_meta(plan, CVT_X2=False)
            variants = [("dispatch", plan), ("flipped", off if kw["CVT_X2"] else on)]
            if kw["POLY"]:
                variants.append(("x2-nopoly", tune.with_meta(plan, CVT_X2=True, POLY=False)))
            x, _, _, out, bufs, _ = tune.make_inputs(M, N, T, "fwd", log)
            special = x.clone()  # rows: a NaN, all -inf, an inf, huge magnitudes (the exact path), values
            # ~85 below the max (subnormal or 0 results), a wide spread, tiny values
            special[0, :1024] = float("nan")
            special[1 % M] = -float("inf")
            special[2 % M, :16] = float("inf")
            special[3 % M, :4096], special[3 % M, 4096:8192] = 3e38, -3e38
            special[4 % M, :4096] -= 85.0
            special[5 % M] *= 30.0
            special[6 % M, :4096] = 1e-30
            differ = []  # elements whose bits differ (int16 views: NaN is compared by its bits)
            for a in (x, special):
                y_on, y_off = tune.run_plan(on, {"x": a}, out).clone(), tune.run_plan(off, {"x": a}, out).clone()
                differ.append(int((y_on.view(torch.int16) != y_off.view(torch.int16)).sum()))
            same = not any(differ)
            del x, special, out, bufs
            torch.cuda.empty_cache()
            print(_head(M, N, dtype, "fwd", log, plan, sms) + f"tag={kw['TAG']:d},poly={kw['POLY']:d},"
                  f"cvt_x2={kw['CVT_X2']:d} | bits {'same' if same else 'DIFFER in %d random, %d special' % tuple(differ)} | "
                  + (_compare(M, N, dtype, "fwd", log, variants, sms) if time else ""), flush=True)


CAPPED_SHAPES = [(128, 1048576), (32, 1048576), (16, 1048576), (8, 1048576), (64, 128256), (2048, 65536),
                 (1024, 128256), (512, 262144), (512, 151936), (256, 256000), (4096, 32000), (4559, 29440),
                 (2670, 50257)]


def _regs(plan, bufs, out):
    """The registers a thread of `plan`'s kernel as compiled here (Triton's launcher, sm_90)."""
    launch._COMPILED.clear()
    tune.run_plan(plan, bufs, out)
    return max(c[1].n_regs for c in launch._COMPILED.values())


def capped(sms, shapes=CAPPED_SHAPES, dtypes=("bfloat16", "float16"), logs=(False, True)):
    """dispatch's packed 16-bit cooperative forward plans against the same with CVT_X2 and (softmax)
    POLY on, compiled under Triton's maxnreg at the registers dispatch's plan takes (C), so that the
    flags that lost on registers (COOP_POLY's and COOP_CVT_X2's notes) keep the plan's occupancy:
    ptxas (Triton 3.6, sm_90) fits them there without spilling on every plan of CAPPED_SHAPES but
    the log_softmax's 4-warp chunks (checked off the GPU: tests/compile_check.py and cuobjdump).
    Twice each, by the benchmark's clock; plans where the flags are on already are skipped."""
    for dtype in dtypes:
        T = getattr(torch, dtype)
        for log in logs:
            for M, N in shapes:
                plan, _ = _dispatch_plan(M, N, dtype, "fwd", sms, None, log)
                kw = plan[0].kwargs
                flags = dict(CVT_X2=True) if log else dict(CVT_X2=True, POLY=True)
                if plan[0].kernel != "softmax_fwd_coop" or not kw["PACK"] or all(kw[k] == v for k, v in flags.items()):
                    continue
                if log and kw["SPLIT_SUM"] and not kw["PEEL"]:  # these spill under the cap
                    continue
                x, _, _, out, bufs, _ = tune.make_inputs(M, N, T, "fwd", log)
                r0 = _regs(plan, bufs, out)
                del x, out, bufs
                variants = [("dispatch", plan), ("C", tune.with_meta(plan, maxnreg=r0, **flags))]
                print(_head(M, N, dtype, "fwd", log, plan, sms) + f"tag={kw['TAG']:d},sent={kw['SENT']:d},"
                      f"poly={kw['POLY']:d},cvt_x2={kw['CVT_X2']:d} | " + _compare(M, N, dtype, "fwd", log, variants, sms),
                      flush=True)


PACK_MID_SHAPES = [(32, 128256), (64, 128256), (1024, 128256), (1024, 131072), (512, 151936), (150, 196608),
                   (2621, 100000)]
# --pack-mid2: rows of at most 8 chunks (peeled ones too: PACK off means RELOAD there), and grids of at
# most COOP_UNPACKED_PER_SM programs an SM
PACK_MID2_SHAPES = [(2048, 65536), (4096, 32768), (4096, 32000), (4559, 29440), (2670, 50257), (4096, 50257),
                    (16, 128256), (24, 128256), (8, 256000), (12, 256000)]


def pack_mid(sms, shapes=PACK_MID_SHAPES, dtypes=("bfloat16", "float16")):
    """dispatch's 16-bit cooperative softmax backward on `shapes` against the same plan with PACK
    flipped (unpacked: 80 registers a thread, 3 programs an SM; packed 60-63: 4), twice each, by
    the benchmark's clock. The logs ran with COOP_PACK_MIN_CHUNKS at 32, dispatch's plan unpacked
    on rows of fewer chunks; since 332263d (4) it packs the unpeeled ones, and the flip unpacks."""
    for dtype in dtypes:
        for M, N in shapes:
            plan, _ = _dispatch_plan(M, N, dtype, "bwd", sms)
            kw = plan[0].kwargs
            if plan[0].kernel != "softmax_bwd_coop":
                continue
            flip = dict(PACK=not kw["PACK"], RELOAD=kw["PEEL"] and kw["PACK"])  # peeled, unpacked: RELOAD
            variants = [("dispatch", plan), ("flipped", tune.with_meta(plan, **flip))]
            print(_head(M, N, dtype, "bwd", False, plan, sms) + f"tag={kw['TAG']:d} | "
                  + _compare(M, N, dtype, "bwd", False, variants, sms), flush=True)


RELOAD_DY_SHAPES = {
    "bfloat16": [(16, 1048576), (32, 1048576), (128, 1048576), (8, 1048576), (64, 128256), (64, 256000),
                 (32, 256000), (256, 256000), (1024, 128256), (512, 262144), (2048, 65536), (4096, 32000)],
    "float16": [(16, 1048576), (128, 1048576), (64, 256000), (2048, 65536)],
    "float32": [(16, 1048576), (64, 1048576), (64, 128256), (64, 256000), (128, 524288), (1024, 65536)]}
RELOAD_DY_CAPS = {(2, False): 40, (2, True): 48, (4, False): 64, (4, True): 64}  # (itemsize, TAG): maxnreg
# RELOAD_DY (scratch kernel softmax_bwd_coop_rdy): dy loaded again after the wait, packed or not.
RELOAD_DY_EDITS = {"softmax_bwd_coop": [
    ("            y_lo, y_hi = _unpack(_fresh(wy, PHASE), io_ty, acc_ty, BITS)\n",
     "            wdy = tl.load(dy_ptr.to(tl.pointer_type(tl.int32)) + dy_offs, mask=mask, other=0)\n"
     "            y_lo, y_hi = _unpack(_fresh(wy, PHASE), io_ty, acc_ty, BITS)\n"),
    ("            if RELOAD:\n                dy = tl.load(", "            if True:\n                dy = tl.load(")]}


def reload_dy(sms, shapes=RELOAD_DY_SHAPES):
    """dispatch's cooperative softmax backward on `shapes` (by dtype) against RELOAD_DY (D: dy read
    again after the wait, y alone held across it; scratch kernel softmax_bwd_coop_rdy) and RELOAD_DY
    under RELOAD_DY_CAPS (Dc), twice each, by the benchmark's clock, with registers a thread and
    spills."""
    import dataclasses
    _function_variants("_rdy", RELOAD_DY_EDITS)
    for dtype, cases in shapes.items():
        for M, N in cases:
            plan, _ = _dispatch_plan(M, N, dtype, "bwd", sms, "coop")  # (dispatch's before PIPE_*)
            kw = plan[0].kwargs
            cap = RELOAD_DY_CAPS[(2 if dtype != "float32" else 4, kw["TAG"])]
            rdy = (dataclasses.replace(plan[0], kernel="softmax_bwd_coop_rdy"),)
            variants = [("dispatch", plan), ("D", tune.with_meta(rdy, RELOAD=False)),
                        (f"Dc{cap}", tune.with_meta(rdy, RELOAD=False, maxnreg=cap))]
            print(_head(M, N, dtype, "bwd", False, plan, sms) + f"tag={kw['TAG']:d} | "
                  + _compare(M, N, dtype, "bwd", False, variants, sms), flush=True)


# PIPE (scratch kernel softmax_bwd_coop_pipe): a persistent cooperative backward that keeps its loads in
# flight across the row's wait. Each program takes the next item (ticket), loads it and publishes its
# partial (stored, then an arrival on its row's counter, released), and only then waits for the row of
# the item it took before, writes that item's dx and leaves (a second arrival, whose result it waits for:
# the row's last resets the counter); so it holds two items' y and dy (words, PACK) while one row is
# waited for. Built from the committed kernel's helpers (kernels/softmax.py's `_pipe_*`, whose comment
# gives why the wait ends); the ticket counter is set back to 0 by the launch's last take.
# PIPE2 (Q; QD: the log_softmax with y loaded after the wait): PIPE with two round trips fewer an item,
# rows not left (the launch's last program resets the counters) and the next ticket taken after the
# stores: the committed softmax_bwd_pipe since 4d01546. The logs (probe_pipe2.log, probe_pipe3.log,
# probe_pipe_rule.log) timed the scratch copy it was made from, which Triton's launcher specialized on M
# and n_chunks (the committed kernel does not: do_not_specialize; a few registers apart, sm_90).
PIPE_SRC = """
import triton
import triton.language as tl
from multisoftmax.kernels.softmax import _pipe_take, _pipe_load, _pipe_publish, _pipe_finish


@triton.jit
def softmax_bwd_coop_pipe(
    y_ptr, dy_ptr, M, N, stride_ym, stride_dym, stride_dxm, n_chunks, count_init_ptr, part_ptr, count_ptr, dx_ptr,
    CHUNK_N: tl.constexpr, BLOCK_C: tl.constexpr, VEC: tl.constexpr, LOG: tl.constexpr, ALIGN: tl.constexpr,
    PACK: tl.constexpr, BITS: tl.constexpr,
):
    io_ty = y_ptr.dtype.element_ty
    total = M * n_chunks
    t = _pipe_take(count_ptr, M, total)
    a, b = _pipe_load(y_ptr, dy_ptr, t, total, n_chunks, N, stride_ym, stride_dym, CHUNK_N, VEC, ALIGN, PACK, LOG,
                      False)
    if t < total:
        _pipe_publish(part_ptr, count_ptr, t, n_chunks, a, b, io_ty, PACK, LOG, BITS, 3)
    while t < total:
        t2 = _pipe_take(count_ptr, M, total)
        a2, b2 = _pipe_load(y_ptr, dy_ptr, t2, total, n_chunks, N, stride_ym, stride_dym, CHUNK_N, VEC, ALIGN,
                            PACK, LOG, False)
        if t2 < total:
            _pipe_publish(part_ptr, count_ptr, t2, n_chunks, a2, b2, io_ty, PACK, LOG, BITS, 3)
        _pipe_finish(y_ptr, dx_ptr, part_ptr, count_ptr, t, total, n_chunks, N, stride_ym, stride_dxm, a, b, io_ty,
                     CHUNK_N, BLOCK_C, VEC, ALIGN, PACK, LOG, BITS, False, 3)
        row = (t // n_chunks).to(tl.int64)
        left = tl.atomic_add(count_ptr + row, 1, sem="relaxed", scope="gpu") + 1
        if left == 2 * n_chunks:
            tl.atomic_xchg(count_ptr + row, 0, sem="relaxed", scope="gpu")
        t, a, b = t2, a2, b2
"""


def _pipe_plan(M, N, dtype, log, chunk, warps, per_sm, sms, kernel="softmax_bwd_coop_pipe", defer=False):
    """A one-launch plan of PIPE's scratch kernel (or, kernel="softmax_bwd_pipe", PIPE2: the committed
    kernel, `defer` its DEFER_Y): chunks of `chunk` values at `warps` warps, `per_sm` programs an SM (at
    most one an item)."""
    from multisoftmax import dispatch
    n_chunks = triton.cdiv(N, chunk)
    itemsize = dispatch.ITEMSIZE[dtype]
    align = dispatch.alignment(N)
    meta = dict(CHUNK_N=chunk, BLOCK_C=triton.next_power_of_2(n_chunks), VEC=16 // itemsize, LOG=log, ALIGN=align,
                PACK=itemsize == 2, BITS=itemsize == 2,
                **({"DEFER_Y": defer, "PHASE": 3} if kernel == "softmax_bwd_pipe" else {}), num_warps=warps,
                num_stages=1)
    outs = dispatch.coop_outputs((M, n_chunks), (M + 2,), "zeros", "dx", (M, N))
    return (dispatch.Launch(kernel, ("y", "dy"), (M, N, N, N, N, n_chunks), outs,
                            (min(M * n_chunks, per_sm * sms),), tuple(meta.items())),)


PIPE_SHAPES = {"bfloat16": [(16, 1048576), (128, 1048576), (64, 128256), (64, 256000), (8, 1048576),
                            (2048, 65536)],
               "float32": [(16, 1048576), (64, 1048576), (64, 128256), (64, 256000)]}
PIPE_VARIANTS = {"bfloat16": [(8192, 8, 2), (4096, 8, 4), (4096, 8, 3), (4096, 4, 4)],
                 "float32": [(4096, 8, 2), (2048, 8, 4), (2048, 4, 5), (2048, 4, 4)]}


PIPE2_SHAPES = {"bfloat16": [(16, 1048576), (32, 1048576), (8, 1048576), (64, 256000), (64, 128256),
                             (128, 1048576)],
                "float32": [(16, 1048576), (64, 256000)]}
PIPE2_VARIANTS = {("bfloat16", False): [(8192, 8, 2, 0), (8192, 8, 2, 1), (4096, 8, 4, 1), (4096, 4, 4, 1)],
                  ("float32", False): [(4096, 8, 2, 0), (4096, 8, 2, 1), (2048, 4, 5, 1)]}  # (..., 1: Q, 2: QD)
PIPE3_SHAPES = {"bfloat16": [(1, 1048576), (4, 1048576), (12, 1048576), (16, 1048576), (64, 1048576),
                             (16, 524288), (256, 524288), (22, 393216), (341, 393216), (64, 256000)],
                "float16": [(16, 1048576), (128, 1048576)],
                "float32": [(1, 1048576), (4, 1048576), (16, 1048576), (64, 1048576), (128, 524288), (64, 256000),
                            (64, 128256), (1024, 65536)]}
PIPE3_VARIANTS = {("bfloat16", False): [(8192, 8, 2, 1), (4096, 4, 4, 1)],
                  ("bfloat16", True): [(8192, 8, 2, 1), (8192, 8, 3, 2), (4096, 4, 6, 2)],
                  ("float32", False): [(2048, 4, 5, 1), (2048, 8, 5, 1)],
                  ("float32", True): [(2048, 4, 5, 1), (2048, 4, 8, 2), (4096, 8, 4, 2)]}
PIPE3_VARIANTS[("float16", False)], PIPE3_VARIANTS[("float16", True)] = \
    PIPE3_VARIANTS[("bfloat16", False)], PIPE3_VARIANTS[("bfloat16", True)]
# --pipe-rule: the suite's cooperative backward shapes (and a few beside them), PIPE2 at the form that
# won in probe_pipe3.log for each dtype and op (16-bit log_softmax: none).
PIPE_RULE_SHAPES = {
    "float32": [(512, 131072), (256, 262144), (1024, 128256), (512, 151936), (256, 256000), (8, 128256),
                (8, 256000), (64, 128256), (64, 256000), (2, 1048576), (16, 1048576), (64, 1048576), (32, 131072),
                (1024, 65536), (4096, 32000)],
    "bfloat16": [(1024, 131072), (512, 262144), (1024, 128256), (512, 151936), (256, 256000), (8, 256000),
                 (2, 1048576), (8, 1048576), (16, 1048576), (128, 1048576), (64, 524288), (128, 524288)],
    "float16": [(1024, 131072), (512, 262144), (128, 1048576), (8, 1048576)]}
PIPE_RULE_VARIANTS = {("bfloat16", False): [(4096, 4, 4, 1)], ("float16", False): [(4096, 4, 4, 1)],
                      ("float32", False): [(2048, 4, 5, 1)], ("float32", True): [(4096, 8, 4, 2)]}


# PIPEF (scratch kernel softmax_fwd_pipe, registered as softmax_fwd_pipef): the forward pipelined as
# softmax_bwd_pipe is: each program publishes its next chunk's (max, sum of exp) before it waits for the
# row of the chunk it holds. x held as words (16-bit) or float32 values; y as exp(x - m) / s or
# (x - m) - log(s), tl.exp: no MUFU tricks, no POLY, no exact path for large maxima (a probe of the
# schedule, not of the arithmetic).
PIPEF_SRC = """
import triton
import triton.language as tl
from multisoftmax.kernels.softmax import (_aligned, _words, _unpack, _pack, _fresh, _pipe_take, _pipe_values,
                                          _pipe_wait, _pipe_exit)


@triton.jit
def _x_values(x_ptr, t, total, n_chunks, N, stride, CHUNK_N: tl.constexpr, VEC: tl.constexpr, ALIGN: tl.constexpr,
              PACK: tl.constexpr):
    # item t's x: words (masked: two -inf values) or float32 values (masked: -inf)
    row = (t // n_chunks).to(tl.int64)
    chunk = t % n_chunks
    if PACK:
        offs, mask = _words(row * stride, chunk * (CHUNK_N // 2), N, stride, row, CHUNK_N // 2, False, VEC, ALIGN)
        ninf = tl.full((), -float("inf"), tl.float32)
        v = tl.load(x_ptr.to(tl.pointer_type(tl.int32)) + offs, mask=tl.where(t < total, mask, False),
                    other=_pack(ninf, ninf, x_ptr.dtype.element_ty))
    else:
        v = _pipe_values(x_ptr, t, total, n_chunks, N, stride, -float("inf"), CHUNK_N, VEC, ALIGN, PACK)
    return v


@triton.jit
def _fwd_partial(part_ptr, count_ptr, t, n_chunks, x, io_ty: tl.constexpr, PACK: tl.constexpr):
    row = (t // n_chunks).to(tl.int64)
    if PACK:
        lo, hi = _unpack(x, io_ty, tl.float32, False)
        m = tl.max(tl.maximum(lo, hi), axis=0)
        m = tl.where(m == -float("inf"), 0.0, m)
        s = tl.sum(tl.exp(lo - m) + tl.exp(hi - m), axis=0)
    else:
        m = tl.max(x, axis=0)
        m = tl.where(m == -float("inf"), 0.0, m)
        s = tl.sum(tl.exp(x - m), axis=0)
    m = tl.where(s == 0.0, -float("inf"), m)
    tl.store(part_ptr + row * 2 * n_chunks + t % n_chunks, m)
    tl.store(part_ptr + row * 2 * n_chunks + n_chunks + t % n_chunks, s)
    tl.debug_barrier()
    tl.atomic_add(count_ptr + row, 1, sem="release", scope="gpu")


@triton.jit(do_not_specialize=["M", "n_chunks"])
def softmax_fwd_pipe(
    x_ptr, M, N, stride_xm, stride_ym, n_chunks, count_init_ptr, part_ptr, count_ptr, y_ptr,
    CHUNK_N: tl.constexpr, BLOCK_C: tl.constexpr, VEC: tl.constexpr, LOG: tl.constexpr, ALIGN: tl.constexpr,
    PACK: tl.constexpr,
):
    io_ty = x_ptr.dtype.element_ty
    total = M * n_chunks
    t = _pipe_take(count_ptr, M, total)
    x = _x_values(x_ptr, t, total, n_chunks, N, stride_xm, CHUNK_N, VEC, ALIGN, PACK)
    if t < total:
        _fwd_partial(part_ptr, count_ptr, t, n_chunks, x, io_ty, PACK)
        t2 = _pipe_take(count_ptr, M, total)
    else:
        t2 = t
    while t < total:
        x2 = _x_values(x_ptr, t2, total, n_chunks, N, stride_xm, CHUNK_N, VEC, ALIGN, PACK)
        if t2 < total:
            _fwd_partial(part_ptr, count_ptr, t2, n_chunks, x2, io_ty, PACK)
        row = (t // n_chunks).to(tl.int64)
        chunk = t % n_chunks
        _pipe_wait(count_ptr, row, n_chunks)
        c = tl.arange(0, BLOCK_C)
        m_c = tl.load(part_ptr + row * 2 * n_chunks + c, mask=c < n_chunks, other=-float("inf"), volatile=True)
        s_c = tl.load(part_ptr + row * 2 * n_chunks + n_chunks + c, mask=c < n_chunks, other=0.0, volatile=True)
        m = tl.max(m_c, axis=0)
        m = tl.where(m == -float("inf"), 0.0, m)
        s = tl.sum(s_c * tl.exp(m_c - m), axis=0)
        if PACK:
            offs, mask = _words(row * stride_ym, chunk * (CHUNK_N // 2), N, stride_ym, row, CHUNK_N // 2, False, VEC,
                                ALIGN)
            lo, hi = _unpack(_fresh(x, 3), io_ty, tl.float32, False)
            if LOG:
                sh = m + tl.log(s)
                w = _pack(lo - sh, hi - sh, io_ty)
            else:
                r = 1.0 / s
                w = _pack(tl.exp(lo - m) * r, tl.exp(hi - m) * r, io_ty)
            tl.store(y_ptr.to(tl.pointer_type(tl.int32)) + offs, w, mask=mask)
        else:
            cols = chunk * CHUNK_N + tl.arange(0, CHUNK_N)
            if LOG:
                y = (x - m) - tl.log(s)
            else:
                y = tl.exp(x - m) / s
            tl.store(y_ptr + row * _aligned(stride_ym, ALIGN) + cols, y.to(y_ptr.dtype.element_ty),
                     mask=cols < _aligned(N, ALIGN))
        t, x = t2, x2
        if t < total:
            t2 = _pipe_take(count_ptr, M, total)
    _pipe_exit(count_ptr, M)
"""


def _pipe_fwd_plan(M, N, dtype, log, chunk, warps, per_sm, sms):
    """A one-launch plan of PIPEF's scratch kernel."""
    from multisoftmax import dispatch
    n_chunks = triton.cdiv(N, chunk)
    itemsize = dispatch.ITEMSIZE[dtype]
    meta = dict(CHUNK_N=chunk, BLOCK_C=triton.next_power_of_2(n_chunks), VEC=16 // itemsize, LOG=log,
                ALIGN=dispatch.alignment(N), PACK=itemsize == 2, num_warps=warps, num_stages=1)
    outs = dispatch.coop_outputs((M, 2, n_chunks), (M + 2,), "zeros", "y", (M, N))
    return (dispatch.Launch("softmax_fwd_pipef", ("x",), (M, N, N, N, n_chunks), outs,
                            (min(M * n_chunks, per_sm * sms),), tuple(meta.items())),)


PIPEF_SHAPES = {"bfloat16": [(16, 1048576), (128, 1048576), (64, 256000), (256, 524288)],
                "float32": [(16, 1048576), (64, 1048576), (64, 256000), (128, 524288)]}
PIPEF_VARIANTS = {"bfloat16": [(8192, 8, 2), (4096, 4, 4), (4096, 8, 4)],
                  "float32": [(4096, 8, 2), (4096, 8, 4), (2048, 4, 5), (2048, 4, 8)]}


def pipe_fwd(sms, shapes=PIPEF_SHAPES, variants=PIPEF_VARIANTS):
    """dispatch's forward on `shapes` (softmax and log_softmax) against PIPEF (F<chunk>x<warps>g<programs an
    SM>), twice each, by the benchmark's clock, with registers and the largest error."""
    from multisoftmax.kernels import softmax as kernels_src
    # (registered apart from the committed softmax_fwd_pipe, PIPE_FWD_*, which it came before)
    kernels_src.softmax_fwd_pipef = _module_from_source("pipe_fwd", PIPEF_SRC).softmax_fwd_pipe
    for dtype, cases in shapes.items():
        for M, N in cases:
            for log in (False, True):
                plan, _ = _dispatch_plan(M, N, dtype, "fwd", sms, None, log)
                vs = [("dispatch", plan)] + [(f"F{c}x{w}g{g}", _pipe_fwd_plan(M, N, dtype, log, c, w, g, sms))
                                             for c, w, g in variants[dtype]]
                print(_head(M, N, dtype, "fwd", log, plan, sms) + _compare(M, N, dtype, "fwd", log, vs, sms),
                      flush=True)


def pipe_dispatch(sms, shapes=PIPE_RULE_SHAPES):
    """dispatch's backward plans on `shapes` (by dtype; softmax and log_softmax) where they take
    softmax_bwd_pipe, against the cooperative plan (force="coop"), twice each, by the benchmark's
    clock: the committed kernel where probe_pipe_rule.log timed PIPE2's scratch copy."""
    for dtype, cases in shapes.items():
        for M, N in cases:
            for log in (False, True):
                plan, _ = _dispatch_plan(M, N, dtype, "bwd", sms, None, log)
                if plan[0].kernel != "softmax_bwd_pipe":
                    continue
                coop, _ = _dispatch_plan(M, N, dtype, "bwd", sms, "coop", log)
                kw = plan[0].kwargs
                head = (f"{dtype} {M}x{N} {'log' if log else 'sm'} bwd | pipe: chunk={kw['CHUNK_N']},"
                        f"warps={kw['num_warps']},grid={plan[0].grid[0]} | ")
                print(head + _compare(M, N, dtype, "bwd", log, [("pipe", plan), ("coop", coop)], sms), flush=True)


def pipe(sms, shapes=PIPE_SHAPES, logs=(False, True), variants_of=None):
    """dispatch's cooperative backward on `shapes` (by dtype; "dispatch" in the logs: force="coop" since
    dispatch takes PIPE2 itself) against PIPE (P<chunk>x<warps>g<programs an SM>; Q and QD: PIPE2), twice
    each, by the benchmark's clock, with registers a thread and the largest error."""
    variants_of = variants_of or {(d, log): [v + (0,) for v in vs] for d, vs in PIPE_VARIANTS.items()
                                  for log in (False, True)}
    from multisoftmax.kernels import softmax as kernels_src
    kernels_src.softmax_bwd_coop_pipe = _module_from_source("pipe", PIPE_SRC).softmax_bwd_coop_pipe
    for dtype, cases in shapes.items():
        for M, N in cases:
            for log in logs:
                if (dtype, log) not in variants_of:
                    continue
                plan, _ = _dispatch_plan(M, N, dtype, "bwd", sms, "coop", log)
                variants = [("dispatch", plan)] + [
                    (f"{'QD' if k == 2 else 'Q' if k else 'P'}{c}x{w}g{g}",
                     _pipe_plan(M, N, dtype, log, c, w, g, sms,
                                "softmax_bwd_pipe" if k else "softmax_bwd_coop_pipe", defer=k == 2))
                    for c, w, g, k in variants_of[(dtype, log)] if k < 2 or log]
                print(_head(M, N, dtype, "bwd", log, plan, sms) + f"tag={plan[0].kwargs.get('TAG', 0):d} | "
                      + _compare(M, N, dtype, "bwd", log, variants, sms), flush=True)


TAG_WIDE_SHAPES = [(256, 524288), (128, 524288), (66, 524288), (116, 300000), (160, 393216)]


def tag_wide(sms, shapes=TAG_WIDE_SHAPES, dtypes=("bfloat16", "float16")):
    """The 16-bit forward of rows of 33 to 64 chunks of 8192 values in grids where dispatch took TAG
    in wide packed chunks until POLY came (T) against the plan on counters (C: packed wide chunks
    with SENT from COOP_PACK_WIDE_MIN_PER_SM; dispatch's now) and, for the softmax, both with
    POLY (TP, CP; dispatch's softmax now: CP); twice each, by the benchmark's clock. (Logs before
    POLY name T "dispatch" and take POLY from the scratch kernel A4, the same polynomial.)"""
    from multisoftmax import dispatch
    for dtype in dtypes:
        for M, N in shapes:
            for log in (False, True):
                with mock.patch.object(dispatch, "_coop_tag_fwd", lambda *a: dict(wide=True)):
                    tag, _ = _dispatch_plan(M, N, dtype, "fwd", sms, None, log)
                with mock.patch.object(dispatch, "_coop_tag_fwd", lambda *a: None):
                    counters, _ = _dispatch_plan(M, N, dtype, "fwd", sms, None, log)
                assert tag[0].kwargs["TAG"] and tag[0].kwargs["CHUNK_N"] == 16384 and not counters[0].kwargs["TAG"]
                variants = [("T", tune.with_meta(tag, POLY=False)), ("C", tune.with_meta(counters, POLY=False))]
                if not log:
                    variants += [("TP", tune.with_meta(tag, POLY=True)), ("CP", tune.with_meta(counters, POLY=True))]
                kw = counters[0].kwargs
                print(_head(M, N, dtype, "fwd", log, tag, sms) + f"tag=1 | C: chunk="
                      f"{kw['CHUNK_N']},sent={kw['SENT']:d},late={kw['LATE_LEAVE']:d} | "
                      + _compare(M, N, dtype, "fwd", log, variants, sms), flush=True)


SCAN_N = [196608, 300000, 393216, 524288, 786432, 655360]


def scan(sms, Ns=SCAN_N, dtypes=("bfloat16", "float16", "float32")):
    """dispatch's plans on ~256 MB rows of lengths the benchmark's sweep leaves out (between its
    131072, 262144 and 1048576), every dtype, op and direction: GB/s and the fraction of the copy
    bandwidth measured at the start, by the benchmark's clock, to find dips the suite cannot see.
    SCAN_N and SCAN_DTYPES (comma-separated) in the environment take other lengths and dtypes (a
    process each, as torch's generator failed after some 20 cases in one: "Offset increment
    outside graph capture")."""
    Ns = [int(n) for n in os.environ.get("SCAN_N", ",".join(map(str, Ns))).split(",")]
    dtypes = os.environ.get("SCAN_DTYPES", ",".join(dtypes)).split(",")
    copy = tune.copy_bandwidth()
    print(f"copy {copy:.0f} GB/s", flush=True)
    for dtype in dtypes:
        for N in Ns:
            M = 256 * 2**20 // (N * getattr(torch, dtype).itemsize)
            for log in (False, True):
                for direction in ("fwd", "bwd"):
                    plan, _ = _dispatch_plan(M, N, dtype, direction, sms, None, log)
                    line = _compare(M, N, dtype, direction, log, [("dispatch", plan)], sms)
                    gbs = float(line.split(" us ")[1].split()[0])
                    kw = plan[0].kwargs
                    print(f"{dtype} {M}x{N} {'log' if log else 'sm'} {direction} {plan[0].kernel} chunk="
                          f"{kw.get('CHUNK_N', kw.get('BLOCK_N'))} tag={kw.get('TAG', 0):d} sent={kw.get('SENT', 0):d} "
                          f"| {line} | {gbs / copy:.3f} of copy", flush=True)


MID16_SHAPES = [(447, 300000), (341, 393216), (256, 524288), (128, 524288)]


def mid16(sms, shapes=MID16_SHAPES, dtypes=("bfloat16",), names=("dispatch", "D0", "DE", "P4", "P4E", "T4"),
          log=False):
    """The 16-bit softmax forward of rows of 37 to 64 chunks of 8192 values (--scan: 0.86-0.88 of
    copy) against other plans: dispatch's (wide packed chunks, SENT, POLY, late) without POLY (D0)
    and leaving early (DE); packed 8192-value chunks at 4 warps summed in halves with SENT,
    leaving late and early (P4, P4E); the same on TAG (T4, past COOP_TAG_MAX_CHUNKS); twice each,
    by the benchmark's clock."""
    from multisoftmax import dispatch
    for dtype in dtypes:
        for M, N in shapes:
            plan, _ = _dispatch_plan(M, N, dtype, "fwd", sms, None, log)
            with mock.patch.object(dispatch, "_coop_tag_fwd", lambda *a: None):  # counters, whatever TAG's rule
                p4 = tune.with_meta(tune.coop_plan(M, N, dtype, "fwd", sms, 8192, 4, log), PACK=True, SPLIT_SUM=True)
            with mock.patch.object(dispatch, "_coop_tag_fwd", lambda *a: dict(warps=4)):
                t4, _ = _dispatch_plan(M, N, dtype, "fwd", sms, None, log)
            assert t4[0].kwargs["TAG"] and t4[0].kwargs["SPLIT_SUM"] and t4[0].kwargs["CHUNK_N"] == 8192
            variants = [("dispatch", plan), ("D0", tune.with_meta(plan, POLY=False)) if not log else ("D0", plan),
                        ("DE", tune.with_meta(plan, LATE_LEAVE=False)), ("P4", _with_sent(p4, True)),
                        ("P4E", _with_sent(p4, False)), ("T4", t4)]
            variants = [(name, p) for name, p in variants if name in names]
            print(_head(M, N, dtype, "fwd", log, plan, sms) + _compare(M, N, dtype, "fwd", log, variants, sms),
                  flush=True)

TAG_POLY_SHAPES = [(256, 256000), (512, 262144), (512, 151936), (1024, 128256), (64, 128256), (64, 256000),
                   (16, 1048576)]


def tag_poly(sms, shapes=TAG_POLY_SHAPES, dtypes=("bfloat16", "float16")):
    """The 16-bit forward of rows of at most 32 chunks of 8192 values (and of few long rows)
    against packed 8192-value chunks at 4 warps on counters, summed in halves, with keyed partials,
    leaving late (P4, COOP_SPLIT_SUM_MAX_CHUNKS's plan) and, for the softmax, the same with POLY
    (P4P: 56-64 registers a thread under Triton 3.6 where TAG with POLY (TP) takes 70); twice
    each, by the benchmark's clock."""
    from multisoftmax import dispatch
    for dtype in dtypes:
        for M, N in shapes:
            for log in (False, True):
                plan, _ = _dispatch_plan(M, N, dtype, "fwd", sms, None, log)
                with mock.patch.object(dispatch, "_coop_tag_fwd", lambda *a: None):
                    p4 = tune.with_meta(tune.coop_plan(M, N, dtype, "fwd", sms, 8192, 4, log), PACK=True,
                                        SPLIT_SUM=True)
                p4 = _with_sent(p4, True)
                variants = [("dispatch", plan), ("P4", p4)]
                if not log:
                    variants += [("P4P", tune.with_meta(p4, POLY=True))]
                    if plan[0].kwargs["TAG"]:
                        variants += [("TP", tune.with_meta(plan, POLY=True))]
                kw = plan[0].kwargs
                print(_head(M, N, dtype, "fwd", log, plan, sms) + f"tag={kw['TAG']:d},sent={kw['SENT']:d},"
                      f"poly={kw['POLY']:d} | " + _compare(M, N, dtype, "fwd", log, variants, sms), flush=True)


CAP_BWD_CASES = [("float32", 64, 1048576, True), ("float32", 128, 1048576, True), ("float32", 16, 1048576, True),
                 ("float32", 64, 1048576, False), ("bfloat16", 16, 1048576, False),
                 ("bfloat16", 128, 1048576, False), ("bfloat16", 64, 256000, False)]


def cap_bwd(sms, cases=CAP_BWD_CASES):
    """The cooperative backward of rows of 1M values (and bf16 64 x 256000) under Triton's
    register cap (maxnreg: capN), the float32 log_softmax also with y first loaded after the wait
    (DEFER_Y: D; uncapped 68 registers a thread where dispatch's plan takes 80, 3 programs an SM;
    capped at 64: 4 an SM, 2 spill stores; at 48: 5, 12), twice each, by the benchmark's clock."""
    for dtype, M, N, log in cases:
        plan, _ = _dispatch_plan(M, N, dtype, "bwd", sms, None, log)
        caps = (64, 56, 48) if dtype == "float32" and log else (64,) if dtype == "float32" else (56, 48)
        variants = [("dispatch", plan)]
        if dtype == "float32" and log:
            variants.append(("D", tune.with_meta(plan, DEFER_Y=True)))
            variants += [(f"Dcap{cap}", tune.with_meta(plan, DEFER_Y=True, maxnreg=cap)) for cap in caps]
        else:
            variants += [(f"cap{cap}", tune.with_meta(plan, maxnreg=cap)) for cap in caps]
        print(_head(M, N, dtype, "bwd", log, plan, sms) + _compare(M, N, dtype, "bwd", log, variants, sms),
              flush=True)


CAP_LOG32_N = [65536, 131072, 262144, 393216, 524288, 786432, 1048576]
CAP_LOG32_FEW = [(1, 1048576), (2, 1048576), (4, 1048576), (8, 1048576), (32, 1048576), (1, 256000), (8, 256000),
                 (64, 256000), (8, 128256), (64, 128256), (1335, 50257)]

CAP_LOG32_MORE = [(64, 65536), (256, 65536), (512, 65536), (128, 131072), (16, 262144), (3, 1048576), (48, 1048576),
                  (100, 917504), (24, 128256), (32, 256000)]


def cap_log32(sms, Ns=CAP_LOG32_N, few=CAP_LOG32_FEW):
    """The float32 log_softmax backward (cooperative plans) against the same with DEFER_Y under
    maxnreg=64 (Dcap64; --cap-bwd), at ~256 MB and on few long rows, twice each, by the
    benchmark's clock. The first plan is dispatch's without COOP_CAP32_REGS (register_cap=False,
    as for the JAX adapter; "dispatch" in logs from before the rule)."""
    from multisoftmax import dispatch
    shapes = [(256 * 2**20 // (4 * N), N) for N in Ns] + list(few)
    for M, N in shapes:
        plan = dispatch.plan_backward.__wrapped__(M, N, N, N, N, "float32", True, sms, None, register_cap=False)
        if not plan[0].kernel.endswith("_coop"):
            print(f"float32 {M}x{N}: {plan[0].kernel}", flush=True)
            continue
        kw = plan[0].kwargs
        capped = dispatch.plan_backward.__wrapped__(M, N, N, N, N, "float32", True, sms, None)[0].kwargs
        variants = [("uncapped", plan), ("Dcap64", tune.with_meta(plan, DEFER_Y=True, maxnreg=64))]
        print(_head(M, N, "float32", "bwd", True, plan, sms) + f"tag={kw['TAG']:d} | dispatch: "
              f"{'Dcap64' if capped.get('maxnreg') else 'uncapped'} | "
              + _compare(M, N, "float32", "bwd", True, variants, sms), flush=True)


CAP_FWD16_CASES = [(256, 256000, False, (48,)), (512, 262144, False, (48,)), (1024, 128256, False, (48,)),
                   (16, 1048576, False, (56, 48)), (16, 1048576, True, (56, 48)), (8, 1048576, False, (56, 48)),
                   (64, 256000, False, (64,)), (256, 256000, True, (48,))]


def cap_fwd16(sms, cases=CAP_FWD16_CASES):
    """The bf16 forward's plans under Triton's register cap (maxnreg: capN): TAG's 8192-value chunks at
    4 warps (56 registers a thread, 9 programs an SM; 48: 10, 2-3 spill stores), the few-row plan
    of COOP_SPLIT_SUM_MAX_CHUNKS (64: 8 an SM; 56: 9, 48: 10, 1 spill) and 64 x 256000's unpacked
    wide chunks (80; 64: 4 of 8 warps an SM), twice each, by the benchmark's clock."""
    for M, N, log, caps in cases:
        plan, _ = _dispatch_plan(M, N, "bfloat16", "fwd", sms, None, log)
        variants = [("dispatch", plan)] + [(f"cap{cap}", tune.with_meta(plan, maxnreg=cap)) for cap in caps]
        print(_head(M, N, "bfloat16", "fwd", log, plan, sms) + _compare(M, N, "bfloat16", "fwd", log, variants, sms),
              flush=True)


BWD16_4W_CASES = [("bfloat16", 16, 1048576, False), ("bfloat16", 8, 1048576, False), ("bfloat16", 64, 1048576, False),
                  ("bfloat16", 128, 1048576, False), ("float16", 16, 1048576, False), ("bfloat16", 16, 1048576, True),
                  ("bfloat16", 128, 1048576, True)]


def bwd16_4w(sms, cases=BWD16_4W_CASES):
    """The 16-bit cooperative backward of rows of 1M values (dispatch: 8192-value chunks at 8
    warps; the softmax 64 registers a thread, 4 programs an SM; the log_softmax, deferred, 40, 6)
    against the same flags in 8192-value chunks at 4 warps (96 registers, 5 programs an SM; 64, 8),
    twice each, by the benchmark's clock."""
    for dtype, M, N, log in cases:
        plan, _ = _dispatch_plan(M, N, dtype, "bwd", sms, None, log)
        kw = plan[0].kwargs
        four = tune.with_meta(tune.coop_plan(M, N, dtype, "bwd", sms, 8192, 4, log),
                              **{k: kw[k] for k in ("PACK", "LATE_LEAVE", "DEFER_Y", "BITS", "RELOAD")})
        print(_head(M, N, dtype, "bwd", log, plan, sms)
              + _compare(M, N, dtype, "bwd", log, [("dispatch", plan), ("8192x4", four)], sms), flush=True)


# Cache hints on the cooperative forward's streams (--evict): x is read once and y written once,
# so neither needs to stay in L2; the partials and TAG's slots, which the waits read, do.
_X_PACKED = "wx = tl.load(x_ptr.to(tl.pointer_type(tl.int32)) + x_offs, mask=mask, other=_pack(ninf, ninf, io_ty))"
_X_PLAIN = 'x = tl.load(x_ptr + x_offs, mask=mask, other=-float("inf")).to(acc_ty)'
_Y_PACKED = "tl.store(y_ptr.to(tl.pointer_type(tl.int32)) + y_offs, _pack(y_lo, y_hi, io_ty), mask=mask)"
_Y_PLAIN = "tl.store(y_ptr + y_offs, y.to(y_ptr.dtype.element_ty), mask=mask)"


def _hinted(load_hint, store_hint):
    edits = []
    if load_hint:
        edits += [(_X_PACKED, _X_PACKED[:-1] + f", {load_hint})"), (_X_PLAIN, _X_PLAIN.replace(
            '-float("inf"))', f'-float("inf"), {load_hint})'))]
    if store_hint:
        edits += [(_Y_PACKED, _Y_PACKED[:-1] + f", {store_hint})"), (_Y_PLAIN, _Y_PLAIN[:-1] + f", {store_hint})")]
    return {"softmax_fwd_coop": edits}


EVICT_VARIANTS = {"EF": ('eviction_policy="evict_first"', 'eviction_policy="evict_first"'),
                  "CS": (None, 'cache_modifier=".cs"'),
                  "EFCS": ('eviction_policy="evict_first"', 'cache_modifier=".cs"')}
EVICT_CASES = [("bfloat16", 256, 256000, False), ("bfloat16", 256, 256000, True), ("bfloat16", 1024, 128256, False),
               ("float16", 128, 1048576, False), ("bfloat16", 16, 1048576, False), ("float32", 64, 256000, False)]


def evict(sms, cases=EVICT_CASES):
    """dispatch's cooperative forward plan against the same kernel with cache hints (EVICT_VARIANTS:
    scratch kernels softmax_fwd_coop_<name>) and, where it waits through TAG, the softmax with POLY
    under Triton's maxnreg cap of 64 (TP64); twice each, by the benchmark's clock."""
    import dataclasses
    for name, (load_hint, store_hint) in EVICT_VARIANTS.items():
        _function_variants("_" + name.lower(), _hinted(load_hint, store_hint))
    for dtype, M, N, log in cases:
        plan, _ = _dispatch_plan(M, N, dtype, "fwd", sms, None, log)
        assert plan[0].kernel == "softmax_fwd_coop", plan
        variants = [("dispatch", plan)] + [
            (name, (dataclasses.replace(plan[0], kernel="softmax_fwd_coop_" + name.lower()),))
            for name in EVICT_VARIANTS]
        kw = plan[0].kwargs
        if kw["TAG"] and not log and kw["PACK"]:
            variants.append(("TP64", tune.with_meta(plan, POLY=True, maxnreg=64)))
        print(_head(M, N, dtype, "fwd", log, plan, sms) + f"tag={kw['TAG']:d},sent={kw['SENT']:d},"
              f"poly={kw['POLY']:d} | " + _compare(M, N, dtype, "fwd", log, variants, sms), flush=True)


# --rows-hints: the rows kernels of ~256 MB shapes where a peer ran 0.5-1% ahead in the published run
# (XLA's log_softmax forward, torch.compile's float32 softmax forward, torch's float32 log_softmax
# backward) against cache hints on their streams and other tilings: (dtype, N, direction, log).
ROWS_HINT_CASES = [("bfloat16", 2048, "fwd", True), ("bfloat16", 512, "fwd", True), ("float32", 2048, "fwd", True),
                   ("float32", 1152, "fwd", True), ("float32", 512, "fwd", False), ("float32", 1024, "fwd", False),
                   ("float32", 2048, "bwd", True), ("float32", 4096, "bwd", True), ("bfloat16", 2048, "bwd", True),
                   ("bfloat16", 2048, "bwd", False)]
_ROWS_X = 'x = tl.load(x_ptr + x_offs, mask=mask, other=-float("inf"))'
_ROWS_Y = "tl.store(y_ptr + y_offs, y.to(y_ptr.dtype.element_ty), mask=mask)"
_ROWS_YB = "y = tl.load(y_ptr + y_offs, mask=mask, other=other_y)"
_ROWS_DY = "dy = tl.load(dy_ptr + dy_offs, mask=mask, other=0.0)"
_ROWS_DX = "tl.store(dx_ptr + dx_offs, dx.to(dx_ptr.dtype.element_ty), mask=mask)"


def _rows_hinted(load_hint, store_hint):
    """softmax_fwd_rows and softmax_bwd_rows with `load_hint` on their body's loads and `store_hint`
    on their body's store (either None: none)."""
    def add(text, hint):
        return [(text, text[:-1] + f", {hint})")] if hint else []
    return {"softmax_fwd_rows": add(_ROWS_X, load_hint) + add(_ROWS_Y, store_hint),
            "softmax_bwd_rows": add(_ROWS_YB, load_hint) + add(_ROWS_DY, load_hint) + add(_ROWS_DX, store_hint)}


def rows_hints(sms, cases=ROWS_HINT_CASES):
    """dispatch's rows plans of ~256 MB against the same kernels with cache hints (EVICT_VARIANTS:
    scratch kernels softmax_{fwd,bwd}_rows_<name>) and with twice the rows a program (bm2x) and twice
    the warps too (bm2xw2x); twice each, by the benchmark's clock."""
    import dataclasses
    for name, (load_hint, store_hint) in EVICT_VARIANTS.items():
        _function_variants("_" + name.lower(), _rows_hinted(load_hint, store_hint))
    for dtype, N, direction, log in cases:
        itemsize = getattr(torch, dtype).itemsize
        M = min(65536, 256 * 2**20 // (N * itemsize))
        plan, _ = _dispatch_plan(M, N, dtype, direction, sms, None, log)
        assert plan[0].kernel.endswith("_rows") and len(plan) == 1, plan
        kw = plan[0].kwargs
        bm, w = kw["BLOCK_M"], kw["num_warps"]
        variants = [("dispatch", plan)] + [
            (name, (dataclasses.replace(plan[0], kernel=plan[0].kernel + "_" + name.lower()),))
            for name in EVICT_VARIANTS]
        variants += [("bm2x", tune.with_rows_tiling(plan, M, 2 * bm, w, itemsize, log, direction == "fwd")),
                     ("bm2xw2x", tune.with_rows_tiling(plan, M, 2 * bm, 2 * w, itemsize, log, direction == "fwd"))]
        print(f"{dtype} {M}x{N} {'log' if log else 'sm'} {direction} | dispatch: block_m={bm},block_n={kw['BLOCK_N']},"
              f"warps={w},even_m={kw['EVEN_M']:d} | " + _compare(M, N, dtype, direction, log, variants, sms), flush=True)


# --rows-occ: the same rows plans at fewer programs an SM (XLA's one-row 4-warp log_softmax kernel, ahead
# there, runs 12 an SM at 33 registers a thread and 4 KB of dynamic shared memory; dispatch's run 16 at
# 32, 12 at 35): each launched with dynamic shared memory it does not use, either so that the SM holds at
# most k of its programs at once (occK) or of B bytes (padB); with the function's preferred shared memory
# carveout set to P% (carveP: the driver's attribute, no padding); and with x loaded past L1 (cg).
ROWS_OCC_CASES = [("bfloat16", 2048, "fwd", True), ("float32", 2048, "fwd", True), ("bfloat16", 512, "fwd", True),
                  ("float32", 1024, "fwd", False), ("bfloat16", 2048, "fwd", False), ("float32", 2048, "bwd", True)]
ROWS_OCC_VARIANTS = ("occ8", "occ10", "occ12", "occ14")
_CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT = 9


def _carveout(function, percent):
    """Set the preferred shared memory carveout of a CUfunction (percent of the SM's unified
    L1 / shared memory; -1: the driver's default), through multisoftmax.sms's libcuda."""
    import ctypes

    from multisoftmax import sms as ms_sms
    rc = ms_sms._driver().cuFuncSetAttribute(ctypes.c_void_p(function),
                                             _CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, ctypes.c_int(percent))
    assert rc == 0, rc


def rows_occupancy(sms, cases=ROWS_OCC_CASES, names=ROWS_OCC_VARIANTS):
    """dispatch's rows plans against the same compiled kernels launched as `names` say (see the
    comment above: occK, padB, carveP, cg; occK asks for occupancy.limits' shared memory an SM over
    k, less what the GPU keeps a program); twice each, by the benchmark's clock. Patches
    launch._COMPILED's cached launch (Triton's packed metadata: num_warps, num_ctas, shared)."""
    import dataclasses

    from multisoftmax import occupancy
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    lim = occupancy.limits(0)  # the H100: 233472 bytes of shared memory an SM, 1024 kept a program
    if "cg" in names:
        _function_variants("_cg", _rows_hinted('cache_modifier=".cg"', None))
    for dtype, N, direction, log in cases:
        T = getattr(torch, dtype)
        M = min(65536, 256 * 2**20 // (N * T.itemsize))
        plan, inputs = _dispatch_plan(M, N, dtype, direction, sms, None, log)
        assert len(plan) == 1 and (plan[0].kernel.endswith("_rows") or "cg" not in names), plan
        x, y, dy, out, bufs, nbytes = tune.make_inputs(M, N, T, direction, log)
        ref = tune.reference(x, y, dy, log, direction)
        variants = [("dispatch", plan)] + [(name, (dataclasses.replace(
            plan[0], kernel=plan[0].kernel + ("_cg" if name == "cg" else "")),)) for name in names]
        launch._COMPILED.clear()
        errs, carve = {}, {}
        for name, p in variants:
            got = tune.run_plan(p, bufs, out)
            (key, (l, compiled, grid, call, head, constexprs)), = [
                (k, v) for k, v in launch._COMPILED.items() if v[0] is p[0]]
            nw, nctas, shared = compiled.packed_metadata
            if name.startswith(("occ", "pad")):
                extra = lim.shared // int(name[3:]) - lim.reserved if name.startswith("occ") else int(name[3:])
                head = tuple((nw, nctas, max(shared, extra)) if h is compiled.packed_metadata else h for h in head)
                launch._COMPILED[key] = (l, compiled, grid, call, head, constexprs)
            if name.startswith("carve"):
                carve[name] = (compiled.function, int(name[5:]))
                _carveout(*carve[name])
            got = tune.run_plan(p, bufs, out)
            if name in carve:
                _carveout(carve[name][0], -1)
            errs[name] = ((got.double() - ref).abs() / ref.abs().clamp(min=1)).max().item()
        res = _two_runs(variants, bufs, inputs, out, nbytes, l2,
                        before=lambda name: name in carve and _carveout(*carve[name]),
                        after=lambda name: name in carve and _carveout(carve[name][0], -1))
        del x, y, dy, out, bufs, ref
        torch.cuda.empty_cache()
        kw = plan[0].kwargs
        tiling = (f"block_m={kw['BLOCK_M']},block_n={kw['BLOCK_N']}" if "BLOCK_M" in kw else
                  f"{plan[0].kernel} grid={plan[0].grid[0]},chunk={kw.get('CHUNK_N')}")
        print(f"{dtype} {M}x{N} {'log' if log else 'sm'} {direction} | dispatch: {tiling},warps={kw['num_warps']} | "
              + " | ".join(
                  f"{name} " + "/".join(f"{us:.2f}" for us in res[name]) + f" us {nbytes / min(res[name]) / 1e3:.0f} GB/s"
                  + (f" ERR {errs[name]:.0e}" if errs[name] > 2e-2 else "") for name, _ in variants), flush=True)


# --few-pack16, --few-pack16-below: the 16-bit softmax forward of few long rows in the plans that
# COOP_TAG_FWD16_FEW_MIN_PER_SM chose between: TAG's 8-warp chunks packed with CVT_X2 (P, dispatch's
# since 2c8aa82), packed without it (Pn), unpacked (U, dispatch's at 1.5 to 4 programs an SM before
# 4085a51) and the forward on counters (C, dispatch's below 1.5 an SM before 2c8aa82). The logs ran
# before those changes and name dispatch's plan "dispatch": U in probe_few_pack16.log (against P and
# Pn), C in probe_few_pack16_below.log (against P).
FEW_PACK16_SHAPES = [(8, 256000), (16, 128256), (16, 151936), (12, 256000), (16, 256000), (32, 128256)]
FEW_PACK16_BELOW_SHAPES = [(2, 256000), (3, 256000), (4, 256000), (8, 128256), (8, 151936), (5, 256000),
                           (6, 256000)]


def few_pack16(sms, shapes=FEW_PACK16_SHAPES, names=("U", "P", "Pn"), dtypes=("bfloat16", "float16")):
    """The plans `names` of the comment above, twice each, by the benchmark's clock."""
    from multisoftmax import dispatch
    for dtype in dtypes:
        for M, N in shapes:
            plans = {}
            for name, take in (("P", lambda *a: {}), ("C", lambda *a: None)):
                with mock.patch.object(dispatch, "_coop_tag_fwd", take):
                    plans[name] = dispatch.plan_forward.__wrapped__(M, N, N, N, dtype, False, sms, "coop")
            k = plans["P"][0].kwargs
            assert k["TAG"] and k["PACK"] and k["CVT_X2"] and k["num_warps"] == 8, k
            assert not plans["C"][0].kwargs["TAG"]
            plans.update(Pn=tune.with_meta(plans["P"], CVT_X2=False),
                         U=tune.with_meta(plans["P"], PACK=False, CVT_X2=False))
            plan, _ = _dispatch_plan(M, N, dtype, "fwd", sms)
            print(_head(M, N, dtype, "fwd", False, plan, sms)
                  + _compare(M, N, dtype, "fwd", False, [(name, plans[name]) for name in names], sms), flush=True)


# --rows-fill: dispatch's rows plans of the sweep's lengths (~256 MB, as the benchmark's sweep) launched
# asking for multisoftmax/occupancy.py's fill_shared bytes (fill), whatever dispatch.fills_shared says,
# against the same launches asking for Triton's shared memory alone (plain).
ROWS_FILL_N = (128, 256, 512, 781, 1024, 1152, 2048, 3000, 4096, 8192, 16384, 16385)
# --rows-fill-part: the same on rows that fill part of their lanes, which FILL_SHARED leaves out (in
# probe_rows_fill.log bf16 N = 1152 and 3000 forward lost 2-3% filled, float32 N = 1152 gained 0.5-0.9%).
ROWS_FILL_PART_N = (600, 768, 1000, 1100, 1152, 1280, 1536, 1792, 2000, 2304, 2560, 3000, 3584)
# --rows-fill-edge: float32 rows of whole 128-byte lines in part of their lanes beyond FILL_SHARED_N
# (512 lanes below it, 8192 above), where FILL_SHARED_LINE_BYTES's rule was not measured.
ROWS_FILL_EDGE_N = (320, 384, 448, 4608, 5120, 6144, 7168)


def rows_fill(sms, Ns=ROWS_FILL_N, dtypes=("bfloat16", "float32")):
    """plain against fill (see the comment above) on every rows plan of `Ns`, both directions, softmax and
    log_softmax; twice each, by the benchmark's clock."""
    import dataclasses
    from multisoftmax import dispatch
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    rule = dispatch.fills_shared
    for dtype in dtypes:
        T = getattr(torch, dtype)
        for N in Ns:
            M = min(65536, 256 * 2**20 // (N * T.itemsize))
            for direction in ("fwd", "bwd"):
                for log in (False, True):
                    plan, inputs = _dispatch_plan(M, N, dtype, direction, sms, None, log)
                    if len(plan) != 1 or not plan[0].kernel.endswith("_rows"):
                        continue
                    x, y, dy, out, bufs, nbytes = tune.make_inputs(M, N, T, direction, log)
                    ref = tune.reference(x, y, dy, log, direction)
                    variants = [("plain", (dataclasses.replace(plan[0]),)), ("fill", (dataclasses.replace(plan[0]),))]
                    launch._COMPILED.clear()
                    errs, shared = {}, {}
                    for name, p in variants:
                        dispatch.fills_shared = lambda one, fill=name == "fill": fill  # read at the compile
                        try:
                            got = tune.run_plan(p, bufs, out)
                        finally:
                            dispatch.fills_shared = rule
                        got = tune.run_plan(p, bufs, out)
                        (_, (_, compiled, _, _, head, _)), = [
                            (k, v) for k, v in launch._COMPILED.items() if v[0] is p[0]]
                        shared[name] = next(h for h in head if isinstance(h, tuple))[2]
                        errs[name] = (compiled.n_regs, ((got.double() - ref).abs() / ref.abs().clamp(min=1)).max().item())
                    res = _two_runs(variants, bufs, inputs, out, nbytes, l2)
                    del x, y, dy, out, bufs, ref
                    torch.cuda.empty_cache()
                    kw = plan[0].kwargs
                    ratio = min(res["plain"]) / min(res["fill"])
                    print(f"{dtype} {M}x{N} {'log' if log else 'sm'} {direction} | block_m={kw['BLOCK_M']},"
                          f"block_n={kw['BLOCK_N']},tail_n={kw['TAIL_N']},peel={kw['PEEL']:d},warps={kw['num_warps']} | "
                          + " | ".join(f"{name} r{errs[name][0]} shared={shared[name]} "
                                       + "/".join(f"{us:.2f}" for us in res[name])
                                       + f" us {nbytes / min(res[name]) / 1e3:.0f} GB/s"
                                       + (f" ERR {errs[name][1]:.0e}" if errs[name][1] > 2e-2 else "")
                                       for name, _ in variants) + f" | fill x{ratio:.4f}", flush=True)


FEW_TP_SHAPES = [(64, 128256), (64, 256000), (32, 256000), (32, 128256), (16, 256000), (128, 128256)]


# --few-t4: dispatch against T4 alone over grids of 1.9 to 31 programs an SM (8192-value chunks), the
# rows TAG takes (at most COOP_TAG_MAX_CHUNKS chunks), bf16 and float16: COOP_TAG_FWD_MIN_PER_SM's softmax.
FEW_T4_SHAPES = [(16, 128256), (24, 128256), (32, 128256), (48, 128256), (64, 128256), (96, 128256), (128, 128256),
                 (192, 128256), (256, 128256), (8, 256000), (12, 256000), (16, 256000), (24, 256000), (32, 256000),
                 (48, 256000), (64, 256000), (128, 256000), (64, 65536), (128, 65536), (256, 65536), (512, 65536)]


def few_tp(sms, shapes=FEW_TP_SHAPES, dtypes=("bfloat16",), names=("dispatch", "T4", "T4P", "T4P64")):
    """The 16-bit softmax forward of tens of long rows (the few-long-rows target's misses: MUFU.EX2
    bounds the phase after the wait, where every program of a grid the GPU holds whole computes its
    exps at once) against TAG's 4-warp packed chunks summed in halves (T4), the same with POLY (the
    high halves' post-wait exps on the FMA pipe; T4P) and with POLY under Triton's maxnreg cap of 64
    (T4P64, which keeps a grid of up to 8 programs an SM whole); twice each, by the benchmark's clock."""
    from multisoftmax import dispatch
    for dtype in dtypes:
        for M, N in shapes:
            plan, _ = _dispatch_plan(M, N, dtype, "fwd", sms, None, False)
            with mock.patch.object(dispatch, "_coop_tag_fwd", lambda *a: dict(warps=4)):
                t4, _ = _dispatch_plan(M, N, dtype, "fwd", sms, None, False)
            assert t4[0].kwargs["TAG"] and t4[0].kwargs["SPLIT_SUM"] and t4[0].kwargs["PACK"]
            variants = [("dispatch", plan), ("T4", t4), ("T4P", tune.with_meta(t4, POLY=True)),
                        ("T4P64", tune.with_meta(t4, POLY=True, maxnreg=64))]
            variants = [(name, p) for name, p in variants if name in names]
            kw = plan[0].kwargs
            print(_head(M, N, dtype, "fwd", False, plan, sms) + f"tag={kw['TAG']:d},sent={kw['SENT']:d},"
                  f"poly={kw['POLY']:d} | " + _compare(M, N, dtype, "fwd", False, variants, sms), flush=True)


# The packed forward's large row maxima (kernels/softmax.py: COOP_FAST_MAX, COOP_SCALED_L_MIN,
# `_coop_fwd_exact`), against F: the same kernel with the one-op forms alone, as before them (the
# sum's rounding of m * log2(e) left in, every row written from the held words).
EXACT_F = [("""        l = tl.where(tl.abs(m_own) < COOP_SCALED_L_MIN, LOG2E, (LOG2E * 32768.0) / tl.abs(m_own))\n""",
            """        l = LOG2E\n"""),
           ("""        s_own = s_own * tl.exp2(-tl.fma(m_own, l, -m2))\n""", ""),
           ("            exact = tl.abs(m_safe) >= COOP_FAST_MAX\n", "            exact = False\n")]
EXACT_SHAPES = [(2048, 65536), (512, 262144), (128, 1048576), (256, 256000), (1024, 128256), (2670, 50257),
                (64, 256000), (8, 256000), (16, 1048576), (1, 256000)]


def exact(sms, shapes=EXACT_SHAPES, dtypes=("bfloat16", "float16"), big=1000.0):
    """dispatch's packed cooperative forward plans against F (scratch kernel softmax_fwd_coop_f), twice
    each, by the benchmark's clock; then dispatch's plan on x + `big` (every row's max past COOP_FAST_MAX:
    the exact path, x read again), its largest error relative to max(1, |ref|) against float64."""
    import dataclasses
    _function_variants("_f", {"softmax_fwd_coop": EXACT_F})
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    for dtype in dtypes:
        for M, N in shapes:
            if dtype == "float16" and (M, N) not in shapes[:4]:
                continue
            for log in (False, True):
                plan, _ = _dispatch_plan(M, N, dtype, "fwd", sms, None, log)
                if plan[0].kernel != "softmax_fwd_coop" or not plan[0].kwargs["PACK"]:
                    continue
                f = (dataclasses.replace(plan[0], kernel="softmax_fwd_coop_f"),)
                line = _head(M, N, dtype, "fwd", log, plan, sms) + _compare(M, N, dtype, "fwd", log,
                                                                            [("dispatch", plan), ("F", f)], sms)
                x, y, dy, out, bufs, nbytes = tune.make_inputs(M, N, getattr(torch, dtype), "fwd", log)
                x += big
                ref = tune.reference(x, y, dy, log, "fwd")
                err = ((tune.run_plan(plan, bufs, out).double() - ref).abs() / ref.abs().clamp(min=1)).max().item()
                us = _bench_clock(plan, bufs, ("x",), out, nbytes, l2)
                print(line + f" | x+{big:g} {us:.2f} us {nbytes / us / 1e3:.0f} GB/s err {err:.0e}", flush=True)
                del x, y, dy, out, bufs, ref
                torch.cuda.empty_cache()


# --fused-gather: the cooperative forward on counters with keyed partials (SENT: the 1048576-value rows'
# plans) after its wait takes the row's max and sum in one reduction of (all words written, max, sum)
# pairs (FG), not a reduction for the spin's test and then one for the max and one for the sum: two
# cross-warp reductions fewer (each a CTA barrier, a shared-memory write, another barrier and a read).
# FGB also drops `_sent_arrive`'s two CTA barriers (SENT's words carry their own validity; the spin's
# polls are broadcast through barriers already). NT: dispatch's plan without TICKET (items by program
# id: the order the GPU starts programs in, which it does not promise; what the ticket's round trip
# before the loads costs).
FUSED_HELPERS = """

@triton.jit
def _ms_combine(ok1, m1, s1, ok2, m2, s2):
    m = tl.maximum(m1, m2)
    m_safe = tl.where(m == -float("inf"), 0.0, m)
    return tl.minimum(ok1, ok2), m, s1 * tl.exp(m1 - m_safe) + s2 * tl.exp(m2 - m_safe)


@triton.jit
def _sent_ms(words_ptr, c, ok, n_chunks):
    a = tl.load(words_ptr + c, mask=ok, other=1, volatile=True)
    b = tl.load(words_ptr + n_chunks + c, mask=ok, other=1, volatile=True)
    m_c = tl.where(ok, (a ^ SENT_KEY).to(tl.float32, bitcast=True), -float("inf"))
    s_c = tl.where(ok, (b ^ SENT_KEY).to(tl.float32, bitcast=True), 0.0)
    return tl.reduce((((a != 0) & (b != 0)).to(tl.int32), m_c, s_c), 0, _ms_combine)


@triton.jit
def _sent_gather_ms(words_ptr, n_chunks, BLOCK_C: tl.constexpr, PHASE: tl.constexpr):
    c = tl.arange(0, BLOCK_C)
    ok = c < n_chunks
    got, m, s = _sent_ms(words_ptr, c, ok, n_chunks)
    if PHASE == 3:
        while got == 0:
            got, m, s = _sent_ms(words_ptr, c, ok, n_chunks)
    return m, s


@triton.jit
def _sent_arrive_nb(count_ptr, row, n_chunks, PHASE: tl.constexpr):
    arrived = tl.atomic_add(count_ptr + row, 1, sem="relaxed", scope="gpu") + 1
    if PHASE == 3:
        while arrived < n_chunks:
            arrived = tl.atomic_add(count_ptr + row, 0, sem="relaxed", scope="gpu")
"""
FUSED_GATHER = [("            m_c, s_c = _sent_gather(part_row, n_chunks, BLOCK_C, PHASE)\n",
                 "            m_f, s_f = _sent_gather_ms(part_row, n_chunks, BLOCK_C, PHASE)\n"),
                ("        m = tl.max(m_c, axis=0)\n        m_safe = tl.where(m == -float(\"inf\"), 0.0, m)\n"
                 "        s = tl.sum(s_c * tl.exp(m_c - m_safe), axis=0)\n",
                 "        if SENT:\n            m_safe = tl.where(m_f == -float(\"inf\"), 0.0, m_f)\n"
                 "            s = s_f\n"
                 "        else:\n            m = tl.max(m_c, axis=0)\n"
                 "            m_safe = tl.where(m == -float(\"inf\"), 0.0, m)\n"
                 "            s = tl.sum(s_c * tl.exp(m_c - m_safe), axis=0)\n")]
FUSED_NB = [("            _sent_arrive(count_ptr, row, n_chunks, PHASE)",
             "            _sent_arrive_nb(count_ptr, row, n_chunks, PHASE)")]
FUSED_SHAPES = {"bfloat16": [(128, 1048576), (64, 1048576), (16, 1048576)], "float32": [(64, 1048576)]}


# Z: dispatch's plan with its counters zeroed before and after each call (two memsets in the timing); ZNL: the same
# without the leave (`_sent_leave`: a round trip whose result each program waits for before it ends, to
# find the row's last leaver, which zeroes the row's counter and words); the memset zeroes them instead.
# ZNL - Z: what that round trip costs (ZNLT: and the ticket's).
FUSED_NL = [("        if SENT and LATE_LEAVE:\n            _sent_leave(count_ptr, part_row, row, n_chunks, BLOCK_C)\n",
             "        if SENT and LATE_LEAVE:\n            pass\n")]


def _zeroed(plan):
    """`plan` (one cooperative launch) with its "zeros" scratch (the pooled counters the torch launcher
    passes) zeroed before and after each call, within what is timed."""
    (l,) = plan
    size = next(shape[0] for _, shape, kind in l.outputs if kind == "zeros")

    def zero():
        launch._counters(size, torch.device("cuda", torch.cuda.current_device())).zero_()

    class Zeroed(tuple):  # run_plan iterates it: a memset, the launch and a memset (ZNL leaves them dirty)
        def __iter__(self):
            zero()
            yield l
            zero()
    return Zeroed((l,))


def fused_gather(sms, shapes=FUSED_SHAPES, names=("dispatch", "FG", "NT", "Z", "ZNL", "ZNLT")):
    """dispatch's SENT forward plans on `shapes` (softmax and log_softmax) against FG, FGB, NT, Z, ZNL and
    ZNLT (above), twice each, by the benchmark's clock, with registers and the largest error."""
    import dataclasses
    _function_variants("_FG", {"softmax_fwd_coop": FUSED_GATHER}, FUSED_HELPERS)
    _function_variants("_FGB", {"softmax_fwd_coop": FUSED_GATHER + FUSED_NB}, FUSED_HELPERS)
    _function_variants("_NL", {"softmax_fwd_coop": FUSED_NL})
    for dtype, cases in shapes.items():
        for M, N in cases:
            for log in (False, True):
                plan, _ = _dispatch_plan(M, N, dtype, "fwd", sms, None, log)
                if plan[0].kernel != "softmax_fwd_coop" or not plan[0].kwargs["SENT"]:
                    print(f"{dtype} {M}x{N} {'log' if log else 'sm'}: dispatch takes no SENT plan", flush=True)
                    continue
                nl = (dataclasses.replace(plan[0], kernel="softmax_fwd_coop_NL"),)
                made = {"dispatch": plan, "NT": tune.with_meta(plan, TICKET=False),
                        "FG": (dataclasses.replace(plan[0], kernel="softmax_fwd_coop_FG"),),
                        "FGB": (dataclasses.replace(plan[0], kernel="softmax_fwd_coop_FGB"),),
                        "Z": _zeroed(plan), "ZNL": _zeroed(nl), "ZNLT": _zeroed(tune.with_meta(nl, TICKET=False))}
                vs = [(name, made[name]) for name in names]
                print(_head(M, N, dtype, "fwd", log, plan, sms) + _compare(M, N, dtype, "fwd", log, vs, sms),
                      flush=True)


# --scale-1m: dispatch's forward of 1048576-value rows against a copy of the same bytes (x into a fresh
# tensor), by the same clock, as M grows: a line t = a * M + b through each gives the steady rate (a)
# and what a launch costs beside it (b: the grid's fill and drain).
SCALE_1M_M = (16, 32, 64, 96, 128, 192, 256)


def scale_1m(sms, cases=(("bfloat16", False), ("float32", True), ("bfloat16", True), ("float32", False)),
             Ms=SCALE_1M_M, N=1048576):
    """us a call of dispatch's forward and of a copy of x, by the benchmark's clock, for each M."""
    import timing
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    for dtype, log in cases:
        for M in Ms:
            x, y, dy, out, bufs, nbytes = tune.make_inputs(M, N, getattr(torch, dtype), "fwd", log)
            plan, names = _dispatch_plan(M, N, dtype, "fwd", sms, None, log)
            us = [_bench_clock(plan, bufs, names, out, nbytes, l2) for _ in range(2)]
            cp = [timing.torch_time(lambda a: torch.empty_like(a).copy_(a), (x,), nbytes, cuda=True, graphable=True,
                                    l2_bytes=l2)[0] for _ in range(2)]
            print(_head(M, N, dtype, "fwd", log, plan, sms) + "dispatch " + "/".join(f"{u:.2f}" for u in us)
                  + f" us {nbytes / min(us) / 1e3:.0f} GB/s | copy " + "/".join(f"{u:.2f}" for u in cp)
                  + f" us {nbytes / min(cp) / 1e3:.0f} GB/s | ratio {min(cp) / min(us):.3f}", flush=True)
            del x, y, dy, out, bufs
            torch.cuda.empty_cache()


# --wide-1m: dispatch's SENT forward of 1048576-value rows against the same plan in chunks `f` times as wide
# at `f` times the warps (W2: the same values a thread, so the same registers; a row of half the chunks, so
# half the programs its first chunk waits for; half the programs an SM). W2c: W2 under Triton's maxnreg at 64
# registers a thread (2 programs of 16 warps an SM).
def _widened(plan, f, M, N):
    """The one-launch SENT cooperative `plan` in chunks f times as wide at f times the warps."""
    import dataclasses
    (l,) = plan
    kw = l.kwargs
    assert kw["SENT"] and not kw["TAG"] and not kw["PEEL"], kw
    chunk = kw["CHUNK_N"] * f
    n_chunks = triton.cdiv(N, chunk)
    size = M + 1 + M * 2 * n_chunks
    outs = tuple((name, (size,), kind) if name == "count" else (name, shape, kind) for name, shape, kind in l.outputs)
    return tune.with_meta((dataclasses.replace(l, scalars=l.scalars[:-1] + (n_chunks,), outputs=outs),),
                          grid=(M * n_chunks,), CHUNK_N=chunk, BLOCK_C=triton.next_power_of_2(n_chunks),
                          num_warps=kw["num_warps"] * f)


WIDE_1M_SHAPES = {"bfloat16": [(128, 1048576), (64, 1048576)], "float32": [(64, 1048576), (32, 1048576)]}


def wide_1m(sms, shapes=WIDE_1M_SHAPES):
    """dispatch's SENT forward plans on `shapes` (softmax and log_softmax) against W2 (above), twice each, by
    the benchmark's clock, with registers and the largest error."""
    for dtype, cases in shapes.items():
        for M, N in cases:
            for log in (False, True):
                plan, _ = _dispatch_plan(M, N, dtype, "fwd", sms, None, log)
                w2 = _widened(plan, 2, M, N)
                vs = [("dispatch", plan), ("W2", w2), ("W2c", tune.with_meta(w2, maxnreg=64))]
                print(_head(M, N, dtype, "fwd", log, plan, sms) + _compare(M, N, dtype, "fwd", log, vs, sms),
                      flush=True)


# --stagger: the first wave of dispatch's SENT forward (the programs the GPU holds at once, FIRST, 4 an SM
# here) starts together, loads together, waits together and stores together, and leaves the memory idle
# between; the waves after it inherit that. S<us>: the program of item t < FIRST first waits t / FIRST of
# <us> microseconds (SM clock cycles at 1.8 GHz), so that the first wave starts as a ramp: the kernel's
# STAGGER and FIRST (probe_stagger*.log ran a scratch copy with the same code, before the kernel had it).
STAGGER_SHAPES = {"bfloat16": [(128, 1048576), (64, 1048576)], "float32": [(64, 1048576)]}
STAGGER_VARIANTS = [(f"S{us}", us, {}) for us in (2, 4, 8, 12)]
# --stagger2: the bf16 softmax (POLY, capped at 64 registers: it lost with S<us>) with each of those off,
# and other ramps.
STAGGER2_CASES = [("bfloat16", 128, 1048576, False), ("bfloat16", 64, 1048576, False)]
STAGGER2_VARIANTS = [("S8", 8, {}), ("P0", 0, {"POLY": False}), ("S8P0", 8, {"POLY": False}),
                     ("C0", 0, {"maxnreg": None}), ("S8C0", 8, {"maxnreg": None}),
                     ("S8P0C0", 8, {"POLY": False, "maxnreg": None})]
STAGGER3_CASES = [("float32", 64, 1048576, True), ("float32", 128, 1048576, True), ("float32", 32, 1048576, True),
                  ("bfloat16", 256, 1048576, True), ("bfloat16", 32, 1048576, True),
                  ("float32", 64, 1048576, False), ("float32", 128, 1048576, False)]
STAGGER3_VARIANTS = [(f"S{us}", us, {}) for us in (6, 8, 10)]


def _stagger_cases(shapes):
    return [(dtype, M, N, log) for dtype, cases in shapes.items() for M, N in cases for log in (False, True)]


def stagger(sms, cases=_stagger_cases(STAGGER_SHAPES), variants=STAGGER_VARIANTS):
    """dispatch's SENT forward plans on `cases` ((dtype, M, N, log)) against `variants` ((name, ramp in us,
    constexprs replaced: None drops one)), twice each, by the benchmark's clock, with registers and the
    largest error."""
    import dataclasses
    for dtype, M, N, log in cases:
        plan = tune.with_meta(_dispatch_plan(M, N, dtype, "fwd", sms, None, log)[0], STAGGER=0, FIRST=0)
        vs = [("dispatch", plan)]  # dispatch's plan at once (STAGGER off; POLY as dispatch has it now)
        for name, us, meta in variants:
            (p,) = tune.with_meta(plan, **({"STAGGER": int(us * 1800), "FIRST": 4 * sms} if us else {}), **meta)
            kw = {k: v for k, v in p.kwargs.items() if v is not None}
            vs.append((name, (dataclasses.replace(p, meta=tuple(kw.items())),)))
        print(_head(M, N, dtype, "fwd", log, plan, sms) + _compare(M, N, dtype, "fwd", log, vs, sms), flush=True)


# --stagger-rule: the kernels' STAGGER (committed after --stagger's scratch copies) on dispatch's forward
# plans, cooperative on counters (SENT or fenced) and with TAG: S<us> ramps the first wave (FIRST: the
# programs the GPU holds at once at 64 registers a thread: 4 of 8 warps, 8 of 4 an SM) over <us>
# microseconds at 1.8 GHz; P0: POLY off (the cap kept), S8P0 both.
STAGGER_RULE_CASES = [
    *[("bfloat16", M, 1048576, False) for M in (128, 64, 32, 24, 18, 16, 12, 8)], ("float16", 128, 1048576, False),
    *[("bfloat16", M, 1048576, True) for M in (128, 64, 32, 16, 12, 8)],
    *[("float32", M, 1048576, log) for M in (128, 64, 32, 16, 12, 8) for log in (False, True)],
    *[("bfloat16", M, N, log) for M, N in ((256, 524288), (447, 300000), (2048, 65536), (1024, 128256),
                                           (256, 256000), (4096, 50257), (64, 256000)) for log in (False, True)],
    *[("float32", M, N, log) for M, N in ((128, 524288), (1024, 65536), (512, 131072), (1335, 50257), (64, 256000))
      for log in (False, True)]]


def stagger_rule(sms, cases=STAGGER_RULE_CASES, ramps_us=(4, 8)):
    """dispatch's cooperative forward plans on `cases` ((dtype, M, N, log)) against S<us> and, where POLY
    is on, P0 and S8P0 (above), twice each, by the benchmark's clock, with registers and the largest error."""
    for dtype, M, N, log in cases:
        plan, _ = _dispatch_plan(M, N, dtype, "fwd", sms, None, log)
        kw = plan[0].kwargs
        if plan[0].kernel != "softmax_fwd_coop" or not kw["TICKET"]:
            print(f"{dtype} {M}x{N} {'log' if log else 'sm'}: {plan[0].kernel}, no ticket", flush=True)
            continue
        first = 2048 // (32 * kw["num_warps"]) // 2 * sms
        ramp = {f"S{us}": dict(STAGGER=int(us * 1800), FIRST=first) for us in ramps_us}
        if kw["POLY"]:
            ramp.update(P0=dict(POLY=False), S8P0=dict(STAGGER=8 * 1800, FIRST=first, POLY=False))
        vs = [("dispatch", plan)] + [(name, tune.with_meta(plan, **meta)) for name, meta in ramp.items()]
        print(_head(M, N, dtype, "fwd", log, plan, sms) + f"tag={kw['TAG']:d},sent={kw['SENT']:d},first={first} | "
              + _compare(M, N, dtype, "fwd", log, vs, sms), flush=True)


# --stagger-edge: dispatch's forward plans (STAGGER where the grid is more than the first wave, since
# COOP_STAGGER_CYCLES) against the same plans at once (S0), on grids of 1 to 2 first waves, which
# --stagger-rule did not reach below 1.45.
STAGGER_EDGE_CASES = [*[("bfloat16", M, 1048576, log) for M in (9, 10, 11) for log in (False, True)],
                      *[("float32", M, 1048576, log) for M in (5, 6) for log in (False, True)],
                      *[("bfloat16", M, N, log) for M, N in ((48, 128256), (24, 256000), (36, 128256))
                        for log in (False, True)],
                      *[("float32", M, N, log) for M, N in ((40, 128256), (20, 256000)) for log in (False, True)]]


def stagger_edge(sms, cases=STAGGER_EDGE_CASES):
    """dispatch's forward plans on `cases` ((dtype, M, N, log)) against them with STAGGER off, twice each,
    by the benchmark's clock, with registers and the largest error."""
    for dtype, M, N, log in cases:
        plan, _ = _dispatch_plan(M, N, dtype, "fwd", sms, None, log)
        kw = plan[0].kwargs
        if not kw.get("STAGGER"):
            print(f"{dtype} {M}x{N} {'log' if log else 'sm'}: {plan[0].kernel} grid {plan[0].grid[0]}, no STAGGER",
                  flush=True)
            continue
        vs = [("dispatch", plan), ("S0", tune.with_meta(plan, STAGGER=0, FIRST=0))]
        print(_head(M, N, dtype, "fwd", log, plan, sms) + f"tag={kw['TAG']:d},sent={kw['SENT']:d},"
              f"waves={plan[0].grid[0] / kw['FIRST']:.2f} | " + _compare(M, N, dtype, "fwd", log, vs, sms), flush=True)


# --stagger-bwd: the kernels' STAGGER tried on the cooperative backward (softmax_bwd_coop: a scratch copy
# taking STAGGER and FIRST, the forward's `_stagger` after its item) on dispatch's backward plans that take
# that kernel, against them at once: S8 (FIRST at 64 registers a thread, as the forward's rule).
STAGGER_BWD_EDITS = [("    BITS: tl.constexpr, TAG: tl.constexpr,\n):",
                      "    BITS: tl.constexpr, TAG: tl.constexpr, STAGGER: tl.constexpr = 0,\n"
                      "    FIRST: tl.constexpr = 0,\n):"),
                     ("        row, chunk = _coop_item(count_ptr, M, n_chunks, PHASE, TICKET)\n    if PACK:\n",
                      "        row, chunk = _coop_item(count_ptr, M, n_chunks, PHASE, TICKET)\n"
                      "    if PHASE == 3 and TICKET and STAGGER > 0:\n"
                      "        _stagger(row * n_chunks + chunk, STAGGER, FIRST)\n    if PACK:\n")]
STAGGER_BWD_CASES = [(dtype, M, N, log) for dtype, M, N in (("bfloat16", 2048, 65536), ("bfloat16", 1024, 128256),
                                                           ("bfloat16", 256, 256000), ("float32", 1024, 65536),
                                                           ("float32", 512, 131072), ("bfloat16", 64, 256000),
                                                           ("bfloat16", 512, 151936), ("bfloat16", 4096, 50257))
                     for log in (False, True)]


def stagger_bwd(sms, cases=STAGGER_BWD_CASES):
    """dispatch's cooperative backward plans (softmax_bwd_coop) on `cases` against the same with S8 (above),
    twice each, by the benchmark's clock, with registers and the largest error."""
    import dataclasses
    _function_variants("_SB", {"softmax_bwd_coop": STAGGER_BWD_EDITS})
    for dtype, M, N, log in cases:
        plan, _ = _dispatch_plan(M, N, dtype, "bwd", sms, None, log)
        (l,) = plan
        if l.kernel != "softmax_bwd_coop" or not l.kwargs["TICKET"]:
            print(f"{dtype} {M}x{N} {'log' if log else 'sm'} bwd: {l.kernel}, not taken here", flush=True)
            continue
        first = sms * 32 // l.kwargs["num_warps"]
        sb = tune.with_meta((dataclasses.replace(l, kernel="softmax_bwd_coop_SB"),), STAGGER=14400, FIRST=first)
        print(_head(M, N, dtype, "bwd", log, plan, sms) + f"tag={l.kwargs['TAG']:d},first={first},"
              f"waves={l.grid[0] / first:.2f} | " + _compare(M, N, dtype, "bwd", log, [("dispatch", plan), ("S8", sb)],
                                                               sms), flush=True)


def main():
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    print(f"{torch.cuda.get_device_name()}  copy {tune.copy_bandwidth():.0f} GB/s  SMs {sms}", flush=True)
    modes = {"--wide": wide, "--pack": pack, "--late": late, "--even-m": even_m, "--pack-few": pack_few,
             "--pack-fwd": pack_fwd, "--defer-y": defer_y, "--few-chunks": few_chunks, "--wide-few": wide_few,
             "--bits": bits, "--tag": tag, "--tag32": tag32, "--rows-coop": rows_coop, "--fwd16": fwd16,
             "--rows-coop-few": lambda sms: rows_coop(sms, ROWS_COOP_FEW_SHAPES, ("bfloat16", "float32", "float16")),
             "--rows16": rows16, "--maxnreg": maxnreg, "--fwd16-4w": fwd16_4w, "--few16-4w": few16_4w,
             "--long-1m": long_1m, "--cap-fwd": cap_fwd, "--few-tag16": few_tag16, "--tag-loads": tag_loads, "--tag-1m-cap": tag_1m_cap, "--rows-few": lambda sms: (rows_few(sms), rows_few(sms, [("bfloat16", 1024), ("float16", 1024)], ("fwd",))),
             "--rows-few2": lambda sms: (rows_few(sms, ROWS_FEW2_FWD, ("fwd",)), rows_few(sms, ROWS_FEW2_BWD, ("bwd",))),
             "--maxnreg16": lambda sms: maxnreg(sms, dtypes=("bfloat16", "float16")),
             "--maxnreg32": lambda sms: maxnreg(sms, dtypes=("float32",)),
             "--rows-odd": lambda sms: rows16(sms, ROWS_ODD_N, ("bfloat16", "float32"), ("fwd", "bwd"), True),
             "--rows781": lambda sms: rows16(sms, (781,), ("bfloat16", "float16"), ("fwd", "bwd")),
             "--rows-odd16": lambda sms: rows16(sms, ROWS_ODD16_N, ("bfloat16", "float16"), ("bwd",), True),
             "--split-few": split_few, "--sentinel": sentinel, "--sent-more": sent_more, "--sent-wide": sent_wide,
             "--sent-wide-gap": lambda sms: sent_wide(sms, [(18, 1048576), (21, 1048576)], ("bfloat16",)),
             "--sent-wide-llm": lambda sms: sent_wide(sms, [(64, 256000), (64, 128256), (32, 256000)], logs=(False,)),
             "--sent-more-few": lambda sms: sent_more(sms, SENT_MORE_FEW, ()), "--split-tiny": split_tiny,
             "--jax-fresh": jax_fresh, "--jax-lone": jax_lone,
             "--jax-lone-tag32": lambda sms: jax_lone(sms, JAX_TAG32_SHAPES, ("float32",), ("fwd",)),
             "--few-tp": few_tp,
             "--few-t4": lambda sms: few_tp(sms, FEW_T4_SHAPES, ("bfloat16", "float16"), ("dispatch", "T4")), "--narrow-llm": narrow_llm, "--reload-x": reload_x,
             "--poly": poly, "--poly-mix": poly_mix, "--pack-x2": pack_x2, "--pack-x2-fwd": pack_x2_fwd, "--cvt-x2": cvt_x2, "--cvt-x2-bits": lambda sms: cvt_x2(sms, time=False),
             "--cvt-x2-log": lambda sms: cvt_x2(sms, CVT_X2_LOG_SHAPES, log=True), "--tag-wide": tag_wide, "--capped": capped, "--pack-mid": pack_mid, "--pack-mid2": lambda sms: pack_mid(sms, PACK_MID2_SHAPES), "--tag-poly": tag_poly, "--cap-bwd": cap_bwd, "--cap-log32": cap_log32, "--cap-fwd16": cap_fwd16, "--evict": evict, "--exact": exact, "--bwd16-4w": bwd16_4w, "--reload-dy": reload_dy, "--pipe": pipe, "--pipe2": lambda sms: pipe(sms, PIPE2_SHAPES, (False,), PIPE2_VARIANTS),
             "--pipe3": lambda sms: pipe(sms, PIPE3_SHAPES, (False, True), PIPE3_VARIANTS),
             "--pipe-rule": lambda sms: pipe(sms, PIPE_RULE_SHAPES, (False, True), PIPE_RULE_VARIANTS),
             "--pipe-fwd": pipe_fwd,
             "--pipe-dispatch": lambda sms: pipe_dispatch(sms, {
                 d: PIPE_RULE_SHAPES[d] + [s for s in PIPE3_SHAPES.get(d, []) if s not in PIPE_RULE_SHAPES[d]]
                 for d in PIPE_RULE_SHAPES}),
             "--cap-log32b": lambda sms: cap_log32(sms, [], CAP_LOG32_MORE), "--scan": scan, "--mid16": mid16,
             "--mid16b": lambda sms: mid16(sms, [(341, 393216), (256, 524288), (170, 786432)], names=("dispatch", "P4", "T4")),
             "--mid16c": lambda sms: (
                 mid16(sms, [(128, 524288), (66, 524288), (128, 393216), (200, 393216), (128, 655360)],
                       names=("dispatch", "P4")),
                 mid16(sms, [(256, 524288), (447, 300000)], ("float16",), names=("dispatch", "P4")),
                 mid16(sms, [(341, 393216), (256, 524288), (128, 524288)], names=("dispatch", "P4"), log=True)),
             "--mid16d": lambda sms: [mid16(sms, [(100, 262144), (150, 196608), (40, 524288), (36, 393216), (60, 300000)],
                                            names=("dispatch", "P4"), log=log) for log in (False, True)],
             "--mid16e": lambda sms: [mid16(sms, [(36, 393216), (60, 300000), (40, 524288), (24, 524288), (16, 524288),
                                                  (8, 524288), (12, 393216)], names=("dispatch", "P4"), log=log)
                                      for log in (True, False)],
             "--mid16f": lambda sms: [mid16(sms, [(8, 1048576), (12, 1048576), (16, 1048576), (24, 1048576),
                                                  (32, 1048576), (16, 786432)], ("bfloat16", "float16"),
                                            names=("dispatch", "P4"), log=log) for log in (True, False)],
             "--poly-deg": lambda sms: [poly(sms, POLY_DEG_SHAPES, variants={k: POLY_VARIANTS[k] for k in ("A3", "A4")})
                                        for _ in range(2)],
             "--poly-few": lambda sms: poly(sms, POLY_FEW_SHAPES, variants={k: POLY_VARIANTS[k] for k in ("Q3", "Q4")}),
             "--poly-wide": lambda sms: poly(sms, POLY_WIDE_SHAPES, variants={
                 k: POLY_VARIANTS[k] for k in ("A3", "A4", "Q4")}),
             "--rows-short": lambda sms: rows16(sms, ROWS_SHORT_N, ("float32", "bfloat16", "float16"), ("fwd", "bwd")),
             "--rows-hints": rows_hints, "--rows-occ": rows_occupancy, "--rows-fill": rows_fill,
             "--rows-fill-part": lambda sms: rows_fill(sms, ROWS_FILL_PART_N, ("float32", "bfloat16", "float16")),
             "--rows-fill-edge": lambda sms: rows_fill(sms, ROWS_FILL_EDGE_N, ("float32",)),
             "--rows-1k16": lambda sms: rows_tilings(sms, ROWS_1K16, "fwd"),
             "--rows-bwd32": lambda sms: rows_tilings(sms, ROWS_BWD32, "bwd"),
             "--rows-bwd32-more": lambda sms: rows_tilings(sms, ROWS_BWD32_MORE, "bwd"),
             "--rows-small32": lambda sms: [rows_tilings(sms, ROWS_SMALL32, d) for d in ("fwd", "bwd")],
             "--rows-small32-rule": lambda sms: [rows_tilings(sms, c, d) for d, c in ROWS_SMALL32_RULE.items()],
             "--rows-bwd32-one": lambda sms: rows_tilings(sms, ROWS_BWD32_ONE, "bwd"),
             "--rows-bwd32-one-edge": lambda sms: rows_tilings(sms, ROWS_BWD32_ONE_EDGE, "bwd"),
             "--rows-bwd32-one-1k": lambda sms: rows_tilings(sms, ROWS_BWD32_ONE_1K, "bwd"),
             "--rows-bwd16-one": lambda sms: rows_tilings(sms, ROWS_BWD16_ONE, "bwd"),
             "--rows-bwd16-one-m": lambda sms: rows_tilings(sms, ROWS_BWD16_ONE_M, "bwd"),
             "--rows-bwd16-2k": lambda sms: rows_tilings(sms, ROWS_BWD16_2K, "bwd"), "--few-pack16": few_pack16,
             "--rows-code": rows_code, "--inductor-code": inductor_code,
             "--rows-code-more": lambda sms: rows_code(sms, ROWS_CODE_MORE),
             "--rows-offs32": rows_offs32, "--rows-offs32-more": lambda sms: rows_offs32(sms, ROWS_OFFS32_MORE, both=True), "--rows-segments": rows_segments,
             "--rows-offs32-m": lambda sms: rows_offs32(sms, ROWS_OFFS32_M, both=True),
             "--rows-code-sweep": lambda sms: rows_code(sms, ROWS_CODE_SWEEP, {
                 k: ROWS_CODE_EDITS[k] for k in ("I", "F", "IF")}),
             "--few-pack16-below": lambda sms: few_pack16(sms, FEW_PACK16_BELOW_SHAPES, ("C", "P")),
             "--fused-gather": fused_gather, "--scale-1m": scale_1m, "--wide-1m": wide_1m, "--stagger": stagger,
             "--stagger-edge": stagger_edge, "--stagger-bwd": stagger_bwd,
             "--stagger-rule": lambda sms: stagger_rule(sms, STAGGER_RULE_CASES[:21]),
             "--stagger-rule2": lambda sms: stagger_rule(sms, STAGGER_RULE_CASES[21:]),
             "--stagger2": lambda sms: stagger(sms, STAGGER2_CASES, STAGGER2_VARIANTS),
             "--stagger3": lambda sms: stagger(sms, STAGGER3_CASES, STAGGER3_VARIANTS),
             "--rows-occ2": lambda sms: rows_occupancy(sms, names=("pad1024", "pad4096", "pad8192", "occ14", "occ12",
                                                                   "carve100", "carve50", "cg")),
             "--rows-occ3": lambda sms: rows_occupancy(
                 sms, [("bfloat16", 2048, "fwd", True), ("float32", 2048, "bwd", True), ("float32", 256, "fwd", True)],
                 names=("carve0", "carve10", "carve25", "carve50", "carve75", "carve100", "pad10240", "pad12288")),
             "--coop-carve": lambda sms: rows_occupancy(
                 sms, [("bfloat16", 1048576, "fwd", False), ("float32", 1048576, "fwd", True),
                       ("bfloat16", 1048576, "bwd", False), ("bfloat16", 65536, "fwd", False)],
                 names=("carve100", "carve50", "pad40960"))}
    for flag, mode in modes.items():
        if flag in sys.argv[1:]:
            return mode(sms)
    for dtype, shapes in SHAPES.items():
        for M, N in shapes:
            for log in (False, True):
                if log and (M, N) not in ((2670, 50257), (2048, 65536)):
                    continue
                for direction in ("fwd", "bwd"):
                    x, y, dy, out, bufs, nbytes = tune.make_inputs(M, N, tune.DTYPES[dtype], direction, log)
                    ref = tune.reference(x, y, dy, log, direction)
                    for chunk, warps in VARIANTS:
                        try:
                            plan = tune.coop_plan(M, N, dtype, direction, sms, chunk, warps, log)
                        except ValueError:  # more chunks than SMs: dispatch refuses it
                            continue
                        for reload in ((False, True) if direction == "bwd" else (False,)):
                            p = tune.with_meta(plan, RELOAD=reload) if direction == "bwd" else plan
                            launch._COMPILED.clear()
                            got = tune.run_plan(p, bufs, out)
                            err = ((got.double() - ref).abs() / ref.abs().clamp(min=1)).max().item()
                            regs = [(c[1].n_regs, c[1].n_spills) for c in launch._COMPILED.values()]
                            ms = triton.testing.do_bench(lambda: tune.run_plan(p, bufs, out), warmup=5, rep=40,
                                                         return_mode="median")
                            print(f"{dtype:8s} {M:5d}x{N:7d} {'log' if log else 'sm '} {direction} chunk={chunk:5d} "
                                  f"warps={warps:2d} RELOAD={reload:d} {nbytes / ms / 1e6:6.0f} GB/s "
                                  f"regs,spills={regs} err={err:.1e}", flush=True)
                    del x, y, dy, ref
                    out = bufs = None  # not del: a closure above names them
                    torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
