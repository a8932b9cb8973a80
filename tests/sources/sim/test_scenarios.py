"""The simulated machine: each scenario shows its own problem and no other, deterministically and smoothly."""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import pytest

from gputui.model import GpuInfo, GpuProcess, GpuSample, Snapshot
from gputui.sources.base import InvalidGpuSelection, Source
from gputui.sources.host.cgroup import parse_cpus
from gputui.sources.sim.scenarios import BY_NAME, SCENARIO_TABLE, SCENARIOS, TOUR
from gputui.sources.sim.source import (
    FIXED_EPOCH,
    TOUR_SCENARIOS,
    TOUR_SEGMENT_S,
    SimulatedSource,
)
from tests.conftest import Clock

PROBLEMS = tuple(BY_NAME)


def run(scenario: str, times: list[float], **kwargs: object) -> list[Snapshot]:
    clock = Clock()
    source = SimulatedSource(scenario, clock=clock, **kwargs)  # type: ignore[arg-type]
    source.open()
    out = []
    for t in times:
        clock.now = t
        out.append(source.sample())
    source.close()
    return out


SECONDS = [float(t) for t in range(30)]


@dataclass(frozen=True)
class Unit:
    """What runs work on its own: a whole GPU, or one MIG instance of a GPU in MIG mode."""

    util: float | None  # whole-GPU utilization, or the instance's graphics engine activity (GPM)
    sm: float | None
    tensor: float | None
    dram: float | None
    processes: tuple[GpuProcess, ...]
    used: int | None
    total: int | None


def units(gpu: GpuSample, info: GpuInfo) -> list[Unit]:
    """The GPU whole, or its MIG instances when it is in MIG mode (then it has no utilization of its own)."""
    if gpu.mig is None or not gpu.mig.mode:
        return [
            Unit(
                gpu.utilization_gpu_pct,
                gpu.sm_active_pct,
                gpu.tensor_active_pct,
                gpu.dram_bw_pct,
                gpu.processes,
                gpu.memory_used_bytes,
                info.memory_total_bytes,
            )
        ]
    return [
        Unit(
            d.gr_engine_active_pct,
            d.sm_active_pct,
            d.tensor_active_pct,
            d.dram_bw_pct,
            d.processes,
            d.memory_used_bytes,
            d.memory_total_bytes,
        )
        for d in gpu.mig.devices
    ]


