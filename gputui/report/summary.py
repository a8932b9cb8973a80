"""What a recording says, in numbers: the report behind `gputui report` (text, JSON and the HTML charts).

The verdict's classes are named as the verdict names them (its labels from the catalog; JSON keeps their ids),
and their seconds and shares are the account's (account.py): a verdict shown from t0 until the next took over at
t1 stood t1 - t0 (a gap capped), and a share is those seconds over the account's window. The readings' shares
(throttling) are weighted by how long each tick stood (up to twice the interval, so a gap in the recording counts
as nothing), over the ticks where the value was reported: a GPU that never reported its clock event reasons has
no throttle share, not a share of 0. A clock low for want of work (NVML's gpu_idle) or set on purpose is not
throttling: those reasons are told apart.
"""

from __future__ import annotations

import bisect
import itertools
import statistics
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Literal, Protocol

from gputui.diagnostics.account import (
    MAX_GAP_INTERVALS,
    Account,
    Accountant,
    Price,
    account_lines,
    account_to_dict,
    class_label,
)
from gputui.diagnostics.catalog import severity_label, text
from gputui.diagnostics.engine import DiagnosticsEngine
from gputui.diagnostics.findings import Finding, Severity
from gputui.diagnostics.verdict import Verdict
from gputui.formatting import NA, fmt_bytes_pair, fmt_duration, fmt_num, fmt_pct, fmt_share
from gputui.model import (
    CLOCK_EVENT_REASONS,
    CLOCK_LIMITING,
    GpuInfo,
    GpuSample,
    MigDevice,
    Snapshot,
    decode_clock_event_reasons,
)
from gputui.record.format import (
    RecordedEvent,
    RecordingFormatError,
    finding_from_dict,
    format_clock,
    format_datetime,
)
from gputui.record.reader import Recording
from gputui.report.activity_windows import ActivityTally, ProcessActivity, activity_lines
from gputui.report.before_after import Comparison, MarkSpans, comparison_line, comparison_to_dict

# Reasons that hold the clocks back (as opposed to idle, or a clock someone set on purpose): those the rules
# name throttling by (model.py's CLOCK_LIMITING), in the order of their bits.
THROTTLING_REASONS: tuple[str, ...] = decode_clock_event_reasons(CLOCK_LIMITING) or ()

FindingsOrigin = Literal["recorded", "recomputed"]


class _EngineState(Protocol):
    @property
    def active(self) -> Sequence[Finding]: ...

    @property
    def closed(self) -> Sequence[Finding]: ...

    @property
    def verdict(self) -> Verdict | None: ...


class _Engine(Protocol):
    def update(self, snapshot: Snapshot) -> _EngineState: ...


EngineFactory = Callable[[], _Engine]


@dataclass(frozen=True, slots=True)
class Stats:
    """Summary of one metric over the ticks that reported it; every field None when none did."""

    count: int = 0
    mean: float | None = None
    minimum: float | None = None
    p50: float | None = None
    p95: float | None = None
    maximum: float | None = None

    @classmethod
    def of(cls, values: Iterable[float | None]) -> Stats:
        data = sorted(float(v) for v in values if v is not None)
        if not data:
            return cls()
        p95 = statistics.quantiles(data, n=20, method="inclusive")[18] if len(data) > 1 else data[0]
        return cls(
            count=len(data),
            mean=round(statistics.fmean(data), 3),
            minimum=data[0],
            p50=statistics.median(data),
            p95=round(p95, 3),
            maximum=data[-1],
        )


@dataclass(frozen=True, slots=True)
class InstanceReport:
    """One MIG instance over the recording: in MIG mode the GPU has no utilization, and its activity is here."""

    label: str  # "3g.40gb (GI 2)"
    gpu_instance_id: int | None
    compute_instance_id: int | None
    samples: int
    sm_active_pct: Stats
    tensor_active_pct: Stats
    dram_bw_pct: Stats
    memory_used_peak_bytes: int | None
    memory_total_bytes: int | None


