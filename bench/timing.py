"""How the benchmark times one call: GPU time, not launch latency, on a cold L2, one clock
for torch and JAX alike.

The clock: the durations of the kernels, memsets and copies that CUPTI records on the GPU's
streams, read through the JAX profiler (`jax.profiler.trace`, then `jax.profiler.ProfileData`),
which records every CUDA launch in the process: torch's, Triton's, Numba's and XLA's. They
are summed over k calls and divided by k; median of REPEATS runs. Gaps between kernels are
not counted. The calls are issued so that the GPU has the next one queued (CUDA-graph
replay, one jitted chain) rather than idling between Python launches: an idle GPU
writes a small call's output back from L2 after its kernel has ended, which would flatter
slow-to-launch impls.

  * torch: a CUDA graph of k calls that rotate over enough copies of the inputs that their
    total exceeds twice the L2 (so no call finds its input in L2), replayed under the profiler.
    Calls moving >= SMALL_BYTES need no copy and no graph (launch time is a fraction of a
    percent of theirs): k = LARGE_CALLS calls back to back on the stream, as the copy ceiling
    and the JAX chains run. A graph there would give torch impls another launch than the JAX
    side and the ceiling, and one kernel notices: the cooperative forward of 1048576-value rows
    runs 1-1.5% shorter replayed from a graph (or launched on an idle GPU) than launched right
    after another kernel on the stream, where `2 * x` takes the same time every way
    (bench/results/h100/probe_overlap.log, probe_ticket.log). Impls that cannot be captured (the
    Numba reference) are called back to back at every size: their small-shape figures may be
    flattered as above. Every way keeps the calls' outputs until the run ends, as a graph and
    a jitted chain do.
  * JAX (it cannot run inside a torch graph): one jitted function making k calls on rotating
    input copies, each call made to wait for the previous one with `lax.optimization_barrier`
    (so XLA can neither merge nor reorder them); XLA's executor launches them back to back.
    At most JAX_MAX_COPIES copies (compile time), so calls under ~1.6 MB (M = 1 rows) find part
    of their input in L2. `call_us`: back-to-back calls of the plain jitted function, one
    block_until_ready at the end: what a user's jitted call costs, host included.
  * The copy ceiling, `b.copy_(a)` on 1 GiB fp32: LARGE_CALLS back-to-back copies, same clock.
Without the profiler (JAX missing) or without a GPU: CUDA events around the graph replays
(torch), do_bench, or wall clock; the method string says which. CPU (--smoke):
time.perf_counter medians, no graphs.
"""

from __future__ import annotations

import math
import statistics
import time

# calls moving fewer bytes rotate over input copies (> 2x L2) in GRAPH_CALLS or more calls;
# larger ones (>= 4x L2 already) take LARGE_CALLS calls on one copy.
SMALL_BYTES = 256 * 2**20
GRAPH_CALLS = 20
LARGE_CALLS = 5
MAX_COPIES = 256
JAX_MAX_COPIES = 64
# How a torch call's `method` string says it ran on the stream for its size (report.py reads it).
ON_STREAM = "on the stream: moves >="
REPEATS = 5
DO_BENCH = dict(warmup=5, rep=25)


def _copies(nbytes: int, l2_bytes: int, cap: int) -> int:
    """Input copies so that copies x bytes-a-call exceeds twice the L2 (at most cap)."""
    return max(1, min(cap, math.ceil(2 * l2_bytes / max(1, nbytes))))


def _calls(nbytes: int, n_copies: int) -> int:
    return LARGE_CALLS if nbytes >= SMALL_BYTES else max(GRAPH_CALLS, n_copies)


def _torch_sets(args: tuple, nbytes: int, l2_bytes: int):
    """(sets, n_copies, calls): `args` and clones of it to rotate over, and the calls a timing makes."""
    n_copies = _copies(nbytes, l2_bytes, MAX_COPIES)
    sets = [args] + [tuple(a.clone() for a in args) for _ in range(n_copies - 1)]
    return sets, n_copies, _calls(nbytes, n_copies)


def cpu_time_us(fn, reps: int = 5) -> float:
    fn()
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1e6


