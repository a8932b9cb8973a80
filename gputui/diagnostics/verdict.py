"""One answer first: the verdict on what bounds the job, worked out from the open findings and the window.

Each rule names the verdict class its finding argues for (`Rule.bound`). A GPU takes the most serious class
among its open findings (degraded, stopped, then throttled, interconnect, input-bound, contended, inefficient,
memory-bandwidth-bound). A GPU with none is idle when it does nothing, GPU-bound when it is busy (the machine
delivers, so the speed must come from the job), and `underused` in between: it waits, and nothing found on
this machine explains why, which is said as such rather than passed off as GPU-bound, with what the job's stack
samples show instead (rules/stacks.py), or why none were read. Findings above info that
argue for no class are named beside GPU-bound, underused and idle, so the verdict never says "nothing found"
(or "no job" and nothing more) over an open warning. GPUs that differ make a `mixed` verdict with one group per
class; idle GPUs beside busy ones are left out of it (a job on four GPUs of eight is not "mixed").

The verdict shown and the findings agree at every moment (VerdictTracker): a verdict that says nothing holds a
GPU back gives way on the tick a finding above info opens on that GPU, and any other verdict the readings no
longer support gives way `hold_s` after it stopped being this instant's, so a value at a threshold does not flap
it and a job that changes is not told late.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from gputui.diagnostics.catalog import has_text, localize, text
from gputui.diagnostics.figures import figures_of, mean_of
from gputui.diagnostics.findings import Evidence, Finding, Severity, instances_to_list
from gputui.diagnostics.instances import instance_name, instance_of, split
from gputui.diagnostics.rules import ALL_RULES
from gputui.diagnostics.rules.base import Window, ev, rounded
from gputui.diagnostics.rules.software import NVML_UNAVAILABLE
from gputui.diagnostics.rules.stacks import Stack, main_process, read_stack, shares_text, stack_evidence, why_unread
from gputui.diagnostics.thresholds import Thresholds
from gputui.formatting import fmt_pct, fmt_ranges

# Most serious first: a GPU with findings of several classes takes the first.
RANKED: tuple[str, ...] = (
    "degraded",
    "stopped",
    "throttled",
    "interconnect",
    "input_bound",
    "contended",
    "inefficient",
    "memory_bound_gpu",
    "underused",
    "gpu_bound",
    "idle",
)
CLASSES: tuple[str, ...] = (*RANKED, "mixed", "unknown")
BOUNDS: dict[str, str] = {rule.id: rule.bound for rule in ALL_RULES if rule.bound is not None}
BOUNDS[NVML_UNAVAILABLE] = "degraded"
SEVERITIES: dict[str, Severity] = {rule.id: rule.severity for rule in ALL_RULES}
# The classes a GPU takes when no finding argues for one: findings above info are then named beside them.
_UNBOUND = ("underused", "gpu_bound", "idle")
# Causes that explain only part of a GPU's waiting: each host<->device copy of a rank on the far socket is slower.
_PARTIAL = frozenset({"numa_mismatch"})
# Classes that say a GPU waits: a finding never argues for them on a GPU that is busy anyway.
_WAITING = ("input_bound", "underused")
# Causes that are others' work taking what the job needs: named before the job's own of the same severity, so
# "other processes on its CPUs" reads before the data loading they slow.
_TAKEN_BY_OTHERS = frozenset({"cpu_contention"})


@dataclass(frozen=True, slots=True)
class Verdict:
    """What bounds the job: a class (`gpu_bound`, `input_bound`, ...), the GPUs it holds for, a sentence, the
    numbers behind it; for `mixed`, one verdict per group of GPUs alike. `since`: when it took over."""

    cls: str
    label: str
    gpus: tuple[int, ...]
    summary: str
    line: str  # 'GPU-bound: all 8 GPUs 95% busy at ...': how the pane and `diagnose` print it
    evidence: tuple[Evidence, ...] = ()
    groups: tuple[Verdict, ...] = ()
    since: float = 0.0
    short: str = ""  # the group's few words inside a `mixed` verdict's sentence
    # The MIG instances it holds for, as (GPU index, GPU instance id), their GPUs in `gpus`: a MIG GPU is judged
    # per instance, each instance as a GPU of its own.
    mig_instances: tuple[tuple[int, int], ...] = ()

    @property
    def key(self) -> tuple[object, ...]:
        """What makes two verdicts the same for the hysteresis: the classes and their GPUs, not the numbers."""
        return (self.cls, self._units_key, tuple((g.cls, g._units_key) for g in self.groups))

    @property
    def _units_key(self) -> object:
        return (self.gpus, self.mig_instances) if self.mig_instances else self.gpus


def verdict_to_dict(verdict: Verdict) -> dict[str, Any]:
    """The JSON shape of `diagnose --json`'s `verdict` (and of recordings and the report)."""
    out: dict[str, Any] = {
        "class": verdict.cls,
        "label": verdict.label,
        "gpus": list(verdict.gpus),
        "summary": verdict.summary,
        "evidence": [{"key": e.key, "label": e.label, "value": e.value, "unit": e.unit} for e in verdict.evidence],
        "since": verdict.since,
    }
    if verdict.mig_instances:
        out["mig_instances"] = instances_to_list(verdict.mig_instances)
    if verdict.groups:
        out["groups"] = [verdict_to_dict(g) for g in verdict.groups]
    return out


