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
import faulthandler, sys, time
which, dtname, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
faulthandler.dump_traceback_later(45, repeat=True)
import numpy as np
from multisoftmax import dispatch
for name, value in (("_coop_tag_fwd", lambda *a: None), ("COOP_SENT32_MIN_PER_SM", 0), ("COOP_SENT32_LOG_MIN_PER_SM", 0),
                    ("COOP_FWD_UNPACKED_PER_SM", 0), ("COOP_PACK_WIDE_MIN_PER_SM", 0), ("COOP_WIDE_MAX_N", 0)):
    setattr(dispatch, name, value)
dispatch.plan_forward.cache_clear()
M, N = 3 * 132, 20000
rng = np.random.default_rng(5)
x64 = rng.standard_normal((M, N)) * 3
def refs(xr):
    out = {False: np.exp(xr - xr.max(1, keepdims=True))}
    out[False] /= out[False].sum(1, keepdims=True)
    out[True] = xr - xr.max(1, keepdims=True); out[True] -= np.log(np.exp(out[True]).sum(1, keepdims=True))
    return out
t0 = time.time(); it = 0
if which == "jax":
    import jax, jax.numpy as jnp, multisoftmax.jax as mj
    dt = {"float32": jnp.float32, "bfloat16": jnp.bfloat16}[dtname]
    x = jnp.asarray(x64, dt)
    ref = refs(np.asarray(x, np.float64))
    fns = {False: jax.jit(mj.softmax), True: jax.jit(mj.log_softmax)}
    plan = dispatch.plan_forward(M, N, N, N, dtname, True, 132, counters_per_call=True)[-1].kwargs
    print("plan", plan, flush=True)
    while time.time() - t0 < seconds:
        for log in (False, True):
            y = fns[log](x)
            y.block_until_ready()
            if it % 50 == 0:
                err = (np.abs(np.asarray(y, np.float64) - ref[log]) / np.maximum(1, np.abs(ref[log]))).max()
                assert err < (1e-5 if dtname == "float32" else 2**-7), (it, log, err)
        it += 1
else:
    import torch, multisoftmax.torch as mt
    dt = {"float32": torch.float32, "bfloat16": torch.bfloat16}[dtname]
    x = torch.tensor(x64, device="cuda").to(dt)
    ref = refs(x.double().cpu().numpy())
    plan = dispatch.plan_forward(M, N, N, N, dtname, True, 132)[-1].kwargs
    print("plan", plan, flush=True)
    while time.time() - t0 < seconds:
        for log in (False, True):
            y = (mt.log_softmax if log else mt.softmax)(x)
            if it % 50 == 0:
                err = (np.abs(y.double().cpu().numpy() - ref[log]) / np.maximum(1, np.abs(ref[log]))).max()
                assert err < (1e-5 if dtname == "float32" else 2**-7), (it, log, err)
        it += 1
        if it % 20 == 0:
            torch.cuda.synchronize()
    torch.cuda.synchronize()
print(which, dtname, "iterations", it, "in", round(time.time() - t0, 1), "s: no hang", flush=True)
