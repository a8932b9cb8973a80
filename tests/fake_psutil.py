"""A fake of the parts of psutil that HostSource reads, for deterministic tests.

Counters are plain attributes that a test moves between samples; the exception classes are psutil's own.
Named tuples carry the same field names as psutil's on Linux.
"""

from __future__ import annotations

import contextlib
import types
from collections import Counter, namedtuple
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil as real

scputimes = namedtuple(
    "scputimes", "user nice system idle iowait irq softirq steal guest guest_nice", defaults=(0.0,) * 10
)
svmem = namedtuple("svmem", "total available percent used free")
sswap = namedtuple("sswap", "total used free percent sin sout")
sdiskio = namedtuple(
    "sdiskio",
    "read_count write_count read_bytes write_bytes read_time write_time read_merged_count write_merged_count busy_time",
    defaults=(0,) * 9,
)
snetio = namedtuple("snetio", "bytes_sent bytes_recv packets_sent packets_recv errin errout dropin dropout")
snicstats = namedtuple("snicstats", "isup duplex speed mtu flags")
pio = namedtuple("pio", "read_count write_count read_bytes write_bytes read_chars write_chars")
pmem = namedtuple("pmem", "rss vms shared text lib data dirty")
pcputimes = namedtuple("pcputimes", "user system children_user children_system iowait", defaults=(0.0,) * 5)


def netio(sent: int, received: int) -> Any:
    return snetio(sent, received, 0, 0, 0, 0, 0, 0)


@dataclass
class FakeProcess:
    """One process; `denied` names methods that raise AccessDenied, `gone` makes every call NoSuchProcess."""

    pid: int
    name_: str = "python"
    username_: str = "alice"
    cmdline_: list[str] = field(default_factory=lambda: ["python", "train.py", "--epochs", "10"])
    cpu_percent_: float = 99.5
    threads: int = 42
    children_: int = 4
    child_pids: list[int] | None = None  # the children's PIDs; None: `children_` made-up ones
    read_bytes: int = 0
    rss: int = 8 * 1024**3
    status_: str = "running"
    create_time_: float = 1_700_000_000.25
    cpu_seconds: float = 0.0  # user and system together, as cpu_times() gives them
    ppid_: int = 1
    info: dict[str, Any] = field(default_factory=dict)  # what process_iter read of it, as psutil sets it
    denied: set[str] = field(default_factory=set)
    gone: bool = False
    calls: Counter[str] = field(default_factory=Counter)

    def _enter(self, method: str) -> None:
        self.calls[method] += 1
        if self.gone:
            raise real.NoSuchProcess(self.pid)
        if method in self.denied:
            raise real.AccessDenied(self.pid)

    @contextlib.contextmanager
    def oneshot(self) -> Iterator[None]:
        yield

    def name(self) -> str:
        self._enter("name")
        return self.name_

    def username(self) -> str:
        self._enter("username")
        return self.username_

    def cmdline(self) -> list[str]:
        self._enter("cmdline")
        return self.cmdline_

    def cpu_percent(self) -> float:
        self._enter("cpu_percent")
        return self.cpu_percent_

    def num_threads(self) -> int:
        self._enter("num_threads")
        return self.threads

    def kids(self) -> list[int]:
        """Its children's PIDs: `child_pids`, or `children_` made-up ones that no other fake process shares."""
        if self.child_pids is not None:
            return list(self.child_pids)
        return [1_000_000 + 1000 * self.pid + n for n in range(self.children_)]

    def children(self) -> list[Any]:
        self._enter("children")
        return [types.SimpleNamespace(pid=pid) for pid in self.kids()]

    def io_counters(self) -> Any:
        self._enter("io_counters")
        return pio(0, 0, self.read_bytes, 0, 0, 0)

    def memory_info(self) -> Any:
        self._enter("memory_info")
        return pmem(self.rss, 0, 0, 0, 0, 0, 0)

    def status(self) -> str:
        self._enter("status")
        return self.status_

    def create_time(self) -> float:
        self._enter("create_time")
        return self.create_time_

    def cpu_times(self) -> Any:
        self._enter("cpu_times")
        return pcputimes(user=self.cpu_seconds * 0.75, system=self.cpu_seconds * 0.25)

    def ppid(self) -> int:
        self._enter("ppid")
        return self.ppid_