@dataclass(frozen=True, slots=True)
class GpuReport:
    index: int
    name: str
    uuid: str | None
    samples: int
    lost_samples: int
    throttle_share: dict[str, float] | None  # THROTTLING_REASONS -> fraction of the time known; None: never known
    throttled_share: float | None  # any of THROTTLING_REASONS
    # The other clock events (gpu_idle: no work; a clock set on purpose), apart: they hold back nothing.
    other_clock_events: dict[str, float] | None
    utilization_pct: Stats
    power_w: Stats
    energy_wh: float | None  # the account's: NVML's energy counter where the driver gives one, else power integrated
    sm_clock_mhz: Stats
    temperature_peak_c: float | None
    memory_temperature_peak_c: float | None
    pcie_rx_bytes_s: Stats
    pcie_tx_bytes_s: Stats
    # GPM (Hopper and newer): how full the GPU was while busy; no counts where the GPU gives no GPM.
    sm_active_pct: Stats
    tensor_active_pct: Stats
    dram_bw_pct: Stats
    instances: tuple[InstanceReport, ...] = ()  # its MIG instances, in the order first seen; none off MIG

    @property
    def gpm_reported(self) -> bool:
        """True when the GPU reported any of SM, tensor or DRAM activity at least once."""
        return any(s.count for s in (self.sm_active_pct, self.tensor_active_pct, self.dram_bw_pct))


@dataclass(frozen=True, slots=True)
class FindingSpan:
    """A finding from when it opened to when it closed (None: still open when the recording ended)."""

    rule: str
    severity: str
    title: str
    gpus: tuple[int, ...]
    start: float
    end: float | None
    advice: str = ""


@dataclass(frozen=True, slots=True)
class VerdictSpan:
    """A verdict over the readings it was judged on, as the account bills it: from the tick before the one it was
    first shown at to the last it was shown at (None: still shown when the recording ended); `seconds`: those
    intervals (end - start, a gap between ticks capped)."""

    cls: str
    label: str
    summary: str
    gpus: tuple[int, ...]
    start: float
    end: float | None
    seconds: float = 0.0


@dataclass(frozen=True, slots=True)
class Report:
    path: str
    hostname: str
    recorded_source: str
    simulated: bool
    scenario: str | None
    gputui_version: str
    interval_s: float
    utc_offset_s: int
    start: float
    end: float
    ticks: int
    gpus: tuple[GpuReport, ...]
    host_cpu_pct: Stats
    host_iowait_pct: Stats
    findings_origin: FindingsOrigin
    findings: tuple[FindingSpan, ...]
    verdicts: tuple[VerdictSpan, ...]  # () when the recording kept findings but no verdict (an older gputui)
    probes: tuple[dict[str, Any], ...]
    marks: tuple[tuple[float, str], ...]
    warnings: tuple[str, ...] = field(default=())
    # Each GPU's and job's seconds in each verdict class, from the verdicts recorded (else recomputed).
    account: Account = field(default_factory=lambda: Account(0.0))
    # Each process whose stacks were sampled: its windows, what led them, the mean of their shares.
    activities: tuple[ProcessActivity, ...] = ()
    # Each mark with the spans before and after it, each judged by its own account.
    before_after: tuple[Comparison, ...] = ()

    @property
    def duration_s(self) -> float:
        return self.end - self.start

    def verdict_seconds(self) -> dict[str, float]:
        """Each verdict class's seconds, as the account bills them, longest first."""
        seconds: dict[str, float] = {}
        for span in self.verdicts:
            seconds[span.cls] = seconds.get(span.cls, 0.0) + span.seconds
        return dict(sorted(seconds.items(), key=lambda item: -item[1]))

    def verdict_shares(self) -> dict[str, float]:
        """Each verdict class's share of the account's window (its seconds over the window), largest first."""
        window = self.account.window_s
        if window <= 0:
            return {}
        return {cls: round(s / window, 4) for cls, s in self.verdict_seconds().items() if s > 0}


def tick_weights(timestamps: Sequence[float], interval_s: float) -> list[float]:
    """Seconds each tick stands for: up to the next tick, at most two intervals; the last, one interval."""
    weights = [max(min(b - a, 2 * interval_s), 0.0) for a, b in itertools.pairwise(timestamps)]
    return weights + ([interval_s] if timestamps else [])


