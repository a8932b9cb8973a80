"""MIG in recordings: instances travel compactly in each tick and read back as they were; an older recording
reads as no MIG; a damaged MIG tick is skipped with the reader's usual warning."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from gputui.model import GpuSample, MigState
from gputui.record.format import dumps, header_from_dict, header_to_dict, tick_from_dict, tick_to_dict
from gputui.record.reader import load_recording
from gputui.report.summary import build_report, render_text, report_to_dict
from gputui.sources.playback import ReplaySource
from tests.conftest import Clock
from tests.record.migdata import INSTANCE_TOTAL, instance, mig_gpu, mig_snapshot, pid_of
from tests.record.recdata import T0, snapshot, write_recording


def _back(snap_line: dict[str, object], n_gpus: int) -> object:
    snap = mig_snapshot(T0, n_gpus)
    header = header_from_dict(
        json.loads(dumps(header_to_dict(snap.system, snap.gpu_info, interval_s=1.0, started_at=T0, utc_offset_s=0)))
    )
    return tick_from_dict(json.loads(dumps(snap_line)), header, header.system)


def test_a_mig_tick_reads_back_as_the_same_snapshot() -> None:
    snap = mig_snapshot(T0 + 1.5, 2)
    back = _back(tick_to_dict(snap), 2)
    assert back == snap


def test_a_mig_tick_is_trimmed_inside_mig_too() -> None:
    gpu = tick_to_dict(mig_snapshot(T0, 1))["gpus"][0]
    assert "utilization_gpu_pct" not in gpu  # None in MIG mode: left out, never 0
    first = gpu["mig"]["devices"][0]
    # The instance's process is the GPU's process of its instance: kept once, in the GPU's list.
    assert "processes" not in first
    assert gpu["processes"][0] == {"pid": pid_of(0, 1), "used_memory_bytes": 30 << 30, "gpu_instance_id": 1,
                                   "compute_instance_id": 0}  # fmt: skip
    assert first["fp64_active_pct"] == 0.0 and first["index"] == 0  # zeros are data, kept
    bare = tick_to_dict(dataclasses.replace(mig_snapshot(T0, 1), gpus=(mig_gpu(0, T0, (instance(0, 0, 1, uuid=None,
        sm_active_pct=None, processes=()),)),)))["gpus"][0]  # fmt: skip
    assert "uuid" not in bare["mig"]["devices"][0] and "sm_active_pct" not in bare["mig"]["devices"][0]
    assert "pending_mode" in gpu["mig"] and bare["mig"]["mode"] is True


def test_an_instances_pod_travels_only_where_known() -> None:
    snap = mig_snapshot(T0 + 1.5, 1)
    mig = snap.gpus[0].mig
    assert mig is not None
    held = dataclasses.replace(mig.devices[0], pod="ml-training/train-llm-2-worker-0")
    snap = dataclasses.replace(
        snap, gpus=(dataclasses.replace(snap.gpus[0], mig=dataclasses.replace(mig, devices=(held, mig.devices[1]))),)
    )
    line = tick_to_dict(snap)
    first, second = line["gpus"][0]["mig"]["devices"]
    assert first["pod"] == "ml-training/train-llm-2-worker-0" and "pod" not in second
    assert _back(line, 1) == snap


def test_instance_processes_that_are_not_the_gpus_are_written_out() -> None:
    """A non-root caller: NVML refuses the parent's process list, the instances still list theirs; and an
    instance whose process list is empty while the GPU lists one in it (a read that failed alone)."""
    snap = mig_snapshot(T0, 1)
    parent_blind = dataclasses.replace(snap.gpus[0], processes=())
    line = tick_to_dict(dataclasses.replace(snap, gpus=(parent_blind,)))
    devices = line["gpus"][0]["mig"]["devices"]
    assert devices[0]["processes"] == [{"pid": pid_of(0, 1), "used_memory_bytes": 30 << 30, "gpu_instance_id": 1,
                                        "compute_instance_id": 0}]  # fmt: skip
    assert _back(line, 1) == dataclasses.replace(snap, gpus=(parent_blind,))
    mig = snap.gpus[0].mig
    assert mig is not None
    empty = dataclasses.replace(mig.devices[1], processes=())
    one_empty = dataclasses.replace(snap.gpus[0], mig=dataclasses.replace(mig, devices=(mig.devices[0], empty)))
    line = tick_to_dict(dataclasses.replace(snap, gpus=(one_empty,)))
    assert line["gpus"][0]["mig"]["devices"][1]["processes"] == []
    back = _back(line, 1)
    assert back == dataclasses.replace(snap, gpus=(one_empty,))


def test_two_compute_instances_of_one_gpu_instance_keep_their_own_processes() -> None:
    a = instance(0, 0, 1, compute_instance_id=0, profile="1c.3g.40gb")
    b = instance(0, 1, 1, compute_instance_id=1, profile="2c.3g.40gb")
    b = dataclasses.replace(b, processes=(dataclasses.replace(b.processes[0], pid=6001, compute_instance_id=1),))
    snap = dataclasses.replace(mig_snapshot(T0, 1), gpus=(mig_gpu(0, T0, (a, b)),))
    line = tick_to_dict(snap)
    assert all("processes" not in d for d in line["gpus"][0]["mig"]["devices"])
    back = _back(line, 1)
    assert back == snap
    assert [p.pid for p in back.gpus[0].mig.devices[1].processes] == [6001]  # type: ignore[union-attr]


def test_eight_mig_gpus_cost_under_2_kb_each_per_tick() -> None:
    """8 x H100, two 3g.40gb instances each, a process on each: 14,603 bytes a tick (1,825 a GPU) against
    8,459 (1,057 a GPU) off MIG; most of the difference is each instance's identity (UUID, profile, ids, size)."""
    size = len(dumps(tick_to_dict(mig_snapshot(T0, 8))).encode())
    assert size / 8 < 2048
    assert 14_000 < size < 15_200


