"""Before and after each mark in `gputui report`: the spans a mark cuts the recording into, each judged by its own
account, in text, JSON and HTML; a span too short to judge says so."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gputui.cli import main
from gputui.record.format import format_clock, mark_event
from gputui.record.reader import load_recording
from gputui.report.html import render_html
from gputui.report.summary import build_report, render_text
from tests.record.recdata import T0, snapshot, verdict_event, write_recording

CHANGE = "changed num_workers to 8"


def recording(tmp_path: Path, *marks: tuple[float, str]) -> Path:
    """60 s on 2 GPUs, the first reading at -1 s: input-bound and 22% busy for 40 s, of which 4 s GPU-bound (the
    fix is tried a first time), then 90% busy and GPU-bound from 40 s, where the mark says what changed. Each
    reading speaks for the second before it."""
    ticks = [snapshot(T0 + t, 2, util=22.0 if t < 40 else 90.0) for t in range(-1, 60)]
    events = (
        verdict_event("input_bound", -1),
        verdict_event("gpu_bound", 32),
        verdict_event("input_bound", 36),
        verdict_event("gpu_bound", 40),
        *(mark_event(label, T0 + t) for t, label in marks),
    )
    return write_recording(tmp_path / "marked.jsonl", ticks, events)


@pytest.mark.usefixtures("utc")
def test_each_mark_compares_the_span_before_with_the_span_after(tmp_path: Path) -> None:
    report = build_report(load_recording(recording(tmp_path, (40, CHANGE))))
    lines = render_text(report).splitlines()
    n = lines.index("Before and after each mark (GPU busy: mean utilization; a class: its share of the GPU time):")
    assert lines[n + 1] == (
        f"  {format_clock(T0 + 40, 0)} {CHANGE}: GPU busy 22% → 90%, Input-bound 90% → 0%, GPU-bound 10% → 100%"
    )
    (compared,) = report.before_after
    assert (compared.before.window_s, compared.after.window_s) == (40.0, 20.0) and compared.judged


def test_json_gives_each_side_s_figures(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(recording(tmp_path, (40, CHANGE))), "--json"]) == 0
    (compared,) = json.loads(capsys.readouterr().out)["before_after"]
    assert (compared["t"], compared["label"], compared["judged"]) == (T0 + 40, CHANGE, True)
    assert compared["classes"] == ["input_bound", "gpu_bound"]
    assert compared["before"] == {
        "start": T0 - 1,
        "end": T0 + 40,
        "window_s": 40.0,
        "busy_share": 0.22,
        "shares": {"input_bound": 0.9, "gpu_bound": 0.1},
    }
    assert compared["after"]["busy_share"] == 0.9 and compared["after"]["shares"] == {"gpu_bound": 1.0}


def test_the_html_page_says_it_under_the_account(tmp_path: Path) -> None:
    path = recording(tmp_path, (40, CHANGE))
    loaded = load_recording(path)
    page = render_html(loaded, build_report(loaded))
    head = page[page.index('<p class="verdict">') : page.index("<script")]
    assert f"{CHANGE}: GPU busy 22% → 90%, Input-bound 90% → 0%, GPU-bound 10% → 100%</li>" in head


@pytest.mark.usefixtures("utc")
def test_a_span_too_short_says_so(tmp_path: Path) -> None:
    """Two marks 4 s apart: the span between them is shorter than the verdict's window."""
    report = build_report(load_recording(recording(tmp_path, (40, CHANGE), (44, "restarted the loader"))))
    text = render_text(report)
    assert (
        f"{format_clock(T0 + 40, 0)} {CHANGE}: too short to judge (40s before, 4s after; the verdict looks at 10s)"
        in text
    )
    assert f"{format_clock(T0 + 44, 0)} restarted the loader: too short to judge (4s before, 16s after" in text
    assert [c.judged for c in report.before_after] == [False, False]
