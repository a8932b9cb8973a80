"""The software stack against the driver: `cuda_mismatch` (torch built for a newer CUDA than the driver)."""

from __future__ import annotations

from collections.abc import Iterator

from gputui.diagnostics.findings import Severity
from gputui.diagnostics.rules.base import Hit, Rule, Window, at_once, ev
from gputui.diagnostics.thresholds import Thresholds


def parse_cuda(version: str | None) -> tuple[int, int] | None:
    """'12.4' -> (12, 4); None for a CPU-only torch or anything unreadable."""
    if not version:
        return None
    parts = version.strip().split(".")
    try:
        return int(parts[0]), int(parts[1]) if len(parts) > 1 else 0
    except ValueError:
        return None


def cuda_mismatch(w: Window, th: Thresholds) -> Iterator[Hit]:
    """FACTS: a newer major fails outright; the same major with a newer minor runs with a limited feature set."""
    system = w.latest.system
    torch, driver = parse_cuda(system.torch_cuda_version), parse_cuda(system.cuda_driver_version)
    if torch is None or driver is None or torch <= driver:
        return
    major = torch[0] > driver[0]
    yield Hit(
        gpus=(),
        severity=Severity.CRITICAL if major else Severity.WARNING,
        variant="major" if major else "minor",
        params={"torch": system.torch_cuda_version, "driver": system.cuda_driver_version},
        evidence=(
            ev("torch_cuda", system.torch_cuda_version, "", "static"),
            ev("driver_cuda", system.cuda_driver_version, "", "static"),
        ),
    )


RULES = (Rule("cuda_mismatch", Severity.CRITICAL, cuda_mismatch, open_after=at_once),)
