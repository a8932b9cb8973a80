"""Each rule on hand-built snapshots: the case it must catch and the look-alikes it must leave alone."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import pynvml
import pytest

from gputui.diagnostics.catalog import text
from gputui.diagnostics.engine import DiagnosticsEngine
from gputui.diagnostics.findings import Severity
from gputui.diagnostics.rules import ALL_RULES, RULE_IDS
from gputui.diagnostics.rules.base import (
    Check,
    Hit,
    Window,
    link_bytes_s,
)
from gputui.diagnostics.rules.health import ecc_errors, gpu_lost, xid
from gputui.diagnostics.rules.host import host_swap
from gputui.diagnostics.rules.memory import idle_allocation, vram_pressure
from gputui.diagnostics.rules.pcie import pcie_downgrade, pcie_errors, pcie_saturated, pcie_slot_limited
from gputui.diagnostics.rules.power import clocks_low, hw_slowdown, power_brake, power_cap
from gputui.diagnostics.rules.sharing import gpu_contention, imbalance
from gputui.diagnostics.rules.software import cuda_mismatch, parse_cuda
from gputui.diagnostics.rules.starvation import cpu_contention, starvation_cpu, starvation_io, starvation_net
from gputui.diagnostics.rules.thermal import thermal_margin, thermal_throttle
from gputui.diagnostics.thresholds import Thresholds
from gputui.model import (
    CLOCK_HW_POWER_BRAKE,
    CLOCK_HW_SLOWDOWN,
    CLOCK_SW_POWER_CAP,
    CLOCK_THERMAL,
    ContainerInfo,
    GpuProcess,
    GpuSample,
    Snapshot,
)
from tests.diagnostics.builders import SYSTEM, series, snap
from tests.snapshots import GIB, gpu, gpu_info, host, proc

TH = Thresholds()


def run(check: Check, snaps: Sequence[Snapshot], th: Thresholds = TH) -> list[Hit]:
    return list(check(Window(snaps, th.window_s), th))


def steady(count: int = 10, **kwargs: object) -> list[Snapshot]:
    return series(count, lambda i: kwargs)


def evidence(hit: Hit) -> dict[str, object]:
    return {e.key: e.value for e in hit.evidence}


# -- every rule at once ------------------------------------------------------------------------------------


def test_ids_are_the_interface() -> None:
    assert {
        "thermal_throttle", "thermal_margin", "power_cap", "hw_slowdown", "power_brake", "clocks_low",
        "vram_pressure", "pcie_downgrade", "pcie_slot_limited", "pcie_errors", "pcie_saturated",
        "starvation_cpu", "starvation_io", "starvation_net", "gpu_contention", "cpu_contention", "imbalance",
        "host_swap", "cuda_mismatch", "nvml_unavailable", "ecc_errors", "xid", "idle_allocation", "gpu_lost",
        "cpu_throttled", "workers_oversubscribed", "shm_small", "oom_kill", "memory_limit",
        "low_sm_activity", "tensor_cores_idle", "memory_bound",
        "nvlink_down", "nvlink_errors", "numa_mismatch", "p2p_unavailable", "job_stopped", "gpu_stalled",
        "mig_pending", "mig_no_instances", "job_waits",
    } == RULE_IDS  # fmt: skip


def test_busy_cool_gpu_with_one_process_raises_nothing() -> None:
    snaps = steady()
    assert {rule.id: run(rule.check, snaps) for rule in ALL_RULES if run(rule.check, snaps)} == {}


@pytest.mark.parametrize(
    ("sample", "raised"),
    [
        (GpuSample(index=0, timestamp=0.0), []),
        (GpuSample(index=0, timestamp=0.0, lost=True, error="GPU is lost"), ["gpu_lost"]),
    ],
    ids=["nothing-reported", "lost"],
)
def test_unreported_values_raise_nothing_and_break_nothing(sample: GpuSample, raised: list[str]) -> None:
    snaps = steady(gpus=[sample], host_sample=host(cpu_pct_per_core=()))
    assert [rule.id for rule in ALL_RULES if run(rule.check, snaps)] == raised


# -- thermal -----------------------------------------------------------------------------------------------


def test_thermal_throttle_on_the_slowdown_bits_while_busy() -> None:
    [hit] = run(
        thermal_throttle, steady(gpus=[gpu(temperature_c=90.0, sm_clock_mhz=1500, clock_event_reasons_mask=0x20)])
    )
    assert hit.gpus == (0,) and hit.value == 90.0
    assert evidence(hit)["slowdown_threshold"] == 89 and evidence(hit)["sm_clock"] == 1500
    assert evidence(hit)["clock_events"] == "sw_thermal_slowdown (0x20)"


def test_thermal_throttle_on_a_growing_violation_counter_measures_the_share() -> None:
    snaps = series(11, lambda i: {"gpus": [gpu(temperature_c=88.0, thermal_violation_ns=int(i * 0.5e9))]})
    [hit] = run(thermal_throttle, snaps)
    assert evidence(hit)["throttled_share"] == pytest.approx(50.0)


def test_thermal_bits_on_an_idle_gpu_are_not_a_slow_job() -> None:
    assert run(thermal_throttle, steady(gpus=[gpu(utilization_gpu_pct=5.0, clock_event_reasons_mask=0x40)])) == []


def test_thermal_margin_within_5c_of_slowdown() -> None:
    [hit] = run(thermal_margin, steady(gpus=[gpu(temperature_c=85.0)]))
    assert hit.params["slowdown"] == 89
    assert run(thermal_margin, steady(gpus=[gpu(temperature_c=83.5)])) == []


def test_thermal_margin_gives_way_to_throttling_and_needs_a_threshold() -> None:
    assert run(thermal_margin, steady(gpus=[gpu(temperature_c=88.0, clock_event_reasons_mask=0x20)])) == []
    no_threshold = [gpu_info(temperature_slowdown_c=None)]
    assert run(thermal_margin, steady(gpus=[gpu(temperature_c=88.0)], infos=no_threshold)) == []


# -- power and clocks --------------------------------------------------------------------------------------


def test_power_cap_at_the_default_limit_is_info() -> None:
    [hit] = run(power_cap, steady(gpus=[gpu(power_w=697.0, clock_event_reasons_mask=0x4)]))
    assert hit.severity == Severity.INFO and hit.variant == "default"


def test_power_cap_below_the_default_limit_is_critical_with_the_numbers() -> None:
    [hit] = run(power_cap, steady(gpus=[gpu(power_w=396.0, power_limit_w=400.0, clock_event_reasons_mask=0x4)]))
    assert hit.severity == Severity.CRITICAL and hit.variant == "lowered"
    assert hit.params == {"gpu": 0, "limit": "400", "default": "700"}


def test_power_cap_needs_the_bit_and_load() -> None:
    assert run(power_cap, steady(gpus=[gpu(power_limit_w=400.0)])) == []
    idle = gpu(utilization_gpu_pct=0.0, power_limit_w=400.0, clock_event_reasons_mask=0x4)
    assert run(power_cap, steady(gpus=[idle])) == []


# HW slowdown (0x8) is an umbrella; nvml.h names its cause by HW thermal slowdown (0x40) or the power brake
# (0x80) beside it. Each combination is one finding of the rule for that cause.
CLOCK_RULES = {"thermal_throttle": thermal_throttle, "hw_slowdown": hw_slowdown, "power_brake": power_brake}


def clock_findings(snaps: Sequence[Snapshot]) -> dict[str, list[Hit]]:
    return {rule: hits for rule, check in CLOCK_RULES.items() if (hits := run(check, snaps))}


def test_hw_slowdown_beside_hw_thermal_slowdown_is_heat_alone() -> None:
    hot = gpu(temperature_c=91.0, sm_clock_mhz=1400, clock_event_reasons_mask=0x8 | 0x20 | 0x40)
    found = clock_findings(steady(gpus=[hot]))
    assert list(found) == ["thermal_throttle"]
    [hit] = found["thermal_throttle"]
    assert evidence(hit)["clock_events"] == "hw_slowdown, sw_thermal_slowdown, hw_thermal_slowdown (0x68)"


def test_hw_slowdown_beside_the_power_brake_is_the_power_brake_alone() -> None:
    braked = gpu(sm_clock_mhz=990, clock_event_reasons_mask=0x8 | 0x80)
    found = clock_findings(steady(gpus=[braked]))
    assert list(found) == ["power_brake"]
    [hit] = found["power_brake"]
    assert hit.value == 990 and evidence(hit)["clock_events"] == "hw_slowdown, hw_power_brake (0x88)"
    assert list(clock_findings(steady(gpus=[gpu(clock_event_reasons_mask=0x80)]))) == ["power_brake"]


def test_hw_slowdown_alone_and_held_says_the_cause_is_not_reported_and_gives_what_tells_causes_apart() -> None:
    slow = gpu(sm_clock_mhz=990, power_w=250.0, temperature_c=55.0, clock_event_reasons_mask=0x8)
    found = clock_findings(steady(gpus=[slow]))
    assert list(found) == ["hw_slowdown"]
    [hit] = found["hw_slowdown"]
    assert hit.value == 990
    assert evidence(hit) == {
        "temperature": 55.0,
        "slowdown_threshold": 89,
        "power": 250.0,
        "power_limit": 700.0,
        "clock_of_max": 50.0,
        "sm_clock": 990,
        "max_sm_clock": 1980,
        "clock_events": "hw_slowdown (0x8)",
        "throttled_share": 100.0,
    }


@pytest.mark.parametrize(
    ("set_at", "fires"),
    [
        ({9}, False),  # one sample, the latest: a P-state or clock change
        ({4}, False),  # one sample in the middle
        (set(range(8)), False),  # most of the window, but no longer
        (set(range(4, 10)), True),  # 6 of 10 (the sustained share) and now
    ],
    ids=["blip-now", "blip-before", "gone-now", "held"],
)
def test_hw_slowdown_alone_needs_most_of_the_window_and_now(set_at: set[int], fires: bool) -> None:
    snaps = series(10, lambda i: {"gpus": [gpu(clock_event_reasons_mask=0x8 if i in set_at else 0)]})
    assert bool(run(hw_slowdown, snaps)) == fires


def test_hw_slowdown_beside_a_cause_bit_does_not_count_towards_its_share() -> None:
    """Heat named for most of the window, then the cause bit drops for the last ticks: no hw_slowdown yet."""
    snaps = series(10, lambda i: {"gpus": [gpu(clock_event_reasons_mask=0x8 | (0x40 if i < 7 else 0))]})
    assert run(hw_slowdown, snaps) == []


def test_no_hardware_finding_without_the_bits() -> None:
    assert clock_findings(steady(gpus=[gpu(clock_event_reasons_mask=0x4)])) == {}
    assert clock_findings(steady(gpus=[gpu(clock_event_reasons_mask=None)])) == {}


def test_clocks_low_when_busy_with_no_reason() -> None:
    [hit] = run(clocks_low, steady(gpus=[gpu(sm_clock_mhz=1100, clock_event_reasons_mask=0x2)]))
    assert hit.value == 1100 and hit.params["max"] == 1980


@pytest.mark.parametrize(
    "changes",
    [
        {"sm_clock_mhz": 1100, "clock_event_reasons_mask": 0x4},
        {"sm_clock_mhz": 1900},
        {"sm_clock_mhz": 345, "utilization_gpu_pct": 0.0, "clock_event_reasons_mask": 0x1},
        {"sm_clock_mhz": 1100, "clock_event_reasons_mask": None},
    ],
    ids=["power-capped", "near-max", "idle", "reasons-unknown"],
)
def test_clocks_low_leaves_explained_clocks_alone(changes: dict[str, object]) -> None:
    assert run(clocks_low, steady(gpus=[gpu(**changes)])) == []


# -- memory ------------------------------------------------------------------------------------------------


def test_vram_pressure_when_nearly_full_and_growing() -> None:
    snaps = series(10, lambda i: {"gpus": [gpu(memory_used_bytes=int(78 * GIB + i * 20 * (1 << 20)))]})
    [hit] = run(vram_pressure, snaps)
    assert hit.pids == (100,) and evidence(hit)["memory_growth"] == 180


def test_vram_full_but_flat_is_a_caching_allocator_not_pressure() -> None:
    assert run(vram_pressure, steady(gpus=[gpu(memory_used_bytes=79 * GIB)])) == []


def test_vram_at_the_ceiling_and_churning_is_pressure_too() -> None:
    """98-99% of 80 GiB, up and down by 400 MiB: the caching allocator freeing and retrying at the limit."""
    mib = 1 << 20
    snaps = series(10, lambda i: {"gpus": [gpu(memory_used_bytes=int(78.6 * GIB) + (400 * mib if i % 2 == 0 else 0))]})
    [hit] = run(vram_pressure, snaps)
    assert hit.variant == "churn" and evidence(hit)["memory_swing"] == 400


def test_vram_swinging_below_the_ceiling_or_by_little_is_not_churn() -> None:
    mib = 1 << 20
    low = series(10, lambda i: {"gpus": [gpu(memory_used_bytes=int(76 * GIB) + (400 * mib if i % 2 == 0 else 0))]})
    small = series(10, lambda i: {"gpus": [gpu(memory_used_bytes=int(78.6 * GIB) + (100 * mib if i % 2 == 0 else 0))]})
    assert run(vram_pressure, low) == []  # 95-96%: a swing there is the allocator's normal life
    assert run(vram_pressure, small) == []


def test_vram_growing_below_95_percent_is_fine() -> None:
    snaps = series(10, lambda i: {"gpus": [gpu(memory_used_bytes=int(70 * GIB + i * 100 * (1 << 20)))]})
    assert run(vram_pressure, snaps) == []


def test_idle_allocation_condition() -> None:
    [hit] = run(idle_allocation, steady(gpus=[gpu(utilization_gpu_pct=0.0)]))
    assert hit.pids == (100,) and "python3 (100)" in str(hit.params["name"])
    assert run(idle_allocation, steady(gpus=[gpu(utilization_gpu_pct=0.0, pids=())])) == []
    assert run(idle_allocation, steady(gpus=[gpu(utilization_gpu_pct=3.0)])) == []


# -- PCIe --------------------------------------------------------------------------------------------------


def test_pcie_downgrade_under_load() -> None:
    [hit] = run(pcie_downgrade, steady(gpus=[gpu(pcie_gen=3, pcie_width=8)]))
    assert hit.params["current"] == "Gen3 x8" and hit.params["max"] == "Gen5 x16"
    assert evidence(hit)["link_bandwidth"] == pytest.approx(7.9)


def test_idle_gpu_at_gen1_is_healthy() -> None:
    idle = gpu(utilization_gpu_pct=0.0, pcie_gen=1, pcie_width=16, clock_event_reasons_mask=0x1, pids=())
    assert run(pcie_downgrade, steady(gpus=[idle])) == []


def test_pcie_slot_limited_when_the_system_max_is_below_the_gpus() -> None:
    [hit] = run(pcie_slot_limited, steady(gpus=[gpu(pcie_gen=4)], infos=[gpu_info(pcie_max_gen=4)]))
    assert hit.params == {"gpu": 0, "system": 4, "gpu_max": 5}
    assert run(pcie_slot_limited, steady()) == []


def test_pcie_errors_when_replays_grow() -> None:
    [hit] = run(pcie_errors, series(10, lambda i: {"gpus": [gpu(pcie_replay_count=100 + (5 if i > 6 else 0))]}))
    assert hit.value == 5
    assert run(pcie_errors, steady(gpus=[gpu(pcie_replay_count=100)])) == []


def test_pcie_saturated_for_most_of_the_window() -> None:
    gen3 = {"pcie_gen": 3, "pcie_width": 16}
    [hit] = run(pcie_saturated, steady(gpus=[gpu(pcie_rx_bytes_s=14e9, **gen3)], infos=[gpu_info(pcie_max_gen=3)]))
    assert hit.params["direction"] == "RX"
    bursts = series(10, lambda i: {"gpus": [gpu(pcie_rx_bytes_s=14e9 if i < 3 else 2e9, **gen3)]})
    assert run(pcie_saturated, bursts) == []


def test_link_bandwidth_follows_the_pcie_specification() -> None:
    assert link_bytes_s(4, 16) == pytest.approx(31.5e9, rel=1e-3)
    assert link_bytes_s(5, 16) == pytest.approx(63.0e9, rel=1e-3)
    assert link_bytes_s(None, 16) is None


def test_clock_reason_masks_are_the_nvml_bits() -> None:
    masks = {
        "thermal": CLOCK_THERMAL,
        "sw_power_cap": CLOCK_SW_POWER_CAP,
        "hw_slowdown": CLOCK_HW_SLOWDOWN,
        "hw_power_brake": CLOCK_HW_POWER_BRAKE,
    }
    assert masks == {
        "thermal": pynvml.nvmlClocksEventReasonSwThermalSlowdown | pynvml.nvmlClocksEventReasonHwThermalSlowdown,
        "sw_power_cap": pynvml.nvmlClocksEventReasonSwPowerCap,
        "hw_slowdown": pynvml.nvmlClocksEventReasonHwSlowdown,
        "hw_power_brake": pynvml.nvmlClocksEventReasonHwPowerBrakeSlowdown,
    }


# -- starvation --------------------------------------------------------------------------------------------


def starved(**gpu_changes: object) -> GpuSample:
    return gpu(utilization_gpu_pct=20.0, **gpu_changes)  # type: ignore[arg-type]


def test_starvation_cpu_names_the_process_its_cpu_and_workers() -> None:
    snaps = steady(gpus=[starved()], host_sample=host([proc(cpu_pct=99.5, children=0)]))
    [hit] = run(starvation_cpu, snaps)
    assert hit.pids == (100,)
    assert evidence(hit)["process"] == "python3 (100)"
    assert evidence(hit)["process_cpu"] == 99.5 and evidence(hit)["job_workers"] == 0


def _noisy_loader(i: int, children: int = 0, workers_cpu: float | None = None, main: float = 80.0) -> dict[str, object]:
    """A real training loop's readings: the GPU 15-30% busy, the main process swinging +-10 around `main`."""
    util = 21.0 + (9.0 if i % 3 == 0 else -6.0 if i % 3 == 1 else 0.0)
    cpu = main + (10.0 if i % 2 else -10.0)
    job = proc(cpu_pct=cpu, children=children, workers_cpu_pct=workers_cpu)
    return {"gpus": [gpu(utilization_gpu_pct=util)], "host_sample": host([job], cpu_pct_per_core=(15.0,) * 8)}


