"""Reading a job's published stacks by PID: records written here as the sampler writes them, for real processes
(their start times, environments and children are real); what is not usable says why instead of a traceback; what
is outside the bounds, or in a place another user could write, is refused naming its owner."""

from __future__ import annotations

import json
import os
import pwd
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from gputui.agent import gputui_stacks_agent as agent
from gputui.sources.stacks.inprocess import RecordRefused, read_published
from gputui.sources.stacks.samples import Frame, StackCount, StacksUnavailable
from tests.agent.published import records_dir, started, until

FRAMES = [
    ["_next_data", "/x/torch/utils/data/dataloader.py", 757],
    ["train", "/job/train.py", 88],
    ["<module>", "/job/train.py", 120],
]
NOBODY = pwd.getpwnam("nobody")
DATA = [0, 1, 2]  # waiting for the next batch
STEP = [1, 2]  # in train itself


def start_ticks(pid: int) -> int:
    data = Path(f"/proc/{pid}/stat").read_bytes()
    return int(data[data.rindex(b")") + 2 :].split()[19])


def record(pid: int, slices: list[list[Any]], *, end: float | None = None, **fields: Any) -> dict[str, Any]:
    """A record of one-second slices ending at `end`, oldest first: each slice a list of threads, each thread
    [tid, name, [[frame indices], samples, running], ...]."""
    end = time.time() if end is None else end
    first = end - len(slices)
    return {
        "format": "gputui-stacks",
        "version": 1,
        "pid": pid,
        "ppid": 1,
        "start_ticks": start_ticks(pid),
        "rank": None,
        "local_rank": None,
        "rate_hz": 25.0,
        "window_start": first,
        "window_end": end,
        "written_at": end,
        "frames": FRAMES,
        "slices": [
            {
                "start": first + n,
                "end": first + n + 1,
                "ticks": 25,
                "threads": [{"tid": tid, "name": name, "stacks": list(stacks)} for tid, name, *stacks in threads],
            }
            for n, threads in enumerate(slices)
        ],
        **fields,
    }


def publish(runtime_dir: Path, content: dict[str, Any] | str | bytes, pid: int, mode: int = 0o600) -> Path:
    path = records_dir(runtime_dir) / f"{pid}.json"
    if isinstance(content, dict):
        content = json.dumps(content)
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    path.chmod(mode)
    return path


@pytest.fixture
def job(tmp_path: Path) -> Iterator[psutil.Process]:
    """A process whose record directory is the test's, with one child (standing in for a data-loader worker)."""
    environment = {"PATH": os.environ["PATH"], agent.ENV_DIR: str(records_dir(tmp_path))}
    with started(["sh", "-c", "sleep 120 & wait"], environment) as process:
        parent = psutil.Process(process.pid)
        until(parent.children, lambda children: len(children) == 1, "the child")
        yield parent


def test_the_last_seconds_of_the_job_and_its_workers(tmp_path: Path, job: psutil.Process) -> None:
    pid, (worker,) = job.pid, [child.pid for child in job.children()]
    main_slices = [
        [[pid, "MainThread", [DATA, 25, 0]]],
        [[pid, "MainThread", [DATA, 20, 0.4], [STEP, 5, 4.5]], [pid + 1000, "pin_memory", [[0], 25, 0]]],
        [[pid, "MainThread", [DATA, 15, 0.7], [STEP, 10, 9.25]]],
    ]
    end = time.time()
    publish(tmp_path, record(pid, main_slices, end=end, rank=1), pid)
    publish(tmp_path, record(worker, [[[worker, "MainThread", [[1], 25, 25]]]] * 3, end=end), worker)

    window = read_published(pid, 2.0)

    assert window is not None
    assert (window.source, window.pid, window.taken_at, window.window_s, window.rank) == (
        "in-process",
        pid,
        end,
        pytest.approx(2.0),
        1,
    )
    main, pin_memory, worker_main = window.threads
    assert (main.pid, main.tid, main.name, main.is_main) == (pid, pid, "MainThread", True)
    data_stack = tuple(Frame(*FRAMES[i]) for i in DATA)
    step_stack = tuple(Frame(*FRAMES[i]) for i in STEP)
    # The last 2 slices, summed; the time on a CPU (in samples' worth) rounded once summed.
    assert main.stacks == (StackCount(data_stack, 35, 1), StackCount(step_stack, 15, 14))
    assert (pin_memory.pid, pin_memory.tid, pin_memory.name, pin_memory.is_main) == (
        pid,
        pid + 1000,
        "pin_memory",
        False,
    )
    assert (worker_main.pid, worker_main.is_main, worker_main.stacks) == (
        worker,
        True,
        (StackCount((Frame(*FRAMES[1]),), 50, 50),),
    )
    assert read_published(pid, 8.0).window_s == pytest.approx(3.0)  # type: ignore[union-attr]  # all it has


