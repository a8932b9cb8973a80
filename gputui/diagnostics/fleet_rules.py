"""Findings about the fleet as a whole, which no single node can make: `straggler`, `idle_allocated` and `hung_job`.

Each node's own engine judges it alone; these rules read every node's window side by side. A straggler is a GPU
markedly slower than the busy GPUs of its model across the fleet (one slow rank holds back a whole synchronous
job), named with what its own node found (heat, a power cap, a link) or that nothing was found there. An idle
allocation is a GPU that a process (a pod, a Slurm job) holds and has not used for minutes. Both are pure
functions of the windows, so `gputui diagnose --prometheus` and the fleet view give the same findings. A hung job
is a job some node's gputui found stopped (`job_stopped`): its nodes' findings joined by the job's key, naming the
rank stuck outside the collective on whichever node it runs.
Percentages are 0-100 in the model whatever the source wrote (sources/remote.py scales DCGM's 0-1 PROF ratios).

A GPU in MIG mode has no whole-GPU utilization: its instances are separate jobs of separate sizes, each with
its own activity (GPM, DCGM's PROF series). A MIG GPU is therefore a straggler only by its board's SM clock,
against MIG GPUs of its model, and an idle allocation on it is an instance's ("GPU 0 / 3g.40gb (GI 2)").
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from gputui.diagnostics.catalog import has_text, localize, text
from gputui.diagnostics.findings import Evidence, Finding, Severity
from gputui.diagnostics.rules.base import ev, rounded
from gputui.diagnostics.thresholds import Thresholds
from gputui.diagnostics.verdict import gpu_list
from gputui.formatting import fmt_duration, fmt_num, fmt_pct, fmt_ranges
from gputui.model import GpuProcess, GpuSample, MigDevice, ProcSample, Snapshot

STRAGGLER = "straggler"
IDLE_ALLOCATED = "idle_allocated"
HUNG_JOB = "hung_job"
FLEET_RULE_IDS: tuple[str, ...] = (STRAGGLER, IDLE_ALLOCATED, HUNG_JOB)
# Each fleet rule's severity, in one place the rule catalog (docs/reference/rules.md, `make docs`) reads too.
FLEET_SEVERITY: Mapping[str, Severity] = {
    STRAGGLER: Severity.WARNING,
    IDLE_ALLOCATED: Severity.WARNING,
    HUNG_JOB: Severity.CRITICAL,
}
# The node's finding a hung job is made of (rules/hang.py), and the evidence it is joined and named by.
_JOB_STOPPED = "job_stopped"

# The node's own findings that explain a slow GPU, most telling first: what lowers its clocks (heat, power), then
# its links (PCIe, NVLink), then what starves or shares it (others' work on its CPUs before the job's own data
# loading, as the verdict names them), then what its own stack shows it waits on. A finding of another rule (a full
# memory, a small /dev/shm) is no reason to run slower and is not named.
CAUSE_RULES: tuple[str, ...] = (
    "thermal_throttle",
    "power_brake",
    "hw_slowdown",
    "power_cap",
    "clocks_low",
    "pcie_downgrade",
    "pcie_slot_limited",
    "pcie_saturated",
    "pcie_errors",
    "nvlink_down",
    "nvlink_errors",
    "p2p_unavailable",
    "xid",
    "ecc_errors",
    "gpu_contention",
    "cpu_contention",
    "starvation_cpu",
    "starvation_io",
    "starvation_net",
    "cpu_throttled",
    "job_waits",
    "numa_mismatch",
    "host_swap",
)
_CAUSE_RANK = {rule: rank for rank, rule in enumerate(CAUSE_RULES)}

_GIB = 1 << 30


@dataclass(frozen=True, slots=True)
class NodeWindow:
    """One node over the window the fleet rules judge."""

    host: str
    source: Literal["gputui", "dcgm-exporter"]
    snapshots: tuple[Snapshot, ...]  # oldest first; may be empty (node unreachable the whole window)
    findings: tuple[Finding, ...]  # the node's own open findings at the end of the window (its engine's)


@dataclass(frozen=True, slots=True)
class FleetFinding:
    """A finding about GPUs on one or more nodes, in words (`lang`) with its evidence."""

    rule: str  # "straggler" | "idle_allocated"
    severity: Severity
    hosts: tuple[str, ...]
    gpus: tuple[tuple[str, int], ...]  # (host, gpu index)
    title: str
    advice: str
    evidence: tuple[Evidence, ...]
    # The MIG instances it concerns, as (host, GPU index, GPU instance id), their GPUs in `gpus`; () for a finding
    # about whole GPUs (a MIG GPU's slow clock concerns its whole board).
    mig_instances: tuple[tuple[str, int, int], ...] = ()


def fleet_findings(
    nodes: Sequence[NodeWindow], lang: str = "en", *, thresholds: Thresholds | None = None
) -> tuple[FleetFinding, ...]:
    """Every fleet finding over these windows, worst first, then by rule and host."""
    th = thresholds if thresholds is not None else Thresholds()
    gpus = [g for node in nodes for g in _node_gpus(node, th)]
    found = [
        *_stragglers(gpus, th, lang),
        *_idle_allocated(gpus, th, lang),
        *_idle_instances(gpus, th, lang),
        *_hung_jobs(nodes, lang),
    ]
    found.sort(key=lambda f: (-f.severity, f.rule, f.hosts, f.gpus, f.mig_instances))
    return tuple(found)


def fleet_finding_to_dict(f: FleetFinding) -> dict[str, Any]:
    """The JSON shape of a fleet finding (`gputui diagnose --prometheus --json`, top-level `findings`); its MIG
    instances only when it has some, as a node's findings say theirs, so a fleet without MIG reads as before."""
    out: dict[str, Any] = {
        "rule": f.rule,
        "severity": f.severity.label,
        "hosts": list(f.hosts),
        "gpus": [{"host": host, "gpu": index} for host, index in f.gpus],
        "title": f.title,
        "advice": f.advice,
        "evidence": [
            {"key": e.key, "label": e.label, "value": e.value, "unit": e.unit, "window": e.window} for e in f.evidence
        ],
    }
    if f.mig_instances:
        out["mig_instances"] = [
            {"host": host, "gpu": index, "gpu_instance_id": gi} for host, index, gi in f.mig_instances
        ]
    return out