# The other clock events: the clock is low for want of work (gpu_idle), or someone set it; nothing holds it back.
OTHER_CLOCK_EVENTS: tuple[str, ...] = tuple(name for _, name in CLOCK_EVENT_REASONS if name not in THROTTLING_REASONS)
# The mask bits of THROTTLING_REASONS: a tick is throttled when any is set.
THROTTLE_BITS = sum(bit for bit, name in CLOCK_EVENT_REASONS if name in THROTTLING_REASONS)


class _InstanceTally:
    """One MIG instance's figures, gathered as its GPU's are."""

    def __init__(self, device: MigDevice) -> None:
        self.label = device.label
        self.ids = (device.gpu_instance_id, device.compute_instance_id)
        self.samples = 0
        self.sm_active: list[float | None] = []
        self.tensor_active: list[float | None] = []
        self.dram_bw: list[float | None] = []
        self.memory_peak: float | None = None
        self.memory_total: int | None = None

    def add(self, device: MigDevice) -> None:
        self.samples += 1
        self.sm_active.append(device.sm_active_pct)
        self.tensor_active.append(device.tensor_active_pct)
        self.dram_bw.append(device.dram_bw_pct)
        self.memory_peak = _peak(self.memory_peak, device.memory_used_bytes)
        self.memory_total = device.memory_total_bytes if device.memory_total_bytes is not None else self.memory_total

    def report(self) -> InstanceReport:
        return InstanceReport(
            label=self.label,
            gpu_instance_id=self.ids[0],
            compute_instance_id=self.ids[1],
            samples=self.samples,
            sm_active_pct=Stats.of(self.sm_active),
            tensor_active_pct=Stats.of(self.tensor_active),
            dram_bw_pct=Stats.of(self.dram_bw),
            memory_used_peak_bytes=None if self.memory_peak is None else int(self.memory_peak),
            memory_total_bytes=self.memory_total,
        )


class _GpuTally:
    """One GPU's figures, gathered tick by tick so that a long recording is read once."""

    def __init__(self, info: GpuInfo) -> None:
        self.info = info
        self.samples = 0
        self.lost = 0
        self.reason_s = dict.fromkeys((name for _, name in CLOCK_EVENT_REASONS), 0.0)
        self.known_s = 0.0
        self.throttled_s = 0.0
        self.util: list[float | None] = []
        self.power: list[float | None] = []
        self.sm_clock: list[float | None] = []
        self.rx: list[float | None] = []
        self.tx: list[float | None] = []
        self.sm_active: list[float | None] = []
        self.tensor_active: list[float | None] = []
        self.dram_bw: list[float | None] = []
        self.temp_peak: float | None = None
        self.memory_temp_peak: float | None = None
        self.instances: dict[tuple[int | None, int | None], _InstanceTally] = {}

    def add(self, sample: GpuSample | None, weight: float) -> None:
        if sample is None or sample.lost:
            self.lost += 1
            return
        self.samples += 1
        mask = sample.clock_event_reasons_mask
        if mask is not None:
            self.known_s += weight
            for bit, name in CLOCK_EVENT_REASONS:
                if mask & bit:
                    self.reason_s[name] += weight
            if mask & THROTTLE_BITS:
                self.throttled_s += weight
        self.util.append(sample.utilization_gpu_pct)
        self.power.append(sample.power_w)
        self.sm_clock.append(None if sample.sm_clock_mhz is None else float(sample.sm_clock_mhz))
        self.rx.append(sample.pcie_rx_bytes_s)
        self.tx.append(sample.pcie_tx_bytes_s)
        self.sm_active.append(sample.sm_active_pct)
        self.tensor_active.append(sample.tensor_active_pct)
        self.dram_bw.append(sample.dram_bw_pct)
        self.temp_peak = _peak(self.temp_peak, sample.temperature_c)
        self.memory_temp_peak = _peak(self.memory_temp_peak, sample.memory_temperature_c)
        for device in sample.mig.devices if sample.mig is not None else ():
            key = (device.gpu_instance_id, device.compute_instance_id)
            self.instances.setdefault(key, _InstanceTally(device)).add(device)

    def report(self, energy_j: float | None) -> GpuReport:
        """The GPU's figures, its energy the account's (one figure for the account's JSON and this)."""
        known = self.known_s > 0
        power = Stats.of(self.power)
        return GpuReport(
            index=self.info.index,
            name=self.info.name,
            uuid=self.info.uuid,
            samples=self.samples,
            lost_samples=self.lost,
            throttle_share=self._shares(THROTTLING_REASONS) if known else None,
            throttled_share=round(self.throttled_s / self.known_s, 4) if known else None,
            other_clock_events=self._shares(OTHER_CLOCK_EVENTS) if known else None,
            utilization_pct=Stats.of(self.util),
            power_w=power,
            energy_wh=None if energy_j is None else round(energy_j / 3600, 3),
            sm_clock_mhz=Stats.of(self.sm_clock),
            temperature_peak_c=self.temp_peak,
            memory_temperature_peak_c=self.memory_temp_peak,
            pcie_rx_bytes_s=Stats.of(self.rx),
            pcie_tx_bytes_s=Stats.of(self.tx),
            sm_active_pct=Stats.of(self.sm_active),
            tensor_active_pct=Stats.of(self.tensor_active),
            dram_bw_pct=Stats.of(self.dram_bw),
            instances=tuple(tally.report() for tally in self.instances.values()),
        )

    def _shares(self, reasons: tuple[str, ...]) -> dict[str, float]:
        return {name: round(self.reason_s[name] / self.known_s, 4) for name in reasons}


