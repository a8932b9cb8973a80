"""The pid file `record --detach` leaves: written whole by the recorder once it records, over a stale one, and
removed at its clean stop only where it names that recorder."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from gputui.commands.detach import PID_FILE, read_pid, remove_pid_file, write_pid_file


def test_the_pid_file_names_the_recorder_and_replaces_a_stale_one(tmp_path: Path) -> None:
    (tmp_path / PID_FILE).write_text("999999\n")  # left by a recorder killed with -9
    write_pid_file(tmp_path, shared=False)
    assert read_pid(tmp_path) == os.getpid()
    assert stat.S_IMODE((tmp_path / PID_FILE).stat().st_mode) == 0o600
    assert [p.name for p in tmp_path.iterdir()] == [PID_FILE]  # nothing half-written left beside it
    remove_pid_file(tmp_path)
    assert not (tmp_path / PID_FILE).exists()


def test_a_shared_store_lets_everyone_read_the_pid(tmp_path: Path) -> None:
    write_pid_file(tmp_path, shared=True)
    assert stat.S_IMODE((tmp_path / PID_FILE).stat().st_mode) == 0o644


def test_another_recorders_pid_file_is_left_alone(tmp_path: Path) -> None:
    (tmp_path / PID_FILE).write_text("1\n")
    remove_pid_file(tmp_path)
    assert read_pid(tmp_path) == 1


def test_a_pid_file_that_names_no_pid_reads_as_none(tmp_path: Path) -> None:
    assert read_pid(tmp_path) is None
    (tmp_path / PID_FILE).write_text("not a pid")
    assert read_pid(tmp_path) is None
    (tmp_path / PID_FILE).unlink()
    (tmp_path / PID_FILE).symlink_to(tmp_path / "elsewhere")
    assert read_pid(tmp_path) is None  # a link is never followed
