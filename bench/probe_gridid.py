"""Probe (GPU): is PTX's %gridid a different number for every launch, as the cooperative kernels'
zero-free tags would need? (PTX ISA: "%gridid ... temporal grid launch number".)

A kernel writes the %gridid each of its programs reads. Launched: eagerly from torch; inside a
torch CUDA graph replayed several times; through jax-triton inside jitted functions (a lone
call, and a chain of 8 calls, which XLA may run as a command buffer, a CUDA graph, with the
XLA flags it has by default and with command buffers for custom calls forced on). Printed: every
launch's ids; whether the programs of a launch agree; whether any two launches share an id.

Found on the H100 (bench/results/h100/probe_gridid.log): the programs of a launch agree and
eager launches differ, but a CUDA graph's kernels read the same ids at every replay, so a tag
made from %gridid would not tell a replay's words from the last replay's (bench/DISPATCH.md,
SPLIT_FRESH_FWD_MAX_PER_SM). The log is made by three calls:

    python bench/probe_gridid.py torch
    python bench/probe_gridid.py jax
    XLA_FLAGS="--xla_gpu_enable_command_buffer=FUSION,CUSTOM_CALL --xla_gpu_graph_min_graph_size=1" \
        python bench/probe_gridid.py jax-forced
"""

from __future__ import annotations

import sys

import numpy as np
import triton
import triton.language as tl

P = 8  # programs a launch


@triton.jit
def _gridid_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    x = tl.load(x_ptr + pid)  # an operand: jax-triton calls need one
    gid = tl.inline_asm_elementwise("mov.u64 $0, %gridid;", "=l,r", [pid], dtype=tl.int64,
                                    is_pure=False, pack=1)
    tl.store(out_ptr + pid, gid + (x * 0).to(tl.int64))


def report(name: str, rows) -> list[int]:
    rows = [np.asarray(r).reshape(-1) for r in rows]
    agree = all(len(set(r.tolist())) == 1 for r in rows)
    ids = [int(r[0]) for r in rows]
    print(f"{name}: ids {ids}; programs of a launch agree: {agree}; distinct launches: "
          f"{len(set(ids))} of {len(ids)}", flush=True)
    return ids


def torch_part() -> list[int]:
    import torch

    x = torch.arange(P, device="cuda", dtype=torch.int64)
    outs = [torch.empty(P, device="cuda", dtype=torch.int64) for _ in range(4)]
    for o in outs:
        _gridid_kernel[(P,)](x, o, BLOCK=1)
    torch.cuda.synchronize()
    ids = report("torch eager, 4 launches", [o.cpu() for o in outs])

    gouts = [torch.empty(P, device="cuda", dtype=torch.int64) for _ in range(3)]
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):  # warm-up outside the capture
        for o in gouts:
            _gridid_kernel[(P,)](x, o, BLOCK=1)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for o in gouts:
            _gridid_kernel[(P,)](x, o, BLOCK=1)
    seen = []
    for rep in range(4):
        g.replay()
        torch.cuda.synchronize()
        seen += report(f"torch CUDA graph of 3 launches, replay {rep}", [o.cpu() for o in gouts])
    print(f"torch graph replays: {len(set(seen))} distinct of {len(seen)}", flush=True)
    return ids + seen


def jax_part(label: str) -> list[int]:
    import jax
    import jax.numpy as jnp
    import jax_triton as jt

    def one(x):
        return jt.triton_call(x, kernel=_gridid_kernel, out_shape=jax.ShapeDtypeStruct((P,), jnp.int64),
                              grid=(P,), BLOCK=1)

    @jax.jit
    def lone(x):
        return one(x)

    @jax.jit
    def chain(x):
        # Each call on an operand of its own (x + i), so XLA cannot merge the 8 calls into one.
        return jnp.stack([one(x + i) for i in range(8)])

    x = jnp.arange(P, dtype=jnp.int64)
    seen = []
    for rep in range(3):
        seen += report(f"jax {label} lone call {rep}", [lone(x)])
    for rep in range(3):
        seen += report(f"jax {label} chain of 8, run {rep}", list(chain(x)))
    print(f"jax {label}: {len(set(seen))} distinct of {len(seen)}", flush=True)
    hlo = chain.lower(x).compile().as_text()
    print(f"jax {label}: the chain's compiled HLO has {hlo.count('custom-call(')} triton calls, "
          f"command buffers: {'command_buffer' in hlo}", flush=True)
    return seen


if __name__ == "__main__":
    mode = sys.argv[1] if len(sys.argv) > 1 else "torch"
    if mode == "jax-forced":
        jax_part("forced")
    elif mode == "jax":
        jax_part("default flags")
    else:
        torch_part()
