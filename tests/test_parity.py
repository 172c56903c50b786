"""Parity: the torch path, the JAX path and the Numba reference on the same inputs.

Each is held to one float64 NumPy reference (tests/reference64.py), forward and backward,
with per-dtype tolerances. On a CPU-only machine the torch and JAX paths run the Triton
kernels through Triton's interpreter and the Numba path runs in Numba's CUDA simulator
(tests/conftest.py), so the shapes stay small; on the GPU machine all three run compiled.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import torch

import multisoftmax.jax as mj
import multisoftmax.reference as mr
import multisoftmax.torch as mt
import reference64 as ref

TORCH_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16,
                "float64": torch.float64}
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def _torch_in(x64, dtype):
    return torch.from_numpy(np.ascontiguousarray(x64)).to(TORCH_DTYPES[dtype]).to(DEVICE)


def rounded(x64, dtype):
    """x64 rounded to `dtype` and back: the input every path really sees."""
    return _torch_in(x64, dtype).double().cpu().numpy()


def numba_input(x64, dtype):
    # Numba has no bfloat16: the reference gets the same (bf16-rounded) values in float32.
    return rounded(x64, dtype).astype(np.float32 if dtype == "bfloat16" else dtype)


def forward_all(x64, dtype, axis, log):
    """y from each path, as float64 NumPy arrays."""
    ys = {}
    t = _torch_in(x64, dtype)
    ys["torch"] = (mt.log_softmax if log else mt.softmax)(t, axis).double().cpu().numpy()
    j = jnp.asarray(rounded(x64, dtype)).astype(jnp.dtype(dtype))
    ys["jax"] = np.asarray((mj.log_softmax if log else mj.softmax)(j, axis), np.float64)
    xn = np.moveaxis(numba_input(x64, dtype), axis, -1)
    yn = (mr.log_softmax if log else mr.softmax)(np.ascontiguousarray(xn))
    ys["numba"] = np.moveaxis(np.asarray(yn, np.float64), -1, axis)
    return ys


def backward_all(x64, dy64, dtype, axis, log):
    """dx from each path (its own forward, then its own backward), as float64 arrays."""
    dxs = {}
    t = _torch_in(x64, dtype).requires_grad_()
    y = (mt.log_softmax if log else mt.softmax)(t, axis)
    (dx,) = torch.autograd.grad(y, t, _torch_in(dy64, dtype))
    dxs["torch"] = dx.double().cpu().numpy()
    j = jnp.asarray(rounded(x64, dtype)).astype(jnp.dtype(dtype))
    _, pull = jax.vjp(lambda a: (mj.log_softmax if log else mj.softmax)(a, axis), j)
    dxs["jax"] = np.asarray(pull(jnp.asarray(rounded(dy64, dtype)).astype(jnp.dtype(dtype)))[0], np.float64)
    xn = np.ascontiguousarray(np.moveaxis(numba_input(x64, dtype), axis, -1))
    dyn = np.ascontiguousarray(np.moveaxis(numba_input(dy64, dtype), axis, -1))
    yn = (mr.log_softmax if log else mr.softmax)(xn)
    dxn = (mr.log_softmax_backward if log else mr.softmax_backward)(yn, dyn)
    dxs["numba"] = np.moveaxis(np.asarray(dxn, np.float64), -1, axis)
    return dxs


def check_all(results, expected, dtype, what, scale_atol=False):
    for name, got in results.items():
        ref.assert_close(got, expected, dtype, f"{name}: {what}", scale_atol=scale_atol)


NS = [1, 2, 31, 32, 33, 127, 128, 129, 781, 1024, 1025, 4097, 40000]  # 40000: past any block held in registers


@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16", "float64"])
@pytest.mark.parametrize("N", NS)
def test_rows_of_every_length(N, dtype, log):
    """N across warp sizes, powers of two and past the longest row held in registers."""
    M = 3 if N <= 1025 else 1
    rng = np.random.default_rng(N * 7 + len(dtype))
    x64 = rng.standard_normal((M, N)) * 4
    xr = rounded(x64, dtype)
    check_all(forward_all(x64, dtype, -1, log), ref.softmax(xr, -1, log), dtype, f"fwd N={N}")
    dy64 = rng.standard_normal((M, N))
    y_exact, dyr = ref.softmax(xr, -1, log), rounded(dy64, dtype)
    expected = ref.softmax_backward(y_exact, dyr, -1, log)
    check_all(backward_all(x64, dy64, dtype, -1, log), expected, dtype, f"bwd N={N}",
              scale_atol=ref.backward_scale(y_exact, dyr, -1, log))


@pytest.mark.parametrize("M", [0, 1])
def test_zero_and_one_row(M):
    x64 = np.random.default_rng(M).standard_normal((M, 40))
    for log in (False, True):
        ys = forward_all(x64, "float32", -1, log)
        for name, y in ys.items():
            assert y.shape == (M, 40), name
        check_all(ys, ref.softmax(rounded(x64, "float32"), -1, log), "float32", f"M={M}")


@pytest.mark.parametrize("axis", [0, 1, 2, -1])
def test_every_axis_of_rank3(axis):
    rng = np.random.default_rng(axis + 10)
    x64, dy64 = rng.standard_normal((3, 5, 33)) * 3, rng.standard_normal((3, 5, 33))
    for log in (False, True):
        check_all(forward_all(x64, "float32", axis, log), ref.softmax(x64, axis, log), "float32", f"axis={axis}")
        y_exact = ref.softmax(x64, axis, log)
        expected = ref.softmax_backward(y_exact, dy64, axis, log)
        check_all(backward_all(x64, dy64, "float32", axis, log), expected, "float32", f"bwd axis={axis}",
                  scale_atol=ref.backward_scale(y_exact, dy64, axis, log))


def test_non_contiguous_inputs():
    base = np.random.default_rng(3).standard_normal((40, 12)) * 3
    x64 = base.T  # (12, 40), rows strided in memory
    expected = ref.softmax(x64)
    yt = mt.softmax(torch.from_numpy(base).float().to(DEVICE).t()).double().cpu().numpy()
    yn = np.asarray(mr.softmax(x64.astype(np.float32)), np.float64)  # a non-contiguous numpy view
    yj = np.asarray(mj.softmax(jnp.asarray(base, jnp.float32).T), np.float64)
    for name, y in (("torch", yt), ("numba", yn), ("jax", yj)):
        ref.assert_close(y, expected, "float32", name)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_edge_values(dtype):
    big = float(torch.finfo(TORCH_DTYPES[dtype]).max)
    x64 = np.random.default_rng(5).standard_normal((7, 19)) * 3
    x64[0] = -np.inf                         # all -inf: NaN everywhere (torch, jax.nn)
    x64[1, 4] = np.inf                       # +inf: the row is NaN
    x64[2, 7] = np.nan                       # NaN: the row is NaN
    x64[3, :10] = -np.inf                    # some -inf: those are 0, the rest finite
    x64[4] = big * 0.99                      # huge and equal: uniform
    x64[5, ::2] = -big * 0.99                # huge spread: no overflow
    x64[6] = np.linspace(-big / 2, big / 2, 19)
    for log in (False, True):
        # The exact answer rounded to the dtype (log_softmax of -max is -inf in 16 bits).
        expected = rounded(ref.softmax(rounded(x64, dtype), -1, log), dtype)
        ys = forward_all(x64, dtype, -1, log)
        for name, y in ys.items():
            np.testing.assert_array_equal(np.isnan(y), np.isnan(expected), err_msg=name)
        check_all(ys, expected, dtype, f"edge values log={log}")


def test_n_equals_one():
    x64 = np.random.default_rng(6).standard_normal((4, 1)) * 100
    for log, value in ((False, 1.0), (True, 0.0)):
        for name, y in forward_all(x64, "float32", -1, log).items():
            np.testing.assert_array_equal(y, np.full((4, 1), value), err_msg=name)


def test_bad_input_errors_name_the_argument():
    xi = np.arange(12).reshape(3, 4)
    with pytest.raises(TypeError, match="x has dtype torch.int64"):
        mt.softmax(torch.from_numpy(xi))
    with pytest.raises(TypeError, match="x"):
        mr.softmax(xi)
    with pytest.raises(IndexError, match="dim=5"):
        mt.softmax(torch.ones(3, 4), 5)
    with pytest.raises(ValueError, match="axis 5"):
        mj.softmax(jnp.ones((3, 4)), 5)
    with pytest.raises(TypeError, match="complex"):
        mj.softmax(jnp.ones((3, 4), jnp.complex64))
    with pytest.raises(ValueError, match="dy"):
        mr.softmax_backward(np.ones((3, 4), np.float32), np.ones((3, 5), np.float32))
    if torch.cuda.is_available():
        with pytest.raises(ValueError, match="y is on cuda:0 but dy is on cpu"):
            torch.ops.multisoftmax.softmax_bwd(torch.ones(3, 4, device="cuda"), torch.ones(3, 4), False)


def test_inputs_are_not_modified():
    x64 = np.random.default_rng(7).standard_normal((3, 50))
    xt = torch.from_numpy(x64.copy()).float().to(DEVICE)
    xn = x64.astype(np.float32)
    xj = jnp.asarray(xn)
    before = (xt.clone(), xn.copy(), np.array(xj))
    mt.softmax(xt), mr.softmax(xn), mj.softmax(xj)
    assert torch.equal(xt, before[0])
    np.testing.assert_array_equal(xn, before[1])
    np.testing.assert_array_equal(np.array(xj), before[2])
