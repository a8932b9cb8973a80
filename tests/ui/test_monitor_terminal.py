"""The monitor under a real pty: it draws, and it ends when the terminal goes away (SIGHUP or a closed pty;
the sampling loop's own side of a closed pty: tests/session/test_loop.py)."""

from __future__ import annotations

import fcntl
import os
import select
import signal
import struct
import subprocess
import sys
import termios
import time

import pytest


def start_monitor() -> tuple[subprocess.Popen[bytes], int]:
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    env = {**os.environ, "TERM": "xterm-256color"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "gputui", "--demo", "healthy", "--interval", "0.25"],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=env,
        start_new_session=True,
    )
    os.close(slave)
    seen = b""
    deadline = time.monotonic() + 20
    while b"UTIL" not in seen and b"train.py" not in seen and time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 0.1)
        if ready:
            seen += os.read(master, 65536)
    assert b"SIMULATED" in seen
    return proc, master


@pytest.mark.parametrize("how", ["sighup", "pty-closed"])
def test_the_monitor_exits_when_the_terminal_goes(how: str) -> None:
    proc, master = start_monitor()
    try:
        if how == "sighup":
            os.kill(proc.pid, signal.SIGHUP)
        else:
            os.close(master)
        assert proc.wait(timeout=10) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if how == "sighup":
            os.close(master)
