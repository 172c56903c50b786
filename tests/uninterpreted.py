"""Run test code in a fresh Python at the repository root, without Triton's interpreter."""
import os
import subprocess
import sys


def run_uninterpreted(code: str, timeout: int) -> subprocess.CompletedProcess:
    """Run `code` (python -c) at the repository root with TRITON_INTERPRET and
    MULTISOFTMAX_INTERPRET unset: Triton compiles (for sm_90 without a GPU; on a GPU, the kernels
    run compiled). Returns the CompletedProcess; raises subprocess.TimeoutExpired past `timeout` s."""
    env = {k: v for k, v in os.environ.items() if k not in ("TRITON_INTERPRET", "MULTISOFTMAX_INTERPRET")}
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return subprocess.run([sys.executable, "-c", code], env=env, cwd=root, capture_output=True, text=True,
                          timeout=timeout)
