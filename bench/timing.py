"""How the benchmark times one call: GPU time, not launch latency, on a cold L2.

torch side
  * >= SMALL_BYTES moved per call: `triton.testing.do_bench(..., return_mode="median")`, which
    clears the L2 before every call and brackets each call with CUDA events;
  * smaller calls: a CUDA graph capturing GRAPH_CALLS or more calls that rotate over enough
    copies of the inputs that their total exceeds twice the L2 (so no call finds its input
    in L2), replayed and timed with CUDA events, divided by the number of calls. Launch
    latency then does not hide the GPU time. Impls that cannot be captured (the Numba
    reference) fall back to do_bench.
JAX side (JAX cannot run inside a torch graph)
  * `call_us`: back-to-back calls of the jitted function, one block_until_ready at the end,
    median of repeats: what a user's jitted call costs, host included;
  * `median_us`: for calls moving >= JAX_CHAIN_BYTES that is call_us (the GPU is the bottleneck);
    below, one jitted function making k calls on rotating input copies, each call made to
    wait for the previous one with `lax.optimization_barrier` (so XLA can neither merge nor
    reorder them), run back to back and divided by k: GPU time plus XLA's own launch cost.
CPU (--smoke): time.perf_counter medians, no graphs.
"""

from __future__ import annotations

import math
import statistics
import time

# torch: below this many bytes a call, time a CUDA graph. A call moving 64-192 MB takes 20-70
# us on the H100, no more than a Python launch (30-80 us when the host is busy), so do_bench's
# per-call events would time the host there: graphs up to 256 MB.
SMALL_BYTES = 256 * 2**20
JAX_CHAIN_BYTES = 400 * 2**20  # JAX: below this, time a chain of calls inside one jit
GRAPH_CALLS = 20
MAX_COPIES = 256
DO_BENCH = dict(warmup=5, rep=25)


def _copies(nbytes: int, l2_bytes: int, cap: int) -> int:
    """Input copies so that copies x bytes-a-call exceeds twice the L2 (at most cap)."""
    return max(1, min(cap, math.ceil(2 * l2_bytes / max(1, nbytes))))


def cpu_time_us(fn, reps: int = 5) -> float:
    fn()
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1e6


def torch_time(fn, args: tuple, nbytes: int, *, cuda: bool, graphable: bool, l2_bytes: int):
    """(median_us, method) for fn(*args) on torch tensors."""
    if not cuda:
        return cpu_time_us(lambda: fn(*args)), "perf_counter"
    import triton.testing

    if graphable and nbytes < SMALL_BYTES:
        try:
            return _graph_time(fn, args, nbytes, l2_bytes)
        except Exception as e:  # noqa: BLE001  (not capturable: fall back to events)
            import torch
            torch.cuda.synchronize()
            method = f"do_bench (graph failed: {type(e).__name__})"
    else:
        method = "do_bench"
    ms = triton.testing.do_bench(lambda: fn(*args), return_mode="median", **DO_BENCH)
    return ms * 1e3, method


def _graph_time(fn, args, nbytes, l2_bytes, replays: int = 10):
    import torch

    n_copies = _copies(nbytes, l2_bytes, MAX_COPIES)
    sets = [args] + [tuple(a.clone() for a in args) for _ in range(n_copies - 1)]
    calls = max(GRAPH_CALLS, n_copies)
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
    with torch.cuda.graph(graph, stream=side):
        for i in range(calls):
            outs.append(fn(*sets[i % n_copies]))
    graph.replay()
    torch.cuda.synchronize()
    times = []
    for _ in range(replays):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e3 / calls)
    del graph, outs, sets
    return statistics.median(times), f"cuda graph of {calls} calls over {n_copies} input copies"


def jax_time(f, args: tuple, nbytes: int, *, gpu: bool, l2_bytes: int, repeats: int = 5):
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
    if nbytes >= JAX_CHAIN_BYTES:
        return out, call_us, call_us, "back-to-back jitted calls"

    if gpu:  # at most 64 copies (compile time): under ~0.8 MB a call the chain is partly L2-warm
        n_copies = _copies(nbytes, l2_bytes, 64)
        k = max(8, n_copies)
    else:
        n_copies, k = 2, 4

    def fresh(tree):  # a copy of every array in args, so each call reads its own buffers
        return jax.tree.map(lambda a: jnp.copy(a) if isinstance(a, jax.Array) else a, tree)

    sets = (args,) + tuple(fresh(args) for _ in range(n_copies - 1))

    def chain(sets):
        outs, prev = [], None
        for i in range(k):
            a = sets[i % n_copies]
            if prev is not None:  # call i waits for call i-1: no fusing, no reordering
                prev, a = jax.lax.optimization_barrier((prev, a))
            prev = f(*a)
            outs.append(prev)
        return tuple(outs)

    jchain = jax.jit(chain)
    jax.block_until_ready(jchain(sets))
    runs = max(2, min(20, int(5000 / (k * est_us)))) if gpu else 1
    chain_us = per_call(lambda s: jchain(s), (sets,), runs) / k
    del sets
    return out, chain_us, call_us, f"jit chain of {k} calls over {n_copies} input copies"


def torch_host_us(fn, args, calls: int, cuda: bool) -> float:
    """Wall-clock microseconds a call over `calls` back-to-back calls, synchronized once."""
    import torch

    for _ in range(10):
        fn(*args)
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    sync()
    t = time.perf_counter()
    for _ in range(calls):
        fn(*args)
    sync()
    return (time.perf_counter() - t) / calls * 1e6


def jax_host_us(jf, args, calls: int) -> float:
    import jax

    for _ in range(10):
        r = jf(*args)
    jax.block_until_ready(r)
    t = time.perf_counter()
    for _ in range(calls):
        r = jf(*args)
    jax.block_until_ready(r)
    return (time.perf_counter() - t) / calls * 1e6


def copy_bandwidth(cuda: bool) -> float:
    """GB/s of b.copy_(a) on 1 GiB fp32 (64 MiB on the CPU), bytes read + written."""
    import torch

    n = (2**30 if cuda else 2**26) // 4
    a = torch.randn(n, device="cuda" if cuda else "cpu")
    b = torch.empty_like(a)
    if cuda:
        import triton.testing
        us = triton.testing.do_bench(lambda: b.copy_(a), warmup=25, rep=100, return_mode="median") * 1e3
    else:
        us = cpu_time_us(lambda: b.copy_(a))
    return 2 * n * 4 / us / 1e3  # a and b are freed on return
