"""dispatch.GPU_CONSTANTS["H200"]'s ROWS_PEEL16 and ROWS16_FWD_FTZ_WARPS_MIN_PER_SM against the measurements they were
read from (no GPU): bench/results/h200/probe_rows_peel16.log, _scan.log, _scan2.log and _small.log ("dispatch": the plan
before the rule, unpeeled; "peel": dispatch's plan with force_peel=True; "peel_mBwW": that re-tiled), the check after it
(probe_rows_peel16_check.log, 1038c43: "dispatch" the rule's plan, "np": unpeeled, "np_mBwW": unpeeled at B rows and W
warps, "p": force_peel=True), and probe_rows_ftz_warps_small*.log (bf16 5200 and 7000 values on 64-4224 rows: "dispatch"
then at 4 warps, "w16" the rules' 16)."""

import math

import rows_logs
from multisoftmax import dispatch

BEFORE = ("probe_rows_peel16.log", "probe_rows_peel16_scan.log", "probe_rows_peel16_scan2.log",
          "probe_rows_peel16_small.log")


def _plan(dtype, M, N, op, direction, force_peel=None):
    """The H200's one launch for a case of the logs (with dispatch's force_peel)."""
    log, make = op == "log_softmax", (dispatch.plan_forward if direction == "fwd" else dispatch.plan_backward)
    args = (M, N, N, N, dtype, log, 132) if direction == "fwd" else (M, N, N, N, N, dtype, log, 132)
    (one,) = make(*args, force_peel=force_peel, gpu="H200")
    return one


def test_peeled_where_it_ran_ahead():
    """Every case of the four logs that the H200 now peels ran ahead of the plan before it at the tiling it now
    takes (98 cases, 1.002-1.71x, geomean 1.16x: the odd rows); the cases it leaves unpeeled are the 1024-lane
    forwards (641-1001, 0.86-1.07x), the odd backwards of fewer than 768 values in 1024 lanes (641, 701: 0.96-1.07x),
    the even rows' backwards and their forwards past 256 lanes (300-1996; in 512 lanes ROWS_TILINGS' 4 rows at 2
    warps, test_512_lanes_at_two_warps) and the small grids (264, 1056 rows)."""
    gains, kept = [], []
    for name in BEFORE:
        for (dtype, M, N, op, direction), gbps in rows_logs.gbps(name).items():
            now = _plan(dtype, M, N, op, direction)
            if now.kwargs["PEEL"]:
                tiled = f"peel_m{now.kwargs['BLOCK_M']}w{now.kwargs['num_warps']}"
                label = "peel" if now == _plan(dtype, M, N, op, direction, True) else tiled
                assert gbps[label] > gbps["dispatch"], (name, dtype, M, N, op, direction)
                gains.append(gbps[label] / gbps["dispatch"])
            else:
                best = max(v for k, v in gbps.items() if k.startswith("peel"))
                kept.append((M, N, direction, best / gbps["dispatch"]))
    assert len(gains) == 98 and 1.15 < math.exp(sum(map(math.log, gains)) / len(gains)) < 1.2 and max(gains) < 1.72
    for M, N, direction, best in kept:
        lanes = 1 << (N // 8 * 8 - 1).bit_length()
        if M < 4224:
            continue  # small grids: 0.81-1.18x
        if N % 2 == 0:
            assert direction == "bwd" or lanes > 256, (M, N, direction)
        elif direction == "fwd":
            assert lanes == 1024 and best < 1.07, (M, N, direction, best)
        else:
            assert N in (641, 701) and best < 1.07, (M, N, direction, best)


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
        if N % 2:
            lanes = 1 << (N // 8 * 8 - 1).bit_length()
            if now.kwargs["PEEL"]:
                same = {256: "np_m8w2", 512: "np_m4w2", 1024: "np_m1w2", 2048: "np_m1w2"}[lanes]
                assert gbps["dispatch"] > 1.01 * max(gbps["np"], gbps[same]), (N, op, direction)
        elif direction == "fwd":
            assert now.kwargs["PEEL"] == (N < 256) and 1.02 < gbps["p"] / gbps["dispatch"] < 1.43, (N, op)
        else:
            assert not now.kwargs["PEEL"], (N, op)


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
