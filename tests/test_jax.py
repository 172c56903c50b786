"""multisoftmax.jax: jax.nn.softmax's semantics under jit, grad, vmap and their nestings."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.test_util import check_grads

import multisoftmax.jax as mj
import reference64 as ref
from multisoftmax import dispatch

DTYPES = [jnp.float32, jnp.bfloat16, jnp.float16, jnp.float64]
OPS = [(mj.softmax, jax.nn.softmax, False), (mj.log_softmax, jax.nn.log_softmax, True)]
OP_IDS = ["softmax", "log_softmax"]


def randn(*shape, dtype=jnp.float32, seed=0, scale=3.0):
    return jnp.asarray(np.random.default_rng(seed).standard_normal(shape) * scale, dtype)


@pytest.mark.parametrize("ops", OPS, ids=OP_IDS)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: jnp.dtype(d).name)
@pytest.mark.parametrize("shape,axis", [((7,), 0), ((4, 33), -1), ((3, 5, 6), 0), ((3, 5, 6), 1),
                                        ((3, 5, 6), (0, 2)), ((2, 3, 4), (-1, -2)), ((2, 3, 4), (0, 1, 2))])
def test_matches_float64_reference(ops, dtype, shape, axis):
    ours, _, log = ops
    x = randn(*shape, dtype=dtype, seed=len(shape))
    x_before = np.array(x)
    y = ours(x, axis)
    assert y.shape == x.shape and y.dtype == x.dtype
    ref.assert_close(np.asarray(y, np.float64), ref.softmax(np.asarray(x, np.float64), axis, log),
                     jnp.dtype(dtype).name, f"{shape} axis={axis}")
    np.testing.assert_array_equal(np.array(x), x_before)


@pytest.mark.parametrize("ops", OPS, ids=OP_IDS)
def test_special_values_match_jax(ops):
    ours, theirs, _ = ops
    x = np.array(randn(6, 9, seed=4))
    x[0] = -np.inf
    x[1, 3] = np.inf
    x[2, 5] = np.nan
    x[3, :4] = -np.inf
    x[4] = 3e38
    got, expected = ours(jnp.asarray(x)), theirs(jnp.asarray(x, jnp.float64)).astype(jnp.float32)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))
    ref.assert_close(got, expected, "float32")


def test_integer_promotion_and_empty():
    x = jnp.arange(12).reshape(3, 4)
    y = mj.softmax(x)
    assert y.dtype == jax.nn.softmax(x).dtype
    ref.assert_close(y, ref.softmax(np.arange(12).reshape(3, 4)), jnp.dtype(y.dtype).name)
    assert mj.softmax(jnp.zeros((0, 5))).shape == (0, 5)
    assert mj.log_softmax(jnp.ones((4, 1))).tolist() == [[0.0]] * 4


def test_bad_arguments():
    x = randn(3, 4)
    with pytest.raises(ValueError, match=r"axis 2 is out of range .* \[-2, 1\]"):
        mj.softmax(x, 2)
    with pytest.raises(ValueError, match="repeats"):
        mj.softmax(x, (1, -1))
    with pytest.raises(TypeError, match="axis must be an int"):
        mj.softmax(x, 1.5)
    with pytest.raises(TypeError, match="where must be a boolean array"):
        mj.softmax(x, where=jnp.ones((3, 4), jnp.int32))
    with pytest.raises(ValueError, match=r"where has shape \(4, 3\), .* x's shape \(3, 4\)"):
        mj.softmax(x, where=jnp.ones((4, 3), bool))
    with pytest.raises(ValueError, match=r"where has shape \(2, 3, 4\)"):
        mj.log_softmax(x, where=jnp.ones((2, 3, 4), bool))  # no broadcasting x up
    with pytest.raises(TypeError, match="complex64"):
        mj.softmax(x.astype(jnp.complex64))
    with pytest.raises(ValueError, match="0 dimensions"):
        mj.softmax(jnp.float32(1.0))


@pytest.mark.parametrize("ops", OPS, ids=OP_IDS)
@pytest.mark.parametrize("dtype", [jnp.float32, jnp.bfloat16], ids=lambda d: jnp.dtype(d).name)
def test_axis_none(ops, dtype):
    """axis=None: every axis, as jax.nn; a 0-d array is one slice of one value."""
    ours, theirs, log = ops
    x = randn(3, 5, 7, dtype=dtype, seed=12)
    ref.assert_close(np.asarray(ours(x, None), np.float64), ref.softmax(np.asarray(x, np.float64), None, log),
                     jnp.dtype(dtype).name)
    for v in (1.5, -2e30, np.nan, np.inf, -np.inf):
        got, expected = ours(jnp.float32(v), None), theirs(jnp.float32(v), None)
        assert got.shape == () and got.dtype == jnp.float32
        np.testing.assert_array_equal(got, expected, err_msg=f"x={v}")


def _masks(shape, seed):
    """Boolean masks for an (M, N) x: random with a fully masked row and a single survivor,
    and broadcast ones, (1, N) and (M, 1)."""
    rng = np.random.default_rng(seed)
    m = rng.random(shape) < 0.6
    m[0] = False
    m[1] = False
    m[1, shape[1] // 2] = True
    col = rng.random((1, shape[1])) < 0.5
    row = np.ones((shape[0], 1), bool)
    row[2] = False
    return {"random": m, "(1, N)": col, "(M, 1)": row}


@pytest.mark.parametrize("ops", OPS, ids=OP_IDS)
@pytest.mark.parametrize("dtype", [jnp.float32, jnp.bfloat16, jnp.float64], ids=lambda d: jnp.dtype(d).name)
def test_where_matches_jax(ops, dtype):
    """where=: masked-out values take no part, their outputs are 0 (log_softmax: -inf), a fully
    masked slice gives 0 (-inf); every axis choice, against jax.nn in float64."""
    ours, theirs, log = ops
    x = randn(6, 40, dtype=dtype, seed=13)
    x64 = jnp.asarray(x, jnp.float64)
    x_before = np.array(x)
    for name, m in _masks(x.shape, 14).items():
        for axis in (-1, 0, None, (0, 1)):
            got = ours(x, axis, where=m)
            expected = theirs(x64, axis, where=m)
            assert got.shape == x.shape and got.dtype == x.dtype
            what = f"where {name} axis={axis}"
            ref.assert_close(np.asarray(got, np.float64), expected, jnp.dtype(dtype).name, what)
            masked = ~np.broadcast_to(m, x.shape)
            assert np.all(np.asarray(got, np.float64)[masked] == (-np.inf if log else 0.0)), what
    jitted = jax.jit(lambda t, mask: ours(t, -1, where=mask))
    ref.assert_close(np.asarray(jitted(x, m), np.float64), theirs(x64, -1, where=m), jnp.dtype(dtype).name)
    np.testing.assert_array_equal(np.array(x), x_before)
    # the backward from saved y against float64 (log_softmax: dy's masked-out values take no part)
    m = _masks(x.shape, 14)["random"]  # a fully masked row, a row of one survivor
    dy = randn(*x.shape, dtype=dtype, seed=15, scale=1.0)
    y, pull = jax.vjp(lambda t: ours(t, -1, where=m), x)
    y64, dy64 = np.asarray(y, np.float64), np.where(m, np.asarray(dy, np.float64), 0.0)
    with np.errstate(invalid="ignore"):
        expected = np.where(m, ref.softmax_backward(y64, dy64, -1, log), 0.0)
    ref.assert_close(np.asarray(pull(dy)[0], np.float64), expected, jnp.dtype(dtype).name, "backward",
                     scale_atol=ref.backward_scale(y64, dy64, -1, log))


@pytest.mark.parametrize("ops", OPS, ids=OP_IDS)
def test_where_gradients(ops):
    """Gradients with where=: zero at masked-out values and over fully masked slices (no NaN),
    equal to jax.nn's, to second order; under vmap too."""
    ours, theirs, _ = ops
    x = randn(6, 30, dtype=jnp.float64, seed=15)
    w = randn(6, 30, dtype=jnp.float64, seed=16)
    for name, m in _masks(x.shape, 17).items():
        def loss(f, t, mask=m):
            return jnp.sum(jnp.where(mask, f(t, -1, where=mask), 0.0) * w)

        g, g_ref = jax.grad(lambda t: loss(ours, t))(x), jax.grad(lambda t: loss(theirs, t))(x)
        assert np.all(np.isfinite(g)), name
        assert np.all(np.asarray(g)[~np.broadcast_to(m, x.shape)] == 0.0), name
        ref.assert_close(g, g_ref, "float64", name)
        hvp = jax.grad(lambda t: jnp.sum(jax.grad(lambda u: loss(ours, u))(t) ** 2))(x)
        hvp_ref = jax.grad(lambda t: jnp.sum(jax.grad(lambda u: loss(theirs, u))(t) ** 2))(x)
        assert np.all(np.isfinite(hvp)), name
        ref.assert_close(hvp, hvp_ref, "float64", f"grad of grad, {name}")
    m = _masks(x.shape, 17)["random"][2:]  # no fully masked row: finite differences are smooth
    check_grads(lambda t: jnp.where(m, ours(t, -1, where=m), 0.0), (x[2:],), order=2, modes=["rev"])
    batched = jax.vmap(lambda t, mask: ours(t, -1, where=mask))(x.reshape(2, 3, 30), m.reshape(2, 2, 30)[:, :1])
    ref.assert_close(batched, theirs(x.reshape(2, 3, 30), -1, where=m.reshape(2, 2, 30)[:, :1]), "float64")
    masks = np.random.default_rng(21).random((3, 6, 30)) < 0.6
    masks[0, 0] = False  # a fully masked row in one batch element

    def batched_grad(f):
        return jax.jit(jax.vmap(jax.grad(lambda t, mask: jnp.sum(jnp.where(mask, f(t, -1, where=mask), 0.0) * t))))

    xs = jnp.stack([x, 2 * x, -x])
    ref.assert_close(batched_grad(ours)(xs, masks), batched_grad(theirs)(xs, masks), "float64", "jit(vmap(grad))")


