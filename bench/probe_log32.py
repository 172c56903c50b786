"""Probe: what the log of the row sum costs the log_softmax forward of short float32 rows (GPU).

    python bench/probe_log32.py --ns 3,5,7,13 > bench/results/h200/probe_log32.log

A row of 5 float32 values takes 8 lanes, one value a thread, and each of the 8 threads computes its row's
log(s) (the reduction leaves s in every lane of the row): tl.log, libdevice's accurate logf, is some twenty
instructions, once a value. The probe's kernel is the rows forward (`softmax_fwd_rows`) cut to contiguous
rows of one segment, with log(s) as
  * log:   tl.log (the rows kernel's);
  * lg2:   lg2.approx.f32(s) * ln(2) (inline PTX, one MUFU instruction);
  * recip: softmax's 1 / s in its place (y = e / s), for the cost of softmax itself;
  * logG8, logG32: tl.log of s reshaped to (BLOCK_M / G, G), a layout of one value a thread (the compiler
    moves s there and back through shared memory);
  * cols, cols.recip: one thread a row (fwd_cols; log_softmax, softmax), its N values loaded one by one;
and with ".same" y's offsets reused from x's (equal strides), ".o32" offsets in 32 bits (VARIANTS);
timed by the benchmark's clock against dispatch's launch. Then the error of lg2.approx.f32 * ln(2) against
float64 log over s in [1, 2) (every float32) and [2, 2 ** 20) (random), absolute and relative.
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

import tune  # noqa: E402
from multisoftmax import dispatch, launch  # noqa: E402

LN2 = tl.constexpr(0.6931471805599453)
# (label, MODE, SAME, OFFS32, G): MODE 0 tl.log, 1 lg2.approx, 2 softmax's 1 / s, 3 tl.log of s reshaped to
# (BLOCK_M / G, G); SAME: y's offsets are x's (equal strides); OFFS32: offsets in 32 bits
# the one-thread-a-row kernel (fwd_cols), "cols" (log_softmax) and "cols.recip" (softmax): (BLOCK_M, num_warps)
COLS = [(128, 4), (256, 4), (256, 8), (512, 8)]
VARIANTS = [("log", 0, 0, 0, 1), ("lg2", 1, 0, 0, 1), ("recip", 2, 0, 0, 1), ("logG8", 3, 0, 0, 8),
            ("logG32", 3, 0, 0, 32), ("log.same", 0, 1, 0, 1), ("log.o32", 0, 1, 1, 1), ("logG8.same.o32", 3, 1, 1, 8),
            ("logG32.same.o32", 3, 1, 1, 32), ("recip.same.o32", 2, 1, 1, 1)]


@triton.jit
def _lg2(s):
    return tl.inline_asm_elementwise("lg2.approx.f32 $0, $1;", "=f,f", [s], dtype=tl.float32, is_pure=True, pack=1)


@triton.jit
def fwd_rows(x_ptr, M, N, stride_xm, stride_ym, y_ptr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
             MODE: tl.constexpr, SAME: tl.constexpr, OFFS32: tl.constexpr, G: tl.constexpr):
    pid = tl.program_id(0)
    rows = (pid if OFFS32 else pid.to(tl.int64)) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    x_offs = rows[:, None] * stride_xm + cols[None, :]
    y_offs = x_offs if SAME else rows[:, None] * stride_ym + cols[None, :]
    mask = (rows < M)[:, None] & (cols < N)[None, :]
    x = tl.load(x_ptr + x_offs, mask=mask, other=-float("inf"))
    m = tl.max(x, axis=1)
    z = x - m[:, None]
    e = tl.exp(z)
    s = tl.sum(e, axis=1)
    if MODE == 0:
        y = z - tl.log(s)[:, None]
    elif MODE == 1:
        y = z - (_lg2(s) * LN2)[:, None]
    elif MODE == 2:
        y = e * (1.0 / s)[:, None]
    else:
        log_s = tl.reshape(tl.log(tl.reshape(s, [BLOCK_M // G, G])), [BLOCK_M])
        y = z - log_s[:, None]
    tl.store(y_ptr + y_offs, y, mask=mask)


@triton.jit
def fwd_cols(x_ptr, M, y_ptr, N: tl.constexpr, BLOCK_M: tl.constexpr, LOG: tl.constexpr):
    # one thread a row: the row's values loaded value by value (N loads a thread, each a warp's 32 rows
    # N values apart), no shuffles, log(s) once a row; the second and third passes reload from L1
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    ok = rows < M
    base = rows * N
    m = tl.full([BLOCK_M], float("-inf"), tl.float32)
    for k in tl.static_range(N):
        m = tl.maximum(m, tl.load(x_ptr + base + k, mask=ok, other=0.0))
    s = tl.zeros([BLOCK_M], tl.float32)
    for k in tl.static_range(N):
        s += tl.exp(tl.load(x_ptr + base + k, mask=ok, other=0.0) - m)
    log_s = tl.log(s)
    inv_s = 1.0 / s
    for k in tl.static_range(N):
        z = tl.load(x_ptr + base + k, mask=ok, other=0.0) - m
        if LOG:
            y = z - log_s
        else:
            y = tl.exp(z) * inv_s
        tl.store(y_ptr + base + k, y, mask=ok)


@triton.jit
def lg2_kernel(s_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    s = tl.load(s_ptr + offs, mask=offs < n, other=1.0)
    tl.store(out_ptr + offs, _lg2(s) * LN2, mask=offs < n)
    tl.store(out_ptr + n + offs, tl.log(s), mask=offs < n)


def accuracy():
    one = torch.arange(2**23, dtype=torch.int32, device="cuda") + 0x3F800000
    s = torch.cat([one.view(torch.float32), torch.rand(2**22, device="cuda") * (2**20 - 2) + 2])
    out = torch.empty(2 * s.numel(), device="cuda")
    lg2_kernel[(triton.cdiv(s.numel(), 1024),)](s, out, s.numel(), BLOCK=1024)
    ref = s.double().log()
    for name, got in (("lg2.approx * ln2", out[:s.numel()]), ("tl.log", out[s.numel():])):
        err = (got.double() - ref).abs()
        rel = err / ref.abs().clamp(min=1e-300)
        lo = s < 2
        ulp = err / (torch.nextafter(got.abs(), torch.tensor(float("inf"), device="cuda")) - got.abs()).double()
        print(f"{name:18s} [1,2): max abs {err[lo].max().item():.3e}, max rel {rel[lo][1:].max().item():.3e}; "
              f"[2,2^20): max abs {err[~lo].max().item():.3e}, max rel {rel[~lo].max().item():.3e}; "
              f"max ulps {ulp[1:].max().item():.1f}; s in [1, 1 + 2^-10): max rel "
              f"{rel[1:2**13].max().item():.3e}", flush=True)


def case(N, M, tilings, l2, rounds, sms, gpu):
    x, _, _, out, bufs, nbytes = tune.make_inputs(M, N, torch.float32, "fwd", True)
    plan = dispatch.plan_forward.__wrapped__(M, N, N, N, "float32", True, sms, gpu=gpu)
    (l,) = plan
    fns = {"dispatch": lambda a: tune.run_plan(plan, {"x": a}, torch.empty_like(out))}
    BLOCK_N = triton.next_power_of_2(N)
    for bm, w in tilings:
        for name, mode, same, o32, g in VARIANTS:
            def f(a, bm=bm, w=w, mode=mode, same=same, o32=o32, g=g):
                y = torch.empty_like(a)
                fwd_rows[(triton.cdiv(M, bm),)](a, M, N, N, N, y, BLOCK_M=bm, BLOCK_N=BLOCK_N, MODE=mode, SAME=same,
                                                OFFS32=o32, G=min(g, bm), num_warps=w)
                return y
            fns[f"{name}.m{bm}w{w}"] = f
    for bm, w in COLS:
        for log in (True, False):
            def f(a, bm=bm, w=w, log=log):
                y = torch.empty_like(a)
                fwd_cols[(triton.cdiv(M, bm),)](a, M, y, N=N, BLOCK_M=bm, LOG=log, num_warps=w)
                return y
            fns[f"cols{'' if log else '.recip'}.m{bm}w{w}"] = f
    ref = torch.log_softmax(x.double(), -1)
    errs = {}
    for name, f in fns.items():
        launch._COMPILED.clear()
        if "recip" not in name:
            errs[name] = (f(x).double() - ref).abs().max().item()
    res = tune.time_rounds(fns, (x,), nbytes, l2, rounds)
    kw = l.kwargs
    return (f"float32 {M}x{N} log_softmax fwd dispatch m{kw.get('BLOCK_M')}w{kw['num_warps']} | " + " | ".join(
        f"{name} " + "/".join(f"{us:.2f}" for us in res[name]) + f" us {nbytes / min(res[name]) / 1e3:.0f}"
        + (f" err {errs[name]:.1e}" if name in errs else "") for name in res))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ns", default="3,5,7,13")
    ap.add_argument("--ms", default="1048576")
    ap.add_argument("--tilings", default="64:2,64:1,16:1")
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    sms, l2, gpu = tune.probe_header("probe_log32.py")
    accuracy()
    tilings = [tuple(map(int, t.split(":"))) for t in args.tilings.split(",")]
    for N in map(int, args.ns.split(",")):
        for M in map(int, args.ms.split(",")):
            print(case(N, M, tilings, l2, args.rounds, sms, gpu), flush=True)


if __name__ == "__main__":
    main()
