"""The implementations the benchmark compares: multisoftmax and the peers a user would pick instead.

Each implementation is an `Impl`: a name, the framework it runs in ("torch", "jax" or
"numba"), and functions

    fwd(x, op) -> y          op is "softmax" or "log_softmax", over the last axis of a 2-D (M, N)
    bwd(y, dy, op) -> dx     the backward kernel alone, from saved y (None where the peer has none)

On the torch side they take and return torch tensors; on the JAX side they are plain
(unjitted) functions of JAX arrays, which `bench/timing.py` jits. `supports(dtype, N, op,
direction)` returns None or the reason the impl does not run that case (recorded as SKIP);
a peer that runs but refuses a shape raises, and is recorded as ERR.

The two "seed" kernels (bench/seed_kernels.py) are this benchmark's own re-implementations of
the documents the project grew from (../shared/seeds): `seed001` the Triton tutorial's fused
softmax (one row a program, BLOCK_N = next_pow2(N), persistent programs sized by occupancy)
and `seed000` the blog's autotuned two-pass online kernel (running max and rescaled sum, then
a normalizing pass). Forward softmax only, as in those documents.
"""

from __future__ import annotations

import functools
import importlib.metadata
import os
from dataclasses import dataclass, field
from typing import Callable

OPS = ("softmax", "log_softmax")


@dataclass
class Impl:
    name: str
    framework: str  # "torch" | "jax" | "numba"
    fwd: Callable | None = None
    bwd: Callable | None = None
    ops: tuple = OPS
    dtypes: tuple = ("float32", "bfloat16", "float16")
    max_N: int | None = None  # longest row the peer is run on (beyond: SKIP)
    graphable: bool = True  # may be captured in a CUDA graph (torch side)
    note: str = ""
    extra_skip: Callable | None = field(default=None, repr=False)  # (dtype, N, op, direction) -> reason

    def supports(self, dtype: str, N: int, op: str, direction: str) -> str | None:
        if op not in self.ops:
            return f"{self.name} has no {op}"
        if (self.fwd if direction == "fwd" else self.bwd) is None:
            return f"{self.name} has no {direction}"
        if dtype not in self.dtypes:
            return f"{self.name} does not take {dtype}"
        if self.max_N is not None and N > self.max_N:
            return f"{self.name} is not run past N={self.max_N}"
        if self.extra_skip is not None:
            return self.extra_skip(dtype, N, op, direction)
        return None


# --------------------------------------------------------------------------------------
# torch-side peers
# --------------------------------------------------------------------------------------
def torch_native():
    import torch

    def fwd(x, op):
        return torch.softmax(x, -1) if op == "softmax" else torch.log_softmax(x, -1)

    def bwd(y, dy, op):
        f = torch.ops.aten._softmax_backward_data if op == "softmax" else torch.ops.aten._log_softmax_backward_data
        return f(dy, y, y.dim() - 1, y.dtype)

    return Impl("torch", "torch", fwd, bwd, note="torch.softmax / aten._softmax_backward_data")


def torch_compiled(smoke: bool):
    """torch.compile(torch.softmax), dynamic=False: every new shape compiles anew."""
    import torch
    import torch._dynamo

    for knob in ("cache_size_limit", "recompile_limit", "accumulated_cache_size_limit",
                 "accumulated_recompile_limit"):
        if hasattr(torch._dynamo.config, knob):
            setattr(torch._dynamo.config, knob, 4096)
    # On the CPU (smoke) inductor would build C++ for each shape: the eager backend still
    # exercises dynamo's capture and guards, in a fraction of the time.
    backend = "eager" if smoke else "inductor"
    compiled = {op: torch.compile(functools.partial(getattr(torch, op), dim=-1), dynamic=False, backend=backend)
                for op in OPS}

    def fwd(x, op):
        return compiled[op](x)

    return Impl("compile", "torch", fwd, None, ops=("softmax",),
                note=f"torch.compile(torch.softmax, dynamic=False, backend={backend!r})")


def multisoftmax_torch():
    import torch

    import multisoftmax.torch as mst

    def fwd(x, op):
        return mst.softmax(x, -1) if op == "softmax" else mst.log_softmax(x, -1)

    def bwd(y, dy, op):  # the registered backward op itself: just the backward kernel
        return torch.ops.multisoftmax.softmax_bwd(y, dy, op == "log_softmax")

    return Impl("ms-torch", "torch", fwd, bwd,
                note="multisoftmax.torch.softmax; bwd = torch.ops.multisoftmax.softmax_bwd")


