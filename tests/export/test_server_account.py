"""`gputui_verdict_seconds_total{gpu, class}`: each GPU's seconds in each verdict class, counted by the exporter's
sampler from the verdict of each reading, against a scripted run whose answer is known."""

from __future__ import annotations

import time

import pytest

from gputui.diagnostics.engine import DiagnosticsState
from gputui.diagnostics.verdict import Verdict
from gputui.export.server import Exporter, ExportSampler
from gputui.model import Snapshot
from gputui.session.diagnose import Diagnose
from gputui.session.sampling import Sampler
from tests.commands.test_export import _start
from tests.export.export_helpers import FakeSource, fetch, one, parse, render, stopped_at_the_end

COUNTER = "gputui_verdict_seconds_total"


def diagnose_as(classes: list[str]) -> Diagnose:
    """Diagnostics whose verdict at reading i is `classes[i]` on all the GPUs (FakeSource reads 1 s apart)."""
    calls = iter(classes)

    def diagnose(snapshot: Snapshot) -> DiagnosticsState:
        gpus = tuple(g.index for g in snapshot.gpus)
        return DiagnosticsState(verdict=Verdict(cls=next(calls), label="", gpus=gpus, summary="", line=""))

    return diagnose


@pytest.fixture
def source() -> FakeSource:
    return FakeSource()


def test_the_counter_holds_each_gpu_s_seconds_per_class(source: FakeSource) -> None:
    classes = ["unknown"] + ["gpu_bound"] * 10 + ["input_bound"] * 20
    sampler = ExportSampler(Sampler(source, diagnose_as(classes)), source.system, interval=1.0)
    for _ in classes:
        sampler.sample_once()
    series, types = parse(render(sampler.state))
    assert types["gputui_verdict_seconds"] == "counter"
    gpus = {labels["gpu"] for labels, _ in series[COUNTER]}
    assert sampler.state.snapshot is not None
    assert gpus == {str(g.index) for g in sampler.state.snapshot.gpus}
    for gpu in gpus:
        assert one(series, COUNTER, gpu=gpu, **{"class": "gpu_bound"}) == 10
        assert one(series, COUNTER, gpu=gpu, **{"class": "input_bound"}) == 20
    assert {labels["class"] for labels, _ in series[COUNTER]} == {"gpu_bound", "input_bound"}


def test_without_diagnostics_there_is_no_counter(source: FakeSource) -> None:
    sampler = ExportSampler(Sampler(source), source.system, interval=1.0)
    sampler.sample_once()
    sampler.sample_once()
    assert COUNTER not in parse(render(sampler.state))[0]


def test_a_real_export_server_serves_the_counter(source: FakeSource) -> None:
    diagnose = diagnose_as(["gpu_bound"] * 5)
    with Exporter(Sampler(source, diagnose), source.system, port=0, interval=3600) as exporter:
        exporter.sampler.sample_once()
        exporter.sampler.sample_once()
        series, _ = parse(fetch(exporter.url)[0])
    assert one(series, COUNTER, gpu="0", **{"class": "gpu_bound"}) == 2


def test_the_gputui_export_process_counts_up_the_seconds() -> None:
    """A real `gputui export`: the counter is there after its second reading, and grows with each."""
    child, url = _start("--demo", "starved-cpu", "--gpus", "0", "--interval", "0.25")
    with stopped_at_the_end(child):
        seen: list[float] = []
        deadline = time.monotonic() + 20
        while len(seen) < 2 and time.monotonic() < deadline:
            series, types = parse(fetch(url)[0])
            total = sum(value for labels, value in series.get(COUNTER, []) if labels["gpu"] == "0")
            if total > (seen[-1] if seen else 0.0):
                seen.append(total)
            else:
                time.sleep(0.1)
        assert len(seen) == 2, f"the counter did not grow twice in 20 s: {seen}"
        assert types["gputui_verdict_seconds"] == "counter"
