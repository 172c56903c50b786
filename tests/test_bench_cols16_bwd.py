"""dispatch.GPU_CONSTANTS["H200"]'s COLS16_BWD_COOP_MAX_CHUNKS and COLS16_BWD_SPLIT_TILE against the measurements
they were read from (no GPU): bench/results/h200/probe_cols_wide_bwd16.log (bench/probe_cols_wide.py: the 16-bit
columns backward as the H100's rules plan it, "dispatch" then, beside split plans in wider runs) and
probe_cols16_bwd_rule.log (the plans the H200 takes now, "dispatch", beside the rules' where those differ).
"""

import functools
import os
import re

from multisoftmax import dispatch

RESULTS = os.path.join(os.path.dirname(__file__), os.pardir, "bench", "results", "h200")
TILE = dispatch.GPU_CONSTANTS["H200"]["COLS16_BWD_SPLIT_TILE"]
VARIANT = f"{TILE[0]}x{TILE[1]}w{TILE[2]}p{dispatch.COLS_SPLIT_PROGRAMS_PER_SM}"  # the tile as the probe names it


@functools.cache
def _parsed(name: str) -> dict:
    """{(dtype, B, N, T): {label: GB/s}} of a probe_cols_wide.py log's backward lines (a variant's label without
    its chunk count)."""
    cases = {}
    with open(os.path.join(RESULTS, name)) as f:
        for line in f:
            m = re.match(r"(\w+) (\d+)x(\d+)x(\d+) bwd \|.*\| GB/s (.*)$", line)
            if m:
                cells = (re.fullmatch(r"\s*(\S+?)(?:c\d+)?\s+(\d+)\s*", c) for c in m[5].split("|"))
                cases[(m[1], int(m[2]), int(m[3]), int(m[4]))] = {c[1]: int(c[2]) for c in cells}
    return cases


def _rules(dtype, B, N, T):
    return dispatch.plan_columns_backward(B, N, T, N * T, T, N * T, T, N * T, T, dtype, False, 132)


def _h200(dtype, B, N, T):
    return dispatch.plan_columns_backward(B, N, T, N * T, T, N * T, T, N * T, T, dtype, False, 132, gpu="H200")


def test_the_tile_runs_ahead_where_it_is_taken():
    """In the probe of the rules' plans, the tile's split plan (at COLS_SPLIT_PROGRAMS_PER_SM programs an SM) ran
    ahead of every plan the H200 now gives it, and behind every cooperative plan it leaves alone (16 chunks);
    both kinds of case are there."""
    cases = _parsed("probe_cols_wide_bwd16.log")
    assert len(cases) == 11
    taken = left = 0
    for (dtype, B, N, T), gbps in cases.items():
        rules, h200 = _rules(dtype, B, N, T), _h200(dtype, B, N, T)
        if h200 != rules:
            assert (h200[0].kwargs["BLOCK_T"], h200[0].kwargs["BLOCK_N"], h200[0].kwargs["num_warps"]) == TILE
            assert gbps[VARIANT] > gbps["dispatch"], (dtype, B, N, T)
            taken += 1
        else:
            assert rules[0].kernel == "softmax_bwd_coop_cols" and rules[0].scalars[-1] <= 16, (dtype, B, N, T)
            assert gbps["dispatch"] > 1.1 * gbps[VARIANT], (dtype, B, N, T)
            left += 1
    assert taken == 7 and left == 4


def test_the_h200_s_plans_ran_ahead_of_the_rules():
    """In the run of the H200's plans, each case whose plan the H200 changed ran ahead of the rules' plan, and its
    plan is the one dispatch makes now (the tile's: dispatch equal to the tile's variant within the rounds'
    spread)."""
    cases = _parsed("probe_cols16_bwd_rule.log")
    assert len(cases) == 10
    changed = 0
    for (dtype, B, N, T), gbps in cases.items():
        if "rules" in gbps:
            assert _h200(dtype, B, N, T) != _rules(dtype, B, N, T), (dtype, B, N, T)
            assert gbps["dispatch"] > 1.03 * gbps["rules"] and abs(gbps["dispatch"] / gbps[VARIANT] - 1) < 0.02
            changed += 1
        else:
            assert _h200(dtype, B, N, T) == _rules(dtype, B, N, T), (dtype, B, N, T)
    assert changed == 9