def _record_kernels(monkeypatch) -> list:
    """The names of the kernels the JAX adapter launches from now on, appended as they run."""
    seen = []
    real = mj._execute

    def recording(launches, buffers, io_dtype):
        seen.extend(l.kernel for l in launches)
        return real(launches, buffers, io_dtype)

    monkeypatch.setattr(mj, "_execute", recording)
    return seen


def test_where_backward_runs_the_kernels(monkeypatch):
    """With where= over the trailing axis, the where kernels both ways (kernels/where.py). Over a
    middle axis the forward is XLA's and the softmax backward the unmasked columns kernel from
    saved y; the log_softmax backward there is XLA's (no kernel runs)."""
    seen = _record_kernels(monkeypatch)
    x = randn(4, 6, 9, dtype=jnp.float64, seed=18)
    m = np.random.default_rng(19).random(x.shape) < 0.7
    for ours, theirs, log in OPS:
        for axis in (-1, 1):
            seen.clear()
            g = jax.grad(lambda t: jnp.sum(jnp.where(m, ours(t, axis, where=m), 0.0) * x))(x)
            g_ref = jax.grad(lambda t: jnp.sum(jnp.where(m, theirs(t, axis, where=m), 0.0) * x))(x)
            if axis == -1:
                # (JAX may reuse the forward's trace under grad: the kernels launched by either)
                assert set(seen) == {"softmax_fwd_rows_where", "softmax_bwd_rows_where"}, seen
            elif log:
                assert not seen, seen
            else:
                assert seen and all(k.endswith("_cols") and "_bwd_" in k for k in seen), seen
            ref.assert_close(g, g_ref, "float64", f"axis={axis}")


@pytest.mark.parametrize("ops", OPS, ids=OP_IDS)
def test_where_is_not_broadcast_into_residuals(ops):
    """A broadcast mask stays its own size in what the backward keeps: a causal (T, T) mask over
    (B, T, T) must not become a (B, T, T) bool array (64 MB for 16 x 2048 x 2048). The backward
    keeps y and the mask as passed."""
    ours, _, log = ops
    x = randn(3, 8, 8, dtype=jnp.float32, seed=22)
    causal = np.tril(np.ones((8, 8), bool))
    y, pull = jax.vjp(lambda t: ours(t, -1, where=causal), x)
    kept = [a for a in jax.tree_util.tree_leaves(pull) if hasattr(a, "shape")]
    bools = [a.shape for a in kept if a.dtype == jnp.bool_]
    assert bools == [causal.shape], bools
    assert sum(a.size for a in kept) <= x.size + causal.size, [(a.shape, a.dtype) for a in kept]

# masks over x of shape (2, 3, 5, 6): how the where kernels read them over the last axis, as
# _where_view's (row_div, row_mod, row_table): row m of the (30, 6) view reads mask row
# (m // row_div) % row_mod, or a table's
WHERE_MASKS = {
    "causal (5, 6)": ((5, 6), (1, 5, False)),
    "padding (2, 1, 1, 6)": ((2, 1, 1, 6), (15, 2, False)),
    "full": ((2, 3, 5, 6), (1, 30, False)),
    "per head (1, 3, 1, 6)": ((1, 3, 1, 6), (5, 3, False)),
    "two runs (2, 1, 5, 6)": ((2, 1, 5, 6), (1, 1, True)),
    "a value a row (2, 3, 5, 1)": ((2, 3, 5, 1), (1, 30, False)),
    "columns (6,)": ((6,), (1, 1, False)),
    "one value ()": ((), (1, 1, False)),
}


@pytest.mark.parametrize("mask", list(WHERE_MASKS), ids=list(WHERE_MASKS))
def test_where_kernels_read_the_mask_where_it_lies(monkeypatch, mask):
    """Masks broadcast over leading axes are read where they lie (no broadcast copy): by row
    arithmetic where the axes they vary along are one run, else a table of rows; the mask's own
    columns, or one value a row. Forward, gradient and second order against jax.nn in float64,
    over the last axis and the last two."""
    seen = _record_kernels(monkeypatch)
    shape, expected_view = WHERE_MASKS[mask]
    x = randn(2, 3, 5, 6, dtype=jnp.float64, seed=23)
    w = randn(2, 3, 5, 6, dtype=jnp.float64, seed=24)
    m = np.random.default_rng(25).random(shape) < 0.6
    if m.ndim == 4:
        m[0, 0, 0] = False  # a fully masked row
    assert mj._where_view(x.shape, mj._padded(jnp.asarray(m), 4), 1)[2:5] == expected_view
    jax.clear_caches()  # the kernels launched here, not traces made by another test
    for ours, theirs, log in OPS:
        for axis in (-1, (2, 3)):
            seen.clear()
            got, expected = ours(x, axis, where=m), theirs(x, axis, where=m)
            ref.assert_close(got, expected, "float64", f"{mask} axis={axis}")
            np.testing.assert_array_equal(np.isinf(got), np.isinf(expected))

            def loss(f, t):
                return jnp.sum(jnp.where(m, f(t, axis, where=m), 0.0) * w)

            g, g_ref = jax.grad(lambda t: loss(ours, t))(x), jax.grad(lambda t: loss(theirs, t))(x)
            ref.assert_close(g, g_ref, "float64", f"grad {mask} axis={axis}")
            # (JAX may reuse the forward's trace under grad: the kernels launched by either)
            assert set(seen) == {"softmax_fwd_rows_where", "softmax_bwd_rows_where"}, seen
            sq = jax.grad(lambda t: jnp.sum(jax.grad(lambda u: loss(ours, u))(t) ** 2))(x)
            sq_ref = jax.grad(lambda t: jnp.sum(jax.grad(lambda u: loss(theirs, u))(t) ** 2))(x)
            ref.assert_close(sq, sq_ref, "float64", f"grad of grad {mask} axis={axis}")