# --------------------------------------------------------------------------------------
# the clock
# --------------------------------------------------------------------------------------
def gpu_us_from_profile(profile, repeats: int, calls: int):
    """Median over `repeats` of the summed durations (us) of the events on the GPU streams of
    `profile` (a jax.profiler.ProfileData holding `repeats` equal runs of `calls` calls),
    divided by `calls`; None when it holds no GPU events."""
    events = sorted((ev.start_ns, ev.duration_ns) for plane in profile.planes if plane.name.startswith("/device:GPU")
                    for line in plane.lines if line.name.startswith("Stream") for ev in line.events)
    if not events:
        return None
    if len(events) % repeats:  # runs of unequal event counts: the mean over all of them
        return sum(d for _, d in events) / 1e3 / (repeats * calls)
    per = len(events) // repeats
    return statistics.median(sum(d for _, d in events[i * per:(i + 1) * per]) for i in range(repeats)) / 1e3 / calls


def profiled_gpu_us(run, calls: int, repeats: int = REPEATS):
    """GPU time (us a call) of `run()`, which makes `calls` calls and waits for them, by the
    module's clock; None where the profiler is missing or records no GPU work."""
    import glob
    import os
    import shutil
    import tempfile

    try:
        import jax
    except ImportError:
        return None
    run()
    folder = tempfile.mkdtemp(prefix="multisoftmax-trace-")
    try:
        with jax.profiler.trace(folder):
            for _ in range(repeats):
                run()
        paths = glob.glob(os.path.join(folder, "**", "*.xplane.pb"), recursive=True)
        if not paths:
            return None
        return gpu_us_from_profile(jax.profiler.ProfileData.from_file(paths[0]), repeats, calls)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


# --------------------------------------------------------------------------------------
# torch side
# --------------------------------------------------------------------------------------
def torch_time(fn, args: tuple, nbytes: int, *, cuda: bool, graphable: bool, l2_bytes: int):
    """(median_us, method) for fn(*args) on torch tensors."""
    if not cuda:
        return cpu_time_us(lambda: fn(*args)), "perf_counter"
    import torch

    if not graphable:
        why = "not capturable"
    elif nbytes >= SMALL_BYTES:
        why = f"{ON_STREAM} {SMALL_BYTES >> 20} MiB"
    else:
        try:
            return _graph_time(fn, args, nbytes, l2_bytes)
        except Exception as e:  # noqa: BLE001  (not capturable: fall back to plain calls)
            torch.cuda.synchronize()
            why = f"graph failed: {type(e).__name__}: {(str(e).splitlines() or [''])[0][:80]}"
    sets, n_copies, calls = _torch_sets(args, nbytes, l2_bytes)

    def run():
        outs = [fn(*sets[i % n_copies]) for i in range(calls)]  # kept, as a graph's and a chain's
        torch.cuda.synchronize()
        del outs

    us = profiled_gpu_us(run, calls)
    if us is not None:
        return us, f"profiler: {calls} back-to-back calls over {n_copies} input copies ({why})"
    import triton.testing
    ms = triton.testing.do_bench(lambda: fn(*args), return_mode="median", **DO_BENCH)
    return ms * 1e3, f"do_bench ({why}, no profiler)"


def graph_event_us(graph, calls: int, reps: int = 10) -> float:
    """us a call of the `calls` calls captured in `graph` (a torch.cuda.CUDAGraph), by CUDA
    events around each of `reps` replays, median: wall time on the GPU, gaps between kernels
    included."""
    import torch

    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e3 / calls)
    return statistics.median(times)


def _graph_time(fn, args, nbytes, l2_bytes):
    import torch

    sets, n_copies, calls = _torch_sets(args, nbytes, l2_bytes)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # compiles, autotunes and allocates outside the capture
        for a in sets[:2]:
            fn(*a)
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    outs = []
    # Captured on the stream it warmed up on: state kept per stream (multisoftmax's coop
    # counters, zeroed once per stream) then exists already, as a user's warm-up would make it.
    # thread_local: the default ("global") lets any thread's unsafe CUDA call end the capture,
    # and JAX's runtime threads make such calls. At fac7aa0 a capture (torch's bf16 65536 x 2048
    # backward) failed, XLA's stream was then in an error state and the run died, most likely so
    # (results/h100/run_softmax_fac7aa0_crash.log); with thread_local the rerun went through.
    with torch.cuda.graph(graph, stream=side, capture_error_mode="thread_local"):
        for i in range(calls):
            outs.append(fn(*sets[i % n_copies]))

    def run():
        graph.replay()
        torch.cuda.synchronize()

    us = profiled_gpu_us(run, calls)
    method = f"profiler: cuda graph of {calls} calls over {n_copies} input copies"
    if us is None:
        run()
        us, method = graph_event_us(graph, calls), f"events: cuda graph of {calls} calls over {n_copies} input copies"
    del outs, sets
    graph = None  # not del: run() above names it
    return us, method


