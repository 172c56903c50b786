"""The H100's peeled 16-bit rows re-tiled by op and grid (dispatch.ROWS_PEEL16_GRIDS, 2026-12-07) against the checks
that ran it on the H100 (no GPU here): bench/results/h100/probe_rows_h100_grids16_{fwd,bwd}_check.log (the table's first
cut, tree cd142b2: "dispatch" its plan, m16w1 and m8w1 the plans before it), probe_rows_h100_grids16b_fwd_check.log (the
entries those figures added, tree 86ceaec: "dispatch" today's plan, m16w2 the first cut's) and
probe_rows_h100_grids16_fwd_bounds.log (past those entries' bounds, not taken); then the small grids of other lanes:
probe_rows_h100_peel16_lanes_{fwd,bwd}_{scan,small}.log (tree 79bda00: "dispatch" the plan before the small-grid
entries) and their check, probe_rows_h100_grids16c_{fwd,bwd}_check.log (tree dc9b46a); two more (tree 806eeb4),
probe_rows_h100_peel16_256_fwd_even.log and probe_rows_h100_peel16_64_bwd_softmax.log, and the check of the entries
they led to, probe_rows_h100_grids16d_{fwd,bwd}_check.log (tree 20c45e9), then probe_rows_h100_grids16e_bwd_check.log
(tree 270427f); two past those bounds (tree 475c8f5), probe_rows_h100_peel16_256_fwd_bounds.log and
probe_rows_h100_peel16_64_bwd_61.log, and the check of the entries they led to,
probe_rows_h100_grids16f_{fwd,bwd}_check.log (tree c6895bf); two past the 256-lane forward's bounds (tree 5d675e5),
probe_rows_h100_peel16_256_fwd_bounds2.log and _bounds3.log, which led to its entry to 80 rows an SM, and its check,
probe_rows_h100_grids16g_fwd_check.log (tree 5700ef2, today's plan); and one past that entry's bounds (tree 78cfbdd),
probe_rows_h100_peel16_256_fwd_bounds4.log, not taken; then the log_softmax backward past its bounds (tree cfe0238),
probe_rows_h100_peel16_bwd_log_bounds.log, and the check of the entries it led to,
probe_rows_h100_grids16h_bwd_check.log (tree 131c799, today's plan).
bench/DISPATCH.md's section ROWS_PEEL16_GRIDS quotes these figures."""

import json
import os
import statistics
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir, "bench"))
import rows_logs  # noqa: E402
import targets  # noqa: E402
from forced_plans import (before_grids16, before_grids16b, before_grids16c,  # noqa: E402
                          before_grids16d, before_grids16e, before_grids16f, before_grids16g, before_grids16h,
                          patched_within)
from multisoftmax import dispatch  # noqa: E402
import triton  # noqa: E402  (after multisoftmax, which sets TRITON_INTERPRET where asked)

CHECK = {"fwd": "probe_rows_h100_grids16_fwd_check.log", "bwd": "probe_rows_h100_grids16_bwd_check.log"}
CHECK_B = "probe_rows_h100_grids16b_fwd_check.log"
BOUNDS = "probe_rows_h100_grids16_fwd_bounds.log"
LANES = tuple(f"probe_rows_h100_peel16_lanes_{d}_{kind}.log" for kind in ("scan", "small") for d in ("fwd", "bwd"))
CHECK_C = {"fwd": "probe_rows_h100_grids16c_fwd_check.log", "bwd": "probe_rows_h100_grids16c_bwd_check.log"}
CHECK_D = {"fwd": "probe_rows_h100_grids16d_fwd_check.log", "bwd": "probe_rows_h100_grids16d_bwd_check.log"}
CHECK_E = "probe_rows_h100_grids16e_bwd_check.log"


def _tilings(cases) -> dict:
    """{case: tiling} of the H100's plans (132 SMs, targets.plan) of a log's cases, as bench/probe_rows.py heads its
    lines (rows_logs.tiling_of)."""
    return {(dtype, M, N, op, d): rows_logs.tiling_of(targets.plan(dtype, op, d, M, N, 132))
            for dtype, M, N, op, d in cases}


def _gains(name: str, before: str) -> dict:
    """{case: GB/s of "dispatch" / GB/s of `before`} of the log `name` (1 where dispatch ran `before`'s tiling, which
    the probe then leaves out)."""
    return {case: cells["dispatch"] / cells.get(before, cells["dispatch"])
            for case, cells in rows_logs.gbps(name, gpu="h100").items()}


def _assert_ran(name: str, count: int, ran, before, tiling):
    """The log `name` has `count` cases, its "dispatch" is the H100's plan under the forced_plans patch `ran` (None:
    today's), and under the patch `before` every case's plan is `tiling` (a tiling, or a function of the case)."""
    cases = rows_logs.tilings(name, gpu="h100")
    assert len(cases) == count, name
    with patched_within(dispatch, ran or (lambda *_: None)):
        assert cases == _tilings(cases), name
    with patched_within(dispatch, before):
        assert _tilings(cases) == {case: tiling(case) if callable(tiling) else tiling for case in cases}, name


@pytest.mark.parametrize("direction", ["fwd", "bwd"])
def test_the_check_ran_the_first_cut_against_the_plans_before(direction):
    """The check's "dispatch" is the table's first cut (forced_plans.before_grids16b), and the plan before the table
    (before_grids16) is ROWS_PEEL16's, 16 rows (forward) or 8 (backward) at 1 warp, peeled: the probe's m16w1 and m8w1,
    or dispatch itself where the table left the case alone."""
    _assert_ran(CHECK[direction], {"fwd": 160, "bwd": 128}[direction], before_grids16b, before_grids16,
                {"fwd": "m16w1p", "bwd": "m8w1p"}[direction])


