"""What a call puts on the GPU, event by event (GPU): the kernels and memsets that CUPTI records
for a call of each adapter, named, with their median durations, read through the JAX profiler
as bench/timing.py reads them.

    python bench/probe_events.py > bench/results/h100/probe_events.log
    python bench/probe_events.py --big > bench/results/h100/probe_events_big.log

--big also runs the torch adapter's plan with fresh outputs, and with fresh outputs and its
counters zeroed by a kernel just before each call, as the JAX adapter has them: new ones each
call, or one buffer zeroed again; and, beside those, with a buffer of its own for each call
zeroed before all the calls (bench/results/h100/probe_jax_1m_lag.log).

For few long bf16 rows (the shapes of the few-long-rows target), forward, softmax and
log_softmax:
  * the JAX adapter, jitted, over 13 inputs: its Triton kernel and what zeroes the cooperative
    kernels' counters or TAG words for each call, which a torch call avoids (jax-triton's memset,
    `zeroed_outputs`, until d56e883; since, zeros that XLA makes, a loop_broadcast_fusion);
  * the torch adapter, in a CUDA graph over 13 inputs and 20 calls, against the same plan run
    by `tune.run_plan` into one reused output (as bench/probe_coop.py timed before 2026-11-24
    09:00 UTC): where y fits in L2, a reused output stays there and the same kernel reads faster.
"""

from __future__ import annotations

import glob
import itertools
import os
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

SHAPES = [("bfloat16", 8, 128256, (False, True)), ("bfloat16", 8, 256000, (False, True)),
          ("bfloat16", 64, 256000, (False, True)), ("bfloat16", 16, 1048576, (False, True))]
# --big: ~256 MB rows where the JAX adapter's time stood 1-2.5% behind the torch adapter's in the
# benchmark (float32 64 x 1048576 log_softmax: 196.9-198.7 us against 193.8-195.4 in four runs)
BIG_SHAPES = [("float32", 64, 1048576, (True,)), ("bfloat16", 128, 1048576, (False,))]
COPIES = 13


def _events(run):
    """{event name: (count, median us)} and the summed us a call of `run()` (which makes 20
    calls and waits), from one profiled run of it."""
    import jax
    run()
    folder = tempfile.mkdtemp(prefix="multisoftmax-events-")
    with jax.profiler.trace(folder):
        run()
    path = glob.glob(os.path.join(folder, "**", "*.xplane.pb"), recursive=True)[0]
    profile = jax.profiler.ProfileData.from_file(path)
    evs = [(ev.name, ev.duration_ns) for plane in profile.planes if plane.name.startswith("/device:GPU")
           for line in plane.lines if line.name.startswith("Stream") for ev in line.events]
    names = {}
    for name, ns in evs:
        names.setdefault(name[:40], []).append(ns)
    return ({n: (len(v), round(statistics.median(v) / 1e3, 2)) for n, v in names.items()},
            round(sum(ns for _, ns in evs) / 1e3 / 20, 2))


def main():
    import jax
    import jax.numpy as jnp
    import torch

    import multisoftmax.jax as msj
    import multisoftmax.torch as mst
    import tune
    from multisoftmax import dispatch

    print(f"{torch.cuda.get_device_name()}  jax {jax.__version__}  torch {torch.__version__}", flush=True)
    big = "--big" in sys.argv[1:]
    copies = 3 if big else COPIES
    for dtype, M, N, logs in BIG_SHAPES if big else SHAPES:
        short = {"bfloat16": "bf16", "float32": "fp32"}[dtype]
        for log in logs:
            op = "log_softmax" if log else "softmax"
            xs = [jax.random.normal(jax.random.PRNGKey(i), (M, N), getattr(jnp, dtype)) for i in range(copies)]
            f = jax.jit(lambda a: (msj.log_softmax if log else msj.softmax)(a, axis=-1))

            def run_jax():
                for i in range(20):
                    y = f(xs[i % copies])
                y.block_until_ready()

            ev, per = _events(run_jax)
            print(f"{short} {M}x{N} {op} jax-adapter: {per} us a call; {ev}", flush=True)
            sets = [torch.randn(M, N, device="cuda", dtype=getattr(torch, dtype)) for _ in range(copies)]
            plan = dispatch.plan_forward(M, N, N, N, dtype, log, torch.cuda.get_device_properties(0).multi_processor_count)
            out = torch.empty_like(sets[0])
            counters = {name: shape for name, shape, kind in plan[0].outputs if kind == "zeros"}
            fns = [("torch-adapter", lambda a: (mst.log_softmax if log else mst.softmax)(a, -1)),
                   ("plan, one output", lambda a: tune.run_plan(plan, {"x": a}, out))]
            if big:  # as the JAX adapter has them: fresh outputs, counters zeroed just before each call
                kept = {n: torch.zeros(shape, dtype=torch.int32, device="cuda") for n, shape in counters.items()}
                ahead = itertools.cycle([{n: torch.zeros(shape, dtype=torch.int32, device="cuda")
                                          for n, shape in counters.items()} for _ in range(22)])
                fns += [("plan, fresh outputs", lambda a: tune.run_plan(plan, {"x": a}, torch.empty_like(a))),
                        ("plan, fresh outputs, counters zeroed each call", lambda a: tune.run_plan(
                            plan, {"x": a, **{n: torch.zeros(shape, dtype=torch.int32, device=a.device)
                                              for n, shape in counters.items()}}, torch.empty_like(a))),
                        ("plan, fresh outputs, one counter buffer zeroed again each call", lambda a: tune.run_plan(
                            plan, {"x": a, **{n: t.zero_() for n, t in kept.items()}}, torch.empty_like(a))),
                        ("plan, fresh outputs, a counter buffer a call zeroed before the calls",
                         lambda a: tune.run_plan(plan, {"x": a, **next(ahead)}, torch.empty_like(a)))]
            for name, fn in fns:
                side = torch.cuda.Stream()
                side.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(side):
                    for a in sets[:2]:
                        fn(a)
                torch.cuda.current_stream().wait_stream(side)
                torch.cuda.synchronize()
                graph, outs = torch.cuda.CUDAGraph(), []
                with torch.cuda.graph(graph, stream=side):
                    for i in range(20):
                        outs.append(fn(sets[i % copies]))

                def run_graph():
                    graph.replay()
                    torch.cuda.synchronize()

                ev, per = _events(run_graph)
                print(f"{short} {M}x{N} {op} {name}: {per} us a call; {ev}", flush=True)
                del outs
                graph = None  # not del: a closure above names it
                torch.cuda.empty_cache()
            del sets
            xs = None  # not del: a closure above names it


if __name__ == "__main__":
    main()