def _peak(old: float | None, new: float | None) -> float | None:
    if new is None:
        return old
    return new if old is None else max(old, new)


def recorded_findings(events: Iterable[RecordedEvent]) -> tuple[list[FindingSpan], int]:
    """Spans paired from finding_opened/finding_closed events, and how many events could not be read. A span starts
    when its finding did (`started_at`: when the trouble began, before the rule confirmed it), as live and a
    recomputed report say; at the event's time where the record holds no start (hand-made events). A span is
    worded as its finding last read: when it closed, or when the recording ended (finding_still_open; a killed
    recorder leaves none, and its open findings keep the words they opened with)."""
    open_: dict[tuple[str, tuple[int, ...]], tuple[Finding, float]] = {}
    spans: list[FindingSpan] = []
    bad = 0
    for event in events:
        if event.kind not in ("finding_opened", "finding_closed", "finding_still_open"):
            continue
        try:
            finding = finding_from_dict(event.data["finding"])
        except (KeyError, TypeError, RecordingFormatError):
            bad += 1
            continue
        key = finding.key
        if event.kind == "finding_opened":
            open_.setdefault(key, (finding, finding.started_at or event.t))
        elif event.kind == "finding_still_open":
            open_[key] = (finding, open_[key][1] if key in open_ else finding.started_at or event.t)
        else:
            _, start = open_.pop(key, (finding, finding.started_at or event.t))
            spans.append(_span(finding, start, event.t))
    spans += [_span(finding, start, None) for finding, start in open_.values()]
    return sorted(spans, key=lambda s: (s.start, s.rule, s.gpus)), bad


class FindingTracker:
    """Spans of the findings a diagnostics engine reports, fed one engine state at a time."""

    def __init__(self) -> None:
        self._open: dict[tuple[str, tuple[int, ...]], Finding] = {}
        self._spans: list[FindingSpan] = []

    def update(self, state: _EngineState, t: float) -> None:
        active = {f.key: f for f in state.active}
        for key, finding in list(self._open.items()):
            if key not in active:
                closed = next((f for f in state.closed if f.key == key), finding)
                self._spans.append(_span(closed, closed.started_at, closed.ended_at or t))
                del self._open[key]
        self._open.update(active)

    def spans(self) -> list[FindingSpan]:
        """All spans so far, the open ones without an end, in order of their start."""
        spans = self._spans + [_span(f, f.started_at, None) for f in self._open.values()]
        return sorted(spans, key=lambda s: (s.start, s.rule, s.gpus))


