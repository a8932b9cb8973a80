"""Why ptrace would be refused, over fake /proc trees (Yama's scope, a container without CAP_SYS_PTRACE, another
user's process), and one real refusal: py-spy run as an unprivileged user against a root Python job."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from gputui.sources.stacks.activity_reader import read_activity
from gputui.sources.stacks.permission import ptrace_refusal, refusal_notice
from gputui.sources.stacks.pyspy import find_py_spy, record

ALL_CAPS = "000001ffffffffff"
NO_PTRACE = f"{int(ALL_CAPS, 16) & ~(1 << 19):016x}"
NOBODY = 65534
TARGET = 500


def fake_proc(
    root: Path, *, scope: int | None, uid: int, caps: str, target_uid: int, target_parent: int = 1, me: int = 100
) -> Path:
    """A /proc with Yama's scope (None: no Yama), this process (`self`, pid `me`) and the target (pid 500)."""
    if scope is not None:
        (root / "sys/kernel/yama").mkdir(parents=True)
        (root / "sys/kernel/yama/ptrace_scope").write_text(f"{scope}\n")
    for name, pid, parent, owner, capabilities in (
        ("self", me, 1, uid, caps),
        (str(TARGET), TARGET, target_parent, target_uid, ALL_CAPS),
    ):
        (root / name).mkdir()
        (root / name / "status").write_text(
            f"Name:\tpython3\nPid:\t{pid}\nPPid:\t{parent}\n"
            f"Uid:\t{owner}\t{owner}\t{owner}\t{owner}\nGid:\t{owner}\t{owner}\t{owner}\t{owner}\nCapEff:\t{capabilities}\n"
        )
    (root / "300").mkdir()  # the target's parent, under scope 1: a child of this process
    (root / "300/status").write_text(f"Name:\tbash\nPid:\t300\nPPid:\t{me}\n")
    return root


@pytest.mark.parametrize(
    ("scope", "uid", "caps", "target_uid", "target_parent", "words"),
    [
        # Root on the host: every scope but 3 lets it read anything.
        (None, 0, ALL_CAPS, 1000, 1, None),
        (2, 0, ALL_CAPS, 1000, 1, None),
        (3, 0, ALL_CAPS, 0, 1, ["ptrace_scope is 3", "gputui run -- CMD"]),
        # Root in a container: CAP_SYS_PTRACE dropped.
        (
            None,
            0,
            NO_PTRACE,
            1000,
            1,
            [
                "without CAP_SYS_PTRACE",
                "--cap-add SYS_PTRACE",
                "securityContext",
                "kubectl debug --profile=general",
                "gputui run -- CMD",
            ],
        ),
        (None, 0, NO_PTRACE, 0, 1, None),  # its own user's process: allowed
        # A user without privileges.
        (
            None,
            1000,
            "0000000000000000",
            0,
            1,
            ["is root's", "only root may read another user's", "sudo", "gputui run -- CMD"],
        ),
        (None, 1000, "0000000000000000", 1000, 1, None),
        (1, 1000, "0000000000000000", 1000, 1, ["ptrace_scope is 1", "ancestors", "sudo", "gputui run -- CMD"]),
        (1, 1000, "0000000000000000", 1000, 300, None),  # its own grandchild
        (2, 1000, "0000000000000000", 1000, 1, ["ptrace_scope is 2", "CAP_SYS_PTRACE"]),
    ],
)
def test_the_reason_is_told_before_trying(
    tmp_path: Path, scope: int | None, uid: int, caps: str, target_uid: int, target_parent: int, words: list[str] | None
) -> None:
    proc = fake_proc(tmp_path, scope=scope, uid=uid, caps=caps, target_uid=target_uid, target_parent=target_parent)
    reason = ptrace_refusal(TARGET, proc)
    if words is None:
        assert reason is None
        return
    assert reason is not None
    assert reason.startswith("ptrace_refused: ")
    for word in words:
        assert word in reason


def test_a_target_named_in_bytes_that_are_no_utf8_is_still_judged(tmp_path: Path) -> None:
    """Another user names their process as they like (prctl PR_SET_NAME): its status is read all the same."""
    proc = fake_proc(tmp_path, scope=None, uid=1000, caps="0000000000000000", target_uid=0)
    status = proc / str(TARGET) / "status"
    status.write_bytes(status.read_bytes().replace(b"python3", b"\x9b2J"))
    reason = ptrace_refusal(TARGET, proc)
    assert reason is not None and reason.startswith("ptrace_refused: ") and "is root's" in reason


def test_a_process_gone_or_no_proc_tells_nothing_before_trying(tmp_path: Path) -> None:
    proc = fake_proc(tmp_path, scope=None, uid=1000, caps="0", target_uid=0)
    assert ptrace_refusal(999, proc) is None
    assert ptrace_refusal(TARGET, tmp_path / "nothing") is None


def test_a_refusal_nothing_here_explains_still_says_what_to_do(tmp_path: Path) -> None:
    notice = refusal_notice(TARGET, tmp_path / "nothing")
    assert notice.startswith("ptrace_refused: ")
    for word in ("root", "--cap-add SYS_PTRACE", "securityContext", "kubectl debug --profile=general", "gputui run"):
        assert word in notice


def _as_nobody(tmp_path: Path) -> str:
    """py-spy wrapped to run as nobody: a stand-in for gputui without privileges."""
    py_spy = find_py_spy()
    if os.geteuid() != 0:
        pytest.skip("needs root: the job runs as root and py-spy as nobody")
    if py_spy is None:
        pytest.skip("py-spy is not installed")
    if shutil.which("setpriv"):
        drop = f"setpriv --reuid={NOBODY} --regid={NOBODY} --clear-groups {py_spy}"
    elif shutil.which("su"):
        drop = f"su nobody -s /bin/sh -c 'exec {py_spy} \"$@\"' py-spy"
    else:
        pytest.skip("neither setpriv nor su to run py-spy as another user")
    wrapper = tmp_path / "py-spy-as-nobody"
    wrapper.write_text(f'#!/bin/sh\nexec {drop} "$@"\n')
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    return str(wrapper)


def test_a_real_refusal_reads_as_ptrace_refused_without_a_traceback(tmp_path: Path) -> None:
    py_spy = _as_nobody(tmp_path)
    job = subprocess.Popen(
        [sys.executable, "-c", "import time\nprint('ready', flush=True)\nwhile True: time.sleep(1)"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert job.stdout is not None
        assert job.stdout.readline() == "ready\n"
        activity = read_activity(
            job.pid, 1.0, 20, record=lambda pid, window_s, rate_hz: record(pid, window_s, rate_hz, py_spy=py_spy)
        )
    finally:
        job.kill()
        job.wait()
    assert activity.samples == 0
    assert activity.error is not None
    assert activity.error.startswith("ptrace_refused: ")
    assert "Traceback" not in activity.error
    assert "backtrace" not in activity.error
