"""MIG through NvmlSource, against the fake pynvml answering as drivers do in MIG mode (nvml.h, nvidia-ml-py)."""

from __future__ import annotations

import pynvml
import pytest

from gputui.model import GpuSample, Snapshot
from gputui.sources.host.source import HostSource
from gputui.sources.host.visible import mig_slice, old_mig_name
from gputui.sources.nvml.mig import profile_of
from gputui.sources.nvml.source import NvmlSource
from tests.conftest import Clock
from tests.fake_psutil import NO_PROC, FakePsutil
from tests.fake_pynvml import MIB, FakeGpu, FakeMig, FakeNvml, consumer_gpu, mig_gpu

ENABLE, DISABLE = pynvml.NVML_DEVICE_MIG_ENABLE, pynvml.NVML_DEVICE_MIG_DISABLE
SLICE = "MIG-5c1d2e3f-0000-4a1b-8c2d-000000000001"  # the fake's second instance of GPU 0
OWN_LISTS = (
    "nvmlDeviceGetComputeRunningProcesses_v3",
    "nvmlDeviceGetComputeRunningProcesses_v2",
    "nvmlDeviceGetGraphicsRunningProcesses_v3",
    "nvmlDeviceGetGraphicsRunningProcesses_v2",
)


@pytest.fixture(autouse=True)
def no_visible_devices(monkeypatch: pytest.MonkeyPatch) -> None:
    """Whatever the machine running the tests was given, these tests choose what the process sees."""
    for variable in ("CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES"):
        monkeypatch.delenv(variable, raising=False)


def opened(nvml: FakeNvml, clock: Clock, slow_every: int = 1, **kwargs: object) -> NvmlSource:
    host = HostSource(clock=clock, psutil_module=FakePsutil(), root=NO_PROC)  # type: ignore[arg-type]
    source = NvmlSource(
        pynvml=nvml,  # type: ignore[arg-type]
        host=host,
        clock=clock,
        root=NO_PROC,
        slow_every=slow_every,
        watch_xid=False,
        **kwargs,  # type: ignore[arg-type]
    )
    source.open()
    return source


def tick(source: NvmlSource, clock: Clock) -> Snapshot:
    snap = source.sample()
    clock.advance(1.0)
    return snap


def first(source: NvmlSource, clock: Clock, n: int = 1) -> GpuSample:
    """The first GPU after n ticks."""
    for _ in range(n):
        snap = tick(source, clock)
    return snap.gpus[0]


def test_an_h100_in_mig_mode_reads_each_instance(clock: Clock) -> None:
    nvml = FakeNvml([mig_gpu(("3g.40gb", "3g.40gb"), processes=[[101], [202]])])
    source = opened(nvml, clock)
    gpu = first(source, clock, 2)
    assert gpu.mig is not None
    assert (gpu.mig.mode, gpu.mig.pending_mode, gpu.mig.change_pending) == (True, True, False)
    one, two = gpu.mig.devices
    assert one.uuid == "MIG-5c1d2e3f-0000-4a1b-8c2d-000000000000"
    assert (one.index, one.profile, one.gpu_instance_id, one.compute_instance_id) == (0, "3g.40gb", 1, 0)
    assert (two.index, two.gpu_instance_id, two.label) == (1, 2, "3g.40gb (GI 2)")
    assert (one.sm_count, one.slice_count) == (60, 3)
    assert one.memory_total_bytes == 40_192 * MIB
    assert one.memory_used_bytes == 20_500 * MIB
    # GPM per GPU instance from the second tick on, without NVLink (the whole GPU's)
    assert (one.sm_active_pct, one.tensor_active_pct, one.dram_bw_pct) == (86.0, 48.0, 55.0)
    assert (one.gr_engine_active_pct, one.sm_occupancy_pct, one.fp32_active_pct) == (97.0, 41.0, 12.0)
    assert gpu.nvlink_rx_bytes_s is not None  # from field values: MIG does not hide NVLink
    # the whole GPU: no utilization in MIG mode, the parent-only readings as before
    assert gpu.utilization_gpu_pct is None and gpu.sm_active_pct is None
    assert (gpu.temperature_c, gpu.power_w, gpu.sm_clock_mhz) == (63.0, 612.0, 1980)
    assert gpu.memory_used_bytes == 41_000 * MIB  # the driver's aggregate, given to root
    assert [(p.pid, p.gpu_instance_id, p.compute_instance_id) for p in gpu.processes] == [(101, 1, 0), (202, 2, 0)]
    assert [p.pid for p in one.processes] == [101] and [p.pid for p in two.processes] == [202]
    assert one.processes[0].used_memory_bytes == 20_000 * MIB
    assert nvml.count("nvmlDeviceGetUtilizationRates") == 1  # NotSupported once, never asked again
    assert nvml.count("nvmlGpmMigSampleGet") == 4  # each GPU instance, each tick