def test_a_process_that_publishes_nothing(tmp_path: Path, job: psutil.Process) -> None:
    assert read_published(job.pid, 4.0) is None
    (tmp_path / "gputui-stacks").rmdir()
    assert read_published(job.pid, 4.0) is None


def test_a_record_left_by_an_earlier_process_with_the_same_pid_is_not_this_ones(
    tmp_path: Path, job: psutil.Process
) -> None:
    publish(tmp_path, record(job.pid, [[]], start_ticks=start_ticks(job.pid) - 1), job.pid)
    assert read_published(job.pid, 4.0) is None


def test_a_record_its_sampler_stopped_writing_says_so(tmp_path: Path, job: psutil.Process) -> None:
    publish(tmp_path, record(job.pid, [[]], end=time.time() - 30), job.pid)
    with pytest.raises(StacksUnavailable, match=rf"sampler of pid {job.pid} last wrote 30 s ago: .* GIL"):
        read_published(job.pid, 4.0)


OWNER = pwd.getpwuid(os.geteuid()).pw_name


def refused(pid: int, why: str) -> str:
    return rf"^the stack record of pid {pid} \({OWNER}'s\) is refused: {why}"


@pytest.mark.parametrize(
    ("content", "why"),
    [
        ("{not json", "not JSON"),
        ("[]", "not a gputui stack record"),
        ({"version": 2}, "version 2, where this gputui reads 1"),
        ({"pid": 1}, "it names another pid than"),
        ({"slices": [{"threads": [{"tid": 1}]}]}, "slice 0 is not the format's object"),
        ({"frames": [["f", "x.py"]]}, "frame 0 is not the format's list"),
        ({"written_at": "now"}, "the time written is not a number"),
        ({"window_end": None}, "the window's end is not a number"),
        ({"more": 1}, "not the format's fields"),
    ],
)
def test_a_corrupt_record_is_refused_without_a_traceback(
    tmp_path: Path, job: psutil.Process, content: dict[str, Any] | str, why: str
) -> None:
    if isinstance(content, dict):
        content = json.dumps({**record(job.pid, [[[job.pid, "MainThread", [STEP, 1, 1]]]]), **content})
    publish(tmp_path, content, job.pid)
    with pytest.raises(RecordRefused, match=refused(job.pid, why)) as raised:
        read_published(job.pid, 4.0)
    assert raised.value.owner == OWNER


def execed(pid: int) -> None:
    """Waits until process `pid` runs `sleep`: its environment read before is still the one it was forked with."""
    until(lambda: psutil.Process(pid).cmdline()[:1], lambda argv: argv == ["sleep"], "sleep to start")


def _stacks(count: int, depth: int) -> list[Any]:
    """One slice of the main thread with `count` stacks `depth` frames deep."""
    return [[0, "MainThread", *([[0] * depth, 1, 0] for _ in range(count))]]


@pytest.mark.parametrize(
    ("fields", "why"),
    [
        ({"written_at": 10**400}, "the time written is out of range"),
        ({"written_at": 1e300}, "the time written is out of range"),
        ({"written_at": time.time() + 3600}, "the time written is out of range"),
        ({"window_end": -(10**400)}, "the window's end is out of range"),
        ({"rate_hz": "1e999"}, "the rate is not finite"),  # written as a number: json reads it as infinity
        ({"rate_hz": -1}, "the rate is out of range"),
        ({"ppid": -1}, "the parent's pid is out of range"),
        ({"start_ticks": 10**400}, "the start time is out of range"),
        ({"rank": True}, "the rank is not an integer"),
        ({"frames": [["f", "x.py", 1]] * (agent.MAX_FRAMES + 1)}, "the frame table holds 10001, over 10000"),
        ({"frames": [["f" * (agent.MAX_NAME + 1), "x.py", 1]]}, "frame 0's function is 4097 characters long"),
        ({"frames": [["f", "x" * (agent.MAX_NAME + 1), 1]]}, "frame 0's file is 4097 characters long"),
        ({"frames": [["f", "x.py", 2**40]]}, "frame 0's line is out of range"),
        ({"slices": [{"start": 0, "end": 0, "ticks": 1, "threads": []}]}, "slice 0's start is out of range"),
    ],
)
def test_a_record_outside_the_bounds_is_refused(
    tmp_path: Path, job: psutil.Process, fields: dict[str, Any], why: str
) -> None:
    content = json.dumps({**record(job.pid, [[[job.pid, "MainThread", [STEP, 1, 1]]]]), **fields})
    publish(tmp_path, content.replace('"1e999"', "1e999"), job.pid)
    with pytest.raises(RecordRefused, match=refused(job.pid, why)):
        read_published(job.pid, 4.0)


