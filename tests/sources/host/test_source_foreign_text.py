"""Another user's process whose name and arguments hold terminal escapes, read by the real host source from the
real kernel: what the source hands on is cleaned (gputui.foreign_text), the escapes visible, none raw."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator

import pytest

from gputui.foreign_text import is_clean
from gputui.sources.host.source import HostSource

NOBODY = 65534
# What the issue's `nobody` job carried: a new terminal title, then a cleared screen; a C1 CSI, a bidi override,
# DEL, and a byte that is no UTF-8 (psutil decodes it as a surrogate).
HOSTILE_ARG = b"\x1b]0;PWNED\x07\x1b[2J\xc2\x9b31m\xe2\x80\xaeexe.\x7f\xff"
# The kernel's name of the process (/proc/PID/comm, what psutil reads first) is the name it was started by: a link
# so named to /bin/sh. The script waits on sh's stdin, a pipe the test holds: sh starts no child to outlive it.
COMM = b"\x1b]0;T\x07\x9b\n"
SCRIPT = b"echo ready; read line"


@pytest.fixture
def hostile_process() -> Iterator[int]:
    """A process of user nobody, named and argued with terminal escapes; killed however the test ends."""
    if os.geteuid() != 0:
        pytest.skip(f"needs root to start a process as nobody; running as {os.geteuid()}")
    folder = tempfile.mkdtemp(prefix="gputui-foreign-")
    os.chmod(folder, 0o755)  # nobody must reach the link
    link = os.path.join(folder.encode(), COMM)
    os.symlink("/bin/sh", link)
    child = subprocess.Popen(
        [link, b"-c", SCRIPT, b"job", HOSTILE_ARG],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        user=NOBODY,
        group=NOBODY,
        extra_groups=[],
    )
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == b"ready"
        yield child.pid
    finally:
        child.kill()
        child.wait(timeout=10)
        shutil.rmtree(folder)


def test_another_users_name_and_command_line_are_cleaned_where_they_are_read(hostile_process: int) -> None:
    host = HostSource(cgroup_pid=None)
    host.open()
    try:
        proc = host.sample([hostile_process], time.time()).process(hostile_process)
    finally:
        host.close()
    assert proc is not None and proc.cmdline is not None
    for text in (proc.name, proc.cmdline, proc.user):
        assert text is not None and is_clean(text), text
    assert proc.cmdline.endswith("\\x1b]0;PWNED\\x07\\x1b[2J\\x9b31m\\u202eexe.\\x7f\\udcff")
    assert proc.name.startswith("\\x1b]0;T\\x07\\udc9b\\n")  # a lone 0x9b byte: CSI to an 8-bit terminal
    assert proc.user == "nobody"