def symptoms(snapshots: list[Snapshot]) -> set[str]:
    """Raw signs of trouble, read from the values only: what each scenario must show, and nothing more.

    A GPU in MIG mode has no whole-GPU utilization: its activity, processes and memory are read per instance."""
    found: set[str] = set()
    for snap in snapshots:
        host = snap.host
        # Whole-GPU utilization, where there is one (MIG mode has none).
        utils = [g.utilization_gpu_pct or 0.0 for g in snap.gpus if g.mig is None or not g.mig.mode]
        for gpu in snap.gpus:
            info = snap.info(gpu.index)
            assert info is not None
            reasons = set(gpu.clock_event_reasons or ())
            parts = units(gpu, info)
            busy = any((u.util or 0) > 50 for u in parts)
            assert gpu.temperature_c is not None and info.temperature_slowdown_c is not None
            if gpu.mig is not None and gpu.mig.mode:
                found.add("mig")
            if gpu.mig is not None and gpu.mig.change_pending:
                found.add("mig_pending")
            if gpu.temperature_c >= info.temperature_slowdown_c - 5:
                found.add("hot")
            if reasons & {"sw_thermal_slowdown", "hw_thermal_slowdown"}:
                found.add("thermal_bits")
            if "sw_power_cap" in reasons:
                found.add("sw_power_cap")
            if gpu.power_limit_w != info.power_default_limit_w:
                found.add("limit_lowered")
            if "hw_power_brake" in reasons:
                found.add("power_brake_bit")
            if "hw_slowdown" in reasons and not reasons & {"hw_thermal_slowdown", "hw_power_brake"}:
                found.add("hw_slowdown_unexplained")
            if busy and not reasons and (gpu.sm_clock_mhz or 0) < 0.9 * (info.max_sm_clock_mhz or 0):
                found.add("clocks_low_unexplained")
            if busy and (gpu.pcie_gen, gpu.pcie_width) != (info.pcie_max_gen, info.pcie_max_width):
                found.add("pcie_low_busy")
            if info.pcie_max_gen != info.pcie_gpu_max_gen:
                found.add("slot_limited")
            if gpu.pstate == 8 or "gpu_idle" in reasons:
                found.add("idle")
            if (gpu.pcie_tx_bytes_s or 0) > 0.8 * 63e9 or (gpu.pcie_rx_bytes_s or 0) > 0.8 * 63e9:
                found.add("pcie_saturated")
            if gpu.ecc_uncorrected or gpu.retired_pages_pending or gpu.xid_events:
                found.add("ecc")
            if info.nvlink_links_total is not None and gpu.nvlink_links_active != info.nvlink_links_total:
                found.add("nvlink_down")
            for unit in parts:
                if (unit.used or 0) / (unit.total or 1) > 0.95:
                    found.add("vram_high")
                users = {p.user for p in host.processes if any(g.pid == p.pid for g in unit.processes)}
                if len(unit.processes) > 1 or len(users) > 1:
                    found.add("shared_gpu")
                unit_busy = (unit.util or 0) > 50
                if unit_busy and unit.sm is not None and unit.tensor is not None and unit.sm >= 50 and unit.tensor < 5:
                    found.add("tensor_idle")
                if (unit.util or 0) >= 80 and unit.sm is not None and unit.sm < 50:
                    found.add("sm_low_busy")
                if (unit.dram or 0) >= 80:
                    found.add("dram_high")
                power = 100 * (gpu.power_w or 0) / (gpu.power_limit_w or 1)
                if (unit.util or 0) >= 80 and unit.sm is not None and unit.sm <= 10 and power <= 35:
                    found.add("spinning")
                if gpu.mig is not None and gpu.mig.mode and unit.processes and (unit.util or 0) < 50:
                    found.add("low_util")  # an instance with a job that waits
        topology = snap.system.topology
        assert topology is not None
        if any(p2p is False for row in topology.p2p for p2p in row):
            found.add("no_p2p")
        for proc in host.processes:
            near = {
                cpu
                for position, gpu in enumerate(snap.gpus)
                if any(p.pid == proc.pid for p in gpu.processes)
                for cpu in parse_cpus(topology.cpu_affinity[position]) or ()
            }
            if proc.last_cpu not in near:
                found.add("numa_far")
        if utils and snap.gpus[0].processes and sum(utils) / len(utils) < 50:
            found.add("low_util")
        if utils and max(utils) - min(utils) > 30:
            found.add("imbalance")
        if any((p.cpu_pct or 0) >= 60 and p.children == 0 for p in host.processes):
            found.add("main_loading")
        if (host.iowait_pct or 0) >= 10:
            found.add("iowait")
        if (host.disk_busy_pct or 0) >= 90:
            found.add("disk_busy")
        if (host.swap_in_bytes_s or 0) > 0 or (host.swap_out_bytes_s or 0) > 0:
            found.add("swapping")
        if (host.net_rx_bytes_s or 0) > 0.5 * (host.net_link_bytes_s or 1):
            found.add("net_busy")
        if snap.system.torch_cuda_version != "12.4" or snap.system.cuda_driver_version != "12.8":
            found.add("mismatch")
        if host.container is not None and (host.container.cpu_throttled_pct or 0) >= 20:
            found.add("throttled")
        first, last = snapshots[0].host.container, host.container
        if first is not None and last is not None and (last.oom_kills or 0) > (first.oom_kills or 0):
            found.add("oom")
        for before, after in zip(snapshots[0].gpus, snap.gpus, strict=True):
            if nvlink_errors(after) > nvlink_errors(before):
                found.add("nvlink_errors")
    return found


def nvlink_errors(gpu: GpuSample) -> int:
    return (gpu.nvlink_replay_errors or 0) + (gpu.nvlink_recovery_errors or 0) + (gpu.nvlink_crc_errors or 0)


def test_the_table_names_each_scenario_once_and_describes_it() -> None:
    assert len(BY_NAME) == len(SCENARIO_TABLE) and TOUR not in BY_NAME
    assert all(scenario.description and "\n" not in scenario.description for scenario in SCENARIO_TABLE)


