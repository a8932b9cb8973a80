"""The cgroup a process runs in (this one, or another by PID): where its files are, its limits (read once) and
its counters (each sample).

Inside a container psutil and `os.cpu_count()` report the host; the kernel enforces the cgroup's limits. The
group is found through /proc/PID/cgroup and /proc/self/mountinfo (kernel Documentation/filesystems/proc.rst),
for cgroup v1 (a hierarchy per controller: cpu, cpuacct, cpuset, memory, possibly co-mounted) and v2 (one
tree). Inside a cgroup namespace the group reads `/` and the mount's root is the group itself. Another process's
group is read through this process's mounts: the kernel writes /proc/PID/cgroup relative to the reader's cgroup
namespace, and its files are opened from here.

File formats: Documentation/admin-guide/cgroup-v2.rst (cpu.max, cpu.stat, cpuset.cpus.effective, memory.max,
memory.current, memory.events, *.pressure), admin-guide/cgroup-v1/{cpuacct,cpusets,memory}.rst and
scheduler/sched-bwc.rst (cpu.cfs_quota_us, cpu.cfs_period_us, cpu.stat), accounting/psi.rst. Every file that
is missing or unreadable gives None, never an error; nothing is spawned and nothing needs root. All paths are
read under `root`, so tests point it at a fake tree.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from gputui.model import ContainerInfo, ContainerSample, PsiSample, parse_cpus

# cgroup v1 writes "no limit" as a huge page-rounded number (9223372036854771712), not "max".
_V1_UNLIMITED = 1 << 62
_RUNTIME_MARKS = (
    ("kubepods", "kubernetes"),
    ("libpod", "podman"),
    ("docker", "docker"),
    ("containerd", "containerd"),
    ("lxc", "lxc"),
)


@dataclass(frozen=True, slots=True)
class CgroupDirs:
    """The directories holding this group's files: one per v1 controller, or the v2 group for all."""

    version: int | None
    cpu: Path | None = None  # the group whose CPU quota binds: its cpu.stat counts the throttling
    cpuacct: Path | None = None  # v1 only: cpuacct.usage
    cpuset: Path | None = None
    memory: Path | None = None
    pressure: Path | None = None  # v2 only: the group's *.pressure files


@dataclass(frozen=True, slots=True)
class _Mount:
    root: str
    point: str
    fstype: str
    options: frozenset[str]


