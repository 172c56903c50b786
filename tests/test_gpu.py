"""GPU-only checks: compiled kernels at real sizes, 64-bit offsets past 2**31 elements.

Skipped cleanly without a CUDA device; run on the GPU machine with the rest of the suite.
"""

import math

import numpy as np
import pytest
import torch

import multisoftmax.torch as mt
import reference64 as ref
from forced_plans import FWD32_OFFS32_LIMITS, grids16_tiling, whole32_tiling, without_ftz
from multisoftmax import dispatch

# After multisoftmax: without a GPU it sets TRITON_INTERPRET before triton is first imported, and
# Triton's own library must be built for the interpreter too (a first import here broke every
# interpreted kernel of the suite that ran after this module was collected).
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")]


@pytest.fixture
def gpu_to_itself(tmp_path_factory):
    """Hold a lock file shared by pytest-xdist's workers (their base temp dirs share a parent; the
    recipe of xdist's docs): tests that take tens of GB of GPU memory run one at a time, while
    every other test of the suite spreads over the workers. An xdist_group mark on this file did
    the same for all its tests, but serially they outgrew a device call, and pytest 9.2 drops such
    marks under --dist loadgroup (pytest-xdist issue 1386), so a lock is what holds either way."""
    from filelock import FileLock  # torch's own dependency

    with FileLock(tmp_path_factory.getbasetemp().parent / "multisoftmax_gpu.lock"):
        yield


@pytest.fixture(autouse=True)
def _triton_cache_dir_is_set():
    """Diagnose a 'Could not create or locate cache dir' seen once after other tests ran."""
    import os

    import triton

    assert triton.knobs.cache.dir, f"triton cache dir is empty: TRITON_CACHE_DIR={os.environ.get('TRITON_CACHE_DIR')!r}"


def _sms():
    return torch.cuda.get_device_properties(0).multi_processor_count


def _gpu_kw() -> dict:
    """`gpu=` as the adapters plan with it on this GPU (its key of dispatch.ROWS_TILINGS and GPU_CONSTANTS):
    plans made so are the adapters' own objects (dispatch caches plans by their arguments, keywords too)."""
    return {"gpu": dispatch.tuned_gpu(torch.cuda.get_device_name())}


@pytest.mark.parametrize("M,N,family", [
    (524_289, 4096, "rows"),         # 2**31 + 4096 elements, a row in registers
    (32_769, 65_536, "coop"),        # 2**31 + 65536 elements, a chunk of a row a program
    (8, 268_435_457, "split"),       # 2**31 + 8 elements, rows split across programs
])
@pytest.mark.usefixtures("gpu_to_itself")
def test_past_2_pow_31_elements(M, N, family):
    assert M * N > 2**31
    assert dispatch.family(M, N, 2, _sms(), True) == family
    g = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(M, N, device="cuda", dtype=torch.bfloat16, generator=g)
    y = mt.softmax(x)
    for rows in (slice(0, 1), slice(M - 1, M)):  # the last row sits past 2**31
        expected = torch.softmax(x[rows].double(), -1)
        ref.assert_close(y[rows].double().cpu(), expected.cpu(), "bfloat16", f"{family} rows {rows}")
    dy = torch.randn(M, N, device="cuda", dtype=torch.bfloat16, generator=g)
    dx = torch.ops.multisoftmax.softmax_bwd(y, dy, False)
    last = slice(M - 1, M)
    expected = ref.softmax_backward(y[last].double().cpu().numpy(), dy[last].double().cpu().numpy())
    ref.assert_close(dx[last].double().cpu(), expected, "bfloat16", "bwd last row", scale_atol=True)
    del x, y, dy, dx
    torch.cuda.empty_cache()


def test_jax_then_torch_in_one_process():
    """jax-triton blanks TRITON_CACHE_DIR on import; the torch path must still compile after it."""
    import os

    import jax.numpy as jnp
    import numpy as np
    import triton

    import multisoftmax.jax as mj

    x = np.random.default_rng(0).standard_normal((3, 77)).astype(np.float32)
    ref.assert_close(mj.softmax(jnp.asarray(x)), ref.softmax(x), "float32")
    assert os.environ.get("TRITON_CACHE_DIR") != "" and triton.knobs.cache.dir
    xt = torch.randn(5, 3001, device="cuda")  # a shape no other test compiled
    ref.assert_close(mt.log_softmax(xt).cpu(), torch.log_softmax(xt.double(), -1).cpu(), "float32")


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("M,N", [(65536, 128), (4096, 781), (2048, 3000), (1024, 16385), (300, 29440), (1, 32768),
                                 (256, 65536), (1024, 50257), (3, 50257), (4, 262144), (1, 1048576), (64, 128256),
                                 (64, 1048576), (16, 1048576), (8, 1048576), (24, 1048576), (128, 524288)])
def test_dispatched_plans_at_real_sizes(dtype, M, N):
    """Whatever plan dispatch picks for a benchmark shape, its output is right everywhere
    (the forward on keyed partials, SENT: 64 x 1048576; float32 16 x 1048576, the log_softmax
    leaving late; the float32 softmax of 8 x 1048576, leaving early; 16-bit 24 x 1048576 in
    wide packed chunks, leaving late below COOP_LATE_LEAVE_MIN_PER_SM, the softmax there under
    COOP_X2_CAP_REGS; 16-bit 128 x 524288, 16 and 8 x 1048576 in
    COOP_SPLIT_SUM_MAX_CHUNKS's chunks; the float32 log_softmax backward of 64, 16 and 8 x 1048576
    and 64 x 128256 deferring y under COOP_CAP32_REGS)."""
    g = torch.Generator(device="cuda").manual_seed(M + N)
    x = (torch.randn(M, N, device="cuda", generator=g) * 4).to(dtype)
    name = {torch.float32: "float32", torch.bfloat16: "bfloat16", torch.float16: "float16"}[dtype]
    for log in (False, True):
        y = torch.ops.multisoftmax.softmax_fwd(x, log)
        expected = (torch.log_softmax if log else torch.softmax)(x.double(), -1).to(dtype).double()
        ref.assert_close(y.double().cpu(), expected.cpu(), name, f"log={log}")
        dy = torch.randn(M, N, device="cuda", generator=g).to(dtype)
        dx = torch.ops.multisoftmax.softmax_bwd(y, dy, log)
        y64, dy64 = y.double(), dy.double()
        expected = (dy64 - torch.exp(y64) * dy64.sum(-1, keepdim=True)) if log else \
            y64 * (dy64 - (dy64 * y64).sum(-1, keepdim=True))
        ref.assert_close(dx.double().cpu(), expected.cpu(), name, f"bwd log={log}", scale_atol=True)


@pytest.mark.parametrize("dtype,N", [(torch.float32, 300), (torch.float32, 384), (torch.float32, 600),
                                     (torch.float32, 896), (torch.bfloat16, 781), (torch.float16, 1024),
                                     (torch.bfloat16, 2000), (torch.float16, 1536)])
def test_rows_bwd_one_row_through_both_adapters(dtype, N):
    """dispatch.ROWS_BWD_ONE_ROW_WARPS: the float32 backward of rows in 512 and 1024 lanes, one row a
    program (plain: 300, 600 mid-line; filled: 384, 896), and the 16-bit one in 1024 lanes (781: rows
    that start unaligned; 1024: filled), right against float64 through the torch adapter and the JAX
    adapter (jax.vjp), both ops, at an odd row count; and the 16-bit one in 2048 lanes at 8 warps
    (ROWS_BWD16_WIDE_LANES: 2000, 1536)."""
    M, name = 777, str(dtype).split(".")[-1]
    itemsize = torch.empty((), dtype=dtype).element_size()
    (one,) = dispatch.plan_backward(M, N, N, N, N, name, False, _sms())
    kw = one.kwargs
    warps = dispatch.ROWS_BWD_ONE_ROW_WARPS[itemsize].get(kw["BLOCK_N"], dispatch.ROWS_BWD16_WIDE_WARPS)
    assert (kw["BLOCK_M"], kw["num_warps"]) == (1, warps)
    assert dispatch.fills_shared(one) == (N in (384, 896, 1024))
    g = torch.Generator(device="cuda").manual_seed(N)
    x = (torch.randn(M, N, device="cuda", generator=g) * 4).to(dtype)
    dy = torch.randn(M, N, device="cuda", generator=g).to(dtype)
    _check_both_adapters(x, dy, name, f"N={N}")


def _check_both_adapters(x, dy, dtype: str, what: str):
    """x's softmax and log_softmax, forward and backward (dy), through the torch adapter and the JAX adapter
    (jax.vjp): each right against float64 (`dtype`: x's, by name; `what`: the case, for messages)."""
    import jax
    import jax.numpy as jnp

    import multisoftmax.jax as mj

    for log, jf in ((False, mj.softmax), (True, mj.log_softmax)):
        y = torch.ops.multisoftmax.softmax_fwd(x, log)
        expected = (torch.log_softmax if log else torch.softmax)(x.double(), -1).to(x.dtype).double().cpu()
        ref.assert_close(y.double().cpu(), expected, dtype, f"torch fwd {what} log={log}")
        dx = torch.ops.multisoftmax.softmax_bwd(y, dy, log)
        y64, dy64 = y.double().cpu().numpy(), dy.double().cpu().numpy()
        ref.assert_close(dx.double().cpu(), ref.softmax_backward(y64, dy64, log=log), dtype,
                         f"torch bwd {what} log={log}", scale_atol=True)
        xj = jnp.asarray(x.float().cpu().numpy()).astype(jnp.dtype(dtype))
        yj, pull = jax.vjp(lambda a: jf(a, -1), xj)
        ref.assert_close(np.asarray(yj, np.float64), expected.numpy(), dtype, f"jax fwd {what} log={log}")
        (dxj,) = pull(jnp.asarray(dy.float().cpu().numpy()).astype(jnp.dtype(dtype)))
        yj64 = np.asarray(yj, np.float64)
        ref.assert_close(np.asarray(dxj, np.float64), ref.softmax_backward(yj64, dy64, log=log), dtype,
                         f"jax bwd {what} log={log}", scale_atol=True)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("M,N,stride", [(16384, 100, 100), (8000, 256, 264), (65536, 32, 32), (777, 1024, 1024),
                                        (513, 1024, 1032)])