# -- one GPU of one node over the window ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Gpu:
    """One GPU's readable samples in its node's window, and what the fleet rules ask of them."""

    node: NodeWindow
    index: int
    model: str
    series: tuple[GpuSample, ...]
    span_s: int  # the seconds its node's window covers
    busy: bool  # busy (utilization >= busy_util_pct) for most of the window: one of the peers
    idle: bool  # doing nothing for most of the window: never a straggler
    mig: bool  # split into MIG instances at its latest reading: its peers are MIG GPUs, by SM clock only

    @property
    def key(self) -> tuple[str, int]:
        return self.node.host, self.index


def _node_gpus(node: NodeWindow, th: Thresholds) -> Iterable[_Gpu]:
    if not node.snapshots:
        return
    latest = node.snapshots[-1]
    span = max(1, round(latest.timestamp - node.snapshots[0].timestamp))
    series: dict[int, list[GpuSample]] = {}
    for snap in node.snapshots:
        for sample in snap.gpus:
            if not sample.lost and sample.error is None:
                series.setdefault(sample.index, []).append(sample)
    for index, samples in sorted(series.items()):
        info = latest.info(index)
        if info is None:
            continue
        n = len(samples)
        busy = sum(1 for s in samples if _load(s) >= th.busy_util_pct)
        active = sum(1 for s in samples if _load(s) >= th.idle_util_pct)
        yield _Gpu(
            node=node,
            index=index,
            model=info.name,
            series=tuple(samples),
            span_s=span,
            busy=busy >= th.sustained_share * n,
            idle=active < th.sustained_share * n,
            mig=_split(samples[-1]),
        )


def _split(sample: GpuSample) -> bool:
    """Whether the GPU is cut into MIG instances in this reading."""
    return sample.mig is not None and bool(sample.mig.devices)


