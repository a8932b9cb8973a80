"""gputui.sources.host.cgroup over fake v1 and v2 trees: where the group is, its limits, its counters over an interval.

Each test builds the few files it stands on (tests/sources/host/fake_tree.py) under tmp_path and points `root` at it;
time is the fake clock, so rates are exact.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gputui.model import ContainerSample, PsiSample, parse_cpus
from gputui.sources.host.cgroup import (
    CgroupDirs,
    CgroupReader,
    host_oom_kills,
    keyed,
    locate,
    read_cgroup,
    shm_bytes,
)
from tests.conftest import Clock
from tests.sources.host.fake_tree import (
    CGROUP_FS,
    cgroup_v1,
    cgroup_v2,
    make_group,
    pressure,
    v1_counters,
    v1_limits,
    v2_cpu_stat,
    write,
)

GIB = 1024**3


@pytest.fixture(autouse=True)
def _no_kubernetes_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """The runtime check reads the real environment: keep a CI runner's Kubernetes variables out of it."""
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)


# --- limits: unlimited, tightest along the lineage, layouts -------------------------------------------------


def test_v1_unlimited_reads_none(tmp_path: Path) -> None:
    dirs = cgroup_v1(tmp_path)
    v1_limits(dirs["cpu"], quota_us=-1, memory=dirs["memory"])  # the huge "no limit" number
    info = read_cgroup(tmp_path).info
    assert info.cgroup_version == 1
    assert info.cpu_quota_cores is None
    assert info.memory_limit_bytes is None


def test_v2_unlimited_reads_none(tmp_path: Path) -> None:
    group = cgroup_v2(tmp_path)
    (group / "cpu.max").write_text("max 100000\n")
    (group / "memory.max").write_text("max\n")
    info = read_cgroup(tmp_path).info
    assert info.cgroup_version == 2
    assert info.cpu_quota_cores is None
    assert info.memory_limit_bytes is None


def test_v1_limits_are_read(tmp_path: Path) -> None:
    dirs = cgroup_v1(tmp_path)
    v1_limits(dirs["cpu"], quota_us=250_000, period_us=100_000, memory=dirs["memory"], limit=str(8 * GIB))
    info = read_cgroup(tmp_path).info
    assert info.cpu_quota_cores == 2.5
    assert info.memory_limit_bytes == 8 * GIB


def test_v1_quota_on_a_parent_binds_and_its_group_counts_the_throttling(tmp_path: Path) -> None:
    """Kubernetes sets the pod's limit on the pod group, the container's on its own: the tighter one binds."""
    dirs = cgroup_v1(tmp_path, group="/kubepods/podA/ctr")
    pod_cpu, pod_memory = dirs["cpu"].parent, dirs["memory"].parent
    v1_limits(pod_cpu, quota_us=150_000, memory=pod_memory, limit=str(2 * GIB))
    v1_limits(dirs["cpu"], quota_us=400_000, memory=dirs["memory"], limit=str(4 * GIB))
    v1_limits(pod_cpu.parent, quota_us=-1)  # kubepods: none
    cgroup = read_cgroup(tmp_path)
    assert cgroup.info.cpu_quota_cores == 1.5
    assert cgroup.info.memory_limit_bytes == 2 * GIB
    assert cgroup.dirs.cpu == pod_cpu  # throttling is counted where the quota is
    assert cgroup.dirs.cpuacct == dirs["cpuacct"]  # usage stays the group's own


def test_v1_a_tighter_child_quota_wins_over_its_parent(tmp_path: Path) -> None:
    dirs = cgroup_v1(tmp_path, group="/kubepods/podA/ctr")
    v1_limits(dirs["cpu"].parent, quota_us=400_000)
    v1_limits(dirs["cpu"], quota_us=50_000)
    cgroup = read_cgroup(tmp_path)
    assert cgroup.info.cpu_quota_cores == 0.5
    assert cgroup.dirs.cpu == dirs["cpu"]


def test_v2_quota_on_a_parent_binds(tmp_path: Path) -> None:
    group = cgroup_v2(tmp_path, group="/kubepods.slice/kubepods-pod1.slice/cri-containerd-abc.scope")
    (group / "cpu.max").write_text("max 100000\n")
    (group.parent / "cpu.max").write_text("150000 100000\n")
    (group.parent.parent / "cpu.max").write_text("800000 100000\n")
    (group / "memory.max").write_text(f"{3 * GIB}\n")
    (group.parent / "memory.max").write_text("max\n")
    cgroup = read_cgroup(tmp_path)
    assert cgroup.info.cpu_quota_cores == 1.5
    assert cgroup.info.memory_limit_bytes == 3 * GIB
    assert cgroup.dirs.cpu == group.parent


def test_a_directory_without_cgroup_procs_is_not_a_group(tmp_path: Path) -> None:
    """/sys/fs/cgroup (the tmpfs v1 hierarchies hang from) is no group: a stray limit file there is not read."""
    dirs = cgroup_v1(tmp_path)
    v1_limits(dirs["cpu"], quota_us=-1)
    v1_limits(tmp_path / CGROUP_FS, quota_us=10_000)
    assert read_cgroup(tmp_path).info.cpu_quota_cores is None


