"""Per-process facts psutil does not give, read from /proc (kernel Documentation/filesystems/proc.rst): which
processes hold a GPU's device file open, the container a process runs in and its PID there, how long it
waited for a CPU, the CPU time it used, its state, and which CPUs it may run on and last ran on. Every read is
under `root` (tests point it at a fake tree) and gives None when the file is missing or unreadable: another
user's process without root, a process that just exited.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from gputui.model import parse_cpus
from gputui.sources.host.cgroup import read_text

# A GPU's device node, /dev/nvidia<minor>; /dev/nvidiactl, /dev/nvidia-uvm and /dev/nvidia-modeset are shared
# by every CUDA process and say nothing about which GPU it uses.
_DEVICE = re.compile(r"/dev/nvidia(\d+)")
NVIDIA_MAJOR = 195  # the character device major of /dev/nvidia* (Documentation/admin-guide/devices.txt)
# /dev/nvidia-modeset (254) and /dev/nvidiactl (255) share the major but are no GPU: GPUs are minors 0-253.
NVIDIA_MODESET_MINOR = 254
# Docker, containerd and CRI-O name a container by a 64-hex id (12 shown), whatever prefix their cgroup adds
# (docker-, cri-containerd-, crio-) and the .scope after it under systemd. Kubernetes names the pod by its uid: a
# UUID, its dashes written as `_` in systemd's slice names, or 32 hex without dashes for a static pod.
_CONTAINER_ID = re.compile(r"[0-9a-f]{64}")
_POD_UID = re.compile(
    r"pod([0-9a-f]{8}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{12}|[0-9a-f]{32})(?![0-9a-f])"
)


def device_minors(pid: int, root: Path = Path("/"), *, stop_at: int | None = None) -> frozenset[int] | None:
    """The /dev/nvidia<minor> files process `pid` holds open; None when its fds cannot be read (or it is gone).
    Without CAP_SYS_PTRACE beside a privileged process the directory lists but each link is refused (EACCES):
    that is "cannot tell" too, not "holds none".

    A link that names another path but is the NVIDIA character device itself (a node created elsewhere, as
    some container runtimes do) counts too. With `stop_at`, reading stops once that minor is found: a
    training process holds hundreds of files, and CUDA opens the device early. Paths are plain strings here:
    this runs for every fd of every process a scan reads.
    """
    fd_dir = f"{root}/proc/{pid}/fd"
    try:
        names = sorted(os.listdir(fd_dir), key=lambda name: (len(name), name))
    except OSError:
        return None
    minors: set[int] = set()
    for name in names:
        link = f"{fd_dir}/{name}"
        try:
            target = os.readlink(link)
        except PermissionError:
            return None
        except OSError:
            continue  # closed since the listing
        match = _DEVICE.fullmatch(target)
        minor = int(match.group(1)) if match else _nvidia_minor(link) if target.startswith("/dev/") else None
        if minor is not None:
            minors.add(minor)
            if minor == stop_at:
                break
    return frozenset(minors)


def _nvidia_minor(path: str) -> int | None:
    try:
        rdev = os.stat(path).st_rdev
    except OSError:
        return None
    return os.minor(rdev) if rdev and os.major(rdev) == NVIDIA_MAJOR and os.minor(rdev) < NVIDIA_MODESET_MINOR else None


def holds_device(pid: int, minor: int, root: Path = Path("/")) -> bool | None:
    """True when `pid` holds /dev/nvidia<minor> open; False when not, or no such process here (another PID
    namespace's); None: cannot tell (its fds may not be read: another user's while unprivileged, or a privileged
    process without CAP_SYS_PTRACE; or there is no /proc to look in)."""
    if not (root / f"proc/{pid}").exists():
        return False if (root / "proc/self").exists() else None
    minors = device_minors(pid, root, stop_at=minor)
    return None if minors is None else minor in minors


class DeviceCheck:
    """`holds_device`, with a yes kept while /proc/PID is the same process (the same inode): a CUDA process
    keeps its device open while NVML lists it, so a repeat check is one stat rather than a read of its fds."""

    def __init__(self, root: Path = Path("/")) -> None:
        self._root = root
        self._holding: dict[tuple[int, int], int] = {}  # (pid, minor) -> inode of /proc/PID when it held it

    def __call__(self, pid: int, minor: int) -> bool | None:
        try:
            inode = os.stat(f"{self._root}/proc/{pid}").st_ino
        except OSError:
            return holds_device(pid, minor, self._root)  # gone, or no /proc: it says which
        if self._holding.get((pid, minor)) == inode:
            return True
        answer = holds_device(pid, minor, self._root)
        if answer:
            if len(self._holding) > 4096:
                self._holding.clear()  # PIDs of long-gone jobs: start over rather than grow
            self._holding[(pid, minor)] = inode
        return answer


class GpuUsers:
    """The processes here that hold a GPU's device file open, found by walking /proc/*/fd.

    Reading every fd of every process is the cost (2,000 processes of ~20 fds each), so each scan is bounded:
    - a process that held a GPU is read on every scan, since it may close it;
    - others are read when new (newest PID first) or when `recheck_s` has passed since their last read, at
      most `batch` of them per scan, the longest-waiting first;
    - a process is known by its PID and the inode of its /proc directory (free from the listing), so a reused
      PID is a new process, read at once;
    - data-loader workers forked from a CUDA process inherit its open device file: a user whose parent holds
      the same device is left out, so a job is one process, as NVML lists it.
    """

    def __init__(
        self,
        root: Path = Path("/"),
        clock: Callable[[], float] = time.monotonic,
        recheck_s: float = 30.0,
        batch: int = 100,
    ) -> None:
        self._root = root
        self._clock = clock
        self._recheck_s = recheck_s
        self.batch = batch
        self._known: dict[int, tuple[int, float, bool]] = {}  # pid -> (inode, when to read again, a user?)

    def scan(self) -> Mapping[int, tuple[int, ...]]:
        """{minor: PIDs holding /dev/nvidia<minor>} among the processes whose fds can be read."""
        now = self._clock()
        try:
            with os.scandir(f"{self._root}/proc") as listing:
                live = {int(entry.name): entry.inode() for entry in listing if entry.name.isdigit()}
        except OSError:
            return {}
        known = self._known
        for pid in [pid for pid, (inode, _, _) in known.items() if live.get(pid) != inode]:
            del known[pid]  # gone, or its PID now names another process
        users = [pid for pid, (_, _, user) in known.items() if user]
        new = sorted((pid for pid in live if pid not in known), reverse=True)
        due = [pid for _, pid in sorted((at, pid) for pid, (_, at, user) in known.items() if not user and at <= now)]
        found: dict[int, list[int]] = {}
        for pid in users + (new + due)[: self.batch]:
            minors = device_minors(pid, self._root) or frozenset()
            known[pid] = (live[pid], now + self._recheck_s, bool(minors))
            for minor in minors:
                found.setdefault(minor, []).append(pid)
        return {minor: self._leaders(pids) for minor, pids in found.items()}

    def _leaders(self, pids: list[int]) -> tuple[int, ...]:
        """The users whose parent does not hold the same device: the job, not its forked workers."""
        holders = set(pids)
        return tuple(sorted(pid for pid in pids if parent_pid(pid, self._root) not in holders))


# What of a process may be refused to a reader that is not root with CAP_SYS_PTRACE (proc(5): these need ptrace
# read access; stat, status, statm, cmdline and schedstat do not): its open files (which GPU it holds), its I/O
# counters, its environment (a Slurm job's id).
GUARDED_FILES = ("fd", "io", "environ")


def unreadable(pid: int, root: Path = Path("/")) -> tuple[str, ...]:
    """Which of GUARDED_FILES the kernel refuses this reader for process `pid` (EACCES, EPERM); () when it is gone
    or every one can be read. A directory that lists but whose links are refused counts as refused."""
    refused = []
    for name in GUARDED_FILES:
        path = f"{root}/proc/{pid}/{name}"
        try:
            if name == "fd":
                entries = os.listdir(path)
                if entries:
                    os.readlink(f"{path}/{entries[0]}")
            else:
                fd = os.open(path, os.O_RDONLY)
                try:
                    os.read(fd, 1)  # /proc/PID/io checks its reader when read, not when opened
                finally:
                    os.close(fd)
        except PermissionError:
            refused.append(name)
        except OSError:
            continue  # gone, or an fd closed since the listing: nothing refused
    return tuple(refused)


# /proc/PID/stat counts CPU time in clock ticks (USER_HZ, 100 on every common kernel); sysconf says which.
CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _stat_fields(pid: int, root: Path) -> list[str]:
    """/proc/PID/stat's fields from field 3 (state) on: the command before them is in parentheses and may hold
    spaces. Empty when the file cannot be read."""
    text = read_text(f"{root}/proc/{pid}/stat") or ""
    return text[text.rfind(")") + 1 :].split()


def parent_pid(pid: int, root: Path = Path("/")) -> int | None:
    """The parent's PID from /proc/PID/stat (field 4, after the command in parentheses, which may hold spaces)."""
    fields = _stat_fields(pid, root)
    return int(fields[1]) if len(fields) > 1 and fields[1].isdigit() else None