def test_starvation_cpu_names_data_loading_in_the_main_process() -> None:
    """num_workers=0: the main process at 70-90% of a core while its GPU waits ~80% of the time (not a flat 100%)."""
    [hit] = run(starvation_cpu, series(10, _noisy_loader))
    assert hit.variant == "main_process"
    assert evidence(hit)["process_cpu"] == 80.0 and evidence(hit)["job_workers"] == 0
    assert hit.params["suggest"] == "7"  # 8 CPUs, one job: all but one for its main process
    idle_main = series(10, lambda i: _noisy_loader(i, main=25.0))
    assert run(starvation_cpu, idle_main) == []  # the GPU waits, but not on this process


def test_starvation_cpu_names_too_few_workers_when_they_are_all_busy_and_cpus_spare() -> None:
    [hit] = run(starvation_cpu, series(10, lambda i: _noisy_loader(i, children=2, workers_cpu=190.0, main=20.0)))
    assert hit.variant == "workers" and evidence(hit)["worker_cpu"] == 95.0
    # 2 + the 6 whole CPUs spare of 8 (15% busy), up to the job's 8 CPUs (its main process waits for the workers)
    assert hit.params["suggest"] == "8"
    relaxed = series(10, lambda i: _noisy_loader(i, children=2, workers_cpu=60.0, main=20.0))
    assert run(starvation_cpu, relaxed) == []


