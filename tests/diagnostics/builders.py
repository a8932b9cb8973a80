"""Hand-built snapshots for the rule tests: a healthy busy H100 by default, each test changes what it needs."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from gputui.model import GpuInfo, GpuProcess, GpuSample, HostSample, ProcSample, Snapshot, SystemInfo

GIB = 1 << 30
T0 = 1_000_000.0

SYSTEM = SystemInfo(
    hostname="test",
    source="simulated",
    driver_version="570.133.20",
    nvml_version="12.570.133.20",
    cuda_driver_version="12.8",
    gpu_count=1,
    cpu_count=8,
    kernel="k",
    torch_cuda_version="12.4",
)


def info(index: int = 0, **changes: Any) -> GpuInfo:
    base = GpuInfo(
        index=index,
        name="H100",
        memory_total_bytes=80 * GIB,
        max_sm_clock_mhz=1980,
        pcie_max_gen=5,
        pcie_max_width=16,
        pcie_gpu_max_gen=5,
        power_default_limit_w=700.0,
        temperature_slowdown_c=89,
    )
    return replace(base, **changes)


def gpu(index: int = 0, pids: Sequence[int] = (100,), **changes: Any) -> GpuSample:
    """A busy, cool GPU at full clocks with one training process: nothing to report."""
    base = GpuSample(
        index=index,
        timestamp=0.0,
        utilization_gpu_pct=97.0,
        sm_clock_mhz=1980,
        temperature_c=60.0,
        power_w=560.0,
        power_limit_w=700.0,
        memory_used_bytes=60 * GIB,
        pcie_gen=5,
        pcie_width=16,
        pcie_rx_bytes_s=2e9,
        pcie_tx_bytes_s=0.5e9,
        pcie_replay_count=0,
        clock_event_reasons_mask=0,
        thermal_violation_ns=0,
        power_violation_ns=0,
        ecc_uncorrected=0,
        retired_pages_pending=False,
        sm_active_pct=86.0,  # GPM: a bf16 step that fills the GPU
        sm_occupancy_pct=41.0,
        tensor_active_pct=48.0,
        dram_bw_pct=55.0,
        fp32_active_pct=12.0,
        processes=tuple(GpuProcess(pid=pid, used_memory_bytes=30 * GIB) for pid in pids),
    )
    return replace(base, **changes)


def proc(pid: int = 100, **changes: Any) -> ProcSample:
    base = ProcSample(pid=pid, name="python3", user="alice", cmdline="python3 train.py", cpu_pct=70.0, children=8)
    return replace(base, **changes)


def host(procs: Sequence[ProcSample] = (), **changes: Any) -> HostSample:
    base = HostSample(
        timestamp=0.0,
        cpu_pct_per_core=(20.0,) * 8,
        iowait_pct=0.5,
        disk_busy_pct=5.0,
        disk_read_bytes_s=50e6,
        net_rx_bytes_s=1e6,
        net_link_bytes_s=3.125e9,
        swap_in_bytes_s=0.0,
        swap_out_bytes_s=0.0,
        processes=tuple(procs) if procs else (proc(),),
    )
    return replace(base, **changes)


def snap(
    t: float,
    gpus: Sequence[GpuSample] | None = None,
    infos: Sequence[GpuInfo] | None = None,
    host_sample: HostSample | None = None,
    system: SystemInfo = SYSTEM,
) -> Snapshot:
    """A snapshot at T0 + t; every part gets that timestamp."""
    samples = tuple(replace(g, timestamp=T0 + t) for g in (gpus if gpus is not None else (gpu(),)))
    return Snapshot(
        timestamp=T0 + t,
        system=system,
        gpu_info=tuple(infos) if infos is not None else tuple(info(g.index) for g in samples),
        gpus=samples,
        host=replace(host_sample if host_sample is not None else host(), timestamp=T0 + t),
    )


def series(count: int, make: Any, step: float = 1.0) -> list[Snapshot]:
    """`count` snapshots one `step` apart; `make(i)` returns the keyword arguments of `snap` for tick i."""
    return [snap(i * step, **make(i)) for i in range(count)]
