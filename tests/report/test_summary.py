"""The report: shares of time, statistics, the findings timeline, and the HTML page that opens offline."""

from __future__ import annotations

import dataclasses
import importlib
import json
import re
from pathlib import Path
from typing import Any

import pytest

from gputui.diagnostics.findings import Finding, Severity
from gputui.model import GpuSample, Snapshot
from gputui.record.format import RecordingError, finding_event, mark_event, probe_event
from gputui.record.reader import load_recording
from gputui.record.writer import RecordingWriter
from gputui.report.html import render_html, write_html
from gputui.report.summary import Stats, build_report, render_text, report_to_dict
from gputui.sources.sim.source import SimulatedSource
from tests.conftest import Clock
from tests.record.recdata import T0, snapshot, system, with_gpm, write_recording
from tests.report.plotpage import plot, row_axis, times


def _ticks() -> list[Snapshot]:
    """10 s on 2 GPUs: GPU 0 power-capped for the first 5 s; GPU 1 never reports its clock event reasons; GPU 0's
    energy counter draws 500 W, GPU 1 gives none (its power is integrated)."""
    out = []
    for i in range(10):
        snap = snapshot(T0 + i, 2, util=float(10 * i), mask=0x4 if i < 5 else 0x0, temp=60.0 + i, power=600.0)
        gpu0 = dataclasses.replace(snap.gpus[0], energy_mj=1_000_000 + 500_000 * i)
        gpu1 = dataclasses.replace(snap.gpus[1], clock_event_reasons_mask=None, energy_mj=None)
        out.append(dataclasses.replace(snap, gpus=(gpu0, gpu1)))
    return out


def _finding(rule: str = "thermal", gpus: tuple[int, ...] = (0,), severity: Severity = Severity.CRITICAL) -> Finding:
    return Finding(rule=rule, severity=severity, title=f"GPU {gpus[0]}: {rule}", advice="cool it", gpus=gpus)


class NoEngine:
    def update(self, snapshot: Snapshot) -> Any:
        raise AssertionError("recorded findings must not be recomputed")


def test_throttle_shares_utilization_power_and_peaks(tmp_path: Path) -> None:
    recording = load_recording(write_recording(tmp_path / "r.jsonl", _ticks()))
    report = build_report(recording, engine_factory=lambda: _Quiet())
    gpu0, gpu1 = report.gpus
    assert gpu0.throttle_share is not None and gpu0.throttle_share["sw_power_cap"] == 0.5
    assert gpu0.throttle_share["hw_thermal_slowdown"] == 0.0 and gpu0.throttled_share == 0.5
    assert gpu1.throttle_share is None and gpu1.throttled_share is None  # never reported: not 0
    assert gpu0.utilization_pct.mean == 45.0 and gpu0.utilization_pct.minimum == 0.0
    assert gpu0.utilization_pct.maximum == 90.0 and gpu0.utilization_pct.p50 == 45.0
    # The account's energy, as its JSON gives it: the counter over the 9 s from the first reading to the last.
    assert gpu0.power_w.mean == 600.0 and gpu0.energy_wh == round(500 * 9 / 3600, 3)
    assert gpu1.energy_wh == round(600 * 9 / 3600, 3)
    assert report.account.gpus[0].energy_j == 500 * 9
    assert gpu0.temperature_peak_c == 69.0 and gpu0.memory_temperature_peak_c == 78.0
    assert "findings (recomputed from the samples):\n  none" in render_text(report)
    assert report.ticks == 10 and report.duration_s == 9.0 and not report.simulated


def test_a_gap_in_the_recording_counts_as_two_intervals_at_most(tmp_path: Path) -> None:
    ticks = [snapshot(T0, 1, mask=0x40), snapshot(T0 + 1000, 1, mask=0x0)]
    report = build_report(load_recording(write_recording(tmp_path / "r.jsonl", ticks)), engine_factory=lambda: _Quiet())
    assert report.gpus[0].throttle_share is not None
    assert report.gpus[0].throttle_share["hw_thermal_slowdown"] == round(2 / 3, 4)


