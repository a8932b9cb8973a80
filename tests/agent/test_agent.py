"""The in-process sampler, in real Python processes started with it on their path: what it publishes, where, with
which modes, in a forked child, at exit; the sitecustomize it hides still runs; it never breaks the job."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from gputui.agent import gputui_stacks_agent as agent
from gputui.sources.stacks.inprocess import read_published
from gputui.sources.stacks.samples import StackWindow, ThreadStacks
from tests.agent.published import SPINNER, job_environment, python, record_path, started, until

# A parent whose child, forked by multiprocessing, sleeps in a function of its own until told to stop; the parent
# stays, so what the child leaves behind at exit is its own.
FORKING = """
import multiprocessing, os, sys, time
def child_waits(stop):
    while not os.path.exists(stop):
        time.sleep(0.01)
if __name__ == "__main__":
    child = multiprocessing.get_context("fork").Process(target=child_waits, args=(sys.argv[1],))
    child.start()
    print(child.pid, flush=True)
    child.join()
    print("joined", flush=True)
    time.sleep(120)
"""

# A job that runs until a file appears, then exits as a script does.
UNTIL_FILE = """
import os, sys, time
print("ready", flush=True)
while not os.path.exists(sys.argv[1]):
    time.sleep(0.01)
"""


def main_thread(window: StackWindow, pid: int) -> ThreadStacks:
    return next(thread for thread in window.threads if thread.pid == pid and thread.is_main)


def samples(window: StackWindow | None, pid: int) -> int:
    """The main thread of `pid`'s samples in the window (0 before it publishes)."""
    if window is None or not any(t.pid == pid and t.is_main for t in window.threads):
        return 0
    return sum(count.samples for count in main_thread(window, pid).stacks)


def test_a_python_job_publishes_its_main_threads_stack(tmp_path: Path) -> None:
    with started(python("-c", SPINNER), job_environment(tmp_path, RANK="3")) as job:
        window = until(lambda: read_published(job.pid, 2.0), lambda w: samples(w, job.pid) >= 20, "20 samples")
        assert window is not None
        leading = main_thread(window, job.pid).stacks[0]
        assert leading.stack[0].function == "spin_here"
        assert leading.stack[0].file == "<string>"
        assert leading.stack[1].function == "<module>"
        assert leading.running > 0  # it spins on a CPU
        assert (window.source, window.pid, window.rank) == ("in-process", job.pid, 3)
        assert 0 < window.window_s <= 2.0 + 0.1
        assert window.threads[0].is_main  # the main thread first
        assert not any(thread.name == "gputui-stacks" for thread in window.threads)  # not its own


def test_the_record_is_private_to_its_user(tmp_path: Path) -> None:
    with started(python("-c", SPINNER), job_environment(tmp_path)) as job:
        path = until(lambda: record_path(tmp_path, job.pid), Path.exists, "the record")
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
        record = json.loads(path.read_text())
        assert (record["pid"], record["ppid"], record["rate_hz"]) == (job.pid, os.getpid(), agent.DEFAULT_HZ)


def test_the_record_goes_when_the_job_exits(tmp_path: Path) -> None:
    stop = tmp_path / "stop"
    with started(python("-c", UNTIL_FILE, str(stop)), job_environment(tmp_path)) as job:
        path = until(lambda: record_path(tmp_path, job.pid), Path.exists, "the record")
        stop.touch()
        assert job.wait(timeout=30) == 0
    assert not path.exists()
    assert list(path.parent.iterdir()) == []  # nor its temporary file


def test_a_record_directory_that_went_is_made_again(tmp_path: Path) -> None:
    """A logout empties the user's runtime directory under a job that runs on (nohup, tmux)."""
    with started(python("-c", SPINNER), job_environment(tmp_path)) as job:
        path = until(lambda: record_path(tmp_path, job.pid), Path.exists, "the record")
        shutil.rmtree(path.parent)
        until(lambda: record_path(tmp_path, job.pid), Path.exists, "the record again")
        assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700