@pytest.mark.parametrize(
    ("slices", "why"),
    [
        ([_stacks(1, agent.MAX_DEPTH + 1)], "a stack of slice 0's thread 0 holds 2001, over 2000"),
        ([_stacks(130, 2000)] * 1, "slice 0's thread 0's stacks holds 130, over 25"),
        ([[[0, "MainThread", [[0], 30, 0]]]], "slice 0's thread 0 has more samples than its slice"),
        ([[[0, "MainThread", [[0], 1, 2]]]], "a stack's time running in slice 0's thread 0 is out of range"),
        ([[[0, "MainThread", [[0], -1, 0]]]], "a stack's samples in slice 0's thread 0 is out of range"),
        ([[[0, "MainThread", [[99], 1, 0]]]], "a stack of slice 0's thread 0 names no frame of the table"),
        ([[[0, "M" * (agent.MAX_NAME + 1)]]], "slice 0's thread 0's name is 4097 characters long"),
        ([[[0, "MainThread"]] * (agent.MAX_THREADS + 1)], "slice 0's threads holds 1025, over 1024"),
        ([[]] * (agent.MAX_SLICES + 1), "the slices holds 601, over 600"),
    ],
)
def test_stacks_outside_the_bounds_are_refused(
    tmp_path: Path, job: psutil.Process, slices: list[Any], why: str
) -> None:
    content = record(job.pid, [[[job.pid if tid == 0 else tid, *rest] for tid, *rest in piece] for piece in slices])
    publish(tmp_path, content, job.pid)
    with pytest.raises(RecordRefused, match=refused(job.pid, re.escape(why))):
        read_published(job.pid, 4.0)


def test_more_frame_indices_than_a_record_holds_are_refused(tmp_path: Path, job: psutil.Process) -> None:
    """The issue's 400k frame indices: each stack within its depth, all of them past MAX_INDICES."""
    slices = [[[job.pid, "MainThread", *([[0] * 1000, 1, 0] for _ in range(25))]]] * 11
    publish(tmp_path, record(job.pid, slices), job.pid)
    with pytest.raises(RecordRefused, match=refused(job.pid, "its stacks hold over 250000 frames in all")):
        read_published(job.pid, 8.0)


@pytest.mark.parametrize(
    ("content", "why"),
    [
        (b"[" * 100_000 + b"]" * 100_000, "nested deeper than a record is"),
        (b'{"rate_hz": Infinity}', "Infinity is no number of a record"),
        (b'{"rate_hz": NaN}', "NaN is no number of a record"),
        (b"\xff\xfe", "not JSON"),
        (b" " * (agent.MAX_RECORD_BYTES + 1), f"over {agent.MAX_RECORD_BYTES} bytes"),
    ],
)
def test_what_json_itself_would_choke_on_is_refused(
    tmp_path: Path, job: psutil.Process, content: bytes, why: str
) -> None:
    publish(tmp_path, content, job.pid)
    with pytest.raises(RecordRefused, match=refused(job.pid, re.escape(why))):
        read_published(job.pid, 4.0)


def test_names_are_cleaned_where_they_enter(tmp_path: Path, job: psutil.Process) -> None:
    content = record(job.pid, [[[job.pid, "Main\x1b[2J", [[0], 1, 0]]]], frames=[["f\nforged", "a\u202e.py", 1]])
    publish(tmp_path, content, job.pid)
    window = read_published(job.pid, 4.0)
    assert window is not None
    (main,) = window.threads
    assert main.name == "Main\\x1b[2J"
    assert main.stacks[0].stack == (Frame("f\\nforged", "a\\u202e.py", 1),)


def test_a_record_its_user_does_not_own_is_refused(tmp_path: Path, job: psutil.Process) -> None:
    if os.geteuid() != 0:
        pytest.skip("giving a file away needs root")
    path = publish(tmp_path, record(job.pid, [[]]), job.pid)
    os.chown(path, NOBODY.pw_uid, NOBODY.pw_gid)
    with pytest.raises(RecordRefused, match=refused(job.pid, "not a file of the job's own user")):
        read_published(job.pid, 4.0)


