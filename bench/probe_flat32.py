"""Probe: the forward of short odd float32 rows read and written as one flat stream (GPU).

    python bench/probe_flat32.py --ns 3,5,7 --ms 1048576,65536 > bench/results/h200/probe_flat32.log

A contiguous block of R rows of N values (N odd) is R * N values in a row: a program can load it in
16-byte vectors when R is a multiple of 4, where the rows kernel loads each row value by value (its rows
do not start 16-byte aligned). The probe's kernel loads the block flat, gathers it into an (R, NP) tile
(`tl.gather`, NP = N's next power of two), reduces the rows, gathers y back into the flat order and stores
it flat. Timed against dispatch's launch (the rows kernel) by the benchmark's clock, with torch.compile
beside them; each line: a case, then the variants' us per round and GB/s of the fastest (x and y), and
ERR where the largest error against float64 over every row passes 1e-5 of max(1, |ref|).

    --variants 'R:W,...'   rows a program (a multiple of 4) and warps (default: 64:1,128:2,256:4,512:4,256:2)
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

import peers  # noqa: E402
import tune  # noqa: E402
from multisoftmax import dispatch, launch  # noqa: E402


@triton.jit
def _flat_block(x_ptr, y_ptr, start, j, mask, N: tl.constexpr, NP: tl.constexpr, R: tl.constexpr,
                RP: tl.constexpr, LOG: tl.constexpr):
    xf = tl.load(x_ptr + start + j, mask=mask, other=0.0)
    r = tl.arange(0, RP)[:, None]
    c = tl.arange(0, NP)[None, :]
    src = tl.minimum(r, R - 1) * N + tl.minimum(c, N - 1)
    x = tl.reshape(tl.gather(xf, tl.reshape(src, [RP * NP]), 0), [RP, NP])
    x = tl.where(c < N, x, -float("inf"))
    m = tl.max(x, axis=1)
    z = x - m[:, None]
    e = tl.exp(z)
    s = tl.sum(e, axis=1)
    if LOG:
        y = z - tl.log(s)[:, None]
    else:
        y = e * (1.0 / s)[:, None]
    back = (j // N) * NP + j % N
    back = tl.minimum(back, RP * NP - 1)
    yf = tl.gather(tl.reshape(y, [RP * NP]), back, 0)
    tl.store(y_ptr + start + j, yf, mask=mask)


@triton.jit
def softmax_fwd_flat(x_ptr, M, y_ptr, N: tl.constexpr, NP: tl.constexpr, R: tl.constexpr, RP: tl.constexpr,
                     FLAT: tl.constexpr, LOG: tl.constexpr):
    pid = tl.program_id(0)
    start = pid.to(tl.int64) * (R * N)
    j = tl.arange(0, FLAT)
    if (pid + 1) * R <= M:
        _flat_block(x_ptr, y_ptr, start, j, j < R * N, N, NP, R, RP, LOG)
    else:
        _flat_block(x_ptr, y_ptr, start, j, j < (M - pid * R) * N, N, NP, R, RP, LOG)


def flat_fn(M, N, R, warps, log):
    NP, RP = triton.next_power_of_2(N), triton.next_power_of_2(R)
    FLAT = triton.next_power_of_2(R * N)
    grid = (triton.cdiv(M, R),)

    def f(x, y=None):
        y = torch.empty_like(x) if y is None else y
        softmax_fwd_flat[grid](x, M, y, N=N, NP=NP, R=R, RP=RP, FLAT=FLAT, LOG=log, num_warps=warps)
        return y
    return f


def case(N, M, op, variants, sms, l2, rounds, others, gpu):
    log = op == "log_softmax"
    x, _, _, out, bufs, nbytes = tune.make_inputs(M, N, torch.float32, "fwd", log)
    plan = dispatch.plan_forward.__wrapped__(M, N, N, N, "float32", log, sms, gpu=gpu)
    (l,) = plan
    fns = {"dispatch": lambda a: tune.run_plan(plan, {"x": a}, torch.empty_like(out))}
    for R, W in variants:
        fns[f"r{R}w{W}"] = flat_fn(M, N, R, W, log)
    ref = (torch.log_softmax if log else torch.softmax)(x.double(), -1)
    errs = {}
    for name, f in fns.items():
        launch._COMPILED.clear()
        got = f(x)
        errs[name] = ((got.double() - ref).abs() / ref.abs().clamp(min=1)).max().item()
    res = tune.time_rounds(fns, (x,), nbytes, l2, rounds, others, ("float32", N, op, "fwd"))
    kw = l.kwargs
    head = f"float32 {M}x{N} {op:11s} fwd dispatch {l.kernel} m{kw.get('BLOCK_M')}w{kw['num_warps']} | "
    return head + " | ".join(
        f"{name} " + "/".join(f"{us:.2f}" for us in res[name]) + f" us {nbytes / min(res[name]) / 1e3:.0f}"
        + (f" ERR {errs[name]:.0e}" if errs.get(name, 0) > 1e-5 else "") for name in res)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ns", default="3,5,7")
    ap.add_argument("--ms", default="1048576,65536")
    ap.add_argument("--ops", default="softmax,log_softmax")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--variants", default="64:1,128:2,256:4,512:4,256:2")
    ap.add_argument("--no-peers", action="store_true")
    args = ap.parse_args()
    sms, l2, gpu = tune.probe_header("probe_flat32.py")
    variants = [tuple(map(int, v.split(":"))) for v in args.variants.split(",")]
    others = [] if args.no_peers else [peers.torch_compiled(False)]
    for N in map(int, args.ns.split(",")):
        for M in map(int, args.ms.split(",")):
            for op in args.ops.split(","):
                print(case(N, M, op, variants, sms, l2, args.rounds, others, gpu), flush=True)
                torch.cuda.empty_cache()
                torch.compiler.reset()


if __name__ == "__main__":
    main()