def test_v1_comounted_cpu_cpuacct(tmp_path: Path, clock: Clock) -> None:
    """systemd mounts cpu and cpuacct together at /sys/fs/cgroup/cpu,cpuacct: one directory serves both."""
    dirs = cgroup_v1(tmp_path, group="/system.slice/train.service", comounted=True)
    assert dirs["cpu"] == dirs["cpuacct"]
    assert dirs["cpu"].parts[-3] == "cpu,cpuacct"
    v1_limits(dirs["cpu"], quota_us=50_000)
    cgroup = read_cgroup(tmp_path)
    assert cgroup.info.cpu_quota_cores == 0.5
    assert cgroup.dirs.cpu == cgroup.dirs.cpuacct == dirs["cpu"]
    reader = CgroupReader(cgroup, tmp_path, clock)
    v1_counters(dirs["cpu"], dirs["cpu"], usage_ns=0, periods=0, throttled=0, throttled_ns=0)
    reader.sample()
    clock.advance(1.0)
    v1_counters(dirs["cpu"], dirs["cpu"], usage_ns=400_000_000, periods=10, throttled=8, throttled_ns=10**8)
    container, _ = reader.sample()
    assert container is not None
    assert container.cpu_pct_of_quota == pytest.approx(80.0)
    assert container.cpu_throttled_pct == pytest.approx(80.0)


@pytest.mark.parametrize("version", [1, 2])
def test_cgroup_namespace_reads_the_mount_root_as_the_group(tmp_path: Path, version: int) -> None:
    """With a cgroup namespace the group reads `/` and the mount shows the container's group as its root."""
    if version == 1:
        cpu = cgroup_v1(tmp_path, group="/", mount_root="/docker/0123abcd")["cpu"]
        assert cpu == tmp_path / CGROUP_FS / "cpu"
        v1_limits(cpu, quota_us=300_000)
    else:
        cpu = cgroup_v2(tmp_path, group="/", mount_root="/system.slice/docker-0123abcd.scope")
        assert cpu == tmp_path / CGROUP_FS
        (cpu / "cpu.max").write_text("300000 100000\n")
    dirs = locate(tmp_path)
    assert dirs.version == version
    assert dirs.cpu == cpu
    assert read_cgroup(tmp_path).info.cpu_quota_cores == 3.0


def test_v1_private_mount_without_namespace(tmp_path: Path) -> None:
    """Docker without a cgroup namespace: the group reads /docker/<id> and the mount's root is that group."""
    cpu = cgroup_v1(tmp_path, group="/docker/0123abcd", mount_root="/docker/0123abcd")["cpu"]
    v1_limits(cpu, quota_us=100_000)
    assert locate(tmp_path).cpu == cpu == tmp_path / CGROUP_FS / "cpu"
    assert read_cgroup(tmp_path).info.cpu_quota_cores == 1.0


@pytest.mark.parametrize("version", [1, 2])
def test_another_process_is_read_in_its_own_group(tmp_path: Path, version: int) -> None:
    """A monitor that follows a job reads the job's group (from /proc/PID/cgroup) through its own mounts; this
    process's group and limits stay as they were for every caller that names no PID."""
    if version == 1:
        dirs = cgroup_v1(tmp_path, group="/")
        v1_limits(dirs["cpu"], quota_us=-1)
        job = make_group(tmp_path / CGROUP_FS / "cpu", "/lab/job")
        make_group(tmp_path / CGROUP_FS / "cpuacct", "/lab/job")
        v1_limits(job, quota_us=150_000)
        write(tmp_path, "proc/4242/cgroup", "4:cpuacct:/lab/job\n3:cpu:/lab/job\n1:name=systemd:/\n")
    else:
        cgroup_v2(tmp_path, group="/")
        job = make_group(tmp_path / CGROUP_FS, "/lab/job")
        (job / "cpu.max").write_text("150000 100000\n")
        write(tmp_path, "proc/4242/cgroup", "0::/lab/job\n")
    assert locate(tmp_path, pid=4242).cpu == job
    assert read_cgroup(tmp_path, 4242).info.cpu_quota_cores == 1.5
    assert read_cgroup(tmp_path, 4242).dirs.cpu == job  # the group the counters are read from
    assert read_cgroup(tmp_path).info.cpu_quota_cores is None  # "self": this process's group, no quota
    assert read_cgroup(tmp_path, 999).info.cgroup_version is None  # no such process: unknown, not an error


def test_cpuset_v2_effective(tmp_path: Path) -> None:
    group = cgroup_v2(tmp_path)
    (group / "cpuset.cpus.effective").write_text("0-3,8\n")
    assert read_cgroup(tmp_path).info.cpuset_cpus == (0, 1, 2, 3, 8)


