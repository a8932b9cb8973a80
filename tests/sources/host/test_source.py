"""HostSource over a faked psutil: rates from counter deltas, no negative rates, GPU processes followed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gputui.foreign_text import clean
from gputui.sources.host.procfs import CLOCK_TICKS
from gputui.sources.host.source import (
    CHILDREN_EVERY,
    LINK_EVERY,
    OTHERS_CMDLINE_CHARS,
    SCHED_EVERY,
    HostSource,
    rate,
)
from tests.conftest import Clock
from tests.fake_psutil import NO_PROC, FakeProcess, FakePsutil, netio, scputimes, sdiskio
from tests.sources.host.fake_tree import process, stat_line, write

GIB = 1024**3


@pytest.fixture
def ps() -> FakePsutil:
    return FakePsutil(cores=2)


@pytest.fixture
def clock() -> Clock:
    return Clock(now=1000.0)


@pytest.fixture
def host(ps: FakePsutil, clock: Clock) -> HostSource:
    source = HostSource(clock=clock, psutil_module=ps, root=NO_PROC)
    source.open()
    return source


def idle_tick(ps: FakePsutil, clock: Clock, seconds: float = 1.0) -> None:
    """Let time pass with every core idle, so CPU deltas stay valid."""
    clock.now += seconds
    for core in range(len(ps.cores)):
        ps.advance_cpu(core, idle=seconds)


def test_rates_are_counter_deltas_over_the_interval(ps: FakePsutil, clock: Clock, host: HostSource) -> None:
    idle_tick(ps, clock, 2.0)
    ps.disks = {"nvme0n1": sdiskio(read_bytes=400 * 1024**2, write_bytes=100 * 1024**2, busy_time=500)}
    ps.nics = {"lo": netio(10 * GIB, 10 * GIB), "eth0": netio(sent=2_000_000, received=50_000_000)}
    ps.swap = ps.swap._replace(sin=8192, sout=4096)
    sample = host.sample([], timestamp=123.0)
    assert sample.timestamp == 123.0
    assert sample.disk_read_bytes_s == 200 * 1024**2
    assert sample.disk_write_bytes_s == 50 * 1024**2
    assert sample.disk_busy_pct == pytest.approx(25.0)  # 500 ms busy in 2 s
    # loopback traffic is not network traffic
    assert sample.net_rx_bytes_s == 25_000_000
    assert sample.net_tx_bytes_s == 1_000_000
    assert sample.swap_in_bytes_s == 4096
    assert sample.swap_out_bytes_s == 2048
    assert sample.memory_used_bytes == 100 * GIB
    assert sample.memory_total_bytes == 512 * GIB
    assert sample.swap_used_bytes == GIB
    assert sample.load_avg == (3.5, 2.0, 1.0)


def test_a_counter_that_goes_backwards_gives_no_rate(ps: FakePsutil, clock: Clock, host: HostSource) -> None:
    idle_tick(ps, clock)
    ps.disks = {"nvme0n1": sdiskio(read_bytes=10**12, write_bytes=10**9, busy_time=100)}
    ps.nics = {"eth0": netio(sent=2**32 - 10, received=2**32 - 10)}
    host.sample([], 1.0)
    idle_tick(ps, clock)
    ps.disks = {"nvme0n1": sdiskio(read_bytes=5, write_bytes=2 * 10**9, busy_time=50)}  # reset, and wrap
    ps.nics = {"eth0": netio(sent=100, received=2**32)}
    sample = host.sample([], 2.0)
    assert sample.disk_read_bytes_s is None
    assert sample.disk_write_bytes_s == 10**9
    assert sample.disk_busy_pct is None
    assert sample.net_tx_bytes_s is None
    assert sample.net_rx_bytes_s == 10


def test_no_time_passed_gives_no_rates(ps: FakePsutil, host: HostSource) -> None:
    sample = host.sample([], 1.0)
    assert sample.disk_read_bytes_s is None
    assert sample.net_rx_bytes_s is None
    assert sample.cpu_pct_per_core == ()
    assert sample.cpu_pct is None


def test_cpu_percent_per_core_and_iowait_steal_from_time_deltas(ps: FakePsutil, clock: Clock, host: HostSource) -> None:
    clock.now += 1.0
    ps.advance_cpu(0, user=0.9, idle=0.1)  # 90 % busy
    ps.advance_cpu(1, user=0.2, idle=0.3, iowait=0.4, steal=0.1)  # iowait is not busy; steal is
    sample = host.sample([], 1.0)
    assert sample.cpu_pct_per_core == pytest.approx((90.0, 30.0))
    assert sample.iowait_pct == pytest.approx(20.0)  # 0.4 s of 2 core-seconds
    assert sample.steal_pct == pytest.approx(5.0)


def test_guest_time_is_not_counted_twice(ps: FakePsutil, clock: Clock, host: HostSource) -> None:
    clock.now += 1.0
    ps.advance_cpu(0, user=0.5, guest=0.5, idle=0.5)  # guest time is already inside user time
    ps.advance_cpu(1, idle=1.0)
    assert host.sample([], 1.0).cpu_pct_per_core == pytest.approx((50.0, 0.0))


def test_iowait_moved_back_to_idle_costs_no_core_and_no_negative_share(
    ps: FakePsutil, clock: Clock, host: HostSource
) -> None:
    """proc(5): iowait can go down. Time the kernel moves from iowait to idle is idle all the same."""
    clock.now += 1.0
    ps.advance_cpu(0, user=0.5, idle=0.7, iowait=-0.2)
    ps.advance_cpu(1, user=0.3, idle=0.7)
    sample = host.sample([], 1.0)
    assert sample.cpu_pct_per_core == pytest.approx((50.0, 30.0))
    assert sample.iowait_pct == 0.0  # the fall counts as no iowait, never as a negative share
    clock.now += 1.0
    ps.advance_cpu(0, user=0.5, idle=0.4, iowait=-0.1)  # down, and not made up by idle
    ps.advance_cpu(1, user=0.3, idle=0.5, iowait=0.2)
    sample = host.sample([], 2.0)
    assert sample.cpu_pct_per_core == pytest.approx((62.5, 30.0))
    assert sample.iowait_pct == pytest.approx(11.1)  # 0.2 s of 1.8 core-seconds
    clock.now += 1.0
    ps.advance_cpu(0, user=0.5, idle=0.1, iowait=-3.0)  # down by more than the idle time gained
    ps.advance_cpu(1, user=0.4, idle=0.6)
    sample = host.sample([], 3.0)
    assert sample.cpu_pct_per_core == pytest.approx((62.5, 40.0))  # that core keeps its figure, the host goes on
    assert sample.iowait_pct == 0.0


def test_idle_going_backwards_costs_that_core_one_tick(ps: FakePsutil, clock: Clock, host: HostSource) -> None:
    clock.now += 1.0
    ps.advance_cpu(0, user=0.9, idle=0.1)
    ps.advance_cpu(1, user=0.3, idle=0.7)
    assert host.sample([], 1.0).cpu_pct_per_core == pytest.approx((90.0, 30.0))
    clock.now += 1.0
    ps.advance_cpu(0, user=0.5, idle=-5.0)  # the kernel's idle time went backwards
    ps.advance_cpu(1, user=0.4, steal=0.1, idle=0.4, iowait=0.1)
    sample = host.sample([], 2.0)
    assert sample.cpu_pct_per_core == pytest.approx((90.0, 50.0))  # core 0 keeps its last figure, core 1 is read
    assert (sample.iowait_pct, sample.steal_pct) == (10.0, 10.0)  # of core 1's second alone
    clock.now += 1.0
    ps.advance_cpu(0, user=0.2, idle=0.8)
    ps.advance_cpu(1, user=0.2, idle=0.8)
    assert host.sample([], 3.0).cpu_pct_per_core == pytest.approx((20.0, 20.0))  # read again


def test_a_core_read_badly_on_the_first_tick_takes_the_mean_of_the_others(clock: Clock) -> None:
    ps = FakePsutil(cores=3)
    host = HostSource(clock=clock, psutil_module=ps, root=NO_PROC)
    host.open()
    clock.now += 1.0
    ps.cores[0] = scputimes(user=1.0, idle=1.0)  # every counter back to near zero
    ps.advance_cpu(1, user=0.8, idle=0.2)
    ps.advance_cpu(2, user=0.2, idle=0.8)
    sample = host.sample([], 1.0)
    assert sample.cpu_pct_per_core == pytest.approx((50.0, 80.0, 20.0))
    assert sample.cpu_pct == pytest.approx(50.0)  # the host's mean is the mean of the cores read well


def test_every_core_read_well_moves_every_figure(ps: FakePsutil, clock: Clock, host: HostSource) -> None:
    for tick, (first, second) in enumerate([(0.9, 0.1), (0.4, 0.6), (0.0, 1.0)], start=1):
        clock.now += 1.0
        ps.advance_cpu(0, user=first, idle=1.0 - first)
        ps.advance_cpu(1, user=second, idle=1.0 - second)
        sample = host.sample([], float(tick))
        assert sample.cpu_pct_per_core == pytest.approx((100 * first, 100 * second))
        assert (sample.iowait_pct, sample.steal_pct) == (0.0, 0.0)


def test_a_change_in_the_number_of_cores_makes_one_tick_unknown(ps: FakePsutil, clock: Clock, host: HostSource) -> None:
    idle_tick(ps, clock)
    assert host.sample([], 1.0).cpu_pct_per_core == (0.0, 0.0)
    idle_tick(ps, clock)
    ps.cores = ps.cores[:1]  # a core went offline
    sample = host.sample([], 2.0)
    assert (sample.cpu_pct_per_core, sample.iowait_pct, sample.steal_pct) == ((), None, None)
    clock.now += 1.0
    ps.advance_cpu(0, user=0.25, idle=0.75)
    assert host.sample([], 3.0).cpu_pct_per_core == pytest.approx((25.0,))


def test_platform_without_iowait_or_steal_reports_none(clock: Clock) -> None:
    ps = FakePsutil(cores=1)
    from collections import namedtuple

    mac_times = namedtuple("scputimes", "user nice system idle")
    ps.cores = [mac_times(1.0, 0.0, 1.0, 10.0)]
    host = HostSource(clock=clock, psutil_module=ps, root=NO_PROC)
    host.open()
    clock.now += 1.0
    ps.cores = [mac_times(1.5, 0.0, 1.0, 10.5)]
    sample = host.sample([], 1.0)
    assert sample.cpu_pct_per_core == pytest.approx((50.0,))
    assert sample.iowait_pct is None
    assert sample.steal_pct is None


def test_disk_busy_is_the_busiest_disk(ps: FakePsutil, clock: Clock) -> None:
    ps.disks = {"sda": sdiskio(busy_time=0), "nvme0n1": sdiskio(busy_time=0)}
    host = HostSource(clock=clock, psutil_module=ps, root=NO_PROC)
    host.open()
    idle_tick(ps, clock)
    ps.disks = {"sda": sdiskio(busy_time=100), "nvme0n1": sdiskio(busy_time=990)}
    assert host.sample([], 1.0).disk_busy_pct == pytest.approx(99.0)


def test_disk_busy_is_none_where_the_platform_has_no_busy_time(ps: FakePsutil, clock: Clock) -> None:
    from collections import namedtuple

    bsd_disk = namedtuple("sdiskio", "read_count write_count read_bytes write_bytes read_time write_time")
    ps.disks = {"ada0": bsd_disk(0, 0, 0, 0, 0, 0)}
    host = HostSource(clock=clock, psutil_module=ps, root=NO_PROC)
    host.open()
    idle_tick(ps, clock)
    assert host.sample([], 1.0).disk_busy_pct is None


def test_link_speed_is_the_fastest_up_interface_in_bytes(ps: FakePsutil, clock: Clock) -> None:
    from tests.fake_psutil import snicstats

    ps.nic_stats["ib0"] = snicstats(True, 2, 200_000, 4092, "up")
    ps.nic_stats["eth1"] = snicstats(False, 2, 400_000, 9000, "")  # down: does not count
    host = HostSource(clock=clock, psutil_module=ps, root=NO_PROC)
    host.open()
    assert host.sample([], 1.0).net_link_bytes_s == 200_000 * 1_000_000 / 8


def test_link_speed_unknown_when_no_interface_reports_one(ps: FakePsutil, clock: Clock) -> None:
    from tests.fake_psutil import snicstats

    ps.nic_stats = {"lo": snicstats(True, 0, 0, 65536, ""), "veth0": snicstats(True, 0, 0, 1500, "")}
    host = HostSource(clock=clock, psutil_module=ps, root=NO_PROC)
    host.open()
    assert host.sample([], 1.0).net_link_bytes_s is None


def test_link_speed_is_read_on_a_slow_cadence(ps: FakePsutil, clock: Clock, host: HostSource) -> None:
    for _ in range(LINK_EVERY + 1):
        host.sample([], 1.0)
    assert ps.calls["net_if_stats"] == 2


def test_gpu_process_fields_and_primed_cpu_percent(ps: FakePsutil, clock: Clock, host: HostSource) -> None:
    ps.processes[4242] = FakeProcess(4242, read_bytes=1000)
    first = host.sample([4242], 1.0).process(4242)
    assert first is not None
    assert first.cpu_pct is None  # psutil's first cpu_percent() only primes the counter
    assert first.read_bytes_s is None
    idle_tick(ps, clock, 2.0)
    ps.processes[4242].read_bytes = 1000 + 600 * 1024**2
    proc = host.sample([4242], 2.0).process(4242)
    assert proc is not None
    assert proc.name == "python"
    assert proc.user == "alice"
    assert proc.cmdline == "python train.py --epochs 10"
    assert proc.cpu_pct == 99.5
    assert proc.threads == 42
    assert proc.children == 4
    assert proc.read_bytes_s == 300 * 1024**2
    assert proc.rss_bytes == 8 * GIB
    assert proc.state == "running"
    assert proc.create_time == 1_700_000_000.25  # what a signal checks the PID against
    assert proc.ppid == 1  # the process table's tree: ranks of one launcher are one job
    assert ps.calls["Process"] == 1  # the psutil.Process is kept between ticks


def test_access_denied_fields_are_none(clock: Clock) -> None:
    ps = FakePsutil(ppid_map=False)
    host = HostSource(clock=clock, psutil_module=ps, root=NO_PROC)
    host.open()
    ps.processes[7] = FakeProcess(7, denied={"username", "io_counters", "cmdline", "children", "create_time", "ppid"})
    host.sample([7], 1.0)
    idle_tick(ps, clock)
    proc = host.sample([7], 2.0).process(7)
    assert proc is not None
    assert (proc.user, proc.read_bytes_s, proc.cmdline, proc.children) == (None, None, None, None)
    assert proc.create_time is None and proc.ppid is None  # unavailable, never 0
    assert proc.cpu_pct == 99.5
    assert proc.threads == 42


def test_a_process_that_vanished_is_dropped_quietly(ps: FakePsutil, clock: Clock, host: HostSource) -> None:
    ps.processes[1] = FakeProcess(1)
    ps.processes[2] = FakeProcess(2)
    assert [p.pid for p in host.sample([1, 2, 3], 1.0).processes] == [1, 2]  # 3 was never there
    ps.processes[2].gone = True
    idle_tick(ps, clock)
    assert [p.pid for p in host.sample([1, 2], 2.0).processes] == [1]
    ps.processes[2] = FakeProcess(2)  # the pid comes back as a new process: it is read afresh
    idle_tick(ps, clock)
    again = host.sample([1, 2], 3.0).process(2)
    assert again is not None
    assert again.cpu_pct is None


def test_a_process_that_exits_halfway_through_its_read_is_dropped(ps: FakePsutil, host: HostSource) -> None:
    proc = FakeProcess(5)
    ps.processes[5] = proc
    original = proc.memory_info

    def exits() -> object:
        proc.gone = True
        return original()

    proc.memory_info = exits  # type: ignore[method-assign]
    assert host.sample([5], 1.0).processes == ()


def test_pids_that_left_the_gpu_are_forgotten(ps: FakePsutil, clock: Clock, host: HostSource) -> None:
    ps.processes[1] = FakeProcess(1)
    host.sample([1], 1.0)
    host.sample([], 2.0)
    host.sample([1], 3.0)
    assert ps.calls["Process"] == 2  # followed afresh, with its CPU counter primed again


def test_children_of_all_gpu_processes_come_from_one_scan_on_a_cadence(
    ps: FakePsutil, clock: Clock, host: HostSource
) -> None:
    ps.processes[3] = FakeProcess(3, children_=4)
    ps.processes[4] = FakeProcess(4, children_=0)
    sample = host.sample([3, 4], clock.now)
    assert [p.children for p in sample.processes] == [4, 0]
    assert ps.calls["_ppid_map"] == 1  # one scan for both
    for _ in range(2 * CHILDREN_EVERY - 1):
        host.sample([3, 4], clock.now)
    assert ps.calls["_ppid_map"] == 2  # first sight, then once per CHILDREN_EVERY ticks
    ps.processes[3].children_ = 9
    for _ in range(CHILDREN_EVERY):
        sample = host.sample([3, 4], clock.now)
    assert [p.children for p in sample.processes] == [9, 0]
    assert ps.processes[3].calls["children"] == 0
    assert ps.processes[3].calls["num_threads"] == 3  # with the children: first sight, ticks 10 and 20


def test_children_fall_back_to_psutil_children_without_the_scan(clock: Clock) -> None:
    ps = FakePsutil(ppid_map=False)
    host = HostSource(clock=clock, psutil_module=ps, root=NO_PROC)
    host.open()
    proc = FakeProcess(3, children_=2)
    ps.processes[3] = proc
    for _ in range(CHILDREN_EVERY + 1):
        sample = host.sample([3], clock.now)
    assert sample.processes[0].children == 2
    assert proc.calls["children"] == 2


def test_a_new_process_joins_with_its_children_counted(ps: FakePsutil, clock: Clock, host: HostSource) -> None:
    ps.processes[3] = FakeProcess(3, children_=1)
    host.sample([3], clock.now)
    ps.processes[8] = FakeProcess(8, children_=6)
    assert [p.children for p in host.sample([3, 8], clock.now).processes] == [1, 6]


def test_identity_is_read_once(ps: FakePsutil, clock: Clock, host: HostSource) -> None:
    ps.processes[3] = FakeProcess(3)
    for _ in range(3):
        host.sample([3], clock.now)
    assert ps.processes[3].calls["cmdline"] == 1
    assert ps.processes[3].calls["username"] == 1
    assert ps.processes[3].calls["cpu_percent"] == 3


def test_rate_helper() -> None:
    assert rate(30.0, 10.0, 2.0) == 10.0
    assert rate(5.0, 10.0, 2.0) is None
    assert rate(30.0, None, 2.0) is None
    assert rate(30.0, 10.0, 0.0) is None


def test_real_psutil_reads_this_process() -> None:
    host = HostSource()
    host.open()
    try:
        sample = host.sample([os.getpid()], 1.0)
    finally:
        host.close()
    me = sample.process(os.getpid())
    assert me is not None
    assert me.rss_bytes is not None and me.rss_bytes > 0
    assert sample.memory_total_bytes is not None and sample.memory_total_bytes > 0


def test_swap_rates_are_unknown_on_windows(ps: FakePsutil, clock: Clock) -> None:
    ps.WINDOWS = True  # type: ignore[attr-defined]
    host = HostSource(clock=clock, psutil_module=ps, root=NO_PROC)
    host.open()
    idle_tick(ps, clock)
    sample = host.sample([], 1.0)
    assert sample.swap_in_bytes_s is None and sample.swap_out_bytes_s is None
    assert sample.swap_used_bytes == GIB


def _v2_container(root: Path, usage_usec: int, periods: int, throttled: int, cpu_some_us: int) -> None:
    """A cgroup v2 container with a 4-CPU quota and a 16 GiB limit, at the given counter values."""
    (root / "proc/self").mkdir(parents=True, exist_ok=True)
    (root / "proc/self/cgroup").write_text("0::/job\n")
    (root / "proc/self/mountinfo").write_text("30 23 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n")
    group = root / "sys/fs/cgroup/job"
    group.mkdir(parents=True, exist_ok=True)
    for path in (group, group.parent):
        (path / "cgroup.procs").write_text("")
    (group / "cpu.max").write_text("400000 100000\n")
    (group / "memory.max").write_text(f"{16 * GIB}\n")
    (group / "memory.current").write_text(f"{12 * GIB}\n")
    (group / "memory.events").write_text("low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n")
    (group / "cpu.stat").write_text(
        f"usage_usec {usage_usec}\nnr_periods {periods}\nnr_throttled {throttled}\nthrottled_usec {throttled * 1000}\n"
    )
    (group / "cpu.pressure").write_text(
        f"some avg10=12.00 avg60=0 avg300=0 total={cpu_some_us}\nfull avg10=0 avg60=0 avg300=0 total=0\n"
    )


def test_inside_a_container_the_cgroup_is_read_against_its_limits(ps: FakePsutil, clock: Clock, tmp_path: Path) -> None:
    _v2_container(tmp_path, usage_usec=0, periods=0, throttled=0, cpu_some_us=0)
    host = HostSource(clock=clock, psutil_module=ps, root=tmp_path)
    host.open()
    assert host.container is not None
    assert (host.container.cgroup_version, host.container.cpu_quota_cores) == (2, 4.0)
    assert host.container.memory_limit_bytes == 16 * GIB
    # Two seconds at the full quota of 4 CPUs, throttled in 8 of 20 periods; tasks waited for a CPU 0.5 s of 2.
    _v2_container(tmp_path, usage_usec=8_000_000, periods=20, throttled=8, cpu_some_us=500_000)
    idle_tick(ps, clock, 2.0)
    sample = host.sample([], 1.0)
    assert sample.container is not None and sample.psi is not None
    assert sample.container.cpu_pct_of_quota == 100.0
    assert sample.container.cpu_throttled_pct == 40.0
    assert sample.container.cpu_throttled_s == 0.008
    assert (sample.container.memory_used_bytes, sample.container.oom_kills) == (12 * GIB, 1)
    assert sample.psi.cpu_some_pct == 25.0


def test_without_a_cgroup_to_read_no_limits_are_reported(ps: FakePsutil, clock: Clock, tmp_path: Path) -> None:
    """An exporter in a pod of its own (`gputui export --ignore-own-cgroup`): its 4-CPU quota is not the jobs'."""
    _v2_container(tmp_path, usage_usec=0, periods=0, throttled=0, cpu_some_us=0)
    host = HostSource(clock=clock, psutil_module=ps, root=tmp_path, cgroup_pid=None)
    host.open()
    assert host.container is None
    _v2_container(tmp_path, usage_usec=8_000_000, periods=20, throttled=8, cpu_some_us=500_000)
    idle_tick(ps, clock, 2.0)
    sample = host.sample([], 1.0)
    assert (sample.container, sample.psi) == (None, None)
    assert sample.memory_total_bytes is not None  # the host itself is still read


