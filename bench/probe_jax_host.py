"""Probe: does the size of jax-triton's custom-call payload cost host time a call?

jaxlib looks every triton_kernel_call up by its whole opaque payload (a zlib-compressed proto
holding the kernel's PTX and its TTIR) in a hash map, so each call hashes and compares the
payload. The JAX adapter sends a lean one (`multisoftmax/jax.py`, `_hook_compile`: PTX without
line info, no TTIR; jaxlib's CUDA path reads only the PTX). This times, in interleaved rounds
(timing.host_rounds), jitted calls of jax.nn.softmax, `2 * x`, the JAX adapter, and the
adapter's plan on copies of its kernels compiled as jax-triton does alone (full payload, the
adapter before 5c5babf), and prints the payload sizes and, per round, the ratios to
jax.nn.softmax. (The logs in results/h100/ came from the probe at 5c5babf, which built the
lean copies itself beside the adapter's full payload.)

    python bench/probe_jax_host.py [--calls 2000] [--rounds 15]
    python bench/probe_jax_host.py --fastpath
    python bench/probe_jax_host.py --trace
    python bench/probe_jax_host.py --fill

--fastpath instead asks, for jitted jax.nn.softmax, `2 * x` and the adapter at 32 x 1024
float32 (on a jnp array and on one taken from torch by DLPack, as bench/run.py's host section
does): how many Python functions one call enters once compiled (JAX's C++ dispatch path enters
none), and what the compiled program's entry computation holds; then host time in rounds.

--trace asks where a jitted call's host time goes: it records --calls back-to-back calls of each
of the three at 32 x 1024 float32 under jax.profiler.trace, reads the trace back
(jax.profiler.ProfileData) and prints, for each, the host events (XLA's and PjRt's scopes and
the CUDA driver calls CUPTI sees) by name: how many a call and their mean length, so that the
adapter's extra microseconds can be put on a named step.

--fill times, in rounds as above, the adapter at 32 x 1024 float32 as dispatched (its rows launch
asks for the SM's shared memory, dispatch.FILL_SHARED) against the same plan lowered with
dispatch.fills_shared off (the kernel's own shared memory), beside jax.nn.softmax and `2 * x`:
whether the filled launch costs host time; and beside them a bare jax_triton.triton_call of a
copy kernel (`_copy_kernel`: two pointers and a length, one launch of 16 programs, through
jax-triton as jax-triton alone builds it): what any triton_call costs a jitted call, whatever
the kernel.
"""

from __future__ import annotations

import argparse
import functools
import os
import statistics
import sys
import time
import types
import zlib
from unittest import mock

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import triton  # noqa: E402

import multisoftmax.jax as mj  # noqa: E402
import timing  # noqa: E402
from multisoftmax import dispatch, kernels  # noqa: E402

SIZES = []  # compressed payload lengths, in lowering order
FULL = set()  # kernel copies compiled as jax-triton does alone


def install():
    """Record the payloads' sizes; send FULL's kernels past the adapter's hook (`_hook_compile`)."""
    lib = mj._jax_triton().triton_lib
    lib.zlib = types.SimpleNamespace(compress=lambda b: SIZES.append(len(zlib.compress(b))) or zlib.compress(b))
    hooked = lib.get_or_create_triton_kernel
    plain = hooked.__wrapped__
    lib.get_or_create_triton_kernel = lambda init, platform, fn, *a, **k: (plain if fn in FULL else hooked)(
        init, platform, fn, *a, **k)


_KERNEL = kernels.get  # multisoftmax's own lookup, which full_execute stands in for while it traces


@functools.cache
def full_kernel(name):
    fn = triton.jit(_KERNEL(name).fn)
    FULL.add(fn)
    return fn


def full_execute(launches, buffers, io_dtype):
    """The plan as the adapter runs it (`multisoftmax.jax._gpu_execute`), on FULL's copies of its kernels."""
    with mock.patch.object(kernels, "get", full_kernel):
        return mj._gpu_execute(launches, buffers, io_dtype)


def python_calls(f, x) -> int:
    """Python functions that one call of the compiled `f` enters (JAX's C++ fast path: none)."""
    n = [0]

    def count(frame, event, arg):
        n[0] += event == "call"

    sys.setprofile(count)
    try:
        r = f(x)
    finally:
        sys.setprofile(None)
    jax.block_until_ready(r)
    return n[0]


