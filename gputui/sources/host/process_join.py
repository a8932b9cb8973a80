"""NVML's GPU processes matched with processes in this PID namespace.

NVML lists *host* PIDs. Inside a container such a PID is missing, or names some other process of the
container, so joining it with the host side as it is shows the wrong process or none. A CUDA process holds
its GPU's device file open (`/dev/nvidia<minor>`), so that is the test: NVML's PID is taken as this process
only when it holds the device (or when its open files cannot be read to tell, as for another user's process
on the host without root, or a root job beside gputui without CAP_SYS_PTRACE, where PIDs do match: a process
that is here but keeps its files to itself is not in another PID namespace). Where NVML's PIDs fail the test,
this namespace's GPU users are found through their open device files instead.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace

from gputui.model import GpuProcess, GpuSample

# (pid, minor) -> True: it holds /dev/nvidia<minor> open; False: it does not, or there is no such process here;
# None: its open files cannot be read.
HoldsDevice = Callable[[int, int], bool | None]
# minor -> the PIDs here that hold /dev/nvidia<minor> open.
FindUsers = Callable[[], Mapping[int, tuple[int, ...]]]


class ProcessJoin:
    """Rewrites each GPU's process list in this namespace's PIDs; checks are cached between slow ticks.

    A PID's answer is kept until the next slow tick (when PIDs may have been reused); the scan for device
    users runs only when some NVML PID failed its check, at most once per slow tick.
    """

    def __init__(self, holds_device: HoldsDevice, find_users: FindUsers) -> None:
        self._holds_device = holds_device
        self._find_users = find_users
        self._verdicts: dict[tuple[int, int], bool | None] = {}
        self._users: Mapping[int, tuple[int, ...]] | None = None

    def join(self, gpus: Sequence[GpuSample], minors: Mapping[int, int | None], slow: bool) -> tuple[GpuSample, ...]:
        if slow:
            self._verdicts.clear()
            self._users = None
        return tuple(self._join_gpu(gpu, minors.get(gpu.index)) for gpu in gpus)

    def _join_gpu(self, gpu: GpuSample, minor: int | None) -> GpuSample:
        if minor is None or not gpu.processes:
            return gpu  # without the device number nothing can be checked: NVML's PIDs as they are
        here: list[GpuProcess] = []
        missing: list[GpuProcess] = []
        for proc in gpu.processes:
            (missing if self._verdict(proc.pid, minor) is False else here).append(proc)
        if not missing:
            return gpu
        taken = {p.pid for p in here}
        local = [pid for pid in self._users_of(minor) if pid not in taken]
        if len(missing) == 1 and len(local) == 1:
            # One NVML process and one process here on this GPU: they are the same, its memory figure is theirs.
            found = [replace(missing[0], pid=local[0], seen="device", host_pid=missing[0].pid)]
            unmatched: list[GpuProcess] = []
        else:
            # Which host PID is which local one cannot be told: memory n/a rather than a guess.
            found = [GpuProcess(pid, None, seen="device") for pid in local]
            unmatched = missing[len(local) :]
        hidden = [replace(p, seen="hidden") for p in unmatched]
        return replace(gpu, processes=(*here, *found, *hidden))

    def _verdict(self, pid: int, minor: int) -> bool | None:
        key = (pid, minor)
        if key not in self._verdicts:
            self._verdicts[key] = self._holds_device(pid, minor)
        return self._verdicts[key]

    def _users_of(self, minor: int) -> tuple[int, ...]:
        if self._users is None:
            self._users = self._find_users()
        return self._users.get(minor, ())
