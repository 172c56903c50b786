"""Stress the cooperative forward on keyed partials (SENT) for hangs (GPU).

    python bench/stress_sent.py {jax|torch} {float32|bfloat16} SECONDS

forces SENT the way tests/test_jax.py::test_keyed_partials_forward does (a grid of 3 * 132 rows
of 20000 values: 3 chunks a row, 9 programs an SM) and calls the adapter's softmax and
log_softmax back to back for SECONDS, checking every 50th pair against float64. faulthandler
prints the stack every 45 s, so a hang shows as the same line over and over and no final
"no hang" line. Run several at once, beside other GPU work, as in
bench/results/h100/stress_sent.log: before `_sent_leave` waited for its program's warps, the
float32 runs hung there within 170 s.
"""
import faulthandler
import os
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT, os.path.join(ROOT, "tests")]
from forced_plans import force_sent  # noqa: E402  (test_keyed_partials_forward's patches: SENT on a small grid)
from multisoftmax import dispatch  # noqa: E402


def refs(xr):
    """float64 softmax (False) and log_softmax (True) of the rows of `xr`."""
    shifted = xr - xr.max(1, keepdims=True)
    e = np.exp(shifted)
    return {False: e / e.sum(1, keepdims=True), True: shifted - np.log(e.sum(1, keepdims=True))}


def rel_err(y, ref):
    return (np.abs(y - ref) / np.maximum(1, np.abs(ref))).max()


def main():
    which, dtname, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
    faulthandler.dump_traceback_later(45, repeat=True)
    force_sent(dispatch)
    M, N = 3 * 132, 20000
    x64 = np.random.default_rng(5).standard_normal((M, N)) * 3
    tol = 1e-5 if dtname == "float32" else 2**-7
    t0, it = time.time(), 0
    if which == "jax":
        import jax
        import jax.numpy as jnp

        import multisoftmax.jax as mj

        x = jnp.asarray(x64, {"float32": jnp.float32, "bfloat16": jnp.bfloat16}[dtname])
        ref = refs(np.asarray(x, np.float64))
        fns = {False: jax.jit(mj.softmax), True: jax.jit(mj.log_softmax)}
        print("plan", dispatch.plan_forward(M, N, N, N, dtname, True, 132, counters_per_call=True)[-1].kwargs, flush=True)
        while time.time() - t0 < seconds:
            for log in (False, True):
                y = fns[log](x)
                y.block_until_ready()
                if it % 50 == 0:
                    err = rel_err(np.asarray(y, np.float64), ref[log])
                    assert err < tol, (it, log, err)
            it += 1
    else:
        import torch

        import multisoftmax.torch as mt

        x = torch.tensor(x64, device="cuda").to({"float32": torch.float32, "bfloat16": torch.bfloat16}[dtname])
        ref = refs(x.double().cpu().numpy())
        print("plan", dispatch.plan_forward(M, N, N, N, dtname, True, 132)[-1].kwargs, flush=True)
        while time.time() - t0 < seconds:
            for log in (False, True):
                y = (mt.log_softmax if log else mt.softmax)(x)
                if it % 50 == 0:
                    err = rel_err(y.double().cpu().numpy(), ref[log])
                    assert err < tol, (it, log, err)
            it += 1
            if it % 20 == 0:
                torch.cuda.synchronize()
        torch.cuda.synchronize()
    print(which, dtname, "iterations", it, "in", round(time.time() - t0, 1), "s: no hang", flush=True)


if __name__ == "__main__":
    main()
