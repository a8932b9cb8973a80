"""py-spy's reader: its raw output parsed per process and thread, the two runs merged into running counts, its
failures read as the reason, and its processes never outliving the window. py-spy itself is stood in for by small
scripts here; tests/sources/stacks/test_activity_reader.py runs the real one."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from gputui.sources.stacks import pyspy
from gputui.sources.stacks.pyspy import looks_like_python, merge, parse_raw, rank_of, record
from gputui.sources.stacks.samples import Frame, StacksUnavailable
from tests.sources.stacks.recorded import FIXTURES

WORKER = 'process 10:"python train.py";process 11:"python -c from multiprocessing.spawn import main; main()"'


def test_a_line_is_read_as_its_process_thread_and_frames_innermost_first() -> None:
    counts = parse_raw(
        'process 10:"python train.py";thread (10): MainThread;<module> (train.py:7);step (train.py:3) 19\n'
        f"{WORKER};thread (11): MainThread;<module> (<string>:1);Squares.__getitem__ (dl.py:13) 5\n",
        pid=10,
    )
    assert counts[(10, 10)] == ("MainThread", {(Frame("step", "train.py", 3), Frame("<module>", "train.py", 7)): 19})
    name, stacks = counts[(11, 11)]  # the child's `process` part names it, whatever its command line holds
    assert name == "MainThread"
    assert list(stacks.values()) == [5]


def test_a_thread_without_a_name_or_a_line_without_a_thread_is_still_read() -> None:
    counts = parse_raw("thread (0x1f): ;f (a.py:1) 2\nf (a.py:1) 3\ng (a.py:2) x\nnonsense\n", pid=5)
    assert counts[(5, 31)][0] == ""
    assert counts[(5, 5)] == ("", {(Frame("f", "a.py", 1),): 3})


def test_a_thread_caught_between_frames_counts_as_an_empty_stack() -> None:
    counts = parse_raw('process 567:"python saver.py";thread (567): MainThread 1\n', pid=567)
    assert counts[(567, 567)] == ("MainThread", {(): 1})


def test_running_samples_are_matched_by_function_and_shared_out_by_line() -> None:
    """The two runs catch a running function at different lines: spinner's `step` is all running, though its
    lines' counts differ between them."""
    every = (FIXTURES / "spinner.every.txt").read_text()
    running = (FIXTURES / "spinner.running.txt").read_text()
    (main,) = merge(parse_raw(every, 31959), parse_raw(running, 31959))
    assert all(count.running == count.samples for count in main.stacks)
    (asleep,) = merge(parse_raw((FIXTURES / "sleeper.every.txt").read_text(), 31861), {})
    assert [count.running for count in asleep.stacks] == [0]


def test_running_never_exceeds_the_samples() -> None:
    every = parse_raw("f (a.py:1) 4\n", pid=1)
    running = parse_raw("f (a.py:2) 9\n", pid=1)
    (thread,) = merge(every, running)
    assert [(count.samples, count.running) for count in thread.stacks] == [(4, 4)]


def test_rank_comes_from_the_environment_the_process_started_with(tmp_path: Path) -> None:
    (tmp_path / "40").mkdir()
    (tmp_path / "40/environ").write_bytes(b"PATH=/bin\0RANK=3\0LOCAL_RANK=1\0")
    (tmp_path / "41").mkdir()
    (tmp_path / "41/environ").write_bytes(b"RANK=x\0")
    assert [rank_of(pid, tmp_path) for pid in (40, 41, 42)] == [3, None, None]


@pytest.mark.parametrize(
    ("name", "python"),
    [
        ("python", True),
        ("python3.11", True),
        ("pypy3", True),
        ("sleep", False),
        ("pt_main_thread", False),
        (None, False),
    ],
)
def test_which_programs_look_like_python(name: str | None, python: bool) -> None:
    assert looks_like_python(name) is python