# A finding as a verdict's words name it: its rule, its variant (which cause its words give) and its GPUs. Two
# findings of one rule are two causes: a rank waiting in a collective beside another running its own Python.
Cause = tuple[str, str, tuple[int, ...]]


@dataclass(frozen=True, slots=True)
class Judgement:
    """What bounds the job this instant, before it is put into words: the classes and their GPUs (`key`, what
    the hysteresis compares) and how to word them. The words (means, sentences, evidence) are made only when
    the verdict shown changes or is renewed, not on every tick. `quiet`: the units (GPUs, MIG instances) it
    says nothing holds back; `flagged`: those a finding above info is open on. A verdict shown that is quiet
    on a unit now flagged gives way at once."""

    key: tuple[object, ...]
    words: Callable[[], Verdict]
    quiet: frozenset[int] = frozenset()
    flagged: frozenset[int] = frozenset()
    named: frozenset[Cause] = frozenset()  # the findings its words name
    # (unit, when its main process's stacks were read) for each unit whose words say what its stacks show, or why
    # there are none: a reading that arrives (or is refused) is said on its tick, like a cause
    read: frozenset[tuple[int, float]] = frozenset()
    # The figures its words and evidence state (each group's means, as evidence rounds them, and the window's
    # seconds): a figure that changes renews the words on its tick, so the verdict never states another value of
    # a figure than a finding beside it (diagnostics/figures.py)
    stated: tuple[object, ...] = ()
    # Its classes and their units, the findings that argue for each unit's class, and the units a finding explains:
    # what a verdict held over a newer judgement is worded from again, with the newer window's figures.
    parts: tuple[tuple[str, tuple[int, ...]], ...] = ()
    causes: Mapping[int, Sequence[Finding]] = field(default_factory=dict)
    explained: frozenset[int] = frozenset()
    # This instant's words and figures for another judgement's classes (None where there are no figures): a verdict
    # held for `hold_s` keeps its classes and causes, never figures older than the findings beside it.
    reword: Callable[[Judgement], Verdict] | None = None
    restate: Callable[[Judgement], tuple[object, ...]] | None = None


def judge(window: Window, findings: Sequence[Finding], th: Thresholds, lang: str = "en") -> Verdict:
    """The verdict of this instant in words, before hysteresis."""
    return classify(window, findings, th, lang).words()


