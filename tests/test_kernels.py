"""The kernel families and the dispatcher: every family, forward and backward, both ops.

Families are forced (and their block sizes shrunk, so that small inputs still loop over
several tiles and split rows into several chunks) and run through the torch ops, which
use the interpreter on the CPU and the compiled kernels on CUDA.
"""

import dataclasses
import itertools

import pytest
import torch

import reference64 as ref
from forced_plans import (FWD32_OFFS32_LIMITS, before_grids16, before_tables16, before_whole32, grids16_tiling,
                          patched_within, whole32_tiling, without_ftz)
from uninterpreted import run_uninterpreted
import multisoftmax.torch  # noqa: F401  (registers torch.ops.multisoftmax)
from multisoftmax import dispatch, launch, occupancy
from multisoftmax.kernels import softmax as kernel_module
import triton  # noqa: E402  (after multisoftmax, which sets TRITON_INTERPRET where asked)
import triton.language as tl  # noqa: E402

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16,
          "float64": torch.float64}


@pytest.fixture
def forced_family(monkeypatch):
    """Force dispatch.family to one family, with tiny loop tiles and chunks."""

    def force(fam: str, peel_min_n: int = dispatch.PEEL_MIN_N):
        monkeypatch.setattr(dispatch, "family", lambda *a: fam)
        monkeypatch.setattr(dispatch, "PEEL_MIN_N", peel_min_n)
        monkeypatch.setattr(dispatch, "LOOP_BLOCK_N", {2: 16, 4: 16, 8: 16})
        monkeypatch.setattr(dispatch, "MIN_CHUNK", 32)
        monkeypatch.setattr(dispatch, "COOP_CHUNK_N", {2: 64, 4: 64, 8: 64})
        dispatch.plan_forward.cache_clear()
        dispatch.plan_backward.cache_clear()

    yield force
    dispatch.plan_forward.cache_clear()
    dispatch.plan_backward.cache_clear()


def _random(shape, dtype, device, seed):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(shape, generator=g, dtype=torch.float64) * 3).to(DTYPES[dtype]).to(device)


@pytest.mark.parametrize("fam", ["rows", "coop", "online", "split"])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float64"])
@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
@pytest.mark.parametrize("M,N", [(1, 1), (3, 17), (5, 100), (2, 129)])
def test_family_forward_backward(forced_family, torch_device, fam, dtype, log, M, N):
    forced_family(fam)
    x = _random((M, N), dtype, torch_device, seed=M * 1000 + N)
    y = torch.ops.multisoftmax.softmax_fwd(x, log)
    expected = ref.softmax(x.double().cpu().numpy(), log=log)
    ref.assert_close(y.double().cpu(), expected, dtype, f"{fam} fwd")

    dy = _random((M, N), dtype, torch_device, seed=M * 1000 + N + 1)
    dx = torch.ops.multisoftmax.softmax_bwd(y, dy, log)
    expected_dx = ref.softmax_backward(y.double().cpu().numpy(), dy.double().cpu().numpy(), log=log)
    ref.assert_close(dx.double().cpu(), expected_dx, dtype, f"{fam} bwd", scale_atol=True)


@pytest.fixture
def tables16_before():
    """dispatch as before the 16-bit short-row tables (ROWS_PEEL16, ROWS_WHOLE16_TAILS, ROWS_ODD16_TILINGS, ...) became
    every GPU's (forced_plans.before_tables16): the rules' own plans of unaligned 16-bit rows on the H100, which the
    rule tests that take this fixture describe (test_rows_peel16_rule and its kin hold the tables)."""
    with patched_within(dispatch, before_tables16):
        yield


@pytest.mark.parametrize("fam", ["rows", "coop"])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float64"])
@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
@pytest.mark.parametrize("M,N", [(9, 3), (3, 17), (4, 37), (2, 130)])
def test_peeled_rows(forced_family, monkeypatch, torch_device, fam, dtype, log, M, N):
    """Rows not 16-byte aligned, cut into head, aligned body and tail (PEEL): every row
    starts at another offset within a 16-byte cell; rows shorter than a cell, which `peel` leaves
    whole (no body), are all head where forced (force_peel, as the benchmark and probes can). The H100's
    ROWS_WHOLE32, which runs short float32 rows whole, is left out (test_rows_whole32_run runs it)."""
    monkeypatch.setattr(dispatch, "ROWS_WHOLE32", {})
    forced_family(fam, peel_min_n=1)
    x = _random((M, N), dtype, torch_device, seed=M * 7 + N)
    vec = 16 // x.element_size()
    plan = dispatch.plan_forward(M, N, N, N, dtype, log, 132)
    assert plan[0].kwargs["PEEL"] == (N % vec != 0 and N >= vec)
    y = torch.ops.multisoftmax.softmax_fwd(x, log)
    expected = ref.softmax(x.double().cpu().numpy(), log=log)
    ref.assert_close(y.double().cpu(), expected, dtype, f"{fam} fwd")
    dy = _random((M, N), dtype, torch_device, seed=M * 7 + N + 1)
    dx = torch.ops.multisoftmax.softmax_bwd(y, dy, log)
    expected_dx = ref.softmax_backward(y.double().cpu().numpy(), dy.double().cpu().numpy(), log=log)
    ref.assert_close(dx.double().cpu(), expected_dx, dtype, f"{fam} bwd", scale_atol=True)
    if N < vec:  # all head, forced
        fwd = dispatch.plan_forward(M, N, N, N, dtype, log, 132, force_peel=True)
        bwd = dispatch.plan_backward(M, N, N, N, N, dtype, log, 132, force_peel=True)
        assert fwd[0].kwargs["PEEL"] and bwd[0].kwargs["PEEL"]
        ref.assert_close(_run(fwd, {"x": x}, dtype, torch_device, (M, N)).double().cpu(), expected, dtype,
                         f"{fam} fwd, peeled")
        ref.assert_close(_run(bwd, {"y": y, "dy": dy}, dtype, torch_device, (M, N)).double().cpu(), expected_dx,
                         dtype, f"{fam} bwd, peeled", scale_atol=True)


def _assert_special_rows(x, fam):
    """softmax and log_softmax of float32 `x` against torch's in float64, every element; rows 0 to 3
    as the special-value tests make them: row 0 -inf up to column 70 and finite after, rows 1 to 3
    all -inf, with an inf, with a NaN (NaN rows)."""
    for log in (False, True):
        y = torch.ops.multisoftmax.softmax_fwd(x, log)
        expected = (torch.log_softmax if log else torch.softmax)(x.double().cpu(), -1)
        ref.assert_close(y.cpu(), expected, "float32", f"{fam} log={log}")
        assert torch.isfinite(y[0, 70:]).all() and torch.isnan(y[1:4]).all()


@pytest.mark.parametrize("fam", ["rows", "coop"])
def test_peeled_special_values(forced_family, torch_device, fam):
    """Special values in a PEEL row's head, body and tail."""
    forced_family(fam, peel_min_n=1)
    x = torch.randn(6, 133, dtype=torch.float64).to(torch.float32)
    x[0, :70] = -float("inf")
    x[1, :] = -float("inf")
    x[2, 1] = float("inf")   # head or body, by row offset
    x[3, 132] = float("nan")  # the tail
    x[4, :] *= 1e37
    _assert_special_rows(x.to(torch_device), fam)


def test_peel_rule(tables16_before):
    # 16-bit rows of N = 16385 or 50257 are not 16-byte aligned: peeled; aligned ones are not.
    assert dispatch.plan_forward(8191, 16385, 16385, 16385, "bfloat16", False, 132)[0].kwargs["PEEL"]
    assert dispatch.plan_backward(2670, 50257, 50257, 50257, 50257, "float16", True, 132)[0].kwargs["PEEL"]
    assert not dispatch.plan_forward(4096, 16384, 16384, 16384, "bfloat16", False, 132)[0].kwargs["PEEL"]
    assert not dispatch.plan_forward(4096, 16388, 16388, 16388, "float32", False, 132)[0].kwargs["PEEL"]
    # Short 16-bit rows (measured slower peeled) unless their row has a tail segment anyway;
    # any unaligned float32 row. Tensors of different row strides (the edges follow one row
    # start): never.
    assert not dispatch.plan_forward(64, 781, 781, 781, "bfloat16", False, 132)[0].kwargs["PEEL"]
    assert dispatch.plan_forward(64, 129, 129, 129, "bfloat16", False, 132)[0].kwargs["PEEL"]
    assert dispatch.plan_forward(64, 781, 781, 781, "float32", False, 132)[0].kwargs["PEEL"]
    assert not dispatch.plan_forward(64, 16385, 16400, 16385, "bfloat16", False, 132)[0].kwargs["PEEL"]
    # ...but not rows shorter than a 16-byte vector (float32 N < 4, float64 N = 1): no body to move in vectors.
    for dtype, N in (("float32", 1), ("float32", 2), ("float32", 3), ("float64", 1)):
        for gpu in ("", "H200"):
            assert not dispatch.plan_forward(65536, N, N, N, dtype, False, 132, gpu=gpu)[0].kwargs["PEEL"], (dtype, N)
            assert not dispatch.plan_backward(65536, N, N, N, N, dtype, True, 132, gpu=gpu)[0].kwargs["PEEL"]
    assert dispatch.plan_forward(64, 5, 5, 5, "float32", False, 132, force="rows")[0].kwargs["PEEL"]
    assert dispatch.plan_forward(64, 33, 33, 33, "float32", False, 132)[0].kwargs["PEEL"]  # (5-32: ROWS_WHOLE32's)
    assert dispatch.plan_forward(64, 3, 3, 3, "float64", False, 132)[0].kwargs["PEEL"]
    plan = dispatch.plan_forward(8191, 16385, 16385, 16385, "bfloat16", False, 132)[0].kwargs
    assert (plan["BLOCK_N"], plan["TAIL_N"], plan["VEC"]) == (16384, 16, 8)
    # From PEEL_MIN_N on, 16-bit rows are peeled, on half the warps of an unpeeled row; float32
    # ones from 16 warps on; not the log_softmax backward past 8192 lanes; float64 never.
    assert dispatch.plan_forward(64, 3001, 3001, 3001, "float16", False, 132)[0].kwargs["PEEL"]
    assert not dispatch.plan_forward(64, 1001, 1001, 1001, "float16", False, 132)[0].kwargs["PEEL"]

    def warps(N, dtype, log=False, forward=True, M=4096):
        plan = (dispatch.plan_forward(M, N, N, N, dtype, log, 132) if forward
                else dispatch.plan_backward(M, N, N, N, N, dtype, log, 132))
        return plan[0].kwargs["num_warps"]

    for dtype in ("bfloat16", "float16"):
        for N, aligned in ((16385, 16384), (3001, 3008), (8191, 8192)):
            assert warps(N, dtype) == warps(aligned, dtype) // 2
            assert warps(N, dtype, log=True) == warps(aligned, dtype, log=True) // 2
            assert warps(N, dtype, forward=False) == warps(aligned, dtype, forward=False) // 2
        assert warps(8191, dtype, log=True, forward=False) == warps(8192, dtype, log=True, forward=False) // 2
        assert warps(16385, dtype, log=True, forward=False) == warps(16384, dtype, log=True, forward=False)
    assert warps(16385, "float32") == warps(16384, "float32") // 2 == 8
    assert warps(16385, "float32", log=True, forward=False) == warps(16384, "float32", log=True, forward=False)
    assert warps(3001, "float32") == warps(3004, "float32") == 8
    assert warps(16385, "float64", M=512) == warps(16384, "float64", M=512)
    # The cooperative softmax backward reloads y and dy after its wait for peeled 16-bit rows
    # only (the log_softmax's defers y and packs dy there: test_coop_defer_y_rule).
    reload = {(N, dtype): dispatch.plan_backward(2048, N, N, N, N, dtype, False, 132)[0].kwargs["RELOAD"]
              for N in (50257, 65536) for dtype in ("bfloat16", "float16", "float32")}
    assert reload == {(50257, "bfloat16"): True, (50257, "float16"): True, (50257, "float32"): False,
                      (65536, "bfloat16"): False, (65536, "float16"): False, (65536, "float32"): False}


def test_coop_pack_and_late_leave_rules():
    # The cooperative backward holds 16-bit y and dy packed from COOP_PACK_MIN_CHUNKS chunks a
    # row on (peeled rows: COOP_PACK_PEELED_MIN_CHUNKS; then never RELOAD), when rows are whole
    # words (peeled, or N and strides even).
    def bwd(M, N, dtype, log=False, strides=None):  # the cooperative kernel's own rules (force="coop"), though
        strides = strides or (N, N, N)  # PIPE_* takes some of these grids (test_pipe_rule)
        return dispatch.plan_backward(M, N, *strides, dtype, log, 132, force="coop")[0].kwargs

    for dtype in ("bfloat16", "float16"):
        for N in (1048576, 262144, 256000):
            assert bwd(16, N, dtype)["PACK"] and not bwd(16, N, dtype)["RELOAD"]
        # Unpeeled rows pack only in a grid of more than COOP_UNPACKED_PER_SM programs an SM
        # (132 SMs: 396; 256000 takes 32 chunks, 1048576 128), peeled ones whatever the grid.
        assert not bwd(12, 256000, dtype)["PACK"] and bwd(13, 256000, dtype)["PACK"]
        assert not bwd(3, 1048576, dtype, log=True)["PACK"] and bwd(4, 1048576, dtype, log=True)["PACK"]
        assert not bwd(1, 256000, dtype)["RELOAD"]
        kw = bwd(1, 256001, dtype)
        assert kw["PEEL"] and kw["PACK"] and not kw["RELOAD"]
        kw = bwd(64, 256001, dtype, log=True)  # peeled and packed
        assert kw["PEEL"] and kw["PACK"] and not kw["RELOAD"]
        for M, N in ((2048, 65536), (4559, 29440), (1024, 128256), (512, 151936), (64, 128256), (32, 128256)):
            kw = bwd(M, N, dtype)  # unpeeled rows of 4 to 31 chunks in grids of more than 3 programs an SM
            assert kw["PACK"] and not kw["RELOAD"] and not kw["PEEL"], (M, N)
        assert not bwd(24, 128256, dtype)["PACK"]  # 384 programs <= 396
        assert not bwd(2670, 50257, dtype)["PACK"] and bwd(2670, 50257, dtype)["RELOAD"]  # peeled, 7 chunks
        # Odd N with unequal strides: neither peeled nor whole words.
        assert not bwd(16, 256001, dtype, strides=(256001, 256003, 256001))["PACK"]
        assert bwd(16, 256002, dtype, strides=(256002, 256006, 256002))["PACK"]
    assert not bwd(16, 1048576, "float32")["PACK"] and not bwd(16, 524288, "float64")["PACK"]
    # LATE_LEAVE: the softmax kernels, not log_softmax, nor the wide forward chunks, nor TAG, and
    # only from COOP_LATE_LEAVE_MIN_PER_SM programs an SM (132 SMs: 1584 programs).
    # (The 16-bit forward's, packed: test_coop_forward_pack_rule; the float32 log_softmax forward
    # with SENT, which always leaves late: test_coop_sent_rule.)
    fwd = lambda M, N, dtype, log=False: dispatch.plan_forward(M, N, N, N, dtype, log, 132)[0].kwargs  # noqa: E731
    for M, N in ((2670, 50257), (16, 1048576), (128, 1048576)):
        if N == 50257:  # float32 forward: TAG (COOP_TAG_FWD32_MIN_PER_SM)
            assert fwd(M, N, "float32")["TAG"] and not fwd(M, N, "float32")["LATE_LEAVE"]
        else:
            assert fwd(M, N, "float32")["LATE_LEAVE"] and fwd(M, N, "float32", log=True)["SENT"]
        for dtype in ("bfloat16", "float32"):
            if N == 50257:  # 7 chunks: TAG, which has no second arrival
                assert bwd(M, N, dtype)["TAG"] and not bwd(M, N, dtype)["LATE_LEAVE"]
            else:
                assert bwd(M, N, dtype)["LATE_LEAVE"] and not bwd(M, N, dtype, log=True)["LATE_LEAVE"]
        for M, N in ((1, 128256), (8, 256000), (64, 128256), (4, 1048576)):  # at most 1024 programs
            assert not fwd(M, N, dtype)["LATE_LEAVE"] and not bwd(M, N, dtype)["LATE_LEAVE"]
    # rows not of whole words (unequal odd strides: no PEEL) on counters, in wide unpacked chunks
    wide = dispatch.plan_forward(64, 256000, 256001, 256003, "bfloat16", False, 132)[0].kwargs
    assert wide["CHUNK_N"] == 16384 and not wide["LATE_LEAVE"] and not wide["PACK"] and not wide["TAG"]


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
@pytest.mark.parametrize("M,N,pad", [(3, 130, 0), (2, 200, 6), (5, 131, 0), (4, 67, 0), (2, 129, 3)])
def test_coop_packed_backward(forced_family, torch_device, monkeypatch, dtype, log, M, N, pad):
    """The cooperative backward with y and dy packed in words (PACK; chunks of 64 values):
    even rows, rows padded to a wider stride, peeled odd rows (every row another offset in
    its 16-byte cell) and, with an odd pad (strides unequal to dx's), unpacked rows."""
    forced_family("coop", peel_min_n=1)
    monkeypatch.setattr(dispatch, "COOP_PACK_MIN_CHUNKS", 2)
    monkeypatch.setattr(dispatch, "COOP_PACK_PEELED_MIN_CHUNKS", 2)
    monkeypatch.setattr(dispatch, "COOP_UNPACKED_PER_SM", 0)
    x = _random((M, N), dtype, torch_device, seed=M * 31 + N)
    y = torch.ops.multisoftmax.softmax_fwd(x, log)
    dy = _random((M, N + pad), dtype, torch_device, seed=M * 31 + N + 1)[:, :N]
    if pad:
        y = torch.empty((M, N + pad), dtype=y.dtype, device=torch_device)[:, :N].copy_(y)
    kw = dispatch.plan_backward(M, N, y.stride(0), dy.stride(0), N, dtype, log, 132)[0].kwargs
    assert kw["PACK"] == (pad % 2 == 0)
    dx = torch.ops.multisoftmax.softmax_bwd(y, dy, log)
    expected = ref.softmax_backward(y.double().cpu().numpy(), dy.double().cpu().numpy(), log=log)
    ref.assert_close(dx.double().cpu(), expected, dtype, "packed coop bwd", scale_atol=True)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float32"])
