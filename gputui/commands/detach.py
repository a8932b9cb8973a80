"""`gputui record --detach`: the recorder in the background, for a machine without systemd (a rented container).

The same command runs again as a child in a session of its own (no terminal to lose: stdin /dev/null, stdout and
stderr appended to DIR/recorder.log). The child writes DIR/recorder.pid once it holds the store's lock and has
taken its first reading, and removes it when it stops cleanly; the parent waits for that file to name the child
(bounded), so that it returns 0 only once the history is being kept, or the child's exit status and its log's last
lines when it could not start. A store another recorder holds (the sentence names its PID), a newer one, or a
directory that is no store is refused before anything starts.

The store's directory is the recorder's own (created 0700, 0755 with --shared): the log and the pid file are
created there without following a link, and a log that is not a regular file of ours is refused.
"""

from __future__ import annotations

import contextlib
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

from gputui.foreign_text import clean

PID_FILE = "recorder.pid"
LOG_FILE = "recorder.log"
# How long the parent waits for the child to record: opening the driver, the store and the first reading.
START_WAIT_S = 30.0
# The log's last bytes shown when the child could not start.
LOG_TAIL_BYTES = 2048
PRIVATE_MODE = 0o600
SHARED_MODE = 0o644


def detach(directory: Path, argv: list[str], *, shared: bool) -> int:
    """Start `gputui <argv>` as the detached recorder of `directory`, and wait until it records or has ended."""
    from gputui.store.errors import StoreError
    from gputui.store.writer import StoreWriter

    try:
        # The store made (or checked) and its lock taken for a moment, here: another recorder, a newer store or a
        # directory that is no store is said before anything starts, and the log then lies in a store.
        StoreWriter(directory, interval_s=1.0, shared=shared).close()
    except StoreError as exc:
        print(f"gputui: error: {exc}", file=sys.stderr)
        return 2
    try:
        log = open_log(directory / LOG_FILE, shared=shared)
    except OSError as exc:
        print(f"gputui: error: cannot keep the recorder's log in {directory}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    with os.fdopen(log, "ab") as out:
        offset = out.seek(0, os.SEEK_END)
        child = subprocess.Popen(
            [sys.executable, "-m", "gputui", *argv, "--detached-child"],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=out,
            start_new_session=True,
        )
    deadline = time.monotonic() + START_WAIT_S
    while read_pid(directory) != child.pid:
        status = child.poll()
        if status is not None:
            print(f"gputui: the recorder exited ({status}) before recording; {LOG_FILE} ends:", file=sys.stderr)
            print(_log_tail(directory / LOG_FILE, offset), file=sys.stderr)
            return status or 1
        if time.monotonic() > deadline:
            child.kill()
            child.wait()
            print(f"gputui: the recorder did not record within {START_WAIT_S:g} s: stopped it", file=sys.stderr)
            print(_log_tail(directory / LOG_FILE, offset), file=sys.stderr)
            return 1
        time.sleep(0.05)
    print(
        f"gputui: recorder started (PID {child.pid}), recording into {directory}; its log: {directory / LOG_FILE}; "
        f"stop it with: kill {child.pid}",
        file=sys.stderr,
    )
    return 0  # the child outlives this process, which never waits for it: init reaps it


def open_log(path: Path, *, shared: bool) -> int:
    """The log, appended to (a restarted recorder's lines follow the last one's), created without following a
    link; refused (OSError) where it is not a regular file of this user's."""
    fd = os.open(
        path,
        os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK,
        SHARED_MODE if shared else PRIVATE_MODE,
    )
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid():
        os.close(fd)
        raise OSError(f"{path} is not a regular file of this user's")
    os.set_blocking(fd, True)
    return fd


def write_pid_file(directory: Path, *, shared: bool) -> None:
    """DIR/recorder.pid names this process: written whole under another name, then renamed over any stale one."""
    pid = os.getpid()
    temporary = directory / f".{PID_FILE}.{pid}"
    with contextlib.suppress(FileNotFoundError):
        os.unlink(temporary)  # a PID reused since a recorder was killed between these two steps
    fd = os.open(
        temporary,
        os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
        SHARED_MODE if shared else PRIVATE_MODE,
    )
    with os.fdopen(fd, "w") as out:
        out.write(f"{pid}\n")
    os.replace(temporary, directory / PID_FILE)


def read_pid(directory: Path) -> int | None:
    """The PID DIR/recorder.pid names, None where there is none (or it names nothing readable)."""
    try:
        fd = os.open(directory / PID_FILE, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as file:
        text = file.read(32)
    try:
        return int(text.strip())
    except ValueError:
        return None


def remove_pid_file(directory: Path) -> None:
    """At a clean stop: DIR/recorder.pid goes, where it names this process (never another recorder's)."""
    if read_pid(directory) == os.getpid():
        with contextlib.suppress(FileNotFoundError):
            os.unlink(directory / PID_FILE)


def _log_tail(path: Path, offset: int) -> str:
    """What the child wrote to the log (its last LOG_TAIL_BYTES), each line cleaned of what a terminal obeys."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError as exc:
        return f"  (cannot read it: {exc.strerror or exc})"
    with os.fdopen(fd, "rb") as file:
        end = file.seek(0, os.SEEK_END)
        file.seek(max(offset, end - LOG_TAIL_BYTES))
        data = file.read(LOG_TAIL_BYTES)
    lines = data.decode(errors="replace").splitlines()
    return "\n".join(f"  {clean(line)}" for line in lines) or "  (nothing)"