def test_too_few_workers_are_never_told_to_raise_to_what_they_have() -> None:
    """The lab's case c on 2 CPUs: one worker busy, the main process waiting, a CPU idle: "raise num_workers to about
    1" (the workers that fit beside a main process that works) contradicted itself; 2 is what the idle CPU allows."""
    two_cpus = {"cpu_pct_per_core": (40.0, 40.0)}

    def loader(i: int) -> dict[str, object]:
        readings = _noisy_loader(i, children=1, workers_cpu=98.0, main=20.0)
        job = readings["host_sample"].processes[0]  # type: ignore[attr-defined]
        return {**readings, "host_sample": host([job], **two_cpus)}

    [hit] = run(starvation_cpu, series(10, loader))
    assert hit.variant == "workers" and hit.params["suggest"] == "2"


def test_workers_that_wait_on_a_cold_disk_are_the_disks_to_name() -> None:
    """Reading from disk costs the workers kernel time too (70-90% of a core each in the lab's cold-cache job):
    with tasks waiting on storage, the disk is the cause, not too few workers."""

    def reading(i: int) -> dict[str, object]:
        made = _noisy_loader(i, children=2, workers_cpu=170.0, main=5.0)
        made["host_sample"] = replace(made["host_sample"], iowait_pct=26.0)  # type: ignore[type-var]
        return made

    assert run(starvation_cpu, series(10, reading)) == []
    assert len(run(starvation_io, series(10, reading))) == 1


