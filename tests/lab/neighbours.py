"""What the machine did besides a lab job while it was followed: the other processes' CPU and disk traffic.

A lab case judges gputui's diagnosis of the job it stages, so it needs the machine as it stages it: a core
spare, a quiet disk. It measures them over the time the job was followed, and skips with the figures where they
did not hold: a core that other work took is not the job's problem to diagnose, however right gputui is to
name it. The busiest other processes are named (by CPU, and by what they read and wrote), so a process an earlier
test left behind shows for what it is; a case skips only where it can name one (tests/lab/jobs.py).

The lab's own sampling is gputui's work, not a neighbour: the thread that follows the job (its CPU time is
measured apart, time.thread_time) and the stack sampler gputui runs as its child (py-spy, which runs as this
process's child here: the CPU of the py-spy processes under this one, and of every child it has reaped) are left
out; whatever else the test process does meanwhile (threads an earlier test left running) is counted like any
other process.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from dataclasses import dataclass

import psutil

# The least CPU a process must have used to be named among the busiest (cores, over the run), and the least it
# must have read and written to be named among those that kept the disks busy (MB/s).
NAMED_CORES = 0.05
NAMED_DISK_MB_S = 1.0
# The stack sampler gputui starts (its process name).
STACK_SAMPLER = "py-spy"


@dataclass(frozen=True)
class Usage:
    """Cumulative counters at one moment, read by the thread that samples the job."""

    at: float  # time.monotonic()
    busy_s: float  # every CPU's busy seconds since boot (/proc/stat)
    disk_bytes: int | None  # read from and written to the disks since boot; None where they cannot be read
    job_cpu_s: float  # the job's processes (its main process, its workers and the workers it has reaped)
    job_io_bytes: int  # what the job's processes read from and wrote to storage (/proc/PID/io)
    sampler_s: float  # the CPU time of the thread that reads this
    stacks_s: float  # the stack sampler's: the py-spy processes under this one, and this one's reaped children
    # (pid, start time) -> (who, CPU seconds, bytes read from and written to storage): neither the job's nor the
    # stack sampler's
    processes: Mapping[tuple[int, float], tuple[str, float, int]]


def _busy_s() -> float:
    times = psutil.cpu_times()
    return sum(getattr(times, name, 0.0) for name in ("user", "nice", "system", "irq", "softirq", "steal"))


def _who(info: Mapping[str, object]) -> str:
    pid = info["pid"]
    if pid == os.getpid():
        return f"this test run (pid {pid}), the lab's sampling aside"
    cmdline = info.get("cmdline")
    command = " ".join(cmdline) if isinstance(cmdline, list) and cmdline else str(info.get("name") or "?")
    return f"pid {pid} ({command[:60]})"


def usage(job_pid: int | None) -> Usage:
    """The counters now; the job is `job_pid` and every process under it (None: no job yet)."""
    sampler_s, busy_s = time.thread_time(), _busy_s()
    disk = psutil.disk_io_counters()
    infos = [p.info for p in psutil.process_iter(["pid", "ppid", "name", "cmdline", "cpu_times", "create_time"])]
    below: dict[int, list[int]] = {}
    for info in infos:
        below.setdefault(info["ppid"], []).append(info["pid"])
    job = _tree(below, job_pid)
    ours = _tree(below, os.getpid()) - job
    reaped = psutil.Process().cpu_times()
    stacks_s = reaped.children_user + reaped.children_system
    job_cpu_s, job_io, processes = 0.0, 0, {}
    for info in infos:
        times = info["cpu_times"]
        if times is None:
            continue
        spent = times.user + times.system
        if info["pid"] in ours and info["name"] == STACK_SAMPLER:
            stacks_s += spent
            continue
        if info["pid"] not in job:
            processes[(info["pid"], info["create_time"])] = (_who(info), spent, _io_bytes(info["pid"]))
            continue
        job_cpu_s += spent + (times.children_user + times.children_system if info["pid"] == job_pid else 0.0)
        job_io += _io_bytes(info["pid"])
    return Usage(
        at=time.monotonic(),
        busy_s=busy_s,
        disk_bytes=None if disk is None else disk.read_bytes + disk.write_bytes,
        job_cpu_s=job_cpu_s,
        job_io_bytes=job_io,
        sampler_s=sampler_s,
        stacks_s=stacks_s,
        processes=processes,
    )


def _io_bytes(pid: int) -> int:
    """What a process read from and wrote to storage (/proc/PID/io); 0 where it cannot be read (gone, a kernel
    thread, no I/O accounting)."""
    try:
        io = psutil.Process(pid).io_counters()
    except (psutil.Error, AttributeError):
        return 0
    return int(io.read_bytes + io.write_bytes)


def _tree(below: Mapping[int, list[int]], root: int | None) -> set[int]:
    """`root` and every process under it (none for None)."""
    tree: set[int] = set()
    todo = [] if root is None else [root]
    while todo:
        pid = todo.pop()
        if pid not in tree:
            tree.add(pid)
            todo += below.get(pid, [])
    return tree


@dataclass(frozen=True)
class Neighbours:
    """What the machine did besides the job and the lab's sampling over a run, in cores (a core's seconds per
    second) and MB/s."""

    seconds: float
    cpus: int
    others_cores: float
    job_cores: float
    sampler_cores: float  # the lab's sampling thread and the stack sampler
    stacks_cores: float  # the stack sampler alone
    others_disk_mb_s: float | None  # None: the disks' counters cannot be read
    busiest: tuple[tuple[str, float], ...]  # the other processes that used most CPU, with their cores
    staged_cores: float = 0.0  # the neighbours the case started on purpose (tests/lab/contention.py), not others
    # the other processes that read and wrote most, with their MB/s (a page written back later is its writer's)
    busiest_disk: tuple[tuple[str, float], ...] = ()

    def describe_cpu(self) -> str:
        named = (
            "; ".join(f"{who} {cores:.2f}" for who, cores in self.busiest)
            or f"no process there throughout used {NAMED_CORES:g} of a CPU"
        )
        share = 100.0 * self.others_cores / self.cpus if self.cpus else 0.0
        return (
            f"other processes kept {self.others_cores:.2f} of this machine's {self.cpus} CPUs busy ({share:.0f}%)"
            f" over {self.seconds:.0f} s (the busiest: {named})"
        )

    def describe_disk(self) -> str:
        named = (
            "; ".join(f"{who} {mb_s:.1f} MB/s" for who, mb_s in self.busiest_disk)
            or f"no process there throughout read or wrote {NAMED_DISK_MB_S:g} MB/s"
        )
        return (
            f"other processes moved {self.others_disk_mb_s or 0.0:.1f} MB/s on the disks over {self.seconds:.0f} s"
            + (f" (the busiest: {named})")
        )


def between(start: Usage, end: Usage, staged: frozenset[int] = frozenset()) -> Neighbours:
    """What happened from `start` to `end`; the processes `staged` are the case's own neighbours, counted apart."""
    seconds = max(end.at - start.at, 1e-9)
    job_s, thread_s = end.job_cpu_s - start.job_cpu_s, end.sampler_s - start.sampler_s
    stacks_s = end.stacks_s - start.stacks_s
    staged_s = sum(
        cpu_s - start.processes.get(key, (who, 0.0, 0))[1]
        for key, (who, cpu_s, _) in end.processes.items()
        if key[0] in staged
    )
    others_s = end.busy_s - start.busy_s - job_s - thread_s - stacks_s - staged_s
    disk_mb_s = None
    if start.disk_bytes is not None and end.disk_bytes is not None:
        others_bytes = end.disk_bytes - start.disk_bytes - (end.job_io_bytes - start.job_io_bytes)
        disk_mb_s = max(0.0, others_bytes) / seconds / 1e6
    spent: list[tuple[str, float]] = []
    moved: list[tuple[str, float]] = []
    for key, (who, cpu_s, io_bytes) in end.processes.items():
        if key[0] in staged:
            continue
        _, cpu_before, io_before = start.processes.get(key, (who, 0.0, 0))
        used = cpu_s - cpu_before
        if key[0] == os.getpid():
            used -= thread_s
        if used / seconds >= NAMED_CORES:
            spent.append((who, used / seconds))
        if (io_bytes - io_before) / seconds / 1e6 >= NAMED_DISK_MB_S:
            moved.append((who, (io_bytes - io_before) / seconds / 1e6))
    return Neighbours(
        seconds=seconds,
        cpus=os.cpu_count() or 1,
        others_cores=max(0.0, others_s / seconds),
        job_cores=job_s / seconds,
        sampler_cores=(thread_s + stacks_s) / seconds,
        stacks_cores=stacks_s / seconds,
        others_disk_mb_s=disk_mb_s,
        busiest=tuple(sorted(spent, key=lambda pair: -pair[1])[:3]),
        staged_cores=staged_s / seconds,
        busiest_disk=tuple(sorted(moved, key=lambda pair: -pair[1])[:3]),
    )
