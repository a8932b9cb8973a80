"""The recording file on a shared machine: readable by its owner alone unless asked, and never written through a
link or into a file that another user planted where it goes (the issue: `--record /tmp/link --force` followed a
symbolic link that `nobody` planted, and overwrote a root file)."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from gputui.cli import main
from gputui.record.format import RecordingError
from gputui.record.reader import load_recording
from gputui.record.writer import RecordingWriter
from tests.other_user import as_other_user, other_user, shared_sticky_dir
from tests.record.recdata import T0, snapshot


@pytest.fixture
def umask() -> Iterator[None]:
    """A umask of 0 while the test runs, so that the mode asked for is the mode the file gets."""
    before = os.umask(0)
    try:
        yield
    finally:
        os.umask(before)


def _record(path: Path, *, force: bool = False, group_readable: bool = False) -> None:
    writer = RecordingWriter(path, interval_s=1.0, force=force, group_readable=group_readable)
    writer.put(snapshot(T0, 2))
    writer.close()


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.usefixtures("umask")
def test_a_recording_is_readable_by_its_owner_alone_unless_asked(tmp_path: Path) -> None:
    _record(tmp_path / "private.jsonl")
    _record(tmp_path / "group.jsonl.gz", group_readable=True)
    assert _mode(tmp_path / "private.jsonl") == 0o600
    assert _mode(tmp_path / "group.jsonl.gz") == 0o640


def test_the_umask_narrows_the_mode_and_never_widens_it(tmp_path: Path) -> None:
    before = os.umask(0o077)
    try:
        _record(tmp_path / "r.jsonl", group_readable=True)
    finally:
        os.umask(before)
    assert _mode(tmp_path / "r.jsonl") == 0o600


def test_a_file_replaced_with_force_is_private_too(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    path.write_text("old\n")
    path.chmod(0o644)
    _record(path, force=True)
    assert _mode(path) == 0o600 and load_recording(path).ticks


@pytest.mark.usefixtures("umask")
def test_the_option_makes_it_group_readable(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    private, shared = tmp_path / "private.jsonl", tmp_path / "shared.jsonl"
    for path, extra in ((private, []), (shared, ["--record-group-readable"])):
        main(["diagnose", "--demo", "healthy", "--seconds", "2", "--no-stacks", "--record", str(path), *extra])
    capsys.readouterr()
    assert (_mode(private), _mode(shared)) == (0o600, 0o640) and load_recording(shared).ticks


def test_a_symbolic_link_planted_by_another_user_is_refused_even_with_force(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    victim = tmp_path / "roots-file"
    victim.write_text("root's\n")
    with shared_sticky_dir() as shared:
        link = shared / "link.jsonl"
        as_other_user("ln", "-s", str(victim), str(link))
        for force in (False, True):
            with pytest.raises(RecordingError, match="is a symbolic link: gputui never records through one"):
                _record(link, force=force)
        argv = ["diagnose", "--demo", "healthy", "--seconds", "1", "--record", str(link), "--force"]
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.startswith("gputui: error: ") and err.count("\n") == 1 and "symbolic link" in err
        assert link.is_symlink() and os.readlink(link) == str(victim)
    assert victim.read_text() == "root's\n"


def test_a_hard_link_is_replaced_by_a_new_file_not_truncated(tmp_path: Path) -> None:
    """`nobody` links a name where root will record to a file of its own: truncated in place, the file would hand
    `nobody` the recording. Replaced, the recording is a new file of root's and `nobody`'s keeps its text."""
    user = other_user()
    with shared_sticky_dir() as shared:
        theirs, path = shared / "theirs", shared / "rec.jsonl"
        as_other_user("sh", "-c", f"echo theirs > '{theirs}' && ln '{theirs}' '{path}'")
        assert path.stat().st_ino == theirs.stat().st_ino and path.stat().st_uid == user.pw_uid
        _record(path, force=True)
        assert theirs.read_text() == "theirs\n"
        assert path.stat().st_ino != theirs.stat().st_ino and path.stat().st_uid == os.geteuid()
        assert _mode(path) & 0o077 == 0 and load_recording(path).ticks


def test_another_users_fifo_is_refused_even_with_force() -> None:
    """A FIFO where the recording goes would hand it to whoever reads the other end. A reader is opened here, so
    that a writer that wrongly opens it does not wait for one."""
    with shared_sticky_dir() as shared:
        fifo = shared / "rec.jsonl"
        as_other_user("mkfifo", str(fifo))
        reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
        try:
            with pytest.raises(RecordingError, match="another user's FIFO or device"):
                _record(fifo, force=True)
        finally:
            os.close(reader)
        assert stat.S_ISFIFO(fifo.lstat().st_mode)


def test_a_directory_is_refused_with_force(tmp_path: Path) -> None:
    with pytest.raises(RecordingError, match="it is a directory"):
        _record(tmp_path, force=True)