def test_a_recording_replays_and_reports_mig(tmp_path: Path, clock: Clock) -> None:
    ticks = [mig_snapshot(T0 + i, 2) for i in range(5)]
    path = write_recording(tmp_path / "mig.jsonl", ticks)
    recording = load_recording(path)
    assert recording.warnings == [] and list(recording.ticks) == ticks
    replay = ReplaySource(path, clock=clock)
    system = replay.open()
    assert system.source == "replay"
    first = replay.sample()
    mig = first.gpus[1].mig
    assert mig is not None and [d.label for d in mig.devices] == ["3g.40gb (GI 1)", "3g.40gb (GI 2)"]
    assert mig.device_of(2) is not None and mig.device_of(2).processes[0].pid == pid_of(1, 2)  # type: ignore[union-attr]
    replay.close()
    report = build_report(recording)
    assert report.gpus[0].utilization_pct.count == 0  # n/a in MIG mode, not 0 %


def test_the_report_sums_up_each_instance(tmp_path: Path) -> None:
    ticks = []
    for i in range(4):
        busy = instance(0, 0, 1, sm_active_pct=80.0 + i, used=(20 + i) << 30)
        idle = instance(0, 1, 2, sm_active_pct=None, tensor_active_pct=None, dram_bw_pct=None)
        snap = mig_snapshot(T0 + i, 1)
        ticks.append(dataclasses.replace(snap, gpus=(mig_gpu(0, T0 + i, (busy, idle)),)))
    report = build_report(load_recording(write_recording(tmp_path / "mig.jsonl", ticks)))
    first, second = report.gpus[0].instances
    assert (first.label, first.gpu_instance_id, first.compute_instance_id, first.samples) == ("3g.40gb (GI 1)", 1, 0, 4)
    assert first.sm_active_pct.mean == 81.5 and first.sm_active_pct.maximum == 83.0
    assert first.memory_used_peak_bytes == (23 << 30) + (15 << 20) and first.memory_total_bytes == INSTANCE_TOTAL
    assert second.sm_active_pct.count == 0 and second.sm_active_pct.mean is None  # not reported: n/a, never 0
    text = render_text(report)
    assert "  efficiency   n/a for the whole GPU (MIG mode: per instance below)" in text
    assert "    3g.40gb (GI 1)   SM active 81.5%  tensor 44.0%  DRAM bw 51.5%  memory peak 23.0 / 37.7 GiB" in text
    assert "    3g.40gb (GI 2)   SM active n/a  tensor n/a  DRAM bw n/a  memory peak 30.0 / 37.7 GiB" in text
    assert max(len(line) for line in text.splitlines()) <= 100
    gpu = report_to_dict(report)["gpus"][0]
    assert gpu["instances"][0]["sm_active_pct"]["mean"] == 81.5 and gpu["instances"][1]["label"] == "3g.40gb (GI 2)"