@pytest.mark.parametrize("scenario", PROBLEMS)
def test_scenario_shows_its_problem_and_no_other(scenario: str) -> None:
    assert symptoms(run(scenario, SECONDS)) == BY_NAME[scenario].signs


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_labelled_simulated(scenario: str) -> None:
    source = SimulatedSource(scenario, clock=Clock(), fallback_reason="NVIDIA driver not found")
    system = source.open()
    snap = source.sample()
    for info in (system, snap.system):
        assert info.source == "simulated"
        assert not info.is_live
        assert info.scenario == scenario
        assert info.hostname == f"sim-{scenario}"
        assert info.fallback_reason == "NVIDIA driver not found"
    assert all(g.name.startswith("simulated ") for g in snap.gpu_info)


def test_default_machine_is_four_h100s() -> None:
    snap = run("healthy", [0.0])[0]
    assert [g.index for g in snap.gpus] == [0, 1, 2, 3]
    info = snap.gpu_info[0]
    assert info.name == "simulated H100 80GB HBM3"
    assert info.max_sm_clock_mhz == 1980 and info.max_memory_clock_mhz == 2619
    assert info.power_default_limit_w == 700.0
    assert (info.pcie_max_gen, info.pcie_max_width) == (5, 16)
    assert info.memory_total_bytes == 80 * 2**30
    assert info.temperature_slowdown_c is not None and 87 <= info.temperature_slowdown_c <= 90
    assert len({g.uuid for g in snap.gpu_info}) == 4
    assert snap.gpus[0].fan_pct is None  # SXM boards have no fan: not reported, never 0


def test_same_seed_and_clock_give_the_same_snapshots() -> None:
    times = [0.0, 0.5, 1.7, 12.0, 61.3]
    first = run("tour", times, seed=7)
    assert first == run("tour", times, seed=7)
    assert first[0].timestamp == FIXED_EPOCH
    assert first[-1].timestamp == FIXED_EPOCH + 61.3
    assert first != run("tour", times, seed=8)


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_values_move_smoothly(scenario: str) -> None:
    times = [t / 2 for t in range(0, 120)]
    snaps = run(scenario, times)
    for before, after in itertools.pairwise(snaps):
        if scenario == "tour" and int(before.timestamp - FIXED_EPOCH) // 30 != int(after.timestamp - FIXED_EPOCH) // 30:
            continue  # the tour switches scenario every 30 s; each scenario is smooth on its own
        for a, b in zip(before.gpus, after.gpus, strict=True):
            assert abs((a.utilization_gpu_pct or 0) - (b.utilization_gpu_pct or 0)) <= 6
            assert abs((a.temperature_c or 0) - (b.temperature_c or 0)) <= 1.5
            assert abs((a.power_w or 0) - (b.power_w or 0)) <= 40
            assert abs((a.sm_clock_mhz or 0) - (b.sm_clock_mhz or 0)) <= 120
            assert abs((a.memory_used_bytes or 0) - (b.memory_used_bytes or 0)) <= 2**30
        for ca, cb in zip(before.host.cpu_pct_per_core, after.host.cpu_pct_per_core, strict=True):
            assert abs(ca - cb) <= 10


def test_values_are_not_constant() -> None:
    snaps = run("healthy", SECONDS)
    assert len({s.gpus[0].utilization_gpu_pct for s in snaps}) > 10
    assert len({s.gpus[0].power_w for s in snaps}) > 10


@pytest.mark.parametrize("scenario", PROBLEMS)
def test_counters_only_grow(scenario: str) -> None:
    snaps = run(scenario, SECONDS)
    for before, after in itertools.pairwise(snaps):
        for a, b in zip(before.gpus, after.gpus, strict=True):
            assert (b.energy_mj or 0) >= (a.energy_mj or 0)
            assert (b.power_violation_ns or 0) >= (a.power_violation_ns or 0)
            assert (b.thermal_violation_ns or 0) >= (a.thermal_violation_ns or 0)


