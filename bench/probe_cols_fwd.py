"""Why the columns forward (kernels/columns.py, ONE_TILE) of 16-bit tensors runs at half the copy
bandwidth while its backward on the same tiles reaches it: variants of the forward kernel, GPU time
by the benchmark's clock (bench/timing.py), GB/s of the fewest bytes (read x, write y).

Variants (softmax; the tile of dispatch's plan unless named):
  dispatch  kernels/columns.py as dispatch plans it
  copy      the same tile loaded and stored, no arithmetic: the memory pattern's own bound
  nomax     no max reduction (m = 0): what the first reduction costs (wrong values: timing only)
  ftz       the max, then exp2 by one ex2.approx.ftz (no subnormal fix-up), one reduction
  pair2     each program two tiles, both loaded before either is reduced (grid / 2)
  pair2ftz  pair2 with ftz
  tBwW      one tile of BLOCK_T = B columns at W warps (1 or 2 warps: the reductions stay in a warp)
  loop-...  looped columns (N > 1024): the running max and sum kept per value, not per column, so the
            loop has no reduction across threads; reduced once after it (loopftz: with ftz)

    python bench/probe_cols_fwd.py > bench/results/h100/probe_cols_fwd.log
"""
from __future__ import annotations

import os
import sys

import torch
import triton
import triton.language as tl

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import timing  # noqa: E402
import tune  # noqa: E402
from multisoftmax import dispatch  # noqa: E402

LOG2E = tl.constexpr(1.4426950408889634)
SHAPES = [(16, 21, 262144), (1024, 32, 2048), (8, 150, 65536), (65536, 256, 4), (32, 1000, 196), (64, 4096, 64),
          (1, 8192, 8192)]
TILES = [(16, 1), (32, 1), (64, 1), (32, 2), (64, 2), (128, 2), (128, 4)]  # (BLOCK_T, num_warps), one tile
LOOPS = [(32, 128, 4), (64, 64, 4), (64, 64, 8), (32, 64, 4), (16, 256, 4), (128, 32, 4)]  # (BLOCK_T, BLOCK_N, warps)