def test_workers_that_fill_every_cpu_reading_a_cold_disk_are_the_disks_to_name_too() -> None:
    """The lab's case f on 2 CPUs: the workers' reads (kernel copies) kept both CPUs busy while iowait took the
    rest; "the CPUs are all busy with its data loading" opened beside the disk's finding, and it is the disk."""

    def reading(iowait: float) -> list[Snapshot]:
        def made(i: int) -> dict[str, object]:
            readings = _noisy_loader(i, children=2, workers_cpu=170.0, main=2.0)
            job = readings["host_sample"].processes[0]  # type: ignore[attr-defined]
            return {**readings, "host_sample": host([job], iowait_pct=iowait, cpu_pct_per_core=(97.0, 97.0))}

        return series(10, made)

    assert run(starvation_cpu, reading(iowait=20.0)) == []
    assert len(run(starvation_io, reading(iowait=20.0))) == 1
    assert [hit.variant for hit in run(starvation_cpu, reading(iowait=0.0))] == ["cpus"]


def test_starvation_cpu_names_the_training_loop_when_the_workers_keep_up() -> None:
    [hit] = run(starvation_cpu, series(10, lambda i: _noisy_loader(i, children=4, workers_cpu=80.0)))
    assert hit.variant == "main_loop"


def test_starvation_cpu_speaks_of_a_quota_only_where_there_is_one() -> None:
    for variant in ("main_process", "workers", "cpus", "main_loop", ""):
        title = text(
            f"starvation_cpu.title{'.' + variant if variant else ''}",
            "en",
            gpu=0,
            name="p",
            children=2,
            usable=8,
            quota="n/a",
        )
        assert "quota" not in title.lower()
    saturated = host([proc(cpu_pct=40.0, workers_cpu_pct=720.0)], cpu_pct_per_core=(97.0,) * 8)
    [hit] = run(starvation_cpu, steady(gpus=[starved()], host_sample=saturated))
    assert hit.variant == "cpus" and "cpu_quota" not in evidence(hit)


