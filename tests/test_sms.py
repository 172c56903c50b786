"""multisoftmax.sms (the SMs a launch may run on) and the adapters' use of it, on the CPU:
the driver's answers are stood in for; tests/test_gpu.py runs it on a real green context."""

import types

import pytest

from multisoftmax import dispatch, sms


@pytest.fixture(autouse=True)
def _fresh_process_sms():
    """process_sms asks the driver once a process: again for each test, which stands in for it."""
    sms.process_sms.cache_clear()
    yield
    sms.process_sms.cache_clear()


def test_share_is_the_smallest_count_reported(monkeypatch):
    monkeypatch.delenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", raising=False)
    monkeypatch.setattr(sms, "green_sms", lambda stream: {7: 16}.get(stream))
    monkeypatch.setattr(sms, "affinity_sms", lambda: None)
    assert sms.share(132) == 132
    assert sms.share(132, stream=0) == 132
    assert sms.share(132, stream=7) == 16
    sms.process_sms.cache_clear()
    monkeypatch.setattr(sms, "affinity_sms", lambda: 40)
    assert sms.share(132, stream=0) == 40 and sms.share(132, stream=7) == 16
    sms.process_sms.cache_clear()
    monkeypatch.setenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", "25")
    assert sms.share(132, stream=0) == 33


@pytest.mark.parametrize("value,expected", [("25", 33), (" 50 ", 66), ("12.5", 16), ("0.1", 1),
                                            ("100", None), ("0", None), ("", None), ("lots", None)])
def test_mps_thread_percentage(monkeypatch, value, expected):
    monkeypatch.setenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", value)
    assert sms.mps_sms(132) == expected


def test_no_driver_reads_as_no_share(monkeypatch):
    """On a machine without libcuda (CI) every driver question answers None."""
    monkeypatch.setattr(sms, "_driver", lambda: None)
    monkeypatch.delenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", raising=False)
    assert sms.green_sms(0) is None and sms.affinity_sms() is None and sms.share(132, 0) == 132


class _FakeDriver:
    """libcuda's three entry points as ctypes would call them: a green context of `green` SMs
    for stream 7, an execution affinity of `affinity` SMs (0: none reported)."""

    def __init__(self, green: int, affinity: int):
        self.green, self.affinity = green, affinity

    def cuStreamGetGreenCtx(self, stream, out):
        out._obj.value = 0x1234 if stream.value == 7 else None
        return 0

    def cuGreenCtxGetDevResource(self, green, resource, kind):
        assert green.value == 0x1234 and kind == 1
        resource[sms._SM_COUNT_OFFSET:sms._SM_COUNT_OFFSET + 4] = list(self.green.to_bytes(4, "little"))
        return 0

    def cuCtxGetExecAffinity(self, param, kind):
        if not self.affinity:
            return 1  # CUDA_ERROR_INVALID_VALUE: no affinity to report
        param[0], param[1] = kind, self.affinity
        return 0


def test_driver_answers_are_read_at_their_offsets(monkeypatch):
    monkeypatch.setattr(sms, "_driver", lambda: _FakeDriver(green=24, affinity=0))
    assert sms.green_sms(7) == 24 and sms.green_sms(3) is None and sms.affinity_sms() is None
    monkeypatch.setattr(sms, "_driver", lambda: _FakeDriver(green=24, affinity=66))
    assert sms.affinity_sms() == 66


def test_torch_adapter_plans_cooperative_launches_for_the_streams_share(monkeypatch):
    """A plan with a cooperative launch (its programs wait for each other) is made again for
    the current stream's SMs where that is fewer; other plans never ask the driver."""
    pytest.importorskip("torch")
    import multisoftmax.torch as mt

    asked = []
    monkeypatch.setattr(mt, "_num_sms", lambda index: 132)
    monkeypatch.setattr(mt, "_current_stream", lambda index: asked.append(index) or 7)
    monkeypatch.setattr(sms, "affinity_sms", lambda: None)
    monkeypatch.delenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", raising=False)
    cuda = types.SimpleNamespace(is_cuda=True, get_device=lambda: 0, device="cuda:0")

    def plan(M, N, dtype, forward=True):
        if forward:
            return mt._plan(dispatch.plan_forward, cuda, M, N, N, N, dtype, False)
        return mt._plan(dispatch.plan_backward, cuda, M, N, N, N, N, dtype, False)

    monkeypatch.setattr(sms, "green_sms", lambda stream: None)  # the whole GPU
    assert dispatch.cooperative(plan(1, 1_048_576, "float32"))
    assert dispatch.cooperative(plan(1, 1_048_576, "float32", forward=False))
    monkeypatch.setattr(sms, "green_sms", lambda stream: 16 if stream == 7 else None)
    for forward in (True, False):
        assert not dispatch.cooperative(plan(1, 1_048_576, "float32", forward))  # 128 chunks > 16 SMs
        launches = plan(1, 128_256, "bfloat16", forward)  # 16 chunks of 8192: still cooperative
        assert dispatch.cooperative(launches) and launches[-1].grid == (16,)
        assert launches == (dispatch.plan_forward if forward else dispatch.plan_backward)(
            *((1, 128_256, 128_256, 128_256) if forward else (1, 128_256, 128_256, 128_256, 128_256)),
            "bfloat16", False, 16)
    asked.clear()
    assert not dispatch.cooperative(plan(32, 1024, "float32")) and not asked  # rows: no driver call