def test_cpuset_v1_prefers_effective_cpus_and_falls_back(tmp_path: Path) -> None:
    cpuset = cgroup_v1(tmp_path)["cpuset"]
    (cpuset / "cpuset.cpus").write_text("0-7\n")
    assert read_cgroup(tmp_path).info.cpuset_cpus == tuple(range(8))
    (cpuset / "cpuset.effective_cpus").write_text("2,4-5\n")
    assert read_cgroup(tmp_path).info.cpuset_cpus == (2, 4, 5)


@pytest.mark.parametrize(
    ("text", "cpus"),
    [
        ("0-3,8", (0, 1, 2, 3, 8)),
        ("5\n", (5,)),
        ("0-1,10-11", (0, 1, 10, 11)),
        ("", None),
        ("\n", None),
        ("0-x", None),
        (None, None),
    ],
)
def test_parse_cpus(text: str | None, cpus: tuple[int, ...] | None) -> None:
    assert parse_cpus(text) == cpus


def test_keyed_skips_lines_that_are_not_key_number() -> None:
    assert keyed("nr_periods 10\nbogus\nname text\nnr_throttled 3\n") == {"nr_periods": 10, "nr_throttled": 3}
    assert keyed(None) == {}


# --- missing files: None, never an exception ----------------------------------------------------------------


def test_empty_root_gives_version_none_and_a_reader_of_nothing(tmp_path: Path, clock: Clock) -> None:
    cgroup = read_cgroup(tmp_path)
    assert cgroup.info.cgroup_version is None
    assert cgroup.info.runtime is None
    assert (cgroup.info.cpu_quota_cores, cgroup.info.memory_limit_bytes, cgroup.info.cpuset_cpus) == (None, None, None)
    assert cgroup.info.shm_bytes is None
    reader = CgroupReader(cgroup, tmp_path, clock)
    assert reader.sample() == (None, None)
    clock.advance(1.0)
    assert reader.sample() == (None, None)


@pytest.mark.parametrize("version", [1, 2])
def test_groups_without_their_files_read_none(tmp_path: Path, clock: Clock, version: int) -> None:
    if version == 1:
        cgroup_v1(tmp_path)
    else:
        cgroup_v2(tmp_path)
    cgroup = read_cgroup(tmp_path)
    assert cgroup.info.cgroup_version == version
    assert (cgroup.info.cpu_quota_cores, cgroup.info.memory_limit_bytes, cgroup.info.cpuset_cpus) == (None, None, None)
    reader = CgroupReader(cgroup, tmp_path, clock)
    for _ in range(2):
        container, psi = reader.sample()
        assert container is not None  # the group is known; its figures are not
        assert container.cpu_pct_of_quota is None
        assert container.cpu_throttled_pct is None
        assert container.cpu_throttled_s is None
        assert container.memory_used_bytes is None
        assert container.oom_kills is None
        assert psi is None
        clock.advance(1.0)


def test_mountinfo_missing_leaves_the_dirs_unknown(tmp_path: Path) -> None:
    write(tmp_path, "proc/self/cgroup", "4:cpu,cpuacct:/docker/abc\n")
    dirs = locate(tmp_path)
    assert dirs.version == 1
    assert dirs.cpu is None and dirs.memory is None


def test_garbage_in_the_files_reads_none(tmp_path: Path) -> None:
    group = cgroup_v2(tmp_path)
    (group / "cpu.max").write_text("lots 100000\n")
    (group / "memory.max").write_text("\x00\x01\n")
    (group / "cpuset.cpus.effective").write_text("all\n")
    info = read_cgroup(tmp_path).info
    assert (info.cpu_quota_cores, info.memory_limit_bytes, info.cpuset_cpus) == (None, None, None)


# --- runtime detection ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("mark", "runtime", "recognised_by"),
    [
        (".dockerenv", "docker", "/.dockerenv"),
        ("run/.containerenv", "podman", "/run/.containerenv"),
        ("kubepods", "kubernetes", "/proc/self/cgroup"),
        ("environ", "lxc", "container= in /proc/1/environ"),
        ("env", "kubernetes", "KUBERNETES_SERVICE_HOST"),
        ("nothing", None, None),
    ],
)
def test_runtime_detection(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mark: str, runtime: str | None, recognised_by: str | None
) -> None:
    cgroup_v2(tmp_path, group="/user.slice/user-1000.slice/session-3.scope")
    write(tmp_path, "proc/1/environ", "PATH=/usr/bin\0HOME=/root\0")
    if mark in (".dockerenv", "run/.containerenv"):
        write(tmp_path, mark, "")
    elif mark == "kubepods":
        cgroup_v2(tmp_path, group="/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1.slice")
    elif mark == "environ":
        write(tmp_path, "proc/1/environ", "PATH=/usr/bin\0container=lxc\0")
    elif mark == "env":
        monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1")
    info = read_cgroup(tmp_path).info
    assert (info.runtime, info.recognised_by) == (runtime, recognised_by)


def test_an_empty_container_variable_is_no_runtime(tmp_path: Path) -> None:
    write(tmp_path, "proc/1/environ", "container=\0")
    assert read_cgroup(tmp_path).info.runtime is None


