"""Programs of a kernel that an SM holds at once, and the shared memory a launch asks for so that
the SM gives its L1 / shared memory split to shared memory (`fill_shared`).

Why: an SM's L1 cache and its shared memory are one store (256 KB on the H100), which the driver
splits for each launch, by the shared memory the launch's programs ask for. The rows kernels ask
for almost none, and the driver then leaves most of the store to L1, where they ran 0.5-1%
slower on the H100 than with the split at its most shared memory (bench/results/h100/
probe_rows_occ*.log: bf16 65536 x 2048's log_softmax forward 179.2 -> 177.5 us, float32 32768 x
2048's log_softmax backward 264.8 -> 263.2; XLA's fused kernel, one row a program as ours, ran
that much ahead). The CUDA attribute that asks for that split (the preferred shared memory
carveout) measured the same, but is set on a loaded function, which jaxlib does not give back; a
launch's dynamic shared memory is in both adapters' hands. So a launch that `dispatch.fills_shared`
names asks for the SM's shared memory over the programs it holds at once (less what the GPU
keeps for each program): the driver then takes the split with the most shared memory, and the SM
holds as many programs as before. The kernels do not touch the memory asked for.
The cooperative kernels lost 2-12% so, which is why dispatch names only some launches. Both
adapters ask: the torch adapter's cached launches (multisoftmax/launch.py), the JAX adapter's
kernels through its compile hook (multisoftmax/jax.py, `_filled_shared`).

Device limits come from the driver through ctypes (libcuda.so.1), as in `sms`; where there is no
driver or a query fails, `limits` is None and launches ask for what Triton computed.
CUDA Driver API: cuDeviceGet, cuDeviceGetAttribute.
"""

from __future__ import annotations

import ctypes
import functools
from typing import NamedTuple

from . import sms

# CUdevice_attribute values (cuda.h)
_MAX_THREADS_PER_MULTIPROCESSOR = 39
_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR = 81
_MAX_REGISTERS_PER_MULTIPROCESSOR = 82
_MAX_BLOCKS_PER_MULTIPROCESSOR = 106
_RESERVED_SHARED_MEMORY_PER_BLOCK = 111
# Registers are given to a warp in units of 256 (sm_50 and later).
REGISTER_UNIT = 256
# What a launch may ask for without the function's MAX_DYNAMIC_SHARED_SIZE_BYTES attribute, which
# Triton's loader (and jaxlib's) sets only for a kernel whose own shared memory is above this.
DEFAULT_MAX_SHARED = 48 * 1024


class Limits(NamedTuple):
    """An SM's limits: bytes of shared memory, registers, threads and programs (thread blocks),
    and the bytes of shared memory the GPU keeps for each program."""
    shared: int
    registers: int
    threads: int
    programs: int
    reserved: int


@functools.cache
def limits(device_index: int) -> Limits | None:
    """The SM limits of CUDA device `device_index` (H100: 233472 bytes, 65536 registers, 2048
    threads, 32 programs, 1024 bytes kept a program), or None where the driver cannot say."""
    cuda = sms._driver()
    if cuda is None:
        return None
    device, value = ctypes.c_int(), ctypes.c_int()
    if cuda.cuDeviceGet(ctypes.byref(device), device_index) != 0:
        return None
    got = []
    for attribute in (_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, _MAX_REGISTERS_PER_MULTIPROCESSOR,
                      _MAX_THREADS_PER_MULTIPROCESSOR, _MAX_BLOCKS_PER_MULTIPROCESSOR,
                      _RESERVED_SHARED_MEMORY_PER_BLOCK):
        if cuda.cuDeviceGetAttribute(ctypes.byref(value), attribute, device) != 0:
            return None
        got.append(value.value)
    return Limits(*got)


def programs_per_sm(n_regs: int, num_warps: int, shared: int, lim: Limits) -> int:
    """How many programs of `num_warps` warps, `n_regs` registers a thread and `shared` bytes of
    dynamic shared memory an SM of `lim` holds at once (the CUDA occupancy calculator's
    arithmetic: registers by warp in units of REGISTER_UNIT); at least 1."""
    per_warp = -(-max(1, n_regs) * 32 // REGISTER_UNIT) * REGISTER_UNIT
    by_registers = lim.registers // per_warp // num_warps
    by_threads = lim.threads // (32 * num_warps)
    by_shared = lim.shared // (shared + lim.reserved)
    return max(1, min(by_registers, by_threads, lim.programs, by_shared))


def fill_shared(n_regs: int, num_warps: int, shared: int, lim: Limits | None) -> int:
    """Bytes of dynamic shared memory for a launch of a kernel that needs `shared`: the SM's
    shared memory over the programs it holds at once (`programs_per_sm`), less what the GPU
    keeps for each, at most DEFAULT_MAX_SHARED (and never less than `shared`); `shared` itself
    where `lim` is None (module docstring)."""
    if lim is None:
        return shared
    k = programs_per_sm(n_regs, num_warps, shared, lim)
    return max(shared, min(DEFAULT_MAX_SHARED, lim.shared // k - lim.reserved))