def test_the_first_tick_has_no_gpm_pair_yet(clock: Clock) -> None:
    gpu = first(opened(FakeNvml([mig_gpu()]), clock), clock)
    assert gpu.mig is not None and gpu.mig.devices
    assert all(device.sm_active_pct is None for device in gpu.mig.devices)  # n/a, not 0
    assert all(device.memory_used_bytes is not None for device in gpu.mig.devices)


def test_gpus_without_mig_or_with_it_off_have_none_and_cost_no_instance_calls(clock: Clock) -> None:
    nvml = FakeNvml([FakeGpu(), consumer_gpu()])
    source = opened(nvml, clock)
    for _ in range(3):
        snap = tick(source, clock)
    assert [gpu.mig for gpu in snap.gpus] == [None, None]
    assert snap.gpus[0].utilization_gpu_pct == 97.0
    assert nvml.count("nvmlDeviceGetMigMode", 1) == 1  # the GeForce's NotSupported at open: never asked again
    assert nvml.count("nvmlDeviceGetMigMode", 0) == 1 + 3  # the H100's at open, then every slow tick
    assert nvml.count("nvmlDeviceGetMaxMigDeviceCount") == 0
    assert nvml.count("nvmlDeviceGetMigDeviceHandleByIndex") == 0
    assert snap.system.mig_slice is None


@pytest.mark.parametrize(
    ("modes", "expected"),
    [
        pytest.param((DISABLE, ENABLE), (False, True, 0), id="MIG asked for, waits for a reset"),
        pytest.param((ENABLE, DISABLE), (True, False, 2), id="MIG off asked for, instances still there"),
    ],
)
def test_a_pending_mode_change_is_read(modes: tuple[int, int], expected: tuple[bool, bool, int], clock: Clock) -> None:
    gpu = first(opened(FakeNvml([mig_gpu(mig_mode=modes)]), clock), clock)
    assert gpu.mig is not None
    assert (gpu.mig.mode, gpu.mig.pending_mode, len(gpu.mig.devices)) == expected
    assert gpu.mig.change_pending


def test_mig_switched_on_while_watching_shows_on_the_next_slow_tick(clock: Clock) -> None:
    nvml = FakeNvml([FakeGpu()])
    source = opened(nvml, clock, slow_every=3)
    assert first(source, clock).mig is None
    nvml.gpus[0].mig_mode = (DISABLE, ENABLE)  # nvidia-smi -mig 1
    assert first(source, clock).mig is None  # a fast tick: the mode is read on slow ones
    pending = first(source, clock, 2)
    assert pending.mig is not None and (pending.mig.mode, pending.mig.pending_mode) == (False, True)
    nvml.gpus[0].mig_mode = (ENABLE, ENABLE)  # after the reset, with two instances made
    nvml.gpus[0].mig_devices = [FakeMig(gpu_instance_id=1, slot=0), FakeMig(gpu_instance_id=2, slot=1)]
    nvml.gpus[0].mig_devices[0].uuid = "MIG-00000000-1111-2222-3333-444444444444"
    nvml.gpus[0].mig_devices[1].uuid = "MIG-00000000-1111-2222-3333-555555555555"
    on = first(source, clock, 3)
    assert on.mig is not None and [d.gpu_instance_id for d in on.mig.devices] == [1, 2]


