"""The host the GPUs sit in, read with psutil: CPU, memory, swap, disk, network and the GPU processes; and
the cgroup this process (or the job it follows) runs in (gputui.sources.host.cgroup), with the per-process facts
psutil lacks from /proc (gputui.sources.host.procfs): the container a GPU process runs in, how long it waited for a
CPU, the CPU its data-loader workers used, and the CPUs it may run on and last ran on. While the CPUs the jobs may
use are busy, it also names the processes outside the GPU jobs that use the most of them (`busiest_others`).
Their names, users and command lines are other users' text, cleaned here (gputui.foreign_text) as they are read:
once per process followed, since they do not change.

Every rate is a difference of two counter readings over the time between them. A counter that went
backwards (a reset, a wrap, a disk that was removed) gives no rate for that tick rather than a negative one;
a core's CPU times that went backwards cost that core alone its figure for the tick (see _cpu_percentages).
"""

from __future__ import annotations

import os
import time
from collections import defaultdict
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import psutil

from gputui.diagnostics.thresholds import Thresholds
from gputui.foreign_text import clean, clean_optional
from gputui.model import ContainerInfo, DistRank, HostSample, ProcSample
from gputui.sources.host import procfs
from gputui.sources.host.attribution import Attribution, Attributor
from gputui.sources.host.cgroup import CgroupReader, host_oom_kills, read_cgroup, shm_bytes
from gputui.sources.host.dist import read_dist
from gputui.sources.host.podresources.kubelet import PodNames

# Counting children scans every process on the machine (~5-40 µs each), so the counts of all GPU processes
# are refreshed together, in one scan, every CHILDREN_EVERY ticks (and for a process when it first appears).
# Thread counts, which change as rarely, are read on the same ticks, and so is which PIDs the children are.
CHILDREN_EVERY = 10
# Link speeds change only when a cable or a driver does; asking costs an ioctl per interface.
LINK_EVERY = 30
# A process's wait for a CPU is a share over an interval: measured over 5 ticks and held in between, it costs
# one /proc/PID/schedstat read per GPU process every 5 ticks rather than every tick. Where it may run and last
# ran (/proc/PID/status and stat) are read on the same ticks: a rule judges them over a window of seconds. So is
# the CPU time of its children: one /proc/PID/stat each (~4 µs), so 8 ranks of 16 workers add ~0.1 ms a tick.
# So is whose job it is (pod, Slurm job): its cgroup and environment are read once per process, and only the
# kubelet's names, which may come later, are looked up again (a dict lookup; the kubelet is asked off this path).
SCHED_EVERY = 5
# The busiest processes outside the GPU jobs: how many are named, and how long a command line is kept of each. They
# are looked for only while the CPUs the jobs may use are at least as busy as cpu_contention's threshold: a scan of
# every process (one /proc/PID/stat each, ~30 µs) every tick then, and none while the host has CPUs to spare.
OTHERS_SHOWN = 5
OTHERS_CMDLINE_CHARS = 160
_OTHERS_ATTRS = ("ppid", "name", "cpu_times", "create_time")


def rate(new: float | None, old: float | None, seconds: float) -> float | None:
    """Change per second of a cumulative counter; None when either reading or the interval is missing,
    or when the counter went backwards."""
    if new is None or old is None or seconds <= 0 or new < old:
        return None
    return (new - old) / seconds


@dataclass(slots=True)
class _Counters:
    """The cumulative system counters of one reading; None where the platform does not have one."""

    at: float
    cpu: Sequence[Any] | None
    swap: Any  # psutil's sswap
    swap_in: float | None
    swap_out: float | None
    disk_read: float | None
    disk_write: float | None
    disk_busy_ms: dict[str, float] | None
    net_rx: float | None
    net_tx: float | None


