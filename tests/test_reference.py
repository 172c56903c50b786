"""The Numba-CUDA reference (multisoftmax.reference) against a float64 NumPy softmax.

Without a GPU the kernels run in Numba's CUDA simulator, one Python thread per CUDA
thread: rows stay few (M) while the row lengths (N) keep the coverage of both kernel
families. The tests marked `gpu` run larger shapes, and torch CUDA tensors, on a real
device.
"""

import os
import shutil

if shutil.which("nvidia-smi") is None:  # must precede the first import of numba.cuda
    os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")

import subprocess  # noqa: E402
import sys  # noqa: E402
import textwrap  # noqa: E402

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from numba import cuda  # noqa: E402
from numba.cuda.core import config as numba_cuda_config  # noqa: E402

import multisoftmax.reference as mr  # noqa: E402
from multisoftmax.reference import numba_softmax as ns  # noqa: E402

SIMULATED = bool(numba_cuda_config.ENABLE_CUDASIM)
REAL_GPU = not SIMULATED and cuda.is_available()
needs_gpu = pytest.mark.skipif(not REAL_GPU, reason="needs a CUDA device (not the simulator)")

# The simulator computes special values with NumPy scalars (inf - inf, overflow to inf),
# which warn; the results are what the tests check.
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

DTYPES = ["float16", "float32", "float64"]
# (rtol, atol): float16 is dominated by the rounding of the output (2**-11 relative),
# float32 by exp/log and the row sums, float64 by the length of the sums.
TOL = {"float16": (1e-3, 1e-5), "float32": (1e-5, 1e-7), "float64": (1e-12, 1e-15)}
NS = [1, 2, 31, 32, 33, 127, 128, 129, 781, 1024, 1025, 4097]

FORWARD = {False: mr.softmax, True: mr.log_softmax}
BACKWARD = {False: mr.softmax_backward, True: mr.log_softmax_backward}


# --- the float64 reference ------------------------------------------------------------------

