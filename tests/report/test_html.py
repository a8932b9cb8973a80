"""The HTML report as a reader meets it: the verdict and the charts first, one metric per chart with a GPU
selector, percentages on 0-100, a toolbar that covers nothing, and a page that stays small for an hour of 8 GPUs."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from gputui.diagnostics.account import class_label
from gputui.record.reader import Recording, load_recording
from gputui.report.buckets import MAX_BUCKETS
from gputui.report.charts import HOST_CPU_TITLE
from gputui.report.figure import MODEBAR_BAND_PX, TOP_MARGIN_PX
from gputui.report.html import TEXT_SUMMARY, render_html
from gputui.report.lanes import FINDINGS_TITLE, VERDICT_TITLE
from gputui.report.summary import Report, build_report, render_text
from tests.record.recdata import T0, record_simulated, snapshot, write_recording
from tests.report.plotpage import config, plot, row_axis

PERCENT_TITLES = [
    "GPU utilization (%)",
    "SM active (%)",
    "Tensor cores active (%)",
    "DRAM bandwidth (%)",
    "GPU memory used (%)",
    HOST_CPU_TITLE,
]
_TITLE_PX = 24  # a subplot title's height at plotly's 16 px font
_DROPDOWN_PX = 30


@pytest.fixture(scope="module")
def tour(tmp_path_factory: pytest.TempPathFactory) -> tuple[Recording, Report, str]:
    """Two minutes of the simulated tour on 8 GPUs, recorded with the engine's verdicts and findings."""
    path = record_simulated(tmp_path_factory.mktemp("tour") / "tour.jsonl", "tour", gpus=8, seconds=120)
    recording = load_recording(path)
    report = build_report(recording)
    return recording, report, render_html(recording, report)


def _charts(layout: dict[str, Any]) -> dict[str, str]:
    """Each chart's title -> its y axis, the lanes left out (marks' labels are notes on the time axis, not titles)."""
    titles = [a["text"] for a in layout["annotations"] if a["xref"] == "paper"]
    return {title: row_axis(layout, title) for title in titles if title not in (VERDICT_TITLE, FINDINGS_TITLE)}


def _is_mark(trace: dict[str, Any]) -> bool:
    return trace.get("hoverinfo") == "skip"


def test_the_page_opens_on_the_verdict_then_the_charts_then_the_text(tour: tuple[Recording, Report, str]) -> None:
    _, report, page = tour
    header = page[: page.index("<script")]
    assert header.index('class="sim">SIMULATED') < header.index("<h1>") < header.index('class="verdict"')
    assert "<title>SIMULATED" in header and "<pre" not in header  # no text dump before the charts
    dominant = next(iter(report.verdict_shares()))
    sentence = header[header.index('class="verdict"') :]
    assert (
        f"<b>{class_label(dominant)}</b>" in sentence
        and "of the time" in sentence
        and "Its longest stretch" in sentence
    )
    assert "8 × simulated H100" in header and "2.0 min, 121 ticks every 1 s" in header
    assert "Findings (recomputed from the samples)" not in header and "Findings (as recorded)" in header
    after = page[page.rindex("Plotly.newPlot(") :]
    text = render_text(report)
    folded = after[after.index(f"<details><summary>{TEXT_SUMMARY}</summary><pre>") :]
    assert text.splitlines()[0] in folded and "findings (as recorded):" in folded  # the text report, after


def test_every_percentage_axis_is_fixed_at_0_to_100(tour: tuple[Recording, Report, str]) -> None:
    _, report, page = tour
    _, layout = plot(page)
    charts = _charts(layout)
    percent = [title for title in charts if "(%)" in title]
    assert percent == PERCENT_TITLES
    assert all(layout["yaxis" + charts[t].removeprefix("y")]["range"] == [0, 100] for t in percent)
    assert report.gpus[0].utilization_pct.p50 is not None and report.gpus[0].utilization_pct.p50 > 90  # reads flat
    assert all("range" not in layout["yaxis" + charts[t].removeprefix("y")] for t in charts if t not in percent)


