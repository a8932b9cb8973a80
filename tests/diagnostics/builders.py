"""The rule tests' time line: snapshots at T0 + t of the shared healthy machine (tests.snapshots), which each test
changes where it needs."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gputui.model import GpuInfo, GpuSample, HostSample, Snapshot, SystemInfo
from tests.snapshots import snapshot, system_info

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