@pytest.mark.parametrize("scenario", PROBLEMS)
def test_gpu_and_host_agree(scenario: str) -> None:
    snap = run(scenario, [0.0, 5.0])[-1]
    host_pids = {p.pid for p in snap.host.processes}
    for gpu in snap.gpus:
        info = snap.info(gpu.index)
        assert info is not None
        assert {p.pid for p in gpu.processes} <= host_pids
        assert gpu.memory_used_bytes == sum(p.used_memory_bytes or 0 for p in gpu.processes) or not gpu.processes
        assert (gpu.memory_used_bytes or 0) + (gpu.memory_reserved_bytes or 0) + (
            gpu.memory_free_bytes or 0
        ) == info.memory_total_bytes
        # A busy GPU draws power and is warmer than an idle one; but a kernel that spins (hang) does nothing.
        if (gpu.utilization_gpu_pct or 0) > 80 and (gpu.sm_active_pct or 100) > 10:
            assert (gpu.power_w or 0) > 150 and (gpu.temperature_c or 0) > 35
        assert (gpu.power_w or 0) <= (gpu.power_limit_w or 0)
    total_read = sum(p.read_bytes_s or 0 for p in snap.host.processes)
    assert total_read <= (snap.host.disk_read_bytes_s or 0) * 1.1


def test_healthy_is_busy_cool_and_at_full_clocks() -> None:
    for snap in run("healthy", SECONDS):
        for gpu in snap.gpus:
            assert (gpu.utilization_gpu_pct or 0) >= 85
            assert gpu.sm_clock_mhz == 1980 and gpu.pstate == 0
            assert (gpu.temperature_c or 99) < 75
            assert len(gpu.processes) == 1
            assert gpu.clock_event_reasons == ()
            assert (gpu.power_w or 0) > 400


def test_idle_is_p8_at_gen1_with_no_processes() -> None:
    for snap in run("idle", SECONDS):
        for gpu in snap.gpus:
            assert gpu.utilization_gpu_pct == 0 and gpu.pstate == 8 and gpu.pcie_gen == 1
            assert gpu.clock_event_reasons == ("gpu_idle",)
            assert gpu.processes == () and (gpu.power_w or 999) < 100
        assert snap.host.processes == ()


def test_thermal_climbs_past_slowdown_and_throttles_one_gpu() -> None:
    snaps = run("thermal", SECONDS)
    hot = snaps[0].gpus[1]
    assert hot.temperature_c is not None and 89 - 5 < hot.temperature_c < 89  # starts inside the margin
    last = snaps[-1].gpus[1]
    assert last.temperature_c is not None and last.temperature_c > 89
    # HW slowdown as a driver sets it for heat: with HW thermal slowdown beside it to name the cause
    assert {"sw_thermal_slowdown", "hw_thermal_slowdown", "hw_slowdown"} <= set(last.clock_event_reasons or ())
    for snap in snaps:
        reasons = set(snap.gpus[1].clock_event_reasons or ())
        assert "hw_slowdown" not in reasons or "hw_thermal_slowdown" in reasons
    assert (last.sm_clock_mhz or 0) < (hot.sm_clock_mhz or 0) - 300
    assert (last.thermal_violation_ns or 0) - (snaps[15].gpus[1].thermal_violation_ns or 0) >= 14e9
    temps = [s.gpus[1].temperature_c or 0 for s in snaps]
    assert temps == sorted(temps) or max(temps) - temps[-1] < 1  # climbs, then holds near the limit
    for other in (0, 2, 3):
        assert (snaps[-1].gpus[other].temperature_c or 99) < 75


def test_powercap_limit_below_default_with_power_at_the_cap() -> None:
    first, *_, last = run("powercap", SECONDS)
    for gpu in last.gpus:
        assert gpu.power_limit_w == 400.0
        assert "sw_power_cap" in (gpu.clock_event_reasons or ())
        assert 380 <= (gpu.power_w or 0) <= 400
        assert (gpu.sm_clock_mhz or 9999) < 1980 * 0.9
    assert (last.gpus[0].power_violation_ns or 0) - (first.gpus[0].power_violation_ns or 0) >= 28e9


def test_hwslowdown_sets_both_bits_and_clocks_collapse() -> None:
    for gpu in run("hwslowdown", [3.0])[0].gpus:
        assert {"hw_slowdown", "hw_power_brake"} <= set(gpu.clock_event_reasons or ())
        assert (gpu.sm_clock_mhz or 9999) < 1100 and (gpu.utilization_gpu_pct or 0) > 85


