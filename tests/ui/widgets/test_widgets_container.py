"""What a container changes on screen and in `gputui snapshot`: limits in the header, CPU against the quota,
processes found through their device file, the container a process runs in; and nothing on a plain host."""

from __future__ import annotations

from gputui.model import (
    ContainerInfo,
    ContainerSample,
    GpuProcess,
    GpuSample,
    HostSample,
    ProcSample,
    PsiSample,
    Snapshot,
)
from gputui.text.snapshot_text import container_lines, process_lines
from gputui.ui.widgets.header import container_brief
from gputui.ui.widgets.host import container_fields
from gputui.ui.widgets.processes import COLUMNS, process_rows, shown_columns
from tests.snapshots import GIB, snapshot, system_info
from tests.ui.monitor_helpers import FRESH_S, MARKS, plain

DOCKER = ContainerInfo("docker", "/.dockerenv", 2, 8.0, tuple(range(16)), 64 * GIB, 64 << 20)
SYSTEM = system_info(hostname="node", cpu_count=128, container=DOCKER)


def _snapshot(processes: tuple[GpuProcess, ...], procs: tuple[ProcSample, ...], **host: object) -> Snapshot:
    """A GPU and a host that report only the processes (and `host`): whatever else shows is the container's."""
    sample = HostSample(0.0, processes=procs, **host)  # type: ignore[arg-type]
    return snapshot(0.0, [GpuSample(0, 0.0, processes=processes)], (), sample, SYSTEM)


def test_the_header_says_where_gputui_runs_and_what_it_may_use() -> None:
    assert container_brief(DOCKER) == "docker: 8 CPUs quota, 64.0 GiB"
    assert container_brief(DOCKER, wide=False) == "docker 8cpu 64.0G"
    assert container_brief(ContainerInfo(None, None, 1, 2.5)) == "cgroup: 2.5 CPUs quota"
    assert container_brief(ContainerInfo("kubernetes", "env", 2, None, (0, 1, 2, 3))) == "kubernetes: 4 CPUs"
    assert container_brief(ContainerInfo(None, None, 2)) is None  # a plain host: nothing to say
    assert container_brief(None) is None


def test_the_host_panel_measures_cpu_against_the_quota() -> None:
    host = HostSample(
        0.0,
        cpu_pct_per_core=(6.0,) * 128,
        shm_used_bytes=60 << 20,
        container=ContainerSample(97.0, 41.0, 0.4, 30 * GIB, 64 * GIB, 0),
        psi=PsiSample(35.0, 2.0, 1.0, 0.0, 0.0),
    )
    text = plain(container_fields(host, DOCKER, MARKS))
    assert "QUOTA 97% of 8 CPUs" in text
    assert "throttled 41%" in text
    assert "CGROUP MEM 30.0G/64.0G" in text
    assert "SHM 60.0M/64.0M" in text
    assert "PSI cpu 35% io 1% mem 0%" in text


def test_a_plain_host_adds_no_container_fields() -> None:
    assert container_fields(HostSample(0.0), None, MARKS) == []
    assert container_fields(HostSample(0.0), ContainerInfo(None, None, 2, shm_bytes=32 * GIB), MARKS) == []


def test_a_process_found_through_its_device_file_shows_its_host_pid() -> None:
    snap = _snapshot(
        (GpuProcess(41, 30 * GIB, seen="device", host_pid=81234),),
        (ProcSample(41, "python", cmdline="python train.py", cpu_pct=99.0),),
    )
    rows = process_rows(snap, FRESH_S)
    columns = [COLUMNS[n].key for n in shown_columns(rows)]
    assert "host_pid" in columns and "container" not in columns
    cells = {COLUMNS[n].key: cell.shown for n, cell in enumerate(rows["0:41"])}
    assert (cells["pid"], cells["host_pid"], cells["cpu"], cells["command"]) == (
        "41*",
        "81234",
        "99",
        "python train.py",
    )


def test_a_hidden_process_says_so_instead_of_na_everywhere() -> None:
    rows = process_rows(_snapshot((GpuProcess(81234, 30 * GIB, seen="hidden"),), ()), FRESH_S)
    cells = {COLUMNS[n].key: cell.shown for n, cell in enumerate(rows["0:81234"])}
    assert cells["command"] == "(host PID: outside this PID namespace)" and cells["mem"] == "30.0G"


def test_on_the_host_each_process_names_its_container() -> None:
    procs = (ProcSample(5000, "python", container="3f2a9c1b7d0e", container_pid=1),)
    rows = process_rows(_snapshot((GpuProcess(5000, GIB),), procs), FRESH_S)
    assert [COLUMNS[n].key for n in shown_columns(rows)].count("container") == 1
    assert rows["0:5000"][[c.key for c in COLUMNS].index("container")].shown == "3f2a9c1b7d0e:1"


def test_plain_processes_keep_the_columns_they_always_had() -> None:
    rows = process_rows(_snapshot((GpuProcess(100, GIB),), (ProcSample(100, "python"),)), FRESH_S)
    assert [COLUMNS[n].label for n in shown_columns(rows)] == [
        "GPU",
        "PID",
        "CPU%",
        "UTIL",
        "GPU MEM",
        "RSS",
        "%MEM",
        "TIME",
        "THR",
        "WORKERS",
        "USER",
        "COMMAND",
    ]


def test_snapshot_text_has_the_cgroup_and_the_join() -> None:
    snap = _snapshot(
        (GpuProcess(41, None, seen="device", host_pid=81234), GpuProcess(99, GIB, seen="hidden")),
        (ProcSample(41, "python", cmdline="python train.py"),),
        container=ContainerSample(97.0, 41.0, 0.4, 30 * GIB, 64 * GIB, 2),
        psi=PsiSample(cpu_some_pct=35.0),
    )
    cgroup = "\n".join(container_lines(snap))
    assert "docker (/.dockerenv), v2, CPU quota 8.0, cpuset 0-15, memory limit 64.0 GiB" in cgroup
    assert "CPU 97% of quota, throttled 41% of periods, memory 30.0 / 64.0 GiB, OOM kills 2" in cgroup
    assert "cpu some 35%  io some n/a" in cgroup
    table = "\n".join(process_lines(snap, width=160))
    assert "[found through /dev/nvidia*, host PID 81234] python train.py" in table
    assert "(host PID: outside this PID namespace)" in table