def print_rounds(rounds: dict) -> None:
    """One line an entry of timing.host_rounds' {name: [us a call, a round]}: its best and median
    round, and the median over rounds of its ratio to jax.nn.softmax's figure in the same round."""
    base = rounds["jax.nn.softmax"]
    for name, us in rounds.items():
        ratios = [a / b for a, b in zip(us, base)]
        print(f"  {name:20s} best {min(us):6.1f} us  median {statistics.median(us):6.1f}  "
              f"per-round ratio to jax.nn.softmax: median {statistics.median(ratios):.3f}  "
              + " ".join(f"{u:.1f}" for u in us), flush=True)


def _jitted(adapters=("adapter",)) -> dict:
    """Jitted jax.nn.softmax and `2 * x`, and the adapter as a jitted function of its own (compiled
    apart) for each name of `adapters`, all over the last axis."""
    fns = {"jax.nn.softmax": jax.jit(lambda a: jax.nn.softmax(a, axis=-1)), "2 * x": jax.jit(lambda a: 2 * a)}
    fns.update({name: jax.jit(lambda a: mj.softmax(a, -1)) for name in adapters})
    return fns


def fastpath(args):
    import torch

    M, N = 32, 1024
    xt = torch.randn(M, N, device="cuda")
    inputs = {"jnp": jnp.asarray(xt.cpu().numpy()), "dlpack": jax.dlpack.from_dlpack(xt)}
    fns = _jitted()
    for name, f in fns.items():
        for kind, x in inputs.items():
            jax.block_until_ready(f(x))
            jax.block_until_ready(f(x))
            print(f"# {name} on a {kind} array: {python_calls(f, x)} Python calls a compiled call", flush=True)
        hlo = f.lower(inputs["jnp"]).compile().as_text()
        entry = hlo[hlo.index("ENTRY"):]
        entry = entry[:entry.index("\n}") if "\n}" in entry else len(entry)]
        print(f"# {name}: entry computation:\n" + "\n".join("#   " + line.strip()[:160]
                                                          for line in entry.splitlines()[1:]), flush=True)
    for kind, x in inputs.items():
        entries = {name: (functools.partial(f, x), jax.block_until_ready) for name, f in fns.items()}
        print(f"{M}x{N} float32 on a {kind} array:")
        print_rounds(timing.host_rounds(entries, args.calls, args.rounds))


def trace(args):
    import collections
    import glob
    import tempfile

    M, N = 32, 1024
    x = jnp.asarray(np.random.default_rng(0).standard_normal((M, N), np.float32))
    fns = _jitted()
    for name, f in fns.items():
        for _ in range(50):
            r = f(x)
        jax.block_until_ready(r)
        events = collections.defaultdict(list)
        for rep in range(args.rounds):
            d = tempfile.mkdtemp()
            with jax.profiler.trace(d):
                t = time.perf_counter()
                for _ in range(args.calls):
                    r = f(x)
                jax.block_until_ready(r)
                wall = (time.perf_counter() - t) / args.calls * 1e6
            events["(wall, traced)"].append((args.calls, wall * 1e3 * args.calls))
            data = jax.profiler.ProfileData.from_file(glob.glob(d + "/**/*.xplane.pb", recursive=True)[0])
            per = collections.defaultdict(lambda: [0, 0.0])
            for plane in data.planes:
                if not plane.name.startswith("/host"):
                    continue
                for line in plane.lines:
                    for ev in line.events:
                        if ev.name.startswith("$"):  # the Python tracer's function events
                            continue
                        a = per[f"{line.name[:24]} | {ev.name[:90]}"]
                        a[0] += 1
                        a[1] += ev.duration_ns
            for key, (n, ns) in per.items():
                events[key].append((n, ns))
        print(f"{name}: host events a call over {args.calls} calls, median of {args.rounds} traces "
              "(count a call, mean us an event, us a call)", flush=True)
        rows = []
        for key, reps in events.items():
            n = statistics.median(c for c, _ in reps) / args.calls
            us = statistics.median(ns / c for c, ns in reps if c) / 1e3
            rows.append((n * us, n, us, key))
        for total, n, us, key in sorted(rows, reverse=True)[:args.top]:
            if n >= 0.5:
                print(f"  {n:5.2f} x {us:8.2f} us = {total:8.2f} us  {key}", flush=True)


