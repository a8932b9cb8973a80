"""py-spy's reader: its speedscope output parsed per process and thread, the two runs merged into running counts, its
failures read as the reason, and its processes never outliving the window. py-spy itself is stood in for by small
scripts here; tests/sources/stacks/test_activity_reader.py runs the real one, and the last test here too, on a job
whose function's name holds a newline."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path
from typing import Any

import pytest

from gputui.foreign_text import is_clean
from gputui.sources.stacks import pyspy
from gputui.sources.stacks.pyspy import find_py_spy, looks_like_python, merge, parse_speedscope, record
from gputui.sources.stacks.samples import Frame, StacksUnavailable
from tests.agent.published import started
from tests.sources.stacks.recorded import FIXTURES

WORKER = ['process 10:"python train.py"', 'process 11:"python -c from multiprocessing.spawn import main; main()"']


def speedscope(*threads: tuple[str, list[str], list[tuple[str, str, int]], int]) -> str:
    """py-spy's speedscope output: per thread its profile's name, py-spy's own frames for it (processes, then the
    thread), its frames outermost first, and how many samples found them."""
    frames: list[dict[str, Any]] = []

    def index(name: str, file: str, line: int) -> int:
        frames.append({"name": name, "file": file, "line": line, "col": None})
        return len(frames) - 1

    profiles = []
    for name, own, stack, samples in threads:
        sample = [index(part, "", 0) for part in own] + [index(*frame) for frame in stack]
        profiles.append({"type": "sampled", "name": name, "samples": [sample] * samples, "weights": [0.05] * samples})
    return json.dumps({"profiles": profiles, "shared": {"frames": frames}})


def test_a_profile_is_read_as_its_process_thread_and_frames_innermost_first() -> None:
    counts = parse_speedscope(
        speedscope(
            (
                'Process 10 Thread 10 "MainThread"',
                [WORKER[0], "thread (10): MainThread"],
                [("<module>", "train.py", 7), ("step", "train.py", 3)],
                19,
            ),
            (
                'Process 11 Thread 11 "MainThread"',
                [*WORKER, "thread (11): MainThread"],
                [("<module>", "<string>", 1), ("Squares.__getitem__", "dl.py", 13)],
                5,
            ),
        ),
        pid=10,
    )
    assert counts[(10, 10)] == ("MainThread", {(Frame("step", "train.py", 3), Frame("<module>", "train.py", 7)): 19})
    name, stacks = counts[(11, 11)]  # the child's profile names it, whatever its command line holds
    assert name == "MainThread"
    assert list(stacks.values()) == [5]


def test_a_thread_without_a_name_or_between_frames_is_still_read() -> None:
    counts = parse_speedscope(
        speedscope(('Process 5 Thread 0x1f ""', ['process 5:"python"', "thread (0x1f)"], [], 2)), pid=5
    )
    assert counts[(5, 31)] == ("", {(): 2})


def test_a_frame_of_the_jobs_own_is_never_taken_for_py_spys_whatever_its_name() -> None:
    fake = ("thread (0x1): Fake", "", 0)
    counts = parse_speedscope(
        speedscope(('Process 5 Thread 5 "MainThread"', ['process 5:"python"', "thread (5): MainThread"], [fake], 1)),
        pid=5,
    )
    assert counts[(5, 5)] == ("MainThread", {(Frame(*fake),): 1})


def test_names_are_cleaned_where_they_enter() -> None:
    counts = parse_speedscope(
        speedscope(
            (
                'Process 5 Thread 5 "Main\x1b]0;owned\x07"',
                ['process 5:"python"', "thread (5): Main"],
                [("f\u202e", "a\n.py", 1)],
                1,
            )
        ),
        pid=5,
    )
    name, stacks = counts[(5, 5)]
    ((frame,),) = stacks
    assert name == "Main\\x1b]0;owned\\x07"
    assert (frame.function, frame.file) == ("f\\u202e", "a\\n.py")
    assert all(is_clean(text) for text in (name, frame.function, frame.file))


@pytest.mark.parametrize(
    "text",
    ["not json", "[]", '{"profiles": [{"name": "py-spy"}], "shared": {"frames": []}}', '{"shared": {}}', "[" * 100_000],
)
def test_output_that_is_not_py_spys_says_so(text: str) -> None:
    with pytest.raises(StacksUnavailable, match=r"^py_spy_failed: py-spy's output for process 5 could not be read"):
        parse_speedscope(text, 5)


def test_running_samples_are_matched_by_function_and_shared_out_by_line() -> None:
    """The two runs catch a running function at different lines: spinner's `step` is all running, though its
    lines' counts differ between them."""
    every = (FIXTURES / "spinner.every.json").read_text()
    running = (FIXTURES / "spinner.running.json").read_text()
    (main,) = merge(parse_speedscope(every, 31959), parse_speedscope(running, 31959))
    assert all(count.running == count.samples for count in main.stacks)
    (asleep,) = merge(parse_speedscope((FIXTURES / "sleeper.every.json").read_text(), 31861), {})
    assert [count.running for count in asleep.stacks] == [0]


