"""NvmlSource over a fake pynvml that raises the real pynvml's exceptions: gpustat-style driver scenarios."""

from __future__ import annotations

import inspect
import socket
from pathlib import Path

import pynvml
import pytest

from gputui.diagnostics.engine import DiagnosticsEngine
from gputui.sources.base import InvalidGpuSelection, Source, SourceUnavailable, machine_name
from gputui.sources.host.source import HostSource
from gputui.sources.nvml.source import NvmlSource, cuda_version
from tests.conftest import Clock
from tests.fake_psutil import NO_PROC, FakeProcess, FakePsutil
from tests.fake_pynvml import MIB, NEW_FUNCTIONS, FakeGpu, FakeNvml, consumer_gpu

WALL = 1_750_000_000.0


def make_source(nvml: FakeNvml, ps: FakePsutil | None = None, **kwargs: object) -> tuple[NvmlSource, FakePsutil]:
    ps = ps if ps is not None else FakePsutil()
    root = kwargs.pop("root", NO_PROC)
    host = HostSource(clock=lambda: 0.0, psutil_module=ps, root=root)  # type: ignore[arg-type]
    source = NvmlSource(pynvml=nvml, host=host, clock=lambda: WALL, root=root, **kwargs)  # type: ignore[arg-type]
    return source, ps


def opened(nvml: FakeNvml, **kwargs: object) -> NvmlSource:
    source, _ = make_source(nvml, **kwargs)
    source.open()
    return source


def test_the_fake_only_fakes_functions_that_real_pynvml_has() -> None:
    fake_functions = [name for name, _ in inspect.getmembers(FakeNvml, inspect.isfunction) if name.startswith("nvml")]
    assert fake_functions
    assert [name for name in fake_functions if not hasattr(pynvml, name)] == []
    assert FakeNvml([]).NVMLError_NotSupported is pynvml.NVMLError_NotSupported


def test_datacenter_h100_reports_every_field() -> None:
    nvml = FakeNvml([FakeGpu()])
    ps = FakePsutil()
    ps.processes[4242] = FakeProcess(4242)
    source, _ = make_source(nvml, ps)
    system = source.open()
    assert isinstance(source, Source)
    assert system.source == "nvml"
    assert system.driver_version == "550.54.15"
    assert system.nvml_version == "12.550.54.15"
    assert system.cuda_driver_version == "12.4"
    assert system.gpu_count == 1
    snap = source.sample()
    assert snap.timestamp == WALL
    assert snap.host.timestamp == WALL
    info = snap.gpu_info[0]
    assert info.name == "NVIDIA H100 80GB HBM3"
    assert info.uuid == "GPU-6f2a1c3e-0000-4b1e-9a57-000000000000"
    assert info.serial == "1654922001234"
    assert info.pci_bus_id == "00000000:18:00.0"
    assert info.minor_number == 0
    assert info.memory_total_bytes == 81559 * MIB
    assert (info.max_sm_clock_mhz, info.max_memory_clock_mhz, info.max_graphics_clock_mhz) == (1980, 2619, 1980)
    assert (info.default_app_sm_clock_mhz, info.default_app_memory_clock_mhz) == (1755, 2619)
    assert (info.pcie_max_gen, info.pcie_max_width, info.pcie_gpu_max_gen) == (5, 16, 5)
    assert (info.power_default_limit_w, info.power_min_limit_w, info.power_max_limit_w) == (700.0, 200.0, 700.0)
    assert (info.temperature_slowdown_c, info.temperature_shutdown_c) == (89, 92)
    assert (info.temperature_gpu_max_c, info.temperature_memory_max_c) == (87, 95)
    assert (info.persistence_mode, info.compute_mode, info.mig_mode, info.ecc_mode) == (True, "default", False, True)
    gpu = snap.gpus[0]
    assert gpu.timestamp == WALL
    assert not gpu.lost
    assert (gpu.utilization_gpu_pct, gpu.utilization_memory_pct) == (97.0, 61.0)
    assert (gpu.sm_clock_mhz, gpu.memory_clock_mhz, gpu.graphics_clock_mhz) == (1980, 2619, 1980)
    assert (gpu.temperature_c, gpu.memory_temperature_c) == (63.0, 71.0)
    assert (gpu.power_w, gpu.power_limit_w) == (612.0, 700.0)
    assert gpu.memory_used_bytes == 61_000 * MIB
    assert gpu.memory_reserved_bytes == 519 * MIB
    assert gpu.memory_free_bytes == (81559 - 61_000 - 519) * MIB
    assert (gpu.pcie_gen, gpu.pcie_width) == (5, 16)
    assert gpu.pcie_tx_bytes_s == 1_200_000 * 1024
    assert gpu.pcie_rx_bytes_s == 9_800_000 * 1024
    assert gpu.pcie_replay_count == 0
    assert gpu.fan_pct is None  # passively cooled
    assert gpu.pstate == 0
    assert gpu.clock_event_reasons == ("sw_power_cap",)
    assert (gpu.power_violation_ns, gpu.thermal_violation_ns) == (4_000_000_000, 0)
    assert gpu.energy_mj == 9_876_543_210
    assert gpu.ecc_uncorrected == 0
    assert gpu.retired_pages_pending is False
    assert (gpu.encoder_pct, gpu.decoder_pct) == (0.0, 0.0)
    assert [(p.pid, p.used_memory_bytes, p.kind) for p in gpu.processes] == [(4242, 60_000 * MIB, "compute")]
    host_proc = snap.host.process(4242)
    assert host_proc is not None and host_proc.name == "python"
    assert snap.events == ()


