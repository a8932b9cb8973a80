"""Groups in JSON: `system.container`, `system.topology`, `host.container`, `host.psi`, the process join."""

from __future__ import annotations

import json
from dataclasses import replace

from gputui.model import (
    ContainerInfo,
    ContainerSample,
    GpuProcess,
    GpuSample,
    HostSample,
    ProcSample,
    PsiSample,
    Snapshot,
    Topology,
)
from gputui.serialize import snapshot_from_dict, snapshot_to_dict
from tests.snapshots import gpu_info, snapshot, system_info

CONTAINER = ContainerInfo("docker", "/.dockerenv", 2, 8.0, (0, 1, 2, 3), 64 << 30, 64 << 20)


def _snapshot() -> Snapshot:
    system = system_info(hostname="node", cpu_count=128, container=CONTAINER)
    gpu = GpuSample(
        0, 10.0, processes=(GpuProcess(41, None, seen="device", host_pid=81234), GpuProcess(99, 1 << 30, seen="hidden"))
    )
    host = HostSample(
        10.0,
        shm_used_bytes=1 << 20,
        oom_kills=3,
        container=ContainerSample(97.0, 41.5, 0.41, 30 << 30, 64 << 30, 2),
        psi=PsiSample(cpu_some_pct=35.0, io_full_pct=None),
        processes=(ProcSample(41, "python", run_queue_wait_pct=48.0, container="3f2a9c1b7d0e", container_pid=1),),
    )
    return snapshot(10.0, [gpu], [gpu_info(minor_number=3)], host, system)


def test_container_groups_round_trip() -> None:
    snap = _snapshot()
    assert snapshot_from_dict(json.loads(json.dumps(snapshot_to_dict(snap)))) == snap


def test_container_groups_are_objects_with_the_documented_keys() -> None:
    data = json.loads(json.dumps(snapshot_to_dict(_snapshot())))
    assert data["system"]["container"]["cpuset_cpus"] == [0, 1, 2, 3]
    assert data["system"]["container"]["runtime"] == "docker"
    assert data["gpus"][0]["minor_number"] == 3
    assert data["host"]["container"]["cpu_throttled_pct"] == 41.5
    assert data["host"]["container"]["oom_kills"] == 2
    assert data["host"]["psi"]["cpu_some_pct"] == 35.0 and data["host"]["psi"]["io_full_pct"] is None
    first, second = data["gpus"][0]["processes"]
    assert (first["seen"], first["host_pid"], first["container_pid"]) == ("device", 81234, 1)
    assert (second["seen"], second["name"]) == ("hidden", None)


def test_an_older_snapshot_without_the_groups_reads_as_unknown() -> None:
    data = snapshot_to_dict(_snapshot())
    del data["system"]["container"], data["host"]["container"], data["host"]["psi"]
    for proc in data["gpus"][0]["processes"]:
        del proc["seen"], proc["host_pid"]
    snap = snapshot_from_dict(data)
    assert snap.system.container is None and snap.host.container is None and snap.host.psi is None
    assert {p.seen for p in snap.gpus[0].processes} == {"pid"}


def test_the_cpu_limit_is_the_smaller_of_quota_and_cpuset() -> None:
    assert CONTAINER.cpu_limit == 4
    assert ContainerInfo(None, None, 2, cpu_quota_cores=2.5).cpu_limit == 2.5
    assert ContainerInfo(None, None, 2).cpu_limit is None


def test_topology_nvlink_and_affinity_round_trip_in_the_documented_shape() -> None:
    topology = Topology(
        matrix=(("X", "NV18"), ("NV18", "X")),
        p2p=((None, True), (True, None)),
        numa_node=(0, None),
        cpu_affinity=("0-31,64-95", None),
    )
    base = _snapshot()
    info = replace(base.gpu_info[0], nvlink_links_total=18, nvlink_version=4, nvlink_remote=("NVSwitch",) * 18)
    gpu = replace(base.gpus[0], nvlink_links_active=16, nvlink_replay_errors=0, nvlink_crc_errors=7)
    proc = replace(base.host.processes[0], cpus_allowed=(0, 1, 2, 3), last_cpu=2)
    snap = replace(
        base,
        system=replace(base.system, topology=topology),
        gpu_info=(info,),
        gpus=(gpu,),
        host=replace(base.host, processes=(proc,)),
    )
    data = json.loads(json.dumps(snapshot_to_dict(snap)))
    assert data["system"]["topology"] == {
        "matrix": [["X", "NV18"], ["NV18", "X"]],
        "p2p": [[None, True], [True, None]],
        "numa_node": [0, None],
        "cpu_affinity": ["0-31,64-95", None],
    }
    assert data["gpus"][0]["nvlink_links_active"] == 16 and data["gpus"][0]["nvlink_links_total"] == 18
    assert snapshot_from_dict(data) == snap
