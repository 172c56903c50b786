"""The H200's (and H100's) logs of bench/probe_rows.py (lines "dtype MxN op direction dispatch mBwW | label rR
us/us/us us GB/s | ..."), read for the tests that hold dispatch's rows constants to them (test_bench_rows_tilings.py,
test_bench_rows_ftz.py, test_bench_peel16_h100.py)."""

import functools
import os
import re

from multisoftmax import dispatch

RESULTS = os.path.join(os.path.dirname(__file__), os.pardir, "bench", "results", "h200")


def _cases(name: str, until: str, gpu: str):
    """(case, dispatch's tiling, the rest of the line) of each case line of the log `name` under bench/results/`gpu`/,
    case = (dtype, M, N, op, direction); with `until`, only the lines before the first that starts with it."""
    with open(os.path.join(RESULTS, os.pardir, gpu, name)) as f:
        for line in f:
            if until and line.startswith(until):
                return
            m = re.match(r"(\w+)\s+(\d+)x(\d+)\s+(\w+)\s+(fwd|bwd) dispatch (\S+) \| (.*)", line)
            if m:
                dtype, M, N, op, direction, tiling, rest = m.groups()
                yield (dtype, int(M), int(N), op, direction), tiling, rest


@functools.cache
def gbps(name: str, until: str = "", gpu: str = "h200") -> dict:
    """{(dtype, M, N, op, direction): {label: GB/s}} of the log `name` under bench/results/h200/ (or `gpu`'s folder),
    every variant and peer of a case; with `until`, only the lines before the first that starts with it."""
    return {case: {v: int(g) for v, g in re.findall(r"(?:^| \| )(\S+)(?: r\d+)? [\d./]+ us (\d+)", rest)}
            for case, _, rest in _cases(name, until, gpu)}


@functools.cache
def tilings(name: str, gpu: str = "h200") -> dict:
    """{(dtype, M, N, op, direction): "mBwW[p][s]"} of the log `name`: the tiling its "dispatch" ran (BLOCK_M, warps,
    "p" PEEL, "s" fills_shared, as bench/probe_rows.py heads each line)."""
    return {case: tiling for case, tiling, _ in _cases(name, "", gpu)}


def tiling_of(plan) -> str:
    """A rows plan's tiling as bench/probe_rows.py heads its lines (and `tilings` reads them): mBwW, "p" where it peels,
    "s" where dispatch.fills_shared names it."""
    kw = plan[0].kwargs
    flags = ("p" if kw.get("PEEL") else "") + ("s" if dispatch.fills_shared(plan[0]) else "")
    return f"m{kw['BLOCK_M']}w{kw['num_warps']}{flags}"
