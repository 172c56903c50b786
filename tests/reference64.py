"""The float64 NumPy reference every path is held to, and per-dtype tolerances."""

import numpy as np

# (rtol, atol) for outputs; float16/bfloat16 are dominated by the rounding of the output
# itself (2**-11 and 2**-8 relative), float32 by exp/log and the row sums.
TOLERANCES = {
    "float16": (2e-3, 1e-5),
    "bfloat16": (1.6e-2, 1e-4),
    "float32": (2e-5, 1e-6),
    "float64": (1e-12, 1e-14),
}


def softmax(x: np.ndarray, axis=-1, log: bool = False) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        z = x - np.max(x, axis=axis, keepdims=True)
        s = np.sum(np.exp(z), axis=axis, keepdims=True)
        return z - np.log(s) if log else np.exp(z) / s


def softmax_backward(y: np.ndarray, dy: np.ndarray, axis=-1, log: bool = False) -> np.ndarray:
    y, dy = np.asarray(y, np.float64), np.asarray(dy, np.float64)
    if log:
        return dy - np.exp(y) * np.sum(dy, axis=axis, keepdims=True)
    return y * (dy - np.sum(dy * y, axis=axis, keepdims=True))


def backward_scale(y, dy, axis=-1, log: bool = False) -> float:
    """The size of the terms whose difference is dx: its rounding error follows this, not |dx|.

    softmax: dx = y*dy - y*<dy, y>; log_softmax: dx = dy - exp(y)*sum(dy).
    """
    y, dy = np.asarray(y, np.float64), np.asarray(dy, np.float64)
    with np.errstate(invalid="ignore"):
        if log:
            terms = np.abs(dy) + np.exp(y) * np.abs(np.sum(dy, axis=axis, keepdims=True))
        else:
            terms = np.abs(y) * (np.abs(dy) + np.abs(np.sum(dy * y, axis=axis, keepdims=True)))
    finite = terms[np.isfinite(terms)]
    return float(finite.max()) if finite.size else 0.0


def assert_close(actual, expected, dtype: str, what: str = "", scale_atol=False) -> None:
    """Every element within rtol*|expected| + atol; NaN must meet NaN.

    scale_atol: True makes atol relative to max|expected|; a number makes it relative to
    that number (backward: pass backward_scale(...), since dx = y*(dy - dot) cancels).
    """
    actual = np.asarray(actual, dtype=np.float64)
    expected = np.asarray(expected, dtype=np.float64)
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != {expected.shape}"
    rtol, atol = TOLERANCES[dtype]
    if scale_atol is True and expected.size:
        finite = expected[np.isfinite(expected)]
        atol = max(atol, rtol * float(np.max(np.abs(finite)))) if finite.size else atol
    elif scale_atol:
        atol = max(atol, rtol * float(scale_atol))
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol, equal_nan=True, err_msg=what)