def test_a_forked_child_publishes_its_own_record_and_takes_it_away_at_exit(tmp_path: Path) -> None:
    stop = tmp_path / "stop"
    with started(python("-c", FORKING, str(stop)), job_environment(tmp_path)) as parent:
        assert parent.stdout is not None
        child = int(parent.stdout.readline())
        window = until(lambda: read_published(parent.pid, 2.0), lambda w: samples(w, child) >= 10, "the child")
        assert window is not None
        assert main_thread(window, child).stacks[0].stack[0].function == "child_waits"
        assert "child_waits" not in {
            frame.function for s in main_thread(window, parent.pid).stacks for frame in s.stack
        }
        assert json.loads(record_path(tmp_path, child).read_text())["ppid"] == parent.pid
        stop.touch()
        assert parent.stdout.readline() == "joined\n"
        assert not record_path(tmp_path, child).exists()  # multiprocessing's child leaves by os._exit
        assert record_path(tmp_path, parent.pid).exists()


def test_the_hidden_sitecustomize_still_runs(tmp_path: Path) -> None:
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    (theirs / "sitecustomize.py").write_text("print('their sitecustomize', flush=True)\n")
    environment = job_environment(tmp_path, PYTHONPATH=os.pathsep.join([agent_dir(), str(theirs)]))
    code = "import sys, threading; print(sys.modules['sitecustomize'].__file__); print(threading.enumerate()[-1].name)"
    done = subprocess.run(python("-c", code), env=environment, capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.splitlines() == [
        "their sitecustomize",
        os.path.join(agent_dir(), "sitecustomize.py"),
        "gputui-stacks",
    ]
    assert done.stderr == ""


def test_a_rate_of_zero_turns_the_sampler_off_and_another_is_published(tmp_path: Path) -> None:
    code = "import threading; print([t.name for t in threading.enumerate()])"
    off = job_environment(tmp_path, GPUTUI_STACKS_HZ="0")
    done = subprocess.run(python("-c", code), env=off, capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout == "['MainThread']\n"
    with started(python("-c", SPINNER), job_environment(tmp_path, GPUTUI_STACKS_HZ="40")) as job:
        path = until(lambda: record_path(tmp_path, job.pid), Path.exists, "the record")
        assert json.loads(path.read_text())["rate_hz"] == 40.0


def test_the_job_runs_on_where_nothing_can_be_published(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """In-process, so that no place to publish is left: one line on stderr, no exception, no thread."""
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(blocked))
    monkeypatch.setattr(agent, "fallback_dir", lambda uid: str(blocked / "below"))
    sampler = agent.Sampler(25.0, 8.0)
    sampler.start()
    sampler.start()
    sampler.stop()
    assert sampler.thread is None
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(f"gputui stack sampler (pid {os.getpid()}): OSError(")
    assert line.endswith("; the job runs on without it")


def test_a_forked_child_whose_sampler_fails_leaves_its_parents_record(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The child inherits its parent's sampler, record path included; its exit must not take the parent's."""
    parents = tmp_path / "100.json"
    parents.write_text("{}")
    sampler = agent.Sampler(25.0, 8.0)
    sampler.path = str(parents)

    def unreadable() -> int:
        raise OSError("no /proc here")

    monkeypatch.setattr(agent, "_start_ticks", unreadable)
    sampler.start()
    sampler.stop()
    assert parents.exists()
    assert "OSError('no /proc here')" in capsys.readouterr().err


def test_it_publishes_where_the_reader_looks() -> None:
    uid = os.getuid()
    assert agent.record_dir({"XDG_RUNTIME_DIR": "/run/user/7"}, uid) == "/run/user/7/gputui-stacks"
    assert agent.record_dir({}, uid) == f"/dev/shm/gputui-stacks-{uid}"


def agent_dir() -> str:
    return os.path.dirname(agent.__file__)


def test_the_agent_needs_nothing_but_the_standard_library() -> None:
    """The job's Python may have neither gputui nor torch: the agent imports only what every Python has."""
    source = Path(agent.__file__).read_text() + (Path(agent_dir()) / "sitecustomize.py").read_text()
    imported = {
        line.split()[1].split(".")[0]
        for line in textwrap.dedent(source).splitlines()
        if line.startswith(("import ", "from "))
    }
    assert imported <= set(sys.stdlib_module_names) | {"__future__"}