@functools.cache
def _copy_kernel():
    import triton.language as tl

    @triton.jit
    def copy_kernel(x_ptr, n, y_ptr, BLOCK: tl.constexpr):  # jax-triton appends the outputs
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)

    return copy_kernel


def fill(args):
    M, N = 32, 1024
    x = jnp.asarray(np.random.default_rng(0).standard_normal((M, N), np.float32))
    fns = _jitted(("adapter (filled)", "adapter (not filled)"))
    if jax.default_backend() == "gpu":
        jt = mj._jax_triton()
        fns["triton_call copy"] = jax.jit(lambda a: jt.triton_call(
            a, a.size, kernel=_copy_kernel(), out_shape=jax.ShapeDtypeStruct(a.shape, a.dtype),
            grid=(16,), BLOCK=a.size // 16))
    plan = dispatch.plan_forward(M, N, N, N, "float32", False, mj._num_sms())
    print(f"# {M}x{N} float32: plan " + " + ".join(f"{l.kernel}{list(l.grid)}" for l in plan)
          + f", fills_shared {[dispatch.fills_shared(l) for l in plan]}", flush=True)
    with mock.patch.object(dispatch, "fills_shared", lambda launch: False):
        ref = jax.block_until_ready(fns["adapter (not filled)"](x))  # traced and lowered with the rule off
    err = float(jnp.max(jnp.abs(ref - fns["adapter (filled)"](x))))
    print(f"# filled vs not filled max |diff| {err:.1e}", flush=True)
    if "triton_call copy" in fns:
        print(f"# triton_call copy vs x max |diff| {float(jnp.max(jnp.abs(fns['triton_call copy'](x) - x))):.1e}")
    entries = {name: (functools.partial(f, x), jax.block_until_ready) for name, f in fns.items()}
    print_rounds(timing.host_rounds(entries, args.calls, args.rounds))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--calls", type=int, default=2000)
    p.add_argument("--rounds", type=int, default=15)
    p.add_argument("--fastpath", action="store_true")
    p.add_argument("--trace", action="store_true")
    p.add_argument("--fill", action="store_true")
    p.add_argument("--top", type=int, default=40)
    args = p.parse_args()
    if args.fastpath:
        return fastpath(args)
    if args.trace:
        return trace(args)
    if args.fill:
        return fill(args)
    install()
    sms = jax.devices()[0].core_count
    print(f"# {jax.devices()[0].device_kind}, jax {jax.__version__}, triton {triton.__version__}")
    for (M, N, dtype) in [(32, 1024, "float32"), (64, 128256, "bfloat16"), (8, 128256, "bfloat16")]:
        x = jnp.asarray(np.random.default_rng(0).standard_normal((M, N), np.float32)).astype(dtype)
        plan = dispatch.plan_forward(M, N, N, N, dtype, False, mj._num_sms(), counters_per_call=True)
        fns = {"jax.nn.softmax": jax.jit(jax.nn.softmax), "2 * x": jax.jit(lambda a: 2 * a),
               "adapter": jax.jit(mj.softmax),
               "plan, full payload": jax.jit(lambda a: full_execute(plan, {"x": a}, a.dtype))}
        entries = {}
        for name, f in fns.items():
            n0 = len(SIZES)
            r = f(x)
            r.block_until_ready()
            if name == "plan, full payload":
                err = float(jnp.max(jnp.abs(r.astype(jnp.float32) - fns["adapter"](x).astype(jnp.float32))))
                print(f"#   full payload vs adapter max |diff| {err:.1e}")
            print(f"# {M}x{N} {dtype} {name}: payloads {SIZES[n0:]} bytes")
            entries[name] = (functools.partial(f, x), jax.block_until_ready)
        rounds = timing.host_rounds(entries, args.calls, args.rounds)
        print(f"{M}x{N} {dtype}: plan " + " + ".join(f"{l.kernel}{list(l.grid)}" for l in plan) + f" (SMs {sms})")
        print_rounds(rounds)


if __name__ == "__main__":
    main()
