"""The Triton kernels (`multisoftmax.kernels.softmax`: rows; `.columns`: a middle axis; `.where`: jax.nn's
where= mask) and how they are run.

On CUDA tensors the kernels are compiled by Triton. With MULTISOFTMAX_INTERPRET=1 in the
environment before multisoftmax (or triton) is imported, `multisoftmax/__init__.py` sets
TRITON_INTERPRET=1, so every `triton.jit` function, Triton's own library included, is
built for Triton's interpreter: CPU tensors then run these very kernels (CUDA tensors too,
copied through the host, slowly). That is how CI tests the kernels without a GPU.
"""

import os

import triton

from . import columns, softmax, where

__all__ = ["softmax", "columns", "where", "get", "interpret_requested", "INTERPRETED"]

# Whether the kernels were built for Triton's interpreter (fixed when triton was imported).
INTERPRETED = bool(triton.knobs.runtime.interpret)


def interpret_requested() -> bool:
    """True when MULTISOFTMAX_INTERPRET is 1/true/yes/on (read at each call).

    Raises RuntimeError if it is set but triton was imported before multisoftmax in
    compiled mode, since the kernels can then no longer run on the CPU.
    """
    requested = os.environ.get("MULTISOFTMAX_INTERPRET", "").strip().lower() in ("1", "true", "yes", "on")
    if requested and not INTERPRETED:
        raise RuntimeError(
            "MULTISOFTMAX_INTERPRET=1 was set after triton was imported in compiled mode; set it "
            "(or TRITON_INTERPRET=1) in the environment before importing multisoftmax or triton")
    return requested


def get(name: str):
    """The kernel `name` (e.g. "softmax_fwd_rows") from `multisoftmax.kernels.softmax`, or from
    `multisoftmax.kernels.columns` (the softmax over a middle axis: "softmax_fwd_cols"), or from
    `multisoftmax.kernels.where` (a mask: "softmax_fwd_rows_where")."""
    return getattr(columns if name.endswith("_cols") else where if name.endswith("_where") else softmax, name)