def test_a_report_off_mig_has_no_instances_key(tmp_path: Path) -> None:
    report = build_report(
        load_recording(write_recording(tmp_path / "plain.jsonl", [snapshot(T0 + i, 2) for i in range(3)]))
    )
    assert all("instances" not in gpu for gpu in report_to_dict(report)["gpus"])
    assert "MIG" not in render_text(report)


def test_an_older_recording_without_mig_reads_as_no_mig(tmp_path: Path) -> None:
    ticks = [mig_snapshot(T0 + i, 1) for i in range(3)]
    path = write_recording(tmp_path / "old.jsonl", ticks)
    lines = path.read_text().splitlines()
    old = [lines[0]]
    for line in lines[1:]:
        data = json.loads(line)
        for gpu in data["gpus"]:
            gpu.pop("mig")
            for proc in gpu["processes"]:
                proc.pop("gpu_instance_id"), proc.pop("compute_instance_id")
        old.append(dumps(data).rstrip("\n"))
    path.write_text("\n".join(old) + "\n")
    recording = load_recording(path)
    assert recording.warnings == []
    assert all(gpu.mig is None for snap in recording.ticks for gpu in snap.gpus)
    assert {p.gpu_instance_id for snap in recording.ticks for p in snap.gpus[0].processes} == {None}


def test_damaged_mig_ticks_are_skipped_or_cut_short_as_any_tick(tmp_path: Path) -> None:
    ticks = [mig_snapshot(T0 + i, 1) for i in range(4)]
    path = write_recording(tmp_path / "bad.jsonl", ticks)
    lines = path.read_text().splitlines(keepends=True)
    bad = json.loads(lines[2])
    bad["gpus"][0]["mig"]["devices"][0]["sm_count"] = "sixty"
    lines[2] = dumps(bad)
    lines[-1] = lines[-1][: lines[-1].index('"mig"') + 20]  # cut inside the last tick's MIG object
    path.write_text("".join(lines))
    recording = load_recording(path)
    assert [snap.timestamp for snap in recording.ticks] == [T0, T0 + 2]
    assert len(recording.warnings) == 2
    assert "last line (line 5) is cut short" in recording.warnings[0]
    assert (
        "skipped 1 unreadable line (first: line 3: GPU 0: mig.devices[0].sm_count: expected an integer"
        in (recording.warnings[1])
    )


def test_mig_state_without_instances_trims_to_its_mode() -> None:
    snap = mig_snapshot(T0, 1)
    pending = dataclasses.replace(snap.gpus[0], mig=MigState(mode=False, pending_mode=True), processes=())
    line = tick_to_dict(dataclasses.replace(snap, gpus=(pending,)))
    assert line["gpus"][0]["mig"] == {"mode": False, "pending_mode": True}
    back = _back(line, 1)
    assert isinstance(back, object) and back.gpus[0].mig == MigState(mode=False, pending_mode=True)  # type: ignore[attr-defined]
    assert GpuSample(index=0, timestamp=T0).mig is None


def test_a_recorded_finding_keeps_the_instances_it_names() -> None:
    """A replay names the instance a finding was about, as the live monitor did; older files read as none."""
    from gputui.diagnostics.findings import Finding, Severity
    from gputui.record.format import finding_event, finding_from_dict

    finding = Finding("gpu_contention", Severity.WARNING, "t", "a", gpus=(0,), mig_instances=((0, 2),))
    event = finding_event("finding_opened", finding, T0)
    record = json.loads(dumps(event.data["finding"]))
    assert finding_from_dict(record).mig_instances == ((0, 2),)
    del record["mig_instances"]
    assert finding_from_dict(record).mig_instances == ()