def test_consumer_gpu_unsupported_fields_are_none_and_not_asked_again() -> None:
    nvml = FakeNvml([FakeGpu(), consumer_gpu()])
    source = opened(nvml, slow_every=1)
    for _ in range(3):
        snap = source.sample()
    info, gpu = snap.gpu_info[1], snap.gpus[1]
    assert info.serial is None
    assert (info.default_app_sm_clock_mhz, info.mig_mode, info.ecc_mode) == (None, None, None)
    assert gpu.memory_temperature_c is None
    assert gpu.power_violation_ns is None
    assert gpu.thermal_violation_ns is None
    assert gpu.ecc_uncorrected is None
    assert gpu.retired_pages_pending is None
    assert gpu.fan_pct == 64
    assert gpu.processes[0].used_memory_bytes is None  # not reported: stays None, never 0
    for name in ("nvmlDeviceGetTotalEccErrors", "nvmlDeviceGetRemappedRows", "nvmlDeviceGetNvLinkState"):
        assert nvml.count(name, 1) == 1, name
    assert nvml.count("nvmlDeviceGetFieldValues", 1) == 2  # memory temperature and NVLink link count, once each
    assert nvml.count("nvmlDeviceGetViolationStatus", 1) == 2  # power and thermal, once each
    assert nvml.count("nvmlDeviceGetFanSpeed", 0) == 1  # the H100's fan, asked once
    assert (
        nvml.count("nvmlDeviceGetFieldValues", 0) == 1 + 2 * 3
    )  # link count once; memory temperature and NVLink errors every (slow) tick
    assert snap.gpus[0].memory_temperature_c == 71.0


def test_a_gpu_lost_mid_run_is_marked_lost_and_the_others_go_on() -> None:
    nvml = FakeNvml([FakeGpu(), FakeGpu(), FakeGpu()])
    source = opened(nvml)
    assert not any(g.lost for g in source.sample().gpus)
    nvml.gpus[1].lost = True
    snap = source.sample()
    lost = snap.gpus[1]
    assert lost.lost
    assert lost.error is not None and "GPU is lost (fell off the bus)" in lost.error
    assert lost.utilization_gpu_pct is None and lost.processes == ()
    assert [g.utilization_gpu_pct for g in (snap.gpus[0], snap.gpus[2])] == [97.0, 97.0]
    assert len(snap.events) == 1 and "GPU 1" in snap.events[0]
    calls = nvml.count("nvmlDeviceGetUtilizationRates", 1)
    later = source.sample()
    assert later.gpus[1].lost and later.events == ()  # told once
    assert nvml.count("nvmlDeviceGetUtilizationRates", 1) == calls  # a lost GPU is not asked again
    assert later.gpus[2].power_w == 612.0


def test_a_gpu_lost_before_open_is_listed_as_lost() -> None:
    nvml = FakeNvml([FakeGpu(), FakeGpu(lost=True)])
    source = opened(nvml)
    snap = source.sample()
    assert [info.index for info in snap.gpu_info] == [0, 1]
    assert snap.gpus[1].lost
    assert snap.gpu_info[1].name == "unknown"
    assert not snap.gpus[0].lost


def test_a_gpu_the_driver_cannot_open_is_listed_with_the_reason() -> None:
    nvml = FakeNvml([FakeGpu(errors={"nvmlDeviceGetHandleByIndex": pynvml.NVML_ERROR_UNKNOWN}), FakeGpu()])
    snap = opened(nvml).sample()
    assert snap.gpus[0].lost and snap.gpus[0].error == "the driver could not open this GPU: Unknown Error"
    assert snap.gpus[1].power_w == 612.0