def _recorded_verdict(data: dict[str, Any]) -> Verdict:
    """A verdict event's classes and GPUs (its groups' too), as the account reads them: not its words."""
    return Verdict(
        cls=str(data.get("class", "unknown")),
        label=str(data.get("label", "")),
        gpus=tuple(int(g) for g in data.get("gpus") or ()),
        summary="",
        line="",
        groups=tuple(_recorded_verdict(g) for g in data.get("groups") or () if isinstance(g, dict)),
    )


class _VerdictAt:
    """The verdict recorded in force at each tick, the ticks asked in order: the last to take over at or before."""

    def __init__(self, events: Iterable[RecordedEvent]) -> None:
        taken = [
            (e.t, e.data["verdict"]) for e in events if e.kind == "verdict" and isinstance(e.data.get("verdict"), dict)
        ]
        self._taken = sorted(taken, key=lambda pair: pair[0])
        self._next = 0
        self._current: Verdict | None = None

    def __bool__(self) -> bool:
        return bool(self._taken)

    def at(self, t: float) -> Verdict | None:
        while self._next < len(self._taken) and self._taken[self._next][0] <= t:
            self._current = _recorded_verdict(self._taken[self._next][1])
            self._next += 1
        return self._current


def recorded_verdicts(events: Iterable[RecordedEvent]) -> list[VerdictSpan]:
    """Spans from `verdict` events: each verdict stands until the next takes over."""
    spans: list[VerdictSpan] = []
    for event in events:
        if event.kind != "verdict" or not isinstance(event.data.get("verdict"), dict):
            continue
        data = event.data["verdict"]
        span = VerdictSpan(
            cls=str(data.get("class", "unknown")),
            label=str(data.get("label", "")),
            summary=str(data.get("summary", "")),
            gpus=tuple(int(g) for g in data.get("gpus") or ()),
            start=event.t,
            end=None,
        )
        if spans:
            spans[-1] = replace(spans[-1], end=event.t)
        spans.append(span)
    return spans


class VerdictTimeline:
    """Verdict spans from a diagnostics engine's states, fed one at a time: a span from the tick a verdict was
    shown at, as the recorder writes them (a new span where the verdict's key changes); judged_spans lays them
    out as the account bills them."""

    def __init__(self) -> None:
        self.spans: list[VerdictSpan] = []
        self._key: tuple[object, ...] | None = None

    def update(self, verdict: Verdict | None, t: float) -> None:
        if verdict is None or verdict.key == self._key:
            return
        self._key = verdict.key
        if self.spans:
            self.spans[-1] = replace(self.spans[-1], end=t)
        self.spans.append(VerdictSpan(verdict.cls, verdict.label, verdict.summary, verdict.gpus, t, None))


def judged_spans(shown: Sequence[VerdictSpan], timestamps: Sequence[float], max_gap_s: float) -> list[VerdictSpan]:
    """The spans as the account bills them, from the spans each starting at the tick its verdict was shown at: a
    verdict judged on a reading speaks for the time since the reading before, so a span runs from the tick before
    the first it was shown at (the first tick, for the first span) to the last it was shown at (None: still shown
    at the end), and its seconds are those intervals, a gap capped at `max_gap_s`. A span no tick showed is left
    out."""
    if not timestamps:
        return list(shown)
    firsts = [bisect.bisect_left(timestamps, span.start) for span in shown]
    kept = [
        (span, a)
        for n, (span, a) in enumerate(zip(shown, firsts, strict=True))
        if a < len(timestamps) and (n + 1 == len(shown) or firsts[n + 1] > a)
    ]
    out = []
    for n, (span, a) in enumerate(kept):
        b = kept[n + 1][1] if n + 1 < len(kept) else len(timestamps)  # its ticks: a .. b-1
        seconds = sum(min(max(0.0, timestamps[i] - timestamps[i - 1]), max_gap_s) for i in range(max(a, 1), b))
        end = timestamps[b - 1] if n + 1 < len(kept) else None
        out.append(replace(span, start=timestamps[max(a - 1, 0)], end=end, seconds=round(seconds, 3)))
    return out


def _span(finding: Finding, start: float, end: float | None) -> FindingSpan:
    return FindingSpan(
        rule=finding.rule,
        severity=finding.severity.label,
        title=finding.title,
        gpus=finding.gpus,
        start=start,
        end=end,
        advice=finding.advice,
    )