def test_a_gpu_process_gets_its_run_queue_wait_and_container(ps: FakePsutil, clock: Clock, tmp_path: Path) -> None:
    proc_dir = tmp_path / "proc/4242"
    proc_dir.mkdir(parents=True)
    (proc_dir / "cgroup").write_text("0::/system.slice/docker-" + "3f2a9c1b7d0e" * 5 + "abcd.scope\n")
    (proc_dir / "status").write_text("Name:\tpython\nNSpid:\t4242\t7\n")
    (proc_dir / "schedstat").write_text("1000000000 0 10\n")
    ps.processes[4242] = FakeProcess(4242)
    host = HostSource(clock=clock, psutil_module=ps, root=tmp_path)
    host.open()
    host.sample([4242], 1.0)
    (proc_dir / "schedstat").write_text("4000000000 1750000000 20\n")  # 3 s on a CPU, 1.75 s waiting, of 5
    waits = []
    for tick in range(SCHED_EVERY):
        idle_tick(ps, clock)
        sample = host.sample([4242], 2.0 + tick).process(4242)
        assert sample is not None
        waits.append(sample.run_queue_wait_pct)
    assert waits == [None] * (SCHED_EVERY - 1) + [35.0]  # measured over SCHED_EVERY ticks
    proc = sample
    assert (proc.container, proc.container_pid) == ("3f2a9c1b7d0e", 7)