def _load(sample: GpuSample) -> float:
    """How hard the GPU works, -1 when not reported: a GPU that does not say is neither busy nor idle here. Its
    utilization; for a MIG GPU, which has none, its busiest instance's activity (its board clocks as it works)."""
    if sample.mig is None or not sample.mig.devices:
        return -1.0 if sample.utilization_gpu_pct is None else sample.utilization_gpu_pct
    return max((a for dev in sample.mig.devices if (a := _activity(dev)) is not None), default=-1.0)


def _activity(device: MigDevice) -> float | None:
    """An instance's activity: its graphics engine's, else its SMs'; None when neither is reported."""
    return device.gr_engine_active_pct if device.gr_engine_active_pct is not None else device.sm_active_pct


# -- straggler --------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Measure:
    """What a straggler is measured by: a GpuSample field, and how far below the median is "markedly"."""

    field: str
    unit: str
    relative: bool  # the margin is a % of the median (clocks, activity), else points (utilization)
    margin: Callable[[Thresholds], float]

    def floor(self, median: float, th: Thresholds) -> float:
        """Below this, a reading lags its peers."""
        return median * (1 - self.margin(th) / 100.0) if self.relative else median - self.margin(th)

    def lag(self, value: float, median: float) -> str:
        """How far below the median, as the title states it: 21% of it, or 35 points."""
        return fmt_pct(100.0 * (median - value) / median) if self.relative else fmt_num(median - value)


_SM_CLOCK = _Measure("sm_clock_mhz", "MHz", relative=True, margin=lambda th: th.straggler_clock_pct)
MEASURES: tuple[_Measure, ...] = (
    _SM_CLOCK,
    _Measure("utilization_gpu_pct", "%", relative=False, margin=lambda th: th.straggler_util_points),
    _Measure("sm_active_pct", "%", relative=True, margin=lambda th: th.straggler_activity_pct),
)
MIG_MEASURES: tuple[_Measure, ...] = (_SM_CLOCK,)  # the board's own reading, however it is split
# Evidence and title keys by field: `ev.<name>`, `ev.median_<name>`, `fleet.lag.<name>`.
_NAMES = {"sm_clock_mhz": "sm_clock", "utilization_gpu_pct": "gpu_util", "sm_active_pct": "sm_active"}


@dataclass(frozen=True, slots=True)
class _Lag:
    """One GPU behind its peers by one measure: its mean, their median, and the share of its window below."""

    gpu: _Gpu
    measure: _Measure
    value: float
    median: float
    share: float


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _readings(series: Iterable[GpuSample], field: str) -> list[float]:
    return [float(v) for s in series if (v := getattr(s, field)) is not None]


def _stragglers(gpus: Sequence[_Gpu], th: Thresholds, lang: str) -> Iterable[FleetFinding]:
    """GPUs markedly below the busy GPUs of their model by SM clock, utilization or SM activity.

    MIG GPUs are peers only of MIG GPUs of their model, and only by SM clock: the clock is the board's, however
    it is split, while utilization does not exist in MIG mode and their instances' activities are separate jobs
    of separate sizes, never compared with a whole GPU's or with each other. A MIG GPU is busy (a peer) while its
    busiest instance is, and working while one of its instances is.
    """
    by_model: dict[tuple[str, bool], list[_Gpu]] = {}
    for g in gpus:
        by_model.setdefault((g.model, g.mig), []).append(g)
    lags: dict[tuple[str, str, bool], list[_Lag]] = {}  # (host, model, MIG) -> its GPUs' lags
    peers_of: dict[tuple[str, bool], int] = {}
    for (model, mig), group in by_model.items():
        busy = [g for g in group if g.busy]
        peers_of[model, mig] = len(busy)
        if len(busy) < th.straggler_min_peers:
            continue  # no median worth the name: say nothing
        for measure in MIG_MEASURES if mig else MEASURES:
            means = [
                m
                for g in busy
                if (m := _mean(_readings((s for s in g.series if _load(s) >= th.busy_util_pct), measure.field)))
                is not None
            ]
            if len(means) < th.straggler_min_peers:
                continue
            median = statistics.median(means)
            if median <= 0:
                continue
            floor = measure.floor(median, th)
            for g in group:
                lag = _lag(g, measure, median, floor, th)
                if lag is not None:
                    lags.setdefault((g.node.host, model, mig), []).append(lag)
    for key in sorted(lags):
        _, model, mig = key
        yield _straggler_finding(lags[key], peers_of[model, mig], model, lang, mig=mig)