def test_a_noisy_real_loader_gets_one_finding_that_stays_open_and_one_verdict() -> None:
    engine = DiagnosticsEngine()
    opened: set[float] = set()
    verdicts: set[tuple[str, str]] = set()
    for i in range(60):
        state = engine.update(snap(i * 0.5, **_noisy_loader(i)))  # type: ignore[arg-type]
        opened |= {f.started_at for f in state.active if f.rule == "starvation_cpu"}
        if i >= 20 and state.verdict is not None:
            verdicts.add((state.verdict.cls, state.verdict.summary.partition("busy, ")[2]))
    assert len(opened) == 1 and [f.rule for f in state.active] == ["starvation_cpu"]
    assert verdicts == {("input_bound", "waiting for data (data loading in the main process (num_workers=0))")}


def test_starvation_cpu_when_the_host_cpus_are_saturated_by_the_job() -> None:
    """Its workers fill the host: more of them would only queue (cpu_contention names CPUs full of others)."""
    own = host([proc(cpu_pct=40.0, workers_cpu_pct=720.0)], cpu_pct_per_core=(97.0,) * 8)
    [hit] = run(starvation_cpu, steady(gpus=[starved()], host_sample=own))
    assert hit.variant == "cpus" and hit.params["usable"] == "8"
    others = host([proc(cpu_pct=40.0, workers_cpu_pct=80.0)], cpu_pct_per_core=(97.0,) * 8)
    assert run(starvation_cpu, steady(gpus=[starved()], host_sample=others)) == []


