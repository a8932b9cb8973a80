"""What every test directory shares: one fake clock that moves only when the test says so, and a check that no
test leaves a process of its own running."""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import psutil
import pytest

from tests.time_zone import local_time_zone

# How long a test's child processes may take to end once it has: a process killed or told to stop may still be
# exiting (a SIGTERM handler, a flush) when the test returns.
CHILDREN_GRACE_S = 5.0


class Clock:
    """Seconds that move only when the test sets ``now`` or calls ``advance``; ``step`` moves them on each read.

    A step suits a caller that must see a new time on every read (an exporter that skips a repeated reading).
    """

    def __init__(self, now: float = 0.0, step: float = 0.0) -> None:
        self.now = now
        self.step = step

    def __call__(self) -> float:
        current = self.now
        self.now += self.step
        return current

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def no_user_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """HOME without ~/.config/gputui, and an English locale, whatever the machine running the tests has."""
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("LANG", "en_US.UTF-8")
    monkeypatch.delenv("LC_ALL", raising=False)
    monkeypatch.delenv("LC_MESSAGES", raising=False)


@pytest.fixture
def utc() -> Iterator[None]:
    """This process's local time is UTC while the test runs: for a test that asserts the wall-clock times a
    recording shows, which are the recording machine's (its time zone), not a fixed zone."""
    with local_time_zone("UTC"):
        yield


def _descendants() -> set[psutil.Process]:
    """This process's children and theirs. One waitid call answers the usual case, no child at all, without the
    scan of every process on the machine that finding them takes (children of every thread count)."""
    try:
        os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)  # reaps nothing
    except ChildProcessError:
        return set()
    return set(psutil.Process().children(recursive=True))


def _running(processes: Sequence[psutil.Process]) -> list[psutil.Process]:
    """Those still running: an exited child that nobody has reaped yet (a zombie) has ended."""
    running = []
    for process in processes:
        with contextlib.suppress(psutil.NoSuchProcess):
            if process.status() != psutil.STATUS_ZOMBIE:
                running.append(process)
    return running


def _until_ended(processes: Sequence[psutil.Process], seconds: float) -> list[psutil.Process]:
    """Wait up to `seconds` for the processes to end (without reaping them: a Popen still owns its child's exit
    status); those still running then."""
    deadline = time.monotonic() + seconds
    running = _running(processes)
    while running and time.monotonic() < deadline:
        time.sleep(0.05)
        running = _running(running)
    return running


def _describe(process: psutil.Process) -> str:
    try:
        return f"pid {process.pid}: {' '.join(process.cmdline()) or process.name()}"
    except psutil.Error:
        return f"pid {process.pid}"


@pytest.fixture(scope="session", autouse=True)
def _children_read_an_empty_config(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """A gputui the suite starts (a test's, or a module's or the lab's shared job) reads an empty config that only
    its owner may write, named by $GPUTUI_CONFIG, unless it is given --config: as root it would otherwise read
    /root's, and no test may read the machine's config."""
    from gputui.config import CONFIG_VARIABLE

    path = tmp_path_factory.mktemp("config") / "empty.toml"
    path.write_text("")
    path.chmod(0o600)
    before = os.environ.get(CONFIG_VARIABLE)
    os.environ[CONFIG_VARIABLE] = str(path)
    yield
    if before is None:
        del os.environ[CONFIG_VARIABLE]
    else:
        os.environ[CONFIG_VARIABLE] = before


@pytest.fixture(scope="session", autouse=True)
def _no_test_reads_the_machines_history(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Every gputui the suite runs (in this process or as a child) finds its default history store, named by
    $GPUTUI_STORE, in a directory of the suite's that does not exist: no test reads or writes the machine's
    /var/lib/gputui (as root) or the user's state directory. A test that wants a store makes one and names it."""
    variable = "GPUTUI_STORE"
    path = tmp_path_factory.mktemp("history") / "none"
    before = os.environ.get(variable)
    os.environ[variable] = str(path)
    yield
    if before is None:
        os.environ.pop(variable, None)
    else:
        os.environ[variable] = before


@pytest.fixture(autouse=True)
def _config_as_home_says(monkeypatch: pytest.MonkeyPatch) -> None:
    """In the test's own process, root reads its config from root's home, whatever $HOME says: there that home is
    $HOME, so that a test that sets HOME reads its config (or none) alike as root and as any user; and
    $GPUTUI_CONFIG, which names the children's empty config, is not looked at. The tests of these lookups put the
    real ones back."""
    import gputui.config

    monkeypatch.setattr(gputui.config, "root_home", Path.home)
    monkeypatch.setattr(gputui.config, "CONFIG_VARIABLE", "GPUTUI_CONFIG_OF_THE_SUITES_CHILDREN")


@pytest.fixture(autouse=True)
def _no_process_left_behind() -> Iterator[None]:
    """Fail the test after which a child process of its own (or a descendant of one) still runs, once it has had
    CHILDREN_GRACE_S to end; kill it, so the tests after it run on a machine as quiet as they expect. Processes
    that were there before the test (a module's fixture's, say) are not its."""
    before = _descendants()
    yield
    new = [child for child in _descendants() if child not in before]
    left = _until_ended(new, CHILDREN_GRACE_S) if new else []
    if not left:
        return
    described = [_describe(process) for process in left]
    for process in left:
        with contextlib.suppress(psutil.NoSuchProcess):
            process.kill()
    _until_ended(left, CHILDREN_GRACE_S)
    pytest.fail(f"the test left {len(left)} process(es) running (killed now): " + "; ".join(described), pytrace=False)
