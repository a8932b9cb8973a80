"""A GPU process whose open files the kernel refuses gputui, against the real kernel: it is this PID namespace's
process, read for what can be read (name, user, CPU from /proc/PID/stat and status), never "outside this PID
namespace".

Two readers stand beside a root-owned process: one unprivileged user (a child of this test that drops to
nobody), and root without CAP_SYS_PTRACE (`capsh --drop=cap_sys_ptrace`): /proc/PID/fd lists there, but each of
its links is refused. Both need root to set up; each skips, saying why, where the machine cannot stage it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from gputui.model import GpuProcess, GpuSample
from gputui.sources.host.process_join import ProcessJoin
from gputui.sources.host.procfs import DeviceCheck, holds_device, unreadable
from gputui.sources.host.source import HostSource

NOBODY = 65534
FAKE_MINOR = 250  # no real GPU's: the holder holds no device at all
CHECK = "a root process's files refused to gputui, read for what can be read"
REPO = Path(__file__).resolve().parents[3]


def look(pid: int) -> dict[str, Any]:
    """What this reader makes of process `pid`: whether it holds GPU FAKE_MINOR, how the join matches NVML's
    PID, which files are refused, and the host source's name, user and CPU for it."""
    gpu = GpuSample(index=0, timestamp=0.0, processes=(GpuProcess(pid, None),))
    (joined,) = ProcessJoin(DeviceCheck(Path("/")), dict).join([gpu], {0: FAKE_MINOR}, slow=True)
    host = HostSource(cgroup_pid=None)
    host.open()
    host.sample([pid], time.time())
    time.sleep(0.2)
    proc = host.sample([pid], time.time()).process(pid)
    host.close()
    return {
        "holds": holds_device(pid, FAKE_MINOR),
        "seen": joined.processes[0].seen,
        "refused": list(unreadable(pid)),
        "name": proc.name if proc else None,
        "user": proc.user if proc else None,
        "cpu_pct": proc.cpu_pct if proc else None,
        "unreadable": list(proc.unreadable) if proc else None,
    }


@contextmanager
def _root_process() -> Iterator[int]:
    """A root-owned process that holds a few files open and sleeps; killed however the test ends."""
    if os.geteuid() != 0:
        pytest.skip(f"real-kernel check not run: {CHECK}; needs root to own the process, running as {os.geteuid()}")
    holder = subprocess.Popen(
        [sys.executable, "-c", "import time; held = open('/dev/null'); print('ready', flush=True); time.sleep(60)"],
        stdout=subprocess.PIPE,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == b"ready"
        yield holder.pid
    finally:
        holder.kill()
        holder.wait(timeout=10)


def _as_nobody(pid: int) -> dict[str, Any]:
    """`look(pid)` in a child of this process that has dropped to the unprivileged user nobody."""
    read_end, write_end = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - the child reports through the pipe and never returns
        try:
            os.close(read_end)
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            found: dict[str, Any] = look(pid)
        except BaseException as exc:  # any failure goes back to the test as text
            found = {"error": repr(exc)}
        os.write(write_end, json.dumps(found).encode())
        os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        answer = json.loads(pipe.read() or b"{}")
    os.waitpid(child, 0)
    return answer


def test_another_users_process_is_read_for_what_it_shows() -> None:
    with _root_process() as pid:
        assert look(pid)["refused"] == []  # root with every capability: nothing refused, no device held
        assert look(pid)["holds"] is False
        found = _as_nobody(pid)
    print(f"as nobody: {found}")
    assert "error" not in found, found
    assert found["holds"] is None and found["seen"] == "pid"  # cannot tell, so NVML's PID: not another namespace
    assert {"fd", "io", "environ"} <= set(found["refused"]) and found["unreadable"] == found["refused"]
    assert found["name"] == Path(sys.executable).name and found["user"] == "root"
    assert found["cpu_pct"] is not None


def test_without_cap_sys_ptrace_a_root_process_is_read_for_what_it_shows() -> None:
    """The issue's `capsh --drop=cap_sys_ptrace -- -c "gputui diagnose"` beside a root job: /proc/PID/fd lists, but
    reading a link is refused. That is "cannot tell", not "holds no GPU here"."""
    capsh = shutil.which("capsh")
    if capsh is None:
        pytest.skip(f"real-kernel check not run: {CHECK} without CAP_SYS_PTRACE; no capsh (package libcap2-bin)")
    with _root_process() as pid:
        script = (
            "import json; from tests.sources.host.test_source_refused_files import look; "
            f"print(json.dumps(look({pid})))"
        )
        ran = subprocess.run(
            [capsh, "--drop=cap_sys_ptrace", "--", "-c", f"exec {sys.executable} -c '{script}'"],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=REPO,
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )
    if ran.returncode != 0 and "capsh" in ran.stderr:
        pytest.skip(f"real-kernel check not run: {CHECK} without CAP_SYS_PTRACE; capsh refused: {ran.stderr.strip()}")
    assert ran.returncode == 0, ran.stderr
    found = json.loads(ran.stdout)
    print(f"without CAP_SYS_PTRACE: {found}")
    assert found["holds"] is None and found["seen"] == "pid"
    assert {"fd", "io"} <= set(found["refused"]) and found["unreadable"] == found["refused"]
    assert found["name"] == Path(sys.executable).name and found["user"] == "root"
    assert found["cpu_pct"] is not None