@dataclass(frozen=True, slots=True)
class CgroupIds:
    """What a process's cgroup path says of the container it runs in; None where it says nothing."""

    pod_uid: str | None = None  # the Kubernetes pod's uid, with dashes
    container_id: str | None = None  # the whole 64-hex id


def cgroup_ids(text: str | None) -> CgroupIds:
    """The pod uid and container id in /proc/PID/cgroup (any line: v1 lists one per hierarchy, v2 one).

    Both drivers of the kubelet are read: systemd's `kubepods-burstable-pod<uid with _>.slice/cri-containerd-
    <id>.scope` and cgroupfs's `kubepods/burstable/pod<uid>/<id>`."""
    if not text:
        return CgroupIds()
    pod = _POD_UID.search(text)
    container = _CONTAINER_ID.search(text)
    return CgroupIds(
        pod_uid=pod.group(1).replace("_", "-") if pod else None,
        container_id=container.group(0) if container else None,
    )


def read_cgroup_text(pid: int, root: Path = Path("/")) -> str | None:
    """/proc/PID/cgroup; None when it cannot be read (gone, or no /proc)."""
    return read_text(root / f"proc/{pid}/cgroup")


def container_of(pid: int, root: Path = Path("/")) -> str | None:
    """The container a process runs in, from its cgroup path: a 12-hex docker/containerd id or a pod uid;
    None on the host (or unreadable)."""
    return container_name(cgroup_ids(read_cgroup_text(pid, root)))