def test_a_gpu_process_gets_where_it_may_run_and_last_ran(ps: FakePsutil, clock: Clock, tmp_path: Path) -> None:
    process(tmp_path, 4242, cpus_allowed="0-3,8", last_cpu=2)
    ps.processes[4242] = FakeProcess(4242)
    host = HostSource(clock=clock, psutil_module=ps, root=tmp_path)
    host.open()
    idle_tick(ps, clock)
    host.sample([], 1.0)  # the first read of a process comes when it is first followed, off the SCHED_EVERY ticks
    first = host.sample([4242], 2.0).process(4242)
    assert first is not None and (first.cpus_allowed, first.last_cpu) == ((0, 1, 2, 3, 8), 2)
    process(tmp_path, 4242, cpus_allowed="0-3,8", last_cpu=3)  # the scheduler moved it
    seen = []
    for tick in range(SCHED_EVERY):
        idle_tick(ps, clock)
        sample = host.sample([4242], 3.0 + tick).process(4242)
        assert sample is not None
        seen.append(sample.last_cpu)
    assert seen == [2] * (SCHED_EVERY - 2) + [3, 3]  # read again on the next SCHED_EVERY tick, held in between


def test_without_cgroup_files_the_container_reads_unknown(ps: FakePsutil, clock: Clock) -> None:
    host = HostSource(clock=clock, psutil_module=ps, root=NO_PROC)
    host.open()
    idle_tick(ps, clock)
    sample = host.sample([], 1.0)
    assert host.container is not None and host.container.cgroup_version is None
    assert (sample.container, sample.psi, sample.shm_used_bytes, sample.oom_kills) == (None, None, None, None)