def test_each_chart_is_one_metric_with_one_line_per_gpu_and_the_selector_shows_one_gpu(
    tour: tuple[Recording, Report, str],
) -> None:
    _, _, page = tour
    traces, layout = plot(page)
    charts = _charts(layout)
    gpus = [f"GPU {i}" for i in range(8)]
    for title, axis in charts.items():
        lines = [t["name"] for t in traces if t["yaxis"] == axis and not _is_mark(t)]
        assert lines == (["host CPU"] if title == HOST_CPU_TITLE else gpus), title
    [menu] = layout["updatemenus"]
    assert [b["label"] for b in menu["buttons"]] == ["All GPUs", *(f"{g} only" for g in gpus)]
    assert menu["buttons"][0]["args"][0]["visible"] == [True] * len(traces)
    for gpu, button in zip(gpus, menu["buttons"][1:], strict=True):
        visible = button["args"][0]["visible"]
        assert len(visible) == len(traces) and button["method"] == "restyle"
        shown = [t for t, v in zip(traces, visible, strict=True) if v]
        for title, axis in charts.items():
            lines = [t["name"] for t in shown if t["yaxis"] == axis and not _is_mark(t)]
            assert lines == (["host CPU"] if title == HOST_CPU_TITLE else [gpu]), (gpu, title)
        assert all(t["name"].startswith(f"{gpu} ") for t in shown if _is_mark(t))
        lanes = {row_axis(layout, VERDICT_TITLE), row_axis(layout, FINDINGS_TITLE)}
        assert all(v for t, v in zip(traces, visible, strict=True) if t["yaxis"] in lanes)  # the lanes stay


def test_one_gpu_needs_no_selector(tmp_path: Path) -> None:
    recording = load_recording(write_recording(tmp_path / "r.jsonl", [snapshot(T0 + i, 1) for i in range(3)]))
    _, layout = plot(render_html(recording, build_report(recording)))
    assert layout.get("updatemenus", []) == []


def test_the_toolbar_has_a_band_of_its_own_and_covers_no_title(tour: tuple[Recording, Report, str]) -> None:
    _, _, page = tour
    settings = config(page)
    assert settings["displayModeBar"] is True and settings["displaylogo"] is False
    assert settings["showSendToCloud"] is False  # nothing on the page offers to upload it
    assert {"select2d", "lasso2d"} <= set(settings["modeBarButtonsToRemove"])
    _, layout = plot(page)
    assert "text" not in layout.get("title", {})  # no figure title for the toolbar to sit on
    top = layout["margin"]["t"]
    plot_px = layout["height"] - top - layout["margin"]["b"]

    def from_top(y: float) -> float:
        return top + (1 - y) * plot_px

    assert top == TOP_MARGIN_PX
    for note in layout["annotations"]:
        assert from_top(note["y"]) - _TITLE_PX >= MODEBAR_BAND_PX, note["text"]
    [menu] = layout["updatemenus"]
    assert menu["x"] == 0 and menu["xanchor"] == "left" and menu["yanchor"] == "top"  # left; the toolbar is right
    assert from_top(menu["y"]) >= 0 and from_top(menu["y"]) + _DROPDOWN_PX <= MODEBAR_BAND_PX
    legends = [layout[name] for name in ("legend", "legend2", "legend3")]
    assert all(legend["x"] > 1 and from_top(legend["y"]) >= top for legend in legends)  # in the right margin


def test_an_hour_of_8_gpus_makes_a_page_under_10_mb(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    started = time.monotonic()
    recording = load_recording(record_simulated(tmp_path / "hour.jsonl", "tour", gpus=8, seconds=3600))
    page = render_html(recording, build_report(recording))
    traces, _ = plot(page)
    with capsys.disabled():
        print(f"\n1 h of 8 GPUs at 1 s: a {len(page.encode()) / 1e6:.2f} MB page ({time.monotonic() - started:.1f} s)")
    assert len(page.encode()) < 10_000_000
    lines = [t for t in traces if "x0" in t]
    assert len(lines) > 80 and all("x" not in t and len(t["y"]) <= 2 * MAX_BUCKETS for t in lines)