@pytest.mark.parametrize("ops", OPS, ids=OP_IDS)
def test_where_kernels_special_values(ops):
    """NaN, +inf and -inf kept or masked out, a row of one kept value, a fully masked row and one
    whose kept values are all -inf: what jax.nn gives, NaN for NaN and inf for inf."""
    ours, theirs, _ = ops
    x = np.array(randn(8, 12, seed=26))
    m = np.random.default_rng(27).random(x.shape) < 0.7
    x[0, ~m[0]] = np.nan  # NaN masked out only: no effect
    x[1, np.argmax(m[1])] = np.nan  # a kept NaN: the row's kept values NaN
    x[2, np.argmax(m[2])] = np.inf
    x[3, ~m[3]] = np.inf  # +inf masked out only
    x[4] = -np.inf  # every kept value -inf: NaN, as unmasked
    m[5] = False  # fully masked: 0 (log_softmax: -inf)
    m[6] = False
    m[6, 3] = True  # one kept value: 1 (0)
    x[7, 5] = 1e30  # a huge kept value
    m[7, 5] = True
    got, expected = ours(jnp.asarray(x), -1, where=m), theirs(jnp.asarray(x), -1, where=m)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))
    np.testing.assert_array_equal(np.isinf(got), np.isinf(expected))
    finite = np.isfinite(expected)
    np.testing.assert_allclose(np.asarray(got)[finite], np.asarray(expected)[finite], rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("dtype", [jnp.float32, jnp.bfloat16], ids=["float32", "bfloat16"])
def test_where_kernels_whole_tiles(dtype):
    """Rows that fill their tiles exactly (EVEN: N a power of two, M a multiple of BLOCK_M), where the
    where rows kernels store with no mask a lane in programs whose rows are all finite and read the
    mask again in the others (kernels/where.py): one program holds a fully masked row, a kept NaN,
    a kept +inf and a masked-out NaN; others hold a masked-out inf or NaN in dy, which the softmax
    backward's unmasked sum meets. Forward against jax.nn, masked-out outputs exactly 0 (-inf),
    NaN and inf where jax.nn has them; the backward against the float64 formula over the kept values,
    exactly 0 where masked out."""
    name = jnp.dtype(dtype).name
    shape = {"float32": (128, 16), "bfloat16": (32, 128)}[name]
    rng = np.random.default_rng(34)
    x = np.array(randn(*shape, seed=35), np.float64)
    m = rng.random(shape) < 0.7
    m[:, 0] = True
    m[0] = False  # fully masked
    x[1, 0] = np.nan  # a kept NaN
    x[2, 0] = np.inf  # a kept +inf
    m[3, 1] = False
    x[3, 1] = np.nan  # a masked-out NaN: no effect
    dy = np.array(randn(*shape, seed=36, scale=1.0), np.float64)  # masked-out dy takes no part, whatever it is
    rows_inf, rows_nan = shape[0] - 3, shape[0] // 2 + 2  # rows far from the first program's
    m[rows_inf, 1] = m[rows_nan, 1] = False
    dy[rows_inf, 1], dy[rows_nan, 1] = np.inf, np.nan
    x, dy = jnp.asarray(x, dtype), jnp.asarray(dy, dtype)
    for forward in (True, False):
        kw = mj._where_plan(shape, dtype, 1, False, forward)[0].kwargs
        assert kw["EVEN"] and shape[0] // kw["BLOCK_M"] >= 4, (forward, kw)  # several programs, whole tiles
    for ours, theirs, log in OPS:
        y, pull = jax.vjp(lambda t: ours(t, -1, where=m), x)
        y = np.asarray(y, np.float64)
        expected = np.asarray(theirs(jnp.asarray(x, jnp.float64), -1, where=m))
        np.testing.assert_array_equal(np.isnan(y), np.isnan(expected), f"{name} log={log} NaN")
        assert np.all(y[~m] == (-np.inf if log else 0.0)), (name, log)
        finite = np.isfinite(expected)
        ref.assert_close(y[finite], expected[finite], name, f"y log={log}")
        dx = np.asarray(pull(dy)[0], np.float64)
        assert np.all(dx[~m] == 0.0), (name, log)
        y64, dy64 = np.where(m, y, -np.inf if log else 0.0), np.where(m, np.asarray(dy, np.float64), 0.0)
        with np.errstate(invalid="ignore"):
            want = np.where(m, ref.softmax_backward(y64, dy64, -1, log), 0.0)
        ref.assert_close(dx, want, name, f"dx log={log}", scale_atol=ref.backward_scale(y64[3:], dy64[3:], -1, log))


def test_where_kernels_under_vmap():
    """vmap over x with a batched mask, an unbatched one, and an unbatched x with a batched mask;
    jit(vmap(grad)); against jax.nn."""
    x = randn(4, 3, 7, dtype=jnp.float64, seed=28)
    masks = np.random.default_rng(29).random((4, 3, 7)) < 0.6
    for ours, theirs, _ in OPS:
        for f_in, args in [((0, 0), (x, masks)), ((0, None), (x, masks[0])), ((None, 0), (x[0], masks))]:
            got = jax.vmap(lambda t, mask: ours(t, -1, where=mask), f_in)(*args)
            expected = jax.vmap(lambda t, mask: theirs(t, -1, where=mask), f_in)(*args)
            ref.assert_close(got, expected, "float64", f"in_axes={f_in}")

        def grads(f):
            return jax.jit(jax.vmap(jax.grad(lambda t, mask: jnp.sum(jnp.where(mask, f(t, -1, where=mask), 0) * t))))

        ref.assert_close(grads(ours)(x, masks), grads(theirs)(x, masks), "float64", "jit(vmap(grad))")


@pytest.mark.parametrize("dtype", [jnp.float32, jnp.bfloat16], ids=["float32", "bfloat16"])
def test_where_kernels_tiles(monkeypatch, dtype):
    """The where rows kernels at dispatch._where_tiling's tiles: several rows a program on one warp
    (M not a multiple of BLOCK_M), one row on several warps (float32), and float32 rows read by every vector
    beside the mask (SKIP off; WHERE_FWD32_EVERY_LANES cut to 512 lanes here); forward against
    jax.nn in float64, the backward (vjp) against the float64 formula on the kept values."""
    monkeypatch.setattr(dispatch, "WHERE_FWD32_EVERY_LANES", 512)
    dispatch.plan_where.cache_clear()
    jax.clear_caches()
    try:
        name = jnp.dtype(dtype).name
        rng = np.random.default_rng(31)
        # (the tiles of the softmax; the 16-bit softmax backward at 16 values a thread, half the warps)
        for shape, fwd_tile, bwd_tile in [((37, 100), {"float32": (2, 1), "bfloat16": (8, 1)}[name],
                                           {"float32": (4, 2), "bfloat16": (4, 1)}[name]),
                                          ((3, 300), {"float32": (1, 2), "bfloat16": (2, 1)}[name],
                                           {"float32": (1, 2), "bfloat16": (1, 1)}[name])]:
            for forward, tile in ((True, fwd_tile), (False, bwd_tile)):
                (launch,) = mj._where_plan(shape, dtype, 1, False, forward)
                kw = launch.kwargs
                assert (kw["BLOCK_M"], kw["num_warps"]) == tile, (shape, forward, kw)
                assert kw["SKIP"] == (not forward or name != "float32" or shape[1] < 257), (shape, forward, kw)
                assert kw.get("maxnreg") == (64 if forward and name == "bfloat16" else None), (shape, forward, kw)
            x, dy = randn(*shape, dtype=dtype, seed=32), randn(*shape, dtype=dtype, seed=33, scale=1.0)
            m = rng.random(shape) < 0.7
            m[1] = False  # a fully masked row
            m[2, :] = False
            m[2, 3] = True  # one kept value
            for ours, theirs, log in OPS:
                y, pull = jax.vjp(lambda t: ours(t, -1, where=m), x)
                expected = theirs(jnp.asarray(x, jnp.float64), -1, where=m)
                ref.assert_close(np.asarray(y, np.float64), expected, name, f"{shape} y")
                fill = -np.inf if log else 0.0
                y64 = np.where(m, np.asarray(y, np.float64), fill)
                dy64 = np.where(m, np.asarray(dy, np.float64), 0.0)
                dx = np.where(m, ref.softmax_backward(y64, dy64, -1, log), 0.0)
                ref.assert_close(np.asarray(pull(dy)[0], np.float64), dx, name, f"{shape} dx",
                                 scale_atol=ref.backward_scale(y64, dy64, -1, log))
    finally:
        dispatch.plan_where.cache_clear()  # no plan of the cut limit outlives the test, failed or not
        jax.clear_caches()


def test_where_long_rows(monkeypatch):
    """Rows past dispatch.WHERE_BWD_MAX_N (and up to WHERE_MAX_N): the rows where kernel forward; the
    log_softmax backward cooperative (softmax_bwd_coop_where), the softmax's the unmasked one from
    saved y. Rows of more chunks than SMs (past WHERE_MAX_N on the interpreter's 4): XLA's forward,
    the unmasked softmax backward, XLA's log_softmax backward; a mask over a middle axis: XLA's
    forward. All against jax.nn."""
    seen = _record_kernels(monkeypatch)
    jax.clear_caches()
    too_long = mj._num_sms() * dispatch.WHERE_COOP_CHUNK_N[4] + 1
    for N, fwd, log_bwd in [(dispatch.WHERE_BWD_MAX_N + 3, ["softmax_fwd_rows_where"], ["softmax_bwd_coop_where"]),
                            (too_long, [], [])]:
        assert (mj._where_plan((2, N), jnp.float32, 1, False, True) is None) == (not fwd)
        x = randn(2, N, dtype=jnp.float32, seed=30)
        m = np.random.default_rng(31).random((1, N)) < 0.5
        for ours, theirs, log in OPS:
            seen.clear()
            ref.assert_close(ours(x, -1, where=m), theirs(jnp.asarray(x, jnp.float64), -1, where=m), "float32")
            g = jax.grad(lambda t: jnp.sum(jnp.where(m, ours(t, -1, where=m), 0.0) * x))(x)
            g_ref = jax.grad(lambda t: jnp.sum(jnp.where(m, theirs(t, -1, where=m), 0.0) * x))(
                jnp.asarray(x, jnp.float64))
            ref.assert_close(g, g_ref, "float32", f"N={N} log={log}", scale_atol=True)
            # the forward's kernel (JAX may reuse its trace under grad), then the backward's: the
            # cooperative where kernel or none for the log_softmax, the unmasked ones for the softmax
            backward = [k for k in seen if k not in fwd]
            assert set(fwd) <= set(seen), seen
            if log:
                assert set(backward) == set(log_bwd), seen
            else:
                assert backward and not any(k.endswith("_where") for k in backward), seen
    assert not mj._where_kernels(x, (0,), False) and mj._where_kernels(x[:, :8], (1,), False)


@pytest.fixture
def coop_where(monkeypatch):
    """The where kernels' limits cut to 16 values, in cooperative chunks of 16: rows of 17 to 64
    values (the interpreter plans for 4 SMs) take the cooperative where kernels both ways."""
    for name, value in [("WHERE_MAX_N", 16), ("WHERE_BWD_MAX_N", 16), ("WHERE_COOP_CHUNK_N", {2: 16, 4: 16, 8: 16})]:
        monkeypatch.setattr(dispatch, name, value)
    for name in ("WHERE_COOP_FWD_TILINGS", "WHERE_COOP_BWD_TILINGS"):  # their warps and caps, in chunks of 16
        monkeypatch.setattr(dispatch, name,
                            {k: tuple((16, *t[1:]) for t in ts) for k, ts in getattr(dispatch, name).items()})
    for name in ("WHERE_COOP_PEEL_BWD32_TILINGS", "WHERE_COOP_PACK_TILINGS"):
        monkeypatch.setattr(dispatch, name, tuple((16, *t[1:]) for t in getattr(dispatch, name)))
    dispatch.plan_where.cache_clear()
    jax.clear_caches()
    yield _record_kernels(monkeypatch)
    dispatch.plan_where.cache_clear()  # no plan of these limits outlives the test
    jax.clear_caches()


# masks over x of shape (2, 3, N), read by the cooperative where kernels over the last axis (N: -1)
COOP_WHERE_MASKS = {"full": (2, 3, -1), "columns (N,)": (-1,), "a value a row (2, 3, 1)": (2, 3, 1),
                    "padding (2, 1, N)": (2, 1, -1), "causal-like (3, N)": (3, -1)}


@pytest.mark.parametrize("N", [40, 45], ids=["N=40", "N=45 peeled"])
@pytest.mark.parametrize("dtype", [jnp.float64, jnp.float32, jnp.bfloat16],
                         ids=["float64 counters", "float32 TAG", "bfloat16 TAG capped"])
@pytest.mark.parametrize("mask", list(COOP_WHERE_MASKS), ids=list(COOP_WHERE_MASKS))
def test_where_cooperative_kernels(coop_where, mask, dtype, N):
    """The cooperative where kernels (kernels/where.py, *_coop_where: rows in 3 chunks of 16 here), on
    arrival counters (float64 partials, WHERE_COOP_CHUNK_N's tiling) and through TAG (float32 and
    bfloat16 in WHERE_COOP_FWD_TILINGS' / _BWD_TILINGS' first tiling, the forward under its register
    cap): values, the gradient and, for the
    log_softmax (whose backward they run; the softmax's is the unmasked one), the gradient of the
    gradient, against jax.nn in float64, over several mask layouts with a fully masked row. Rows of
    40 values start 16-byte aligned; rows of 45 are peeled (PEEL: head, body by whole vectors, tail),
    the full mask's rows too (W_PEEL), the other masks' rows read value by value."""
    seen = coop_where
    x = randn(2, 3, N, dtype=dtype, seed=40)
    w = randn(2, 3, N, dtype=jnp.float64, seed=41)
    m = np.random.default_rng(42).random(tuple(N if d == -1 else d for d in COOP_WHERE_MASKS[mask])) < 0.6
    m[(0,) * m.ndim] = False  # a masked column, for the (N,) mask: every row's first value
    if m.ndim > 1:  # (m[()] of a 1-D mask would mask it all)
        m[(0,) * (m.ndim - 1)] = False  # a fully masked row
    assert m.any() and not m.all()
    x64 = jnp.asarray(x, jnp.float64)
    peeled = N % (16 // jnp.dtype(dtype).itemsize) != 0
    assert peeled == (N == 45)
    view = mj._where_view(x.shape, jnp.asarray(m).reshape((1,) * (3 - m.ndim) + m.shape), 1)[2:]
    for fwd in (True, False):  # the log_softmax's forward and backward plans
        plan = mj._where_plan(x.shape, dtype, 1, True, fwd, view)
        kw = dict(plan[0].kwargs)
        assert dispatch.cooperative(plan) and kw["TAG"] == (dtype != jnp.float64)
        assert (kw["PEEL"], kw["W_PEEL"]) == (peeled, peeled and mask == "full"), kw
        # PACK: the 16-bit forward over a mask of N values a row, read by whole words
        assert kw.get("PACK", False) == (fwd and dtype == jnp.bfloat16 and mask != "a value a row (2, 3, 1)"
                                         and (not peeled or mask == "full")), kw
        itemsize = jnp.dtype(dtype).itemsize
        if fwd:
            tilings = dispatch.WHERE_COOP_PACK_TILINGS if kw["PACK"] else dispatch.WHERE_COOP_FWD_TILINGS.get(itemsize)
        else:
            tilings = (dispatch.WHERE_COOP_PEEL_BWD32_TILINGS if peeled and itemsize == 4
                       else dispatch.WHERE_COOP_BWD_TILINGS.get(itemsize))
        if tilings:  # the first tiling (in the fixture's chunks of 16)
            assert (kw["CHUNK_N"], kw["num_warps"], kw.get("maxnreg")) == tilings[0], kw
        else:  # float64
            assert (kw["CHUNK_N"], kw["num_warps"]) == (16, dispatch.WHERE_COOP_WARPS), kw
            assert kw.get("maxnreg") == (dispatch.WHERE_COOP_MAXNREG.get(jnp.dtype(dtype).itemsize) if fwd else None)
    for ours, theirs, log in OPS:
        seen.clear()
        got, expected = ours(x, -1, where=m), theirs(x64, -1, where=m)
        ref.assert_close(np.asarray(got, np.float64), expected, jnp.dtype(dtype).name, f"{mask} log={log}")
        np.testing.assert_array_equal(np.isinf(got), np.isinf(expected))

        def loss(f, t):
            return jnp.sum(jnp.where(m, f(t, -1, where=m), 0.0).astype(jnp.float64) * w)

        g, g_ref = jax.grad(lambda t: loss(ours, t))(x), jax.grad(lambda t: loss(theirs, t))(x64)
        ref.assert_close(np.asarray(g, np.float64), g_ref, jnp.dtype(dtype).name, f"grad {mask} log={log}",
                         scale_atol=True)
        assert "softmax_fwd_coop_where" in seen, seen
        assert ("softmax_bwd_coop_where" in seen) == log and not any("_rows_where" in k for k in seen), seen
        if log and dtype == jnp.float64:
            sq = jax.grad(lambda t: jnp.sum(jax.grad(lambda u: loss(ours, u))(t) ** 2))(x)
            sq_ref = jax.grad(lambda t: jnp.sum(jax.grad(lambda u: loss(theirs, u))(t) ** 2))(x64)
            ref.assert_close(sq, sq_ref, "float64", f"grad of grad {mask}")


@pytest.mark.parametrize("ops", OPS, ids=OP_IDS)
def test_where_cooperative_special_values(coop_where, ops):
    """test_where_kernels_special_values through the cooperative where kernels (rows of 3 chunks),
    the special values in the first chunk, the last or the middle one; under vmap with a batched
    mask too."""
    ours, theirs, _ = ops
    x = np.array(randn(8, 40, seed=43))
    m = np.random.default_rng(44).random(x.shape) < 0.7
    x[0, ~m[0]] = np.nan
    x[1, 16 + np.argmax(m[1, 16:])] = np.nan
    x[2, 32 + np.argmax(m[2, 32:])] = np.inf
    x[3, ~m[3]] = np.inf
    x[4] = -np.inf
    m[5] = False
    m[6] = False
    m[6, 20] = True  # one kept value, in the middle chunk: 1 (0), the other chunks empty
    x[7, 5] = 1e30
    m[7, 5] = True
    got, expected = ours(jnp.asarray(x), -1, where=m), theirs(jnp.asarray(x), -1, where=m)
    assert set(coop_where) == {"softmax_fwd_coop_where"}, coop_where
    np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))
    np.testing.assert_array_equal(np.isinf(got), np.isinf(expected))
    finite = np.isfinite(expected)
    np.testing.assert_allclose(np.asarray(got)[finite], np.asarray(expected)[finite], rtol=1e-6, atol=1e-6)
    xs, masks = jnp.asarray(np.nan_to_num(x[:4], posinf=5.0)), m[4:]
    ref.assert_close(jax.vmap(lambda t, mask: ours(t, -1, where=mask))(xs.reshape(2, 2, 40), masks.reshape(2, 2, 40)),
                     jax.vmap(lambda t, mask: theirs(t, -1, where=mask))(xs.reshape(2, 2, 40),
                                                                          masks.reshape(2, 2, 40)), "float32")