@dataclass(slots=True)
class _Tracked:
    """A GPU process followed across ticks: psutil.Process keeps the CPU time that cpu_percent compares to."""

    process: Any
    name: str = "?"
    user: str | None = None
    cmdline: str | None = None
    create_time: float | None = None
    ppid: int | None = None
    primed: bool = False
    read_bytes: float | None = None
    read_at: float = 0.0
    children: int | None = None
    child_pids: tuple[int, ...] = ()  # as of the last tick that counted them
    threads: int | None = None
    container: str | None = None  # seen from the host: the container it runs in, and its PID there
    container_pid: int | None = None
    unreadable: tuple[str, ...] = ()  # its /proc files refused to this reader, read once
    dist: DistRank | None = None  # its place in a torch.distributed job, from its environment, read once
    waited_ns: int | None = None  # time its main thread waited for a CPU, cumulative, as read at `waited_at`
    waited_at: float = 0.0
    run_queue_wait_pct: float | None = None  # over the last SCHED_EVERY ticks
    cpus_allowed: tuple[int, ...] | None = None  # as of the last SCHED_EVERY tick (or when first followed)
    last_cpu: int | None = None
    # Each child's CPU seconds and run-queue wait (ns, None unreadable) so far, by (pid, start time) so that a
    # reused PID is another process, as read at `workers_at`; and both together over the last SCHED_EVERY ticks.
    workers_read: dict[tuple[int, int], tuple[float, int | None]] | None = None
    workers_at: float = 0.0
    workers_cpu_pct: float | None = None
    workers_run_queue_wait_pct: float | None = None
    attribution: Attribution = field(
        default_factory=Attribution
    )  # as of the last SCHED_EVERY tick (or when first followed)