def test_the_first_cut_was_never_behind():
    """The first cut against the plans before it: the forward of 25-39 values 1.00-1.33x (geomean 1.14, 0.998 on
    131072 x 25's float16 softmax), the backward of 73-127 values 1.00-1.39x (geomean 1.07)."""
    fwd, bwd = _gains(CHECK["fwd"], "m16w1"), _gains(CHECK["bwd"], "m8w1")
    assert 0.997 < min(fwd.values()) and max(fwd.values()) < 1.335
    assert 1.13 < statistics.geometric_mean(fwd.values()) < 1.15
    assert 0.999 < min(bwd.values()) and max(bwd.values()) < 1.395
    assert 1.07 < statistics.geometric_mean(bwd.values()) < 1.08
    assert [case for case, gain in fwd.items() if gain < 0.999] == [("float16", 131072, 25, "softmax", "fwd")]


def test_the_first_cut_left_8_rows_ahead_where_the_table_took_them():
    """Why the entries of 8 rows and 1 warp to 256 and 512 rows an SM: in the first check, m8w1 ran ahead of the first
    cut's 16 rows and 2 warps on 31-39 values at 33792 rows (256 an SM; 1.01-1.15x, softmax 1.04-1.15x) and on 35-39 at
    65536 (496 an SM; 1.01-1.10x), and behind on 25 values there (0.91-1.00x)."""
    cells = rows_logs.gbps(CHECK["fwd"], gpu="h100")
    ratio = {case: c["m8w1"] / c["dispatch"] for case, c in cells.items() if case[1] in (33792, 65536)}
    taken = [r for (_, M, N, *_), r in ratio.items() if N >= 31 and M == 33792 or N >= 35]
    assert len(taken) == 20 and 1.006 < min(taken) and max(taken) < 1.15
    assert max(r for (_, _, N, *_), r in ratio.items() if N == 25) < 1.002


def test_the_second_check_ran_todays_plans():
    """probe_rows_h100_grids16b_fwd_check.log's "dispatch" is today's plan: 8 rows and 1 warp on 31-39 values to 256
    rows an SM and on 35-39 to 512, 16 rows and 2 warps just past them (34000 rows of 31, 67716 of 35-39 values)."""
    cases = rows_logs.tilings(CHECK_B, gpu="h100")
    assert len(cases) == 96 and cases == _tilings(cases)
    eights = {case for case, tiling in cases.items() if tiling == "m8w1p"}
    assert eights == {case for case in cases if case[1] <= (33792 if case[2] == 31 else 67584)}
    assert set(cases.values()) == {"m8w1p", "m16w2p"}


def test_the_second_check_figures():
    """The entries taken against the first cut's 16 rows and 2 warps: 0.999-1.19x on 68 cases (geomean 1.085); the
    softmax of 31-39 values at 25344 rows (192 an SM) 1.11-1.19x. Just past the bounds (34000 rows of 31 values, 67716
    of 35-39), where 16 rows and 2 warps run, m8w1 1.00-1.10x of them (further on: the bounds log)."""
    cells = rows_logs.gbps(CHECK_B, gpu="h100")
    gains = {case: c["dispatch"] / c["m16w2"] for case, c in cells.items() if "m16w2" in c}  # m16w2p: no m16w2
    assert len(gains) == 68
    assert 0.999 < min(gains.values()) and max(gains.values()) < 1.19
    assert 1.08 < statistics.geometric_mean(gains.values()) < 1.09
    assert min(g for case, g in gains.items() if case[1] == 25344 and case[3] == "softmax") > 1.11
    past = [c["m8w1"] / c["dispatch"] for (_, M, N, *_), c in cells.items()
            if (M, N) == (34000, 31) or M == 67716 and N >= 35]
    assert len(past) == 16 and 1.0 < min(past) and max(past) < 1.105


def test_past_the_bounds_8_rows_were_not_taken():
    """Past the bounds (the log's "dispatch" today's 16 rows and 2 warps; not taken): 8 rows and 1 warp ran on 31
    values at 320-448 rows an SM bfloat16 0.98-1.02x and float16 1.00-1.07x (a dtype that the table does not key), on
    35 and 37 values from 640 rows an SM 0.93-1.01x, on 39 values at 576-768 0.98-1.06x, and 0.93-1.07x in all."""
    cells = rows_logs.gbps(BOUNDS, gpu="h100")
    assert len(cells) == 60 and rows_logs.tilings(BOUNDS, gpu="h100") == _tilings(cells)
    assert set(_tilings(cells).values()) == {"m16w2p"}
    ratio = {case: c["m8w1"] / c["dispatch"] for case, c in cells.items()}
    assert 0.929 < min(ratio.values()) and max(ratio.values()) < 1.075
    assert _span_of(BOUNDS, "m8w1", lambda per_sm, N, op, dtype: N == 31 and dtype == "bfloat16") == (6, 0.98, 1.02)
    assert _span_of(BOUNDS, "m8w1", lambda per_sm, N, op, dtype: N == 31 and dtype == "float16") == (6, 1.0, 1.07)
    assert _span_of(BOUNDS, "m8w1", lambda per_sm, N, op, dtype: N in (35, 37) and per_sm >= 640) == (24, 0.93, 1.01)
    assert _span_of(BOUNDS, "m8w1", lambda per_sm, N, op, dtype: N == 39 and per_sm <= 768) == (12, 0.98, 1.06)