def test_missing_values_are_n_a_not_zero(tmp_path: Path) -> None:
    bare = [dataclasses.replace(s, gpus=(GpuSample(index=0, timestamp=s.timestamp),)) for s in _ticks()]
    report = build_report(load_recording(write_recording(tmp_path / "r.jsonl", bare)), engine_factory=lambda: _Quiet())
    gpu = report.gpus[0]
    assert gpu.power_w == Stats() and gpu.energy_wh is None and gpu.temperature_peak_c is None
    text = render_text(report)
    assert "power        mean n/a" in text and "throttling   n/a" in text


def test_recorded_findings_make_the_timeline(tmp_path: Path) -> None:
    events = (
        finding_event("finding_opened", _finding("thermal"), T0 + 2),
        finding_event("finding_closed", _finding("thermal"), T0 + 5),
        finding_event("finding_opened", _finding("pcie", (1,), Severity.WARNING), T0 + 7),
        mark_event("num_workers 4 -> 8", T0 + 3),
        probe_event(
            "probe_result", {"probe": "pcie", "device": "cuda:0", "ok": False, "verdict": "H2D 11 GB/s"}, T0 + 8
        ),
    )
    recording = load_recording(write_recording(tmp_path / "r.jsonl", _ticks(), events))
    report = build_report(recording, engine_factory=NoEngine)
    assert report.findings_origin == "recorded"
    assert [(f.rule, f.start, f.end) for f in report.findings] == [("thermal", T0 + 2, T0 + 5), ("pcie", T0 + 7, None)]
    assert report.marks == ((T0 + 3, "num_workers 4 -> 8"),)
    assert report.probes[0]["verdict"] == "H2D 11 GB/s" and report.probes[0]["t"] == T0 + 8
    text = render_text(report)
    assert "findings (as recorded)" in text and "pcie on cuda:0: FAILED, H2D 11 GB/s" in text
    assert "num_workers 4 -> 8" in text


class _Quiet:
    def update(self, snapshot: Snapshot) -> Any:
        return _State((), ())


@dataclasses.dataclass
class _State:
    active: tuple[Finding, ...]
    closed: tuple[Finding, ...]
    verdict: None = None


class _LowUtilEngine:
    """Opens a finding while GPU 0 is under 30% busy, closes it after."""

    def __init__(self) -> None:
        self.open: Finding | None = None
        self.closed: list[Finding] = []

    def update(self, snapshot: Snapshot) -> _State:
        low = (snapshot.gpus[0].utilization_gpu_pct or 0.0) < 30
        if low and self.open is None:
            self.open = dataclasses.replace(_finding("starved"), started_at=snapshot.timestamp)
        elif not low and self.open is not None:
            self.closed.insert(0, dataclasses.replace(self.open, ended_at=snapshot.timestamp))
            self.open = None
        return _State((self.open,) if self.open else (), tuple(self.closed))


def test_without_recorded_findings_the_engine_recomputes_them(tmp_path: Path) -> None:
    recording = load_recording(write_recording(tmp_path / "r.jsonl", _ticks()))
    report = build_report(recording, engine_factory=_LowUtilEngine)
    assert report.findings_origin == "recomputed"
    assert [(f.rule, f.start, f.end) for f in report.findings] == [("starved", T0, T0 + 3)]


def _simulated_recording(tmp_path: Path, scenario: str = "thermal", seconds: int = 120) -> Path:
    clock = Clock()
    source = SimulatedSource(scenario, gpu_count=4, clock=clock)
    source.open()
    path = tmp_path / "sim.jsonl.gz"
    writer = RecordingWriter(path, interval_s=1.0)
    for i in range(seconds):
        clock.now = float(i)
        writer.put(source.sample())
    writer.close()
    return path