def copy_bandwidth(cuda: bool) -> float:
    """GB/s of b.copy_(a) on 1 GiB fp32 (64 MiB on the CPU), bytes read + written, by the
    module's clock: LARGE_CALLS back-to-back copies, not a graph: captured in one, the copy ran
    at 2,287 GB/s on the H100 against 3,019 on the stream
    (bench/results/h100/clock_check_graph_copy.log, run_f4c822d/run_softmax.log)."""
    import torch

    n = (2**30 if cuda else 2**26) // 4
    a = torch.randn(n, device="cuda" if cuda else "cpu")
    b = torch.empty_like(a)
    if cuda:
        def run():
            for _ in range(LARGE_CALLS):
                b.copy_(a)
            torch.cuda.synchronize()

        us = profiled_gpu_us(run, LARGE_CALLS)
        if us is None:
            import triton.testing
            us = triton.testing.do_bench(lambda: b.copy_(a), warmup=25, rep=100, return_mode="median") * 1e3
    else:
        us = cpu_time_us(lambda: b.copy_(a))
    return 2 * n * 4 / us / 1e3  # a and b are freed on return


# --------------------------------------------------------------------------------------
# JAX side
# --------------------------------------------------------------------------------------
def jax_time(f, args: tuple, nbytes: int, *, gpu: bool, l2_bytes: int, repeats: int = REPEATS):
    """(output of one call, median_us, call_us, method) for jax.jit(f)(*args)."""
    import jax
    import jax.numpy as jnp

    jf = jax.jit(f)
    out = jax.block_until_ready(jf(*args))  # compile, and the output to check
    est_us = max(5.0, nbytes / 2.5e6)  # at ~2.5 TB/s
    n = max(20, min(200, int(10_000 / est_us))) if gpu else 3

    def per_call(g, a, calls):
        times = []
        for _ in range(repeats):
            t = time.perf_counter()
            for _ in range(calls):
                r = g(*a)
            jax.block_until_ready(r)
            times.append((time.perf_counter() - t) / calls)
        return statistics.median(times) * 1e6

    call_us = per_call(jf, args, n)
    if not gpu:
        return out, call_us, call_us, "back-to-back jitted calls, wall clock"

    n_copies = _copies(nbytes, l2_bytes, JAX_MAX_COPIES)
    k = _calls(nbytes, n_copies)

    def fresh(tree):  # a copy of every array in args, so each call reads its own buffers
        return jax.tree.map(lambda a: jnp.copy(a) if isinstance(a, jax.Array) else a, tree)

    sets = (args,) + tuple(fresh(args) for _ in range(n_copies - 1))

    jchain = jax.jit(lambda sets: call_chain(f, sets, k))
    us = profiled_gpu_us(lambda: jax.block_until_ready(jchain(sets)), k, repeats)
    sets = None  # not del: the lambda above names it
    if us is None:
        return out, call_us, call_us, "back-to-back jitted calls, wall clock (the profiler saw no GPU work)"
    return out, us, call_us, f"profiler: jitted chain of {k} calls over {n_copies} input copies"


def call_chain(f, sets, k: int) -> tuple:
    """The outputs of k calls f(*sets[i % len(sets)]), call i made to wait for call i-1 by
    `lax.optimization_barrier` (XLA can neither merge nor reorder them): the chain jax_time jits."""
    import jax

    outs, prev = [], None
    for i in range(k):
        a = sets[i % len(sets)]
        if prev is not None:  # call i waits for call i-1: no fusing, no reordering
            prev, a = jax.lax.optimization_barrier((prev, a))
        prev = f(*a)
        outs.append(prev)
    return tuple(outs)


def host_rounds(entries: dict, calls: int, rounds: int) -> dict:
    """Host time a call, in wall-clock microseconds, of each entry of `entries` ({name: (fn,
    wait)}: `fn()` makes one call, `wait(result)` waits for its GPU work): `rounds` rounds, each
    timing every entry in turn over `calls` back-to-back calls with one wait before and after,
    so that a busy spell of the host touches all entries alike rather than one. Returns {name:
    [microseconds of each round]}; callers report the best round (the host's cost when nothing
    else runs) and keep the rest."""
    out = {name: [] for name in entries}
    for _ in range(rounds):
        for name, (fn, wait) in entries.items():
            wait(fn())
            t = time.perf_counter()
            for _ in range(calls):
                r = fn()
            wait(r)
            out[name].append((time.perf_counter() - t) / calls * 1e6)
    return out