@triton.jit
def _tile(x_ptr, y_ptr, pid, N, T, stride_b, stride_n, BLOCK_N: tl.constexpr, BLOCK_T: tl.constexpr):
    n_blocks = tl.cdiv(T, BLOCK_T)
    b = (pid // n_blocks).to(tl.int64)
    t = (pid % n_blocks) * BLOCK_T + tl.arange(0, BLOCK_T)[None, :]
    n = tl.arange(0, BLOCK_N).to(tl.int64)[:, None]
    offs = b * stride_b + t + n * stride_n
    return x_ptr + offs, y_ptr + offs, (n < N) & (t < T)


@triton.jit
def _ex2(z, FTZ: tl.constexpr):
    if FTZ:
        z = tl.inline_asm_elementwise("ex2.approx.ftz.f32 $0, $1;", "=f,f", [z], dtype=tl.float32,
                                      is_pure=True, pack=1)
    else:
        z = tl.exp2(z)
    return z


@triton.jit
def _softmax_tile(x, FTZ: tl.constexpr, NOMAX: tl.constexpr):
    if NOMAX:
        m = tl.zeros((x.shape[1],), tl.float32)[None, :]
    else:
        m = tl.max(x, axis=0)[None, :]
    e = _ex2((x - m) * LOG2E, FTZ)
    s = tl.sum(e, axis=0)[None, :]
    return e * (1.0 / s)


@triton.jit
def fwd_variant(x_ptr, N, T, stride_b, stride_n, y_ptr, BLOCK_N: tl.constexpr, BLOCK_T: tl.constexpr,
                MODE: tl.constexpr, FTZ: tl.constexpr, NOMAX: tl.constexpr):
    pid = tl.program_id(0)
    if MODE == 0:  # one tile
        xp, yp, mask = _tile(x_ptr, y_ptr, pid, N, T, stride_b, stride_n, BLOCK_N, BLOCK_T)
        x = tl.load(xp, mask=mask, other=-float("inf")).to(tl.float32)
        tl.store(yp, _softmax_tile(x, FTZ, NOMAX).to(y_ptr.dtype.element_ty), mask=mask)
    elif MODE == 1:  # copy
        xp, yp, mask = _tile(x_ptr, y_ptr, pid, N, T, stride_b, stride_n, BLOCK_N, BLOCK_T)
        tl.store(yp, tl.load(xp, mask=mask), mask=mask)
    elif MODE == 3:  # looped, running max and sum kept per value (reduced once, after the loop)
        n_blocks = tl.cdiv(T, BLOCK_T)
        b = (pid // n_blocks).to(tl.int64)
        t = (pid % n_blocks) * BLOCK_T + tl.arange(0, BLOCK_T)[None, :]
        n = tl.arange(0, BLOCK_N).to(tl.int64)[:, None]
        xc = x_ptr + b * stride_b + t
        yc = y_ptr + b * stride_b + t
        m_t = tl.full((BLOCK_N, BLOCK_T), -float("inf"), tl.float32)
        s_t = tl.zeros((BLOCK_N, BLOCK_T), tl.float32)
        for start in range(0, N, BLOCK_N):
            mask = (start + n < N) & (t < T)
            x = tl.load(xc + (start + n) * stride_n, mask=mask, other=-float("inf")).to(tl.float32)
            m_new = tl.maximum(m_t, x)
            m_safe = tl.where(m_new == -float("inf"), 0.0, m_new)
            s_t = s_t * _ex2((m_t - m_safe) * LOG2E, FTZ) + _ex2((x - m_safe) * LOG2E, FTZ)
            m_t = m_new
        m = tl.max(m_t, axis=0)[None, :]
        s = tl.sum(s_t * _ex2((m_t - m) * LOG2E, FTZ), axis=0)[None, :]
        inv_s = 1.0 / s
        n_steps = tl.cdiv(N, BLOCK_N)
        for i in range(0, n_steps):
            start = (n_steps - 1 - i) * BLOCK_N
            mask = (start + n < N) & (t < T)
            x = tl.load(xc + (start + n) * stride_n, mask=mask, other=-float("inf")).to(tl.float32)
            tl.store(yc + (start + n) * stride_n, (_ex2((x - m) * LOG2E, FTZ) * inv_s).to(y_ptr.dtype.element_ty),
                     mask=mask)
    else:  # MODE 2: two tiles a program, both loads first
        xp0, yp0, m0 = _tile(x_ptr, y_ptr, 2 * pid, N, T, stride_b, stride_n, BLOCK_N, BLOCK_T)
        xp1, yp1, m1 = _tile(x_ptr, y_ptr, 2 * pid + 1, N, T, stride_b, stride_n, BLOCK_N, BLOCK_T)
        x0 = tl.load(xp0, mask=m0, other=-float("inf")).to(tl.float32)
        x1 = tl.load(xp1, mask=m1, other=-float("inf")).to(tl.float32)
        tl.store(yp0, _softmax_tile(x0, FTZ, NOMAX).to(y_ptr.dtype.element_ty), mask=m0)
        tl.store(yp1, _softmax_tile(x1, FTZ, NOMAX).to(y_ptr.dtype.element_ty), mask=m1)


def main():
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    print(f"{torch.cuda.get_device_name()}  copy {tune.copy_bandwidth():.0f} GB/s  SMs {sms}", flush=True)
    for dtype in ("bfloat16", "float32"):
        for B, N, T in SHAPES:
            tdt = getattr(torch, dtype)
            x = torch.randn(B, N, T, device="cuda", dtype=tdt)
            ref = torch.softmax(x.float(), 1)
            nbytes = 2 * x.numel() * x.element_size()
            plan = dispatch.plan_columns_forward(B, N, T, N * T, T, N * T, T, dtype, False, sms)
            # the variants' tile: dispatch's, or for long columns (cooperative or split since 2804011) the loop's
            kw = (plan if plan[0].kernel == "softmax_fwd_cols" else
                  dispatch.plan_columns_forward(B, N, T, N * T, T, N * T, T, dtype, False, sms, "loop"))[0].kwargs
            bn, bt, w = kw["BLOCK_N"], kw["BLOCK_T"], kw["num_warps"]
            grid = B * triton.cdiv(T, bt)
            cells = []

            def var(mode, ftz=False, nomax=False, bt=bt, w=w, bn=bn):
                g = B * triton.cdiv(T, bt)

                def f(x):
                    y = torch.empty_like(x)
                    fwd_variant[(g // 2 if mode == 2 else g,)](x, N, T, N * T, T, y, BLOCK_N=bn, BLOCK_T=bt, MODE=mode,
                                                               FTZ=ftz, NOMAX=nomax, num_warps=w,
                                                               num_stages=2 if mode == 3 else 1)
                    return y
                return f

            variants = [("dispatch", lambda x: tune.run_plan(plan, {"x": x}, torch.empty_like(x))),
                        ("copy", var(1)), ("nomax", var(0, nomax=True)), ("tl.exp2", var(0)), ("ftz", var(0, ftz=True))]
            if grid % 2 == 0 and (B * T // bt) % 2 == 0 and T % (2 * bt) == 0:
                variants.append(("pair2", var(2)))
                variants.append(("pair2ftz", var(2, ftz=True)))
            for t_, w_ in TILES:
                if kw["ONE_TILE"] and t_ <= triton.next_power_of_2(T) and bn * t_ // (32 * w_) <= 128:
                    variants.append((f"t{t_}w{w_}", var(0, bt=t_, w=w_)))
            if not kw["ONE_TILE"]:
                variants = variants[:1]
                for t_, n_, w_ in LOOPS:
                    if t_ <= triton.next_power_of_2(T):
                        variants.append((f"loop-t{t_}n{n_}w{w_}", var(3, bt=t_, bn=n_, w=w_)))
                        variants.append((f"loopftz-t{t_}n{n_}w{w_}", var(3, ftz=True, bt=t_, bn=n_, w=w_)))
            for name, f in variants:
                got = f(x).float()
                err = ((got - ref).abs().max()).item()
                us, _ = timing.torch_time(f, (x,), nbytes, cuda=True, graphable=True, l2_bytes=l2)
                cells.append(f"{name} {nbytes / us / 1e3:5.0f}" + (" ERR" if err > 2e-2 and name not in ("copy", "nomax") else ""))
            print(f"{dtype} {B}x{N}x{T} fwd | BLOCK_N={bn},BLOCK_T={bt},warps={w} | GB/s " + " | ".join(cells), flush=True)
            del x, ref
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