def _child_stat(root: Path, pid: int, parent: int, cpu_s: float, starttime: int = 500) -> None:
    """/proc/<pid>/stat of a data-loader worker that has used `cpu_s` seconds of CPU (as user time)."""
    line = stat_line(pid, "pt_data_worker", ppid=parent, utime=round(cpu_s * CLOCK_TICKS), starttime=starttime)
    write(root, f"proc/{pid}/stat", line)


def test_workers_cpu_is_the_childrens_cpu_over_the_sched_interval(ps: FakePsutil, clock: Clock, tmp_path: Path) -> None:
    ps.processes[4242] = FakeProcess(4242, child_pids=[501, 502, 503])
    for pid in (501, 502, 503):
        _child_stat(tmp_path, pid, 4242, cpu_s=10.0)
    host = HostSource(clock=clock, psutil_module=ps, root=tmp_path)
    host.open()
    seen = []
    for tick in range(SCHED_EVERY + 1):
        if tick == SCHED_EVERY:
            _child_stat(tmp_path, 501, 4242, cpu_s=15.0)  # a full core over the 5 s between the readings
            _child_stat(tmp_path, 502, 4242, cpu_s=12.5)  # half a core
            (tmp_path / "proc/503/stat").unlink()  # exited: drops out
        sample = host.sample([4242], clock.now).process(4242)
        assert sample is not None
        seen.append(sample.workers_cpu_pct)
        idle_tick(ps, clock)
    assert seen[:SCHED_EVERY] == [None] * SCHED_EVERY  # one reading is no interval
    assert seen[-1] == pytest.approx(150.0)
    assert sample.children == 3  # counted on the CHILDREN_EVERY cadence, not when a worker exits


