"""The simulated H100s in MIG mode (`--demo-gpu h100-mig`, the mig_* scenarios): samples shaped as a driver gives
them in MIG mode, and each MIG scenario's signs read from the values alone."""

from __future__ import annotations

import json
import os
import random
import re
import uuid
from pathlib import Path

import pytest

from gputui.cli import main
from gputui.model import GpuSample, MigDevice, MigState, Snapshot
from gputui.sources.sim.job import JobSource
from gputui.sources.sim.physics import BOARDS, GIB, GpuPlan, HostPlan, Job, MachinePhysics, Scene
from gputui.sources.sim.scenarios import BY_NAME
from gputui.sources.sim.source import TOUR_SCENARIOS, TOUR_SEGMENT_S
from tests.conftest import Clock
from tests.sources.sim.test_scenarios import SECONDS, run

MIG_SCENARIOS = ("mig-isolated", "mig-starving", "mig-shared-slice")
UUID_SHAPE = re.compile(r"^MIG-[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")
GPM_FIELDS = ("gr_engine_active_pct", "sm_active_pct", "tensor_active_pct", "dram_bw_pct")
PARENT_GPM = (*GPM_FIELDS, "sm_occupancy_pct", "fp32_active_pct", "nvlink_rx_bytes_s", "nvlink_tx_bytes_s")


def mig_of(gpu: GpuSample) -> MigState:
    assert gpu.mig is not None
    return gpu.mig


def instance(gpu: GpuSample, gpu_instance_id: int) -> MigDevice:
    device = mig_of(gpu).device_of(gpu_instance_id)
    assert device is not None
    return device


def users_of(snap: Snapshot, device: MigDevice) -> set[str]:
    pids = {p.pid for p in device.processes}
    return {p.user or "" for p in snap.host.processes if p.pid in pids}


@pytest.mark.parametrize(("scenario", "board"), [("healthy", "h100-mig"), *((s, "h100") for s in MIG_SCENARIOS)])
def test_a_gpu_in_mig_mode_reads_as_a_driver_gives_it(scenario: str, board: str) -> None:
    for snap in run(scenario, [0.0, 4.0, 17.5], board=board):
        for gpu in snap.gpus:
            info = snap.info(gpu.index)
            assert info is not None and info.mig_mode is True
            state = mig_of(gpu)
            assert (state.mode, state.pending_mode, state.change_pending) == (True, True, False)
            # NVML gives no whole-GPU utilization in MIG mode, and GPM only per instance.
            assert (gpu.utilization_gpu_pct, gpu.utilization_memory_pct) == (None, None)
            assert all(getattr(gpu, field) is None for field in PARENT_GPM)
            # The readings only the parent has are read as usual.
            for value in (gpu.temperature_c, gpu.power_w, gpu.sm_clock_mhz, gpu.pcie_gen, gpu.pcie_rx_bytes_s):
                assert value is not None and value > 0
            assert (gpu.clock_event_reasons, gpu.ecc_uncorrected, gpu.nvlink_links_active) == ((), 0, 18)
            devices = state.devices
            assert [(d.index, d.profile, d.gpu_instance_id, d.compute_instance_id) for d in devices] == [
                (0, "3g.40gb", 1, 0),
                (1, "3g.40gb", 2, 0),
            ]
            assert [(d.sm_count, d.slice_count, d.label) for d in devices] == [
                (60, 3, "3g.40gb (GI 1)"),
                (60, 3, "3g.40gb (GI 2)"),
            ]
            for device in devices:
                assert device.uuid is not None and UUID_SHAPE.match(device.uuid)
                assert device.memory_total_bytes == 40448 * 2**20  # 39.50 GiB, as nvidia-smi mig -lgip lists it
                assert 0 < (device.memory_used_bytes or 0) <= device.memory_total_bytes
                for field in GPM_FIELDS:
                    value = getattr(device, field)
                    assert value is not None and 0.0 <= value <= 100.0
                for proc in device.processes:
                    assert (proc.gpu_instance_id, proc.compute_instance_id) == (device.gpu_instance_id, 0)
                    assert (proc.sm_pct, proc.mem_pct) == (None, None)  # not given per process in MIG mode
                    assert (proc.used_memory_bytes or 0) <= device.memory_total_bytes
            # The parent lists every process of every instance, and its memory is what they hold together.
            assert gpu.processes == tuple(p for d in devices for p in d.processes)
            assert gpu.memory_used_bytes == sum(d.memory_used_bytes or 0 for d in devices)
            assert (gpu.memory_used_bytes or 0) <= sum(d.memory_total_bytes or 0 for d in devices)
        uuids = [d.uuid for g in snap.gpus for d in mig_of(g).devices]
        assert len(set(uuids)) == len(uuids) and not set(uuids) & {i.uuid for i in snap.gpu_info}


