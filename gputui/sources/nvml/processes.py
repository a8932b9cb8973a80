"""The processes NVML lists on a GPU or on a MIG instance, one entry per pid.

NVML lists compute and graphics contexts apart; a process with both is one process. Each entry carries the MIG
instance it runs in (nvmlProcessInfo_t's gpuInstanceId and computeInstanceId, 0xFFFFFFFF off MIG per nvml.h).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal

from gputui.model import GpuProcess

# The running-process lists, newest struct first (v3 and v2 carry the MIG instance ids), of a GPU or a MIG instance.
COMPUTE_PROCESSES = ("nvmlDeviceGetComputeRunningProcesses_v3", "nvmlDeviceGetComputeRunningProcesses_v2")
GRAPHICS_PROCESSES = ("nvmlDeviceGetGraphicsRunningProcesses_v3", "nvmlDeviceGetGraphicsRunningProcesses_v2")
NO_INSTANCE = 0xFFFFFFFF  # nvml.h: gpuInstanceId and computeInstanceId "set to 0xFFFFFFFF otherwise" (off MIG)


def instance_id(value: Any) -> int | None:
    """A GPU or compute instance id as NVML gives it; None for NO_INSTANCE or none given (v1 structs lack it)."""
    return None if value is None or value == NO_INSTANCE else int(value)


def merge_processes(
    compute: Iterable[Any] | None, graphics: Iterable[Any] | None, shares: dict[int, tuple[float, float]]
) -> tuple[GpuProcess, ...]:
    """One entry per pid, with its SM and memory share where sampled; a process with both a compute and a
    graphics context is counted once."""
    merged: dict[int, GpuProcess] = {}
    lists: tuple[tuple[Literal["compute", "graphics"], Iterable[Any] | None], ...] = (
        ("compute", compute),
        ("graphics", graphics),
    )
    for kind, procs in lists:
        for proc in procs or ():
            pid = int(proc.pid)
            used = proc.usedGpuMemory
            known = merged.get(pid)
            if known is not None and (known.used_memory_bytes is not None or used is None):
                continue
            sm, mem = shares.get(pid, (None, None))
            merged[pid] = GpuProcess(
                pid=pid,
                used_memory_bytes=used,
                kind=known.kind if known is not None else kind,
                sm_pct=sm,
                mem_pct=mem,
                gpu_instance_id=instance_id(getattr(proc, "gpuInstanceId", None)),
                compute_instance_id=instance_id(getattr(proc, "computeInstanceId", None)),
            )
    return tuple(merged[pid] for pid in sorted(merged))