@pytest.mark.parametrize("N", [40, 45], ids=["N=40", "N=45 peeled (W_PEEL)"])
@pytest.mark.parametrize("ops", OPS, ids=OP_IDS)
def test_where_cooperative_packed_special_values(coop_where, ops, N):
    """The packed cooperative where forward (PACK: bfloat16 x held as words, the dropped values made
    -inf in them) on the rows its one-op y does not serve, which take `_coop_where_exact`: a kept
    NaN, a kept +inf, a row of kept -inf, a fully masked row, one kept value, maxima of 256 and more
    in magnitude (1000, -1000, 1e30) and NaN dropped beside kept values; and on rows it does serve,
    a max of 255. In chunks of 16 values, 16-byte aligned or peeled. Against jax.nn in float64,
    NaN and inf where it has them."""
    ours, theirs, _ = ops
    rng = np.random.default_rng(46)
    x = rng.standard_normal((10, N)) * 3
    m = rng.random((10, N)) < 0.7
    m[:, [0, 20, N - 1]] = True
    x[0, 20] = np.nan  # kept NaN, in the middle chunk
    x[1, N - 1] = np.inf  # kept +inf, in the tail
    x[2] = -np.inf
    m[3] = False
    m[4] = False
    m[4, 0] = True  # the one kept value: in the head
    x[5] += 1000.0
    x[6] -= 1000.0
    x[7, 20] = 1e30
    x[8, ~m[8]] = np.nan  # dropped NaN
    x[9, 20] = 255.0  # the one-op path: |max| < COOP_FAST_MAX
    x = jnp.asarray(x, jnp.bfloat16)
    view = mj._where_view(x.shape, jnp.asarray(m), 1)[2:]
    kw = dict(mj._where_plan(x.shape, jnp.bfloat16, 1, False, True, view)[0].kwargs)
    assert kw["PACK"] and kw["PEEL"] == kw["W_PEEL"] == (N == 45), kw
    got, expected = ours(x, -1, where=m), theirs(jnp.asarray(x, jnp.float64), -1, where=m)
    assert set(coop_where) == {"softmax_fwd_coop_where"}, coop_where
    np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))
    np.testing.assert_array_equal(np.isinf(got), np.isinf(expected))
    ref.assert_close(np.asarray(got, np.float64), expected, "bfloat16", "packed special values")


