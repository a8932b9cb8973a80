"""The monitor under a real pty: it draws, and it ends when the terminal goes away (SIGHUP or a closed pty;
the sampling loop's own side of a closed pty: tests/session/test_loop.py)."""

from __future__ import annotations

import fcntl
import os
import re
import select
import signal
import struct
import subprocess
import sys
import termios
import time

import pytest


def start_monitor(stdin: int | None = None) -> tuple[subprocess.Popen[bytes], int]:
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    env = {**os.environ, "TERM": "xterm-256color"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "gputui", "--demo", "healthy", "--interval", "0.25"],
        stdin=slave if stdin is None else stdin,
        stdout=slave,
        stderr=slave,
        env=env,
        start_new_session=True,
    )
    os.close(slave)
    seen = b""
    deadline = time.monotonic() + 20
    # The first frame: at 80x24 the panels are one line each (no "UTIL") and commands are cut short.
    while not (b"SIMULATED" in seen and b"H100" in seen) and time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 0.1)
        if ready:
            seen += os.read(master, 65536)
    assert b"SIMULATED" in seen
    return proc, master


@pytest.mark.parametrize("how", ["sighup", "pty-closed", "pane-killed"])
def test_the_monitor_exits_when_the_terminal_goes(how: str) -> None:
    proc, master = start_monitor()
    try:
        if how == "sighup":
            os.kill(proc.pid, signal.SIGHUP)
        elif how == "pty-closed":
            os.close(master)
        else:  # what tmux does to a killed pane: the pty closes, then SIGHUP and SIGCONT (a resume must not follow)
            os.close(master)
            os.kill(proc.pid, signal.SIGHUP)
            os.kill(proc.pid, signal.SIGCONT)
        assert proc.wait(timeout=10) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if how == "sighup":
            os.close(master)


def read_until(master: int, wanted: bytes, seconds: float) -> bytes:
    seen = b""
    deadline = time.monotonic() + seconds
    while wanted not in seen and time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 0.1)
        if ready:
            seen += os.read(master, 65536)
    return seen


# The header's clock, where a frame or an update writes it: the first cell of the first row.
HEADER_CLOCK = re.compile(rb"\x1b\[1;1H(?:\x1b\[[0-9;]*m)*(\d\d:\d\d:\d\d)")


def header_clocks(master: int, count: int, seconds: float) -> set[bytes]:
    """The times the header shows, read until `count` different ones were drawn (or `seconds` have passed)."""
    seen, clocks = b"", set[bytes]()
    deadline = time.monotonic() + seconds
    while len(clocks) < count and time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 0.1)
        if ready:
            seen += os.read(master, 65536)
            clocks = set(HEADER_CLOCK.findall(seen))
    return clocks


def test_keys_reach_the_app_whose_input_thread_sleeps_until_there_is_input() -> None:
    """The input thread blocks until a key arrives (gputui/ui/driver.py): a key still opens help, a lone ESC still
    closes it once the parser has waited for the rest of a sequence, and `q` still ends the app at once."""
    proc, master = start_monitor()
    try:
        os.write(master, b"?")
        assert b"gputui keys" in read_until(master, b"gputui keys", 10)
        os.write(master, b"\x1b")  # a lone ESC: only the parser's timeout can tell it from the start of a sequence
        assert b"SIMULATED" in read_until(master, b"SIMULATED", 10)
        os.write(master, b"q")
        assert proc.wait(timeout=10) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)


def test_the_monitor_runs_with_its_input_at_end_of_file() -> None:
    """stdin from /dev/null (a job started by a script): the input thread stops reading it instead of failing
    (epoll refuses such a file) or spinning on its end, and the panels keep being drawn."""
    proc, master = start_monitor(stdin=subprocess.DEVNULL)
    try:
        # Its input ended before the first frame; the header's clock is still redrawn each second after it.
        assert len(header_clocks(master, 2, 10)) == 2
        assert proc.poll() is None
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        os.close(master)