def container_name(ids: CgroupIds) -> str | None:
    """How ProcSample.container names it: "pod <uid>" in a pod, else the container's 12-hex id; None on the host."""
    if ids.pod_uid is not None:
        return "pod " + ids.pod_uid
    return ids.container_id[:12] if ids.container_id else None


def inner_pid(pid: int, root: Path = Path("/")) -> int | None:
    """The PID in the innermost PID namespace (the last of `NSpid:`); None when it is the same or unknown."""
    ids = _status_line(pid, root, "NSpid:").split()
    return int(ids[-1]) if len(ids) > 1 and ids[-1].isdigit() else None


def schedstat(pid: int, root: Path = Path("/")) -> tuple[int, int] | None:
    """(ns on a CPU, ns waiting on a run queue) of the process's main thread, from /proc/PID/schedstat."""
    fields = (read_text(f"{root}/proc/{pid}/schedstat") or "").split()
    try:
        return int(fields[0]), int(fields[1])
    except (IndexError, ValueError):
        return None


def cpus_allowed(pid: int, root: Path = Path("/")) -> tuple[int, ...] | None:
    """The CPUs the process may run on (`Cpus_allowed_list:` of /proc/PID/status, a cpulist like "0-31,64-95")."""
    line = _status_line(pid, root, "Cpus_allowed_list:")
    return parse_cpus(line) if line else None


def _status_line(pid: int, root: Path, key: str) -> str:
    """What follows `key` on its line of /proc/PID/status ("" when missing): found in the text, not by splitting
    its 50-odd lines, since this runs for every GPU process on the slow cadence."""
    text = read_text(f"{root}/proc/{pid}/status") or ""
    at = text.find("\n" + key)  # never the first line, which is Name:
    if at < 0:
        return ""
    start = at + 1 + len(key)
    end = text.find("\n", start)
    return text[start : end if end >= 0 else len(text)]


def cpu_seconds(pid: int, root: Path = Path("/")) -> tuple[int, float] | None:
    """(start time, CPU seconds used so far) of process `pid`: utime + stime (fields 14, 15) and starttime (22),
    in clock ticks since boot, which tells a reused PID from the process that had it.

    This runs for every data-loader worker of every GPU process, so it reads with os.open/os.read, a plain
    string path and bytes split only as far as field 22: ~4 µs a process against ~14 µs through read_text."""
    try:
        fd = os.open(f"{root}/proc/{pid}/stat", os.O_RDONLY)
    except OSError:
        return None
    try:
        data = os.read(fd, 4096)
    except OSError:
        return None
    finally:
        os.close(fd)
    fields = data[data.rfind(b")") + 2 :].split(b" ", 20)
    try:
        return int(fields[19]), (int(fields[11]) + int(fields[12])) / CLOCK_TICKS
    except (IndexError, ValueError):
        return None


def state(pid: int, root: Path = Path("/")) -> str | None:
    """The process's state letter (field 3: R, S, D, Z for an exited child not yet reaped, ...); None when gone."""
    fields = _stat_fields(pid, root)
    return fields[0] if fields else None


def last_cpu(pid: int, root: Path = Path("/")) -> int | None:
    """The CPU the main thread last ran on: /proc/PID/stat field 39 ("processor"), counted after the command."""
    fields = _stat_fields(pid, root)  # field 3 (state) is the first after the command
    return int(fields[36]) if len(fields) > 36 and fields[36].isdigit() else None
