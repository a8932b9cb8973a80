"""The checks of tests/test_gputui_invariants.py: each takes what one tick of a headless session showed (a
`Moment`) and returns what it found wrong, in words that name the tick and the two texts that disagree.

They read the views' own outputs (the verdict, the findings, the text `gputui diagnose` prints, the account) and take
from the code only its vocabulary (the classes and their order, which rule argues for which class, who holds a GPU),
so that a view added or rewritten later is held to the same figures.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field

from gputui.commands.common import EXIT_CRITICAL, EXIT_WARNINGS
from gputui.diagnostics.account import ACCOUNT_CLASSES, IDLE_ALLOCATED, IDLE_FREE, class_label, holders
from gputui.diagnostics.catalog import has_text, severity_label, text
from gputui.diagnostics.findings import Evidence, Finding, Severity
from gputui.diagnostics.instances import instance_of, unit_index
from gputui.diagnostics.tick import Tick
from gputui.diagnostics.verdict import BOUNDS, RANKED, SEVERITIES, Verdict
from gputui.formatting import fmt_duration, fmt_evidence_value, fmt_ranges
from gputui.model import Snapshot

LANG = "en"
HEALTHY = text("cli.none", LANG)  # what `diagnose` prints when it finds nothing above info
# The classes whose words say nothing found here holds the GPUs back (when they name no finding).
UNBOUND = ("gpu_bound", "underused", "idle")
# The classes a finding argues for that say the GPU waits: the verdict leaves them out for a GPU busy anyway.
WAITING = ("input_bound", "underused")
# What the account may not bill a GPU inside the span of a finding above info that argues it is held back (the
# class it argues for, a more serious one, or "not known yet" while the finding confirms itself are all fine).
QUIET_BILLS = ("gpu_bound", "underused", IDLE_ALLOCATED, IDLE_FREE)
# A clock figure in the verdict and one in a finding may differ by this much (percentage points) and still read as
# one figure: the sentence rounds it to a whole percent.
CLOCK_ROUNDING_PP = 1.0
# Two figures of one key and window "as shown": evidence has one decimal, a group's mean of rounded values another.
SHOWN_ROUNDING = 0.1 + 1e-6
# The sentence states a whole percent of a figure its evidence holds to one decimal.
SENTENCE_ROUNDING = 0.55

# A verdict sentence's numbers, and the evidence key each states (`lost` is 100 less the clock's share of its max).
SENTENCE_FIGURES: tuple[tuple[re.Pattern[str], tuple[str, ...]], ...] = (
    (re.compile(r"(\d+)% of the clock lost"), ("lost",)),
    (re.compile(r"(\d+)% busy at (\d+)% of max clock"), ("gpu_util", "clock_of_max")),
    (re.compile(r"only (\d+)% busy"), ("gpu_util",)),
    (re.compile(r"(?<!only )\b(\d+)% busy(?! at)"), ("gpu_util",)),
    (re.compile(r"SM activity (\d+)%, tensor(?: cores)? (\d+)%"), ("sm_active", "tensor_active")),
    (re.compile(r"DRAM bandwidth at (\d+)% of peak"), ("dram_bw",)),
    (re.compile(r"DRAM at (\d+)%"), ("dram_bw",)),
)
# A list of GPUs as a sentence or a title writes it: "GPU 1", "GPUs 0,2-3" (and never "GPUs 0, 2, 3").
GPU_LIST = re.compile(r"\bGPUs? (\d+(?:\s*(?:,|-|and)\s*\d+)*)")
# Words left out of a line ("…"), and the count that must say how many: "… (+2 more)", "+2 more".
ELLIPSIS = re.compile(r"…(?!\s*\(?\+?\d+ more)")
# The numbers advice gives for one knob, by knob.
KNOBS: Mapping[str, tuple[re.Pattern[str], ...]] = {
    "num_workers": (
        re.compile(r"num_workers <= (\d+)"),
        re.compile(r"num_workers by the quota instead: about (\d+) per job"),
        re.compile(r"[Ss]et DataLoader num_workers=(\d+)"),
        re.compile(r"num_workers to about (\d+)"),
    ),
}


@dataclass(frozen=True, slots=True)
class Moment:
    """One tick as the views showed it: the tick, `diagnose`'s text had it ended there, and what the account
    billed each GPU for the time since the tick before."""

    case: str
    t: float  # seconds since the run's first reading
    tick: Tick
    printed: str
    billed: Mapping[int, Mapping[str, float]]  # each GPU's seconds in each class after this tick
    billed_before: Mapping[int, Mapping[str, float]]  # and before it
    window_s: float  # the account's window after this tick
    elapsed_s: float  # the sum of the tick intervals so far, each capped as the account caps a gap

    def where(self, invariant: str) -> str:
        return f"{self.case} t={self.t:g}s [{invariant}]"


@dataclass
class SpanLog:
    """What each tick said of each unit, in time order: the units (GPUs, MIG instances) the verdict said nothing
    holds back, or each GPU's class in the account. A finding says since when it held only once it opens, so the
    ticks its span covers are checked then (each finding, tick and unit once)."""

    times: list[float] = field(default_factory=list)
    said: list[tuple[frozenset[int], str]] = field(default_factory=list)  # quiet units, the verdict's line
    bills: list[dict[int, str]] = field(default_factory=list)  # GPU -> the class billed this tick
    checked: set[tuple[object, ...]] = field(default_factory=set)
    shown: dict[tuple[object, ...], float] = field(default_factory=dict)  # a finding -> the tick it was first open

    def first_open(self, finding: Finding, at: float) -> float:
        """The tick (seconds since the first reading) at which `finding` was first shown open."""
        return self.shown.setdefault((finding.key, finding.started_at), at)

    def within(self, begin: float, end: float) -> range:
        """The ticks from `begin` to `end` (seconds since the run's first reading), both included."""
        return range(bisect.bisect_left(self.times, begin - 1e-6), bisect.bisect_right(self.times, end + 1e-6))


# -- what views show ------------------------------------------------------------------------------------------------


def parts(verdict: Verdict) -> tuple[Verdict, ...]:
    return verdict.groups or (verdict,)


def is_unknown(verdict: Verdict | None) -> bool:
    return verdict is None or verdict.cls == "unknown"


def units_of(gpus: Iterable[int], instances: Iterable[tuple[int, int]]) -> frozenset[int]:
    """The units a verdict part or a finding speaks for: its MIG instances, and its GPUs that are not split."""
    pairs = tuple(instances)
    split = {gpu for gpu, _ in pairs}
    return frozenset({unit_index(gpu, gi) for gpu, gi in pairs} | {g for g in gpus if g not in split})


def finding_units(finding: Finding, snapshot: Snapshot) -> frozenset[int]:
    """A finding's units; one about a whole MIG GPU (heat, power) concerns each of its instances too, and one about
    the whole machine (no GPUs) every unit."""
    if not finding.gpus:
        return every_unit(snapshot)
    own = units_of(finding.gpus, finding.mig_instances)
    if finding.mig_instances:
        return own
    return own | {u for u in every_unit(snapshot) if (pair := instance_of(u)) is not None and pair[0] in own}


def every_unit(snapshot: Snapshot) -> frozenset[int]:
    units: set[int] = set()
    for sample in snapshot.gpus:
        instances = () if sample.mig is None else sample.mig.gpu_instances()
        ids = [d.gpu_instance_id for d in instances if d.gpu_instance_id is not None]
        units |= {unit_index(sample.index, gi) for gi in ids} if ids else {sample.index}
    return frozenset(units)


def says_nothing_holds_back(part: Verdict) -> bool:
    """The words a user reads as "all is well here": nothing on this machine holds them back or explains the
    waiting, or "no job" with nothing open named beside it."""
    return "nothing on this machine" in part.summary or (
        part.cls == "idle" and not any(words in part.summary for words in ("open here", "watching here"))
    )


def figures(evidence: Iterable[Evidence]) -> dict[tuple[str, str], float]:
    """(key, window words) -> value of each numeric item; the clock's share of its max also from a clock in MHz and
    the board's max (so a finding that states MHz is compared with a verdict that states %)."""
    out = {(e.key, e.window): float(e.value) for e in evidence if isinstance(e.value, (int, float))}
    maxima = [v for (key, _), v in out.items() if key == "max_sm_clock" and v > 0]
    if maxima:
        for (key, window), value in list(out.items()):
            if key == "sm_clock":
                out.setdefault(("clock_of_max", window), min(100.0, 100.0 * value / maxima[0]))
    return out


def shown(value: float) -> str:
    return fmt_evidence_value(value)


# -- 1. one figure, one value ---------------------------------------------------------------------------------------


def check_figures(m: Moment) -> Iterator[str]:
    """A figure in the verdict and the same figure (key, window) in a finding's evidence on the same units have the
    same value as shown (a verdict group's is the mean of its units'); a verdict about the clock and a finding's
    clock agree whatever window the finding states it over; two findings on one unit agree; the numbers of the
    verdict's sentence are those its evidence holds."""
    tick, verdict = m.tick, m.tick.verdict
    per_unit: dict[int, dict[tuple[str, str], tuple[float, Finding]]] = {}
    per_group: dict[frozenset[int], dict[tuple[str, str], tuple[float, Finding]]] = {}
    for finding in tick.active:
        units = finding_units(finding, tick.snapshot)
        own = figures(finding.evidence)
        targets = [per_unit.setdefault(u, {}) for u in units] if finding.gpus and _one_gpu(finding) else []
        if finding.gpus and not targets:
            targets = [per_group.setdefault(units, {})]
        for target in targets:
            for figure, value in own.items():
                if figure in target and abs(target[figure][0] - value) > SHOWN_ROUNDING:
                    other = target[figure][1]
                    yield (
                        f"{m.where('figures')} {figure[0]} ({figure[1] or 'no window'}) on GPU "
                        f"{fmt_ranges(finding.gpus)}: {other.rule} says {shown(target[figure][0])}, "
                        f"{finding.rule} says {shown(value)}"
                    )
                target.setdefault(figure, (value, finding))
    if verdict is None:
        return
    for part in parts(verdict):
        units = units_of(part.gpus, part.mig_instances)
        mine = figures(part.evidence)
        compared: set[str] = set()
        for (key, window), value in mine.items():
            theirs = _figure_over(units, (key, window), per_unit, per_group)
            if theirs is None:
                continue
            compared.add(key)
            stated, rules = theirs
            if abs(stated - value) > SHOWN_ROUNDING:
                yield (
                    f"{m.where('figures')} {key} ({window}) on {_units_text(part)}: the verdict says "
                    f"{shown(value)} ({part.line or part.short!r}), {rules} says {_stated(stated, units)}"
                )
        clock = next(((w, v) for (k, w), v in mine.items() if k == "clock_of_max"), None)
        if part.cls == "throttled" and clock is not None and "clock_of_max" not in compared:
            for (_, window), (stated, rules) in _figures_over(units, "clock_of_max", per_unit, per_group):
                if abs(stated - clock[1]) > CLOCK_ROUNDING_PP:
                    yield (
                        f"{m.where('figures')} the verdict is about the clock: {_units_text(part)} at "
                        f"{shown(clock[1])}% of max ({clock[0]}) in {part.summary!r}, but {rules} states "
                        f"{shown(stated)}% of max ({window}), {100 - stated:.0f}% lost"
                    )
        yield from _sentence_figures(m, part)


def _one_gpu(finding: Finding) -> bool:
    return len(finding.gpus) == 1 and len(finding.mig_instances) <= 1


def _figure_over(
    units: frozenset[int],
    figure: tuple[str, str],
    per_unit: Mapping[int, Mapping[tuple[str, str], tuple[float, Finding]]],
    per_group: Mapping[frozenset[int], Mapping[tuple[str, str], tuple[float, Finding]]],
) -> tuple[float, str] | None:
    """The figure the findings state over exactly these units: one finding's on all of them, else the mean of each
    unit's own; None where some unit has none."""
    whole = per_group.get(units, {}).get(figure)
    if whole is not None:
        return whole[0], whole[1].rule
    each = [per_unit.get(u, {}).get(figure) for u in sorted(units)]
    if not units or any(v is None for v in each):
        return None
    known = [v for v in each if v is not None]
    return sum(v for v, _ in known) / len(known), "/".join(dict.fromkeys(f.rule for _, f in known))


def _figures_over(
    units: frozenset[int],
    key: str,
    per_unit: Mapping[int, Mapping[tuple[str, str], tuple[float, Finding]]],
    per_group: Mapping[frozenset[int], Mapping[tuple[str, str], tuple[float, Finding]]],
) -> Iterator[tuple[tuple[str, str], tuple[float, str]]]:
    windows = {w for k, w in per_group.get(units, {}) if k == key}
    windows |= {w for u in units for k, w in per_unit.get(u, {}) if k == key}
    windows.discard(LAST_SEEN)  # a figure of an earlier tick, said to be so
    for window in sorted(windows):
        found = _figure_over(units, (key, window), per_unit, per_group)
        if found is not None:
            yield (key, window), found


def _stated(value: float, units: frozenset[int]) -> str:
    """A figure the findings state, as shown; the mean over several units to two decimals, so that a difference
    beyond rounding reads as one."""
    return shown(value) if len(units) == 1 else f"{value:.2f} (the mean of its GPUs')"


def _units_text(part: Verdict) -> str:
    if part.mig_instances:
        return "MIG instances " + ", ".join(f"{g}/GI {gi}" for g, gi in part.mig_instances)
    return f"GPU {fmt_ranges(part.gpus)}"


def _sentence_figures(m: Moment, part: Verdict) -> Iterator[str]:
    values = {key: v for (key, _), v in figures(part.evidence).items()}
    if "clock_of_max" in values:
        values["lost"] = 100.0 - values["clock_of_max"]
    for sentence in dict.fromkeys((part.summary, part.short)):
        for pattern, keys in SENTENCE_FIGURES:
            for match in pattern.finditer(sentence):
                for number, key in zip(match.groups(), keys, strict=True):
                    if key in values and abs(float(number) - values[key]) > SENTENCE_ROUNDING:
                        yield (
                            f"{m.where('figures')} the verdict's sentence says {number}% for {key} "
                            f"({sentence!r}), its evidence holds {shown(values[key])}"
                        )


# -- 2. never healthy when it does not know -------------------------------------------------------------------------


def check_health(m: Moment, log: SpanLog) -> Iterator[str]:
    """`diagnose` says the GPUs look healthy only after the warm-up, beside no open finding above info and under a
    verdict that names no bound; "not known yet" never stands above an open finding above info it does not name;
    and the verdict never said nothing holds a unit back inside the span a finding above info on it says it has
    held (checked when the finding appears)."""
    tick, verdict = m.tick, m.tick.verdict
    healthy = HEALTHY in m.printed.splitlines()
    line = verdict.line if verdict is not None else "(no verdict)"
    above = [f for f in tick.active if f.severity > Severity.INFO]
    if healthy and is_unknown(verdict):
        yield f"{m.where('health')} {HEALTHY!r} printed before the warm-up ended, under {line!r}"
    if healthy and above:
        yield f"{m.where('health')} {HEALTHY!r} printed beside an open finding: {above[0].title!r}"
    if healthy and verdict is not None and any(p.cls not in (*UNBOUND, "unknown") for p in parts(verdict)):
        yield f"{m.where('health')} {HEALTHY!r} printed under a verdict that names a bound: {line!r}"
    unnamed = [f for f in above if not _names(line, f)]
    if is_unknown(verdict) and unnamed:
        yield (
            f"{m.where('health')} the verdict says it does not know ({line!r}) above an open "
            f"{unnamed[0].severity.label} finding it does not name: {unnamed[0].title!r}"
        )
    quiet: set[int] = set()
    if verdict is not None:
        for part in parts(verdict):
            if part.cls in UNBOUND and says_nothing_holds_back(part):
                quiet |= units_of(part.gpus, part.mig_instances)
    log.times.append(m.t)
    log.said.append((frozenset(quiet), line))
    start = m.tick.snapshot.timestamp - m.t
    for finding in (*tick.active, *tick.closed):
        if finding.severity <= Severity.INFO:
            continue
        units = finding_units(finding, tick.snapshot)
        begin, end = finding.started_at - start, (finding.ended_at or tick.snapshot.timestamp) - start
        for n in log.within(begin, end):
            at, (said, words) = log.times[n], log.said[n]
            key = ("health", finding.key, finding.started_at, at)
            if said & units and key not in log.checked:
                log.checked.add(key)
                yield (
                    f"{m.where('health')} at t={at:g}s the verdict said nothing holds back "
                    f"{_units_list(said & units)} ({words!r}), but {finding.rule} ({finding.severity.label}) "
                    f"says it held there from t={begin:g}s: {finding.title!r}"
                )


def _names(line: str, finding: Finding) -> bool:
    """Whether a verdict's line names a finding, by the words its rule has for its cause."""
    keys = [f"{finding.rule}.cause.{finding.variant}", f"{finding.rule}.cause"] if finding.variant else []
    keys = keys or [f"{finding.rule}.cause"]
    return finding.title in line or any(has_text(key) and text(key, LANG) in line for key in keys)


def _units_list(units: Iterable[int]) -> str:
    whole = sorted(u for u in units if instance_of(u) is None)
    split = sorted(pair for u in units if (pair := instance_of(u)) is not None)
    names = [f"GPU {fmt_ranges(whole)}"] if whole else []
    return ", ".join(names + [f"GPU {gpu}/GI {gi}" for gpu, gi in split])


def check_exit_code(case: str, code: int, printed: str) -> Iterator[str]:
    """A health check that did not get its verdict never exits 0 and never says "healthy"; a finding above info
    that it prints decides its exit code even then (4 critical, 1 warnings)."""
    lines = printed.splitlines()
    verdict = next((line for line in lines if line.startswith("VERDICT")), "(no verdict line)")
    unknown = text("verdict.unknown", LANG) in verdict
    if unknown and code == 0:
        yield f"{case} [health] `gputui diagnose` exits 0 under {verdict!r}"
    if unknown and HEALTHY in lines:
        yield f"{case} [health] `gputui diagnose` prints {HEALTHY!r} under {verdict!r}"
    for severity, wanted in ((Severity.CRITICAL, EXIT_CRITICAL), (Severity.WARNING, EXIT_WARNINGS)):
        shown_rows = [line for line in lines if line.startswith(severity_label(severity, LANG) + " ")]
        if shown_rows:
            if code != wanted:
                yield f"{case} [health] `gputui diagnose` exits {code} below {shown_rows[0]!r}"
            break


# -- 3. the account -------------------------------------------------------------------------------------------------


def expected_classes(snapshot: Snapshot, verdict: Verdict | None) -> dict[int, str]:
    """Each GPU's class this tick as the verdict shown says it: the most serious group naming it; a GPU the verdict
    leaves out is idle (held: allocated, else free) when the driver reads it, unknown before the warm-up."""
    out: dict[int, str] = {}
    for sample in snapshot.gpus:
        named = [p.cls for p in parts(verdict) if sample.index in p.gpus] if verdict is not None else []
        if verdict is not None and not verdict.gpus and verdict.cls in ("unknown", "degraded"):
            cls = verdict.cls
        elif named:
            cls = min(named, key=lambda c: RANKED.index(c) if c in RANKED else len(RANKED))
        elif verdict is not None and (sample.utilization_gpu_pct is not None or sample.in_mig_mode):
            cls = "idle"
        else:
            cls = "unknown"
        if cls == "idle":
            cls = IDLE_ALLOCATED if holders(snapshot, sample) else IDLE_FREE
        out[sample.index] = cls
    return out


def check_account(m: Moment, log: SpanLog, hold_s: float) -> Iterator[str]:
    """Each GPU's seconds add up to the window, the window to the ticks' intervals; each tick's seconds go to the
    class the verdict shown gives that GPU; and no GPU is billed a class that says nothing holds it back once a
    finding above info that argues it is held back (throttled, degraded, ...) has been open for the verdict's
    hold: the verdict shown gives way to it by then (verdict.py's VerdictTracker), and the account bills the
    verdict shown. Before that the account bills what the verdict said, and the verdict said what it watched."""
    tick = m.tick
    if abs(m.window_s - m.elapsed_s) > 1e-6:
        yield f"{m.where('account')} the account's window is {m.window_s:g}s, the ticks span {m.elapsed_s:g}s"
    for gpu, seconds in m.billed.items():
        total = sum(seconds.values())
        if abs(total - m.window_s) > 1e-6:
            yield f"{m.where('account')} GPU {gpu}'s seconds add up to {total:g}s, the window is {m.window_s:g}s"
    expected = expected_classes(tick.snapshot, tick.verdict)
    billed_now: dict[int, str] = {}
    for gpu, seconds in m.billed.items():
        diff = {c: s - m.billed_before.get(gpu, {}).get(c, 0.0) for c, s in seconds.items()}
        diff = {c: s for c, s in diff.items() if s > 1e-9}
        if not diff:
            continue
        billed_now[gpu] = max(diff, key=lambda c: diff[c])
        want = expected.get(gpu)
        if set(diff) != {want}:
            line = tick.verdict.line if tick.verdict is not None else "(no verdict)"
            yield (
                f"{m.where('account')} GPU {gpu} billed {_seconds_text(diff)} for this tick, but the verdict "
                f"shown says {want}: {line!r}"
            )
    log.times.append(m.t)
    log.bills.append(billed_now)
    start = tick.snapshot.timestamp - m.t
    for finding in (*tick.active, *tick.closed):
        cls = BOUNDS.get(finding.rule)
        if (
            cls is None
            or cls in WAITING
            or not finding.gpus
            or finding.severity <= Severity.INFO
            or finding.severity < SEVERITIES.get(finding.rule, finding.severity)
        ):
            continue
        if finding.is_open:
            log.first_open(finding, m.t)
        opened = log.shown.get((finding.key, finding.started_at))
        if opened is None:
            continue
        begin, end = opened + hold_s, (finding.ended_at or tick.snapshot.timestamp) - start
        for n in log.within(begin + 1e-3, end):
            at, bills = log.times[n], log.bills[n]
            for gpu in finding.gpus:
                key = ("account", finding.key, finding.started_at, at, gpu)
                if bills.get(gpu) in QUIET_BILLS and key not in log.checked:
                    log.checked.add(key)
                    yield (
                        f"{m.where('account')} at t={at:g}s GPU {gpu} was billed {bills[gpu]}, but {finding.rule} "
                        f"({finding.severity.label}, class {cls}) was open there from t={opened:g}s: "
                        f"{finding.title!r}"
                    )


ACCOUNT_HEADING = "Where the GPU time went"
# One part of an account line: "GPU 1 1m59s", "GPUs 0,2-3 6s each", "all 4 GPUs 3s each".
ACCOUNT_PART = re.compile(
    r"(?:all (?P<count>\d+) GPUs|GPUs? (?P<list>\d[\d,-]*)) (?P<duration>\d+h\d\dm|\d+m\d\ds|\d+s)(?: each)?"
)


def check_account_lines(m: Moment) -> Iterator[str]:
    """Each line of the account `diagnose` prints names the GPUs that had its class and how long each, as billed
    ("GPU-bound 6s on 4 GPUs" when one of them had 1 s reads as four GPUs having 6 s: the issue's example)."""
    lines = m.printed.splitlines()
    start = next((n for n, line in enumerate(lines) if line.startswith(ACCOUNT_HEADING)), None)
    if start is None:
        return
    labels = sorted(((class_label(cls, LANG), cls) for cls in ACCOUNT_CLASSES), key=lambda item: -len(item[0]))
    for line in lines[start + 1 :]:
        head = line.partition(": ")[0]
        found = next(((label, cls) for label, cls in labels if head.startswith(f"{label} ")), None)
        if found is None:
            continue
        label, cls = found
        said: dict[int, str] = {}
        for part in ACCOUNT_PART.finditer(head[len(label) + 1 :]):
            gpus = sorted(m.billed) if part["count"] else _indices(part["list"])
            said.update(dict.fromkeys(gpus, part["duration"]))
        billed = {gpu: fmt_duration(s[cls]) for gpu, s in m.billed.items() if s.get(cls, 0.0) > 0}
        if said != billed:
            yield (
                f"{m.where('account')} {line!r} says {said or 'no GPU and no time'}, the account billed "
                f"{cls} to GPUs {billed}"
            )


def _indices(ranges: str) -> list[int]:
    """'0,2-3' -> [0, 2, 3], the inverse of fmt_ranges."""
    out: list[int] = []
    for item in ranges.split(","):
        first, _, last = item.partition("-")
        out += range(int(first), int(last or first) + 1)
    return out


def _seconds_text(seconds: Mapping[str, float]) -> str:
    return ", ".join(f"{cls} {s:g}s" for cls, s in seconds.items())


# -- 4. GPU lists, 5. advice, 6. what is left out -------------------------------------------------------------------


def check_gpu_lists(m: Moment, titles: Iterable[str]) -> Iterator[str]:
    """Every GPU list in the verdict's sentences and the findings' titles (each finding's and each row's) reads
    as fmt_ranges writes it."""
    verdict = m.tick.verdict
    sentences = (
        [verdict.line, *(p.summary for p in parts(verdict)), *(p.short for p in parts(verdict))] if verdict else []
    )
    for sentence in dict.fromkeys((*sentences, *titles)):
        for match in GPU_LIST.finditer(sentence):
            written = match.group(1)
            indices = [int(n) for n in re.findall(r"\d+", written)]
            runs = re.split(r"\s*,\s*", written)
            listed: list[int] = []
            for run in runs:
                ends = [int(n) for n in re.findall(r"\d+", run)]
                listed += list(range(ends[0], ends[-1] + 1)) if "-" in run and len(ends) == 2 else ends
            if written != fmt_ranges(listed or indices):
                yield (
                    f"{m.where('gpu lists')} {match.group(0)!r} in {sentence!r}: the list reads "
                    f"{fmt_ranges(listed or indices)!r} everywhere else"
                )


LAST_SEEN = "when last seen"


def lapsed(finding: Finding) -> bool:
    """An open finding whose condition was not seen this tick (it closes once clear for long enough): its evidence
    says "when last seen", and its words are of then, not of this tick."""
    windows = {e.window for e in finding.evidence if e.window}
    return bool(windows) and windows <= {LAST_SEEN}


def check_advice(m: Moment) -> Iterator[str]:
    """Two findings seen this tick never give two numbers for one knob (num_workers); one that lapsed says its
    figures are of when it was last seen, and its advice is of then."""
    for knob, patterns in KNOBS.items():
        said: dict[str, Finding] = {}
        for finding in (f for f in m.tick.active if not lapsed(f)):
            for pattern in patterns:
                for number in pattern.findall(finding.advice):
                    said.setdefault(number, finding)
        if len(said) > 1:
            (a, fa), (b, fb) = list(said.items())[:2]
            yield (
                f"{m.where('advice')} {knob}: {fa.rule} advises {a} ({_around(fa.advice, knob)!r}), "
                f"{fb.rule} advises {b} ({_around(fb.advice, knob)!r})"
            )


def _around(advice: str, word: str) -> str:
    at = advice.find(word)
    return advice[max(0, at - 20) : at + 60] if at >= 0 else advice[:80]


def check_hidden(m: Moment) -> Iterator[str]:
    """Nothing `diagnose` prints is left out without a count: "…" says how many it stands for."""
    for line in m.printed.splitlines():
        if ELLIPSIS.search(line):
            yield f"{m.where('hidden')} {line.strip()[:200]!r} leaves out some without saying how many"
