"""Groups in JSON: `system.container`, `system.topology`, `host.container`, `host.psi`, the process join."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from gputui.model import (
    ActivityFrame,
    ActivityShares,
    ContainerInfo,
    ContainerSample,
    DistRank,
    GpuProcess,
    GpuSample,
    HostSample,
    JobActivity,
    MigState,
    ProcSample,
    PsiSample,
    Snapshot,
    Topology,
)
from gputui.serialize import SnapshotFormatError, snapshot_from_dict, snapshot_to_dict
from tests.record.migdata import mig_snapshot
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
        numa_nodes=2,
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
        "numa_nodes": 2,
    }
    assert data["gpus"][0]["nvlink_links_active"] == 16 and data["gpus"][0]["nvlink_links_total"] == 18
    assert snapshot_from_dict(data) == snap
    del data["system"]["topology"]["numa_nodes"]  # a recording made before the count was read
    older = snapshot_from_dict(data).system.topology
    assert older is not None and older.numa_nodes is None


# ---- MIG (issue 23) ------------------------------------------------------------------------------------------


def test_a_mig_gpu_round_trips_with_its_instances_in_the_documented_shape() -> None:
    snap = replace(mig_snapshot(10.0, 2), system=replace(mig_snapshot(10.0, 2).system, mig_slice="MIG-2f6e1c3a"))
    data = json.loads(json.dumps(snapshot_to_dict(snap)))
    assert snapshot_from_dict(data) == snap
    mig = data["gpus"][1]["mig"]
    assert (mig["mode"], mig["pending_mode"]) == (True, True)
    first = mig["devices"][0]
    assert list(first) == [
        "index", "uuid", "profile", "gpu_instance_id", "compute_instance_id", "sm_count", "slice_count",
        "memory_used_bytes", "memory_total_bytes", "gr_engine_active_pct", "sm_active_pct", "sm_occupancy_pct",
        "tensor_active_pct", "dram_bw_pct", "fp32_active_pct", "fp16_active_pct", "fp64_active_pct", "processes",
    ]  # fmt: skip
    assert (first["uuid"], first["profile"], first["gpu_instance_id"]) == (
        "MIG-2f6e1c3a-0001-5b7d-9e0f-000000000001",
        "3g.40gb",
        1,
    )
    assert (first["sm_count"], first["slice_count"], first["memory_total_bytes"]) == (60, 3, 40_511_160_320)
    assert first["tensor_active_pct"] == 44.0 and first["fp64_active_pct"] == 0.0
    # The instance's processes are entries as in gpus[i].processes: host stats joined, the instance named.
    proc = first["processes"][0]
    assert (proc["pid"], proc["name"], proc["gpu_instance_id"], proc["compute_instance_id"]) == (5011, "python", 1, 0)
    assert [p["gpu_instance_id"] for p in data["gpus"][1]["processes"]] == [1, 2]
    assert data["gpus"][1]["utilization_gpu_pct"] is None  # never 0 in MIG mode
    assert data["system"]["mig_slice"] == "MIG-2f6e1c3a"


def test_an_instances_pod_is_written_only_when_known_and_reads_back() -> None:
    snap = mig_snapshot(10.0, 1)
    mig = snap.gpus[0].mig
    assert mig is not None
    held = replace(mig.devices[1], pod="research/notebook-011-0")
    snap = replace(snap, gpus=(replace(snap.gpus[0], mig=replace(mig, devices=(mig.devices[0], held))),))
    data = json.loads(json.dumps(snapshot_to_dict(snap)))
    first, second = data["gpus"][0]["mig"]["devices"]
    assert "pod" not in first and second["pod"] == "research/notebook-011-0"
    assert list(second)[-2:] == ["pod", "processes"]
    back = snapshot_from_dict(data)
    assert back == snap and back.gpus[0].mig is not None and back.gpus[0].mig.devices[1].pod == held.pod


def test_off_mig_the_mig_key_is_null_and_processes_name_no_instance() -> None:
    data = json.loads(json.dumps(snapshot_to_dict(_snapshot())))
    assert data["gpus"][0]["mig"] is None
    # Absent, not null: every output off MIG (diagnose --json's process list too) stays byte-identical.
    assert all("gpu_instance_id" not in p and "compute_instance_id" not in p for p in data["gpus"][0]["processes"])
    assert snapshot_from_dict(data).gpus[0].mig is None


def test_an_older_snapshot_without_mig_reads_as_no_mig() -> None:
    data = snapshot_to_dict(mig_snapshot(10.0, 1))
    del data["gpus"][0]["mig"], data["system"]["mig_slice"]
    for proc in data["gpus"][0]["processes"]:
        del proc["gpu_instance_id"], proc["compute_instance_id"]
    snap = snapshot_from_dict(data)
    assert snap.gpus[0].mig is None and snap.system.mig_slice is None
    assert {p.gpu_instance_id for p in snap.gpus[0].processes} == {None}


def test_mig_off_with_a_change_pending_round_trips() -> None:
    base = _snapshot()
    gpu = replace(base.gpus[0], mig=MigState(mode=False, pending_mode=True))
    snap = replace(base, gpus=(gpu,))
    data = json.loads(json.dumps(snapshot_to_dict(snap)))
    assert data["gpus"][0]["mig"] == {"mode": False, "pending_mode": True, "devices": []}
    back = snapshot_from_dict(data)
    assert back == snap and back.gpus[0].mig is not None and back.gpus[0].mig.change_pending


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        ((), "on", "GPU 0: mig: expected an object or null, got str"),
        (("mode",), "yes", "GPU 0: mig.mode: expected true, false or null, got 'yes'"),
        (("devices",), {"0": {}}, "GPU 0: mig.devices: expected a list, got dict"),
        (("devices", 1), 7, r"GPU 0: mig.devices\[1\]: expected an object, got int"),
        (("devices", 0, "index"), None, r"GPU 0: mig.devices\[0\].index: missing"),
        (("devices", 1, "sm_count"), "60", r"GPU 0: mig.devices\[1\].sm_count: expected an integer or null, got '60'"),
        (("devices", 0, "gpu_instance_id"), 1.5, r"mig.devices\[0\].gpu_instance_id: expected an integer"),
        (("devices", 0, "memory_used_bytes"), True, r"mig.devices\[0\].memory_used_bytes: expected an integer"),
        (("devices", 0, "sm_active_pct"), "81%", r"mig.devices\[0\].sm_active_pct: expected a number or null"),
        (("devices", 0, "profile"), 3, r"mig.devices\[0\].profile: expected a string or null, got 3"),
        (("devices", 0, "pod"), ["ns", "p"], r"mig.devices\[0\].pod: expected a string or null, got \['ns'"),
        (("devices", 0, "processes"), {"pid": 1}, r"mig.devices\[0\].processes: expected a list, got dict"),
        (("devices", 0, "processes", 0), {"used_memory_bytes": 1}, r"mig.devices\[0\].processes: KeyError\('pid'\)"),
    ],
)
def test_a_malformed_mig_object_is_an_error_naming_the_key(
    path: tuple[object, ...], value: object, message: str
) -> None:
    data = json.loads(json.dumps(snapshot_to_dict(mig_snapshot(10.0, 1))))
    target: Any = data["gpus"][0]
    keys: tuple[Any, ...] = ("mig", *path)
    for key in keys[:-1]:
        target = target[key]
    target[keys[-1]] = value
    with pytest.raises(SnapshotFormatError, match=message):
        snapshot_from_dict(data)


ACTIVITY = JobActivity(
    source="py-spy",
    taken_at=9.5,
    window_s=4.0,
    samples=80,
    shares=ActivityShares(data=0.7125, cpu=0.2875),
    top=(ActivityFrame("data", "_next_data", "torch/utils/data/dataloader.py", 674, 0.7125),),
    workers=ActivityShares(io=1.0),
    worker_samples=160,
    rank=3,
)


def _with_activity() -> Snapshot:
    snap = _snapshot()
    others = (ProcSample(7, "stress", user="bob", cmdline="stress -c 2", cpu_pct=199.0),)
    processes = (replace(snap.host.processes[0], activity=ACTIVITY),)
    return replace(snap, host=replace(snap.host, processes=processes, busiest_others=others))


def test_a_process_activity_and_the_busiest_others_round_trip_as_objects() -> None:
    snap = _with_activity()
    data = json.loads(json.dumps(snapshot_to_dict(snap)))
    activity = data["host"]["processes"][0]["activity"]
    assert activity == data["gpus"][0]["processes"][0]["activity"]  # beside each GPU's process too
    assert list(activity) == [
        "source",
        "window_s",
        "samples",
        "shares",
        "top",
        "rank",
        "workers",
        "worker_samples",
        "taken_at",
        "error",
        "unchanged_since",
    ]
    kinds = ["data", "loading", "cpu", "gpu_sync", "collective", "checkpoint", "compile", "io", "idle"]
    assert list(activity["shares"]) == kinds
    assert activity["top"] == [
        {
            "kind": "data",
            "function": "_next_data",
            "file": "torch/utils/data/dataloader.py",
            "line": 674,
            "share": 0.7125,
        }
    ]
    assert data["host"]["busiest_others"][0]["cmdline"] == "stress -c 2"
    assert snapshot_from_dict(data) == snap


def test_compile_round_trips_and_a_recording_from_before_it_reads_zero() -> None:
    compiling = replace(ACTIVITY, shares=ActivityShares(compile=0.6, cpu=0.4), top=())
    snap = replace(
        _with_activity(),
        host=replace(
            _with_activity().host, processes=(replace(_with_activity().host.processes[0], activity=compiling),)
        ),
    )
    data = json.loads(json.dumps(snapshot_to_dict(snap)))
    assert snapshot_from_dict(data).host.processes[0].activity == compiling
    older = json.loads(json.dumps(snapshot_to_dict(_with_activity())))
    del older["host"]["processes"][0]["activity"]["shares"]["compile"]  # written before the kind existed
    activity = snapshot_from_dict(older).host.processes[0].activity
    assert activity is not None and activity.shares.compile == 0.0 and activity == ACTIVITY


def test_a_process_never_sampled_has_a_null_activity() -> None:
    data = snapshot_to_dict(_snapshot())
    assert data["host"]["processes"][0]["activity"] is None and data["host"]["busiest_others"] == []
    assert snapshot_from_dict(json.loads(json.dumps(data))) == _snapshot()


@pytest.mark.parametrize(
    ("change", "error"),
    [
        (lambda a: a.pop("samples"), "host.processes[0].activity.samples: expected an integer, got None"),
        (lambda a: a.update(source="perf"), "host.processes[0].activity.source: expected one of py-spy, in-process"),
        (lambda a: a["shares"].update(io=1.5), "host.processes[0].activity.shares.io: expected a fraction from 0 to 1"),
        (lambda a: a["top"][0].update(kind="gpu"), "host.processes[0].activity.top[0].kind: expected one of data,"),
        (lambda a: a.update(top={}), "host.processes[0].activity.top: expected a list, got dict"),
        (lambda a: a.update(workers=[1]), "host.processes[0].activity.workers: expected an object, got list"),
        (lambda a: a["top"][0].update(source_line=3), "host.processes[0].activity.top[0].source_line: expected a"),
        (lambda a: a.update(waited_on=[]), "host.processes[0].activity.waited_on: expected an object, got list"),
        (
            lambda a: a.update(waited_on={"kind": "data", "who": "x", "frame": None, "share": 0.5, "running": 2}),
            "host.processes[0].activity.waited_on.running: expected a fraction from 0 to 1",
        ),
        (
            lambda a: a.update(waited_on={"kind": "rest", "who": "x", "frame": None, "share": 0.5, "running": 1}),
            "host.processes[0].activity.waited_on.kind: expected one of data,",
        ),
    ],
)
def test_a_malformed_activity_is_an_error_naming_the_key(change: Any, error: str) -> None:
    data = json.loads(json.dumps(snapshot_to_dict(_with_activity())))
    change(data["host"]["processes"][0]["activity"])
    with pytest.raises(SnapshotFormatError) as raised:
        snapshot_from_dict(data)
    assert str(raised.value).startswith(error)


def _with_dist() -> Snapshot:
    snap = _with_activity()
    dist = DistRank(rank=1, local_rank=1, world_size=2, job="run 7f3a at 127.0.0.1:29500", launcher_pid=99)
    held = replace(ACTIVITY, unchanged_since=ACTIVITY.taken_at - 300.0)
    processes = (replace(snap.host.processes[0], activity=held, dist=dist),)
    return replace(snap, host=replace(snap.host, processes=processes))


def test_a_rank_and_how_long_its_main_thread_held_round_trip() -> None:
    snap = _with_dist()
    data = json.loads(json.dumps(snapshot_to_dict(snap)))
    assert data["host"]["processes"][0]["dist"] == {
        "rank": 1,
        "local_rank": 1,
        "world_size": 2,
        "job": "run 7f3a at 127.0.0.1:29500",
        "launcher_pid": 99,
        "unreadable": False,
    }
    assert data["gpus"][0]["processes"][0]["dist"] == data["host"]["processes"][0]["dist"]
    assert snapshot_from_dict(data) == snap


def test_older_records_without_them_read_as_none() -> None:
    data = json.loads(json.dumps(snapshot_to_dict(_with_dist())))
    del data["host"]["processes"][0]["dist"]
    del data["host"]["processes"][0]["activity"]["unchanged_since"]
    proc = snapshot_from_dict(data).host.processes[0]
    assert proc.dist is None and proc.activity is not None and proc.activity.unchanged_since is None


@pytest.mark.parametrize(
    ("change", "error"),
    [
        (lambda d: d.update(rank="1"), "host.processes[0].dist.rank: expected int"),
        (lambda d: d.update(rank=True), "host.processes[0].dist.rank: expected int"),
        (lambda d: d.update(job=["x"]), "host.processes[0].dist.job: expected str"),
        (lambda d: d.update(unreadable="no"), "host.processes[0].dist.unreadable: expected bool"),
    ],
)
def test_a_malformed_rank_is_an_error_naming_the_key(change: Any, error: str) -> None:
    data = json.loads(json.dumps(snapshot_to_dict(_with_dist())))
    change(data["host"]["processes"][0]["dist"])
    with pytest.raises(SnapshotFormatError) as raised:
        snapshot_from_dict(data)
    assert str(raised.value).startswith(error)


def test_a_malformed_unchanged_since_is_an_error_naming_the_key() -> None:
    data = json.loads(json.dumps(snapshot_to_dict(_with_dist())))
    data["host"]["processes"][0]["activity"]["unchanged_since"] = "yesterday"
    with pytest.raises(SnapshotFormatError) as raised:
        snapshot_from_dict(data)
    assert str(raised.value).startswith("host.processes[0].activity.unchanged_since: expected a number")