def classify(
    window: Window,
    findings: Sequence[Finding],
    th: Thresholds,
    lang: str = "en",
    watched: Sequence[Finding] = (),
) -> Judgement:
    """The verdict of this instant, before hysteresis and before words. With MIG, `window` holds each MIG GPU as
    its instances (instances.py), so each instance is judged as a GPU: by its own activity (unknown, not idle,
    when GPM does not give it), its own findings, and those on its GPU's own readings (heat, power...).

    `watched`: conditions above info seen but not yet held long enough to open their findings (the engine's
    pending ones, as findings not yet shown). A group that names no finding names them as watched instead of
    saying nothing holds it back: at 89 C with the clock slowing, "nothing on this machine holds them back" would
    be the one thing that is not known yet."""
    now = window.latest.timestamp
    span = now - window.snapshots[0].timestamp
    need = th.window_s / 2
    if any(f.rule == NVML_UNAVAILABLE for f in findings):
        return Judgement(("degraded", (), ()), lambda: unavailable_verdict(lang, now))
    if span < need:
        return _warming_up(findings, max(1, math.ceil(need - span)), len(window.latest.gpus), lang, now)
    everyone = tuple(sample.index for sample in window.latest.gpus)
    classes: dict[int, str] = {}
    causes: dict[int, list[Finding]] = {}
    explained: set[int] = set()  # GPUs whose class a finding argues for
    flagged: set[int] = set()  # GPUs a finding above info is open on
    jobs = {sample.index for sample in window.gpus() if window.pids(sample)}
    for index in everyone:
        util = window.mean(index, "utilization_gpu_pct")
        mine = [f for f in findings if _bounds(f, index, util, th, index in jobs)]
        open_here = [f for f in findings if f.severity > Severity.INFO and _concerns(f, index)]
        if open_here:
            flagged.add(index)
        if mine:
            best = min(RANKED.index(BOUNDS[f.rule]) for f in mine)
            classes[index] = RANKED[best]
            causes[index] = [f for f in mine if RANKED.index(BOUNDS[f.rule]) == best]
            explained.add(index)
        elif util is not None:
            classes[index] = _unbound_class(window, index, util, th)
            causes[index] = open_here
    if not classes:
        return _warming_up(findings, 1, len(everyone), lang, now)
    watching = {i: [f for f in watched if _concerns(f, i)] for i in everyone}
    busy = {i: c for i, c in classes.items() if c != "idle"} or classes
    order = sorted(set(busy.values()), key=RANKED.index)
    parts = tuple((cls, tuple(i for i in everyone if busy.get(i) == cls)) for cls in order)
    # The findings its words name (the causes of a class, or those noted beside GPU-bound, underused and idle): one
    # that opens or closes renews the words at once, as the class itself needs no holding to stay what it is.
    named = frozenset(
        (f.rule, f.variant, f.gpus) for _, gpus in parts for i in gpus for f in (*causes[i], *watching[i])
    )
    # The GPUs it says nothing holds back: those of a GPU-bound, underused or idle group that names no finding.
    quiet = frozenset(i for cls, gpus in parts if cls in _UNBOUND and not any(causes[g] for g in gpus) for i in gpus)
    read = _stacks_read(window, tuple(i for cls, gpus in parts if cls in _WAITING or cls == "gpu_bound" for i in gpus))
    stated = tuple(_stated(window, gpus) for _, gpus in parts)

    units = set(everyone)

    def words_of(
        held: tuple[tuple[str, tuple[int, ...]], ...], why: Mapping[int, Sequence[Finding]], by: frozenset[int]
    ) -> Verdict:
        def group(cls: str, gpus: tuple[int, ...]) -> Verdict:
            return _group(window, th, cls, gpus, why, any(i in by for i in gpus), everyone, lang, watching)

        if len(held) == 1:
            return group(*held[0])
        groups = tuple(group(cls, gpus) for cls, gpus in held)
        summary = text("verdict.separator", lang).join(f"{g.label} {g.short}" for g in groups)
        shown = tuple(sorted(i for _, gpus in held for i in gpus))
        return _make("mixed", shown, {"groups": summary}, (), lang, now, groups=groups)

    def reword(held: Judgement) -> Verdict:
        return words_of(held.parts, held.causes, held.explained)

    def restate(held: Judgement) -> tuple[object, ...]:
        if not all(i in units for _, gpus in held.parts for i in gpus):
            return held.stated  # a GPU it names is gone: its words stay as they were
        return tuple(_stated(window, gpus) for _, gpus in held.parts)

    if len(parts) == 1:
        cls, gpus = parts[0]
        key: tuple[object, ...] = (cls, _units_key(gpus))
    else:
        keyed = tuple((cls, _units_key(gpus)) for cls, gpus in parts)
        key = ("mixed", _units_key(tuple(sorted(busy))), keyed)
    by = frozenset(explained)
    return Judgement(
        key,
        lambda: words_of(parts, causes, by),
        quiet,
        frozenset(flagged),
        named,
        read,
        stated,
        parts=parts,
        causes=causes,
        explained=by,
        reword=reword,
        restate=restate,
    )