def read_text(path: Path | str) -> str | None:
    """A small kernel file's text; None when missing or unreadable. Plain os.open and os.read: these files are
    read every tick, and even a binary-mode open() costs about as much again as the read (5 µs against 3). Bytes
    that are not UTF-8 read as U+FFFD: /proc/PID/stat and status hold the name a process's owner chose, which must
    not hide the numbers after it."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        chunks = [os.read(fd, 65536)]
        while chunks[-1]:  # a kernel file has no size to ask: read until it ends
            chunks.append(os.read(fd, 65536))
        return b"".join(chunks).decode(errors="replace")
    except OSError:
        return None
    finally:
        os.close(fd)


def _int(text: str | None) -> int | None:
    try:
        return int(text.strip()) if text is not None else None
    except ValueError:
        return None


def keyed(text: str | None) -> dict[str, int]:
    """`key value` lines (cpu.stat, memory.events, memory.oom_control, /proc/vmstat) as a dict of ints."""
    out: dict[str, int] = {}
    for line in (text or "").splitlines():
        key, _, value = line.partition(" ")
        number = _int(value)
        if number is not None:
            out[key] = number
    return out


def _groups(text: str | None) -> dict[str, str]:
    """/proc/self/cgroup -> {controller: group path}; the v2 group under the key ""."""
    out: dict[str, str] = {}
    for line in (text or "").splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, controllers, path = parts
        if not controllers:
            out[""] = path
        for controller in controllers.split(","):
            if controller:
                out[controller.removeprefix("name=")] = path
    return out


def _mounts(text: str | None) -> list[_Mount]:
    """cgroup and cgroup2 mounts of /proc/self/mountinfo: root, mount point, type and super options."""
    out: list[_Mount] = []
    for line in (text or "").splitlines():
        left, sep, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if not sep or len(fields) < 5 or len(tail) < 3 or tail[0] not in ("cgroup", "cgroup2"):
            continue
        out.append(_Mount(fields[3], fields[4], tail[0], frozenset(tail[2].split(","))))
    return out


def _group_dir(root: Path, mount: _Mount, group: str) -> Path | None:
    """The directory of `group` under `mount`, as seen from this mount namespace."""
    base = root / mount.point.lstrip("/")
    if group == mount.root or (mount.root != "/" and not group.startswith(mount.root.rstrip("/") + "/")):
        # A cgroup namespace (or a container's private mount) shows its own group as the mount's root.
        return base if base.is_dir() else None
    relative = group[len(mount.root.rstrip("/")) :].lstrip("/") if mount.root != "/" else group.lstrip("/")
    path = base / relative
    return path if path.is_dir() else (base if base.is_dir() else None)


def locate(root: Path = Path("/"), groups_text: str | None = None, pid: int | str = "self") -> CgroupDirs:
    """Where the cgroup files of process `pid` (default: this one) are; version None when /proc/PID/cgroup cannot
    be read.

    `groups_text` is that file's text when the caller has read it already."""
    if groups_text is None:
        groups_text = read_text(root / f"proc/{pid}/cgroup")
    groups = _groups(groups_text)
    if not groups:
        return CgroupDirs(None)
    mounts = _mounts(read_text(root / "proc/self/mountinfo"))

    def v1(controller: str) -> Path | None:
        if controller not in groups:
            return None
        mount = next((m for m in mounts if m.fstype == "cgroup" and controller in m.options), None)
        return _group_dir(root, mount, groups[controller]) if mount else None

    if any(c in groups for c in ("cpu", "memory", "cpuset", "cpuacct")):
        return CgroupDirs(1, cpu=v1("cpu"), cpuacct=v1("cpuacct"), cpuset=v1("cpuset"), memory=v1("memory"))
    unified = next((m for m in mounts if m.fstype == "cgroup2"), None)
    group = _group_dir(root, unified, groups[""]) if unified and "" in groups else None
    return CgroupDirs(2, cpu=group, cpuset=group, memory=group, pressure=group)


def _lineage(path: Path | None) -> list[Path]:
    """`path` and the groups above it (every group directory, the root too, holds cgroup.procs; the directory
    the hierarchy is mounted in does not): a limit set on a parent binds too."""
    out: list[Path] = []
    while path is not None and (path / "cgroup.procs").exists():
        out.append(path)
        path = path.parent if path.parent != path else None
    return out


def _quota(dirs: CgroupDirs) -> tuple[float | None, Path | None]:
    """The tightest CPU quota in cores among the group and its parents, and the group that sets it."""
    best: tuple[float | None, Path | None] = (None, dirs.cpu)
    for path in _lineage(dirs.cpu):
        if dirs.version == 2:
            quota_text, _, period_text = (read_text(path / "cpu.max") or "").strip().partition(" ")
            quota, period = _int(quota_text), _int(period_text)
        else:
            quota, period = _int(read_text(path / "cpu.cfs_quota_us")), _int(read_text(path / "cpu.cfs_period_us"))
        if quota is not None and quota > 0 and period:
            cores = quota / period
            if best[0] is None or cores < best[0]:
                best = (cores, path)
    return best


def _memory_limit(dirs: CgroupDirs) -> int | None:
    limits = []
    for path in _lineage(dirs.memory):
        name = "memory.max" if dirs.version == 2 else "memory.limit_in_bytes"
        value = _int(read_text(path / name))  # "max" (v2) reads as None: unlimited
        if value is not None and value < _V1_UNLIMITED:
            limits.append(value)
    return min(limits) if limits else None


def _cpuset(dirs: CgroupDirs) -> tuple[int, ...] | None:
    if dirs.cpuset is None:
        return None
    names = ("cpuset.cpus.effective",) if dirs.version == 2 else ("cpuset.effective_cpus", "cpuset.cpus")
    return next((cpus for name in names if (cpus := parse_cpus(read_text(dirs.cpuset / name)))), None)


