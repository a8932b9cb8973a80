"""Other users' text through every output gputui has (issue 37): no raw control, separator or bidi character reaches
any, and what was there shows as visible escapes.

Two ways in, as on a shared server: a real process of user `nobody` whose name and arguments carry terminal escapes,
on the lab's simulated GPU (`--demo-job`: the real host source reads the real process); and a recording another user
shared, whose every text field (host name, notices, processes' names, users, command lines, pods, namespaces,
containers, Slurm jobs, and their stacks' function and file names) carries them. Each goes to the monitor (the screen
it drew, with the Pilot, and the bytes it wrote to a real terminal), `snapshot` text and JSON, `diagnose` text and
JSON, `report` text, JSON and HTML, the alerts (Slack's line, the JSON body), the exporter's /metrics page, and a
recording written and read back. The views and text outputs themselves clean nothing: the sources and the recording
reader do, where the text enters (gputui.foreign_text).
"""

from __future__ import annotations

import argparse
import dataclasses
import fcntl
import json
import os
import select
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import termios
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyte
import pytest

from gputui.alerts.message import alert_message, slack_text
from gputui.cli import main
from gputui.commands import diagnose
from gputui.diagnostics.engine import DiagnosticsEngine
from gputui.diagnostics.findings import Finding, Severity
from gputui.export.metrics import ExportState
from gputui.foreign_text import is_clean
from gputui.model import Snapshot
from gputui.record.format import RecordingHeader, event_to_dict, header_to_dict, mark_event, tick_to_dict
from gputui.record.reader import load_recording
from gputui.record.writer import RecordingWriter
from gputui.serialize import snapshot_to_dict
from gputui.sources.playback import ReplaySource
from gputui.sources.sim.job import JobSource
from gputui.text.snapshot_text import print_snapshot
from gputui.ui.app import GpuTuiApp
from gputui.ui.screens.detail import DetailScreen
from gputui.ui.screens.help import HelpScreen
from tests.export.export_helpers import render
from tests.hostile import HOSTILE, RAW, RAW_BYTES, SHOWN, hostile_snapshot, strings
from tests.record.recdata import T0, snapshot
from tests.ui.monitor_helpers import ScriptedSource, screen_rows, session_of, until

if TYPE_CHECKING:  # the instance comes from the `clock` fixture: tests/conftest.py cannot be imported by name
    from conftest import Clock

NOBODY = 65534
# The job's argv[0] and its kernel name (a link so named to /bin/sh: comm is the name a program is started by).
ARGV0 = HOSTILE.encode("utf-8", "surrogateescape")
COMM = b"\x1b]0;T\x07\x9b\n"
SCRIPT = b"echo ready; read line"  # sh waits on its stdin, a pipe the test holds: no child of its own to outlive it
VISIBLE = "\\x1b]0;PWNED\\x07\\x1b[2J"  # the part of SHOWN every output keeps, however narrow


def assert_clean(output: str, where: str) -> None:
    """No raw character clean() replaces, line by line (a line's own end is the output's, not the text's)."""
    bad = [line for line in output.splitlines() if not is_clean(line)]
    assert bad == [], f"{where}: raw control, separator or bidi characters in {bad[:3]}"
    assert not any(raw in output for raw in RAW if raw != "\nFORGED"), where
    assert "\nFORGED" not in output, f"{where}: a forged line"


def assert_clean_json(document: Any, where: str) -> None:
    assert [text for text in strings(document) if not is_clean(text)] == [], where


# ---- the live job: a `nobody` process on the lab's simulated GPU ------------------------------------------------