@pytest.mark.parametrize(
    ("sample", "cpu"),
    [(starved(), 40.0), (gpu(), 99.5), (starved(pids=()), 99.5)],
    ids=["cpu-not-busy", "gpu-busy", "no-process"],
)
def test_starvation_cpu_negatives(sample: GpuSample, cpu: float) -> None:
    assert run(starvation_cpu, steady(gpus=[sample], host_sample=host([proc(cpu_pct=cpu)]))) == []


@pytest.mark.parametrize("host_changes", [{"iowait_pct": 35.0}, {"disk_busy_pct": 98.0}], ids=["iowait", "disk"])
def test_starvation_io(host_changes: dict[str, float]) -> None:
    [hit] = run(starvation_io, steady(gpus=[starved()], host_sample=host(**host_changes)))
    assert hit.gpus == (0,)


def test_starvation_io_needs_a_busy_disk_or_iowait() -> None:
    assert run(starvation_io, steady(gpus=[starved()])) == []
    assert run(starvation_io, steady(host_sample=host(iowait_pct=35.0))) == []


def test_starvation_net_near_the_link_speed() -> None:
    [hit] = run(starvation_net, steady(gpus=[starved()], host_sample=host(net_rx_bytes_s=3.0e9)))
    assert evidence(hit)["net_rx"] == 3000.0
    assert run(starvation_net, steady(gpus=[starved()], host_sample=host(net_rx_bytes_s=1.0e9))) == []