def _warming_up(findings: Sequence[Finding], seconds: int, gpus: int, lang: str, now: float) -> Judgement:
    """`unknown` while the window is too short for a verdict; a finding above info already open (uncorrected memory
    errors, a driver too old for the job's CUDA) is named in it, so "not known yet" never stands above a critical
    finding as though nothing were known."""
    opened = [f for f in findings if f.severity > Severity.INFO]
    if not opened:
        return Judgement(("unknown", (), ()), lambda: _make("unknown", (), {"seconds": seconds}, (), lang, now))
    params = {"seconds": seconds, "causes": _causes(opened, gpus, lang)}
    named = frozenset((f.rule, f.variant, f.gpus) for f in opened)
    return Judgement(
        ("unknown", (), ()), lambda: _make("unknown", (), params, (), lang, now, variant="open"), named=named
    )


def _stacks_read(w: Window, units: tuple[int, ...]) -> frozenset[tuple[int, float]]:
    """(unit, when its main process's stacks were last read) for those of `units` whose were."""
    samples = {g.index: g for g in w.gpus()}
    procs = ((i, main_process(w, w.pids(samples[i]))) for i in units if i in samples)
    return frozenset((i, p.activity.taken_at) for i, p in procs if p is not None and p.activity is not None)


def _group_means(w: Window, gpus: tuple[int, ...]) -> tuple[float | None, ...]:
    """A group's figures, the means of its GPUs' (diagnostics/figures.py), which their findings state too: busy,
    clock as a share of its max, SM, tensor and DRAM activity."""
    mine = [figures_of(w, i) for i in gpus]
    return (
        mean_of([f.busy_pct for f in mine]),
        mean_of([f.clock_of_max_pct for f in mine]),
        mean_of([f.sm_active_pct for f in mine]),
        mean_of([f.tensor_active_pct for f in mine]),
        mean_of([f.dram_bw_pct for f in mine]),
    )


def _stated(w: Window, gpus: tuple[int, ...]) -> tuple[object, ...]:
    """A group's figures as its verdict states them (`_group`): what renews its words when it changes."""
    return (*(rounded(m) for m in _group_means(w, gpus)), w.span_s)


def _units_key(units: tuple[int, ...]) -> object:
    """Units as Verdict.key names them: GPU indices, or with MIG instances (GPUs, instances)."""
    gpus, instances = split(units)
    return (gpus, instances) if instances else units


def _unbound_class(w: Window, index: int, util: float, th: Thresholds) -> str:
    """A GPU no finding explains: idle, busy (the machine delivers), or waiting for a reason not seen here. The
    window's mean decides, unless the last few seconds were all idle or all busy: the job changed."""
    recent = w.recent(index, "utilization_gpu_pct", th.verdict_settle_s)
    if util < th.idle_util_pct or (recent and max(recent) < th.idle_util_pct):
        return "idle"
    return "gpu_bound" if util >= th.verdict_busy_util_pct or w.busy_now(index, th) else "underused"


def _concerns(finding: Finding, index: int) -> bool:
    """A finding about GPU `index`, or about the whole machine (a quota, swapping, a driver mismatch). For a MIG
    instance: one about that instance, or about its GPU as a whole (heat, power, PCIe...)."""
    if not finding.gpus:
        return True
    instance = instance_of(index)
    if instance is None:
        return index in finding.gpus
    return instance[0] in finding.gpus and (not finding.mig_instances or instance in finding.mig_instances)


def _bounds(finding: Finding, index: int, util: float | None, th: Thresholds, holds_job: bool) -> bool:
    """Whether a finding argues for GPU `index`'s class. Not one its rule let down to a milder severity (P2P
    that works but crosses sockets, a rank that only drifts to the far socket); not `input_bound` for a GPU
    that is busy anyway (a rank on the far socket that still keeps its GPU 90% busy, the busiest GPU of an
    uneven job, are worth a finding, not the verdict); and a finding about the whole machine (a CPU quota,
    swapping) only for GPUs a job holds."""
    cls = BOUNDS.get(finding.rule)
    if cls is None or not _concerns(finding, index) or (not finding.gpus and not holds_job):
        return False
    if finding.severity < SEVERITIES.get(finding.rule, finding.severity):
        return False
    return not (cls in _WAITING and util is not None and util >= th.verdict_busy_util_pct)