def build_report(recording: Recording, *, engine_factory: EngineFactory = DiagnosticsEngine) -> Report:
    """The report of a recording, read in one pass; findings come from its events, or are recomputed by the
    diagnostics engine (`engine_factory`, default: this gputui's) when none were kept."""
    header = recording.header
    ticks = recording.ticks
    warnings = list(recording.warnings)
    spans, bad = recorded_findings(recording.events)
    verdicts = recorded_verdicts(recording.events)
    if bad:
        warnings.append(f"{bad} finding events could not be read and are left out")
    origin: FindingsOrigin = "recorded"
    engine: _Engine | None = None
    if not spans:  # a recording made without the engine running: run it now, on the same samples
        origin = "recomputed"
        engine = engine_factory()
    tracker = FindingTracker()
    timeline = VerdictTimeline()
    verdict_at = _VerdictAt(recording.events)
    max_gap_s = MAX_GAP_INTERVALS * header.interval_s
    accountant = Accountant(max_gap_s)
    marks = tuple((e.t, str(e.data.get("label", ""))) for e in recording.events if e.kind == "mark")
    mark_spans = MarkSpans(marks, max_gap_s)
    tallies = [_GpuTally(info) for info in header.gpu_info]
    activities = ActivityTally()
    cpu: list[float | None] = []
    iowait: list[float | None] = []
    for tick, weight in zip(ticks, tick_weights(ticks.timestamps, header.interval_s), strict=True):
        samples = {g.index: g for g in tick.gpus}
        for tally in tallies:
            tally.add(samples.get(tally.info.index), weight)
        activities.add(tick)
        cpu.append(tick.host.cpu_pct)
        iowait.append(tick.host.iowait_pct)
        verdict = verdict_at.at(tick.timestamp)
        if engine is not None:
            state = engine.update(tick)
            tracker.update(state, tick.timestamp)
            timeline.update(state.verdict, tick.timestamp)
            verdict = verdict if verdict_at else state.verdict
        accountant.add(tick, verdict)
        mark_spans.add(tick, verdict)
    if engine is not None:
        spans = tracker.spans()
        verdicts = verdicts or timeline.spans
    verdicts = judged_spans(verdicts, ticks.timestamps, max_gap_s)
    system = header.system
    account = accountant.account()
    energy = {g.gpu: g.energy_j for g in account.gpus}
    return Report(
        path=str(recording.path),
        hostname=system.hostname,
        recorded_source=system.source,
        simulated=system.source == "simulated" or system.remote_source == "simulated",
        scenario=system.scenario,
        gputui_version=header.gputui_version,
        interval_s=header.interval_s,
        utc_offset_s=header.utc_offset_s,
        start=recording.start,
        end=recording.end,
        ticks=len(ticks),
        gpus=tuple(tally.report(energy.get(tally.info.index)) for tally in tallies),
        host_cpu_pct=Stats.of(cpu),
        host_iowait_pct=Stats.of(iowait),
        findings_origin=origin,
        findings=tuple(spans),
        verdicts=tuple(verdicts),
        probes=tuple(
            {"t": e.t, **dict(e.data.get("probe") or {})} for e in recording.events if e.kind == "probe_result"
        ),
        marks=marks,
        warnings=tuple(warnings),
        account=account,
        activities=activities.report(),
        before_after=mark_spans.comparisons(),
    )


def report_to_dict(report: Report, price: Price | None = None) -> dict[str, Any]:
    out = asdict(report)
    out["account"] = account_to_dict(report.account, price)
    for gpu in out["gpus"]:
        if not gpu["instances"]:
            del gpu["instances"]  # only a MIG GPU has the key: the report of any other stays as it was
    out["duration_s"] = report.duration_s
    out["marks"] = [{"t": t, "label": label} for t, label in report.marks]
    out["verdicts"] = [
        {"class": v.cls, **{k: val for k, val in asdict(v).items() if k != "cls"}} for v in report.verdicts
    ]
    out["verdict_shares"] = report.verdict_shares()
    out["before_after"] = [comparison_to_dict(c) for c in report.before_after]
    if report.simulated:
        out["label"] = "SIMULATED: not measured on a real machine"
    return out