def test_sparse_indices_are_skipped_and_invalid_argument_ends_the_list(clock: Clock) -> None:
    gpu = mig_gpu(("1g.10gb", "1g.10gb"))
    gpu.mig_devices[1].slot = 4  # index 1 to 3 hold none: NotFound
    nvml = FakeNvml([gpu])
    nvml.nvmlDeviceGetMaxMigDeviceCount = lambda device: 9  # a driver counting past the last index it takes
    found = first(opened(nvml, clock), clock)
    assert found.mig is not None
    assert [(d.index, d.gpu_instance_id, d.sm_count, d.memory_total_bytes) for d in found.mig.devices] == [
        (0, 1, 16, 9_856 * MIB),
        (4, 2, 16, 9_856 * MIB),
    ]
    assert nvml.count("nvmlDeviceGetMigDeviceHandleByIndex") == 8  # 0..6, then 7: InvalidArgument, the end


def test_a_user_who_is_not_root_reads_every_instance_but_not_the_parents_memory(clock: Clock) -> None:
    nvml = FakeNvml([mig_gpu(processes=[[101], [202, 203]], root=False)])
    source = opened(nvml, clock)
    snap = tick(source, clock)
    gpu = tick(source, clock).gpus[0]
    assert snap.gpu_info[0].memory_total_bytes is None  # the parent's memory: NoPermission
    assert gpu.memory_used_bytes is None and gpu.memory_free_bytes is None
    assert gpu.mig is not None
    assert [d.memory_used_bytes for d in gpu.mig.devices] == [20_500 * MIB, 40_500 * MIB]
    assert [p.pid for p in gpu.processes] == [101, 202, 203]
    assert [[p.pid for p in d.processes] for d in gpu.mig.devices] == [[101], [202, 203]]
    assert nvml.count("nvmlDeviceGetComputeRunningProcesses_v3", 0) == 2 * 2  # each instance's, each slow tick
    assert not gpu.lost and gpu.temperature_c == 63.0


def test_instance_lists_unreadable_fall_back_to_the_parents_split_by_instance(clock: Clock) -> None:
    gpu = mig_gpu(processes=[[101], [202]])
    for device in gpu.mig_devices:
        device.errors = dict.fromkeys(OWN_LISTS, pynvml.NVML_ERROR_NOT_SUPPORTED)
    nvml = FakeNvml([gpu])
    sample = first(opened(nvml, clock), clock, 2)
    assert sample.mig is not None
    assert [(p.pid, p.gpu_instance_id) for p in sample.processes] == [(101, 1), (202, 2)]
    assert [[p.pid for p in d.processes] for d in sample.mig.devices] == [[101], [202]]
    assert nvml.count("nvmlDeviceGetComputeRunningProcesses_v3", 0) == 2 + 2  # the instances' once, the parent's


def test_neither_list_readable_leaves_no_processes_and_nothing_broken(clock: Clock) -> None:
    gpu = mig_gpu(processes=[[101], [202]], root=False)
    for device in gpu.mig_devices:
        device.errors = dict.fromkeys(OWN_LISTS, pynvml.NVML_ERROR_NO_PERMISSION)
    sample = first(opened(FakeNvml([gpu]), clock), clock, 2)
    assert sample.processes == ()
    assert sample.mig is not None and [d.memory_used_bytes for d in sample.mig.devices] == [20_500 * MIB] * 2


@pytest.mark.parametrize("code", [pynvml.NVML_ERROR_INVALID_ARGUMENT, pynvml.NVML_ERROR_NOT_SUPPORTED])
def test_an_instance_refusing_a_reading_reads_na_alone(code: int, clock: Clock) -> None:
    gpu = mig_gpu()
    gpu.mig_devices[0].errors = {
        "nvmlDeviceGetMemoryInfo_v2": code,
        "nvmlDeviceGetMemoryInfo": code,
        "nvmlDeviceGetAttributes_v2": code,
    }
    nvml = FakeNvml([gpu])
    sample = first(opened(nvml, clock), clock, 3)
    assert sample.mig is not None
    refused, other = sample.mig.devices
    assert (refused.memory_used_bytes, refused.memory_total_bytes, refused.sm_count) == (None, None, None)
    assert (refused.profile, refused.gpu_instance_id) == ("3g.40gb", 1)
    assert refused.sm_active_pct == 86.0  # GPM comes through the parent
    assert (other.memory_used_bytes, other.sm_count) == (500 * MIB, 60)
    # the parent's at open and each tick, the refusal once, the other instance's each tick
    assert nvml.count("nvmlDeviceGetMemoryInfo_v2", 0) == (1 + 3) + 1 + 3
    assert nvml.count("nvmlDeviceGetMemoryInfo", 0) == 0  # a refusal is no missing function: v1 is not tried