def _group(
    w: Window,
    th: Thresholds,
    cls: str,
    gpus: tuple[int, ...],
    causes: Mapping[int, Sequence[Finding]],
    explained: bool,
    everyone: tuple[int, ...],
    lang: str,
    watching: dict[int, list[Finding]],
) -> Verdict:
    util, clock, sm, tensor, dram = _group_means(w, gpus)
    own = list({id(f): f for i in gpus for f in causes.get(i, ())}.values())
    params: dict[str, object] = {
        "gpus": _gpus_text(w, gpus, everyone, lang),
        "util": fmt_pct(util),
        "clock": fmt_pct(clock),
        "lost": fmt_pct(None if clock is None else 100.0 - clock),
        "sm": fmt_pct(sm),
        "tensor": fmt_pct(tensor),
        "dram": fmt_pct(dram),
        "causes": _causes(own, len(gpus), lang),
        "seconds": w.span_s,
    }
    variant = ""
    watched = list({id(f): f for i in gpus for f in watching.get(i, ())}.values())
    if cls in _UNBOUND and own:
        # A finding explains the waiting (GPUs waiting on the busiest one), or what is open is named beside it.
        variant = "cause" if explained else "open"
    elif cls in _UNBOUND and watched:
        # Nothing open yet, but something seen that may hold: said as watched, never as "nothing holds them back".
        variant, params["causes"] = "watching", _causes(watched, len(gpus), lang)
    stack = _first_stack(w, th, gpus) if cls in _WAITING or cls == "gpu_bound" else None
    if cls == "gpu_bound" and stack is not None and stack.lead != "gpu_sync":
        stack = None  # a busy GPU's verdict cites the stack where it confirms it: the step waits on the GPU
    if cls == "underused" and not own and not watched:
        variant = _unexplained(w, th, gpus, stack, params)
    if cls == "idle" and len(gpus) > 1 and set(gpus) == set(everyone):
        variant, params["count"] = f"all.{variant}" if variant else "all", len(gpus)
    evidence = [ev("gpu_util", rounded(util), "%", "mean"), ev("clock_of_max", rounded(clock), "%", "mean")]
    if sm is not None:
        evidence += [ev("sm_active", rounded(sm), "%", "mean"), ev("tensor_active", rounded(tensor), "%", "mean")]
    if cls == "memory_bound_gpu":
        evidence.append(ev("dram_bw", rounded(dram), "%", "mean"))
    if stack is not None:
        evidence += stack_evidence(stack)
    span = w.span_s
    words = tuple(localize(e, lang, span) for e in evidence)
    return _make(cls, gpus, params, words, lang, w.latest.timestamp, variant=variant, with_short=True)


def _first_stack(w: Window, th: Thresholds, gpus: tuple[int, ...]) -> Stack | None:
    """The fresh stack reading of the first of these GPUs' main processes that has one."""
    samples = {g.index: g for g in w.gpus()}
    for index in gpus:
        sample = samples.get(index)
        stack = read_stack(w, th, main_process(w, w.pids(sample))) if sample is not None else None
        if stack is not None:
            return stack
    return None


def _unexplained(
    w: Window, th: Thresholds, gpus: tuple[int, ...], stack: Stack | None, params: dict[str, object]
) -> str:
    """Underused with no cause found here: what the job's stack samples show instead (waiting for the GPU, or
    no one wait), or why there are none, as the summary's variant; its placeholders go into `params`. "Look inside
    the job" stays only where no stack was read, and says why."""
    if stack is not None:
        params["samples"] = stack.activity.samples
        if stack.lead == "gpu_sync":
            params["share"] = fmt_pct(100 * stack.share)
            return "gpu_sync"
        params["shares"] = shares_text(stack.activity.shares)
        return "stack"
    samples = {g.index: g for g in w.gpus()}
    procs = [main_process(w, w.pids(samples[i])) for i in gpus if i in samples]
    whys = [why for p in procs if p is not None and (why := why_unread(p.activity)) is not None]
    if whys:
        params["why"] = whys[0]
        return "unread"
    return "unsampled" if any(p is not None for p in procs) else ""


