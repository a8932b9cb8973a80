"""The in-process sampler, in real Python processes started with it on their path: what it publishes, where, with
which modes, in a forked child, at exit; the sitecustomize it hides still runs; it never breaks the job."""

from __future__ import annotations

import json
import os
import pwd
import shutil
import stat
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gputui.agent import gputui_stacks_agent as agent
from gputui.sources.stacks.inprocess import read_published
from gputui.sources.stacks.samples import StackWindow, ThreadStacks
from tests.agent.published import SPINNER, job_environment, python, record_path, records_dir, started, until

NOBODY = pwd.getpwnam("nobody")

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


def test_a_record_directory_that_went_ends_the_sampler_quietly_and_the_job_runs_on(tmp_path: Path) -> None:
    """`gputui run` takes the directory away when its job exits: a process of the job's still running then (a
    daemon it left) stops publishing without a word, and never makes the directory again by its path."""
    stop = tmp_path / "stop"
    with started(python("-c", UNTIL_FILE, str(stop)), job_environment(tmp_path), stderr=subprocess.PIPE) as job:
        path = until(lambda: record_path(tmp_path, job.pid), Path.exists, "the record")
        shutil.rmtree(path.parent)
        tasks = Path(f"/proc/{job.pid}/task")
        until(lambda: len(list(tasks.iterdir())), lambda threads: threads == 1, "the sampler's thread to end")
        stop.touch()
        assert job.stdout is not None and job.stderr is not None
        assert job.stdout.read() == "ready\n"
        assert job.wait(timeout=30) == 0
        assert job.stderr.read() == ""
        job.stderr.close()
    assert not path.parent.exists()


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


@pytest.mark.parametrize("place", [None, "a-file", "a-link", "open"])
def test_the_job_runs_on_where_nothing_can_be_published(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str], place: str | None
) -> None:
    """In-process: no directory named, a file, a symlink to a directory, or a directory others may write in: one
    line on stderr, no exception, no thread."""
    (tmp_path / "a-file").write_text("")
    (tmp_path / "open").mkdir(mode=0o777)
    (tmp_path / "open").chmod(0o777)
    (tmp_path / "a-link").symlink_to(records_dir(tmp_path))
    monkeypatch.delenv(agent.ENV_DIR, raising=False)
    if place is not None:
        monkeypatch.setenv(agent.ENV_DIR, str(tmp_path / place))
    sampler = agent.Sampler(25.0, 8.0)
    sampler.start()
    sampler.start()
    sampler.stop()
    assert sampler.thread is None
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(f"gputui stack sampler (pid {os.getpid()}): ")
    assert line.endswith("; the job runs on without it")
    assert list((tmp_path / "gputui-stacks").iterdir()) == []


def test_a_forked_child_whose_sampler_fails_leaves_its_parents_record(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The child inherits its parent's sampler, record path included; its exit must not take the parent's."""
    parents = records_dir(tmp_path) / "100.json"
    parents.write_text("{}")
    sampler = agent.Sampler(25.0, 8.0)
    sampler.dir_fd = agent.open_private_dir(str(parents.parent), os.geteuid())
    sampler.name = parents.name

    def unreadable() -> int:
        raise OSError("no /proc here")

    monkeypatch.setattr(agent, "_start_ticks", unreadable)
    sampler.start()
    sampler.stop()
    os.close(sampler.dir_fd)
    assert parents.exists()
    assert "OSError('no /proc here')" in capsys.readouterr().err


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


@pytest.fixture
def shared_base() -> Iterator[Path]:
    """A folder that `nobody` may pass through (a test's own tmp_path is root's alone), removed after the test."""
    if os.geteuid() != 0:
        pytest.skip("needs root: the job runs as root, the other user as nobody")
    base = Path(tempfile.mkdtemp(prefix="gputui-test-"))
    base.chmod(0o711)
    try:
        yield base
    finally:
        shutil.rmtree(base)


def test_a_directory_renamed_away_and_replaced_by_a_symlink_redirects_no_write_nor_unlink(shared_base: Path) -> None:
    """Root's job (started with a user's environment) publishes in a directory inside that user's folder; the user
    renames it away and puts a symlink to a directory of root's in its place. Nothing of root's there is written,
    replaced or removed: the sampler goes on in the directory it opened, and removes its record from there."""
    home = shared_base / "home"  # the user's: their runtime directory, say
    home.mkdir()
    records = records_dir(home)
    os.chown(home, NOBODY.pw_uid, NOBODY.pw_gid)
    roots = shared_base / "roots"
    roots.mkdir(mode=0o700)
    stop = shared_base / "stop"
    environment = job_environment(home, XDG_RUNTIME_DIR=str(home))  # where the sampler of before published too
    with started(python("-c", UNTIL_FILE, str(stop)), environment) as job:
        until(lambda: record_path(home, job.pid), Path.exists, "the record")
        precious = roots / f"{job.pid}.json"
        precious.write_text("root's own")
        swap = f"mv {records} {home}/away && ln -s {roots} {records}"
        subprocess.run(["sh", "-c", swap], user=NOBODY.pw_uid, group=NOBODY.pw_gid, check=True, timeout=30)
        swapped_at = time.time()
        moved = home / "away" / f"{job.pid}.json"

        def written_after_the_swap() -> bool:
            """The sampler has published since the swap, wherever it did."""
            redirected = precious.read_text() != "root's own" or len(list(roots.iterdir())) > 1
            return redirected or json.loads(moved.read_text())["written_at"] > swapped_at

        until(written_after_the_swap, bool, "a record written after the swap")
        stop.touch()
        assert job.wait(timeout=30) == 0
    assert precious.read_text() == "root's own"
    assert list(roots.iterdir()) == [precious]
    assert list((home / "away").iterdir()) == []  # its record removed from where it was


def test_a_hard_link_planted_at_a_temporary_name_is_never_written_through(tmp_path: Path) -> None:
    """O_NOFOLLOW does not stop a hard link: the temporary files are created, never opened where they are. The
    link is planted where the sampler of before wrote (`.<pid>.json.tmp`) before the job starts, by the shell
    that then becomes the job."""
    victim = tmp_path / "victim"
    victim.write_text("root's own")
    records = records_dir(tmp_path)
    argv = ["sh", "-c", f'ln {victim} {records}/.$$.json.tmp && exec "$@"', "sh", *python("-c", SPINNER)]
    environment = job_environment(tmp_path, XDG_RUNTIME_DIR=str(tmp_path))  # where the sampler of before published
    with started(argv, environment) as job:
        window = until(lambda: read_published(job.pid, 2.0), lambda w: samples(w, job.pid) >= 30, "two records")
        assert window is not None
    assert victim.read_text() == "root's own"
    assert victim.stat().st_nlink == 2  # the planted link is where it was