def test_mig_uuids_are_stable_per_seed() -> None:
    def uuids(seed: int) -> list[str | None]:
        snaps = run("mig-isolated", [0.0, 12.0], seed=seed)
        assert [d.uuid for d in mig_of(snaps[0].gpus[0]).devices] == [d.uuid for d in mig_of(snaps[1].gpus[0]).devices]
        return [d.uuid for g in snaps[0].gpus for d in mig_of(g).devices]

    assert uuids(3) == uuids(3) != uuids(4)
    assert all(str(uuid.UUID((u or "").removeprefix("MIG-"))) for u in uuids(3))


def test_the_parent_heats_and_draws_power_with_its_instances_load() -> None:
    """GPU 0 of mig_starving has one instance waiting: less load, so less power and heat than GPU 1's two busy."""
    for snap in run("mig-starving", [10.0, 20.0, 29.0]):
        starving, busy = snap.gpus[0], snap.gpus[1]
        assert (starving.power_w or 0) + 100 < (busy.power_w or 0)
        assert (starving.temperature_c or 0) < (busy.temperature_c or 0)
        assert (busy.power_w or 0) <= (busy.power_limit_w or 0)


def test_mig_isolated_one_busy_training_process_in_each_instance() -> None:
    for snap in run("mig-isolated", SECONDS):
        for gpu in snap.gpus:
            first, second = instance(gpu, 1), instance(gpu, 2)
            assert len(first.processes) == len(second.processes) == 1
            assert (users_of(snap, first), users_of(snap, second)) == ({"alice"}, {"carol"})
            assert all((d.gr_engine_active_pct or 0) >= 85 and (d.sm_active_pct or 0) >= 70 for d in (first, second))


def test_mig_starving_one_instance_waits_on_its_main_process_loading_the_data() -> None:
    for snap in run("mig-starving", SECONDS):
        waiting, beside = instance(snap.gpus[0], 2), instance(snap.gpus[0], 1)
        assert 10 <= (waiting.gr_engine_active_pct or 0) <= 35
        assert (beside.gr_engine_active_pct or 0) >= 85
        (proc,) = waiting.processes
        loader = snap.host.process(proc.pid)
        assert loader is not None
        assert 65 <= (loader.cpu_pct or 0) <= 95 and loader.children == 0 and loader.workers_cpu_pct == 0
        others = [d for g in snap.gpus[1:] for d in mig_of(g).devices]
        assert all((d.gr_engine_active_pct or 0) >= 85 for d in others)


def test_mig_shared_slice_two_users_share_one_instance_and_not_the_other() -> None:
    for snap in run("mig-shared-slice", [2.0, 20.0]):
        shared, alone = instance(snap.gpus[0], 1), instance(snap.gpus[0], 2)
        assert len(shared.processes) == 2 and users_of(snap, shared) == {"alice", "bob"}
        assert len(alone.processes) == 1 and users_of(snap, alone) == {"carol"}
        assert (shared.memory_used_bytes or 0) <= (shared.memory_total_bytes or 0)
        assert all(len(d.processes) == 1 for g in snap.gpus[1:] for d in mig_of(g).devices)


def test_mig_pending_the_gpu_runs_whole_until_a_reset() -> None:
    for snap in run("mig-pending", [0.0, 15.0]):
        pending, *rest = snap.gpus
        assert pending.mig == MigState(mode=False, pending_mode=True)
        assert pending.mig is not None and pending.mig.change_pending
        assert (pending.utilization_gpu_pct or 0) >= 85 and pending.sm_active_pct is not None
        assert all(p.gpu_instance_id is None for p in pending.processes)
        assert all(g.mig is None for g in rest)  # MIG off and nothing pending: no MIG state at all
        assert all(info.mig_mode is False for info in snap.gpu_info)


def test_a_selection_shows_the_mig_problem_on_its_first_gpu() -> None:
    snap = run("mig-shared-slice", [3.0], gpu_indices=[2, 3])[0]
    assert [g.index for g in snap.gpus] == [2, 3]
    assert len(instance(snap.gpus[0], 1).processes) == 2
    assert (snap.gpus[1].mig is not None) and all(len(d.processes) == 1 for d in snap.gpus[1].mig.devices)


def test_a_scene_not_written_for_mig_places_its_processes_and_sizes_their_memory_to_the_instance() -> None:
    snap = run("vram", [1.0], board="h100-mig")[0]
    for gpu in snap.gpus:
        first, second = instance(gpu, 1), instance(gpu, 2)
        assert len(first.processes) == 1 and second.processes == ()
        assert 0.95 < (first.memory_used_bytes or 0) / (first.memory_total_bytes or 1) < 1.0
        assert second.gr_engine_active_pct == 0.0 and (first.gr_engine_active_pct or 0) > 85
    contention = run("contention", [1.0], board="h100-mig")[0].gpus[0]
    assert [len(d.processes) for d in mig_of(contention).devices] == [1, 1]  # the two land on separate halves