def _runtime(root: Path, groups_text: str | None) -> tuple[str | None, str | None]:
    """The container runtime and what gave it away; (None, None) outside a container."""
    if (root / ".dockerenv").exists():
        return "docker", "/.dockerenv"
    if (root / "run/.containerenv").exists():
        return "podman", "/run/.containerenv"
    if os.environ.get("KUBERNETES_SERVICE_HOST"):
        return "kubernetes", "KUBERNETES_SERVICE_HOST"
    for mark, runtime in _RUNTIME_MARKS:
        if mark in (groups_text or ""):
            return runtime, "/proc/self/cgroup"
    environ = read_text(root / "proc/1/environ") or ""
    for item in environ.split("\0"):
        if item.startswith("container=") and item[len("container=") :]:
            return item[len("container=") :], "container= in /proc/1/environ"
    return None, None


def shm_bytes(root: Path) -> tuple[int | None, int | None]:
    """Size and use of /dev/shm, where data-loader workers hand batches over."""
    try:
        stat = os.statvfs(root / "dev/shm")
    except OSError:
        return None, None
    return stat.f_blocks * stat.f_frsize, (stat.f_blocks - stat.f_bfree) * stat.f_frsize


@dataclass(frozen=True, slots=True)
class Cgroup:
    """What was read once: the limits for the model, and the directories the per-sample reader needs."""

    info: ContainerInfo
    dirs: CgroupDirs


def read_cgroup(root: Path = Path("/"), pid: int | str = "self") -> Cgroup:
    """The cgroup of process `pid` (default: this one): a monitor that follows a job reads the job's limits."""
    groups_text = read_text(root / f"proc/{pid}/cgroup")
    dirs = locate(root, groups_text, pid)
    cores, binding = _quota(dirs)
    runtime, recognised_by = _runtime(root, groups_text)
    info = ContainerInfo(
        runtime=runtime,
        recognised_by=recognised_by,
        cgroup_version=dirs.version,
        cpu_quota_cores=cores,
        cpuset_cpus=_cpuset(dirs),
        memory_limit_bytes=_memory_limit(dirs),
        shm_bytes=shm_bytes(root)[0],
    )
    return Cgroup(info, CgroupDirs(dirs.version, binding, dirs.cpuacct, dirs.cpuset, dirs.memory, dirs.pressure))


@dataclass(frozen=True, slots=True)
class _Counters:
    at: float
    usage_s: float | None
    periods: int | None
    throttled: int | None
    throttled_s: float | None
    psi_total_us: dict[str, int]
    psi_avg10_pct: dict[str, float]  # the kernel's 10 s averages, for a first reading with nothing to diff


def _psi(text: str | None) -> tuple[dict[str, int], dict[str, float]]:
    """ "some avg10=1.50 ... total=123" lines -> ({"some": total µs}, {"some": avg10 %})."""
    totals: dict[str, int] = {}
    avg10: dict[str, float] = {}
    for line in (text or "").splitlines():
        if not line.strip():
            continue
        kind, *pairs = line.split()
        values = dict(pair.split("=", 1) for pair in pairs if "=" in pair)
        try:
            totals[kind], avg10[kind] = int(values["total"]), float(values["avg10"])
        except (KeyError, ValueError):
            continue
    return totals, avg10


