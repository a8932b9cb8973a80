"""The HTML report's findings: a lane per finding key under the charts, and marks only on the lines a finding is
about."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from gputui.diagnostics.findings import Finding, Severity
from gputui.record.format import RecordedEvent, finding_event, mark_event
from gputui.record.reader import load_recording
from gputui.report.charts import SM_CLOCK_TITLE
from gputui.report.html import render_html
from gputui.report.lanes import FINDINGS_TITLE, severity_colour
from gputui.report.summary import build_report
from tests.record.recdata import T0, snapshot, write_recording
from tests.report.plotpage import plot, row_axis, times

CHART_TITLES = [
    "GPU utilization (%)",
    "GPU memory used (%)",
    SM_CLOCK_TITLE,
    "GPU temperature (°C)",
    "Power (W)",
    "PCIe rx (GB/s)",
    "PCIe tx (GB/s)",
    "Host CPU, all cores (%)",
]
RED, ORANGE, BLUE = (severity_colour(s) for s in ("critical", "warning", "info"))


def at(t: float) -> str:
    """A time as the page writes it (the recordings here are in UTC)."""
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(t))


def _finding(rule: str, gpus: tuple[int, ...], severity: Severity) -> Finding:
    return Finding(rule=rule, severity=severity, title=f"{rule} on {gpus}", advice="look", gpus=gpus)


def _span(rule: str, gpus: tuple[int, ...], severity: Severity, start: int, end: int | None) -> list[RecordedEvent]:
    finding = _finding(rule, gpus, severity)
    opened = [finding_event("finding_opened", finding, T0 + start)]
    return opened if end is None else [*opened, finding_event("finding_closed", finding, T0 + end)]


def _page(tmp_path: Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """10 s on 2 GPUs, clocks held back for the first 5 s, with findings overlapping on both GPUs and the host:
    GPU 1 too hot twice (the second time still at the end), GPU 0 power-capped and starved, both GPUs unequal,
    an idle allocation on GPU 1 to the end, swapping on the host; and a mark."""
    events = (
        *_span("thermal_throttle", (1,), Severity.CRITICAL, 1, 6),
        *_span("imbalance", (0, 1), Severity.WARNING, 2, 4),
        *_span("starvation_cpu", (0,), Severity.WARNING, 2, 5),
        *_span("power_cap", (0,), Severity.CRITICAL, 3, 7),
        *_span("idle_allocation", (1,), Severity.INFO, 4, None),
        *_span("host_swap", (), Severity.WARNING, 6, 7),
        *_span("thermal_throttle", (1,), Severity.CRITICAL, 8, None),
        mark_event("lr 3e-4", T0 + 5),
    )
    ticks = [snapshot(T0 + i, 2, mask=0x4 if i < 5 else 0x0) for i in range(10)]
    recording = load_recording(write_recording(tmp_path / "r.jsonl", ticks, events))
    return plot(render_html(recording, build_report(recording)))


def _bars(trace: dict[str, Any]) -> list[tuple[str, str]]:
    """(start, end) of each bar of a timeline trace: its runs of points between gaps."""
    bars: list[tuple[str, str]] = []
    run: list[str] = []
    for x in [*trace["x"], None]:
        if x is not None:
            run.append(x)
        elif run:
            bars.append((run[0], run[-1]))
            run = []
    return bars


def test_each_chart_row_is_there_over_the_lanes_and_no_note_overprints(tmp_path: Path) -> None:
    _, layout = _page(tmp_path)
    notes = [a["text"] for a in layout["annotations"]]
    # Row titles, then the mark's label: no finding's title is a note.
    assert notes == [*CHART_TITLES, FINDINGS_TITLE, "lr 3e-4"]
    rows = [row_axis(layout, title) for title in [*CHART_TITLES, FINDINGS_TITLE]]
    assert rows == [f"y{n}" if n > 1 else "y" for n in range(1, 10)]  # the lanes last, one axis each
    # The only full-height shape is the mark's dotted line; clocks held back shade the SM clock chart alone.
    assert [s["type"] for s in layout["shapes"] if s["yref"] == "paper"] == ["line"]
    bands = [s for s in layout["shapes"] if s["type"] == "rect"]
    assert [(s["yref"], s["x0"], s["x1"]) for s in bands] == [("y3 domain", at(T0), at(T0 + 5))]


def test_the_lanes_have_one_lane_per_finding_key_with_its_spans(tmp_path: Path) -> None:
    traces, layout = _page(tmp_path)
    axis = row_axis(layout, FINDINGS_TITLE)
    lanes = layout["yaxis" + axis.removeprefix("y")]
    expected = [
        "thermal_throttle GPU 1",
        "imbalance GPUs 0-1",
        "starvation_cpu GPU 0",
        "power_cap GPU 0",
        "idle_allocation GPU 1",
        "host_swap",
    ]
    assert lanes["type"] == "category" and lanes["categoryarray"] == expected
    assert lanes["range"] == [len(expected) - 0.5, -0.5]  # the first lane on top, every lane in view
    timeline = [t for t in traces if t["yaxis"] == axis]
    drawn = {t["y"][0]: (t["line"]["color"], _bars(t)) for t in timeline}
    end = at(T0 + 10)  # open findings run to the end of the last tick
    assert drawn == {
        "thermal_throttle GPU 1": (RED, [(at(T0 + 1), at(T0 + 6)), (at(T0 + 8), end)]),
        "imbalance GPUs 0-1": (ORANGE, [(at(T0 + 2), at(T0 + 4))]),
        "starvation_cpu GPU 0": (ORANGE, [(at(T0 + 2), at(T0 + 5))]),
        "power_cap GPU 0": (RED, [(at(T0 + 3), at(T0 + 7))]),
        "idle_allocation GPU 1": (BLUE, [(at(T0 + 4), end)]),
        "host_swap": (ORANGE, [(at(T0 + 6), at(T0 + 7))]),
    }
    assert len({RED, ORANGE, BLUE}) == 3
    assert all(y in (t["y"][0], None) for t in timeline for y in t["y"])  # each bar in its own lane
    hot = next(t for t in timeline if t["y"][0] == "thermal_throttle GPU 1")
    assert hot["text"][0] == f"CRIT: thermal_throttle on (1,)<br>{at(T0 + 1)} to {at(T0 + 6)}"
    assert hot["text"][-1].endswith("to still open when the recording ended")
    assert hot["hovertemplate"].endswith("<extra>thermal_throttle GPU 1</extra>")


def test_the_lanes_legend_has_one_entry_per_severity(tmp_path: Path) -> None:
    traces, layout = _page(tmp_path)
    timeline = [t for t in traces if t["yaxis"] == row_axis(layout, FINDINGS_TITLE)]
    entries = sorted((t["legendrank"], t["name"], t["line"]["color"]) for t in timeline if t["showlegend"])
    assert entries == [(1, "CRIT", RED), (2, "WARN", ORANGE), (3, "INFO", BLUE)]
    assert {t["legend"] for t in timeline} == {"legend3"} and layout["legend3"]["title"]["text"] == "findings"
    # An entry (the severity as every view says it) hides all its bars: one legend group per severity.
    groups = {(t["name"], t["legendgroup"]) for t in timeline}
    assert groups == {("CRIT", "legend3:critical"), ("WARN", "legend3:warning"), ("INFO", "legend3:info")}


def test_a_finding_marks_only_its_own_gpus_lines_on_its_charts(tmp_path: Path) -> None:
    traces, layout = _page(tmp_path)
    chart = {row_axis(layout, title): title for title in CHART_TITLES}
    marks = [t for t in traces if t.get("hoverinfo") == "skip"]
    # Each drawn over the buckets of the ticks it was open for, a quarter of a tick either side.
    where = sorted((chart[t["yaxis"]], t["name"], times(t)[0], times(t)[-1]) for t in marks)
    assert where == [
        ("GPU temperature (°C)", "GPU 1 thermal_throttle", T0 + 0.75, T0 + 6.25),
        ("GPU temperature (°C)", "GPU 1 thermal_throttle", T0 + 7.75, T0 + 9.25),
        ("GPU utilization (%)", "GPU 0 starvation_cpu", T0 + 1.75, T0 + 5.25),
        ("Power (W)", "GPU 0 power_cap", T0 + 2.75, T0 + 7.25),
        (SM_CLOCK_TITLE, "GPU 0 power_cap", T0 + 2.75, T0 + 7.25),
    ]  # imbalance, the idle allocation and the host's swapping concern no chart: the lanes only
    line = next(t for t in traces if t["name"] == "GPU 1" and chart.get(t["yaxis"]) == "GPU temperature (°C)")
    hot = next(t for t in marks if t["name"] == "GPU 1 thermal_throttle")
    assert hot["legendgroup"] == line["legendgroup"] and hot["y"] == line["y"][2:14]  # on the GPU's own line
    assert times(hot) == times(line)[2:14]
    assert traces.index(hot) < traces.index(line)  # drawn under it


def test_without_findings_there_is_no_timeline(tmp_path: Path) -> None:
    ticks = [snapshot(T0 + i, 1) for i in range(3)]
    recording = load_recording(write_recording(tmp_path / "r.jsonl", ticks))
    report = build_report(recording, engine_factory=lambda: _Quiet())
    traces, layout = plot(render_html(recording, report))
    assert [a["text"] for a in layout["annotations"]] == CHART_TITLES
    assert not any(t.get("hoverinfo") == "skip" for t in traces)


class _Quiet:
    def update(self, snapshot: Any) -> Any:
        return _State()


class _State:
    active: tuple[Finding, ...] = ()
    closed: tuple[Finding, ...] = ()
    verdict = None