def _lag(g: _Gpu, measure: _Measure, median: float, floor: float, th: Thresholds) -> _Lag | None:
    """`g` below `floor` by `measure` in most of its window's readings while it works; None when not."""
    if g.idle or len(g.series) < th.fleet_min_samples:
        return None  # an idle GPU is not slow, and a few readings are a moment
    working = [s for s in g.series if _load(s) >= th.idle_util_pct]
    values = _readings(working, measure.field)
    below = sum(1 for v in values if v < floor)
    share = below / len(g.series)
    if not values or share < th.sustained_share:
        return None
    return _Lag(gpu=g, measure=measure, value=sum(values) / len(values), median=median, share=share)


def _straggler_finding(lags: Sequence[_Lag], peers: int, model: str, lang: str, *, mig: bool) -> FleetFinding:
    """One finding per node (and model): its slow GPUs, by each measure they lag in, and why from its findings."""
    node = lags[0].gpu.node
    indices = sorted({lag.gpu.index for lag in lags})
    span = max(lag.gpu.span_s for lag in lags)
    causes = _causes(node.findings, indices)
    cause_words = text("fleet.and", lang).join(_cause_word(f.rule, lang) for f in causes) or text(
        "fleet.no_cause", lang
    )
    evidence: list[Evidence] = [ev("gpu_model", model, window="static"), ev("busy_peers", peers, window="static")]
    lag_words: list[str] = []
    for measure in MEASURES:
        of_measure = [lag for lag in lags if lag.measure is measure]
        if not of_measure:
            continue
        name = _NAMES[measure.field]
        value = sum(lag.value for lag in of_measure) / len(of_measure)
        median = of_measure[0].median
        lag_words.append(text(f"fleet.lag.{name}", lang, amount=measure.lag(value, median)))
        evidence += [
            ev(name, rounded(value), measure.unit, "mean"),
            ev(f"median_{name}", rounded(median), measure.unit, "mean"),
        ]
    share = max(lag.share for lag in lags)
    evidence.append(ev("slow_share", round(100.0 * share), "%", "share"))
    named = ", ".join(f"{f.rule} {gpu_list(f.gpus, lang)}" if f.gpus else f.rule for f in causes)
    evidence.append(ev("node_findings", named or text("fleet.no_cause", lang), window=""))
    return FleetFinding(
        rule=STRAGGLER,
        severity=FLEET_SEVERITY[STRAGGLER],
        hosts=(node.host,),
        gpus=tuple((node.host, i) for i in indices),
        title=text(
            "straggler.title.mig" if mig else "straggler.title",
            lang,
            where=_where(node.host, indices, lang),
            peers=peers,
            model=model,
            lag=text("fleet.and", lang).join(lag_words),
            seconds=span,
            cause=cause_words,
        ),
        advice=text("straggler.advice.mig" if mig else "straggler.advice", lang),
        evidence=tuple(localize(e, lang, span) for e in evidence),
    )


def _causes(findings: Iterable[Finding], gpus: Sequence[int]) -> list[Finding]:
    """The node's open findings that slow these GPUs (or the whole node), most telling first, one per rule."""
    chosen: dict[str, Finding] = {}
    for f in findings:
        if f.is_open and f.rule in _CAUSE_RANK and (not f.gpus or set(f.gpus) & set(gpus)):
            chosen.setdefault(f.rule, f)
    return sorted(chosen.values(), key=lambda f: (-f.severity, _CAUSE_RANK[f.rule]))


