"""The two seed kernels of ../shared/seeds, re-implemented for the benchmark (forward softmax).

`seed001_softmax_kernel`: the Triton tutorial's fused softmax, a whole row in registers
(BLOCK_N = next_pow2(N)), programs striding over rows. `seed000_softmax_kernel`: the blog's
two-pass online kernel, a row streamed in tiles. Launchers: `bench/peers.py`. A module of
its own so that triton is imported only when a seed peer is made (after TRITON_INTERPRET is
decided), and so that the kernels see `tl` as a global, as Triton's compiler requires.
"""

import triton
import triton.language as tl


@triton.jit
def seed001_softmax_kernel(x_ptr, y_ptr, M, N, stride_xm, stride_ym,
                           BLOCK_N: tl.constexpr, NUM_STAGES: tl.constexpr):
    # The whole row in registers (BLOCK_N = next_pow2(N), masked); the programs stride
    # over rows, so a grid sized to the GPU's occupancy covers any M.
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    for row in tl.range(tl.program_id(0), M, tl.num_programs(0), num_stages=NUM_STAGES):
        row64 = tl.cast(row, tl.int64)  # offsets past 2**31 elements stay right
        x = tl.load(x_ptr + row64 * stride_xm + cols, mask=mask, other=-float("inf")).to(tl.float32)
        e = tl.exp(x - tl.max(x, axis=0))
        y = e / tl.sum(e, axis=0)
        tl.store(y_ptr + row64 * stride_ym + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def seed000_softmax_kernel(x_ptr, y_ptr, N, stride_xm, stride_ym, BLOCK_N: tl.constexpr):
    # One row a program, streamed in BLOCK_N tiles twice: pass 1 keeps a running max m
    # and a sum s rescaled whenever m grows; pass 2 re-reads the row and normalizes.
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * stride_xm
    y_row = y_ptr + row * stride_ym
    cols = tl.arange(0, BLOCK_N)
    m = tl.full((), -float("inf"), tl.float32)
    s = tl.zeros((), tl.float32)
    for start in range(0, N, BLOCK_N):
        mask = start + cols < N
        x = tl.load(x_row + start + cols, mask=mask, other=-float("inf")).to(tl.float32)
        m_new = tl.maximum(m, tl.max(x, axis=0))
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), axis=0)
        m = m_new
    inv_s = 1.0 / s
    for start in range(0, N, BLOCK_N):
        mask = start + cols < N
        x = tl.load(x_row + start + cols, mask=mask, other=-float("inf")).to(tl.float32)
        y = tl.exp(x - m) * inv_s
        tl.store(y_row + start + cols, y.to(y_ptr.dtype.element_ty), mask=mask)