# --- counters over an interval --------------------------------------------------------------------------------


def test_v2_counters_over_two_reads(tmp_path: Path, clock: Clock) -> None:
    group = cgroup_v2(tmp_path)
    (group / "cpu.max").write_text("200000 100000\n")
    (group / "memory.max").write_text(f"{4 * GIB}\n")
    (group / "memory.current").write_text(f"{GIB}\n")
    reader = CgroupReader(read_cgroup(tmp_path), tmp_path, clock)
    v2_cpu_stat(group, usage_us=1_000_000, periods=100, throttled=10, throttled_us=3_000_000)
    first, _ = reader.sample()
    assert first is not None
    assert (first.cpu_pct_of_quota, first.cpu_throttled_pct, first.cpu_throttled_s) == (None, None, None)
    assert (first.memory_used_bytes, first.memory_limit_bytes) == (GIB, 4 * GIB)

    clock.advance(2.0)
    v2_cpu_stat(group, usage_us=4_000_000, periods=120, throttled=15, throttled_us=3_500_000)
    second, _ = reader.sample()
    assert second is not None
    assert second.cpu_pct_of_quota == pytest.approx(75.0)  # 3 s of CPU in 2 s against 2 cores
    assert second.cpu_throttled_pct == pytest.approx(25.0)  # 5 of 20 periods
    assert second.cpu_throttled_s == pytest.approx(0.5)