def test_workers_run_queue_wait_is_the_childrens_over_the_sched_interval(
    ps: FakePsutil, clock: Clock, tmp_path: Path
) -> None:
    """What the workers wanted of a CPU and did not get: their schedstat waits together, 100 = one all the time;
    unknown while one of them cannot be read."""
    ps.processes[4242] = FakeProcess(4242, child_pids=[501, 502])
    for pid in (501, 502):
        _child_stat(tmp_path, pid, 4242, cpu_s=10.0)
        write(tmp_path, f"proc/{pid}/schedstat", "10000000000 1000000000 50\n")
    host = HostSource(clock=clock, psutil_module=ps, root=tmp_path)
    host.open()
    seen = []
    for tick in range(2 * SCHED_EVERY + 1):
        if tick == SCHED_EVERY:
            write(tmp_path, "proc/501/schedstat", "15000000000 6000000000 90\n")  # waited 5 s of the 5
            write(tmp_path, "proc/502/schedstat", "12500000000 3500000000 70\n")  # 2.5 s
        if tick == 2 * SCHED_EVERY:
            (tmp_path / "proc/502/schedstat").unlink()
        sample = host.sample([4242], clock.now).process(4242)
        assert sample is not None
        if tick % SCHED_EVERY == 0:
            seen.append(sample.workers_run_queue_wait_pct)
        idle_tick(ps, clock)
    assert seen == [None, pytest.approx(150.0), None]