def _cause_word(rule: str, lang: str) -> str:
    key = f"{rule}.cause"
    return text(key, lang) if has_text(key) else rule


def _where(host: str, gpus: Sequence[int], lang: str) -> str:
    key = "fleet.where.plural" if len(gpus) > 1 else "fleet.where"
    return text(key, lang, host=host, gpus=fmt_ranges(gpus))


# -- idle_allocated ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Held:
    """A GPU held by a process and idle for its newest readings (`run`)."""

    gpu: _Gpu
    run: tuple[GpuSample, ...]
    memory_bytes: int  # what its processes hold now; 0 when the driver does not say

    @property
    def idle_s(self) -> float:
        return self.run[-1].timestamp - self.run[0].timestamp


def _idle_allocated(gpus: Sequence[_Gpu], th: Thresholds, lang: str) -> Iterable[FleetFinding]:
    """GPUs that held a compute process and did nothing for the last `idle_allocation_s` or more, one finding per
    node and owner. A GPU without a process is never named: nothing holds it."""
    held: dict[tuple[str, str], list[_Held]] = {}
    for g in gpus:
        run = _idle_run(g.series, th)
        if not run or run[-1].timestamp - run[0].timestamp < th.idle_allocation_s:
            continue
        holders = _compute(run[-1])
        owner = _holder(holders, run[-1].pod, g, lang)
        memory = sum(p.used_memory_bytes or 0 for p in holders)
        held.setdefault((g.node.host, owner), []).append(_Held(g, tuple(run), memory))
    for (host, owner), found in sorted(held.items(), key=lambda item: item[0]):
        indices = [h.gpu.index for h in found]
        idle_s = min(h.idle_s for h in found)
        memory = sum(h.memory_bytes for h in found)
        util = _mean([v for h in found for v in _readings(h.run, "utilization_gpu_pct")])
        evidence = [
            ev("owner", owner, window=""),
            ev("idle_span", round(idle_s), "s", "static"),
            ev("gpu_util", rounded(util), "%", "mean"),
            ev("process_memory", rounded(memory, _GIB) if memory else None, "GiB"),
        ]
        yield FleetFinding(
            rule=IDLE_ALLOCATED,
            severity=FLEET_SEVERITY[IDLE_ALLOCATED],
            hosts=(host,),
            gpus=tuple((host, i) for i in indices),
            title=text(
                "idle_allocated.title",
                lang,
                where=_where(host, indices, lang),
                owner=owner,
                duration=fmt_duration(idle_s),
            ),
            advice=text("idle_allocated.advice", lang),
            evidence=tuple(localize(e, lang, round(idle_s)) for e in evidence),
        )


def _hung_jobs(nodes: Sequence[NodeWindow], lang: str) -> Iterable[FleetFinding]:
    """One finding per job some node found stopped, its nodes' findings joined by the job's key: the rank stuck
    outside the collective named with its node, wherever it runs; or, where every rank read waits, said so."""
    jobs: dict[str, list[tuple[str, Finding]]] = {}
    for node in nodes:
        for finding in node.findings:
            if finding.rule == _JOB_STOPPED:
                key = _evidence(finding, "job") or f"{node.host} {finding.gpus}"
                jobs.setdefault(key, []).append((node.host, finding))
    for job, found in sorted(jobs.items()):
        hosts = tuple(sorted({host for host, _ in found}))
        stuck = next(((host, f) for host, f in found if f.variant == "rank"), None)
        held_s = min(_seconds(f) for _, f in found)
        params: dict[str, object] = {"hosts": ", ".join(hosts), "duration": fmt_duration(held_s)}
        evidence = [ev("job", job, window=""), ev("stopped_for", round(held_s), "s", "static")]
        if stuck is not None:
            name = _evidence(stuck[1], "stuck_rank") or "?"
            params |= {"host": stuck[0], "stuck": name}
            evidence.append(ev("stuck_rank", f"{name} on {stuck[0]}", window=""))
        variant = "rank" if stuck is not None else "elsewhere"
        yield FleetFinding(
            rule=HUNG_JOB,
            severity=FLEET_SEVERITY[HUNG_JOB],
            hosts=hosts,
            gpus=tuple(sorted((host, i) for host, f in found for i in f.gpus)),
            title=text(f"hung_job.title.{variant}", lang, **params),
            advice=text(f"hung_job.advice.{variant}", lang, **params),
            evidence=tuple(localize(e, lang, round(held_s)) for e in evidence),
        )