def test_running_never_exceeds_the_samples() -> None:
    own = ['process 1:"python"', "thread (1): MainThread"]
    every = parse_speedscope(speedscope(('Process 1 Thread 1 "MainThread"', own, [("f", "a.py", 1)], 4)), pid=1)
    running = parse_speedscope(speedscope(('Process 1 Thread 1 "MainThread"', own, [("f", "a.py", 2)], 9)), pid=1)
    (thread,) = merge(every, running)
    assert [(count.samples, count.running) for count in thread.stacks] == [(4, 4)]


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
    every = FIXTURES / "dl0.every.json"
    running = FIXTURES / "dl0.running.json"
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


def test_a_command_name_of_control_bytes_is_named_escaped(tmp_path: Path) -> None:
    """Another user's process names itself (prctl PR_SET_NAME): a name that is no UTF-8 and holds a terminal
    escape neither breaks the reading nor reaches the message raw."""
    (tmp_path / "77").mkdir()
    (tmp_path / "77/comm").write_bytes(b"\x9b2J\x1b]0;x\x07\n")
    py_spy = fake_py_spy(tmp_path, 'echo "Error: Failed to find python version from target process" >&2; exit 1')
    with pytest.raises(StacksUnavailable) as raised:
        record(77, 1.0, 20, py_spy=py_spy, proc=tmp_path)
    message = str(raised.value)
    assert message.startswith("not_python: process 77 (")
    assert is_clean(message) and "\\x1b]0;x" in message


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


# A job whose function's name holds newlines: in py-spy's raw output the second line read as a thread of its own
# (0x1, "Fake") with 99999 samples.
FORGER = """
name = "evil\\nthread (0x1): Fake;fake (x.py:1) 99999\\nrest"
namespace = {}
exec("def spin():\\n    while True:\\n        pass\\n", namespace)
spin = namespace["spin"]
spin.__code__ = spin.__code__.replace(co_name=name, co_qualname=name)
print("ready", flush=True)
spin()
"""


def test_a_function_name_holding_a_newline_forges_nothing() -> None:
    """The real py-spy on a real job: one thread, the job's own, with no more samples than the window holds, its
    function's name whole and cleaned."""
    if find_py_spy() is None:
        pytest.skip("py-spy is not installed")
    with started([sys.executable, "-c", FORGER], {"PATH": os.environ["PATH"]}) as job:
        assert job.stdout is not None and job.stdout.readline() == "ready\n"
        window = record(job.pid, 1.0, 20)
    (main,) = window.threads
    assert (main.pid, main.tid) == (job.pid, job.pid)
    assert main.name in {"", "MainThread"}  # named where the job imported threading
    assert 0 < sum(count.samples for count in main.stacks) <= 1.0 * 20 + 5
    assert main.stacks[0].stack[0].function == "evil\\nthread (0x1): Fake;fake (x.py:1) 99999\\nrest"