def test_the_tour_runs_the_mig_scenes_on_the_same_gpus_in_mig_mode() -> None:
    start = TOUR_SCENARIOS.index("mig-isolated") * TOUR_SEGMENT_S
    before, mig, pending = run("tour", [1.0, start + 1.0, TOUR_SCENARIOS.index("mig-pending") * TOUR_SEGMENT_S + 1.0])
    assert [i.uuid for i in mig.gpu_info] == [i.uuid for i in before.gpu_info] == [i.uuid for i in pending.gpu_info]
    assert [i.mig_mode for i in (*before.gpu_info, *pending.gpu_info)] == [False] * 8
    assert all(i.mig_mode for i in mig.gpu_info) and all(g.mig is not None for g in mig.gpus)
    assert pending.gpus[0].mig == MigState(mode=False, pending_mode=True)


def test_every_mig_scenario_names_its_instances_in_its_findings() -> None:
    assert [f.instances for f in BY_NAME["mig-starving"].findings] == [(2,)]
    assert [f.instances for f in BY_NAME["mig-shared-slice"].findings] == [(1,)]
    assert [(f.rule, f.instances) for f in BY_NAME["mig-pending"].findings] == [("mig_pending", ())]
    assert BY_NAME["mig-isolated"].findings == ()
    assert all(f.instances == () for s in BY_NAME.values() if not s.name.startswith("mig") for f in s.findings)


def test_a_process_in_an_instance_the_gpu_lacks_is_a_clear_error() -> None:
    physics = MachinePhysics.drawn(random.Random(0), 1, 0, BOARDS["h100-mig"])
    physics.reset()
    stray = Job(pid=1, user="u", cmdline="x", memory_gib=((0, 1.0),), cpu_pct=1.0, gpu_instance_id=5)
    with pytest.raises(ValueError, match="GPU instance 5"):
        physics.gpu_sample(0, Scene({0: GpuPlan()}, (stray,), HostPlan()), 0.0, 0.0, 0.0)
    with pytest.raises(ValueError, match="1 instance plans for a GPU split into 2"):
        physics.gpu_sample(0, Scene({0: GpuPlan(slices=(GpuPlan(),))}, (), HostPlan()), 0.0, 0.0, 0.0)


def test_the_lab_gpu_can_be_an_instance_too(tmp_path: Path) -> None:
    trace = tmp_path / "job.json"
    record = {"format": "gputui-job-trace", "version": 1, "pid": os.getpid(), "gpu_busy_s": 0.0, "steps": 0}
    trace.write_text(json.dumps({**record, "step_started": 0.0}))  # in its first step since 0: busy throughout
    clock = Clock(now=1.0)
    source = JobSource(trace, board="h100-mig", clock=clock)
    source.open()
    clock.now = 2.0
    gpu = source.sample().gpus[0]
    source.close()
    first, second = mig_of(gpu).devices
    assert [p.pid for p in first.processes] == [os.getpid()] and second.processes == ()
    assert (first.memory_used_bytes or 0) < 20 * GIB  # the job's 20 GiB, sized to its half of the GPU
    assert (first.gr_engine_active_pct or 0) > 90 and gpu.utilization_gpu_pct is None


def test_demo_gpu_h100_mig_through_the_cli(capsys: pytest.CaptureFixture[str]) -> None:
    """snapshot --json on the MIG board: labelled SIMULATED, no whole-GPU utilization, and its instances."""
    assert main(["snapshot", "--demo", "healthy", "--demo-gpu", "h100-mig", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["system"]["source"] == "simulated" and data["system"]["scenario"] == "healthy"
    gpu = data["gpus"][0]
    assert gpu["utilization_gpu_pct"] is None and gpu["temperature_c"] is not None
    mig = gpu["mig"]
    assert (mig["mode"], mig["pending_mode"]) == (True, True)
    assert [(d["profile"], d["gpu_instance_id"]) for d in mig["devices"]] == [("3g.40gb", 1), ("3g.40gb", 2)]


def test_demo_gpu_h100_mig_is_a_choice_and_its_table_says_simulated(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["snapshot", "--demo", "mig-isolated", "--demo-gpu", "h100-mig"]) == 0
    assert "SIMULATED" in capsys.readouterr().out
    with pytest.raises(SystemExit) as exc:
        main(["snapshot", "--demo", "healthy", "--demo-gpu", "h100-migg"])
    assert exc.value.code == 2 and "h100-mig" in capsys.readouterr().err