def _make(
    cls: str,
    gpus: tuple[int, ...],
    params: dict[str, object],
    evidence: tuple[Evidence, ...],
    lang: str,
    now: float,
    *,
    variant: str = "",
    groups: tuple[Verdict, ...] = (),
    with_short: bool = False,
) -> Verdict:
    suffix = f".{variant}" if variant else ""
    label = text(f"verdict.{cls}", lang)
    summary = text(f"verdict.{cls}.summary{suffix}", lang, **params)
    gpus, instances = split(gpus)
    return Verdict(
        cls=cls,
        label=label,
        gpus=gpus,
        mig_instances=instances,
        summary=summary,
        line=text("verdict.line", lang, label=label, summary=summary),
        evidence=evidence,
        groups=groups,
        since=now,
        short=text(_variant_key(f"verdict.{cls}.short", variant), lang, **params) if with_short else "",
    )


def unavailable_verdict(lang: str = "en", now: float = 0.0) -> Verdict:
    """`degraded` when there is no snapshot to judge because the driver cannot be read."""
    causes = text(f"{NVML_UNAVAILABLE}.cause", lang)
    return _make("degraded", (), {"causes": causes}, (), lang, now)


def _causes(findings: Sequence[Finding], gpus: int, lang: str) -> str:
    """The findings' causes in words, each once: the most severe first; among those of one severity, others' work
    that takes what the job needs (cpu_contention) before the job's own, then what the GPUs wait on before what
    only slows each copy (a rank on the far socket), then those that cover more of the group's GPUs (a finding
    about the whole machine covers them all), then the first to open. 'heat, the power cap'. A rule's variant
    has words of its own where the cause differs (starvation_cpu: the main process, too few workers, the
    quota...)."""
    ranked = sorted(
        findings,
        key=lambda f: (
            -f.severity,
            f.rule not in _TAKEN_BY_OTHERS,
            f.rule in _PARTIAL,
            -(len(f.gpus) or gpus),
            f.started_at,
        ),
    )
    return ", ".join(dict.fromkeys(_cause_words(f, lang) for f in ranked))


def _cause_words(finding: Finding, lang: str) -> str:
    """The few words a rule has for its cause, its placeholders filled from the finding's params (a producer that
    cannot keep up, by its name; "writing checkpoints (26% of the main thread's samples)"); a finding no rule made (a
    probe's result) by its title."""
    key = _variant_key(f"{finding.rule}.cause", finding.variant)
    return text(key, lang, **dict(finding.params)) if has_text(key) else finding.title


def _variant_key(key: str, variant: str) -> str:
    """`key.variant` where that has words of its own, else `key`."""
    return f"{key}.{variant}" if variant and has_text(f"{key}.{variant}") else key


def gpu_list(gpus: Sequence[int], lang: str = "en") -> str:
    """'GPU 1', 'GPUs 0-3,6': a list of GPUs as the verdict, the fleet view and the alerts all write it."""
    return text("verdict.gpus.one" if len(gpus) == 1 else "verdict.gpus.some", lang, list=fmt_ranges(gpus))


def _gpus_text(w: Window, gpus: tuple[int, ...], everyone: tuple[int, ...], lang: str) -> str:
    whole = tuple(i for i in gpus if instance_of(i) is None)
    if len(whole) == len(gpus):
        if len(gpus) > 1 and set(gpus) == set(everyone):
            return text("verdict.gpus.all", lang, count=len(gpus))
        return gpu_list(gpus, lang)
    # MIG instances by name, each apart ("GPU 0 / 3g.40gb (GI 2)"), but a GPU all of whose instances are alike is
    # named once, so eight split GPUs read as one phrase and not sixteen.
    samples = {g.index: g for g in w.latest.gpus}
    chosen = set(gpus)
    parents = {pair[0] for i in gpus if (pair := instance_of(i)) is not None}
    full = tuple(
        sorted(p for p in parents if all(i in chosen for i in everyone if (pair := instance_of(i)) and pair[0] == p))
    )
    names = [
        text("verdict.gpus.one", lang, list=instance_name(samples[i]))
        for i in gpus
        if i in samples and (pair := instance_of(i)) is not None and pair[0] not in full
    ]
    if full:
        names.insert(0, text(f"verdict.gpus.instances.{_one_or_some(full)}", lang, list=fmt_ranges(full)))
    if whole:
        names.insert(0, text(f"verdict.gpus.{_one_or_some(whole)}", lang, list=fmt_ranges(whole)))
    return text("verdict.list_separator", lang).join(names)