def test_hwslowdown_nocause_sets_the_bit_alone_on_cool_gpus_under_their_limit() -> None:
    for snap in run("hwslowdown-nocause", SECONDS):
        for gpu in snap.gpus:
            assert set(gpu.clock_event_reasons or ()) == {"hw_slowdown"}
            assert (gpu.sm_clock_mhz or 9999) < 1100 and (gpu.utilization_gpu_pct or 0) > 85
            assert (gpu.temperature_c or 99) < 80 and (gpu.power_w or 999) < 0.5 * (gpu.power_limit_w or 0)


def test_pcie_link_trained_low_on_one_busy_gpu() -> None:
    snap = run("pcie", [4.0])[0]
    links = [(g.pcie_gen, g.pcie_width) for g in snap.gpus]
    assert links == [(5, 16), (3, 8), (5, 16), (5, 16)]
    assert (snap.gpus[1].utilization_gpu_pct or 0) > 85
    assert (snap.gpus[1].pcie_rx_bytes_s or 0) < 0.8 * 7.88e9


def test_vram_nearly_full_and_growing() -> None:
    snaps = run("vram", SECONDS)
    for gpu in snaps[0].gpus:
        assert 0.96 <= (gpu.memory_used_bytes or 0) / 2**30 / 80 <= 0.99
    assert all(
        (b.gpus[0].memory_used_bytes or 0) >= (a.gpus[0].memory_used_bytes or 0) for a, b in itertools.pairwise(snaps)
    )
    assert (snaps[-1].gpus[0].memory_used_bytes or 0) - (snaps[0].gpus[0].memory_used_bytes or 0) > 100 * 2**20


def test_starved_cpu_main_processes_load_the_data_without_workers() -> None:
    for snap in run("starved-cpu", SECONDS):
        for gpu in snap.gpus:
            assert 10 <= (gpu.utilization_gpu_pct or 0) <= 35
            proc = snap.host.process(gpu.processes[0].pid)
            assert proc is not None
            assert 65 <= (proc.cpu_pct or 0) <= 95 and proc.children == 0 and proc.workers_cpu_pct == 0
        assert sum(1 for c in snap.host.cpu_pct_per_core if c >= 65) == 4
        assert (snap.host.iowait_pct or 99) < 2


def test_starved_io_waits_on_a_saturated_disk() -> None:
    for snap in run("starved-io", SECONDS):
        assert (snap.host.iowait_pct or 0) >= 25
        assert (snap.host.disk_busy_pct or 0) >= 95
        assert all((g.utilization_gpu_pct or 100) <= 40 for g in snap.gpus)
        assert all((p.children or 0) > 0 for p in snap.host.processes)


def test_contention_two_users_on_the_first_gpu() -> None:
    snap = run("contention", [2.0])[0]
    first = snap.gpus[0]
    users = {proc.user for proc in snap.host.processes if proc.pid in {p.pid for p in first.processes}}
    assert users == {"alice", "bob"}
    assert all(len(g.processes) == 1 for g in snap.gpus[1:])


def test_imbalance_one_process_first_gpu_far_busier() -> None:
    for snap in run("imbalance", SECONDS):
        utils = [g.utilization_gpu_pct or 0 for g in snap.gpus]
        assert utils[0] > 85 and all(utils[0] - u > 30 for u in utils[1:])
        assert len({p.pid for g in snap.gpus for p in g.processes}) == 1


def test_mismatch_versions() -> None:
    system = run("mismatch", [0.0])[0].system
    assert (system.cuda_driver_version, system.torch_cuda_version) == ("12.2", "12.8")


def test_tour_visits_every_scenario_and_says_so() -> None:
    times = [k * TOUR_SEGMENT_S + off for k in range(len(TOUR_SCENARIOS)) for off in (1.0, 20.0)]
    snaps = run("tour", times)
    notices = [s.events for s in snaps]
    assert all(len(n) == 1 for n in notices[::2]) and all(n == () for n in notices[1::2])
    for name, event in zip(TOUR_SCENARIOS, notices[::2], strict=True):
        assert repr(name) in event[0]
    mismatch = snaps[2 * TOUR_SCENARIOS.index("mismatch")].system
    assert mismatch.cuda_driver_version == "12.2" and mismatch.scenario == "tour"
    assert snaps[0].system.cuda_driver_version == "12.8"
    idle = snaps[2 * TOUR_SCENARIOS.index("idle")]
    assert all(g.pstate == 8 for g in idle.gpus)


