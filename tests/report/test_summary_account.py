"""`gputui report`'s first lines: what each verdict class took of a recording whose answer is known (two GPUs, 60 s
GPU-bound, 120 s input-bound, 30 s idle with a process on each, 30 s idle with none), in GPU-hours and cost."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from gputui.cli import main
from gputui.diagnostics.account import Price
from gputui.model import Snapshot
from gputui.record.reader import load_recording
from gputui.report.html import render_html
from gputui.report.summary import build_report, render_text
from tests.record.recdata import T0, snapshot, verdict_event, write_recording

FIRST_LINES = [
    "Where the GPU time went (4m00s on 2 GPUs):",
    "Input-bound all 2 GPUs 2m00s each: 0.0667 GPU-hours, 0.16 USD at 2.40 USD",
    "Idle (allocated) all 2 GPUs 30s each: 0.0167 GPU-hours, 0.04 USD at 2.40 USD",
    "GPU-bound all 2 GPUs 1m00s each: 0.0333 GPU-hours, 0.08 USD at 2.40 USD",
    "Idle (free) all 2 GPUs 30s each: 0.0167 GPU-hours, 0.04 USD at 2.40 USD",
]


def tick(t: int) -> Snapshot:
    snap = snapshot(T0 + t, 2)
    if t <= 210:
        return snap
    return dataclasses.replace(snap, gpus=tuple(dataclasses.replace(g, processes=()) for g in snap.gpus))


@pytest.fixture
def known(tmp_path: Path) -> Path:
    events = (verdict_event("gpu_bound", 0), verdict_event("input_bound", 61), verdict_event("idle", 181))
    return write_recording(tmp_path / "known.jsonl", [tick(t) for t in range(241)], events)


def test_the_first_lines_say_each_class_s_gpu_hours_and_cost(known: Path) -> None:
    report = build_report(load_recording(known))
    lines = render_text(report, Price(2.40)).splitlines()
    assert lines[2:7] == FIRST_LINES
    assert render_text(report).splitlines()[3] == "Input-bound all 2 GPUs 2m00s each: 0.0667 GPU-hours"


def test_report_price_json_gives_the_account(known: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(known), "--json", "--price", "2.40"]) == 0
    account = json.loads(capsys.readouterr().out)["account"]
    assert account["window_s"] == 240
    assert account["gpus"][1]["seconds"] == {
        "input_bound": 120.0,
        "idle_allocated": 30.0,
        "gpu_bound": 60.0,
        "idle_free": 30.0,
    }
    assert account["cost"] == {"input_bound": 0.16, "idle_allocated": 0.04, "gpu_bound": 0.08, "idle_free": 0.04}
    assert main(["report", str(known), "--json"]) == 0
    assert "cost" not in json.loads(capsys.readouterr().out)["account"]


def test_report_text_with_price_starts_with_the_cost(known: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(known), "--price", "2.40"]) == 0
    assert capsys.readouterr().out.splitlines()[2:7] == FIRST_LINES


def test_the_html_report_says_where_the_time_went_under_the_verdict(known: Path) -> None:
    recording = load_recording(known)
    page = render_html(recording, build_report(recording), Price(2.40))
    under_verdict = page[page.index('<p class="verdict">') : page.index("<details>")]
    assert "<br>".join(FIRST_LINES) in under_verdict
