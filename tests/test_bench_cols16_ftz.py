"""dispatch.GPU_CONSTANTS["H200"]'s COLS16_FTZ and COLS16_FWD_STATS_N against the measurements they were read from
(no GPU): bench/results/h200/probe_cols_ftz.log (the plans as they were, "dispatch", beside FTZ on: "ftz"),
probe_cols_ftz_norm.log (FTZ on beside the stats launch at 16 positions a step: "n16") and the check on other shapes
at 4b62f62, probe_cols_ftz_check.log (the plans the H200 takes now, "dispatch", beside those before: "before", and
the tile's stats at 32 positions a step: "n32"); the one-tile forward's, probe_cols_one_tile_ftz.log (the plans
without it, "dispatch", beside FTZ on: "ftz")."""

import cols_logs
from multisoftmax import dispatch

H200 = dispatch.GPU_CONSTANTS["H200"]


def _fwd(dtype, B, N, T, gpu="H200"):
    return dispatch.plan_columns_forward(B, N, T, N * T, T, N * T, T, dtype, False, 132, gpu=gpu)


def test_ftz_ran_ahead_on_every_split_plan():
    """FTZ ran each of the 18 16-bit split plans probed (9 shapes, bf16 and float16) faster than without it, bf16
    by 8% at least; each is a plan the H200 now runs with FTZ."""
    assert H200["COLS16_FTZ"] and not dispatch.COLS16_FTZ
    cases = cols_logs.gbps("probe_cols_ftz.log")
    assert len(cases) == 18
    for (dtype, B, N, T, _), gbps in cases.items():
        assert gbps["ftz"] > gbps["dispatch"] * (1.08 if dtype == "bfloat16" else 1.02), (dtype, B, N, T)
        stats = _fwd(dtype, B, N, T)[0]
        assert (stats.kernel, stats.kwargs["FTZ"]) == ("softmax_fwd_stats_cols", True)


def test_stats_step_ran_ahead_in_the_tile():
    """The stats launch at COLS16_FWD_STATS_N = 16 positions a step ran ahead of the tile's 32 on each of the 12
    cases in COLS16_FWD_SPLIT_TILE (BLOCK_T 128); the 6 in the rules' tile (BLOCK_T 64) keep their step."""
    assert H200["COLS16_FWD_STATS_N"] == 16 and dispatch.COLS16_FWD_STATS_N is None
    cases = cols_logs.gbps("probe_cols_ftz_norm.log")
    tile = [case for case in cases if _fwd(*case[:4])[0].kwargs["BLOCK_T"] == H200["COLS16_FWD_SPLIT_TILE"][0]]
    assert len(cases) == 18 and len(tile) == 12
    for case, gbps in cases.items():
        stats, norm = _fwd(*case[:4])
        if case in tile:
            assert gbps["n16"] > gbps["ftz"] and (stats.kwargs["BLOCK_N"], norm.kwargs["BLOCK_N"]) == (16, 32), case
        else:
            assert stats.kwargs["BLOCK_N"] == norm.kwargs["BLOCK_N"] == 64, case


def test_check_on_other_shapes():
    """On shapes not read from (probe_cols_ftz_check.log), the H200's plans now ran ahead of those before on 17 of
    18 cases (the loss: float16 1 x 65536 x 64, a 16 MB tensor in 64 programs, 494 against 534 GB/s), 4.9-15% on
    each of at least 64 MB, and ahead of the tile's stats at 32 positions a step on its 8; the loops among them."""
    cases = cols_logs.gbps("probe_cols_ftz_check.log")
    assert len(cases) == 18
    behind = [case for case, gbps in cases.items() if gbps["dispatch"] <= gbps["before"]]
    assert behind == [("float16", 1, 65536, 64, "fwd")]
    loops = 0
    for (dtype, B, N, T, _), gbps in cases.items():
        plan = _fwd(dtype, B, N, T)
        assert plan[0].kwargs["FTZ"]
        loops += plan[0].kernel == "softmax_fwd_cols"
        if B * N * T * 2 >= 64 * 2 ** 20:
            assert gbps["dispatch"] > 1.045 * gbps["before"], (dtype, B, N, T)
        if "n32" in gbps:
            assert gbps["dispatch"] > gbps["n32"] and plan[0].kwargs["BLOCK_N"] == 16, (dtype, B, N, T)
    assert loops == 4


def test_one_tile_ftz_ran_ahead():
    """The one-tile forward's exps by ex2.approx.ftz (probe_cols_one_tile_ftz.log: the plans as they were,
    "dispatch", beside FTZ on, "ftz") ran no case behind, 18 of 18 at 1.00-1.18x, 5% ahead or more on 14 (the four
    others: 1024 x 32 x 2048 within 0.4%, 65536 x 256 x 4 within 2.3%); each is a
    one-tile plan the H200 now runs with FTZ."""
    cases = cols_logs.gbps("probe_cols_one_tile_ftz.log")
    assert len(cases) == 18
    ahead = 0
    for (dtype, B, N, T, _), gbps in cases.items():
        assert gbps["dispatch"] <= gbps["ftz"] < 1.19 * gbps["dispatch"], (dtype, B, N, T)
        ahead += gbps["ftz"] >= 1.05 * gbps["dispatch"]
        (one,) = _fwd(dtype, B, N, T)
        assert (one.kernel, one.kwargs["ONE_TILE"], one.kwargs["FTZ"]) == ("softmax_fwd_cols", True, True)
    assert ahead == 14


def test_one_tile_ftz_check_on_other_shapes():
    """On one-tile shapes not read from (probe_cols_one_tile_ftz_check.log, 0ee0866: the plans the H200 takes now,
    "dispatch", beside them without FTZ, "before"), 12 of 12 ran ahead, 1.03-1.27x; each plan one tile with FTZ."""
    cases = cols_logs.gbps("probe_cols_one_tile_ftz_check.log")
    assert len(cases) == 12
    for (dtype, B, N, T, _), gbps in cases.items():
        assert 1.03 * gbps["before"] < gbps["dispatch"] < 1.27 * gbps["before"], (dtype, B, N, T)
        (one,) = _fwd(dtype, B, N, T)
        assert (one.kernel, one.kwargs["ONE_TILE"], one.kwargs["FTZ"]) == ("softmax_fwd_cols", True, True)