def test_cpu_contention_when_others_fill_the_cpus() -> None:
    busy_host = host([proc(cpu_pct=50.0)], cpu_pct_per_core=(96.0,) * 8)
    [hit] = run(cpu_contention, steady(gpus=[starved()], host_sample=busy_host))
    assert hit.severity is None  # the rule's own: a warning, and a cause of input_bound
    own = host([proc(cpu_pct=760.0)], cpu_pct_per_core=(96.0,) * 8)
    assert run(cpu_contention, steady(gpus=[starved()], host_sample=own)) == []


def test_cpu_contention_inside_a_cpuset_looks_only_at_its_cpus() -> None:
    """A container pinned to CPUs 0-3 of 8: a host busy on 4-7 takes nothing from it; busy on 0-3, it does."""
    pinned = replace(SYSTEM, container=ContainerInfo("docker", "/.dockerenv", 2, cpuset_cpus=(0, 1, 2, 3)))
    elsewhere = host([proc(cpu_pct=50.0)], cpu_pct_per_core=(20.0,) * 4 + (100.0,) * 4)
    snaps = series(10, lambda i: {"gpus": [starved()], "host_sample": elsewhere, "system": pinned})
    assert run(cpu_contention, snaps) == []
    mine = host([proc(cpu_pct=50.0)], cpu_pct_per_core=(98.0,) * 4 + (5.0,) * 4)
    snaps = series(10, lambda i: {"gpus": [starved()], "host_sample": mine, "system": pinned})
    [hit] = run(cpu_contention, snaps)
    assert dict((e.key, e.value) for e in hit.evidence)["host_cpu"] == 98.0


# -- sharing -----------------------------------------------------------------------------------------------


