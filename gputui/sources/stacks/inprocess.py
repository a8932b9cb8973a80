"""The in-process reader: the stacks a job run under `gputui run` publishes itself, found by its PID.

The sampler (agent/gputui_stacks_agent.py, standard library only) writes one record per process: the job, each
DataLoader worker forked from it, each rank torchrun starts. Where: `$XDG_RUNTIME_DIR/gputui-stacks/<pid>.json`
with the job's own XDG_RUNTIME_DIR, else `/dev/shm/gputui-stacks-<uid>/<pid>.json`; the directory 0700 and the
file 0600, both the job's user's; replaced whole about once a second (written beside it, then renamed), removed
when the process exits. Record format, version 1 (one JSON object):

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
import json
import os
import stat
import time
from typing import Any

import psutil

from gputui.agent import gputui_stacks_agent as agent
from gputui.sources.stacks.samples import Frame, Stack, StackCount, StacksUnavailable, StackWindow, ThreadStacks

# The sampler writes about once a second: a record older than this is not being kept up to date.
STALE_S = 5.0
MAX_RECORD_BYTES = 64 << 20
TOLERANCE_S = 1e-3


class CorruptRecord(ValueError):
    """A record that is not what the sampler writes."""


def read_published(pid: int, window_s: float) -> StackWindow | None:
    """The last `window_s` seconds that `pid` and its child processes (its DataLoader workers) published about
    their stacks; None where `pid` publishes nothing (not run under `gputui run`, or gone).

    Raises StacksUnavailable where it publishes but the record cannot be used: another user's that this user may
    not read, one that is corrupt, one that its sampler stopped updating."""
    try:
        process = psutil.Process(pid)
        uid = process.uids().real
    except psutil.Error:
        return None
    directories = _directories(process, uid)
    main = _load(pid, directories, uid)
    if main is None:
        return None
    try:
        end = float(main["window_end"])
        threads = _threads(main, end - window_s)
        start = min((float(piece["start"]) for piece in _slices_after(main, end - window_s)), default=end)
        rank = main.get("rank")
    except (KeyError, TypeError, ValueError, IndexError) as error:
        raise _corrupt(pid, error) from None
    for child in _children(process):
        with contextlib.suppress(StacksUnavailable, KeyError, TypeError, ValueError, IndexError):
            record = _load(child, directories, uid)
            if record is not None:
                threads += _threads(record, end - window_s)
    return StackWindow(
        source="in-process",
        pid=pid,
        taken_at=end,
        window_s=end - start,
        threads=tuple(threads),
        rank=rank if isinstance(rank, int) else None,
    )


def _directories(process: psutil.Process, uid: int) -> tuple[str, ...]:
    """Where the sampler in `process` publishes: it chose by its own environment and user, not the reader's."""
    try:
        runtime = process.environ().get("XDG_RUNTIME_DIR")
    except psutil.Error:  # another user's: the usual place of that user's runtime directory
        runtime = f"/run/user/{uid}"
    preferred = agent.record_dir({"XDG_RUNTIME_DIR": runtime} if runtime else {}, uid)
    return tuple(dict.fromkeys((preferred, agent.fallback_dir(uid))))


def _load(pid: int, directories: tuple[str, ...], uid: int) -> dict[str, Any] | None:
    """The record of `pid` checked to be its own and kept up to date; None where it publishes none."""
    refused = []
    for directory in directories:
        path = os.path.join(directory, f"{pid}.json")
        try:
            data = _read(path, uid)
        except FileNotFoundError:
            continue
        except PermissionError:
            if _exists(path):
                refused.append(directory)
            continue
        except OSError as error:
            raise StacksUnavailable(f"the stack record of pid {pid} ({path}) cannot be read: {error}") from None
        try:
            record = _parse(data, pid)
        except CorruptRecord as error:
            raise _corrupt(pid, error) from None
        if record["start_ticks"] != _start_ticks(pid):
            return None  # left by an earlier process that had this PID; this one publishes nothing
        age = time.time() - float(record["written_at"])
        if age > STALE_S:
            raise StacksUnavailable(
                f"the in-process stack sampler of pid {pid} last wrote {age:.0f} s ago: the job may hold Python's "
                "GIL in a long call into C, or the sampler stopped (see the job's stderr)"
            )
        return record
    if refused:
        who = "root" if uid == 0 else f"uid {uid} or as root"
        raise StacksUnavailable(
            f"pid {pid} runs as uid {uid}, whose stack records ({', '.join(refused)}) only that user and root may "
            f"read: run gputui as {who}"
        )
    return None


def _exists(path: str) -> bool:
    """Whether a file this reader may not open is there at all: a folder it may not search (another user's
    0700 folder, which may hold nothing of this job's) says nothing either way, and counts as no record."""
    try:
        os.stat(path)
    except OSError:
        return False
    return True


def _read(path: str, uid: int) -> bytes:
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    try:
        status = os.fstat(fd)
        if not stat.S_ISREG(status.st_mode) or status.st_uid != uid:
            raise CorruptRecord("not a file of the job's own user")
        return os.read(fd, MAX_RECORD_BYTES)
    except CorruptRecord as error:
        raise StacksUnavailable(f"{path} is not a stack record: {error}") from None
    finally:
        os.close(fd)


def _parse(data: bytes, pid: int) -> dict[str, Any]:
    try:
        record = json.loads(data)
    except ValueError as error:
        raise CorruptRecord(f"not JSON ({error})") from None
    if not isinstance(record, dict) or record.get("format") != agent.FORMAT:
        raise CorruptRecord("not a gputui stack record")
    if record.get("version") != agent.VERSION:
        raise CorruptRecord(f"version {record.get('version')!r}, where this gputui reads {agent.VERSION}")
    if record.get("pid") != pid or not isinstance(record.get("start_ticks"), int):
        raise CorruptRecord(f"it names pid {record.get('pid')!r}")
    if not all(isinstance(record.get(name), (int, float)) for name in ("window_end", "written_at")):
        raise CorruptRecord("no window's end, or no time written")
    return record


def _corrupt(pid: int, error: Exception) -> StacksUnavailable:
    why = error if isinstance(error, CorruptRecord) else f"{type(error).__name__}: {error}"
    return StacksUnavailable(f"the stack record of pid {pid} is corrupt ({why}); it is rewritten every second")


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


def _slices_after(record: dict[str, Any], since: float) -> list[dict[str, Any]]:
    """The record's slices that end within the window (a slice ending exactly at its start is outside it)."""
    return [piece for piece in record["slices"] if float(piece["end"]) > since + TOLERANCE_S]


def _threads(record: dict[str, Any], since: float) -> list[ThreadStacks]:
    """Each thread's distinct stacks over the slices in the window, summed; the main thread first."""
    table = [
        Frame(str(function), str(file), line if isinstance(line, int) else None)
        for function, file, line in record["frames"]
    ]
    counts: dict[int, dict[Stack, list[float]]] = {}
    names: dict[int, str] = {}
    for piece in _slices_after(record, since):
        for thread in piece["threads"]:
            tid = int(thread["tid"])
            names[tid] = str(thread["name"])
            stacks = counts.setdefault(tid, {})
            for indices, samples, running in thread["stacks"]:
                seen = stacks.setdefault(tuple(table[i] for i in indices), [0, 0.0])
                seen[0] += int(samples)
                seen[1] += float(running)
    pid = int(record["pid"])
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
