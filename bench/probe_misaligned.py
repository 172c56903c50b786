"""Probe: multisoftmax.torch on 16-bit views whose first element is not 4-byte aligned (a
storage offset of one element), for plans that load 16-bit values as 32-bit words (PACK).

    python bench/probe_misaligned.py > bench/results/h100/probe_misaligned.log

Each case runs in a child process (a misaligned access would leave the CUDA context unusable)
and prints ok with the largest error against float64, or the child's last error line.
"""

from __future__ import annotations

import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests"))
from uninterpreted import run_uninterpreted  # noqa: E402

CASES = [(16, 1_048_576, "fwd"), (16, 1_048_576, "bwd"), (2048, 65_536, "fwd"), (64, 256_000, "bwd"),
         (1, 128_256, "fwd"), (32, 1000, "fwd"), (32, 1000, "bwd")]

CHILD = """
import sys, torch
sys.path.insert(0, "tests")
import multisoftmax.torch as mt
from multisoftmax import dispatch
M, N, direction = {M}, {N}, {direction!r}
buf = torch.randn(M * N + 1, device="cuda").to(torch.bfloat16)
x = buf[1:].view(M, N)  # data_ptr % 4 == 2
assert x.data_ptr() % 4 == 2
sms = torch.cuda.get_device_properties(0).multi_processor_count
if direction == "fwd":
    plan = dispatch.plan_forward(M, N, N, N, "bfloat16", False, sms)
    out = mt.softmax(x)
    ref = torch.softmax(x.double(), -1)
else:
    plan = dispatch.plan_backward(M, N, N, N, N, "bfloat16", False, sms)
    y = torch.softmax(torch.randn(M, N, device="cuda"), -1)
    ybuf = torch.empty(M * N + 1, device="cuda", dtype=torch.bfloat16)
    y16 = ybuf[1:].view(M, N)
    y16.copy_(y)
    out = torch.ops.multisoftmax.softmax_bwd(y16, x, False)
    yd, dyd = y16.double(), x.double()
    ref = yd * (dyd - (yd * dyd).sum(-1, keepdim=True))
torch.cuda.synchronize()
print("ok", plan[0].kernel, "PACK" if plan[0].kwargs.get("PACK") else "", f"err={{(out.double() - ref).abs().max().item():.2e}}")
"""


def main():
    for M, N, direction in CASES:
        code = CHILD.format(M=M, N=N, direction=direction)
        try:
            out = run_uninterpreted(code, timeout=120)
            last = (out.stdout.strip().splitlines() or [""])[-1] if out.returncode == 0 else \
                "FAILED " + (out.stderr.strip().splitlines() or ["?"])[-1]
        except subprocess.TimeoutExpired:
            last = "TIMEOUT"
        print(f"bf16 {M} x {N} {direction}, x at data_ptr % 4 == 2: {last}", flush=True)


if __name__ == "__main__":
    main()
