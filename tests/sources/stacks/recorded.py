"""py-spy's raw output recorded from real CPU-PyTorch jobs (fixtures/NAME.every.txt with --idle, NAME.running.txt
without), read back as the StackWindow py-spy's reader makes of it, and stacks written by hand in the same format.

The jobs, each sampled by `py-spy record --nonblocking [--idle] --threads --subprocesses --format raw -r 20 -d 2`:
- dl0: a DataLoader with num_workers=0 over a dataset whose __getitem__ loops in Python;
- dl2: the same with num_workers=2 and a main loop that only sums each batch (its workers are the bound);
- dlio: num_workers=2 over a dataset whose __getitem__ reads a 30 MB file (Path.read_bytes) for each item;
- sleeper: a loop calling gpu_step(), which is time.sleep(0.05);
- spinner: a pure-Python loop (step() squares and sums);
- saver: torch.save of a 2000x2000 Linear's state_dict, in a loop;
- rank0: rank 0 of two gloo ranks in an all_reduce loop, rank 1 sleeping 0.2 s before each.
"""

from __future__ import annotations

import re
from pathlib import Path

from gputui.sources.stacks.pyspy import merge, parse_raw
from gputui.sources.stacks.samples import Stack, StackCount, StackWindow, ThreadStacks

FIXTURES = Path(__file__).parent / "fixtures"
JOBS = ("dl0", "dl2", "dlio", "sleeper", "spinner", "saver", "rank0")


def job_pid(raw: str) -> int:
    """The sampled process: the first `process` part of the first line."""
    match = re.match(r"process (\d+):", raw)
    assert match is not None
    return int(match.group(1))


def recorded(name: str) -> StackWindow:
    every = (FIXTURES / f"{name}.every.txt").read_text()
    running = (FIXTURES / f"{name}.running.txt").read_text()
    pid = job_pid(every)
    threads = merge(parse_raw(every, pid), parse_raw(running, pid))
    return StackWindow(source="py-spy", pid=pid, taken_at=100.0, window_s=2.0, threads=threads)


def stack(frames: str) -> Stack:
    """A stack from frames as py-spy writes them, outermost first: "main (train.py:9);step (train.py:3)"."""
    counts = parse_raw(f"{frames} 1", pid=1)
    (only,) = counts.values()
    (parsed,) = only[1]
    return parsed


def window(pid: int, *threads: ThreadStacks) -> StackWindow:
    return StackWindow(source="py-spy", pid=pid, taken_at=100.0, window_s=4.0, threads=threads)


def thread(pid: int, tid: int, frames: str, samples: int = 10, running: int = 0, name: str = "") -> ThreadStacks:
    return ThreadStacks(pid=pid, tid=tid, name=name, stacks=(StackCount(stack(frames), samples, running),))
