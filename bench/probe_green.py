"""Probe: the cooperative kernels on a share of the GPU's SMs, a CUDA green context (GPU).

    python bench/probe_green.py > bench/results/h100/probe_green.log

For each case of tests/green_context.py (few long rows whose plan for the whole GPU is
cooperative), each green context size (16 and 64 SMs) and each way of planning ("device":
for every SM the device reports, as the torch adapter did before multisoftmax.sms; "share":
for the SMs of the launching stream, as it does now), it runs multisoftmax.torch.softmax
forward and backward in a child process killed after --timeout seconds. A child that is
killed is a launch that never ended: a row's programs waiting for programs that cannot start.
Then, on the whole GPU, the host time a call that asking for the share adds to a cooperative
plan (multisoftmax.torch.softmax of 1 x 128256 bfloat16, eager: best of 7 interleaved rounds
of 1000 calls, bench/timing.host_rounds) and the time of `sms.share` alone.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import datetime
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))
sys.path.insert(0, os.path.join(ROOT, "bench"))

import timing  # noqa: E402
from green_context import CASES  # noqa: E402
from uninterpreted import run_uninterpreted  # noqa: E402


def child(mode: str, num_sms: int, case, timeout: float) -> str:
    code = (f"import sys; sys.path.insert(0, 'tests'); import green_context; "
            f"green_context.main({mode!r}, {num_sms}, [{case!r}])")
    try:
        out = run_uninterpreted(code, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        told = (e.stdout or b"").decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        return f"HANG (killed after {timeout:.0f} s) | {' | '.join(told.strip().splitlines())}"
    lines = " | ".join(out.stdout.strip().splitlines())
    return lines if out.returncode == 0 else f"FAILED rc={out.returncode} | {lines} | {out.stderr.strip()[-600:]}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds before a child is called hung")
    parser.add_argument("--sms", type=int, nargs="+", default=[16, 64], help="green context sizes")
    args = parser.parse_args()
    import torch

    print(f"# {torch.cuda.get_device_name(0)}, {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, "
          f"torch {torch.__version__}, driver CUDA {torch.version.cuda}: python bench/probe_green.py", flush=True)
    from multisoftmax import sms

    torch.zeros(1, device="cuda")  # a current context for the driver calls
    device_sms = torch.cuda.get_device_properties(0).multi_processor_count
    handle = torch.cuda.current_stream().cuda_stream
    print(f"default stream: sms.green_sms={sms.green_sms(handle)} sms.affinity_sms={sms.affinity_sms()} "
          f"sms.share={sms.share(device_sms, handle)} (device: {device_sms})", flush=True)
    jobs = [(mode, n, case) for n in args.sms for case in CASES for mode in ("share", "device")]
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        results = pool.map(lambda job: child(*job, args.timeout), jobs)
        for (mode, n, case), result in zip(jobs, results):
            print(f"{n:3d} SMs {mode:6s} {case[0]}x{case[1]} {case[2]}: {result}", flush=True)
    host(sms, device_sms, handle)


def host(sms, device_sms: int, handle: int) -> None:
    import torch

    import multisoftmax.torch as mt

    x = torch.randn(1, 128_256, device="cuda").to(torch.bfloat16)
    real = sms.share

    def without():
        sms.share = lambda device_sms, stream=None: device_sms
        try:
            return mt.softmax(x)
        finally:
            sms.share = real

    def sync(_):
        torch.cuda.synchronize()

    def patch_cost():  # the try/finally and two assignments that `without` adds
        sms.share = real
        try:
            return None
        finally:
            sms.share = real

    rounds = timing.host_rounds({"with share": (lambda: mt.softmax(x), sync), "without": (without, sync),
                                 "patching alone": (patch_cost, sync),
                                 "sms.share alone": (lambda: sms.share(device_sms, handle), sync)}, 1000, 7)
    print("host us a call, best of 7 rounds of 1000 (1 x 128256 bfloat16 forward, cooperative plan): "
          + "; ".join(f"{name} {min(us):.2f} (median {sorted(us)[3]:.2f})" for name, us in rounds.items()), flush=True)


if __name__ == "__main__":
    main()