# ---- text ----------------------------------------------------------------------------------------------------


def _instance_lines(gpu: GpuReport) -> list[str]:
    """A MIG GPU's activity, per instance: the GPU itself has no utilization in MIG mode."""
    lines = ["  MIG instances (means; whole-GPU utilization does not exist in MIG mode):"]
    for inst in gpu.instances:
        lines.append(
            f"    {inst.label:<16} SM active {fmt_pct(inst.sm_active_pct.mean, 1)}  "
            f"tensor {fmt_pct(inst.tensor_active_pct.mean, 1)}  DRAM bw {fmt_pct(inst.dram_bw_pct.mean, 1)}  "
            f"memory peak {fmt_bytes_pair(inst.memory_used_peak_bytes, inst.memory_total_bytes)}"
        )
    return lines


def _efficiency_line(gpu: GpuReport) -> str:
    """How full the GPU was while busy; one n/a for a GPU without GPM rather than three."""
    if not gpu.gpm_reported and gpu.instances:
        return f"  efficiency   {NA} for the whole GPU (MIG mode: per instance below)"
    if not gpu.gpm_reported:
        return f"  efficiency   {NA} (no GPM on this GPU)"
    return (
        f"  efficiency   SM active mean {fmt_pct(gpu.sm_active_pct.mean, 1)}  "
        f"tensor mean {fmt_pct(gpu.tensor_active_pct.mean, 1)}  "
        f"DRAM bw mean {fmt_pct(gpu.dram_bw_pct.mean, 1)}"
    )


MAX_SPANS_LISTED = 3


def _verdict_lines(report: Report) -> list[str]:
    """'verdict      GPU-bound 3m17s, 82% of the time' then 'Input-bound 43s, 18%: 02:10-02:25' a line each: the
    dominant verdict first, and when the others held; the account's seconds and labels."""
    shares = report.verdict_shares()
    if not report.verdicts:
        return ["verdict      n/a (this recording keeps findings but no verdict: an older gputui made it)"]
    if not shares:
        return ["verdict      n/a (one reading: no time to share among the verdicts)"]
    seconds = report.verdict_seconds()
    parts = []
    for n, (cls, share) in enumerate(shares.items()):
        part = f"{class_label(cls)} {fmt_duration(seconds[cls])}, {fmt_share(share)}" + (
            " of the time" if n == 0 else ""
        )
        if n:
            held = [s for s in report.verdicts if s.cls == cls]
            times = ", ".join(
                f"{format_clock(s.start, report.utc_offset_s)}-{format_clock(s.end or report.end, report.utc_offset_s)}"
                for s in held[:MAX_SPANS_LISTED]
            )
            part += f": {times}" + (", ..." if len(held) > MAX_SPANS_LISTED else "")
        parts.append(part)
    return [f"{'verdict' if n == 0 else '':<13}{part}" for n, part in enumerate(parts)]


def severity_word(severity: str) -> str:
    """A finding's severity as `diagnose` and the monitor say it (CRIT, WARN, INFO); one this gputui does not know,
    as recorded."""
    known = {s.label: s for s in Severity}
    return severity_label(known[severity], "en").strip() if severity in known else severity


def _other_clock_events(gpu: GpuReport) -> list[str]:
    """The clock events that hold nothing back, apart from throttling: a clock low for want of work, or set."""
    others = gpu.other_clock_events or {}
    said = ", ".join(f"{name} {fmt_share(s, 1)}" for name, s in others.items() if s > 0)
    return [f"  other events {said} (not throttling: a clock resting for want of work, or set so)"] if said else []


