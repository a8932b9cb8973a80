"""What a rule is: a pure function from a window of snapshots and the thresholds to the conditions that hold now.

A rule says only "this holds now, with this evidence"; the engine decides when a finding opens and closes
(hysteresis), tracks the worst value, and turns titles and evidence into words through the catalog.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol, TypeVar, cast

from gputui.diagnostics.findings import Evidence, Severity
from gputui.diagnostics.thresholds import Thresholds
from gputui.model import (
    GpuInfo,
    GpuSample,
    HostSample,
    ProcSample,
    Snapshot,
    decode_clock_event_reasons,
)

T = TypeVar("T")

# PCIe bandwidth per lane and direction in bytes/s: the PCI Express Base Specification's transfer rates after
# 8b/10b (Gen1-2) and 128b/130b (Gen3-5) encoding; Gen6 is the usable FLIT-mode rate (~118 GB/s on x16).
PCIE_LANE_BYTES_S: Mapping[int, float] = {1: 0.25e9, 2: 0.5e9, 3: 0.985e9, 4: 1.969e9, 5: 3.938e9, 6: 7.4e9}


def link_bytes_s(gen: int | None, width: int | None) -> float | None:
    """Theoretical bandwidth per direction of a PCIe link, or None when either part is unknown."""
    if gen is None or width is None or gen not in PCIE_LANE_BYTES_S:
        return None
    return PCIE_LANE_BYTES_S[gen] * width


def ev(key: str, value: float | str | None, unit: str = "", window: str = "now", **params: object) -> Evidence:
    """Evidence as a rule states it: `key` and `window` are catalog names, put into words by the engine; `params`
    fill the window's placeholders besides its seconds."""
    return Evidence(label=key, value=value, unit=unit, window=window, key=key, params=tuple(params.items()))


def rounded(value: float | None, scale: float = 1.0) -> float | None:
    """`value / scale` to one decimal, as evidence states a figure; None stays None (not reported)."""
    return None if value is None else round(value / scale, 1)


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


class HourPrice(Protocol):
    """What a GPU-hour costs (diagnostics/account.py's Price, the config's [cost]): a rule that says what a problem
    costs states it in money where one is set."""

    @property
    def per_gpu_hour(self) -> float: ...

    def format(self, amount: float) -> str: ...


class Window:
    """The snapshots a rule looks at, oldest first.

    Every rule runs on the same window each tick, so what several of them ask for (a GPU's series, the mean
    of a field) is computed on first use and shared.
    """

    __slots__ = (
        "_host_means",
        "_info",
        "_means",
        "_pids",
        "_proc_means",
        "_procs",
        "_readable",
        "_series",
        "_shared",
        "latest",
        "price",
        "seconds",
        "snapshots",
    )

    def __init__(self, snapshots: Sequence[Snapshot], seconds: float, price: HourPrice | None = None) -> None:
        if not snapshots:
            raise ValueError("a window needs at least one snapshot")
        self.snapshots = snapshots
        self.price = price  # what a GPU-hour costs, where the config says
        self.latest = snapshots[-1]
        self.seconds = seconds
        self._series: dict[int, list[GpuSample]] | None = None
        self._means: dict[tuple[int, str], float | None] = {}
        self._host_means: dict[str, float | None] = {}
        self._proc_means: dict[tuple[int, str], float | None] = {}
        self._procs: dict[int, list[ProcSample]] | None = None
        self._shared: dict[str, object] = {}
        self._pids: dict[int, tuple[int, ...]] = {}
        self._info = {info.index: info for info in self.latest.gpu_info}
        self._readable = tuple(sample for sample in self.latest.gpus if not sample.lost and sample.error is None)

    @property
    def host(self) -> HostSample:
        return self.latest.host

    @property
    def span_s(self) -> int:
        """The seconds the window really covers (less than asked for at the start), as the evidence states it."""
        return max(1, round(self.latest.timestamp - self.snapshots[0].timestamp))

    def gpus(self) -> Iterable[GpuSample]:
        """The latest sample of each GPU that is readable now."""
        return self._readable

    def pids(self, sample: GpuSample) -> tuple[int, ...]:
        """compute_pids of one of `gpus()`, worked out once per window."""
        pids = self._pids.get(sample.index)
        if pids is None:
            pids = self._pids[sample.index] = compute_pids(sample)
        return pids

    def info(self, index: int) -> GpuInfo | None:
        return self._info.get(index)

    def series(self, index: int) -> list[GpuSample]:
        """Readable samples of one GPU within the window, oldest first (every GPU's in one pass)."""
        if self._series is None:
            self._series = {}
            for snap in self.snapshots:
                for sample in snap.gpus:
                    if not sample.lost:
                        self._series.setdefault(sample.index, []).append(sample)
        return self._series.get(index, [])

    def mean(self, index: int, field: str) -> float | None:
        """Mean of a GpuSample field (e.g. "utilization_gpu_pct") of one GPU; None when never reported."""
        key = (index, field)
        if key in self._means:
            return self._means[key]
        total, count = 0.0, 0
        for sample in self.series(index):  # one pass, no lists: ~50 means a tick on 8 GPUs go through here
            value = getattr(sample, field)
            if value is not None:
                total += value
                count += 1
        mean = self._means[key] = total / count if count else None
        return mean

    def recent(self, index: int, field: str, seconds: float) -> list[float]:
        """One GPU's readings of a field over the last `seconds` of the window: what it does now, where the mean
        still remembers what it did before (a job that just started or ended)."""
        since = self.latest.timestamp - seconds
        return [v for s in self.series(index) if s.timestamp >= since and (v := getattr(s, field)) is not None]

    def busy_now(self, index: int, th: Thresholds) -> bool:
        """Its utilization at `verdict_busy_util_pct` or more in every reading of the last `verdict_settle_s`."""
        recent = self.recent(index, "utilization_gpu_pct", th.verdict_settle_s)
        return bool(recent) and min(recent) >= th.verdict_busy_util_pct

    def host_mean(self, field: str) -> float | None:
        """Mean of a HostSample field or property (e.g. "cpu_pct"), or of a group's field with a dot
        ("container.cpu_throttled_pct", "psi.cpu_some_pct"); None when never reported."""
        if field not in self._host_means:
            group, _, name = field.rpartition(".")
            hosts = [snap.host for snap in self.snapshots]
            parts = [getattr(host, group) for host in hosts] if group else hosts
            self._host_means[field] = _mean([None if part is None else getattr(part, name) for part in parts])
        return self._host_means[field]

    def proc_series(self, pid: int) -> list[ProcSample]:
        """One process's readings within the window, oldest first (every process's in one pass)."""
        if self._procs is None:
            self._procs = {}
            for snap in self.snapshots:
                for proc in snap.host.processes:
                    self._procs.setdefault(proc.pid, []).append(proc)
        return self._procs.get(pid, [])

    def proc_mean(self, pid: int, field: str) -> float | None:
        """Mean of a ProcSample field (e.g. "cpu_pct") of one process over the readings that have it: a real
        main process swings between 70 and 90% of a core, so a rule judges its mean, not its latest reading."""
        key = (pid, field)
        if key not in self._proc_means:
            self._proc_means[key] = _mean([getattr(proc, field) for proc in self.proc_series(pid)])
        return self._proc_means[key]

    def shared(self, name: str, compute: Callable[[], T]) -> T:
        """What several rules derive from this window alike (the starving GPUs), computed by the first.

        The engine gives every rule of a tick the same window and thresholds, so `name` alone identifies it.
        """
        if name not in self._shared:
            self._shared[name] = compute()
        return cast(T, self._shared[name])

    def host_share(self, condition: Callable[[HostSample], bool]) -> float:
        return sum(1 for snap in self.snapshots if condition(snap.host)) / len(self.snapshots)