def test_a_driver_without_gpm_per_instance_reads_na_and_is_asked_once(clock: Clock) -> None:
    nvml = FakeNvml([mig_gpu(errors={"nvmlGpmMigSampleGet": pynvml.NVML_ERROR_FUNCTION_NOT_FOUND})])
    source = opened(nvml, clock)
    sample = first(source, clock, 4)
    assert sample.mig is not None and len(sample.mig.devices) == 2
    assert all(d.sm_active_pct is None and d.tensor_active_pct is None for d in sample.mig.devices)
    assert all(d.memory_used_bytes is not None for d in sample.mig.devices)
    assert nvml.count("nvmlGpmMigSampleGet") == 1  # shared by the instances: found out once
    assert nvml.gpm_buffers == {}  # every instance's buffers freed when GPM turned out missing


def test_a_pynvml_without_gpm_per_instance_allocates_nothing(clock: Clock) -> None:
    nvml = FakeNvml([mig_gpu()], missing=["nvmlGpmMigSampleGet"])
    sample = first(opened(nvml, clock), clock, 2)
    assert sample.mig is not None and all(d.sm_active_pct is None for d in sample.mig.devices)
    assert nvml.count("nvmlGpmSampleAlloc") == 0


def test_an_instance_destroyed_between_ticks_reads_na_then_goes(clock: Clock) -> None:
    nvml = FakeNvml([mig_gpu(processes=[[101], [202]])])
    source = opened(nvml, clock, slow_every=3)
    before = first(source, clock, 2)
    assert before.mig is not None and len(before.mig.devices) == 2
    assert len(nvml.gpm_buffers) == 4
    nvml.gpus[0].mig_devices[1].destroyed = True  # nvidia-smi mig -dci / -dgi
    during = first(source, clock)  # a fast tick: its old handle answers InvalidArgument
    assert during.mig is not None
    assert [d.memory_used_bytes for d in during.mig.devices] == [20_500 * MIB, None]
    assert during.mig.devices[0].sm_active_pct == 86.0
    after = first(source, clock)  # the slow tick enumerates again
    assert after.mig is not None and [d.gpu_instance_id for d in after.mig.devices] == [1]
    assert [p.pid for p in after.processes] == [101]
    assert len(nvml.gpm_buffers) == 2  # the gone instance's GPM buffers freed
    assert not after.lost


def test_an_instance_found_at_another_index_is_shown_there_with_its_facts(clock: Clock) -> None:
    nvml = FakeNvml([mig_gpu(("3g.40gb",))])
    source = opened(nvml, clock)
    before = first(source, clock, 2)
    assert before.mig is not None and [(d.index, d.profile) for d in before.mig.devices] == [(0, "3g.40gb")]
    nvml.gpus[0].mig_devices[0].slot = 4  # the same instance (same UUID) enumerated at another index
    after = first(source, clock, 3)  # past the slow tick that enumerates again
    assert after.mig is not None
    assert [(d.index, d.uuid, d.profile, d.sm_count) for d in after.mig.devices] == [
        (4, before.mig.devices[0].uuid, "3g.40gb", 60)
    ]


def test_an_instance_created_while_watching_is_read_once(clock: Clock) -> None:
    nvml = FakeNvml([mig_gpu(("3g.40gb",))])
    source = opened(nvml, clock)
    first(source, clock, 2)
    nvml.gpus[0].mig_devices.append(FakeMig("2g.20gb", gpu_instance_id=5, slot=3))
    nvml.gpus[0].mig_devices[1].uuid = "MIG-00000000-1111-2222-3333-666666666666"
    sample = first(source, clock, 3)
    assert sample.mig is not None
    assert [(d.profile, d.gpu_instance_id, d.sm_count) for d in sample.mig.devices] == [
        ("3g.40gb", 1, 60),
        ("2g.20gb", 5, 32),
    ]
    assert sample.mig.devices[1].sm_active_pct == 86.0  # its own GPM pair from its second tick
    assert nvml.count("nvmlDeviceGetAttributes_v2") == 2  # each instance's facts once, over five slow ticks
    assert nvml.count("nvmlDeviceGetUUID", 0) == 1 + 2 + 3 * 2  # the GPU's at open, then each enumeration's