def _one_or_some(gpus: tuple[int, ...]) -> str:
    return "one" if len(gpus) == 1 else "some"


class VerdictTracker:
    """Holds the verdict shown, so that it and the findings agree at every moment:

    - a verdict that says nothing holds a GPU back (GPU-bound, underused or idle naming no finding) gives way on
      the tick a finding above info opens on that GPU;
    - any other gives way once it has not been this instant's verdict for `hold_s`, counted from when it
      stopped being it, not from when the one now judged began: judgements that change on the way (idle,
      underused, then GPU-bound as a job starts) do not add their holds up; a blip shorter than `hold_s` is
      forgotten. What takes over is this instant's verdict, standing since it was first judged;
    - `unknown` gives way at once: there is nothing to flap.

    While the same verdict stands its words are renewed only when what they say changes, and then on that tick:
    a figure they state (diagnostics/figures.py: a finding beside it states the same one, and the two must never
    differ), a cause they name (a finding that opens or closes beside the same class; the findings have their own
    hysteresis, so this does not flap), or a new reading of a job's stacks (what they show, or why none could be
    read). Words that say the same are not made again.
    """

    def __init__(self, hold_s: float) -> None:
        self.hold_s = hold_s
        self._current: Verdict | None = None
        self._current_key: tuple[object, ...] | None = None  # the key of the judgement it was taken from
        self._quiet: frozenset[int] = frozenset()  # the units the current verdict says nothing holds back
        self._named: frozenset[Cause] = frozenset()  # the findings the current verdict's words name
        self._read: frozenset[tuple[int, float]] = frozenset()  # the stack readings its words say
        self._stated: tuple[object, ...] = ()  # the figures its words state
        self._taken: Judgement | None = None  # the judgement the current verdict was worded from
        self._judged: tuple[tuple[object, ...], float] | None = None  # this instant's key, and since when
        self._contradicted: float | None = None  # since when the current verdict is not this instant's

    def update(self, candidate: Judgement, now: float) -> Verdict:
        """The verdict to show after this instant's; `candidate` is put into words only when it is taken."""
        if self._judged is None or self._judged[0] != candidate.key:
            self._judged = (candidate.key, now)
        current = self._current
        if current is not None and candidate.key == self._current_key:
            self._contradicted = None
            # `unknown` counts down each tick; a figure, a cause or a reading that changes is said at once.
            said = (self._named, self._read, self._stated)
            if current.cls == "unknown" or (candidate.named, candidate.read, candidate.stated) != said:
                return self._take(candidate, replace(candidate.words(), since=current.since))
            return current
        if self._contradicted is None:
            self._contradicted = now
        if (
            current is None
            or current.cls == "unknown"
            or self._quiet & candidate.flagged
            or now - self._contradicted >= self.hold_s
        ):
            return self._take(candidate, replace(candidate.words(), since=self._judged[1]))
        return self._restated(candidate, current)

    def _restated(self, candidate: Judgement, current: Verdict) -> Verdict:
        """The verdict held over `candidate`, its figures those of this instant's window where they moved: its
        classes and causes stay for `hold_s`, but a figure it states is the one a finding beside it states."""
        held, restate = self._taken, candidate.restate
        if held is None or not held.parts or restate is None or candidate.reword is None:
            return current
        stated = restate(held)
        if stated != self._stated:
            self._current = replace(candidate.reword(held), since=current.since)
            self._stated = stated
        return self._current or current

    def _take(self, judged: Judgement, verdict: Verdict) -> Verdict:
        """The verdict shown from now, and the key of the judgement it came from: the next judgements are compared
        with that key (a Verdict's own key names its groups, not the findings a judgement notes)."""
        self._current, self._current_key, self._quiet, self._taken = verdict, judged.key, judged.quiet, judged
        self._named, self._read, self._stated = judged.named, judged.read, judged.stated
        self._contradicted = None
        return verdict
