"""The 16-bit short-row tables (ROWS_PEEL16 and its kin, ROWS_FWD16_SAME_LANES), every GPU's since 2026-12-06, against
the H100 measurements that made them so (no GPU): bench/results/h100/probe_rows_h100_peel16.log ("dispatch": the H100's
rules then, "h200": the case planned with the H200's tables, FTZ off) and the check, probe_rows_h100_peel16_before_*.log
and _after_*.log (the same probe from the tree before and from the tree that took the tables)."""

import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir, "bench"))
import rows_logs  # noqa: E402
import targets  # noqa: E402
from forced_plans import before_tables16, patched_within, without_ftz  # noqa: E402
from multisoftmax import dispatch  # noqa: E402

CHECKS = ("f16", "odd32", "small")


def _plan(case, gpu=""):
    """dispatch's plan of a log's case (contiguous, 132 SMs: targets.plan) for the GPU of key `gpu` ("": the H100's)."""
    dtype, M, N, op, direction = case
    return targets.plan(dtype, op, direction, M, N, 132, gpu)


def _tiling(plan) -> str:
    """A plan's tiling as bench/probe_rows.py heads its lines: mBwW, "p" where peeled, "s" where it fills shared."""
    kw = plan[0].kwargs
    flags = ("p" if kw.get("PEEL") else "") + ("s" if dispatch.fills_shared(plan[0]) else "")
    return f"m{kw['BLOCK_M']}w{kw['num_warps']}{flags}"


def _rules_tilings(cases) -> dict:
    """{case: tiling} of the rules' plans before the tables (forced_plans.before_tables16)."""
    with patched_within(dispatch, before_tables16):
        return {case: _tiling(_plan(case)) for case in cases}


def _geomean(xs) -> float:
    return math.exp(sum(map(math.log, xs)) / len(xs))


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
    assert 1.30 < _geomean(gains.values()) < 1.34 and 0.89 < min(gains.values()) and max(gains.values()) < 3.4
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
            assert rows_logs.tilings(f"probe_rows_h100_peel16_after_{label}.log", gpu="h100")[case] == _tiling(
                _plan(case)), case
            gains[case] = after[case]["dispatch"] / before[case]["dispatch"]
    assert len(gains) == 172 and 1.40 < _geomean(gains.values()) < 1.44
    assert 0.88 < min(gains.values()) and max(gains.values()) < 2.9
    behind = {(c[1], c[2], c[4]) for c, g in gains.items() if g < 0.98}
    assert behind and all(M == 65536 and N in (25, 27, 29, 31) and d == "fwd" for M, N, d in behind), behind
