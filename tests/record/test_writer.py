"""The writer: refuses to overwrite, flushes every tick, survives a kill, stops (not crashes) on disk trouble."""

from __future__ import annotations

import dataclasses
import gzip
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from gputui.diagnostics.findings import Finding, Severity
from gputui.record import writer as writer_module
from gputui.record.format import RecordingError, mark_event
from gputui.record.reader import load_recording
from gputui.record.writer import RecordingWriter
from tests.record.recdata import H100_GPM, T0, snapshot, with_gpm


def _write(path: Path, ticks: int, **kwargs: object) -> RecordingWriter:
    writer = RecordingWriter(path, interval_s=1.0, **kwargs)  # type: ignore[arg-type]
    for i in range(ticks):
        writer.put(snapshot(T0 + i, 2))
    return writer


def test_header_then_ticks_then_events_in_order(tmp_path: Path) -> None:
    rec_path = tmp_path / "session.jsonl"
    writer = _write(rec_path, 3)
    writer.mark("lr 3e-4 -> 1e-4", t=T0 + 2.5)
    writer.put(snapshot(T0 + 3, 2))
    writer.close()
    types = [json.loads(line)["type"] for line in rec_path.read_text().splitlines()]
    assert types == ["header", "tick", "tick", "tick", "event", "tick"]
    assert writer.ticks_written == 4 and writer.warning is None


def test_gpm_fields_survive_a_record_and_read(tmp_path: Path) -> None:
    """GPU 0 reports GPM (partly: no FP64 pipe figure), GPU 1 none: the values come back, None stays None."""
    snaps = []
    for i in range(3):
        snap = with_gpm(snapshot(T0 + i, 2), sm_active_pct=80.0 + i, fp64_active_pct=None)
        snaps.append(dataclasses.replace(snap, gpus=(snap.gpus[0], snapshot(T0 + i, 2).gpus[1])))
    writer = RecordingWriter(tmp_path / "gpm.jsonl.gz", interval_s=1.0)
    for snap in snaps:
        writer.put(snap)
    writer.close()
    ticks = list(load_recording(tmp_path / "gpm.jsonl.gz").ticks)
    assert ticks == snaps
    hopper, older = ticks[2].gpus
    assert hopper.sm_active_pct == 82.0 and hopper.nvlink_tx_bytes_s == H100_GPM["nvlink_tx_bytes_s"]
    assert hopper.fp64_active_pct is None
    assert all(getattr(older, name) is None for name in H100_GPM)


def test_events_before_the_first_tick_follow_the_header(tmp_path: Path) -> None:
    rec_path = tmp_path / "session.jsonl"
    writer = RecordingWriter(rec_path, interval_s=1.0)
    writer.put_event(mark_event("start", T0 - 1))
    writer.put(snapshot(T0, 2))
    writer.close()
    recording = load_recording(rec_path)
    assert [e.data["label"] for e in recording.events] == ["start"] and len(recording.ticks) == 1


def test_an_existing_file_is_never_overwritten_without_force(tmp_path: Path) -> None:
    rec_path = tmp_path / "session.jsonl"
    rec_path.write_text("precious\n")
    with pytest.raises(RecordingError, match=r"already exists.*--force"):
        RecordingWriter(rec_path, interval_s=1.0)
    assert rec_path.read_text() == "precious\n"
    _write(rec_path, 1, force=True).close()
    assert load_recording(rec_path).ticks


def test_a_missing_directory_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(RecordingError, match="does not exist"):
        RecordingWriter(tmp_path / "nope" / "x.jsonl", interval_s=1.0)


def test_each_tick_is_readable_while_the_writer_is_still_open(tmp_path: Path) -> None:
    rec_path = tmp_path / "session.jsonl"
    writer = _write(rec_path, 5)
    writer.drain()
    assert len(load_recording(rec_path).ticks) == 5  # nothing waits in a buffer
    writer.close()


