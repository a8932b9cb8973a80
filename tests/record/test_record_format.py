"""The recording's lines: a tick reads back into the same Snapshot, compactly; headers guard the schema."""

from __future__ import annotations

import dataclasses
import json

import pytest

from gputui.diagnostics.findings import Evidence, Finding, Severity
from gputui.model import GpuSample
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
    mark_event,
    tick_from_dict,
    tick_to_dict,
)
from tests.record.recdata import T0, gpu_info, snapshot, system


def _header(n: int = 2) -> dict[str, object]:
    return header_to_dict(
        system(n), tuple(gpu_info(i) for i in range(n)), interval_s=1.0, started_at=T0, utc_offset_s=0
    )


def test_tick_round_trip_gives_the_same_snapshot() -> None:
    snap = snapshot(T0 + 1.5, 2)
    header = header_from_dict(json.loads(dumps(_header(2))))
    back = tick_from_dict(json.loads(dumps(tick_to_dict(snap))), header, header.system)
    assert back == snap


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