def test_v1_counters_over_two_reads(tmp_path: Path, clock: Clock) -> None:
    dirs = cgroup_v1(tmp_path)
    v1_limits(dirs["cpu"], quota_us=100_000, memory=dirs["memory"], limit=str(2 * GIB))
    (dirs["memory"] / "memory.usage_in_bytes").write_text(f"{GIB // 2}\n")
    reader = CgroupReader(read_cgroup(tmp_path), tmp_path, clock)
    v1_counters(dirs["cpu"], dirs["cpuacct"], usage_ns=10**9, periods=50, throttled=0, throttled_ns=0)
    reader.sample()
    clock.advance(1.0)
    v1_counters(dirs["cpu"], dirs["cpuacct"], usage_ns=15 * 10**8, periods=60, throttled=4, throttled_ns=2 * 10**8)
    container, _ = reader.sample()
    assert container is not None
    assert container.cpu_pct_of_quota == pytest.approx(50.0)
    assert container.cpu_throttled_pct == pytest.approx(40.0)
    assert container.cpu_throttled_s == pytest.approx(0.2)
    assert (container.memory_used_bytes, container.memory_limit_bytes) == (GIB // 2, 2 * GIB)


def test_a_counter_going_backwards_reads_none(tmp_path: Path, clock: Clock) -> None:
    """A group recreated between reads (a restarted container) restarts its counters: no negative rates."""
    group = cgroup_v2(tmp_path)
    (group / "cpu.max").write_text("100000 100000\n")
    reader = CgroupReader(read_cgroup(tmp_path), tmp_path, clock)
    v2_cpu_stat(group, usage_us=9_000_000, periods=500, throttled=100, throttled_us=5_000_000)
    reader.sample()
    clock.advance(1.0)
    v2_cpu_stat(group, usage_us=100_000, periods=10, throttled=1, throttled_us=1_000)
    container, _ = reader.sample()
    assert container is not None
    assert (container.cpu_pct_of_quota, container.cpu_throttled_pct, container.cpu_throttled_s) == (None, None, None)
    # ... and the next interval is measured from the new values.
    clock.advance(1.0)
    v2_cpu_stat(group, usage_us=600_000, periods=20, throttled=6, throttled_us=101_000)
    container, _ = reader.sample()
    assert container is not None
    assert container.cpu_pct_of_quota == pytest.approx(50.0)
    assert container.cpu_throttled_pct == pytest.approx(50.0)
    assert container.cpu_throttled_s == pytest.approx(0.1)


def test_no_periods_in_the_interval_is_no_throttled_share(tmp_path: Path, clock: Clock) -> None:
    """An idle group runs no CFS periods: 0 of 0 is unknown, not 0 % and not a division by zero."""
    group = cgroup_v2(tmp_path)
    (group / "cpu.max").write_text("100000 100000\n")
    reader = CgroupReader(read_cgroup(tmp_path), tmp_path, clock)
    v2_cpu_stat(group, usage_us=0, periods=7, throttled=0, throttled_us=0)
    reader.sample()
    clock.advance(1.0)
    container, _ = reader.sample()
    assert container is not None
    assert container.cpu_throttled_pct is None
    assert container.cpu_pct_of_quota == 0.0


def test_no_quota_gives_no_share_of_it(tmp_path: Path, clock: Clock) -> None:
    group = cgroup_v2(tmp_path)
    (group / "cpu.max").write_text("max 100000\n")
    reader = CgroupReader(read_cgroup(tmp_path), tmp_path, clock)
    v2_cpu_stat(group, usage_us=0, periods=0, throttled=0, throttled_us=0)
    reader.sample()
    clock.advance(1.0)
    v2_cpu_stat(group, usage_us=1_000_000, periods=0, throttled=0, throttled_us=0)
    container, _ = reader.sample()
    assert container is not None
    assert container.cpu_pct_of_quota is None


def test_v2_throttling_is_read_from_the_binding_parent(tmp_path: Path, clock: Clock) -> None:
    group = cgroup_v2(tmp_path, group="/pod/ctr")
    (group.parent / "cpu.max").write_text("100000 100000\n")
    reader = CgroupReader(read_cgroup(tmp_path), tmp_path, clock)
    v2_cpu_stat(group, usage_us=0, periods=0, throttled=0, throttled_us=0)  # the child's own: never throttled
    v2_cpu_stat(group.parent, usage_us=0, periods=0, throttled=0, throttled_us=0)
    reader.sample()
    clock.advance(1.0)
    v2_cpu_stat(group.parent, usage_us=1_000_000, periods=10, throttled=9, throttled_us=400_000)
    container, _ = reader.sample()
    assert container is not None
    assert container.cpu_throttled_pct == pytest.approx(90.0)
    assert container.cpu_throttled_s == pytest.approx(0.4)


# --- PSI --------------------------------------------------------------------------------------------------------


def test_psi_first_read_is_avg10_then_the_rate_of_total(tmp_path: Path, clock: Clock) -> None:
    cgroup_v1(tmp_path)  # v1: the machine's PSI
    proc = tmp_path / "proc/pressure"
    pressure(proc / "cpu", some_total_us=1_000_000, some_avg10=12.5)
    pressure(proc / "io", some_total_us=0, full_total_us=0)
    pressure(proc / "memory", some_total_us=500, full_total_us=100)
    reader = CgroupReader(read_cgroup(tmp_path), tmp_path, clock)
    _, psi = reader.sample()
    assert psi is not None
    assert psi.cpu_some_pct == 12.5
    assert psi.io_some_pct == 0.0

    clock.advance(2.0)
    pressure(proc / "cpu", some_total_us=1_500_000, some_avg10=99.0)  # 0.5 s stalled in 2 s
    pressure(proc / "io", some_total_us=200_000, full_total_us=100_000)
    pressure(proc / "memory", some_total_us=500, full_total_us=100)
    _, psi = reader.sample()
    assert psi is not None
    assert psi.cpu_some_pct == pytest.approx(25.0)
    assert psi.io_some_pct == pytest.approx(10.0)
    assert psi.io_full_pct == pytest.approx(5.0)
    assert psi.memory_some_pct == 0.0
    assert psi.memory_full_pct == 0.0


def test_psi_without_full_line_leaves_full_unknown(tmp_path: Path, clock: Clock) -> None:
    """Kernels before 5.13 write no `full` line for cpu; io written only `some` leaves io_full None too."""
    pressure(tmp_path / "proc/pressure/io", some_total_us=10)
    reader = CgroupReader(read_cgroup(tmp_path), tmp_path, clock)
    reader.sample()
    clock.advance(1.0)
    _, psi = reader.sample()
    assert psi is not None
    assert psi.io_some_pct == 0.0
    assert (psi.io_full_pct, psi.cpu_some_pct, psi.memory_some_pct) == (None, None, None)


def test_v2_psi_reads_the_groups_pressure_not_the_machines(tmp_path: Path, clock: Clock) -> None:
    group = cgroup_v2(tmp_path)
    pressure(group / "cpu.pressure", some_total_us=0, full_total_us=0, some_avg10=3.0)
    pressure(tmp_path / "proc/pressure/cpu", some_total_us=0, some_avg10=80.0)
    reader = CgroupReader(read_cgroup(tmp_path), tmp_path, clock)
    _, psi = reader.sample()
    assert psi is not None and psi.cpu_some_pct == 3.0
    clock.advance(1.0)
    pressure(group / "cpu.pressure", some_total_us=300_000, full_total_us=0)
    pressure(tmp_path / "proc/pressure/cpu", some_total_us=900_000)
    _, psi = reader.sample()
    assert psi is not None and psi.cpu_some_pct == pytest.approx(30.0)


def test_psi_rate_is_capped_at_100(tmp_path: Path, clock: Clock) -> None:
    """A stall counted just across the read boundary can exceed the interval: it still reads 100 %."""
    pressure(tmp_path / "proc/pressure/cpu", some_total_us=0)
    reader = CgroupReader(read_cgroup(tmp_path), tmp_path, clock)
    reader.sample()
    clock.advance(1.0)
    pressure(tmp_path / "proc/pressure/cpu", some_total_us=1_200_000)
    _, psi = reader.sample()
    assert psi is not None and psi.cpu_some_pct == 100.0


# --- OOM kills, /dev/shm -------------------------------------------------------------------------------------


def test_v2_oom_kills_from_memory_events(tmp_path: Path, clock: Clock) -> None:
    group = cgroup_v2(tmp_path)
    (group / "memory.events").write_text("low 0\nhigh 12\nmax 40\noom 3\noom_kill 2\noom_group_kill 0\n")
    container, _ = CgroupReader(read_cgroup(tmp_path), tmp_path, clock).sample()
    assert container is not None and container.oom_kills == 2


def test_v1_oom_kills_from_oom_control(tmp_path: Path, clock: Clock) -> None:
    memory = cgroup_v1(tmp_path)["memory"]
    (memory / "memory.oom_control").write_text("oom_kill_disable 0\nunder_oom 0\noom_kill 5\n")
    container, _ = CgroupReader(read_cgroup(tmp_path), tmp_path, clock).sample()
    assert container is not None and container.oom_kills == 5


def test_v1_oom_control_of_an_old_kernel_has_no_count(tmp_path: Path, clock: Clock) -> None:
    """Before 4.13 memory.oom_control has no oom_kill line: unknown, not 0."""
    memory = cgroup_v1(tmp_path)["memory"]
    (memory / "memory.oom_control").write_text("oom_kill_disable 0\nunder_oom 0\n")
    container, _ = CgroupReader(read_cgroup(tmp_path), tmp_path, clock).sample()
    assert container is not None and container.oom_kills is None


def test_host_oom_kills_from_vmstat(tmp_path: Path) -> None:
    assert host_oom_kills(tmp_path) is None
    write(tmp_path, "proc/vmstat", "nr_free_pages 1000\npgfault 99\n")
    assert host_oom_kills(tmp_path) is None
    write(tmp_path, "proc/vmstat", "nr_free_pages 1000\noom_kill 7\npgfault 99\n")
    assert host_oom_kills(tmp_path) == 7


def test_shm_size_of_a_real_directory(tmp_path: Path) -> None:
    assert shm_bytes(tmp_path) == (None, None)
    (tmp_path / "dev/shm").mkdir(parents=True)
    size, used = shm_bytes(tmp_path)
    assert size is not None and size > 0
    assert used is not None and 0 <= used <= size
    assert read_cgroup(tmp_path).info.shm_bytes == size


# --- cgroup v2 as the kernel lays it out (Documentation/admin-guide/cgroup-v2.rst) ------------------------------
# cpu.max, memory.max, memory.current and memory.events exist on non-root groups only; cpu.stat on every group,
# the root too since 5.8, with usage_usec/user_usec/system_usec always and nr_periods/nr_throttled/
# throttled_usec only where the cpu controller is enabled; memory.events counts oom_kill since 4.13.


def test_hybrid_v1_with_a_v2_tree_beside_reads_the_v1_controllers(tmp_path: Path, clock: Clock) -> None:
    """systemd's hybrid layout (this project's own test machine): v1 controllers, plus a v2 tree without
    controllers at /sys/fs/cgroup/unified and a "0::" line. The limits are the v1 hierarchies'; a cpu.max or
    pressure file in the unified tree is not read, PSI is the machine's."""
    dirs = cgroup_v1(tmp_path, group="/slurm/job_7", unified="/system.slice/slurmd.service")
    v1_limits(dirs["cpu"], quota_us=200_000, memory=dirs["memory"], limit=str(GIB))
    (dirs["unified"] / "cpu.max").write_text("50000 100000\n")
    (dirs["unified"] / "memory.max").write_text(f"{GIB // 4}\n")
    pressure(dirs["unified"] / "cpu.pressure", some_total_us=0, some_avg10=90.0)
    pressure(tmp_path / "proc/pressure/cpu", some_total_us=0, some_avg10=4.0)
    cgroup = read_cgroup(tmp_path)
    assert cgroup.info.cgroup_version == 1
    assert (cgroup.info.cpu_quota_cores, cgroup.info.memory_limit_bytes) == (2.0, GIB)
    assert (cgroup.dirs.cpu, cgroup.dirs.memory, cgroup.dirs.pressure) == (dirs["cpu"], dirs["memory"], None)
    _, psi = CgroupReader(cgroup, tmp_path, clock).sample()
    assert psi is not None and psi.cpu_some_pct == 4.0


def test_v2_without_its_mount_knows_the_version_not_the_files(tmp_path: Path, clock: Clock) -> None:
    """ "0::/group" but no cgroup2 line in mountinfo (a container that does not mount /sys/fs/cgroup): v2 known,
    every group figure unknown; PSI falls back to the machine's."""
    write(tmp_path, "proc/self/cgroup", "0::/system.slice/docker-abc.scope\n")
    write(tmp_path, "proc/self/mountinfo", "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n")
    make_group(tmp_path / CGROUP_FS, "/system.slice/docker-abc.scope")
    cgroup = read_cgroup(tmp_path)
    assert cgroup.info.cgroup_version == 2
    assert cgroup.dirs == CgroupDirs(2)
    pressure(tmp_path / "proc/pressure/io", some_total_us=0, full_total_us=0, some_avg10=7.0)
    container, psi = CgroupReader(cgroup, tmp_path, clock).sample()
    assert container == ContainerSample()  # known to be a group, nothing of it readable: all None, no 0
    assert psi is not None and psi.io_some_pct == 7.0


def test_v2_the_root_group_has_no_limits_and_counts_no_throttling(tmp_path: Path, clock: Clock) -> None:
    """A process in the root group ("0::/", no namespace): no cpu.max, memory.max, memory.current or
    memory.events exist there, and its cpu.stat has usage only. Nothing reads as a limit or as 0."""
    root_group = cgroup_v2(tmp_path, group="/")
    assert root_group == tmp_path / CGROUP_FS
    v2_cpu_stat(root_group, usage_us=10_000_000)
    cgroup = read_cgroup(tmp_path)
    assert cgroup.dirs.cpu == root_group
    assert (cgroup.info.cpu_quota_cores, cgroup.info.memory_limit_bytes, cgroup.info.cpuset_cpus) == (None, None, None)
    reader = CgroupReader(cgroup, tmp_path, clock)
    reader.sample()
    clock.advance(1.0)
    v2_cpu_stat(root_group, usage_us=14_000_000)
    assert reader.sample()[0] == ContainerSample()


def test_v2_cpu_stat_without_the_cpu_controller_leaves_throttling_unknown(tmp_path: Path, clock: Clock) -> None:
    """A group whose parent did not enable the cpu controller for it: cpu.stat has the usage lines only, so
    throttling is unknown, not "never throttled"; the quota set higher up still binds and is read there."""
    group = cgroup_v2(tmp_path, group="/user.slice/user-1000.slice/session-3.scope")
    v2_cpu_stat(group, usage_us=0)
    cgroup = read_cgroup(tmp_path)
    reader = CgroupReader(cgroup, tmp_path, clock)
    reader.sample()
    clock.advance(1.0)
    v2_cpu_stat(group, usage_us=500_000)
    container, _ = reader.sample()
    assert container is not None
    assert (container.cpu_throttled_pct, container.cpu_throttled_s, container.cpu_pct_of_quota) == (None, None, None)

    (group.parent / "cpu.max").write_text("100000 100000\n")  # the user's slice: one core
    v2_cpu_stat(group.parent, usage_us=0, periods=0)
    cgroup = read_cgroup(tmp_path)
    assert (cgroup.info.cpu_quota_cores, cgroup.dirs.cpu) == (1.0, group.parent)
    reader = CgroupReader(cgroup, tmp_path, clock)
    reader.sample()
    clock.advance(1.0)
    v2_cpu_stat(group.parent, usage_us=900_000, periods=10, throttled=2, throttled_us=50_000)
    container, _ = reader.sample()
    assert container is not None
    assert container.cpu_pct_of_quota == pytest.approx(90.0)
    assert container.cpu_throttled_pct == pytest.approx(20.0)
    assert container.cpu_throttled_s == pytest.approx(0.05)


def test_v2_nested_groups_the_tightest_limit_binds_whatever_its_period(tmp_path: Path) -> None:
    """Three levels, each its own `max`, quota and period: the tightest in cores and in bytes wins, and the
    counters are read in the group that sets the quota."""
    group = cgroup_v2(tmp_path, group="/kubepods.slice/kubepods-pod1.slice/cri-containerd-abc.scope")
    pod, kubepods = group.parent, group.parent.parent
    (group / "cpu.max").write_text("max 100000\n")
    (pod / "cpu.max").write_text("150000 50000\n")  # 3 cores in 50 ms periods
    (kubepods / "cpu.max").write_text("25000 10000\n")  # 2.5 cores in 10 ms periods
    (group / "memory.max").write_text(f"{8 * GIB}\n")
    (pod / "memory.max").write_text(f"{6 * GIB}\n")
    (kubepods / "memory.max").write_text("max\n")
    cgroup = read_cgroup(tmp_path)
    assert cgroup.info.cpu_quota_cores == 2.5
    assert cgroup.dirs.cpu == kubepods
    assert cgroup.info.memory_limit_bytes == 6 * GIB
    assert cgroup.dirs.memory == group  # usage and OOM kills stay the group's own


def test_v2_max_everywhere_is_no_limit_and_the_group_keeps_its_own_counters(tmp_path: Path) -> None:
    group = cgroup_v2(tmp_path, group="/pod/ctr")
    for level in (group, group.parent):
        (level / "cpu.max").write_text("max 100000\n")
        (level / "memory.max").write_text("max\n")
    cgroup = read_cgroup(tmp_path)
    assert (cgroup.info.cpu_quota_cores, cgroup.info.memory_limit_bytes) == (None, None)
    assert cgroup.dirs.cpu == group


def test_v2_limits_stop_at_the_mount_a_namespace_sees(tmp_path: Path) -> None:
    """Inside a cgroup namespace whose init moved to /init.scope (systemd in a container), the container's own
    group is the mount point: its cpu.max binds; a file above the mount (no cgroup.procs, no group) is not read."""
    group = cgroup_v2(tmp_path, group="/init.scope")
    mount = tmp_path / CGROUP_FS
    assert group == mount / "init.scope"
    (mount / "cpu.max").write_text("400000 100000\n")
    (mount / "memory.max").write_text(f"{16 * GIB}\n")
    (mount.parent / "cpu.max").write_text("10000 100000\n")
    (mount.parent / "memory.max").write_text(f"{GIB}\n")
    info = read_cgroup(tmp_path).info
    assert (info.cpu_quota_cores, info.memory_limit_bytes) == (4.0, 16 * GIB)


def test_v2_memory_is_read_anew_each_sample_and_a_missing_oom_kill_line_is_unknown(
    tmp_path: Path, clock: Clock
) -> None:
    """memory.current each sample; memory.events before 4.13 (no oom_kill line) reads None, not 0, and once the
    line is there its count is read as the kernel keeps it (cumulative)."""
    group = cgroup_v2(tmp_path)
    (group / "memory.max").write_text(f"{4 * GIB}\n")
    (group / "memory.current").write_text(f"{GIB}\n")
    (group / "memory.events").write_text("low 0\nhigh 0\nmax 12\noom 1\n")
    reader = CgroupReader(read_cgroup(tmp_path), tmp_path, clock)
    first, _ = reader.sample()
    assert first is not None
    assert (first.memory_used_bytes, first.memory_limit_bytes, first.oom_kills) == (GIB, 4 * GIB, None)
    clock.advance(1.0)
    (group / "memory.current").write_text(f"{3 * GIB}\n")
    (group / "memory.events").write_text("low 0\nhigh 0\nmax 40\noom 3\noom_kill 2\n")
    second, _ = reader.sample()
    assert second is not None
    assert (second.memory_used_bytes, second.oom_kills) == (3 * GIB, 2)


def test_v2_psi_of_all_three_resources_comes_from_the_group(tmp_path: Path, clock: Clock) -> None:
    """cpu.pressure, io.pressure and memory.pressure of the group, `full` lines included; the machine's
    /proc/pressure is not mixed in."""
    group = cgroup_v2(tmp_path, group="/pod/ctr")
    pressure(group / "cpu.pressure", some_total_us=0, full_total_us=0)
    pressure(group / "io.pressure", some_total_us=0, full_total_us=0)
    pressure(group / "memory.pressure", some_total_us=0, full_total_us=0)
    for resource in ("cpu", "io", "memory"):
        pressure(tmp_path / "proc/pressure" / resource, some_total_us=0, full_total_us=0, some_avg10=50.0)
    reader = CgroupReader(read_cgroup(tmp_path), tmp_path, clock)
    reader.sample()
    clock.advance(2.0)
    pressure(group / "cpu.pressure", some_total_us=200_000, full_total_us=0)
    pressure(group / "io.pressure", some_total_us=1_000_000, full_total_us=400_000)
    pressure(group / "memory.pressure", some_total_us=100_000, full_total_us=20_000)
    for resource in ("cpu", "io", "memory"):
        pressure(tmp_path / "proc/pressure" / resource, some_total_us=2_000_000, full_total_us=2_000_000)
    _, psi = reader.sample()
    assert psi == PsiSample(
        cpu_some_pct=pytest.approx(10.0),
        io_some_pct=pytest.approx(50.0),
        io_full_pct=pytest.approx(20.0),
        memory_some_pct=pytest.approx(5.0),
        memory_full_pct=pytest.approx(1.0),
    )


def test_v2_a_group_without_pressure_files_has_no_psi_not_the_machines(tmp_path: Path, clock: Clock) -> None:
    """PSI off for the group (psi=0, or a kernel before 4.20): the group's pressure is unknown; the machine's
    figures are not passed off as the group's."""
    cgroup_v2(tmp_path)
    pressure(tmp_path / "proc/pressure/cpu", some_total_us=0, some_avg10=60.0)
    assert CgroupReader(read_cgroup(tmp_path), tmp_path, clock).sample()[1] is None


def test_v2_stray_lines_in_cgroup_and_pressure_files_are_passed_over(tmp_path: Path, clock: Clock) -> None:
    """A line that is not "id:controllers:path" in /proc/self/cgroup, and blank or incomplete lines in a
    pressure file, are skipped; the readable rest is still read."""
    group = cgroup_v2(tmp_path, group="/pod/ctr")
    write(tmp_path, "proc/self/cgroup", "garbage\n0::/pod/ctr\n")
    (group / "io.pressure").write_text("\nsome avg10=2.50 avg60=0.00 avg300=0.00 total=100\nfull avg10=oops total=9\n")
    cgroup = read_cgroup(tmp_path)
    assert cgroup.dirs.cpu == group
    _, psi = CgroupReader(cgroup, tmp_path, clock).sample()
    assert psi == PsiSample(io_some_pct=2.5)


def test_make_group_marks_every_level(tmp_path: Path) -> None:
    """The fake's own contract, which the lineage tests rely on."""
    group = make_group(tmp_path / "mnt", "/a/b")
    assert [p.name for p in (group, group.parent, group.parent.parent) if (p / "cgroup.procs").exists()] == [
        "b",
        "a",
        "mnt",
    ]
