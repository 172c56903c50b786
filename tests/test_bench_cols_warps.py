"""dispatch.GPU_CONSTANTS["H200"]'s warps and tails for one-tile columns (COLS16_MIN_VALUES, COLS16_SHORT_MIN_VALUES,
COLS16_BWD_MIN_VALUES, COLS32_MIN_VALUES, COLS16_FWD_TAIL) against the measurements they were read from (no GPU):
bench/results/h200/probe_cols_narrow*.log (bench/probe_cols_meta.py: the plan of each case at 1, 2, 4 (8) warps,
"wN") and probe_cols_tail*.log (the forward in two tiles beside the one tile).
"""

import cols_logs
from multisoftmax import dispatch

WARPS_LOGS = ("probe_cols_narrow16.log", "probe_cols_narrow16_rule.log", "probe_cols_narrow16_check.log",
              "probe_cols_narrow16_short_bwd.log", "probe_cols_narrow32.log", "probe_cols_narrow32_check.log")


def _plan(dtype, B, N, T, direction, gpu):
    if direction == "fwd":
        return dispatch.plan_columns_forward(B, N, T, N * T, T, N * T, T, dtype, False, 132, gpu=gpu)
    return dispatch.plan_columns_backward(B, N, T, N * T, T, N * T, T, N * T, T, dtype, False, 132, gpu=gpu)


def test_the_h200_s_warps_against_the_rules_warps():
    """In every probe of warps, the warps the H200 now takes for a one-tile case (in the rules' tile) ran within 5% of
    the rules' warps or ahead, and 40 cases or more ran 10% ahead or more."""
    compared = ahead = 0
    for name in WARPS_LOGS:
        for (dtype, B, N, T, direction), gbps in cols_logs.gbps(name).items():
            (h200,), (rules,) = _plan(dtype, B, N, T, direction, "H200"), _plan(dtype, B, N, T, direction, "")
            if "TAIL_N" in h200.kwargs:
                continue  # two tiles: test_the_tails_run_ahead
            assert h200.kwargs["BLOCK_N"] == rules.kwargs["BLOCK_N"] and h200.kwargs["ONE_TILE"]
            now, then = gbps[f"w{h200.kwargs['num_warps']}"], gbps[f"w{rules.kwargs['num_warps']}"]
            assert now >= 0.95 * then, (name, dtype, B, N, T, direction, now, then)
            compared += 1
            ahead += now >= 1.1 * then
    assert compared >= 100 and ahead >= 40, (compared, ahead)


def test_the_tails_run_ahead():
    """probe_cols_tail_check.log (shapes the rule was not read from, but 8 x 150 x 65536): the forward in two tiles
    ("dispatch") ran 8% or more ahead of the one tile at the warps the H200 took before ("one") and of the rules'
    plan, on every case; probe_cols_tail.log: at the rule's warps (2) ahead of the one tile for the N it takes."""
    cases = cols_logs.gbps("probe_cols_tail_check.log")
    assert len(cases) == 12
    for (dtype, B, N, T, direction), gbps in cases.items():
        assert "TAIL_N" in _plan(dtype, B, N, T, direction, "H200")[0].kwargs
        assert gbps["dispatch"] >= 1.08 * max(gbps["one"], gbps["rules"]), (dtype, B, N, T)
    for (dtype, B, N, T, direction), gbps in cols_logs.gbps("probe_cols_tail.log").items():
        (h200,) = _plan(dtype, B, N, T, direction, "H200")
        if dtype == "float32" or N > 384:
            assert "TAIL_N" not in h200.kwargs, (dtype, N)
            continue
        assert h200.kwargs["num_warps"] == 2 and gbps["tailw2"] > 1.05 * gbps["dispatch"], (dtype, N)
