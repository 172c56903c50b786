"""dispatch.GPU_CONSTANTS["H200"]'s ROWS_PEEL16 and ROWS16_FWD_FTZ_WARPS_MIN_PER_SM against the measurements they were
read from (no GPU): bench/results/h200/probe_rows_peel16.log, _scan.log, _scan2.log and _small.log ("dispatch": the
plan before the rule, unpeeled; "peel": dispatch's plan with force_peel=True; "peel_mBwW": that re-tiled), the check
after it (probe_rows_peel16_check.log, 1038c43: "dispatch" the rule's plan, "np": unpeeled, "np_mBwW": unpeeled at B
rows and W warps, "p": force_peel=True), and probe_rows_ftz_warps_small*.log (bf16 5200 and 7000 values on 64-4224
rows: "dispatch" then at 4 warps, "w16" the rules' 16). Those logs' tests plan with ROWS_PEEL16 as they ran it
(forced_plans.PEEL16_AT_3EC4EB8); the 1-warp tilings, the small grids and the rows with a tail
(ROWS_PEEL16_SMALL_LANES, ROWS_PEEL16_TAILS) are held to probe_rows_peel16_64.log ... _check2_*.log
(test_one_warp_tilings and below); the 16- and 32-lane rows (17-39 values), their small grids (ROWS_PEEL16_SMALL_M) and
the even rows with a tail run whole (ROWS_WHOLE16_TAILS) to probe_rows_peel16_32*.log, probe_rows_short_odd.log and
probe_rows_even_tails16.log (test_short_rows_scans and below, with the plans of 02f1616:
forced_plans.WHOLE16_AT_02F1616); the odd rows whole since (ROWS_WHOLE16_TAILS' odd entries, ROWS_PEEL16_WHOLE_FILL)
to probe_rows_odd_whole16*.log and probe_rows_odd_tails16.log (test_odd_rows_whole_scan and below); the odd backward of
5-15 values (ROWS_ODD16_TILINGS) to probe_rows_short16_*.log and probe_rows_odd16_bwd_*.log (test_odd_short_rows_scan
and below); the peeled forwards' OFFS32 and SAME_STRIDES (ROWS_FWD16_SAME_LANES) to probe_rows_h200_same16_check.log
(test_same_strides_check)."""

import math

import pytest

import rows_logs
from forced_plans import (ODD16_AT_CFC29FF, PEEL16_AT_244C6D0, PEEL16_AT_3EC4EB8, WHOLE16_AT_02F1616,
                          gpu_values_within)
from multisoftmax import dispatch
import triton  # noqa: E402  (after multisoftmax, which sets TRITON_INTERPRET where asked)

BEFORE = ("probe_rows_peel16.log", "probe_rows_peel16_scan.log", "probe_rows_peel16_scan2.log",
          "probe_rows_peel16_small.log")


def _plan(dtype, M, N, op, direction, force_peel=None, at=None):
    """The H200's one launch for a case of the logs (with dispatch's force_peel; with `at`, a forced_plans dict, as
    the earlier tree it names planned it)."""
    if at:
        with gpu_values_within(dispatch, "H200", at):
            return _plan(dtype, M, N, op, direction, force_peel)
    log, make = op == "log_softmax", (dispatch.plan_forward if direction == "fwd" else dispatch.plan_backward)
    args = (M, N, N, N, dtype, log, 132) if direction == "fwd" else (M, N, N, N, N, dtype, log, 132)
    (one,) = make(*args, force_peel=force_peel, gpu="H200")
    return one


@pytest.fixture
def at_02f1616():
    """The H200's plans as the logs from probe_rows_peel16_32.log to probe_rows_odd_whole16_grids.log ran them (odd
    rows peeled at ROWS_PEEL16's tiling, with a tail or not)."""
    with gpu_values_within(dispatch, "H200", WHOLE16_AT_02F1616):
        yield


@pytest.fixture
def at_3ec4eb8():
    """The H200's plans as the logs before probe_rows_peel16_64.log ran them."""
    with gpu_values_within(dispatch, "H200", PEEL16_AT_3EC4EB8):
        yield