def liger():
    """Liger-Kernel's softmax. Its launcher refuses rows whose next power of two exceeds 65536."""
    from liger_kernel.ops import softmax as lk
    from liger_kernel.ops.utils import calculate_settings

    def fwd(x, op):
        return lk._softmax_forward(x)[0]

    def bwd(y, dy, op):
        block, warps = calculate_settings(y.shape[-1])  # raises past 65536, as its forward does
        return lk._softmax_backward(dy, y, block, warps, False)

    try:
        version = importlib.metadata.version("liger-kernel")
    except Exception:  # noqa: BLE001
        version = "?"
    return Impl("liger", "torch", fwd, bwd, ops=("softmax",), note=f"liger_kernel.ops.softmax {version}")


def numba_reference(cuda: bool):
    """multisoftmax.reference (Numba CUDA); returns numba device arrays, no bfloat16.

    On the CPU (smoke, NUMBA_ENABLE_CUDASIM=1) it runs in Numba's CUDA simulator on NumPy copies.
    """
    import torch

    from multisoftmax import reference as ref

    if cuda:
        def arg(t):
            return t

        def as_torch(a):
            return torch.as_tensor(a, device="cuda")
    else:
        def arg(t):
            return t.numpy()

        def as_torch(a):
            return torch.from_numpy(a)

    def fwd(x, op):
        return as_torch((ref.softmax if op == "softmax" else ref.log_softmax)(arg(x)))

    def bwd(y, dy, op):
        f = ref.softmax_backward if op == "softmax" else ref.log_softmax_backward
        return as_torch(f(arg(y), arg(dy)))

    # Numba launches on its own (default) stream outside torch's graph capture: time with events.
    return Impl("ref", "numba", fwd, bwd, dtypes=("float32", "float16"), graphable=False,
                note="multisoftmax.reference (Numba CUDA)")


# --------------------------------------------------------------------------------------
# the seed kernels, re-implemented (forward softmax only)
# --------------------------------------------------------------------------------------
def _seed_kernels():
    """Imported lazily so that importing this module does not import triton."""
    import seed_kernels

    return seed_kernels.seed001_softmax_kernel, seed_kernels.seed000_softmax_kernel


