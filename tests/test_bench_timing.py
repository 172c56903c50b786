"""The benchmark's JAX-side GPU clock (bench/timing.py): profiler events summed per call.

The GPU itself is exercised by the benchmark runs; here the arithmetic on a synthetic trace
(a jax.profiler.ProfileData built from text), the CPU fallback of `jax_time`, and the
rounds that time host overhead.
"""

import os
import sys

import pytest

jax = pytest.importorskip("jax")
sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir, "bench"))
import timing  # noqa: E402


def _profile(events_by_line: dict, gpu: str = "/device:GPU:0"):
    """A ProfileData with one GPU plane; events_by_line: line name -> [(name, start_ns, dur_ns)]."""
    names = sorted({n for evs in events_by_line.values() for n, _, _ in evs})
    ids = {n: i + 1 for i, n in enumerate(names)}
    lines = []
    for li, (line, evs) in enumerate(events_by_line.items(), 1):
        body = " ".join(f"events {{ metadata_id: {ids[n]} offset_ps: {s * 1000} duration_ps: {d * 1000} }}"
                        for n, s, d in evs)
        lines.append(f'lines {{ id: {li} name: "{line}" timestamp_ns: 0 {body} }}')
    meta = " ".join(f'event_metadata {{ key: {i} value {{ id: {i} name: "{n}" }} }}' for n, i in ids.items())
    text = (f'planes {{ id: 1 name: "{gpu}" {" ".join(lines)} {meta} }} '
            'planes { id: 2 name: "/host:CPU" lines { id: 1 name: "python" timestamp_ns: 0 '
            'events { metadata_id: 1 offset_ps: 0 duration_ps: 999000000 } } '
            'event_metadata { key: 1 value { id: 1 name: "host" } } }')
    return jax.profiler.ProfileData.from_text_proto(text)


def test_sums_kernels_and_memsets_per_call_median_over_repeats():
    # 3 repeats of 2 calls, each call a memset (1 us) then a kernel; gaps between are not GPU time.
    kernel_ns = [10_000, 12_000, 30_000, 11_000, 9_000, 13_000]  # repeat 2 is slow: the median drops it
    evs, t = [], 0
    for k in kernel_ns:
        evs += [("Memset", t, 1_000), ("softmax_fwd_rows", t + 5_000, k)]
        t += 100_000
    got = timing.gpu_us_from_profile(_profile({"Stream #7(Compute)": evs}), repeats=3, calls=2)
    per_repeat = [(2_000 + kernel_ns[2 * i] + kernel_ns[2 * i + 1]) / 1e3 / 2 for i in range(3)]
    assert got == pytest.approx(sorted(per_repeat)[1])
    assert got == pytest.approx(12.0)


def test_only_gpu_stream_lines_count():
    prof = _profile({"Stream #7(Compute)": [("k", 0, 4_000), ("k", 10_000, 4_000)],
                     "XLA Ops": [("fusion", 0, 50_000)]})
    assert timing.gpu_us_from_profile(prof, repeats=1, calls=2) == pytest.approx(4.0)


def test_no_gpu_events_is_none():
    assert timing.gpu_us_from_profile(_profile({"Stream #1": []}), repeats=2, calls=1) is None
    assert timing.gpu_us_from_profile(_profile({"Stream #1": [("k", 0, 1_000)]}, gpu="/device:TPU:0"),
                                      repeats=1, calls=1) is None


def test_unequal_repeats_fall_back_to_the_mean():
    prof = _profile({"Stream #1": [("k", 0, 2_000), ("k", 10_000, 4_000), ("k", 20_000, 6_000)]})
    assert timing.gpu_us_from_profile(prof, repeats=2, calls=1) == pytest.approx(6.0)


def test_jax_time_without_gpu_falls_back_to_wall_clock():
    import jax.numpy as jnp

    x = jnp.arange(12.0).reshape(3, 4)
    out, median_us, call_us, method = timing.jax_time(lambda a: a * 2, (x,), x.nbytes * 2, gpu=False,
                                                      l2_bytes=2**20)
    assert jnp.array_equal(out, x * 2)
    assert median_us == call_us > 0
    assert "wall clock" in method


def test_host_rounds_interleave_entries_and_wait_once_a_round():
    """Every round times each entry in turn (a busy spell of the host touches all alike), over
    `calls` calls with one wait before and after; the figures are microseconds a call."""
    order, waits = [], []

    def entry(name):
        return (lambda: order.append(name) or name), waits.append

    rounds = timing.host_rounds({"a": entry("a"), "b": entry("b")}, calls=3, rounds=2)
    assert order == ["a"] * 4 + ["b"] * 4 + ["a"] * 4 + ["b"] * 4  # a warm call, then 3 timed
    assert waits == ["a", "a", "b", "b", "a", "a", "b", "b"]
    assert set(rounds) == {"a", "b"} and all(len(v) == 2 and min(v) > 0 for v in rounds.values())


def test_torch_calls_of_256_mib_or_more_run_on_the_stream_smaller_ones_in_a_graph(monkeypatch):
    """Calls moving >= SMALL_BYTES: LARGE_CALLS calls back to back on the stream (as the copy
    ceiling and the JAX chains), outputs kept until the run ends; smaller calls: a CUDA graph."""
    torch = pytest.importorskip("torch")
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: None)
    monkeypatch.setattr(timing, "_graph_time", lambda *a: pytest.fail("a call of >= SMALL_BYTES was graphed"))
    made, alive = [], [0]

    class Out:  # counts the outputs alive
        def __init__(self):
            alive[0] += 1

        def __del__(self):
            alive[0] -= 1

    def profiled(run, calls):
        run()
        return 7.0 + len(made)

    def fn(a):
        made.append(a)
        assert alive[0] == len(made) - 1  # every earlier output still held
        return Out()

    monkeypatch.setattr(timing, "profiled_gpu_us", profiled)
    x = torch.ones(4)
    us, method = timing.torch_time(fn, (x,), timing.SMALL_BYTES, cuda=True, graphable=True, l2_bytes=50 * 2**20)
    assert len(made) == timing.LARGE_CALLS and all(a is x for a in made) and alive == [0]
    assert us == 7.0 + timing.LARGE_CALLS
    assert method == (f"profiler: {timing.LARGE_CALLS} back-to-back calls over 1 input copies "
                      f"(on the stream: moves >= {timing.SMALL_BYTES >> 20} MiB)")
    monkeypatch.setattr(timing, "_graph_time", lambda *a: (3.0, "graph"))
    assert timing.torch_time(fn, (x,), timing.SMALL_BYTES - 1, cuda=True, graphable=True,
                             l2_bytes=50 * 2**20) == (3.0, "graph")
