"""XID events: the watcher thread over the fake pynvml's event API, through NvmlSource to the diagnostics."""

from __future__ import annotations

import ctypes
import time
from collections.abc import Callable, Iterator

import pynvml
import pytest

from gputui.diagnostics.engine import DiagnosticsEngine
from gputui.diagnostics.findings import Severity
from gputui.sources.host.source import HostSource
from gputui.sources.nvml.events import XidWatcher, _address
from gputui.sources.nvml.query import LOST, Nvml
from gputui.sources.nvml.source import NvmlSource
from tests.fake_psutil import NO_PROC, FakePsutil
from tests.fake_pynvml import FakeGpu, FakeNvml

WALL = 1_750_000_000.0
NO_XID = pynvml.nvmlEventTypePState | pynvml.nvmlEventTypeClock


@pytest.fixture
def sources() -> Iterator[list[NvmlSource]]:
    """Every source a test opens is closed after it, so no watcher thread outlives its test."""
    made: list[NvmlSource] = []
    yield made
    for source in made:
        source.close()


def open_source(sources: list[NvmlSource], nvml: FakeNvml, **kwargs: bool) -> NvmlSource:
    nvml.wait_cap_ms = 10
    host = HostSource(clock=lambda: 0.0, psutil_module=FakePsutil(), root=NO_PROC)
    source = NvmlSource(pynvml=nvml, host=host, clock=lambda: WALL, root=NO_PROC, **kwargs)
    sources.append(source)
    source.open()
    return source


def watcher_of(source: NvmlSource) -> XidWatcher:
    watcher = source.xid_watcher
    assert watcher is not None
    return watcher


def until(condition: Callable[[], bool], timeout: float = 2.0) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.005)
    return True


def test_an_xid_shows_up_in_the_next_sample_of_its_gpu_only(sources: list[NvmlSource]) -> None:
    nvml = FakeNvml([FakeGpu(), FakeGpu(), FakeGpu()])
    source = open_source(sources, nvml)
    assert watcher_of(source).watching == (0, 1, 2)
    nvml.push_xid(1, 13)
    nvml.push_xid(1, 31)
    assert nvml.settle()
    first = source.sample()
    assert [gpu.xid_events for gpu in first.gpus] == [(), (13, 31), ()]
    second = source.sample()
    assert [gpu.xid_events for gpu in second.gpus] == [(), (), ()]


def test_gpus_without_xid_events_are_skipped_and_the_others_still_report(sources: list[NvmlSource]) -> None:
    nvml = FakeNvml(
        [
            FakeGpu(errors={"nvmlDeviceRegisterEvents": pynvml.NVML_ERROR_NOT_SUPPORTED}),
            FakeGpu(event_types=None),
            FakeGpu(errors={"nvmlDeviceGetSupportedEventTypes": pynvml.NVML_ERROR_FUNCTION_NOT_FOUND}),
            FakeGpu(event_types=NO_XID),
            FakeGpu(errors={"nvmlDeviceRegisterEvents": pynvml.NVML_ERROR_GPU_IS_LOST}),
            FakeGpu(),
        ]
    )
    source = open_source(sources, nvml)
    watcher = watcher_of(source)
    assert watcher.skipped == {
        0: "Not Supported",
        1: "Not Supported",
        2: "Function Not Found",
        3: "the driver reports no XID events for this GPU",
        4: LOST,  # the GPU fell off the bus after it was opened: skipped here, found lost by the sampler
    }
    assert watcher.watching == (5,)
    assert watcher.error is None
    nvml.push_xid(5, 48)
    assert nvml.settle()
    snap = source.sample()
    assert [gpu.xid_events for gpu in snap.gpus] == [(), (), (), (), (), (48,)]
    assert snap.events == ()


def test_no_gpu_with_xid_events_starts_no_thread_and_sampling_goes_on(sources: list[NvmlSource]) -> None:
    nvml = FakeNvml([FakeGpu(event_types=None)])
    source = open_source(sources, nvml)
    assert not watcher_of(source).alive
    assert nvml.event_sets[0].freed
    assert source.sample().gpus[0].xid_events == ()


def test_close_stops_the_thread_and_frees_the_set_before_nvml_shuts_down(sources: list[NvmlSource]) -> None:
    nvml = FakeNvml([FakeGpu(), FakeGpu()])
    source = open_source(sources, nvml)
    watcher = watcher_of(source)
    assert watcher.alive
    source.close()
    assert not watcher.alive
    assert source.xid_watcher is None
    assert nvml.event_sets[0].freed  # freeing after nvmlShutdown would have raised Uninitialized instead
    assert nvml.shutdowns == 1


def test_reopening_watches_again_with_a_fresh_set(sources: list[NvmlSource]) -> None:
    nvml = FakeNvml([FakeGpu()])
    source = open_source(sources, nvml)
    source.open()
    assert [event_set.freed for event_set in nvml.event_sets] == [True, False]
    nvml.push_xid(0, 62)
    assert nvml.settle()
    assert source.sample().gpus[0].xid_events == (62,)