class FakePsutil(types.ModuleType):
    """A psutil module object whose readings are set by the test."""

    Error = real.Error
    NoSuchProcess = real.NoSuchProcess
    AccessDenied = real.AccessDenied
    ZombieProcess = real.ZombieProcess

    def __init__(self, cores: int = 4, ppid_map: bool = True):
        """`ppid_map=False` leaves out psutil's private one-scan map, to exercise the per-process fallback."""
        super().__init__("psutil")
        if ppid_map:
            self._ppid_map = self._scan_parents
        self.cores = [scputimes(user=100.0, system=50.0, idle=1000.0, iowait=5.0, steal=1.0) for _ in range(cores)]
        self.memory = svmem(total=512 * 1024**3, available=400 * 1024**3, percent=21.9, used=100 * 1024**3, free=0)
        self.swap = sswap(total=8 * 1024**3, used=1024**3, free=7 * 1024**3, percent=12.5, sin=0, sout=0)
        self.disks: dict[str, Any] = {"nvme0n1": sdiskio(read_bytes=0, write_bytes=0, busy_time=0)}
        self.nics: dict[str, Any] = {"lo": netio(0, 0), "eth0": netio(0, 0)}
        self.nic_stats: dict[str, Any] = {
            "lo": snicstats(True, 0, 0, 65536, "up,loopback"),
            "eth0": snicstats(True, 2, 25_000, 9000, "up,broadcast,running"),
        }
        self.load = (3.5, 2.0, 1.0)
        self.processes: dict[int, FakeProcess] = {}
        self.calls: Counter[str] = Counter()

    def cpu_times(self, percpu: bool = False) -> Any:
        self.calls["cpu_times"] += 1
        return list(self.cores)

    def virtual_memory(self) -> Any:
        return self.memory

    def swap_memory(self) -> Any:
        return self.swap

    def disk_io_counters(self, perdisk: bool = False, nowrap: bool = True) -> Any:
        if perdisk:
            return dict(self.disks)
        if not self.disks:
            return None
        return sdiskio(
            read_bytes=sum(d.read_bytes for d in self.disks.values()),
            write_bytes=sum(d.write_bytes for d in self.disks.values()),
            busy_time=sum(getattr(d, "busy_time", 0) for d in self.disks.values()),
        )

    def net_io_counters(self, pernic: bool = False, nowrap: bool = True) -> Any:
        return dict(self.nics)

    def net_if_stats(self) -> Any:
        self.calls["net_if_stats"] += 1
        return dict(self.nic_stats)

    def getloadavg(self) -> tuple[float, float, float]:
        return self.load

    def Process(self, pid: int) -> FakeProcess:
        self.calls["Process"] += 1
        proc = self.processes.get(pid)
        if proc is None or proc.gone:
            raise real.NoSuchProcess(pid)
        return proc

    def process_iter(self, attrs: Any) -> Iterator[Any]:
        """Each process as psutil yields it: itself, with `info` holding `attrs` (None where access is denied)."""
        self.calls["process_iter"] += 1
        for proc in list(self.processes.values()):
            if proc.gone:
                continue
            info = {}
            for attr in attrs:
                try:
                    info[attr] = getattr(proc, attr)()
                except real.AccessDenied:
                    info[attr] = None
            proc.info = info
            yield proc

    def _scan_parents(self) -> dict[int, int]:
        """{pid: ppid} for every process, as psutil._ppid_map returns."""
        self.calls["_ppid_map"] += 1
        parents = {pid: 1 for pid, proc in self.processes.items() if not proc.gone}
        for pid, proc in self.processes.items():
            for child in proc.kids() if not proc.gone else ():
                parents[child] = pid
        return parents

    def advance_cpu(self, core: int, **seconds: float) -> None:
        """Add CPU seconds to one core's counters, e.g. advance_cpu(0, user=0.5, idle=0.5)."""
        times = self.cores[core]
        self.cores[core] = times._replace(**{k: getattr(times, k) + v for k, v in seconds.items()})


# A root with nothing to read: HostSource and NvmlSource over this fake psutil must not pick up this machine's
# /proc, cgroup or /dev/shm files for the fake's PIDs.
NO_PROC = Path("/nonexistent/gputui-test-root")