def test_gzip_is_synced_every_few_seconds_and_readable_while_open(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl.gz"
    writer = _write(path, 12)
    writer.drain()
    recording = load_recording(path)
    assert len(recording.ticks) >= 12 - writer_module.GZIP_SYNC_SECONDS
    assert any("without its trailer" in w for w in recording.warnings)
    writer.close()
    with gzip.open(path, "rt") as f:
        assert len(f.read().splitlines()) == 13
    closed = load_recording(path)
    assert len(closed.ticks) == 12 and closed.warnings == []


def test_a_killed_recorder_leaves_a_readable_file(tmp_path: Path) -> None:
    path = tmp_path / "killed.jsonl.gz"
    script = textwrap.dedent(
        f"""
        import sys, time
        sys.path.insert(0, {str(Path(__file__).parents[2])!r})
        from tests.record.recdata import snapshot, T0
        from gputui.record.writer import RecordingWriter
        w = RecordingWriter({str(path)!r}, interval_s=1.0)
        for i in range(20):
            w.put(snapshot(T0 + i, 2))
        w.drain()
        print("ready", flush=True)
        time.sleep(60)
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=10)
    recording = load_recording(path)
    assert 20 - writer_module.GZIP_SYNC_SECONDS <= len(recording.ticks) <= 20
    assert recording.warnings and "without its trailer" in recording.warnings[0]


def test_max_mb_stops_at_the_limit_with_a_warning(tmp_path: Path) -> None:
    rec_path = tmp_path / "session.jsonl"
    writer = _write(rec_path, 50, max_mb=0.02)
    writer.drain()
    assert writer.stopped and writer.warning is not None and "0.02 MB limit" in writer.warning
    writer.put(snapshot(T0 + 99, 2))  # ignored, no error
    writer.close()
    assert rec_path.stat().st_size <= 20_000
    recording = load_recording(rec_path)
    assert 0 < len(recording.ticks) == writer.ticks_written < 50 and recording.warnings == []


def test_max_mb_on_gzip_ends_with_a_proper_trailer(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl.gz"
    writer = _write(path, 400, max_mb=0.01)
    writer.close()
    assert writer.stopped
    recording = load_recording(path)
    assert recording.warnings == [] and 0 < len(recording.ticks) < 400


def test_a_full_disk_becomes_a_warning_not_a_crash(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rec_path = tmp_path / "session.jsonl"
    writer = _write(rec_path, 2)
    writer.drain()

    def full(line: bytes) -> int:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(writer._file, "write_line", full)
    writer.put(snapshot(T0 + 2, 2))
    writer.drain()
    assert writer.stopped and writer.warning is not None and "No space left on device" in writer.warning
    writer.put(snapshot(T0 + 3, 2))
    writer.close()
    assert len(load_recording(rec_path).ticks) == 2


@pytest.mark.skipif(
    not Path("/dev/full").exists(),
    reason="a write to a really full device not checked: this system has no /dev/full (a Linux device)",
)
def test_a_really_full_device_becomes_a_warning() -> None:
    writer = RecordingWriter(Path("/dev/full"), interval_s=1.0, force=True)
    writer.put(snapshot(T0, 2))
    writer.drain()
    assert writer.stopped and writer.warning is not None and "No space left on device" in writer.warning
    writer.close()


def test_a_vanished_directory_stops_the_recording_with_a_warning(tmp_path: Path) -> None:
    folder = tmp_path / "runs"
    folder.mkdir()
    writer = _write(folder / "s.jsonl", 1)
    writer.drain()
    shutil.rmtree(folder)
    writer.put(snapshot(T0 + 1, 2))
    writer.drain()
    assert writer.stopped and writer.warning is not None and "vanished" in writer.warning
    writer.close()


def test_close_twice_is_harmless(tmp_path: Path) -> None:
    rec_path = tmp_path / "session.jsonl"
    writer = _write(rec_path, 1)
    writer.close()
    writer.close()
    assert len(load_recording(rec_path).ticks) == 1


def test_a_bad_size_limit_is_refused(tmp_path: Path) -> None:
    rec_path = tmp_path / "session.jsonl"
    with pytest.raises(RecordingError, match="more than 0 MB"):
        RecordingWriter(rec_path, interval_s=1.0, max_mb=0)
    with pytest.raises(RecordingError, match="more than 0 s"):
        RecordingWriter(rec_path, interval_s=0)
    assert not rec_path.exists()


def test_record_writes_the_findings_that_open_and_close_with_each_tick(tmp_path: Path) -> None:
    hot = Finding(rule="thermal", severity=Severity.CRITICAL, title="GPU 1: thermal throttling", advice="", gpus=(1,))
    writer = RecordingWriter(tmp_path / "f.jsonl", interval_s=1.0)
    writer.record(snapshot(T0, 2), [])
    writer.record(snapshot(T0 + 1, 2), [hot])
    writer.record(snapshot(T0 + 2, 2), [hot])
    writer.record(snapshot(T0 + 3, 2), [])
    writer.close()
    recording = load_recording(tmp_path / "f.jsonl")
    assert [(e.kind, e.t, e.data["finding"]["gpus"]) for e in recording.events] == [
        ("finding_opened", T0 + 1, [1]),
        ("finding_closed", T0 + 3, [1]),
    ]
