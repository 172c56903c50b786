"""bench/targets.py: issue 3's target figures from a results.json, on a synthetic one (no GPU)."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir, "bench"))
import targets  # noqa: E402


def _rec(impl, dtype, op, d, M, N, us, suite="sweep", itemsize=2):
    nbytes = (2 if d == "fwd" else 3) * M * N * itemsize
    return dict(suite=suite, dtype=dtype, op=op, direction=d, M=M, N=N, impl=impl, status="ok",
                median_us=us, GBps=nbytes / us / 1e3)


def _data(jax_us=200.0):
    big = [_rec("ms-torch", "bfloat16", "softmax", "fwd", 128, 1048576, 190.0),
           _rec("ms-jax", "bfloat16", "softmax", "fwd", 128, 1048576, jax_us),
           _rec("torch", "bfloat16", "softmax", "fwd", 128, 1048576, 400.0),
           _rec("xla", "bfloat16", "softmax", "fwd", 128, 1048576, 380.0)]
    rows = [_rec("ms-torch", "bfloat16", "softmax", "fwd", 65536, 2048, 180.0),
            _rec("ms-jax", "bfloat16", "softmax", "fwd", 65536, 2048, 182.0),
            _rec("torch", "bfloat16", "softmax", "fwd", 65536, 2048, 250.0),
            _rec("xla", "bfloat16", "softmax", "fwd", 65536, 2048, 181.0)]
    few = [_rec("ms-torch", "bfloat16", "softmax", "fwd", 8, 256000, 7.0, "llm"),
           _rec("ms-jax", "bfloat16", "softmax", "fwd", 8, 256000, 7.5, "llm")]
    return {"copy_GBps": 3000.0, "results": big + rows + few, "meta": {"device": {"sms": 132}}}


def test_targets_count_what_the_issue_asks():
    data = _data()
    # both shapes are 256 MiB a tensor: 128 x 1048576 at 190 us is 0.94 of copy, at 200 us 0.89
    assert targets.t1(data, "ms-torch")[:2] == (2, 2) and targets.t1(data, "ms-jax")[:2] == (1, 2)
    assert round(targets.t1(data, "ms-jax")[2][0][0], 3) == round(2 * 2**28 / 200e3 / 3000.0, 3)
    wins, n, behind, g = targets.t2(data, "ms-jax")
    assert (wins, n) == (1, 2) and behind == [(round(181 / 182, 4), "bfloat16", "softmax", "fwd", 65536, 2048, "xla")]
    assert abs(g["fwd/torch"] - ((400 / 200) * (250 / 182)) ** 0.5) < 1e-12
    assert targets.t2(data, "ms-torch", (512, 4096))[:2] == (1, 1)  # the 2048-value rows alone
    # 8 x 256000 bf16 forward: 1.2 * 8.192 MB / 3000 GB/s + 4 us = 7.277 us
    few = {f["impl"]: f["ok"] for f in targets.report.few_rows_check(data)}
    assert few == {"ms-torch": True, "ms-jax": False}
    within, n, tightest, over = targets.t3(data, "ms-jax")
    assert (within, n, tightest["us"], [f["us"] for f in over]) == (0, 1, 7.5, [7.5])
    assert targets.t3(data, "ms-torch")[:2] == (1, 1) and targets.t3(data, "xla") == (0, 0, None, [])


def test_filled_launches_against_a_run_before():
    # bf16 65536 x 2048: a rows launch that dispatch.fills_shared names; 128 x 1048576 is cooperative
    now, before = _data(), _data()
    for r in before["results"]:
        r["median_us"] *= 1.01
    got = targets.filled(now, before, "ms-torch")
    assert [key[4:6] for _, key in got] == [(65536, 2048)] and abs(got[0][0] - 1 / 1.01) < 1e-12


def test_plan_names_the_launch():
    # bf16 65536 x 2048 forward: one rows launch, a tile of rows; 128 x 1048576: more than one row a chunk
    assert targets.plan_name("bfloat16", "softmax", "fwd", 65536, 2048, 132).startswith("softmax_fwd_rows BLOCK_M=")
    assert "CHUNK_N=" in targets.plan_name("bfloat16", "softmax", "fwd", 128, 1048576, 132)
    assert targets.plan("float32", "log_softmax", "bwd", 64, 1024, 132)[0].kernel.startswith("softmax_bwd")