def test_tour_scenario_at() -> None:
    source = SimulatedSource()
    assert source.scenario_at(0.0) == ("healthy", 0.0)
    assert source.scenario_at(TOUR_SEGMENT_S * 2 + 3) == (TOUR_SCENARIOS[2], 3.0)
    assert source.scenario_at(TOUR_SEGMENT_S * len(TOUR_SCENARIOS))[0] == TOUR_SCENARIOS[0]


def test_gpu_selection_keeps_the_problem_visible() -> None:
    snap = run("thermal", [29.0], gpu_indices=[0, 2])[0]
    assert [g.index for g in snap.gpus] == [0, 2] and [i.index for i in snap.gpu_info] == [0, 2]
    assert "sw_thermal_slowdown" in (snap.gpus[1].clock_event_reasons or ())
    assert {p.pid for p in snap.host.processes} == {p.pid for g in snap.gpus for p in g.processes}


def test_gpu_count() -> None:
    snap = run("healthy", [0.0], gpu_count=8)[0]
    assert len(snap.gpus) == 8 and snap.system.gpu_count == 8
    assert len({g.pci_bus_id for g in snap.gpu_info}) == 8


@pytest.mark.parametrize("indices", [[4], [0, 7], [-1]])
def test_missing_gpu_is_an_invalid_selection(indices: list[int]) -> None:
    with pytest.raises(InvalidGpuSelection, match="does not exist"):
        SimulatedSource("healthy", gpu_indices=indices)


def test_bad_arguments() -> None:
    with pytest.raises(InvalidGpuSelection, match="no GPU selected"):
        SimulatedSource("healthy", gpu_indices=[])
    with pytest.raises(ValueError, match="unknown scenario"):
        SimulatedSource("melting")
    with pytest.raises(ValueError, match="at least one GPU"):
        SimulatedSource(gpu_count=0)


def test_protocol_and_lifecycle() -> None:
    source = SimulatedSource("healthy")
    assert isinstance(source, Source)
    with pytest.raises(RuntimeError, match="before open"):
        source.sample()
    source.open()
    first = source.sample()
    second = source.sample()
    assert second.timestamp >= first.timestamp
    source.close()
    source.close()


def test_h100_machine_is_nvswitch_connected_across_two_sockets() -> None:
    snap = run("healthy", [0.0], gpu_count=8)[0]
    topology = snap.system.topology
    assert topology is not None
    assert topology.matrix == tuple(tuple("X" if a == b else "NV18" for b in range(8)) for a in range(8))
    assert topology.p2p == tuple(tuple(None if a == b else True for b in range(8)) for a in range(8))
    assert topology.numa_node == (0, 0, 0, 0, 1, 1, 1, 1) and topology.numa_nodes == 2
    assert topology.cpu_affinity == ("0-15",) * 4 + ("16-31",) * 4
    for info in snap.gpu_info:
        assert (info.nvlink_links_total, info.nvlink_version, info.nvlink_remote) == (18, 4, ("NVSwitch",) * 18)
    for gpu in snap.gpus:
        assert gpu.nvlink_links_active == 18
        assert (gpu.nvlink_replay_errors, gpu.nvlink_recovery_errors, gpu.nvlink_crc_errors) == (0, 0, 0)
    for proc in snap.host.processes:
        gpu = next(g.index for g in snap.gpus if any(p.pid == proc.pid for p in g.processes))
        assert proc.cpus_allowed == tuple(range(32))
        assert proc.last_cpu in (range(16) if gpu < 4 else range(16, 32))


def test_a100_has_twelve_nvlink3_links_and_a_selection_keeps_its_order() -> None:
    snap = run("healthy", [0.0], gpu_count=8, gpu_indices=[5, 1], board="a100")[0]
    topology = snap.system.topology
    assert topology is not None
    assert topology.matrix == (("X", "NV12"), ("NV12", "X"))
    assert (topology.numa_node, topology.cpu_affinity) == ((1, 0), ("16-31", "0-15"))
    assert [(i.nvlink_links_total, i.nvlink_version) for i in snap.gpu_info] == [(12, 3), (12, 3)]