class CgroupReader:
    """The cgroup's counters over each interval: CPU against the quota, throttling, memory, OOM kills, PSI."""

    _PSI = (("cpu", "some"), ("io", "some"), ("io", "full"), ("memory", "some"), ("memory", "full"))

    def __init__(self, cgroup: Cgroup, root: Path = Path("/"), clock: Callable[[], float] = time.monotonic) -> None:
        self._info = cgroup.info
        self._dirs = cgroup.dirs
        self._root = root
        self._clock = clock
        self._last: _Counters | None = None
        # The counter files, named once: they do not move while the group lives.
        v2 = self._dirs.version == 2
        d = self._dirs
        self._cpu_stat = str(d.cpu / "cpu.stat") if d.cpu is not None else None
        self._cpu_usage = str(d.cpuacct / "cpuacct.usage") if d.cpuacct is not None and not v2 else None
        self._memory_used = str(d.memory / ("memory.current" if v2 else "memory.usage_in_bytes")) if d.memory else None
        self._memory_events = str(d.memory / ("memory.events" if v2 else "memory.oom_control")) if d.memory else None
        # The group's own files on v2 (cpu.pressure, ...); the whole machine's otherwise (/proc/pressure/cpu, ...).
        group = self._dirs.pressure
        self._pressure = {
            resource: str(group / f"{resource}.pressure" if group is not None else root / "proc/pressure" / resource)
            for resource in ("cpu", "io", "memory")
        }

    def sample(self) -> tuple[ContainerSample | None, PsiSample | None]:
        """This interval's figures; (None, None) parts where the files cannot be read."""
        now, last = self._read(), self._last
        self._last = now
        return self._container(now, last), self._psi_sample(now, last)

    def _read(self) -> _Counters:
        v2 = self._dirs.version == 2
        stat = keyed(read_text(self._cpu_stat)) if self._cpu_stat is not None else {}
        if v2:
            usage = stat.get("usage_usec")
            usage_s = usage / 1e6 if usage is not None else None
            throttled = stat.get("throttled_usec")
            throttled_s = throttled / 1e6 if throttled is not None else None
        else:
            usage = _int(read_text(self._cpu_usage)) if self._cpu_usage is not None else None
            usage_s = usage / 1e9 if usage is not None else None
            throttled = stat.get("throttled_time")
            throttled_s = throttled / 1e9 if throttled is not None else None
        totals: dict[str, int] = {}
        avg10: dict[str, float] = {}
        for resource, path in self._pressure.items():
            resource_totals, resource_avg10 = _psi(read_text(path))
            for kind, total in resource_totals.items():
                totals[f"{resource}_{kind}"] = total
                avg10[f"{resource}_{kind}"] = resource_avg10[kind]
        periods, throttled_periods = stat.get("nr_periods"), stat.get("nr_throttled")
        return _Counters(self._clock(), usage_s, periods, throttled_periods, throttled_s, totals, avg10)

    def _container(self, now: _Counters, last: _Counters | None) -> ContainerSample | None:
        if self._dirs.version is None:
            return None
        memory: int | None = None
        events: dict[str, int] = {}
        if self._memory_used is not None and self._memory_events is not None:
            memory = _int(read_text(self._memory_used))
            events = keyed(read_text(self._memory_events))
        seconds = now.at - last.at if last is not None else 0.0
        quota = self._info.cpu_quota_cores
        used = _delta(now.usage_s, last.usage_s if last else None)
        periods = _delta(now.periods, last.periods if last else None)
        throttled = _delta(now.throttled, last.throttled if last else None)
        return ContainerSample(
            cpu_pct_of_quota=100.0 * used / (seconds * quota) if used is not None and seconds > 0 and quota else None,
            cpu_throttled_pct=100.0 * throttled / periods if throttled is not None and periods else None,
            cpu_throttled_s=_delta(now.throttled_s, last.throttled_s if last else None),
            memory_used_bytes=memory,
            memory_limit_bytes=self._info.memory_limit_bytes,
            oom_kills=events.get("oom_kill"),
        )

    def _psi_sample(self, now: _Counters, last: _Counters | None) -> PsiSample | None:
        if not now.psi_total_us:
            return None
        seconds = now.at - last.at if last is not None else 0.0
        values: dict[str, float | None] = {}
        for resource, kind in self._PSI:
            key = f"{resource}_{kind}"
            stalled = _delta(now.psi_total_us.get(key), last.psi_total_us.get(key) if last else None)
            if stalled is not None and seconds > 0:
                values[f"{key}_pct"] = min(100.0, 100.0 * stalled / 1e6 / seconds)
            else:
                values[f"{key}_pct"] = now.psi_avg10_pct.get(key)  # the first reading: the kernel's 10 s average
        return PsiSample(**values)


def _delta(new: float | None, old: float | None) -> float | None:
    """A counter's growth; None when either end is unknown or it went backwards (a reset)."""
    if new is None or old is None or new < old:
        return None
    return new - old


def host_oom_kills(root: Path = Path("/")) -> int | None:
    """The kernel's OOM-kill counter for the whole machine (/proc/vmstat, Linux 4.13+): its one line is looked
    up rather than all ~180 parsed, since this is read every tick."""
    text = read_text(root / "proc/vmstat")
    at = text.find("\noom_kill ") if text else -1
    if text is None or at < 0:
        return None
    return _int(text[at + len("\noom_kill ") : text.find("\n", at + 1)])