def _lanes(N: int) -> int:
    """The lanes of a peeled 16-bit row's aligned body, as dispatch._peel16 counts them."""
    return triton.next_power_of_2(N // 8 * 8)


def _tiled(plan, prefix: str = "p") -> str:
    """The probe's label of a peeled plan's tiling (p_mBwW; the first logs' peel_mBwW)."""
    return f"{prefix}_m{plan.kwargs['BLOCK_M']}w{plan.kwargs['num_warps']}"


def _one_warp(plan) -> bool:
    """Whether `plan` is ROWS_PEEL16's odd forward one row a program at 1 warp (1024 and 2048 lanes), which the logs
    before probe_rows_1024_odd_fwd16.log did not run (test_one_warp_forwards)."""
    kw = plan.kwargs
    return plan.kernel == "softmax_fwd_rows" and kw["PEEL"] and (kw["BLOCK_M"], kw["num_warps"]) == (1, 1)


@pytest.mark.usefixtures("at_3ec4eb8")
def test_peeled_where_it_ran_ahead():
    """Every case of the four logs that the H200 now peels ran ahead of the plan before it at the tiling it now
    takes (74 cases, 1.002-1.71x: the odd rows but the forwards at 1 warp, test_one_warp_forwards); the cases it
    leaves unpeeled are the odd backwards of fewer than 768 values in 1024 lanes (641, 701: 0.96-1.07x), the even rows'
    backwards and their forwards past 256 lanes (300-1996; in 512 lanes ROWS_TILINGS' 4 rows at 2 warps,
    test_512_lanes_at_two_warps) and the small grids (264, 1056 rows)."""
    gains, kept = [], []
    for name in BEFORE:
        for (dtype, M, N, op, direction), gbps in rows_logs.gbps(name).items():
            now = _plan(dtype, M, N, op, direction)
            if _one_warp(now):
                continue  # not run at this tiling there: test_one_warp_forwards
            if now.kwargs["PEEL"]:
                label = "peel" if now == _plan(dtype, M, N, op, direction, True) else _tiled(now, "peel")
                assert gbps[label] > gbps["dispatch"], (name, dtype, M, N, op, direction)
                gains.append(gbps[label] / gbps["dispatch"])
            else:
                best = max(v for k, v in gbps.items() if k.startswith("peel"))
                kept.append((M, N, direction, best / gbps["dispatch"]))
    assert len(gains) == 74 and 1.1 < math.exp(sum(map(math.log, gains)) / len(gains)) < 1.2 and max(gains) < 1.72
    for M, N, direction, best in kept:
        lanes = _lanes(N)
        if M < 4224:
            continue  # small grids: 0.81-1.18x
        if N % 2 == 0:
            assert direction == "bwd" or lanes > 256, (M, N, direction)
        else:
            assert direction == "bwd", (M, N)
            assert N in (641, 701) and best < 1.07, (M, N, direction, best)


@pytest.mark.usefixtures("at_3ec4eb8")
def test_the_check_after_the_rule():
    """probe_rows_peel16_check.log, at 1038c43 (the odd rows' rule in dispatch): every peeled case ran at or ahead of
    the same rows unpeeled (np) and of the unpeeled rows at the peeled tiling (np_m8w2 at 256 lanes, np_m4w2 at 512,
    np_m1w2 at 1024 and 2048), so the gain is the peel's, not the tiling's; the forwards of even rows in 256 and 512
    lanes (196-510, unpeeled then) ran 1.02-1.42x peeled ("p"); the H200 now peels those in 256 lanes (196, 254) and
    runs those in 512 unpeeled at 4 rows and 2 warps (test_512_lanes_at_two_warps)."""
    cases = rows_logs.gbps("probe_rows_peel16_check.log")
    assert len(cases) == 48
    for (dtype, M, N, op, direction), gbps in cases.items():
        now = _plan(dtype, M, N, op, direction)
        if _one_warp(now):
            continue  # the plan since: test_one_warp_forwards
        if N % 2:
            lanes = _lanes(N)
            if now.kwargs["PEEL"]:
                same = {256: "np_m8w2", 512: "np_m4w2", 1024: "np_m1w2", 2048: "np_m1w2"}[lanes]
                assert gbps["dispatch"] > 1.01 * max(gbps["np"], gbps[same]), (N, op, direction)
        elif direction == "fwd":
            assert now.kwargs["PEEL"] == (N < 256) and 1.02 < gbps["p"] / gbps["dispatch"] < 1.43, (N, op)
        else:
            assert not now.kwargs["PEEL"], (N, op)


@pytest.mark.usefixtures("at_3ec4eb8")
def test_ftz_warps_from_six_rows_an_sm():
    """probe_rows_ftz_warps_small*.log: on 64-528 rows (at most 4 an SM) 4 warps ran the log_softmax 0.85-0.99x of the
    rules' 16 and the softmax within 1%: the H200 keeps 16 there now; from 792 rows (6 an SM) 4 warps ran ahead of 16
    in both ops, and it keeps 4."""
    for name in ("probe_rows_ftz_warps_small.log", "probe_rows_ftz_warps_small2.log"):
        for (dtype, M, N, op, direction), gbps in rows_logs.gbps(name).items():
            now = _plan(dtype, M, N, op, direction)
            if M < 6 * 132:
                assert now.kwargs["num_warps"] == 16 and gbps["w16"] >= 0.99 * gbps["dispatch"], (M, N, op)
                assert op == "softmax" or gbps["w16"] > 1.008 * gbps["dispatch"], (M, N, op)
            else:
                assert now.kwargs["num_warps"] == 4 and gbps["dispatch"] > gbps["w16"], (M, N, op)


@pytest.mark.usefixtures("at_3ec4eb8")
def test_even_rows_peeled_in_256_lanes():
    """probe_rows_peel16_even.log (the rule then peeling even rows in 256 and 512 lanes; "np": unpeeled as before,
    "np_m4w2": unpeeled at 4 rows and 2 warps): in 256 lanes (142-250) peeled ran 1.28-1.61x of unpeeled and within
    2% of np_m4w2 or ahead, and the H200 peels them; in 512 lanes (302-506) the unpeeled 4 rows at 2 warps ran
    0.98-1.10x of peeled, and the H200 runs them so (ROWS_TILINGS)."""
    for (dtype, M, N, op, direction), gbps in rows_logs.gbps("probe_rows_peel16_even.log").items():
        now = _plan(dtype, M, N, op, direction)
        if M < 4224 * 2:
            continue  # the odd rows' check on 4224 rows of float16 (test_the_check_after_the_rule's kind)
        if N < 256:
            assert now.kwargs["PEEL"] and gbps["dispatch"] > 1.27 * gbps["np"], (dtype, N, op)
            assert gbps["dispatch"] > 0.98 * gbps["np_m4w2"], (dtype, N, op)
        else:
            assert not now.kwargs["PEEL"] and (now.kwargs["BLOCK_M"], now.kwargs["num_warps"]) == (4, 2)
            assert 0.98 < gbps["np_m4w2"] / gbps["dispatch"] < 1.11, (dtype, N, op)


@pytest.mark.usefixtures("at_3ec4eb8")
def test_512_lanes_at_two_warps():
    """probe_rows_512_fwd16.log (bf16 forwards of 257-511 values; "dispatch": the plan then, "np_mBwW": unpeeled at B
    rows and W warps, "p_m2w2": peeled at 2 rows): 4 rows at 2 warps ran the aligned rows (304-504) 1.006-1.15x of
    the rules' 4-8 rows at 4 warps and the even unaligned ones (302-506) 0.985-1.06x of peeled, the best or within 2%
    of the best tiling measured; the odd ones (385, 449) ran fastest peeled. The H200 now runs the aligned and even
    rows unpeeled at (4, 2) (ROWS_TILINGS), the odd ones peeled at (4, 2) (ROWS_PEEL16); 264 (256 + a tail of 8) and
    226, 250 (256 lanes) keep their plans."""
    cases = rows_logs.gbps("probe_rows_512_fwd16.log")
    assert len(cases) == 26
    for (dtype, M, N, op, direction), gbps in cases.items():
        now = _plan(dtype, M, N, op, direction)
        if N <= 264:
            assert now.kwargs["BLOCK_N"] == 256, N
            continue
        assert (now.kwargs["BLOCK_M"], now.kwargs["num_warps"], now.kwargs["PEEL"]) == (4, 2, N % 2 == 1), (N, op)
        measured = gbps["dispatch"] if N % 2 else gbps["np_m4w2"]
        assert measured > 0.98 * max(gbps.values()), (N, op)
        if N % 8 == 0:
            assert 1.005 < gbps["np_m4w2"] / gbps["dispatch"] < 1.16, (N, op)


@pytest.mark.usefixtures("at_3ec4eb8")
def test_one_warp_forwards():
    """probe_rows_1024_odd_fwd16.log (the plan then: odd rows of 641-1001 values unpeeled at 2 rows and 2 warps, nine
    other tilings; "p_mBwW" peeled): peeled one row a program at 1 warp ran 1.15-1.23x, the fastest of the ten; the
    check with ROWS_PEEL16's (True, 1024) in dispatch (probe_rows_1024_odd_fwd16_check.log: "np" the plan before,
    unpeeled) 1.15-1.25x over 641-1023 values in bf16 and float16 (1.35x on 4224 rows of 781), ahead of 2 rows at 1
    warp and 1 row at 2 warps, and
    at 1 warp the 2048-lane odd forwards (1201-2001, peeled at 2 warps then) ran 1.02-1.21x; on 1056 rows (under the
    grid bound) 1.23-1.25x, which the rule leaves out; the even rows (778, 1002) within 3%, left unpeeled."""
    for (dtype, M, N, op, direction), gbps in rows_logs.gbps("probe_rows_1024_odd_fwd16.log").items():
        assert _one_warp(_plan(dtype, M, N, op, direction)), N
        assert max(gbps.values()) == gbps["p_m1w1"] and 1.15 < gbps["p_m1w1"] / gbps["dispatch"] < 1.24, (N, op)
    cases = rows_logs.gbps("probe_rows_1024_odd_fwd16_check.log")
    assert len(cases) == 32
    for (dtype, M, N, op, direction), gbps in cases.items():
        now = _plan(dtype, M, N, op, direction)
        if N % 2 == 0:
            assert not now.kwargs["PEEL"] and 0.99 < gbps["p_m1w1"] / gbps["dispatch"] < 1.031, (N, op)
        elif M < 4224:
            assert not _one_warp(now) and 1.22 < gbps["p_m1w1"] / gbps["dispatch"] < 1.25, (M, N, op)
        elif N < 1024:
            assert _one_warp(now) and 1.14 < gbps["dispatch"] / gbps["np"] < (1.26 if M == 65536 else 1.36), (M, N, op)
            assert gbps["dispatch"] > max(v for k, v in gbps.items() if k in ("np", "p_m1w2", "p_m2w1")), (M, N, op)
        else:
            assert _one_warp(now) and 1.02 < gbps["p_m1w1"] / gbps["dispatch"] < 1.22, (N, op)


SCANS = ("probe_rows_peel16_64b.log", "probe_rows_peel16_128b.log", "probe_rows_peel16_w1.log",
         "probe_rows_peel16_256_even.log", "probe_rows_peel16_1024_low.log", "probe_rows_peel16_1024_bwd.log",
         "probe_rows_peel16_tails.log")


def test_one_warp_tilings():
    """The scans at 3ec4eb8 ("dispatch": the plan then; "p_mBwW": peeled at B rows a program and W warps, "np_mBwW"
    unpeeled) on 65536 rows (and 524288-1048576 of 64 and 128 lanes): every case the H200 now plans otherwise ran at
    least 0.99x of the plan then at the tiling it now takes (124 cases, 0.998-3.07x, geomean 1.39; under 1.0 the 193
    and 511 softmax backwards, 0.998x); the even rows of 60 and 100 values (ALIGN 4) stay unpeeled (peeled at best
    1.14x at one op, behind at others), and so do the backwards of even rows with a tail (258, 260: the rules'
    peeled tiling)."""
    gains = []
    for name in SCANS:
        for (dtype, M, N, op, direction), gbps in rows_logs.gbps(name).items():
            now = _plan(dtype, M, N, op, direction)
            with gpu_values_within(dispatch, "H200", PEEL16_AT_3EC4EB8):
                then = _plan(dtype, M, N, op, direction)
            if now == then:
                assert not now.kwargs["PEEL"] or N in (258, 260) and direction == "bwd", (name, M, N, op, direction)
                continue
            assert now.kwargs["PEEL"] and now.kwargs["num_warps"] == 1, (name, M, N, op, direction)
            gains.append(gbps[_tiled(now)] / gbps["dispatch"])
            assert gains[-1] > 0.99, (name, M, N, op, direction)
    assert len(gains) == 124 and 1.35 < math.exp(sum(map(math.log, gains)) / len(gains)) < 1.43 and max(gains) < 3.07
    for name in SCANS[:2]:
        for (dtype, M, N, op, direction), gbps in rows_logs.gbps(name).items():
            if N % 2 == 0:
                assert not _plan(dtype, M, N, op, direction).kwargs["PEEL"], (M, N)
                assert max(v for k, v in gbps.items() if k.startswith("p_")) < 1.15 * gbps["dispatch"], (M, N)


def test_small_grids():
    """probe_rows_peel16_grids*.log (264-2112 rows of 41-1201 values, under ROWS_PEEL16_MIN_PER_SM's 32 an SM; the plan
    then unpeeled): the odd rows one a program at 1 warp (p_m1w1) ran 1.09-2.54x of it (106 cases), the forward in
    every lane count measured (64-2048), the backward in 64-512 lanes, and the H200 now plans them so; the backward of
    577-1201 values ran 0.71-1.12x so (26 cases; the log_softmax's best at 2 warps): those keep the plan
    (ROWS_PEEL16_SMALL_LANES)."""
    gains, kept = [], []
    for name in ("probe_rows_peel16_grids.log", "probe_rows_peel16_grids2.log", "probe_rows_peel16_grids3.log"):
        for (dtype, M, N, op, direction), gbps in rows_logs.gbps(name).items():
            if M >= 32 * 132:
                continue
            now = _plan(dtype, M, N, op, direction)
            if now.kwargs["PEEL"]:
                assert (now.kwargs["BLOCK_M"], now.kwargs["num_warps"]) == (1, 1), (M, N, op, direction)
                gains.append(gbps["p_m1w1"] / gbps["dispatch"])
            else:
                assert direction == "bwd" and _lanes(N) > 512, (M, N, op)
                kept.append(gbps["p_m1w1"] / gbps["dispatch"])
    assert len(gains) == 106 and min(gains) > 1.09 and max(gains) < 2.54
    assert len(kept) == 26 and min(kept) < 0.72 and max(kept) < 1.12


def test_the_check_after_the_one_warp_rule():
    """probe_rows_peel16_check2_*.log, with the rule in dispatch ("dispatch"; "np": unpeeled, "p": peeled at the
    rules' tiling, "p_mBwW" re-tiled): every case against the plan at 3ec4eb8, as the label that ran it: the 163 plans
    changed since ran 1.0005-3.07x of it, geomean 1.42 (bf16 65536 x 77 softmax forward 969 -> 2,231 GB/s, 577
    backward 3,484 -> 4,216, 521 log_softmax forward 2,031 -> 2,961, 264 x 41 forward 2.5x) but one within the rounds'
    spread (511 softmax backward, 0.996x); the 11 others ran at 0.987-1.002x of themselves."""
    gains, same = [], []
    for part in ("short", "mid", "1024", "grids", "f16"):
        for (dtype, M, N, op, direction), gbps in rows_logs.gbps(f"probe_rows_peel16_check2_{part}.log").items():
            now = _plan(dtype, M, N, op, direction)
            with gpu_values_within(dispatch, "H200", PEEL16_AT_3EC4EB8):
                then = _plan(dtype, M, N, op, direction)
                forced = _plan(dtype, M, N, op, direction, True)
            label = "np" if not then.kwargs["PEEL"] else "p" if then == forced else _tiled(then)
            if now == then:
                same.append(gbps["dispatch"] / gbps.get(label, gbps["dispatch"]))
                continue
            gains.append(gbps["dispatch"] / gbps[label])
    assert len(gains) == 163 and len(same) == 11
    assert sorted(gains)[1] > 1.0005 and min(gains) > 0.996 and max(gains) < 3.08
    assert 1.4 < math.exp(sum(map(math.log, gains)) / len(gains)) < 1.44
    assert min(same) > 0.987 and max(same) < 1.002


def _label(plan) -> str:
    """The probe's label of a plan re-tiled, peeled (p_mBwW) or whole (np_mBwW)."""
    return _tiled(plan, "p" if plan.kwargs["PEEL"] else "np")


@pytest.mark.usefixtures("at_02f1616")
def test_short_rows_scans():
    """probe_rows_peel16_32.log and probe_rows_short_odd.log (bf16 17-39 values on 65536 and 1048576 rows, at
    244c6d0: "dispatch" the plan then, "p_mBwW" peeled at B rows and W warps, "np_mBwW" whole): the odd rows now peel
    at 16 rows a program and 1 warp both ways (ROWS_PEEL16's 16- and 32-lane entries), and 34 values (32 + a tail of
    2) run whole so (ROWS_WHOLE16_TAILS): at that tiling they ran 0.99-3.08x of the plan then (104 cases, geomean
    1.52; under 1.0 the 23-value log_softmax and 31-value softmax backwards on 65536 rows, 0.990 and 0.996x); 16 rows
    was the best of 4-32 at 1 warp in most forwards, while the odd backwards of 19-31 values ran up to 1.26x faster
    whole (np_m16w1; not taken: one entry serves 25-39 values). The even rows without a tail (18-30, 38; 40 cases)
    keep their plans: peeled, 38's log_softmax forward ran 1.61x, but the even rows' other cases 0.73-1.26x."""
    gains, kept = [], []
    for name in ("probe_rows_peel16_32.log", "probe_rows_short_odd.log"):
        for (dtype, M, N, op, direction), gbps in rows_logs.gbps(name).items():
            now, then = _plan(dtype, M, N, op, direction), _plan(dtype, M, N, op, direction, at=PEEL16_AT_244C6D0)
            if now == then:
                assert N % 2 == 0 and not now.kwargs["PEEL"] and N != 34, (name, M, N, op, direction)
                kept.append(max(gbps.values()) / gbps["dispatch"])
                continue
            assert (now.kwargs["BLOCK_M"], now.kwargs["num_warps"]) == (16, 1), (M, N, op, direction)
            assert now.kwargs["PEEL"] == (N % 2 == 1), (M, N, op, direction)
            gains.append(gbps[_label(now)] / gbps["dispatch"])
    assert len(gains) == 104 and min(gains) > 0.989 and sorted(gains)[2] > 1.0 and max(gains) < 3.08
    assert 1.5 < math.exp(sum(map(math.log, gains)) / len(gains)) < 1.55
    assert len(kept) == 40 and max(kept) < 1.62


@pytest.mark.usefixtures("at_02f1616")
def test_short_rows_check():
    """probe_rows_peel16_32_check.log, with the 16- and 32-lane entries in dispatch ("dispatch"; "np": the rows whole
    at the rules' tiling, the plan before for 19-31 and 35-39; "p": peeled at the rules' tiling, the plan before for 17
    and 33, which peel for a tail), bf16 and float16 on 65536 and 1048576 rows: the 192 cases ran 0.986-3.07x of the
    plan before, geomean 1.49 (bf16 1048576 x 35 log_softmax forward 739 -> 2,269 GB/s); under 1.0 only the 23-value
    log_softmax backward at 65536 rows (0.986-0.992x)."""
    gains = []
    for (dtype, M, N, op, direction), gbps in rows_logs.gbps("probe_rows_peel16_32_check.log").items():
        now, then = _plan(dtype, M, N, op, direction), _plan(dtype, M, N, op, direction, at=PEEL16_AT_244C6D0)
        assert now != then and now.kwargs["PEEL"] and (now.kwargs["BLOCK_M"], now.kwargs["num_warps"]) == (16, 1)
        label = "p" if then == _plan(dtype, M, N, op, direction, True, at=PEEL16_AT_244C6D0) else "np"
        assert (label == "p") == (N in (17, 33)) and (label == "np") == (not then.kwargs["PEEL"]), (M, N)
        gains.append(gbps["dispatch"] / gbps[label])
        assert gains[-1] > 0.985 and (gains[-1] > 1.0 or (N, M, op, direction) == (23, 65536, "log_softmax", "bwd"))
    assert len(gains) == 192 and max(gains) < 3.08
    assert 1.45 < math.exp(sum(map(math.log, gains)) / len(gains)) < 1.52


@pytest.mark.usefixtures("at_02f1616")
def test_short_rows_small_grids():
    """probe_rows_peel16_32_grids.log (bf16 17-39 odd values on 264-4223 rows, under ROWS_PEEL16_MIN_PER_SM's 32 an SM;
    "dispatch" then one row a program at 1 warp): 4 rows a program at 1 warp (p_m4w1; ROWS_PEEL16_SMALL_M) ran 1.09-4.0x
    of the plan before these entries (np, or p for 17 and 33; geomean 1.92, 128 cases) and 0.82-1.98x of one row a
    program: ahead from 2112 rows (1.01-1.98x), 0.82-1.28x on 264 and 1056."""
    gains, of_one = [], []
    for (dtype, M, N, op, direction), gbps in rows_logs.gbps("probe_rows_peel16_32_grids.log").items():
        now, then = _plan(dtype, M, N, op, direction), _plan(dtype, M, N, op, direction, at=PEEL16_AT_244C6D0)
        assert now.kwargs["PEEL"] and (now.kwargs["BLOCK_M"], now.kwargs["num_warps"]) == (4, 1), (M, N)
        # the np or p label's plan
        assert then == _plan(dtype, M, N, op, direction, N in (17, 33), at=PEEL16_AT_244C6D0), (M, N)
        gains.append(gbps["p_m4w1"] / gbps["p" if then.kwargs["PEEL"] else "np"])
        of_one.append(gbps["p_m4w1"] / gbps["dispatch"])
        assert of_one[-1] > (1.0 if M >= 2112 else 0.8), (M, N, op, direction)
    assert len(gains) == 128 and min(gains) > 1.08 and max(gains) < 4.01
    assert 1.9 < math.exp(sum(map(math.log, gains)) / len(gains)) < 1.95
    assert min(of_one) > 0.8 and max(of_one) < 2.0


@pytest.mark.usefixtures("at_02f1616")
def test_even_rows_with_a_tail_whole():
    """probe_rows_even_tails16.log (bf16 even rows that `peel` peels for a tail alone, 65536 and 1048576 rows;
    "dispatch" the rules' peeled tiling, "np_mBwW" whole at B rows and W warps): 34, 66 and 68 values now run whole at
    16 rows and 1 warp (ROWS_WHOLE16_TAILS), which ran 1.19-2.49x of the peeled plan (24 cases); 130, 132 and 260 keep
    it (whole at 16 rows 0.81-1.16x)."""
    gains, kept = [], []
    for (dtype, M, N, op, direction), gbps in rows_logs.gbps("probe_rows_even_tails16.log").items():
        now = _plan(dtype, M, N, op, direction)
        if N in (34, 66, 68):
            assert not now.kwargs["PEEL"] and (now.kwargs["BLOCK_M"], now.kwargs["num_warps"]) == (16, 1), (M, N)
            assert now.kwargs["TAIL_N"] == N - now.kwargs["BLOCK_N"] > 0, (M, N)
            gains.append(gbps["np_m16w1"] / gbps["dispatch"])
        else:
            assert now == _plan(dtype, M, N, op, direction, at=PEEL16_AT_244C6D0) and now.kwargs["PEEL"], (M, N)
            kept.append(gbps["np_m16w1"] / gbps["dispatch"])
    assert len(gains) == 24 and min(gains) > 1.19 and max(gains) < 2.5
    assert len(kept) == 24 and min(kept) > 0.8 and max(kept) < 1.17


@pytest.mark.usefixtures("at_02f1616")
def test_short_rows_check_with_the_rules():
    """probe_rows_peel16_32_check2.log, with ROWS_PEEL16_SMALL_M and ROWS_WHOLE16_TAILS in dispatch ("dispatch"; "np"
    and "p": the rules' plan whole and peeled, the plan before): bf16 19, 33 and 37 odd values on 1056-4223 rows, 4
    rows a program, ran 1.12-3.37x of the plan before (36 cases; one row a program 0.51-1.22x of it); bf16 and float16
    34, 66 and 68 values whole at 16 rows ran 1.19-2.50x of the rules' peeled plan (48 cases)."""
    grids, whole = [], []
    for (dtype, M, N, op, direction), gbps in rows_logs.gbps("probe_rows_peel16_32_check2.log").items():
        now, then = _plan(dtype, M, N, op, direction), _plan(dtype, M, N, op, direction, at=PEEL16_AT_244C6D0)
        tiling = (now.kwargs["BLOCK_M"], now.kwargs["num_warps"])
        label = "p" if then.kwargs["PEEL"] else "np"
        if N % 2:
            assert M < 4224 and now.kwargs["PEEL"] and tiling == (4, 1), (M, N)
            grids.append(gbps["dispatch"] / gbps[label])
        else:
            assert M >= 4224 and not now.kwargs["PEEL"] and tiling == (16, 1) and label == "p", (M, N)
            whole.append(gbps["dispatch"] / gbps[label])
    assert len(grids) == 36 and min(grids) > 1.11 and max(grids) < 3.38
    assert len(whole) == 48 and min(whole) > 1.19 and max(whole) < 2.51


def _whole_now(plan, N, direction) -> bool:
    """Whether `plan` runs odd rows whole that 02f1616 peeled: 17 both ways and 33 forward at 32 rows and 1 warp
    (ROWS_WHOLE16_TAILS), the backward of 25-31 at ROWS_PEEL16's tiling (ROWS_PEEL16_WHOLE_FILL)."""
    tiling = (plan.kwargs["BLOCK_M"], plan.kwargs["num_warps"])
    if N == 17 or (N, direction) == (33, "fwd"):
        return not plan.kwargs["PEEL"] and tiling == (32, 1) and plan.kwargs["TAIL_N"] == N - plan.kwargs["BLOCK_N"]
    return 25 <= N <= 31 and direction == "bwd" and not plan.kwargs["PEEL"] and plan.kwargs["TAIL_N"] == 0


def test_odd_rows_whole_scan():
    """probe_rows_odd_whole16.log (bf16 odd 17-33 values on 65536 and 1048576 rows at 02f1616: "dispatch" peeled at 16
    rows and 1 warp, "np_mBwW" whole): the rows that now run whole (17 both ways and 33 forward at 32 rows and 1 warp,
    the backward of 25-31 at 16 rows) ran 1.07-1.47x of the plan then there (28 cases, geomean 1.23); the rest keep
    their plans (33's backward among them: whole at 32 rows 0.96-1.14x), whose best whole tiling ran up to 1.26x of them
    (the 19-23 log_softmax backwards, not taken: their softmax backward 0.89-0.97x)."""
    gains, kept = [], []
    for (dtype, M, N, op, direction), gbps in rows_logs.gbps("probe_rows_odd_whole16.log").items():
        now, then = _plan(dtype, M, N, op, direction), _plan(dtype, M, N, op, direction, at=WHOLE16_AT_02F1616)
        assert then.kwargs["PEEL"] and (then.kwargs["BLOCK_M"], then.kwargs["num_warps"]) == (16, 1), (M, N)
        if now == then:
            assert not _whole_now(now, N, direction) and (N not in (17, 33) or direction == "bwd"), (M, N, direction)
            kept.append(max(gbps.values()) / gbps["dispatch"])
            continue
        assert _whole_now(now, N, direction), (M, N, op, direction)
        gains.append(gbps[_label(now)] / gbps["dispatch"])
        assert gains[-1] > 1.07, (M, N, op, direction)
    assert len(gains) == 28 and max(gains) < 1.47
    assert 1.2 < math.exp(sum(map(math.log, gains)) / len(gains)) < 1.25
    assert len(kept) == 44 and max(kept) < 1.27


def test_odd_rows_whole_check():
    """probe_rows_odd_whole16_check.log, with the odd rows' whole plans in dispatch ("dispatch"; "p_m16w1": the plan
    before, peeled at 16 rows and 1 warp), bf16 and float16 on 65536 and 1048576 rows: the whole plans ran 1.08-1.47x of
    the plan before (56 cases, geomean 1.22: 17 forward 1.31-1.47x, backward 1.08-1.45x; 33 forward 1.17-1.32x; the
    25-31 backward 1.08-1.25x); 33's backward, whole in this run, ran 0.93-1.14x (its softmax 0.93-1.00x) and keeps the
    peeled plan; the 25-31 forwards, unchanged, 0.99-1.01x (the run's noise)."""
    gains, kept, same = [], [], []
    for (dtype, M, N, op, direction), gbps in rows_logs.gbps("probe_rows_odd_whole16_check.log").items():
        now, then = _plan(dtype, M, N, op, direction), _plan(dtype, M, N, op, direction, at=WHOLE16_AT_02F1616)
        ratio = gbps["dispatch"] / gbps["p_m16w1"]
        if (N, direction) == (33, "bwd"):  # whole in this run (m32w1), peeled since
            assert now == then, (M, N, op)
            kept.append(ratio)
        elif now == then:
            assert direction == "fwd" and 25 <= N <= 31, (M, N)
            same.append(ratio)
        else:
            assert _whole_now(now, N, direction), (M, N, op, direction)
            gains.append(ratio)
    assert len(gains) == 56 and min(gains) > 1.07 and max(gains) < 1.48
    assert 1.2 < math.exp(sum(map(math.log, gains)) / len(gains)) < 1.25
    assert len(kept) == 8 and min(kept) > 0.93 and max(kept) < 1.14
    assert len(same) == 32 and min(same) > 0.98 and max(same) < 1.01


def test_odd_rows_whole_small_grids():
    """probe_rows_odd_whole16_grids.log (at 02f1616: "dispatch" peeled at 4 rows and 1 warp, ROWS_PEEL16_SMALL_M) and
    probe_rows_odd_whole16_check_grids.log (the plan now: "dispatch"; "p_m4w1" the plan before), bf16 (and float16 in
    the check) odd 17-31 values on 264-4223 rows: the backward of 25-31 now runs whole at 4 rows, which ran 1.03-1.28x
    of the peeled plan in the scan (24 cases) and 1.03-1.29x in the check (softmax 1.16-1.29x, log_softmax 1.03-1.08x;
    64 cases); 17-23 and the forwards keep it (whole 0.26-1.05x of it)."""
    gains, kept = [], []
    for (dtype, M, N, op, direction), gbps in rows_logs.gbps("probe_rows_odd_whole16_grids.log").items():
        now, then = _plan(dtype, M, N, op, direction), _plan(dtype, M, N, op, direction, at=WHOLE16_AT_02F1616)
        assert then.kwargs["PEEL"] and (then.kwargs["BLOCK_M"], then.kwargs["num_warps"]) == (4, 1), (M, N)
        if now == then:
            assert not (25 <= N <= 31 and direction == "bwd"), (M, N, op)
            kept.append(max(gbps.values()) / gbps["dispatch"])
        else:
            assert _whole_now(now, N, direction) and now.kwargs["BLOCK_M"] == 4, (M, N, op, direction)
            gains.append(gbps[_label(now)] / gbps["dispatch"])
    assert len(gains) == 24 and min(gains) > 1.02 and max(gains) < 1.29
    assert len(kept) == 72 and max(kept) < 1.06
    check = []
    for (dtype, M, N, op, direction), gbps in rows_logs.gbps("probe_rows_odd_whole16_check_grids.log").items():
        now = _plan(dtype, M, N, op, direction)
        assert _whole_now(now, N, direction) and (now.kwargs["BLOCK_M"], now.kwargs["num_warps"]) == (4, 1), (M, N)
        check.append(gbps["dispatch"] / gbps["p_m4w1"])
    assert len(check) == 64 and min(check) > 1.02 and max(check) < 1.3


def test_odd_rows_with_longer_tails_peeled():
    """probe_rows_odd_tails16.log (bf16 odd rows with a tail in 64 and 128 lanes, 65, 67, 129, 131 and 135 values, on
    65536 and 1048576 rows; "dispatch" ROWS_PEEL16's 8 rows at 1 warp, peeled): whole at 8-32 rows and 1-2 warps they
    ran 0.34-0.99x of it, and keep it (no odd entries of 64 and 128 lanes in ROWS_WHOLE16_TAILS)."""
    cases = rows_logs.gbps("probe_rows_odd_tails16.log")
    for (dtype, M, N, op, direction), gbps in cases.items():
        now = _plan(dtype, M, N, op, direction)
        assert now == _plan(dtype, M, N, op, direction, at=WHOLE16_AT_02F1616) and now.kwargs["PEEL"], (M, N)
        assert (now.kwargs["BLOCK_M"], now.kwargs["num_warps"]) == (8, 1), (M, N)
        assert max(gbps.values()) == gbps["dispatch"], (M, N, op, direction)
    assert len(cases) == 40


def test_odd_short_rows_scan():
    """probe_rows_short16_5_7.log and _9_15.log (bf16 5-15 values on 65536 and 1048576 rows at cfc29ff: "dispatch" the
    rules' 256 or 128 rows at 4 warps, whole; "np_mBwW" whole at B rows and W warps, "p_mBwW" peeled): the odd
    backward now runs whole at 64 rows (5, 7) or 32 (9-15) and 1 warp (ROWS_ODD16_TILINGS), which ran 1.04-1.58x of
    the plan then (24 cases); the forwards and the even rows (6, 10-14) keep their plans, whose best tiling ran up to
    1.29x of them (the even 12's backward on 65536 rows; 10's softmax backward 0.90x at 32 rows on 1048576)."""
    gains, kept = [], []
    for name in ("probe_rows_short16_5_7.log", "probe_rows_short16_9_15.log"):
        for (dtype, M, N, op, direction), gbps in rows_logs.gbps(name).items():
            now, then = _plan(dtype, M, N, op, direction), _plan(dtype, M, N, op, direction, at=ODD16_AT_CFC29FF)
            assert not then.kwargs["PEEL"] and then.kwargs["num_warps"] == 4, (M, N)
            if now == then:
                assert N % 2 == 0 or direction == "fwd", (M, N, op, direction)
                kept.append(max(gbps.values()) / gbps["dispatch"])
                continue
            assert direction == "bwd" and N % 2 and not now.kwargs["PEEL"], (M, N, op)
            assert (now.kwargs["BLOCK_M"], now.kwargs["num_warps"]) == (64 if N < 8 else 32, 1), (M, N, op)
            gains.append(gbps[_label(now)] / gbps["dispatch"])
    assert len(gains) == 24 and min(gains) > 1.03 and max(gains) < 1.58
    assert len(kept) == 56 and max(kept) < 1.29


def test_odd_short_rows_check():
    """probe_rows_odd16_bwd_check.log (d99e90b: ROWS_ODD16_TILINGS from 4224 rows, "dispatch"; "before" the rules'
    plan; "np" the new tiling; bf16 and float16, odd backward of 5-15 values) and _grids.log (0fb8405: in every grid):
    on 4224-1048576 rows the rule ran 1.00-1.66x of the plan before (72 cases, geomean 1.31; bf16 65536 x 5 softmax 444
    -> 696 GB/s), on 2112 rows its tiling 1.03-1.86x, and in every grid on 264-2112 rows 1.00-1.86x (72 cases; ties
    only on 264 rows, 4-13 GB/s)."""
    big, small = [], []
    for (dtype, M, N, op, direction), gbps in rows_logs.gbps("probe_rows_odd16_bwd_check.log").items():
        now = _plan(dtype, M, N, op, direction)
        assert (now.kwargs["BLOCK_M"], now.kwargs["num_warps"]) == (64 if N < 8 else 32, 1), (M, N)
        if M >= 4224:
            big.append(gbps["dispatch"] / gbps["before"])
        else:  # d99e90b's plan then the rules' ("dispatch"), the new tiling "np"
            small.append(gbps["np"] / gbps["dispatch"])
    assert len(big) == 72 and min(big) >= 1.0 and max(big) < 1.66
    assert 1.3 < math.exp(sum(map(math.log, big)) / len(big)) < 1.32
    assert len(small) == 24 and min(small) > 1.02 and max(small) < 1.87
    grids = []
    for (dtype, M, N, op, direction), gbps in rows_logs.gbps("probe_rows_odd16_bwd_grids.log").items():
        now = _plan(dtype, M, N, op, direction)
        assert (now.kwargs["BLOCK_M"], now.kwargs["num_warps"]) == (64 if N < 8 else 32, 1), (M, N)
        grids.append(gbps["dispatch"] / gbps["before"])
        assert grids[-1] >= (1.0 if M == 264 else 1.02), (M, N, op)
    assert len(grids) == 72 and max(grids) < 1.87


def test_same_strides_check():
    """probe_rows_h200_same16_check.log (542f607, 2026-12-07; the check that the H200 had not run since
    ROWS_FWD16_SAME_LANES became every GPU's): the peeled 16-bit forwards in 128 and 256 lanes, bf16 and float16, odd
    73-263 values on 1056 and 65536 rows, ran the H200's plan of today ("dispatch", OFFS32 and SAME_STRIDES on) at or
    ahead of the same launch with both off ("nosame"): 64 cases 0.987-1.14x, geomean 1.03; 73-79 values on 65536 rows
    1.108-1.14x; 1056 rows 1.00-1.02x; behind only on 65536 rows of 131, 255 and 263 values (5 cases: float16 131
    softmax 0.987x, float16 263 softmax 0.995x, the rest 0.9991-0.9997x)."""
    ran = rows_logs.tilings("probe_rows_h200_same16_check.log")
    gains = {}
    for case, gbps in rows_logs.gbps("probe_rows_h200_same16_check.log").items():
        now = _plan(*case)
        kw = now.kwargs
        assert kw["PEEL"] and kw["OFFS32"] and kw["SAME_STRIDES"] and kw["BLOCK_N"] in (128, 256), (case, kw)
        assert ran[case] == f"m{kw['BLOCK_M']}w{kw['num_warps']}p", (case, ran[case])
        gains[case] = gbps["dispatch"] / gbps["nosame"]
    assert len(gains) == 64 and 0.98 < min(gains.values()) and max(gains.values()) < 1.14
    assert 1.03 < math.exp(sum(map(math.log, gains.values())) / len(gains)) < 1.04
    assert all(1.108 < g for (_, M, N, _, _), g in gains.items() if M == 65536 and N < 80)
    assert all(1.0 <= g < 1.03 for (_, M, _, _, _), g in gains.items() if M == 1056)
    behind = {(M, N, op) for (_, M, N, op, _), g in gains.items() if g < 1.0}
    assert behind == {(65536, 131, "softmax"), (65536, 131, "log_softmax"), (65536, 255, "softmax"),
                      (65536, 263, "softmax")}, behind
    assert [case for case, g in gains.items() if g < 0.995] == [("float16", 65536, 131, "softmax", "fwd")]