def _seconds(finding: Finding) -> float:
    """How long a node's `job_stopped` says nothing progressed (its `stopped_for`, else how long it is open)."""
    value = next((e.value for e in finding.evidence if e.key == "stopped_for"), None)
    return float(value) if isinstance(value, int | float) else finding.duration_s


def _evidence(finding: Finding, key: str) -> str | None:
    """The value of a finding's evidence `key`, as text; None where it has none."""
    value = next((e.value for e in finding.evidence if e.key == key), None)
    return None if value is None else str(value)


def _holder(holders: Sequence[GpuProcess], pod: str | None, g: _Gpu, lang: str) -> str:
    """Who holds a GPU or a MIG instance: its processes' owner, else (no process list: dcgm-exporter) the pod its
    series are labelled with."""
    if holders or pod is None:
        return _owner(holders, g.node.snapshots[-1].host.processes, lang)
    return text("fleet.owner.pod", lang, pod=pod)


def _idle_instances(gpus: Sequence[_Gpu], th: Thresholds, lang: str) -> Iterable[FleetFinding]:
    """MIG instances that held a compute process and did nothing for the last `idle_allocation_s` or more, one
    finding per node and owner, as `_idle_allocated` names whole GPUs. Where no process is listed
    (dcgm-exporter), the pod its series are labelled with holds it. An instance with neither is never named:
    nothing holds it (nor does its GPU's pod, which says nothing of which instance it was given)."""
    held: dict[tuple[str, str], list[_HeldInstance]] = {}
    for g in gpus:
        if not g.mig:
            continue
        latest = g.series[-1]
        assert latest.mig is not None  # g.mig: split at its latest reading
        for device in latest.mig.gpu_instances():
            gi = device.gpu_instance_id
            assert gi is not None  # gpu_instances() holds only instances with an id
            run = _instance_idle_run(g.series, gi, th)
            if not run or run[-1][0].timestamp - run[0][0].timestamp < th.idle_allocation_s:
                continue
            holders = _instance_compute(*run[-1])
            owner = _holder(holders, run[-1][1].pod, g, lang)
            memory = sum(p.used_memory_bytes or 0 for p in holders)
            held.setdefault((g.node.host, owner), []).append(_HeldInstance(g, gi, run[-1][1], tuple(run), memory))
    for (host, owner), found in sorted(held.items(), key=lambda item: item[0]):
        found.sort(key=lambda h: (h.gpu.index, h.gpu_instance_id))
        idle_s = min(h.idle_s for h in found)
        memory = sum(h.memory_bytes for h in found)
        activity = _mean([a for h in found for _, d in h.run if (a := _activity(d)) is not None])
        evidence = [
            ev("owner", owner, window=""),
            ev("idle_span", round(idle_s), "s", "static"),
            ev("instance_activity", rounded(activity), "%", "mean"),
            ev("process_memory", rounded(memory, _GIB) if memory else None, "GiB"),
        ]
        names = text("fleet.and", lang).join(
            text("fleet.instance", lang, gpu=h.gpu.index, label=h.device.label) for h in found
        )
        yield FleetFinding(
            rule=IDLE_ALLOCATED,
            severity=FLEET_SEVERITY[IDLE_ALLOCATED],
            hosts=(host,),
            gpus=tuple((host, i) for i in sorted({h.gpu.index for h in found})),
            title=text(
                "idle_allocated.title.mig",
                lang,
                where=text("fleet.where.instances", lang, host=host, instances=names),
                owner=owner,
                duration=fmt_duration(idle_s),
            ),
            advice=text("idle_allocated.advice.mig", lang),
            evidence=tuple(localize(e, lang, round(idle_s)) for e in evidence),
            mig_instances=tuple((host, h.gpu.index, h.gpu_instance_id) for h in found),
        )


