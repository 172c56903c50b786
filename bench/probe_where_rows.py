"""Probe: the where rows kernels (kernels/where.py, jax.nn's `where=`) on short rows, re-tiled (GPU).

    python bench/probe_where_rows.py > bench/results/h100/probe_where_rows.log

Written when dispatch.plan_where still tiled the where rows kernels as the rows family's general
rule (`_rows_tiling(..., aligned=False, where=True)`: 4 warps for rows of up to 2048 lanes, where the
unmasked rows kernels run short full rows on ROWS_SHORT_FWD_WARPS (2)); on bf16 8192 x 128 x 128
under a padding mask (1, 1, 128) the JAX adapter's log_softmax forward moved 2,704 GB/s against
XLA's 2,938 (bench/results/h100/probe_where_i32.log). Its runs chose `dispatch._where_tiling`'s tiles
and register caps (bench/DISPATCH.md, WHERE_FWD_MIN_BYTES and WHERE_FWD_MAXNREG). This times, for
~256 MB of x, masks of one row (padding: N values, 90% kept, read by every row), of N rows (causal: an N x N lower
triangle, row m reading mask row m % N) and of M rows (rows: 90% kept, row m reading mask row m), forward and
backward, softmax and log_softmax:
  * dispatch: plan_where's launch (its header: "n" SKIP off; "p" PEEL, "w" W_PEEL: the cooperative kernel's
    rows peeled, their mask rows too; "P" PACK: its x held as packed words);
  * mBwW: the same kernel at B rows a program and W warps; then (in --tilings) "n": SKIP off, x (y,
    dy) read by every vector beside the mask, not only by the vectors holding a kept value; "rR":
    compiled under Triton's register cap maxnreg=R (more programs an SM), else uncapped;
  * noEVEN, noFTZ, noPACK (--ablate): dispatch's forward launch with that flag off (kernels/where.py);
  * coop (--coop): the cooperative where kernel (*_coop_where), as plan_where makes it for longer rows;
    coopCwW[rR] (--coop-tilings): the same in C-value chunks at W warps (under maxnreg R), every row;
  * unmasked: dispatch's plan for the unmasked kernels on the same x (no mask), the bar;
launched from torch (launch.torch_call), each timed twice by the benchmark's clock
(bench/timing.py: CUDA graph, kernel time; a fresh output a call), with registers a thread and
the largest error relative to max(1, |ref|) against float64 (ERR over 2e-2). GB/s count x and y
(backward: y, dy, dx), as the benchmark does; the error on 4096 rows or more spread over x. A causal
mask takes whole triangles: M = N where 256 MB hold fewer rows. The copy bandwidth of the same run
heads the log.

    python bench/probe_where_rows.py [--dtypes bfloat16,float32] [--ns 128,256,1024]
                                     [--masks padding,causal,rows] [--ops softmax,log_softmax]
                                     [--dirs fwd,bwd] [--tilings 8x2,16x4,1x16r48|none] [--coop] [--ablate]
                                     [--coop-tilings 8192x16r40,4096x8]
    (defaults: bfloat16,float32; 128,256,1024; padding; both ops; fwd; 2-8 warps at 8 and 16 values a thread)
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import re
import subprocess
import sys
from datetime import datetime, timezone
from unittest import mock

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import torch  # noqa: E402
import triton  # noqa: E402

import timing  # noqa: E402
import tune  # noqa: E402
from multisoftmax import dispatch, launch  # noqa: E402

TENSOR_BYTES = 256 * 2**20


def masked_reference(x, y, dy, keep, log, direction):
    """float64 masked softmax (log_softmax) of x over its rows' kept values (forward), or the dx
    of y, dy there (backward), as kernels/where.py's docstring states them."""
    if direction == "fwd":
        xd = x.double().masked_fill(~keep, -float("inf"))
        out = (torch.log_softmax if log else torch.softmax)(xd, -1)
        return out.masked_fill(~keep, -float("inf") if log else 0.0).nan_to_num(nan=0.0)
    yd = y.double().masked_fill(~keep, -float("inf") if log else 0.0)
    dyd = dy.double().masked_fill(~keep, 0.0)
    if log:
        dx = dyd - yd.exp() * dyd.sum(-1, keepdim=True)
    else:
        dx = yd * (dyd - (yd * dyd).sum(-1, keepdim=True))
    return dx.masked_fill(~keep, 0.0)


