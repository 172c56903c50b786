"""dispatch.ROWS_TILINGS against the measurements it was read from (bench/results/h200/probe_rows.log; no GPU).

The log's blocks 1-3 time, on the H200, each case's launch by the H100's rules ("dispatch" then) beside the
same kernel at other tilings (mBwW: B rows a program at W warps). For every case measured there, a tiling
dispatch now plans for the H200 in place of the rules' must be one that ran: not slower than the rules' beyond
the rounds' spread and within 1% of the fastest tiling measured; a case it leaves to the rules must have had no
tiling 2% ahead of theirs; and each entry must have run ahead of the rules in a case it covers. An entry that
reloads (RELOAD) is held to its own log by tests/test_bench_gpu_constants.py.
"""

import functools
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir, "bench"))
import rows_logs  # noqa: E402
import targets  # noqa: E402
from forced_plans import BEFORE_FTZ, BEFORE_PEEL16, FWD_TAILS, before_tables16_within  # noqa: E402
from multisoftmax import dispatch  # noqa: E402

ITEMSIZE = {"float32": 4, "bfloat16": 2, "float16": 2}
SPREAD = 0.005  # the rounds of one variant ran within ~0.3% of each other


@functools.cache
def _cases() -> dict:
    """{(dtype, M, N, op, direction): {variant: GB/s}} of the log's blocks 1-3 ("dispatch": the rules'), the peers
    (torch, compile, liger) left out; the cases with variants (not float32 781 of block 1)."""
    cases = {case: {v: g for v, g in cells.items() if v == "dispatch" or v.startswith("m")}
             for case, cells in rows_logs.gbps("probe_rows.log", until="## 4.").items()}
    return {case: cells for case, cells in cases.items() if len(cells) > 1}


def _tiling(plan) -> str:
    kw = plan[0].kwargs
    return f"m{kw['BLOCK_M']}w{kw['num_warps']}"


def _plans(dtype, M, N, op, direction):
    """The rules' plan and the H200's for a case, on the H200's 132 SMs (bench/targets.py's `plan`), the H200's as
    this log ran it: without the forward's longer tails (forced_plans.FWD_TAILS, held to their own log by
    tests/test_bench_gpu_constants.py), without FTZ (forced_plans.BEFORE_FTZ: tests/test_bench_rows_ftz.py) and without
    the unaligned rows' peel (forced_plans.BEFORE_PEEL16: tests/test_bench_peel16.py); the rules as they were then
    (forced_plans.before_tables16_within)."""
    with before_tables16_within(dispatch, FWD_TAILS + BEFORE_FTZ + BEFORE_PEEL16):
        return [targets.plan(dtype, op, direction, M, N, 132, gpu) for gpu in ("", "H200")]


def _reloads(case) -> bool:
    """Whether the H200's plan of `case` reloads (RELOAD, ROWS_TILINGS' third value): its tiling was taken with
    RELOAD, whose measurements are probe_rows_reload*.log's (tests/test_bench_gpu_constants.py holds it there)."""
    return bool(_plans(*case)[1][0].kwargs.get("RELOAD"))


def test_log_has_the_cases():
    cases = _cases()
    assert len(cases) == 63, len(cases)
    assert {c[4] for c in cases} == {"fwd", "bwd"} and {c[0] for c in cases} == set(ITEMSIZE)


def test_reloading_cases():
    """The cases whose H200 plan reloads, left to tests/test_bench_gpu_constants.py: the 16-bit softmax
    backward of 16384 values alone (bf16 in this log)."""
    assert [c for c in _cases() if _reloads(c)] == [("bfloat16", 8192, 16384, "softmax", "bwd")]


@pytest.mark.parametrize("case", sorted(c for c in _cases() if not _reloads(c)),
                         ids=lambda c: f"{c[0]}-{c[2]}-{c[3]}-{c[4]}")
def test_tuned_tiling_is_one_that_ran_fast(case):
    gbps = _cases()[case]
    rules_plan, tuned_plan = _plans(*case)
    rules, tuned = gbps["dispatch"], gbps["dispatch" if tuned_plan == rules_plan else _tiling(tuned_plan)]
    best = max(gbps.values())
    if tuned_plan == rules_plan:  # no entry: no tiling ran 2% ahead
        assert best < rules * 1.02, (case, "a tiling 2% ahead and no entry", gbps)
    else:
        assert tuned >= rules * (1 - SPREAD) and tuned >= best * 0.99, (case, _tiling(tuned_plan), gbps)


