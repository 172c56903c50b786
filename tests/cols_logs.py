"""The H200's logs of the columns probes (bench/probe_cols_wide.py, bench/probe_cols_meta.py: lines
"dtype BxNxT direction ... | GB/s label value | label value ..."), read for the tests that hold dispatch's columns
constants to them (test_bench_cols16.py, test_bench_cols_warps.py, test_bench_cols16_ftz.py)."""

import functools
import os
import re

RESULTS = os.path.join(os.path.dirname(__file__), os.pardir, "bench", "results", "h200")


@functools.cache
def gbps(name: str) -> dict:
    """{(dtype, B, N, T, direction): {label: GB/s}} of the log `name` under bench/results/h200/; a label without the
    chunk count ("c9") probe_cols_wide.py appends to its variants'; a cell marked ERR (a result off the softmax, as
    a plan cut short: probe_cols_meta.py's first=K) keeps its GB/s."""
    cases = {}
    with open(os.path.join(RESULTS, name)) as f:
        for line in f:
            m = re.match(r"(\w+) (\d+)x(\d+)x(\d+) (fwd|bwd) .*?\| GB/s (.*)$", line)
            if m:
                cells = (re.fullmatch(r"\s*(\S+?)(?:c\d+)?\s+(\d+)(?: ERR)?\s*", c) for c in m[6].split("|"))
                cases[(m[1], int(m[2]), int(m[3]), int(m[4]), m[5])] = {c[1]: int(c[2]) for c in cells}
    return cases
