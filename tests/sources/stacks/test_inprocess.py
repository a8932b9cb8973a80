"""Reading a job's published stacks by PID: records written here as the sampler writes them, for real processes
(their start times, environments and children are real); what is not usable says why instead of a traceback."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from gputui.agent import gputui_stacks_agent as agent
from gputui.sources.stacks.inprocess import read_published
from gputui.sources.stacks.samples import Frame, StackCount, StacksUnavailable
from tests.agent.published import started, until

FRAMES = [
    ["_next_data", "/x/torch/utils/data/dataloader.py", 757],
    ["train", "/job/train.py", 88],
    ["<module>", "/job/train.py", 120],
]
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


def publish(runtime_dir: Path, content: dict[str, Any] | str, pid: int, mode: int = 0o600) -> Path:
    directory = runtime_dir / "gputui-stacks"
    directory.mkdir(mode=0o700, exist_ok=True)
    path = directory / f"{pid}.json"
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    path.chmod(mode)
    return path


@pytest.fixture
def job(tmp_path: Path) -> Iterator[psutil.Process]:
    """A process whose runtime directory is the test's, with one child (standing in for a data-loader worker)."""
    environment = {"PATH": os.environ["PATH"], "XDG_RUNTIME_DIR": str(tmp_path)}
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
    (tmp_path / "gputui-stacks").mkdir()
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


@pytest.mark.parametrize(
    ("content", "why"),
    [
        ("{not json", "not JSON"),
        ("[]", "not a gputui stack record"),
        ({"version": 2}, "version 2, where this gputui reads 1"),
        ({"pid": 1}, "it names pid 1"),
        ({"slices": [{"threads": [{"tid": 1}]}]}, "KeyError"),
        ({"frames": [["f", "x.py"]]}, "ValueError"),
        ({"written_at": "now"}, "no window's end, or no time written"),
        ({"window_end": None}, "no window's end, or no time written"),
    ],
)
def test_a_corrupt_record_says_so_without_a_traceback(
    tmp_path: Path, job: psutil.Process, content: dict[str, Any] | str, why: str
) -> None:
    if isinstance(content, dict):
        content = json.dumps({**record(job.pid, [[[job.pid, "MainThread", [STEP, 1, 1]]]]), **content})
    publish(tmp_path, content, job.pid)
    with pytest.raises(StacksUnavailable, match=rf"^the stack record of pid {job.pid} is corrupt \(.*{why}"):
        read_published(job.pid, 4.0)


def test_a_record_its_user_does_not_own_is_not_trusted(tmp_path: Path, job: psutil.Process) -> None:
    if os.geteuid() != 0:
        pytest.skip("giving a file away needs root")
    path = publish(tmp_path, record(job.pid, [[]]), job.pid)
    os.chown(path, 64123, 64123)
    with pytest.raises(StacksUnavailable, match="is not a stack record: not a file of the job's own user"):
        read_published(job.pid, 4.0)


@pytest.mark.parametrize("folder_mode", [0o700, 0o711])
def test_another_users_records_are_refused_plainly(tmp_path: Path, folder_mode: int) -> None:
    """A job of uid 64123 publishing in its usual place, read by uid 64124 (this process, for the moment). In the
    sampler's own 0700 folder the reader cannot tell whether a record is there, so it reads none (py-spy is tried
    next, and its refusal says what to do); where it can see the record but not read it, it says so."""
    if os.geteuid() != 0:
        pytest.skip("running as two other users needs root")
    owner, reader = 64123, 64124
    directory = Path(agent.fallback_dir(owner))
    environment = {"PATH": os.environ["PATH"]}  # no XDG_RUNTIME_DIR: the sampler's fallback directory
    with started(["sleep", "120"], environment, user=owner, group=owner) as process:
        try:
            directory.mkdir(mode=folder_mode)
            directory.chmod(folder_mode)
            path = directory / f"{process.pid}.json"
            path.write_text(json.dumps(record(process.pid, [[]])))
            path.chmod(0o600)
            os.chown(directory, owner, owner)
            os.chown(path, owner, owner)
            os.seteuid(reader)
            try:
                if folder_mode == 0o700:
                    assert read_published(process.pid, 4.0) is None
                else:
                    with pytest.raises(StacksUnavailable) as refused:
                        read_published(process.pid, 4.0)
            finally:
                os.seteuid(0)
            if folder_mode != 0o700:
                assert str(refused.value) == (
                    f"pid {process.pid} runs as uid {owner}, whose stack records ({directory}) only that user and "
                    f"root may read: run gputui as uid {owner} or as root"
                )
            assert read_published(process.pid, 4.0) is not None  # root may
        finally:
            for leftover in directory.glob("*"):
                leftover.unlink()
            directory.rmdir()


def test_a_process_that_is_gone_publishes_nothing() -> None:
    with started(["true"], {"PATH": os.environ["PATH"]}) as process:
        process.wait(timeout=30)
    assert read_published(process.pid, 4.0) is None
