"""The verdict over time in `gputui report`: read from a recording's verdict events, or recomputed."""

from __future__ import annotations

from pathlib import Path

import pytest

from gputui.cli import main
from gputui.diagnostics.account import class_label
from gputui.record.reader import load_recording
from gputui.report.html import render_html
from gputui.report.lanes import VERDICT_LANE, VERDICT_TITLE, verdict_colour
from gputui.report.summary import build_report, render_text, report_to_dict
from tests.record.recdata import T0, snapshot, write_recording
from tests.report.plotpage import plot, row_axis


@pytest.mark.usefixtures("utc")  # the spans' clock times below are the recording machine's, in UTC here
def test_a_recorded_session_gives_the_verdict_over_time(tmp_path: Path) -> None:
    """The tour from 0 to 100 s: unknown for 5 s, gpu_bound, idle shown from 34 s (3 s of idle readings), gpu_bound
    again from 63 s as the next job runs, then mixed when GPU 1's thermal finding opens; the GPUs going idle and
    busy again between the scenarios never read as underused."""
    path = tmp_path / "tour.jsonl"
    assert main(["diagnose", "--demo", "tour", "--seconds", "100", "--record", str(path)]) in (0, 1, 4)
    report = build_report(load_recording(path))
    classes = [span.cls for span in report.verdicts]
    assert classes[:3] == ["unknown", "gpu_bound", "idle"]
    assert "mixed" in classes and "throttled" in classes and "underused" not in classes
    assert all(a.end == b.start for a, b in zip(report.verdicts, report.verdicts[1:], strict=False))
    assert report.verdicts[-1].end is None
    shares = report.verdict_shares()
    assert abs(sum(shares.values()) - 1.0) < 1e-3 and next(iter(shares)) == max(shares, key=shares.__getitem__)
    text = render_text(report).splitlines()
    [first] = [n for n, line in enumerate(text) if line.startswith("verdict")]
    assert "of the time" in text[first] and text[first + 1].startswith("             ")
    verdict_lines = [line.strip() for line in text[first : first + len(shares)]]
    # Shown at 34 s, on the readings since 33 s; shown until 62 s (GPU-bound judged on the reading at 63 s).
    assert "Idle 29s, 28%: 00:00:33-00:01:02" in verdict_lines
    doc = report_to_dict(report)
    assert doc["verdicts"][0]["class"] == "unknown" and set(doc["verdict_shares"]) == set(classes)


def test_without_verdict_events_the_engine_works_it_out(tmp_path: Path) -> None:
    ticks = [snapshot(T0 + i, 2, util=95.0, mask=0x0) for i in range(12)]
    report = build_report(load_recording(write_recording(tmp_path / "r.jsonl", ticks)))
    assert report.findings_origin == "recomputed"
    assert [span.cls for span in report.verdicts] == ["unknown", "gpu_bound"]
    assert report.verdict_shares()["gpu_bound"] > 0.5


def test_the_html_report_puts_the_verdict_on_top_with_a_legend_entry_per_class(tmp_path: Path) -> None:
    path = tmp_path / "tour.jsonl"
    main(["diagnose", "--demo", "tour", "--seconds", "100", "--record", str(path)])
    recording = load_recording(path)
    report = build_report(recording)
    traces, layout = plot(render_html(recording, report))
    assert row_axis(layout, VERDICT_TITLE) == "y" and layout["annotations"][0]["text"] == VERDICT_TITLE  # the top
    assert layout["yaxis"]["categoryarray"] == [VERDICT_LANE]
    verdict_traces = [t for t in traces if t["yaxis"] == "y"]
    hovers = {text.split(":")[0] for t in verdict_traces for text in t["text"] if text}
    assert hovers == {class_label(span.cls) for span in report.verdicts}  # every span drawn, named as the text
    # The legend beside the lane: one entry per class present, in its colour, the class that held most first.
    entries = sorted((t["legendrank"], t["name"], t["line"]["color"]) for t in verdict_traces if t["showlegend"])
    shares = list(report.verdict_shares())
    assert entries == [(n + 1, class_label(cls), verdict_colour(cls)) for n, cls in enumerate(shares)]
    labels = {class_label(cls): cls for cls in shares}
    assert all(t["line"]["color"] == verdict_colour(labels[t["name"]]) for t in verdict_traces)
    assert {t["legend"] for t in verdict_traces} == {"legend2"}
    legend = layout["legend2"]
    assert legend["title"]["text"] == "verdict" and legend["x"] > 1 and legend["y"] == 1  # beside the lane
