"""How many SMs a kernel launch may run on: the device's count, or fewer where the process
or the stream has a share of the GPU (a CUDA green context, an MPS client's SM limit).

Why it matters: the programs of a row in the cooperative kernels (dispatch's 'coop' family)
wait for each other, and that wait ends only if the row's n_chunks programs can all be
resident at once. dispatch keeps n_chunks <= num_sms and counts on one program an SM
(`dispatch._coop_launches`). A green context of S SMs (`torch.cuda.green_contexts`) runs
its streams' kernels on those S SMs alone, while the device still reports every SM
(`multi_processor_count`); a plan made for the whole GPU could then wait forever (measured:
bench/results/h100/probe_green.log). So the adapters plan with `share(...)`, the smallest
count the driver reports for the device, the launching stream's green context and the
current context's execution affinity (an MPS client's SM limit, or a context made with one).

The driver is asked through ctypes (libcuda.so.1), with no extra dependency; a driver
without an entry point (green contexts: CUDA 12.4) or a failed call reads as "no share".
CUDA Driver API: cuStreamGetGreenCtx, cuGreenCtxGetDevResource, cuCtxGetExecAffinity.
"""

from __future__ import annotations

import ctypes
import functools
import os

_RESOURCE_TYPE_SM = 1  # CU_DEV_RESOURCE_TYPE_SM
_EXEC_AFFINITY_SM_COUNT = 0  # CU_EXEC_AFFINITY_TYPE_SM_COUNT
# A CUdevResource: its type (4 bytes), 92 bytes of padding, then the union whose CUdevSmResource
# starts with smCount. The buffer is larger than any version's struct (152 bytes in CUDA 13).
_RESOURCE_BYTES = 512
_SM_COUNT_OFFSET = 96


@functools.cache
def _driver():
    """libcuda, or None where there is none (the CPU: the interpreter needs no share)."""
    try:
        return ctypes.CDLL("libcuda.so.1")
    except OSError:
        return None


def green_sms(stream: int) -> int | None:
    """SMs of the green context that `stream` (a CUstream handle; 0: the current context's
    default stream) belongs to, or None: not a green context's stream, no green contexts in
    the driver (before CUDA 12.4), or no driver."""
    cuda = _driver()
    get_green = getattr(cuda, "cuStreamGetGreenCtx", None) if cuda is not None else None
    if get_green is None:
        return None
    green = ctypes.c_void_p()
    if get_green(ctypes.c_void_p(stream), ctypes.byref(green)) != 0 or not green.value:
        return None
    resource = (ctypes.c_ubyte * _RESOURCE_BYTES)()
    if cuda.cuGreenCtxGetDevResource(green, resource, _RESOURCE_TYPE_SM) != 0:
        return None
    count = int.from_bytes(bytes(resource[_SM_COUNT_OFFSET:_SM_COUNT_OFFSET + 4]), "little")
    return count or None


def affinity_sms() -> int | None:
    """The SM count the current context is limited to (its execution affinity: an MPS
    client's limit, or a context created with one), or None where the driver reports none
    (no current context on this thread, no driver)."""
    cuda = _driver()
    get_affinity = getattr(cuda, "cuCtxGetExecAffinity", None) if cuda is not None else None
    if get_affinity is None:
        return None
    param = (ctypes.c_uint32 * 4)()  # CUexecAffinityParam: type, then the SM count
    if get_affinity(param, _EXEC_AFFINITY_SM_COUNT) != 0:
        return None
    return int(param[1]) or None


def mps_sms(device_sms: int) -> int | None:
    """The SMs that CUDA_MPS_ACTIVE_THREAD_PERCENTAGE, where set, leaves an MPS client of a
    `device_sms` GPU (rounded down, at least 1), or None where it is not set or not a number.
    A limit the MPS control daemon sets is not in the environment: `affinity_sms` reads it,
    where the driver reports it."""
    value = os.environ.get("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", "").strip()
    try:
        percent = float(value)
    except ValueError:
        return None
    return max(1, int(device_sms * percent // 100)) if 0 < percent < 100 else None


@functools.cache
def process_sms(device_sms: int) -> int:
    """The SMs of a `device_sms` GPU that this process may use: the smallest of
    `device_sms`, the current context's execution affinity and MPS's thread percentage.
    Asked once (a process's MPS limit does not change; the first context asked answers)."""
    return min(c for c in (device_sms, affinity_sms(), mps_sms(device_sms)) if c)


def share(device_sms: int, stream: int | None = None) -> int:
    """The SMs a kernel launched on `stream` (a CUstream handle, or None: no stream to ask
    about) can run on: `process_sms(device_sms)` (`device_sms`: the device's
    multi_processor_count), or the stream's green context's SMs where fewer.

    One or two driver calls (~1 us): the adapters ask only for plans with a cooperative
    launch, the only kernels whose correctness depends on it.
    """
    count = process_sms(device_sms)
    green = green_sms(stream) if stream is not None else None
    return min(count, green) if green else count
