"""The recording's lines: a tick reads back into the same Snapshot, compactly; headers guard the schema."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import MISSING, Field, fields, is_dataclass
from pathlib import Path
from typing import Any

import pytest

from gputui import model
from gputui.diagnostics.findings import Evidence, Finding, Severity
from gputui.model import (
    ActivityFrame,
    ActivityShares,
    ContainerInfo,
    ContainerSample,
    DistRank,
    GpuProcess,
    GpuSample,
    JobActivity,
    MigState,
    ProcSample,
    PsiSample,
    Snapshot,
    WaitedOn,
)
from gputui.record.format import (
    RECORDING_SCHEMA,
    RecordingFormatError,
    dumps,
    event_from_dict,
    event_to_dict,
    finding_event,
    finding_from_dict,
    finding_transitions,
    format_clock,
    header_from_dict,
    header_to_dict,
    loads,
    mark_event,
    tick_from_dict,
    tick_to_dict,
)
from gputui.record.reader import load_recording
from tests.record.migdata import mig_gpu
from tests.record.recdata import T0, gpu_info, host_sample, snapshot, system, with_gpm
from tests.topologies import nvswitch8


def _header(n: int = 2) -> dict[str, object]:
    return header_to_dict(
        system(n), tuple(gpu_info(i) for i in range(n)), interval_s=1.0, started_at=T0, utc_offset_s=0
    )


def test_tick_round_trip_gives_the_same_snapshot() -> None:
    snap = snapshot(T0 + 1.5, 2)
    header = header_from_dict(json.loads(dumps(_header(2))))
    back = tick_from_dict(json.loads(dumps(tick_to_dict(snap))), header, header.system)
    assert back == snap


# Every field of a job's activity set (an error beside samples never comes from a reader, but is recorded alike).
ACTIVITY = JobActivity(
    source="in-process",
    taken_at=T0 - 2.5,
    window_s=4.0,
    samples=80,
    shares=ActivityShares(0.125, 0.125, 0.125, 0.125, 0.125, 0.125, 0.1, 0.125, 0.025),
    top=(
        ActivityFrame("data", "_next_data", "torch/utils/data/dataloader.py", 674, 0.5),
        ActivityFrame("gpu_sync", "step", "/job/train.py", 90, 0.125, source_line="loss.item()"),
    ),
    workers=ActivityShares(io=0.75, cpu=0.25),
    worker_samples=160,
    rank=1,
    error="gone: it exited during the window",
    unchanged_since=T0 - 300.0,
    waited_on=WaitedOn(
        kind="data",
        who="thread producer (tid 4300)",
        frame=ActivityFrame("data", "decode", "/job/loader.py", 31, 0.9),
        share=0.125,
        running=0.95,
    ),
)


def every_field_snapshot() -> Snapshot:
    """A machine that, between its parts, sets every field of the model: a busy GPU whose processes were seen each
    way (by PID, through the device file with NVML's PID beside, hidden in another namespace) with their SM and
    memory shares, a GPU in MIG mode with a change pending, a lost GPU; a host with a container, PSI and each fact
    a process can have, its stacks' activity among them, and the busiest other processes; a system with a
    container, topology and MIG slice."""
    busy = with_gpm(snapshot(T0, 1))
    seen = (
        GpuProcess(4242, 70 * 2**30, sm_pct=63.5, mem_pct=21.0),
        GpuProcess(4243, 2 * 2**30, kind="graphics", seen="device", host_pid=91234, sm_pct=0.0, mem_pct=0.0),
        GpuProcess(812345, None, seen="hidden"),
    )
    gpu0 = dataclasses.replace(
        busy.gpus[0],
        processes=seen,
        fan_pct=40,
        pcie_gen=5,
        pcie_width=16,
        pcie_replay_count=3,
        pstate=0,
        thermal_violation_ns=5_000_000,
        ecc_uncorrected=0,
        retired_pages_pending=False,
        xid_events=(79,),
        nvlink_links_active=16,
        nvlink_replay_errors=2,
        nvlink_recovery_errors=1,
        nvlink_crc_errors=7,
        pod="ml/trainer-0",
    )
    split = mig_gpu(1, T0)
    assert split.mig is not None
    pending = MigState(
        mode=True,
        pending_mode=False,
        devices=(dataclasses.replace(split.mig.devices[0], pod="ml/tenant-a"), *split.mig.devices[1:]),
    )
    gpu1 = dataclasses.replace(split, mig=pending)
    lost = GpuSample(index=2, timestamp=T0, lost=True, error="GPU is lost")
    container = ContainerInfo("docker", "/.dockerenv", 2, 8.0, (0, 1, 2, 3), 64 * 2**30, 64 * 2**20)
    sys_info = dataclasses.replace(
        system(3),
        scenario="healthy",
        torch_cuda_version="12.4",
        fallback_reason="no NVIDIA driver",
        remote_source="nvml",
        recorded_source="nvml",
        container=container,
        topology=dataclasses.replace(nvswitch8(), numa_nodes=2),
        mig_slice="MIG-2f6e1c3a-0001-5b7d-9e0f-000000000001",
    )
    infos = tuple(
        dataclasses.replace(
            gpu_info(i),
            minor_number=i,
            default_app_sm_clock_mhz=1755,
            default_app_memory_clock_mhz=2619,
            temperature_gpu_max_c=87,
            temperature_memory_max_c=95,
            nvlink_links_total=18,
            nvlink_version=4,
            nvlink_remote=("NVSwitch",) * 18,
        )
        for i in range(3)
    )
    rank = ProcSample(
        pid=4242,
        name="python",
        user="alice",
        cmdline="python train.py",
        cpu_pct=101.5,
        threads=37,
        children=8,
        workers_cpu_pct=640.25,
        read_bytes_s=6_553_600.0,
        rss_bytes=32 * 2**30,
        state="running",
        run_queue_wait_pct=12.5,
        workers_run_queue_wait_pct=33.5,
        container="3f2a9c1b7d0e",
        container_pid=1,
        cpus_allowed=(0, 1, 2, 3),
        last_cpu=2,
        pod="trainer-0",
        namespace="ml",
        k8s_container="main",
        job_id="81234",
        unreadable=("fd", "io"),
        create_time=1_700_000_000.25,
        ppid=4000,
        activity=ACTIVITY,
        dist=DistRank(rank=1, local_rank=1, world_size=2, job="run 7f3a at 10.0.0.1:29500", launcher_pid=4000),
    )
    # Another user's process: its environment refused to the reader.
    neighbour = ProcSample(
        pid=999,
        name="stress",
        user="bob",
        cmdline="stress -c 2",
        cpu_pct=198.5,
        container="c0ffee",
        dist=DistRank(unreadable=True),
    )
    host = dataclasses.replace(
        host_sample(T0, 0),
        swap_in_bytes_s=4096.0,
        swap_out_bytes_s=8192.0,
        shm_used_bytes=48 * 2**20,
        oom_kills=1,
        container=ContainerSample(350.5, 41.25, 0.412, 30 * 2**30, 64 * 2**30, 2),
        psi=PsiSample(12.5, 3.25, 1.5, 0.75, 0.25),
        processes=(rank,),
        busiest_others=(neighbour,),
    )
    return Snapshot(T0, sys_info, infos, (gpu0, gpu1, lost), host, events=("GPU 2 fell off the bus",))


def _default(f: Field[Any]) -> Any:
    """The field's default; MISSING for a field without one, which any value sets."""
    return f.default_factory() if f.default_factory is not MISSING else f.default


def _fields_set(value: Any, out: set[str]) -> set[str]:
    """'Class.field' of each field that some dataclass in `value` holds other than its default."""
    if is_dataclass(value) and not isinstance(value, type):
        for f in fields(value):
            got = getattr(value, f.name)
            if got != _default(f):
                out.add(f"{type(value).__name__}.{f.name}")
            _fields_set(got, out)
    elif isinstance(value, tuple):
        for item in value:
            _fields_set(item, out)
    return out


def test_every_field_of_the_model_is_recorded() -> None:
    """A rule or a view may read any field: a field that the recording lost would read n/a (or its default) in
    replay while live showed it. The static part travels in the header, the rest in each tick."""
    snap = every_field_snapshot()
    models = [
        c for c in vars(model).values() if isinstance(c, type) and is_dataclass(c) and c.__module__ == model.__name__
    ]
    every = {f"{cls.__name__}.{f.name}" for cls in models for f in fields(cls)}
    assert "GpuProcess.sm_pct" in every and sorted(every - _fields_set(snap, set())) == []  # the machine sets all
    header = header_from_dict(
        json.loads(dumps(header_to_dict(snap.system, snap.gpu_info, interval_s=1.0, started_at=T0, utc_offset_s=0)))
    )
    assert tick_from_dict(json.loads(dumps(tick_to_dict(snap))), header, header.system) == snap


# What a tick kept of a GPU process before it kept them whole (in the same recording schema, 1).
_OLD_PROCESS_KEYS = ("pid", "used_memory_bytes", "kind", "gpu_instance_id", "compute_instance_id")


def _old_form(processes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{key: value for key, value in proc.items() if key in _OLD_PROCESS_KEYS} for proc in processes]


def test_a_recording_from_before_reads_the_process_shares_it_lacks_as_n_a(tmp_path: Path) -> None:
    snap = every_field_snapshot()
    tick = tick_to_dict(snap)
    for gpu in tick["gpus"]:
        gpu["processes"] = _old_form(gpu.get("processes", []))
        for device in gpu.get("mig", {}).get("devices", []):
            if "processes" in device:
                device["processes"] = _old_form(device["processes"])
    path = tmp_path / "old.jsonl"
    header = header_to_dict(snap.system, snap.gpu_info, interval_s=1.0, started_at=T0, utc_offset_s=0)
    path.write_text(dumps(header) + dumps(tick))
    recording = load_recording(path)
    assert recording.warnings == []
    back = recording.ticks[0]
    processes = [p for g in back.gpus for p in g.processes]
    processes += [p for g in back.gpus if g.mig is not None for d in g.mig.devices for p in d.processes]
    assert [p.pid for p in processes[:3]] == [4242, 4243, 812345] and len(processes) == 7
    assert {(p.sm_pct, p.mem_pct, p.host_pid, p.seen) for p in processes} == {(None, None, None, "pid")}
    assert processes[1].kind == "graphics" and processes[-1].gpu_instance_id == 2  # the old keys still read


def test_tick_keeps_none_as_none_and_never_invents_zero() -> None:
    snap = snapshot(T0, 1)
    bare = dataclasses.replace(snap, gpus=(GpuSample(index=0, timestamp=T0, lost=True, error="GPU is lost"),))
    line = tick_to_dict(bare)
    assert line["gpus"] == [{"index": 0, "timestamp": T0, "lost": True, "error": "GPU is lost"}]
    header = header_from_dict(_header(1))
    back = tick_from_dict(json.loads(dumps(line)), header, header.system)
    assert back.gpus[0].power_w is None and back.gpus[0].lost is True


def test_tick_leaves_out_defaults_and_derived_keys_but_keeps_zero() -> None:
    line = tick_to_dict(snapshot(T0, 1))
    gpu = line["gpus"][0]
    assert "clock_event_reasons" not in gpu and gpu["clock_event_reasons_mask"] == 4
    assert "lost" not in gpu and "xid_events" not in gpu and "fan_pct" not in gpu
    assert gpu["thermal_violation_ns"] == 0  # a reported zero is data, not a default
    assert gpu["processes"] == [{"pid": 4242, "used_memory_bytes": 70_866_960_384}]
    assert "cpu_pct" not in line["host"]


def test_floats_are_rounded_to_milliseconds() -> None:
    snap = snapshot(T0 + 0.123456, 1, util=33.333333333)
    gpu = tick_to_dict(snap)["gpus"][0]
    assert gpu["utilization_gpu_pct"] == 33.333 and gpu["timestamp"] == round(T0 + 0.123456, 3)


def test_a_busy_gpu_costs_well_under_2_kb_per_tick() -> None:
    one = len(dumps(tick_to_dict(snapshot(T0, 1))).encode())
    eight = len(dumps(tick_to_dict(snapshot(T0, 8))).encode())
    assert one < 2048 and eight / 8 < 1536


def test_header_carries_schema_version_system_and_static_gpu_info() -> None:
    data = _header(2)
    assert data["type"] == "header" and data["schema"] == RECORDING_SCHEMA and data["interval_s"] == 1.0
    header = header_from_dict(data)
    assert header.system.hostname == "train-07" and header.gpu_info[1].name == "NVIDIA H100 80GB HBM3"


def test_newer_schema_is_a_clear_error() -> None:
    data = {**_header(1), "schema": RECORDING_SCHEMA + 1, "gputui_version": "9.0"}
    with pytest.raises(RecordingFormatError, match=r"schema 2.*upgrade gputui"):
        header_from_dict(data)


def test_a_tick_first_is_not_a_header() -> None:
    with pytest.raises(RecordingFormatError, match="header"):
        header_from_dict(tick_to_dict(snapshot(T0, 1)))


def test_events_round_trip_with_their_payload() -> None:
    event = mark_event("换了 num_workers=8", T0 + 3)
    line = json.loads(dumps(event_to_dict(event)))
    assert line["type"] == "event" and line["kind"] == "mark"
    assert event_from_dict(line) == event


def _finding(rule: str, gpus: tuple[int, ...]) -> Finding:
    return Finding(
        rule=rule,
        severity=Severity.WARNING,
        title="GPU 0 is thermally throttled",
        advice="check the airflow",
        gpus=gpus,
        evidence=(Evidence("SM clock", 1410.0, "MHz", "mean over 10 s", key="sm_clock_mhz"),),
        started_at=T0,
        duration_s=12.0,
        worst=88.0,
        metric="temperature_c",
    )


def test_findings_round_trip() -> None:
    finding = _finding("thermal", (0,))
    line = json.loads(dumps(event_to_dict(finding_event("finding_opened", finding, T0))))
    assert finding_from_dict(event_from_dict(line).data["finding"]) == finding


def test_finding_transitions_name_what_opened_and_closed() -> None:
    a, b, c = _finding("thermal", (0,)), _finding("thermal", (1,)), _finding("powercap", (0,))
    events = finding_transitions([a, b], [b, c], T0 + 5)
    assert [(e.kind, e.data["finding"]["rule"], e.data["finding"]["gpus"]) for e in events] == [
        ("finding_opened", "powercap", [0]),
        ("finding_closed", "thermal", [0]),
    ]


def test_clock_is_the_recording_machines_local_time() -> None:
    assert format_clock(T0, 8 * 3600) != format_clock(T0, 0)
    assert format_clock(0.0, 8 * 3600) == "08:00:00"


@pytest.mark.parametrize(
    ("line", "name"),
    [
        ('{"name": "a\\u001b]0;X\\u0007b"}', "a\\x1b]0;X\\x07b"),  # JSON's escapes
        ('{"name": "a\\nb\\tc"}', "a\\nb\\tc"),
        (
            '{"name": "a\u202eb\u009bc\x7f"}',
            "a\\u202eb\\x9bc\\x7f",
        ),  # raw, as a writer with ensure_ascii=False leaves them
        ('{"name": "\\ud800"}', "\\ud800"),
        ('{"name": "plain \\"quoted\\" \\\\u0041"}', 'plain "quoted" \\u0041'),  # nothing to clean
    ],
)
def test_loads_cleans_every_string_a_line_can_hold(line: str, name: str) -> None:
    assert loads(line) == {"name": name}
    assert loads(line.encode() + b"\n") == {"name": name}