@dataclass(frozen=True, slots=True)
class _HeldInstance:
    """A MIG instance held by a process and idle for its GPU's newest readings (`run`: the GPU's sample and the
    instance in it)."""

    gpu: _Gpu
    gpu_instance_id: int
    device: MigDevice  # as the latest reading has it, to name it
    run: tuple[tuple[GpuSample, MigDevice], ...]
    memory_bytes: int  # what its processes hold now; 0 when the driver does not say

    @property
    def idle_s(self) -> float:
        return self.run[-1][0].timestamp - self.run[0][0].timestamp


def _instance_idle_run(series: Sequence[GpuSample], gi: int, th: Thresholds) -> list[tuple[GpuSample, MigDevice]]:
    """The newest readings, back from the latest, in which instance `gi` existed, a compute process (or, where no
    process is listed, a pod by the exporter's labels) held it and it did nothing: its engine and SM activity,
    where reported, under `idle_util_pct`, and one of them reported. Not reported is not idle."""
    run: list[tuple[GpuSample, MigDevice]] = []
    for s in reversed(series):
        device = None if s.mig is None else s.mig.device_of(gi)
        if device is None:
            break
        active = [v for v in (device.gr_engine_active_pct, device.sm_active_pct) if v is not None]
        held = _instance_compute(s, device) or device.pod is not None
        if not held or not active or any(v >= th.idle_util_pct for v in active):
            break
        run.append((s, device))
    run.reverse()
    return run


def _instance_compute(parent: GpuSample, device: MigDevice) -> tuple[GpuProcess, ...]:
    """An instance's compute processes: its own list, else its GPU's processes that run in it."""
    gi = device.gpu_instance_id
    processes = device.processes or tuple(p for p in parent.processes if p.gpu_instance_id == gi)
    return tuple(p for p in processes if p.kind == "compute")


def _compute(sample: GpuSample) -> tuple[GpuProcess, ...]:
    return tuple(p for p in sample.processes if p.kind == "compute")


def _idle_run(series: Sequence[GpuSample], th: Thresholds) -> list[GpuSample]:
    """The newest readings, back from the latest, in which a compute process (or, where no process is listed, a
    pod by the exporter's labels) held the GPU and it did nothing: utilization, and SM or engine activity where
    reported, under `idle_util_pct`. Not reported is not idle."""
    run: list[GpuSample] = []
    for s in reversed(series):
        util = s.utilization_gpu_pct
        active = [v for v in (s.sm_active_pct, s.gr_engine_active_pct) if v is not None]
        if (
            not (_compute(s) or s.pod is not None)
            or util is None
            or util >= th.idle_util_pct
            or any(v >= th.idle_util_pct for v in active)
        ):
            break
        run.append(s)
    run.reverse()
    return run


def _owner(held_by: Sequence[GpuProcess], processes: Sequence[ProcSample], lang: str) -> str:
    """Who holds the GPU: its pods, else its Slurm jobs, else its processes by name and PID."""
    by_pid = {p.pid: p for p in processes}
    words: list[str] = []
    for gpu_proc in held_by:
        proc = by_pid.get(gpu_proc.pid)
        word = _owner_word(gpu_proc.pid, proc, lang)
        if word not in words:
            words.append(word)
    return text("fleet.and", lang).join(words)


def _owner_word(pid: int, proc: ProcSample | None, lang: str) -> str:
    if proc is None:
        return text("fleet.owner.pid", lang, pid=pid)
    if proc.pod:
        return text("fleet.owner.pod", lang, pod=f"{proc.namespace}/{proc.pod}" if proc.namespace else proc.pod)
    if proc.job_id:
        if proc.user:
            return text("fleet.owner.job_user", lang, job=proc.job_id, user=proc.user)
        return text("fleet.owner.job", lang, job=proc.job_id)
    return text("fleet.owner.process", lang, name=proc.name or "?", pid=pid)