@pytest.fixture
def nobody_job(tmp_path: Path) -> Iterator[Path]:
    """A process of user nobody named and argued with terminal escapes, and the job trace that puts it on the lab's
    simulated GPU (what `--demo-job` follows); killed however the test ends."""
    if os.geteuid() != 0:
        pytest.skip(f"needs root to start a process as nobody; running as {os.geteuid()}")
    folder = tempfile.mkdtemp(prefix="gputui-foreign-")
    os.chmod(folder, 0o755)  # nobody must reach the link
    link = os.path.join(folder.encode(), COMM)
    os.symlink("/bin/sh", link)
    hostile_arg = f"--data={HOSTILE}".encode("utf-8", "surrogateescape")
    child = subprocess.Popen(
        [ARGV0, b"-c", SCRIPT, b"job", hostile_arg],
        executable=link,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        user=NOBODY,
        group=NOBODY,
        extra_groups=[],
    )
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == b"ready"
        trace = tmp_path / "trace.json"
        record = {"format": "gputui-job-trace", "version": 1, "pid": child.pid, "gpu_busy_s": 0.0, "steps": 0}
        trace.write_text(json.dumps({**record, "step_started": None, "step_s": None}))
        yield trace
    finally:
        child.kill()
        child.wait(timeout=10)
        shutil.rmtree(folder)


