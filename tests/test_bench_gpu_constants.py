"""dispatch.GPU_CONSTANTS["H200"] against the measurements it was read from (no GPU):
bench/results/h200/probe_coop_stagger.log and probe_coop_pipe_rule.log (bench/probe_coop_tilings.py).

Each case there times, on the H200, the launch that dispatch planned before these constants ("dispatch": the
H100's constants) beside a variant: the cooperative forward's ramp of COOP_STAGGER_CYCLES=7200 cycles, the
pipelined backward at 4096 values x 4 warps x 3 programs an SM (float32 softmax) or x 5 (16-bit softmax).
Where dispatch now plans the variant for the H200, the variant must not have run slower than the H100's plan
beyond the rounds' spread; where it keeps the H100's plan, the variant must not have run 2% ahead; and the
ramp must gain over all its cases and over the few long rows, where it was taken for.
"""

import functools
import os
import re
import statistics
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir, "bench"))
import targets  # noqa: E402
from multisoftmax import dispatch  # noqa: E402

RESULTS = os.path.join(os.path.dirname(__file__), os.pardir, "bench", "results", "h200")
ITEMSIZE = {"float32": 4, "bfloat16": 2, "float16": 2}
SPREAD = 0.01  # the two rounds of a variant ran up to ~1% apart on the shortest grids


@functools.cache
def _cases(name: str) -> dict:
    """{(dtype, M, N, op, direction): {variant: us}} of a probe_coop_tilings log (the faster round)."""
    cases, case = {}, None
    with open(os.path.join(RESULTS, name)) as f:
        for line in f:
            m = re.match(r"(\w+)\s+(\d+)x(\d+) (\w+)\s+(fwd|bwd) dispatch:", line)
            if m:
                case = (m[1], int(m[2]), int(m[3]), m[4], m[5])
                cases[case] = {}
                continue
            m = re.match(r"\s+(\S+)\s+([\d.]+)/\s*([\d.]+) us", line)
            if m and case:
                cases[case][m[1]] = min(float(m[2]), float(m[3]))
    return cases


def _h200(case):
    dtype, M, N, op, direction = case
    return targets.plan(dtype, op, direction, M, N, 132, "H200")[-1]


def test_logs_have_the_cases():
    stagger, pipe = _cases("probe_coop_stagger.log"), _cases("probe_coop_pipe_rule.log")
    assert len(stagger) == 72 and all(set(v) == {"dispatch", "STAGGER=7200"} for v in stagger.values())
    assert len(pipe) == 22 and {c[0] for c in pipe} == set(ITEMSIZE)


@pytest.mark.parametrize("case", sorted(_cases("probe_coop_stagger.log")), ids=lambda c: "-".join(map(str, c)))
def test_stagger_case(case):
    """Every case of the log ramps on the H200 by its COOP_STAGGER_CYCLES, and none ran slower for it
    beyond the rounds' spread."""
    us = _cases("probe_coop_stagger.log")[case]
    kw = _h200(case).kwargs
    assert kw["STAGGER"] == dispatch.GPU_CONSTANTS["H200"]["COOP_STAGGER_CYCLES"] == 7200, case
    assert us["STAGGER=7200"] <= us["dispatch"] * (1 + SPREAD), (case, us)


def test_stagger_gains():
    """The ramp gains over all cases (geomean) and over few long rows (< 200 MiB a tensor) by >= 1%."""
    cases = _cases("probe_coop_stagger.log")
    ratio = {c: us["dispatch"] / us["STAGGER=7200"] for c, us in cases.items()}
    few = [r for c, r in ratio.items() if c[1] * c[2] * ITEMSIZE[c[0]] < 200 * 2**20]
    assert statistics.geometric_mean(ratio.values()) > 1 and len(few) == 14
    assert statistics.geometric_mean(few) > 1.01


@pytest.mark.parametrize("case", sorted(_cases("probe_coop_pipe_rule.log")), ids=lambda c: "-".join(map(str, c)))
def test_pipe_case(case):
    """The H200's plan for each case: its PIPE_PLANS' pipelined backward where that ran no slower than the H100's
    plan (beyond the spread), the H100's plan where the variant was not 2% ahead."""
    us = _cases("probe_coop_pipe_rule.log")[case]
    dtype, M, N, op, direction = case
    chunk, warps, per_sm = dispatch.GPU_CONSTANTS["H200"]["PIPE_PLANS"][ITEMSIZE[dtype], op == "log_softmax"]
    variant = f"p{chunk}w{warps}x{per_sm}"
    launch = _h200(case)
    rules = targets.plan(dtype, op, direction, M, N, 132, "")[-1]
    if variant not in us:  # a variant the probe could not make (peeled rows): the H100's plan
        assert launch == rules, case
    elif launch != rules:
        assert launch.kernel == "softmax_bwd_pipe" and (launch.kwargs["CHUNK_N"], launch.kwargs["num_warps"]) == (
            chunk, warps) and launch.grid == (min(M * -(-N // chunk), per_sm * 132),), case
        assert us[variant] <= us["dispatch"] * (1 + SPREAD), (case, us)
    else:
        assert us[variant] > us["dispatch"] / 1.02, (case, "ran 2% ahead, not taken", us)