def test_workers_cpu_leaves_out_a_reused_pid_and_a_new_worker(ps: FakePsutil, clock: Clock, tmp_path: Path) -> None:
    ps.processes[4242] = FakeProcess(4242, child_pids=[501, 502])
    _child_stat(tmp_path, 501, 4242, cpu_s=10.0)
    _child_stat(tmp_path, 502, 4242, cpu_s=10.0)
    host = HostSource(clock=clock, psutil_module=ps, root=tmp_path)
    host.open()
    readings: list[float | None] = []
    for tick in range(2 * CHILDREN_EVERY + 1):
        if tick == SCHED_EVERY:
            _child_stat(tmp_path, 501, 4242, cpu_s=0.5, starttime=900)  # 501 exited; its PID is another process
            _child_stat(tmp_path, 502, 4242, cpu_s=12.5)
        if tick == CHILDREN_EVERY - 1:  # a worker restarted under a new PID, seen by the next scan
            ps.processes[4242].child_pids = [502, 601]
            _child_stat(tmp_path, 601, 4242, cpu_s=0.0)
        if tick == 2 * CHILDREN_EVERY:
            _child_stat(tmp_path, 601, 4242, cpu_s=2.5)
            _child_stat(tmp_path, 502, 4242, cpu_s=15.0)
        sample = host.sample([4242], clock.now).process(4242)
        assert sample is not None
        if tick % SCHED_EVERY == 0:
            readings.append(sample.workers_cpu_pct)
        idle_tick(ps, clock)
    # Tick 5: only 502 (2.5 s in 5 s); tick 10: nothing moved, 601 first read; tick 15: idle; tick 20: both.
    assert readings == [None, pytest.approx(50.0), 0.0, 0.0, pytest.approx(100.0)]


