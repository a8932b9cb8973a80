"""The in-process reader: the stacks a job run under `gputui run` publishes itself, found by its PID.

The sampler (agent/gputui_stacks_agent.py, standard library only) writes one record per process: the job, each
DataLoader worker forked from it, each rank torchrun starts. Where: `<dir>/<pid>.json`, <dir> the directory
`gputui run` made for the job and named in its environment (GPUTUI_STACKS_DIR, read here from /proc/PID/environ:
only the job's user and root may read it); replaced whole about once a second (written beside it, then renamed),
removed when the process exits.

What the job's user writes there is theirs to choose, so nothing is taken on trust: the directory must be a real
directory of the job's user that no one else may write in, the record a regular file of that user (opened without
following a symlink, checked by fstat on the descriptor read), and the record within the bounds the sampler keeps
(record.py) before anything of it is used. A record outside them is refused (RecordRefused, which names its owner)
and the job read with py-spy instead. Record format, version 1 (one JSON object):

    {"format": "gputui-stacks", "version": 1,
     "pid": 4242, "ppid": 4200,          # the process, and its parent when the sampler started
     "start_ticks": 1234567,             # its start in clock ticks since boot (/proc/PID/stat field 22)
     "rank": 0, "local_rank": 0,         # RANK and LOCAL_RANK from its environment, or null
     "rate_hz": 25.0,                    # samples per second
     "window_start": 1765000000.0, "window_end": 1765000008.0,   # time.time() of the first slice's start and
                                                                  # the last slice's end; null before the first
     "written_at": 1765000008.0,         # time.time() when this record was written
     "frames": [["_next_data", "/x/torch/utils/data/dataloader.py", 757], ...],  # function, file, line (or null)
     "slices": [                         # one per second of the window, oldest first
       {"start": 1765000007.0, "end": 1765000008.0, "ticks": 25,             # ticks: samples taken in it
        "threads": [{"tid": 4242, "name": "MainThread",                      # the OS thread id (main: the pid)
                     "stacks": [[[12, 7, 3], 20, 17.6], ...]}]}]}            # [frame indices innermost first,
                                                                             #  samples, of which running]

`running` is a sum over the stack's samples of the share of the time since the previous sample that the thread
spent on a CPU (its CPU clock), two decimals: the samples' worth of time it ran. py-spy's --idle counts the samples
in which its state was R instead; both estimate how much of the window the thread ran, but a thread waiting for a
CPU (runnable, not running: a worker starved by other processes) counts as running there and not here. The
reader sums and rounds it into StackCount.running.
"""

from __future__ import annotations

import contextlib
import os
import stat
import time
from collections.abc import Iterator

import psutil

from gputui.agent import gputui_stacks_agent as agent
from gputui.sources.stacks.permission import user_name
from gputui.sources.stacks.record import CorruptRecord, Record, Slice, parse
from gputui.sources.stacks.samples import Stack, StackCount, StacksUnavailable, StackWindow, ThreadStacks

# The sampler writes about once a second: a record older than this is not being kept up to date.
STALE_S = 5.0
TOLERANCE_S = 1e-3
# What one reading takes in all, the job's children's records with it: children past this are left out.
MAX_READ_BYTES = 4 * agent.MAX_RECORD_BYTES
MAX_READ_INDICES = 4 * agent.MAX_INDICES
_OPEN_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC


class RecordRefused(StacksUnavailable):
    """A record, or the place it is in, that is not what the sampler makes: refused, and its job read with py-spy
    instead. `owner` names the user who could write it."""

    def __init__(self, message: str, owner: str) -> None:
        super().__init__(message)
        self.owner = owner


def read_published(pid: int, window_s: float) -> StackWindow | None:
    """The last `window_s` seconds that `pid` and its child processes (its DataLoader workers) published about
    their stacks; None where `pid` publishes nothing this reader may see (not run under `gputui run`, another
    user's job read by a user who is not root, or gone).

    Raises RecordRefused for a record (or its directory) outside what the sampler makes, and StacksUnavailable for
    one its sampler stopped updating."""
    try:
        process = psutil.Process(pid)
        uid = process.uids().effective
        path = process.environ().get(agent.ENV_DIR)
    except psutil.Error:
        return None
    if not path:
        return None
    with _opened_dir(path, uid, pid) as dir_fd:
        if dir_fd is None:
            return None
        owner = user_name(uid)
        budget = _Budget()
        main = _load(pid, dir_fd, uid, owner, budget)
        if main is None:
            return None
        since = main.window_end - window_s
        threads = _threads(main, since)
        start = min((piece.start for piece in _slices_after(main, since)), default=main.window_end)
        for child in _children(process):
            with contextlib.suppress(StacksUnavailable):  # a worker's record it cannot use costs only its own
                record = _load(child, dir_fd, uid, owner, budget)
                if record is not None:
                    threads += _threads(record, since)
    return StackWindow(
        source="in-process",
        pid=pid,
        taken_at=main.window_end,
        window_s=main.window_end - start,
        threads=tuple(threads),
        rank=main.rank,
    )


