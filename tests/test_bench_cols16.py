"""dispatch.GPU_CONSTANTS["H200"]'s COLS16_BWD_COOP_MAX_CHUNKS, COLS16_BWD_SPLIT_TILE, COLS16_FWD_SPLIT_TILE and
COLS16_FWD_SPLIT_CHUNKS against the measurements they were read from (no GPU):
bench/results/h200/probe_cols_wide_bwd16.log and probe_cols_wide_fwd16.log (bench/probe_cols_wide.py: the 16-bit
columns backward and forward as the H100's rules plan them, "dispatch" then, beside split plans in wider runs) and
probe_cols16_bwd_rule.log, probe_cols16_rule.log (the plans the H200 takes now, "dispatch", beside the rules' where
those differ).
"""

import dataclasses

import cols_logs
from forced_plans import without_ftz
from multisoftmax import dispatch

H200 = dispatch.GPU_CONSTANTS["H200"]
TILE = H200["COLS16_BWD_SPLIT_TILE"]
VARIANT = f"{TILE[0]}x{TILE[1]}w{TILE[2]}p{dispatch.COLS_SPLIT_PROGRAMS_PER_SM}"  # the tile as the probe names it
FWD_TILE = H200["COLS16_FWD_SPLIT_TILE"]
FWD_VARIANT = f"{FWD_TILE[0]}x{FWD_TILE[1]}w{FWD_TILE[2]}p{dispatch.COLS_SPLIT_PROGRAMS_PER_SM}"


def _parsed(name: str, direction: str = "bwd") -> dict:
    """{(dtype, B, N, T): {label: GB/s}} of a probe_cols_wide.py log's lines of `direction` (a variant's label
    without its chunk count)."""
    return {case[:4]: cells for case, cells in cols_logs.gbps(name).items() if case[4] == direction}


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


def _fwd(dtype, B, N, T, gpu=""):
    """The forward's plan as these logs knew it: no FTZ (COLS16_FTZ) and the stats launch at the norm launch's step
    (COLS16_FWD_STATS_N), both later than the logs (test_bench_cols16_ftz.py holds them to theirs)."""
    plan = without_ftz(dispatch.plan_columns_forward(B, N, T, N * T, T, N * T, T, dtype, False, 132, gpu=gpu))
    if plan[0].kernel == "softmax_fwd_stats_cols":
        stats, norm = plan
        plan = (dataclasses.replace(stats, meta=tuple({**stats.kwargs, "BLOCK_N": norm.kwargs["BLOCK_N"]}.items())),
                norm)
    return plan


def _fwd_tile_chunks(B, N, T):
    return dispatch._columns_split(B, N, T, 2, 132, True, None, FWD_TILE)[3]


def test_the_forward_tile_runs_ahead_where_it_is_taken():
    """In the probe of the rules' forwards (all split plans), the forward's tile ran ahead of each rules' plan where
    it makes COLS16_FWD_SPLIT_CHUNKS chunks, which the H200 now gives it, and behind each other, which it leaves."""
    cases = _parsed("probe_cols_wide_fwd16.log", "fwd")
    assert len(cases) == 11
    lo, hi = H200["COLS16_FWD_SPLIT_CHUNKS"]
    taken = left = 0
    for (dtype, B, N, T), gbps in cases.items():
        chunks = _fwd_tile_chunks(B, N, T)
        if _fwd(dtype, B, N, T, "H200") != _fwd(dtype, B, N, T):
            assert lo <= chunks <= hi and gbps[FWD_VARIANT] > gbps["dispatch"], (dtype, B, N, T)
            taken += 1
        else:
            assert not lo <= chunks <= hi and gbps[FWD_VARIANT] < gbps["dispatch"], (dtype, B, N, T)
            left += 1
    assert taken == 9 and left == 2


def test_the_h200_s_forwards_ran_ahead_of_the_rules():
    """In the check at 771377b (probe_cols16_rule.log: "dispatch" the tile wherever the rules' split plan had 3-16
    chunks, beside the rules'), each forward the H200 gives the tile now (its plan of 5-17 chunks) ran ahead of the
    rules' plan, and each it took the tile for then and leaves now (32 chunks) ran behind or within 1.5% of it."""
    cases = _parsed("probe_cols16_rule.log", "fwd")
    assert len(cases) == 9
    lo, hi = H200["COLS16_FWD_SPLIT_CHUNKS"]
    taken = left = 0
    for (dtype, B, N, T), gbps in cases.items():
        if _fwd(dtype, B, N, T, "H200") != _fwd(dtype, B, N, T):
            assert "rules" in gbps and gbps["dispatch"] > gbps["rules"], (dtype, B, N, T)
            taken += 1
        elif "rules" in gbps:
            assert not lo <= _fwd_tile_chunks(B, N, T) <= hi and gbps["dispatch"] < 1.015 * gbps["rules"]
            left += 1
    assert taken == 5 and left == 3