def test_nvlink_two_links_down_on_the_last_gpu_and_replays_climb() -> None:
    snaps = run("nvlink", SECONDS)
    first, last = snaps[0], snaps[-1]
    assert [g.nvlink_links_active for g in last.gpus] == [18, 18, 18, 16]
    topology = last.system.topology
    assert topology is not None
    assert topology.matrix[0] == ("X", "NV18", "NV18", "NV16")
    assert topology.matrix[3] == ("NV16", "NV16", "NV16", "X")
    assert (last.gpus[3].nvlink_replay_errors or 0) > (first.gpus[3].nvlink_replay_errors or 0)
    assert all(g.nvlink_replay_errors == 0 for g in last.gpus[:3])
    assert (last.gpus[3].nvlink_recovery_errors, last.gpus[3].nvlink_crc_errors) == (0, 0)


def test_nvswitch_every_gpu_two_links_down_alike_and_no_errors() -> None:
    snaps = run("nvswitch", SECONDS)
    last = snaps[-1]
    assert [g.nvlink_links_active for g in last.gpus] == [16, 16, 16, 16]
    assert all(info.nvlink_remote == ("NVSwitch",) * 18 for info in last.gpu_info)
    topology = last.system.topology
    assert topology is not None
    assert {cell for a, row in enumerate(topology.matrix) for b, cell in enumerate(row) if a != b} == {"NV16"}
    assert all(g.nvlink_replay_errors == 0 for snap in snaps for g in snap.gpus)


def test_numa_rank_zero_runs_on_the_far_socket() -> None:
    snap = run("numa", [5.0])[0]
    assert snap.system.topology is not None and snap.system.topology.numa_node[0] == 0
    procs = [snap.host.process(g.processes[0].pid) for g in snap.gpus]
    assert procs[0] is not None
    assert procs[0].cpus_allowed == tuple(range(16, 32)) and procs[0].last_cpu in range(16, 32)
    assert all(p is not None and p.cpus_allowed == tuple(range(32)) for p in procs[1:])


def test_pcie_box_is_four_consumer_boards_without_nvlink_or_p2p_across_sockets() -> None:
    snap = run("pcie-box", [5.0])[0]
    for info in snap.gpu_info:
        assert info.name == "simulated GeForce RTX 4090" and info.memory_total_bytes == 24 * 2**30
        assert (info.power_default_limit_w, info.pcie_max_gen) == (450.0, 4)
        assert (info.nvlink_links_total, info.nvlink_version, info.nvlink_remote) == (None, None, None)
    for gpu in snap.gpus:
        assert (gpu.nvlink_links_active, gpu.nvlink_replay_errors, gpu.nvlink_rx_bytes_s) == (None, None, None)
        assert gpu.sm_active_pct is None  # no GPM on a GeForce board
    topology = snap.system.topology
    assert topology is not None
    assert topology.matrix == (
        ("X", "PHB", "SYS", "SYS"),
        ("PHB", "X", "SYS", "SYS"),
        ("SYS", "SYS", "X", "PHB"),
        ("SYS", "SYS", "PHB", "X"),
    )
    assert topology.p2p[0] == (None, True, False, False) and topology.p2p[3] == (False, False, True, None)
    assert len({p.pid for g in snap.gpus for p in g.processes}) == 1


def test_the_tour_runs_pcie_box_on_its_own_boards_and_comes_back() -> None:
    start = TOUR_SCENARIOS.index("pcie-box") * TOUR_SEGMENT_S
    again = len(TOUR_SCENARIOS) * TOUR_SEGMENT_S + 1.0  # the tour's next round, on the machine's own boards
    before, box, after = run("tour", [start - 1.0, start + 1.0, again])
    names = [{i.name for i in snap.gpu_info} for snap in (before, box, after)]
    assert names == [{"simulated H100 80GB HBM3"}, {"simulated GeForce RTX 4090"}, {"simulated H100 80GB HBM3"}]
    assert after.gpu_info == before.gpu_info