def tilings(N: int, spec: str):
    """(BLOCK_M, num_warps, SKIP off, maxnreg or None) tuples: from `spec` ("8x2,16x4n,1x16nr48":
    "n", SKIP off; "rR", maxnreg R), else 2, 4 and 8 warps holding 8 and 16 values a thread of
    next_power_of_2(N) lanes, SKIP on, uncapped; "none": no tiling but dispatch's."""
    if spec == "none":
        return []
    if spec:
        out = []
        for t in spec.split(","):
            m = re.fullmatch(r"(\d+)x(\d+)(n?)(?:r(\d+))?", t)
            if m is None:
                raise SystemExit(f"--tilings: {t!r} is not BLOCK_MxWARPS[n][rREGS]")
            out.append((int(m[1]), int(m[2]), bool(m[3]), int(m[4]) if m[4] else None))
        return out
    lanes = triton.next_power_of_2(N)
    out = []
    for warps in (2, 4, 8):
        for per_thread in (8, 16):
            block_m = per_thread * 32 * warps // lanes
            if block_m >= 1 and block_m * lanes == per_thread * 32 * warps:
                out.append((block_m, warps, False, None))
    return out


def coop_tilings(spec: str):
    """(CHUNK_N, num_warps, maxnreg or None) of the cooperative where kernel, from `spec`
    ("8192x16r40,4096x8")."""
    out = []
    for t in filter(None, spec.split(",")):
        m = re.fullmatch(r"(\d+)x(\d+)(?:r(\d+))?", t)
        if m is None:
            raise SystemExit(f"--coop-tilings: {t!r} is not CHUNKxWARPS[rREGS]")
        out.append((int(m[1]), int(m[2]), int(m[3]) if m[3] else None))
    return out