def seed001(num_sms: int):
    """The tutorial's fused softmax: BLOCK_N = next_pow2(N), warps from BLOCK_N, persistent grid."""
    import torch
    import triton

    kernel, _ = _seed_kernels()
    programs = {}  # (BLOCK_N, num_warps, dtype) -> grid size, from the compiled kernel's registers
    interpreted = bool(triton.knobs.runtime.interpret)

    def fwd(x, op):
        M, N = x.shape
        y = torch.empty_like(x)
        BLOCK_N = triton.next_power_of_2(N)
        num_warps = min(16, max(4, BLOCK_N // 1024))
        key = (BLOCK_N, num_warps, x.dtype)
        if key not in programs:
            # The tutorial pipelines the row loop 4 deep on GPUs with > 200 KB of shared memory;
            # a row too wide for that falls back to no pipelining rather than failing.
            for num_stages in ((4, 1) if x.is_cuda else (1,)):
                try:
                    compiled = kernel[(min(M, num_sms),)](x, y, M, N, x.stride(0), y.stride(0), BLOCK_N=BLOCK_N,
                                                          NUM_STAGES=num_stages, num_warps=num_warps)
                    break
                except Exception as e:  # noqa: BLE001
                    if "OutOfResources" not in type(e).__name__ or num_stages == 1:
                        raise
            programs[key] = (_occupancy_programs(compiled, num_warps, num_sms, interpreted), num_stages)
            return y
        grid, num_stages = programs[key]
        kernel[(min(M, grid),)](x, y, M, N, x.stride(0), y.stride(0), BLOCK_N=BLOCK_N,
                                NUM_STAGES=num_stages, num_warps=num_warps)
        return y

    return Impl("seed001", "torch", fwd, None, ops=("softmax",), max_N=65536,
                note="Triton tutorial fused softmax (re-implemented): row in registers, persistent grid")


def _occupancy_programs(compiled, num_warps: int, num_sms: int, interpreted: bool) -> int:
    """Programs for a persistent grid: SMs x resident programs per SM (registers, threads)."""
    if interpreted:
        return num_sms
    try:
        import torch

        if hasattr(compiled, "_init_handles"):
            compiled._init_handles()
        regs = max(1, int(compiled.n_regs))
        smem_sm = getattr(torch.cuda.get_device_properties(0), "shared_memory_per_multiprocessor", 228 * 1024)
        per_sm = min(65536 // (regs * 32 * num_warps), 2048 // (32 * num_warps),
                     smem_sm // max(1, int(compiled.metadata.shared)))
        return num_sms * max(1, per_sm)
    except Exception:  # noqa: BLE001  (no register count: one program a row)
        return 1 << 31


def seed000(smoke: bool):
    """The blog's two-pass online kernel, autotuned over the tile and warps per N and dtype."""
    import torch
    import triton
    import triton.testing

    _, kernel = _seed_kernels()
    tiles = ((1024, 4), (2048, 4), (4096, 8), (8192, 8), (16384, 16), (32768, 16))
    configs = [triton.Config({"BLOCK_N": b}, num_warps=w, num_stages=2) for b, w in tiles]

    def prune(configs, named_args, **kwargs):
        # A tile far past the row is masked-off work: keep tiles up to next_pow2(N).
        limit = max(1024, triton.next_power_of_2(named_args["N"]))
        return [c for c in configs if c.kwargs["BLOCK_N"] <= limit]

    def bench(fn, quantiles=None):
        if smoke:
            import time
            t = time.perf_counter()
            fn()
            ms = (time.perf_counter() - t) * 1e3
            return [ms, ms, ms] if quantiles else ms
        # Short benchmarks: the sweep retunes for every (N, dtype).
        return triton.testing.do_bench(fn, warmup=3, rep=12, quantiles=quantiles)

    tuned = triton.autotune(configs, key=["N"], prune_configs_by={"early_config_prune": prune}, do_bench=bench)(kernel)

    def fwd(x, op):
        M, N = x.shape
        y = torch.empty_like(x)
        tuned[(M,)](x, y, N, x.stride(0), y.stride(0))
        return y

    return Impl("seed000", "torch", fwd, None, ops=("softmax",),
                note="blog two-pass online softmax (re-implemented), autotuned tile/warps")


# --------------------------------------------------------------------------------------
# JAX side
# --------------------------------------------------------------------------------------
def multisoftmax_jax():
    import multisoftmax.jax as msj

    def fwd(x, op):
        return msj.softmax(x, -1) if op == "softmax" else msj.log_softmax(x, -1)

    return Impl("ms-jax", "jax", fwd, "vjp", note="multisoftmax.jax.softmax; bwd = jitted vjp pullback")


def xla():
    import jax

    def fwd(x, op):
        return jax.nn.softmax(x, axis=-1) if op == "softmax" else jax.nn.log_softmax(x, axis=-1)

    return Impl("xla", "jax", fwd, "vjp", note="jax.jit(jax.nn.softmax); bwd = jitted vjp pullback")


# --------------------------------------------------------------------------------------
def make_impls(*, cuda: bool, smoke: bool, interpret: bool, num_sms: int):
    """(impls, unavailable): the impls that imported, and {name: why not} for the others.

    Order matters: it is the column order of the tables and the order of measurement.
    """
    triton_ok = cuda or interpret  # Triton kernels need a GPU, or the interpreter on the CPU
    makers = [
        ("ms-torch", multisoftmax_torch, None),
        ("ms-jax", multisoftmax_jax, None),
        ("torch", torch_native, None),
        ("compile", lambda: torch_compiled(smoke), None),
        ("xla", xla, None),
        ("liger", liger, None if triton_ok else "Triton peers need CUDA or TRITON_INTERPRET=1"),
        ("seed001", lambda: seed001(num_sms), None if triton_ok else "Triton peers need CUDA or TRITON_INTERPRET=1"),
        ("seed000", lambda: seed000(smoke), None if triton_ok else "Triton peers need CUDA or TRITON_INTERPRET=1"),
        ("ref", lambda: numba_reference(cuda), None if cuda or os.environ.get("NUMBA_ENABLE_CUDASIM") == "1"
         else "the Numba CUDA reference needs a GPU (or NUMBA_ENABLE_CUDASIM=1)"),
    ]
    impls, unavailable = [], {}
    for name, make, why_not in makers:
        if why_not:
            unavailable[name] = why_not
            continue
        try:
            impls.append(make())
        except Exception as e:  # noqa: BLE001  (a peer that does not import is reported, not fatal)
            unavailable[name] = f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"
    return impls, unavailable
