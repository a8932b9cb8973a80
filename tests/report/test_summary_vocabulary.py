"""One vocabulary in `gputui report`: the verdict's classes read as the verdict and the account name them (JSON
keeps their ids), their seconds and shares are the account's, a span's seconds are its clock times' difference,
and a clock low for want of work is not a throttle reason."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest

from gputui.cli import main
from gputui.diagnostics.account import class_label
from gputui.record.format import format_clock
from gputui.record.reader import load_recording
from gputui.report.html import render_html
from gputui.report.summary import build_report, render_text, report_to_dict
from tests.record.recdata import T0, snapshot, verdict_event, write_recording

HEAD = "Where the GPU time went ("
CLASS_LINE = re.compile(r"^(.+?) (?:all \d+ GPUs|GPUs? [\d,-]+) \S+(?: each)?[,:]")


@pytest.fixture
def idle_at_the_end(tmp_path: Path) -> Path:
    """30 s on 2 GPUs: GPU-bound for 15 s, then idle (nobody holds the GPUs) for the last 15 s, its clock low
    for want of work (gpu_idle) while the power cap held it back before. A reading speaks for the second before
    it: the first idle one is at 16 s."""
    ticks = []
    for t in range(31):
        snap = snapshot(T0 + t, 2, util=95.0 if t <= 15 else 0.0, mask=0x4 if t <= 15 else 0x1)
        if t > 15:
            snap = dataclasses.replace(snap, gpus=tuple(dataclasses.replace(g, processes=()) for g in snap.gpus))
        ticks.append(snap)
    return write_recording(tmp_path / "idle.jsonl", ticks, (verdict_event("gpu_bound", 0), verdict_event("idle", 16)))


@pytest.mark.usefixtures("utc")
def test_a_15_second_idle_span_is_billed_15_seconds(idle_at_the_end: Path) -> None:
    report = build_report(load_recording(idle_at_the_end))
    lines = render_text(report).splitlines()
    assert "Idle (free) all 2 GPUs 15s each: 0.00833 GPU-hours" in lines
    idle = f"Idle 15s, 50%: {format_clock(T0 + 15, 0)}-{format_clock(T0 + 30, 0)}"
    assert "verdict      GPU-bound 15s, 50% of the time" in lines and f"             {idle}" in lines
    assert [span.seconds for span in report.verdicts] == [15.0, 15.0]


def test_the_verdict_s_classes_read_as_the_account_names_them(idle_at_the_end: Path) -> None:
    """Not 'gpu_bound 58% of the time' under 'GPU-bound 28s': the verdict's label, and the account's seconds."""
    report = build_report(load_recording(idle_at_the_end))
    text = render_text(report)
    verdict_lines = [line for line in text.splitlines() if line.startswith(("verdict", "      "))][:2]
    assert not any(cls in line for line in verdict_lines for cls in ("gpu_bound", "idle "))
    assert all(line[13:].startswith((class_label("gpu_bound"), class_label("idle"))) for line in verdict_lines)
    page = render_html(load_recording(idle_at_the_end), report)
    assert "<b>GPU-bound</b> 15s, 50% of the time" in page and "<b>Idle</b> 15s, 50%" in page


def test_json_keeps_the_ids_and_its_shares_are_the_seconds_over_the_window(
    idle_at_the_end: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["report", str(idle_at_the_end), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    window = doc["account"]["window_s"]
    assert window == 30
    assert [(v["class"], v["seconds"]) for v in doc["verdicts"]] == [("gpu_bound", 15.0), ("idle", 15.0)]
    assert doc["verdict_shares"] == {"gpu_bound": 0.5, "idle": 0.5}
    assert doc["account"]["gpus"][0]["seconds"] == {"gpu_bound": 15.0, "idle_free": 15.0}


def test_idle_is_not_a_throttle_reason(idle_at_the_end: Path) -> None:
    """NVML's gpu_idle (0x1): the clock is low because there is no work; it is said apart, not among the reasons."""
    report = build_report(load_recording(idle_at_the_end))
    gpu = report.gpus[0]
    assert gpu.throttle_share is not None and "gpu_idle" not in gpu.throttle_share
    assert gpu.other_clock_events is not None and gpu.other_clock_events["gpu_idle"] > 0.4
    text = render_text(report)
    throttled = [line for line in text.splitlines() if line.startswith("  throttled ")]
    assert len(throttled) == 2 and all("gpu_idle" not in line and "sw_power_cap" in line for line in throttled)
    assert "  other events gpu_idle 48.4% (not throttling" in text
    assert "gpu_idle" not in report_to_dict(report)["gpus"][0]["throttle_share"]


def test_the_report_says_the_severities_and_classes_as_diagnose_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`diagnose --demo tour --record` then `report`: 'CRIT  GPU 1: thermal throttling' and 'Throttled' in both,
    not 'critical' and 'throttled'; the account's classes read the same."""
    path = tmp_path / "tour.jsonl"
    main(["diagnose", "--demo", "tour", "--seconds", "100", "--record", str(path)])
    said = capsys.readouterr().out.splitlines()
    assert main(["report", str(path)]) == 0
    reported = capsys.readouterr().out.splitlines()
    assert any(line.startswith("CRIT  GPU 1: thermal throttling") for line in said)
    assert any(line.endswith("  CRIT  GPU 1: thermal throttling") for line in reported)
    [verdict] = [line for line in said if line.startswith("VERDICT  ")]
    label = verdict.removeprefix("VERDICT  ").split(":")[0]
    assert label == "Throttled" and any(line[13:].startswith(f"{label} ") for line in reported)
    head = reported[: next(n for n, line in enumerate(reported) if line.startswith("GPU 0 "))]
    assert not any(cls in line for line in head for cls in ("gpu_bound", "throttled", "mixed", "unknown", "idle_"))
    # The account's lines name the classes as the report's do ("Idle (allocated) all 4 GPUs 3s each"); the report
    # also bills the warm-up, which diagnose leaves out of its count.
    labels = [re.match(CLASS_LINE, line) for line in said[said.index(next(h for h in said if h.startswith(HEAD))) :]]
    named = {m.group(1) for m in labels if m}
    assert {"Throttled", "GPU-bound", "Idle (free)"} <= named
    assert named <= {m.group(1) for line in reported if (m := re.match(CLASS_LINE, line))}
    page = render_html(load_recording(path), build_report(load_recording(path)))
    assert "CRIT)" in page and "critical" not in page[: page.index("<script")]
