"""read_activity: the job's own record first, else py-spy; a process it cannot read gives an activity that says why,
never an exception. The last three tests run the real py-spy on real processes, for one second each."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import pytest

from gputui.sources.stacks.activity_reader import ERROR_KEYS, read_activity
from gputui.sources.stacks.inprocess import RecordRefused
from gputui.sources.stacks.pyspy import find_py_spy
from gputui.sources.stacks.samples import StacksUnavailable, StackWindow
from tests.sources.stacks.recorded import recorded, thread, window


def never(pid: int, window_s: float, rate_hz: int) -> StackWindow:
    raise AssertionError("py-spy was run")


def nothing(pid: int, window_s: float) -> StackWindow | None:
    """No record published: the job was not started under gputui run."""
    return None


@pytest.fixture
def can_trace(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("gputui.sources.stacks.activity_reader.ptrace_refusal", lambda pid: None)


def test_the_jobs_own_record_comes_first() -> None:
    published = window(50, thread(50, 50, "<module> (t.py:9);step (t.py:3)", samples=8, running=8))
    published = StackWindow("in-process", 50, 10.0, 4.0, published.threads, rank=2)
    activity = read_activity(50, 4.0, record=never, published=lambda pid, window_s: published if pid == 50 else None)
    assert (activity.source, activity.leading, activity.samples, activity.rank) == ("in-process", "cpu", 8, 2)


@pytest.mark.usefixtures("can_trace")
def test_without_a_record_py_spy_reads_it() -> None:
    calls = []

    def record(pid: int, window_s: float, rate_hz: int) -> StackWindow:
        calls.append((pid, window_s, rate_hz))
        return recorded("rank0")

    activity = read_activity(1038, 2.0, 10, record=record, published=nothing)
    assert calls == [(1038, 2.0, 10)]
    assert (activity.source, activity.leading) == ("py-spy", "collective")


def test_a_refusal_known_before_trying_is_the_activitys_error_and_py_spy_is_not_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("gputui.sources.stacks.activity_reader.ptrace_refusal", lambda pid: "ptrace_refused: because")
    activity = read_activity(60, 4.0, record=never, clock=lambda: 70.0, published=nothing)
    assert (activity.samples, activity.error, activity.taken_at, activity.leading) == (
        0,
        "ptrace_refused: because",
        70.0,
        None,
    )


@pytest.mark.usefixtures("can_trace")
def test_py_spys_failure_is_the_activitys_error() -> None:
    def gone(pid: int, window_s: float, rate_hz: int) -> StackWindow:
        raise StacksUnavailable("gone: process 61 is no longer running")

    activity = read_activity(61, 4.0, record=gone, published=nothing)
    assert (activity.samples, activity.error) == (0, "gone: process 61 is no longer running")


def test_a_published_record_that_cannot_be_used_is_the_activitys_error_with_its_key() -> None:
    def stale(pid: int, window_s: float) -> StackWindow:
        raise StacksUnavailable(f"the in-process stack sampler of pid {pid} last wrote 30 s ago")

    activity = read_activity(62, 4.0, record=never, published=stale)
    assert activity.error == "record_unusable: the in-process stack sampler of pid 62 last wrote 30 s ago"
    assert activity.error.partition(": ")[0] in ERROR_KEYS


@pytest.mark.usefixtures("can_trace")
def test_a_refused_record_is_told_of_and_py_spy_reads_the_job_instead() -> None:
    """A record outside what the sampler writes may be made on purpose: it is not the activity's error (which would
    switch the job's stacks off), but a refusal its caller says once per user, and py-spy is run as if there were
    no record."""
    told: list[tuple[str, str]] = []

    def refused(pid: int, window_s: float) -> StackWindow:
        raise RecordRefused(f"the stack record of pid {pid} (nobody's) is refused: over 4194304 bytes", "nobody")

    activity = read_activity(
        1038,
        2.0,
        10,
        record=lambda pid, window_s, rate_hz: recorded("rank0"),
        published=refused,
        refused=lambda owner, why: told.append((owner, why)),
    )
    assert (activity.source, activity.leading, activity.error) == ("py-spy", "collective", None)
    assert told == [("nobody", "the stack record of pid 1038 (nobody's) is refused: over 4194304 bytes")]


@pytest.fixture
def py_spy() -> None:
    if find_py_spy() is None:
        pytest.skip("py-spy is not installed")


def started(command: list[str]) -> Iterator[subprocess.Popen[str]]:
    """The process, once it has said it is ready; killed and reaped after the test."""
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        assert process.stdout.readline() == "ready\n"
        yield process
    finally:
        process.kill()
        process.wait()


@pytest.fixture
def spinning() -> Iterator[subprocess.Popen[str]]:
    code = "def spin():\n    while True:\n        pass\nprint('ready', flush=True)\nspin()"
    yield from started([sys.executable, "-c", code])


@pytest.fixture
def sleeping() -> Iterator[subprocess.Popen[str]]:
    code = "import time\ndef nap():\n    time.sleep(600)\nprint('ready', flush=True)\nnap()"
    yield from started([sys.executable, "-c", code])


@pytest.fixture
def not_python() -> Iterator[subprocess.Popen[str]]:
    yield from started(["sh", "-c", "echo ready; exec sleep 30"])


@pytest.mark.usefixtures("py_spy")
def test_a_real_spinning_python_process_reads_as_cpu(spinning: subprocess.Popen[str]) -> None:
    activity = read_activity(spinning.pid, 1.0, published=nothing)
    assert activity.error is None
    assert activity.leading == "cpu"
    assert activity.top[0].function == "spin"


@pytest.mark.usefixtures("py_spy")
def test_a_real_sleeping_python_process_reads_as_idle(sleeping: subprocess.Popen[str]) -> None:
    activity = read_activity(sleeping.pid, 1.0, published=nothing)
    assert activity.error is None
    assert activity.leading == "idle"
    assert activity.top[0].function == "nap"


@pytest.mark.usefixtures("py_spy")
def test_a_real_process_that_is_not_python_says_so(not_python: subprocess.Popen[str]) -> None:
    activity = read_activity(not_python.pid, 1.0, published=nothing)
    assert activity.samples == 0
    assert activity.error is not None
    assert activity.error.startswith("not_python: ")
    assert "(sleep)" in activity.error