def case(dtype, N, mask_kind, log, direction, spec, sms, l2, coop=False, coop_spec="", ablate=False):
    T = getattr(torch, dtype)
    M = TENSOR_BYTES // (N * T.itemsize)
    if mask_kind == "causal":  # whole N x N triangles, at least one (as x (B, H, T, T) under a causal mask)
        M = max(M - M % N, N)
    gen = torch.Generator(device="cuda").manual_seed(0)
    if mask_kind == "padding":
        w = torch.rand((1, N), device="cuda", generator=gen) < 0.9
        row_mod, keep = 1, w.expand(M, N)
    elif mask_kind == "rows":  # a mask row for each row of x
        w = torch.rand((M, N), device="cuda", generator=gen) < 0.9
        row_mod, keep = M, w
    else:
        w = torch.ones((N, N), dtype=torch.bool, device="cuda").tril()
        row_mod, keep = N, w.repeat(M // N, 1)
    x, y, dy, out, bufs, nbytes = tune.make_inputs(M, N, T, direction, log)
    fill = -float("inf") if log else 0.0
    y = (torch.log_softmax if log else torch.softmax)(x.float().masked_fill(~keep, -float("inf")), -1)
    y = y.masked_fill(~keep, fill).nan_to_num(nan=fill).to(T)
    names = ("x",) if direction == "fwd" else ("y", "dy")
    bufs = {"x": x} if direction == "fwd" else {"y": y, "dy": dy}
    extra = {"where": w, "where_rows": torch.zeros(1, dtype=torch.int32, device="cuda")}
    plan = dispatch.plan_where.__wrapped__(M, N, dtype, log, direction == "fwd", 1, row_mod, False, True, sms)
    if plan is None:  # the softmax backward of rows past WHERE_BWD_MAX_N: the unmasked one serves
        return f"{dtype:8s} {M}x{N} {mask_kind:7s} {'log' if log else 'sm '} {direction} no where plan"
    kw = plan[0].kwargs
    variants = [("dispatch", plan)]
    for block_m, warps, every, cap in tilings(N, spec):
        if (block_m, warps, every, cap) != (kw["BLOCK_M"], kw["num_warps"], not kw["SKIP"], kw.get("maxnreg")):
            # dispatch's EVEN rule (plan_where): whole tiles, and no backward under a register cap
            even = {"EVEN": kw["EVEN"] and M % block_m == 0 and (direction == "fwd" or not cap)} if "EVEN" in kw else {}
            (l,) = tune.with_meta(plan, grid=(triton.cdiv(M, block_m),), BLOCK_M=block_m, num_warps=warps,
                                  SKIP=not every, maxnreg=cap, **even)
            meta = tuple((k, v) for k, v in l.meta if not (k == "maxnreg" and v is None))  # uncapped: no maxnreg
            variants.append((f"m{block_m}w{warps}" + "n" * every + (f"r{cap}" if cap else ""),
                             (dataclasses.replace(l, meta=meta),)))
    for flag in ("EVEN", "FTZ", "PACK") if ablate else ():  # dispatch's launch with one of its forward flags off
        if kw.get(flag):
            variants.append((f"no{flag}", tune.with_meta(plan, **{flag: False})))
    for chunk, warps, cap in ([(None, None, None)] if coop else []) + coop_tilings(coop_spec):
        # the cooperative where kernel, as dispatch plans it past WHERE_MAX_N / WHERE_BWD_MAX_N, or in
        # `chunk`-value chunks at `warps` warps under maxnreg `cap`
        patches = dict(WHERE_MAX_N=0, WHERE_BWD_MAX_N=0)
        if chunk:
            patches.update(WHERE_COOP_CHUNK_N={T.itemsize: chunk}, WHERE_COOP_WARPS=warps,
                           WHERE_COOP_MAXNREG={T.itemsize: cap} if cap else {},
                           WHERE_COOP_FWD_TILINGS={}, WHERE_COOP_BWD_TILINGS={}, WHERE_COOP_PACK_TILINGS=(),
                           WHERE_COOP_PEEL_BWD32_TILINGS=())  # every row, peeled too
        with mock.patch.multiple(dispatch, **patches):
            cp = dispatch.plan_where.__wrapped__(M, N, dtype, log, direction == "fwd", 1, row_mod, False, True, sms)
        if cp is not None:
            variants.append(("coop" + (f"{chunk}w{warps}" + (f"r{cap}" if cap else "") if chunk else ""), cp))
    plain = (dispatch.plan_forward.__wrapped__(M, N, N, N, dtype, log, sms) if direction == "fwd"
             else dispatch.plan_backward.__wrapped__(M, N, N, N, N, dtype, log, sms))
    sel = torch.arange(0, M, max(1, M // 4096), device="cuda")  # the error on 4096 rows or more, spread
    ref = masked_reference(x[sel], y[sel], dy[sel], keep[sel], log, direction)
    info, fns = {}, {}
    for name, p in variants + [("unmasked", plain)]:
        launch._COMPILED.clear()
        more = extra if name != "unmasked" else {}
        fns[name] = (lambda *a, p=p, more=more:
                     tune.run_plan(p, {**dict(zip(names, a)), **more}, torch.empty_like(out)))
        got = tune.run_plan(p, {**bufs, **more}, out)
        err = float("nan") if name == "unmasked" else \
            ((got[sel].double() - ref).abs() / ref.abs().clamp(min=1)).nan_to_num(nan=1.0, posinf=0.0).max().item()
        info[name] = (max(c[1].n_regs for c in launch._COMPILED.values()), err)
    res = tune.time_rounds(fns, tuple(bufs[n] for n in names), nbytes, l2, 2)
    head = (f"{dtype:8s} {M}x{N} {mask_kind:7s} {'log' if log else 'sm '} {direction} "
            f"dispatch {'m%d' % kw['BLOCK_M'] if 'BLOCK_M' in kw else 'coop%d' % kw['CHUNK_N']}w{kw['num_warps']}"
            f"{'' if kw['SKIP'] else 'n'}{'p' if kw.get('PEEL') else ''}{'w' if kw.get('W_PEEL') else ''}"
            f"{'P' if kw.get('PACK') else ''}"
            f"{'r%d' % kw['maxnreg'] if kw.get('maxnreg') else ''} | ")
    return head + " | ".join(
        f"{name} r{info[name][0]} " + "/".join(f"{us:.2f}" for us in res[name])
        + f" us {nbytes / min(res[name]) / 1e3:.0f} GB/s" + (f" ERR {info[name][1]:.0e}" if info[name][1] > 2e-2 else "")
        for name in fns)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dtypes", default="bfloat16,float32")
    ap.add_argument("--ns", default="128,256,1024")
    ap.add_argument("--masks", default="padding")
    ap.add_argument("--ops", default="softmax,log_softmax")
    ap.add_argument("--dirs", default="fwd")
    ap.add_argument("--coop", action="store_true", help="time the cooperative where kernel too")
    ap.add_argument("--coop-tilings", default="",
                    help="CHUNKxWARPS[rREGS],...: the cooperative where kernel in these chunks, warps and maxnreg")
    ap.add_argument("--ablate", action="store_true",
                    help="time dispatch's forward launch with EVEN off, and with FTZ off, where it sets them")
    ap.add_argument("--tilings", default="",
                    help="BLOCK_MxWARPS[n][rREGS],... (n: SKIP off; rREGS: maxnreg REGS; "
                         "default: 2-8 warps, 8 and 16 values a thread)")
    args = ap.parse_args()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    print(f"# {commit}, {datetime.now(timezone.utc):%Y-%m-%dT%H:%M:%SZ}, python bench/probe_where_rows.py "
          + " ".join(sys.argv[1:]))
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    print(f"{torch.cuda.get_device_name()}  copy {timing.copy_bandwidth(True):.0f} GB/s  triton {triton.__version__}",
          flush=True)
    for dtype in args.dtypes.split(","):
        for N in map(int, args.ns.split(",")):
            for mask_kind in args.masks.split(","):
                for op in args.ops.split(","):
                    for direction in args.dirs.split(","):
                        print(case(dtype, N, mask_kind, op == "log_softmax", direction, args.tilings, sms, l2,
                                   args.coop, args.coop_tilings, args.ablate),
                              flush=True)
                        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