def test_an_unexpected_wait_error_ends_the_watch_and_sampling_goes_on(sources: list[NvmlSource]) -> None:
    nvml = FakeNvml([FakeGpu(), FakeGpu()])
    source = open_source(sources, nvml)
    watcher = watcher_of(source)
    nvml.fail_wait(pynvml.NVML_ERROR_UNKNOWN)
    assert until(lambda: not watcher.alive)
    assert watcher.error == "waiting for XID events failed: Unknown Error"
    assert nvml.event_sets[0].freed
    first = source.sample()
    assert first.events == ("XID events are not collected: waiting for XID events failed: Unknown Error",)
    assert [gpu.utilization_gpu_pct for gpu in first.gpus] == [97.0, 97.0]
    assert source.sample().events == ()


def test_a_non_nvml_exception_in_the_thread_is_kept_not_raised(sources: list[NvmlSource]) -> None:
    nvml = FakeNvml([FakeGpu()])

    def broken_wait(event_set: object, timeout_ms: int) -> object:
        raise RuntimeError("ctypes went wrong")

    nvml.nvmlEventSetWait_v2 = broken_wait  # type: ignore[method-assign]
    source = open_source(sources, nvml)
    watcher = watcher_of(source)
    assert until(lambda: not watcher.alive)
    assert watcher.error == "waiting for XID events failed: ctypes went wrong"
    assert not source.sample().gpus[0].lost


def test_an_event_set_the_driver_refuses_is_reported_once(sources: list[NvmlSource]) -> None:
    nvml = FakeNvml([FakeGpu()])

    def refuse() -> object:
        raise pynvml.NVMLError(pynvml.NVML_ERROR_NOT_SUPPORTED)

    nvml.nvmlEventSetCreate = refuse  # type: ignore[method-assign]
    source = open_source(sources, nvml)
    watcher = watcher_of(source)
    assert not watcher.alive
    assert watcher.error == "the driver could not create an event set: Not Supported"
    assert source.sample().events == (
        "XID events are not collected: the driver could not create an event set: Not Supported",
    )
    assert source.sample().events == ()


def test_a_gpu_lost_with_an_xid_keeps_the_xid_in_its_lost_sample(sources: list[NvmlSource]) -> None:
    nvml = FakeNvml([FakeGpu(), FakeGpu()])
    source = open_source(sources, nvml)
    nvml.push_xid(1, 79)
    assert nvml.settle()
    nvml.gpus[1].lost = True
    snap = source.sample()
    assert snap.gpus[1].lost
    assert snap.gpus[1].xid_events == (79,)


def test_watch_xid_false_creates_no_event_set(sources: list[NvmlSource]) -> None:
    nvml = FakeNvml([FakeGpu()])
    source = open_source(sources, nvml, watch_xid=False)
    assert source.xid_watcher is None
    assert nvml.event_sets == []
    assert source.sample().gpus[0].xid_events == ()


def test_the_diagnostics_engine_raises_xid_from_the_sample(sources: list[NvmlSource]) -> None:
    nvml = FakeNvml([FakeGpu(), FakeGpu()])
    source = open_source(sources, nvml)
    nvml.push_xid(1, 48)
    assert nvml.settle()
    state = DiagnosticsEngine().update(source.sample())
    xids = [finding for finding in state.active if finding.rule == "xid"]
    assert len(xids) == 1
    assert xids[0].gpus == (1,)
    assert xids[0].severity is Severity.CRITICAL
    assert "48" in xids[0].title


def test_real_device_handles_are_matched_by_the_address_they_hold() -> None:
    device = pynvml.struct_c_nvmlDevice_t()
    from_index = ctypes.cast(ctypes.pointer(device), pynvml.c_nvmlDevice_t)
    from_event = pynvml.c_nvmlEventData_t(device=from_index).device
    other = ctypes.cast(ctypes.pointer(pynvml.struct_c_nvmlDevice_t()), pynvml.c_nvmlDevice_t)
    assert from_index != from_event  # ctypes pointers compare by identity
    assert _address(from_index) == _address(from_event)
    assert _address(from_index) != _address(other)


def test_wait_ms_must_be_positive() -> None:
    with pytest.raises(ValueError, match="wait_ms must be at least 1, not 0"):
        XidWatcher(Nvml(FakeNvml([])), {}, wait_ms=0)


def test_a_long_wait_does_not_hold_up_close_and_the_thread_cleans_up_after(sources: list[NvmlSource]) -> None:
    """The monitor's XID thread waits seconds at a time: closing must not wait it out, nor shut NVML down under
    it; the thread frees its set when its wait returns."""
    nvml = FakeNvml([FakeGpu()])
    host = HostSource(clock=lambda: 0.0, psutil_module=FakePsutil(), root=NO_PROC)
    source = NvmlSource(pynvml=nvml, host=host, clock=lambda: WALL, root=NO_PROC, xid_wait_ms=1500)
    source.open()
    watcher = watcher_of(source)
    assert nvml.settle()
    started = time.monotonic()
    source.close()
    assert time.monotonic() - started < 1.0
    assert watcher.alive and nvml.shutdowns == 0  # NVML stays up beneath the waiting call
    assert until(lambda: not watcher.alive, timeout=3.0)
    assert nvml.event_sets[0].freed
