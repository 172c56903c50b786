"""Probe (GPU): do the kernels the benchmark times back to back overlap on the profiler's clock?

bench/timing.py's clock sums the durations CUPTI records for the GPU's kernels over a run of k
calls. Where a kernel's recorded start comes before the previous kernel's recorded end, that sum
counts the overlap twice. The cooperative forward of 1048576-value rows measures 1-1.5% longer
launched call by call on the stream (as the JAX adapter's jitted chain launches it) than
replayed from a CUDA graph (as the benchmark times torch impls; bench/results/h100/
probe_jax_ptxas.log), and torch's `2 * x` does not: this prints, for one timed run of each way
of launching, every GPU event (kernel name, start, duration, gap to the previous event's end),
the summed durations a call (the benchmark's figure) and the union of the events' intervals a
call (the same with any overlap counted once), for:
- bf16 128 x 1048576 softmax forward through the torch adapter: in a CUDA graph of 5 calls, on
  the stream (outputs dropped, as timing.torch_time does for impls it cannot capture), and on
  the stream with the outputs kept (as the graph and the JAX chain keep them);
- the JAX adapter's jitted chain of 5 calls (timing.jax_time);
- torch's `2 * x` in a graph and on the stream, and `b.copy_(a)` on 1 GiB float32 (the copy
  ceiling, timing.copy_bandwidth).

    python bench/probe_overlap.py
"""

from __future__ import annotations

import glob
import os
import shutil
import sys
import tempfile

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import torch  # noqa: E402

import multisoftmax.jax as mj  # noqa: E402
import multisoftmax.torch as mt  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import timing  # noqa: E402

CALLS = timing.LARGE_CALLS


def gpu_events(run) -> list:
    """[(name, start_ns, duration_ns)] of the GPU stream events of one `run()` (after one untimed
    run), by the profiler timing.py reads, in start order."""
    run()
    folder = tempfile.mkdtemp(prefix="multisoftmax-overlap-")
    try:
        with jax.profiler.trace(folder):
            run()
        path = glob.glob(os.path.join(folder, "**", "*.xplane.pb"), recursive=True)[0]
        prof = jax.profiler.ProfileData.from_file(path)
        return sorted(((ev.name, ev.start_ns, ev.duration_ns) for plane in prof.planes
                       if plane.name.startswith("/device:GPU") for line in plane.lines
                       if line.name.startswith("Stream") for ev in line.events), key=lambda e: e[1])
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def report(label: str, events: list, calls: int) -> None:
    """Each event and its gap to the latest end before it (negative: overlap), then the summed
    durations and the union of the intervals, us a call."""
    print(f"{label}: {len(events)} events", flush=True)
    t0, end, union = events[0][1], None, 0
    for name, start, dur in events:
        gap = None if end is None else (start - end) / 1e3
        lo = start if end is None else max(start, end)
        union += max(0, start + dur - lo)
        end = start + dur if end is None else max(end, start + dur)
        print(f"   {name[:60]:60s} start {(start - t0) / 1e3:9.2f} us  dur {dur / 1e3:8.2f} us  gap "
              f"{'' if gap is None else f'{gap:8.2f} us'}", flush=True)
    total = sum(d for _, _, d in events)
    print(f"   a call: summed durations {total / 1e3 / calls:.2f} us, union of the intervals "
          f"{union / 1e3 / calls:.2f} us, first start to last end {(end - t0) / 1e3 / calls:.2f} us", flush=True)


def torch_graph(fn, x, calls: int = CALLS):
    """(run, keep): a CUDA graph of `calls` calls fn(x), captured on a side stream after one call
    there (as timing._graph_time), and run() replays it once and waits; keep holds the graph and
    the outputs, which must outlive the replays."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        fn(x)
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    graph, outs = torch.cuda.CUDAGraph(), []
    with torch.cuda.graph(graph, stream=side, capture_error_mode="thread_local"):
        for _ in range(calls):
            outs.append(fn(x))

    def run():
        graph.replay()
        torch.cuda.synchronize()
    return run, (graph, outs)


def torch_stream(fn, x, keep: bool):
    def run():
        outs = []
        for _ in range(CALLS):
            y = fn(x)
            if keep:
                outs.append(y)
        torch.cuda.synchronize()
    return run


def torch_idle(fn, x):
    """Calls each made on an idle GPU (a synchronize before each)."""
    def run():
        for _ in range(CALLS):
            torch.cuda.synchronize()
            fn(x)
        torch.cuda.synchronize()
    return run


def torch_graph_each(fn, x):
    """A CUDA graph of CALLS calls, replayed CALLS times back to back on the stream."""
    _, keep = torch_graph(fn, x)
    graph = keep[0]

    def run():
        for _ in range(CALLS):
            graph.replay()
        torch.cuda.synchronize()
    return run, keep


def main():
    print(f"{torch.cuda.get_device_name()}  jax {jax.__version__}  torch {torch.__version__}", flush=True)
    x = torch.randn(128, 1048576, device="cuda", dtype=torch.bfloat16) * 2
    sm = lambda a: mt.softmax(a, dim=-1)  # noqa: E731
    for rnd in range(2):
        print(f"## round {rnd + 1}", flush=True)
        run, keep = torch_graph(sm, x)
        report("torch adapter, bf16 128 x 1048576 softmax forward, CUDA graph of 5 calls", gpu_events(run), CALLS)
        del run, keep
        report("torch adapter, on the stream, outputs dropped", gpu_events(torch_stream(sm, x, False)), CALLS)
        report("torch adapter, on the stream, outputs kept", gpu_events(torch_stream(sm, x, True)), CALLS)
        report("torch adapter, each call on an idle GPU", gpu_events(torch_idle(sm, x)), CALLS)
        run, keep = torch_graph_each(sm, x)
        report("torch adapter, a graph of 5 calls replayed 5 times back to back", gpu_events(run), CALLS * CALLS)
        del run, keep
        xj = jnp.asarray(x.float().cpu().numpy()).astype(jnp.bfloat16)
        chain = jax.jit(lambda s: timing.call_chain(lambda a: mj.softmax(a, -1), s, CALLS))
        report("JAX adapter, jitted chain of 5 calls", gpu_events(lambda: jax.block_until_ready(chain(((xj,),)))), CALLS)
        xj = chain = None
        run, keep = torch_graph(lambda a: a * 2, x)
        report("torch 2 * x, CUDA graph of 5 calls", gpu_events(run), CALLS)
        del run, keep
        report("torch 2 * x, on the stream, outputs dropped", gpu_events(torch_stream(lambda a: a * 2, x, False)),
               CALLS)
        torch.cuda.empty_cache()
    a = torch.randn(2**28, device="cuda")
    b = torch.empty_like(a)

    def copies():
        for _ in range(CALLS):
            b.copy_(a)
        torch.cuda.synchronize()
    report("b.copy_(a), 1 GiB float32, on the stream (the copy ceiling)", gpu_events(copies), CALLS)


if __name__ == "__main__":
    main()
