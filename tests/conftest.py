"""Test setup: without a GPU, run the kernels through Triton's interpreter and Numba's simulator.

The environment must be set before triton/numba/jax are imported, hence here, at the top.
On a CUDA machine nothing is set: the compiled kernels, jax_triton and Numba on CUDA run,
and the tests marked `gpu` run too.
"""

import os
import shutil

HAS_GPU = shutil.which("nvidia-smi") is not None
if not HAS_GPU:
    os.environ.setdefault("MULTISOFTMAX_INTERPRET", "1")
    os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")  # Triton 3.9's default, stated to silence its warning
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # torch and JAX share the GPU

import pytest  # noqa: E402

try:
    import jax  # noqa: E402

    jax.config.update("jax_enable_x64", True)  # float64 inputs stay float64, as in torch
except ImportError:  # the torch-only install
    pass


@pytest.fixture(scope="session")
def torch_device():
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"
