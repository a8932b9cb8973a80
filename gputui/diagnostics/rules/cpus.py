"""The CPUs the GPU jobs may use, measured once per window for the rules that judge them (starvation, the
container's), in cores: the host's, a cpuset's or a CFS quota's, how many were busy, and how much of that the
jobs themselves used (main processes and data-loader workers). Inside a cgroup the host's figures are not what
a job may use (FACTS: containers)."""

from __future__ import annotations

from dataclasses import dataclass

from gputui.diagnostics.rules.base import Window
from gputui.diagnostics.thresholds import Thresholds


@dataclass(frozen=True, slots=True)
class Cpus:
    """The CPUs the GPU jobs may use over the window and how many of them were busy, in cores."""

    usable: float | None
    used: float | None
    quota: float | None  # the quota's cores, where one binds
    quota_full: bool  # the quota ran out: spent, or the kernel throttled the group in many periods
    own: float  # cores the GPU jobs' main processes and data-loader workers used
    waiting: bool  # runnable tasks waited for a CPU much of the time (PSI cpu "some")

    @property
    def spare(self) -> float | None:
        return None if self.usable is None or self.used is None else max(0.0, self.usable - self.used)

    def saturated(self, th: Thresholds) -> bool:
        limit = th.host_cpu_saturated_pct / 100
        return (
            self.quota_full
            or self.waiting
            or (self.usable is not None and self.used is not None and self.used >= limit * self.usable)
        )


def job_cpus(w: Window, th: Thresholds) -> Cpus:
    """Measured by the first rule that asks in a tick, shared by the others."""

    def measure() -> Cpus:
        busy_pct, cores = usable_cpu(w)
        limits = w.latest.system.container
        quota = limits.cpu_quota_cores if limits else None
        usable: float | None = float(cores) if cores else None
        used = None if busy_pct is None or not cores else busy_pct / 100 * cores
        quota_full = False
        if quota is not None and (usable is None or quota <= usable):
            spent = w.host_mean("container.cpu_pct_of_quota")
            throttled = w.host_mean("container.cpu_throttled_pct")
            usable, used = quota, None if spent is None else spent / 100 * quota
            quota_full = (spent is not None and spent >= th.host_cpu_saturated_pct) or (
                throttled is not None and throttled >= th.cpu_throttled_pct
            )
        waiting = w.host_mean("psi.cpu_some_pct")
        return Cpus(
            usable, used, quota, quota_full, own_cores(w), waiting is not None and waiting >= th.psi_cpu_some_pct
        )

    return w.shared("cpus", measure)


def job_count(w: Window) -> int:
    """The GPU jobs sharing these CPUs (their compute processes), at least one."""
    return w.shared("jobs_count", lambda: max(1, len({pid for g in w.gpus() for pid in w.pids(g)})))


def workers_that_fit(w: Window, th: Thresholds) -> int | None:
    """The data-loader workers per job that fit the CPUs the jobs may use (the quota, the cpuset, else the host's),
    shared by the jobs here, less one CPU for each job's main process, at least one; None when the CPUs are not
    known. The one num_workers number any advice gives (diagnostics/figures.py): two findings about the same CPUs
    never advise two."""
    usable = job_cpus(w, th).usable
    return None if usable is None else max(1, int(usable / job_count(w)) - 1)


@dataclass(frozen=True, slots=True)
class Contention:
    """Other processes take the CPUs the GPU jobs want: how busy those CPUs were, and with whose work."""

    busy_pct: float  # the CPUs' mean busy % over the window
    cores: int
    others: float  # cores other processes used
    waited: float | None  # cores' worth of time the jobs' processes waited on a run queue; None where not read


def contention(w: Window, th: Thresholds) -> Contention | None:
    """The CPUs the jobs may run on are saturated and others take a real part of them: a quarter where the jobs'
    processes are measured waiting for a CPU (runnable, not running: they want what others hold), half where
    those waits are not read. Inside a cgroup with a cpuset those are the cpuset's CPUs."""

    def measure() -> Contention | None:
        busy_pct, cores = usable_cpu(w)
        if busy_pct is None or not cores or busy_pct < th.host_cpu_saturated_pct:
            return None
        used = busy_pct * cores / 100
        others = max(0.0, used - own_cores(w))
        waited = _jobs_waited(w)
        wanting = waited is not None and waited >= th.contention_wait_cores
        share = th.contention_others_share if wanting else 0.5
        return Contention(busy_pct, cores, others, waited) if others >= share * used else None

    return w.shared("contention", measure)


def _jobs_waited(w: Window) -> float | None:
    """Cores' worth of time the GPU jobs' main processes and data-loader workers waited on a run queue."""
    total = 0.0
    for pid in {pid for g in w.gpus() for pid in w.pids(g)}:
        waits = [w.proc_mean(pid, key) for key in ("run_queue_wait_pct", "workers_run_queue_wait_pct")]
        if None in waits:
            return None
        total += sum(v or 0.0 for v in waits)
    return total / 100


def own_cores(w: Window) -> float:
    """Cores the GPU jobs used, main processes and their data-loader workers together, over the window."""
    pids = {pid for g in w.gpus() for pid in w.pids(g)}
    total = sum((w.proc_mean(pid, "cpu_pct") or 0.0) + (w.proc_mean(pid, "workers_cpu_pct") or 0.0) for pid in pids)
    return total / 100


def usable_cpu(w: Window) -> tuple[float | None, int]:
    """Mean busy % over the window of the CPUs this machine's jobs may use, and how many there are."""
    limits = w.latest.system.container
    cpuset = limits.cpuset_cpus if limits is not None else None
    cores = len(w.host.cpu_pct_per_core)
    if not cpuset or len(cpuset) >= cores:
        return w.host_mean("cpu_pct"), cores

    def busy() -> float | None:
        readings = [
            sum(per_core[c] for c in cpuset if c < len(per_core)) / len(cpuset)
            for per_core in (snap.host.cpu_pct_per_core for snap in w.snapshots)
            if per_core
        ]
        return sum(readings) / len(readings) if readings else None

    return w.shared("cpuset_cpu", busy), len(cpuset)
