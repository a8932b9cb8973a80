"""The rule tests' time line: snapshots at T0 + t of the shared healthy machine (tests.snapshots), which each test
changes where it needs."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gputui.model import GpuInfo, GpuProcess, GpuSample, HostSample, MigDevice, MigState, Snapshot, SystemInfo
from tests.snapshots import GIB, gpu, snapshot, system_info

T0 = 1_000_000.0

# One GPU counted whatever the snapshot holds (no rule reads the count); a torch build for the CUDA check to read.
SYSTEM = system_info(torch_cuda_version="12.4")


def snap(
    t: float,
    gpus: Sequence[GpuSample] | None = None,
    infos: Sequence[GpuInfo] | None = None,
    host_sample: HostSample | None = None,
    system: SystemInfo = SYSTEM,
) -> Snapshot:
    """A snapshot at T0 + t; every part gets that timestamp."""
    return snapshot(T0 + t, gpus, infos, host_sample, system)


def series(count: int, make: Any, step: float = 1.0) -> list[Snapshot]:
    """`count` snapshots one `step` apart; `make(i)` returns the keyword arguments of `snap` for tick i."""
    return [snap(i * step, **make(i)) for i in range(count)]


def instance(
    gi: int,
    pids: Sequence[int] = (),
    *,
    active: float | None = 95.0,
    used_gib: float = 20.0,
    total_gib: float = 40.0,
    profile: str = "3g.40gb",
    gpm: bool = True,
) -> MigDevice:
    """A MIG instance (its compute instance 0) with `pids` on it, its graphics engine `active` % of the time
    (GPM, of a bf16 step when busy); `gpm=False`: a driver that gives no GPM on it (every activity None)."""
    procs = tuple(
        GpuProcess(pid=pid, used_memory_bytes=int(used_gib * GIB) // max(1, len(pids)), gpu_instance_id=gi)
        for pid in pids
    )
    busy = active is not None and active >= 50.0
    return MigDevice(
        index=gi,
        uuid=f"MIG-0000-{gi}",
        profile=profile,
        gpu_instance_id=gi,
        compute_instance_id=0,
        sm_count=60,
        slice_count=3,
        memory_used_bytes=int(used_gib * GIB),
        memory_total_bytes=int(total_gib * GIB),
        gr_engine_active_pct=active if gpm else None,
        sm_active_pct=(80.0 if busy else 15.0) if gpm else None,
        tensor_active_pct=(45.0 if busy else 5.0) if gpm else None,
        dram_bw_pct=(40.0 if busy else 5.0) if gpm else None,
        fp32_active_pct=(5.0 if busy else 1.0) if gpm else None,
        processes=procs,
    )


def mig_gpu(
    index: int = 0, *devices: MigDevice, mode: bool = True, pending: bool | None = None, **changes: Any
) -> GpuSample:
    """A GPU in MIG mode as NVML gives it: no whole-GPU utilization, GPM or memory (non-root), every instance's
    processes (each with its instance), its own readings (clocks, heat, power, PCIe) as a whole GPU's."""
    procs = tuple(p for d in devices for p in d.processes)
    mig = MigState(mode=mode, pending_mode=mode if pending is None else pending, devices=devices)
    return gpu(
        index,
        (),
        gpm=None,
        utilization_gpu_pct=None,
        memory_used_bytes=None,
        processes=procs,
        mig=mig,
        **changes,
    )