def test_report_json_of_a_simulated_thermal_recording(tmp_path: Path) -> None:
    recording = load_recording(_simulated_recording(tmp_path))
    data = json.loads(json.dumps(report_to_dict(build_report(recording))))
    assert data["simulated"] is True and data["label"].startswith("SIMULATED")
    assert data["ticks"] == 120 and data["duration_s"] == 119.0 and len(data["gpus"]) == 4
    hot = data["gpus"][1]
    cool = [data["gpus"][i] for i in (0, 2, 3)]
    assert hot["throttle_share"]["sw_thermal_slowdown"] > 0.2
    assert all(g["throttle_share"]["sw_thermal_slowdown"] == 0.0 for g in cool)
    assert hot["temperature_peak_c"] > max(g["temperature_peak_c"] for g in cool)
    utils = [t.gpus[1].utilization_gpu_pct for t in recording.ticks]
    assert hot["utilization_pct"]["mean"] == pytest.approx(sum(utils) / len(utils), abs=1e-3)  # type: ignore[arg-type]
    assert data["findings_origin"] == "recomputed"
    assert any(f["rule"].startswith("thermal") and f["gpus"] == [1] for f in data["findings"])


def test_html_is_one_self_contained_page(tmp_path: Path) -> None:
    path = _simulated_recording(tmp_path, "tour", 90)
    recording = load_recording(path)
    out = tmp_path / "report.html"
    write_html(recording, build_report(recording), out)
    page = out.read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and "SIMULATED" in page
    # plotly.js is inline, nothing is fetched: the page works offline
    assert re.search(r"<script[^>]*\ssrc=", page) is None and re.search(r"<link[^>]*href=", page) is None
    assert "Plotly.newPlot" in page and len(page) > 1_000_000
    assert "SM clock (MHz)" in page and "Host CPU" in page


def test_html_without_plotly_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.import_module

    def no_plotly(name: str, package: str | None = None) -> Any:
        if name.startswith("plotly"):
            raise ImportError(name)
        return real(name, package)

    monkeypatch.setattr(importlib, "import_module", no_plotly)
    recording = load_recording(write_recording(tmp_path / "r.jsonl", _ticks()))
    with pytest.raises(RecordingError, match=r"needs plotly.*\.venv/bin/pip install plotly"):
        render_html(recording, build_report(recording, engine_factory=lambda: _Quiet()))


def test_simulated_label_in_text(tmp_path: Path) -> None:
    snaps = [snapshot(T0 + i, 1, sys_info=system(1, source="simulated")) for i in range(3)]
    report = build_report(load_recording(write_recording(tmp_path / "s.jsonl", snaps)), engine_factory=lambda: _Quiet())
    assert render_text(report).startswith("SIMULATED (scenario healthy)")


def _gpm_ticks() -> list[Snapshot]:
    """10 s on 2 H100s: GPU 0's SM activity climbs 80-89% after a first tick without GPM (it needs two
    samples); GPU 1 reports SM activity and DRAM bandwidth but never its tensor activity."""
    out = []
    for i in range(10):
        snap = with_gpm(snapshot(T0 + i, 2), sm_active_pct=80.0 + i)
        first = dataclasses.replace(snap.gpus[0], sm_active_pct=None, tensor_active_pct=None, dram_bw_pct=None)
        gpu0 = first if i == 0 else snap.gpus[0]
        gpu1 = dataclasses.replace(snap.gpus[1], sm_active_pct=86.0, tensor_active_pct=None)
        out.append(dataclasses.replace(snap, gpus=(gpu0, gpu1)))
    return out


