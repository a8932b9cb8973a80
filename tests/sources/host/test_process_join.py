"""NVML's host PIDs matched with this PID namespace: the join cases, and what is asked of /proc and when."""

from __future__ import annotations

from collections.abc import Mapping

from gputui.model import GpuProcess, GpuSample
from gputui.sources.host.process_join import ProcessJoin

GIB = 1 << 30


class FakeProc:
    """Which PIDs hold which /dev/nvidiaN here; counts every question, as the real checks read /proc."""

    def __init__(self, holders: dict[int, set[int]], unreadable: frozenset[int] = frozenset()) -> None:
        self.holders = holders  # pid -> minors it holds open
        self.unreadable = unreadable
        self.checks = 0
        self.scans = 0

    def holds_device(self, pid: int, minor: int) -> bool | None:
        self.checks += 1
        if pid in self.unreadable:
            return None
        return minor in self.holders.get(pid, set())

    def find_users(self) -> Mapping[int, tuple[int, ...]]:
        self.scans += 1
        users: dict[int, list[int]] = {}
        for pid, minors in sorted(self.holders.items()):
            for minor in minors:
                users.setdefault(minor, []).append(pid)
        return {minor: tuple(pids) for minor, pids in users.items()}


def gpu(index: int, *procs: tuple[int, int | None]) -> GpuSample:
    return GpuSample(index, 0.0, processes=tuple(GpuProcess(pid, memory) for pid, memory in procs))


def joined(fake: FakeProc, *gpus: GpuSample, minors: Mapping[int, int | None] | None = None) -> list[GpuSample]:
    join = ProcessJoin(fake.holds_device, fake.find_users)
    return list(join.join(gpus, minors if minors is not None else {g.index: g.index for g in gpus}, slow=True))


def seen(sample: GpuSample) -> list[tuple[int, str, int | None, int | None]]:
    return [(p.pid, p.seen, p.host_pid, p.used_memory_bytes) for p in sample.processes]


def test_on_the_host_nvmls_pid_holds_the_device_and_nothing_changes() -> None:
    fake = FakeProc({4242: {0}})
    [sample] = joined(fake, gpu(0, (4242, 30 * GIB)))
    assert seen(sample) == [(4242, "pid", None, 30 * GIB)]
    assert fake.scans == 0


def test_a_process_whose_files_cannot_be_read_keeps_nvmls_pid() -> None:
    """Another user's process on the host, without root: NVML's PID is right there, and cannot be checked."""
    [sample] = joined(FakeProc({}, unreadable=frozenset({4242})), gpu(0, (4242, GIB)))
    assert seen(sample) == [(4242, "pid", None, GIB)]


def test_in_a_container_the_one_local_user_takes_nvmls_figure() -> None:
    """NVML says host PID 81234 (missing here); PID 41 here holds /dev/nvidia0: the same process."""
    [sample] = joined(FakeProc({41: {0}}), gpu(0, (81234, 30 * GIB)))
    assert seen(sample) == [(41, "device", 81234, 30 * GIB)]


def test_a_reused_pid_that_does_not_hold_the_device_is_not_the_gpu_process() -> None:
    """PID 7 exists here (a shell), but NVML's 7 is a host process: the shell must not be shown as the job."""
    fake = FakeProc({7: set(), 41: {1}})
    [sample] = joined(fake, gpu(1, (7, GIB)), minors={1: 1})
    assert seen(sample) == [(41, "device", 7, GIB)]


def test_two_processes_on_one_gpu_cannot_be_paired_so_memory_is_not_guessed() -> None:
    [sample] = joined(FakeProc({41: {0}, 42: {0}}), gpu(0, (81234, 30 * GIB), (81235, 10 * GIB)))
    assert seen(sample) == [(41, "device", None, None), (42, "device", None, None)]


def test_a_process_found_nowhere_here_is_hidden_not_dropped() -> None:
    """gputui in one container, the job in another: the GPU still has its process, outside this namespace."""
    [sample] = joined(FakeProc({}), gpu(0, (81234, 30 * GIB)))
    assert seen(sample) == [(81234, "hidden", None, 30 * GIB)]


def test_more_nvml_processes_than_local_users_leave_the_rest_hidden() -> None:
    [sample] = joined(FakeProc({41: {0}}), gpu(0, (81234, GIB), (90001, 2 * GIB)))
    assert seen(sample) == [(41, "device", None, None), (90001, "hidden", None, 2 * GIB)]


def test_users_of_other_gpus_are_not_taken() -> None:
    fake = FakeProc({41: {0}, 42: {1}})
    first, second = joined(fake, gpu(0, (81234, GIB)), gpu(1, (81235, 2 * GIB)))
    assert seen(first) == [(41, "device", 81234, GIB)] and seen(second) == [(42, "device", 81235, 2 * GIB)]
    assert fake.scans == 1  # one scan serves every GPU


def test_without_a_minor_number_nothing_is_checked() -> None:
    fake = FakeProc({})
    [sample] = joined(fake, gpu(0, (81234, GIB)), minors={0: None})
    assert seen(sample) == [(81234, "pid", None, GIB)] and fake.checks == 0


def test_answers_are_kept_until_the_next_slow_tick() -> None:
    fake = FakeProc({41: {0}})
    join = ProcessJoin(fake.holds_device, fake.find_users)
    sample = gpu(0, (81234, GIB))
    for slow in (True, False, False, False):
        join.join((sample,), {0: 0}, slow=slow)
    assert (fake.checks, fake.scans) == (1, 1)
    join.join((sample,), {0: 0}, slow=True)
    assert (fake.checks, fake.scans) == (2, 2)