def test_old_driver_falls_back_to_the_deprecated_names() -> None:
    nvml = FakeNvml([FakeGpu(clock_event_reasons=0x20)], old_driver=True)
    source = opened(nvml, slow_every=1)
    for _ in range(3):
        gpu = source.sample().gpus[0]
    assert gpu.clock_event_reasons == ("sw_thermal_slowdown",)
    assert gpu.temperature_c == 63.0
    assert gpu.memory_used_bytes == (61_000 + 519) * MIB  # memory info v1: used includes reserved
    assert gpu.memory_reserved_bytes is None
    assert [p.pid for p in gpu.processes] == [4242]
    for name in NEW_FUNCTIONS:
        assert nvml.count(name) == 1, name  # tried once, then the old name only
    assert nvml.count("nvmlDeviceGetCurrentClocksThrottleReasons") == 3
    assert nvml.count("nvmlDeviceGetComputeRunningProcesses_v2") == 3


def test_pynvml_without_the_new_functions_uses_the_old_ones() -> None:
    nvml = FakeNvml([FakeGpu()], missing=["nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetTemperatureV"])
    gpu = opened(nvml).sample().gpus[0]
    assert gpu.clock_event_reasons == ("sw_power_cap",)
    assert gpu.temperature_c == 63.0
    assert nvml.count("nvmlDeviceGetCurrentClocksThrottleReasons") == 1
    assert nvml.count("nvmlDeviceGetTemperature") == 1


def test_compute_and_graphics_processes_are_merged_by_pid() -> None:
    gpu = FakeGpu(
        compute_processes=[(10, None), (11, 2048 * MIB)],
        graphics_processes=[(10, 512 * MIB), (12, None), (11, 2048 * MIB)],
    )
    procs = opened(FakeNvml([gpu])).sample().gpus[0].processes
    assert [(p.pid, p.used_memory_bytes, p.kind) for p in procs] == [
        (10, 512 * MIB, "compute"),
        (11, 2048 * MIB, "compute"),
        (12, None, "graphics"),
    ]


def test_a_process_that_vanished_before_psutil_read_it_is_left_out_of_the_host() -> None:
    nvml = FakeNvml([FakeGpu(compute_processes=[(4242, 10 * MIB), (999_999, 20 * MIB)])])
    ps = FakePsutil()
    ps.processes[4242] = FakeProcess(4242)
    source, _ = make_source(nvml, ps)
    source.open()
    snap = source.sample()
    assert [p.pid for p in snap.gpus[0].processes] == [4242, 999_999]  # as the driver listed them
    assert [p.pid for p in snap.host.processes] == [4242]


def test_slow_queries_run_every_slow_every_ticks_and_are_reused_between() -> None:
    nvml = FakeNvml([FakeGpu()])
    source = opened(nvml, slow_every=3)
    assert source.sample().gpus[0].pcie_rx_bytes_s == 9_800_000 * 1024
    nvml.gpus[0].pcie_rx_kbs = 100
    nvml.gpus[0].compute_processes = []
    between = source.sample().gpus[0]
    assert between.pcie_rx_bytes_s == 9_800_000 * 1024
    assert [p.pid for p in between.processes] == [4242]
    source.sample()
    fresh = source.sample().gpus[0]
    assert fresh.pcie_rx_bytes_s == 100 * 1024
    assert fresh.processes == ()
    assert nvml.count("nvmlDeviceGetComputeRunningProcesses_v3") == 2
    assert nvml.count("nvmlDeviceGetPcieThroughput") == 4  # TX and RX on ticks 0 and 3
    assert nvml.count("nvmlDeviceGetUtilizationRates") == 4


@pytest.mark.parametrize(
    ("code", "words"),
    [
        (pynvml.NVML_ERROR_LIBRARY_NOT_FOUND, "libnvidia-ml.so.1"),
        (pynvml.NVML_ERROR_DRIVER_NOT_LOADED, "kernel module is not loaded"),
        (pynvml.NVML_ERROR_LIB_RM_VERSION_MISMATCH, "reboot, or reload the module"),
        (pynvml.NVML_ERROR_NO_PERMISSION, "no permission"),
        (pynvml.NVML_ERROR_UNKNOWN, "could not be read: Unknown Error"),
    ],
)
def test_each_nvml_init_failure_says_what_to_do(code: int, words: str) -> None:
    source, _ = make_source(FakeNvml([FakeGpu()], init_error=code))
    with pytest.raises(SourceUnavailable, match=words):
        source.open()
    source.close()