def test_workers_cpu_is_zero_without_workers_and_unknown_when_they_cannot_be_counted(clock: Clock) -> None:
    for ppid_map, denied, expected in ((True, set(), 0.0), (False, {"children"}, None)):
        ps = FakePsutil(ppid_map=ppid_map)
        ps.processes[7] = FakeProcess(7, children_=0, denied=denied)
        host = HostSource(clock=clock, psutil_module=ps, root=NO_PROC)
        host.open()
        for _ in range(SCHED_EVERY + 1):
            sample = host.sample([7], clock.now).process(7)
            idle_tick(ps, clock)
        assert sample is not None and sample.workers_cpu_pct == expected


def test_workers_cpu_of_real_children(tmp_path: Path) -> None:
    """A real parent with two children, one spinning and one asleep: about one core, read from the real /proc."""
    script = (
        "import os, sys, time\n"
        "for busy in (True, False):\n"
        "    if os.fork() == 0:\n"
        "        end = time.monotonic() + 60\n"
        "        while busy and time.monotonic() < end:\n"
        "            pass\n"
        "        time.sleep(60)\n"
        "        os._exit(0)\n"
        "print('ready', flush=True)\n"
        "time.sleep(60)\n"
    )
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, start_new_session=True)
    try:
        assert parent.stdout is not None and parent.stdout.readline().strip() == b"ready"
        host = HostSource()
        host.open()
        for _ in range(SCHED_EVERY + 1):
            sample = host.sample([parent.pid], time.time()).process(parent.pid)
            time.sleep(0.2)
        host.close()
    finally:
        os.killpg(parent.pid, signal.SIGKILL)
        parent.wait(timeout=10)
    assert sample is not None and sample.children == 2
    print(f"workers_cpu_pct of one spinning child and one asleep: {sample.workers_cpu_pct}")
    # One core over ~1 s; a machine busy with other work may give the spinning child less of it.
    assert sample.workers_cpu_pct is not None and 40 <= sample.workers_cpu_pct <= 130
    print(f"workers_run_queue_wait_pct: {sample.workers_run_queue_wait_pct}")
    assert sample.workers_run_queue_wait_pct is not None and sample.workers_run_queue_wait_pct >= 0.0  # schedstat


def test_the_cgroup_read_is_the_named_processs(ps: FakePsutil, clock: Clock, tmp_path: Path) -> None:
    """Following one job, the limits and counters are its cgroup's, not this process's."""
    _v2_container(tmp_path, usage_usec=0, periods=0, throttled=0, cpu_some_us=0)  # "self": a 4-CPU quota
    job = tmp_path / "sys/fs/cgroup/lab"
    job.mkdir()
    (job / "cgroup.procs").write_text("")
    (job / "cpu.max").write_text("100000 100000\n")
    (job / "cpu.stat").write_text("usage_usec 0\nnr_periods 0\nnr_throttled 0\nthrottled_usec 0\n")
    write(tmp_path, "proc/4242/cgroup", "0::/lab\n")
    host = HostSource(clock=clock, psutil_module=ps, root=tmp_path, cgroup_pid=4242)
    host.open()
    assert host.container is not None and host.container.cpu_quota_cores == 1.0
    (job / "cpu.stat").write_text("usage_usec 1500000\nnr_periods 20\nnr_throttled 15\nthrottled_usec 400000\n")
    idle_tick(ps, clock, 2.0)
    sample = host.sample([], 1.0)
    assert sample.container is not None
    assert (sample.container.cpu_pct_of_quota, sample.container.cpu_throttled_pct) == (75.0, 75.0)


def _busy(ps: FakePsutil, clock: Clock, seconds: float = 1.0) -> None:
    """Let time pass with every core busy."""
    clock.now += seconds
    for core in range(len(ps.cores)):
        ps.advance_cpu(core, user=seconds)


def _neighbours(ps: FakePsutil) -> None:
    """A GPU process (4242) with a data-loader worker (4300), this process, and six others: bob's two stress
    workers, carol's build, dave's editor, an idle shell and a root daemon."""
    ps.processes = {
        4242: FakeProcess(4242, child_pids=[4300]),
        4300: FakeProcess(4300, ppid_=4242, cmdline_=["python", "train.py"]),
        os.getpid(): FakeProcess(os.getpid(), name_="gputui", cmdline_=["gputui"]),
        7000: FakeProcess(7000, name_="stress", username_="bob", cmdline_=["stress", "-c", "2"]),
        7001: FakeProcess(7001, name_="stress", username_="bob", cmdline_=["stress", "-c", "2"]),
        7002: FakeProcess(7002, name_="cc1", username_="carol", cmdline_=["cc1", "-O2", "x" * 300]),
        7003: FakeProcess(7003, name_="vim", username_="dave", cmdline_=["vim"]),
        7004: FakeProcess(7004, name_="bash", username_="erin", cmdline_=["bash"]),
        7005: FakeProcess(7005, name_="sshd", username_="root", cmdline_=[], denied={"username"}),
    }