def ref_forward(x, log):
    x = np.asarray(x, np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        z = x - np.max(x, axis=-1, keepdims=True)
        s = np.sum(np.exp(z), axis=-1, keepdims=True)
        return z - np.log(s) if log else np.exp(z) / s


def ref_backward(y, dy, log):
    y, dy = np.asarray(y, np.float64), np.asarray(dy, np.float64)
    if log:
        return dy - np.exp(y) * np.sum(dy, axis=-1, keepdims=True)
    return y * (dy - np.sum(dy * y, axis=-1, keepdims=True))


def assert_close(actual, expected, dtype, backward=False, what=""):
    actual = np.asarray(actual)
    assert actual.dtype == np.dtype(dtype), f"{what}: dtype {actual.dtype} != {dtype}"
    rtol, atol = TOL[dtype]
    if backward and expected.size:
        # dx = y * (dy - dot) cancels: its error follows the scale of the row, not of
        # each element.
        finite = np.abs(expected[np.isfinite(expected)])
        atol = max(atol, rtol * float(finite.max(initial=0.0)))
    np.testing.assert_allclose(actual.astype(np.float64), expected, rtol=rtol, atol=atol,
                               equal_nan=True, err_msg=what)


def rows_for(N):
    # Short rows: 5, two warp-path blocks (4 rows a block once N > 16, the second partly
    # filled); long rows: 2. Each simulated block costs about half a second.
    return 2 if N > ns.WARP_MAX_COLS else 5


def random(shape, dtype, seed, scale=3.0):
    """Fresh normal values (never zeros), rounded to dtype."""
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(dtype)


# --- forward and backward against the reference -----------------------------------------------

@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("N", NS)
def test_forward_matches_reference(N, dtype, log):
    x = random((rows_for(N), N), dtype, seed=[N, DTYPES.index(dtype), log])
    y = FORWARD[log](x)
    assert isinstance(y, np.ndarray) and y.shape == x.shape
    assert_close(y, ref_forward(x, log), dtype, what=f"N={N}")


@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("N", NS)
def test_backward_matches_reference(N, dtype, log):
    seed = [N, DTYPES.index(dtype), log, 1]
    y = ref_forward(random((rows_for(N), N), np.float64, seed), log).astype(dtype)
    dy = random(y.shape, dtype, seed=seed + [2], scale=1.0)
    dx = BACKWARD[log](y, dy)
    assert isinstance(dx, np.ndarray) and dx.shape == y.shape
    assert_close(dx, ref_backward(y, dy, log), dtype, backward=True, what=f"N={N}")


@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
@pytest.mark.parametrize("N", [1, 33, 1024])
def test_block_path_on_short_rows(N, log):
    """The block path handles any N; the default only sends it rows longer than 1024."""
    x = random((2, N), "float32", seed=[N, log, 3])
    y = FORWARD[log](x, path="block")
    assert_close(y, ref_forward(x, log), "float32", what="block forward")
    dy = random(x.shape, "float32", seed=[N, log, 4], scale=1.0)
    dx = BACKWARD[log](y, dy, path="block")
    assert_close(dx, ref_backward(y, dy, log), "float32", backward=True, what="block backward")


def test_path_choice():
    assert ns._choose_path(1) == ns._choose_path(1024) == "warp"
    assert ns._choose_path(1025) == ns._choose_path(10**6) == "block"
    assert ns._warp_config(1) == (1, 1)
    assert ns._warp_config(5) == (8, 1)
    assert ns._warp_config(32) == (32, 1)
    assert ns._warp_config(33) == (32, 2)
    assert ns._warp_config(1024) == (32, 32)
    x = random((3, 100), "float32", seed=5)
    np.testing.assert_array_equal(mr.softmax(x, path="warp"), mr.softmax(x))
    with pytest.raises(ValueError, match="at most 1024"):
        mr.softmax(random((1, 1025), "float32", seed=6), path="warp")
    with pytest.raises(ValueError, match="path"):
        mr.softmax(x, path="grid")


# --- shapes ---------------------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(0, 7), (3, 0), (2, 0, 5), (0,)])
def test_empty(shape):
    x = np.ones(shape, np.float32)
    for log in (False, True):
        y = FORWARD[log](x)
        assert y.shape == shape and y.dtype == x.dtype
        dx = BACKWARD[log](x, x)
        assert dx.shape == shape and dx.dtype == x.dtype


@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
def test_rank_1_and_3(log):
    x3 = random((2, 3, 40), "float32", seed=[7, log])
    y3 = FORWARD[log](x3)
    assert y3.shape == x3.shape
    assert_close(y3, ref_forward(x3, log), "float32")
    dy3 = random(x3.shape, "float32", seed=[8, log], scale=1.0)
    assert_close(BACKWARD[log](y3, dy3), ref_backward(y3, dy3, log), "float32", backward=True)
    x1 = random((50,), "float64", seed=[9, log])
    y1 = FORWARD[log](x1)
    assert y1.shape == (50,)
    assert_close(y1, ref_forward(x1, log), "float64")


def test_non_contiguous_numpy_input_is_copied():
    base = random((4, 66), "float32", seed=10)
    x = base[:, ::2]  # strided view
    before = base.copy()
    y = mr.softmax(x)
    np.testing.assert_array_equal(y, mr.softmax(np.ascontiguousarray(x)))
    assert_close(y, ref_forward(x, False), "float32")
    np.testing.assert_array_equal(base, before)
    xt = random((40, 3), "float32", seed=11).T  # Fortran order
    assert_close(mr.log_softmax(xt), ref_forward(xt, True), "float32")


def test_inputs_are_not_modified():
    x = random((3, 70), "float16", seed=12)
    dy = random((3, 70), "float16", seed=13)
    x0, dy0 = x.copy(), dy.copy()
    for log in (False, True):
        y = FORWARD[log](x)
        y0 = y.copy()
        BACKWARD[log](y, dy)
        np.testing.assert_array_equal(y, y0)
    np.testing.assert_array_equal(x, x0)
    np.testing.assert_array_equal(dy, dy0)


# --- special values -------------------------------------------------------------------------

HUGE = {"float16": 6e4, "float32": 3e38, "float64": 1e308}


def special_rows(dtype, N):
    """Rows whose results torch defines: NaN rows, rows that must not overflow, -inf."""
    big = HUGE[dtype]
    rows = np.asarray(random((7, N), dtype, seed=[N, 14]), np.float64)
    rows[0, :] = -np.inf                          # all -inf: NaN row
    rows[1, N // 2] = np.inf                      # one +inf: NaN row
    rows[2, N - 1] = np.nan                       # one NaN: NaN row
    rows[3, :] = -big                             # huge magnitudes, no overflow
    rows[3, 0] = big
    rows[3, N // 3] = big
    rows[4, : N // 2] = -np.inf                   # some -inf: zeros (log: -inf)
    rows[5, :] = big                              # all equal and huge: uniform
    return rows.astype(dtype)


# The block path's handling of special values does not depend on the dtype: one dtype
# there keeps the simulated run short (7 blocks of 256 threads a launch).
@pytest.mark.parametrize("dtype,path", [(d, "warp") for d in DTYPES] + [("float32", "block")])
@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
def test_special_values(dtype, log, path):
    N = 37
    x = special_rows(dtype, N)
    y = np.asarray(FORWARD[log](x, path=path))
    # Compared after rounding to the dtype: x - max of huge values of opposite signs
    # overflows the output dtype (log_softmax gives -inf, like torch).
    with np.errstate(over="ignore"):
        expected = ref_forward(x, log).astype(dtype).astype(np.float64)
    assert_close(y, expected, dtype, what=f"{path}")
    assert np.isnan(y[:3]).all()
    assert not np.isnan(y[3:]).any()
    if not log:
        np.testing.assert_allclose(y[3:].astype(np.float64).sum(-1), 1.0, rtol=2e-3)
        assert (y[4, : N // 2] == 0).all()
    else:
        assert (y[4, : N // 2] == -np.inf).all()


@pytest.mark.parametrize("path", ["warp", "block"])
def test_single_column(path):
    x = np.array([[5.0], [-3e38], [0.25]], np.float32)
    np.testing.assert_array_equal(mr.softmax(x, path=path), np.ones_like(x))
    np.testing.assert_array_equal(mr.log_softmax(x, path=path), np.zeros_like(x))


def test_special_values_match_torch():
    torch = pytest.importorskip("torch")
    for dtype in DTYPES:
        x = special_rows(dtype, 33)
        for log in (False, True):
            want = (torch.log_softmax if log else torch.softmax)(torch.from_numpy(x), -1).numpy()
            got = FORWARD[log](x)
            np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
            np.testing.assert_array_equal(np.isinf(got), np.isinf(want))
            if dtype != "float16":  # torch's CPU float16 log_softmax is off by ~1% here
                assert_close(got, want.astype(np.float64), dtype, what=f"{dtype} vs torch")


# --- device arrays --------------------------------------------------------------------------

@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
def test_device_array_in_device_array_out(log):
    x = random((3, 45), "float32", seed=[15, log])
    dy = random((3, 45), "float32", seed=[16, log], scale=1.0)
    y_dev = FORWARD[log](cuda.to_device(x))
    assert not isinstance(y_dev, np.ndarray)
    y = y_dev.copy_to_host()
    assert_close(y, ref_forward(x, log), "float32")
    dx_dev = BACKWARD[log](y_dev, cuda.to_device(dy))
    assert not isinstance(dx_dev, np.ndarray)
    assert_close(dx_dev.copy_to_host(), ref_backward(y, dy, log), "float32", backward=True)
    # One NumPy array and one device array: the result stays on the device.
    dx_mixed = BACKWARD[log](y, cuda.to_device(dy))
    np.testing.assert_array_equal(dx_mixed.copy_to_host(), dx_dev.copy_to_host())


def test_non_contiguous_device_array_is_refused():
    d = cuda.to_device(random((3, 40), "float32", seed=17))
    with pytest.raises(ValueError, match="contiguous"):
        mr.softmax(d[:, ::2])


# --- errors ---------------------------------------------------------------------------------

def test_errors():
    with pytest.raises(TypeError, match=r"x has dtype int32"):
        mr.softmax(np.arange(6, dtype=np.int32).reshape(2, 3))
    with pytest.raises(TypeError, match=r"dy has dtype int64"):
        mr.softmax_backward(np.ones((2, 3)), np.ones((2, 3), np.int64))
    with pytest.raises(TypeError, match=r"y has dtype complex64"):
        mr.log_softmax_backward(np.ones((2, 3), np.complex64), np.ones((2, 3)))
    with pytest.raises(ValueError, match=r"y \(2, 3\) and dy \(3, 2\)"):
        mr.softmax_backward(np.ones((2, 3)), np.ones((3, 2)))
    with pytest.raises(TypeError, match="same dtype"):
        mr.softmax_backward(np.ones((2, 3), np.float32), np.ones((2, 3)))
    with pytest.raises(ValueError, match="0-d"):
        mr.softmax(np.ones((), np.float32))
    with pytest.raises(TypeError, match="NumPy array or a CUDA array"):
        mr.softmax([[1.0, 2.0]])


def test_bfloat16_is_refused():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    x = np.ones((2, 3), ml_dtypes.bfloat16)
    with pytest.raises(TypeError, match="bfloat16.*float32"):
        mr.softmax(x)
    with pytest.raises(TypeError, match="bfloat16"):
        mr.log_softmax_backward(x, x)


# --- compiled for a real GPU, without one -------------------------------------------------

_PTX_SCRIPT = textwrap.dedent("""
    import sys
    import numpy as np
    from numba import cuda
    import numba.cuda.dispatcher as dispatcher

    class Device:  # no GPU: device functions are compiled for sm_90 as well
        compute_capability = (9, 0)

    if not cuda.is_available():
        dispatcher.get_current_device = lambda: Device()
    from multisoftmax.reference import numba_softmax as ns

    def ptx(kernel, dtype, nargs):
        sig = "void(" + ", ".join([dtype + "[:, ::1]"] * nargs) + ")"
        return cuda.compile_ptx(kernel.py_func, sig, cc=(9, 0))[0]

    try:  # is there a toolchain (NVVM and NVRTC)?
        ptx(ns._warp_forward_kernel(False, 1, 1, np.float32), "float32", 2)
    except Exception as e:
        print("no toolchain:", type(e).__name__, e)
        sys.exit(3)
    for dtype, acc in (("float16", np.float32), ("float32", np.float32), ("float64", np.float64)):
        for log in (False, True):
            for N in (5, 100, 1024):
                width, cols_per_thread = ns._warp_config(N)
                assert "shfl.sync.bfly" in ptx(ns._warp_forward_kernel(log, width, cols_per_thread, acc), dtype, 2)
                assert "shfl.sync.bfly" in ptx(ns._warp_backward_kernel(log, width, cols_per_thread, acc), dtype, 3)
            assert "bar.sync" in ptx(ns._block_forward_kernel(log, acc), dtype, 2)
            assert "bar.sync" in ptx(ns._block_backward_kernel(log, acc), dtype, 3)
    print("compiled")
""")


def test_kernels_compile_to_ptx():
    """Every kernel family and dtype compiles for sm_90 (needs NVVM and NVRTC, not a GPU)."""
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    proc = subprocess.run([sys.executable, "-c", _PTX_SCRIPT], env=env, cwd=root,
                          capture_output=True, text=True, timeout=600)
    if proc.returncode == 3:
        pytest.skip(proc.stdout.strip()[:200])
    assert proc.returncode == 0, proc.stdout + proc.stderr


# --- real GPU -------------------------------------------------------------------------------

@pytest.mark.gpu
@needs_gpu
@pytest.mark.parametrize("M,N,dtype", [(4096, 4097, "float32"), (1000, 1025, "float16"),
                                       (3000, 781, "float16"), (2048, 128, "float64")])
@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
def test_gpu_torch_tensors(M, N, dtype, log):
    torch = pytest.importorskip("torch")
    x = random((M, N), dtype, seed=[M, N, log])
    dy = random((M, N), dtype, seed=[M, N, log, 1], scale=1.0)
    xt = torch.from_numpy(x).cuda()
    x_before = xt.clone()
    y = torch.as_tensor(FORWARD[log](xt), device="cuda")  # via __cuda_array_interface__
    assert y.dtype == xt.dtype and y.shape == xt.shape
    assert torch.equal(xt, x_before)
    y_host = y.cpu().numpy()
    assert_close(y_host, ref_forward(x, log), dtype)
    dx = torch.as_tensor(BACKWARD[log](y, torch.from_numpy(dy).cuda()), device="cuda")
    assert_close(dx.cpu().numpy(), ref_backward(y_host, dy, log), dtype, backward=True)


@pytest.mark.gpu
@needs_gpu
def test_gpu_torch_errors():
    torch = pytest.importorskip("torch")
    with pytest.raises(ValueError, match="contiguous"):
        mr.softmax(torch.ones(4, 6, device="cuda").t())
    with pytest.raises(TypeError, match="bfloat16"):
        mr.softmax(torch.ones(4, 6, device="cuda", dtype=torch.bfloat16))
    with pytest.raises(TypeError, match="x has dtype int32"):
        mr.softmax(torch.ones(4, 6, device="cuda", dtype=torch.int32))
