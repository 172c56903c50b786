"""Probe (GPU): is the ticket what makes the cooperative forward slower launched back to back on
the stream than from a CUDA graph?

bench/probe_overlap.py found bf16 128 x 1048576's softmax forward (one cooperative launch of 8192
programs, dispatch's plan) at ~194 us a call replayed from a CUDA graph or launched on an idle
GPU, but ~197 us launched back to back on the stream (1.4 us between kernels), where torch's
`2 * x` takes the same time every way. This launches dispatch's plan for that shape straight
(softmax_fwd_coop with the plan's arguments; bench/probe_trace.py's buffers), as planned
(TICKET=True: a program takes its item from an atomic counter) and with TICKET=False (the item is
the program id: no atomic before the loads; safe here only because the H100 starts a launch's
programs in program-id order, which CUDA does not promise, so dispatch never plans it for grids
larger than the GPU holds at once), each in a CUDA graph of 5 launches, 5 back to back on the
stream, and 5 each on an idle GPU; by timing.py's clock (summed CUPTI durations), 3 rounds (the
kernels in turn in each round; the log at bench/results/h100/probe_ticket.log ran each kernel's 3
rounds in a row).
Prints each way's per-launch durations and their mean, and checks the output against torch.

    python bench/probe_ticket.py

With `--variant NAME` the other kernel is bench/probe_trace.py's KERNEL_VARIANTS[NAME] (prefetch:
before its ticket, a program asks L2 for the chunk of the item its program id would be, one bulk
prefetch; lookahead, lookahead_all: see LOOKAHEAD there; pdl, pdl_early: see PDL there, launched with
launch_pdl=True), on rows of whole chunks; `--shapes dtype:MxN:op,...` picks the shapes (op: sm or log).
"""

from __future__ import annotations

import argparse
import os
import sys

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import torch  # noqa: E402

from multisoftmax import dispatch  # noqa: E402
from multisoftmax.kernels import softmax as kernels  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from probe_overlap import CALLS, gpu_events, torch_graph, torch_idle, torch_stream  # noqa: E402
from probe_trace import KERNEL_VARIANTS, buffers, build  # noqa: E402

SHAPES = [("bfloat16", 128, 1048576, False), ("float32", 64, 1048576, True)]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--variant", choices=("ticket", *KERNEL_VARIANTS), default="ticket")
    p.add_argument("--shapes", default=None, help="dtype:MxN:op,... (op: sm or log; default: SHAPES)")
    args = p.parse_args()
    shapes = SHAPES if not args.shapes else [
        (d, *map(int, mn.split("x")), op == "log") for d, mn, op in (t.split(":") for t in args.shapes.split(","))]
    other = kernels if args.variant == "ticket" else build(KERNEL_VARIANTS[args.variant], trace=False)
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    print(f"{torch.cuda.get_device_name()}  SMs {sms}  torch {torch.__version__}  variant {args.variant}", flush=True)
    for dtype, M, N, log in shapes:
        x = torch.randn(M, N, device="cuda", dtype=getattr(torch, dtype)) * 2
        ref = (torch.log_softmax if log else torch.softmax)(x.float(), -1)
        (plan,) = dispatch.plan_forward(M, N, N, N, dtype, log, sms)
        label = f"{dtype} {M}x{N} {'log_softmax' if log else 'softmax'} forward"
        print(f"{label}: {plan.kernel} grid {plan.grid} {plan.kwargs}", flush=True)
        if plan.kernel != "softmax_fwd_coop" or (args.variant != "ticket" and (
                N % plan.kwargs["CHUNK_N"] or not plan.kwargs["TICKET"] or plan.kwargs["PEEL"])):
            print("  not a cooperative plan of whole chunks with a ticket: skipped", flush=True)
            continue
        kinds = ((f"TICKET={t}", kernels, {"TICKET": t}) for t in (True, False)) if args.variant == "ticket" else \
            (("dispatch", kernels, {}), (args.variant, other, {}))
        launches = {}
        for name, module, change in kinds:
            kw = {**plan.kwargs, **change, **({"launch_pdl": True} if name.startswith("pdl") else {})}
            outs = buffers(plan, x)

            def launch(a, kw=kw, outs=outs, module=module):
                module.softmax_fwd_coop[plan.grid](a, *plan.scalars, *outs, **kw)
                return outs[-1]
            launch(x)
            torch.cuda.synchronize()
            err = (outs[-1].float() - ref).abs().max().item()
            print(f"  {name}: max |y - torch's float32 y| {err:.2e}", flush=True)
            launches[name] = launch
        for rnd in range(3):  # the kernels in turn, each way
            for name, launch in launches.items():
                run, keep = torch_graph(launch, x)
                ways = {"graph": gpu_events(run), "stream": gpu_events(torch_stream(launch, x, False)),
                        "idle": gpu_events(torch_idle(launch, x))}
                del run, keep
                print(f"  {name} round {rnd + 1}: " + " | ".join(
                    f"{way} " + " ".join(f"{d / 1e3:.1f}" for _, _, d in ev)
                    + f" mean {sum(d for _, _, d in ev) / 1e3 / CALLS:.1f}" for way, ev in ways.items()), flush=True)
        del x, ref
        torch.cuda.empty_cache()

if __name__ == "__main__":
    main()