def test_a_record_that_is_a_symlink_is_refused(tmp_path: Path, job: psutil.Process) -> None:
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_text(json.dumps(record(job.pid, [[]])))
    (records_dir(tmp_path) / f"{job.pid}.json").symlink_to(elsewhere)
    with pytest.raises(RecordRefused, match=refused(job.pid, r"not a file \(a symlink\?\)")):
        read_published(job.pid, 4.0)


DIRECTORY_REFUSED = r"^the stack records of pid \d+ \(\w+'s\) are refused: their directory \(GPUTUI_STACKS_DIR\)"


@pytest.mark.parametrize("planted", ["nobody's", "group-writable", "a symlink", "relative"])
def test_a_record_directory_another_user_could_write_in_is_refused(tmp_path: Path, planted: str) -> None:
    """A real directory of nobody's (and a file of the job's in it), one the job's group may write in, a symlink to
    the job's own, a relative path: none is the job's own private directory."""
    if os.geteuid() != 0 and planted == "nobody's":
        pytest.skip("giving a directory away needs root")
    directory = tmp_path / "records"
    directory.mkdir(mode=0o700)
    named = str(directory)
    if planted == "nobody's":
        os.chown(directory, NOBODY.pw_uid, NOBODY.pw_gid)
    elif planted == "group-writable":
        directory.chmod(0o770)
    elif planted == "a symlink":
        named = str(tmp_path / "link")
        os.symlink(directory, named)
    else:
        named = "records"
    with started(["sleep", "120"], {agent.ENV_DIR: named}, cwd=tmp_path) as process:
        execed(process.pid)
        (directory / f"{process.pid}.json").write_text(json.dumps(record(process.pid, [[]])))
        with pytest.raises(RecordRefused, match=DIRECTORY_REFUSED) as raised:
            read_published(process.pid, 4.0)
    assert raised.value.owner == OWNER


def test_a_record_planted_where_the_reader_once_looked_is_not_read(tmp_path: Path, job: psutil.Process) -> None:
    """Root's job run with a user's XDG_RUNTIME_DIR (su without -, sudo -E): that user planted a record of their
    own where the reader looked before. It is no place of the job's: nothing is read there (and py-spy is next)."""
    if os.geteuid() != 0:
        pytest.skip("running as two users needs root")
    runtime = tmp_path / "run"
    runtime.mkdir()
    planted = records_dir(runtime) / "placeholder"
    environment = {"PATH": os.environ["PATH"], "XDG_RUNTIME_DIR": str(runtime)}
    with started(["sleep", "120"], environment) as process:
        execed(process.pid)
        planted = planted.with_name(f"{process.pid}.json")
        planted.write_text(json.dumps(record(process.pid, [[[process.pid, "MainThread", [[0], 25, 25]]]])))
        for path in (runtime, planted.parent, planted):
            os.chown(path, NOBODY.pw_uid, NOBODY.pw_gid)
        assert read_published(process.pid, 4.0) is None


def test_another_users_job_is_read_by_root_only(tmp_path: Path) -> None:
    """A job of uid 64123 publishing in its own directory, read by uid 64124 (this process, for the moment): its
    environment, which names the directory, is not that reader's to read, so it reads no record (py-spy is tried
    next, and its refusal says what to do); root reads it."""
    if os.geteuid() != 0:
        pytest.skip("running as two other users needs root")
    owner, reader = 64123, 64124
    directory = records_dir(tmp_path)
    tmp_path.chmod(0o711)
    environment = {"PATH": os.environ["PATH"], agent.ENV_DIR: str(directory)}
    with started(["sleep", "120"], environment, user=owner, group=owner) as process:
        execed(process.pid)
        path = directory / f"{process.pid}.json"
        path.write_text(json.dumps(record(process.pid, [[]])))
        os.chown(directory, owner, owner)
        os.chown(path, owner, owner)
        os.seteuid(reader)
        try:
            seen = read_published(process.pid, 4.0)
        finally:
            os.seteuid(0)
        assert seen is None
        assert read_published(process.pid, 4.0) is not None  # root may


def test_a_process_that_is_gone_publishes_nothing() -> None:
    with started(["true"], {"PATH": os.environ["PATH"]}) as process:
        process.wait(timeout=30)
    assert read_published(process.pid, 4.0) is None