def render_text(report: Report, price: Price | None = None) -> str:
    """The plain-text report: fits an 100-column terminal, greps well, pastes into a support ticket. Its first
    lines say what each verdict class took: GPU-hours, and with a price their cost."""
    clock = report.utc_offset_s
    lines: list[str] = []
    if report.simulated:
        lines.append(f"SIMULATED (scenario {report.scenario}): not measured on a real machine")
    lines.append(f"gputui report: {report.path}")
    lines.append(
        f"host {report.hostname} ({report.recorded_source}), {format_datetime(report.start, clock)} to "
        f"{format_clock(report.end, clock)}, {report.duration_s / 60:.1f} min, {report.ticks} ticks "
        f"every {report.interval_s:g} s"
    )
    lines.extend(account_lines(report.account, price))
    lines.extend(_verdict_lines(report))
    for gpu in report.gpus:
        lines.append("")
        lines.append(f"GPU {gpu.index}  {gpu.name}  ({gpu.samples} samples, {gpu.lost_samples} lost)")
        u, p, c = gpu.utilization_pct, gpu.power_w, gpu.sm_clock_mhz
        lines.append(
            f"  utilization  mean {fmt_pct(u.mean, 1)}  p50 {fmt_pct(u.p50, 1)}  "
            f"p95 {fmt_pct(u.p95, 1)}  min {fmt_pct(u.minimum, 1)}"
        )
        lines.append(_efficiency_line(gpu))
        if gpu.instances:
            lines.extend(_instance_lines(gpu))
        lines.append(
            f"  power        mean {fmt_num(p.mean, 0, ' W')}  p95 {fmt_num(p.p95, 0, ' W')}  "
            f"max {fmt_num(p.maximum, 0, ' W')}  energy {fmt_num(gpu.energy_wh, 1, ' Wh')}"
        )
        lines.append(f"  SM clock     mean {fmt_num(c.mean, 0, ' MHz')}  min {fmt_num(c.minimum, 0, ' MHz')}")
        lines.append(
            f"  peak temp    GPU {fmt_num(gpu.temperature_peak_c, 0, ' C')}  memory "
            f"{fmt_num(gpu.memory_temperature_peak_c, 0, ' C')}"
        )
        lines.append(
            f"  PCIe         rx mean {fmt_num(gpu.pcie_rx_bytes_s.mean, 2, ' GB/s', scale=1e9)}  "
            f"tx mean {fmt_num(gpu.pcie_tx_bytes_s.mean, 2, ' GB/s', scale=1e9)}"
        )
        if gpu.throttle_share is None:
            lines.append("  throttling   n/a (clock event reasons not reported)")
        else:
            held = ", ".join(f"{name} {fmt_share(s, 1)}" for name, s in gpu.throttle_share.items() if s > 0) or "none"
            lines.append(f"  throttled    {fmt_share(gpu.throttled_share, 1)} of the time; reasons: {held}")
            lines.extend(_other_clock_events(gpu))
    cpu = report.host_cpu_pct
    lines.append("")
    lines.append(
        f"host CPU     mean {fmt_pct(cpu.mean, 1)}  p95 {fmt_pct(cpu.p95, 1)}  iowait mean "
        f"{fmt_pct(report.host_iowait_pct.mean, 1)}"
    )
    if report.activities:
        lines.append("")
        lines.extend(activity_lines(report.activities))
    lines.append("")
    origin = {
        "recorded": "as recorded",
        "recomputed": "recomputed from the samples",
    }[report.findings_origin]
    lines.append(f"findings ({origin}):")
    if not report.findings:
        lines.append("  none")
    for span in report.findings:
        end = format_clock(span.end, clock) if span.end is not None else "end"
        lines.append(f"  {format_clock(span.start, clock)}-{end}  {severity_word(span.severity):4}  {span.title}")
    if report.probes:
        lines.append("")
        lines.append("probe results:")
        for probe in report.probes:
            status = "ok" if probe.get("ok") else "FAILED"
            lines.append(
                f"  {format_clock(probe['t'], clock)}  {probe.get('probe', '?')} on {probe.get('device', '?')}: "
                f"{status}, {probe.get('verdict') or probe.get('message', '')}"
            )
    if report.before_after:
        lines.append("")
        lines.append(text("account.compare.heading", "en"))
        lines.extend(f"  {comparison_line(c, format_clock(c.t, clock))}" for c in report.before_after)
    if report.warnings:
        lines.append("")
        lines.extend(f"warning: {w}" for w in report.warnings)
    return "\n".join(lines) + "\n"
