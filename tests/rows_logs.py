"""The H200's logs of bench/probe_rows.py (lines "dtype MxN op direction dispatch mBwW | label rR us/us/us us GB/s |
..."), read for the tests that hold dispatch's rows constants to them (test_bench_rows_tilings.py,
test_bench_rows_ftz.py)."""

import functools
import os
import re

RESULTS = os.path.join(os.path.dirname(__file__), os.pardir, "bench", "results", "h200")


@functools.cache
def gbps(name: str, until: str = "") -> dict:
    """{(dtype, M, N, op, direction): {label: GB/s}} of the log `name` under bench/results/h200/, every variant and
    peer of a case; with `until`, only the lines before the first that starts with it."""
    cases = {}
    with open(os.path.join(RESULTS, name)) as f:
        for line in f:
            if until and line.startswith(until):
                break
            m = re.match(r"(\w+)\s+(\d+)x(\d+)\s+(\w+)\s+(fwd|bwd) dispatch \S+ \| (.*)", line)
            if m:
                dtype, M, N, op, direction, rest = m.groups()
                cases[dtype, int(M), int(N), op, direction] = {
                    v: int(g) for v, g in re.findall(r"(?:^| \| )(\S+)(?: r\d+)? [\d./]+ us (\d+)", rest)}
    return cases
