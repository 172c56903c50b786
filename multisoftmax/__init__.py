"""multisoftmax: one set of Triton softmax kernels behind JAX and PyTorch adapters.

Submodules (imported on demand, so a JAX user never imports torch and vice versa):
    multisoftmax.torch      softmax / log_softmax for torch tensors (autograd, torch.compile)
    multisoftmax.jax        softmax / log_softmax for JAX arrays (custom_vjp, custom_vmap)
    multisoftmax.reference  an independent Numba-CUDA implementation (OneFlow-style)
    multisoftmax.kernels    the Triton kernels themselves
    multisoftmax.dispatch   launch heuristics shared by both adapters
    multisoftmax.sms        the SMs a launch may run on (a green context, an MPS limit)
"""

__version__ = "0.1.0"

import os as _os

# Triton decides compiled vs interpreted when it is imported: ask for the interpreter
# before anything imports it (see multisoftmax/kernels/__init__.py).
if _os.environ.get("MULTISOFTMAX_INTERPRET", "").strip().lower() in ("1", "true", "yes", "on"):
    _os.environ.setdefault("TRITON_INTERPRET", "1")