def test_compute_instances_sharing_a_gpu_instance_share_its_gpm(clock: Clock) -> None:
    gpu = mig_gpu(("3g.40gb",))
    gpu.mig_devices = [
        FakeMig("1c.3g.40gb", gpu_instance_id=1, compute_instance_id=0, slot=0, compute_processes=[(101, 1)]),
        FakeMig("2c.3g.40gb", gpu_instance_id=1, compute_instance_id=1, slot=1, compute_processes=[(102, 1)]),
    ]
    nvml = FakeNvml([gpu])
    sample = first(opened(nvml, clock), clock, 2)
    assert sample.mig is not None
    assert [(d.profile, d.compute_instance_id) for d in sample.mig.devices] == [("1c.3g.40gb", 0), ("2c.3g.40gb", 1)]
    assert [[p.pid for p in d.processes] for d in sample.mig.devices] == [[101], [102]]
    assert [d.sm_active_pct for d in sample.mig.devices] == [86.0, 86.0]
    assert nvml.count("nvmlGpmMigSampleGet") == 2  # one GPU instance: sampled once a tick


def test_a_lost_parent_marks_the_gpu_lost_and_the_others_go_on(clock: Clock) -> None:
    nvml = FakeNvml([mig_gpu(), FakeGpu()])
    source = opened(nvml, clock)
    tick(source, clock)
    nvml.gpus[0].lost = True
    snap = tick(source, clock)
    assert snap.gpus[0].lost and snap.gpus[0].mig is None
    assert not snap.gpus[1].lost


def test_close_frees_every_instances_gpm_buffers(clock: Clock) -> None:
    nvml = FakeNvml([mig_gpu(("1g.10gb",) * 7)])
    source = opened(nvml, clock)
    first(source, clock, 2)
    assert len(nvml.gpm_buffers) == 14
    source.close()
    assert nvml.gpm_buffers == {}


def test_a_fast_tick_asks_only_memory_and_gpm_of_each_instance(clock: Clock) -> None:
    nvml = FakeNvml([mig_gpu(("1g.10gb",) * 7)])
    source = opened(nvml, clock, slow_every=5)
    first(source, clock, 2)
    nvml.calls.clear()
    first(source, clock)
    mig_calls = {name: n for (name, _), n in nvml.calls.items() if "Mig" in name or "Memory" in name}
    assert mig_calls == {"nvmlDeviceGetMemoryInfo_v2": 7 + 1, "nvmlGpmMigSampleGet": 7}


# --- the one slice a process was given ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("environ", "expected"),
    [
        (
            {"CUDA_VISIBLE_DEVICES": "MIG-5c1d2e3f-0000-4a1b-8c2d-000000000001"},
            "MIG-5c1d2e3f-0000-4a1b-8c2d-000000000001",
        ),
        (
            {"NVIDIA_VISIBLE_DEVICES": " MIG-5c1d2e3f-0000-4a1b-8c2d-000000000001 "},
            "MIG-5c1d2e3f-0000-4a1b-8c2d-000000000001",
        ),
        (
            {"CUDA_VISIBLE_DEVICES": "MIG-GPU-6f2a1c3e-0000-4b1e-9a57-000000000000/2/0"},
            "MIG-GPU-6f2a1c3e-0000-4b1e-9a57-000000000000/2/0",
        ),
        (
            {"CUDA_VISIBLE_DEVICES": f"{SLICE},{SLICE[:-1]}2"},
            None,
        ),
        ({"CUDA_VISIBLE_DEVICES": "0"}, None),
        ({"NVIDIA_VISIBLE_DEVICES": "all"}, None),
        ({"CUDA_VISIBLE_DEVICES": "MIG-not-a-uuid"}, None),
        (
            {"CUDA_VISIBLE_DEVICES": "0", "NVIDIA_VISIBLE_DEVICES": "MIG-5c1d2e3f-0000-4a1b-8c2d-000000000003"},
            "MIG-5c1d2e3f-0000-4a1b-8c2d-000000000003",
        ),
        ({}, None),
    ],
)
def test_the_slice_named_alone_in_the_environment(environ: dict[str, str], expected: str | None) -> None:
    assert mig_slice(environ) == expected


