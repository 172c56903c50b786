"""An independent Numba-CUDA softmax, to check the Triton kernels against.

OneFlow's CUDA softmax design (a warp per row, the row held in registers, for N <= 1024;
a block per row, the row streamed, beyond), written with Numba: no Triton code is shared.
Each function works over the last axis of a NumPy array (copied to the GPU and back) or of
a CUDA array exposing __cuda_array_interface__ (used in place). See
`multisoftmax.reference.numba_softmax` for the kernels.

Importing needs neither a GPU nor the simulator: kernels compile on their first launch.
Without a GPU, set NUMBA_ENABLE_CUDASIM=1 before Numba is imported to run them in Numba's
CUDA simulator (slow: keep shapes small).
"""

from .numba_softmax import log_softmax, log_softmax_backward, softmax, softmax_backward

__all__ = ["softmax", "log_softmax", "softmax_backward", "log_softmax_backward"]