@pytest.mark.parametrize("mask_rows", [14, 7], ids=["own mask rows (W_PEEL)", "7 mask rows for 14"])
@pytest.mark.parametrize("ops", OPS, ids=OP_IDS)
def test_where_cooperative_peeled_edges(coop_where, ops, mask_rows):
    """The peeled cooperative where forward (rows of 45 float32 values: 16-byte boundaries 0-3 values
    into a row) with special values at the rows' edges, the head's first value and the tail's last:
    a kept NaN or +inf there, the one kept value there, a kept 1e30 there beside masked-out NaN, a
    fully masked row; each row twice, at two alignments, its mask row its own (W_PEEL) or one of 7
    shared by two rows 315 values apart (read value by value). Against jax.nn, NaN and inf where it
    has them."""
    ours, theirs, _ = ops
    rng = np.random.default_rng(45)
    x = rng.standard_normal((2, 7, 45)) * 3
    m = rng.random((7, 45)) < 0.7
    m[:5, [0, 44]] = True
    x[:, 0, 0] = np.nan  # a kept NaN in the head
    x[:, 1, 44] = np.inf  # a kept +inf in the tail
    m[2], m[3] = False, False
    m[2, 0] = m[3, 44] = True  # the only kept value: in the head, in the tail
    x[:, 4, [1, 44]] = np.nan  # masked out, beside a kept 1e30 (in the head of x[1, 4])
    m[4, [1, 44]] = False
    x[:, 4, 0] = 1e30
    m[5] = False
    w = np.broadcast_to(m, (2, 7, 45)).copy() if mask_rows == 14 else m
    x = jnp.asarray(x, jnp.float32)
    view = mj._where_view(x.shape, jnp.asarray(w).reshape((1,) * (3 - w.ndim) + w.shape), 1)[2:]
    kw = dict(mj._where_plan(x.shape, jnp.float32, 1, False, True, view)[0].kwargs)
    assert kw["PEEL"] and kw["W_PEEL"] == (mask_rows == 14), kw
    got, expected = ours(x, -1, where=w), theirs(x, -1, where=w)
    assert set(coop_where) == {"softmax_fwd_coop_where"}, coop_where
    np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))
    np.testing.assert_array_equal(np.isinf(got), np.isinf(expected))
    finite = np.isfinite(expected)
    np.testing.assert_allclose(np.asarray(got)[finite], np.asarray(expected)[finite], rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("ops", OPS, ids=OP_IDS)
def test_check_grads(ops):
    ours, _, _ = ops
    x = randn(3, 20, dtype=jnp.float64, seed=5)
    check_grads(lambda t: ours(t, -1), (x,), order=2, modes=["rev"])
    check_grads(lambda t: ours(t, 0), (x,), order=2, modes=["rev"])  # the columns kernels


@pytest.mark.parametrize("ops", OPS, ids=OP_IDS)
def test_transformations(ops):
    """jit, grad, vmap, value_and_grad and nestings agree with jax.nn on the same function."""
    ours, theirs, _ = ops
    x = randn(4, 3, 20, dtype=jnp.float64, seed=6)
    w = randn(20, dtype=jnp.float64, seed=7)

    def loss(f):
        return lambda t: jnp.sum(f(t, -1) * w)

    cases = {
        "jit": lambda f: jax.jit(lambda t: f(t, -1)),
        "grad": lambda f: jax.vmap(jax.grad(loss(f))),
        "jit(vmap(grad))": lambda f: jax.jit(jax.vmap(jax.grad(loss(f)))),
        "vmap(in_axes=1)": lambda f: jax.vmap(lambda t: f(t, -1), in_axes=1, out_axes=1),
        "value_and_grad": lambda f: jax.jit(jax.vmap(jax.value_and_grad(loss(f)))),
        "vmap(vmap)": lambda f: jax.vmap(jax.vmap(lambda t: f(t, 0))),
        "grad(grad)": lambda f: jax.vmap(jax.grad(lambda t: jnp.sum(jax.grad(loss(f))(t) ** 2))),
        "jit(jacrev)": lambda f: jax.jit(jax.jacrev(lambda t: f(t[0, 0], -1))),
    }
    for name, make in cases.items():
        got, expected = make(ours)(x), make(theirs)(x)
        jax.tree.map(lambda a, b: ref.assert_close(a, b, "float64", name), got, expected)


def test_backward_vmap_over_cotangent_only():
    """vmap of a pullback: y unbatched, dy batched (the custom_vmap rule broadcasts y)."""
    x = randn(3, 20, dtype=jnp.float64, seed=8)
    dys = randn(5, 3, 20, dtype=jnp.float64, seed=9)
    for ours, theirs, _ in OPS:
        _, pull = jax.vjp(ours, x)
        _, pull_ref = jax.vjp(theirs, x)
        ref.assert_close(jax.vmap(pull)(dys)[0], jax.vmap(pull_ref)(dys)[0], "float64")


@pytest.mark.parametrize("dtype", [jnp.float32, jnp.bfloat16])
def test_backward_matches_reference(dtype):
    x = randn(5, 3, 50, dtype=dtype, seed=10)
    dy = randn(5, 3, 50, dtype=dtype, seed=11)
    for ours, _, log in OPS:
        y, pull = jax.vjp(lambda t: ours(t, 1), x)
        (dx,) = pull(dy)
        assert dx.dtype == dtype
        expected = ref.softmax_backward(np.asarray(y, np.float64), np.asarray(dy, np.float64), 1, log)
        ref.assert_close(np.asarray(dx, np.float64), expected, jnp.dtype(dtype).name, scale_atol=True)


@pytest.mark.parametrize("dtype", [jnp.float32, jnp.bfloat16])
def test_few_long_rows_split_and_cooperative(dtype):
    """Few long rows: a launcher that zeroes counters on every call (the JAX adapter in the
    interpreter, or with MULTISOFTMAX_JAX_KEPT_SCRATCH=0) gets the split plan where the cooperative
    grid is small (dispatch.SPLIT_FRESH_FWD_MAX_PER_SM; in the backward the log_softmax's, and the
    softmax's on counters, SPLIT_FRESH_BWD_MAX_PER_SM), the cooperative kernels beyond; the adapter's
    results (on a GPU: the cooperative plans, on kept scratch) match float64."""
    from multisoftmax import dispatch

    sms, name = mj._num_sms(), jnp.dtype(dtype).name
    N = 20000  # aligned, past the rows held in registers: 3 cooperative chunks a row
    for M in (1, 3 * sms):  # 3 programs: split forward (and, on 6 SMs or more, log_softmax backward); 9 an SM: coop
        x = randn(M, N, dtype=dtype, seed=M)
        dy = randn(M, N, dtype=dtype, seed=M + 1, scale=1.0)
        assert dispatch.family(M, N, x.dtype.itemsize, sms, True) == "coop"
        for ours, _, log in OPS:
            fwd = dispatch.plan_forward(M, N, N, N, name, log, sms, counters_per_call=True)
            bwd = dispatch.plan_backward(M, N, N, N, N, name, log, sms, counters_per_call=True,
                                         register_cap=mj._register_caps_work())
            assert ("split" in fwd[0].kernel) == (M == 1)
            assert ("split" in bwd[0].kernel) == (M == 1 and log and 3 <= sms / 2)
            y, pull = jax.vjp(lambda t: ours(t, -1), x)
            x64 = np.asarray(x, np.float64)
            ref.assert_close(np.asarray(y, np.float64), ref.softmax(x64, -1, log), name, f"M={M} log={log}")
            y64, dy64 = np.asarray(y, np.float64), np.asarray(dy, np.float64)
            ref.assert_close(np.asarray(pull(dy)[0], np.float64), ref.softmax_backward(y64, dy64, -1, log), name,
                             f"bwd M={M} log={log}", scale_atol=True)


def _vjp_matches_twice(ours, log, x, dy, name, what):
    """`ours` (the adapter's softmax or log_softmax, `log`) over the last axis of x and its vjp of dy
    against float64, twice over (a second call on the same compiled plan)."""
    for _ in range(2):
        y, pull = jax.vjp(lambda t: ours(t, -1), x)
        ref.assert_close(np.asarray(y, np.float64), ref.softmax(np.asarray(x, np.float64), -1, log), name,
                         f"{what} log={log}")
        y64, dy64 = np.asarray(y, np.float64), np.asarray(dy, np.float64)
        ref.assert_close(np.asarray(pull(dy)[0], np.float64), ref.softmax_backward(y64, dy64, -1, log), name,
                         f"{what} bwd log={log}", scale_atol=True)


@pytest.mark.parametrize("dtype", [jnp.float32, jnp.bfloat16])
def test_keyed_partials_forward(monkeypatch, dtype):
    """The cooperative forward on keyed partials (SENT: dispatch's wide packed chunks and
    COOP_SENT32_*; the bfloat16 softmax with POLY, which FORCE_SENT switches on), forced on a small grid,
    through the JAX adapter
    (its counters and words kept from call to call on a GPU, zeroed for each call in the
    interpreter): the forward and its vjp match float64, twice over."""
    from forced_plans import force_sent
    from multisoftmax import dispatch

    force_sent(dispatch, monkeypatch.setattr)
    jax.clear_caches()
    try:
        sms, name = mj._num_sms(), jnp.dtype(dtype).name
        M, N = 3 * sms, 20000  # aligned: 3 chunks of 8192 a row (16-bit: 2 packed of 16384)
        x = randn(M, N, dtype=dtype, seed=M + 5)
        dy = randn(M, N, dtype=dtype, seed=M + 6, scale=1.0)
        for ours, _, log in OPS:
            kw = dispatch.plan_forward(M, N, N, N, name, log, sms, counters_per_call=True)[-1].kwargs
            assert kw["SENT"] and not kw["TAG"] and (kw["LATE_LEAVE"] or not (log and dtype == jnp.float32))
            assert kw["POLY"] == (dtype == jnp.bfloat16 and not log)  # _exp2_poly on half the values
            _vjp_matches_twice(ours, log, x, dy, name, "keyed")
    finally:
        monkeypatch.undo()
        dispatch.plan_forward.cache_clear()
        jax.clear_caches()


@pytest.mark.parametrize("dtype", [jnp.float32, jnp.bfloat16])
def test_pipelined_backward(monkeypatch, dtype):
    """The pipelined backward (softmax_bwd_pipe; dispatch.PIPE_*) and forward (softmax_fwd_pipe, float32;
    PIPE_FWD_*), forced on a small grid, through the JAX adapter (its counters kept on a GPU, zeroed for each
    call in the interpreter): the forward and its vjp match float64, twice over, where PIPE_PLANS has a plan
    (the bfloat16 log_softmax keeps the cooperative kernel; the bfloat16 forward too)."""
    from forced_plans import force_pipe
    from multisoftmax import dispatch

    force_pipe(dispatch, monkeypatch.setattr)
    jax.clear_caches()
    try:
        sms, name = mj._num_sms(), jnp.dtype(dtype).name
        M, N = 3 * sms, 20000  # aligned: 3 chunks of 8192 a row; the pipelined plans' 2048 or 4096 values
        x = randn(M, N, dtype=dtype, seed=M + 7)
        dy = randn(M, N, dtype=dtype, seed=M + 8, scale=1.0)
        for ours, _, log in OPS:
            plan = dispatch.plan_backward(M, N, N, N, N, name, log, sms, counters_per_call=True)
            assert (plan[-1].kernel == "softmax_bwd_pipe") == (dtype == jnp.float32 or not log), plan[-1].kernel
            fwd = dispatch.plan_forward(M, N, N, N, name, log, sms, counters_per_call=True, gpu=mj._gpu())[-1]
            assert (fwd.kernel == "softmax_fwd_pipe") == (dtype == jnp.float32), fwd.kernel
            _vjp_matches_twice(ours, log, x, dy, name, "pipelined")
    finally:
        monkeypatch.undo()
        dispatch.plan_forward.cache_clear()
        dispatch.plan_backward.cache_clear()
        jax.clear_caches()


def test_register_cap_backward():
    """dispatch's COOP_CAP32_REGS plan (the float32 log_softmax backward deferring y, under Triton's
    maxnreg) in the JAX adapter, at 15 programs an SM with TAG: dx matches float64, twice over,
    with a row whose y is -inf in a chunk. On the GPU the cap reaches the compiler through the hook
    on jax-triton (test_register_cap_reaches_the_ptx_subprocess)."""
    from multisoftmax import dispatch

    sms = mj._num_sms()
    M, N = 5 * sms, 20000  # aligned: 3 chunks of 8192 a row
    plan = dispatch.plan_backward(M, N, N, N, N, "float32", True, sms, counters_per_call=True,
                                  register_cap=mj._register_caps_work())
    assert plan[-1].kwargs["maxnreg"] == dispatch.COOP_CAP32_REGS and plan[-1].kwargs["DEFER_Y"], plan
    x = np.array(randn(M, N, seed=31))
    x[1, 8192:16384] = -np.inf
    dy = randn(M, N, seed=32, scale=1.0)
    for _ in range(2):
        y, pull = jax.vjp(lambda t: mj.log_softmax(t, -1), jnp.asarray(x))
        y64, dy64 = np.asarray(y, np.float64), np.asarray(dy, np.float64)
        ref.assert_close(np.asarray(pull(dy)[0], np.float64), ref.softmax_backward(y64, dy64, -1, True), "float32",
                         "capped bwd", scale_atol=True)


class _StandInBackend:
    """A stand-in for Triton's CUDA backend as jax-triton's compile drives it (test_compile_hook)."""

    def __init__(self, seen):
        self.seen = seen

    def parse_options(self, opts):
        self.seen.append(("maxnreg", opts.get("maxnreg")))
        return opts

    def make_llir(self, src, metadata, options, capability):
        import triton

        self.seen.append(("line info off", triton.knobs.compilation.disable_line_info))
        return src

    def make_ptx(self, src, metadata, options, capability):
        metadata.update(name="kernel_0d1d", shared=64)
        return ".version 8.0 // " + src


def _stand_in_jax_triton(seen):
    """A stand-in for jax_triton whose compile runs the backend's passes once a function (keyed by
    the function, as jax-triton's cache) and returns (kernel, attrs)."""
    import types

    cache = {}

    def get_or_create_triton_kernel(backend_init_func, platform, fn, arg_dtypes, scalar_args, *, num_warps,
                                    num_ctas, **kwargs):
        if fn not in cache:
            backend = backend_init_func(0, 90)
            opts = backend.parse_options({"num_warps": num_warps, "num_stages": 1})
            metadata = {}
            ptx = backend.make_ptx(backend.make_llir("llir", metadata, opts, 90), metadata, opts, 90)
            cache[fn] = ("fat", ptx, "tt.func @kernel")
        return cache[fn], "attrs"

    def kernel(*args):
        seen.append(("TritonKernel", args))
        return ("lean", *args)

    return types.SimpleNamespace(triton_lib=types.SimpleNamespace(
        get_or_create_triton_kernel=get_or_create_triton_kernel,
        triton_kernel_call_lib=types.SimpleNamespace(TritonKernel=kernel)))


def test_compile_hook():
    """`_hook_compile` on a stand-in for jax_triton: a capped kernel from `_kernel_copy` compiles with
    maxnreg among the backend's options, another of ours without; ours compile without line info
    (Triton's knob on for their make_llir alone) and come back as a kernel of the same PTX and an
    empty TTIR, the same object at every lowering; a kernel not ours passes through untouched. The
    hook goes on once."""
    import triton

    from multisoftmax import kernels

    seen = []
    fake = _stand_in_jax_triton(seen)
    plain = fake.triton_lib.get_or_create_triton_kernel
    mj._hook_compile(fake)
    hooked = fake.triton_lib.get_or_create_triton_kernel
    mj._hook_compile(fake)
    assert fake.triton_lib.get_or_create_triton_kernel is hooked and hooked is not plain
    capped = mj._kernel_copy("softmax_bwd_coop", 64, False)
    assert capped is mj._kernel_copy("softmax_bwd_coop", 64, False) and capped is not kernels.get("softmax_bwd_coop")
    init = lambda d, c: _StandInBackend(seen)  # noqa: E731

    lean, attrs = hooked(init, "cuda", capped, [], [], num_warps=8, num_ctas=1, num_stages=1)
    assert attrs == "attrs" and lean == ("lean", "kernel_0d1d", 8, 1, 64, ".version 8.0 // llir", "", 90)
    assert seen == [("maxnreg", 64), ("line info off", True), ("TritonKernel", lean[1:])]
    assert triton.knobs.compilation.disable_line_info is False  # put back after the compile
    assert hooked(init, "cuda", capped, [], [], num_warps=8, num_ctas=1, num_stages=1)[0] is lean
    assert len(seen) == 3  # jax-triton's cache hit: no compile, the same lean kernel

    seen.clear()
    hooked(init, "cuda", kernels.get("softmax_bwd_coop"), [], [], num_warps=4, num_ctas=1, num_stages=1)
    assert seen[:2] == [("maxnreg", None), ("line info off", True)]

    seen.clear()
    foreign = type("JITFunction", (), {"fn": staticmethod(_stand_in_jax_triton)})()  # .fn from outside multisoftmax
    other, _ = hooked(init, "cuda", foreign, [], [], num_warps=4, num_ctas=1, num_stages=1)
    assert other[0] == "fat" and seen == [("maxnreg", None), ("line info off", False)]


class _CubinBackend(_StandInBackend):
    def make_cubin(self, src, metadata, options, capability):
        self.seen.append(("cubin", src))
        return b"cubin"


def test_compile_hook_fills_shared(monkeypatch):
    """`_hook_compile` on a stand-in for jax_triton: a filling kernel from `_kernel_copy` comes back as a
    kernel asking for occupancy.fill_shared's bytes at the registers a thread that Triton's ptxas
    gives it (the cubin loaded by Triton's CudaUtils, as CompiledKernel reads them: here 40, 12
    programs an SM of 4 warps on the H100); where that fails, for its own shared memory."""
    import triton.backends.nvidia.driver as nvidia

    from multisoftmax import kernels, occupancy

    seen = []

    class Utils:
        def load_binary(self, name, cubin, shared, device):
            seen.append(("load", name, cubin, shared, device))
            return (1, 2, 40, 0, 1024)

    monkeypatch.setattr(nvidia, "CudaUtils", Utils)
    monkeypatch.setattr(occupancy, "limits", lambda device: occupancy.Limits(233472, 65536, 2048, 32, 1024))
    fake = _stand_in_jax_triton(seen)
    mj._hook_compile(fake)
    hooked = fake.triton_lib.get_or_create_triton_kernel
    filled = mj._kernel_copy("softmax_fwd_rows", None, True)
    assert filled is mj._kernel_copy("softmax_fwd_rows", None, True) and filled is not kernels.get("softmax_fwd_rows")
    lean, _ = hooked(lambda d, c: _CubinBackend(seen), "cuda", filled, [], [], num_warps=4, num_ctas=1, num_stages=1)
    assert lean[4] == 233472 // 12 - 1024, lean
    assert ("cubin", ".version 8.0 // llir") in seen and ("load", "kernel_0d1d", b"cubin", 64, 0) in seen

    class Broken:
        def load_binary(self, *args):
            raise RuntimeError("no driver")

    monkeypatch.setattr(nvidia, "CudaUtils", Broken)
    other = mj._kernel_copy("softmax_bwd_rows", None, True)
    lean, _ = hooked(lambda d, c: _CubinBackend(seen), "cuda", other, [], [], num_warps=4, num_ctas=1, num_stages=1)
    assert lean[4] == 64  # the kernel's own
    plain, _ = hooked(lambda d, c: _CubinBackend(seen), "cuda", kernels.get("softmax_bwd_rows"), [], [],
                      num_warps=4, num_ctas=1, num_stages=1)
    assert plain[4] == 64


@pytest.mark.skipif(jax.default_backend() != "gpu", reason="jax-triton compiles on a GPU backend only")
def test_register_cap_reaches_the_ptx_subprocess(tmp_path, monkeypatch):
    """The JAX adapter's capped kernels compile to PTX with `.maxnreg 64`, its other kernels
    without: jax-triton's own dump (JAX_TRITON_DUMP_DIR, read when it is imported) in a child
    process, float32 log_softmax backward at 64 x 65536 (dispatch's COOP_CAP32_REGS plan; the rows of
    1M values it was shown on take the pipelined kernel since PIPE_*) and the forward, and bfloat16
    softmax forward at 128 x 1048576 (COOP_X2_CAP_REGS: the wide chunks' with CVT_X2)."""
    from uninterpreted import run_uninterpreted

    monkeypatch.setenv("JAX_TRITON_DUMP_DIR", str(tmp_path))
    out = run_uninterpreted(
        "import sys; sys.path.insert(0, 'tests')\n"
        "import jax, jax.numpy as jnp, numpy as np\n"
        "jax.config.update('jax_enable_x64', True)\n"
        "import multisoftmax.jax as mj, reference64 as ref\n"
        "x = jnp.asarray(np.random.default_rng(0).standard_normal((64, 65536)), jnp.float32)\n"
        "dy = jnp.asarray(np.random.default_rng(1).standard_normal((64, 65536)), jnp.float32)\n"
        "y, pull = jax.vjp(mj.log_softmax, x)\n"
        "y64, dy64 = np.asarray(y, np.float64), np.asarray(dy, np.float64)\n"
        "ref.assert_close(np.asarray(pull(dy)[0], np.float64), ref.softmax_backward(y64, dy64, -1, True),"
        " 'float32', 'capped bwd', scale_atol=True)\n"
        "xb = jnp.asarray(np.random.default_rng(2).standard_normal((128, 1048576)), jnp.bfloat16)\n"
        "yb = np.asarray(mj.softmax(xb), np.float64)\n"
        "ref.assert_close(yb, ref.softmax(np.asarray(xb, np.float64)), 'bfloat16', 'capped fwd')\n", timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    # one folder a compiled kernel; the file is named by the kernel's name alone
    ptx = {str(p.relative_to(tmp_path)): p.read_text() for p in tmp_path.glob("*/*.ptx")}
    capped = sorted((path.split("/")[-1], path) for path, t in ptx.items() if ".maxnreg 64" in t)
    assert [n for n, _ in capped] == ["softmax_bwd_coop.ptx", "softmax_fwd_coop.ptx"], sorted(ptx)
    assert "cvt.rn.bf16x2.f32" in ptx[capped[1][1]], capped
    assert sum(path.split("/")[-1].startswith("softmax_fwd") for path in ptx) >= 2, sorted(ptx)
    assert not [n for n, t in ptx.items() if ".loc" in t or ".debug_info" in t], "compiled with line info"


@pytest.mark.skipif(jax.default_backend() != "gpu", reason="jax-triton compiles on a GPU backend only")
def test_custom_call_payload_is_lean(monkeypatch):
    """The custom calls' payloads (jaxlib hashes each on every call) hold the kernels' PTX without
    line info and no TTIR, and the results are the kernels': a fresh lowering of the forward (the
    split plan's two kernels) and of the backward, against float64."""
    import types
    import zlib

    lib = mj._jax_triton().triton_lib
    protos = []
    monkeypatch.setattr(lib, "zlib", types.SimpleNamespace(compress=lambda b: protos.append(b) or zlib.compress(b)))
    x = randn(3, 98304 + 37, seed=41)  # a shape of its own: lowered here
    dy = randn(3, 98304 + 37, seed=42, scale=1.0)
    y, pull = jax.vjp(jax.jit(lambda t: mj.softmax(t, -1)), x)
    dx = pull(dy)[0]
    assert len(protos) >= 2, len(protos)
    for proto in protos:
        assert b".version" in proto and b".entry" in proto, proto[:200]
        assert b".loc" not in proto and b"tt.func" not in proto and b"loc(" not in proto, len(proto)
    y64 = np.asarray(y, np.float64)
    ref.assert_close(np.asarray(y), ref.softmax(np.asarray(x, np.float64)), "float32")
    ref.assert_close(np.asarray(dx, np.float64), ref.softmax_backward(y64, np.asarray(dy, np.float64), -1, False),
                     "float32", "bwd", scale_atol=True)


def test_kernels_run_not_the_native_op(monkeypatch):
    """On a GPU or with the interpreter, jax.nn's softmax must never be called."""
    def refuse(*args, **kwargs):
        raise AssertionError("jax.nn's softmax was called")

    x = randn(3, 10, seed=12)
    expected = ref.softmax(np.asarray(x, np.float64))
    monkeypatch.setattr(jax.nn, "softmax", refuse)
    monkeypatch.setattr(jax.nn, "log_softmax", refuse)
    y = mj.softmax(x)
    g = jax.grad(lambda t: mj.log_softmax(t)[0, 0])(x)
    monkeypatch.undo()
    ref.assert_close(y, expected, "float32")
    assert np.isfinite(np.asarray(g)).all()


def test_concurrent_calls_in_one_program():
    """Many calls in one jitted program, which XLA's CPU runtime runs on several threads at once
    (through the interpreter: launch._INTERPRETER_LOCK), forward and backward, match jax.nn."""
    xs = tuple(randn(2, 16, 16, seed=20 + i) for i in range(4))
    _, pull = jax.vjp(mj.softmax, xs[0])
    _, pull_ref = jax.vjp(jax.nn.softmax, xs[0])

    def chain(f, sets):
        outs, prev = [], None
        for i in range(20):
            a = sets[i % 4]
            if prev is not None:  # as bench/timing.py's chains
                prev, a = jax.lax.optimization_barrier((prev, a))
            prev = f(a)
            outs.append(prev)
        return outs

    for ours, theirs in ((mj.log_softmax, jax.nn.log_softmax), (lambda d: pull(d)[0], lambda d: pull_ref(d)[0])):
        got = jax.jit(lambda s: chain(ours, s))(xs)
        expected = chain(theirs, xs)
        jax.tree.map(lambda a, b: ref.assert_close(a, b, "float32"), got, expected)


def test_cpu_default_is_native(monkeypatch):
    if jax.default_backend() == "gpu":
        pytest.skip("the native fallback is the CPU backend's")
    monkeypatch.setenv("MULTISOFTMAX_INTERPRET", "0")
    calls = []
    native = jax.nn.softmax
    monkeypatch.setattr(jax.nn, "softmax", lambda *a, **k: calls.append(1) or native(*a, **k))
    mj.softmax(randn(3, 10))
    assert calls == [1]
    x, m = randn(3, 10), np.arange(10) % 3 > 0  # where= passes through, broadcast
    np.testing.assert_array_equal(mj.softmax(x, None, where=m), native(x, None, where=m))
    assert calls == [1, 1]


@pytest.mark.parametrize("ops", OPS, ids=OP_IDS)
@pytest.mark.parametrize("kind", ["one_tile", "loop", "split", "coop"])
def test_middle_axis_columns(monkeypatch, ops, kind):
    """One middle axis runs the columns kernels on x as (B, N, T) (no transpose): held in one tile,
    looped, split into chunks or cooperative (COLS_MAX_ONE_TILE lowered, the tiles and chunks
    shrunk, the other plans ruled out); forward, the pullback, vmap (a batch axis becomes more of B)
    and second order, against jax.nn in float64."""
    from multisoftmax import dispatch

    ours, theirs, _ = ops
    if kind != "one_tile":
        monkeypatch.setattr(dispatch, "COLS_MAX_ONE_TILE", 0)
        monkeypatch.setattr(dispatch, "COLS_TILE", 64)
        monkeypatch.setattr(dispatch, "COLS_TILE_SHORT", 64)
        # coop: float64 chunks of 64 values, 4 positions of 16 columns: 4 chunks, the interpreter's 4 SMs
        monkeypatch.setattr(dispatch, "COLS_COOP_VALUES", 128 if kind == "coop" else 2 ** 20)
        monkeypatch.setattr(dispatch, "COLS_SPLIT_PROGRAMS_PER_SM", 8 if kind == "split" else 0)
    dispatch.plan_columns_forward.cache_clear()
    dispatch.plan_columns_backward.cache_clear()
    jax.clear_caches()  # traces made with the other rule (on the GPU: the kernel calls' traces) are kept
    planned = []
    real = dispatch.plan_columns_forward
    monkeypatch.setattr(dispatch, "plan_columns_forward", lambda *a, **k: planned.append(a) or real(*a, **k))
    x = randn(3, 13, 2, 5, dtype=jnp.float64, seed=20)
    ref.assert_close(ours(x, 1), theirs(x, 1), "float64", "forward")
    plan = real(*planned[0])
    assert planned[0][:3] == (3, 13, 10)
    assert plan[0].kernel == {"one_tile": "softmax_fwd_cols", "loop": "softmax_fwd_cols",
                              "split": "softmax_fwd_stats_cols", "coop": "softmax_fwd_coop_cols"}[kind]
    assert kind not in ("one_tile", "loop") or plan[0].kwargs["ONE_TILE"] == (kind == "one_tile")
    dy = randn(3, 13, 2, 5, dtype=jnp.float64, seed=21)
    _, pull = jax.vjp(lambda t: ours(t, 1), x)
    _, pull_ref = jax.vjp(lambda t: theirs(t, 1), x)
    ref.assert_close(pull(dy)[0], pull_ref(dy)[0], "float64", "pullback")
    xs = randn(4, 3, 13, 10, dtype=jnp.float64, seed=22)
    ref.assert_close(jax.vmap(lambda t: ours(t, 1))(xs), jax.vmap(lambda t: theirs(t, 1))(xs), "float64", "vmap")
    ref.assert_close(jax.vmap(pull, in_axes=0)(jnp.stack([dy, 2 * dy]))[0],
                     jax.vmap(pull_ref, in_axes=0)(jnp.stack([dy, 2 * dy]))[0], "float64", "vmap(pullback)")
    check_grads(lambda t: ours(t, 0), (randn(6, 4, dtype=jnp.float64, seed=23),), order=2, modes=["rev"])
    real.cache_clear()
    dispatch.plan_columns_backward.cache_clear()
    jax.clear_caches()


@pytest.mark.parametrize("scratch", ["kept", "fresh", "kept, too large"])
@pytest.mark.parametrize("kind", ["TAG", "counters", "columns"])
def test_gpu_launcher_scratch(monkeypatch, kind, scratch):
    """The GPU launcher (`_gpu_execute`, here with jax-triton's triton_call recorded rather than run)
    passes a cooperative launch's "init" argument (the kernel's count_init_ptr, after the scalars and
    before the outputs) as kept scratch (multisoftmax.jax's "Kept scratch": a numpy constant of zeros
    and two words past the scratch, the kind's magic and a number new to each call made, not aliased;
    the scratch output it stands for shrunk to one word) or, fresh (and kept where the scratch is
    larger than _KEPT_MAX_WORDS), as zeros that XLA makes, aliased to the scratch output; it asks
    jax-triton to zero nothing; the outputs come back in the plan's order."""
    import dataclasses
    import types

    if kind == "columns":
        B, N, T = 2, 300000, 3
        plan = dispatch.plan_columns_forward(B, N, T, N * T, T, N * T, T, "float32", False, 132, force="coop")
    else:
        N = 65536 if kind == "TAG" else 1048576
        plan = dispatch.plan_forward(16, N, N, N, "float32", False, 132)
    one = dataclasses.replace(plan[0], meta=tuple({**plan[0].kwargs, "PHASE": 3}.items()))  # the GPU's one launch
    assert [k for _, _, k in one.outputs] == ["init", "acc", "sync" if kind == "TAG" else "zeros", "io"]
    calls = []

    def triton_call(*args, kernel, out_shape, grid, input_output_aliases, zeroed_outputs, **meta):
        calls.append((args, out_shape, input_output_aliases, zeroed_outputs, meta))
        arrays = [a for a in args if isinstance(a, jax.Array)]
        source = {o: i for i, o in input_output_aliases.items()}
        return [arrays[source[i]] if i in source else jnp.ones(o.shape, o.dtype) for i, o in enumerate(out_shape)]

    monkeypatch.setattr(mj, "_jax_triton", lambda: types.SimpleNamespace(triton_call=triton_call))
    monkeypatch.setattr(mj, "_kept_scratch_on", lambda: scratch.startswith("kept"))
    if scratch == "kept, too large":
        monkeypatch.setattr(mj, "_KEPT_MAX_WORDS", one.outputs[0][1][0] - 1)
    x = randn(*one.outputs[-1][1])
    got = mj._gpu_execute((one,), {"x": x}, jnp.float32)
    mj._gpu_execute((one,), {"x": x}, jnp.float32)
    (args, out_shape, aliases, zeroed, meta), (args_2, *_) = calls
    assert one.inputs == ("x",) and args[0] is x and args[1:1 + len(one.scalars)] == one.scalars
    init, init_2 = args[1 + len(one.scalars):], args_2[1 + len(one.scalars):]
    shapes = [s for _, s, _ in one.outputs[1:]]
    if scratch == "kept":
        (words,), (words_2,) = init, init_2
        assert isinstance(words, np.ndarray) and words.dtype == np.int32
        assert words.shape == (one.outputs[0][1][0] + 2,) and not words[:-2].any()
        assert words[-2] == mj._KEPT_MAGIC[one.outputs[2][2]] and words_2[-1] != words[-1]
        assert [o.shape for o in out_shape] == [shapes[0], (1,), shapes[2]] and aliases == {}
    else:
        assert len(init) == 1 and init[0].dtype == jnp.int32 and init[0].shape == one.outputs[0][1]
        assert not np.asarray(init[0]).any()
        assert [o.shape for o in out_shape] == shapes and aliases == {1: 1}
    assert zeroed == () and meta["PHASE"] == 3
    assert got.shape == x.shape and np.asarray(got).tolist() == np.ones(x.shape).tolist()
