"""The one builder of the model's parts for tests: a healthy, busy H100 training box unless a test says otherwise.

Every builder takes keyword overrides of the dataclass's own fields, so a test names only what it is about and the
rest stays a machine with nothing to report. A part left unread on purpose (a lost GPU, a bare sample) is built with
the model's own constructor: its fields default to None, "not reported".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from gputui.model import GpmValues, GpuInfo, GpuProcess, GpuSample, HostSample, ProcSample, Snapshot, SystemInfo

GIB = 1 << 30
MIB = 1 << 20

# GPM of an H100 in a bf16 step that fills it; `gpu(gpm=None)` is a board without GPM (pre-Hopper, MIG).
BF16_STEP_GPM: GpmValues = {
    "sm_active_pct": 86.0,
    "sm_occupancy_pct": 41.0,
    "tensor_active_pct": 48.0,
    "dram_bw_pct": 55.0,
    "fp32_active_pct": 12.0,
}


def system_info(**changes: Any) -> SystemInfo:
    """A machine read through the real driver; `snapshot` sets `gpu_count` to its GPUs unless given a system."""
    base = SystemInfo(
        hostname="box",
        source="nvml",
        driver_version="570.133.20",
        nvml_version="12.570.133.20",
        cuda_driver_version="12.8",
        gpu_count=1,
        cpu_count=8,
        kernel="6.8",
    )
    return replace(base, **changes)


def gpu_info(index: int = 0, **changes: Any) -> GpuInfo:
    """An H100 SXM in a Gen5 x16 slot at its default power limit."""
    base = GpuInfo(
        index=index,
        name="NVIDIA H100 80GB HBM3",
        memory_total_bytes=80 * GIB,
        max_sm_clock_mhz=1980,
        max_memory_clock_mhz=2619,
        pcie_max_gen=5,
        pcie_max_width=16,
        pcie_gpu_max_gen=5,
        power_default_limit_w=700.0,
        temperature_slowdown_c=89,
    )
    return replace(base, **changes)


def gpu(
    index: int = 0, pids: Sequence[int] = (100,), *, gpm: GpmValues | None = BF16_STEP_GPM, **changes: Any
) -> GpuSample:
    """A busy, cool GPU at full clocks, each of `pids` holding 30 GiB: nothing to report."""
    base = GpuSample(
        index=index,
        timestamp=0.0,
        utilization_gpu_pct=97.0,
        sm_clock_mhz=1980,
        memory_clock_mhz=2619,
        temperature_c=60.0,
        power_w=560.0,
        power_limit_w=700.0,
        memory_used_bytes=60 * GIB,
        pcie_gen=5,
        pcie_width=16,
        pcie_rx_bytes_s=2e9,
        pcie_tx_bytes_s=0.5e9,
        pcie_replay_count=0,
        pstate=0,
        clock_event_reasons_mask=0,
        thermal_violation_ns=0,
        power_violation_ns=0,
        ecc_uncorrected=0,
        retired_pages_pending=False,
        processes=tuple(GpuProcess(pid=pid, used_memory_bytes=30 * GIB) for pid in pids),
    )
    return replace(base, **{**(gpm or {}), **changes})


def proc(pid: int = 100, **changes: Any) -> ProcSample:
    """A training process at 70% of a core with eight data-loader workers."""
    base = ProcSample(pid=pid, name="python3", user="alice", cmdline="python3 train.py", cpu_pct=70.0, children=8)
    return replace(base, **changes)


def host(procs: Sequence[ProcSample] = (), **changes: Any) -> HostSample:
    """Eight cores at 20%, disk and network far from their limits; `procs` (else one `proc()`) run on it."""
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


def snapshot(
    t: float = 0.0,
    gpus: Sequence[GpuSample] | None = None,
    infos: Sequence[GpuInfo] | None = None,
    host_sample: HostSample | None = None,
    system: SystemInfo | None = None,
    **changes: Any,
) -> Snapshot:
    """A snapshot at `t`, every part stamped with it; by default one `gpu()`, an info per GPU and `host()`."""
    samples = tuple(replace(g, timestamp=t) for g in (gpus if gpus is not None else (gpu(),)))
    return Snapshot(
        timestamp=t,
        system=system if system is not None else system_info(gpu_count=len(samples)),
        gpu_info=tuple(infos) if infos is not None else tuple(gpu_info(g.index) for g in samples),
        gpus=samples,
        host=replace(host_sample if host_sample is not None else host(), timestamp=t),
        **changes,
    )
