"""Recordings' machine: the shared builder (tests.snapshots) with every field filled, as a busy 8-GPU training box
reports them, so that every field goes through the formats and the reports."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from gputui.diagnostics.engine import DiagnosticsEngine
from gputui.diagnostics.verdict import Verdict, verdict_to_dict
from gputui.model import GpuInfo, GpuProcess, GpuSample, HostSample, Snapshot, SystemInfo
from gputui.record.format import RecordedEvent, event_to_dict, header_to_dict, tick_to_dict
from gputui.record.writer import RecordingFile, RecordingWriter
from gputui.sources.sim.source import SimulatedSource
from tests import snapshots
from tests.snapshots import gpu, host, proc, system_info

T0 = 1_780_000_000.0

# GPM of an H100 in a busy bf16 training step; pre-Hopper boards, MIG and old drivers leave all of it None.
H100_GPM: dict[str, float] = {
    "gr_engine_active_pct": 97.0,
    "sm_active_pct": 86.0,
    "sm_occupancy_pct": 41.5,
    "tensor_active_pct": 48.0,
    "dram_bw_pct": 55.0,
    "fp32_active_pct": 12.25,
    "fp16_active_pct": 3.5,
    "fp64_active_pct": 0.0,
    "nvlink_rx_bytes_s": 118_000_000_000.0,
    "nvlink_tx_bytes_s": 117_500_000_000.0,
}


def system(gpu_count: int = 2, source: str = "nvml", hostname: str = "train-07") -> SystemInfo:
    return system_info(
        hostname=hostname,
        source=source,
        driver_version="550.54.15",
        nvml_version="12.550.54.15",
        cuda_driver_version="12.4",
        gpu_count=gpu_count,
        cpu_count=64,
        kernel="5.15.0-105-generic",
        scenario="healthy" if source == "simulated" else None,
    )


def gpu_info(index: int) -> GpuInfo:
    """Every static fact NVML gives of an H100 SXM, its identity included."""
    return snapshots.gpu_info(
        index,
        uuid=f"GPU-6f1c2a7e-0000-4a6b-9c1d-00000000000{index}",
        serial=f"165322002330{index}",
        pci_bus_id=f"00000000:{0x18 + index:02X}:00.0",
        memory_total_bytes=85_520_809_984,
        max_graphics_clock_mhz=1980,
        power_min_limit_w=200.0,
        power_max_limit_w=700.0,
        temperature_slowdown_c=87,
        temperature_shutdown_c=92,
        persistence_mode=True,
        compute_mode="Default",
        mig_mode=False,
        ecc_mode=True,
    )


def gpu_sample(
    index: int, t: float, *, util: float = 97.3, mask: int = 0x4, temp: float = 71.0, power: float = 612.7
) -> GpuSample:
    """Every reading but GPM (`with_gpm` adds it), with figures that need their three decimals to survive."""
    return gpu(
        index,
        gpm=None,
        timestamp=t,
        utilization_gpu_pct=util,
        utilization_memory_pct=41.0,
        sm_clock_mhz=1755,
        graphics_clock_mhz=1755,
        temperature_c=temp,
        memory_temperature_c=temp + 9.0,
        power_w=power,
        memory_used_bytes=71_303_168_000 + index,
        memory_reserved_bytes=553_648_128,
        memory_free_bytes=13_663_993_856,
        pcie_tx_bytes_s=1_234_567_890.123,
        pcie_rx_bytes_s=987_654_321.987,
        clock_event_reasons_mask=mask,
        power_violation_ns=123_456_789_012,
        energy_mj=98_765_432_109,
        encoder_pct=0.0,
        decoder_pct=0.0,
        processes=(GpuProcess(pid=4242 + index, used_memory_bytes=70_866_960_384),),
    )


def host_sample(t: float, n_gpus: int, cores: int = 64) -> HostSample:
    """Every host reading, a rank per GPU."""
    ranks = [
        proc(
            4242 + i,
            name="python",
            cmdline="python train.py --config configs/llama-7b.yaml --nproc 8",
            cpu_pct=101.3,
            threads=37,
            read_bytes_s=6_553_600.0,
            rss_bytes=32_212_254_720,
            state="running",
        )
        for i in range(n_gpus)
    ]
    return host(
        ranks,
        timestamp=t,
        cpu_pct_per_core=tuple(float((i * 7) % 100) + 0.5 for i in range(cores)),
        iowait_pct=0.7,
        steal_pct=0.0,
        load_avg=(12.5, 11.9, 10.2),
        memory_used_bytes=412_316_860_416,
        memory_total_bytes=2_164_035_657_728,
        swap_used_bytes=0,
        swap_total_bytes=0,
        disk_read_bytes_s=52_428_800.0,
        disk_write_bytes_s=1_048_576.0,
        disk_busy_pct=12.5,
        net_rx_bytes_s=125_000_000.0,
        net_tx_bytes_s=1_000_000.0,
        net_link_bytes_s=12_500_000_000.0,
    )


def snapshot(t: float, n_gpus: int = 2, sys_info: SystemInfo | None = None, **gpu_kwargs: object) -> Snapshot:
    gpus = [gpu_sample(i, t, **gpu_kwargs) for i in range(n_gpus)]  # type: ignore[arg-type]
    infos = [gpu_info(i) for i in range(n_gpus)]
    return snapshots.snapshot(t, gpus, infos, host_sample(t, n_gpus), sys_info or system(n_gpus))


def with_gpm(snap: Snapshot, **overrides: float | None) -> Snapshot:
    """The snapshot with every GPU reporting H100_GPM, as a Hopper board does; `overrides` change some fields."""
    values = {**H100_GPM, **overrides}
    return dataclasses.replace(snap, gpus=tuple(dataclasses.replace(g, **values) for g in snap.gpus))  # type: ignore[arg-type]


def verdict_event(cls: str, t: float) -> RecordedEvent:
    """The verdict `cls` on GPUs 0 and 1 shown `t` seconds after T0, as a recording holds it."""
    verdict = Verdict(cls=cls, label=cls, gpus=(0, 1), summary="", line="", since=T0 + t)
    return RecordedEvent(kind="verdict", t=T0 + t, data={"verdict": verdict_to_dict(verdict)})


def write_recording(path: Path, snapshots: list[Snapshot], events: tuple[RecordedEvent, ...] = ()) -> Path:
    """A recording written synchronously, events placed by time between the ticks."""
    out = RecordingFile(path)
    first = snapshots[0]
    out.write(header_to_dict(first.system, first.gpu_info, interval_s=1.0, started_at=first.timestamp, utc_offset_s=0))
    pending = sorted(events, key=lambda e: e.t)
    for snap in snapshots:
        while pending and pending[0].t <= snap.timestamp:
            out.write(event_to_dict(pending.pop(0)))
        out.write(tick_to_dict(snap))
    for event in pending:
        out.write(event_to_dict(event))
    out.close()
    return path


def record_simulated(path: Path, scenario: str, *, gpus: int, seconds: int) -> Path:
    """`seconds` of the simulated machine on an injected clock, recorded with the engine's findings and verdicts
    as `gputui diagnose --demo --record` does, but on any number of GPUs."""
    now = [0.0]
    source = SimulatedSource(scenario, gpu_count=gpus, clock=lambda: now[0])
    source.open()
    engine = DiagnosticsEngine()
    writer = RecordingWriter(path, interval_s=1.0)
    for i in range(seconds + 1):
        now[0] = float(i)
        snap = source.sample()
        state = engine.update(snap)
        writer.record(snap, state.active, state.verdict)
    writer.close()
    return path
