"""A job's activity as the views say it: the process row's mark, the detail's bar and block, the `snapshot` and
`diagnose` lines; from hand-made activities (tests/activities.py)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from gputui.cli import main
from gputui.model import ActivityFrame, ActivityShares, Snapshot, WaitedOn
from gputui.sources.sim.source import SimulatedSource
from gputui.text.activity_text import activity_line, detail_lines, shares_text, short_activity
from gputui.text.findings_text import activity_lines as diagnose_activity_lines
from gputui.text.snapshot_text import process_lines
from gputui.ui.widgets.activity_lines import BAR, KIND_STYLES, STALE, activity_lines, bar, row_mark
from gputui.ui.widgets.processes import ProcessTable, process_rows
from tests.activities import TAKEN_AT, job_snapshot, unreadable, waiting_for_data
from tests.ui.monitor_helpers import FRESH_S, plain


def command_cell(t: float, **changes: object) -> tuple[str, str, str]:
    snap = job_snapshot(t, waiting_for_data(**changes))  # type: ignore[arg-type]
    cell = process_rows(snap, FRESH_S)["0:4242"][-1]
    return cell.mark, cell.mark_style, cell.shown


def test_a_row_is_marked_with_its_leading_kind_in_its_colour() -> None:
    assert command_cell(TAKEN_AT + 4) == ("data 71% ", KIND_STYLES["data"], "python train.py --workers 2")


def test_a_row_sampled_long_ago_is_dim() -> None:
    mark, style, _ = command_cell(TAKEN_AT + FRESH_S + 1)
    assert mark == "data 71% " and style == STALE


def test_a_row_never_sampled_has_no_mark_and_one_unread_says_so() -> None:
    rows = process_rows(job_snapshot(5.0), FRESH_S)
    assert rows["0:4243"][-1].mark == ""
    assert short_activity(unreadable()) == "no stack"
    assert row_mark(unreadable(), 5.0, FRESH_S)[0] == "no stack"


def test_the_mark_fits_the_command_column_at_80_columns() -> None:
    """The command keeps what the mark leaves of its column: the row stays 80 cells, its end marked cut."""
    table = ProcessTable()
    table.show_rows(process_rows(job_snapshot(5.0), FRESH_S))
    table.known_height = 10
    lines = table.build_lines(80)
    row = next(line for line in lines if "4242" in "".join(text for text, _ in line))
    text = "".join(part for part, _ in row)
    assert len(text) == 80 and "data 71% python tra…" in text and text.endswith("…")
    assert ("data 71% ", KIND_STYLES["data"]) in row


def test_the_bar_splits_its_width_by_the_shares_most_first() -> None:
    parts = bar(ActivityShares(data=0.71, cpu=0.2, gpu_sync=0.06, idle=0.03), 50)
    assert sum(len(text) for text, _ in parts) == 50
    assert [style for _, style in parts] == [KIND_STYLES[k] for k in ("data", "cpu", "gpu_sync", "idle")]
    assert parts[0] == (BAR * 36, KIND_STYLES["data"])  # 35.5 rounds up: the largest remainder


def test_the_detail_block_has_source_bar_legend_frames_and_workers() -> None:
    proc = job_snapshot().host.processes[0]
    text = plain(activity_lines(proc, TAKEN_AT + 12, 100, FRESH_S))
    assert "ACTIVITY  PID 4242  python train.py --workers 2" in text
    assert "py-spy, 4 s, 80 samples, 12 s ago" in text
    assert "data 71%" in text and "cpu 20%" in text and "gpu_sync 6%" in text and "idle 3%" in text
    assert "  data        66%  _next_data  data/dataloader.py:1327" in text
    assert "workers, 160 samples pooled: io 60%, loading 40%" in text
    assert "older than" not in text


def test_the_detail_block_names_the_rank_and_says_when_it_is_stale() -> None:
    proc = replace(job_snapshot().host.processes[0], activity=waiting_for_data(rank=1))
    text = plain(activity_lines(proc, TAKEN_AT + 600, 100, FRESH_S))  # past FRESH_S (330 s)
    assert "rank 1" in text.splitlines()[0]
    assert "10 min ago" in text and "older than 5.5 min" in text


def test_the_detail_block_says_in_words_why_no_stack_was_read() -> None:
    proc = replace(job_snapshot().host.processes[0], activity=unreadable())
    text = plain(activity_lines(proc, TAKEN_AT + 1, 60, FRESH_S))
    assert "no stack could be read: the kernel refuses gputui ptrace" in text.replace("\n", " ")
    assert "gputui run -- CMD" in text.replace("\n", " ") and "ptrace_refused" not in text
    assert BAR not in text


# Issue 40: whom the waits waited for (a producer thread), and a gpu_sync read from the job's source line.
PRODUCED = waiting_for_data(
    top=(
        ActivityFrame("data", "main", "/home/alice/train.py", 120, 0.71),
        ActivityFrame("gpu_sync", "step", "/home/alice/train.py", 92, 0.06, source_line="return loss.item()"),
    ),
    workers=None,
    worker_samples=0,
    waited_on=WaitedOn(
        kind="data",
        who="thread producer (tid 4321)",
        frame=ActivityFrame("data", "decode", "/home/alice/loader.py", 31, 0.82),
        share=0.71,
        running=0.97,
    ),
)


def test_the_detail_block_says_whom_the_waits_waited_for_and_a_line_read_from_source() -> None:
    proc = replace(job_snapshot().host.processes[0], activity=PRODUCED)
    text = plain(activity_lines(proc, TAKEN_AT + 12, 120, FRESH_S))
    assert "waits for: thread producer (tid 4321), decode (alice/loader.py:31) 97% running" in text
    assert "step  alice/train.py:92, read from its source line: `return loss.item()`" in text


def test_snapshot_and_diagnose_lines_say_whom_the_waits_waited_for() -> None:
    lines = detail_lines(PRODUCED)
    assert "waits for: thread producer (tid 4321), decode (alice/loader.py:31) 97% running" in lines
    first = replace(PRODUCED, top=PRODUCED.top[::-1])
    assert detail_lines(first)[1] == (
        "top frame: gpu_sync 6% in step (alice/train.py:92), read from its source line: `return loss.item()`"
    )


def test_shares_leave_out_kinds_under_one_percent() -> None:
    assert shares_text(ActivityShares(data=0.995, idle=0.005)) == "data 100%"


def test_snapshot_prints_the_activity_and_the_top_frame_under_its_process() -> None:
    text = "\n".join(process_lines(job_snapshot(TAKEN_AT + 12), width=160))
    assert "    main thread: data 71%, cpu 20%, gpu_sync 6%, idle 3% (py-spy, 4 s, 80 samples, 12 s ago)" in text
    assert "    top frame: data 66% in _next_data (data/dataloader.py:1327)" in text
    assert "    workers (160 samples): io 60%, loading 40%" in text
    assert text.isascii()


def test_snapshot_wraps_why_no_stack_was_read_whole() -> None:
    lines = process_lines(job_snapshot(5.0, unreadable()), width=80)
    said = " ".join(line.strip() for line in lines if line.startswith("    ") and "python" not in line)
    assert "stacks not read (py-spy): the kernel refuses gputui ptrace" in said and "gputui run -- CMD" in said
    assert all(len(line) <= 80 for line in lines)


def test_diagnose_prints_each_sampled_process_in_both_languages() -> None:
    snap = job_snapshot(TAKEN_AT + 4, waiting_for_data(rank=0))
    english = diagnose_activity_lines(snap, "en")
    assert english[0] == (
        "activity of PID 4242 (python3): rank 0 main thread: data 71%, cpu 20%, gpu_sync 6%, idle 3% "
        "(py-spy, 4 s, 80 samples, 4 s ago)"
    )
    assert english[1] == "      top frame: data 66% in _next_data (data/dataloader.py:1327)"
    assert len(english) == 3  # and the workers; PID 4243 was never sampled
    assert diagnose_activity_lines(snap, "zh")[0].startswith("PID 4242（python3）的运行状态：rank 0 main thread")
    assert diagnose_activity_lines(None, "en") == []


def test_one_line_for_an_activity_without_samples_or_error() -> None:
    empty = replace(waiting_for_data(), samples=0, shares=ActivityShares(), top=())
    assert activity_line(empty) == "main thread: no sample (py-spy, 4 s, 0 samples)"


def test_diagnose_prints_the_activity_after_its_notices(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through the command, as a session that sampled the job's stacks hands it its snapshots."""
    from gputui.sources.sim import source as simulated

    class Sampled(SimulatedSource):
        def sample(self) -> Snapshot:
            snap = super().sample()
            first, *rest = snap.host.processes
            sampled = replace(first, activity=waiting_for_data(taken_at=snap.timestamp - 2))
            return replace(snap, host=replace(snap.host, processes=(sampled, *rest)))

    monkeypatch.setattr(simulated, "SimulatedSource", Sampled)
    main(["diagnose", "--demo", "healthy", "--seconds", "2", "--lang", "en"])
    out = capsys.readouterr().out
    assert ": main thread: data 71%, cpu 20%, gpu_sync 6%, idle 3% (py-spy, 4 s, 80 samples, 2 s ago)" in out
    assert "activity of PID " in out and "      top frame: data 66% in _next_data" in out