def test_each_entry_gains_where_measured():
    """An entry replaces the rules' tiling where, in some case it covers, it ran >= 0.7% ahead (the bf16
    2048 log_softmax forward, +0.7%, takes its softmax's +2.8%); entries no case covers are the other op's."""
    cases = _cases()
    gains = {}
    for case, gbps in cases.items():
        dtype, M, N, op, direction = case
        rules_plan, tuned_plan = _plans(*case)
        if tuned_plan != rules_plan and not _reloads(case):
            kw = tuned_plan[0].kwargs
            lanes = kw["BLOCK_N"] + (0 if kw["PEEL"] else kw["TAIL_N"])
            key = (direction == "fwd", ITEMSIZE[dtype], op == "log_softmax", lanes)
            gains.setdefault(key, []).append(gbps[_tiling(tuned_plan)] / gbps["dispatch"])
    assert gains and all(max(g) >= 1.007 for g in gains.values()), gains
    assert sum(max(g) >= 1.02 for g in gains.values()) >= len(gains) - 2, gains


def _short_tilings(dtype, M, N, op, direction):
    """(the rules' tiling, the H200's) of a case of the short full rows' logs, as probe labels (mBwW)."""
    return [_tiling(targets.plan(dtype, op, direction, M, N, 132, gpu)) for gpu in ("", "H200")]


def test_short_full_rows_scan():
    """ROWS_TILINGS' short full rows (8-64 values, float32 both ways, the 16-bit backward of 8 and 16) against
    probe_rows_short_aligned.log (bf16 and float32 on 65536 and 1048576 rows; "dispatch" the rules' tiling, mBwW the
    same kernel re-tiled): each entry's tiling ran 0.99-1.25x of the rules' in the cases it covers (40), and 2% ahead
    in one of them at least; of the cases left to the rules (24: the 16-bit forwards, the 16-bit backwards of 32 and
    64) none had a tiling more than 4% ahead."""
    gains, left = {}, []
    for (dtype, M, N, op, direction), gbps in rows_logs.gbps("probe_rows_short_aligned.log").items():
        rules, tuned = _short_tilings(dtype, M, N, op, direction)
        assert gbps["dispatch"] == gbps.get(rules, gbps["dispatch"]), (dtype, M, N)  # "dispatch" ran the rules' tiling
        if tuned == rules:
            assert dtype != "float32" and (direction == "fwd" or N >= 32), (dtype, M, N, op, direction)
            left.append(max(gbps.values()) / gbps["dispatch"])
            continue
        gains.setdefault((direction, dtype, N), []).append(gbps[tuned] / gbps["dispatch"])
    assert sum(map(len, gains.values())) == 40 and len(left) == 24
    assert all(min(g) > 0.99 and max(g) >= 1.02 for g in gains.values()), gains
    assert max(max(g) for g in gains.values()) < 1.26 and max(left) < 1.045


def test_short_full_rows_check():
    """probe_rows_short_aligned_check.log, with the entries in dispatch ("dispatch"; mBwW the rules' tilings among
    others), float32, bf16 and float16 on 8192, 65536 and 1048576 rows: the 72 cases they cover ran 0.998-1.60x of
    the rules' tiling (float32 8192 x 8 backward 290 -> 463 GB/s, 65536 x 8 backward 1,696 -> 2,101; on 1048576 rows
    0.998-1.058x); the 72 others plan as the rules (no rules' label beside "dispatch")."""
    gains, same = [], 0
    for (dtype, M, N, op, direction), gbps in rows_logs.gbps("probe_rows_short_aligned_check.log").items():
        rules, tuned = _short_tilings(dtype, M, N, op, direction)
        assert (rules in gbps) == (tuned != rules), (dtype, M, N, op, direction)  # the probe skips dispatch's own
        if tuned == rules:
            same += 1
            continue
        gains.append((gbps["dispatch"] / gbps[rules], M))
    assert len(gains) == 72 and same == 72
    assert min(g for g, _ in gains) > 0.997 and max(g for g, _ in gains) < 1.6
    assert max(g for g, M in gains if M == 1048576) < 1.06