def _span_of(name: str, variant: str, keep) -> tuple:
    """(how many, least, most, to 2 places) of GB/s of `variant` / GB/s of "dispatch" over the cases of the log `name`
    that `keep(rows an SM, N, op, dtype)` takes."""
    ratios = [c[variant] / c["dispatch"] for (dtype, M, N, op, _), c in rows_logs.gbps(name, gpu="h100").items()
              if keep(M // 132, N, op, dtype)]
    return len(ratios), round(min(ratios), 2), round(max(ratios), 2)


def _lanes(N: int) -> int:
    """The lanes of a peeled row's body of N values (dispatch._peel16's key)."""
    return triton.next_power_of_2(N // 8 * 8)


def test_the_lane_logs_ran_the_plans_before_the_small_grid_entries():
    """probe_rows_h100_peel16_lanes_*.log's "dispatch" is the plan before ROWS_PEEL16_GRIDS' small-grid entries
    (forced_plans.before_grids16c): ROWS_PEEL16's tiling, peeled."""
    for name in LANES:
        cases = rows_logs.tilings(name, gpu="h100")
        assert len(cases) == (108 if name.endswith("fwd_small.log") else 72), name
        with patched_within(dispatch, before_grids16c):
            assert cases == _tilings(cases), name
        assert all(tiling == "m%dw%dp" % dispatch.ROWS_PEEL16[(case[4] == "fwd", _lanes(case[2]))][:2]
                   for case, tiling in cases.items()), name


def _half(name: str) -> dict:
    """{(direction, lanes, op, rows an SM): [GB/s at half ROWS_PEEL16's rows a program / GB/s of dispatch]} of a lane
    log."""
    out = {}
    for (dtype, M, N, op, direction), cells in rows_logs.gbps(name, gpu="h100").items():
        block_m = dispatch.ROWS_PEEL16[(direction == "fwd", _lanes(N))][0]
        half = f"m{block_m // 2}w1"
        if half in cells:
            out.setdefault((direction, _lanes(N), op, M // 132), []).append(cells[half] / cells["dispatch"])
    return out


def _span(half: dict, keep) -> tuple:
    """(least, most) of the ratios of `half` whose key `keep` takes, to 2 places."""
    values = [r for key, ratios in half.items() if keep(*key) for r in ratios]
    assert values
    return round(min(values), 2), round(max(values), 2)


def test_the_small_grid_figures():
    """dispatch.py's figures for the small-grid entries (probe_rows_h100_peel16_lanes_*_small.log, bf16, half
    ROWS_PEEL16's rows a program at 1 warp against it): the forward in 64 lanes 1.09-1.12x to 48 rows an SM, 1.00-1.06x
    at 64, 0.94-1.01x at 80; in 128 lanes 1.07-1.25x to 96, 1.00-1.07x at 128; the log_softmax backward in 64 lanes
    1.01-1.14x to 80, in 256 lanes 1.01-1.08x to 48 (the softmax 0.90-1.03x); the forward in 256 lanes (not taken)
    1.03-1.18x to 48."""
    fwd, bwd = (_half(f"probe_rows_h100_peel16_lanes_{d}_small.log") for d in ("fwd", "bwd"))
    assert _span(fwd, lambda d, lanes, op, per_sm: lanes == 64 and per_sm <= 48) == (1.09, 1.12)
    assert _span(fwd, lambda d, lanes, op, per_sm: lanes == 64 and per_sm == 64) == (1.0, 1.06)
    assert _span(fwd, lambda d, lanes, op, per_sm: lanes == 64 and per_sm == 80) == (0.94, 1.01)
    assert _span(fwd, lambda d, lanes, op, per_sm: lanes == 128 and per_sm <= 96) == (1.07, 1.25)
    assert _span(fwd, lambda d, lanes, op, per_sm: lanes == 128 and per_sm == 128) == (1.0, 1.07)
    assert _span(fwd, lambda d, lanes, op, per_sm: lanes == 256 and per_sm <= 48) == (1.03, 1.18)
    log = "log_softmax"
    assert _span(bwd, lambda d, lanes, op, per_sm: lanes == 64 and op == log and per_sm <= 80) == (1.01, 1.14)
    assert _span(bwd, lambda d, lanes, op, per_sm: lanes == 256 and op == log and per_sm <= 48) == (1.01, 1.08)
    assert _span(bwd, lambda d, lanes, op, per_sm: lanes == 256 and op != log and per_sm <= 48) == (0.9, 1.03)


@pytest.mark.parametrize("direction", ["fwd", "bwd"])
def test_the_third_check_ran_its_plans(direction):
    """probe_rows_h100_grids16c_*_check.log's "dispatch" is the plan before the 256-lane forward's and the 64-lane
    softmax backward's entries (forced_plans.before_grids16d), and the plan before the small-grid entries
    (forced_plans.before_grids16c) is ROWS_PEEL16's tiling: m8w1 (m4w1 in the backward's 256 lanes)."""
    cases = rows_logs.tilings(CHECK_C[direction], gpu="h100")
    assert len(cases) == {"fwd": 144, "bwd": 120}[direction]
    with patched_within(dispatch, before_grids16d):
        assert cases == _tilings(cases)
    with patched_within(dispatch, before_grids16c):
        assert {case: "m8w1p" if case[2] <= 135 else "m4w1p" for case in cases} == _tilings(cases)


def _check_c_gains(direction: str) -> list:
    """[GB/s of dispatch / GB/s of the plan before the small-grid entries] of a third check's cases that take them."""
    out = []
    for (dtype, M, N, op, d), cells in rows_logs.gbps(CHECK_C[direction], gpu="h100").items():
        before = "m8w1" if N <= 135 else "m4w1"
        if before in cells:
            out.append(((M, N, op), cells["dispatch"] / cells[before]))
    return out


def test_the_third_check_figures():
    """The small-grid entries against the plans before them: the forward (41-71 values to 64 rows an SM, 73-135 to
    128) 96 cases 0.99-1.26x, geomean 1.14, under 1.0 only 73 values at 128 rows an SM (softmax 0.99x, log_softmax
    0.996x) and 41 at 64 (0.996-0.998x), the bounds' edges; the log_softmax backward (41-71 to 80, 137-263 to 48) 36
    cases 1.00-1.17x, geomean 1.09 (0.998x the least, 41 values at 80 rows an SM)."""
    fwd, bwd = _check_c_gains("fwd"), _check_c_gains("bwd")
    assert len(fwd) == 96 and 0.989 < min(g for _, g in fwd) and max(g for _, g in fwd) < 1.26
    assert 1.135 < statistics.geometric_mean(g for _, g in fwd) < 1.145
    assert {key for key, g in fwd if g < 0.995} == {(16896, 73, "softmax")}
    assert {key[:2] for key, g in fwd if g < 1.0} == {(16896, 73), (8448, 41)}
    assert len(bwd) == 36 and 0.997 < min(g for _, g in bwd) and max(g for _, g in bwd) < 1.17
    assert 1.08 < statistics.geometric_mean(g for _, g in bwd) < 1.095
    assert all(op == "log_softmax" for (_, _, op), _ in bwd)


BEHIND_D = ("probe_rows_h100_peel16_256_fwd_even.log", "probe_rows_h100_peel16_64_bwd_softmax.log")


def test_the_logs_behind_the_fourth_check_ran_the_plans_before_it():
    """The two logs measured after the small-grid entries ran the plans before the entries they led to
    (forced_plans.before_grids16d): the 256-lane forward at ROWS_PEEL16's 4 rows and 1 warp, the 64-lane backward at 8
    rows (softmax) and ROWS_PEEL16_GRIDS' 4 (log_softmax)."""
    _assert_ran(BEHIND_D[0], 200, before_grids16d, before_grids16d, "m4w1p")
    _assert_ran(BEHIND_D[1], 64, before_grids16d, before_grids16d,
                lambda case: "m4w1p" if case[3] == "log_softmax" else "m8w1p")


def test_the_figures_behind_the_fourth_check():
    """The figures that led to the 256-lane forward's entry and the 64-lane softmax backward's (taken since, checked
    in CHECK_D): the forward in 256 lanes at 2 rows a program ran 1.00-1.19x of the plan's 4 rows to 48 rows an SM on
    odd rows and on even ones of ALIGN 2 and 4 alike (0.996x the least), 0.96-1.09x at 56 and 0.93-1.07x at 64; the
    64-lane softmax backward at 16 rows and 2 warps 1.00-1.16x to 48 rows an SM on 41-59 values (41-45: 1.10-1.16x),
    0.88-1.06x on 71."""
    fwd, bwd = BEHIND_D
    assert _span_of(fwd, "m2w1", lambda per_sm, N, op, _: per_sm <= 48) == (120, 1.0, 1.19)
    assert _span_of(fwd, "m2w1", lambda per_sm, N, op, _: per_sm <= 48 and N % 2 == 0) == (72, 1.0, 1.19)
    assert _span_of(fwd, "m2w1", lambda per_sm, N, op, _: per_sm == 56) == (40, 0.96, 1.09)
    assert _span_of(fwd, "m2w1", lambda per_sm, N, op, _: per_sm == 64) == (40, 0.93, 1.07)
    softmax = "softmax"
    assert _span_of(bwd, "m16w2", lambda per_sm, N, op, _: per_sm <= 48 and N < 60 and op == softmax) == (18, 1.0, 1.16)
    assert _span_of(bwd, "m16w2", lambda per_sm, N, op, _: per_sm <= 48 and N < 46 and op == softmax) == (12, 1.1, 1.16)
    assert _span_of(bwd, "m16w2", lambda per_sm, N, op, _: N == 71 and op == softmax) == (8, 0.88, 1.06)


@pytest.mark.parametrize("direction", ["fwd", "bwd"])
def test_the_fourth_check_ran_its_plans(direction):
    """probe_rows_h100_grids16d_*_check.log's "dispatch" is the plan of tree 20c45e9 (forced_plans.before_grids16e:
    without the 64-lane softmax backward's entry to 64 rows an SM), and the plan before the entries it checks
    (before_grids16d) is ROWS_PEEL16's tiling: m4w1 forward (256 lanes), m8w1 backward (64 lanes)."""
    _assert_ran(CHECK_D[direction], {"fwd": 144, "bwd": 64}[direction], before_grids16e, before_grids16d,
                {"fwd": "m4w1p", "bwd": "m8w1p"}[direction])


def test_the_fourth_check_figures():
    """The 256-lane forward's entry and the 64-lane softmax backward's against the plans before them: the forward
    (137-263 values, odd and even, to 48 rows an SM) 96 cases 1.003-1.19x, geomean 1.11, 32 rows an SM 1.095-1.19x,
    even rows 1.006-1.19x; just past the bound (49 rows an SM) 2 rows still 1.008-1.12x of 4; the softmax backward
    (41-59 values to 48) 36 cases 1.011-1.16x, geomean 1.09."""
    fwd = _gains(CHECK_D["fwd"], "m4w1")
    taken = {case: g for case, g in fwd.items() if case[1] <= 48 * 132}
    assert len(taken) == 96 and 1.003 < min(taken.values()) and max(taken.values()) < 1.194
    assert 1.105 < statistics.geometric_mean(taken.values()) < 1.115
    assert 1.095 < min(g for case, g in taken.items() if case[1] == 4224)
    assert 1.006 < min(g for case, g in taken.items() if case[2] % 2 == 0)
    assert _span_of(CHECK_D["fwd"], "m2w1", lambda per_sm, N, op, _: per_sm == 49) == (48, 1.01, 1.12)
    bwd = {case: g for case, g in _gains(CHECK_D["bwd"], "m8w1").items() if case[2] <= 59 and case[1] <= 48 * 132}
    assert len(bwd) == 36 and 1.011 < min(bwd.values()) and max(bwd.values()) < 1.16
    assert 1.09 < statistics.geometric_mean(bwd.values()) < 1.1


def test_the_fifth_check_ran_its_plans():
    """probe_rows_h100_grids16e_bwd_check.log's "dispatch" is the plan of tree 270427f (forced_plans.before_grids16f),
    and the plan before the 64-lane softmax backward of 41-47 values took 16 rows and 2 warps to 64 rows an SM
    (before_grids16e) is ROWS_PEEL16's 8 rows and 1 warp on all its grids (49-65 rows an SM)."""
    _assert_ran(CHECK_E, 48, before_grids16f, before_grids16e, "m8w1p")


def test_the_fifth_check_figures():
    """The 64-lane softmax backward of 41-47 values at 16 rows and 2 warps to 64 rows an SM against the plan before
    (8 rows, 1 warp): 24 cases 1.02-1.11x, geomean 1.06, 56 rows an SM 1.05-1.11x; past the bound (65 rows an SM)
    0.97-1.02x; 49 and 51 values (not taken) 0.994-1.04x to 64 rows an SM and 0.95-0.96x at 65."""
    taken = _gains(CHECK_E, "m8w1")
    taken = {case: g for case, g in taken.items() if case[2] <= 47 and case[1] <= 64 * 132}
    assert len(taken) == 24 and 1.02 < min(taken.values()) and max(taken.values()) < 1.106
    assert 1.05 < statistics.geometric_mean(taken.values()) < 1.06
    assert min(g for case, g in taken.items() if case[1] == 7392) > 1.045
    assert _span_of(CHECK_E, "m16w2", lambda per_sm, N, op, _: per_sm == 65 and N <= 47) == (8, 0.97, 1.02)
    assert _span_of(CHECK_E, "m16w2", lambda per_sm, N, op, _: per_sm < 65 and N > 47) == (12, 0.99, 1.04)
    assert _span_of(CHECK_E, "m16w2", lambda per_sm, N, op, _: per_sm == 65 and N > 47) == (4, 0.95, 0.96)


BEHIND_F = ("probe_rows_h100_peel16_256_fwd_bounds.log", "probe_rows_h100_peel16_64_bwd_61.log")


def _bwd64_before_f(case) -> str:
    """The 64-lane softmax backward's tiling under forced_plans.before_grids16f: ROWS_PEEL16_GRIDS' 16 rows and 2 warps
    on 41-59 values to 48 rows an SM, else ROWS_PEEL16's 8 rows and 1 warp."""
    return "m16w2p" if case[2] <= 59 and case[1] <= 48 * 132 else "m8w1p"


def test_the_logs_behind_the_sixth_check_ran_the_plans_before_it():
    """The two logs measured past the bounds of the fourth and fifth checks' entries ran the plans before the entries
    they led to (forced_plans.before_grids16f): the 256-lane forward at ROWS_PEEL16's 4 rows and 1 warp on 56-72 rows an
    SM, the 64-lane softmax backward at its 8 rows and 1 warp (16 rows and 2 warps where ROWS_PEEL16_GRIDS had them:
    49-57 values to 48 rows an SM, which the probe leaves out)."""
    _assert_ran(BEHIND_F[0], 168, before_grids16f, before_grids16f, "m4w1p")
    _assert_ran(BEHIND_F[1], 72, before_grids16f, before_grids16f, _bwd64_before_f)


def test_the_figures_behind_the_sixth_check():
    """The figures that led to the 256-lane forward's entries to 56 and 72 rows an SM and the 64-lane softmax
    backward's to 32, 40 and 56: the forward at 2 rows a program against 4 ran 1.005-1.09x on 171-263 values at 56 rows
    an SM (0.98-1.01x on 141-161), 1.01-1.08x on 211-263 at 64 and 1.005-1.05x at 72 (0.91-0.995x on 141-201 there); the
    softmax backward at 16 rows and 2 warps against 8 and 1 ran 1.06-1.09x on 61-71 values at 32 rows an SM, 1.006-1.05x
    on 61-69 at 40 (71: 0.99-1.00x), 1.007-1.04x on 49-53 at 49 and 56 (57-71 there: 0.91-0.98x)."""
    fwd, bwd = BEHIND_F
    assert _span_of(fwd, "m2w1", lambda per_sm, N, op, _: per_sm == 56 and N >= 171) == (44, 1.0, 1.09)
    assert _span_of(fwd, "m2w1", lambda per_sm, N, op, _: per_sm == 56 and N < 171) == (12, 0.98, 1.01)
    assert _span_of(fwd, "m2w1", lambda per_sm, N, op, _: per_sm == 64 and N >= 211) == (28, 1.01, 1.08)
    assert _span_of(fwd, "m2w1", lambda per_sm, N, op, _: per_sm == 72 and N >= 211) == (28, 1.0, 1.05)
    assert _span_of(fwd, "m2w1", lambda per_sm, N, op, _: per_sm > 56 and N < 211) == (56, 0.91, 1.0)
    assert _span_of(bwd, "m16w2", lambda per_sm, N, op, _: per_sm == 32 and N >= 61) == (12, 1.06, 1.09)
    assert _span_of(bwd, "m16w2", lambda per_sm, N, op, _: per_sm == 40 and 61 <= N <= 69) == (10, 1.01, 1.05)
    assert _span_of(bwd, "m16w2", lambda per_sm, N, op, _: per_sm == 40 and N == 71) == (2, 0.99, 1.0)
    assert _span_of(bwd, "m16w2", lambda per_sm, N, op, _: per_sm >= 49 and N <= 53) == (8, 1.01, 1.04)
    assert _span_of(bwd, "m16w2", lambda per_sm, N, op, _: per_sm >= 49 and N >= 57) == (28, 0.91, 0.98)


CHECK_F = {"fwd": "probe_rows_h100_grids16f_fwd_check.log", "bwd": "probe_rows_h100_grids16f_bwd_check.log"}


def test_the_sixth_check_ran_its_plans():
    """probe_rows_h100_grids16f_*_check.log's "dispatch" is the plan of tree c6895bf (forced_plans.before_grids16g:
    today's but the 256-lane forward's entry to 80 rows an SM), and the plan before the entries it checks
    (forced_plans.before_grids16f) is ROWS_PEEL16's: the forward's 4 rows and 1 warp on every case (56-73 rows an SM),
    the softmax backward's 8 rows and 1 warp but where ROWS_PEEL16_GRIDS had 16 rows and 2 warps before (41-59 values
    to 48 rows an SM)."""
    _assert_ran(CHECK_F["fwd"], 220, before_grids16g, before_grids16f, "m4w1p")
    _assert_ran(CHECK_F["bwd"], 84, before_grids16g, before_grids16f, _bwd64_before_f)


def test_the_sixth_check_figures():
    """The entries of tree c6895bf against the plans before them: the 256-lane forward at 2 rows a program (171-263
    values to 56 rows an SM, 211-263 to 72) 112 cases 0.998-1.10x, geomean 1.05 (171 values at 56 rows an SM a tie,
    0.998-1.01x; even rows 1.015-1.10x); the 64-lane softmax backward at 16 rows and 2 warps (61-71 values at 32 rows
    an SM, 61-69 to 40, 49-53 at 56) 24 cases 1.004-1.10x, geomean 1.04. Past the bounds: 2 rows still 1.01-1.04x on
    211-263 values at 73 rows an SM (not measured further) and 0.995-1.04x on 171-202 at 57; 16 rows 0.97-0.99x on 61-69
    values at 41 rows an SM and on 49-53 at 57, 0.99-1.01x on 71 at 33-40."""
    fwd = {case: g for case, g in _gains(CHECK_F["fwd"], "m4w1").items()
           if case[1] <= (72 if case[2] >= 211 else 56) * 132 and case[2] >= 171}
    assert len(fwd) == 112 and 0.997 < min(fwd.values()) and max(fwd.values()) < 1.1
    assert 1.045 < statistics.geometric_mean(fwd.values()) < 1.05
    assert min(g for case, g in fwd.items() if case[2] > 171) > 1.007
    assert min(g for case, g in fwd.items() if case[2] % 2 == 0) > 1.015
    bwd = {case: g for case, g in _gains(CHECK_F["bwd"], "m8w1").items()
           if case[2] >= 61 and case[1] <= (32 if case[2] == 71 else 40) * 132 or case[2] <= 53 and case[1] == 56 * 132}
    assert len(bwd) == 24 and 1.003 < min(bwd.values()) and max(bwd.values()) < 1.1
    assert 1.035 < statistics.geometric_mean(bwd.values()) < 1.045
    assert _span_of(CHECK_F["fwd"], "m2w1", lambda per_sm, N, op, _: per_sm == 73 and N >= 211) == (24, 1.01, 1.04)
    assert _span_of(CHECK_F["fwd"], "m2w1", lambda per_sm, N, op, _: per_sm == 57 and N < 211) == (20, 1.0, 1.04)
    assert _span_of(CHECK_F["bwd"], "m16w2", lambda per_sm, N, op, _: per_sm == 41 and 61 <= N <= 69) == (6, 0.97, 0.99)
    assert _span_of(CHECK_F["bwd"], "m16w2", lambda per_sm, N, op, _: per_sm == 57 and N <= 53) == (4, 0.97, 0.98)
    assert _span_of(CHECK_F["bwd"], "m16w2", lambda per_sm, N, op, _: 32 < per_sm <= 40 and N == 71) == (4, 0.99, 1.01)


BEHIND_G = ("probe_rows_h100_peel16_256_fwd_bounds2.log", "probe_rows_h100_peel16_256_fwd_bounds3.log")


def test_the_logs_behind_the_80_row_entry_ran_the_plans_before_it():
    """The two logs measured past the sixth check's 256-lane forward bounds (tree 5d675e5) ran the plans before the
    entry they led to (forced_plans.before_grids16g): ROWS_PEEL16's 4 rows and 1 warp on 211-263 values at 80-112 rows
    an SM and on 171-209 at 64 and 72."""
    _assert_ran(BEHIND_G[0], 72, before_grids16g, before_grids16g, "m4w1p")
    _assert_ran(BEHIND_G[1], 40, before_grids16g, before_grids16g, "m4w1p")


def test_the_figures_behind_the_80_row_entry():
    """2 rows a program against 4 in the 256-lane forward: on 221-263 values at 80 rows an SM 1.00-1.05x (20 cases,
    geomean 1.02: taken), 211 there 0.99-1.00x; at 96 and 112 rows an SM 0.95-1.04x (252 and 254 1.00-1.04x, the rest
    0.95-1.01x: not taken); on 171-209 values 0.98-1.01x at 64 rows an SM and 0.94-1.01x at 72 (not taken)."""
    fwd, mid = BEHIND_G
    assert _span_of(fwd, "m2w1", lambda per_sm, N, op, _: per_sm == 80 and N >= 221) == (20, 1.0, 1.05)
    gains = [g for case, g in _gains(fwd, "m2w1").items() if case[1] == 80 * 132 and case[2] >= 221]
    assert 1.015 < statistics.geometric_mean(1 / g for g in gains) < 1.025
    assert _span_of(fwd, "m2w1", lambda per_sm, N, op, _: per_sm == 80 and N == 211) == (4, 0.99, 1.0)
    assert _span_of(fwd, "m2w1", lambda per_sm, N, op, _: per_sm > 80 and N in (252, 254)) == (16, 1.0, 1.04)
    assert _span_of(fwd, "m2w1", lambda per_sm, N, op, _: per_sm > 80 and N not in (252, 254)) == (32, 0.95, 1.01)
    assert _span_of(mid, "m2w1", lambda per_sm, N, op, _: per_sm == 64) == (20, 0.98, 1.01)
    assert _span_of(mid, "m2w1", lambda per_sm, N, op, _: per_sm == 72) == (20, 0.94, 1.01)


CHECK_G = "probe_rows_h100_grids16g_fwd_check.log"


def test_the_seventh_check_ran_todays_plans():
    """probe_rows_h100_grids16g_fwd_check.log's "dispatch" is today's plan: 2 rows a program on 221-263 values at 73-80
    rows an SM, ROWS_PEEL16's 4 rows on 215 and 219 and at 81 rows an SM, which is every case's plan before the entry
    (forced_plans.before_grids16g)."""
    _assert_ran(CHECK_G, 128, None, before_grids16g, "m4w1p")
    tilings = rows_logs.tilings(CHECK_G, gpu="h100")
    assert {case for case, tiling in tilings.items() if tiling == "m2w1p"} == {
        case for case in tilings if case[2] >= 221 and case[1] <= 80 * 132}


def test_the_seventh_check_figures():
    """The 80-row entry (tree 5700ef2) against the plan before it (4 rows): 221-263 values at 73, 76 and 80 rows an SM,
    72 cases 0.995-1.05x, geomean 1.02 (bf16 221 at 80 rows an SM 0.995-0.998x). Past its bounds 2 rows still ran
    0.99-1.05x on 215-263 values at 81 rows an SM and 1.01-1.03x on 219 at 73-76 (0.99-1.01x on 215): left."""
    taken = {case: g for case, g in _gains(CHECK_G, "m4w1").items() if case[2] >= 221 and case[1] <= 80 * 132}
    assert len(taken) == 72 and 0.994 < min(taken.values()) and max(taken.values()) < 1.05
    assert 1.018 < statistics.geometric_mean(taken.values()) < 1.024
    assert _span_of(CHECK_G, "m2w1", lambda per_sm, N, op, _: per_sm == 81) == (32, 0.99, 1.05)
    assert _span_of(CHECK_G, "m2w1", lambda per_sm, N, op, _: per_sm < 80 and N == 219) == (8, 1.01, 1.03)
    assert _span_of(CHECK_G, "m2w1", lambda per_sm, N, op, _: per_sm <= 80 and N == 215) == (12, 0.99, 1.01)


BOUNDS_G = "probe_rows_h100_peel16_256_fwd_bounds4.log"


def test_past_the_80_row_entry_ran_todays_plans():
    """probe_rows_h100_peel16_256_fwd_bounds4.log (tree 78cfbdd) ran today's plan, ROWS_PEEL16's 4 rows and 1 warp,
    on every case: 211-263 values at 84 and 88 rows an SM, 211-219 at 76 and 80, past both the 72-row and the 80-row
    entries of the 256-lane forward."""
    _assert_ran(BOUNDS_G, 80, None, before_grids16g, "m4w1p")


def test_past_the_80_row_entry_figures():
    """2 rows a program against 4 past the 80-row entry: 221-263 values at 84 and 88 rows an SM 0.99-1.05x (221 and
    263 0.99-1.01x, 241 and 252 1.00-1.05x), 211 and 215 0.97-1.00x, 219 0.99-1.02x; and below it, 211-215 values at
    76 and 80 rows an SM 0.98-1.01x, 219 1.00-1.02x. Mixed, within 2% but for the even 252: no bound moves."""
    def span(keep):
        return _span_of(BOUNDS_G, "m2w1", keep)
    assert span(lambda per_sm, N, op, _: per_sm > 80 and N >= 221) == (32, 0.99, 1.05)
    assert span(lambda per_sm, N, op, _: per_sm > 80 and N in (221, 263)) == (16, 0.99, 1.01)
    assert span(lambda per_sm, N, op, _: per_sm > 80 and N in (241, 252)) == (16, 1.0, 1.05)
    assert span(lambda per_sm, N, op, _: per_sm > 80 and N <= 215) == (16, 0.97, 1.0)
    assert span(lambda per_sm, N, op, _: per_sm > 80 and N == 219) == (8, 0.99, 1.02)
    assert span(lambda per_sm, N, op, _: per_sm <= 80 and N <= 215) == (16, 0.98, 1.01)
    assert span(lambda per_sm, N, op, _: per_sm <= 80 and N == 219) == (8, 1.0, 1.02)


BEHIND_H = "probe_rows_h100_peel16_bwd_log_bounds.log"


def _before_h(case) -> str:
    """The probe's name of the plan before before_grids16h's entries for a log_softmax backward case: ROWS_PEEL16's 8
    rows and 1 warp in 64 lanes (up to 71 values), 4 rows in 256."""
    return "m8w1" if case[2] <= 71 else "m4w1"


def test_the_log_behind_the_log_softmax_backward_entries_ran_the_plans_before_them():
    """probe_rows_h100_peel16_bwd_log_bounds.log (tree cfe0238), the log_softmax backward past ROWS_PEEL16_GRIDS'
    bounds, ran the plans before the entries it led to (forced_plans.before_grids16h): ROWS_PEEL16's tiling, 8 rows and
    1 warp on 41-71 values (64 lanes) at 88-128 rows an SM and 4 rows on 137-263 (256 lanes) at 56-96."""
    _assert_ran(BEHIND_H, 64, before_grids16h, before_grids16h, lambda case: _before_h(case) + "p")


def test_the_figures_behind_the_log_softmax_backward_entries():
    """Half ROWS_PEEL16's rows a program past the bounds: in 64 lanes 4 rows on 55 and 71 values at 88 rows an SM
    1.02-1.06x (geomean 1.04; 41: 0.97x), at 96-128 rows an SM 0.86-1.04x; in 256 lanes 2 rows on 171-221 values at 56
    rows an SM 1.00-1.05x (geomean 1.02; 137 0.98-1.01x, 263 0.99-1.01x), at 64-96 0.93-1.03x (171-221 at 64:
    1.00-1.03x, not taken)."""
    assert _span_of(BEHIND_H, "m4w1", lambda per_sm, N, op, _: 55 <= N <= 71 and per_sm == 88) == (4, 1.02, 1.06)
    assert _span_of(BEHIND_H, "m4w1", lambda per_sm, N, op, _: N == 41 and per_sm == 88) == (2, 0.97, 0.97)
    assert _span_of(BEHIND_H, "m4w1", lambda per_sm, N, op, _: N <= 71 and per_sm > 88) == (18, 0.86, 1.04)
    assert _span_of(BEHIND_H, "m2w1", lambda per_sm, N, op, _: 171 <= N <= 221 and per_sm == 56) == (6, 1.0, 1.05)
    assert _span_of(BEHIND_H, "m2w1", lambda per_sm, N, op, _: N in (137, 263) and per_sm == 56) == (4, 0.98, 1.01)
    assert _span_of(BEHIND_H, "m2w1", lambda per_sm, N, op, _: N > 71 and per_sm > 56) == (30, 0.93, 1.03)
    gains = [cells["m4w1" if N <= 71 else "m2w1"] / cells["dispatch"]
             for (_, M, N, _, _), cells in rows_logs.gbps(BEHIND_H, gpu="h100").items()
             if M == 88 * 132 and N >= 55 or M == 56 * 132 and 171 <= N <= 221]
    assert len(gains) == 10 and 1.03 < statistics.geometric_mean(gains) < 1.04


CHECK_H = "probe_rows_h100_grids16h_bwd_check.log"


def test_the_eighth_check_ran_todays_plans():
    """probe_rows_h100_grids16h_bwd_check.log (tree 131c799) ran today's plan: the log_softmax backward at 4 rows and
    1 warp on 55-71 values (64 lanes) to 88 rows an SM, at 2 rows on 171-221 (256 lanes) to 56, and ROWS_PEEL16's
    tiling on the rest (53, 161 and 231 values, 89 and 57 rows an SM), every case's plan before the entries
    (forced_plans.before_grids16h)."""
    _assert_ran(CHECK_H, 66, None, before_grids16h, lambda case: _before_h(case) + "p")
    tilings = rows_logs.tilings(CHECK_H, gpu="h100")
    assert {case for case, tiling in tilings.items() if tiling == "m4w1p" and case[2] <= 71} == {
        case for case in tilings if 55 <= case[2] <= 71 and case[1] <= 88 * 132}
    assert {case for case, tiling in tilings.items() if tiling == "m2w1p"} == {
        case for case in tilings if 171 <= case[2] <= 221 and case[1] <= 56 * 132}


def test_the_eighth_check_figures():
    """The entries (tree 131c799) against the plans before them: 32 cases 1.002-1.10x, geomean 1.04; in 64 lanes (55-71
    values at 81 and 88 rows an SM) 1.03-1.10x, geomean 1.06, in 256 (171-221 at 49 and 56) 1.002-1.05x, geomean 1.02.
    Past the bounds the new tilings still ran ahead: 4 rows 1.01-1.08x at 89 rows an SM and on 53 values 1.01-1.04x,
    2 rows 1.00-1.03x at 57 rows an SM and on 161 and 231 values (not taken yet)."""
    taken = {case: cells["dispatch"] / cells[_before_h(case)]
             for case, cells in rows_logs.gbps(CHECK_H, gpu="h100").items() if _before_h(case) in cells}
    assert len(taken) == 32 and 1.001 < min(taken.values()) and max(taken.values()) < 1.1
    assert 1.035 < statistics.geometric_mean(taken.values()) < 1.045
    for lanes64, least, most, mean in ((True, 1.025, 1.1, 1.056), (False, 1.001, 1.05, 1.024)):
        gains = [g for case, g in taken.items() if (case[2] <= 71) == lanes64]
        assert len(gains) == 16 and least < min(gains) and max(gains) < most
        assert round(statistics.geometric_mean(gains), 3) == mean
    assert _span_of(CHECK_H, "m4w1", lambda per_sm, N, op, _: N <= 71 and per_sm == 89) == (10, 1.01, 1.08)
    assert _span_of(CHECK_H, "m4w1", lambda per_sm, N, op, _: N == 53) == (6, 1.01, 1.04)
    assert _span_of(CHECK_H, "m2w1", lambda per_sm, N, op, _: N > 71 and per_sm == 57) == (12, 1.0, 1.03)
    assert _span_of(CHECK_H, "m2w1", lambda per_sm, N, op, _: N in (161, 231)) == (12, 1.0, 1.03)


def test_no_benchmark_plan_changes():
    """None of the benchmark's plans (bench/results/h100/results.json's cases, float64 aside, on the H100's and the
    H200's keys) change with ROWS_PEEL16_GRIDS, so its committed figures stand for today's plans."""
    with open(os.path.join(rows_logs.RESULTS, os.pardir, "h100", "results.json")) as f:
        cases = {(r["dtype"], r["op"], r["direction"], r["M"], r["N"]) for r in json.load(f)["results"]
                 if r["dtype"] != "float64"}
    assert len(cases) == 328

    def plans():
        return {(case, gpu): targets.plan(*case, 132, gpu) for case in cases for gpu in ("", "H200")}

    now = plans()
    with patched_within(dispatch, before_grids16):
        assert plans() == now