def test_gpm_means_in_text_and_json(tmp_path: Path) -> None:
    recording = load_recording(write_recording(tmp_path / "r.jsonl", _gpm_ticks()))
    report = build_report(recording, engine_factory=lambda: _Quiet())
    gpu0, gpu1 = report.gpus
    assert gpu0.sm_active_pct.count == 9 and gpu0.sm_active_pct.mean == 85.0 and gpu0.sm_active_pct.minimum == 81.0
    assert gpu0.tensor_active_pct.mean == 48.0 and gpu0.dram_bw_pct.mean == 55.0
    assert gpu1.tensor_active_pct == Stats() and gpu1.gpm_reported
    text = render_text(report)
    assert "  efficiency   SM active mean 85.0%  tensor mean 48.0%  DRAM bw mean 55.0%\n" in text
    assert "  efficiency   SM active mean 86.0%  tensor mean n/a  DRAM bw mean 55.0%\n" in text
    assert max(len(line) for line in text.splitlines()) <= 100
    data = json.loads(json.dumps(report_to_dict(report)))
    assert data["gpus"][0]["sm_active_pct"] == {
        "count": 9,
        "mean": 85.0,
        "minimum": 81.0,
        "p50": 85.0,
        "p95": 88.6,
        "maximum": 89.0,
    }
    assert data["gpus"][0]["tensor_active_pct"]["mean"] == 48.0 and data["gpus"][0]["dram_bw_pct"]["mean"] == 55.0
    assert data["gpus"][1]["tensor_active_pct"] == {
        "count": 0,
        **dict.fromkeys(("mean", "minimum", "p50", "p95", "maximum")),
    }


GPM_TITLES = ["SM active (%)", "Tensor cores active (%)", "DRAM bandwidth (%)"]


def test_gpm_charts_in_the_html_one_per_metric(tmp_path: Path) -> None:
    recording = load_recording(write_recording(tmp_path / "r.jsonl", _gpm_ticks()))
    traces, layout = plot(render_html(recording, build_report(recording, engine_factory=lambda: _Quiet())))
    titles = [a["text"] for a in layout["annotations"]]
    assert titles[:5] == ["GPU utilization (%)", *GPM_TITLES, "GPU memory used (%)"]  # under utilization
    drawn = {title: {t["name"]: t for t in traces if t["yaxis"] == row_axis(layout, title)} for title in GPM_TITLES}
    assert all(sorted(lines) == ["GPU 0", "GPU 1"] for lines in drawn.values())  # one line per GPU, one metric
    # A bucket a tick wide is drawn as two points, its lowest and highest reading (here the same one).
    assert drawn["SM active (%)"]["GPU 0"]["y"] == [None, None, *(80.0 + i for i in range(1, 10) for _ in "lh")]
    assert drawn["Tensor cores active (%)"]["GPU 1"]["y"] == [None] * 20  # a gap, not a line at 0
    assert times(drawn["DRAM bandwidth (%)"]["GPU 0"])[:3] == [T0 - 0.25, T0 + 0.25, T0 + 0.75]
    assert all(layout["yaxis" + row_axis(layout, title).removeprefix("y")]["range"] == [0, 100] for title in GPM_TITLES)


def test_without_gpm_one_n_a_and_no_gpm_chart(tmp_path: Path) -> None:
    recording = load_recording(write_recording(tmp_path / "r.jsonl", _ticks()))
    report = build_report(recording, engine_factory=lambda: _Quiet())
    assert not any(gpu.gpm_reported for gpu in report.gpus)
    text = render_text(report)
    assert text.count("  efficiency   n/a (no GPM on this GPU)\n") == 2 and "SM active" not in text
    data = json.loads(json.dumps(report_to_dict(report)))
    assert data["gpus"][0]["sm_active_pct"]["mean"] is None and data["gpus"][0]["sm_active_pct"]["count"] == 0
    _, layout = plot(render_html(recording, report))
    titles = [a["text"] for a in layout["annotations"]]
    assert not set(GPM_TITLES) & set(titles)
    assert titles[:2] == ["GPU utilization (%)", "GPU memory used (%)"]