@pytest.mark.parametrize("M,N,pad", [(3, 130, 0), (2, 200, 6), (5, 131, 0), (2, 129, 3)])
def test_coop_deferred_y_backward(forced_family, torch_device, monkeypatch, dtype, M, N, pad):
    """The cooperative log_softmax backward loading y only after the row's wait (DEFER_Y):
    16-bit rows of whole words with dy packed (even rows, rows padded to a wider stride, peeled
    odd rows), unpacked where they are not (an odd pad: strides unequal to dx's) and float32
    rows; a row with a NaN in dy and a row whose y is -inf (exp(y) = 0) in one chunk."""
    forced_family("coop", peel_min_n=1)
    monkeypatch.setattr(dispatch, "_coop_defer_y", lambda *a: True)
    x = _random((M, N), dtype, torch_device, seed=M * 41 + N)
    x[0, :64] = -float("inf")  # the row's first chunk: y = -inf there
    y = torch.ops.multisoftmax.softmax_fwd(x, True)
    dy = _random((M, N + pad), dtype, torch_device, seed=M * 41 + N + 1)[:, :N]
    dy[M - 1, N // 2] = float("nan")
    if pad:
        y = torch.empty((M, N + pad), dtype=y.dtype, device=torch_device)[:, :N].copy_(y)
    kw = dispatch.plan_backward(M, N, y.stride(0), dy.stride(0), N, dtype, True, 132)[0].kwargs
    assert kw["DEFER_Y"] and not kw["RELOAD"] and kw["PACK"] == (dtype != "float32" and pad % 2 == 0)
    assert kw["BITS"] == (not kw["PEEL"] and dtype != "float32")  # bfloat16 words by bit operations (float16 ignores it)
    y_before, dy_before = y.clone(), dy.clone()
    dx = torch.ops.multisoftmax.softmax_bwd(y, dy, True)
    assert torch.equal(y, y_before) and torch.equal(dy.nan_to_num(), dy_before.nan_to_num())
    expected = ref.softmax_backward(y.double().cpu().numpy(), dy.double().cpu().numpy(), log=True)
    assert torch.isnan(dx[M - 1]).all() and not torch.isnan(dx[:M - 1]).any()
    ref.assert_close(dx.double().cpu(), expected, dtype, "deferred-y coop bwd", scale_atol=True)


def test_coop_forward_pack_rule():
    # The 16-bit cooperative forward on counters (rows of more than 32 chunks, and those TAG leaves:
    # peeled rows below 4224 programs, rows not of whole words): the softmax takes unpacked wide
    # chunks (16384 values) where their grid has more than COOP_WIDE_MIN_PER_SM programs an SM (132
    # SMs: 528); else x is held packed where the grid of 8192-value chunks has more than
    # COOP_FWD_UNPACKED_PER_SM programs an SM (660); packed, unpeeled rows take 16384-value chunks
    # from COOP_PACK_WIDE_MIN_PER_SM programs an SM (2244 of 8192); LATE_LEAVE by the grid taken
    # (1584). Unpeeled rows of whole words of at most 32 chunks: TAG (test_coop_tag_few_rule).
    def fwd(M, N, dtype, log=False, strides=None):
        kw = dispatch.plan_forward(M, N, *(strides or (N, N)), dtype, log, 132)[0].kwargs
        return kw["PACK"], kw["CHUNK_N"], kw["LATE_LEAVE"]

    for dtype in ("bfloat16", "float16"):
        assert fwd(2048, 65536, dtype) == (True, 8192, False)  # TAG: packed, 4 warps (test_coop_tag_rule)
        odd = (256001, 256003)  # unequal odd strides: not whole words, no PEEL, counters
        assert fwd(64, 256000, dtype, strides=odd) == (False, 16384, False)  # 1024 wide programs > 528
        assert fwd(32, 256000, dtype, strides=odd) == (False, 8192, False)  # 512 wide programs <= 528, 1024 <= 660
        assert fwd(64, 256000, dtype) == (True, 8192, False)  # TAG's 4-warp chunks (test_coop_tag_few_rule)
        assert fwd(64, 128256, dtype) == (True, 8192, False)
        assert fwd(32, 256000, dtype) == (True, 8192, False)
        assert fwd(32, 128256, dtype) == (True, 8192, False)  # TAG, few rows: packed, 8 warps
        assert fwd(2048, 65536, dtype, log=True) == (True, 16384, False)  # TAG, 16384 programs of 8192 >= 12672
        assert fwd(1024, 65536, dtype, log=True) == (True, 8192, False)  # TAG, 8192 programs < 12672
        assert fwd(512, 151936, dtype, log=True) == (True, 8192, False)  # TAG: 9728 >= 4224, 19 chunks
        assert fwd(64, 256000, dtype, log=True) == (True, 8192, False)  # TAG at any grid (test_coop_tag_few_rule)
        assert fwd(64, 128256, dtype, log=True) == (True, 8192, False)
        assert fwd(8, 256000, dtype, log=True) == (True, 8192, False)  # TAG: packed, 8 warps
        assert fwd(8, 256000, dtype) == (True, 8192, False)  # TAG: packed, 8 warps
        for log in (False, True):
            assert fwd(5, 1048576, dtype, log=log) == (False, 8192, False)  # 640 programs <= 660
            assert fwd(6, 1048576, dtype, log=log) == (True, 8192, True)  # COOP_SPLIT_SUM_MAX_CHUNKS's few rows
            assert fwd(17, 1048576, dtype, log=log) == (True, 8192, True)  # 2176 programs < 2244
            assert fwd(18, 1048576, dtype, log=log) == (True, 16384, True)  # 2304 programs of 8192
            assert fwd(128, 1048576, dtype, log=log) == (True, 16384, True)
            assert fwd(2670, 50257, dtype, log=log) == (True, 8192, False)  # peeled: TAG, 4 warps
            assert fwd(256, 50257, dtype, log=log) == (True, 8192, True)  # 1792 programs < 4224
            # Odd rows with unequal strides: neither peeled nor whole words.
            assert fwd(2670, 50257, dtype, log=log, strides=(50257, 50259))[0] is False
        assert fwd(2670, 50258, dtype, log=True, strides=(50258, 50262)) == (True, 16384, False)  # TAG, 18690 programs
    assert not fwd(128, 1048576, "float32")[0] and not fwd(2048, 65536, "float32", log=True)[0]
    assert not fwd(128, 524288, "float64")[0]


def test_coop_defer_y_rule():
    # The 16-bit cooperative log_softmax backward defers y where its grid has more than
    # COOP_UNPACKED_PER_SM programs an SM (132 SMs: 396), and then packs dy whenever its rows are
    # whole words (peeled, or N and the strides even): never RELOAD; unpeeled, it unpacks
    # bfloat16 words by bit operations (BITS).
    def bwd(M, N, dtype, log=True, strides=None):  # the cooperative kernel's (force="coop"; PIPE_*: test_pipe_rule)
        kw = dispatch.plan_backward(M, N, *(strides or (N, N, N)), dtype, log, 132, force="coop")[0].kwargs
        assert kw["BITS"] == (kw["DEFER_Y"] and not kw["PEEL"])  # bfloat16 unpacked by bit operations
        return kw["DEFER_Y"], kw["PACK"], kw["RELOAD"]

    for dtype in ("bfloat16", "float16"):
        assert bwd(2048, 65536, dtype) == (True, True, False)
        assert bwd(50, 65536, dtype) == (True, True, False)  # 400 programs
        assert bwd(49, 65536, dtype) == (False, False, False)  # 392 programs
        assert bwd(8, 256000, dtype) == (False, False, False)
        assert bwd(2670, 50257, dtype) == (True, True, False)  # peeled
        assert bwd(2670, 50257, dtype, strides=(50257, 50259, 50257)) == (True, False, False)  # odd strides
        assert bwd(2670, 50257, dtype, log=False) == (False, False, True)  # the softmax's: RELOAD
        assert bwd(128, 1048576, dtype, log=False) == (False, True, False)
    assert bwd(2048, 65536, "float32") == (False, False, False)
    assert bwd(1024, 65536, "float64") == (False, False, False)


def test_coop_tag_rule():
    # TAG (tagged partials in place of arrival counters): the backward of float32 and 16-bit rows
    # of at most COOP_TAG_MAX_CHUNKS chunks (of the chunks taken); the forward of peeled 16-bit ones
    # in a grid of at least COOP_TAG_FWD_MIN_PER_SM programs an SM (132 SMs: 4224), unpeeled ones of
    # whole words at every grid (test_coop_tag_few_rule), 16-bit rows of whole words then packed in
    # 8192-value chunks at COOP_FWD16_WARPS warps, summed in halves (SPLIT_SUM), the log_softmax's in
    # 16384-value chunks at 8 warps from COOP_FWD16_LOG_WIDE_MIN_PER_SM programs an SM; never rows of
    # more than COOP_TAG_MAX_CHUNKS chunks of 8192 (those wait on counters). Never float64, never
    # LATE_LEAVE with it.
    def plan(M, N, dtype, fwd, log=False, strides=None):
        if fwd:
            kw = dispatch.plan_forward(M, N, *(strides or (N, N)), dtype, log, 132)[0].kwargs
        else:  # the cooperative kernel's (force="coop"; PIPE_* takes some of these grids: test_pipe_rule)
            kw = dispatch.plan_backward(M, N, *(strides or (N, N, N)), dtype, log, 132, force="coop")[0].kwargs
        assert not (kw["TAG"] and kw["LATE_LEAVE"])
        return kw

    for dtype in ("bfloat16", "float16", "float32"):
        for log in (False, True):
            for M, N in ((2048, 65536), (2670, 50257), (512, 262144), (1, 128256), (8, 256000), (1, 40000)):
                assert plan(M, N, dtype, False, log)["TAG"], (M, N, dtype)  # at most 32 chunks
            for M, N in ((16, 1048576), (128, 1048576), (1, 256000)):  # 128, 128 and 63 (4096-value) chunks
                assert not plan(M, N, dtype, False, log)["TAG"], (M, N, dtype)
            assert plan(2048, 65536, dtype, True, log)["TAG"]
            assert plan(1024, 131072, dtype, True, log)["TAG"]
            # 16-bit: a grid of 2048 programs of 8192, unpeeled: TAG at every grid (the softmax since
            # COOP_TAG_FWD16_SM_FEW_MAX_PER_SM, in COOP_FWD16_WARPS's packed chunks); float32 from 99 programs
            kw = plan(64, 256000, dtype, True, log)
            assert kw["TAG"] and (kw["CHUNK_N"], kw["num_warps"]) == ((8192, 4) if dtype != "float32" else (8192, 8))
            kw = plan(2670, 50257, dtype, True, log)  # peeled
            assert kw["TAG"] and (kw["CHUNK_N"], kw["num_warps"]) == ((8192, 4) if dtype != "float32" else (8192, 8))
            assert kw["SPLIT_SUM"] == (dtype != "float32")
            assert plan(604, 50257, dtype, True, log)["TAG"] and (plan(603, 50257, dtype, True, log)["TAG"]
                                                                  == (dtype == "float32"))  # 4228, 4221
            assert not plan(1, 128256, dtype, True, log)["TAG"]
        if dtype == "float32":
            assert plan(13, 65536, dtype, True)["TAG"] and not plan(12, 65536, dtype, True)["TAG"]  # 104, 96
            assert plan(4, 256000, dtype, True)["TAG"] and not plan(1, 50257, dtype, True)["TAG"]
        else:  # the softmax of unpeeled rows: 4 warps' packed chunks from 528 programs (4 an SM), 8 warps' below
            assert [(kw["TAG"], kw["num_warps"], kw["PACK"]) for kw in (plan(M, 65536, dtype, True) for M in (66, 65))
                    ] == [(True, 4, True), (True, 8, True)]
            assert not plan(603, 50257, dtype, True)["TAG"]  # peeled: from 4224 programs (above)
        # 32 chunks of 8192 at 262144 (TAG; 16-bit at 4 warps), 64 at 524288 and 128 at 1048576
        # (counters, with keyed partials; 16-bit: COOP_SPLIT_SUM_MAX_CHUNKS's chunks, wide ones).
        kw = plan(512, 262144, dtype, True)
        assert kw["TAG"] and (kw["CHUNK_N"], kw["num_warps"], kw["SPLIT_SUM"]) == (8192, 8 if dtype == "float32" else 4,
                                                                                  dtype != "float32")
        for M, N in ((256, 524288), (512, 524288), (128, 1048576)):
            for log in (False, True):
                kw = plan(M, N, dtype, True, log)
                assert not kw["TAG"] and kw["SENT"] and kw["CHUNK_N"] == (16384 if dtype != "float32" and N > 524288
                                                                          else 8192)
        # 16-bit log_softmax from COOP_FWD16_LOG_WIDE_MIN_PER_SM (12672 programs of 8192): wide chunks
        kw = plan(2048, 65536, dtype, True, True)
        assert kw["TAG"] and (kw["CHUNK_N"], kw["num_warps"]) == ((8192, 8) if dtype == "float32" else (16384, 8))
        kw = plan(1536, 65536, dtype, True, True)  # 12288
        assert kw["TAG"] and (kw["CHUNK_N"], kw["num_warps"]) == ((8192, 8) if dtype == "float32" else (8192, 4))
    # Peeled 16-bit rows under TAG take 8192-value chunks at 4 warps, as unpeeled ones do.
    kw = plan(4096, 200003, "bfloat16", True)
    assert kw["TAG"] and kw["PEEL"] and kw["SPLIT_SUM"] and (kw["CHUNK_N"], kw["num_warps"]) == (8192, 4)
    for fwd in (True, False):
        kw = plan(2048, 65536, "bfloat16", fwd)  # the backward's PACK: test_coop_pack_and_late_leave_rules
        assert kw["TAG"] and kw["CHUNK_N"] == 8192 and kw["num_warps"] == (4 if fwd else 8) and kw["PACK"]
        assert not plan(1024, 65536, "float64", fwd)["TAG"]
        # Odd N with unequal strides: not whole words, so unpacked 8192-value chunks.
        kw = plan(2048, 65535, "bfloat16", fwd, strides=(65535, 65537) if fwd else (65535, 65537, 65535))
        assert kw["TAG"] and not kw["PACK"] and kw["CHUNK_N"] == 8192


def test_split_fresh_rule():
    # A launcher that zeroes counters on every call (counters_per_call: the JAX adapter) gets the
    # split plan for cooperative grids of up to 2 programs an SM forward (132 SMs: 264 programs of
    # COOP_CHUNK_N values) and half a program an SM in the backward (66) of the log_softmax and of
    # the softmax on counters (no TAG: more than 32 chunks a row), in the shortest chunks of
    # 2048/4096/8192 values that keep <= 264 programs, one tile each. torch
    # (counters zeroed once), float64, a forced family and larger grids keep their plans.
    def plan(M, N, dtype, log, direction="fwd", fresh=True, force=None):
        if direction == "fwd":
            return dispatch.plan_forward.__wrapped__(M, N, N, N, dtype, log, 132, force, None, fresh)
        return dispatch.plan_backward.__wrapped__(M, N, N, N, N, dtype, log, 132, force, None, fresh)

    def split(M, N, dtype, log, direction="fwd", **kw):
        p = plan(M, N, dtype, log, direction, **kw)
        if "split" not in p[0].kernel:
            return None
        chunk = p[0].scalars[-2]
        assert all(l.kwargs["BLOCK_N"] == chunk and l.grid == (M, -(-N // chunk)) for l in p)
        return chunk

    for dtype in ("bfloat16", "float16", "float32"):
        for log in (False, True):
            assert split(1, 128256, dtype, log) == 2048  # 16 programs; 63 split
            assert split(1, 256000, dtype, log) == 2048  # 125
            assert split(4, 128256, dtype, log) == 2048  # 252
            assert split(8, 128256, dtype, log) == 4096  # 256
            assert split(8, 256000, dtype, log) == 8192
            assert split(16, 128256, dtype, log) == 8192  # 256 programs of 8192
            assert split(1, 1048576, dtype, log) == 4096  # 128 programs; 256 split
            assert split(17, 128256, dtype, log) is None  # 272 > 264
            assert split(16, 256000, dtype, log) is None
            assert split(1, 128256, dtype, log, fresh=False) is None  # torch
            assert split(1, 128256, dtype, log, force="coop") is None
            assert split(1, 32768, dtype, log) == 2048  # any cooperative row
            assert split(1000, 4096, dtype, log) is None  # rows family
            # The backward: up to 66 programs, the softmax's only where it waits on counters
            assert split(1, 128256, dtype, False, "bwd") is None  # 32 chunks of 4096: TAG
            assert split(1, 128256, dtype, True, "bwd") == 2048
            assert split(1, 256000, dtype, False, "bwd") == 2048  # 63 chunks: counters
            assert split(2, 256000, dtype, False, "bwd") is None  # 32 chunks of 8192 a row: TAG
            assert split(1, 540672, dtype, False, "bwd") == 2048  # 66 programs (264 of 2048)
            assert split(1, 540673, dtype, False, "bwd") is None
            assert split(1, 256000, dtype, True, "bwd") == 2048
            assert split(4, 128256, dtype, True, "bwd") == 2048  # 64 programs
            assert split(5, 128256, dtype, True, "bwd") is None  # 80
    assert split(1, 128256, "float64", False) is None
    assert split(1, 128256, "float64", True, "bwd") is None


def test_coop_tag_few_rule():
    # Few long rows (COOP_TAG_FWD16_FEW_MAX_PER_SM, COOP_TAG_FWD16_SM_FEW_MAX_PER_SM): unpeeled 16-bit
    # rows take TAG in 8192-value chunks at 8 warps, packed, from 0.75 programs of 8192 values an SM
    # (132 SMs: 99) in a grid of fewer than 6 an SM (792; the softmax: 4, 528); past those the 4 warps'
    # packed chunks (SPLIT_SUM) at every grid. Peeled rows, float32 and rows of more than 32 chunks
    # keep their rules.
    def kw(M, N, dtype, log, strides=None):
        return dispatch.plan_forward(M, N, *(strides or (N, N)), dtype, log, 132)[0].kwargs

    def tag(M, N, dtype, log):
        k = kw(M, N, dtype, log)
        return (k["TAG"], k["PACK"], k["CHUNK_N"], k["num_warps"], k["SPLIT_SUM"]) if k["TAG"] else None

    for dtype in ("bfloat16", "float16"):
        for log in (False, True):
            assert tag(4, 256000, dtype, log) == (True, True, 8192, 8, False)  # 128 programs
            assert tag(8, 128256, dtype, log) == (True, True, 8192, 8, False)  # 128
            assert tag(3, 256000, dtype, log) is None  # 96
            assert tag(6, 256000, dtype, log) == (True, True, 8192, 8, False)  # 192
            assert tag(16, 256000, dtype, log) == (True, True, 8192, 8, False)  # 512
            assert tag(16, 1048576, dtype, log) is None  # 128 chunks a row
            for M, N in ((25, 256000), (64, 256000), (64, 128256), (256, 128256)):  # 800 to 4096
                assert tag(M, N, dtype, log) == (True, True, 8192, 4, True)
        assert tag(24, 256000, dtype, True) == (True, True, 8192, 8, False)  # 768
        assert tag(24, 256000, dtype, False) == (True, True, 8192, 4, True)
        assert tag(17, 256000, dtype, False) == (True, True, 8192, 4, True)  # 544
        assert tag(16, 128256, dtype, False) == (True, True, 8192, 8, False)  # 256
        assert tag(16, 100003, dtype, True) is None  # peeled: from 4224 programs
    assert not kw(7, 256000, "float32", False)["PACK"] and kw(7, 256000, "float32", False)["TAG"]


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16"])
@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
@pytest.mark.parametrize("few", [False, True], ids=["grid", "few"])
def test_coop_tagged_partials(forced_family, torch_device, monkeypatch, dtype, log, few):
    """TAG: the cooperative forward (16-bit: packed, chunks of 128 values) and backward (peeled
    and unpeeled rows) waiting on tagged partials, launch after launch on one buffer of words, as
    the GPU launcher's pool hands it on: a launch of another shape between two of the same, whose
    slots the next launch must not take for its own (a slot without the launch's tag reads as NaN
    under the interpreter). The generation word rises by one a launch, its ticket back at 0; a
    NaN row, a chunk of -inf; no input is modified. `few`: the 16-bit forward as grids of few
    programs take it (COOP_TAG_FWD16_FEW_MAX_PER_SM: 8 warps, packed), else as larger grids do
    (packed, 4 warps); with `few` the 16-bit softmax of 5 x 136 holds x unpacked, as TAG takes rows
    not of whole words."""
    forced_family("coop", peel_min_n=1)
    monkeypatch.setattr(dispatch, "COOP_TAG_FWD_MIN_PER_SM", 0)
    monkeypatch.setattr(dispatch, "COOP_TAG_FWD32_MIN_PER_SM", 0)
    monkeypatch.setattr(dispatch, "COOP_TAG_FWD16_FEW_MIN_PER_SM", 0)
    monkeypatch.setattr(dispatch, "COOP_TAG_FWD16_FEW_MAX_PER_SM", 1e9 if few else 0)
    monkeypatch.setattr(dispatch, "COOP_TAG_FWD16_SM_FEW_MAX_PER_SM", 1e9 if few else 0)
    sync = torch.zeros(4096, dtype=torch.int32, device=torch_device)
    launches = 0
    for M, N in ((3, 200), (5, 136), (3, 200), (4, 131), (3, 121)):
        x = _random((M, N), dtype, torch_device, seed=M * 43 + N)
        x[0, :64] = -float("inf")
        x[0, 64:] -= 300.0  # below exp's range from 0: the -inf chunk publishes -inf, not 0
        x[M - 1, N // 3] = float("nan")
        x_before = x.clone()
        fwd = dispatch.plan_forward(M, N, N, N, dtype, log, 132)
        bufs = {"x": x, "count": sync}
        call = lambda l, ins, b: launch.torch_call(l, ins, b, x.dtype, x.device)  # noqa: E731
        if N % 2 == 0:  # unpeeled: the forward takes TAG
            kw = fwd[0].kwargs
            assert kw["TAG"] and kw["PACK"] == (dtype != "float32")
            assert kw["num_warps"] == (4 if dtype != "float32" and not few else 8)
            if few and not log and dtype != "float32" and M == 5:  # x held unpacked
                fwd = tuple(dataclasses.replace(l, meta=tuple({**l.kwargs, "PACK": False, "CVT_X2": False}.items()))
                            for l in fwd)  # each launch (the interpreter's phases: one a launch)
            y = launch.execute(fwd, bufs, call)
            launches += 1
            assert sync.view(torch.int64)[0].item() == launches << 32
        else:  # peeled: TAG too, while the row's chunks are at most one an SM
            sms = multisoftmax.torch._num_programs_hint(x)  # the op's: 4 under the interpreter
            tag = dispatch.plan_forward(M, N, N, N, dtype, log, sms)[0].kwargs["TAG"]
            assert tag == (N <= 64 * sms), (N, dtype, sms)  # chunks of 64
            y = torch.ops.multisoftmax.softmax_fwd(x, log)
        assert torch.equal(x.nan_to_num(), x_before.nan_to_num())
        expected = ref.softmax(x.double().cpu().numpy(), log=log)
        assert torch.isnan(y[M - 1]).all() and not torch.isnan(y[:M - 1]).any()
        ref.assert_close(y.double().cpu(), expected, dtype, "tagged coop fwd")
        dy = _random((M, N), dtype, torch_device, seed=M * 43 + N + 1)
        bwd = dispatch.plan_backward(M, N, N, N, N, dtype, log, 132)
        assert bwd[0].kwargs["TAG"]
        y_before, dy_before = y.clone(), dy.clone()
        dx = launch.execute(bwd, {"y": y, "dy": dy, "count": sync}, call)
        launches += 1
        assert sync.view(torch.int64)[0].item() == launches << 32
        assert torch.equal(y.nan_to_num(), y_before.nan_to_num()) and torch.equal(dy, dy_before)
        expected = ref.softmax_backward(y.double().cpu().numpy(), dy.double().cpu().numpy(), log=log)
        assert torch.isnan(dx[M - 1]).all() and not torch.isnan(dx[:M - 1]).any()
        ref.assert_close(dx.double().cpu(), expected, dtype, "tagged coop bwd", scale_atol=True)


def test_coop_sent_rule():
    """SENT (keyed partials, no release fence): the forward on counters, 16-bit rows packed in wide
    chunks (from COOP_PACK_WIDE_MIN_PER_SM programs an SM; 132 SMs: 2244 of 8192 values), float32
    rows from COOP_SENT32_MIN_PER_SM (792), the log_softmax from COOP_SENT32_LOG_MIN_PER_SM (1320);
    with SENT all but the float32 softmax leave late at any grid; not TAG's rows, fewer programs,
    float64 or the backward. Its count buffer holds the counters, the ticket and 2 words a chunk."""
    def kw(M, N, dtype, log, jax=False):
        return dispatch.plan_forward.__wrapped__(M, N, N, N, dtype, log, 132, counters_per_call=jax)[0]

    for dtype in ("bfloat16", "float16"):
        for log in (False, True):
            for jax in (False, True):
                plan = kw(128, 1048576, dtype, log, jax)
                k = plan.kwargs
                assert k["SENT"] and not k["TAG"] and k["PACK"] and k["CHUNK_N"] == 16384
                assert plan.outputs[2] == ("count", (128 + 1 + 128 * 2 * 64,), "zeros")
            assert not kw(5, 1048576, dtype, log).kwargs["SENT"]  # 640 programs, unpacked
            for M in (6, 16, 17):  # fewer than 2244 programs: COOP_SPLIT_SUM_MAX_CHUNKS's plan, keyed too
                assert kw(M, 1048576, dtype, log).kwargs["SENT"] and kw(M, 1048576, dtype, log).kwargs["SPLIT_SUM"]
            assert kw(18, 1048576, dtype, log).kwargs["SENT"] and not kw(18, 1048576, dtype, log).kwargs["SPLIT_SUM"]
            assert kw(18, 1048576, dtype, log).kwargs["LATE_LEAVE"]  # with SENT, below 1584 wide programs too
            assert not kw(256, 256000, dtype, log).kwargs["SENT"]  # TAG
            assert kw(256, 524288, dtype, log).kwargs["SENT"]  # 64 chunks of 8192: counters, not TAG
    for jax in (False, True):
        assert kw(64, 1048576, "float32", False, jax).kwargs["SENT"]
        assert kw(7, 1048576, "float32", False, jax).kwargs["SENT"]  # 896 programs
        assert not kw(6, 1048576, "float32", False, jax).kwargs["SENT"]  # 768
        assert not kw(7, 1048576, "float32", False, jax).kwargs["LATE_LEAVE"]  # the softmax: by the grid
        for M in (11, 16, 64):  # 1408 programs and more: the log_softmax with SENT always leaves late
            k = kw(M, 1048576, "float32", True, jax).kwargs
            assert k["SENT"] and k["LATE_LEAVE"]
        assert not kw(10, 1048576, "float32", True, jax).kwargs["SENT"]  # 1280
        assert not kw(10, 1048576, "float32", True, jax).kwargs["LATE_LEAVE"]
    assert not kw(64, 262144, "float32", False).kwargs["SENT"]  # TAG
    assert kw(128, 262144, "float64", False).kernel == "softmax_fwd_coop"  # 64 chunks of 4096: counters
    assert not kw(128, 262144, "float64", False).kwargs["SENT"]
    assert "SENT" not in dispatch.plan_backward.__wrapped__(128, 1048576, 1048576, 1048576, 1048576, "bfloat16",
                                                           False, 132)[0].kwargs


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16"])
@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
@pytest.mark.parametrize("late", [False, True], ids=["early", "late"])
def test_coop_keyed_partials(forced_family, torch_device, monkeypatch, dtype, log, late):
    """SENT: the cooperative forward publishing its partials as keyed words (16-bit: packed, wide
    chunks of 128 values), launch after launch of several shapes on one "zeros" buffer, which each
    launch must leave zero (the counters, the ticket and the words); a NaN row, a chunk of -inf, a
    row of one chunk; no input is modified. LATE_LEAVE early (the float32 softmax: the rule takes
    no other early) and late. The 16-bit softmax there takes POLY (`_exp2_poly` on half its values;
    COOP_POLY, off in dispatch since 2026-11-27, switched on here)."""
    forced_family("coop")
    monkeypatch.setattr(dispatch, "COOP_POLY", True)
    monkeypatch.setattr(dispatch, "_coop_tag_fwd", lambda *a: None)  # counters
    monkeypatch.setattr(dispatch, "_coop_narrow", lambda *a: False)
    monkeypatch.setattr(dispatch, "COOP_FWD_UNPACKED_PER_SM", 0)
    monkeypatch.setattr(dispatch, "COOP_PACK_WIDE_MIN_PER_SM", 0)
    monkeypatch.setattr(dispatch, "_coop_late_leave", lambda *a: late)
    # SENT at any grid: 16-bit rows packed in wide chunks and float32 rows, as the rule (which then
    # leaves late whatever the grid, but for the float32 softmax)
    monkeypatch.setattr(dispatch, "_coop_sent", lambda programs, itemsize, log, packed_wide, num_sms:
                        packed_wide or itemsize == 4)
    count = torch.zeros(8192, dtype=torch.int32, device=torch_device)
    for M, N in ((3, 300), (5, 520), (2, 100), (3, 300), (4, 390)):
        x = _random((M, N), dtype, torch_device, seed=M * 41 + N)
        x[0, :min(128, N - 1)] = -float("inf")  # a chunk of -inf (the whole row but one value at N = 100)
        x[0, min(128, N - 1):] -= 300.0  # the rest below exp's range from 0
        x[M - 1, N // 3] = float("nan")
        x_before = x.clone()
        fwd = dispatch.plan_forward(M, N, N, N, dtype, log, 132)
        k = fwd[-1].kwargs
        assert k["SENT"] and not k["TAG"] and k["LATE_LEAVE"] == (late or log or dtype != "float32")
        assert k["POLY"] == (dtype != "float32" and not log)  # the polynomial on the high halves
        assert k["PACK"] == (dtype != "float32") and k["CHUNK_N"] == (128 if dtype != "float32" else 64)
        _check_keyed_forward(fwd, x, x_before, count, dtype, log, f"keyed coop fwd {M} x {N}")


def _check_keyed_forward(fwd, x, x_before, count, dtype, log, what):
    """Run the keyed-partials forward plan `fwd` on x (its last row holding a NaN) with the
    "zeros" buffer `count`: the launch leaves `count` zero and x as `x_before`, the NaN row is
    NaN, no other is, and y matches float64."""
    call = lambda l, ins, b: launch.torch_call(l, ins, b, x.dtype, x.device)  # noqa: E731
    y = launch.execute(fwd, {"x": x, "count": count}, call)
    assert not count.any(), "the launch left its counters or words set"
    assert torch.equal(x.nan_to_num(), x_before.nan_to_num())
    expected = ref.softmax(x.double().cpu().numpy(), log=log)
    assert torch.isnan(y[-1]).all() and not torch.isnan(y[:-1]).any()
    ref.assert_close(y.double().cpu(), expected, dtype, what)


def test_coop_poly_rule(monkeypatch):
    """POLY (the post-wait exps of the words' high halves by `_exp2_poly`): off (COOP_POLY: since
    CVT_X2 under its cap it lost, 2026-11-27), so no plan takes it; switched on, the 16-bit softmax
    forward packed in wide chunks (from COOP_PACK_WIDE_MIN_PER_SM, with SENT), through either adapter's
    plans; never the log_softmax, float32, TAG's chunks or fewer programs."""
    def kw(M, N, dtype, log=False, jax=False):
        return dispatch.plan_forward.__wrapped__(M, N, N, N, dtype, log, 132, counters_per_call=jax)[0].kwargs

    wide = ((128, 1048576), (18, 1048576), (24, 786432))
    for dtype in ("bfloat16", "float16"):
        for M, N in wide:
            assert not kw(M, N, dtype)["POLY"] and not kw(M, N, dtype, jax=True)["POLY"], (M, N, dtype)
    monkeypatch.setattr(dispatch, "COOP_POLY", True)
    for dtype in ("bfloat16", "float16"):
        for jax in (False, True):
            for M, N in wide:
                k = kw(M, N, dtype, jax=jax)
                assert k["POLY"] and k["PACK"] and k["SENT"] and k["CHUNK_N"] == 16384, (M, N, dtype)
                assert not kw(M, N, dtype, True, jax)["POLY"]
            for M, N in ((17, 1048576), (16, 1048576), (512, 262144), (2048, 65536), (64, 128256), (256, 524288),
                         (23, 786432)):
                assert not kw(M, N, dtype, jax=jax)["POLY"], (M, N, dtype)
    assert not kw(128, 1048576, "float32")["POLY"] and not kw(128, 1048576, "float64").get("POLY")


def test_coop_stagger_rule():
    """STAGGER (COOP_STAGGER_CYCLES): the cooperative forward whose grid is more than its first wave
    (the programs of num_warps warps the GPU holds at once at 64 registers a thread: num_sms * 32 //
    num_warps) ramps that wave, with FIRST that count: on counters (keyed or fenced) and TAG, 16-bit
    and float32, through either adapter's plans, where a thread holds COOP_STAGGER_HELD registers of
    its chunk; the packed 8-warp chunks of few rows (half that), a grid of one wave or less, a grid
    held whole (no ticket), float64, the backward, the split and rows plans never."""
    def plan(M, N, dtype, log=False, jax=False, direction="fwd"):
        if direction == "bwd":
            return dispatch.plan_backward.__wrapped__(M, N, N, N, N, dtype, log, 132)
        return dispatch.plan_forward.__wrapped__(M, N, N, N, dtype, log, 132, counters_per_call=jax)

    cases = [(128, 1048576, "bfloat16"), (64, 1048576, "float32"), (12, 1048576, "bfloat16"), (8, 1048576, "float32"),
             (2048, 65536, "bfloat16"), (256, 256000, "float16"), (1024, 65536, "float32"), (4096, 50257, "bfloat16")]
    for M, N, dtype in cases:
        for log in (False, True):
            for jax in (False, True):
                launch = plan(M, N, dtype, log, jax)[-1]  # (interpreted: PHASE 1 and 2, alike but PHASE)
                k = launch.kwargs
                assert launch.kernel == "softmax_fwd_coop" and k["TICKET"], (M, N, dtype, log)
                assert k["FIRST"] == 132 * 32 // k["num_warps"] < launch.grid[0], (M, N, dtype, log)
                assert k["STAGGER"] == dispatch.COOP_STAGGER_CYCLES, (M, N, dtype, log)
    for M, N, dtype in ((8, 1048576, "bfloat16"), (1, 1048576, "float32"), (1, 256000, "bfloat16"),
                        (4, 262144, "float32"), (32, 128256, "bfloat16"), (48, 128256, "bfloat16"),
                        (24, 256000, "float16")):
        for log in (False, True):
            k = plan(M, N, dtype, log)[-1].kwargs
            assert k["STAGGER"] == 0 and k["FIRST"] == 0, (M, N, dtype, log)
    assert "STAGGER" not in plan(64, 1048576, "float64")[0].kwargs  # the split plan
    assert "STAGGER" not in plan(65536, 1024, "bfloat16")[0].kwargs  # rows
    for M, N, dtype in cases[:3]:
        assert all("STAGGER" not in l.kwargs for l in plan(M, N, dtype, direction="bwd"))


def test_coop_cvt_x2_rule():
    """CVT_X2 (y's words by one cvt.rn.bf16x2.f32 / cvt.rn.f16x2.f32 a word; COOP_CVT_X2): the packed
    16-bit softmax forward, on counters or TAG (the 8-warp chunks of few rows too), peeled or not,
    through either adapter's plans, in wide chunks on counters under Triton's maxnreg at
    COOP_X2_CAP_REGS (with POLY, when it is on, as without); the packed
    log_softmax forward on counters, in TAG's wide chunks (under the cap), in TAG's 4-warp chunks of
    peeled rows, and in the 8-warp chunks of few rows in grids of at most COOP_X2_FEW_MAX_PER_SM
    programs an SM; never the log_softmax in TAG's 4-warp chunks of unpeeled rows, unpacked rows,
    float32 or float64; where the launcher cannot pass a cap (register_cap=False), none that needs one."""
    def kw(M, N, dtype, log=False, jax=False, cap=True):
        return dispatch.plan_forward.__wrapped__(M, N, N, N, dtype, log, 132, counters_per_call=jax,
                                                 register_cap=cap)[0].kwargs

    for dtype in ("bfloat16", "float16"):
        for jax in (False, True):
            for M, N in ((16, 1048576), (64, 128256), (256, 256000), (2048, 65536), (4096, 50257), (4559, 29440)):
                k = kw(M, N, dtype, jax=jax)
                assert k["CVT_X2"] and k["PACK"] and not k["POLY"] and "maxnreg" not in k, (M, N, dtype, jax)
            for M, N in ((16, 1048576), (128, 1048576), (256, 524288)):  # the log_softmax on counters
                k = kw(M, N, dtype, True, jax)
                assert k["CVT_X2"] and k["PACK"] and not k["TAG"] and "maxnreg" not in k, (M, N, dtype, jax)
            for cap in (True, False):
                for M, N in ((128, 1048576), (32, 1048576)):  # the wide chunks on counters
                    k = kw(M, N, dtype, jax=jax, cap=cap)
                    assert k["PACK"] and k["SENT"] and k["CHUNK_N"] == 16384 and not k["POLY"], (M, N)
                    assert k["CVT_X2"] == cap and k.get("maxnreg") == (dispatch.COOP_X2_CAP_REGS if cap else None)
                for M, N in ((2048, 65536), (4559, 29440), (512, 262144)):  # the log_softmax in TAG's wide chunks
                    k = kw(M, N, dtype, True, jax, cap)
                    assert k["TAG"] and k["PACK"] and k["CHUNK_N"] == 16384, (M, N)
                    assert k["CVT_X2"] == cap and k.get("maxnreg") == (dispatch.COOP_X2_CAP_REGS if cap else None)
                k = kw(4096, 50257, dtype, True, jax, cap)  # TAG's 4-warp chunks, peeled: no cap
                assert k["TAG"] and k["PEEL"] and k["num_warps"] == 4 and k["CVT_X2"] and "maxnreg" not in k
            for M, N in ((256, 256000), (64, 128256), (512, 151936)):  # TAG's 4-warp chunks, unpeeled
                k = kw(M, N, dtype, True, jax)
                assert k["TAG"] and k["PACK"] and not k["PEEL"] and k["num_warps"] == 4 and not k["CVT_X2"], (M, N)
        for M, N, x2 in ((8, 128256, True), (8, 256000, True), (41, 128256, True), (42, 128256, False)):
            k = kw(M, N, dtype, True)  # few rows: 8-warp chunks of 8192, up to 5 programs an SM (660)
            assert k["TAG"] and k["PACK"] and k["CHUNK_N"] == 8192 and k["num_warps"] == 8, (M, N)
            assert k["CVT_X2"] == x2 and "maxnreg" not in k, (M, N)
        for M, N in ((7, 256000), (8, 256000), (16, 128256), (16, 256000)):  # the softmax's few rows: 8 warps
            k = kw(M, N, dtype)
            assert k["TAG"] and k["PACK"] and k["num_warps"] == 8 and k["CVT_X2"] and "maxnreg" not in k, (M, N)
        k = dispatch.plan_forward.__wrapped__(64, 256000, 256001, 256003, dtype, False, 132)[0].kwargs
        assert not k["PACK"] and not k["CVT_X2"]  # wide unpacked chunks (rows not of whole words)
        k = kw(64, 256000, dtype)  # TAG's 4-warp chunks, unpeeled: packed, CVT_X2
        assert k["TAG"] and k["PACK"] and k["num_warps"] == 4 and k["CVT_X2"] and "maxnreg" not in k
    for dtype in ("float32", "float64"):
        for M, N in ((16, 1048576), (256, 256000), (2048, 65536)):
            assert not kw(M, N, dtype).get("CVT_X2"), (M, N, dtype)  # float64 16 x 1048576: the split plan


def test_coop_x2_peeled_cap_rule():
    """COOP_X2_PEELED_CAP (the H200's): the packed 16-bit softmax forward of peeled rows in TAG's COOP_FWD16_WARPS
    chunks is compiled under maxnreg COOP_X2_CAP_REGS, with CVT_X2, through both adapters' plans, where the
    launcher can pass a cap (else CVT_X2 uncapped, as before); not the log_softmax, not unpeeled rows, not the
    peeled rows' other chunks (8 warps, fewer programs), and never on the H100 (the module's False)."""
    def kw(M, N, dtype, log=False, jax=False, cap=True, gpu="H200"):
        return dispatch.plan_forward.__wrapped__(M, N, N, N, dtype, log, 132, counters_per_call=jax,
                                                 register_cap=cap, gpu=gpu)[0].kwargs

    assert dispatch.COOP_X2_PEELED_CAP is False and dispatch.GPU_CONSTANTS["H200"]["COOP_X2_PEELED_CAP"] is True
    for dtype in ("bfloat16", "float16"):
        for jax in (False, True):
            for M, N in ((604, 50257), (4096, 50257), (1056, 30001), (132, 262143)):
                k = kw(M, N, dtype, jax=jax)
                assert k["TAG"] and k["PEEL"] and k["PACK"] and k["num_warps"] == dispatch.COOP_FWD16_WARPS, (M, N)
                assert k["CVT_X2"] and k["maxnreg"] == dispatch.COOP_X2_CAP_REGS, (M, N, dtype, jax)
                k = kw(M, N, dtype, jax=jax, cap=False)
                assert k["CVT_X2"] and "maxnreg" not in k, (M, N, dtype, jax)
                assert "maxnreg" not in kw(M, N, dtype, True, jax), (M, N)  # the log_softmax
                assert "maxnreg" not in kw(M, N, dtype, jax=jax, gpu=""), (M, N)  # the H100
            for M, N in ((603, 50257), (64, 50257)):  # below TAG's 32 programs an SM: 8-warp chunks, uncapped
                k = kw(M, N, dtype, jax=jax)
                assert k["PEEL"] and k["num_warps"] == 8 and "maxnreg" not in k, (M, N)
            for M, N in ((4096, 50256), (256, 256000)):  # unpeeled rows in TAG's 4-warp chunks
                k = kw(M, N, dtype, jax=jax)
                assert k["TAG"] and not k["PEEL"] and k["num_warps"] == 4 and "maxnreg" not in k, (M, N)


def test_coop_bwd32_tag_cap_rule():
    """COOP_BWD32_TAG_CAP_REGS (the H200's 80): the float32 cooperative backward with TAG that COOP_CAP32 leaves
    uncapped is compiled under maxnreg 80 where its grid has more than COOP_BWD32_TAG_CAP_MIN_PER_SM programs an
    SM and the launcher can pass a cap, both ops, peeled or not; COOP_CAP32's plans keep their cap of 64; not at
    grids the GPU holds whole uncapped, not 16-bit rows nor float64, not on counters, never on the H100 (None)."""
    def kw(M, N, dtype="float32", log=False, cap=True, gpu="H200"):
        launch = dispatch.plan_backward.__wrapped__(M, N, N, N, N, dtype, log, 132, register_cap=cap, gpu=gpu)[-1]
        return launch.kernel, launch.kwargs

    assert dispatch.COOP_BWD32_TAG_CAP_REGS is None and dispatch.GPU_CONSTANTS["H200"]["COOP_BWD32_TAG_CAP_REGS"] == 80
    assert dispatch.COOP_BWD32_TAG_CAP_MIN_PER_SM == 2
    for M, N, log in ((24, 128256, False), (4096, 50257, False), (4096, 50257, True), (1335, 50257, True),
                      (2279, 29440, False), (512, 65536, True), (2048, 24576, True), (300, 50257, False)):
        kernel, k = kw(M, N, log=log)
        assert kernel == "softmax_bwd_coop" and k["TAG"] and not k["DEFER_Y"] and k["maxnreg"] == 80, (M, N, log)
        assert "maxnreg" not in kw(M, N, log=log, cap=False)[1], (M, N, log)
        assert "maxnreg" not in kw(M, N, log=log, gpu="")[1], (M, N, log)
    for M, N in ((16, 65536), (33, 65536)):  # 1 and 2.06 programs an SM: 2 an SM and fewer stay uncapped
        kernel, k = kw(M, N)
        assert kernel == "softmax_bwd_coop" and k["TAG"] and ("maxnreg" in k) == (M * 8 > 2 * 132), (M, N)
    for M, N in ((64, 65536), (160, 65536)):  # COOP_CAP32's: deferred y under 64
        kernel, k = kw(M, N, log=True)
        assert k["DEFER_Y"] and k["maxnreg"] == dispatch.COOP_CAP32_REGS, (M, N)
    for M, N, dtype in ((4096, 50257, "bfloat16"), (2048, 65536, "float16"), (1024, 65536, "float64")):
        assert "maxnreg" not in kw(M, N, dtype)[1], (M, N, dtype)


def test_coop_split_sum_rule():
    """COOP_SPLIT_SUM_MAX_CHUNKS: on counters, unpeeled 16-bit rows of 33 to 64 chunks of 8192 values
    in grids of at least COOP_SPLIT_SUM_MIN_PER_SM programs an SM (132 SMs: 528) take 8192-value
    chunks at COOP_FWD16_WARPS warps, packed, summed in halves, with keyed partials, leaving late,
    without POLY; both ops, both adapters' plans. So do rows of more chunks in grids of 6 to 16
    programs an SM (where they would be packed in 8192-value chunks at 8 warps). Not rows of 32
    chunks, not rows of 65 at 62 programs an SM, not peeled ones, not float32, not smaller grids."""
    def kw(M, N, dtype, log=False, jax=False):
        return dispatch.plan_forward.__wrapped__(M, N, N, N, dtype, log, 132, counters_per_call=jax)[0]

    for dtype in ("bfloat16", "float16"):
        for log in (False, True):
            for jax in (False, True):
                for M, N in ((9, 524288), (256, 524288), (447, 300000), (17, 270336), (4096, 393216),
                             (8, 1048576), (16, 1048576), (16, 786432), (17, 1048576)):
                    plan = kw(M, N, dtype, log, jax)
                    k, n_chunks = plan.kwargs, -(-N // 8192)
                    assert plan.kernel == "softmax_fwd_coop" and not k["TAG"], (M, N)
                    assert k["SPLIT_SUM"] and k["PACK"] and k["SENT"] and k["LATE_LEAVE"] and not k["POLY"], (M, N)
                    assert (k["CHUNK_N"], k["num_warps"]) == (8192, dispatch.COOP_FWD16_WARPS), (M, N)
                    assert plan.outputs[2] == ("count", (M + 1 + M * 2 * n_chunks,), "zeros")
                assert not kw(8, 524288, dtype, log, jax).kwargs["SPLIT_SUM"]  # 512 programs < 528
                assert not kw(5, 1048576, dtype, log, jax).kwargs["SPLIT_SUM"]  # 640 programs <= 660
                assert kw(18, 1048576, dtype, log, jax).kwargs["CHUNK_N"] == 16384  # 2304 >= 2244: wide
                assert kw(128, 540672, dtype, log, jax).kwargs["CHUNK_N"] == 16384  # 66 chunks: wide
                assert not kw(128, 540672, dtype, log, jax).kwargs["SPLIT_SUM"]
                assert not kw(300, 262144, dtype, log, jax).kwargs["SENT"]  # 32 chunks: TAG's rows
                k = kw(256, 300001, dtype, log, jax).kwargs  # peeled
                assert k["PEEL"] and not k["SPLIT_SUM"]
    assert not kw(256, 524288, "float32").kwargs["SPLIT_SUM"]


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
def test_coop_split_sum_forward(forced_family, torch_device, monkeypatch, dtype, log):
    """COOP_SPLIT_SUM_MAX_CHUNKS's plans (rows of 33 to 64 chunks, here of 64 values; any grid):
    packed, summed in halves, keyed partials, leaving late, launch after launch on one "zeros"
    buffer that each leaves zero; a NaN row, a chunk of -inf; no input is modified."""
    forced_family("coop")
    monkeypatch.setattr(dispatch, "_coop_tag_fwd", lambda *a: None)  # counters
    monkeypatch.setattr(dispatch, "COOP_SPLIT_SUM_MIN_PER_SM", 0)
    count = torch.zeros(4096, dtype=torch.int32, device=torch_device)
    for M, N in ((2, 2112), (3, 4096), (2, 2176)):  # 33, 64 and 34 chunks of 64
        x = _random((M, N), dtype, torch_device, seed=M * 43 + N)
        x[0, 64:128] = -float("inf")
        x[M - 1, N // 2] = float("nan")
        x_before = x.clone()
        fwd = dispatch.plan_forward(M, N, N, N, dtype, log, 132)
        k = fwd[-1].kwargs
        assert k["SPLIT_SUM"] and k["PACK"] and k["SENT"] and k["LATE_LEAVE"] and not k["TAG"] and not k["POLY"]
        assert k["CHUNK_N"] == 64 and k["num_warps"] == dispatch.COOP_FWD16_WARPS
        _check_keyed_forward(fwd, x, x_before, count, dtype, log, f"split-sum coop fwd {M} x {N}")


def test_coop_cap32_rule():
    """COOP_CAP32_REGS: the float32 log_softmax backward on the cooperative kernel defers y under
    maxnreg=64 in grids of more than 3 programs an SM (TAG: 2) and up to 16, or on rows of more
    than 96 chunks of 8192; not in grids the GPU holds whole uncapped, not on rows of at most 96
    chunks at 31 programs an SM and more, not peeled; never the softmax, the forward, 16-bit or
    float64 rows, nor plans for a launcher that cannot cap (register_cap=False). The JAX adapter's
    plans (counters zeroed on every call) take it too."""
    def bwd(M, N, dtype="float32", log=True, **k):
        return dispatch.plan_backward.__wrapped__(M, N, N, N, N, dtype, log, 132, **k)

    def capped(plan):
        return any("maxnreg" in l.kwargs for l in plan)

    for M, N in ((24, 128256), (64, 65536), (256, 65536)):  # (the others take the pipelined kernel: PIPE_*)
        plan = bwd(M, N)[-1]  # (the interpreter's plans: two launches)
        k = plan.kwargs
        assert plan.kernel == "softmax_bwd_coop" and k["maxnreg"] == dispatch.COOP_CAP32_REGS, (M, N)
        assert k["DEFER_Y"] and not k["PACK"] and not k["BITS"] and not k["PEEL"], (M, N)
        assert bwd(M, N, counters_per_call=True)[-1].kwargs["maxnreg"] == dispatch.COOP_CAP32_REGS, (M, N)
        for jax in (False, True):
            plan = bwd(M, N, counters_per_call=jax, register_cap=False)
            assert not capped(plan) and not any(l.kwargs.get("DEFER_Y") for l in plan), (M, N)
        assert not capped(bwd(M, N, log=False))
        assert not any(capped(bwd(M, N, dtype)) for dtype in ("bfloat16", "float16", "float64"))
        assert not capped(dispatch.plan_forward.__wrapped__(M, N, N, N, "float32", True, 132))
    for M, N in ((4, 1048576), (64, 1048576), (128, 1048576), (100, 917504), (32, 256000)):  # capped before PIPE_*
        assert bwd(M, N)[-1].kernel == "softmax_bwd_pipe" and not capped(bwd(M, N)), (M, N)
        assert not capped(bwd(M, N, force="coop")) or bwd(M, N, force="coop")[-1].kwargs["DEFER_Y"], (M, N)
    for M, N in ((3, 1048576), (2, 1048576), (8, 128256), (8, 256000), (512, 65536), (256, 262144),
                 (85, 786432), (1335, 50257)):
        plan = bwd(M, N, force="coop")  # (256 x 262144 and 85 x 786432 take the pipelined kernel: PIPE_*)
        assert plan[-1].kernel == "softmax_bwd_coop" and not capped(plan) and not plan[-1].kwargs["DEFER_Y"], (M, N)
        assert not capped(bwd(M, N)), (M, N)


@pytest.mark.parametrize("M,N,tag", [(3, 192, True), (2, 200, False)])  # 3 and 4 chunks of 64, unpeeled
def test_coop_cap32_backward(forced_family, torch_device, monkeypatch, M, N, tag):
    """COOP_CAP32_REGS's plan (the float32 log_softmax backward deferring y, under maxnreg, forced
    on a small grid, with TAG and on counters) through the torch adapter's launcher: a row whose y
    is -inf in a chunk, a NaN in dy; no input is modified."""
    forced_family("coop")
    monkeypatch.setattr(dispatch, "COOP_CAP32_MIN_PER_SM", 0)
    monkeypatch.setattr(dispatch, "COOP_CAP32_TAG_MIN_PER_SM", 0)
    monkeypatch.setattr(dispatch, "COOP_TAG_MAX_CHUNKS", dispatch.COOP_TAG_MAX_CHUNKS if tag else 0)
    x = _random((M, N), "float32", torch_device, seed=M * 47 + N)
    x[0, 64:128] = -float("inf")
    y = torch.ops.multisoftmax.softmax_fwd(x, True)
    dy = _random((M, N), "float32", torch_device, seed=M * 47 + N + 1)
    dy[M - 1, N // 3] = float("nan")
    k = dispatch.plan_backward(M, N, N, N, N, "float32", True, multisoftmax.torch._num_programs_hint(y))[-1].kwargs
    assert k["maxnreg"] == dispatch.COOP_CAP32_REGS and k["DEFER_Y"] and k["TAG"] == tag
    y_before, dy_before = y.clone(), dy.clone()
    dx = torch.ops.multisoftmax.softmax_bwd(y, dy, True)
    assert torch.equal(y, y_before) and torch.equal(dy.nan_to_num(), dy_before.nan_to_num())
    expected = ref.softmax_backward(y.double().cpu().numpy(), dy.double().cpu().numpy(), log=True)
    assert torch.isnan(dx[M - 1]).all() and not torch.isnan(dx[:M - 1]).any()
    ref.assert_close(dx.double().cpu(), expected, "float32", "capped coop bwd", scale_atol=True)


def test_pipe_rule():
    """PIPE_*: the pipelined backward takes the cooperative plan's place for the 16-bit softmax on
    counters (rows of more than COOP_TAG_MAX_CHUNKS chunks) from 6 programs an SM, up to 32 or on rows
    of 128 chunks and more; for the float32 softmax and log_softmax from 3 programs an SM on rows of
    16 chunks and more, the softmax with TAG up to 16 an SM; never for the 16-bit log_softmax,
    float64, peeled rows, 16-bit rows not of whole words, small grids or forced families. The JAX
    adapter's plans (counters zeroed on every call) take it alike."""
    def bwd(M, N, dtype, log=False, stride=None, **k):
        s = stride or N
        return dispatch.plan_backward.__wrapped__(M, N, s, s, s, dtype, log, 132, **k)

    def pipe(plan):
        return plan[-1].kernel == "softmax_bwd_pipe"

    for dtype in ("bfloat16", "float16"):
        for M, N in ((8, 1048576), (16, 1048576), (128, 1048576), (64, 524288), (22, 393216)):
            assert pipe(bwd(M, N, dtype)) and pipe(bwd(M, N, dtype, counters_per_call=True)), (dtype, M, N)
            assert not pipe(bwd(M, N, dtype, log=True)), (dtype, M, N)
        for M, N in ((4, 1048576), (2, 1048576), (128, 524288), (256, 524288), (341, 393216), (64, 256000),
                     (1024, 131072), (16, 1048573)):  # few programs, many an SM on rows under 128 chunks, TAG, peeled
            assert not pipe(bwd(M, N, dtype)), (dtype, M, N)
        assert not pipe(bwd(16, 1048575, dtype, stride=1048577))  # odd strides, unpeeled: not whole words
    for log in (False, True):
        for M, N in ((4, 1048576), (16, 1048576), (64, 1048576), (128, 524288), (64, 256000), (64, 128256)):
            assert pipe(bwd(M, N, "float32", log)), (M, N, log)
        for M, N in ((2, 1048576), (1, 1048576), (8, 128256), (8, 256000), (1024, 65536), (4096, 32000),
                     (16, 1048573)):
            assert not pipe(bwd(M, N, "float32", log)), (M, N, log)
        assert not pipe(bwd(64, 1048576, "float64", log))
        assert not pipe(bwd(64, 1048576, "float32", log, force="coop"))
    for M, N in ((256, 256000), (256, 262144), (512, 131072)):  # TAG at 62 an SM: the log_softmax only
        assert pipe(bwd(M, N, "float32", True)) and not pipe(bwd(M, N, "float32", False)), (M, N)
    kw = bwd(16, 1048576, "float32", True)[-1].kwargs
    assert (kw["CHUNK_N"], kw["num_warps"], kw["DEFER_Y"], kw["PACK"]) == (4096, 8, True, False)
    launch = bwd(16, 1048576, "bfloat16")[-1]
    assert launch.kwargs["PACK"] and launch.kwargs["BITS"] and launch.grid == (4 * 132,)
    assert [o[2] for o in launch.outputs] == ["init", "acc", "zeros", "io"] and launch.outputs[2][1] == (18,)
    assert dispatch.cooperative(bwd(16, 1048576, "bfloat16"))
    with pytest.raises(ValueError, match="wait allows"):  # rows of more chunks than the wait allows
        bwd(4, 3 * 2**20, "float32", force="pipe")
    with pytest.raises(ValueError, match="no pipelined plan"):
        bwd(4, 1048576, "bfloat16", True, force="pipe")


def test_pipe_fwd_rule():
    """PIPE_FWD_*: the pipelined forward takes the cooperative plan's place on the H200 (GPU_CONSTANTS) for the
    float32 forward of rows of 64 chunks of COOP_CHUNK_N and more, from 12 chunks an SM (softmax) or 6
    (log_softmax), in both adapters' planning; never on the H100 (the module's constants), for 16-bit types,
    float64, peeled rows, TAG's rows of fewer chunks or forced families. Forced ("pipe"), it runs PIPE_FWD_PLANS'
    plan whatever the grid, and refuses what it has no plan for."""
    def fwd(M, N, dtype="float32", log=False, gpu="H200", stride=None, **k):
        s = stride or N
        return dispatch.plan_forward.__wrapped__(M, N, s, s, dtype, log, 132, gpu=gpu, **k)

    def pipe(plan):
        return plan[-1].kernel == "softmax_fwd_pipe"

    for log in (False, True):
        for M, N in ((16, 1048576), (64, 1048576), (32, 524288), (128, 524288), (1024, 1048576)):
            assert pipe(fwd(M, N, log=log)) and pipe(fwd(M, N, log=log, counters_per_call=True)), (M, N, log)
            assert not pipe(fwd(M, N, log=log, gpu="")), (M, N, log)
            for dtype in ("bfloat16", "float16", "float64"):
                assert not pipe(fwd(M, N, dtype, log)), (M, N, dtype, log)
            assert not pipe(fwd(M, N, log=log, force="coop")), (M, N, log)
        for M, N in ((4, 1048576), (2, 1048576), (160, 393216), (256, 262144), (64, 256000), (16, 1048573)):
            assert not pipe(fwd(M, N, log=log)), (M, N, log)  # few chunks an SM, rows of < 64 chunks, peeled
        assert not pipe(fwd(16, 1048572, log=log, stride=1048574))  # rows 8 bytes apart: peeled
    assert pipe(fwd(8, 1048576, log=True)) and not pipe(fwd(8, 1048576))  # 7.8 chunks an SM
    launch = fwd(16, 1048576)[-1]
    assert launch.grid == (5 * 132,) and (launch.kwargs["CHUNK_N"], launch.kwargs["num_warps"]) == (4096, 4)
    assert launch.kwargs["BLOCK_C"] == 256 and launch.kwargs["ALIGN"] == 16
    assert [o[2] for o in launch.outputs] == ["init", "acc", "zeros", "io"] and launch.outputs[1][1] == (16, 2, 256)
    assert launch.outputs[2][1] == (18,) and dispatch.cooperative((launch,))
    forced = fwd(3, 20000, gpu="", force="pipe")[-1]  # any grid; 5 chunks of 4096, the last partial
    assert forced.kernel == "softmax_fwd_pipe" and forced.grid == (15,) and forced.kwargs["BLOCK_C"] == 8
    for dtype in ("bfloat16", "float64"):
        with pytest.raises(ValueError, match="no pipelined plan for .*PIPE_FWD_PLANS"):
            fwd(4, 1048576, dtype, force="pipe")
    with pytest.raises(ValueError, match="on peeled rows"):
        fwd(4, 1048573, force="pipe")
    with pytest.raises(ValueError, match="wait allows"):  # rows of more chunks than the wait allows
        fwd(4, 3 * 2**20, force="pipe")


@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
@pytest.mark.parametrize("M,N,pad", [(3, 200, 0), (2, 132, 4), (6, 64, 0), (1, 8, 0)])
def test_pipe_forward(forced_family, torch_device, monkeypatch, log, M, N, pad):
    """The pipelined forward (softmax_fwd_pipe) forced on small grids through the torch adapter: 4 programs
    taking items in turn, chunks of 64 values (a partial last one), x a slice of rows padded to a wider stride;
    a row whose first chunk is all -inf (all but its last value where the row is one chunk), a row all -inf
    but one value, a NaN, a +inf and a row all -inf (those rows NaN), values of 1e30 in magnitude; against
    float64; x not modified."""
    from forced_plans import force_pipe

    forced_family("coop")
    force_pipe(dispatch, monkeypatch.setattr)
    monkeypatch.setattr(dispatch, "PIPE_FWD_PLANS", {(4, lg): (64, 4, 1) for lg in (False, True)})
    monkeypatch.setattr(dispatch, "GPU_CONSTANTS", {})  # on a GPU with its own PIPE_FWD_* the adapter too
    x = _random((M, N + pad), "float32", torch_device, seed=M * 59 + N + log)[:, :N] * 3
    x[0, :min(64, N - 1)] = -float("inf")
    if M > 2:
        x[1] = -float("inf")
        x[1, N // 2] = -3.0
        x[2, N - 1] = float("nan")
    if M > 5:
        x[3, 1] = float("inf")
        x[4] *= 1e29
        x[5] = -float("inf")
    sms = multisoftmax.torch._num_programs_hint(x)
    plan = dispatch.plan_forward(M, N, x.stride(0), N, "float32", log, sms)
    assert plan[-1].kernel == "softmax_fwd_pipe" and plan[-1].grid == (min(M * triton.cdiv(N, 64), sms),)
    before = x.clone()
    y = torch.ops.multisoftmax.softmax_fwd(x, log)
    assert torch.equal(x.nan_to_num(), before.nan_to_num()) and y.is_contiguous()
    ref.assert_close(y.double().cpu(), ref.softmax(x.double().cpu().numpy(), log=log), "float32", "pipelined fwd")
    if M > 5:
        assert torch.isnan(y[[2, 3, 5]]).all() and not torch.isnan(y[[0, 1, 4]]).any()


@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float32"])
@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
@pytest.mark.parametrize("M,N,pad", [(3, 200, 0), (2, 130, 6), (5, 64, 0)])
def test_pipe_backward(forced_family, torch_device, monkeypatch, dtype, log, M, N, pad):
    """The pipelined backward (softmax_bwd_pipe, PACK for 16-bit rows, DEFER_Y for the log_softmax)
    forced on small grids through the torch adapter: 4 programs taking items in turn, chunks of 64
    values (a partial last one), rows padded to a wider stride; a NaN in dy; a row whose first
    chunk is -inf in x (y 0, or -inf; all but its last value where the row is one chunk); no input
    is modified."""
    from forced_plans import force_pipe

    forced_family("coop")
    force_pipe(dispatch, monkeypatch.setattr)
    monkeypatch.setattr(dispatch, "PIPE_PLANS", {(s, lg): (64, 4, 1) for s in (2, 4) for lg in (False, True)})
    monkeypatch.setattr(dispatch, "GPU_CONSTANTS", {})  # on a GPU with its own PIPE_PLANS the adapter too
    x = _random((M, N), dtype, torch_device, seed=M * 53 + N)
    x[0, :min(64, N - 1)] = -float("inf")
    y = torch.ops.multisoftmax.softmax_fwd(x, log)
    dy = _random((M, N + pad), dtype, torch_device, seed=M * 53 + N + 1)[:, :N]
    dy[M - 1, N // 2] = float("nan")
    if pad:
        y = torch.empty((M, N + pad), dtype=y.dtype, device=torch_device)[:, :N].copy_(y)
    sms = multisoftmax.torch._num_programs_hint(y)
    plan = dispatch.plan_backward(M, N, y.stride(0), dy.stride(0), N, dtype, log, sms)
    kw = plan[-1].kwargs
    assert plan[-1].kernel == "softmax_bwd_pipe" and plan[-1].grid == (min(M * triton.cdiv(N, 64), sms),)
    assert kw["PACK"] == (dtype != "float32") and kw["DEFER_Y"] == log
    y_before, dy_before = y.clone(), dy.clone()
    dx = torch.ops.multisoftmax.softmax_bwd(y, dy, log)
    assert torch.equal(y, y_before) and torch.equal(dy.nan_to_num(), dy_before.nan_to_num())
    expected = ref.softmax_backward(y.double().cpu().numpy(), dy.double().cpu().numpy(), log=log)
    assert torch.isnan(dx[M - 1]).all() and not torch.isnan(dx[:M - 1]).any()
    ref.assert_close(dx.double().cpu(), expected, dtype, "pipelined bwd", scale_atol=True)


@triton.jit
def _exp2_poly_kernel(z_ptr, y_ptr, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + i, kernel_module._exp2_poly(tl.load(z_ptr + i, mask=i < n)), mask=i < n)


def test_exp2_poly(torch_device):
    """`_exp2_poly` against float64 2 ** z: at most 3e-6 relative error from 2 ** -126 to 2 ** 0.5
    (densely, and at the rounding boundaries of j = round(z)); exactly 0 from z = -127 down and at
    -inf, exactly 1 at 0, NaN at NaN; a result below 2 ** -126 is at most 2 ** -126."""
    z = torch.cat([torch.linspace(-126.0, 0.5, 100003, dtype=torch.float64),
                   torch.arange(-126, 1, dtype=torch.float64) + 0.5,
                   torch.arange(-126, 1, dtype=torch.float64) - 0.5]).float()
    special = torch.tensor([-127.0, -200.0, -3e38, -float("inf"), 0.0, float("nan"), -126.75, -126.5, -127.5])
    x = torch.cat([z, special]).to(torch_device)
    y = torch.empty_like(x)
    _exp2_poly_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
    y = y.cpu().double()
    expected = torch.exp2(z.double())
    rel = ((y[:z.numel()] - expected) / expected).abs()
    assert rel.max().item() <= 3e-6, rel.max().item()
    tail = y[z.numel():]
    assert (tail[:4] == 0).all() and tail[4] == 1 and torch.isnan(tail[5])
    assert (tail[6:] >= 0).all() and (tail[6:] <= 2.0 ** -126).all()


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
@pytest.mark.parametrize("M,N,pad", [(3, 130, 0), (2, 200, 6), (5, 131, 0), (4, 67, 0), (2, 129, 3)])
def test_coop_packed_forward(forced_family, torch_device, monkeypatch, dtype, log, M, N, pad):
    """The cooperative forward with x held in words (PACK; chunks of 64 values): even rows,
    a row padded to a wider stride, peeled odd rows and, with an odd pad (x's stride unequal
    to y's), unpacked rows; a chunk of -inf (masked words load two -inf values) and a NaN."""
    forced_family("coop", peel_min_n=1)
    monkeypatch.setattr(dispatch, "COOP_FWD_UNPACKED_PER_SM", 0)
    x = _random((M, N + pad), dtype, torch_device, seed=M * 37 + N)[:, :N]
    x[0, :64] = -float("inf")  # the row's first chunk, the rest below exp's range from 0
    x[0, 64:] -= 300.0
    x[M - 1, N // 2] = float("nan")
    kw = dispatch.plan_forward(M, N, x.stride(0), N, dtype, log, 132)[0].kwargs
    assert kw["PACK"] == (pad % 2 == 0)
    # y's words by _pack_x2: every packed plan but the log_softmax's with TAG, which test_coop_cvt_x2_rule checks
    assert kw["CVT_X2"] == kw["PACK"] or (log and kw["TAG"] and kw["PACK"])
    x_before = x.clone()
    y = torch.ops.multisoftmax.softmax_fwd(x, log)
    assert torch.equal(x.isnan(), x_before.isnan()) and torch.equal(x.nan_to_num(), x_before.nan_to_num())
    expected = ref.softmax(x.double().cpu().numpy(), log=log)
    assert torch.isnan(y[M - 1]).all() and not torch.isnan(y[:M - 1]).any()
    ref.assert_close(y.double().cpu(), expected, dtype, "packed coop fwd")


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("M,N", [(3, 130), (5, 131)])
def test_coop_packed_log_softmax_on_counters(forced_family, torch_device, monkeypatch, dtype, M, N):
    """The packed cooperative log_softmax forward on counters, where it takes CVT_X2 (`_pack_x2`:
    the paired conversion on the GPU, `_pack` itself in the interpreter): even and peeled rows, a
    chunk of -inf, a NaN, a row offset by 1000 (x read again past COOP_FAST_MAX), against float64."""
    forced_family("coop", peel_min_n=1)
    monkeypatch.setattr(dispatch, "COOP_FWD_UNPACKED_PER_SM", 0)
    monkeypatch.setattr(dispatch, "_coop_tag_fwd", lambda *a: None)  # counters, as rows of 1M
    x = _random((M, N), dtype, torch_device, seed=M * 41 + N)
    x[0, :64] = -float("inf")
    x[1] += 1000.0
    x[M - 1, N // 2] = float("nan")
    kw = dispatch.plan_forward(M, N, N, N, dtype, True, 132)[0].kwargs
    assert kw["PACK"] and kw["CVT_X2"] and not kw["TAG"], kw
    y = torch.ops.multisoftmax.softmax_fwd(x, True)
    expected = ref.softmax(x.double().cpu().numpy(), log=True)
    assert torch.isnan(y[M - 1]).all() and not torch.isnan(y[:M - 1]).any()
    ref.assert_close(y.double().cpu(), expected, dtype, "packed coop log_softmax fwd on counters")


# Per 16-bit dtype: (a large max with a spread of values exp resolves, one whose values lie far apart,
# a mix below float32's overflow of m * log2(e)): see test_family_huge_16bit.
HUGE_ROWS = {"bfloat16": (300.0, 1e8, (-2.5e38, -3.0e38)), "float16": (2000.0, 6e4, (-6e4, -6.4e4))}


@pytest.mark.parametrize("fam", ["rows", "coop", "coop_unpacked", "online", "split"])
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
def test_family_huge_16bit(forced_family, torch_device, monkeypatch, fam, dtype, log):
    """Row maxima far from 0 must give torch's result in every family. The packed cooperative
    forward (PACK) forms exp(x - m) as 2 ** (x * l - m * l) in one FMA: its sum takes out the
    rounding of m * l (up to 8 at a bfloat16 max of 1e8, a factor of 2 ** 8; overflow past
    2 ** 127), and a row max of kernels.softmax.COOP_FAST_MAX or more is written as torch does
    ((x - max) - log(sum)), not as x - (max + log(sum)), which loses log(sum) at 1e8. Rows (HUGE_ROWS
    per dtype): uniform rows of finfo.min and finfo.max, a large max with a spread exp resolves
    (bfloat16 300 + 3 * randn: values 2 apart; float16 2000), values far apart (bfloat16 1e8 +
    3 * randn; float16 6e4), a chunk of finfo.min beside ordinary values, a one-hot finfo.max, a mix
    of large values, ordinary values after finfo.min, and -250 + 3 * randn (below COOP_FAST_MAX)."""
    forced_family(fam.split("_")[0], peel_min_n=1)
    monkeypatch.setattr(dispatch, "COOP_FWD_UNPACKED_PER_SM", 0 if fam == "coop" else 10 ** 6)
    big = torch.finfo(getattr(torch, dtype))
    spread, far, mix = HUGE_ROWS[dtype]
    M, N = 9, 130
    x = _random((M, N), dtype, torch_device, seed=7)
    x[0] = big.min
    x[1] = big.max
    x[2] += spread
    x[3] += far
    x[4, :64] = big.min
    x[5, 77] = big.max
    g = torch.Generator().manual_seed(3)
    x[6] = torch.tensor(mix + (big.min,), dtype=x.dtype)[torch.randint(0, 3, (N,), generator=g)].to(torch_device)
    x[7, 5:] = big.min
    x[8] -= 250.0
    kw = dispatch.plan_forward(M, N, N, N, dtype, log, 132)[0].kwargs
    assert kw.get("PACK", False) == (fam == "coop")
    y = torch.ops.multisoftmax.softmax_fwd(x, log)
    expected = ref.softmax(x.double().cpu().numpy(), log=log)
    ref.assert_close(y.double().cpu(), expected, dtype, f"{fam} huge {dtype}")


@pytest.mark.parametrize("fam", ["rows", "coop", "online", "split"])
def test_family_special_values(forced_family, torch_device, fam):
    """-inf leading tiles/chunks must not poison a row, even one whose other values are all below
    -87 (exp(-300) is 0 in float32); +inf, NaN and all -inf rows are NaN."""
    forced_family(fam)
    x = torch.randn(7, 100, dtype=torch.float64).to(torch.float32)
    x[0, :70] = -float("inf")  # several leading tiles and chunks of -inf, finite after
    x[5, :70] = -float("inf")  # the same, the rest past exp's float32 range from 0 (a max of 0 for
    x[5, 70:] -= 300.0  # the -inf chunks, combined with theirs, gave s = 0: NaN)
    x[1, :] = -float("inf")
    x[2, 50] = float("inf")
    x[3, 99] = float("nan")
    x[4, :] *= 1e37
    _assert_special_rows(x.to(torch_device), fam)


def test_family_choice():
    sms = 132
    for aligned in (False, True):
        assert dispatch.family(65536, 128, 2, sms, aligned) == "rows"
        assert dispatch.family(4096, 16384, 4, sms, aligned) == "rows"
        assert dispatch.family(4095, 16392, 4, sms, aligned) == "rows"  # 16384 lanes and a tail of 8
        assert dispatch.family(2047, 32769, 4, sms, aligned) == "coop"
        assert dispatch.family(64, 256000, 2, sms, aligned) == "coop"
        assert dispatch.family(1, 40000, 4, sms, aligned) == "coop"
        assert dispatch.family(16, 1048576, 4, sms, aligned) == "coop"
        assert dispatch.family(8, 8192, 8, sms, aligned) == "rows"
        assert dispatch.family(8, 16384, 8, sms, aligned) == "coop"
        # Rows of more than one 8192-value chunk per SM (> 132 chunks): the looped kernels.
        assert dispatch.family(64, 4 * 1048576, 4, sms, aligned) == "split"
        assert dispatch.family(4096, 4 * 1048576, 4, sms, aligned) == "online"
    # Rows past 16384 lanes (and a short tail) in registers only where they start unaligned
    # (MAX_ROWS_ALIGNED_BLOCK_N); float64 rows never reach it.
    for N in (17416, 22000, 29440, 32768):
        for itemsize in (2, 4):
            assert dispatch.family(2048, N, itemsize, sms, False) == "rows"
            assert dispatch.family(2048, N, itemsize, sms, True) == "coop"
    assert dispatch.family(8, 8192, 8, sms, True) == "rows"


def test_aligned_long_rows_are_chunked():
    # plan_*: "aligned" is N and every stride a multiple of 16 bytes.
    def kernel(N, dtype, strides):
        fwd = dispatch.plan_forward(64, N, *strides[:2], dtype, False, 132)[0].kernel
        bwd = dispatch.plan_backward(64, N, *strides, dtype, False, 132)[0].kernel
        assert fwd.split("_")[-1] == bwd.split("_")[-1]
        return fwd.split("_")[-1]

    assert kernel(29440, "bfloat16", (29440, 29440, 29440)) == "coop"
    assert kernel(29440, "float32", (29440, 29440, 29440)) == "coop"
    assert kernel(29441, "bfloat16", (29441, 29441, 29441)) == "rows"  # peeled
    assert kernel(29440, "bfloat16", (29440, 29444, 29440)) == "rows"  # a stride 8 bytes off
    assert kernel(29440, "bfloat16", (29440, 29448, 29440)) == "coop"


def _all_plans():
    for (M, N), dtype, log in itertools.product(
            [(65536, 128), (3, 781), (4096, 16384), (4096, 65536), (1, 1048576), (64, 128256)],
            ["float16", "float32", "float64"], [False, True]):
        yield dispatch.plan_forward(M, N, N, N, dtype, log, 132)
        yield dispatch.plan_backward(M, N, N, N, N, dtype, log, 132)
    for B, N, T in [(16, 21, 4096), (8, 100, 4096), (2, 5000, 64)]:
        yield dispatch.plan_columns_forward(B, N, T, N * T, T, N * T, T, "float32", False, 132)
        yield dispatch.plan_columns_backward(B, N, T, N * T, T, N * T, T, N * T, T, "float32", True, 132)
    yield dispatch.plan_columns_forward(8, 150, 64, 150 * 64, 64, 150 * 64, 64, "bfloat16", False, 132, gpu="H200")
    for (M, N), log, forward in itertools.product([(65536, 128), (3, 781), (4096, 16384), (4096, 50257),
                                                   (64, 256000), (2, 300000)], [False, True], [True, False]):
        plan = dispatch.plan_where(M, N, "bfloat16", log, forward, 1, 2048, False, True, 132)
        if plan:  # (none for the softmax backward of rows past WHERE_BWD_MAX_N)
            yield plan


def test_launches_match_kernel_signatures():
    """Inputs + scalars + outputs + constexprs of each launch (with the defaults of those it leaves out) fill the
    kernel's parameters."""
    for plan in _all_plans():
        for one in plan:
            fn = dispatch.kernels.get(one.kernel)
            meta = {k for k in launch.kernel_meta(one) if k not in ("num_warps", "num_stages", "maxnreg")}
            runtime = len(one.inputs) + len(one.scalars) + len(one.outputs)
            assert fn.arg_names[:runtime] + sorted(meta) == fn.arg_names[:runtime] + sorted(fn.arg_names[runtime:])
            # a constexpr left out where off has a default (launch.kernel_meta): softmax_bwd_rows' RELOAD,
            # softmax_fwd_cols' TAIL_N and FTZ, softmax_fwd_stats_cols' FTZ, softmax_fwd_rows' FTZ and
            # SAME_STRIDES alone
            left_out = {"softmax_bwd_rows": {"RELOAD"}, "softmax_fwd_cols": {"TAIL_N", "FTZ"},
                        "softmax_fwd_stats_cols": {"FTZ"}, "softmax_fwd_rows": {"FTZ", "SAME_STRIDES"}}
            left_out = left_out.get(one.kernel, set())
            assert set(launch.kernel_meta(one)) - set(one.kwargs) <= left_out, one.kernel
            assert all(g >= 1 for g in one.grid)


def test_row_segments():
    assert dispatch.row_segments(16385) == (16384, 1)
    assert dispatch.row_segments(1025) == (1024, 1)
    assert dispatch.row_segments(3000) == (4096, 0)
    assert dispatch.row_segments(4096) == (4096, 0)
    assert dispatch.row_segments(1) == (1, 0)
    for N in range(1, 5000):
        main, tail = dispatch.row_segments(N)
        assert main + tail >= N and main & (main - 1) == 0 and tail & (tail - 1) == 0


def test_split_plan_covers_row():
    plan = dispatch.plan_forward(4, 262144, 262144, 262144, "bfloat16", False, 132, force="split")
    assert [l.kernel for l in plan] == ["softmax_fwd_split_stats", "softmax_fwd_split_norm"]
    M, N, _, chunk, n_chunks = plan[0].scalars
    assert (n_chunks - 1) * chunk < N <= n_chunks * chunk and chunk % plan[0].kwargs["BLOCK_N"] == 0
    assert plan[1].kwargs["BLOCK_C"] >= n_chunks




@pytest.mark.parametrize("M,N", [(1, 40000), (64, 256000), (4096, 65536), (16, 1048576)])
def test_coop_plan(M, N):
    """Chunks cover the row, at most one a row per SM, one program a chunk; under the
    interpreter the kernel runs as PHASE 1 then PHASE 2, compiled as one PHASE 3 launch."""
    for plan in (dispatch.plan_forward(M, N, N, N, "float32", False, 132),
                 dispatch.plan_backward(M, N, N, N, N, "bfloat16", True, 132)):
        assert {l.kernel for l in plan} <= {"softmax_fwd_coop", "softmax_bwd_coop"}
        kw = plan[0].kwargs
        n_chunks = plan[0].scalars[-1]
        assert (n_chunks - 1) * kw["CHUNK_N"] < N <= n_chunks * kw["CHUNK_N"]
        assert kw["BLOCK_C"] >= n_chunks
        assert n_chunks <= 132 and plan[0].grid == (M * n_chunks,)
        phases = [l.kwargs["PHASE"] for l in plan]
        assert phases == ([1, 2] if dispatch.kernels.INTERPRETED else [3])
        if kw["TAG"]:  # the ticket and generation, then a slot a partial, as int32 pairs
            assert [o[2] for o in plan[0].outputs] == ["init", "acc", "sync", "io"]
            parts = 2 if "fwd" in plan[0].kernel else 1
            assert plan[0].outputs[2][1] == plan[0].outputs[0][1] == (2 * (1 + M * parts * n_chunks),)
        else:  # row counters and the ticket counter (SENT: then 2 keyed words a chunk)
            assert [o[2] for o in plan[0].outputs] == ["init", "acc", "zeros", "io"]
            words = M + 1 + (M * 2 * n_chunks if kw.get("SENT") else 0)
            assert plan[0].outputs[2][1] == plan[0].outputs[0][1] == (words,)
        assert kw.get("SENT", False) == (plan[0].kernel == "softmax_fwd_coop" and (M, N) == (16, 1048576))
        assert kw["TICKET"] == (M * n_chunks > 132)  # a grid the GPU holds at once: no ticket
    # Wider chunks for the forward of aligned 16-bit rows only: the softmax's packed past 32 chunks
    # (rows not of whole words: unpacked up to COOP_WIDE_MAX_N), the log_softmax's from 2244
    # programs of 8192; with TAG (rows of at most 32 chunks: the softmax's from 528 programs of
    # 8192, test_coop_tag_few_rule) 8192 values at 4 warps, but the log_softmax's from 12672 programs.
    chunk = {(N, dtype, log): dispatch.plan_forward(512, N, N, N, dtype, log, 132)[0].kwargs["CHUNK_N"]
             for N in (65536, 262144, 1048576) for dtype in ("bfloat16", "float32") for log in (False, True)}
    assert {k for k, c in chunk.items() if c == 16384} == {
        (262144, "bfloat16", True), (1048576, "bfloat16", False), (1048576, "bfloat16", True)}
    assert dispatch.plan_forward(512, 65536, 65537, 65539, "bfloat16", False, 132)[0].kwargs["CHUNK_N"] == 16384
    assert {c for c in chunk.values() if c != 16384} == {8192}
    assert dispatch.plan_forward(512, 50257, 50257, 50257, "float16", False, 132)[0].kwargs["CHUNK_N"] == 8192
    assert dispatch.plan_forward(8, 128256, 128256, 128256, "bfloat16", False, 132)[0].kwargs["CHUNK_N"] == 8192
    # Narrower chunks (4096 values) for 16-bit and float32 grids of at most 33 programs of 8192
    # (COOP_NARROW_MIN_SMS_PER_PROGRAM), both directions; float64 keeps its 4096.
    for dtype in ("bfloat16", "float32", "float64"):
        for M, N, narrow in ((1, 128256, True), (2, 128256, True), (3, 128256, False), (1, 270336, True),
                             (1, 270337, False), (8, 128256, False)):
            want = 4096 if narrow or dtype == "float64" else 8192
            for plan in (dispatch.plan_forward(M, N, N, N, dtype, False, 132),
                         dispatch.plan_backward(M, N, N, N, N, dtype, True, 132)):
                assert plan[0].kwargs["CHUNK_N"] == want, (dtype, M, N)


def test_coop_refuses_more_than_one_chunk_per_sm():
    with pytest.raises(ValueError, match="online"):
        dispatch.plan_forward(2, 4 * 1048576, 4 * 1048576, 4 * 1048576, "float32", False, 132, force="coop")


def test_kernels_compile_for_sm90_subprocess():
    """Compile one plan of each family for sm_90 in a fresh interpreter-free process, plans
    under a register cap (their PTX carries the .maxnreg directive), the pipelined backward's and forward's, and
    the rows backward's that reload (RELOAD; and those that leave the constexpr out: its default)."""
    out = run_uninterpreted(
        "import sys; sys.path.insert(0, 'tests'); import compile_check as c; from multisoftmax import dispatch\n"
        "for M, N in [(4096, 128), (4096, 65536), (4, 262144), (4096, 4194304)]:\n"
        "    for dt in ['bfloat16', 'float64']:\n"
        "        c.compile_launches(dispatch.plan_forward(M, N, N, N, dt, True, 132), dt)\n"
        "        c.compile_launches(dispatch.plan_backward(M, N, N, N, N, dt, False, 132), dt)\n"
        "for B, N, T in [(16, 21, 4096), (8, 100, 4096), (2, 5000, 64), (4096, 2000, 64), (2, 20000, 64)]:\n"
        "    # columns: 1 warp, 2; long: split (16-bit forwards) and coop, the loop (4096 groups), split both ways\n"
        "    for dt in ['bfloat16', 'float64']:\n"
        "        c.compile_launches(dispatch.plan_columns_forward(B, N, T, N * T, T, N * T, T, dt, False, 132), dt)\n"
        "        c.compile_launches(dispatch.plan_columns_backward(B, N, T, N * T, T, N * T, T, N * T, T, dt, True, 132),\n"
        "                           dt)\n"
        "(k,) = c.compile_launches(dispatch.plan_backward(64, 65536, 65536, 65536, 65536, 'float32', True, 132),\n"
        "                          'float32')  # COOP_CAP32_REGS\n"
        "for M, N, dt, log in [(16, 2**20, 'bfloat16', False), (64, 2**20, 'float32', False),\n"
        "                      (64, 2**20, 'float32', True)]:\n"
        "    (p,) = c.compile_launches(dispatch.plan_backward(M, N, N, N, N, dt, log, 132), dt)  # PIPE_*\n"
        "    print('pipe', p.name)\n"
        "for log in (False, True):  # PIPE_FWD_* (the H200's rule; the H100's plans never take it)\n"
        "    plan = dispatch.plan_forward(64, 2**20, 2**20, 2**20, 'float32', log, 132, gpu='H200')\n"
        "    (p,) = c.compile_launches(plan, 'float32')\n"
        "    print('pipe', p.name)\n"
        "for M, N, dt, table, cols in [(32768, 2048, 'bfloat16', False, True), (4096, 781, 'float64', True, False),\n"
        "                              (64, 128256, 'bfloat16', False, True), (8, 300000, 'float32', True, False),\n"
        "                              (3, 50000, 'float64', False, True)]:  # rows, cooperative (TAG, counters)\n"
        "    for log, forward in [(False, True), (True, False)]:  # where=: the mask read as i1\n"
        "        c.compile_launches(dispatch.plan_where(M, N, dt, log, forward, 1, 2048, table, cols, 132), dt)\n"
        "for M, N, row_mod, cap in [(64, 128256, 2048, False), (64, 50257, 64, True), (4, 40, 2048, True),\n"
        "                           (4, 45, 4, True)]:  # where= PACK: 16 warps (no cap), W_PEEL; then chunks of 16\n"
        "    if N < 64:  # as tests/test_jax.py's coop_where: a word a thread or none\n"
        "        dispatch.WHERE_MAX_N, dispatch.WHERE_COOP_PACK_TILINGS = 16, ((16, 4, 64),)\n"
        "    (kp,) = c.compile_launches(dispatch.plan_where(M, N, 'bfloat16', True, True, 1, row_mod, False, True, 132,\n"
        "                                                   cap), 'bfloat16')\n"
        "    print('pack', N, kp.asm['ptx'].count('prmt.b32'))\n"
        "print('compiled', [l for l in k.asm['ptx'].splitlines() if 'maxnreg' in l])\n"
        "for dt, cvt in [('bfloat16', 'cvt.rn.bf16x2.f32'), ('float16', 'cvt.rn.f16x2.f32')]:  # CVT_X2\n"
        "    for M, N in [(4096, 65536), (16, 2**20), (128, 2**20)]:  # TAG's, counters', POLY's (capped)\n"
        "        (k,) = c.compile_launches(dispatch.plan_forward(M, N, N, N, dt, False, 132), dt)\n"
        "        print('x2', dt, M, N, k.asm['ptx'].count(cvt), k.asm['ptx'].count(cvt[:-6] + '.f32'),\n"
        "              k.asm['ptx'].count('.maxnreg %d' % dispatch.COOP_X2_CAP_REGS))\n"
        "import dataclasses\n"
        "for M, N, log in [(8192, 16384, False), (8191, 16385, True)]:  # RELOAD (the H200's), and left out\n"
        "    (l,) = dispatch.plan_backward(M, N, N, N, N, 'bfloat16', log, 132, gpu='H200')\n"
        "    l0 = dataclasses.replace(l, meta=tuple((k, v) for k, v in l.meta if k != 'RELOAD'))\n"
        "    (k,), (k0,) = (c.compile_launches((p,), 'bfloat16') for p in (l, l0))\n"
        "    print('reload', N, k.asm['ptx'].count('ld.global'), k0.asm['ptx'].count('ld.global'))\n",
        timeout=600)
    assert out.returncode == 0 and "compiled" in out.stdout, out.stderr[-3000:]
    assert f"'.maxnreg {dispatch.COOP_CAP32_REGS}'" in out.stdout, out.stdout
    assert out.stdout.count("pipe softmax_bwd_pipe") == 3, out.stdout
    assert out.stdout.count("pipe softmax_fwd_pipe") == 2, out.stdout
    # the packed cooperative where forward's mask words by byte permutes (kernels/where.py `_keep_words`)
    pack = [line.split() for line in out.stdout.splitlines() if line.startswith("pack ")]
    assert [r[1] for r in pack] == ["128256", "50257", "40", "45"] and all(int(r[2]) > 0 for r in pack), out.stdout
    x2 = [line.split() for line in out.stdout.splitlines() if line.startswith("x2 ")]
    # y's words by pairs (the exact path's too); no scalar conversion to 16 bits is left; POLY's plan
    # under COOP_X2_CAP_REGS, the others uncapped
    assert len(x2) == 6 and all(int(r[4]) > 0 and r[5] == "0" for r in x2), out.stdout
    assert all(r[6] == ("1" if r[3] == str(2**20) and r[2] == "128" else "0") for r in x2), out.stdout
    # RELOAD's second loads stay (their cache modifier keeps the compiler from merging them with the first):
    # the softmax loads y and dy twice, the log_softmax y once (after the sum) and dy twice
    reload = [line.split() for line in out.stdout.splitlines() if line.startswith("reload ")]
    assert [r[1] for r in reload] == ["16384", "16385"], out.stdout
    assert int(reload[0][2]) == 2 * int(reload[0][3]) and int(reload[1][2]) > int(reload[1][3]), out.stdout


def test_keyed_partials_leave_after_every_warp_subprocess():
    """SENT: a program's second arrival (`_sent_leave`, after which the row's last program zeroes
    the row's words) must come after every warp of the program has left `_sent_gather`'s loop.
    In the compiled PTX for sm_90 a bar.sync lies between the gather's last read of the words
    and that arrival: in a plan of 3 chunks a row, forced as test_keyed_partials_forward does,
    where each warp reduces the words on its own (no barrier in the loop: the plan that hung on
    the H100 without it), and in dispatch's own SENT plans (64 or more chunks a row)."""
    out = run_uninterpreted(
        "import sys; sys.path.insert(0, 'tests'); import compile_check as c; from multisoftmax import dispatch\n"
        "def check(plan, dt):\n"
        "    assert plan[-1].kwargs['SENT']\n"
        "    ptx = [l.strip() for l in c.compile_launches(plan, dt)[-1].asm['ptx'].splitlines()]\n"
        "    reads = [i for i, l in enumerate(ptx) if 'ld.volatile' in l]\n"
        "    leave = max(i for i, l in enumerate(ptx) if l.startswith('@') and 'atom' in l and '.add' in l)\n"
        "    in_loop = any(l.startswith('bar.sync') for l in ptx[reads[0]:reads[-1]])\n"
        "    print(plan[-1].kwargs['BLOCK_C'], in_loop, reads[-1] < leave and any(l.startswith('bar.sync') for l in ptx[reads[-1]:leave]))\n"
        "for M, N, dt, log in [(64, 2**20, 'float32', True), (128, 2**20, 'bfloat16', False), (128, 524288, 'bfloat16', True)]:\n"
        "    check(dispatch.plan_forward(M, N, N, N, dt, log, 132), dt)\n"
        "import forced_plans; forced_plans.force_sent(dispatch)\n"
        "for dt in ('float32', 'bfloat16'):\n"
        "    check(dispatch.plan_forward(396, 20000, 20000, 20000, dt, False, 132), dt)\n", timeout=900)
    assert out.returncode == 0, out.stderr[-3000:]
    rows = [line.split() for line in out.stdout.splitlines()]
    assert len(rows) == 5 and all(row[2] == "True" for row in rows), out.stdout
    assert [row[1] for row in rows] == ["True"] * 3 + ["False"] * 2, out.stdout  # per-warp gathers in the forced plans


def test_jax_and_torch_launchers_compile_alike_subprocess():
    """The JAX adapter's launcher (jax_triton) tells the compiler that pointers are 16-byte
    aligned; Triton's own, the torch adapter's, also which integer arguments are multiples of
    16. The kernels must not hang on the latter (ALIGN, EVEN_M, ALIGN_M), or the two adapters
    run different code: every family compiles to the same PTX for sm_90 under both, rows
    plans with and without EVEN_M (float32 65536 x 128 log_softmax forward, 65536 x 64), with OFFS32
    (bf16 65536 x 100) and EVEN_N (float16 65536 x 1024), and the
    columns plans of long columns (ALIGN_N: N, the chunk and the chunk count, which Triton's
    launcher marks where they are multiples of 16). The code is compared, not the debug sections,
    which name the source file's path: Triton's cache keys a kernel by its source, not its path, so
    two checkouts sharing ~/.triton/cache can serve one launcher's kernel compiled from each."""
    out = run_uninterpreted(
        "import sys; sys.path.insert(0, 'tests'); import compile_check as c; from multisoftmax import dispatch\n"
        "strip = lambda p: [l for l in p.split('.section\\t.debug')[0].splitlines()\n"
        "                   if not l.strip().startswith(('//', '.loc', '.file'))]\n"
        "for M, N, dt, log in [(65536, 781, 'bfloat16', False), (65536, 128, 'float32', True),\n"
        "                      (65536, 64, 'float32', False), (65536, 100, 'bfloat16', False),\n"
        "                      (65536, 1024, 'float16', True),\n"
        "                      (4095, 16385, 'float16', False), (128, 1048576, 'bfloat16', False),\n"
        "                      (2670, 50257, 'bfloat16', True), (4096, 4194304, 'float32', False),\n"
        "                      (8, 4194304, 'bfloat16', True), (64, 1048576, 'float32', False)]:\n"
        "    for plan in (dispatch.plan_forward(M, N, N, N, dt, log, 132),\n"
        "                 dispatch.plan_backward(M, N, N, N, N, dt, log, 132)):\n"
        "        a, b = (c.compile_launches(plan, dt, specialize=s) for s in ('torch', 'jax'))\n"
        "        same = all(strip(x.asm['ptx']) == strip(y.asm['ptx']) for x, y in zip(a, b))\n"
        "        print(M, N, dt, log, [l.kernel for l in plan], 'same' if same else 'DIFFERENT')\n"
        "for B, N, T, dt, log in [(64, 4096, 64, 'float32', False), (64, 4096, 64, 'bfloat16', True),\n"
        "                         (2, 20000, 64, 'bfloat16', False), (4096, 2048, 64, 'bfloat16', False)]:\n"
        "    for plan in (dispatch.plan_columns_forward(B, N, T, N * T, T, N * T, T, dt, log, 132),\n"
        "                 dispatch.plan_columns_backward(B, N, T, N * T, T, N * T, T, N * T, T, dt, log, 132)):\n"
        "        a, b = (c.compile_launches(plan, dt, specialize=s) for s in ('torch', 'jax'))\n"
        "        same = all(strip(x.asm['ptx']) == strip(y.asm['ptx']) for x, y in zip(a, b))\n"
        "        print(B, N, T, dt, log, [l.kernel for l in plan], 'same' if same else 'DIFFERENT')\n", timeout=900)
    assert out.returncode == 0, out.stderr[-3000:]
    lines = out.stdout.splitlines()
    assert len(lines) == 30 and all(line.endswith("same") for line in lines), out.stdout
    kernels = " ".join(lines[22:])  # the columns plans: cooperative, split and looped
    assert all(k in kernels for k in ("coop_cols", "stats_cols", "dot_cols", "'softmax_fwd_cols'")), kernels


def test_even_m_rule(tables16_before):
    for M, N in ((65536, 781), (4095, 16385), (3, 128), (1, 50), (65537, 128)):
        for plan in (dispatch.plan_forward(M, N, N, N, "bfloat16", False, 132),
                     dispatch.plan_backward(M, N, N, N, N, "float32", True, 132)):
            kw = plan[0].kwargs
            assert kw["EVEN_M"] == (kw["BLOCK_M"] > 1 and M % kw["BLOCK_M"] == 0)
    # Not the float32 forward of 32 rows a program or more (16 for log_softmax): dispatch, EVEN_M.
    fwd = {(N, dtype, log): dispatch.plan_forward(65536, N, N, N, dtype, log, 132)[0].kwargs
           for N in (64, 128, 256) for dtype in ("float32", "bfloat16") for log in (False, True)}
    assert [k for k, kw in fwd.items() if not kw["EVEN_M"]] == [
        (64, "float32", False), (64, "float32", True), (128, "float32", True)]
    # (N = 128 and 256 at 2 warps but float32's log_softmax at 128: ROWS_SHORT_FWD_LANES)
    # (float32's softmax at 128: 4 rows a program, ROWS_FWD32_HALF_N)
    assert [kw["BLOCK_M"] for kw in fwd.values()] == [32] * 4 + [4, 16, 8, 8] + [4] * 4
    assert all(kw["ALIGN_M"] == 16 for kw in fwd.values())
    assert dispatch.plan_backward(65536, 128, 128, 128, 128, "float32", True, 132)[0].kwargs["EVEN_M"]
    # ALIGN_M: 16 where M is a multiple of 16 and a program has more than one row.
    align_m = lambda M, N: dispatch.plan_forward(M, N, N, N, "bfloat16", False, 132)[0].kwargs["ALIGN_M"]  # noqa: E731
    assert (align_m(65536, 128), align_m(65528, 128), align_m(8192, 16384)) == (16, 1, 1)
    assert dispatch.plan_forward(65536, 781, 781, 781, "bfloat16", False, 132)[0].kwargs["EVEN_M"]
    assert not dispatch.plan_forward(65537, 128, 128, 128, "bfloat16", False, 132)[0].kwargs["EVEN_M"]
    kw = dispatch.plan_backward(8192, 16384, 16384, 16384, 16384, "float16", False, 132)[0].kwargs
    assert kw["BLOCK_M"] == 1 and not kw["EVEN_M"]  # one row a program: no EVEN_M (probe_even_m.log)


def test_rows_fwd16_offs32_rule(tables16_before):
    """dispatch.ROWS_FWD16_OFFS32_LANES: the 16-bit forward of several unpeeled rows a program in at most
    256 lanes computes its offsets in 32 bits (OFFS32) where every offset fits (fits_int32): the
    log_softmax at any grid, the softmax from ROWS_FWD16_OFFS32_SOFTMAX_MIN_PER_SM programs an SM. Not
    512 lanes, float32 or float64, peeled rows, one row a program, nor offsets past 2**31 values."""
    def offs32(N, dtype="bfloat16", log=True, M=65536, stride=None):
        return _rows_kw(N, dtype, log, "fwd", M, stride)["OFFS32"]
    for dtype in ("bfloat16", "float16"):
        for N in (32, 64, 100, 128, 192, 256):
            assert offs32(N, dtype) and offs32(N, dtype, log=False)
            assert offs32(N, dtype, M=4096)  # the log_softmax at any grid
        assert not offs32(32, dtype, log=False, M=4096)  # 64 programs: the softmax not
        assert offs32(256, dtype, log=False, M=4096)  # 4 rows a program: 1024 programs, 7.76 an SM
        assert not offs32(128, dtype, log=False, M=4096)  # 8 rows a program: 512
        for N in (300, 384, 512, 1024, 1152):
            assert not offs32(N, dtype)  # 512 lanes and more
        assert not offs32(33, dtype)  # peeled (32 + 16 lanes)
        assert not offs32(100, dtype, M=1)  # one row a program
    for dtype in ("float32", "float64"):
        assert not offs32(128, dtype) and not offs32(64, dtype, log=False)
    # 2**31 values: 65536 rows 32776 apart do not fit, 16384 do; nor 2**24 rows of 128
    assert not offs32(128, stride=32776) and offs32(128, M=16384, stride=32776)
    assert not offs32(128, M=2**24) and offs32(128, M=2**24 - 64)
    assert dispatch.fits_int32(2**24 - 64, 128, 128) and not dispatch.fits_int32(2**24, 128, 128)
    assert not dispatch.fits_int32(2, 2**31 - 16, 1) and dispatch.fits_int32(1, 2**31 - 17)
    assert "OFFS32" not in dispatch.plan_backward(65536, 128, 128, 128, 128, "bfloat16", True, 132)[0].kwargs
    assert dispatch.ROWS_FWD16_OFFS32_LANES == 256 and dispatch.ROWS_FWD16_OFFS32_SOFTMAX_MIN_PER_SM == 7.5


def test_rows_fwd_even_n_rule():
    """The 16-bit forward's one row a program of ROWS_FWD_ONE_ROW_N values (N == BLOCK_N = 1024) runs with
    no mask at all: EVEN_N and EVEN_M, at any M, both ops. Not other lengths, float32, peeled rows, the
    longer rows of one row a program (2048) or several rows a program."""
    for dtype in ("bfloat16", "float16"):
        for log in (False, True):
            for M in (65536, 4097, 1):
                k = _rows_kw(1024, dtype, log, M=M)
                assert (k["BLOCK_M"], k["EVEN_N"], k["EVEN_M"]) == (1, True, True)
            assert _rows_kw(1024, dtype, log, stride=1032)["EVEN_N"]  # strided rows that start aligned
        for N in (1000, 1023, 2048, 512):
            assert not _rows_kw(N, dtype)["EVEN_N"]
        assert not _rows_kw(1024, dtype, stride=1025)["EVEN_N"]  # peeled
        assert not _rows_kw(2048, dtype)["EVEN_M"]  # one row a program without it: EVEN_M as before
    assert not _rows_kw(1024, "float32")["EVEN_N"] and _rows_kw(1024, "float32")["BLOCK_M"] == 2


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
def test_rows_fwd16_offs32_and_even_n_run(torch_device, dtype, log):
    """The forward's OFFS32 (32-bit offsets) and EVEN_N (no mask) launches against float64, on contiguous
    and strided rows (planned for 1 SM, so that the softmax's short grid takes OFFS32 too), and against the
    same launches with both off: the same values, bit for bit."""
    cases = [(128, 100, 100, 100), (40, 256, 264, 256), (500, 32, 32, 40), (3, 1024, 1024, 1024),
             (2, 1024, 1032, 1024)]
    for M, N, sx, sy in cases:
        plan = dispatch.plan_forward.__wrapped__(M, N, sx, sy, dtype, log, 1)
        kw = plan[0].kwargs
        assert kw["OFFS32"] if N <= 256 else (kw["EVEN_N"] and kw["EVEN_M"]), (M, N, kw)
        x = _random((M, sx), dtype, torch_device, seed=M + N + sx)[:, :N]
        x_before = x.clone()
        y = _run(plan, {"x": x}, dtype, torch_device, (M, sy))[:, :N]  # y's rows sy apart
        ref.assert_close(y.double().cpu(), ref.softmax(x.double().cpu().numpy(), log=log), dtype, f"{M}x{N}")
        off = (dataclasses.replace(plan[0], meta=tuple(dict(kw, OFFS32=False, EVEN_N=False, EVEN_M=False).items())),)
        y_off = _run(off, {"x": x}, dtype, torch_device, (M, sy))[:, :N]
        assert torch.equal(y, y_off) and torch.equal(x, x_before), (M, N)


def _rows_kw(N, dtype="bfloat16", log=False, direction="fwd", M=65536, stride=None):
    """The kwargs of dispatch's plan for M rows of N (132 SMs), forward or backward: contiguous, or
    every tensor's rows `stride` apart."""
    s = stride or N
    plan = (dispatch.plan_forward(M, N, s, s, dtype, log, 132) if direction == "fwd"
            else dispatch.plan_backward(M, N, s, s, s, dtype, log, 132))
    return plan[0].kwargs


def test_rows_short_forward_rule(tables16_before):
    """The forward of rows that fill 128 or 256 lanes runs programs of 2 warps (half the rows, 16
    values a thread: dispatch.ROWS_SHORT_FWD_LANES), but float32's log_softmax at 128; float32's
    softmax at 128 holds half those rows again (8 values a thread: dispatch.ROWS_FWD32_HALF_N); the
    backward, other lengths and unfilled lanes keep 4 warps."""
    def tiling(*args, **kwargs):
        kw = _rows_kw(*args, **kwargs)
        return kw["BLOCK_M"], kw["num_warps"]

    for dtype in ("float32", "bfloat16", "float16"):
        for log in (False, True):
            assert tiling(256, dtype, log) == (4, 2)
            assert tiling(128, dtype, log) == (((16, 4) if log else (4, 2)) if dtype == "float32" else (8, 2))
            assert tiling(256, dtype, log, "bwd")[1] == 4 and tiling(128, dtype, log, "bwd")[1] == 4  # (ROWS_BWD_1KB_N)
            assert tiling(512, dtype, log) == (4, 4) and tiling(64, dtype, log)[1] == 4
            assert tiling(200, dtype, log)[1] == 4  # lanes it does not fill
    assert tiling(128, M=3) == (4, 2)  # BLOCK_M: at most M, a power of two
    assert tiling(128, "float32", M=3) == (2, 2) and tiling(128, "float32", M=1) == (1, 2)
    # Not for peeled or unaligned float32 rows of 128 (ROWS_FWD32_HALF_N: full rows only)
    kw = dispatch.plan_forward(64, 128, 129, 129, "float32", False, 132)[0].kwargs
    assert kw["PEEL"] and kw["BLOCK_M"] == 16
    # Peeled rows (float32 256 in rows of 257: not 16-byte aligned) keep 4 warps, and so do rows
    # that start unaligned unpeeled (bfloat16 256 in rows of 257) and float64's (none measured).
    kw = dispatch.plan_forward(64, 256, 257, 257, "float32", False, 132)[0].kwargs
    assert kw["PEEL"] and (kw["BLOCK_M"], kw["num_warps"]) == (8, 4)
    kw = dispatch.plan_forward(64, 256, 257, 257, "bfloat16", False, 132)[0].kwargs
    assert not kw["PEEL"] and (kw["BLOCK_M"], kw["num_warps"]) == (8, 4)
    assert tiling(256, "float64") == (8, 4) and tiling(256, "bfloat16", M=64) == (4, 2)
    assert dispatch.plan_forward(64, 256, 264, 264, "bfloat16", False, 132)[0].kwargs["num_warps"] == 2  # aligned


def test_rows_small_program_rule(tables16_before):
    """Full rows in smaller programs at 4 warps: the backward of float32 256 and 16-bit 512 values
    one row a program, of float32 128 and 16-bit 256 two, of 16-bit 128 four (1 KB of each tensor:
    dispatch.ROWS_BWD_1KB_N); the 16-bit forward of 1024 one row (ROWS_FWD_ONE_ROW_N); other rows
    as before."""
    def tiling(N, dtype, direction, log=False, M=65536):
        kw = _rows_kw(N, dtype, log, direction, M)
        return kw["BLOCK_M"], kw["num_warps"], kw["EVEN_M"]

    for log in (False, True):
        for dtype in ("bfloat16", "float16"):
            assert tiling(512, dtype, "bwd", log) == (1, 4, False)
            assert tiling(256, dtype, "bwd", log) == (2, 4, True)
            assert tiling(1024, dtype, "fwd", log) == (1, 4, True)  # unmasked: EVEN_N with EVEN_M
            assert tiling(1024, dtype, "bwd", log)[:2] == (1, 4)  # ROWS_BWD_ONE_ROW_WARPS
            assert tiling(128, dtype, "bwd", log) == (4, 4, True)
            assert tiling(256, dtype, "bwd", log, M=1)[0] == 1
        assert tiling(256, "float32", "bwd", log) == (1, 4, False) and tiling(128, "float32", "bwd", log) == (2, 4, True)
        assert tiling(512, "float32", "bwd", log) == (1, 4, False)  # ROWS_BWD_ONE_ROW_WARPS
        assert tiling(1024, "float32", "fwd", log)[0] == 2
        assert tiling(500, "bfloat16", "bwd", log)[0] == 4  # rows that do not fill their lanes
        # Rows that start unaligned (stride 513) and float64's keep their programs (none measured).
        kw = dispatch.plan_backward(64, 512, 513, 513, 513, "bfloat16", log, 132)[0].kwargs
        assert (kw["BLOCK_M"], kw["num_warps"]) == (4, 4)
        assert tiling(256, "float64", "bwd", log)[0] == 8


def test_sparse_rows_rule(tables16_before):
    """16-bit forward rows that fill less than 60% of their 512-2048 lanes hold twice the rows a
    program (dispatch.SPARSE_ROWS_FILL); float32, the backward, fuller rows and peeled rows do not."""
    def block_m(*args, **kwargs):
        return _rows_kw(*args, **kwargs)["BLOCK_M"]

    assert [block_m(N) for N in (1152, 1100, 600, 300)] == [2, 2, 4, 8]
    assert block_m(1152, "float16", True) == 2 and block_m(1152, log=True) == 2
    # 1024: one row a program (ROWS_FWD_ONE_ROW_N); 128: 2 warps (ROWS_SHORT_FWD_LANES); 9: 16 lanes
    assert [block_m(N) for N in (1280, 2048, 1024, 781, 128, 9)] == [1, 1, 1, 2, 8, 128]
    assert block_m(1152, "float32") == 1 and block_m(1152, direction="bwd") == 1
    assert block_m(2500) == 1  # peeled (N >= PEEL_MIN_N and not 16-byte aligned)
    assert block_m(1152, M=1) == 1 and block_m(1152, M=3) == 2
    kw = dispatch.plan_forward(65536, 1152, 1152, 1152, "bfloat16", False, 132)[0].kwargs
    assert (kw["num_warps"], kw["BLOCK_N"], kw["EVEN_M"]) == (4, 2048, True)
    # The 16-bit backward of rows in 1024 lanes (no tail) runs one row a program (ROWS_BWD_ONE_ROW_WARPS,
    # which took over ROWS_LOG_BWD16_DOUBLE_LANES's 4 rows there); other lanes keep their rows.
    for dtype in ("bfloat16", "float16"):
        assert [block_m(N, dtype, True, "bwd") for N in (781, 1001, 1024, 600)] == [1, 1, 1, 1]
        assert [block_m(N, dtype, True, "bwd") for N in (255, 513, 1537, 1152)] == [8, 4, 1, 1]
        assert block_m(781, dtype, False, "bwd") == 1 and block_m(781, dtype, True, "bwd", M=3) == 1
    assert block_m(781, "float32", True, "bwd") == 2  # peeled


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
@pytest.mark.parametrize("M,N", [(16, 300), (5, 600)])
def test_sparse_rows_forward(torch_device, dtype, log, M, N):
    """The 16-bit forward of rows that fill few of their lanes, at dispatch's own plan (several
    rows a program: 8 of 512 lanes at N = 300, every row there; 4 of 1024 at N = 600, a
    program's last row past M)."""
    plan = dispatch.plan_forward(M, N, N, N, dtype, log, 132)
    assert plan[0].kernel == "softmax_fwd_rows" and plan[0].kwargs["BLOCK_M"] == {300: 8, 600: 4}[N]
    x = _random((M, N), dtype, torch_device, seed=M + N)
    x[1, : N // 2] = -float("inf")
    y = torch.ops.multisoftmax.softmax_fwd(x, log)
    ref.assert_close(y.double().cpu(), ref.softmax(x.double().cpu().numpy(), log=log), dtype, f"{dtype} fwd")


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_log_softmax_backward_1024_lanes(torch_device, dtype):
    """The 16-bit log_softmax backward of rows in 1024 lanes at dispatch's own plan: one row a
    program at 4 warps (ROWS_BWD_ONE_ROW_WARPS), odd rows (a value a lane, rows that start unaligned)."""
    M, N = 5, 781
    plan = dispatch.plan_backward(M, N, N, N, N, dtype, True, 132)
    assert plan[0].kernel == "softmax_bwd_rows" and (plan[0].kwargs["BLOCK_M"], plan[0].kwargs["num_warps"]) == (1, 4)
    y = torch.ops.multisoftmax.softmax_fwd(_random((M, N), dtype, torch_device, seed=781), True)
    dy = _random((M, N), dtype, torch_device, seed=782)
    dx = torch.ops.multisoftmax.softmax_bwd(y, dy, True)
    expected = ref.softmax_backward(y.double().cpu().numpy(), dy.double().cpu().numpy(), log=True)
    ref.assert_close(dx.double().cpu(), expected, dtype, f"{dtype} log bwd", scale_atol=True)


def _columns_plans(monkeypatch, B, N, T, strides, dtype, log, force):
    """The forward and backward plans of a (B, N, T) softmax over N, `force`d ("one_tile", "loop",
    "split", "coop") with tiles shrunk (COLS_TILE_SHORT, COLS_TILE: 64 values; COLS_COOP_VALUES:
    128), planned for 132 SMs; strides (x's b and n, dy's b and n)."""
    monkeypatch.setattr(dispatch, "COLS_TILE", 64)
    monkeypatch.setattr(dispatch, "COLS_TILE_SHORT", 64)
    monkeypatch.setattr(dispatch, "COLS_COOP_VALUES", 128)
    sxb, sxn, sdyb, sdyn = strides
    fwd = dispatch.plan_columns_forward.__wrapped__(B, N, T, sxb, sxn, N * T, T, dtype, log, 132, force)
    bwd = dispatch.plan_columns_backward.__wrapped__(B, N, T, N * T, T, sdyb, sdyn, N * T, T, dtype, log, 132, force)
    return fwd, bwd


def _run(plan, buffers, dtype, device, shape):
    """Execute a plan of one or more launches (torch_call, y / dx into a new tensor)."""
    out = torch.empty(shape, dtype=DTYPES[dtype], device=device)
    return launch.execute(plan, dict(buffers),
                          lambda l, ins, bufs: launch.torch_call(l, ins, bufs, DTYPES[dtype], out.device, out))


COLUMNS_KERNELS = {"one_tile": ("softmax_fwd_cols",), "loop": ("softmax_fwd_cols",),
                   "split": ("softmax_fwd_stats_cols", "softmax_fwd_norm_cols"),
                   "coop": ("softmax_fwd_coop_cols",)}


@pytest.mark.parametrize("force", ["one_tile", "loop", "split", "coop"])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float64"])
@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
def test_columns_forward_backward(monkeypatch, torch_device, force, dtype, log):
    """The columns kernels (a softmax over axis 1 of (B, N, T)): held in one tile, looped in
    several steps (8 positions a step), split into chunks (two launches) or cooperative (chunks of
    16 positions that wait for each other; two launches under the interpreter), on views whose
    strides are not the contiguous ones (x a slice of a wider buffer, dy expanded along B), against
    float64; no input modified."""
    B, N, T = 3, 37, 5
    x = _random((B, N + 4, T + 3), dtype, torch_device, 40)[:, 2:N + 2, 1:T + 1]
    assert x.stride() == ((N + 4) * (T + 3), T + 3, 1)
    dy = _random((1, N, T), dtype, torch_device, 41).expand(B, N, T)
    fwd, bwd = _columns_plans(monkeypatch, B, N, T, (x.stride(0), x.stride(1), dy.stride(0), dy.stride(1)), dtype,
                              log, force)
    kernels = tuple(dict.fromkeys(l.kernel for l in fwd))
    assert kernels == COLUMNS_KERNELS[force], kernels
    assert tuple(dict.fromkeys(l.kernel for l in bwd)) == tuple(k.replace("fwd", "bwd").replace("stats", "dot")
                                                                .replace("norm", "apply") for k in kernels)
    if force == "one_tile":
        assert fwd[0].kwargs["ONE_TILE"]
    elif force == "loop":
        assert not fwd[0].kwargs["ONE_TILE"] and triton.cdiv(N, fwd[0].kwargs["BLOCK_N"]) > 2
    elif force == "split":
        assert fwd[0].grid[1] >= 2 and bwd[0].grid[1] >= 2
    else:
        # chunks of 16 positions (float64: 8, half the values a program)
        assert fwd[0].scalars[-1] == bwd[0].scalars[-1] == (5 if dtype == "float64" else 3)
    x_before, dy_before = x.clone(), dy.clone()
    y = _run(fwd, {"x": x}, dtype, torch_device, (B, N, T))
    expected = ref.softmax(x.double().cpu().numpy(), 1, log)
    ref.assert_close(y.double().cpu(), expected, dtype, f"{force} fwd")
    y_before = y.clone()
    dx = _run(bwd, {"y": y, "dy": dy}, dtype, torch_device, (B, N, T))
    expected = ref.softmax_backward(y.double().cpu().numpy(), dy.double().cpu().numpy(), 1, log)
    ref.assert_close(dx.double().cpu(), expected, dtype, f"{force} bwd", scale_atol=True)
    assert torch.equal(x, x_before) and torch.equal(dy, dy_before) and torch.equal(y, y_before)


@pytest.mark.parametrize("force", ["loop", "split", "coop"])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16"])
@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
def test_columns_long_special_values(monkeypatch, torch_device, force, dtype, log):
    """The plans of long columns over several steps or chunks (16-bit loops: the running max and sum
    per value, PER_VALUE; split and cooperative plans: partials combined): NaN, +inf, an all -inf
    column, -inf for the first steps then values below -87 (exp(-300) is 0 in float32: partials of
    the -inf chunks must not make the sum 0), a max in the last step, +-60 (rescaled sums), as
    torch.softmax in float64 (NaN where it gives NaN); the backward of the finite columns."""
    B, N, T = 2, 45, 16
    x = _random((B, N, T), dtype, torch_device, 42)
    x[0, 7, 1] = float("nan")
    x[1, 30, 2] = float("inf")
    x[0, :, 3] = -float("inf")
    x[1, :20, 4] = -float("inf")
    x[1, 20:, 4] -= 300.0
    x[0, 44, 5] = 60.0
    x[1, ::3, 6] = -60.0
    x[1, 1::3, 6] = 60.0
    fwd, bwd = _columns_plans(monkeypatch, B, N, T, (N * T, T, N * T, T), dtype, log, force)
    assert tuple(dict.fromkeys(l.kernel for l in fwd)) == COLUMNS_KERNELS[force]
    if force == "loop":
        assert fwd[0].kwargs["PER_VALUE"] == (dtype != "float32") and triton.cdiv(N, fwd[0].kwargs["BLOCK_N"]) > 2
    elif force == "split":
        assert fwd[0].kwargs["PER_VALUE"] == (dtype != "float32") and fwd[0].grid[1] == 6
    y = _run(fwd, {"x": x}, dtype, torch_device, (B, N, T))
    expected = (torch.log_softmax if log else torch.softmax)(x.double().cpu(), 1)
    nan = torch.isnan(expected)
    assert torch.equal(torch.isnan(y.cpu()), nan)
    assert nan[0, :, 1].all() and nan[1, :, 2].all() and nan[0, :, 3].all() and not nan[1, :, 4].any()
    ref.assert_close(y.double().cpu()[~nan], expected[~nan], dtype, f"{force} special values")
    dy = _random((B, N, T), dtype, torch_device, 43)
    y = torch.where(torch.isnan(y), 0.0, y)  # the backward of NaN columns is NaN: tested elsewhere
    dx = _run(bwd, {"y": y, "dy": dy}, dtype, torch_device, (B, N, T))
    want = ref.softmax_backward(y.double().cpu().numpy(), dy.double().cpu().numpy(), 1, log)
    ref.assert_close(dx.double().cpu(), want, dtype, f"{force} special values bwd", scale_atol=True)


def test_columns_cooperative_leaves_counters_zero(monkeypatch, torch_device):
    """The cooperative columns plans hand their "zeros" counters (the groups' arrival counters and
    the ticket) on zero, launch after launch of several shapes on one buffer, as the GPU launcher's
    pool does; `dispatch.cooperative` knows them (the adapters then plan for the stream's SMs)."""
    count = torch.zeros(256, dtype=torch.int32, device=torch_device)
    for B, N, T, dtype in ((3, 37, 5, "float32"), (2, 45, 16, "bfloat16"), (40, 20, 40, "bfloat16")):
        x = _random((B, N, T), dtype, torch_device, B + N + T)
        dy = _random((B, N, T), dtype, torch_device, B + N + T + 1)
        for log in (False, True):
            fwd, bwd = _columns_plans(monkeypatch, B, N, T, (N * T, T, N * T, T), dtype, log, "coop")
            assert dispatch.cooperative(fwd) and dispatch.cooperative(bwd)
            assert fwd[0].kwargs["TICKET"] == (fwd[0].grid[0] > 132)
            y = _run(fwd, {"x": x, "count": count}, dtype, torch_device, (B, N, T))
            assert not count.any(), "the forward left its counters set"
            ref.assert_close(y.double().cpu(), ref.softmax(x.double().cpu().numpy(), 1, log), dtype, "coop fwd")
            dx = _run(bwd, {"y": y, "dy": dy, "count": count}, dtype, torch_device, (B, N, T))
            assert not count.any(), "the backward left its counters set"
            want = ref.softmax_backward(y.double().cpu().numpy(), dy.double().cpu().numpy(), 1, log)
            ref.assert_close(dx.double().cpu(), want, dtype, "coop bwd", scale_atol=True)
    split = _columns_plans(monkeypatch, 3, 37, 5, (185, 5, 185, 5), "float32", False, "split")
    assert not dispatch.cooperative(split[0]) and not dispatch.cooperative(split[1])


def test_columns_long_plans_rule():
    """Long columns (past one tile): cooperative where N takes 2 to num_sms chunks of 8192 values a
    program (float64 4096; a forward of more than 64 chunks: twice that) in 128-byte runs at 4 warps,
    but for 16-bit forwards; else split where the groups make fewer than 8 programs an SM (chunks of
    2 steps or more, at most 64; 4 warps, the backward 8); else the loop. Columns held in one tile
    take neither."""
    coop, split = dispatch._columns_coop, dispatch._columns_split
    assert coop(64, 4096, 64, 4, 132, True) == coop(64, 4096, 64, 4, 132, False) == (256, 32, 16, 4)
    assert coop(64, 4096, 64, 2, 132, False) == (128, 64, 32, 4)
    assert coop(64, 4096, 64, 2, 132, True) is None and coop(64, 4096, 64, 2, 132, True, "coop") == (128, 64, 32, 4)
    assert coop(64, 4096, 64, 8, 132, True) == (256, 16, 16, 4)           # float64: 4096 values
    assert coop(4, 32768, 512, 4, 132, True) == (512, 32, 64, 4)          # 128 chunks of 256: 16384 values
    assert coop(4, 32768, 512, 4, 132, False) == (256, 32, 128, 4)
    assert coop(4, 32768, 512, 2, 132, False) is None                     # 256 chunks: more than one an SM
    assert coop(4, 32768, 512, 2, 64, False) is None and coop(4, 16384, 512, 2, 132, False) == (128, 64, 128, 4)
    assert coop(32, 1000, 196, 4, 132, True) is None                      # one tile
    assert coop(32, 1000, 196, 4, 132, True, "coop") == (256, 32, 4, 4)
    assert split(64, 4096, 64, 2, 132, True) == (64, 64, 256, 16, 4)      # 64 groups: 16 chunks of 4 steps
    assert split(4, 32768, 512, 2, 132, False) == (64, 64, 1024, 32, 8)
    assert split(1, 200000, 64, 4, 132, True) == (128, 32, 3200, 63, 4)   # at most 64 chunks
    assert split(4096, 4096, 64, 2, 132, True) is None                    # 4096 groups: the loop
    assert split(32, 1000, 196, 2, 132, True) is None
    assert dispatch.plan_columns_forward(4096, 4096, 64, 4096 * 64, 64, 4096 * 64, 64, "bfloat16", False,
                                         132)[0].kernel == "softmax_fwd_cols"
    for dtype, fwd, bwd in (("bfloat16", "softmax_fwd_stats_cols", "softmax_bwd_coop_cols"),
                            ("float32", "softmax_fwd_coop_cols", "softmax_bwd_coop_cols")):
        assert dispatch.plan_columns_forward(1, 8192, 8192, 8192 ** 2, 8192, 8192 ** 2, 8192, dtype, False,
                                             132)[0].kernel == fwd
        assert dispatch.plan_columns_backward(1, 8192, 8192, 8192 ** 2, 8192, 8192 ** 2, 8192, 8192 ** 2, 8192, dtype,
                                              True, 132)[0].kernel == bwd


def test_cols16_bwd_split_rule():
    """The H200's 16-bit columns backward (GPU_CONSTANTS' COLS16_BWD_*): where T is a multiple of the tile's
    BLOCK_T, the split plan in COLS16_BWD_SPLIT_TILE (BLOCK_T, BLOCK_N, num_warps) takes the place of the
    cooperative plan of more than COLS16_BWD_COOP_MAX_CHUNKS chunks, and of the rules' split plan; the cooperative
    plans of fewer chunks, other T, float32, the forward, a loop, forced plans and the H100 keep theirs."""
    consts = dispatch.GPU_CONSTANTS["H200"]
    tile, most = consts["COLS16_BWD_SPLIT_TILE"], consts["COLS16_BWD_COOP_MAX_CHUNKS"]
    assert dispatch.COLS16_BWD_SPLIT_TILE is None and dispatch.COLS16_BWD_COOP_MAX_CHUNKS == float("inf")
    assert tile == (128, 8, 4) and most == 16

    def bwd(B, N, T, dtype="bfloat16", gpu="H200", force=None, log=False):
        return dispatch.plan_columns_backward(B, N, T, N * T, T, N * T, T, N * T, T, dtype, log, 132, force, gpu=gpu)

    for B, N, T, dtype, rules in ((1, 8192, 8192, "bfloat16", "coop"), (4, 3000, 1024, "float16", "coop"),
                                  (32, 8192, 128, "bfloat16", "coop"), (2, 16384, 4096, "float16", "coop"),
                                  (4, 32768, 512, "bfloat16", "dot")):
        for log in (False, True):
            assert bwd(B, N, T, dtype, "", log=log)[0].kernel == f"softmax_bwd_{rules}_cols", (B, N, T)
            dot, apply = bwd(B, N, T, dtype, log=log)
            assert (dot.kernel, apply.kernel) == ("softmax_bwd_dot_cols", "softmax_bwd_apply_cols"), (B, N, T)
            assert dot.grid == apply.grid and dot.grid[1] >= 2, (B, N, T)
            for one in (dot, apply):
                kw = one.kwargs
                assert (kw["BLOCK_T"], kw["BLOCK_N"], kw["num_warps"], kw["LOG"]) == (*tile, log), (B, N, T)
            assert dot.grid[0] == B * T // tile[0] and dot.scalars[-1] == dot.grid[1], (B, N, T)
            assert dot.scalars[-2] % tile[1] == 0 and dot.scalars[-2] * dot.grid[1] >= N, (B, N, T)
    assert dispatch._columns_coop(8, 2048, 512, 2, 132, False)[2] == most   # 16 chunks: cooperative
    for B, N, T, dtype, force in ((8, 2048, 512, "bfloat16", None), (2, 4096, 192, "bfloat16", None),
                                  (1, 8192, 8192, "float32", None), (1, 8192, 8192, "bfloat16", "coop"),
                                  (64, 4096, 64, "bfloat16", None), (16, 4096, 16384, "bfloat16", None),
                                  (1, 8192, 8192, "bfloat16", "split"), (32, 1000, 256, "float16", None)):
        assert bwd(B, N, T, dtype, force=force) == bwd(B, N, T, dtype, "", force), (B, N, T, dtype, force)
    assert bwd(16, 4096, 16384)[0].kernel == "softmax_bwd_coop_cols"     # the tile's split has 1 chunk: coop stays
    for B, N, T in ((1, 8192, 8192), (4, 32768, 512)):
        assert dispatch.plan_columns_forward(B, N, T, N * T, T, N * T, T, "bfloat16", False, 132) == \
            dispatch.plan_columns_forward.__wrapped__(B, N, T, N * T, T, N * T, T, "bfloat16", False, 132)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
def test_cols16_bwd_split_run(torch_device, dtype, log):
    """The H200's 16-bit columns backward in COLS16_BWD_SPLIT_TILE (2100 positions: 17 cooperative chunks;
    T = 256: two runs of 128 columns), run (interpreted on the CPU), right against float64; no input modified."""
    B, N, T = 1, 2100, 256
    plan = dispatch.plan_columns_backward(B, N, T, N * T, T, N * T, T, N * T, T, dtype, log, 132, gpu="H200")
    assert [l.kernel for l in plan] == ["softmax_bwd_dot_cols", "softmax_bwd_apply_cols"]
    assert dispatch._columns_coop(B, N, T, 2, 132, False)[2] == 17
    x = _random((B, N, T), dtype, torch_device, 44)
    y = torch.from_numpy(ref.softmax(x.double().cpu().numpy(), 1, log)).to(x.dtype).to(torch_device)
    dy = _random((B, N, T), dtype, torch_device, 45)
    y_before, dy_before = y.clone(), dy.clone()
    dx = _run(plan, {"y": y, "dy": dy}, dtype, torch_device, (B, N, T))
    want = ref.softmax_backward(y.double().cpu().numpy(), dy.double().cpu().numpy(), 1, log)
    ref.assert_close(dx.double().cpu(), want, dtype, f"H200 cols16 split bwd log={log}", scale_atol=True)
    assert torch.equal(y, y_before) and torch.equal(dy, dy_before)


def test_cols16_fwd_split_rule():
    """The H200's 16-bit columns forward (GPU_CONSTANTS' COLS16_FWD_SPLIT_TILE, COLS16_FWD_SPLIT_CHUNKS): where T is
    a multiple of the tile's BLOCK_T and the rules take the split plan, the split plan in the tile (BLOCK_T, BLOCK_N,
    num_warps) where that has 5 to 17 chunks; fewer or more chunks, other T, float32, a forced plan and the H100 keep
    the rules' plans."""
    consts = dispatch.GPU_CONSTANTS["H200"]
    tile, (lo, hi) = consts["COLS16_FWD_SPLIT_TILE"], consts["COLS16_FWD_SPLIT_CHUNKS"]
    assert dispatch.COLS16_FWD_SPLIT_TILE is None and tile == (128, 32, 4) and (lo, hi) == (5, 17)

    def fwd(B, N, T, dtype="bfloat16", gpu="H200", force=None, log=False):
        return dispatch.plan_columns_forward(B, N, T, N * T, T, N * T, T, dtype, log, 132, force, gpu=gpu)

    for B, N, T, dtype, chunks in ((1, 8192, 8192, "bfloat16", 9), (8, 4096, 2048, "float16", 5),
                                   (64, 2048, 512, "bfloat16", 3), (128, 2048, 128, "bfloat16", 5),
                                   (2, 16384, 4096, "bfloat16", 9)):
        assert dispatch._columns_split(B, N, T, 2, 132, True)[3] == chunks, (B, N, T)
        for log in (False, True):
            rules, (stats, norm) = fwd(B, N, T, dtype, "", log=log), fwd(B, N, T, dtype, log=log)
            assert rules[0].kernel == stats.kernel == "softmax_fwd_stats_cols" and norm.kernel == rules[1].kernel
            for one, step in ((stats, consts["COLS16_FWD_STATS_N"]), (norm, tile[1])):  # the stats' COLS16_FWD_STATS_N
                kw = one.kwargs
                assert (kw["BLOCK_T"], kw["BLOCK_N"], kw["num_warps"]) == (tile[0], step, tile[2]), (B, N, T)
            assert stats.kwargs["PER_VALUE"] and norm.kwargs["LOG"] == log and stats.grid == norm.grid
            assert stats.grid[0] == B * T // tile[0] and lo <= stats.grid[1] <= hi, (B, N, T)
    for B, N, T, dtype, force in ((4, 2048, 16384, "bfloat16", None), (4, 32768, 512, "bfloat16", None),
                                  (8, 8192, 512, "bfloat16", None), (16, 16384, 256, "float16", None),
                                  (2, 32768, 1024, "bfloat16", None), (64, 4096, 64, "bfloat16", None),
                                  (2, 4096, 192, "float16", None), (1, 8192, 8192, "float32", None),
                                  (1, 8192, 8192, "bfloat16", "split"), (1, 8192, 8192, "bfloat16", "loop"),
                                  (32, 1000, 256, "bfloat16", None)):
        no_ftz = without_ftz(fwd(B, N, T, dtype, force=force))  # COLS16_FTZ: test_cols16_ftz_rule
        assert no_ftz == fwd(B, N, T, dtype, "", force), (B, N, T, dtype, force)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
def test_cols16_fwd_split_run(torch_device, dtype, log):
    """The H200's 16-bit columns forward in COLS16_FWD_SPLIT_TILE (1100 positions of 128 columns: the rules' split
    in 9 chunks), run (interpreted on the CPU), right against float64; x not modified."""
    B, N, T = 1, 1100, 128
    plan = dispatch.plan_columns_forward(B, N, T, N * T, T, N * T, T, dtype, log, 132, gpu="H200")
    assert [l.kernel for l in plan] == ["softmax_fwd_stats_cols", "softmax_fwd_norm_cols"]
    assert plan[0].kwargs["BLOCK_T"] == 128 and dispatch._columns_split(B, N, T, 2, 132, True)[3] == 9
    x = _random((B, N, T), dtype, torch_device, 46)
    x_before = x.clone()
    y = _run(plan, {"x": x}, dtype, torch_device, (B, N, T))
    ref.assert_close(y.double().cpu(), ref.softmax(x.double().cpu().numpy(), 1, log), dtype,
                     f"H200 cols16 split fwd log={log}")
    assert torch.equal(x, x_before)


def test_cols16_warps_rule():
    """The H200's warps for one-tile columns (GPU_CONSTANTS' COLS16_MIN_VALUES 32, COLS16_SHORT_MIN_VALUES 32,
    COLS16_BWD_MIN_VALUES (32, 128, 512, 0.8), COLS32_MIN_VALUES 32): fewer warps where a thread would hold fewer than
    32 values (narrow T), the 16-bit forward's short tiles too, the 16-bit backward's where BLOCK_N <= 128 or a column
    fills at most 0.8 of a BLOCK_N <= 512, float32's forward; the tiles stay; float32's backward, float64, looped
    plans and the H100's rules keep their warps."""
    consts = dispatch.GPU_CONSTANTS["H200"]
    assert (consts["COLS16_MIN_VALUES"], consts["COLS16_SHORT_MIN_VALUES"], consts["COLS32_MIN_VALUES"]) == (32, 32, 32)
    assert consts["COLS16_BWD_MIN_VALUES"] == (32, 128, 512, 0.8)
    assert (dispatch.COLS16_MIN_VALUES, dispatch.COLS16_SHORT_MIN_VALUES, dispatch.COLS16_BWD_MIN_VALUES,
            dispatch.COLS32_MIN_VALUES) == (16, 0, None, 0)
    tiling = dispatch._columns_tiling
    # (B, N, T, forward): the tile (BLOCK_N, BLOCK_T), the rules' warps, the H200's (probe_cols_narrow16*.log)
    for B, N, T, forward, tile, rules, h200 in (
            (65536, 256, 4, True, (256, 4), 2, 1), (32768, 512, 4, True, (512, 4), 4, 2),
            (16384, 1024, 4, True, (1024, 4), 4, 4), (52428, 160, 8, True, (256, 8), 4, 2),
            (209715, 40, 8, True, (64, 8), 2, 1), (52428, 80, 16, True, (128, 16), 2, 2),
            (8, 150, 65536, True, (256, 32), 4, 4), (16, 21, 262144, True, (32, 64), 1, 1),
            (111848, 150, 4, False, (256, 4), 4, 1), (52428, 160, 8, False, (256, 8), 4, 2),
            (55924, 300, 4, False, (512, 4), 4, 2), (83886, 200, 4, False, (256, 4), 4, 1),
            (131072, 64, 8, False, (64, 8), 4, 1), (32768, 128, 16, False, (128, 16), 4, 2),
            (65536, 256, 4, False, (256, 4), 4, 4), (27962, 600, 4, False, (1024, 4), 4, 4),
            (8, 150, 65536, False, (256, 32), 4, 4)):
        for gpu, warps in (("", rules), ("H200", h200)):
            assert tiling(B, N, T, 2, 132, forward=forward, gpu=gpu) == (*tile, True, warps), (B, N, T, forward, gpu)
        assert tiling(B, N, T, 8, 132, forward=forward, gpu="H200") == tiling(B, N, T, 8, 132, forward=forward)
        if not forward:
            assert tiling(B, N, T, 4, 132, forward=False, gpu="H200") == tiling(B, N, T, 4, 132, forward=False)
    # float32's forward (probe_cols_narrow32*.log): (B, N, T), the tile, the rules' warps, the H200's
    for B, N, T, tile, rules, h200 in ((65536, 150, 4, (256, 4), 4, 1), (65536, 64, 8, (64, 8), 4, 1),
                                       (32768, 300, 4, (512, 4), 4, 2), (32768, 16, 64, (16, 64), 4, 1),
                                       (32768, 160, 8, (256, 8), 4, 2), (16384, 1000, 4, (1024, 4), 4, 4),
                                       (8, 150, 65536, (256, 32), 4, 4)):
        for gpu, warps in (("", rules), ("H200", h200)):
            assert tiling(B, N, T, 4, 132, gpu=gpu) == (*tile, True, warps), (B, N, T, gpu)
    for forward in (True, False):
        assert tiling(1, 8192, 8192, 2, 132, forward=forward, gpu="H200") == tiling(1, 8192, 8192, 2, 132,
                                                                                    forward=forward)
    for log in (False, True):  # the adapters' plans
        fwd = dispatch.plan_columns_forward(65536, 256, 4, 1024, 4, 1024, 4, "bfloat16", log, 132, gpu="H200")
        bwd = dispatch.plan_columns_backward(83886, 200, 4, 800, 4, 800, 4, 800, 4, "float16", log, 132, gpu="H200")
        assert (fwd[0].kernel, fwd[0].kwargs["num_warps"], fwd[0].kwargs["LOG"]) == ("softmax_fwd_cols", 1, log)
        assert (bwd[0].kernel, bwd[0].kwargs["num_warps"], bwd[0].kwargs["LOG"]) == ("softmax_bwd_cols", 1, log)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
def test_cols16_warps_run(torch_device, dtype, log):
    """The H200's 16-bit one-tile columns at their fewer warps (COLS16_*MIN_VALUES: 1 warp, N = 150 and 40 in tiles
    of 256 and 64 positions), run (interpreted on the CPU) forward and backward, right against float64; no input
    modified."""
    for B, N, T in ((3, 150, 4), (5, 40, 8)):
        fwd = dispatch.plan_columns_forward(B, N, T, N * T, T, N * T, T, dtype, log, 132, gpu="H200")
        bwd = dispatch.plan_columns_backward(B, N, T, N * T, T, N * T, T, N * T, T, dtype, log, 132, gpu="H200")
        assert [(l.kernel, l.kwargs["num_warps"]) for l in fwd + bwd] == [("softmax_fwd_cols", 1),
                                                                         ("softmax_bwd_cols", 1)]
        x = _random((B, N, T), dtype, torch_device, 47 + N)
        x_before = x.clone()
        y = _run(fwd, {"x": x}, dtype, torch_device, (B, N, T))
        ref.assert_close(y.double().cpu(), ref.softmax(x.double().cpu().numpy(), 1, log), dtype,
                         f"H200 cols16 warps fwd {(B, N, T)} log={log}")
        assert torch.equal(x, x_before)
        dy = _random((B, N, T), dtype, torch_device, 48 + N)
        y_before, dy_before = y.clone(), dy.clone()
        dx = _run(bwd, {"y": y, "dy": dy}, dtype, torch_device, (B, N, T))
        want = ref.softmax_backward(y.double().cpu().numpy(), dy.double().cpu().numpy(), 1, log)
        ref.assert_close(dx.double().cpu(), want, dtype, f"H200 cols16 warps bwd {(B, N, T)} log={log}",
                         scale_atol=True)
        assert torch.equal(y, y_before) and torch.equal(dy, dy_before)


def test_cols16_fwd_tail_rule():
    """The H200's 16-bit one-tile forward of a column of N in (P, 1.5 P], P a power of two of 128 or 256
    (GPU_CONSTANTS' COLS16_FWD_TAIL): two tiles, P positions and TAIL_N = next_power_of_2(N - P), at the warps
    giving a thread 64 values (at most the rules'); other N, float32, the backward, forced plans and the H100 keep
    one tile of next_power_of_2(N)."""
    assert dispatch.GPU_CONSTANTS["H200"]["COLS16_FWD_TAIL"] and not dispatch.COLS16_FWD_TAIL

    def fwd(B, N, T, dtype="bfloat16", gpu="H200", force=None, log=False):
        return dispatch.plan_columns_forward(B, N, T, N * T, T, N * T, T, dtype, log, 132, force, gpu=gpu)

    # (B, N, T): BLOCK_N, TAIL_N, BLOCK_T, num_warps (probe_cols_tail.log)
    for (B, N, T), want in (((8, 150, 65536), (128, 32, 32, 2)), ((8, 140, 65536), (128, 16, 32, 2)),
                            ((8, 190, 65536), (128, 64, 32, 2)), ((8, 129, 65536), (128, 1, 32, 2)),
                            ((4, 300, 65536), (256, 64, 16, 2)), ((4, 384, 65536), (256, 128, 16, 2)),
                            ((3000, 150, 4), (128, 32, 4, 1))):
        for dtype in ("bfloat16", "float16"):
            for log in (False, True):
                (one,) = fwd(B, N, T, dtype, log=log)
                kw = one.kwargs
                assert (one.kernel, kw["ONE_TILE"], kw["LOG"]) == ("softmax_fwd_cols", True, log), (B, N, T)
                assert (kw["BLOCK_N"], kw["TAIL_N"], kw["BLOCK_T"], kw["num_warps"]) == want, (B, N, T, dtype)
                assert kw["BLOCK_N"] + kw["TAIL_N"] >= N > kw["BLOCK_N"]
                (rules,) = fwd(B, N, T, dtype, "", log=log)
                assert "TAIL_N" not in rules.kwargs and rules.kwargs["BLOCK_N"] == 2 * want[0]
    for B, N, T, dtype, force in ((8, 200, 65536, "bfloat16", None), (8, 128, 65536, "bfloat16", None),
                                  (2, 600, 65536, "bfloat16", None), (8, 100, 65536, "bfloat16", None),
                                  (8, 150, 65536, "float32", None), (8, 150, 65536, "bfloat16", "one_tile"),
                                  (1, 8192, 8192, "bfloat16", None)):
        assert "TAIL_N" not in fwd(B, N, T, dtype, force=force)[0].kwargs, (B, N, T, dtype, force)
    assert "TAIL_N" not in dispatch.plan_columns_backward(8, 150, 65536, 150 * 65536, 65536, 150 * 65536, 65536,
                                                          150 * 65536, 65536, "bfloat16", False, 132, gpu="H200")[0].kwargs


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
def test_cols16_fwd_tail_run(torch_device, dtype, log):
    """The H200's 16-bit one-tile forward in two tiles (COLS16_FWD_TAIL: N = 150 as 128 + 32, 129 as 128 + 1, 300 as
    256 + 64), run (interpreted on the CPU), right against float64, with a NaN, a +inf and an all -inf column and a
    huge magnitude among them; x not modified."""
    for B, N, T in ((2, 150, 8), (3, 129, 4), (2, 300, 4)):
        (plan,) = dispatch.plan_columns_forward(B, N, T, N * T, T, N * T, T, dtype, log, 132, gpu="H200")
        assert plan.kwargs["TAIL_N"] == triton.next_power_of_2(N - plan.kwargs["BLOCK_N"])
        x = _random((B, N, T), dtype, torch_device, 49 + N)
        x[0, N - 1, 0] = float("nan")      # in the tail
        x[1, 3, 1] = float("inf")          # in the first tile
        x[0, :, 2] = -float("inf")         # all -inf: NaN, as torch
        x[1, N - 2, 3] = 3e4 if dtype == "float16" else 1e38
        x_before = x.clone()
        y = _run((plan,), {"x": x}, dtype, torch_device, (B, N, T))
        ref.assert_close(y.double().cpu(), ref.softmax(x.double().cpu().numpy(), 1, log), dtype,
                         f"H200 cols16 tail fwd {(B, N, T)} log={log}")
        assert torch.equal(x.isnan(), x_before.isnan()) and torch.equal(x.nan_to_num(), x_before.nan_to_num())


def test_cols16_ftz_rule():
    """The H200's 16-bit forward's exps by ex2.approx.ftz (GPU_CONSTANTS' COLS16_FTZ: the split plan's stats launch
    and the loop, both PER_VALUE, and the one tile), the stats launch of COLS16_FWD_SPLIT_TILE's plans 16 positions
    a step (COLS16_FWD_STATS_N, the norm launch the tile's 32); float32, the norm launch, the backward and the
    H100's rules leave FTZ out (its default: off) and keep their steps."""
    consts = dispatch.GPU_CONSTANTS["H200"]
    assert (consts["COLS16_FTZ"], consts["COLS16_FWD_STATS_N"]) == (True, 16)
    assert (dispatch.COLS16_FTZ, dispatch.COLS16_FWD_STATS_N) == (False, None)

    def fwd(B, N, T, dtype, gpu="H200", force=None):
        return dispatch.plan_columns_forward(B, N, T, N * T, T, N * T, T, dtype, False, 132, force, gpu=gpu)

    for dtype in ("bfloat16", "float16"):
        stats, norm = fwd(1, 8192, 8192, dtype)                   # the tile's split plan (16 chunks)
        assert (stats.kernel, stats.kwargs["FTZ"], stats.kwargs["BLOCK_N"], norm.kwargs["BLOCK_N"]) == (
            "softmax_fwd_stats_cols", True, 16, 32)
        assert "FTZ" not in norm.kwargs and stats.scalars[-2] % 32 == 0  # CHUNK: whole steps of both launches
        stats, norm = fwd(64, 4096, 64, dtype)                    # the rules' split tile: its own step
        assert stats.kwargs["FTZ"] and stats.kwargs["BLOCK_N"] == norm.kwargs["BLOCK_N"] == 64
        (loop,) = fwd(2048, 1100, 16, dtype)                      # the loop
        assert loop.kwargs["PER_VALUE"] and loop.kwargs["FTZ"] and not loop.kwargs["ONE_TILE"]
        assert fwd(1, 8192, 8192, dtype, gpu="")[0].kwargs["BLOCK_N"] == 64
        for B, N, T in ((8, 150, 65536), (16, 21, 262144), (32, 1000, 196)):  # one tile (a tail or not)
            (one,) = fwd(B, N, T, dtype)
            assert one.kwargs["ONE_TILE"] and one.kwargs["FTZ"], (B, N, T)
    for B, N, T, dtype, gpu, force in ((1, 8192, 8192, "float32", "H200", None),
                                       (2048, 1100, 16, "float32", "H200", None),
                                       (1, 8192, 8192, "float32", "H200", "split"),
                                       (8, 150, 65536, "float32", "H200", None), (8, 150, 65536, "bfloat16", "", None),
                                       (1, 8192, 8192, "bfloat16", "", None), (2048, 1100, 16, "float16", "", None),
                                       (1, 8192, 8192, "float64", "H200", "split")):
        assert all("FTZ" not in one.kwargs for one in fwd(B, N, T, dtype, gpu, force)), (B, N, T, dtype, gpu)
    bwd = dispatch.plan_columns_backward(1, 8192, 8192, 8192 ** 2, 8192, 8192 ** 2, 8192, 8192 ** 2, 8192,
                                         "bfloat16", False, 132, gpu="H200")
    assert all("FTZ" not in one.kwargs for one in bwd)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
def test_cols16_ftz_run(torch_device, dtype, log):
    """The H200's FTZ plans (COLS16_FTZ, COLS16_FWD_STATS_N: the tile's split plan, the rules' split tile, the loop
    forced, one tile with a tail and without), run (interpreted on the CPU: FTZ's arithmetic, its exps by
    tl.exp2), right against float64 with a NaN, a +inf, an all -inf column, a column -inf but for one value, one
    whose -inf come first, the dtype's largest and lowest finite values; x not modified."""
    big = 65504.0 if dtype == "float16" else 3.3895313892515355e38
    for B, N, T, force, kernels in ((1, 1100, 128, None, ("softmax_fwd_stats_cols", "softmax_fwd_norm_cols")),
                                    (1, 300, 64, "split", ("softmax_fwd_stats_cols", "softmax_fwd_norm_cols")),
                                    (1, 300, 64, "loop", ("softmax_fwd_cols",)),
                                    (1, 150, 64, None, ("softmax_fwd_cols",)),    # one tile: 128 + 32 positions
                                    (1, 100, 64, None, ("softmax_fwd_cols",))):   # one tile of 128
        plan = dispatch.plan_columns_forward(B, N, T, N * T, T, N * T, T, dtype, log, 132, force, gpu="H200")
        assert tuple(one.kernel for one in plan) == kernels and plan[0].kwargs["FTZ"], (N, T, force)
        x = _random((B, N, T), dtype, torch_device, 53 + N)
        x[0, 5, 1] = float("nan")
        x[0, 7, 2] = float("inf")
        x[0, :, 3] = -float("inf")           # all -inf: NaN, as torch
        x[0, :, 4] = -float("inf")
        x[0, N - 1, 4] = -big                # -inf but for the lowest finite value: 1 there (log: 0)
        x[0, :min(200, N // 2), 5] = -float("inf")  # -inf first, then finite values
        x[0, 9, 6], x[0, 10, 7] = big, -big
        x_before = x.clone()
        y = _run(plan, {"x": x}, dtype, torch_device, (B, N, T))
        ref.assert_close(y.double().cpu(), ref.softmax(x.double().cpu().numpy(), 1, log), dtype,
                         f"H200 cols16 FTZ fwd {(B, N, T)} {force} log={log}")
        assert torch.equal(x.isnan(), x_before.isnan()) and torch.equal(x.nan_to_num(), x_before.nan_to_num())


def test_rows16_fwd_ftz_rule():
    """The H200's 16-bit rows forward takes its exps by ex2.approx.ftz (GPU_CONSTANTS' ROWS16_FWD_FTZ) in rows
    aligned to VEC (a tile, a tail, several rows a program) or peeled; unaligned rows not peeled, float32, float64,
    the backward, the other families and the H100's rules leave FTZ out (its default: off)."""
    assert dispatch.GPU_CONSTANTS["H200"]["ROWS16_FWD_FTZ"] and not dispatch.ROWS16_FWD_FTZ

    def fwd(M, N, dtype, log, gpu="H200", stride=None):
        return dispatch.plan_forward(M, N, stride or N, stride or N, dtype, log, 132, gpu=gpu)

    for dtype in ("bfloat16", "float16"):
        for log in (False, True):
            for M, N, stride, peeled in ((65536, 128, None, False), (30840, 4352, None, False),
                                         (8192, 16384, None, False), (44739, 3000, None, False),
                                         (8191, 16385, None, True), (4096, 1000, 1024, False)):
                one, *more = fwd(M, N, dtype, log, stride=stride)
                if one.kernel != "softmax_fwd_rows":  # 8191 x 16385's log_softmax: cooperative
                    assert (N, log) == (16385, True) and all("FTZ" not in l.kwargs for l in [one, *more])
                    continue
                assert not more
                assert one.kwargs["FTZ"] and one.kwargs["PEEL"] == peeled, (M, N, dtype, log)
                assert "FTZ" not in fwd(M, N, dtype, log, gpu="", stride=stride)[0].kwargs
            (one,) = fwd(65536, 1002, dtype, log)  # unaligned, not peeled (even rows in 1024 lanes: ROWS_PEEL16)
            assert one.kernel == "softmax_fwd_rows" and not one.kwargs["PEEL"] and "FTZ" not in one.kwargs
    for dtype in ("float32", "float64"):
        assert all("FTZ" not in l.kwargs for l in fwd(65536, 1024, dtype, False) + fwd(4096, 4096, dtype, True))
    for M, N in ((128, 1048576), (4096, 50257)):  # cooperative: their own arithmetic, no FTZ key
        assert all("FTZ" not in l.kwargs for l in fwd(M, N, "bfloat16", False))
    bwd = dispatch.plan_backward(65536, 1024, 1024, 1024, 1024, "bfloat16", False, 132, gpu="H200")
    assert all("FTZ" not in l.kwargs for l in bwd)


def test_rows16_fwd_ftz_warps_rule():
    """And with FTZ, the H200's 16-bit rows of 8192 lanes (no tail, one a program) that fill at most 0.875 of them
    at 4 warps (GPU_CONSTANTS' ROWS16_FWD_FTZ_WARPS), the rules' 16 past that; float32 (no FTZ), peeled rows (the
    H200 runs them cooperative), 16384 lanes and the H100's rules keep the rules' warps, and so do grids of fewer
    than ROWS16_FWD_FTZ_WARPS_MIN_PER_SM (6) rows an SM; nothing else changes."""
    assert dispatch.GPU_CONSTANTS["H200"]["ROWS16_FWD_FTZ_WARPS"] == {8192: (4, 0.875)}
    assert dispatch.ROWS16_FWD_FTZ_WARPS == {} and dispatch.ROWS16_FWD_FTZ_WARPS_MIN_PER_SM == 6
    for dtype in ("bfloat16", "float16"):
        for log in (False, True):
            for M, N, warps in ((25811, 5200, 4), (22369, 6000, 4), (792, 7168, 4), (791, 7168, 16), (8, 5200, 16),
                                (17476, 7680, 16), (16777, 8000, 16), (16384, 8192, 16), (11184, 12000, 16)):
                (rules,), (tuned,) = (dispatch.plan_forward(M, N, N, N, dtype, log, 132, gpu=gpu)
                                      for gpu in ("", "H200"))
                assert (tuned.kernel, tuned.kwargs["num_warps"], tuned.kwargs["FTZ"]) == ("softmax_fwd_rows", warps,
                                                                                          True), (M, N, dtype, log)
                assert {**tuned.kwargs, "num_warps": 0, "FTZ": 0} == {**rules.kwargs, "num_warps": 0, "FTZ": 0}
                assert rules.kwargs["num_warps"] == 16 and tuned.grid == rules.grid
    for N in (5200, 7000):
        (one,) = dispatch.plan_forward(4096, N, N, N, "float32", False, 132, gpu="H200")
        assert one.kwargs["num_warps"] == 16 and "FTZ" not in one.kwargs


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
def test_rows16_fwd_ftz_run(torch_device, dtype, log):
    """The H200's FTZ rows forwards (ROWS16_FWD_FTZ: several rows a program, a tile with a tail, peeled rows, rows in
    part of 8192 lanes at 4 warps), run
    (interpreted on the CPU: FTZ's arithmetic, its exps by tl.exp2), right against float64 with a NaN, a +inf, an
    all -inf row, a row -inf but for its lowest finite value, one whose -inf come first, the dtype's largest and
    lowest finite values; x not modified."""
    big = 65504.0 if dtype == "float16" else 3.3895313892515355e38
    for M, N in ((16, 128), (8, 1152), (8, 33), (8, 5200)):  # 5200: 8192 lanes at 4 warps (ROWS16_FWD_FTZ_WARPS)
        (one,) = dispatch.plan_forward(M, N, N, N, dtype, log, 132, gpu="H200")
        assert one.kernel == "softmax_fwd_rows" and one.kwargs["FTZ"], (M, N)
        x = _random((M, N), dtype, torch_device, 59 + N)
        x[0, 5] = float("nan")
        x[1, 7] = float("inf")
        x[2, :] = -float("inf")             # all -inf: NaN, as torch
        x[3, :] = -float("inf")
        x[3, N - 1] = -big                   # -inf but for the lowest finite value: 1 there (log: 0)
        x[4, :N // 2] = -float("inf")        # -inf first, then finite values
        x[5, 9], x[6, 10] = big, -big
        x_before = x.clone()
        y = _run((one,), {"x": x}, dtype, torch_device, (M, N))
        ref.assert_close(y.double().cpu(), ref.softmax(x.double().cpu().numpy(), 1, log), dtype,
                         f"H200 rows16 FTZ fwd {(M, N)} log={log} {dict(one.kwargs)}")
        assert torch.equal(x.isnan(), x_before.isnan()) and torch.equal(x.nan_to_num(), x_before.nan_to_num())


def _rules16(fn, *args, **kwargs):
    """fn(*args, **kwargs) with dispatch as before the 16-bit short-row tables became every GPU's (2026-12-06,
    forced_plans.before_tables16): the rules' own plan, against which the tests below hold the tables'."""
    with patched_within(dispatch, before_tables16):
        return fn(*args, **kwargs)


def test_rows_peel16_rule():
    """Every GPU's (the H200's first, the H100's since 2026-12-06; the H200's forwards with FTZ) 16-bit rows shorter
    than PEEL_MIN_N that are not 16-byte aligned peel (ROWS_PEEL16): of an odd N (ALIGN 1) forward and backward in
    16-2048 lanes at 1 warp, 16 rows a program in 16 and 32 lanes, 8 in 64 and 128, 4 in 256, 2 in 512 and one from 1024
    (the backward in 2048 lanes at 2 warps); of an even N (ALIGN 2, 4) the forward in 256 lanes; rows that `peel` peels
    for a tail (ROWS_PEEL16_TAILS) alike; in grids of at least 32 rows an SM (ROWS_PEEL16_MIN_PER_SM), and in smaller
    ones the odd rows one a program at 1 warp (4 in 16 and 32 lanes, ROWS_PEEL16_SMALL_M), the forward in 16-2048 lanes,
    the backward in 16-512 (ROWS_PEEL16_SMALL_LANES). The even rows' backward and longer forwards (in 512 lanes:
    ROWS_TILINGS' 4 rows at 2 warps, unpeeled), the even rows of 64 and 128 lanes, float32 (always peeled), rows of
    PEEL_MIN_N values and more and forced families keep the rules' plans (`_rules16`); nothing but PEEL, the edges
    (TAIL_N), the tiling, FTZ (the H200's peeled forwards take it) and OFFS32 (peeled rows leave it but for
    ROWS_FWD16_SAME_LANES' forwards, which take SAME_STRIDES too: test_rows_fwd16_same_rule) changes."""
    assert len(dispatch.ROWS_PEEL16) == 16 and dispatch.ROWS_PEEL16_MIN_PER_SM == 32 and dispatch.ROWS_PEEL16_TAILS
    assert dispatch.ROWS_PEEL16_SMALL_LANES == {True: 2048, False: 512}
    assert dispatch.ROWS_PEEL16_SMALL_M == {16: 4, 32: 4}
    assert not {"ROWS_PEEL16", "ROWS_PEEL16_SMALL_LANES", "ROWS_PEEL16_TAILS", "ROWS_PEEL16_SMALL_M"} & set(
        dispatch.GPU_CONSTANTS["H200"])  # every GPU's: the module's values

    def plans(M, N, dtype, log, forward, gpu, force=None, force_peel=None):
        return (dispatch.plan_forward(M, N, N, N, dtype, log, 132, force, force_peel, gpu=gpu) if forward
                else dispatch.plan_backward(M, N, N, N, N, dtype, log, 132, force, force_peel, gpu=gpu))

    # (forward, N): (BLOCK_M, num_warps) on 4224 and 65536 rows; unpeeled by the rules but for a tail
    peeled = {(True, 41): (8, 1), (True, 77): (8, 1), (True, 127): (8, 1), (True, 193): (4, 1), (True, 385): (2, 1),
              (True, 511): (2, 1), (True, 577): (1, 1), (True, 781): (1, 1), (True, 1023): (1, 1),
              (True, 1201): (1, 1), (True, 2047): (1, 1), (True, 196): (4, 1), (True, 254): (4, 1),
              (True, 142): (4, 1), (False, 41): (8, 1), (False, 99): (8, 1), (False, 193): (4, 1),
              (False, 449): (2, 1), (False, 521): (1, 1), (False, 641): (1, 1), (False, 781): (1, 1),
              (False, 1023): (1, 1), (False, 1101): (1, 2), (False, 1999): (1, 2),
              (True, 65): (8, 1), (False, 129): (8, 1), (True, 257): (4, 1), (True, 258): (4, 1), (False, 257): (4, 1),
              (True, 521): (1, 1), (True, 1025): (1, 1), (False, 1025): (1, 1),
              (True, 19): (16, 1), (True, 25): (16, 1), (True, 31): (16, 1), (True, 39): (16, 1), (False, 21): (16, 1),
              (False, 23): (16, 1), (False, 37): (16, 1), (False, 33): (16, 1)}  # whole: test_rows_whole16_rule
    tails = (17, 33, 65, 129, 257, 258, 521, 1025)
    skip = ("PEEL", "TAIL_N", "BLOCK_N", "BLOCK_M", "num_warps", "FTZ", "EVEN_M", "ALIGN_M", "OFFS32", "SAME_STRIDES")
    cases = list(itertools.product(peeled, ("bfloat16", "float16"), (False, True), (4224, 65536, 4223, 264)))
    with patched_within(dispatch, before_tables16):  # the rules' plans, once for both GPUs
        rules_of = {((forward, N), dtype, log, M): plans(M, N, dtype, log, forward, "")[0]
                    for (forward, N), dtype, log, M in cases}
    for ((forward, N), dtype, log, M), gpu in itertools.product(cases, ("H200", "")):
        rules, (tuned,) = rules_of[(forward, N), dtype, log, M], plans(M, N, dtype, log, forward, gpu)
        what = (M, N, dtype, log, forward, gpu)
        if M < 4224 and (N % 2 == 0 or not forward and N > 511):  # smaller grids: as before
            forced = plans(M, N, dtype, log, forward, gpu, force_peel=True)
            assert (tuned,) == forced if N in tails else not tuned.kwargs["PEEL"], what
            continue
        tiling = (grids16_tiling(forward, N, log, M, gpu) or peeled[forward, N]) if M >= 4224 else (
            4 if N < 40 else 1, 1)  # the H100's by op and grid: ROWS_PEEL16_GRIDS, test_rows_peel16_grids_rule
        assert rules.kwargs["PEEL"] == (N in tails) and tuned.kwargs["PEEL"], what
        assert tuned.kwargs["TAIL_N"] == 16, what
        assert (tuned.kwargs["BLOCK_M"], tuned.kwargs["num_warps"]) == tiling, what
        assert tuned.grid == (triton.cdiv(M, tiling[0]),)
        assert tuned.kwargs.get("FTZ", False) == (forward and gpu == "H200"), what
        assert tuned.kwargs["BLOCK_N"] == triton.next_power_of_2(N // 8 * 8), what
        assert {k: v for k, v in tuned.kwargs.items() if k not in skip} == \
            {k: v for k, v in rules.kwargs.items() if k not in skip}, what
    kept = [(True, 65536, 1002), (False, 65536, 1002), (False, 65536, 1996), (False, 65536, 300), (False, 65536, 254),
            (True, 65536, 1500), (True, 65536, 512), (False, 65536, 1024), (True, 65536, 300), (True, 65536, 510),
            (True, 65536, 50), (False, 65536, 60), (True, 65536, 100), (False, 65536, 126), (False, 65536, 258),
            (True, 65536, 18), (False, 65536, 30), (True, 65536, 38), (False, 65536, 24),
            (True, 264, 254), (True, 4223, 300), (False, 4223, 1201), (False, 264, 781)]
    for (forward, M, N), log, gpu in itertools.product(kept, (False, True), ("H200", "")):
        (tuned,) = plans(M, N, "bfloat16", log, forward, gpu)
        assert not tuned.kwargs["PEEL"] or N == 258, (M, N, forward, log, gpu)
        assert N != 258 or plans(M, N, "bfloat16", log, forward, gpu, force_peel=True) == (tuned,)
    for forward in (True, False):  # a forced family keeps the rules' choice of PEEL; float32 peels anyway
        (forced,) = plans(65536, 1201, "bfloat16", False, forward, "H200", "rows")
        assert not forced.kwargs["PEEL"]
        (f32,) = plans(65536, 1201, "float32", False, forward, "H200")
        assert f32.kwargs["PEEL"] and plans(65536, 1201, "float32", False, forward, "")[0].kwargs["PEEL"]
        (f32,) = plans(65536, 77, "float32", False, forward, "")
        assert f32 == _rules16(plans, 65536, 77, "float32", False, forward, "")[0]
        (long,) = plans(4224, 2049, "bfloat16", False, forward, "H200")  # PEEL_MIN_N: the rules' peeled tiling
        assert long.kwargs["PEEL"] and long.kwargs["num_warps"] == plans(4224, 2049, "bfloat16", False, forward,
                                                                         "H200", force_peel=True)[0].kwargs["num_warps"]


def _short_plans(M, N, forward, gpu, dtype="bfloat16", log=False, stride=None, force=None, force_peel=None):
    """dispatch's plan of M rows of N values (132 SMs), forward or backward, every tensor at one row stride (N unless
    given), for the short-row rule tests below."""
    stride = stride or N
    return (dispatch.plan_forward(M, N, stride, stride, dtype, log, 132, force, force_peel, gpu=gpu) if forward
            else dispatch.plan_backward(M, N, stride, stride, stride, dtype, log, 132, force, force_peel, gpu=gpu))


def test_rows_peel16_grids_rule():
    """The H100's peeled 16-bit rows re-tiled by op and grid (ROWS_PEEL16_GRIDS; the H200's: none), as
    forced_plans.grids16_tiling writes them out from bench/DISPATCH.md: in grids of at least 32 rows an SM, the odd
    backward of 73-127 values (128 lanes) log_softmax at 4 rows and 1 warp, softmax at 8 rows and 2 warps up to 512 rows
    an SM; the odd forward of 25-39 values (32 lanes; 33 runs whole, ROWS_WHOLE16_TAILS) at 8 rows and 1 warp up to 128
    rows an SM (31-39 values to 256, 35-39 to 512), at 16 rows and 2 warps up to 1024 and past them for the softmax of
    31-39 and the log_softmax of 35-39; in small grids half ROWS_PEEL16's rows at 1 warp, the forward of 41-71 values
    (64 lanes) to 64 rows an SM, of 73-135 (128) to 128 and of 137-263 (256, even rows of ALIGN 2 and 4 too) to 48
    (171-263 to 56, 211-263 to 72, 221-263 to 80), the log_softmax backward of 41-71 to 80 (55-71 to 88) and of 137-263
    to 48 (171-221 to 56); the softmax backward at 16 rows and 2 warps of 41-71 values to 32 rows an SM, 41-69 to 40,
    41-59 to 48, 41-53 to 56 and 41-47 to 64. Against the plans without the table (forced_plans.before_grids16), on odd
    N of 23-73, 75-135 and 137-265 (and the bounds 169-171, 209-211, 219-223) and even N in 256 lanes, 26 grids with
    each bound on both sides, both dtypes, ops and directions and both GPUs: ROWS_PEEL16's tiling before (peeled), and
    only BLOCK_M, num_warps and the grid change; the rest is unchanged."""
    assert dispatch.GPU_CONSTANTS["H200"]["ROWS_PEEL16_GRIDS"] == {}
    grids = (4223, 4224, 5280, 5281, 6336, 6337, 7392, 7393, 8448, 8449, 9504, 9505, 10560, 10561, 11616, 11617, 16896,
             16897, 33792, 33793, 67584, 67585, 135168, 135169, 262144, 1048576)
    even = (138, 140, 202, 204, 252, 254, 258, 260, 262)  # ALIGN 2 and 4, which the forward peels in 256 lanes
    cases = list(itertools.product((*range(23, 74, 2), *range(75, 136, 4), *range(137, 264, 6), 169, 171, 211, 219, 223,
                                    265, *even),
                                   ("bfloat16", "float16"), (False, True), (True, False), grids, ("H200", "")))
    with patched_within(dispatch, before_grids16):
        before = {(N, dtype, log, forward, M, gpu): _short_plans(M, N, forward, gpu, dtype, log)
                  for N, dtype, log, forward, M, gpu in cases}
    changed = 0
    for case in cases:
        N, dtype, log, forward, M, gpu = case
        ((was,), (now,)) = before[case], _short_plans(M, N, forward, gpu, dtype, log)
        tiling = grids16_tiling(forward, N, log, M, gpu)
        if tiling is None or forward and N == 33:
            assert (now,) == (was,), case
            continue
        changed += 1
        lanes = triton.next_power_of_2(N // 8 * 8)
        assert was.kwargs["PEEL"] and (was.kwargs["BLOCK_M"], was.kwargs["num_warps"]) == dispatch.ROWS_PEEL16[
            (forward, lanes)][:2], case
        assert (now.kwargs["BLOCK_M"], now.kwargs["num_warps"]) == tiling and now.grid == (triton.cdiv(M, tiling[0]),)
        assert dataclasses.replace(now, grid=was.grid, meta=tuple(
            (k, was.kwargs[k] if k in ("BLOCK_M", "num_warps") else v) for k, v in now.meta)) == was, case
    # a dtype: the forward in 32 lanes 7 N x 22 grids x 2 ops + 3 grids x 7, in 64 16 N x 8 x 2, in 128 17 N x 16 x 2,
    # in 256 (27 odd N and 9 even x 4 grids to 48 rows an SM, 27 x 2 to 56, 17 x 4 to 72, 14 x 2 to 80) x 2; the
    # backward in 128 lanes 15 N x (25 + 20 grids), in 64 the log_softmax 16 N x 12 + 9 x 2 (to 88) and the softmax
    # 16 N + 15 + 10 x 2 + 7 x 2 + 4 x 2, in 256 the log_softmax 27 N x 4 + 12 x 2 (to 56)
    assert changed == 2 * (329 + 256 + 544 + 588 + 675 + 210 + 73 + 132)


def test_rows_whole16_rule():
    """Every GPU's (as ROWS_PEEL16: test_rows_peel16_rule) 16-bit rows that `peel` peels only for their tail run whole
    in grids of at least 32 rows an SM (ROWS_WHOLE16_TAILS): of an even N (ALIGN 2 or 4; 34 = 32 + 2, 66 and 68 = 64 + 2
    and 4) at 16 rows a program and 1 warp both ways, of ALIGN 1 (17 = 16 + 1 both ways, 33 = 32 + 1 and 34 of an odd
    stride forward) at 32 rows and 1 warp; and the odd backward of 25-31 values (under ROWS_PEEL16_WHOLE_FILL's 32 of
    its 32 lanes) runs whole at ROWS_PEEL16's tiling, 16 rows or 4 in smaller grids, at 1 warp. Smaller grids of the
    rows with a tail, 128 lanes and more (130, 132, 260), the odd rows of 64 and 128 lanes with a tail (65, 67, 129),
    33's backward, the odd forward of 25-31 and backward of 19-23, strides that differ, float32, forced families and
    force_peel keep their plans. Nothing but PEEL, TAIL_N (the row's own tail, not the edges), the tiling, FTZ and
    OFFS32 changes from the rules' (`_rules16`)."""
    assert not {"ROWS_WHOLE16_TAILS", "ROWS_PEEL16_WHOLE_FILL"} & set(dispatch.GPU_CONSTANTS["H200"])
    assert dispatch.ROWS_WHOLE16_TAILS == {(True, 32, False): (16, 1), (False, 32, False): (16, 1),
                                          (True, 64, False): (16, 1), (False, 64, False): (16, 1),
                                          (True, 16, True): (32, 1), (False, 16, True): (32, 1),
                                          (True, 32, True): (32, 1)}
    assert dispatch.ROWS_PEEL16_WHOLE_FILL == {(False, 32): 1.0}

    skip = ("PEEL", "TAIL_N", "BLOCK_M", "num_warps", "FTZ", "EVEN_M", "ALIGN_M", "OFFS32")
    # (N, forward, stride): the whole tiling on 4224 and 65536 rows (and on 4223 and 264, where given)
    whole = {**{(N, forward, None): ((16, 1), None) for N in (34, 66, 68) for forward in (True, False)},
             (17, True, None): ((32, 1), None), (17, False, None): ((32, 1), None), (33, True, None): ((32, 1), None),
             (34, True, 35): ((32, 1), None), **{(N, False, None): ((16, 1), (4, 1)) for N in (25, 27, 29, 31)}}
    cases = [(N, forward, stride, log, dtype, M) for (N, forward, stride), (_, small) in whole.items()
             for log, dtype, M in itertools.product((False, True), ("bfloat16", "float16"), (4224, 65536, 4223, 264))
             if M >= 4224 or small]
    with patched_within(dispatch, before_tables16):  # the rules' plans, once for both GPUs
        rules_of = {(N, forward, stride, log, dtype, M): _short_plans(M, N, forward, "", dtype, log, stride)[0]
                    for N, forward, stride, log, dtype, M in cases}
    for (N, forward, stride, log, dtype, M), gpu in itertools.product(cases, ("H200", "")):
        tiling, small = whole[N, forward, stride]
        rules = rules_of[N, forward, stride, log, dtype, M]
        (tuned,) = _short_plans(M, N, forward, gpu, dtype, log, stride)
        what, block_m = (M, N, forward, log, dtype, stride, gpu), min((tiling if M >= 4224 else small)[0], M)
        assert rules.kwargs["PEEL"] == (N not in range(25, 32)) and not tuned.kwargs["PEEL"], what
        assert (tuned.kwargs["BLOCK_M"], tuned.kwargs["num_warps"]) == (block_m, 1), what
        assert tuned.grid == (triton.cdiv(M, block_m),), what
        assert (tuned.kwargs["BLOCK_N"], tuned.kwargs["TAIL_N"]) == dispatch.row_segments(N), what
        assert {k: v for k, v in tuned.kwargs.items() if k not in skip} == \
            {k: v for k, v in rules.kwargs.items() if k not in skip}, what
    for forward in (True, False):
        for M, N, kw in ((4223, 34, {}), (264, 66, {}), (4223, 17, {}), (264, 33, {}), (65536, 130, {}),
                         (65536, 132, {}), (65536, 260, {}), (65536, 65, {}), (65536, 67, {}), (65536, 129, {}),
                         (65536, 34, dict(dtype="float32")), (65536, 34, dict(force="rows")),
                         (65536, 17, dict(force_peel=True)), (65536, 34, dict(force_peel=True))):
            (tuned,) = _short_plans(M, N, forward, "H200", **kw)
            assert without_ftz((tuned,)) == without_ftz(_short_plans(M, N, forward, "", **kw)), (M, N, kw)
            assert tuned.kwargs["PEEL"], (M, N, kw)
            if M < 4224 and N % 2:  # ROWS_PEEL16_SMALL_M's 4 rows at 1 warp, peeled
                assert (tuned.kwargs["BLOCK_M"], tuned.kwargs["num_warps"]) == (4, 1), (M, N, kw)
            if N in (34, 66, 130, 132) and not kw:
                assert (tuned,) == _short_plans(M, N, forward, "H200", force_peel=True), (M, N)
            if N in (65, 67, 129):  # ROWS_PEEL16's 8 rows at 1 warp, peeled
                assert (tuned.kwargs["BLOCK_M"], tuned.kwargs["num_warps"]) == (8, 1), (M, N, kw)
        (strides,) = (dispatch.plan_forward(65536, 34, 34, 40, "bfloat16", False, 132, gpu="H200") if forward
                      else dispatch.plan_backward(65536, 34, 34, 34, 40, "bfloat16", False, 132, gpu="H200"))
        assert not strides.kwargs["PEEL"] and strides.kwargs["BLOCK_M"] != 16  # strides that differ: never peeled
    for M, N, forward, stride in ((65536, 33, False, None), (65536, 34, False, 35), (4224, 25, True, None),
                                  (65536, 31, True, None), (65536, 19, False, None), (65536, 23, False, None),
                                  (264, 21, False, None)):
        for log in (False, True):  # ROWS_PEEL16's tiling, peeled
            (tuned,) = _short_plans(M, N, forward, "H200", log=log, stride=stride)
            tiling = (16, 1) if M >= 4224 else (4, 1)
            assert tuned.kwargs["PEEL"] and (tuned.kwargs["BLOCK_M"], tuned.kwargs["num_warps"]) == tiling, (M, N)


def test_rows_odd16_rule():
    """Every GPU's (as ROWS_PEEL16) 16-bit backward of rows of ALIGN 1 (an odd N or stride) of 5-15 values, no tail,
    runs whole at 512 values a program and 1 warp (ROWS_ODD16_TILINGS: 64 rows of 8 lanes, 32 of 16), in every grid; the
    forward, the even rows of a contiguous x (6, 10-14), 16 values (of an odd stride: ROWS_PEEL16's 16-lane entry,
    peeled), 1-4 values, strides that differ (unpeeled, so whole alike) and forced families keep the rules' plans
    (`_rules16`; float32: test_rows_whole32_rule). Nothing but the tiling (and the grid, EVEN_M and ALIGN_M with it)
    changes."""
    assert "ROWS_ODD16_TILINGS" not in dispatch.GPU_CONSTANTS["H200"]
    assert dispatch.ROWS_ODD16_TILINGS == {(False, 8): (64, 1), (False, 16): (32, 1)}

    skip = ("BLOCK_M", "num_warps", "EVEN_M", "ALIGN_M")
    cases = list(itertools.product(((5, None), (7, None), (9, None), (11, None), (13, None), (15, None), (6, 7), (8, 9),
                                    (12, 13)), (False, True), ("bfloat16", "float16"), (1, 37, 264, 4224, 65536)))
    with patched_within(dispatch, before_tables16):  # the rules' plans, both directions, once for both GPUs
        rules_of = {(((N, stride), log, dtype, M), forward): _short_plans(M, N, forward, "", dtype, log, stride)[0]
                    for (N, stride), log, dtype, M in cases for forward in (False, True)}
    for case, gpu in itertools.product(cases, ("H200", "")):
        (N, stride), log, dtype, M = case
        rules = rules_of[case, False]
        (tuned,) = _short_plans(M, N, False, gpu, dtype, log, stride)
        block_m = min(64 if N <= 8 else 32, triton.next_power_of_2(M))
        what = (M, N, stride, log, dtype, gpu)
        assert (tuned.kwargs["BLOCK_M"], tuned.kwargs["num_warps"], tuned.grid) == (
            block_m, 1, (triton.cdiv(M, block_m),)), what
        assert not tuned.kwargs["PEEL"] and tuned.kernel == rules.kernel, what
        assert {k: v for k, v in tuned.kwargs.items() if k not in skip} == \
            {k: v for k, v in rules.kwargs.items() if k not in skip}, what
        (fwd,) = _short_plans(M, N, True, gpu, dtype, log, stride)
        assert without_ftz((fwd,)) == without_ftz((rules_of[case, True],)), what
    for M, N, kw in ((65536, 6, {}), (65536, 10, {}), (65536, 14, {}), (65536, 3, {}), (65536, 3, dict(stride=5)),
                     (65536, 9, dict(force="rows"))):
        for gpu in ("H200", ""):
            (tuned,) = _short_plans(M, N, False, gpu, **kw)
            assert tuned == _rules16(_short_plans, M, N, False, "", **kw)[0], (M, N, kw, gpu)
    (strided,) = _short_plans(65536, 16, False, "H200", stride=17)  # ROWS_PEEL16's 16-lane entry: peeled
    assert strided.kwargs["PEEL"] and (strided.kwargs["BLOCK_M"], strided.kwargs["num_warps"]) == (16, 1)
    (unequal,) = dispatch.plan_backward(65536, 9, 9, 9, 16, "bfloat16", False, 132, gpu="H200")
    assert (unequal.kwargs["BLOCK_M"], unequal.kwargs["num_warps"]) == (32, 1) and not unequal.kwargs["PEEL"]


def _check_rows_launch(one, M, N, dtype, log, forward, device, seed, what, stride=None):
    """Runs launch `one` (a rows kernel's plan of M x N, forward or backward) on fresh inputs (seed `seed`), the
    forward's x with a NaN, a +inf, an all -inf row and the dtype's largest value: y or dx right against float64,
    inputs not modified (`what`: the case, for messages). The forward's x and y rows `stride` apart where given, and it
    returns (x, y)."""
    x = _random((M, N), dtype, device, seed) if stride is None else _random((M, stride), dtype, device, seed)[:, :N]
    if forward:
        x[0, 5 % N], x[1, 7 % N], x[5, (N - 2) % N] = float("nan"), float("inf"), torch.finfo(DTYPES[dtype]).max
        x[2, :] = -float("inf")
        x_before = x.clone()
        y = _run((one,), {"x": x}, dtype, device, (M, stride or N))[:, :N]
        ref.assert_close(y.double().cpu(), ref.softmax(x.double().cpu().numpy(), 1, log), dtype, what)
        assert torch.equal(x.isnan(), x_before.isnan()) and torch.equal(x.nan_to_num(), x_before.nan_to_num())
        return x, y
    y = (torch.log_softmax if log else torch.softmax)(x.double(), -1).to(DTYPES[dtype])
    dy = _random((M, N), dtype, device, seed + 1)
    y_before, dy_before = y.clone(), dy.clone()
    dx = _run((one,), {"y": y, "dy": dy}, dtype, device, (M, N))
    expected = ref.softmax_backward(y.double().cpu().numpy(), dy.double().cpu().numpy(), log=log)
    ref.assert_close(dx.double().cpu(), expected, dtype, what, scale_atol=True)
    assert torch.equal(y, y_before) and torch.equal(dy, dy_before)


def test_rows_whole32_rule():
    """Float32 rows not 16-byte aligned of 2-32 values (ROWS_WHOLE32) run whole, by lanes. The H200's: 2 at 256 rows
    and 4 warps, 3 at 64 rows and 1 warp, 5-7 at 64 and 2, 9-15 at 32 and 1, 17 (16 + 1) and 18-32 at 16 and 1; where
    that leaves fewer than 4 programs an SM (ROWS_WHOLE32_MIN_PROGRAMS), 2 at 256 and 4 warps, 3 at 32 rows, 5-15 at
    16, 17-31 at 4, 1 warp. The H100's: 2 at 256 rows and 4 warps (backward 128), 3 at 128 and 4, 5-7 at 64 and 2
    (backward 32 and 1), 9-17 at 32 and 1 (backward 16), 18-32 at 16 and 1 (the softmax forward of odd 19-31 at 32
    and 2); smaller grids at 16 rows and 1 warp but 2 and 3 (as their larger ones). Strides that differ (unpeeled
    before too) alike. The log_softmax forward of odd 19-31 (kept peeled), 33 and 63 values, rows a float32 vector
    covers (aligned), float64 rows, forced families and force_peel keep the plans the rules had without the table
    (`before_whole32`; they no longer peel rows of fewer than 4 values: `peel`). Nothing but PEEL, BLOCK_N and TAIL_N
    (row_segments', not the edges), BLOCK_M, num_warps and the grid (and EVEN_M and ALIGN_M with them) changes, nor
    OFFS32 and SAME_STRIDES (ROWS_FWD32_OFFS32's: test_rows_fwd32_offs32_rule)."""
    assert dispatch.ROWS_WHOLE32_MIN_PROGRAMS == 4
    skip = ("PEEL", "BLOCK_N", "TAIL_N", "BLOCK_M", "num_warps", "EVEN_M", "ALIGN_M", "OFFS32", "SAME_STRIDES")

    def offs_free(launch):
        """`launch` with ROWS_FWD32_OFFS32's OFFS32 and SAME_STRIDES as the bare rules have them."""
        kw = {k: v for k, v in launch.kwargs.items() if k != "SAME_STRIDES"}
        return dataclasses.replace(launch, meta=tuple({**kw, **({"OFFS32": False} if "OFFS32" in kw else {})}.items()))

    grids = (1, 37, 1056, 4224, 16896, 33792, 65536)
    rows = ((2, None), (3, None), (5, None), (6, None), (7, None), (9, None), (10, None), (13, None), (15, None),
            (17, None), (18, None), (19, None), (25, None), (30, None), (31, None), (2, 3), (6, 9), (12, 13), (8, 10),
            (16, 18), (24, 27))
    cases = [(N, stride, forward, log, M) for N, stride in rows
             for forward, log, M in itertools.product((True, False), (False, True), grids)]
    kept = [(M, N, {"dtype": "float32", **kw}, forward) for M, N, kw in (
        (65536, 33, {}), (65536, 63, {}), (65536, 35, {}), (65536, 12, {}), (65536, 8, {}),
        (65536, 9, dict(dtype="float64")), (65536, 2, dict(dtype="float64", stride=3)), (65536, 9, dict(force="rows")),
        (65536, 9, dict(force_peel=True))) for forward in (True, False)]
    with patched_within(dispatch, before_whole32):  # the plans before, once for both GPUs
        bare = {(N, stride, forward, log, M): _short_plans(M, N, forward, "", "float32", log, stride)[0]
                for N, stride, forward, log, M in cases}
        bare_kept = [_short_plans(M, N, forward, "", **kw)[0] for M, N, kw, forward in kept]
    for gpu in ("H200", ""):
        seen, never_big = set(), set()
        for N, stride, forward, log, M in cases:
            rules = bare[N, stride, forward, log, M]
            (tuned,) = _short_plans(M, N, forward, gpu, "float32", log, stride)
            odd = N % 2 == 1 or (stride or N) % 2 == 1  # ALIGN 1
            want = whole32_tiling(gpu, N, forward, log, odd)
            what = (gpu, M, N, stride, forward, log)
            assert rules.kwargs["PEEL"] == (N > 3), what
            if want is None:
                assert offs_free(tuned) == rules and tuned.kwargs["PEEL"], what
                continue
            if 4 * 132 * want[0] > grids[-1]:
                never_big.add(N)
            big = M >= 4 * 132 * want[0]
            block_m, num_warps = want[:2] if big else want[2:]
            block_m = min(block_m, triton.next_power_of_2(M))
            assert (tuned.kwargs["BLOCK_M"], tuned.kwargs["num_warps"]) == (block_m, num_warps), what
            assert tuned.grid == (triton.cdiv(M, block_m),) and not tuned.kwargs["PEEL"], what
            assert (tuned.kwargs["BLOCK_N"], tuned.kwargs["TAIL_N"]) == dispatch.row_segments(N), what
            assert tuned.kernel == rules.kernel and {k: v for k, v in tuned.kwargs.items() if k not in skip} == \
                {k: v for k, v in rules.kwargs.items() if k not in skip}, what
            seen.add((N, big))
        # both kinds of grid for every N but those whose tiling needs more than 65536 rows (H200: 2; H100: 2, 3)
        assert never_big == ({2} if gpu else {2, 3}) and len(seen) == 2 * 19 - len(never_big), (gpu, sorted(seen))
        (unequal,) = dispatch.plan_backward(65536, 9, 9, 9, 16, "float32", False, 132, gpu=gpu)
        assert (unequal.kwargs["BLOCK_M"], unequal.kwargs["num_warps"]) == ((32 if gpu else 16), 1)
        assert not unequal.kwargs["PEEL"]
        for (M, N, kw, forward), rules in zip(kept, bare_kept):
            (tuned,) = _short_plans(M, N, forward, gpu, **kw)
            assert offs_free(tuned) == rules or gpu and N in (8, 12), (M, N, kw)  # (aligned: ROWS_TILINGS')
            assert tuned.kwargs["PEEL"] == (N not in (8, 12)), (gpu, M, N, kw)


@pytest.mark.parametrize("gpu", ["H200", ""], ids=["H200", "H100"])
@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
def test_rows_whole32_run(torch_device, log, gpu):
    """The GPUs' short unaligned float32 rows whole (ROWS_WHOLE32), planned for 4 SMs so that 2048 rows fill the rule's
    grid and 64 rows run its smaller grids' tiling (2048 x 21's softmax forward the H100's 32 rows at 2 warps), and
    the rows `peel` no longer peels (1-3 values, float64's 1; 21 and 25's log_softmax forward and float64's 3 peeled),
    on x with a NaN, a +inf, an all -inf row and the dtype's largest value: y and dx right against float64, inputs not
    modified."""
    for M, N, dtype in ((2048, 2, "float32"), (64, 3, "float32"), (2048, 5, "float32"), (64, 6, "float32"),
                        (2048, 13, "float32"), (64, 10, "float32"), (2048, 17, "float32"), (64, 17, "float32"),
                        (2048, 30, "float32"), (64, 25, "float32"), (2048, 21, "float32"), (64, 1, "float32"),
                        (64, 1, "float64"), (64, 3, "float64")):
        for forward in (True, False):
            (one,) = (dispatch.plan_forward(M, N, N, N, dtype, log, 4, gpu=gpu) if forward
                      else dispatch.plan_backward(M, N, N, N, N, dtype, log, 4, gpu=gpu))
            peeled = dtype == "float64" and N == 3 or N in (21, 25) and forward and log  # (21, 25: kept peeled)
            if gpu == "" and N == 21 and forward and not log:  # (the H100's odd 19-31 softmax forward: 32 x 2)
                assert (one.kwargs["BLOCK_M"], one.kwargs["num_warps"]) == (32, 2), one.kwargs
            assert one.kwargs["PEEL"] == peeled, (M, N, dtype)
            _check_rows_launch(one, M, N, dtype, log, forward, torch_device, 71 + N,
                               f"{gpu or 'H100'} whole32 {(M, N, dtype)} fwd={forward} log={log} {dict(one.kwargs)}")


def test_rows_fwd32_offs32_rule():
    """The float32 forward of rows not 16-byte aligned (ALIGN < 4) computes its offsets in 32 bits (OFFS32) and y's are
    x's (SAME_STRIDES) where whole in at most ROWS_FWD32_OFFS32[0] lanes (a tail past them included; those of ALIGN 2
    in grids of at least 4 programs an SM) or peeled and at most ROWS_FWD32_OFFS32[1] values long: the H200's (16, 32)
    (not whole rows in 32 lanes, 18-32; the peeled log_softmax of odd 19-31 and forced peels do), the H100's (32, 0)
    (whole rows in 32 lanes do; no peeled row). Not peeled ones past 32 values (33, 63), aligned rows (4, 8, 12, 16), x
    and y strides that differ, offsets past 2**31 values, the backward, float64 and 16-bit rows
    (ROWS_FWD16_OFFS32_LANES' alone)."""
    limits = FWD32_OFFS32_LIMITS
    assert dispatch.ROWS_FWD32_OFFS32 == limits[""]
    assert dispatch.GPU_CONSTANTS["H200"]["ROWS_FWD32_OFFS32"] == limits["H200"]
    seen = {gpu: set() for gpu in limits}
    for N, M, log in itertools.product(range(1, 66), (1, 37, 4224, 1048576), (False, True)):
        for gpu, force_peel in itertools.product(limits, (None, True)):
            (one,) = dispatch.plan_forward(M, N, N, N, "float32", log, 132, force_peel=force_peel, gpu=gpu)
            kw = one.kwargs
            if "PEEL" not in kw:
                continue
            peeled, (whole32, peeled32) = kw["PEEL"], limits[gpu]
            want = N % 4 != 0 and (N <= peeled32 if peeled else kw["BLOCK_N"] <= whole32 and (
                N % 2 == 1 or one.grid[0] >= 4 * 132))
            assert kw["OFFS32"] == want and kw.get("SAME_STRIDES", False) == want, (N, M, log, gpu, force_peel, kw)
            seen[gpu].add((want, peeled, N <= 18))
    assert seen["H200"] >= {(True, False, True), (True, True, False), (True, True, True), (False, False, False),
                            (False, True, False)}, seen
    assert seen[""] >= {(True, False, True), (True, False, False), (False, True, False), (False, True, True),
                        (False, False, True)}, seen
    for gpu, log in itertools.product(limits, (False, True)):
        (whole19,) = _short_plans(65536, 19, True, gpu, "float32", log)
        assert whole19.kwargs["PEEL"] == log  # (the softmax whole in 32 lanes, the log_softmax peeled)...
        assert whole19.kwargs["OFFS32"] == (log if gpu else not log)  # (...with 32-bit offsets: the H200 peeled)
        for M, N, sx, sy, dtype in ((65536, 5, 5, 6, "float32"), (65536, 5, 40000, 40000, "float32"),
                                    (65536, 5, 5, 5, "float64"), (65536, 3, 3, 3, "float64")):
            (one,) = dispatch.plan_forward(M, N, sx, sy, dtype, log, 132, gpu=gpu)
            assert not one.kwargs["OFFS32"] and "SAME_STRIDES" not in one.kwargs, (M, N, sx, sy, dtype)
        (small,) = dispatch.plan_forward(16384, 5, 40000, 40000, "float32", log, 132, gpu=gpu)
        assert small.kwargs["OFFS32"] and small.kwargs["SAME_STRIDES"]  # 16384 rows 40000 apart fit in 32 bits
        for dtype in ("bfloat16", "float16"):
            assert "SAME_STRIDES" not in _short_plans(65536, 5, True, gpu, dtype, log)[0].kwargs
        for N in (5, 19):
            assert "SAME_STRIDES" not in _short_plans(65536, N, False, gpu, "float32", log)[0].kwargs


@pytest.mark.parametrize("gpu", ["H200", ""], ids=["H200", "H100"])
@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
def test_rows_fwd32_offs32_run(torch_device, log, gpu):
    """The GPUs' float32 forward with ROWS_FWD32_OFFS32's OFFS32 and SAME_STRIDES (rows of 1, 2, 5, 9, 14 and 17
    values whole; 21 peeled, the log_softmax, with them on the H200 alone; its softmax whole, with them on the H100
    alone; 64 x 6 without, ALIGN 2 in a small grid), contiguous and 7 values past each row, on x with a NaN, a +inf, an
    all -inf row and the dtype's largest value: y right against float64, x not modified; and the same launch with both
    off: the same values, bit for bit."""
    for M, N, stride in ((256, 1, 1), (2048, 2, 9), (2048, 5, 5), (64, 5, 12), (2048, 9, 9), (64, 17, 24),
                         (256, 14, 14), (64, 6, 6), (256, 21, 21)):
        (one,) = dispatch.plan_forward(M, N, stride, stride, "float32", log, 4, gpu=gpu)
        want = (N != 21 or log == (gpu == "H200")) and (M, N) != (64, 6)  # (64 x 6: ALIGN 2, 4 programs on 4 SMs)
        assert one.kwargs["OFFS32"] == want and one.kwargs.get("SAME_STRIDES", False) == want, (M, N, one.kwargs)
        assert one.kwargs["PEEL"] == (N == 21 and log), (M, N, one.kwargs)
        what = f"{gpu or 'H100'} fwd32 offs32 {(M, N, stride)} log={log} {dict(one.kwargs)}"
        x, y = _check_rows_launch(one, M, N, "float32", log, True, torch_device, 5 * M + N, what, stride)
        off = (dataclasses.replace(one, meta=tuple(dict(one.kwargs, OFFS32=False, SAME_STRIDES=False).items())),)
        y_off = _run(off, {"x": x}, "float32", torch_device, (M, stride))[:, :N]
        assert torch.equal(y.isnan(), y_off.isnan()) and torch.equal(y.nan_to_num(), y_off.nan_to_num()), what


def test_rows_fwd16_same_rule():
    """Every GPU's (as ROWS_PEEL16, whose peeled rows these are) 16-bit forward of peeled rows whose body runs in 128
    or 256 lanes (odd 73-263 values, and even ones peeled, forced peels too) computes its offsets in 32 bits (OFFS32)
    and y's are x's (SAME_STRIDES): ROWS_FWD16_SAME_LANES = (128, 256). Not peeled rows in other lanes (33-71 in 32
    and 64, 265 and more in 512), unpeeled rows (which keep ROWS_FWD16_OFFS32_LANES' OFFS32 and take no SAME_STRIDES),
    offsets past 2**31 values, the backward, float32, nor the rules before the tables (`_rules16`)."""
    assert dispatch.ROWS_FWD16_SAME_LANES == (128, 256)
    assert "ROWS_FWD16_SAME_LANES" not in dispatch.GPU_CONSTANTS["H200"]
    seen = set()
    for N, M, log, dtype in itertools.product(range(33, 300, 2), (1, 37, 1056, 4224, 1048576), (False, True),
                                              ("bfloat16", "float16")):
        for gpu, force_peel, rules in (("H200", None, False), ("H200", True, False), ("", None, False),
                                       ("", True, False), ("", None, True)):
            args = (M, N, True, gpu, dtype, log, None, None, force_peel)
            (one,) = _rules16(_short_plans, *args) if rules else _short_plans(*args)
            kw = one.kwargs
            if "PEEL" not in kw:
                continue
            want = not rules and kw["PEEL"] and kw["BLOCK_N"] in (128, 256)
            assert kw.get("SAME_STRIDES", False) == want and (kw["OFFS32"] or not want), (N, M, log, gpu, kw)
            if kw["PEEL"]:
                assert kw["OFFS32"] == want, (N, M, log, gpu, force_peel, kw)
            seen.add((want, kw["PEEL"], kw["BLOCK_N"]))
    assert {(True, True, 128), (True, True, 256), (False, True, 64), (False, True, 512)} <= seen, seen
    for log, gpu in itertools.product((False, True), ("H200", "")):
        for N in (130, 150):  # even, peeled on large grids
            (one,) = _short_plans(1048576, N, True, gpu, "bfloat16", log)
            assert one.kwargs["PEEL"] and one.kwargs["OFFS32"] and one.kwargs["SAME_STRIDES"], (N, one.kwargs)
        (far,) = _short_plans(65536, 131, True, gpu, "bfloat16", log, stride=40000)
        assert far.kwargs["PEEL"] and not far.kwargs["OFFS32"] and "SAME_STRIDES" not in far.kwargs, far.kwargs
        (near,) = _short_plans(16384, 131, True, gpu, "bfloat16", log, stride=40000)
        assert near.kwargs["OFFS32"] and near.kwargs["SAME_STRIDES"]  # 16384 rows 40000 apart fit in 32 bits
        for dtype in ("bfloat16", "float16", "float32"):
            assert "SAME_STRIDES" not in _short_plans(65536, 131, False, gpu, dtype, log)[0].kwargs
        assert "SAME_STRIDES" not in _short_plans(65536, 131, True, gpu, "float32", log)[0].kwargs


@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
def test_rows_fwd16_same_run(torch_device, log):
    """The H200's peeled 16-bit forward with ROWS_FWD16_SAME_LANES' OFFS32 and SAME_STRIDES (bf16 rows of 77 and 131
    values in 128 lanes, 201 in 256, contiguous and 5 values past each row; float16 255) on x with a NaN, a +inf, an
    all -inf row and the dtype's largest value: y right against float64, x not modified; and the same launch with both
    off: the same values, bit for bit."""
    for M, N, stride, dtype in ((64, 77, 77, "bfloat16"), (40, 131, 136, "bfloat16"), (16, 201, 201, "bfloat16"),
                                (16, 255, 260, "float16")):
        (one,) = dispatch.plan_forward(M, N, stride, stride, dtype, log, 4, gpu="H200")
        assert one.kwargs["PEEL"] and one.kwargs["OFFS32"] and one.kwargs["SAME_STRIDES"], (M, N, one.kwargs)
        what = f"H200 fwd16 same {(M, N, stride, dtype)} log={log} {dict(one.kwargs)}"
        x, y = _check_rows_launch(one, M, N, dtype, log, True, torch_device, 3 * M + N, what, stride)
        off = (dataclasses.replace(one, meta=tuple(dict(one.kwargs, OFFS32=False, SAME_STRIDES=False).items())),)
        y_off = _run(off, {"x": x}, dtype, torch_device, (M, stride))[:, :N]
        assert torch.equal(y.isnan(), y_off.isnan()) and torch.equal(y.nan_to_num(), y_off.nan_to_num()), what


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
def test_rows_peel16_run(torch_device, dtype, log):
    """The H200's peeled unaligned 16-bit rows (ROWS_PEEL16: odd N in 16-2048 lanes both ways at 1 warp, 16 rows a
    program in 16 and 32 lanes, 8 in 64 and 128, 4 in 256, 2 in 512, one from 1024; the backward in 2048 at 2 warps;
    even N forward in 256 lanes; rows with a tail alike, ROWS_PEEL16_TAILS), planned for 4 SMs so that 128 rows fill the
    rule's grid (and 64 rows, a smaller grid, one row a program at 1 warp, 4 in 16 and 32 lanes:
    ROWS_PEEL16_SMALL_LANES, ROWS_PEEL16_SMALL_M), and its rows with a tail whole, the even ones at 16 rows (34, 66:
    ROWS_WHOLE16_TAILS), the odd at 32 (17, 33 forward), and the odd backward of 25-31 values whole at ROWS_PEEL16's
    tiling (27, 29: ROWS_PEEL16_WHOLE_FILL) and of 5-15 values at ROWS_ODD16_TILINGS' (7, 13), on x with a NaN, a +inf,
    an all -inf row and the dtype's largest value: y and dx right against float64, inputs not modified."""
    for M, N, forward in ((128, 193, True), (128, 385, True), (128, 781, True), (128, 1201, True), (128, 255, False),
                          (128, 781, False), (128, 1101, False), (128, 254, True), (128, 190, True), (128, 41, True),
                          (128, 77, False), (128, 65, True), (128, 521, False), (128, 257, True), (64, 99, True),
                          (64, 449, False), (128, 19, True), (128, 37, False), (128, 17, True), (128, 33, False),
                          (64, 25, True), (64, 39, False), (128, 34, True), (128, 66, False), (128, 33, True),
                          (128, 27, False), (64, 29, False), (128, 13, False), (128, 7, False)):
        (one,) = (dispatch.plan_forward(M, N, N, N, dtype, log, 4, gpu="H200") if forward
                  else dispatch.plan_backward(M, N, N, N, N, dtype, log, 4, gpu="H200"))
        assert one.kernel == ("softmax_fwd_rows" if forward else "softmax_bwd_rows"), N
        whole = N in (34, 66, 17, 13, 7) or (N, forward) in ((33, True), (27, False), (29, False))
        assert one.kwargs["PEEL"] == (not whole), N
        tiling = (one.kwargs["BLOCK_M"], one.kwargs["num_warps"])
        at_32 = N in (17, 13) or (N, forward) == (33, True)  # odd rows with a tail, 9-15 values: 32 rows
        block_m = 64 if N < 8 else 32 if at_32 else 16  # (5-15 values: ROWS_ODD16_TILINGS)
        assert tiling == (block_m, 1) if M == 128 and N < 40 else M == 128 or tiling == (4 if N < 40 else 1, 1), (M, N)
        _check_rows_launch(one, M, N, dtype, log, forward, torch_device, 61 + N,
                           f"H200 peeled {(M, N)} fwd={forward} log={log} {dict(one.kwargs)}")


def test_columns_tiling_rule():
    """Runs of 16 values or more (a 64-byte run of float32), columns of N <= 1024 held whole in 4096
    values (BLOCK_N <= 64) or 8192 at 4 warps, more warps past 64 values a thread; longer columns
    looped in 128-byte runs; BLOCK_T halved (not below 16) to keep 4 programs an SM. 16-bit tiles of
    BLOCK_N <= 128 (the backward's: <= 32) give a thread 64 values at 1 warp (BLOCK_N <= 32) or 2;
    wider 16-bit forward tiles give a thread 16 values at least."""
    tiling = dispatch._columns_tiling
    assert tiling(16, 21, 262144, 2, 132) == (32, 64, True, 1)       # bf16: one warp, no shared memory
    assert tiling(16, 21, 262144, 2, 132, forward=False) == (32, 64, True, 1)
    assert tiling(1024, 8, 2048, 2, 132) == (8, 256, True, 1)
    assert tiling(1024, 64, 2048, 2, 132) == (64, 64, True, 2)
    assert tiling(1024, 64, 2048, 2, 132, forward=False) == (64, 64, True, 4)
    assert tiling(1024, 100, 2048, 2, 132) == (128, 32, True, 2)
    assert tiling(8, 150, 65536, 2, 132) == (256, 32, True, 4)       # BLOCK_N 256: the rule for all dtypes
    assert tiling(65536, 256, 4, 2, 132) == (256, 4, True, 2)        # ... but 16 values a thread at least
    assert tiling(65536, 256, 4, 2, 132, forward=False) == (256, 4, True, 4)
    assert tiling(65536, 256, 4, 4, 132) == (256, 4, True, 4)
    assert tiling(32, 1000, 196, 2, 132) == tiling(32, 1000, 196, 2, 132, forward=False) == (1024, 16, True, 8)
    assert tiling(1, 21, 4096, 2, 132) == (32, 16, True, 1)          # 64 columns halved for the grid
    assert tiling(16, 21, 262144, 4, 132) == (32, 128, True, 4)      # segmentation logits over C
    assert tiling(8, 150, 65536, 4, 132) == (256, 32, True, 4)
    assert tiling(32, 1000, 196, 2, 132) == (1024, 16, True, 8)      # N = 1000 held, 16-value runs
    assert tiling(64, 4096, 64, 4, 132) == (256, 16, False, 4)       # looped; 32-value runs halved for the grid
    assert tiling(4096, 4096, 64, 4, 132) == (128, 32, False, 4)     # enough programs: 128-byte runs
    assert tiling(7, 5, 3, 4, 132) == (8, 4, True, 4)                # T below a run: the whole of T
    assert tiling(64, 4096, 64, 4, 132, forward=False) == (128, 32, False, 8)  # the looped backward
    assert tiling(32, 1000, 196, 4, 132, forward=False) == tiling(32, 1000, 196, 4, 132)
    BLOCK_N, BLOCK_T, one, _ = tiling(1, 8192, 8192, 2, 132)
    assert not one and BLOCK_T == 16 and BLOCK_N == 256  # 512 programs: as many as 16-value runs allow


def test_where_rule():
    """plan_where: the where kernels for rows up to WHERE_MAX_N values forward, WHERE_BWD_MAX_N
    backward (float64: MAX_ROWS_BLOCK_N), in vectors of 16 bytes (fewer values for shorter rows);
    longer rows cooperative, in chunks of WHERE_COOP_FWD_TILINGS / _BWD_TILINGS (float64, and rows
    none fits: WHERE_COOP_CHUNK_N's), through TAG up to COOP_TAG_MAX_CHUNKS chunks (float32
    partials), else on counters, up to num_sms chunks; no plan for the softmax backward of those rows
    (the unmasked one serves); rows not 16-byte aligned peeled (PEEL; W_PEEL where their mask rows are
    too). The rows kernels' EVEN and FTZ."""
    def plan(N, dtype="bfloat16", forward=True, log=False, num_sms=132):
        return dispatch.plan_where(64, N, dtype, log, forward, 1, 1, False, True, num_sms)

    assert plan(2048)[0].kwargs["VEC"] == 8 and plan(2048, "float32")[0].kwargs["VEC"] == 4
    assert plan(2, "float64")[0].kwargs["VEC"] == 2 and plan(1)[0].kwargs["VEC"] == 1
    assert plan(32000)[0].kwargs["num_warps"] == 32
    assert plan(dispatch.WHERE_BWD_MAX_N, forward=False)[0].kernel == "softmax_bwd_rows_where"
    assert plan(1000)[0].kwargs["BLOCK_N"] == 1024 and plan(1000)[0].kwargs["ALIGN"] == 8
    FWD, BWD, PEEL_BWD32, PACK = dispatch.WHERE_COOP_FWD_TILINGS, dispatch.WHERE_COOP_BWD_TILINGS, \
        dispatch.WHERE_COOP_PEEL_BWD32_TILINGS, dispatch.WHERE_COOP_PACK_TILINGS
    assert dispatch.COOP_TAG_MAX_CHUNKS == 32
    # N, dtype, forward, log, TAG, (CHUNK_N, num_warps, maxnreg): the first tiling whose chunks are at most
    # COOP_TAG_MAX_CHUNKS, else the last that fits the SMs; float64 in WHERE_COOP_CHUNK_N's; the 16-bit
    # forward of rows of whole words (here: their mask rows are not, when peeled) packed, PACK's tilings
    for N, dtype, forward, log, tag, tiling in [
            (dispatch.WHERE_MAX_N + 8, "bfloat16", True, False, True, PACK[0]),
            (8192 * 32 + 8, "bfloat16", True, False, False, PACK[-1]),  # past TAG's chunks
            (dispatch.WHERE_MAX_N + 1, "bfloat16", True, True, True, FWD[2][0]),  # peeled
            (dispatch.WHERE_MAX_N + 2, "float32", True, True, True, FWD[4][0]),
            (4096 * 32 + 9, "bfloat16", True, True, True, FWD[2][1]),
            (8192 * 32 + 1, "float32", True, True, False, FWD[4][1]),  # past TAG's chunks with either
            (8193, "float64", True, True, False, (dispatch.WHERE_COOP_CHUNK_N[8], dispatch.WHERE_COOP_WARPS, None)),
            (dispatch.WHERE_BWD_MAX_N + 8, "bfloat16", False, True, True, BWD[2][0]),
            (2048 * 132 + 1, "bfloat16", False, True, False, BWD[2][1]),  # 2048 values: more chunks than SMs
            (dispatch.WHERE_BWD_MAX_N + 4, "float32", False, True, True, BWD[4][0]),
            (50257, "float32", False, True, True, PEEL_BWD32[0]),  # float32's peeled backward
            (2048 * 32 + 1, "float32", False, True, True, PEEL_BWD32[1])]:
        launches = plan(N, dtype, forward, log)  # one, or PHASE 1 and 2 under the interpreter
        one = launches[-1]
        assert len(launches) == (2 if dispatch.kernels.INTERPRETED else 1)
        meta = dict(one.kwargs)
        assert one.kernel == ("softmax_fwd_coop_where" if forward else "softmax_bwd_coop_where"), (N, dtype)
        assert (meta["CHUNK_N"], meta["num_warps"], meta.get("maxnreg")) == tiling, (N, dtype, forward, meta)
        assert meta["TAG"] == tag and dispatch.cooperative((one,)), (N, dtype, forward, meta)
        assert one.grid == (64 * triton.cdiv(N, meta["CHUNK_N"]),) and meta["TICKET"]
        assert meta["PEEL"] == (N % (16 // dispatch.ITEMSIZE[dtype]) != 0) and not meta["W_PEEL"]
        assert meta.get("PACK", False) == (forward and dtype == "bfloat16" and not meta["PEEL"]), (N, meta)
    # no register cap where the launcher cannot pass one: the forward in WHERE_COOP_CHUNK_N's chunks uncapped;
    # rows whose chunks outnumber the SMs in every tiling: WHERE_COOP_CHUNK_N's
    chunk = dispatch.WHERE_COOP_CHUNK_N[2]
    for N, dtype, forward, register_cap in [(dispatch.WHERE_MAX_N + 1, "bfloat16", True, False),
                                            (4096 * 132 + 8, "float32", False, True)]:
        meta = dict(dispatch.plan_where(64, N, dtype, True, forward, 1, 1, False, True, 132, register_cap)[-1].kwargs)
        assert "maxnreg" not in meta, meta
        assert (meta["CHUNK_N"], meta["num_warps"]) == (chunk, dispatch.WHERE_COOP_WARPS), meta
    assert plan(dispatch.WHERE_BWD_MAX_N + 1, forward=False) is None  # the softmax backward
    assert plan(chunk * 132) and plan(chunk * 132 + 1) is None and plan(chunk * 16 + 1, num_sms=16) is None
    # W_PEEL: each row's mask row as far from a 16-byte boundary as its x row
    w_peel = {view: dict(dispatch.plan_where(64, 50257, "bfloat16", True, True, *view, 132)[-1].kwargs)["W_PEEL"]
              for view in [(1, 64, False, True), (1, 8, False, True), (1, 7, False, True), (2, 32, False, True),
                           (1, 1, True, True), (1, 64, False, False)]}
    assert list(w_peel.values()) == [True, True, False, False, False, False], w_peel

    # EVEN: rows that fill their tiles exactly, but the backward under a register cap; FTZ: the
    # 16-bit forward, compiled
    def flags(M, N, dtype="bfloat16", forward=True, log=False):
        kw = dict(dispatch.plan_where(M, N, dtype, log, forward, 1, 1, False, True, 132)[0].kwargs)
        return kw["EVEN"], kw.get("FTZ"), kw.get("maxnreg")

    compiled = not dispatch.kernels.INTERPRETED
    assert flags(64, 2048) == (True, compiled, 64) and flags(64, 2000)[0] is False
    assert flags(64 * 8 + 3, 128)[0] is False and flags(64 * 8, 128)[0] is True  # 8 rows a program
    assert flags(64, 2048, "float32") == (True, False, None)
    assert flags(64, 1024, forward=False) == (True, None, None)
    assert flags(64, dispatch.WHERE_BWD16_LOG_LANES, forward=False, log=True) == (False, None,
                                                                                 dispatch.WHERE_BWD16_LOG_MAXNREG)


def test_where_tiling_rule():
    """plan_where's rows tiles (dispatch._where_tiling): forward programs of at least
    WHERE_FWD_MIN_BYTES of x and a warp's worth, WHERE_FWD_THREAD_BYTES a thread (16-bit under
    WHERE_FWD_MAXNREG), at most WHERE_FWD_MAX_WARPS warps; backward programs of at least
    WHERE_BWD_MIN_N values, WHERE_BWD_VALUES a thread on at most WHERE_BWD_MAX_WARPS warps, the 16-bit
    log_softmax from WHERE_BWD16_LOG_LANES lanes WHERE_BWD16_LOG_VALUES under WHERE_BWD16_LOG_MAXNREG,
    the 16-bit softmax up to WHERE_BWD16_SM_MAX_LANES WHERE_BWD16_SM_VALUES (half the warps); no cap where
    the launcher cannot pass one nor at 32 warps (WHERE_SM_REGISTERS); float32 forward rows of
    WHERE_FWD32_EVERY_LANES lanes read by every vector (SKIP off); float64 tiled as the rows family."""
    def tile(M, N, dtype, forward=True, log=False, register_cap=True):
        (launch,) = dispatch.plan_where(M, N, dtype, log, forward, 1, 1, False, True, 132, register_cap)
        kw = launch.kwargs
        assert launch.grid == (triton.cdiv(M, kw["BLOCK_M"]),)
        return kw["BLOCK_M"], kw["num_warps"], kw["SKIP"], kw.get("maxnreg")

    M = 1 << 20
    expected = {  # N: (16-bit forward, float32 forward, backward of either) as (BLOCK_M, num_warps)
        100: ((8, 1), (2, 1), (4, 2)), 128: ((8, 1), (2, 1), (4, 2)), 256: ((4, 1), (1, 1), (2, 2)),
        512: ((2, 1), (1, 2), (1, 2)), 1000: ((1, 1), (1, 4), (1, 4)), 2048: ((1, 2), (1, 8), (1, 8)),
        4096: ((1, 4), (1, 16), (1, 16)), 8192: ((1, 8), (1, 32), (1, 32)), 16384: ((1, 16), (1, 32), (1, 32)),
        32768: ((1, 32), (1, 32), None)}
    for N, (b16, f32, bwd) in expected.items():
        for log in (False, True):
            for dtype in ("bfloat16", "float16"):  # capped, but at 32 warps (the SM's registers cap those)
                assert tile(M, N, dtype, log=log) == (*b16, True, None if b16[1] == 32 else 64), (N, dtype)
                # without a cap: the same tiles
                assert tile(M, N, dtype, log=log, register_cap=False) == (*b16, True, None), (N, dtype)
            assert tile(M, N, "float32", log=log) == (*f32, N < dispatch.WHERE_FWD32_EVERY_LANES, None), N
            if bwd is None:
                continue
            assert tile(M, N, "float32", False, log) == (*bwd, True, None), N
            wide = log and N >= dispatch.WHERE_BWD16_LOG_LANES  # 32 values a thread under the cap
            # the 16-bit softmax: 16 values a thread, half the warps (a program still 512 values)
            bwd16 = (bwd[0], max(1, bwd[1] // 2)) if not log and N <= dispatch.WHERE_BWD16_SM_MAX_LANES else bwd
            for dtype in ("bfloat16", "float16"):
                assert tile(M, N, dtype, False, log) == ((1, 16, True, 64) if wide else (*bwd16, True, None)), N
                assert tile(M, N, dtype, False, log, register_cap=False) == (*bwd16, True, None), N
    assert dispatch.WHERE_FWD32_EVERY_LANES == 16384 and dispatch.WHERE_BWD16_LOG_LANES == dispatch.WHERE_BWD_MAX_N
    assert tile(M, 8193, "float16", False, True) == (1, 16, True, 64)
    assert tile(M, 8193, "float16", False, False) == (1, 32, True, None)  # past WHERE_BWD16_SM_MAX_LANES
    assert dispatch.WHERE_BWD16_SM_VALUES == 2 * dispatch.WHERE_BWD_VALUES
    # the forward's programs: at least WHERE_FWD_MIN_BYTES and a warp of WHERE_FWD_THREAD_BYTES
    # threads (32 values a thread in 16-bit, 8 in float32)
    for N in (128, 256, 1024):
        for dtype, values in (("bfloat16", 32), ("float32", 8)):
            block_m, warps, _, _ = tile(M, N, dtype)
            assert block_m * N * dispatch.ITEMSIZE[dtype] >= dispatch.WHERE_FWD_MIN_BYTES
            assert block_m * N == values * 32 * warps, (N, dtype)
    # few rows: BLOCK_M no more than the rows (a power of two), the warps those rows fill
    assert tile(3, 100, "bfloat16") == (4, 1, True, 64) and tile(1, 100, "bfloat16") == (1, 1, True, 64)
    assert tile(2, 100, "float32", False) == (2, 1, True, None)
    assert tile(2, 100, "bfloat16", False) == (2, 1, True, None)
    assert tile(M, 64, "bfloat16", False) == (8, 1, True, None)
    # float64: the rows family's tiles
    for N, forward in ((128, True), (1024, False)):
        lanes = triton.next_power_of_2(N)
        block_m, _, _, warps, _ = dispatch._rows_tiling(M, lanes, forward, itemsize=8, aligned=False, where=True)
        assert tile(M, N, "float64", forward) == (block_m, warps, True, None), N


class _ModuleLauncher:
    """Stands for Triton 3.6's CudaLauncher: a Python wrapper that asks for scratch memory and
    calls the C module's `launch`, which here records what it was given."""

    def __init__(self, global_scratch_size=0, profile_scratch_size=0):
        self.global_scratch_size, self.profile_scratch_size = global_scratch_size, profile_scratch_size
        self.launch_cooperative_grid, self.launch_pdl = True, False
        self.calls = []
        self.launch = lambda *args: self.calls.append(args)

    def __call__(self, gridX, gridY, gridZ, stream, function, *args):
        scratch = "scratch" if self.global_scratch_size else None
        self.launch(gridX, gridY, gridZ, stream, function, self.launch_cooperative_grid, self.launch_pdl,
                    scratch, None, *args)


class _OtherLauncher(_ModuleLauncher):
    """A launcher of another form (as in later Triton releases): always called as `run`."""

    def __call__(self, gridX, gridY, gridZ, stream, function, kernel_metadata, launch_metadata, enter_hook,
                 exit_hook, *args):
        self.calls.append(("run", gridX, gridY, gridZ, stream, function, kernel_metadata, *args))


class _Compiled:
    def __init__(self, run):
        self.run, self.function, self.packed_metadata = run, 1234, (4, 1, 0)


@pytest.mark.parametrize("run", [_ModuleLauncher(), _OtherLauncher()])
def test_launcher_passes_a_launch_s_own_shared_memory(run):
    """launch._launcher with `packed` (occupancy.fill_shared's bytes): the launch gets that
    (num_warps, num_ctas, shared memory) where Triton's launcher would pass the kernel's own."""
    compiled = _Compiled(run)
    call, head = launch._launcher(compiled, (4, 1, 13568))
    args = (7, 8, 9, 0xABC, 0xDEF, 32, 1024)
    call(*args[:4], *head, *args[4:])
    run(*args[:4], compiled.function, (4, 1, 13568), None, None, None, *args[4:])
    assert len(run.calls) == 2 and run.calls[0] == run.calls[1] and (4, 1, 13568) in run.calls[0]


H100_LIMITS = occupancy.Limits(shared=233472, registers=65536, threads=2048, programs=32, reserved=1024)


def test_occupancy_arithmetic():
    """occupancy.programs_per_sm on the H100's limits, bound by threads, registers (a warp's in units
    of 256), programs and shared memory; fill_shared asks for the SM's shared memory over that count
    less 1 KB a program, so that the SM still holds as many (at most 48 KB: then fewer), never less
    than the kernel's own, and the kernel's own where the limits are unknown (no driver)."""
    lim = H100_LIMITS
    assert occupancy.programs_per_sm(32, 4, 0, lim) == 16  # 2048 threads
    assert occupancy.programs_per_sm(35, 4, 0, lim) == 12  # 40 registers a thread: 1280 a warp, 51 warps
    assert occupancy.programs_per_sm(45, 4, 0, lim) == 10
    assert occupancy.programs_per_sm(64, 8, 0, lim) == 4
    assert occupancy.programs_per_sm(16, 1, 0, lim) == 32  # the programs an SM
    assert occupancy.programs_per_sm(32, 4, 20000, lim) == 11  # 233472 // 21024
    assert occupancy.fill_shared(32, 4, 0, lim) == 233472 // 16 - 1024 == 13568
    assert occupancy.fill_shared(45, 4, 32, lim) == 233472 // 10 - 1024
    assert occupancy.fill_shared(64, 8, 0, lim) == occupancy.DEFAULT_MAX_SHARED
    assert occupancy.fill_shared(32, 4, 60000, lim) == 60000
    assert occupancy.fill_shared(32, 4, 100, None) == 100
    for regs in (16, 24, 32, 35, 40, 48, 56, 64, 80, 96, 128, 255):
        for warps in (1, 2, 4, 8, 16, 32):
            k = occupancy.programs_per_sm(regs, warps, 0, lim)
            filled = occupancy.fill_shared(regs, warps, 0, lim)
            if filled < occupancy.DEFAULT_MAX_SHARED:  # the SM holds as many, and no more would fit
                assert occupancy.programs_per_sm(regs, warps, filled, lim) == k, (regs, warps)
                assert (k + 1) * (filled + lim.reserved) > lim.shared, (regs, warps)
    got = occupancy.limits(0)
    assert got is None or got.reserved >= 0  # None without a driver (CI)


def test_rows_bwd32_wide_rule():
    """dispatch.ROWS_BWD32_WIDE_LANES: the float32 backward of unpeeled rows in 2048 lanes (N = 1025 ... 2048)
    runs one row a program at ROWS_BWD32_WIDE_WARPS warps, both ops; not the forward, float64 rows (16-bit
    ones have their own rule, ROWS_BWD16_WIDE_LANES), peeled rows or rows with a tail, nor other lanes."""
    def tiling(N, dtype="float32", forward=False, log=False, M=4096):
        plan = (dispatch.plan_forward(M, N, N, N, dtype, log, 132) if forward
                else dispatch.plan_backward(M, N, N, N, N, dtype, log, 132))
        (one,) = plan
        return one.kernel, one.kwargs["BLOCK_M"], one.kwargs["num_warps"]
    for N in (1152, 1536, 2000, 2048):
        for log in (False, True):
            assert tiling(N, log=log) == ("softmax_bwd_rows", 1, dispatch.ROWS_BWD32_WIDE_WARPS), (N, log)
    assert tiling(2048, M=1) == ("softmax_bwd_rows", 1, dispatch.ROWS_BWD32_WIDE_WARPS)
    assert tiling(2048, forward=True) == ("softmax_fwd_rows", 1, 4)
    assert tiling(2048, "bfloat16") == ("softmax_bwd_rows", 1, dispatch.ROWS_BWD16_WIDE_WARPS)  # its own rule
    assert tiling(1152, "bfloat16") == ("softmax_bwd_rows", 1, 4) and tiling(2048, "float64")[2] == 4
    assert tiling(2049)[2] == 4 and tiling(1025)[2] == 4  # a tail / peeled
    assert tiling(1024) == ("softmax_bwd_rows", 1, 8) and tiling(4096) == ("softmax_bwd_rows", 1, 8)


def test_rows_bwd16_wide_rule(tables16_before):
    """dispatch.ROWS_BWD16_WIDE_LANES: the 16-bit backward of aligned, unpeeled rows in 2048 lanes (no tail)
    that fill at least ROWS_BWD_ONE_ROW_FILL of them (N = 1536 ... 2048) runs one row a program at
    ROWS_BWD16_WIDE_WARPS warps, both ops, at any M; not shorter rows there, rows that start unaligned,
    the forward, float32's (ROWS_BWD32_WIDE_LANES) or the where kernels' rows."""
    def tiling(N, dtype="bfloat16", forward=False, log=False, M=65536):
        plan = (dispatch.plan_forward(M, N, N, N, dtype, log, 132) if forward
                else dispatch.plan_backward(M, N, N, N, N, dtype, log, 132))
        (one,) = plan
        return one.kernel, one.kwargs["BLOCK_M"], one.kwargs["num_warps"]
    for dtype in ("bfloat16", "float16"):
        for N in (1536, 2000, 2048):
            for log in (False, True):
                for M in (65536, 4096, 1):
                    assert tiling(N, dtype, log=log, M=M) == ("softmax_bwd_rows", 1, dispatch.ROWS_BWD16_WIDE_WARPS)
        assert tiling(1152, dtype)[1:] == (1, 4) and tiling(1535, dtype)[1:] == (1, 4)  # below 3/4 of the lanes
        assert tiling(2001, dtype)[1:] == (1, 4)  # rows that start unaligned
        assert tiling(2048, dtype, forward=True)[1:] == (1, 4)
    assert dispatch.ROWS_BWD16_WIDE_LANES == 2048 and dispatch.ROWS_BWD16_WIDE_WARPS == 8
    assert dispatch._rows_tiling(4096, 2048, False, itemsize=2, aligned=False, where=True)[3] == 4


def test_rows_bwd_one_row_rule(tables16_before):
    """dispatch.ROWS_BWD_ONE_ROW_WARPS: the backward of unpeeled rows without a tail in float32's 512 and 1024
    lanes (rows that start aligned) and 16-bit's 1024 (aligned or not) runs one row a program at 4, 8 and 4
    warps, both ops, at any M; filled (fills_shared) where the row is whole 128-byte lines filling at least
    ROWS_BWD_ONE_ROW_FILL of its lanes. Not the forward, float64 rows, rows with a tail or peeled, the where
    kernels' rows, nor float32's 256 lanes (ROWS_BWD_1KB_N)."""
    def launch(N, dtype="float32", forward=False, log=False, M=65536, stride=None):
        s = stride or N
        plan = (dispatch.plan_forward(M, N, s, s, dtype, log, 132) if forward
                else dispatch.plan_backward(M, N, s, s, s, dtype, log, 132))
        (one,) = plan
        return one
    def tiling(*args, **kw):
        one = launch(*args, **kw)
        return one.kernel, one.kwargs["BLOCK_M"], one.kwargs["num_warps"], one.kwargs["TAIL_N"]
    assert dispatch.ROWS_BWD_ONE_ROW_WARPS == {4: {512: 4, 1024: 8}, 2: {1024: 4}}
    cases = [("float32", N, lanes) for N, lanes in ((288, 512), (300, 512), (384, 512), (512, 512), (560, 1024),
                                                    (600, 1024), (768, 1024), (1000, 1024), (1024, 1024))]
    cases += [(dtype, N, 1024) for dtype in ("bfloat16", "float16") for N in (560, 600, 781, 1000, 1001, 1024)]
    for dtype, N, lanes in cases:
        for log in (False, True):
            for M in (65536, 4096, 3):
                want = ("softmax_bwd_rows", 1, dispatch.ROWS_BWD_ONE_ROW_WARPS[{"float32": 4}.get(dtype, 2)][lanes], 0)
                assert tiling(N, dtype, log=log, M=M) == want, (dtype, N, log, M)
    fills = {N: dispatch.fills_shared(launch(N)) for N in (288, 300, 352, 384, 448, 512, 600, 640, 704, 768, 800,
                                                           896, 1000, 1024)}
    assert fills == {288: False, 300: False, 352: False, 384: True, 448: True, 512: True, 600: False, 640: False,
                     704: False, 768: True, 800: True, 896: True, 1000: False, 1024: True}, fills
    fills16 = {N: dispatch.fills_shared(launch(N, "bfloat16")) for N in (560, 600, 640, 768, 781, 1000, 1024)}
    assert fills16 == {560: False, 600: False, 640: False, 768: True, 781: False, 1000: False, 1024: True}, fills16
    assert tiling(520)[1:] == (2, 4, 8) and tiling(544)[1:] == (2, 4, 32)  # 512 + a tail
    assert tiling(1040, "bfloat16", log=True)[3] == 16  # 1024 + a tail: not one row's rule
    assert tiling(1024, forward=True)[:3] == ("softmax_fwd_rows", 2, 4)
    assert tiling(1024, "bfloat16", forward=True)[:3] == ("softmax_fwd_rows", 1, 4)  # ROWS_FWD_ONE_ROW_N
    assert tiling(512, "bfloat16")[1:3] == (1, 4)  # ROWS_BWD_1KB_N
    assert tiling(1024, "float64")[1:3] != (1, 8)
    assert tiling(781)[1:3] == (2, 4) and launch(781).kwargs["PEEL"]  # float32 781: peeled
    assert tiling(512, stride=513)[1:3] == (4, 4)  # float32 rows that start unaligned, peeled
    (one,) = dispatch.plan_backward(65536, 512, 513, 512, 512, "float32", False, 132)  # unaligned, not peeled
    assert not one.kwargs["PEEL"] and (one.kwargs["BLOCK_M"], one.kwargs["num_warps"]) == (4, 4)
    assert tiling(256)[1:3] == (1, 4) and not dispatch.fills_shared(launch(256))  # ROWS_BWD_1KB_N
    # the where kernels' rows keep their tiling (ROWS_LOG_BWD16_DOUBLE_LANES's 4 rows)
    assert dispatch._rows_tiling(4096, 1024, False, log=True, itemsize=2, aligned=False, where=True)[0] == 4
    assert dispatch._rows_tiling(4096, 1024, False, log=True, itemsize=2, aligned=False)[0] == 1


# N of a case for each ROWS_TILINGS key's (itemsize, lanes, filled): the lanes themselves where filled, else a
# length in those lanes (float32 781: peeled; 16-bit 384, 1000, 1536 and 3000: not filled, aligned; not 16-bit 781,
# which the H200 peels at this test's 65536 rows, ROWS_PEEL16; not the benchmark's 1152, whose forward the H200 now
# runs as 1024 + 128, ROWS_FWD_TAILS).
_TUNED_N = {(2, 512, False): 384, (2, 1024, False): 1000, (2, 2048, False): 1536, (2, 4096, False): 3000,
            (4, 1024, False): 781, (4, 2048, False): 1536, (4, 16384, False): 12288}


def _tuned_plan(key, M, gpu="H200"):
    """(N, dtype, plan) of M rows for a dispatch.ROWS_TILINGS key, planned for `gpu` on 132 SMs."""
    forward, itemsize, log, lanes, filled = key
    N, dtype = (lanes if filled else _TUNED_N[itemsize, lanes, filled]), {2: "bfloat16", 4: "float32"}[itemsize]
    plan = (dispatch.plan_forward(M, N, N, N, dtype, log, 132, gpu=gpu) if forward
            else dispatch.plan_backward(M, N, N, N, N, dtype, log, 132, gpu=gpu))
    return N, dtype, plan


def test_rows_tilings_rule():
    """dispatch.ROWS_TILINGS: on a GPU whose name holds a key as a word (tuned_gpu), each entry's rows take its
    tiling (BLOCK_M at most M, rounded to a power of two) where the H100's rules tile them otherwise, and RELOAD
    where the entry has a third value, True (the rules' plans leave it out), every other constexpr as the rules
    have it but EVEN_M / ALIGN_M (of BLOCK_M); other names keep the rules, and so do the where kernels' rows."""
    assert dispatch.tuned_gpu("NVIDIA H200") == dispatch.tuned_gpu("NVIDIA H200 NVL") == "H200"
    assert dispatch.tuned_gpu("NVIDIA H100 80GB HBM3") == dispatch.tuned_gpu("NVIDIA GH200 480GB") == ""
    for key, (block_m, warps, *reload) in dispatch.ROWS_TILINGS["H200"].items():
        forward, itemsize, log, lanes, filled = key
        N, dtype, (tuned,) = _tuned_plan(key, 65536)
        kw = tuned.kwargs
        assert tuned.kernel == ("softmax_fwd_rows" if forward else "softmax_bwd_rows"), key
        assert kw["BLOCK_N"] + (0 if kw["PEEL"] else kw["TAIL_N"]) == lanes
        assert kw["PEEL"] == (itemsize == 4 and N == 781)
        assert (kw["BLOCK_M"], kw["num_warps"], tuned.grid) == (block_m, warps, (65536 // block_m,)), key
        (rules,) = _tuned_plan(key, 65536, gpu="")[2]
        assert (rules.kwargs["BLOCK_M"], rules.kwargs["num_warps"]) != (block_m, warps), key
        assert kw.get("RELOAD", False) == bool(reload and reload[0]) and "RELOAD" not in rules.kwargs, key
        same = ("BLOCK_M", "num_warps", "EVEN_M", "ALIGN_M", "RELOAD", "FTZ")  # FTZ: test_rows16_fwd_ftz_rule
        assert ({k: v for k, v in kw.items() if k not in same}
                == {k: v for k, v in rules.kwargs.items() if k not in same}), key
        assert _tuned_plan(key, 65536, gpu="H100")[2] == (rules,)  # a key of no entry: the rules
        assert _tuned_plan(key, 3)[2][0].kwargs["BLOCK_M"] == min(block_m, 4)
        where = dict(forward=forward, log=log, itemsize=itemsize, aligned=True, where=True)
        assert dispatch._rows_tiling(65536, N, **where, gpu="H200") == dispatch._rows_tiling(65536, N, **where)


@pytest.mark.parametrize("key", sorted(dispatch.ROWS_TILINGS["H200"]), ids=lambda k: "-".join(map(str, map(int, k))))
def test_rows_tilings_run(torch_device, key):
    """Each dispatch.ROWS_TILINGS entry's plan is right against float64, at a row count of whole tiles (EVEN_M)
    and at one more row (a part tile)."""
    forward, itemsize, log, lanes, filled = key
    block_m = dispatch.ROWS_TILINGS["H200"][key][0]
    for M in (2 * block_m, 2 * block_m + 1):
        N, dtype, plan = _tuned_plan(key, M)
        _check_rows_plan(plan, forward, log, M, N, dtype, torch_device, f"H200 tiling {key} M={M}")


def _check_rows_plan(plan, forward: bool, log: bool, M: int, N: int, dtype: str, device, what: str):
    """Run a rows plan of M x N on fresh random inputs (x, or y from x and dy; seeded by N + M) and assert y (forward)
    or dx (backward) right against float64."""
    x = _random((M, N), dtype, device, seed=N + M)
    if forward:
        y = _run(plan, {"x": x}, dtype, device, (M, N))
        ref.assert_close(y.double().cpu(), ref.softmax(x.double().cpu().numpy(), log=log), dtype, what)
        return
    y = (torch.log_softmax if log else torch.softmax)(x.double(), -1).to(DTYPES[dtype])
    dy = _random((M, N), dtype, device, seed=N + M + 1)
    dx = _run(plan, {"y": y, "dy": dy}, dtype, device, (M, N))
    expected = ref.softmax_backward(y.double().cpu().numpy(), dy.double().cpu().numpy(), log=log)
    ref.assert_close(dx.double().cpu(), expected, dtype, what, scale_atol=True)


def test_gpu_constants_rule():
    """dispatch.GPU_CONSTANTS: a GPU with a key (tuned_gpu) takes its constants in place of the module's, and no
    other plan changes. The H200's cooperative forwards ramp over its COOP_STAGGER_CYCLES, every other constexpr
    as the H100's rules have it; its float32 and 16-bit softmax backwards that pipe take its PIPE_PLANS' chunks,
    warps and grid; the float32 TAG grids pipe up to the H200's PIPE32_TAG_MAX_PER_SM[log] programs an SM (12, 4),
    past it they keep TAG's cooperative plan under COOP_BWD32_TAG_CAP_REGS (the H100 pipes the softmax's to 16,
    every log_softmax's, uncapped); few long rows (TAG, a grid under PIPE32_MIN_PER_SM) and the rows under
    PIPE32_MIN_CHUNKS chunks keep the H100's plan (capped where their grid is past 2 an SM); other keys keep the
    module's constants."""
    h200 = dispatch.GPU_CONSTANTS["H200"]
    assert dispatch.tuned_gpu("NVIDIA H200") == "H200"
    assert dispatch._tuned("COOP_STAGGER_CYCLES", "") == dispatch.COOP_STAGGER_CYCLES != h200["COOP_STAGGER_CYCLES"]
    assert dispatch._tuned("PIPE_PLANS", "H100") is dispatch.PIPE_PLANS
    assert dispatch._tuned("COOP_STAGGER_CYCLES", "H200") == h200["COOP_STAGGER_CYCLES"]

    def plans(M, N, dtype, log, forward):
        make = (lambda gpu: dispatch.plan_forward(M, N, N, N, dtype, log, 132, gpu=gpu)) if forward else \
            (lambda gpu: dispatch.plan_backward(M, N, N, N, N, dtype, log, 132, gpu=gpu))
        return make(""), make("H200")  # (interpreted: PHASE 1 and 2, alike but PHASE)

    for M, N, dtype in ((128, 1048576, "bfloat16"), (64, 393216, "float32"), (160, 393216, "float32"),
                        (2048, 65536, "bfloat16"), (256, 256000, "float16"), (64, 128256, "float32")):
        for log in (False, True):  # (float32 rows of 64 chunks and more in larger grids pipe: test_pipe_fwd_rule)
            rules, tuned = (p[-1] for p in plans(M, N, dtype, log, True))
            assert tuned.kernel == "softmax_fwd_coop" and rules.kwargs["STAGGER"] == dispatch.COOP_STAGGER_CYCLES
            assert tuned.kwargs["STAGGER"] == h200["COOP_STAGGER_CYCLES"], (M, N, dtype, log)
            assert {**tuned.kwargs, "STAGGER": 0} == {**rules.kwargs, "STAGGER": 0} and tuned.grid == rules.grid
    rules, tuned = (p[-1] for p in plans(8, 1048576, "bfloat16", False, True))  # no ramp: none on the H200 either
    assert rules == tuned and tuned.kwargs["STAGGER"] == 0
    assert dispatch.PIPE32_TAG_MAX_PER_SM == {False: 16, True: float("inf")}
    assert h200["PIPE32_TAG_MAX_PER_SM"] == {False: 12, True: 4}
    for M, N, dtype, log, was_pipe in ((64, 1048576, "float32", False, True), (16, 1048576, "float32", False, True),
                                      (64, 128256, "float32", False, True), (40, 262144, "float32", False, True),
                                      (20, 262144, "float32", False, True), (128, 1048576, "bfloat16", False, True),
                                      (16, 1048576, "float16", False, True), (64, 1048576, "float32", True, True),
                                      (16, 262144, "float32", True, True)):
        rules, tuned = (p[-1] for p in plans(M, N, dtype, log, False))
        assert (rules.kernel == "softmax_bwd_pipe") == was_pipe and tuned.kernel == "softmax_bwd_pipe", (M, N)
        assert not was_pipe or rules.kwargs["CHUNK_N"] == dispatch.PIPE_PLANS[dtype == "float32" and 4 or 2, log][0]
        chunk, warps, per_sm = h200["PIPE_PLANS"][dtype == "float32" and 4 or 2, log]
        assert (tuned.kwargs["CHUNK_N"], tuned.kwargs["num_warps"]) == (chunk, warps), (M, N, dtype)
        assert tuned.grid == (min(M * triton.cdiv(N, chunk), per_sm * 132),), (M, N, dtype)
    for M, N, dtype, log in ((8, 256000, "float32", False), (1, 256000, "float32", False),
                             (512, 262144, "bfloat16", False), (128, 1048576, "bfloat16", True)):
        rules, tuned = plans(M, N, dtype, log, False)
        assert rules == tuned, (M, N, dtype, log)
    for M, N, dtype, log, was_pipe in ((256, 262144, "float32", True, True), (512, 131072, "float32", False, False),
                                      (256, 262144, "float32", False, False), (1024, 65536, "float32", False, False),
                                      (4096, 32000, "float32", True, False), (20, 262144, "float32", True, True),
                                      (80, 262144, "float32", False, False)):
        rules, tuned = (p[-1] for p in plans(M, N, dtype, log, False))  # TAG's cooperative plan, capped
        assert (rules.kernel == "softmax_bwd_pipe") == was_pipe and tuned.kernel == "softmax_bwd_coop", (M, N, log)
        assert tuned.kwargs["TAG"] and tuned.kwargs.get("maxnreg") == (64 if tuned.kwargs["DEFER_Y"] else 80)
        assert was_pipe or {**tuned.kwargs, "maxnreg": 0} == {**rules.kwargs, "maxnreg": 0}, (M, N, log)
    forced = dispatch.plan_backward(4, 1048576, 1048576, 1048576, 1048576, "float32", False, 132, "pipe", gpu="H200")
    assert forced[-1].kwargs["CHUNK_N"] == h200["PIPE_PLANS"][4, False][0]


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_gpu_constants_pipe_run(torch_device, dtype):
    """The H200's PIPE_PLANS (dispatch.GPU_CONSTANTS: 4096-value chunks at 4 warps) forced on 3 rows of 2.5
    chunks (a partial last one), softmax: dx right against float64."""
    M, N = 3, 2 * 4096 + 2048  # 16-byte rows: not peeled
    plan = dispatch.plan_backward(M, N, N, N, N, dtype, False, 132, "pipe", gpu="H200")
    assert plan[-1].kernel == "softmax_bwd_pipe" and plan[-1].kwargs["CHUNK_N"] == 4096
    x = _random((M, N), dtype, torch_device, seed=N)
    y = torch.softmax(x.double(), -1).to(DTYPES[dtype])
    dy = _random((M, N), dtype, torch_device, seed=N + 1)
    dx = _run(plan, {"y": y, "dy": dy}, dtype, torch_device, (M, N))
    expected = ref.softmax_backward(y.double().cpu().numpy(), dy.double().cpu().numpy(), log=False)
    ref.assert_close(dx.double().cpu(), expected, dtype, "H200 pipe", scale_atol=True)


def test_fill_shared_rule():
    """dispatch.fills_shared: rows launches whose rows fill their lanes (N == BLOCK_N, no tail, no
    peel), 16- and 32-bit, or float32 rows of whole 128-byte lines in part of their lanes, of 512 to
    4096 values in tiles of at least 4 KB a tensor, forward and backward; no other launch."""
    def fills(M, N, dtype, forward=True, log=False):
        plan = (dispatch.plan_forward(M, N, N, N, dtype, log, 132) if forward
                else dispatch.plan_backward(M, N, N, N, N, dtype, log, 132))
        return [dispatch.fills_shared(one) for one in plan]
    for dtype in ("bfloat16", "float16", "float32"):
        for N in (2048, 4096):
            for forward in (True, False):
                for log in (False, True):
                    assert fills(65536, N, dtype, forward, log) == [True], (dtype, N, forward, log)
    assert fills(65536, 512, "bfloat16") == [True] and fills(65536, 512, "bfloat16", False) == [False]  # 1 KB tiles
    assert fills(65536, 1024, "bfloat16") == [False] and fills(65536, 1024, "bfloat16", False) == [True]
    assert fills(65536, 512, "float32", False, True) == [True] and fills(32, 1024, "float32") == [True]
    assert fills(65536, 1152, "bfloat16") == [False] and fills(65536, 1536, "float16", False) == [False]  # in part
    for N in (768, 1152, 1280, 1536, 1792, 2304, 2560, 3584):  # float32 rows of whole lines, in part of their lanes
        for forward in (True, False):
            assert fills(256 * 2**20 // (4 * N), N, "float32", forward, N == 1152) == [True], (N, forward)
    for N in (600, 1000, 1100, 2000, 3000, 4095):  # float32 rows of lines in part
        assert fills(65536, N, "float32") == [False] and fills(65536, N, "float32", False, True) == [False], N
    assert fills(65536, 480, "float32") == [False] and fills(1000, 8160, "float32") == [False]  # beyond 512..4096
    assert fills(65536, 781, "float32") == [False] and fills(44739, 3000, "bfloat16") == [False]
    assert fills(65536, 128, "float32", True, True) == [False] and fills(16384, 8192, "bfloat16") == [False]
    assert fills(65536, 2048, "float64") == [False]  # not measured
    assert fills(65536, 2048, "bfloat16", True) == [True] and fills(65536, 2048, "bfloat16", True, True) == [True]
    assert not any(fills(128, 1048576, "bfloat16")) and not any(fills(128, 1048576, "bfloat16", False))


@pytest.mark.parametrize("run,direct", [(_ModuleLauncher(), True), (_ModuleLauncher(global_scratch_size=8), False),
                                        (_ModuleLauncher(profile_scratch_size=8), False), (_OtherLauncher(), False)])
def test_launcher_passes_what_triton_s_launcher_would(run, direct):
    """launch._launcher calls the C launch function itself only where Triton's launcher is the
    wrapper it knows and needs no scratch memory, and then with the arguments that wrapper would
    have passed; otherwise it calls the launcher (`run`) as CompiledKernel does."""
    compiled = _Compiled(run)
    call, head = launch._launcher(compiled)
    assert (call == run.launch) is direct and (call is run) is not direct
    args = (7, 8, 9, 0xABC, 0xDEF, 32, 1024)  # grid, stream, then the kernel's arguments
    call(*args[:4], *head, *args[4:])
    run(*args[:4], compiled.function, compiled.packed_metadata, None, None, None, *args[4:])
    assert len(run.calls) == 2 and run.calls[0] == run.calls[1]


def test_rows_reload_rule():
    """The H200's rows backward that reloads y and dy after the row sum (softmax_bwd_rows' RELOAD): its 16-bit
    softmax backward of 16384-value rows (ROWS_TILINGS' third value: 32 warps) and peeled 16-bit rows in
    ROWS_PEELED16_BWD_RELOAD's lanes (the log_softmax's in 16384 lanes at 32 warps from 0.7 of them,
    ROWS_PEELED16_BWD_WARPS); its peeled 16-bit forward rows past ROWS_PEELED16_FWD_MAX_LANES run
    cooperative. The H100's plans (gpu "") take none of it and leave RELOAD out of the launch; nothing else of the
    plan changes."""
    def bwd(M, N, dtype, log, gpu):
        return dispatch.plan_backward(M, N, N, N, N, dtype, log, 132, gpu=gpu)

    def fwd(M, N, dtype, log, gpu):
        return dispatch.plan_forward(M, N, N, N, dtype, log, 132, gpu=gpu)

    for M, N, dtype, log, warps in ((8192, 16384, "bfloat16", False, 32), (264, 16384, "float16", False, 32),
                                    (8191, 16385, "bfloat16", False, 8), (8191, 16385, "float16", True, 32),
                                    (14913, 9001, "bfloat16", False, 8), (11184, 12001, "float16", True, 32),
                                    (14913, 9001, "bfloat16", True, 16),
                                    (5592, 24001, "bfloat16", False, 8)):
        (rules,), (tuned,) = bwd(M, N, dtype, log, ""), bwd(M, N, dtype, log, "H200")
        assert "RELOAD" not in rules.kwargs and tuned.kwargs["RELOAD"] is True, (M, N, dtype, log)
        assert tuned.kwargs["num_warps"] == warps, (M, N, dtype, log)
        assert {**tuned.kwargs, "RELOAD": 0, "num_warps": 0} == {**rules.kwargs, "RELOAD": 0, "num_warps": 0}
        assert tuned.kwargs["PEEL"] == (N % 8 != 0) and tuned.grid == rules.grid
    for M, N, dtype, log in ((8192, 16384, "bfloat16", True), (4096, 16384, "float32", False),
                             (16384, 8192, "bfloat16", False), (5592, 24001, "bfloat16", True),
                             (4095, 16385, "float32", False), (8192, 16000, "bfloat16", False),
                             (4223, 781, "bfloat16", False)):  # (4224 rows peel: test_rows_peel16_rule)
        assert bwd(M, N, dtype, log, "") == bwd(M, N, dtype, log, "H200"), (M, N, dtype, log)
    for N in (16393, 20001, 24001, 32767):
        for log in (False, True):
            (rules,), tuned = fwd(2048, N, "bfloat16", log, ""), fwd(2048, N, "bfloat16", log, "H200")
            assert rules.kernel == "softmax_fwd_rows" and tuned[-1].kernel == "softmax_fwd_coop", (N, log)
            assert tuned[-1].kwargs["PEEL"] and tuned == dispatch.plan_forward(2048, N, N, N, "bfloat16", log, 132,
                                                                             "coop", gpu="H200")
    for M, N, dtype in ((2048, 16000, "bfloat16"), (2048, 20001, "float32"), (4, 100, "float16"),
                        (8192, 4001, "bfloat16")):  # FTZ aside (ROWS16_FWD_FTZ: test_rows16_fwd_ftz_rule)
        for log in (False, True):
            assert fwd(M, N, dtype, log, "") == without_ftz(fwd(M, N, dtype, log, "H200")), (M, N, dtype, log)


def test_rows_peeled16_forward_rules():
    """The H200's forward of peeled 16-bit rows in 8192 and 16384 lanes: in 16384 lanes at 16 warps
    (ROWS_PEELED16_FWD_WARPS), not the halved rule's 8; cooperative (ROWS_PEELED16_FWD_COOP) from 10 rows an SM
    (log_softmax) and 24 (softmax of rows of at most their lanes, in whole chunks) in 16384 lanes, 32 in 8192. The
    H100's plans (gpu "") are the rows kernel at 8 warps throughout."""
    def fwd(M, N, log, gpu, dtype="bfloat16", force=None):
        return dispatch.plan_forward(M, N, N, N, dtype, log, 132, force, gpu=gpu)

    assert dispatch.ROWS_PEELED16_FWD_WARPS == dispatch.ROWS_PEELED16_FWD_COOP == {}
    for M, N, log, dtype in ((8191, 16385, False, "bfloat16"), (1024, 16385, True, "float16"),
                             (3167, 12289, False, "bfloat16"), (1319, 9001, True, "bfloat16"),
                             (264, 16391, False, "float16")):
        (rules,), (tuned,) = fwd(M, N, log, "", dtype), fwd(M, N, log, "H200", dtype)
        assert rules.kernel == tuned.kernel == "softmax_fwd_rows" and tuned.kwargs["PEEL"], (M, N, log)
        assert (rules.kwargs["num_warps"], tuned.kwargs["num_warps"]) == (8, 16), (M, N, log)
        assert {**tuned.kwargs, "num_warps": 0, "FTZ": 0} == {**rules.kwargs, "num_warps": 0, "FTZ": 0}
        assert tuned.grid == rules.grid and tuned.kwargs["FTZ"]  # ROWS16_FWD_FTZ: test_rows16_fwd_ftz_rule
    for M, N, log in ((8191, 16385, True), (1320, 16385, True), (1584, 9001, True), (4224, 8191, True),
                      (16384, 5001, True), (3168, 12289, False), (14913, 9001, False), (16384, 5001, False),
                      (4224, 7679, False), (8191, 8191, False), (16384, 7681, False), (3168, 16383, False),
                      (8192, 15361, False), (16000, 7999, False)):
        (rules,), tuned = fwd(M, N, log, ""), fwd(M, N, log, "H200")
        assert rules.kernel == "softmax_fwd_rows" and rules.kwargs["num_warps"] == 8, (M, N, log)
        assert tuned == fwd(M, N, log, "H200", force="coop") and tuned[-1].kwargs["PEEL"], (M, N, log)
    for M, N, log in ((16384, 8193, False), (4223, 8191, False), (4223, 7679, False), (65536, 4001, True),
                      (4223, 5001, True)):
        (rules,), (tuned,) = fwd(M, N, log, ""), without_ftz(fwd(M, N, log, "H200"))
        assert tuned == rules and tuned.kwargs["PEEL"], (M, N, log)


@pytest.mark.parametrize("M,N,log,kernel", [(24, 12289, False, "rows"), (64, 12289, False, "coop"),
                                            (24, 12289, True, "coop"), (64, 5001, False, "coop")])
def test_rows_peeled16_forward_rules_run(torch_device, M, N, log, kernel):
    """The H200's peeled 16-bit forward plans (ROWS_PEELED16_FWD_*: rows at 16 warps in 16384 lanes, the
    cooperative plan where there are many rows, here planned for two SMs) on rows that start at every offset of
    a 16-byte vector: y right against float64."""
    dtype = "float16"
    plan = dispatch.plan_forward(M, N, N, N, dtype, log, 2, gpu="H200")
    assert plan[-1].kernel == f"softmax_fwd_{kernel}" and plan[-1].kwargs["PEEL"]
    assert kernel == "coop" or plan[-1].kwargs["num_warps"] == 16
    x = _random((M, N), dtype, torch_device, seed=N + log)
    y = _run(plan, {"x": x}, dtype, torch_device, (M, N))
    ref.assert_close(y.double().cpu(), ref.softmax(x.double().cpu().numpy(), log=log), dtype, "peeled forward")


def _tail_plan(M, N, dtype, log, forward, gpu, strides=None):
    """dispatch's one launch for M rows of N values (`strides`: x's / y's row stride, default N), 132 SMs."""
    s = strides or N
    return (dispatch.plan_forward(M, N, s, s, dtype, log, 132, gpu=gpu) if forward
            else dispatch.plan_backward(M, N, s, s, s, dtype, log, 132, gpu=gpu))


def _tail_cases():
    """(forward, itemsize, BLOCK_N, warps) of the H200's ROWS_TAIL_FWD_WARPS and ROWS_TAIL_BWD_WARPS."""
    consts = dispatch.GPU_CONSTANTS["H200"]
    return [(forward, itemsize, block_n, warps) for forward, name in ((True, "ROWS_TAIL_FWD_WARPS"),
                                                                      (False, "ROWS_TAIL_BWD_WARPS"))
            for (itemsize, block_n), warps in consts[name].items()]


def test_rows_tail_warps_rule(monkeypatch):
    """The H200's aligned rows of a power of two and a short tail (dispatch.row_segments): one row a program at
    ROWS_TAIL_FWD_WARPS' warps forward and ROWS_TAIL_BWD_WARPS' backward (16-bit), both ops, every tail from one
    16-byte vector to BLOCK_N // 16, where the rules (the H100's plans, gpu "") size warps by all the lanes and so
    take more; every other constexpr as the rules'. The tables change no other plan: rows of no tail, rows past
    BLOCK_N // 16 of a tail, peeled rows, rows of unaligned strides, the where kernels' rows, float64, and the
    float32 backward plan alike without them. (The longer tails and the cap of the forward, ROWS_FWD_TAILS and
    ROWS_TAIL_FWD_CAP_REGS, test_rows_fwd_tails_rule's, and the 16-bit forward's FTZ, ROWS16_FWD_FTZ, are left
    out here.)"""
    assert dispatch.ROWS_TAIL_FWD_WARPS == dispatch.ROWS_TAIL_BWD_WARPS == {}
    assert len(_tail_cases()) == 13
    from forced_plans import module_values

    module_values(dispatch, ("ROWS_FWD_TAILS", "ROWS_TAIL_FWD_CAP_REGS", "ROWS16_FWD_FTZ"), monkeypatch.setattr)
    same = ("BLOCK_M", "num_warps", "EVEN_M", "ALIGN_M")
    for forward, itemsize, block_n, warps in _tail_cases():
        for dtype in (("float32",) if itemsize == 4 else ("bfloat16", "float16")):
            for N, log in itertools.product((block_n + 16 // itemsize, block_n + block_n // 16), (False, True)):
                (rules,), (tuned,) = (_tail_plan(4096, N, dtype, log, forward, gpu) for gpu in ("", "H200"))
                kw, what = tuned.kwargs, (forward, dtype, N, log)
                assert tuned.kernel == rules.kernel == ("softmax_fwd_rows" if forward else "softmax_bwd_rows"), what
                assert (kw["BLOCK_N"], kw["TAIL_N"]) == dispatch.row_segments(N) and kw["TAIL_N"] and not kw["PEEL"]
                assert (kw["BLOCK_M"], kw["num_warps"], tuned.grid) == (1, warps, (4096,)), what
                assert rules.kwargs["num_warps"] > warps, what
                assert ({k: v for k, v in kw.items() if k not in same}
                        == {k: v for k, v in rules.kwargs.items() if k not in same}), what
    cases = [(N, s, dtype, log, forward) for N in (1024, 2048, 2056, 2176, 2184, 2560, 4097, 4100, 8193, 8712, 17400)
             for s in (None, 8200 * 3 + 2) for dtype in ("float32", "bfloat16", "float64")
             for log, forward in itertools.product((False, True), (True, False))]
    before = {case: _tail_plan(512, case[0], case[2], case[3], case[4], "H200", case[1]) for case in cases}
    module_values(dispatch, ("ROWS_TAIL_FWD_WARPS", "ROWS_TAIL_BWD_WARPS"), monkeypatch.setattr)
    changed = [case for case in cases if _tail_plan(512, case[0], case[2], case[3], case[4], "H200", case[1])
               != before[case]]
    dispatch.plan_forward.cache_clear()  # no plan made without the tables outlives this test
    dispatch.plan_backward.cache_clear()
    # only aligned rows with a tail: 2056 and 2176 (2184's tail of 136 values is past 128: 4096 lanes), float32 4100
    # (16-bit 4100 is peeled), 17400 forward (16-bit backward: the rules'); not 8712 (a tail past 512: 16384 lanes)
    assert sorted({(N, dtype, forward) for N, s, dtype, log, forward in changed}) == sorted(
        [(N, dtype, forward) for N in (2056, 2176) for dtype, forward in
         (("float32", True), ("bfloat16", True), ("bfloat16", False))]
        + [(4100, "float32", True), (17400, "float32", True), (17400, "bfloat16", True)]), changed
    assert all(s is None for N, s, dtype, log, forward in changed) and len(changed) == 2 * 9
    where = dict(forward=True, log=False, itemsize=4, aligned=True, where=True)
    assert dispatch._rows_tiling(4096, 4352, **where, gpu="H200") == dispatch._rows_tiling(4096, 4352, **where)


@pytest.mark.parametrize("forward,itemsize,block_n,warps", _tail_cases(), ids=lambda v: str(v))
def test_rows_tail_warps_run(torch_device, forward, itemsize, block_n, warps):
    """Each entry of the H200's tail tables: its plan (here of 2 and 3 rows, a tail of BLOCK_N // 16) right against
    float64, softmax and log_softmax."""
    N, dtype = block_n + block_n // 16, {4: "float32", 2: "float16" if forward else "bfloat16"}[itemsize]
    for M, log in ((2, False), (3, True)):
        (plan,) = _tail_plan(M, N, dtype, log, forward, "H200")
        assert (plan.kwargs["num_warps"], plan.kwargs["TAIL_N"]) == (warps, block_n // 16)
        _check_rows_plan((plan,), forward, log, M, N, dtype, torch_device,
                         f"H200 tail {block_n}+{block_n // 16} M={M} log={log}")


def _long_tail_cases():
    """(itemsize, BLOCK_N, most tail lanes) of the H200's ROWS_FWD_TAILS."""
    return [(itemsize, block_n, most) for (itemsize, block_n), most in
            dispatch.GPU_CONSTANTS["H200"]["ROWS_FWD_TAILS"].items()]


def test_rows_fwd_tails_rule(monkeypatch):
    """The H200's forward of aligned rows past a power of two BLOCK_N by more than BLOCK_N // 16 (row_segments' bound)
    and at most ROWS_FWD_TAILS' lanes: BLOCK_N + a tail of the next power of two past N - BLOCK_N (not 2 * BLOCK_N
    lanes), one row a program at ROWS_TAIL_FWD_WARPS' warps, under ROWS_TAIL_FWD_CAP_REGS' cap where the launcher
    can pass one (also for row_segments' own tails); every other constexpr as the plan without the tables. No other
    plan changes: a row a vector past the most, backward plans, peeled rows, unaligned strides, float64, the where
    kernels' rows, 16384-lane rows; the H100 (gpu "") has no such tables."""
    assert dispatch.ROWS_FWD_TAILS == dispatch.ROWS_TAIL_FWD_CAP_REGS == {}
    consts = dispatch.GPU_CONSTANTS["H200"]
    assert len(_long_tail_cases()) == 6 and consts["ROWS_TAIL_FWD_CAP_REGS"] == {(2, 4096): 56, (2, 8192): 48}
    plans = {}
    for itemsize, block_n, most in _long_tail_cases():
        vec = 16 // itemsize
        for dtype in (("float32",) if itemsize == 4 else ("bfloat16", "float16")):
            for N, log in itertools.product((block_n + block_n // 16 + vec, block_n + most // 2 + vec, block_n + most),
                                            (False, True)):
                (fwd,) = _tail_plan(4096, N, dtype, log, True, "H200")
                kw, what = fwd.kwargs, (dtype, N, log)
                tail = triton.next_power_of_2(N - block_n)
                assert fwd.kernel == "softmax_fwd_rows" and (kw["BLOCK_N"], kw["TAIL_N"]) == (block_n, tail), what
                assert dispatch.row_segments(N) == (2 * block_n, 0), what  # the rules' lanes
                assert (kw["BLOCK_M"], kw["num_warps"], kw.get("maxnreg"), kw["PEEL"], fwd.grid) == (
                    1, consts["ROWS_TAIL_FWD_WARPS"][itemsize, block_n],
                    consts["ROWS_TAIL_FWD_CAP_REGS"].get((itemsize, block_n)), False, (4096,)), what
                (uncapped,) = dispatch.plan_forward(4096, N, N, N, dtype, log, 132, register_cap=False, gpu="H200")
                assert "maxnreg" not in uncapped.kwargs, what
                plans[dtype, N, log] = fwd
            # row_segments' own tails (at most BLOCK_N // 16) take the cap too
            (short,) = _tail_plan(64, block_n + block_n // 16, dtype, False, True, "H200")
            assert short.kwargs.get("maxnreg") == consts["ROWS_TAIL_FWD_CAP_REGS"].get((itemsize, block_n))
    assert len(plans) == (4 * 2 + 2) * 3 * 2  # 16-bit entries in two dtypes, float32 ones; 3 N; 2 ops
    none = [(N, s, dtype, log, forward) for N in (1088, 1152, 1160, 1288, 2304, 2560, 2568, 4352, 4608, 5120, 8704,
                                                    9216, 10240, 10248, 16400, 17408)
            for s in (None, 8200 * 3 + 2) for dtype in ("float32", "bfloat16", "float64")
            for log, forward in itertools.product((False, True), (True, False))]
    before = {case: _tail_plan(512, case[0], case[2], case[3], case[4], "H200", case[1]) for case in none}
    from forced_plans import module_values

    module_values(dispatch, ("ROWS_FWD_TAILS", "ROWS_TAIL_FWD_CAP_REGS"), monkeypatch.setattr)
    for (dtype, N, log), fwd in plans.items():  # without the tables: the same but for the lanes, warps and cap
        (rules,) = _tail_plan(4096, N, dtype, log, True, "H200")
        assert rules.kwargs["BLOCK_N"] + rules.kwargs["TAIL_N"] > fwd.kwargs["BLOCK_N"] + fwd.kwargs["TAIL_N"]
        differ = ("BLOCK_N", "TAIL_N", "BLOCK_M", "num_warps", "maxnreg", "EVEN_M", "ALIGN_M")
        assert ({k: v for k, v in fwd.kwargs.items() if k not in differ}
                == {k: v for k, v in rules.kwargs.items() if k not in differ}), (dtype, N, log)
    changed = [case for case in none if _tail_plan(512, case[0], case[2], case[3], case[4], "H200", case[1])
               != before[case]]
    dispatch.plan_forward.cache_clear()  # no plan made without the tables outlives this test
    dispatch.plan_backward.cache_clear()
    # aligned forwards alone, both ops: float32 and bf16 1152, 1160 (1024 + 256), 2304, 2560 (2048 + 512); bf16
    # 4608, 5120 (4096 + 1024), 9216, 10240 (8192 + 2048), and 4352, 8704 (row_segments' 4096 + 256 and 8192 + 512, now
    # capped). Not 1288, 2568, 10248 (a tail past the most), 1088 (1024 + 64: no cap), 16400 and 17408 (16384 lanes),
    # float64, unaligned rows.
    assert sorted({(N, dtype) for N, s, dtype, log, forward in changed}) == sorted(
        [(N, dtype) for N in (1152, 1160, 2304, 2560) for dtype in ("float32", "bfloat16")]
        + [(N, "bfloat16") for N in (4352, 4608, 5120, 8704, 9216, 10240)]), changed
    assert all(s is None and forward for N, s, dtype, log, forward in changed) and len(changed) == 2 * 14
    where = dict(forward=True, log=False, itemsize=2, aligned=True, where=True)
    assert dispatch._rows_tiling(4096, 9216, **where, gpu="H200") == dispatch._rows_tiling(4096, 9216, **where)


@pytest.mark.parametrize("itemsize,block_n,most", _long_tail_cases(), ids=lambda v: str(v))
def test_rows_fwd_tails_run(torch_device, itemsize, block_n, most):
    """Each entry of the H200's ROWS_FWD_TAILS: its plan (2 rows of BLOCK_N + the most, 3 of a 16-byte vector fewer:
    a masked tail) right against float64, softmax and log_softmax."""
    vec = 16 // itemsize
    dtype = {4: "float32", 2: "bfloat16" if block_n < 4096 else "float16"}[itemsize]
    for M, log, N in ((2, False, block_n + most), (3, True, block_n + most - vec)):
        (plan,) = _tail_plan(M, N, dtype, log, True, "H200")
        assert (plan.kwargs["BLOCK_N"], plan.kwargs["TAIL_N"]) == (block_n, most)
        _check_rows_plan((plan,), True, log, M, N, dtype, torch_device, f"H200 long tail {block_n}+{most} M={M}")


def test_rows_bwd16_reload_rules():
    """The H200's 16-bit softmax backward of aligned rows: of ROWS_BWD16_RELOAD_MAX_N values or fewer that the
    rules give the cooperative kernel, one row a program at 32 warps, reloading, under a cap of
    ROWS_BWD16_RELOAD_REGS registers (ROWS_BWD16_RELOAD_*), at ROWS_BWD16_RELOAD_MIN_PER_SM rows an SM and more
    and where the launcher can cap registers; with a tail of 512 or 1024 lanes past 16384, reloading
    (ROWS_TAIL16_BWD_RELOAD). The log_softmax's, fewer rows, longer, peeled or float32 rows and the H100 keep their
    plans."""
    wide = dispatch.GPU_CONSTANTS["H200"]["ROWS_BWD16_RELOAD_MAX_N"]
    assert dispatch.ROWS_BWD16_RELOAD_MAX_N == 0 and 29440 < wide < 32000
    per_sm = dispatch.ROWS_BWD16_RELOAD_MIN_PER_SM

    def bwd(M, N, gpu, dtype="bfloat16", log=False, register_cap=True):
        return dispatch.plan_backward(M, N, N, N, N, dtype, log, 132, gpu=gpu, register_cap=register_cap)

    for M, N, dtype in ((4559, 29440, "bfloat16"), (per_sm * 132, wide, "float16"), (6710, 20000, "bfloat16"),
                        (7710, 17416, "float16")):
        (l,) = bwd(M, N, "H200", dtype)
        assert bwd(M, N, "", dtype)[-1].kernel in ("softmax_bwd_coop", "softmax_bwd_pipe"), (M, N)
        assert l.kernel == "softmax_bwd_rows" and l.grid == (M,) and not l.kwargs["PEEL"], (M, N)
        assert {k: l.kwargs[k] for k in ("BLOCK_M", "BLOCK_N", "TAIL_N", "num_warps", "maxnreg", "RELOAD")} == dict(
            BLOCK_M=1, BLOCK_N=32768, TAIL_N=0, num_warps=32, maxnreg=dispatch.ROWS_BWD16_RELOAD_REGS, RELOAD=True)
    for M, N, kw in ((4096, 32000, {}), (per_sm * 132 - 1, 29440, {}), (4559, 29440, dict(log=True)),
                     (4559, 29440, dict(register_cap=False)),
                     (2279, 29440, dict(dtype="float32", register_cap=False))):  # (capped: COOP_BWD32_TAG_CAP_REGS)
        assert bwd(M, N, "H200", **kw) == bwd(M, N, "", **kw), (M, N, kw)
    (peeled,) = bwd(4559, 29441, "H200")  # ROWS_PEELED16_BWD_RELOAD's, at the rules' 8 warps, uncapped
    assert peeled.kwargs["PEEL"] and peeled.kwargs["num_warps"] == 8 and "maxnreg" not in peeled.kwargs
    assert bwd(8183, 16392, "H200") == bwd(8183, 16392, "") and bwd(8000, 16640, "H200") == bwd(8000, 16640, "")
    for M, N, dtype in ((7944, 16896, "bfloat16"), (7800, 17152, "float16"), (7710, 17408, "bfloat16")):
        (rules,), (tuned,) = bwd(M, N, "", dtype), bwd(M, N, "H200", dtype)
        assert "RELOAD" not in rules.kwargs and tuned.kwargs["RELOAD"] is True and rules.kwargs["TAIL_N"], (M, N)
        assert {**tuned.kwargs, "RELOAD": 0} == {**rules.kwargs, "RELOAD": 0} and tuned.grid == rules.grid
        assert bwd(M, N, "H200", dtype, log=True) == bwd(M, N, "", dtype, log=True)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("N", [20000, 16896])
def test_rows_bwd16_reload_rules_run(torch_device, dtype, N):
    """The H200's 16-bit softmax backward of wide aligned rows (ROWS_BWD16_RELOAD_*: 48 rows of 20000 values,
    planned for four SMs) and of rows with a tail (ROWS_TAIL16_BWD_RELOAD: 16384 + 512): dx right against float64."""
    M = 48
    (l,) = dispatch.plan_backward(M, N, N, N, N, dtype, False, 4, gpu="H200")
    assert l.kernel == "softmax_bwd_rows" and l.kwargs["RELOAD"] and l.kwargs["TAIL_N"] == (512 if N == 16896 else 0)
    x = _random((M, N), dtype, torch_device, seed=N)
    y = torch.softmax(x.double(), -1).to(DTYPES[dtype])
    dy = _random((M, N), dtype, torch_device, seed=N + 7)
    dx = _run((l,), {"y": y, "dy": dy}, dtype, torch_device, (M, N))
    expected = ref.softmax_backward(y.double().cpu().numpy(), dy.double().cpu().numpy(), log=False)
    ref.assert_close(dx.double().cpu(), expected, dtype, "rows RELOAD", scale_atol=True)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
@pytest.mark.parametrize("N", [16384, 9001, 16385])
def test_rows_reload_run(torch_device, dtype, log, N):
    """softmax_bwd_rows with RELOAD (the H200's plans: full 16384-value rows at 32 warps for the softmax; peeled
    rows, whose edges reload too) on 2 rows: dx right against float64, and equal to the plan without RELOAD."""
    M = 2
    (l,) = dispatch.plan_backward(M, N, N, N, N, dtype, log, 132, gpu="H200")
    if not l.kwargs.get("RELOAD"):  # the log_softmax of full rows keeps the H100's plan there: force it on
        l = dataclasses.replace(l, meta=l.meta + (("RELOAD", True),))
    x = _random((M, N), dtype, torch_device, seed=N + log)
    y = (torch.log_softmax if log else torch.softmax)(x.double(), -1).to(DTYPES[dtype])
    dy = _random((M, N), dtype, torch_device, seed=N + 7)
    dx = _run((l,), {"y": y, "dy": dy}, dtype, torch_device, (M, N))
    expected = ref.softmax_backward(y.double().cpu().numpy(), dy.double().cpu().numpy(), log=log)
    ref.assert_close(dx.double().cpu(), expected, dtype, "rows RELOAD", scale_atol=True)
    plain = dataclasses.replace(l, meta=tuple((k, v) for k, v in l.meta if k != "RELOAD"))
    assert torch.equal(dx, _run((plain,), {"y": y, "dy": dy}, dtype, torch_device, (M, N)))


@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
def test_rows_peeled16_forward_coop_run(torch_device, log):
    """The H200's forward of peeled 16-bit rows past ROWS_PEELED16_FWD_MAX_LANES (cooperative, in 3 chunks) on 3
    rows of 16393 values: y right against float64."""
    M, N, dtype = 3, 16393, "bfloat16"
    plan = dispatch.plan_forward(M, N, N, N, dtype, log, 132, gpu="H200")
    assert plan[-1].kernel == "softmax_fwd_coop" and plan[-1].kwargs["PEEL"]
    x = _random((M, N), dtype, torch_device, seed=N + log)
    y = _run(plan, {"x": x}, dtype, torch_device, (M, N))
    ref.assert_close(y.double().cpu(), ref.softmax(x.double().cpu().numpy(), log=log), dtype, "peeled coop forward")


def test_rows_fwd32_wide_rule():
    """The H200's float32 forward of aligned rows of ROWS_FWD32_WIDE_MIN_N ... 32768 values runs the rows kernel
    (one row a program, 32 warps: the plan force="rows" makes) where there are ROWS_FWD32_WIDE_MIN_PER_SM rows an
    SM, both ops; fewer rows, shorter or peeled rows, 16-bit rows, the backward and the H100 keep their plans."""
    wide = dispatch.GPU_CONSTANTS["H200"]["ROWS_FWD32_WIDE_MIN_N"]
    assert dispatch.ROWS_FWD32_WIDE_MIN_N == float("inf") and 24576 < wide <= 32768

    def fwd(M, N, dtype="float32", log=False, gpu="H200", force=None):
        return dispatch.plan_forward(M, N, N, N, dtype, log, 132, force, gpu=gpu)

    for M, N in ((2279, 29440), (4096, 32000), (2048, 32768), (12 * 132, wide + 3)):
        for log in (False, True):
            (l,) = fwd(M, N, log=log)
            assert l == fwd(M, N, log=log, force="rows")[0] and l.kwargs["num_warps"] == 32, (M, N, log)
            assert fwd(M, N, log=log, gpu="")[-1].kernel == "softmax_fwd_coop", (M, N, log)
    for M, N, dtype in ((12 * 132 - 1, 29440, "float32"), (2796, 24000, "float32"), (4559, 29440, "bfloat16")):
        assert fwd(M, N, dtype)[-1].kernel == "softmax_fwd_coop", (M, N, dtype)
    assert fwd(2279, 29441)[-1].kernel == fwd(2279, 29441, gpu="")[-1].kernel == "softmax_fwd_rows"  # peeled
    assert dispatch.plan_backward(2279, 29440, 29440, 29440, 29440, "float32", False, 132,
                                  gpu="H200")[-1].kernel in ("softmax_bwd_coop", "softmax_bwd_pipe")


@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
def test_rows_fwd32_wide_run(torch_device, log):
    """The H200's wide float32 rows (ROWS_FWD32_WIDE_*: 48 rows of 24580 values in 32768 lanes, planned for four
    SMs) right against float64."""
    M, N = 48, 24580
    plan = dispatch.plan_forward(M, N, N, N, "float32", log, 4, gpu="H200")
    assert [l.kernel for l in plan] == ["softmax_fwd_rows"] and plan[0].kwargs["BLOCK_N"] == 32768
    x = _random((M, N), "float32", torch_device, seed=N + log)
    y = _run(plan, {"x": x}, "float32", torch_device, (M, N))
    ref.assert_close(y.double().cpu(), ref.softmax(x.double().cpu().numpy(), log=log), "float32", "wide rows")