def test_gpu_contention_names_processes_and_users() -> None:
    procs = [proc(100), proc(200, user="bob", cmdline="jupyter")]
    [hit] = run(gpu_contention, steady(gpus=[gpu(pids=(100, 200))], host_sample=host(procs)))
    assert hit.pids == (100, 200) and hit.params["users"] == "alice, bob"


def test_one_compute_process_and_a_desktop_is_not_contention() -> None:
    desktop = replace(gpu(), processes=(GpuProcess(100, GIB), GpuProcess(7, GIB, kind="graphics")))
    assert run(gpu_contention, steady(gpus=[desktop])) == []


def two_ranks(util0: float, util1: float, cmd1: str = "python3 train.py --local-rank 1") -> list[Snapshot]:
    procs = [proc(100, cmdline="python3 train.py --local-rank 0"), proc(101, cmdline=cmd1)]
    gpus = [gpu(0, pids=(100,), utilization_gpu_pct=util0), gpu(1, pids=(101,), utilization_gpu_pct=util1)]
    return steady(gpus=gpus, host_sample=host(procs))


def test_imbalance_across_the_ranks_of_one_job() -> None:
    [hit] = run(imbalance, two_ranks(95.0, 40.0))
    assert hit.gpus == (0, 1) and hit.value == 55.0


def test_imbalance_leaves_even_jobs_and_separate_jobs_alone() -> None:
    assert run(imbalance, two_ranks(95.0, 80.0)) == []
    assert run(imbalance, two_ranks(95.0, 40.0, cmd1="python3 other.py")) == []


# -- host, software, health ------------------------------------------------------------------------------


def test_host_swap_when_sustained() -> None:
    mib = 1 << 20
    [hit] = run(host_swap, steady(host_sample=host(swap_in_bytes_s=5.0 * mib, swap_out_bytes_s=3.0 * mib)))
    assert hit.gpus == () and hit.value == 8.0
    blip = series(10, lambda i: {"host_sample": host(swap_in_bytes_s=50.0 * mib if i == 9 else 0.0)})
    assert run(host_swap, blip) == []


@pytest.mark.parametrize(
    ("torch", "driver", "severity"),
    [
        ("13.0", "12.8", Severity.CRITICAL),
        ("12.8", "12.2", Severity.WARNING),
        ("12.4", "12.8", None),
        (None, "12.8", None),
    ],
)
def test_cuda_mismatch(torch: str | None, driver: str, severity: Severity | None) -> None:
    system = replace(SYSTEM, torch_cuda_version=torch, cuda_driver_version=driver)
    hits = run(cuda_mismatch, steady(system=system))
    assert [h.severity for h in hits] == ([severity] if severity else [])


def test_parse_cuda() -> None:
    assert parse_cuda("12.4") == (12, 4) and parse_cuda("11") == (11, 0)
    assert parse_cuda("None") is None and parse_cuda(None) is None


@pytest.mark.parametrize("changes", [{"ecc_uncorrected": 2}, {"retired_pages_pending": True}])
def test_ecc_errors(changes: dict[str, object]) -> None:
    assert len(run(ecc_errors, steady(gpus=[gpu(**changes)]))) == 1


def test_xid_events() -> None:
    [hit] = run(xid, steady(gpus=[gpu(xid_events=(79, 79))]))
    assert hit.params["codes"] == "79"
    assert run(xid, steady()) == []


def test_xid_79_is_seen_on_the_gpu_it_took_off_the_bus() -> None:
    lost = GpuSample(index=0, timestamp=0.0, lost=True, error="GPU is lost", xid_events=(79,))
    [hit] = run(xid, steady(gpus=[lost]))
    assert hit.gpus == (0,) and hit.params["codes"] == "79"


def test_a_lost_gpu_is_a_finding_and_a_readable_one_is_not() -> None:
    lost = GpuSample(index=1, timestamp=0.0, lost=True, error="GPU is lost")
    [hit] = run(gpu_lost, steady(gpus=[gpu(), lost]))
    assert hit.gpus == (1,) and evidence(hit) == {"gpu_error": "GPU is lost"}
    assert run(gpu_lost, steady()) == []