def _spend(ps: FakePsutil, **seconds: float) -> None:
    for pid, spent in seconds.items():
        ps.processes[int(pid.lstrip("p"))].cpu_seconds += spent


def test_while_the_cpus_are_busy_the_busiest_other_processes_are_named(
    ps: FakePsutil, clock: Clock, host: HostSource
) -> None:
    _neighbours(ps)
    _busy(ps, clock)
    assert host.sample([4242], clock.now).busiest_others == ()  # the first busy tick reads their counters
    _busy(ps, clock, 2.0)
    _spend(ps, p4242=2.0, p4300=2.0, **{f"p{os.getpid()}": 1.9}, p7000=1.8, p7001=1.7, p7002=1.0, p7003=0.2)
    _spend(ps, p7005=0.1)
    others = host.sample([4242], clock.now).busiest_others
    # Neither the GPU process nor its worker, nor gputui; busiest first, five at most, none that used no CPU.
    assert [(p.pid, p.user, p.cpu_pct) for p in others] == [
        (7000, "bob", 90.0),
        (7001, "bob", 85.0),
        (7002, "carol", 50.0),
        (7003, "dave", 10.0),
        (7005, None, 5.0),
    ]
    assert others[0].name == "stress" and others[0].cmdline == "stress -c 2"
    assert others[2].cmdline is not None and len(others[2].cmdline) == 160 and others[2].cmdline.endswith("…")
    assert others[4].cmdline is None


def test_while_the_cpus_have_room_no_process_is_scanned(ps: FakePsutil, clock: Clock, host: HostSource) -> None:
    _neighbours(ps)
    for _ in range(3):
        idle_tick(ps, clock)
        _spend(ps, p7000=1.0)
        assert host.sample([4242], clock.now).busiest_others == ()
    assert ps.calls["process_iter"] == 0


def test_a_busy_spell_after_an_idle_one_starts_its_counters_anew(
    ps: FakePsutil, clock: Clock, host: HostSource
) -> None:
    """The CPU a process used over the idle spell would understate what it takes now: a busy tick after an idle
    one only reads the counters again."""
    _neighbours(ps)
    _busy(ps, clock)
    host.sample([4242], clock.now)
    idle_tick(ps, clock)
    host.sample([4242], clock.now)
    _busy(ps, clock)
    _spend(ps, p7000=1.0)
    assert host.sample([4242], clock.now).busiest_others == ()
    _busy(ps, clock)
    _spend(ps, p7000=1.0)
    assert [p.pid for p in host.sample([4242], clock.now).busiest_others] == [7000]


def test_real_busy_processes_outside_the_job_are_named(tmp_path: Path) -> None:
    """Real processes from the real /proc: a spinner is named; a GPU process's spinning worker is not, nor the
    process that samples (run as a child of its own, so that neither spinner descends from it)."""
    spin = "import os, sys, time\nend = time.monotonic() + 60\nwhile time.monotonic() < end:\n    pass\n"
    job = (
        "import os, time\n"
        "if os.fork() == 0:\n" + "".join("    " + line + "\n" for line in spin.splitlines()) + "    os._exit(0)\n"
        "time.sleep(60)\n"
    )
    sampler = (
        "import json, sys, time\n"
        "from gputui.sources.host import source\n"
        "source.OTHERS_SHOWN = 100000\n"
        "host = source.HostSource(busy_pct=0.0)\n"
        "host.open()\n"
        "spinner, job = int(sys.argv[1]), int(sys.argv[2])\n"
        "for _ in range(50):\n"
        "    others = host.sample([job], time.time()).busiest_others\n"
        "    if any(p.pid == spinner and p.cpu_pct for p in others):\n"
        "        break\n"
        "    time.sleep(0.2)\n"
        "print(json.dumps([[p.pid, p.name, p.cmdline, p.cpu_pct] for p in others]))\n"
    )
    started = [
        subprocess.Popen([sys.executable, "-c", script], start_new_session=True)
        for script in (spin + "# neighbour", job)
    ]
    try:
        spinner, parent = started
        run = subprocess.run(
            [sys.executable, "-c", sampler, str(spinner.pid), str(parent.pid)],
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[3])},
        )
    finally:
        for process in started:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)
    assert run.returncode == 0, run.stderr
    others = {pid: (name, cmdline, cpu) for pid, name, cmdline, cpu in json.loads(run.stdout)}
    name, cmdline, cpu = others[spinner.pid]
    # Its command line whole, or cut with "…" where longer than shown: sys.executable is as long as the path the
    # project is checked out under. Its script's newlines show as `\n`: it is one line of the view.
    command = clean(" ".join(spinner.args))
    shown = command if len(command) <= OTHERS_CMDLINE_CHARS else command[: OTHERS_CMDLINE_CHARS - 1] + "…"
    assert name.startswith("python") and cmdline == shown and cpu > 0
    commands = [cmdline or "" for _, cmdline, _ in others.values()]
    assert not [c for c in commands if "time.sleep(60)" in c]  # the job and its worker, forked with its command
    assert not [c for c in commands if "OTHERS_SHOWN" in c]  # the sampler itself
