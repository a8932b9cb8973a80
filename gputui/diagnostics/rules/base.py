"""What a rule is: a pure function from a window of snapshots and the thresholds to the conditions that hold now.

A rule says only "this holds now, with this evidence"; the engine decides when a finding opens and closes
(hysteresis), tracks the worst value, and turns titles and evidence into words through the catalog.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from gputui.diagnostics.config import Thresholds
from gputui.diagnostics.findings import Evidence, Severity
from gputui.model import GpuInfo, GpuSample, HostSample, Snapshot

# PCIe bandwidth per lane and direction in bytes/s (FACTS.md; Gen6 is the usable FLIT rate).
PCIE_LANE_BYTES_S: Mapping[int, float] = {1: 0.25e9, 2: 0.5e9, 3: 0.985e9, 4: 1.969e9, 5: 3.938e9, 6: 7.4e9}

CLOCK_THERMAL = 0x20 | 0x40
CLOCK_SW_POWER_CAP = 0x4
CLOCK_HW_SLOWDOWN = 0x8
CLOCK_HW_POWER_BRAKE = 0x80
# Reasons that explain low clocks by power, heat or hardware: clocks_low looks for their absence.
CLOCK_LIMITING = CLOCK_SW_POWER_CAP | CLOCK_HW_SLOWDOWN | CLOCK_THERMAL | CLOCK_HW_POWER_BRAKE


def link_bytes_s(gen: int | None, width: int | None) -> float | None:
    """Theoretical bandwidth per direction of a PCIe link, or None when either part is unknown."""
    if gen is None or width is None or gen not in PCIE_LANE_BYTES_S:
        return None
    return PCIE_LANE_BYTES_S[gen] * width


def ev(key: str, value: float | str | None, unit: str = "", window: str = "now") -> Evidence:
    """Evidence as a rule states it: `key` and `window` are catalog names, put into words by the engine."""
    return Evidence(label=key, value=value, unit=unit, window=window, key=key)


def fmt(value: float | None, digits: int = 0) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


@dataclass(frozen=True, slots=True)
class Hit:
    """A rule's condition holds now for these GPUs (and processes); `value` is its key metric."""

    gpus: tuple[int, ...]
    evidence: tuple[Evidence, ...]
    value: float | None = None
    pids: tuple[int, ...] = ()
    severity: Severity | None = None  # None: the rule's own severity
    variant: str = ""  # picks `<rule>.title.<variant>` in the catalog
    params: Mapping[str, object] = field(default_factory=dict)  # placeholders of the title and advice


class Window:
    """The snapshots a rule looks at, oldest first, with per-GPU series computed once and shared by rules."""

    __slots__ = ("_info", "_series", "latest", "seconds", "snapshots")

    def __init__(self, snapshots: Sequence[Snapshot], seconds: float) -> None:
        if not snapshots:
            raise ValueError("a window needs at least one snapshot")
        self.snapshots = snapshots
        self.latest = snapshots[-1]
        self.seconds = seconds
        self._series: dict[int, list[GpuSample]] = {}
        self._info = {info.index: info for info in self.latest.gpu_info}

    @property
    def host(self) -> HostSample:
        return self.latest.host

    @property
    def span_s(self) -> int:
        """The seconds the window really covers (less than asked for at the start), as the evidence states it."""
        return max(1, round(self.latest.timestamp - self.snapshots[0].timestamp))

    def gpus(self) -> Iterable[GpuSample]:
        """The latest sample of each GPU that is readable now."""
        return (sample for sample in self.latest.gpus if not sample.lost and sample.error is None)

    def info(self, index: int) -> GpuInfo | None:
        return self._info.get(index)

    def series(self, index: int) -> list[GpuSample]:
        """Readable samples of one GPU within the window, oldest first."""
        cached = self._series.get(index)
        if cached is None:
            cached = [g for snap in self.snapshots for g in snap.gpus if g.index == index and not g.lost]
            self._series[index] = cached
        return cached

    def mean(self, index: int, value: Callable[[GpuSample], float | None]) -> float | None:
        readings = [v for v in map(value, self.series(index)) if v is not None]
        return sum(readings) / len(readings) if readings else None

    def host_mean(self, value: Callable[[HostSample], float | None]) -> float | None:
        readings = [v for v in (value(snap.host) for snap in self.snapshots) if v is not None]
        return sum(readings) / len(readings) if readings else None

    def host_share(self, condition: Callable[[HostSample], bool]) -> float:
        return sum(1 for snap in self.snapshots if condition(snap.host)) / len(self.snapshots)


Check = Callable[[Window, Thresholds], Iterable[Hit]]


def _default_hold(_: Thresholds) -> float | None:
    return None


@dataclass(frozen=True, slots=True)
class Rule:
    """A rule and how the engine treats it. `open_after` / `close_after` override the config's hysteresis."""

    id: str
    severity: Severity
    check: Check
    metric: str | None = None  # the GpuSample field a view highlights
    higher_is_worse: bool = True
    open_after: Callable[[Thresholds], float | None] = _default_hold
    close_after: Callable[[Thresholds], float | None] = _default_hold


def at_once(_: Thresholds) -> float:
    """For facts that need no confirming: an XID, an ECC error, a version mismatch."""
    return 0.0


def is_busy(sample: GpuSample, th: Thresholds) -> bool:
    return sample.utilization_gpu_pct is not None and sample.utilization_gpu_pct >= th.busy_util_pct


def has_bits(sample: GpuSample, bits: int) -> bool:
    return sample.clock_event_reasons_mask is not None and bool(sample.clock_event_reasons_mask & bits)


def compute_pids(sample: GpuSample) -> tuple[int, ...]:
    """PIDs of the compute processes on a GPU (a desktop's graphics context does not compete for it)."""
    return tuple(p.pid for p in sample.processes if p.kind == "compute")