def _mean(values: list[float | None]) -> float | None:
    readings = [v for v in values if v is not None]
    return sum(readings) / len(readings) if readings else None


Check = Callable[[Window, Thresholds], Iterable[Hit]]


def _default_hold(_: Thresholds) -> float | None:
    return None


@dataclass(frozen=True, slots=True)
class Rule:
    """A rule and how the engine treats it. `open_after` / `close_after` override the config's hysteresis.

    Its id, the key of its findings and of its words in the catalog, is its check's name: written once, it cannot
    drift from the function that decides it.
    """

    check: Check
    severity: Severity
    metric: str | None = None  # the GpuSample field a view highlights
    higher_is_worse: bool = True
    bound: str | None = None  # the verdict class its finding argues for (diagnostics/verdict.py); None: none
    open_after: Callable[[Thresholds], float | None] = _default_hold
    close_after: Callable[[Thresholds], float | None] = _default_hold
    # It judges the work on a GPU (activity, memory, processes): on a MIG GPU it judges each instance as a GPU of
    # its own (diagnostics/instances.py). Rules on the GPU's own readings (heat, power, PCIe...) leave it False.
    per_instance: bool = False
    id: str = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "id", self.check.__name__)


def at_once(_: Thresholds) -> float:
    """For facts that need no confirming: an XID, an ECC error, a version mismatch."""
    return 0.0


def is_busy(sample: GpuSample, th: Thresholds) -> bool:
    """At `busy_util_pct` or more; a MIG GPU (no whole-GPU utilization) when one of its instances is."""
    if sample.utilization_gpu_pct is not None:
        return sample.utilization_gpu_pct >= th.busy_util_pct
    return sample.mig is not None and any(
        d.gr_engine_active_pct is not None and d.gr_engine_active_pct >= th.busy_util_pct for d in sample.mig.devices
    )


def has_bits(sample: GpuSample, bits: int) -> bool:
    return sample.clock_event_reasons_mask is not None and bool(sample.clock_event_reasons_mask & bits)


def clock_events(sample: GpuSample) -> str | None:
    """The clock event reasons set now, by name and as the mask nvidia-smi shows; None when not reported."""
    mask = sample.clock_event_reasons_mask
    if mask is None:
        return None
    names = ", ".join(decode_clock_event_reasons(mask) or ())
    return f"{names} (0x{mask:x})" if names else f"0x{mask:x}"


def compute_pids(sample: GpuSample) -> tuple[int, ...]:
    """PIDs of the compute processes on a GPU (a desktop's graphics context does not compete for it)."""
    return tuple(p.pid for p in sample.processes if p.kind == "compute")