def test_an_old_mig_name_says_its_gpu_and_instance() -> None:
    assert old_mig_name("MIG-GPU-6f2a1c3e-0000-4b1e-9a57-000000000000/2/0") == (
        "GPU-6f2a1c3e-0000-4b1e-9a57-000000000000",
        2,
        0,
    )
    assert old_mig_name("MIG-5c1d2e3f-0000-4a1b-8c2d-000000000001") is None


@pytest.mark.parametrize(
    ("name", "profile"),
    [
        ("NVIDIA H100 80GB HBM3 MIG 3g.40gb", "3g.40gb"),
        ("NVIDIA A100-SXM4-40GB MIG 1c.3g.20gb", "1c.3g.20gb"),
        ("NVIDIA H100 80GB HBM3", None),
        (None, None),
    ],
)
def test_the_profile_is_the_name_after_mig(name: str | None, profile: str | None) -> None:
    assert profile_of(name) == profile


def test_a_container_given_one_slice_keeps_only_its_gpu(monkeypatch: pytest.MonkeyPatch, clock: Clock) -> None:
    nvml = FakeNvml([mig_gpu(processes=[[101], [202]]), mig_gpu(processes=[[303], [404]]), FakeGpu()])
    monkeypatch.setenv("NVIDIA_VISIBLE_DEVICES", "MIG-5c1d2e3f-0000-4a1b-8c2d-000001000001")
    source = opened(nvml, clock)
    snap = tick(source, clock)
    assert snap.system.mig_slice == "MIG-5c1d2e3f-0000-4a1b-8c2d-000001000001"
    assert snap.system.gpu_count == 3  # what the driver has; the view keeps the one holding the slice
    assert [gpu.index for gpu in snap.gpus] == [1]
    assert [info.index for info in snap.gpu_info] == [1]
    mig = snap.gpus[0].mig
    assert mig is not None and [d.uuid for d in mig.devices if d.uuid == snap.system.mig_slice]
    assert nvml.count("nvmlDeviceGetUtilizationRates", 2) == 0  # the GPUs let go are not read
    assert len(nvml.gpm_buffers) == 4  # the other H100's instance buffers freed at once


def test_an_old_style_slice_name_is_resolved_to_its_mig_uuid(monkeypatch: pytest.MonkeyPatch, clock: Clock) -> None:
    nvml = FakeNvml([FakeGpu(), mig_gpu()])
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "MIG-GPU-6f2a1c3e-0000-4b1e-9a57-000000000001/2/0")
    snap = tick(opened(nvml, clock), clock)
    assert snap.system.mig_slice == "MIG-5c1d2e3f-0000-4a1b-8c2d-000001000001"
    assert [gpu.index for gpu in snap.gpus] == [1]


def test_a_slice_no_gpu_shows_keeps_every_gpu(monkeypatch: pytest.MonkeyPatch, clock: Clock) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "MIG-5c1d2e3f-0000-4a1b-8c2d-0000000000ff")
    snap = tick(opened(FakeNvml([mig_gpu(), FakeGpu()]), clock), clock)
    assert snap.system.mig_slice == "MIG-5c1d2e3f-0000-4a1b-8c2d-0000000000ff"
    assert [gpu.index for gpu in snap.gpus] == [0, 1]


def test_gpus_chosen_by_hand_are_all_kept_with_a_slice(monkeypatch: pytest.MonkeyPatch, clock: Clock) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "MIG-5c1d2e3f-0000-4a1b-8c2d-000000000001")
    snap = tick(opened(FakeNvml([mig_gpu(), FakeGpu()]), clock, gpu_indices=[0, 1]), clock)
    assert snap.system.mig_slice == "MIG-5c1d2e3f-0000-4a1b-8c2d-000000000001"
    assert [gpu.index for gpu in snap.gpus] == [0, 1]
