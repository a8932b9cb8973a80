"""The one NVML error policy (gputui.sources.nvml.query), tested once for every error pynvml knows: as a query
raises it, as a field value returns it, and as the source then shows it."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pynvml
import pytest

from gputui.sources.host.source import HostSource
from gputui.sources.nvml.query import LOST, RESET_REQUIRED, Fields, GpuLost, Nvml, Verdict
from gputui.sources.nvml.source import NvmlSource
from tests.fake_psutil import NO_PROC, FakePsutil
from tests.fake_pynvml import FakeGpu, FakeHandle, FakeNvml

# Every NVML_ERROR_* pynvml defines, each with its own NVMLError subclass (pynvml makes one per code).
CODES = sorted((name, value) for name, value in vars(pynvml).items() if name.startswith("NVML_ERROR_"))
EXPECTED = {
    "NVML_ERROR_FUNCTION_NOT_FOUND": Verdict.NEXT_VARIANT,
    "NVML_ERROR_ARGUMENT_VERSION_MISMATCH": Verdict.NEXT_VARIANT,
    "NVML_ERROR_NOT_SUPPORTED": Verdict.UNAVAILABLE,
    "NVML_ERROR_NO_PERMISSION": Verdict.UNAVAILABLE,
    "NVML_ERROR_GPU_IS_LOST": Verdict.LOST,
    "NVML_ERROR_RESET_REQUIRED": Verdict.LOST,
}
REASONS = {"NVML_ERROR_GPU_IS_LOST": LOST, "NVML_ERROR_RESET_REQUIRED": RESET_REQUIRED}
every_error = pytest.mark.parametrize(("name", "code"), CODES, ids=[name for name, _ in CODES])


def test_pynvml_gives_each_error_its_own_class() -> None:
    assert len(CODES) >= 30
    for name, code in CODES:
        error = pynvml.NVMLError(code)
        assert type(error) is not pynvml.NVMLError and isinstance(error, pynvml.NVMLError), name
        assert error.value == code


@every_error
def test_each_error_has_one_meaning_for_a_query(name: str, code: int) -> None:
    """A reading with a newer and an older variant, the newer raising the error, asked twice."""
    verdict = EXPECTED.get(name, Verdict.PASSING)
    nvml = Nvml(pynvml)
    calls: Counter[str] = Counter()

    def newer(handle: str) -> str:
        calls["newer"] += 1
        raise pynvml.NVMLError(code)

    def older(handle: str) -> str:
        calls["older"] += 1
        return f"old value of {handle}"

    query = nvml.query(newer, older)
    assert nvml.verdict(code) is verdict
    if verdict is Verdict.LOST:
        with pytest.raises(GpuLost) as lost:
            query("gpu0")
        assert lost.value.reason == REASONS[name]
        assert calls == {"newer": 1}
        return
    answers = [query("gpu0"), query("gpu0")]
    if verdict is Verdict.NEXT_VARIANT:  # the older variant from the first call on; the newer never again
        assert answers == ["old value of gpu0"] * 2
        assert calls == {"newer": 1, "older": 2}
        assert query.available and query.failure is None
    elif verdict is Verdict.UNAVAILABLE:  # n/a, and nothing is asked again: not the older variant either
        assert answers == [None, None]
        assert calls == {"newer": 1}
        assert not query.available
    else:  # passing: n/a for this call, the same variant asked again next time
        assert answers == [None, None]
        assert calls == {"newer": 2}
        assert query.available
        assert isinstance(query.failure, pynvml.NVMLError) and query.failure.value == code


@every_error
def test_each_error_has_the_same_meaning_for_a_field_value(name: str, code: int) -> None:
    """Two fields read together; the second comes back with the error as its own return code."""
    verdict = EXPECTED.get(name, Verdict.PASSING)
    fake = FakeNvml([FakeGpu(memory_temperature=71)])
    fake.nvmlInit()
    asked: list[list[Any]] = []

    def field_values(handle: FakeHandle, ids: list[Any]) -> Any:
        asked.append(list(ids))
        values = FakeNvml.nvmlDeviceGetFieldValues(fake, handle, [pynvml.NVML_FI_DEV_MEMORY_TEMP] * len(ids))
        values[1].nvmlReturn = code
        return values

    fake.nvmlDeviceGetFieldValues = field_values  # type: ignore[method-assign]
    fields = Fields(Nvml(fake), FakeHandle(0), [pynvml.NVML_FI_DEV_MEMORY_TEMP, pynvml.NVML_FI_DEV_POWER_INSTANT])
    if verdict is Verdict.LOST:
        with pytest.raises(GpuLost, match="GPU"):
            fields()
        return
    assert fields() == [71, None]  # the field given is read whatever the other's answer
    again = fields()
    if verdict is Verdict.PASSING:
        assert again == [71, None] and len(asked) == 2 and fields.available
    else:  # not given: the fields are not asked again
        assert again == [None, None] and len(asked) == 1 and not fields.available


@every_error
def test_the_source_shows_each_error_as_its_verdict(name: str, code: int) -> None:
    """The temperature (nvmlDeviceGetTemperatureV, falling back to nvmlDeviceGetTemperature) failing on one of
    two GPUs, over two ticks: the value from the old name, n/a, or the GPU lost; the other GPU unaffected."""
    verdict = EXPECTED.get(name, Verdict.PASSING)
    fake = FakeNvml([FakeGpu(errors={"nvmlDeviceGetTemperatureV": code}), FakeGpu()])
    host = HostSource(clock=lambda: 0.0, psutil_module=FakePsutil(), root=NO_PROC)  # type: ignore[arg-type]
    source = NvmlSource(pynvml=fake, host=host, clock=lambda: 0.0, root=NO_PROC, watch_xid=False)
    source.open()
    ticks = [source.sample(), source.sample()]
    source.close()
    assert [tick.gpus[1].temperature_c for tick in ticks] == [63.0, 63.0]
    first, second = ticks[0].gpus[0], ticks[1].gpus[0]
    if verdict is Verdict.LOST:
        assert first.lost and second.lost and first.error == REASONS[name]  # lost, never "n/a"
        assert ticks[0].events == (f"GPU 0: {REASONS[name]}",)
        return
    assert not first.lost and first.power_w == 612.0
    expected = {Verdict.NEXT_VARIANT: 63.0, Verdict.UNAVAILABLE: None, Verdict.PASSING: None}[verdict]
    assert (first.temperature_c, second.temperature_c) == (expected, expected)
    asked = {Verdict.NEXT_VARIANT: 1, Verdict.UNAVAILABLE: 1, Verdict.PASSING: 2}[verdict]
    assert fake.count("nvmlDeviceGetTemperatureV", 0) == asked
    assert fake.count("nvmlDeviceGetTemperature", 0) == (2 if verdict is Verdict.NEXT_VARIANT else 0)


def test_a_function_this_pynvml_lacks_is_the_next_variant_and_asking_it_alone_gives_none() -> None:
    nvml = Nvml(pynvml)
    assert nvml.function("nvmlDeviceGetSomethingFromTheFuture") is None
    query = nvml.query(nvml.function("nvmlDeviceGetSomethingFromTheFuture"), lambda: 7)
    assert query() == 7
    assert nvml.ask("nvmlDeviceGetSomethingFromTheFuture") is None