def fake_py_spy(tmp_path: Path, body: str) -> str:
    """A stand-in for py-spy: a shell script given the same arguments ($OUT is the file after -o)."""
    script = tmp_path / "py-spy"
    script.write_text(
        "#!/bin/sh\n"
        'OUT=""; IDLE=no; prev=""\n'
        'for arg in "$@"; do [ "$prev" = "-o" ] && OUT="$arg"; [ "$arg" = "--idle" ] && IDLE=yes; prev="$arg"; done\n'
        f"{body}\n"
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return str(script)


def test_both_runs_are_read_into_one_window_with_running_counts(tmp_path: Path) -> None:
    every = FIXTURES / "dl0.every.txt"
    running = FIXTURES / "dl0.running.txt"
    py_spy = fake_py_spy(
        tmp_path,
        f'echo "$@" >> {tmp_path}/calls\nif [ $IDLE = yes ]; then cp {every} "$OUT"; else cp {running} "$OUT"; fi',
    )
    window = record(32320, 1.0, 20, py_spy=py_spy, proc=tmp_path, clock=lambda: 500.0)
    calls = (tmp_path / "calls").read_text().splitlines()
    assert len(calls) == 2
    assert all(call.startswith("record --nonblocking ") for call in calls)  # never pausing the job
    assert sorted("--idle" in call.split() for call in calls) == [False, True]
    assert (window.source, window.pid, window.taken_at, window.window_s, window.rank) == (
        "py-spy",
        32320,
        500.0,
        1.0,
        None,
    )
    (main,) = window.threads
    assert main.is_main
    assert sum(count.samples for count in main.stacks) == 39
    assert 0 < sum(count.running for count in main.stacks) <= 39


@pytest.mark.parametrize(
    ("stderr", "key"),
    [
        ("Permission Denied: Try running again with elevated permissions", "ptrace_refused: "),
        ("Error: Operation not permitted (os error 1)", "ptrace_refused: "),
        ("Error: Failed to find python version from target process", "not_python: "),
        ("Error: Failed to get process executable name. Check that the process is running.", "gone: "),
        ("Error: something new", "py_spy_failed: "),
    ],
)
def test_a_failure_is_read_from_py_spys_words(tmp_path: Path, stderr: str, key: str) -> None:
    (tmp_path / "77").mkdir()
    (tmp_path / "77/comm").write_text("sleep\n")
    py_spy = fake_py_spy(tmp_path, f'echo "{stderr}" >&2; echo "Stack backtrace:" >&2; exit 1')
    with pytest.raises(StacksUnavailable) as raised:
        record(77, 1.0, 20, py_spy=py_spy, proc=tmp_path)
    message = str(raised.value)
    assert message.startswith(key)
    assert "backtrace" not in message


@pytest.mark.parametrize(
    ("dump_says", "key"),
    [
        ("Permission Denied: Try running again", "ptrace_refused: "),
        ("Error: Failed to find python version", "not_python: "),
    ],
)
def test_no_python_process_found_is_told_apart_by_one_dump_of_the_process_alone(
    tmp_path: Path, dump_says: str, key: str
) -> None:
    """With --subprocesses py-spy says the same of a refused ptrace and of a process that is no Python."""
    (tmp_path / "77").mkdir()
    (tmp_path / "77/comm").write_text("sleep\n")
    said = "Error: No python processes found in process 77 or any of its subprocesses"
    py_spy = fake_py_spy(tmp_path, f'[ "$1" = dump ] && echo "{dump_says}" >&2 || echo "{said}" >&2; exit 1')
    with pytest.raises(StacksUnavailable) as raised:
        record(77, 1.0, 20, py_spy=py_spy, proc=tmp_path)
    assert str(raised.value).startswith(key)


def test_a_process_that_went_away_is_gone_whatever_py_spy_says(tmp_path: Path) -> None:
    py_spy = fake_py_spy(tmp_path, 'echo "Error: unknown" >&2; exit 1')
    with pytest.raises(StacksUnavailable, match=r"^gone: process 78 "):
        record(78, 1.0, 20, py_spy=py_spy, proc=tmp_path)


def test_py_spy_that_does_not_finish_is_killed_and_reaped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The conftest fails any test that leaves a process running: both stand-ins must be gone when it returns."""
    monkeypatch.setattr(pyspy, "STARTUP_S", 0.2)
    py_spy = fake_py_spy(tmp_path, "exec sleep 60")
    with pytest.raises(StacksUnavailable, match=r"^py_spy_failed: .*in time"):
        record(79, 1.0, 20, py_spy=py_spy, proc=tmp_path)


def test_without_py_spy_the_reason_says_how_to_get_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pyspy, "find_py_spy", lambda: None)
    with pytest.raises(StacksUnavailable, match=r"^no_py_spy: .*pip install py-spy"):
        record(80, 1.0, 20)


def test_py_spy_is_found_beside_the_interpreter_when_not_on_path(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    beside = Path(fake_py_spy(tmp_path, "exit 0"))
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.setattr(pyspy.sys, "executable", str(tmp_path / "python"))
    assert pyspy.find_py_spy() == str(beside)