class HostSource:
    """Reads the host once per tick; `sample()` is given the pids of the GPU processes to look at."""

    def __init__(
        self,
        clock: Callable[[], float] = time.monotonic,
        psutil_module: ModuleType = psutil,
        root: Path = Path("/"),
        cgroup_pid: int | str | None = "self",
        pod_resources_socket: Path | None = None,
        busy_pct: float = Thresholds().host_cpu_saturated_pct,
    ):
        """`busy_pct`: how busy the CPUs the jobs may use must be for the busiest other processes to be named."""
        self._clock = clock
        self._ps = psutil_module
        self._root = root  # where /proc, /sys/fs/cgroup and /dev/shm are read: tests point it at a fake tree
        # Whose cgroup is read: this process's, or (for a monitor that follows one job) the job's; None for none,
        # where this process's group is nobody's job (an exporter in a pod or service of its own).
        self._cgroup_pid = cgroup_pid
        # The kubelet's pod-resources socket that names pods (podresources.client.default_socket() when None).
        self._pod_socket = pod_resources_socket
        self._attrib = Attributor(root)
        self._cgroup: CgroupReader | None = None
        self.container: ContainerInfo | None = None  # that process's cgroup and limits, read by open()
        self._errors: tuple[type[BaseException], ...] = (OSError, NotImplementedError, psutil_module.Error)
        # psutil reports swap-in/out as 0 on Windows, which would read as "no swapping"
        self._swap_io = not getattr(psutil_module, "WINDOWS", False)
        self._last: _Counters | None = None
        self._cpu_pct: tuple[float, ...] = ()  # the last tick's per-core busy %, held for a core read badly
        self._procs: dict[int, _Tracked] = {}
        self._tick = 0
        self._link_bytes_s: float | None = None
        self._parents: dict[int, list[int]] | None = None  # child pids per parent pid, from this tick's scan
        self._scanned = False
        self._busy_pct = busy_pct
        # Each process's CPU seconds at the last scan of every process, by (pid, start time), and when; None when
        # the tick before did not scan (the host had CPUs to spare).
        self._others_read: dict[tuple[int, float], float] | None = None
        self._others_at = 0.0
        self._others: set[int] = set()  # the PIDs named last, whose attribution the Attributor keeps

    def open(self) -> None:
        """Take the first counter reading, so the first sample already has rates and CPU percentages.

        CPU percentages come from our own per-core time deltas, not psutil.cpu_percent(): psutil keeps
        its previous reading per calling thread, and sample() runs on whichever worker thread is free.
        """
        self._tick = 0
        self._procs = {}
        self._cpu_pct = ()
        self._others_read = None
        self._last = self._read_counters()
        # Pods are named whether or not this process's own cgroup is read: the exporter's DaemonSet reads none.
        self._attrib.close()
        self._attrib = Attributor(self._root, PodNames(self._pod_socket))
        if self._cgroup_pid is None:
            return
        cgroup = read_cgroup(self._root, self._cgroup_pid)
        self.container = cgroup.info
        self._cgroup = CgroupReader(cgroup, self._root, self._clock)
        self._cgroup.sample()  # the first counters, so the first sample has rates

    @property
    def pod_names(self) -> PodNames | None:
        """The kubelet client that names pods (its `error` says why names are missing); None before open()."""
        return self._attrib.pods

    def close(self) -> None:
        self._attrib.close()
        self._procs = {}
        self._last = None
        self._cpu_pct = ()

    def sample(
        self, gpu_pids: Collection[int], timestamp: float, gpu_uuids: Mapping[int, Sequence[str]] | None = None
    ) -> HostSample:
        """`gpu_uuids`: the UUIDs of the GPUs each process uses, which tell its pod's container by the kubelet."""
        counters = self._read_counters()
        last = self._last if self._last is not None else counters
        self._last = counters
        seconds = counters.at - last.at
        self._parents, self._scanned = None, False
        if self._tick % LINK_EVERY == 0:
            self._link_bytes_s = self._read_link_speed()
        per_core, iowait, steal = _cpu_percentages(last.cpu, counters.cpu, self._cpu_pct)
        self._cpu_pct = per_core
        container, psi = self._cgroup.sample() if self._cgroup is not None else (None, None)
        memory = self._call(self._ps.virtual_memory)
        swap = counters.swap
        sample = HostSample(
            timestamp=timestamp,
            cpu_pct_per_core=per_core,
            iowait_pct=iowait,
            steal_pct=steal,
            load_avg=self._load_avg(),
            memory_used_bytes=memory.used if memory is not None else None,
            memory_total_bytes=memory.total if memory is not None else None,
            swap_used_bytes=swap.used if swap is not None else None,
            swap_total_bytes=swap.total if swap is not None else None,
            swap_in_bytes_s=rate(counters.swap_in, last.swap_in, seconds),
            swap_out_bytes_s=rate(counters.swap_out, last.swap_out, seconds),
            disk_read_bytes_s=rate(counters.disk_read, last.disk_read, seconds),
            disk_write_bytes_s=rate(counters.disk_write, last.disk_write, seconds),
            disk_busy_pct=_busiest_disk_pct(last.disk_busy_ms, counters.disk_busy_ms, seconds),
            net_rx_bytes_s=rate(counters.net_rx, last.net_rx, seconds),
            net_tx_bytes_s=rate(counters.net_tx, last.net_tx, seconds),
            net_link_bytes_s=self._link_bytes_s,
            shm_used_bytes=shm_bytes(self._root)[1],
            oom_kills=host_oom_kills(self._root),
            container=container,
            psi=psi,
            processes=self._sample_processes(gpu_pids, gpu_uuids or {}),
            busiest_others=self._busiest_others(gpu_pids) if self._busy(per_core) else self._idle_others(),
        )
        self._tick += 1
        return sample

    def _busy(self, per_core: Sequence[float]) -> bool:
        """The CPUs the jobs may use (the cgroup's cpuset, else all) are at least `busy_pct` busy this tick."""
        cpuset = self.container.cpuset_cpus if self.container is not None else None
        cores = [per_core[c] for c in cpuset if c < len(per_core)] if cpuset else list(per_core)
        return bool(cores) and sum(cores) / len(cores) >= self._busy_pct

    def _idle_others(self) -> tuple[ProcSample, ...]:
        self._others_read = None  # a rate over an idle spell would understate what the CPUs are busy with next
        self._others = set()
        return ()

    def _busiest_others(self, gpu_pids: Collection[int]) -> tuple[ProcSample, ...]:
        """The OTHERS_SHOWN processes that used the most CPU since the last tick, busiest first, leaving out the GPU
        processes, their descendants (data-loader workers) and gputui with its own (py-spy); none on the first
        busy tick, which only reads their counters."""
        now = self._clock()
        scanned = self._call(lambda: list(self._ps.process_iter(_OTHERS_ATTRS)))
        if scanned is None:
            return self._idle_others()
        parents = {p.pid: p.info.get("ppid") for p in scanned}
        readings: dict[tuple[int, float], float] = {}
        for p in scanned:
            times, started = p.info.get("cpu_times"), p.info.get("create_time")
            if times is not None and started is not None:
                readings[(p.pid, started)] = times.user + times.system
        before, before_at = self._others_read, self._others_at
        self._others_read, self._others_at = readings, now
        if before is None or now <= before_at:
            return ()
        skipped = {*gpu_pids, os.getpid()}
        used: list[tuple[float, Any]] = []
        for p in scanned:
            key = (p.pid, p.info.get("create_time"))
            if key in before and key in readings and not _descends(p.pid, skipped, parents):
                used.append((max(0.0, readings[key] - before[key]) / (now - before_at) * 100.0, p))
        used.sort(key=lambda pair: pair[0], reverse=True)
        named = tuple(self._other(p, cpu) for cpu, p in used[:OTHERS_SHOWN] if cpu > 0)
        self._others = {proc.pid for proc in named}
        return named

    def _other(self, process: Any, cpu_pct: float) -> ProcSample:
        """One of the busiest other processes: who runs it, what it is and whose job or container it belongs to."""
        pid = process.pid
        user = clean_optional(self._call(process.username))
        cmdline = self._call(process.cmdline)
        command = clean(" ".join(cmdline)) if cmdline else None
        if command is not None and len(command) > OTHERS_CMDLINE_CHARS:
            command = command[: OTHERS_CMDLINE_CHARS - 1] + "…"
        attribution = self._attrib.attribute(pid)
        return ProcSample(
            pid=pid,
            name=clean(process.info.get("name") or "?"),
            user=user or attribution.user,
            cmdline=command,
            cpu_pct=round(cpu_pct, 1),
            container=procfs.container_name(self._attrib.origin(pid).ids),
            create_time=process.info.get("create_time"),
            **attribution.sample_fields(),
        )

    def _call(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """One psutil call; None where this platform or container does not offer it."""
        try:
            return fn(*args, **kwargs)
        except self._errors:
            return None

    def _read_counters(self) -> _Counters:
        ps = self._ps
        swap = self._call(ps.swap_memory)
        disk = self._call(ps.disk_io_counters, nowrap=False)
        disks = self._call(ps.disk_io_counters, perdisk=True, nowrap=False)
        nics = self._call(ps.net_io_counters, pernic=True, nowrap=False)
        net = [counters for name, counters in (nics or {}).items() if not name.startswith("lo")]
        busy: dict[str, float] | None = None
        if disks and all(hasattr(d, "busy_time") for d in disks.values()):
            busy = {name: d.busy_time for name, d in disks.items()}
        return _Counters(
            at=self._clock(),
            cpu=self._call(ps.cpu_times, percpu=True),
            swap=swap,
            swap_in=swap.sin if swap is not None and self._swap_io else None,
            swap_out=swap.sout if swap is not None and self._swap_io else None,
            disk_read=disk.read_bytes if disk is not None else None,
            disk_write=disk.write_bytes if disk is not None else None,
            disk_busy_ms=busy,
            net_rx=sum(n.bytes_recv for n in net) if nics is not None else None,
            net_tx=sum(n.bytes_sent for n in net) if nics is not None else None,
        )

    def _load_avg(self) -> tuple[float, float, float] | None:
        load = self._call(self._ps.getloadavg)
        return (float(load[0]), float(load[1]), float(load[2])) if load is not None else None

    def _read_link_speed(self) -> float | None:
        """The fastest up, non-loopback interface, in bytes/s; None when no interface reports a speed."""
        stats = self._call(self._ps.net_if_stats) or {}
        speeds = [s.speed for name, s in stats.items() if s.isup and s.speed > 0 and not name.startswith("lo")]
        return max(speeds) * 1_000_000 / 8 if speeds else None

    def _sample_processes(
        self, gpu_pids: Collection[int], gpu_uuids: Mapping[int, Sequence[str]]
    ) -> tuple[ProcSample, ...]:
        wanted = set(gpu_pids)
        for pid in [pid for pid in self._procs if pid not in wanted]:
            del self._procs[pid]
        if self._tick % SCHED_EVERY == 0:
            self._attrib.retain(wanted | self._others)
        out = []
        for pid in sorted(wanted):
            proc = self._sample_process(pid, gpu_uuids.get(pid, ()))
            if proc is None:
                self._procs.pop(pid, None)
            else:
                out.append(proc)
        return tuple(out)

    def _sample_process(self, pid: int, gpus: Sequence[str]) -> ProcSample | None:
        """One GPU process; None when it is gone (it exited between the driver's list and this read)."""
        ps = self._ps
        try:
            tracked = self._procs.get(pid)
            if tracked is None:
                tracked = self._follow(pid, gpus)
            elif self._tick % CHILDREN_EVERY == 0:
                self._count_children(tracked)
                tracked.threads = self._denied_as_none(tracked.process.num_threads)
            process = tracked.process
            with process.oneshot():
                now = self._clock()
                cpu = self._denied_as_none(process.cpu_percent)
                cpu_pct = cpu if tracked.primed else None
                tracked.primed = cpu is not None
                io = self._denied_as_none(process.io_counters)
                read_bytes = float(io.read_bytes) if io is not None else None
                read_rate = rate(read_bytes, tracked.read_bytes, now - tracked.read_at)
                tracked.read_bytes, tracked.read_at = read_bytes, now
                memory = self._denied_as_none(process.memory_info)
                if self._tick % SCHED_EVERY == 0:
                    tracked.run_queue_wait_pct = self._run_queue_wait_pct(tracked, now)
                    self._read_workers(tracked, now)
                    self._read_placement(tracked)
                    tracked.attribution = self._attrib.attribute(pid, gpus)
                attribution = tracked.attribution
                return ProcSample(
                    pid=pid,
                    name=tracked.name,
                    user=tracked.user or attribution.user,
                    cmdline=tracked.cmdline,
                    cpu_pct=cpu_pct,
                    threads=tracked.threads,
                    children=tracked.children,
                    workers_cpu_pct=tracked.workers_cpu_pct,
                    workers_run_queue_wait_pct=tracked.workers_run_queue_wait_pct,
                    read_bytes_s=read_rate,
                    rss_bytes=memory.rss if memory is not None else None,
                    state=self._denied_as_none(process.status),
                    run_queue_wait_pct=tracked.run_queue_wait_pct,
                    container=tracked.container,
                    container_pid=tracked.container_pid,
                    cpus_allowed=tracked.cpus_allowed,
                    last_cpu=tracked.last_cpu,
                    unreadable=tracked.unreadable,
                    create_time=tracked.create_time,
                    ppid=tracked.ppid,
                    dist=tracked.dist,
                    **attribution.sample_fields(),
                )
        except ps.NoSuchProcess:
            return None
        except ps.AccessDenied:
            return ProcSample(pid=pid, name="?")

    def _follow(self, pid: int, gpus: Sequence[str]) -> _Tracked:
        """Start following a process: what it is (read once: it does not change), its threads and children,
        and whose job it is."""
        process = self._ps.Process(pid)
        origin = self._attrib.origin(pid)
        with process.oneshot():
            cmdline = self._denied_as_none(process.cmdline)
            tracked = _Tracked(
                process=process,
                name=clean(self._denied_as_none(process.name) or "?"),
                user=clean_optional(self._denied_as_none(process.username)),
                cmdline=clean(" ".join(cmdline)) if cmdline else None,
                create_time=self._denied_as_none(process.create_time),
                ppid=self._denied_as_none(process.ppid),
                threads=self._denied_as_none(process.num_threads),
                container=procfs.container_name(origin.ids),
                container_pid=procfs.inner_pid(pid, self._root),
                unreadable=procfs.unreadable(pid, self._root),
                attribution=self._attrib.attribute(pid, gpus),
            )
        tracked.dist = read_dist(pid, tracked.ppid, self._root)
        self._count_children(tracked)
        self._read_placement(tracked)
        self._procs[pid] = tracked
        return tracked

    def _count_children(self, tracked: _Tracked) -> None:
        """Its direct children and their PIDs, from one scan of all processes per tick shared by every GPU process.

        psutil's `_ppid_map` is the scan its own Process.children() makes; where it is missing or fails,
        each process asks psutil.children() itself.
        """
        if not self._scanned:
            self._scanned = True
            ppid_map = getattr(self._ps, "_ppid_map", None)
            parents = self._call(ppid_map) if ppid_map is not None else None
            if parents is None:
                self._parents = None
            else:
                self._parents = defaultdict(list)
                for child, parent in parents.items():
                    self._parents[parent].append(child)
        if self._parents is not None:
            pids = self._parents.get(tracked.process.pid, [])
            tracked.children, tracked.child_pids = len(pids), tuple(pids)
            return
        children = self._denied_as_none(tracked.process.children)
        tracked.children = len(children) if children is not None else None
        tracked.child_pids = tuple(child.pid for child in children or ())

    def _run_queue_wait_pct(self, tracked: _Tracked, now: float) -> float | None:
        """Share of the interval the main thread was runnable but waiting for a CPU (from /proc/PID/schedstat):
        near 100% minus its CPU share, it is CPU-bound and short of CPUs."""
        sched = procfs.schedstat(tracked.process.pid, self._root)
        waited = sched[1] if sched is not None else None
        before, before_at = tracked.waited_ns, tracked.waited_at
        tracked.waited_ns, tracked.waited_at = waited, now
        wait_ns = rate(waited, before, now - before_at)  # ns waited per second; None on a reset
        return None if wait_ns is None else min(100.0, 100.0 * wait_ns / 1e9)

    def _read_workers(self, tracked: _Tracked, now: float) -> None:
        """The CPU its children used together since the last reading (100 = one core), whether the data-loader
        workers keep up; and how long they waited on a run queue together (100 = one of them all the time), what
        they wanted of a CPU and did not get. A child that exited since drops out; one that is new counts from
        its next reading. Their waits are unknown when any child's /proc/PID/schedstat cannot be read."""
        readings = {}
        for pid in tracked.child_pids:
            used = procfs.cpu_seconds(pid, self._root)
            if used is not None:
                sched = procfs.schedstat(pid, self._root)
                readings[(pid, used[0])] = (used[1], None if sched is None else sched[1])
        before, before_at = tracked.workers_read, tracked.workers_at
        tracked.workers_read, tracked.workers_at = readings, now
        tracked.workers_cpu_pct = tracked.workers_run_queue_wait_pct = None
        if before is None or now <= before_at or tracked.children is None:
            return
        if tracked.children == 0:  # no workers: the main process loads the data itself
            tracked.workers_cpu_pct = tracked.workers_run_queue_wait_pct = 0.0
            return
        both = [key for key in readings if key in before]
        if not both:
            return  # children, but none read twice yet: unknown, not idle
        seconds = now - before_at
        tracked.workers_cpu_pct = 100.0 * sum(max(0.0, readings[key][0] - before[key][0]) for key in both) / seconds
        waits = [(readings[key][1], before[key][1]) for key in both]
        if all(new is not None and old is not None for new, old in waits):
            waited_ns = sum(max(0, new - old) for new, old in waits if new is not None and old is not None)
            tracked.workers_run_queue_wait_pct = 100.0 * waited_ns / 1e9 / seconds

    def _read_placement(self, tracked: _Tracked) -> None:
        """Where it may run and where it last ran: the CPUs numa_mismatch holds against its GPU's."""
        pid = tracked.process.pid
        tracked.cpus_allowed = procfs.cpus_allowed(pid, self._root)
        tracked.last_cpu = procfs.last_cpu(pid, self._root)

    def _denied_as_none(self, fn: Callable[[], Any]) -> Any:
        """A process field another user's process may hide; NoSuchProcess still propagates."""
        try:
            return fn()
        except (self._ps.AccessDenied, NotImplementedError):
            return None


def _descends(pid: int, ancestors: Collection[int], parents: Mapping[int, int | None]) -> bool:
    """`pid` is one of `ancestors` or a descendant of one, by the parent PIDs of one scan."""
    seen: set[int] = set()
    current: int | None = pid
    while current is not None and current not in seen:
        if current in ancestors:
            return True
        seen.add(current)
        current = parents.get(current)
    return False


def _cpu_percentages(
    old: Sequence[Any] | None, new: Sequence[Any] | None, previous: tuple[float, ...]
) -> tuple[tuple[float, ...], float | None, float | None]:
    """Per-core busy %, and iowait % and steal % of the cores read well, from two per-core cpu_times readings;
    `previous` is the last tick's per-core figures.

    Busy time follows psutil.cpu_percent (and its rounding to 0.1 %): the non-idle fields over those plus idle
    and iowait, guest time (already counted in user time on Linux) left out. proc(5): iowait is not reliable
    and can go down, and on some kernels idle can go backwards. Idle and iowait are taken together, so time the
    kernel moved from one to the other costs nothing, and a fall in iowait counts as none in the iowait share.
    A core whose idle or busy time still went backwards, or that saw no time pass, keeps its previous figure
    for this tick (the mean of the cores read well when it has none), and the host's iowait and steal come from
    the other cores: one core's counter costs that core one tick, never the host or the core count. Only a
    change in the number of cores (CPU hotplug) makes the tick unknown.
    """
    if old is None or new is None or len(old) != len(new) or not new:
        return (), None, None
    per_core: list[float | None] = []
    total_all = iowait_all = steal_all = 0.0
    for before, after in zip(old, new, strict=True):
        idle = _idle_time(after) - _idle_time(before)
        busy = _total_time(after) - _total_time(before) - idle
        if busy < 0 or idle < 0 or busy + idle <= 0:
            per_core.append(None)
            continue
        per_core.append(round(busy / (busy + idle) * 100.0, 1))
        total_all += busy + idle
        iowait_all += max(0.0, getattr(after, "iowait", 0.0) - getattr(before, "iowait", 0.0))
        steal_all += max(0.0, getattr(after, "steal", 0.0) - getattr(before, "steal", 0.0))
    read = [pct for pct in per_core if pct is not None]
    if len(previous) == len(per_core):
        fill = previous
    elif read:
        fill = (round(sum(read) / len(read), 1),) * len(per_core)
    else:
        return (), None, None
    filled = tuple(fill[core] if pct is None else pct for core, pct in enumerate(per_core))
    has_iowait = hasattr(new[0], "iowait")
    has_steal = hasattr(new[0], "steal")
    return (
        filled,
        round(iowait_all / total_all * 100.0, 1) if has_iowait and total_all else None,
        round(steal_all / total_all * 100.0, 1) if has_steal and total_all else None,
    )


def _total_time(times: Any) -> float:
    return float(sum(times)) - getattr(times, "guest", 0.0) - getattr(times, "guest_nice", 0.0)


def _idle_time(times: Any) -> float:
    return float(times.idle) + getattr(times, "iowait", 0.0)


def _busiest_disk_pct(old: dict[str, float] | None, new: dict[str, float] | None, seconds: float) -> float | None:
    """The busy % of the busiest disk: one saturated disk starves a job even when the others idle."""
    if old is None or new is None or seconds <= 0:
        return None
    busiest: float | None = None
    for name, busy_ms in new.items():
        busy_rate = rate(busy_ms, old.get(name), seconds)
        if busy_rate is not None:
            pct = min(busy_rate / 10.0, 100.0)  # ms busy per second / 1000 ms * 100 %
            busiest = pct if busiest is None else max(busiest, pct)
    return busiest