def test_no_devices_is_reported_and_nvml_is_shut_down() -> None:
    nvml = FakeNvml([])
    source, _ = make_source(nvml)
    with pytest.raises(SourceUnavailable, match="reports no GPUs"):
        source.open()
    assert nvml.initialized == 0


def test_no_permission_to_a_gpu_handle_is_reported() -> None:
    nvml = FakeNvml([FakeGpu(errors={"nvmlDeviceGetHandleByIndex": pynvml.NVML_ERROR_NO_PERMISSION})])
    source, _ = make_source(nvml)
    with pytest.raises(SourceUnavailable, match="no permission"):
        source.open()
    assert nvml.initialized == 0


@pytest.mark.parametrize("index", [2, -1])
def test_a_gpu_index_that_does_not_exist_is_a_usage_error(index: int) -> None:
    nvml = FakeNvml([FakeGpu(), FakeGpu()])
    source, _ = make_source(nvml, gpu_indices=[0, index])
    with pytest.raises(InvalidGpuSelection, match=f"no GPU {index}: this machine has 2 GPU"):
        source.open()
    assert nvml.initialized == 0


@pytest.mark.parametrize("failing", ["topology", "host"])
def test_a_failure_after_init_shuts_nvml_down_before_it_is_raised(
    failing: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Reading the topology or opening the host source raises once NVML is up: open() leaves nothing behind."""
    from gputui.sources.nvml import source as nvml_source

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError(f"{failing} broke")

    nvml = FakeNvml([FakeGpu(), FakeGpu()])
    source, _ = make_source(nvml)
    if failing == "topology":
        monkeypatch.setattr(nvml_source, "read_topology", broken)
    else:
        monkeypatch.setattr(HostSource, "open", broken)
    with pytest.raises(RuntimeError, match=f"{failing} broke"):
        source.open()
    assert (nvml.count("nvmlInit"), nvml.shutdowns, nvml.initialized) == (1, 1, 0)
    with pytest.raises(RuntimeError, match="before open"):
        source.sample()


def test_only_the_selected_gpus_are_read() -> None:
    nvml = FakeNvml([FakeGpu(), FakeGpu(), FakeGpu()])
    snap = opened(nvml, gpu_indices=[2, 0, 2]).sample()
    assert [g.index for g in snap.gpus] == [2, 0]
    assert [(i.index, i.pci_bus_id) for i in snap.gpu_info] == [(2, "00000000:38:00.0"), (0, "00000000:18:00.0")]
    assert snap.system.gpu_count == 3
    assert nvml.count("nvmlDeviceGetUtilizationRates", 1) == 0


def test_close_shuts_nvml_down_once() -> None:
    nvml = FakeNvml([FakeGpu()])
    source = opened(nvml)
    source.close()
    source.close()
    assert nvml.shutdowns == 1
    with pytest.raises(RuntimeError, match="before open"):
        source.sample()


@pytest.mark.parametrize(("pstate", "expected"), [(0, 0), (8, 8), (pynvml.NVML_PSTATE_UNKNOWN, None)])
def test_pstate_unknown_is_none(pstate: int, expected: int | None) -> None:
    assert opened(FakeNvml([FakeGpu(pstate=pstate)])).sample().gpus[0].pstate == expected


@pytest.mark.parametrize(
    ("retired", "remapped", "expected"),
    [
        (1, None, True),  # Volta: a page waits for retirement
        (0, None, False),
        (None, (0, 0, 1, 0), True),  # Ampere+: a row remap is pending
        (None, (3, 0, 0, 1), True),  # Ampere+: a row remap failed
        (None, (3, 0, 0, 0), False),
    ],
)
def test_pending_page_retirement_or_row_remapping(
    retired: int | None, remapped: tuple[int, int, int, int] | None, expected: bool
) -> None:
    gpu = FakeGpu(retired_pages_pending=retired, remapped_rows=remapped)
    assert opened(FakeNvml([gpu])).sample().gpus[0].retired_pages_pending is expected


def test_cuda_driver_version_is_decoded() -> None:
    assert cuda_version(12040) == "12.4"
    assert cuda_version(11080) == "11.8"
    assert cuda_version(12020) == "12.2"
    assert cuda_version(None) is None


def test_slow_every_must_be_positive() -> None:
    with pytest.raises(ValueError, match="slow_every"):
        NvmlSource(slow_every=0)


def _fake_proc(root: Path, holders: dict[int, str]) -> Path:
    """A /proc with `pid -> device file it holds open` (the link target need not exist: readlink is enough)."""
    (root / "proc/self").mkdir(parents=True)
    for pid, device in holders.items():
        fd = root / f"proc/{pid}/fd"
        fd.mkdir(parents=True)
        (fd / "0").symlink_to("/dev/null")
        (fd / "7").symlink_to(device)
    return root


def test_in_a_container_nvmls_host_pid_is_replaced_by_the_process_holding_the_device(tmp_path: Path) -> None:
    """NVML says 81234 (a host PID, no process here); PID 41 holds /dev/nvidia0: the table shows 41 and the
    host side is read for 41, not for a stranger that might have PID 81234 here."""
    root = _fake_proc(tmp_path, {41: "/dev/nvidia0"})
    nvml = FakeNvml([FakeGpu(compute_processes=[(81234, 30_000 * MIB)])])
    ps = FakePsutil()
    ps.processes[41] = FakeProcess(41, cpu_percent_=99.0)
    source, _ = make_source(nvml, ps, root=root)
    source.open()
    source.sample()
    snap = source.sample()
    [proc] = snap.gpus[0].processes
    assert (proc.pid, proc.seen, proc.host_pid, proc.used_memory_bytes) == (41, "device", 81234, 30_000 * MIB)
    assert snap.host.process(41) is not None and snap.host.process(81234) is None


def test_a_gpu_process_outside_this_namespace_is_kept_as_hidden(tmp_path: Path) -> None:
    nvml = FakeNvml([FakeGpu(compute_processes=[(81234, 30_000 * MIB)])])
    source, ps = make_source(nvml, root=_fake_proc(tmp_path, {}))
    ps.processes[81234] = FakeProcess(81234)  # psutil must not even be asked: the PID is not this process
    source.open()
    [proc] = source.sample().gpus[0].processes
    assert (proc.pid, proc.seen) == (81234, "hidden")
    assert ps.processes[81234].calls["name"] == 0


def test_on_the_host_a_process_holding_its_device_keeps_nvmls_pid(tmp_path: Path) -> None:
    root = _fake_proc(tmp_path, {4242: "/dev/nvidia0"})
    source, ps = make_source(FakeNvml([FakeGpu()]), root=root)
    ps.processes[4242] = FakeProcess(4242)
    source.open()
    [proc] = source.sample().gpus[0].processes
    assert (proc.pid, proc.seen, proc.host_pid) == (4242, "pid", None)


def test_a_cpu_bound_job_in_a_pid_namespace_is_not_reported_healthy(tmp_path: Path) -> None:
    """The report that started the container work: a training process at 100% of one core, no data-loader
    workers, inside a PID namespace, its GPU at 20%. NVML names it by its host PID; it must still be found
    (through its open /dev/nvidia0), joined with its CPU, and diagnosed as starved by the CPU."""
    root = _fake_proc(tmp_path, {7: "/dev/nvidia0"})
    nvml = FakeNvml([FakeGpu(utilization_gpu=20, compute_processes=[(81234, 30_000 * MIB)])])
    ps = FakePsutil()
    ps.processes[7] = FakeProcess(7, cpu_percent_=100.0, children_=0)
    clock = Clock(now=WALL)
    host = HostSource(clock=clock, psutil_module=ps, root=root)
    source = NvmlSource(pynvml=nvml, host=host, clock=clock, root=root, slow_every=1)
    source.open()
    engine = DiagnosticsEngine()
    for _ in range(15):
        clock.advance(1.0)
        state = engine.update(source.sample())
    assert [(f.rule, f.variant, f.gpus) for f in state.active] == [("starvation_cpu", "main_process", (0,))]
    assert {e.key: e.value for e in state.active[0].evidence}["process"] == "python (7)"


def test_the_machine_is_named_after_the_kubernetes_node_when_node_name_is_set(monkeypatch: pytest.MonkeyPatch) -> None:
    """In a DaemonSet pod the host name is the pod's: NODE_NAME (from spec.nodeName) names the node instead."""
    monkeypatch.setenv("NODE_NAME", "gpu-node-17")
    assert opened(FakeNvml([FakeGpu()])).sample().system.hostname == "gpu-node-17"


def test_without_node_name_the_machine_keeps_its_host_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NODE_NAME", raising=False)
    assert opened(FakeNvml([FakeGpu()])).sample().system.hostname == socket.gethostname()
    assert machine_name({"NODE_NAME": "  "}) == socket.gethostname()  # blank (an unset fieldRef) is no name