def test_rows_fwd16_offs32_and_even_n_through_both_adapters(dtype, M, N, stride):
    """dispatch.ROWS_FWD16_OFFS32_LANES (32-bit offsets: the 16-bit forward of several rows a program in at
    most 256 lanes; the softmax's grid here is long enough) and the unmasked one row a program of
    ROWS_FWD_ONE_ROW_N (EVEN_N), right against float64 through the torch adapter and the JAX adapter, both
    ops, on contiguous rows and rows `stride` apart (a slice of a wider tensor)."""
    import jax.numpy as jnp
    import numpy as np

    import multisoftmax.jax as mj

    name = str(dtype).split(".")[-1]
    for log, jf in ((False, mj.softmax), (True, mj.log_softmax)):
        kw = dispatch.plan_forward(M, N, stride, N, name, log, _sms())[0].kwargs
        assert kw["OFFS32"] if N <= 256 else (kw["EVEN_N"] and kw["EVEN_M"] and kw["BLOCK_M"] == 1), kw
        g = torch.Generator(device="cuda").manual_seed(M + N + stride)
        x = (torch.randn(M, stride, device="cuda", generator=g) * 4).to(dtype)[:, :N]
        expected = ref.softmax(x.double().cpu().numpy(), log=log)
        y = torch.ops.multisoftmax.softmax_fwd(x, log)
        ref.assert_close(y.double().cpu(), expected, name, f"torch fwd {M}x{N} log={log}")
        xj = jnp.asarray(x.float().cpu().numpy()).astype(jnp.dtype(name))
        ref.assert_close(np.asarray(jf(xj, -1), np.float64), expected, name, f"jax fwd {M}x{N} log={log}")


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64])
def test_coop_one_chunk_per_sm_many_rows(dtype):
    """The cooperative kernels at their limit, a row with one chunk on every SM, and many
    more programs than the GPU holds at once: they finish (no wait left hanging) and every
    row is right, forward and backward."""
    itemsize = torch.empty((), dtype=dtype).element_size()
    N = dispatch.COOP_CHUNK_N[itemsize] * _sms()
    M = max(8, 2**27 // (N * itemsize))
    assert dispatch.family(M, N, itemsize, _sms(), True) == "coop"
    assert dispatch.family(M, N + 1, itemsize, _sms(), False) != "coop"
    g = torch.Generator(device="cuda").manual_seed(1)
    x = (torch.randn(M, N, device="cuda", generator=g) * 3).to(dtype)
    name = {torch.float32: "float32", torch.bfloat16: "bfloat16", torch.float64: "float64"}[dtype]
    for log in (False, True):
        y = torch.ops.multisoftmax.softmax_fwd(x, log)
        expected = (torch.log_softmax if log else torch.softmax)(x.double(), -1)
        ref.assert_close(y.double().cpu(), expected.cpu(), name, f"coop fwd log={log}")
        dy = torch.randn(M, N, device="cuda", generator=g).to(dtype)
        dx = torch.ops.multisoftmax.softmax_bwd(y, dy, log)
        expected_dx = ref.softmax_backward(y.double().cpu().numpy(), dy.double().cpu().numpy(), log=log)
        ref.assert_close(dx.double().cpu(), expected_dx, name, f"coop bwd log={log}", scale_atol=True)


def _check_softmax(y, x, name, what):
    expected = torch.softmax(x.double(), -1)
    ref.assert_close(y.double().cpu(), expected.cpu(), name, what)


def _plan_spies(monkeypatch) -> list:
    """The `gpu` that each call of dispatch.plan_forward / plan_backward is made with, from now on."""
    seen = []
    for name in ("plan_forward", "plan_backward"):
        def spy(*args, real=getattr(dispatch, name), **kwargs):
            seen.append(kwargs.get("gpu"))
            return real(*args, **kwargs)
        monkeypatch.setattr(dispatch, name, spy)
    return seen


def _check_random_rows(M, N, dtype):
    """`_check_both_adapters` on fresh M x N inputs of `dtype` (x at 4x the unit spread; seeded by N)."""
    g = torch.Generator(device="cuda").manual_seed(N)
    tdt = getattr(torch, dtype)
    x = (torch.randn(M, N, device="cuda", generator=g) * 4).to(tdt)
    dy = torch.randn(M, N, device="cuda", generator=g).to(tdt)
    _check_both_adapters(x, dy, dtype, f"{M}x{N}")


@pytest.mark.parametrize("dtype,per_sm,N,kernels", [
    ("bfloat16", 12, 29440, ("coop", "coop", "rows")),  # ROWS_BWD16_RELOAD_*
    ("float16", 4, 16896, ("rows", "rows", "rows")),  # ROWS_TAIL16_BWD_RELOAD
    ("bfloat16", 10, 16385, ("rows", "coop", "rows")),  # ROWS_PEELED16_FWD_WARPS, _COOP (log_softmax)
    ("float16", 24, 12289, ("coop", "coop", "rows"))])  # ROWS_PEELED16_FWD_COOP (softmax)
def test_h200_rows_rules_through_both_adapters(dtype, per_sm, N, kernels):
    """The H200's rules for 16-bit rows (GPU_CONSTANTS: the wide softmax backward as rows under a register cap,
    the backward of rows with a tail reloading, the peeled forward at 16 warps or cooperative) at the rows an SM
    that take them, through the torch adapter and the JAX adapter (jax.vjp), both ops: right against float64.
    On another GPU the same shapes run its own plans, checked alike."""
    M, gpu = per_sm * _sms() + 1, dispatch.tuned_gpu(torch.cuda.get_device_name())
    if gpu == "H200":
        fwd = dispatch.plan_forward(M, N, N, N, dtype, False, _sms(), gpu=gpu)[-1]
        fwd_log = dispatch.plan_forward(M, N, N, N, dtype, True, _sms(), gpu=gpu)[-1]
        bwd = dispatch.plan_backward(M, N, N, N, N, dtype, False, _sms(), gpu=gpu)[-1]
        assert (fwd.kernel, fwd_log.kernel, bwd.kernel) == tuple(f"softmax_{d}_{k}" for d, k in zip(
            ("fwd", "fwd", "bwd"), kernels))
        assert N % 8 or bwd.kwargs["RELOAD"] and bwd.kwargs.get("maxnreg") == (64 if N == 29440 else None)
        assert N % 8 == 0 or kernels[0] == "coop" or fwd.kwargs["num_warps"] == 16
    _check_random_rows(M, N, dtype)


@pytest.mark.parametrize("dtype,N", [("float32", 1088), ("float32", 4352), ("float32", 17408), ("bfloat16", 2112),
                                     ("float16", 8704), ("bfloat16", 16400), ("float32", 1152), ("bfloat16", 1152),
                                     ("float16", 2560), ("bfloat16", 4800), ("float16", 9000), ("bfloat16", 10240)])
def test_h200_tail_rows_through_both_adapters(dtype, N):
    """The H200's plans for aligned rows of a power of two and a tail (GPU_CONSTANTS' ROWS_TAIL_FWD_WARPS and,
    16-bit, ROWS_TAIL_BWD_WARPS: 1-16 warps, one row a program; the forward's tails past row_segments' 1/16,
    ROWS_FWD_TAILS, from 1152; 16-bit 4096 and 8192 + a tail under ROWS_TAIL_FWD_CAP_REGS' caps) on 2 rows an SM
    and one more, through the torch adapter and the JAX adapter (jax.vjp), both ops and directions: right against
    float64. On another GPU the same shapes run its own plans, checked alike."""
    M, gpu = 2 * _sms() + 1, dispatch.tuned_gpu(torch.cuda.get_device_name())
    if gpu == "H200":
        itemsize = torch.empty((), dtype=getattr(torch, dtype)).element_size()
        consts = dispatch.GPU_CONSTANTS[gpu]
        block_n = triton.next_power_of_2(N) // 2
        for log in (False, True):
            fwd = dispatch.plan_forward(M, N, N, N, dtype, log, _sms(), gpu=gpu)[-1]
            assert (fwd.kernel, fwd.kwargs["BLOCK_N"], fwd.kwargs["TAIL_N"], fwd.kwargs["num_warps"],
                    fwd.kwargs.get("maxnreg")) == (
                "softmax_fwd_rows", block_n, triton.next_power_of_2(N - block_n),
                consts["ROWS_TAIL_FWD_WARPS"][itemsize, block_n],
                consts["ROWS_TAIL_FWD_CAP_REGS"].get((itemsize, block_n))), (N, log)
            bwd = dispatch.plan_backward(M, N, N, N, N, dtype, log, _sms(), gpu=gpu)[-1]
            if dispatch.row_segments(N)[1]:  # the backward's tails are row_segments' alone
                assert bwd.kwargs["num_warps"] == consts["ROWS_TAIL_BWD_WARPS"].get(
                    (itemsize, block_n), bwd.kwargs["num_warps"]), (N, log)
    _check_random_rows(M, N, dtype)


def test_h200_wide_fill_rows_through_both_adapters():
    """The H200's float32 log_softmax forward of rows in part of 16384 lanes (ROWS_TILINGS: one row a program at 8
    warps), 2 rows an SM and one more, through both adapters, both ops and directions: right against float64."""
    M, N, gpu = 2 * _sms() + 1, 12288, dispatch.tuned_gpu(torch.cuda.get_device_name())
    if gpu == "H200":
        fwd = dispatch.plan_forward(M, N, N, N, "float32", True, _sms(), gpu=gpu)[-1]
        assert (fwd.kernel, fwd.kwargs["BLOCK_M"], fwd.kwargs["num_warps"]) == ("softmax_fwd_rows", 1, 8)
    _check_random_rows(M, N, "float32")


@pytest.mark.parametrize("dtype,M,N,ftz", [
    ("bfloat16", 1000, 128, True),     # 8 rows a program
    ("float16", 300, 4352, True),      # 4096 + a tail of 256 under a register cap
    ("bfloat16", 300, 16384, True),    # one row a program at 16 warps
    ("float16", 200, 3000, True),      # aligned to 8 values, not a power of two
    ("bfloat16", 300, 16385, True),    # peeled (the softmax; the log_softmax is cooperative)
    ("bfloat16", 1000, 1002, False)])  # unaligned, not peeled: left out (odd rows peel: ROWS_PEEL16)
def test_h200_rows16_ftz_through_both_adapters(dtype, M, N, ftz):
    """The H200's 16-bit rows forward by ex2.approx.ftz (GPU_CONSTANTS' ROWS16_FWD_FTZ) through the torch adapter
    and the JAX adapter, both ops, with a NaN, a +inf, an all -inf row, a row -inf but for its lowest finite value,
    one whose -inf come first, the largest and lowest finite values: right against float64
    (_check_forward_both_adapters); then random x, forward and backward (_check_random_rows). On another GPU the
    same shapes run its own plans."""
    if dispatch.tuned_gpu(torch.cuda.get_device_name()) == "H200":
        for log in (False, True):
            one = dispatch.plan_forward(M, N, N, N, dtype, log, _sms(), gpu="H200")[-1]
            if one.kernel == "softmax_fwd_rows":
                assert one.kwargs.get("FTZ", False) == ftz, (log, one)
            else:
                assert (N, log, one.kernel) == (16385, True, "softmax_fwd_coop")
    big = torch.finfo(getattr(torch, dtype)).max
    g = torch.Generator(device="cuda").manual_seed(M + N)
    x = (torch.randn(M, N, device="cuda", generator=g) * 3).to(getattr(torch, dtype))
    x[0, 5], x[1, 7], x[2, :], x[3, :] = float("nan"), float("inf"), -float("inf"), -float("inf")
    x[3, N - 1], x[4, : N // 2], x[5, 9], x[6, 10] = -big, -float("inf"), big, -big
    _check_forward_both_adapters(x, 1, dtype, f"{M}x{N}")
    _check_random_rows(M, N, dtype)


def _check_forward_both_adapters(x: torch.Tensor, dim: int, dtype: str, what: str):
    """softmax and log_softmax of x (CUDA, of `dtype`) over `dim` through the torch adapter and the JAX adapter
    (jitted): right against torch's float64 ones (NaN where those have it); x freed after."""
    import jax
    import jax.numpy as jnp

    import multisoftmax.jax as mj

    for log, tf, jf in ((False, mt.softmax, mj.softmax), (True, mt.log_softmax, mj.log_softmax)):
        expected = (torch.log_softmax if log else torch.softmax)(x.double(), dim).cpu()
        yj = jax.jit(lambda a: jf(a, dim))(jnp.asarray(x.double().cpu().numpy()).astype(jnp.dtype(dtype)))
        for who, y in (("torch", tf(x, dim).double().cpu()), ("jax", torch.from_numpy(np.asarray(yj, np.float64)))):
            ref.assert_close(y, expected, dtype, f"{who} {what} log={log}")
    del x
    torch.cuda.empty_cache()


@pytest.mark.parametrize("dtype,N,per_sm,warps", [("bfloat16", 5200, 6, 4), ("float16", 7000, 6, 4),
                                                  ("bfloat16", 7680, 6, 16), ("bfloat16", 5200, 2, 16)])
def test_h200_rows16_ftz_warps_through_both_adapters(dtype, N, per_sm, warps):
    """The H200's 16-bit rows in part of 8192 lanes at 4 warps with FTZ (GPU_CONSTANTS' ROWS16_FWD_FTZ_WARPS: up to
    0.875 of the lanes, from ROWS16_FWD_FTZ_WARPS_MIN_PER_SM = 6 rows an SM), a row past that and a smaller grid at
    the rules' 16, `per_sm` rows an SM and one more, through the torch adapter and the JAX adapter (jax.vjp), both
    ops and directions: right against float64. On another GPU the same shapes run its own plans, checked alike."""
    M = per_sm * _sms() + 1
    if dispatch.tuned_gpu(torch.cuda.get_device_name()) == "H200":
        for log in (False, True):
            (fwd,) = dispatch.plan_forward(M, N, N, N, dtype, log, _sms(), gpu="H200")
            assert (fwd.kernel, fwd.kwargs["num_warps"], fwd.kwargs["FTZ"]) == ("softmax_fwd_rows", warps, True)
    _check_random_rows(M, N, dtype)


@pytest.mark.parametrize("dtype,N,per_sm", [("bfloat16", 193, 32), ("float16", 385, 32), ("bfloat16", 781, 32),
                                            ("float16", 1201, 32), ("bfloat16", 1999, 32), ("float16", 254, 32),
                                            ("bfloat16", 300, 32), ("bfloat16", 41, 32), ("float16", 77, 32),
                                            ("bfloat16", 521, 32), ("float16", 257, 32), ("bfloat16", 77, 2),
                                            ("float16", 449, 8), ("bfloat16", 781, 16), ("bfloat16", 19, 32),
                                            ("float16", 33, 32), ("bfloat16", 37, 32), ("bfloat16", 25, 8),
                                            ("float16", 17, 2), ("bfloat16", 34, 32), ("float16", 66, 32),
                                            ("bfloat16", 17, 32), ("float16", 29, 32), ("bfloat16", 13, 32),
                                            ("float16", 7, 32), ("bfloat16", 11, 4), ("bfloat16", 99, 500),
                                            ("bfloat16", 31, 500), ("float16", 35, 2000), ("float16", 37, 300),
                                            ("bfloat16", 31, 200), ("bfloat16", 99, 64), ("float16", 59, 40),
                                            ("bfloat16", 201, 40), ("float16", 140, 47), ("bfloat16", 43, 60),
                                            ("float16", 221, 64), ("bfloat16", 180, 50), ("bfloat16", 65, 36),
                                            ("float16", 51, 52), ("bfloat16", 245, 79), ("float16", 65, 85),
                                            ("bfloat16", 191, 53)])
def test_peel16_through_both_adapters(dtype, N, per_sm):
    """Unaligned 16-bit rows peeled (ROWS_PEEL16, the H200's first and every GPU's since 2026-12-06: odd N forward and
    backward in 16-2048 lanes at 1 warp, the backward in 2048 at 2; even N the forward in 256; rows with a tail too,
    ROWS_PEEL16_TAILS; in 512 lanes ROWS_TILINGS' 4 rows at 2 warps for the even rows, unpeeled; rows with a tail whole,
    ROWS_WHOLE16_TAILS: 34 and 66 values at 16 rows and 1 warp, 17 and 33's forward at 32; the odd backward of 25-31
    values whole at ROWS_PEEL16's tiling, ROWS_PEEL16_WHOLE_FILL, and of 5-15 values at 64 and 32 rows,
    ROWS_ODD16_TILINGS), `per_sm` rows an SM and one more (under ROWS_PEEL16_MIN_PER_SM's 32, odd rows one a program at
    1 warp, 4 in 16 and 32 lanes, the backward to 512 lanes, ROWS_PEEL16_SMALL_LANES and ROWS_PEEL16_SMALL_M; rows with
    a tail peeled; on the H100 the forward of 25-263 values, even ones of 137-263 too, and the backward of 41-71, 73-127
    and 137-263 re-tiled by op and grid, ROWS_PEEL16_GRIDS: forced_plans.grids16_tiling): through the torch adapter and
    the JAX adapter (jax.vjp), both ops and directions, on random x, on x with a NaN, a +inf, an all -inf row and the
    largest and lowest finite values, and (the torch adapter) on x and dy that start 2 bytes past their storage: right
    against float64. The peeled forwards in 128 and 256 lanes take OFFS32 and SAME_STRIDES (ROWS_FWD16_SAME_LANES). The
    plans are asserted on every GPU (the 512-lane even rows' tiling on the H200)."""
    M = per_sm * _sms() + 1
    gpu = dispatch.tuned_gpu(torch.cuda.get_device_name())
    for log in (False, True):
        (fwd,) = dispatch.plan_forward(M, N, N, N, dtype, log, _sms(), gpu=gpu)
        (bwd,) = dispatch.plan_backward(M, N, N, N, N, dtype, log, _sms(), gpu=gpu)
        small_bwd = per_sm < 32 and N > 511  # the backward's small grids past 512 lanes: as the rules plan them
        # whole: rows with a tail (the odd ones in grids of 32 rows an SM, 33 forward), the backward of 25-31
        whole_fwd = N in (34, 66) or N in (17, 33) and per_sm >= 32
        whole_bwd = N in (34, 66) or N == 17 and per_sm >= 32 or 25 <= N <= 31
        odd = N % 2 == 1 and N > 16  # (shorter odd rows: whole, the backward at ROWS_ODD16_TILINGS')
        assert (fwd.kwargs["PEEL"], bwd.kwargs["PEEL"]) == ((odd or 128 < N < 256) and not whole_fwd,
                                                            odd and not small_bwd and not whole_bwd)
        grid_fwd, grid_bwd = (grids16_tiling(forward, N, log, M, gpu, _sms()) if not whole else None
                              for forward, whole in ((True, whole_fwd), (False, whole_bwd)))  # ROWS_PEEL16_GRIDS
        assert not odd or grid_fwd or fwd.kwargs["num_warps"] == 1, (log, N)
        assert per_sm >= 32 or not odd or (fwd.kwargs["BLOCK_M"], fwd.kwargs["num_warps"]) == (
            4 if N < 40 else 1, 1)
        assert N > 16 or (bwd.kwargs["BLOCK_M"], bwd.kwargs["num_warps"]) == (64 if N < 8 else 32, 1), (log, N)
        assert N >= 40 or N < 17 or per_sm < 32 or all(
            (one.kwargs["BLOCK_M"], one.kwargs["num_warps"]) == (grid or (32 if odd_tail else 16, 1))
            for one, odd_tail, grid in ((fwd, N in (17, 33), grid_fwd), (bwd, N == 17, None))), (log, N)
        assert grid_bwd is None or (bwd.kwargs["BLOCK_M"], bwd.kwargs["num_warps"]) == grid_bwd, (log, N)
        assert grid_fwd is None or (fwd.kwargs["BLOCK_M"], fwd.kwargs["num_warps"]) == grid_fwd, (log, N)
        assert N != 300 or gpu != "H200" or (fwd.kwargs["BLOCK_M"], fwd.kwargs["num_warps"]) == (4, 2)
        same = fwd.kwargs["PEEL"] and fwd.kwargs["BLOCK_N"] in (128, 256)  # ROWS_FWD16_SAME_LANES
        assert fwd.kwargs.get("SAME_STRIDES", False) == same and (fwd.kwargs["OFFS32"] or not same), (log, N)
    _check_rows_special_and_shifted(M, N, dtype)


def _check_rows_special_and_shifted(M: int, N: int, dtype: str):
    """`_check_random_rows`, then M x N rows of `dtype` with a NaN, a +inf, an all -inf row and the largest and lowest
    finite values forward through both adapters, and x and dy that start one value past their storage (not 16-byte
    aligned) both ways through both adapters (torch adapter: autograd; JAX adapter: jax.vjp): right against float64."""
    _check_random_rows(M, N, dtype)
    tdt = getattr(torch, dtype)
    big = torch.finfo(tdt).max
    g = torch.Generator(device="cuda").manual_seed(M + N)
    x = (torch.randn(M, N, device="cuda", generator=g) * 3).to(tdt)
    x[0, 5 % N], x[1, 7 % N], x[2, :], x[5, 9 % N], x[6, 10 % N] = float("nan"), float("inf"), -float("inf"), big, -big
    _check_forward_both_adapters(x, 1, dtype, f"{M}x{N}")
    x = torch.empty(M * N + 1, device="cuda", dtype=tdt)[1:].view(M, N)
    dy = torch.empty(M * N + 1, device="cuda", dtype=tdt)[1:].view(M, N)
    x.copy_(torch.randn(M, N, device="cuda", generator=g) * 4)
    dy.copy_(torch.randn(M, N, device="cuda", generator=g))
    size = x.element_size()
    assert x.data_ptr() % (2 * size) == size and dy.data_ptr() % (2 * size) == size
    _check_both_adapters(x, dy, dtype, f"{M}x{N} shifted")


@pytest.mark.parametrize("dtype,N,per_sm", [("float32", 2, 600), ("float32", 3, 300), ("float32", 3, 8),
                                          ("float32", 5, 300), ("float32", 6, 8), ("float32", 9, 150),
                                          ("float32", 13, 8), ("float32", 17, 80), ("float32", 17, 8),
                                          ("float32", 25, 80), ("float32", 30, 8), ("float32", 1, 64),
                                          ("float64", 1, 64)])
def test_whole32_through_both_adapters(dtype, N, per_sm):
    """Float32 rows not 16-byte aligned of 2-32 values whole at this GPU's tiling (ROWS_WHOLE32, as
    forced_plans.whole32_tiling writes it out: the H200's and the H100's, any other GPU's the H100's rules; the
    log_softmax forward of odd 19-31 kept peeled; their forward whole in ROWS_FWD32_OFFS32[0] lanes (ALIGN 2: from 4
    programs an SM) or peeled and at most ROWS_FWD32_OFFS32[1] values long with 32-bit offsets, y's x's), and the rows
    no GPU peels now (float32 N < 4, float64 N = 1), `per_sm` rows an SM and one more: through the torch adapter and the
    JAX adapter (jax.vjp), both ops and directions, on random x, on x with a NaN, a +inf, an all -inf row and the
    largest and lowest finite values, and (the torch adapter) on x and dy that start 4 bytes past their storage: right
    against float64."""
    M = per_sm * _sms() + 1
    gpu = dispatch.tuned_gpu(torch.cuda.get_device_name())
    whole32, peeled32 = dispatch._tuned("ROWS_FWD32_OFFS32", gpu)
    assert (whole32, peeled32) == FWD32_OFFS32_LIMITS.get(gpu, FWD32_OFFS32_LIMITS[""]), gpu
    for log in (False, True):
        for one in (dispatch.plan_forward(M, N, N, N, dtype, log, _sms(), gpu=gpu)
                    + dispatch.plan_backward(M, N, N, N, N, dtype, log, _sms(), gpu=gpu)):
            forward = one.kernel == "softmax_fwd_rows"
            assert one.kernel in ("softmax_fwd_rows", "softmax_bwd_rows"), (N, one.kernel)
            assert one.kwargs["PEEL"] == (N == 25 and log and forward), (log, N, one.kernel)
            if forward and dtype == "float32":  # ROWS_FWD32_OFFS32
                offs32 = (N <= peeled32 if one.kwargs["PEEL"] else one.kwargs["BLOCK_N"] <= whole32 and (
                    N % 2 == 1 or one.grid[0] >= 4 * _sms()))  # (ALIGN 2: 4 programs an SM)
                assert one.kwargs["OFFS32"] == offs32 == one.kwargs.get("SAME_STRIDES", False), (log, N)
            if dtype == "float32" and N > 1 and not one.kwargs["PEEL"]:
                tiling = whole32_tiling(gpu, N, forward, log, N % 2 == 1)
                want = tiling[:2] if M >= 4 * _sms() * tiling[0] else tiling[2:]
                assert (one.kwargs["BLOCK_M"], one.kwargs["num_warps"]) == want, (gpu, log, N, one.kernel)
    _check_rows_special_and_shifted(M, N, dtype)


def _check_columns_both_adapters(dtype: str, shape: tuple, dim: int):
    """softmax and log_softmax over `dim` of a random x of `shape`, forward and backward, through the torch adapter
    (autograd) and the JAX adapter (jax.vjp): right against float64."""
    import jax
    import jax.numpy as jnp

    import multisoftmax.jax as mj

    g = torch.Generator(device="cuda").manual_seed(shape[dim] + math.prod(shape[dim + 1:]))
    tdt = getattr(torch, dtype)
    x = (torch.randn(shape, device="cuda", generator=g) * 3).to(tdt).requires_grad_()
    dy = torch.randn(shape, device="cuda", generator=g).to(tdt)
    for log, tf, jf in ((False, mt.softmax, mj.softmax), (True, mt.log_softmax, mj.log_softmax)):
        y = tf(x, dim)
        (dx,) = torch.autograd.grad(y, x, dy)
        xj = jnp.asarray(x.detach().float().cpu().numpy()).astype(jnp.dtype(dtype))
        yj, pull = jax.vjp(lambda a: jf(a, dim), xj)
        (dxj,) = pull(jnp.asarray(dy.float().cpu().numpy()).astype(jnp.dtype(dtype)))
        expected = (torch.log_softmax if log else torch.softmax)(x.detach().double(), dim).cpu()
        for who, yo, dxo in (("torch", y.detach().double().cpu(), dx.double().cpu()),
                             ("jax", torch.from_numpy(np.asarray(yj, np.float64)),
                              torch.from_numpy(np.asarray(dxj, np.float64)))):
            ref.assert_close(yo, expected, dtype, f"{who} fwd {shape} dim={dim} log={log}")
            dyd = dy.double().cpu()
            want = (dyd - torch.exp(yo) * dyd.sum(dim, keepdim=True) if log
                    else yo * (dyd - (dyd * yo).sum(dim, keepdim=True)))
            ref.assert_close(dxo, want, dtype, f"{who} bwd {shape} dim={dim} log={log}", scale_atol=True)
    del x, dy, y, dx
    torch.cuda.empty_cache()


@pytest.mark.parametrize("dtype,shape,dim,h200,h200_fwd", [
    ("bfloat16", (4096, 2048), 0, "split", False),    # 32 chunks of 128 positions: the tile's split plan
    ("float16", (4, 3000, 256), 1, "split", False),   # 24 chunks; the forward's tile: 32 chunks, the rules'
    ("float16", (16, 1100, 512), 1, "coop", True),    # 9 chunks: cooperative; the forward's tile: 12 chunks
    ("bfloat16", (2, 4096, 128), 1, "split", False),  # T = 128, the tile's BLOCK_T
    ("bfloat16", (2, 32768, 512), 1, "split", False),  # the rules' split plan, in the tile
    ("bfloat16", (8, 2048, 512), 1, "coop", False),   # 16 chunks: cooperative; the forward's tile 32: rules'
    ("bfloat16", (8, 1100, 256), 1, "coop", True),    # 9 chunks: cooperative; the forward's tile: 12 chunks
    ("bfloat16", (2, 4096, 192), 1, "coop", False),   # T not a multiple of 128: the rules'
    ("float32", (4096, 2048), 0, "coop", False)])     # float32: the rules'
def test_h200_cols16_through_both_adapters(dtype, shape, dim, h200, h200_fwd):
    """The H200's 16-bit columns backward (GPU_CONSTANTS' COLS16_BWD_COOP_MAX_CHUNKS, COLS16_BWD_SPLIT_TILE: the
    split plan in runs of 128 values, 8 positions a step, 4 warps, past 16 cooperative chunks, and in place of the
    rules' split plan) and forward (COLS16_FWD_SPLIT_TILE, _CHUNKS: the rules' split plan in runs of 128 values, 32
    positions a step, where that has 5-17 chunks) and the columns they leave to the rules, through the torch
    adapter (autograd) and the JAX adapter (jax.vjp), both ops: right against float64. On another GPU the same
    shapes run its own plans."""
    B, N, T = math.prod(shape[:dim]), shape[dim], math.prod(shape[dim + 1:])
    gpu = dispatch.tuned_gpu(torch.cuda.get_device_name())
    if gpu == "H200":
        consts = dispatch.GPU_CONSTANTS[gpu]
        for log in (False, True):
            bwd = dispatch.plan_columns_backward(B, N, T, N * T, T, N * T, T, N * T, T, dtype, log, _sms(), gpu=gpu)
            if h200 == "split":
                assert [l.kernel for l in bwd] == ["softmax_bwd_dot_cols", "softmax_bwd_apply_cols"]
                assert (bwd[0].kwargs["BLOCK_T"], bwd[0].kwargs["BLOCK_N"], bwd[0].kwargs["num_warps"]) == \
                    consts["COLS16_BWD_SPLIT_TILE"]
            else:
                assert bwd == dispatch.plan_columns_backward(B, N, T, N * T, T, N * T, T, N * T, T, dtype, log,
                                                             _sms())
                assert bwd[0].kernel == "softmax_bwd_coop_cols"
            fwd = dispatch.plan_columns_forward(B, N, T, N * T, T, N * T, T, dtype, log, _sms(), gpu=gpu)
            if h200_fwd:  # the stats launch COLS16_FWD_STATS_N positions a step, the norm launch the tile's
                tile, step = consts["COLS16_FWD_SPLIT_TILE"], consts["COLS16_FWD_STATS_N"]
                assert [l.kernel for l in fwd] == ["softmax_fwd_stats_cols", "softmax_fwd_norm_cols"]
                assert [(l.kwargs["BLOCK_T"], l.kwargs["BLOCK_N"], l.kwargs["num_warps"]) for l in fwd] == [
                    (tile[0], step, tile[2]), tile]
            else:  # the rules' plan, with COLS16_FTZ where it has PER_VALUE
                assert without_ftz(fwd) == dispatch.plan_columns_forward(B, N, T, N * T, T, N * T, T, dtype, log,
                                                                         _sms())
                assert all(l.kwargs.get("FTZ", False) == l.kwargs.get("PER_VALUE", False) for l in fwd)
    _check_columns_both_adapters(dtype, shape, dim)


@pytest.mark.parametrize("dtype,shape,dim,h200_fwd,h200_bwd", [
    ("bfloat16", (4096, 256, 4), 1, 1, 4),    # the forward at 32 values a thread; a full BLOCK_N: the backward's 4
    ("float16", (2048, 150, 4), 1, 1, 1),     # N = 150 of 256: both at 1 warp
    ("bfloat16", (1024, 300, 4), 1, 1, 2),    # N = 300 of 512: the backward at 2 (the forward: 256 + 64, 1 warp)
    ("bfloat16", (150, 8), 0, 1, 2),          # dim 0 of 2-D, N = 150 in 8 columns: backward 2 (forward 128 + 32)
    ("float16", (4096, 40, 8), 1, 1, 1),      # BLOCK_N 64: the forward's short tile, the backward's short BLOCK_N
    ("bfloat16", (256, 1000, 4), 1, 4, 4),    # N = 1000 of 1024: the rules' warps
    ("float32", (4096, 150, 4), 1, 1, 4),     # float32: the forward at 32 values a thread (COLS32_MIN_VALUES)
    ("float32", (256, 16, 64), 1, 1, 4)])     # float32, N = 16: a 16 x 16 tile, 1 warp forward
def test_h200_cols16_warps_through_both_adapters(dtype, shape, dim, h200_fwd, h200_bwd):
    """The H200's warps for one-tile columns (GPU_CONSTANTS' COLS16_MIN_VALUES, COLS16_SHORT_MIN_VALUES,
    COLS16_BWD_MIN_VALUES, COLS32_MIN_VALUES: fewer warps where a thread would hold fewer than 32 values; the 16-bit
    backward's where BLOCK_N <= 128 or N fills at most 0.8 of a BLOCK_N <= 512; float32's forward) and the columns
    they leave to the rules, through the torch adapter (autograd) and the JAX adapter (jax.vjp), both ops: right
    against float64. On another GPU the same shapes run its own plans."""
    B, N, T = math.prod(shape[:dim]), shape[dim], math.prod(shape[dim + 1:])
    if dispatch.tuned_gpu(torch.cuda.get_device_name()) == "H200":
        for log in (False, True):
            fwd = dispatch.plan_columns_forward(B, N, T, N * T, T, N * T, T, dtype, log, _sms(), gpu="H200")
            bwd = dispatch.plan_columns_backward(B, N, T, N * T, T, N * T, T, N * T, T, dtype, log, _sms(),
                                                 gpu="H200")
            assert [(l.kernel, l.kwargs["num_warps"]) for l in fwd + bwd] == [("softmax_fwd_cols", h200_fwd),
                                                                             ("softmax_bwd_cols", h200_bwd)]
    _check_columns_both_adapters(dtype, shape, dim)


@pytest.mark.parametrize("dtype,shape,dim,tail", [
    ("bfloat16", (4, 150, 32, 32), 1, (128, 32)),   # segmentation logits of 150 classes: 128 + 32 positions
    ("float16", (2, 300, 2048), 1, (256, 64)),
    ("bfloat16", (129, 1024), 0, (128, 1)),         # dim 0 of 2-D: a tail of one position
    ("bfloat16", (4, 200, 1024), 1, None)])         # 200 > 1.5 x 128: one tile of 256
def test_h200_cols16_fwd_tail_through_both_adapters(dtype, shape, dim, tail):
    """The H200's 16-bit one-tile forward in two tiles (GPU_CONSTANTS' COLS16_FWD_TAIL: BLOCK_N then TAIL_N
    positions) and a column it leaves in one tile, through the torch adapter (autograd) and the JAX adapter
    (jax.vjp), both ops: right against float64. On another GPU the same shapes run its own plans."""
    B, N, T = math.prod(shape[:dim]), shape[dim], math.prod(shape[dim + 1:])
    if dispatch.tuned_gpu(torch.cuda.get_device_name()) == "H200":
        for log in (False, True):
            (fwd,) = dispatch.plan_columns_forward(B, N, T, N * T, T, N * T, T, dtype, log, _sms(), gpu="H200")
            got = (fwd.kwargs["BLOCK_N"], fwd.kwargs["TAIL_N"]) if "TAIL_N" in fwd.kwargs else None
            assert (fwd.kernel, got) == ("softmax_fwd_cols", tail)
    _check_columns_both_adapters(dtype, shape, dim)


@pytest.mark.parametrize("dtype,shape,kernel,stats_n", [
    ("bfloat16", (1, 1100, 256), "softmax_fwd_stats_cols", 16),  # the tile's split plan: stats 16 positions a step
    ("float16", (4, 3000, 256), "softmax_fwd_stats_cols", 64),   # the rules' split tile
    ("bfloat16", (2, 4096, 192), "softmax_fwd_stats_cols", 64),  # T not a multiple of 128
    ("float16", (2048, 1100, 16), "softmax_fwd_cols", 256),      # the loop
    ("bfloat16", (8, 150, 4096), "softmax_fwd_cols", 128),       # one tile of 128 + 32 positions (COLS16_FWD_TAIL)
    ("float16", (16, 100, 2048), "softmax_fwd_cols", 128)])      # one tile of 128
def test_h200_cols16_ftz_through_both_adapters(dtype, shape, kernel, stats_n):
    """The H200's 16-bit forward's exps by ex2.approx.ftz (GPU_CONSTANTS' COLS16_FTZ, COLS16_FWD_STATS_N) on
    split, looped and one-tile plans, softmax over dim 1, through the torch adapter and the JAX adapter, both ops,
    with a NaN, a +inf, an all -inf column, a column -inf but for its lowest finite value, one whose -inf come
    first, the largest and lowest finite values: right against float64 (_check_forward_both_adapters); then random
    x, forward and backward (_check_columns_both_adapters). On another GPU the same shapes run its own plans."""
    B, N, T = shape
    if dispatch.tuned_gpu(torch.cuda.get_device_name()) == "H200":
        first = dispatch.plan_columns_forward(B, N, T, N * T, T, N * T, T, dtype, False, _sms(), gpu="H200")[0]
        assert (first.kernel, first.kwargs["FTZ"], first.kwargs["BLOCK_N"]) == (kernel, True, stats_n)
    big = torch.finfo(getattr(torch, dtype)).max
    g = torch.Generator(device="cuda").manual_seed(N + T)
    x = (torch.randn(shape, device="cuda", generator=g) * 3).to(getattr(torch, dtype))
    x[0, 5, 1], x[0, 7, 2], x[0, :, 3], x[0, :, 4] = float("nan"), float("inf"), -float("inf"), -float("inf")
    x[0, N - 1, 4], x[0, : N // 5, 5], x[0, 9, 6], x[0, 10, 7] = -big, -float("inf"), big, -big
    _check_forward_both_adapters(x, 1, dtype, str(shape))
    _check_columns_both_adapters(dtype, shape, 1)


def test_adapters_plan_with_the_gpu_s_tilings(monkeypatch):
    """Both adapters plan with the GPU's key of dispatch.ROWS_TILINGS and GPU_CONSTANTS (dispatch.tuned_gpu of
    its name: "H200" on an H200, "" elsewhere), forward and backward, and their results stay right."""
    import jax
    import jax.numpy as jnp

    import multisoftmax.jax as mj

    want = dispatch.tuned_gpu(torch.cuda.get_device_name())
    seen = _plan_spies(monkeypatch)
    x = torch.randn(37, 1024, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    y = mt.softmax(x, -1)
    y.backward(torch.ones_like(y))
    ref.assert_close(y.double().detach().cpu(), torch.softmax(x.double(), -1).detach().cpu(), "bfloat16", "torch")
    xj = jnp.asarray(np.random.default_rng(0).standard_normal((39, 1000)), jnp.float32)
    yj, dxj = jax.value_and_grad(lambda a: mj.log_softmax(a, -1)[:, 0].sum())(xj)
    assert np.isfinite(np.asarray(dxj)).all()
    assert len(seen) >= 4 and set(seen) == {want}, seen


def test_coop_counters_reset_themselves():
    """The cooperative kernels' counters are zeroed once per stream and left zero by every
    launch: calls of other row counts in a row, on two streams, stay right."""
    from multisoftmax import launch

    g = torch.Generator(device="cuda").manual_seed(3)
    N = 100_003  # coop, unaligned (PEEL)
    for M in (1, 64, 8, 300, 2):
        x = torch.randn(M, N, device="cuda", generator=g, dtype=torch.bfloat16)
        assert dispatch.family(M, N, 2, _sms(), False) == "coop"
        _check_softmax(mt.softmax(x), x, "bfloat16", f"M={M}")
        dy = torch.randn_like(x)
        dx = torch.ops.multisoftmax.softmax_bwd(mt.softmax(x), dy, False)
        y64 = torch.softmax(x.double(), -1)
        expected = y64 * (dy.double() - (dy.double() * y64).sum(-1, keepdim=True))
        ref.assert_close(dx.double().cpu(), expected.cpu(), "bfloat16", f"bwd M={M}", scale_atol=True)
    side = torch.cuda.Stream()
    x = torch.randn(16, N, device="cuda", generator=g, dtype=torch.bfloat16)  # peeled 16-bit: counters
    assert not dispatch.plan_forward(16, N, N, N, "bfloat16", False, _sms())[0].kwargs["TAG"]
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        y_side = mt.softmax(x)
    y_main = mt.softmax(x)
    torch.cuda.synchronize()
    _check_softmax(y_side, x, "bfloat16", "side stream")
    _check_softmax(y_main, x, "bfloat16", "main stream")
    pools = [t for (dev, _), ts in launch._COUNTERS.items() for t in ts]
    assert len({key for key in launch._COUNTERS}) >= 2
    assert all(int(t.abs().sum()) == 0 for t in pools)


_KEYED_STRESS = """
import sys, time
import torch
sys.path.insert(0, "tests")
import reference64 as ref
import multisoftmax.torch as mt
from forced_plans import force_sent
from multisoftmax import dispatch

force_sent(dispatch)
sms = torch.cuda.get_device_properties(0).multi_processor_count
M, N = 3 * sms, 20000  # 3 chunks a row, 9 programs an SM: rows complete fast, many of them a launch
x32 = torch.randn(M, N, device="cuda", generator=torch.Generator(device="cuda").manual_seed(7)) * 3
xs = {"float32": x32, "bfloat16": x32.to(torch.bfloat16)}
for name in xs:
    for log in (False, True):
        assert dispatch.plan_forward(M, N, N, N, name, log, sms)[-1].kwargs["SENT"], (name, log)
launches, t0 = 0, time.time()
while time.time() - t0 < SECONDS:
    for x in xs.values():
        for f in (mt.softmax, mt.log_softmax):
            f(x)
            launches += 1
    torch.cuda.synchronize()
for name, x in xs.items():
    for f, f64 in ((mt.softmax, torch.softmax), (mt.log_softmax, torch.log_softmax)):
        ref.assert_close(f(x).double().cpu(), f64(x.double(), -1).cpu(), name, f"{name} {f.__name__}")
print(launches)
"""


def _launches_back_to_back(script: str, what: str) -> int:
    """Run a stress `script` (it loops for SECONDS, then prints its launch count) in a child process
    with a time limit: a hang fails the test as `what`. Returns the launch count."""
    import subprocess

    from uninterpreted import run_uninterpreted

    try:
        out = run_uninterpreted("SECONDS = 20\n" + script, timeout=180)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{what}: a launch hung (no result in 180 s)")
    assert out.returncode == 0, out.stderr[-3000:]
    return int(out.stdout.split()[-1])


def test_keyed_partials_many_launches_subprocess():
    """The cooperative forward on keyed partials (SENT), forced on a grid of many short rows,
    launched back to back for 20 s (float32 and bfloat16, both ops; in the GPU suite, beside
    the other workers' kernels), in a child process with a time limit: it must never hang.
    It did before `_sent_leave` waited for its program's warps (a warp still reading the
    row's words while the row's last arrival zeroed them)."""
    assert _launches_back_to_back(_KEYED_STRESS, "keyed partials") > 1000


_PIPE_STRESS = """
import sys, time
import torch
sys.path.insert(0, "tests")
import reference64 as ref
import multisoftmax.torch  # noqa: F401
from forced_plans import force_pipe
from multisoftmax import dispatch, launch

force_pipe(dispatch)
sms = torch.cuda.get_device_properties(0).multi_processor_count
gpu = dispatch.tuned_gpu(torch.cuda.get_device_name())
M, N = 3 * sms, 20000  # 5 or 10 chunks a row: rows complete fast, many of them a launch
g = torch.Generator(device="cuda").manual_seed(11)
cases = []
for dtype, name in ((torch.float32, "float32"), (torch.bfloat16, "bfloat16")):
    for log in ((False, True) if name == "float32" else (False,)):
        assert dispatch.plan_backward(M, N, N, N, N, name, log, sms)[-1].kernel == "softmax_bwd_pipe", (name, log)
        fwd = dispatch.plan_forward(M, N, N, N, name, log, sms, gpu=gpu)[-1].kernel
        assert (fwd == "softmax_fwd_pipe") == (name == "float32"), (name, log, fwd)
        x = (torch.randn(M, N, device="cuda", generator=g) * 3).to(dtype)
        y = torch.ops.multisoftmax.softmax_fwd(x, log)
        cases.append((name, log, x, y, torch.randn(M, N, device="cuda", generator=g).to(dtype)))
launches, t0 = 0, time.time()
while time.time() - t0 < SECONDS:
    for name, log, x, y, dy in cases:
        torch.ops.multisoftmax.softmax_bwd(y, dy, log)
        launches += 1
        if name == "float32":  # the pipelined forward
            torch.ops.multisoftmax.softmax_fwd(x, log)
            launches += 1
    torch.cuda.synchronize()
for name, log, x, y, dy in cases:
    dx = torch.ops.multisoftmax.softmax_bwd(y, dy, log)
    want = ref.softmax_backward(y.double().cpu().numpy(), dy.double().cpu().numpy(), log=log)
    ref.assert_close(dx.double().cpu(), want, name, f"{name} log={log}", scale_atol=True)
    ref.assert_close(torch.ops.multisoftmax.softmax_fwd(x, log).double().cpu(),
                     ref.softmax(x.double().cpu().numpy(), log=log), name, f"{name} log={log} forward")
torch.cuda.synchronize()
assert all(int(t.abs().sum()) == 0 for ts in launch._COUNTERS.values() for t in ts), "counters left set"
print(launches)
"""


def test_pipelined_backward_many_launches_subprocess():
    """The pipelined backward (softmax_bwd_pipe) and forward (softmax_fwd_pipe, float32), forced on a grid of
    many short rows, launched back to back for 20 s (float32 softmax and log_softmax, bfloat16 softmax; in the GPU
    suite, beside the other workers' kernels), in a child process with a time limit: they must never hang, stay
    right, and leave their counters (rows, ticket, exit) at zero."""
    assert _launches_back_to_back(_PIPE_STRESS, "pipelined backward and forward") > 1000


def test_pipelined_forward_through_both_adapters(monkeypatch):
    """The pipelined forward (softmax_fwd_pipe: dispatch.PIPE_FWD_*), right against float64 through the torch
    adapter and the JAX adapter, both ops, forward and backward: float32 rows of 1048576 values (16 rows: the
    H200's rule takes both ops; 8: the log_softmax's only) and 28 rows of 524288 values 524352 apart (a slice of
    a wider tensor: 13.6 chunks an SM) with a NaN, a +inf, an all -inf row but one value and values of 1e30 in
    magnitude. On the H200 the plans are its own (GPU_CONSTANTS); elsewhere the forward is forced
    (tests/forced_plans.py)."""
    gpu = dispatch.tuned_gpu(torch.cuda.get_device_name())
    if gpu != "H200":
        from forced_plans import force_pipe

        force_pipe(dispatch, monkeypatch.setattr)
    g = torch.Generator(device="cuda").manual_seed(23)
    for M, N, stride in ((16, 1048576, 1048576), (8, 1048576, 1048576), (28, 524288, 524352)):
        x = (torch.randn(M, stride, device="cuda", generator=g) * 3)[:, :N]
        if stride != N:
            x[1, 5], x[2, 7], x[3] = float("nan"), float("inf"), -float("inf")
            x[3, N - 3], x[4] = 2.0, x[4] * 1e29
        for log in (False, True):
            kernel = dispatch.plan_forward(M, N, stride, N, "float32", log, _sms(), gpu=gpu)[-1].kernel
            assert kernel == ("softmax_fwd_coop" if gpu == "H200" and (M, log) == (8, False) else "softmax_fwd_pipe")
        dy = torch.randn(M, N, device="cuda", generator=g)
        _check_both_adapters(x, dy, "float32", f"{M}x{N} stride {stride}")


def test_cooperative_plans_in_a_green_context():
    """On a green context's stream of 16 SMs (torch.cuda.green_contexts), the few long rows whose
    plan for the whole GPU is cooperative (tests/green_context.py: up to 128 programs a row
    that wait for each other) are planned for the stream's 16 SMs (multisoftmax.sms) and
    come out right, forward and backward, in a child process with a time limit. Planned for
    every SM of the device, float32 1 x 1048576 hung there (bench/results/h100/probe_green.log)."""
    import subprocess

    from uninterpreted import run_uninterpreted

    if not hasattr(torch.cuda, "green_contexts"):
        pytest.skip(f"torch {torch.__version__} has no torch.cuda.green_contexts")
    code = "import sys; sys.path.insert(0, 'tests'); import green_context; green_context.main('share', 16)"
    try:
        out = run_uninterpreted(code, timeout=300)
    except subprocess.TimeoutExpired:
        pytest.fail("green context: a launch hung (no result in 300 s)")
    assert out.returncode == 0, out.stdout + out.stderr[-3000:]
    assert "sms.share=16 " in out.stdout and out.stdout.count("\nok ") == 3, out.stdout


def test_coop_tagged_partials_across_calls():
    """TAG (tagged partials): forward and backward calls of several shapes one after another on
    the same stream share one buffer of words, left as each launch leaves it (not zeroed), and
    on a second stream another; a backward captured in a CUDA graph replays right. Every launch
    leaves the ticket at 0 and raises the generation."""
    from multisoftmax import launch

    g = torch.Generator(device="cuda").manual_seed(5)
    sms = _sms()
    shapes = [(2048, 65536), (8, 100_003), (33 * sms // 8 + 1, 65536), (1, 128_256), (700, 50_257), (2048, 65536)]
    for M, N in shapes:
        x = (torch.randn(M, N, device="cuda", generator=g) * 3).to(torch.bfloat16)
        for log in (False, True):
            fwd = dispatch.plan_forward(M, N, N, N, "bfloat16", log, sms)[0].kwargs
            bwd = dispatch.plan_backward(M, N, N, N, N, "bfloat16", log, sms)[0].kwargs
            assert bwd["TAG"] and fwd["TAG"] == (M * -(-N // 8192) >= 32 * sms), (M, N, log)
            y = torch.ops.multisoftmax.softmax_fwd(x, log)
            expected = (torch.log_softmax if log else torch.softmax)(x.double(), -1)
            ref.assert_close(y.double().cpu(), expected.cpu(), "bfloat16", f"TAG fwd {M}x{N} log={log}")
            dy = torch.randn(M, N, device="cuda", generator=g).to(torch.bfloat16)
            dx = torch.ops.multisoftmax.softmax_bwd(y, dy, log)
            expected = ref.softmax_backward(y.double().cpu().numpy(), dy.double().cpu().numpy(), log=log)
            ref.assert_close(dx.double().cpu(), expected, "bfloat16", f"TAG bwd {M}x{N} log={log}", scale_atol=True)
    side = torch.cuda.Stream()
    y = torch.softmax(torch.randn(4, 100_003, device="cuda", generator=g), -1)
    dy = torch.randn_like(y)
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        dx_side = torch.ops.multisoftmax.softmax_bwd(y, dy, False)
    dx_main = torch.ops.multisoftmax.softmax_bwd(y, dy, False)
    torch.cuda.synchronize()
    expected = ref.softmax_backward(y.double().cpu().numpy(), dy.double().cpu().numpy(), log=False)
    ref.assert_close(dx_side.double().cpu(), expected, "float32", "side stream", scale_atol=True)
    ref.assert_close(dx_main.double().cpu(), expected, "float32", "main stream", scale_atol=True)
    with torch.cuda.stream(side):
        torch.ops.multisoftmax.softmax_bwd(y, dy, True)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, stream=side):
            dx = torch.ops.multisoftmax.softmax_bwd(y, dy, True)
    for seed in range(3):
        dy.copy_(torch.randn(dy.shape, device="cuda", generator=torch.Generator(device="cuda").manual_seed(seed)))
        graph.replay()
        torch.cuda.synchronize()
        expected = ref.softmax_backward(y.double().cpu().numpy(), dy.double().cpu().numpy(), log=True)
        ref.assert_close(dx.double().cpu(), expected, "float32", f"TAG replay {seed}", scale_atol=True)
    words = [t.view(torch.int64)[0].item() for ts in launch._SYNCS.values() for t in ts]
    assert len(launch._SYNCS) >= 2 and all(w & 0xFFFFFFFF == 0 for w in words) and max(words) >> 32 >= 10


def test_coop_in_a_cuda_graph():
    """A coop call captured in a CUDA graph (after a warm-up on the capture stream) replays
    right, several times, on new inputs."""
    x = torch.randn(8, 128_256, device="cuda", dtype=torch.bfloat16)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        mt.log_softmax(x)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=side):
        y = mt.log_softmax(x)
    for seed in range(3):
        x.copy_(torch.randn(x.shape, device="cuda", generator=torch.Generator(device="cuda").manual_seed(seed)))
        graph.replay()
        torch.cuda.synchronize()
        expected = torch.log_softmax(x.double(), -1)
        ref.assert_close(y.double().cpu(), expected.cpu(), "bfloat16", f"replay {seed}")


def test_coop_short_path(monkeypatch):
    """Eager forwards and backwards of a cooperative plan (few long rows) after the first take the
    adapter's short path (`_SHORT_COOP`), keyed by stream and the stream's SMs: right on new inputs
    each call, on counters (with partials), TAG and keyed partials (SENT); a second stream gets its
    own entry; a stream that reports fewer SMs misses the entry made for the whole GPU and is
    planned for its share; a CUDA graph captured after eager calls on its stream replays right
    (capture takes the full path: test_coop_in_a_cuda_graph)."""
    import multisoftmax.torch as adapter
    from multisoftmax import sms

    g = torch.Generator(device="cuda").manual_seed(11)
    device_sms = _sms()
    cases = [(1, 128_256, "bfloat16", False), (8, 256_000, "bfloat16", True), (16, 1_048_576, "float32", False),
             (1, 1_048_576, "float32", True)]
    for M, N, dtype, log in cases:
        f, f64 = (mt.log_softmax, torch.log_softmax) if log else (mt.softmax, torch.softmax)
        T = getattr(torch, dtype)
        fwd = dispatch.plan_forward(M, N, N, N, dtype, log, device_sms, **_gpu_kw())
        bwd = dispatch.plan_backward(M, N, N, N, N, dtype, log, device_sms, **_gpu_kw())
        assert len(fwd) == 1 and dispatch.cooperative(fwd) and len(bwd) == 1 and dispatch.cooperative(bwd)
        tail = (0, torch.cuda.current_stream().cuda_stream, device_sms)
        keys = (("fwd", (M, N), (N, 1), T, log) + tail, ("bwd", (M, N), (N, 1), (N, 1), T, log) + tail)
        for key in keys:
            adapter._SHORT_COOP.pop(key, None)
        for call in range(3):
            x = (torch.randn(M, N, device="cuda", generator=g) * 3).to(T).requires_grad_()
            y = f(x)
            dy = torch.randn(M, N, device="cuda", generator=g).to(T)
            (dx,) = torch.autograd.grad(y, x, dy)
            y = y.detach()
            ref.assert_close(y.double().cpu(), f64(x.detach().double(), -1).cpu(), dtype, f"{M}x{N} call {call}")
            expected = ref.softmax_backward(y.double().cpu().numpy(), dy.double().cpu().numpy(), log=log)
            ref.assert_close(dx.double().cpu(), expected, dtype, f"{M}x{N} bwd call {call}", scale_atol=True)
            assert adapter._SHORT_COOP[keys[0]][0] is fwd[0] and adapter._SHORT_COOP[keys[1]][0] is bwd[0]
    side = torch.cuda.Stream()
    x = (torch.randn(8, 256_000, device="cuda", generator=g) * 3).to(torch.bfloat16)
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(2):
            y_side = mt.softmax(x)
    torch.cuda.synchronize()
    _check_softmax(y_side, x, "bfloat16", "side stream")
    assert ("fwd", (8, 256_000), (256_000, 1), torch.bfloat16, False, 0, side.cuda_stream, device_sms) \
        in adapter._SHORT_COOP
    # A stream of 16 SMs (as a green context's): the entry for the whole GPU must not be taken.
    monkeypatch.setattr(sms, "share", lambda device_sms, stream=None: 16)
    x = (torch.randn(1, 128_256, device="cuda", generator=g) * 3).to(torch.bfloat16)
    for call in range(2):
        _check_softmax(mt.softmax(x), x, "bfloat16", f"16 SMs, call {call}")
    stream = torch.cuda.current_stream().cuda_stream
    whole, share = (adapter._SHORT_COOP[("fwd", (1, 128_256), (128_256, 1), torch.bfloat16, False, 0, stream, n)][0]
                    for n in (device_sms, 16))
    assert share is dispatch.plan_forward(1, 128_256, 128_256, 128_256, "bfloat16", False, 16, **_gpu_kw())[0]
    assert share.grid[0] <= 16 < whole.grid[0]


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_rows_short_path_backward(dtype):
    """Eager backwards of a rows plan take the short path after the first (`_SHORT_PATH`, keyed
    by both strides): right on new inputs each call; a dy of other strides (a column slice, an
    expanded gradient) takes its own entry or the full path, and is right too."""
    import multisoftmax.torch as adapter

    g = torch.Generator(device="cuda").manual_seed(12)
    T = getattr(torch, dtype)
    M, N = 32, 1000
    key = ("bwd", (M, N), (N, 1), (N, 1), T, False, 0)
    adapter._SHORT_PATH.pop(key, None)
    for call in range(3):
        x = torch.randn(M, N, device="cuda", generator=g).to(T).requires_grad_()
        y = mt.softmax(x)
        dy = torch.randn(M, N, device="cuda", generator=g).to(T)
        (dx,) = torch.autograd.grad(y, x, dy)
        expected = ref.softmax_backward(y.detach().double().cpu().numpy(), dy.double().cpu().numpy())
        ref.assert_close(dx.double().cpu(), expected, dtype, f"call {call}", scale_atol=True)
        plan = dispatch.plan_backward(M, N, N, N, N, dtype, False, _sms(), **_gpu_kw())
        assert adapter._SHORT_PATH[key][0] is plan[0]
    wide = torch.randn(M, N + 24, device="cuda", generator=g).to(T)
    for dy in (wide[:, :N], torch.ones(1, N, device="cuda", dtype=T).expand(M, N), wide[:, 24:]):
        for call in range(2):
            x = torch.randn(M, N, device="cuda", generator=g).to(T).requires_grad_()
            y = mt.softmax(x)
            (dx,) = torch.autograd.grad(y, x, dy)
            expected = ref.softmax_backward(y.detach().double().cpu().numpy(), dy.double().cpu().numpy())
            ref.assert_close(dx.double().cpu(), expected, dtype, f"dy strides {dy.stride()}", scale_atol=True)


@pytest.mark.parametrize("M,N,log", [(16, 1_048_576, False), (256, 65_536, True), (64, 256_000, False)])
def test_packed_plans_on_a_view_off_a_word_boundary(M, N, log):
    """bf16 views one element into their storage (not 4-byte aligned) on plans that hold values
    packed in 32-bit words (PACK): forward and backward right, twice (the second call through the
    short path, whose entry an aligned call made first). Before `_words_fit` these failed with a
    CUDA error (bench/results/h100/probe_misaligned.log)."""
    f, f64 = (mt.log_softmax, torch.log_softmax) if log else (mt.softmax, torch.softmax)
    sms = _sms()
    assert dispatch.plan_forward(M, N, N, N, "bfloat16", log, sms)[0].kwargs["PACK"] or \
        dispatch.plan_backward(M, N, N, N, N, "bfloat16", log, sms)[0].kwargs["PACK"]
    g = torch.Generator(device="cuda").manual_seed(13)
    aligned = (torch.randn(M, N, device="cuda", generator=g) * 3).to(torch.bfloat16).requires_grad_()
    torch.autograd.grad(f(aligned), aligned, torch.ones_like(aligned))  # the short path's entries
    for call in range(2):
        buf = (torch.randn(M * N + 1, device="cuda", generator=g) * 3).to(torch.bfloat16)
        x = buf[1:].view(M, N).requires_grad_()
        dy = torch.randn(M * N + 1, device="cuda", generator=g).to(torch.bfloat16)[1:].view(M, N)
        assert x.data_ptr() % 4 == 2 and dy.data_ptr() % 4 == 2
        y = f(x)
        (dx,) = torch.autograd.grad(y, x, dy)
        y = y.detach()
        ref.assert_close(y.double().cpu(), f64(x.detach().double(), -1).cpu(), "bfloat16", f"fwd call {call}")
        expected = ref.softmax_backward(y.double().cpu().numpy(), dy.double().cpu().numpy(), log=log)
        ref.assert_close(dx.double().cpu(), expected, "bfloat16", f"bwd call {call}", scale_atol=True)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("M,N", [(128, 1048576), (64, 128256), (16, 1048576), (300, 50257)])
def test_packed_forward_large_maxima_at_real_sizes(dtype, M, N):
    """dispatch's packed cooperative forward (PACK; at 128 x 1048576 the softmax under its register cap, the
    log_softmax in 16384-value chunks at 8 warps) on rows whose max lies far from 0, softmax and
    log_softmax, every element against float64: rows offset by 100 (the held words' path), 1000 and
    3e4 (kernels.softmax.COOP_FAST_MAX and past: x read again), bfloat16 rows of 1e8 (m * log2(e)
    rounds by up to 8: the sum's correction) and of finfo.min and finfo.max (m * log2(e) overflows
    float32: COOP_SCALED_L_MIN), a fully masked row of -1e9 (bfloat16), and ordinary rows between."""
    tdt = getattr(torch, dtype)
    for log in (False, True):
        assert dispatch.plan_forward(M, N, N, N, dtype, log, _sms())[0].kwargs["PACK"], (M, N, log)
    g = torch.Generator(device="cuda").manual_seed(M + N)
    x = torch.randn(M, N, device="cuda", generator=g) * 3
    offsets = [100.0, -1000.0, 3e4] + ([1e8, "min", "max", "masked"] if dtype == "bfloat16" else [])
    for i, off in enumerate(offsets):
        r = (2 * i) % M
        if off in ("min", "max"):
            x[r] = getattr(torch.finfo(tdt), off)
        elif off == "masked":
            x[r] = -1e9
        else:
            x[r] += off
    x = x.to(tdt)
    for log in (False, True):
        y = torch.ops.multisoftmax.softmax_fwd(x, log)
        expected = (torch.log_softmax if log else torch.softmax)(x.double(), -1)
        ref.assert_close(y.double().cpu(), expected.cpu(), dtype, f"log={log}")


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("M,N,log", [(16, 1048576, False), (64, 128256, False), (2048, 65536, False),
                                     (300, 50257, False), (128, 1048576, False), (16, 1048576, True),
                                     (128, 524288, True), (2048, 65536, True), (300, 50257, True), (8, 128256, True)])
def test_cvt_x2_writes_the_same_bits(dtype, M, N, log):
    """CVT_X2 (y's words by one cvt.rn.bf16x2.f32 / cvt.rn.f16x2.f32 a word, dispatch.COOP_CVT_X2)
    writes the same bits as the kernel without it, NaN's bits included, in dispatch's packed softmax
    plans (on counters, TAG's, peeled, the wide chunks' under its register cap) and log_softmax plans (on
    counters, TAG's wide chunks under the cap, peeled, few rows) at real sizes: random rows
    and rows of special values (a NaN, all -inf, an inf, huge magnitudes: the exact path, values ~85
    below the max: subnormal or zero results, a wide spread, tiny values); and y is right against
    float64 rounded to the output dtype."""
    import dataclasses

    from multisoftmax import launch

    (plan,) = dispatch.plan_forward(M, N, N, N, dtype, log, _sms())
    assert plan.kernel == "softmax_fwd_coop" and plan.kwargs["CVT_X2"] and plan.kwargs["PACK"]
    off = dataclasses.replace(plan, meta=tuple((k, False if k == "CVT_X2" else v) for k, v in plan.meta))
    g = torch.Generator(device="cuda").manual_seed(M + N)
    x = (torch.randn(M, N, device="cuda", generator=g) * 3).to(getattr(torch, dtype))
    special = x.clone()
    special[0, :1024] = float("nan")
    special[1] = -float("inf")
    special[2, :16] = float("inf")
    special[3, :4096], special[3, 4096:8192] = 3e38, -3e38
    special[4, :4096] -= 85.0
    special[5] *= 30.0
    special[6, :4096] = 1e-30
    for what, a in (("random", x), ("special", special)):
        ys = [launch.execute((p,), {"x": a}, lambda l, ins, b: launch.torch_call(l, ins, b, a.dtype, a.device))
              for p in (plan, off)]
        assert torch.equal(ys[0].view(torch.int16), ys[1].view(torch.int16)), what
        # float64's result rounded to the output dtype, as a correctly rounded kernel writes it: the
        # log_softmax of a row of 3e38 and -3e38 is -6e38 there, past bfloat16's range (-inf)
        expected = (torch.log_softmax if log else torch.softmax)(a.double(), -1).to(a.dtype).double()
        ref.assert_close(ys[0].double().cpu(), expected.cpu(), dtype, what)


@pytest.mark.parametrize("N", [1001, 16385])
def test_cached_launch_tells_pointer_alignment_apart(N):
    """The compiled kernel is cached per pointer alignment: a row slice that starts off a
    16-byte boundary, between aligned calls, gets a kernel compiled for it."""
    big = torch.randn(33, N, device="cuda").to(torch.bfloat16)
    aligned, shifted = big[:32], big[1:]
    assert aligned.data_ptr() % 16 == 0 and shifted.data_ptr() % 16 != 0
    for x in (aligned, shifted, aligned, shifted):
        _check_softmax(mt.softmax(x), x, "bfloat16", f"ptr % 16 = {x.data_ptr() % 16}")


def test_cached_launch_calls_triton_s_c_launch_and_launch_hooks_still_see_launches():
    """A cached launch (launch.launch_compiled) passes addresses to Triton's C launch function
    itself on Triton 3.6, the GPU machine's (launch._launcher), forward and backward, and is
    right on fresh inputs each call; with a launch hook set (a profiler's) launches take
    Triton's ordinary path, so the hook sees each of them, and stay right."""
    from multisoftmax import launch

    g = torch.Generator(device="cuda").manual_seed(5)
    fwd = dispatch.plan_forward(32, 1024, 1024, 1024, "float32", False, _sms(), **_gpu_kw())
    bwd = dispatch.plan_backward(32, 1024, 1024, 1024, 1024, "float32", False, _sms(), **_gpu_kw())
    for i in range(3):
        x = (torch.randn(32, 1024, device="cuda", generator=g) * 3).requires_grad_()
        y = mt.softmax(x)
        dy = torch.randn(32, 1024, device="cuda", generator=g)
        (dx,) = torch.autograd.grad(y, x, dy)
        y = y.detach()
        _check_softmax(y, x.detach(), "float32", f"call {i}")
        expected = ref.softmax_backward(y.double().cpu().numpy(), dy.double().cpu().numpy(), log=False)
        ref.assert_close(dx.double().cpu(), expected, "float32", f"bwd call {i}", scale_atol=True)
    for plan in (fwd, bwd):
        hits = [v for k, v in launch._COMPILED.items() if k[0] == id(plan[0])]
        assert hits
        for _, compiled, _, call, head, _ in hits:
            if triton.__version__.startswith("3.6."):
                assert call == compiled.run.launch and head[0] == compiled.function
    seen = []
    hook = lambda metadata: seen.append(metadata)  # noqa: E731
    triton.knobs.runtime.launch_enter_hook.add(hook)
    try:
        x = torch.randn(32, 1024, device="cuda", generator=g) * 3
        y = mt.softmax(x)
        torch.cuda.synchronize()
    finally:
        triton.knobs.runtime.launch_enter_hook.remove(hook)
    assert len(seen) == 1
    _check_softmax(y, x, "float32", "with a launch hook")


@pytest.mark.parametrize("dtype,N,log", [(torch.bfloat16, 2048, False), (torch.float32, 1024, True),
                                         (torch.float16, 4096, True), (torch.float32, 1152, True),
                                         (torch.float32, 896, False)])
def test_fill_shared_launches_ask_for_the_sm_s_shared_memory(dtype, N, log):
    """Launches that dispatch.fills_shared names ask for occupancy.fill_shared's bytes of the SM's
    shared memory: through the torch adapter (the cached launch's metadata: more than the kernel's
    own, the SM holding as many programs) and through the JAX adapter (the kernel handed to jaxlib,
    compiled anew here); forward and backward right on fresh inputs in both."""
    import jax
    import jax.numpy as jnp

    import multisoftmax.jax as mj
    from multisoftmax import launch, occupancy

    M = 1000  # a row count no other test compiles for JAX
    name = str(dtype).split(".")[-1]
    fwd = dispatch.plan_forward(M, N, N, N, name, log, _sms(), **_gpu_kw())
    bwd = dispatch.plan_backward(M, N, N, N, N, name, log, _sms(), **_gpu_kw())
    fills = [dispatch.fills_shared(plan[0]) for plan in (fwd, bwd)]
    assert fills == [True, True] or (_gpu_kw()["gpu"] and any(fills))  # a tuned GPU's tilings: one of the two
    g = torch.Generator(device="cuda").manual_seed(11)
    f, t = (mt.log_softmax, torch.log_softmax) if log else (mt.softmax, torch.softmax)
    for i in range(2):
        x = (torch.randn(M, N, device="cuda", generator=g, dtype=dtype) * 3).requires_grad_()
        dy = torch.randn(M, N, device="cuda", generator=g, dtype=dtype)
        y = f(x, -1)
        (dx,) = torch.autograd.grad(y, x, dy)
        x64 = x.detach().double()
        y64 = t(x64, -1)
        ref.assert_close(y.detach().double().cpu(), y64.cpu(), name, f"torch fwd call {i}")
        expected = ref.softmax_backward(y64.cpu().numpy(), dy.double().cpu().numpy(), log=log)
        ref.assert_close(dx.double().cpu(), expected, name, f"torch bwd call {i}", scale_atol=True)
    lim = occupancy.limits(torch.cuda.current_device())
    assert lim is not None
    for plan in (p for p, fill in zip((fwd, bwd), fills) if fill):
        hits = [v for k, v in launch._COMPILED.items() if k[0] == id(plan[0])]
        assert hits
        for _, compiled, _, _, head, _ in hits:
            packed = next(h for h in head if isinstance(h, tuple))
            assert packed[2] == occupancy.fill_shared(compiled.n_regs, packed[0], compiled.metadata.shared, lim)
            assert packed[2] > compiled.metadata.shared, (packed, compiled.metadata.shared)
            k = occupancy.programs_per_sm(compiled.n_regs, packed[0], compiled.metadata.shared, lim)
            assert occupancy.programs_per_sm(compiled.n_regs, packed[0], packed[2], lim) == k

    lib = mj._jax_triton().triton_lib
    made = []
    original = lib.triton_kernel_call_lib.TritonKernel

    def spy(*args):
        made.append(args)
        return original(*args)

    lib._COMPILED_KERNEL_CACHE.clear()  # compile anew: the hook sees the kernels
    lib.triton_kernel_call_lib.TritonKernel = spy
    try:
        jf = mj.log_softmax if log else mj.softmax
        xj = jnp.asarray(x.detach().float().cpu().numpy()).astype(jnp.dtype(name))
        dyj = jnp.asarray(dy.float().cpu().numpy()).astype(jnp.dtype(name))
        yj, pull = jax.vjp(lambda a: jf(a, -1), xj)
        (dxj,) = pull(dyj)
        yj.block_until_ready()
    finally:
        lib.triton_kernel_call_lib.TritonKernel = original
    # the kernels handed to jaxlib (TTIR ""), not those jax-triton makes itself on the way
    rows = [a for a in made if a[0].startswith(("softmax_fwd_rows", "softmax_bwd_rows")) and a[5] == ""]
    assert len(rows) == 2, [a[:4] for a in made]
    # far more than the rows kernels' own (<= 64 bytes) where dispatch names the launch
    assert [a[3] > 1024 for a in sorted(rows, key=lambda a: "bwd" in a[0])] == fills, rows
    xj64 = np.asarray(xj, np.float64)
    yj64 = np.asarray(t(torch.from_numpy(xj64), -1))
    ref.assert_close(np.asarray(yj, np.float64), yj64, name, "jax fwd")
    ref.assert_close(np.asarray(dxj, np.float64), ref.softmax_backward(yj64, np.asarray(dyj, np.float64), log=log),
                     name, "jax bwd", scale_atol=True)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("shape,dim,one_tile", [((16, 21, 256, 256), 1, True), ((8, 100, 64, 64), 1, True),
                                                ((32, 1000, 14, 14), 1, True),
                                                ((64, 4096, 64), 1, False), ((8192, 4096), 0, False),
                                                ((4096, 256, 4), 1, True), ((2, 20000, 64), 1, False)])
def test_columns_at_real_sizes(dtype, shape, dim, one_tile):
    """A softmax over a middle dim through the columns kernels (one tile; long columns: cooperative,
    split into chunks, as dispatch plans them), forward and the autograd backward, both ops, every
    element against float64."""
    B, N, T = 1, shape[dim], 1
    for s in shape[:dim]:
        B *= s
    for s in shape[dim + 1:]:
        T *= s
    name = str(dtype)[6:]
    fwd = dispatch.plan_columns_forward(B, N, T, N * T, T, N * T, T, name, False, _sms(), **_gpu_kw())
    bwd = dispatch.plan_columns_backward(B, N, T, N * T, T, N * T, T, N * T, T, name, False, _sms(), **_gpu_kw())
    if one_tile:
        assert fwd[0].kwargs["ONE_TILE"] and bwd[0].kwargs["ONE_TILE"]
    elif N == 20000:  # float32: cooperative, the forward in 40 chunks of 16384 values; 16-bit: 157 chunks, split
        want = ["softmax_fwd_coop_cols", "softmax_bwd_coop_cols"] if name == "float32" else \
            ["softmax_fwd_stats_cols", "softmax_bwd_dot_cols"]
        assert [fwd[0].kernel, bwd[0].kernel] == want
        assert name != "float32" or fwd[0].kwargs["CHUNK_N"] * fwd[0].kwargs["BLOCK_T"] == 16384
    else:  # cooperative (the H200's 16-bit backward of T = 4096: split, COLS16_BWD_*); the 16-bit forward split
        wide = name != "float32" and _gpu_kw()["gpu"] == "H200" and T % 128 == 0
        assert bwd[0].kernel == ("softmax_bwd_dot_cols" if wide else "softmax_bwd_coop_cols")
        assert fwd[0].kernel == ("softmax_fwd_coop_cols" if name == "float32" else "softmax_fwd_stats_cols")
    g = torch.Generator(device="cuda").manual_seed(1)
    x = (torch.randn(shape, device="cuda", dtype=dtype, generator=g) * 3).requires_grad_()
    dy = torch.randn(shape, device="cuda", dtype=dtype, generator=g)
    for ours, log in ((mt.softmax, False), (mt.log_softmax, True)):
        y = ours(x, dim)
        assert y.is_contiguous()
        expected = (torch.log_softmax if log else torch.softmax)(x.detach().double(), dim)
        ref.assert_close(y.detach().double().cpu(), expected.cpu(), name, f"{shape} dim={dim} log={log}")
        (dx,) = torch.autograd.grad(y, x, dy)
        yd, dyd = y.detach().double(), dy.double()
        want = dyd - torch.exp(yd) * dyd.sum(dim, keepdim=True) if log else yd * (dyd - (dyd * yd).sum(dim, keepdim=True))
        ref.assert_close(dx.double().cpu(), want.cpu(), name, f"bwd {shape} dim={dim} log={log}", scale_atol=True)
    del x, dy, y, dx
    torch.cuda.empty_cache()


def test_jax_where_at_real_sizes():
    """jax.nn's where= through the where kernels compiled (kernels/where.py): a causal mask over
    attention rows (bfloat16 4 x 2048 x 2048: row arithmetic, vectors of no kept value not read), a
    vocabulary mask (bfloat16 64 x 32000, past WHERE_BWD_MAX_N: the cooperative log_softmax backward, the
    unmasked softmax backward), a mask that
    needs the row table (float32 (2, 1, 300, 781) over (2, 4, 300, 781), odd rows: no vector loads),
    long rows (the cooperative kernels: bfloat16 300 x 128256 under a vocabulary mask, a ticket, TAG, the
    forward under its register cap;
    float32 4 x 256000 (4, 1), a value a row, one program an SM at most, a fully masked row; float64
    3 x 50000 under a mask of its own rows, thinning along them, on counters; float32 8 x 300000, a
    ticket on counters); short rows at dispatch._where_tiling's tiles (bfloat16 64 x 128 x 128 causal:
    8 rows a program on one warp; float16 3001 x 100, odd rows; float32 777 x 256 and bfloat16 96 x
    8192 under padding masks; float32 64 x 16384, x read by every vector: SKIP off; float16 16 x 16384
    under a causal-like mask, its log_softmax backward too under the register cap); long rows not 16-byte
    aligned, peeled (PEEL): bfloat16 24 x 50257 under a mask of its own rows (W_PEEL: the mask by vectors
    too), float32 40 x 32771 under a vocabulary mask, float16 16 x 40002 (ALIGN 2) under its own rows'
    mask, float32 4 x 256001 (4, 1).
    Forward against float64; the backward from our y against the float64 formula over the kept
    values."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    import multisoftmax.jax as mj

    rng = np.random.default_rng(0)
    cases = [((4, 2048, 2048), np.tril(np.ones((2048, 2048), bool)), "bfloat16"),
             ((64, 32000), rng.random((1, 32000)) < 0.9, "bfloat16"),
             ((2, 4, 300, 781), rng.random((2, 1, 300, 781)) < 0.5, "float32"),
             ((300, 128256), rng.random((1, 128256)) < 0.9, "bfloat16"),
             ((4, 256000), np.array([True, False, True, True])[:, None], "float32"),
             ((3, 50000), rng.random((3, 50000)) < np.linspace(0.01, 1, 50000), "float64"),
             ((8, 300000), rng.random((1, 300000)) < 0.5, "float32"),
             ((64, 128, 128), np.tril(np.ones((128, 128), bool)), "bfloat16"),
             ((3001, 100), rng.random((1, 100)) < 0.9, "float16"),
             ((777, 256), rng.random((1, 256)) < 0.9, "float32"),
             ((96, 8192), rng.random((1, 8192)) < 0.9, "bfloat16"),
             ((64, 16384), rng.random((1, 16384)) < 0.9, "float32"),
             ((16, 16384), np.arange(16384) < np.linspace(1, 16384, 16)[:, None], "float16"),
             # rows not 16-byte aligned (the cooperative kernels' PEEL): mask rows too (W_PEEL), or not
             ((24, 50257), rng.random((24, 50257)) < 0.9, "bfloat16"),
             ((40, 32771), rng.random((1, 32771)) < 0.9, "float32"),
             ((16, 40002), rng.random((16, 40002)) < 0.5, "float16"),
             ((4, 256001), np.array([True, False, True, True])[:, None], "float32")]
    skip = {shape: dict(mj._where_plan(shape, dtype, 1, False, True)[0].kwargs).get("SKIP") for shape, _, dtype in cases}
    assert skip[(64, 16384)] is False and skip[(64, 128, 128)] and skip[(96, 8192)], skip
    for shape, m, dtype in cases[-4:]:  # peeled; the mask too where it has a row for each row of x
        kw = dict(mj._where_plan(shape, dtype, 1, True, True, mj._where_view(shape, jnp.asarray(m), 1)[2:])[0].kwargs)
        assert kw["PEEL"] and kw["W_PEEL"] == (m.shape == shape), (shape, kw)
    caps = [dict(mj._where_plan(shape, dtype, 1, log, fwd)[0].kwargs).get("maxnreg")
            for shape, dtype, log, fwd in [((96, 8192), "bfloat16", False, True), ((16, 16384), "float16", True, False),
                                           ((64, 128, 128), "bfloat16", True, True)]]
    assert caps == [dispatch.WHERE_FWD_MAXNREG[2], dispatch.WHERE_BWD16_LOG_MAXNREG, dispatch.WHERE_FWD_MAXNREG[2]], caps
    for shape, m, dtype in cases:
        x = jnp.asarray(rng.standard_normal(shape) * 4, dtype)
        dy = jnp.asarray(rng.standard_normal(shape), dtype)
        assert mj._where_kernels(x, (x.ndim - 1,), False) and mj._where_kernels(x, (x.ndim - 1,), True, forward=False)
        # the softmax backward past WHERE_BWD_MAX_N: the unmasked one
        assert mj._where_kernels(x, (x.ndim - 1,), False, forward=False) == (shape[-1] <= dispatch.WHERE_BWD_MAX_N)
        coop = [dispatch.cooperative(mj._where_plan(x.shape, x.dtype, 1, log, fwd)) for log, fwd in [(0, 1), (1, 0)]]
        assert coop == [shape[-1] > dispatch.WHERE_MAX_N, shape[-1] > dispatch.WHERE_BWD_MAX_N], (shape, coop)
        for f, log in [(mj.softmax, False), (mj.log_softmax, True)]:
            y, pull = jax.vjp(lambda t: f(t, -1, where=m), x)
            x64 = np.where(m, np.asarray(x, np.float64), -np.inf)
            with np.errstate(invalid="ignore"):
                expected = np.where(m, ref.softmax(x64, -1, log), -np.inf if log else 0.0)
            ref.assert_close(np.asarray(y, np.float64), expected, dtype, f"{shape} log={log}")
            y64, dy64 = np.asarray(y, np.float64), np.where(m, np.asarray(dy, np.float64), 0.0)
            with np.errstate(invalid="ignore"):
                expected = np.where(m, ref.softmax_backward(y64, dy64, -1, log), 0.0)
            ref.assert_close(np.asarray(pull(dy)[0], np.float64), expected, dtype, f"bwd {shape} log={log}",
                             scale_atol=ref.backward_scale(y64, dy64, -1, log))


def test_jax_where_packed_special_values():
    """The packed cooperative where forward (kernels/where.py PACK: 16-bit x held as words, the dropped
    values -inf in them) compiled, on the rows whose y it writes from x and the mask read again
    (`_coop_where_exact`): a kept NaN, a kept +inf, a row of kept -inf, a fully masked row, one kept
    value, maxima of 256 and more in magnitude (1000, -1000, 1e30), dropped NaN; and beside them
    rows of its one-op path, a max of 255 among them. bfloat16 16 x 131072 under a mask of its own
    rows (16-byte aligned) and float16 16 x 50257 (peeled, W_PEEL). Against float64, NaN and inf
    where it has them."""
    import jax.numpy as jnp
    import numpy as np

    import multisoftmax.jax as mj

    rng = np.random.default_rng(1)
    for (M, N), dtype in [((16, 131072), "bfloat16"), ((16, 50257), "float16")]:
        x = rng.standard_normal((M, N)) * 3
        m = rng.random((M, N)) < 0.7
        m[:, [0, N // 2, N - 1]] = True
        x[0, N // 2] = np.nan
        x[1, N - 1] = np.inf
        x[2] = -np.inf
        m[3] = False
        m[4] = False
        m[4, 0] = True
        x[5] += 1000.0 if dtype == "bfloat16" else 10000.0
        x[6] -= 1000.0 if dtype == "bfloat16" else 10000.0
        x[7, N // 2] = 1e30 if dtype == "bfloat16" else 60000.0
        x[8, ~m[8]] = np.nan
        x[9, N // 2] = 255.0
        x = jnp.asarray(x, dtype)
        kw = dict(mj._where_plan(x.shape, x.dtype, 1, False, True, mj._where_view(x.shape, jnp.asarray(m), 1)[2:])[0]
                  .kwargs)
        assert kw["PACK"] and kw["PEEL"] == kw["W_PEEL"] == (N % 8 != 0), kw
        for f, log in [(mj.softmax, False), (mj.log_softmax, True)]:
            y = np.asarray(f(x, -1, where=m), np.float64)
            x64 = np.where(m, np.asarray(x, np.float64), -np.inf)
            with np.errstate(invalid="ignore"):
                expected = np.where(m, ref.softmax(x64, -1, log), -np.inf if log else 0.0)
            np.testing.assert_array_equal(np.isnan(y), np.isnan(expected))
            np.testing.assert_array_equal(np.isinf(y), np.isinf(expected))
            ref.assert_close(y, expected, dtype, f"{dtype} {M}x{N} log={log}")


def test_xla_keeps_constants():
    """What the JAX adapter's kept scratch stands on (multisoftmax.jax, "Kept scratch"): a constant
    of a jitted program (not of one value: XLA makes such a one a broadcast anew each execution)
    that a Triton kernel adds to through its pointer is one buffer for every execution of the
    program and keeps what the kernel left; the calls of one program that hold it see each other's
    adds one after another, in a loop too. Should a jaxlib copy its constants anew each execution
    instead, the adapter's results stay right but it pays as the fresh scratch does: this fails
    then so that multisoftmax.jax's note and the plans (counters_per_call) are looked at again."""
    import jax
    import jax.numpy as jnp
    import multisoftmax.jax as mj

    jt = mj._jax_triton()

    def add_one(x, words):
        return jt.triton_call(x, words, kernel=_add_one_to_word_0, grid=(1,),
                              out_shape=jax.ShapeDtypeStruct((1,), jnp.int32))

    words = mj._kept_scratch((64,), "zeros")
    x = jnp.zeros((1,), jnp.int32)
    lone = jax.jit(lambda a: add_one(a, words))
    assert [int(lone(x)[0]) for _ in range(3)] == [0, 1, 2]
    two = jax.jit(lambda a: jnp.concatenate([add_one(a, words), add_one(a + 1, words)]))
    assert sorted(sum((two(x).tolist() for _ in range(2)), [])) == [0, 1, 2, 3]
    looped = jax.jit(lambda a: jax.lax.scan(lambda c, _: (c, add_one(a, words)), 0, None, length=3)[1].reshape(-1))
    assert sum((looped(x).tolist() for _ in range(2)), []) == [0, 1, 2, 3, 4, 5]
    assert int(words[:-2].max()) == 0, "the host's array is not written"


@triton.jit
def _add_one_to_word_0(x_ptr, words_ptr, old_ptr):
    """(test_xla_keeps_constants) old = words[0]; words[0] += 1."""
    tl.store(old_ptr, tl.atomic_add(words_ptr, 1) + tl.load(x_ptr) * 0)


@pytest.mark.parametrize("scratch", ["kept", "fresh"])
@pytest.mark.parametrize("M,N,dtype", [(16, 262144, "float32"), (32, 128256, "bfloat16"), (4, 1048576, "float32")],
                         ids=["TAG", "TAG bf16", "counters"])
def test_jax_cooperative_scratch(monkeypatch, M, N, dtype, scratch):
    """The JAX adapter's cooperative calls keep their scratch in a constant of the jitted program
    ("kept": multisoftmax.jax's "Kept scratch"), or take it from zeros that XLA makes for each call,
    aliased to the kernel's scratch output ("fresh": MULTISOFTMAX_JAX_KEPT_SCRATCH=0): values and
    gradients right, each call made twice or more on one compiled program (kept: the state the
    calls before left), where XLA places the calls otherwise than as one lone call: a lax.scan whose
    every step makes a forward and a backward, jax.checkpoint (the forward made again for the
    backward), several calls in one jit (fresh: XLA may make their zeros in one kernel) and vmap (a
    batch of rows is more rows). Against float64. (The counters' backward, float32 4 x 1048576's,
    is the pipelined kernel's: dispatch.PIPE_*.)"""
    import jax
    import jax.numpy as jnp
    import numpy as np

    import multisoftmax.jax as mj
    from multisoftmax import dispatch

    if scratch == "fresh":
        monkeypatch.setenv("MULTISOFTMAX_JAX_KEPT_SCRATCH", "0")
    jax.clear_caches()
    assert mj._kept_scratch_on() == (scratch == "kept")
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    for plan in (dispatch.plan_forward(M, N, N, N, dtype, True, sms, counters_per_call=True),
                 dispatch.plan_backward(M, N, N, N, N, dtype, True, sms, counters_per_call=True)):
        assert plan[0].kernel.endswith(("_coop", "_pipe")) and plan[0].outputs[0][2] == "init", plan[0].kernel
    dt = getattr(jnp, dtype)
    rng = np.random.default_rng(N)
    x = jnp.asarray(rng.standard_normal((3, M, N)) * 2, dt)
    w = jnp.asarray(rng.standard_normal((M, N)), dt)
    x64, w64 = np.asarray(x, np.float64), np.asarray(w, np.float64)
    y64 = ref.softmax(x64, -1, True)  # log_softmax
    want_grads = w64 - np.exp(y64) * w64.sum(-1, keepdims=True)  # of sum(log_softmax(x) * w)
    want_total, scale = (y64 * w64).sum(), np.abs(y64 * w64).sum()

    def body(f):
        def step(c, a):
            v, g = jax.value_and_grad(lambda t: jnp.sum(f(t).astype(jnp.float32) * w.astype(jnp.float32)))(a)
            return c + v, g
        return step

    plain = lambda a: mj.log_softmax(a, axis=-1)  # noqa: E731
    for name, f in (("scan", plain), ("scan of jax.checkpoint", jax.checkpoint(plain))):
        scanned = jax.jit(lambda xs, f=f: jax.lax.scan(body(f), jnp.float32(0), xs))
        for run in range(2):
            total, grads = scanned(x)
            assert abs(float(total) - want_total) <= (1e-5 if dtype == "float32" else 1e-2) * scale, (name, run)
            ref.assert_close(np.asarray(grads, np.float64), want_grads, dtype, f"{name}, {run}", scale_atol=True)

    many = jax.jit(lambda xs: [mj.softmax(xs[i], axis=-1) for i in range(3)] + [mj.log_softmax(xs[0], axis=-1)])
    batched = jax.jit(jax.vmap(lambda a: mj.softmax(a, axis=-1)))
    for run in range(3):
        got = many(x)
        for i in range(3):
            ref.assert_close(np.asarray(got[i], np.float64), ref.softmax(x64[i], -1), dtype,
                             f"call {i} of a jit, {run}")
        ref.assert_close(np.asarray(got[3], np.float64), y64[0], dtype, f"log_softmax call of a jit, {run}")
        ref.assert_close(np.asarray(batched(x), np.float64), ref.softmax(x64, -1), dtype, f"vmap, {run}")
    jax.clear_caches()