@contextlib.contextmanager
def _opened_dir(path: str, uid: int, pid: int) -> Iterator[int | None]:
    """The record directory, opened once and checked as the sampler checks it; None where there is none (gone) or
    this reader may not open it."""
    try:
        if not os.path.isabs(path):
            raise NotADirectoryError(path)
        fd = agent.open_private_dir(path, uid)
    except (FileNotFoundError, PermissionError):
        yield None
        return
    except OSError:  # a symlink, no directory, or one another user may write in (agent.NotPrivate)
        owner = user_name(uid)
        raise RecordRefused(
            f"the stack records of pid {pid} ({owner}'s) are refused: their directory ({agent.ENV_DIR}) is not a "
            "real directory of the job's user that only that user may write in",
            owner,
        ) from None
    try:
        yield fd
    finally:
        os.close(fd)


class _Budget:
    """What one reading has taken so far of MAX_READ_BYTES and MAX_READ_INDICES."""

    def __init__(self) -> None:
        self.bytes = 0
        self.indices = 0

    def spend(self, pid: int, data: bytes, record: Record | None = None) -> None:
        self.bytes += len(data)
        if record is not None:
            self.indices += sum(len(stack[0]) for piece in record.slices for t in piece.threads for stack in t.stacks)
        if self.bytes > MAX_READ_BYTES or self.indices > MAX_READ_INDICES:
            raise StacksUnavailable(f"the stack records of pid {pid}'s job hold more than one reading takes")


def _load(pid: int, dir_fd: int, uid: int, owner: str, budget: _Budget) -> Record | None:
    """The record of `pid` checked to be its own and kept up to date; None where it publishes none."""
    try:
        data = _read(f"{pid}.json", dir_fd, uid)
    except (FileNotFoundError, PermissionError):
        return None
    except CorruptRecord as error:
        raise RecordRefused(f"the stack record of pid {pid} ({owner}'s) is refused: {error}", owner) from None
    except OSError as error:
        raise StacksUnavailable(f"the stack record of pid {pid} cannot be read: {error.strerror}") from None
    budget.spend(pid, data)
    now = time.time()
    try:
        record = parse(data, pid, now)
    except (CorruptRecord, OverflowError, RecursionError, ValueError) as error:
        raise RecordRefused(f"the stack record of pid {pid} ({owner}'s) is refused: {error}", owner) from None
    budget.spend(pid, b"", record)
    if record.start_ticks != _start_ticks(pid):
        return None  # left by an earlier process that had this PID; this one publishes nothing
    age = now - record.written_at
    if age > STALE_S:
        raise StacksUnavailable(
            f"the in-process stack sampler of pid {pid} last wrote {age:.0f} s ago: the job may hold Python's "
            "GIL in a long call into C, or the sampler stopped (see the job's stderr)"
        )
    return record


def _read(name: str, dir_fd: int, uid: int) -> bytes:
    """The file `name` in the record directory where it is a regular file of user `uid`, up to one byte past
    the most a record may weigh."""
    try:
        fd = os.open(name, _OPEN_FLAGS | os.O_NONBLOCK | os.O_NOCTTY, dir_fd=dir_fd)
    except OSError as error:
        if isinstance(error, FileNotFoundError | PermissionError):
            raise
        raise CorruptRecord("not a file (a symlink?)") from None
    try:
        status = os.fstat(fd)
        if not stat.S_ISREG(status.st_mode) or status.st_uid != uid:
            raise CorruptRecord("not a file of the job's own user")
        if status.st_size > agent.MAX_RECORD_BYTES:
            raise CorruptRecord(f"over {agent.MAX_RECORD_BYTES} bytes")
        chunks = []
        left = agent.MAX_RECORD_BYTES + 1
        while left > 0 and (chunk := os.read(fd, left)):
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _start_ticks(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            data = handle.read()
        return int(data[data.rindex(b")") + 2 :].split()[19])
    except (OSError, ValueError, IndexError):
        return None


def _children(process: psutil.Process) -> list[int]:
    try:
        return [child.pid for child in process.children(recursive=True)]
    except psutil.Error:
        return []


def _slices_after(record: Record, since: float) -> list[Slice]:
    """The record's slices that end within the window (a slice ending exactly at its start is outside it)."""
    return [piece for piece in record.slices if piece.end > since + TOLERANCE_S]


def _threads(record: Record, since: float) -> list[ThreadStacks]:
    """Each thread's distinct stacks over the slices in the window, summed; the main thread first."""
    table = record.frames
    counts: dict[int, dict[Stack, list[float]]] = {}
    names: dict[int, str] = {}
    for piece in _slices_after(record, since):
        for thread in piece.threads:
            names[thread.tid] = thread.name
            stacks = counts.setdefault(thread.tid, {})
            for indices, samples, running in thread.stacks:
                seen = stacks.setdefault(tuple(table[i] for i in indices), [0, 0.0])
                seen[0] += samples
                seen[1] += running
    pid = record.pid
    return [
        ThreadStacks(
            pid=pid,
            tid=tid,
            name=names[tid],
            stacks=tuple(
                StackCount(stack, int(samples), min(round(running), int(samples)))
                for stack, (samples, running) in sorted(stacks.items(), key=lambda item: -item[1][0])
            ),
        )
        for tid, stacks in sorted(counts.items(), key=lambda item: item[0] != pid)
    ]
