"""The report's jobs' activity: each process's windows of stack samples over the recording, each window once however
many ticks carried it, what led each, the mean of their shares; in the text, the JSON and the HTML page."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from gputui.model import ActivityShares, Snapshot
from gputui.record.format import RecordingHeader
from gputui.record.reader import Recording
from gputui.report.activity_windows import ActivityTally, activity_table
from gputui.report.html import render_html
from gputui.report.summary import build_report, render_text, report_to_dict
from tests.activities import job_snapshot, unreadable, waiting_for_data


class Ticks(list[Snapshot]):
    """The ticks of a recording as the report reads them, made in memory: the recording's format is tested on its
    own (tests/record/test_format.py)."""

    @property
    def timestamps(self) -> list[float]:
        return [tick.timestamp for tick in self]


def session() -> list[Snapshot]:
    """Ten ticks: PID 4242 sampled in two windows (data 71% at t=1, then cpu 80% at t=6, each carried by the ticks
    until the next), PID 4243 never."""
    first = waiting_for_data()
    second = waiting_for_data(taken_at=6.0, shares=ActivityShares(data=0.1, cpu=0.8, idle=0.1), samples=40, top=())
    return [job_snapshot(float(t), first if t < 6 else second) for t in range(1, 11)]


def recording(ticks: list[Snapshot]) -> Recording:
    header = RecordingHeader(1, "test", ticks[0].system, ticks[0].gpu_info, 1.0, ticks[0].timestamp)
    return Recording(Path("job.jsonl"), header, Ticks(ticks))  # type: ignore[arg-type]


def test_each_window_counts_once_and_the_shares_are_their_mean() -> None:
    tally = ActivityTally()
    for tick in session():
        tally.add(tick)
    (job,) = tally.report()
    assert (job.pid, job.gpus, job.windows, job.samples, job.unread) == (4242, (0,), 2, 120, 0)
    assert job.shares.data == 0.405 and job.shares.cpu == 0.5 and job.shares.leading == "cpu"
    assert job.led == {"data": 1, "cpu": 1}
    assert job.top is not None and job.top.function == "_next_data"  # the fullest window's (80 samples)


def test_the_text_and_json_report_list_each_process_activity() -> None:
    report = build_report(recording(session()), engine_factory=lambda: _NoFindings())
    text = render_text(report)
    assert "job activity (stack samples; shares are the mean over the windows each process was sampled in):" in text
    assert "  PID 4242 (GPU 0) python train.py --workers 2" in text
    assert (
        "    cpu 50%, data 40%, idle 6%, gpu_sync 3% over 2 windows (120 samples); data led 1 of 2, cpu led 1 of 2"
        in text
    )
    assert "    top frame of its fullest window: data 66% in _next_data (data/dataloader.py:1327)" in text
    data = json.loads(json.dumps(report_to_dict(report)))
    (job,) = data["activities"]
    assert job["pid"] == 4242 and job["shares"]["cpu"] == 0.5 and job["windows"] == 2
    page = render_html(recording(session()), report)
    assert '<table class="mig activity">' in page and "<td>cpu 50%</td>" in page


def test_a_process_never_read_says_why_and_a_session_without_stacks_has_no_section() -> None:
    tally = ActivityTally()
    tally.add(job_snapshot(2.0, unreadable()))
    (job,) = tally.report()
    assert job.windows == 0 and job.unread == 1 and job.shares.leading is None
    html = activity_table((job,))
    assert "no stack read in 1 windows: the kernel refuses gputui ptrace" in html and "<td>n/a</td>" in html
    bare = [never_sampled(job_snapshot(float(t))) for t in range(1, 4)]
    assert "job activity" not in render_text(build_report(recording(bare), engine_factory=lambda: _NoFindings()))
    assert activity_table(()) == ""


def never_sampled(tick: Snapshot) -> Snapshot:
    return replace(
        tick, host=replace(tick.host, processes=tuple(replace(p, activity=None) for p in tick.host.processes))
    )


class _State:
    active = ()
    closed = ()
    verdict = None


class _NoFindings:
    """The diagnostics engine's stand-in: this report is about the activity, not the findings."""

    def update(self, snapshot: Snapshot) -> _State:
        return _State()
