"""The GPM rules (busy is not efficient) and gpu_contention's SM shares, on hand-built snapshots."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import pytest

from gputui.diagnostics.engine import DiagnosticsEngine
from gputui.diagnostics.rules import ALL_RULES
from gputui.diagnostics.rules.base import Check, Hit, Window
from gputui.diagnostics.rules.efficiency import low_sm_activity, memory_bound, tensor_cores_idle
from gputui.diagnostics.rules.sharing import gpu_contention
from gputui.diagnostics.thresholds import Thresholds
from gputui.model import GpuProcess, Snapshot
from tests.diagnostics.builders import series
from tests.snapshots import GIB, gpu, host, proc

TH = Thresholds()
EFFICIENCY = {"low_sm_activity", "tensor_cores_idle", "memory_bound"}


def run(check: Check, snaps: Sequence[Snapshot]) -> list[Hit]:
    return list(check(Window(snaps, TH.window_s), TH))


def steady(**gpu_fields: Any) -> list[Snapshot]:
    return series(10, lambda i: {"gpus": [gpu(**gpu_fields)]})


def evidence(hit: Hit) -> dict[str, object]:
    return {e.key: e.value for e in hit.evidence}


def test_a_full_busy_gpu_raises_none_of_them() -> None:
    snaps = steady()
    assert [rule.id for rule in ALL_RULES if rule.id in EFFICIENCY and run(rule.check, snaps)] == []


def test_low_sm_activity_when_busy_but_the_sms_are_mostly_empty() -> None:
    [hit] = run(low_sm_activity, steady(utilization_gpu_pct=99.0, sm_active_pct=22.0, sm_occupancy_pct=10.0))
    assert hit.gpus == (0,) and hit.value == 22.0
    assert evidence(hit) == {"gpu_util": 99.0, "sm_active": 22.0, "sm_occupancy": 10.0}
    assert hit.params == {"gpu": 0, "util": "99%", "sm": "22%"}


@pytest.mark.parametrize(
    "fields",
    [
        {"utilization_gpu_pct": 60.0, "sm_active_pct": 20.0},  # not busy: starvation's case, not this one
        {"utilization_gpu_pct": 99.0, "sm_active_pct": 55.0},  # SMs half full or better
        {"utilization_gpu_pct": 99.0, "sm_active_pct": None},  # no GPM (A100): n/a, never a finding
    ],
    ids=["not-busy", "sms-fill", "no-gpm"],
)
def test_low_sm_activity_leaves_look_alikes_alone(fields: dict[str, Any]) -> None:
    assert run(low_sm_activity, steady(**fields)) == []


def test_low_sm_activity_is_judged_over_the_window_not_one_tick() -> None:
    # One small-kernel tick (an evaluation step) in a window of full ones.
    snaps = series(10, lambda i: {"gpus": [gpu(sm_active_pct=20.0 if i == 9 else 86.0)]})
    assert run(low_sm_activity, snaps) == []


def test_tensor_cores_idle_when_the_math_runs_in_fp32() -> None:
    [hit] = run(tensor_cores_idle, steady(sm_active_pct=82.0, tensor_active_pct=0.5, fp32_active_pct=45.0))
    assert hit.value == 0.5
    assert evidence(hit) == {"sm_active": 82.0, "tensor_active": 0.5, "fp32_active": 45.0}


@pytest.mark.parametrize(
    "fields",
    [
        {"sm_active_pct": 30.0, "tensor_active_pct": 0.5, "fp32_active_pct": 45.0},  # SMs idle: another story
        {"sm_active_pct": 82.0, "tensor_active_pct": 0.5, "fp32_active_pct": 8.0},  # neither: integer or memory work
        {"sm_active_pct": 82.0, "tensor_active_pct": 30.0, "fp32_active_pct": 45.0},  # tensor cores in use
        {"sm_active_pct": 82.0, "tensor_active_pct": None, "fp32_active_pct": 45.0},  # one metric not reported
    ],
    ids=["sms-idle", "no-fp32", "tensor-busy", "tensor-unknown"],
)
def test_tensor_cores_idle_leaves_look_alikes_alone(fields: dict[str, Any]) -> None:
    assert run(tensor_cores_idle, steady(**fields)) == []


def test_memory_bound_when_dram_bandwidth_stays_near_the_peak() -> None:
    [hit] = run(memory_bound, steady(dram_bw_pct=88.0))
    assert hit.value == 88.0 and evidence(hit)["dram_bw"] == 88.0
    assert run(memory_bound, steady(dram_bw_pct=70.0)) == []
    assert run(memory_bound, steady(dram_bw_pct=None)) == []


def test_the_engine_words_them_in_english_and_chinese() -> None:
    snaps = steady(utilization_gpu_pct=99.0, sm_active_pct=22.0, sm_occupancy_pct=10.0)
    for lang, words in (("en", "only 22% of its SMs"), ("zh", "只有 22% 的 SM")):
        engine = DiagnosticsEngine(lang=lang)
        for snap in snaps:
            state = engine.update(snap)
        [finding] = [f for f in state.active if f.rule == "low_sm_activity"]
        assert words in finding.title
        assert "torch.compile" in finding.advice


def shared_gpu(shares: dict[int, float | None]) -> list[Snapshot]:
    procs = tuple(GpuProcess(pid, 8 * GIB, sm_pct=share) for pid, share in shares.items())
    users = [proc(100), proc(200, user="bob", name="python3", cmdline="jupyter"), proc(300, user="carol")]
    return series(10, lambda i: {"gpus": [replace(gpu(), processes=procs)], "host_sample": host(users)})


def test_gpu_contention_names_who_takes_the_sms_when_the_driver_says() -> None:
    [hit] = run(gpu_contention, shared_gpu({100: 57.0, 200: 38.0, 300: 2.0}))
    assert hit.variant == "shares"
    assert (hit.params["pid"], hit.params["who"], hit.params["share"]) == (200, "bob", "38%")
    assert evidence(hit)["sm_shares"] == "100: 57%, 200: 38%, 300: 2%"


def test_gpu_contention_without_shares_keeps_its_plain_words() -> None:
    [hit] = run(gpu_contention, shared_gpu({100: None, 200: None}))
    assert hit.variant == ""
    assert evidence(hit)["sm_shares"] is None
