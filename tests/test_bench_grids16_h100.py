"""The H100's peeled 16-bit rows re-tiled by op and grid (dispatch.ROWS_PEEL16_GRIDS, 2026-12-07) against the checks
that ran it on the H100 (no GPU here): bench/results/h100/probe_rows_h100_grids16_{fwd,bwd}_check.log (the table's first
cut, tree cd142b2: "dispatch" its plan, m16w1 and m8w1 the plans before it), probe_rows_h100_grids16b_fwd_check.log (the
entries those figures added, tree 86ceaec: "dispatch" today's plan, m16w2 the first cut's) and
probe_rows_h100_grids16_fwd_bounds.log (past those entries' bounds, not taken). bench/DISPATCH.md's section
ROWS_PEEL16_GRIDS quotes these figures."""

import os
import statistics
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir, "bench"))
import rows_logs  # noqa: E402
import targets  # noqa: E402
from forced_plans import before_grids16, before_grids16b, patched_within  # noqa: E402
from multisoftmax import dispatch  # noqa: E402

CHECK = {"fwd": "probe_rows_h100_grids16_fwd_check.log", "bwd": "probe_rows_h100_grids16_bwd_check.log"}
CHECK_B = "probe_rows_h100_grids16b_fwd_check.log"
BOUNDS = "probe_rows_h100_grids16_fwd_bounds.log"


def _tilings(cases) -> dict:
    """{case: "mBwW[p]"} of the H100's plans (132 SMs, targets.plan) of a log's cases, as bench/probe_rows.py heads
    its lines."""
    out = {}
    for case in cases:
        dtype, M, N, op, direction = case
        (one,) = targets.plan(dtype, op, direction, M, N, 132)
        out[case] = f"m{one.kwargs['BLOCK_M']}w{one.kwargs['num_warps']}" + ("p" if one.kwargs["PEEL"] else "")
    return out


def _gains(name: str, before: str) -> dict:
    """{case: GB/s of "dispatch" / GB/s of `before`} of the log `name` (1 where dispatch ran `before`'s tiling, which
    the probe then leaves out)."""
    return {case: cells["dispatch"] / cells.get(before, cells["dispatch"])
            for case, cells in rows_logs.gbps(name, gpu="h100").items()}


@pytest.mark.parametrize("direction", ["fwd", "bwd"])
def test_the_check_ran_the_first_cut_against_the_plans_before(direction):
    """The check's "dispatch" is the table's first cut (forced_plans.before_grids16b), and the plan before the table
    (before_grids16) is ROWS_PEEL16's, 16 rows (forward) or 8 (backward) at 1 warp, peeled: the probe's m16w1 and m8w1,
    or dispatch itself where the table left the case alone."""
    cases = rows_logs.tilings(CHECK[direction], gpu="h100")
    assert len(cases) == {"fwd": 160, "bwd": 128}[direction]
    with patched_within(dispatch, before_grids16b):
        assert cases == _tilings(cases)
    with patched_within(dispatch, before_grids16):
        assert set(_tilings(cases).values()) == {{"fwd": "m16w1p", "bwd": "m8w1p"}[direction]}


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

    def span(keep):
        values = [r for (dtype, M, N, *_), r in ratio.items() if keep(dtype, M // 132, N)]
        return round(min(values), 2), round(max(values), 2)

    assert span(lambda dtype, per_sm, N: N == 31 and dtype == "bfloat16") == (0.98, 1.02)
    assert span(lambda dtype, per_sm, N: N == 31 and dtype == "float16") == (1.0, 1.07)
    assert span(lambda dtype, per_sm, N: N in (35, 37) and per_sm >= 640) == (0.93, 1.01)
    assert span(lambda dtype, per_sm, N: N == 39 and per_sm <= 768) == (0.98, 1.06)