@pytest.fixture
def english(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No user config, English, and a wide terminal for Rich (command lines are shown whole)."""
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("LANG", "en_US.UTF-8")
    monkeypatch.setenv("COLUMNS", "400")
    monkeypatch.delenv("LC_ALL", raising=False)
    monkeypatch.delenv("LC_MESSAGES", raising=False)


def live_snapshot(trace: Path) -> Snapshot:
    source = JobSource(trace)
    source.open()
    try:
        return source.sample()
    finally:
        source.close()


def test_the_real_host_source_hands_on_the_nobody_job_clean(nobody_job: Path) -> None:
    snap = live_snapshot(nobody_job)
    (proc,) = snap.host.processes
    assert proc.user == "nobody" and proc.cmdline is not None
    assert proc.cmdline.startswith(SHOWN) and proc.cmdline.endswith(f"--data={SHOWN}")
    assert proc.name.startswith("\\x1b]0;T\\x07\\udc9b\\n")
    assert_clean_json(snap, "the job's snapshot")


def test_snapshot_diagnose_and_their_recording_show_the_nobody_job_clean(
    nobody_job: Path, english: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`gputui snapshot` printed the raw escapes (issue 37): text and JSON, `diagnose` text and JSON, and the
    recording `diagnose --record` made, read back by `report`."""
    job = ["--demo-job", str(nobody_job)]
    assert main(["snapshot", *job]) == 0
    out = capsys.readouterr().out
    assert_clean(out, "snapshot")
    assert VISIBLE in out, out[-3000:]
    assert main(["snapshot", *job, "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert_clean_json(document, "snapshot --json")
    assert any(VISIBLE in text for text in strings(document)), out[-3000:]
    recording = tmp_path / "job.jsonl"
    seconds = ["--seconds", "0.5", "--interval", "0.25", "--no-stacks"]
    main(["diagnose", *job, *seconds, "--record", str(recording)])
    out = capsys.readouterr().out
    assert_clean(out, "diagnose")
    main(["diagnose", *job, *seconds, "--json"])
    document = json.loads(capsys.readouterr().out)
    assert_clean_json(document, "diagnose --json")
    assert any("\\x1b]0;T\\x07" in text for text in strings(document["processes"]))  # its name
    assert_clean_json(list(load_recording(recording).ticks), "the recording diagnose wrote")
    check_reports(recording, tmp_path, capsys)


# ---- a shared recording ---------------------------------------------------------------------------------------


@pytest.fixture
def shared_recording(tmp_path: Path) -> Path:
    """A recording another user shared: three ticks whose every text field is HOSTILE (JSON's \\u escapes, as any
    tool may write it), and a mark."""
    ticks = [hostile_snapshot(snapshot(T0 + i, 2)) for i in range(3)]
    first = ticks[0]
    records = [header_to_dict(first.system, first.gpu_info, interval_s=1.0, started_at=T0, utc_offset_s=0)]
    records += [tick_to_dict(tick) for tick in ticks]
    records.append(event_to_dict(mark_event(f"mark {HOSTILE}", T0 + 1.5)))
    path = tmp_path / "shared.jsonl"
    path.write_text("".join(json.dumps(record) + "\n" for record in records))
    return path


def replayed(path: Path) -> list[Snapshot]:
    return list(load_recording(path).ticks)


def check_reports(recording: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    """`report` text, JSON and HTML of a recording: clean; the text, for the caller to look for what it shows."""
    html = tmp_path / "report.html"
    main(["report", str(recording), "--html", str(html)])
    text = capsys.readouterr().out
    assert_clean(text, "report")
    # The page bundles its chart library, whose code has tabs and newlines of its own: none of the text's raw.
    page = html.read_text()
    assert [raw for raw in RAW if raw in page] == [], "report --html"
    main(["report", str(recording), "--json"])
    assert_clean_json(json.loads(capsys.readouterr().out), "report --json")
    return text


def test_a_shared_recording_is_clean_in_report_snapshot_diagnose_and_a_recording_again(
    shared_recording: Path, english: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = check_reports(shared_recording, tmp_path, capsys)
    assert f"gpu{SHOWN}" in text
    ticks = replayed(shared_recording)
    last = ticks[-1]
    # `gputui snapshot`'s two outputs, of what the replay holds
    print_snapshot(last)
    out = capsys.readouterr().out
    assert_clean(out, "snapshot text")
    assert "[pod ns\\x1b]0;PWNED\\x07" in out and f"next_{SHOWN}" in out
    assert_clean_json(snapshot_to_dict(last), "snapshot JSON")
    # `gputui diagnose`'s two outputs over the replayed ticks: the activity's frames and the findings they make
    engine = DiagnosticsEngine()
    for tick in ticks:
        state = engine.update(tick)
    outcome = diagnose.Outcome(last.system, state.verdict, state.active, last.events, last)
    for as_json in (False, True):
        diagnose._emit(argparse.Namespace(json=as_json, seconds=3.0), outcome, "en", None)
        out = capsys.readouterr().out
        if as_json:
            assert_clean_json(json.loads(out), "diagnose --json")
        else:
            assert_clean(out, "diagnose")
            assert f"next_{SHOWN}" in out and f"gpu{SHOWN}" in out
    # written again by a recorder and read back
    writer = RecordingWriter(tmp_path / "again.jsonl", interval_s=1.0, utc_offset_s=0)
    for tick in ticks:
        writer.put(tick)
    writer.close()
    again = replayed(tmp_path / "again.jsonl")
    assert_clean_json(again, "a recording of the replay")
    assert again[-1].host.processes[0].cmdline == f"python {SHOWN} --lr 3e-4"


def test_alerts_and_the_exporters_page_carry_the_shared_text_escaped(shared_recording: Path) -> None:
    last = replayed(shared_recording)[-1]
    proc = last.host.processes[0]
    finding = Finding("data_loader", Severity.WARNING, f"GPU 0 waits for {proc.cmdline}", "advice", gpus=(0,))
    message = alert_message(finding, "open", last.system.hostname, None)
    line = slack_text(message)
    assert_clean(line, "Slack")
    assert "<!channel>" not in line and "&lt;!channel&gt;" in line and VISIBLE in line
    body = json.dumps(message)  # what the webhook and the alert command are sent
    assert_clean(body, "the JSON alert")
    assert json.loads(body)["host"] == f"gpu{SHOWN}"
    page = render(ExportState(system=last.system, snapshot=last))
    assert_clean(page, "/metrics")
    assert "PWNED" in page  # the host and process labels are there, escaped


# ---- the monitor: what it draws, and the bytes it writes to a terminal ---------------------------------------


async def test_the_monitor_draws_a_shared_recording_clean(shared_recording: Path, clock: Clock) -> None:
    """The process table (ui/widgets/processes.py), the header, the detail with the activity's frames
    (ui/widgets/activity_lines.py, text/activity_text.py) and the help screen's notices."""
    source = ReplaySource(shared_recording, clock=clock)
    app = GpuTuiApp(session_of(source), auto_sample=False, now=source.recording_now)
    async with app.run_test(size=(240, 60)) as pilot:
        clock.advance(2.0)
        await app.tick()
        await pilot.pause()
        main_rows = screen_rows(app)
        app.main.table.focus()
        await pilot.press("enter")
        await until(lambda: isinstance(app.screen, DetailScreen), pilot)
        await pilot.pause()
        detail_rows = screen_rows(app)
        await pilot.press("escape")
        await until(lambda: not isinstance(app.screen, DetailScreen), pilot)
        await pilot.press("question_mark")
        await until(lambda: isinstance(app.screen, HelpScreen), pilot)
        await pilot.pause()
        help_rows = screen_rows(app)
    for where, rows in (("main", main_rows), ("detail", detail_rows), ("help", help_rows)):
        assert [row for row in rows if not is_clean(row)] == [], where
    assert any("\\x1b]0;PWNED" in row for row in main_rows), "\n".join(main_rows)  # the table, the header
    assert any(f"next_{SHOWN}"[:40] in row for row in detail_rows), "\n".join(detail_rows)  # the activity's frame
    help_text = "\n".join(help_rows)  # the notice, wrapped: its `[/]` was read as markup and raised before
    assert "- notice from" in help_text and SHOWN in help_text, help_text


async def test_the_monitor_draws_the_nobody_job_clean(nobody_job: Path) -> None:
    """The issue's first finding, drawn in-process: the real job's command line in the process table."""
    app = GpuTuiApp(session_of(ScriptedSource([live_snapshot(nobody_job)])), auto_sample=False)
    async with app.run_test(size=(240, 40)) as pilot:
        await app.tick()
        await pilot.pause()
        rows = screen_rows(app)
    assert [row for row in rows if not is_clean(row)] == []
    assert any(VISIBLE in row for row in rows)


def run_in_terminal(args: list[str], shown: bytes) -> tuple[bytes, list[str]]:
    """`python -m gputui ARGS` on a real pty of 240x50 until `shown` is drawn (bounded): the bytes it wrote, and the
    screen a terminal shows for them (pyte)."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 240, 0, 0))
    proc = subprocess.Popen(
        [sys.executable, "-m", "gputui", *args],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env={**os.environ, "TERM": "xterm-256color"},
        start_new_session=True,
    )
    os.close(slave)
    seen = b""
    try:
        deadline = time.monotonic() + 30
        while shown not in seen and time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.1)
            if ready:
                seen += os.read(master, 1 << 16)
    finally:
        os.write(master, b"q")
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
        os.close(master)
    screen = pyte.Screen(240, 50)
    pyte.ByteStream(screen).feed(seen)
    return seen, list(screen.display)


@pytest.mark.parametrize("how", ["demo-job", "replay"])
def test_the_bytes_written_to_the_terminal_hold_no_escape_from_the_text(
    how: str, request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A nobody job renamed root's tmux pane and cleared its screen from the process table (issue 37): under a real
    pty, what the monitor writes holds none of the text's sequences, and the screen shows them as escapes."""
    monkeypatch.setenv("HOME", str(tmp_path))
    if how == "demo-job":
        args = ["--demo-job", str(request.getfixturevalue("nobody_job"))]
    else:
        args = ["replay", str(request.getfixturevalue("shared_recording"))]
    seen, display = run_in_terminal(args, b"\\x1b]0;PWNED")
    assert b"\\x1b]0;PWNED" in seen, seen[-2000:]
    assert [raw for raw in RAW_BYTES if raw in seen] == []
    assert any("\\x1b]0;PWNED" in row for row in display)


def test_recorded_header_and_events_read_back_clean(shared_recording: Path) -> None:
    recording = load_recording(shared_recording)
    assert isinstance(recording.header, RecordingHeader)
    assert_clean_json([recording.header, [event.data for event in recording.events]], "header and events")
    assert dataclasses.replace(recording.header.system).hostname == f"gpu{SHOWN}"
