"""The exporter over HTTP on loopback: scraped with urllib, read with prometheus-client's parser."""

from __future__ import annotations

import errno
import socket
import threading
from dataclasses import replace

import pytest

from gputui.diagnostics.engine import DiagnosticsState
from gputui.diagnostics.tick import Tick
from gputui.export.server import ExportBindError, Exporter, ExportSampler, _bind_error_message
from gputui.model import Snapshot
from gputui.session.diagnose import tolerant
from gputui.session.sampling import Sampler
from tests.export.export_helpers import FINDINGS, SYSTEM, FakeSource, fetch, make_snapshot, one, parse, render


def test_scrape_over_http_parses_with_prometheus_client(served: tuple[Exporter, FakeSource]) -> None:
    body, content_type = fetch(served[0].url)
    assert content_type.startswith("text/plain")
    series, types = parse(body)
    assert types["DCGM_FI_DEV_GPU_TEMP"] == "gauge"
    assert one(series, "DCGM_FI_DEV_GPU_TEMP", gpu="0", hostname="gpu01") == 71.0
    assert one(series, "gputui_up") == 1


def test_exporter_listens_on_loopback_only_by_default(served: tuple[Exporter, FakeSource]) -> None:
    exporter = served[0]
    assert exporter.address is not None
    assert exporter.address[0] == "127.0.0.1"
    assert exporter.url.startswith("http://127.0.0.1:")


def test_scrapes_never_sample(served: tuple[Exporter, FakeSource]) -> None:
    exporter, source = served
    calls = source.calls  # the one reading start() takes
    for _ in range(3):
        fetch(exporter.url)
    assert source.calls == calls == 1


def test_background_thread_samples_at_the_interval_until_stopped(source: FakeSource) -> None:
    before = set(threading.enumerate())
    with Exporter(Sampler(source), source.system, port=0, interval=0.01) as exporter:
        source.sampled.clear()
        assert source.sampled.wait(5), "the sampler thread never read the source"
        assert exporter.sampler.state.snapshot is not None
    calls = source.calls
    assert calls >= 2
    started = [t for t in threading.enumerate() if t not in before and t.name == "gputui-export-sampler"]
    assert started == [], "stop() left the sampling thread running"
    source.sampled.clear()
    assert not source.sampled.wait(0.1), "the source was read after stop() (ten intervals)"
    assert source.calls == calls


def test_port_in_use_is_a_clear_error(source: FakeSource) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        exporter = Exporter(Sampler(source), source.system, port=port)
        with pytest.raises(ExportBindError, match=f"port {port} is already in use on 127.0.0.1"):
            exporter.start()
        exporter.stop()


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        (errno.EADDRNOTAVAIL, "10.9.9.9 is not an address of this machine"),
        (errno.EACCES, "permission denied"),
        (errno.EINVAL, "cannot listen on 10.9.9.9:80: boom"),
    ],
)
def test_other_bind_errors_are_one_line(code: int, expected: str) -> None:
    message = _bind_error_message(OSError(code, "boom"), "10.9.9.9", 80)
    assert expected in message
    assert "\n" not in message


def test_failed_reading_is_served_as_up_zero_then_recovers() -> None:
    source = FakeSource()
    source.snapshots = [make_snapshot(), RuntimeError("GPU is lost"), make_snapshot()]
    sampler = ExportSampler(Sampler(source), SYSTEM, interval=1)
    assert sampler.sample_once().snapshot is not None
    failed = sampler.sample_once()
    assert failed.snapshot is None
    assert failed.error == "GPU is lost"
    assert sampler.sample_once().snapshot is not None


def test_findings_come_from_the_diagnostics_run_in_the_sampler(source: FakeSource) -> None:
    seen: list[float] = []

    def diagnose(snapshot: Snapshot) -> DiagnosticsState:
        seen.append(snapshot.timestamp)
        return DiagnosticsState(active=FINDINGS)

    with Exporter(Sampler(source, diagnose), source.system, port=0, interval=3600) as exporter:
        series, _ = parse(fetch(exporter.url)[0])
        fetch(exporter.url)
    assert len(seen) == 1  # once per reading, not per scrape
    assert one(series, "gputui_finding", rule="thermal", severity="critical", gpu="0") == 1


def test_sinks_get_each_tick_and_a_closed_finding_s_series_goes(source: FakeSource) -> None:
    """The alerts are a sink of the exporter's sampler; gputui_finding is served while open, gone once closed."""
    states = iter([DiagnosticsState(active=FINDINGS), DiagnosticsState(closed=FINDINGS)])
    ticks: list[Tick] = []
    sampler = ExportSampler(Sampler(source, lambda _: next(states), sinks=(ticks.append,)), SYSTEM, interval=1)
    opened, _ = parse(render(sampler.sample_once()))
    closed, _ = parse(render(sampler.sample_once()))
    assert [(t.active, t.closed) for t in ticks] == [(FINDINGS, ()), ((), FINDINGS)]
    assert one(opened, "gputui_finding", rule="thermal", gpu="0") == 1
    assert "gputui_finding" not in closed


def test_broken_diagnostics_still_serve_gpu_metrics(source: FakeSource) -> None:
    def diagnose(snapshot: Snapshot) -> DiagnosticsState:
        raise ZeroDivisionError("a rule broke")

    state = ExportSampler(Sampler(source, tolerant(diagnose, "this reading")), SYSTEM, interval=1).sample_once()
    assert state.snapshot is not None
    assert state.findings == ()


def test_last_xid_is_remembered_across_readings() -> None:
    source = FakeSource()
    first = make_snapshot()
    source.snapshots = [first, replace(first, gpus=tuple(replace(g, xid_events=()) for g in first.gpus))]
    sampler = ExportSampler(Sampler(source), SYSTEM, interval=1)
    sampler.sample_once()
    assert sampler.sample_once().last_xid == {0: 79}
