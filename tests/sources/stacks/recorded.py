"""py-spy's output recorded from real CPU-PyTorch jobs (fixtures/NAME.every.json with --idle, NAME.running.json
without), read back as the StackWindow py-spy's reader makes of it, and stacks written by hand in py-spy's raw
notation (`main (train.py:9);step (train.py:3)`, outermost first).

The jobs, each sampled by `py-spy record --nonblocking [--idle] --threads --subprocesses --format raw -r 20 -d 2`
(py-spy 0.4.3; each sample later written out as py-spy's speedscope JSON writes it, its files' short names kept):
- dl0: a DataLoader with num_workers=0 over a dataset whose __getitem__ loops in Python;
- dl2: the same with num_workers=2 and a main loop that only sums each batch (its workers are the bound);
- dlio: num_workers=2 over a dataset whose __getitem__ reads a 30 MB file (Path.read_bytes) for each item;
- sleeper: a loop calling gpu_step(), which is time.sleep(0.05);
- spinner: a pure-Python loop (step() squares and sums);
- saver: torch.save of a 2000x2000 Linear's state_dict, in a loop;
- rank0: rank 0 of two gloo ranks in an all_reduce loop, rank 1 sleeping 0.2 s before each.

Recorded for issue 40 the same way but as the reader runs py-spy now (`--format speedscope --full-filenames`,
py-spy 0.4.3, Python 3.11, torch on the CPU, OMP_NUM_THREADS=1); their scripts are kept beside them as NAME.py.txt:
- producer: a home-made loader, one thread named "producer" decoding (torch ops) into a queue.Queue(maxsize=2),
  the loop blocked in its get();
- pool: a ThreadPoolExecutor of 2 threads prefetching, the loop blocked in each future's result();
- itemsync: a loop whose step is `return (x @ x).sum().item()` on a CPU tensor: the frame shape of a wait for the
  GPU in `.item()` (the thread runs on its own line, no Python frame of the call). No GPU here: the wait for a GPU
  itself was not recorded, only where a stack caught in `.item()` ends.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from gputui.sources.stacks.pyspy import merge, parse_speedscope
from gputui.sources.stacks.samples import Frame, Stack, StackCount, StackWindow, ThreadStacks

FIXTURES = Path(__file__).parent / "fixtures"
# Other frameworks' jobs, recorded the same way (recorded/README.md says how, and with which versions).
FRAMEWORKS = Path(__file__).parent / "recorded"
JOBS = ("dl0", "dl2", "dlio", "sleeper", "spinner", "saver", "rank0", "producer", "pool", "itemsync")


def job_pid(speedscope: str) -> int:
    """The sampled process: py-spy's outermost frame of any sample names it."""
    data = json.loads(speedscope)
    outermost = data["shared"]["frames"][data["profiles"][0]["samples"][0][0]]["name"]
    match = re.match(r"process (\d+):", outermost)
    assert match is not None
    return int(match.group(1))


def recorded(name: str, folder: Path = FIXTURES) -> StackWindow:
    every = (folder / f"{name}.every.json").read_text()
    running = (folder / f"{name}.running.json").read_text()
    pid = job_pid(every)
    threads = merge(parse_speedscope(every, pid), parse_speedscope(running, pid))
    return StackWindow(source="py-spy", pid=pid, taken_at=100.0, window_s=2.0, threads=threads)


def stack(frames: str) -> Stack:
    """A stack from frames in py-spy's raw notation, outermost first: "main (train.py:9);step (train.py:3)"."""
    parsed = []
    for part in frames.split(";"):
        function, _, where = part.removesuffix(")").rpartition(" (")
        file, _, line = where.rpartition(":")
        parsed.append(Frame(function, file, int(line)))
    return tuple(reversed(parsed))


def window(pid: int, *threads: ThreadStacks) -> StackWindow:
    return StackWindow(source="py-spy", pid=pid, taken_at=100.0, window_s=4.0, threads=threads)


def thread(pid: int, tid: int, frames: str, samples: int = 10, running: int = 0, name: str = "") -> ThreadStacks:
    return ThreadStacks(pid=pid, tid=tid, name=name, stacks=(StackCount(stack(frames), samples, running),))
