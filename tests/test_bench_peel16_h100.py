"""The 16-bit short-row tables (ROWS_PEEL16 and its kin, ROWS_FWD16_SAME_LANES), every GPU's since 2026-12-06, against
the H100 measurements that made them so (no GPU): bench/results/h100/probe_rows_h100_peel16.log ("dispatch": the H100's
rules then, "h200": the case planned with the H200's tables, FTZ off) and the check, probe_rows_h100_peel16_before_*.log
and _after_*.log (the same probe from the tree before and from the tree that took the tables); and the re-tilings
measured at af55121 (GRIDS), taken since in ROWS_PEEL16_GRIDS: every log here ran the plans before it
(forced_plans.before_grids16)."""

import os
import statistics
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir, "bench"))
import rows_logs  # noqa: E402
import targets  # noqa: E402
from forced_plans import before_grids16, before_tables16, patched_within, without_ftz  # noqa: E402
from multisoftmax import dispatch  # noqa: E402

CHECKS = ("f16", "odd32", "small")


@pytest.fixture(autouse=True)
def _before_grids16():
    """The H100's plans as these logs ran them: before ROWS_PEEL16_GRIDS."""
    with patched_within(dispatch, before_grids16):
        yield


def _plan(case, gpu=""):
    """dispatch's plan of a log's case (contiguous, 132 SMs: targets.plan) for the GPU of key `gpu` ("": the H100's)."""
    dtype, M, N, op, direction = case
    return targets.plan(dtype, op, direction, M, N, 132, gpu)


def _rules_tilings(cases) -> dict:
    """{case: tiling} of the rules' plans before the tables (forced_plans.before_tables16)."""
    with patched_within(dispatch, before_tables16):
        return {case: rows_logs.tiling_of(_plan(case)) for case in cases}


def test_the_h100_plans_what_the_probe_ran_as_h200():
    """Every case of the probe: the H100 now plans the launch the probe ran as "h200" (the H200's plan, FTZ off), and
    the probe's "dispatch" was the rules' plan before the tables."""
    cases = rows_logs.gbps("probe_rows_h100_peel16.log", gpu="h100")
    assert len(cases) == 212
    rules = _rules_tilings(cases)
    for case in cases:
        assert without_ftz(_plan(case)) == without_ftz(_plan(case, "H200")), case
        assert rows_logs.tilings("probe_rows_h100_peel16.log", gpu="h100")[case] == rules[case], case


def test_the_tables_ran_ahead_on_the_h100():
    """The probe: 0.89-3.32x, geomean 1.32; behind by more than 1.5% only the softmax forward of 65536 x 25 and x 31
    (and 31's log_softmax), 4224 x 77's log_softmax backward and 1056 x 1201's softmax forward."""
    cases = rows_logs.gbps("probe_rows_h100_peel16.log", gpu="h100")
    gains = {case: cells["h200"] / cells["dispatch"] for case, cells in cases.items()}
    assert 1.30 < statistics.geometric_mean(gains.values()) < 1.34
    assert 0.89 < min(gains.values()) and max(gains.values()) < 3.4
    assert sorted((c[1], c[2], c[3], c[4]) for c, g in gains.items() if g < 0.985) == [
        (1056, 1201, "softmax", "fwd"), (4224, 77, "log_softmax", "bwd"), (65536, 25, "softmax", "fwd"),
        (65536, 31, "log_softmax", "fwd"), (65536, 31, "softmax", "fwd")]


def test_the_check_ran_the_plans_before_and_after():
    """The check's logs: "before" ran the rules' plan, "after" the plan the H100 makes now, on 172 cases: 0.89-2.83x,
    geomean 1.42; behind by more than 2% only the forward of odd 25-31 values on 65536 rows."""
    gains = {}
    for label in CHECKS:
        before = rows_logs.gbps(f"probe_rows_h100_peel16_before_{label}.log", gpu="h100")
        after = rows_logs.gbps(f"probe_rows_h100_peel16_after_{label}.log", gpu="h100")
        assert before.keys() == after.keys()
        rules = _rules_tilings(before)
        for case in before:
            assert rows_logs.tilings(f"probe_rows_h100_peel16_before_{label}.log", gpu="h100")[case] == rules[case]
            after_tiling = rows_logs.tilings(f"probe_rows_h100_peel16_after_{label}.log", gpu="h100")[case]
            assert after_tiling == rows_logs.tiling_of(_plan(case)), case
            gains[case] = after[case]["dispatch"] / before[case]["dispatch"]
    assert len(gains) == 172 and 1.40 < statistics.geometric_mean(gains.values()) < 1.44
    assert 0.88 < min(gains.values()) and max(gains.values()) < 2.9
    behind = {(c[1], c[2], c[4]) for c, g in gains.items() if g < 0.98}
    assert behind and all(M == 65536 and N in (25, 27, 29, 31) and d == "fwd" for M, N, d in behind), behind


GRIDS = ("probe_rows_h100_odd16_fwd_grids.log", "probe_rows_h100_odd16_fwd_grids2.log", "probe_rows_h100_77_bwd.log",
         "probe_rows_h100_bwd16_128_grids.log")


def test_the_grid_logs_ran_the_plans_before_the_table():
    """The re-tilings measured at af55121 (bench/DISPATCH.md, ROWS_PEEL16_GRIDS; taken since): each log's "dispatch" is
    the plan the H100 made then, before ROWS_PEEL16_GRIDS (this module's fixture), so its ratios are against it."""
    for name in GRIDS:
        cases = rows_logs.tilings(name, gpu="h100")
        assert cases, name
        for case, tiling in cases.items():
            assert tiling == rows_logs.tiling_of(_plan(case)), (name, case)


def test_the_grid_logs_figures():
    """DISPATCH.md's figures: peeled at 16 rows and 2 warps, the 32-lane forward of 31-39 values ran 0.92-1.20x of the
    plan and that of 25-29 values 1.00-1.20x up to 131072 rows; the 128-lane backward at 8 rows and 2 warps 0.97-1.35x,
    its softmax never behind."""
    fwd = _records(GRIDS[:2])
    late = [g["m16w2"] / g["dispatch"] for (_, M, N, *_), g in fwd if N >= 31]
    early = [g["m16w2"] / g["dispatch"] for (_, M, N, *_), g in fwd if 25 <= N <= 29 and M <= 131072]
    assert len(fwd) == 130
    assert 0.915 <= min(late) and max(late) <= 1.205 and 0.995 <= min(early) and max(early) <= 1.205
    m8w2 = [(case, g["m8w2"] / g["dispatch"]) for case, g in _records(GRIDS[2:]) if case[2] >= 77 and case[1] >= 4224]
    assert len(m8w2) == 40
    assert 0.965 <= min(r for _, r in m8w2) and max(r for _, r in m8w2) <= 1.355
    assert min(r for case, r in m8w2 if case[3] == "softmax") >= 0.995


def _records(names) -> list:
    """[(case, cells)] of every line of the logs `names`, a case that two logs share once from each (a dict merged
    across them would keep one log's and check the other's not)."""
    return [record for name in names for record in rows_logs.gbps(name, gpu="h100").items()]
