"""The diagnostics engine: runs every enabled rule on each snapshot and turns what holds into findings.

Hysteresis lives here, not in the rules: a condition must hold for `open_after_s` before its finding opens, and
be clear for `close_after_s` before it closes, so a value wobbling around a threshold neither flaps nor hides.
A condition that lapses before its finding opened starts over. Time is the snapshots' own timestamps, so a
replayed or simulated session gives the same findings as it did live.
"""

from __future__ import annotations

import dataclasses
import heapq
import threading
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass

from gputui.diagnostics.catalog import localize, text
from gputui.diagnostics.findings import Evidence, Finding, Severity
from gputui.diagnostics.instances import expand, has_instances, instance_name, instance_of, split
from gputui.diagnostics.rules import ALL_RULES
from gputui.diagnostics.rules.base import Hit, HourPrice, Rule, Window, ev
from gputui.diagnostics.rules.software import NVML_UNAVAILABLE
from gputui.diagnostics.settings import DiagnosticsConfig
from gputui.diagnostics.verdict import Verdict, VerdictTracker, classify
from gputui.history import History
from gputui.model import Snapshot

# Enough snapshots for the longest window at the fastest interval (0.25 s).
HISTORY_CAPACITY = 600

TrackKey = tuple[str, tuple[int, ...]]


@dataclass(frozen=True, slots=True)
class Pending:
    """A condition above info the engine sees but that has not held long enough to open its finding: the views
    say they are watching it ("GPU 1: thermal throttling, opens in 2 s if it holds") rather than "nothing slows"."""

    rule: str
    gpus: tuple[int, ...]
    severity: Severity
    title: str
    opens_in_s: float


@dataclass(frozen=True, slots=True)
class DiagnosticsState:
    """What the views show: the verdict, open findings worst first, recently closed ones newest first, and the
    conditions not yet held long enough to open (soonest first)."""

    active: tuple[Finding, ...] = ()
    closed: tuple[Finding, ...] = ()
    verdict: Verdict | None = None
    pending: tuple[Pending, ...] = ()

    @property
    def worst(self) -> Severity | None:
        return max((f.severity for f in self.active), default=None)


@dataclass(frozen=True, slots=True)
class _Words:
    """A finding's title and advice, and what they were made from: an open finding is rebuilt every tick,
    and its title changes only when the rule's placeholders do."""

    lang: str
    variant: str
    params: Mapping[str, object]
    title: str
    advice: str

    def fits(self, hit: Hit, lang: str) -> bool:
        # Types count too: 1 and 1.0 are equal but are written differently.
        return (
            self.params == hit.params
            and all(type(value) is type(hit.params[name]) for name, value in self.params.items())
            and self.variant == hit.variant
            and self.lang == lang
        )


@dataclass(slots=True)
class _Track:
    """One condition the engine follows, from its first sighting until its finding closes."""

    rule: Rule
    hit: Hit
    first_seen: float
    last_seen: float
    severity: Severity
    worst: float | None
    worst_hit: Hit  # the hit at the worst value: a closed finding shows its evidence, not the last
    opened: bool = False
    words: _Words | None = None


class DiagnosticsEngine:
    """Feed it every snapshot in order with `update`; it keeps its own history of them."""

    def __init__(
        self, config: DiagnosticsConfig | None = None, lang: str = "en", price: HourPrice | None = None
    ) -> None:
        self.config = config if config is not None else DiagnosticsConfig()
        self.lang = lang
        self.price = price  # what a GPU-hour costs ([cost]): findings that cost GPU time say it in money
        self.rules: tuple[Rule, ...] = tuple(r for r in ALL_RULES if r.id not in self.config.disabled)
        self.history = History(HISTORY_CAPACITY)
        self._tracks: dict[TrackKey, _Track] = {}
        self._closed: deque[Finding] = deque(maxlen=self.config.history_size)
        # Findings made outside the rules (probe results), newest first, with the time each stops being open.
        self._external: deque[tuple[Finding, float]] = deque(maxlen=self.config.history_size)
        self._external_lock = threading.Lock()
        self._verdict = VerdictTracker(self.config.open_after_s)
        # The snapshots with each MIG GPU as its instances (instances.py), from the first snapshot with MIG on:
        # without MIG, per-instance rules read `history` as every other rule does, at no cost.
        self._units: History | None = None

    def add_external(self, finding: Finding, open_for_s: float = 0.0) -> None:
        """Show a finding no rule made (a probe's result) from the next update on: open, in the counts and in
        its severity's colour, for `open_for_s` seconds of snapshot time after its `started_at`, then kept in
        the history for the session (rule closures do not push it out). Safe to call from any thread."""
        with self._external_lock:
            self._external.appendleft((finding, finding.started_at + open_for_s))

    def update(self, snapshot: Snapshot) -> DiagnosticsState:
        self.history.append(snapshot)
        now = snapshot.timestamp
        th = self.config.thresholds
        window = Window(self.history.window(th.window_s), th.window_s, self.price)
        units = window
        if self._units is not None or has_instances(snapshot):
            units = self._unit_window(snapshot, th.window_s)
        seen: set[TrackKey] = set()
        for rule in self.rules:
            for hit in rule.check(units if rule.per_instance else window, th):
                key = (rule.id, hit.gpus)
                seen.add(key)
                self._observe(key, rule, hit if units is window else _named(hit, units), now)
        for key in [k for k in self._tracks if k not in seen]:
            self._lapse(key, now)
        active = [self._finding(track, window, now) for track in self._tracks.values() if track.opened]
        with self._external_lock:
            external = tuple(self._external)
        active += [
            dataclasses.replace(f, ended_at=None, duration_s=max(0.0, now - f.started_at))
            for f, open_until in external
            if now < open_until
        ]
        active.sort(key=lambda f: (-f.severity, f.started_at, f.rule, f.gpus))
        kept = [f for f, open_until in external if now >= open_until]
        closed = heapq.merge(kept, self._closed, key=lambda f: -(f.ended_at or f.started_at))
        waiting = [(track, self._finding(track, None, now)) for track in self._waiting()]
        verdict = self._verdict.update(classify(units, active, th, self.lang, [f for _, f in waiting]), now)
        pending = sorted((self._pending(track, f, now) for track, f in waiting), key=lambda p: p.opens_in_s)
        return DiagnosticsState(active=tuple(active), closed=tuple(closed), verdict=verdict, pending=tuple(pending))

    def _waiting(self) -> list[_Track]:
        """The tracks above info whose finding has not opened yet."""
        return [track for track in self._tracks.values() if not track.opened and track.severity > Severity.INFO]

    def _pending(self, track: _Track, watched: Finding, now: float) -> Pending:
        """What the views say of a condition not yet held long enough: its finding as it would open (the words the
        verdict names it by), and how long until it does."""
        return Pending(
            rule=watched.rule,
            gpus=watched.gpus,
            severity=watched.severity,
            title=watched.title,
            opens_in_s=max(0.0, track.first_seen + self._hold(track.rule) - now),
        )

    def _hold(self, rule: Rule) -> float:
        """How long `rule`'s condition must hold before its finding opens."""
        hold = rule.open_after(self.config.thresholds)
        return self.config.open_after_s if hold is None else hold

    def _unit_window(self, snapshot: Snapshot, seconds: float) -> Window:
        """The window of snapshots with MIG instances as GPUs; the history before the first MIG one is expanded
        then, once, so the per-instance rules see as much of it as the others."""
        if self._units is None:
            self._units = History(HISTORY_CAPACITY)
            for earlier in self.history:
                self._units.append(expand(earlier))
        else:
            self._units.append(expand(snapshot))
        return Window(self._units.window(seconds), seconds, self.price)

    def _observe(self, key: TrackKey, rule: Rule, hit: Hit, now: float) -> None:
        severity = hit.severity if hit.severity is not None else rule.severity
        track = self._tracks.get(key)
        if track is None:
            track = _Track(
                rule=rule, hit=hit, first_seen=now, last_seen=now, severity=severity, worst=hit.value, worst_hit=hit
            )
            self._tracks[key] = track
        else:
            track.hit, track.last_seen = hit, now
            track.severity = max(track.severity, severity)
            worst = _worse(track.worst, hit.value, rule.higher_is_worse)
            if worst != track.worst or track.worst is None:
                track.worst, track.worst_hit = worst, hit
        if not track.opened and now - track.first_seen >= self._hold(rule):
            track.opened = True

    def _lapse(self, key: TrackKey, now: float) -> None:
        track = self._tracks[key]
        if not track.opened:
            del self._tracks[key]
            return
        hold = track.rule.close_after(self.config.thresholds)
        if now - track.last_seen >= (self.config.close_after_s if hold is None else hold):
            del self._tracks[key]
            self._closed.appendleft(self._finding(track, None, track.last_seen, ended=True))

    def _finding(self, track: _Track, window: Window | None, now: float, ended: bool = False) -> Finding:
        hit, rule, lang = track.hit, track.rule, self.lang
        span = window.span_s if window is not None else round(self.config.thresholds.window_s)
        words = track.words
        if words is None or not words.fits(hit, lang):
            suffix = f".{hit.variant}" if hit.variant else ""
            words = track.words = _Words(
                lang=lang,
                variant=hit.variant,
                params=hit.params,
                title=text(f"{rule.id}.title{suffix}", lang, **hit.params),
                advice=text(f"{rule.id}.advice{suffix}", lang, **hit.params),
            )
        # Open, the evidence of now; closed, that of its worst moment ("now" then reads "at its worst"); open but
        # not seen this tick (it closes once clear for close_after_s), that of when it was last seen, said so: a
        # figure of then must not stand beside this tick's value of the same figure as if it were of now.
        evidence = track.worst_hit.evidence if ended else hit.evidence
        if not ended and track.last_seen < now:
            evidence = tuple(_when_last_seen(e) for e in evidence)
        gpus, instances = split(hit.gpus) if self._units is not None else (hit.gpus, ())
        return Finding(
            rule=rule.id,
            severity=track.severity,
            title=words.title,
            advice=words.advice,
            gpus=gpus,
            variant=hit.variant,
            pids=hit.pids,
            evidence=tuple(localize(_at_worst(e) if ended else e, lang, span) for e in evidence),
            started_at=track.first_seen,
            duration_s=max(0.0, now - track.first_seen),
            ended_at=now if ended else None,
            worst=track.worst,
            metric=rule.metric,
            params=tuple(hit.params.items()),
            mig_instances=instances,
        )


def _named(hit: Hit, units: Window) -> Hit:
    """A hit on one MIG instance, its `gpu` placeholder naming it ("GPU 0 / 3g.40gb (GI 2)" in a title)."""
    if len(hit.gpus) != 1 or instance_of(hit.gpus[0]) is None or "gpu" not in hit.params:
        return hit
    sample = next((g for g in units.gpus() if g.index == hit.gpus[0]), None)
    if sample is None:
        return hit
    return dataclasses.replace(hit, params={**hit.params, "gpu": instance_name(sample)})


def _when_last_seen(evidence: Evidence) -> Evidence:
    return evidence if evidence.window in ("", "static") else dataclasses.replace(evidence, window="last_seen")


def _at_worst(evidence: Evidence) -> Evidence:
    return dataclasses.replace(evidence, window="worst") if evidence.window in ("now", "moment") else evidence


def _worse(old: float | None, new: float | None, higher_is_worse: bool) -> float | None:
    if old is None or new is None:
        return new if old is None else old
    return max(old, new) if higher_is_worse else min(old, new)


def unavailable_finding(reason: str, lang: str = "en", now: float = 0.0) -> Finding:
    """`nvml_unavailable`: the driver cannot be read, with why; built where there is no snapshot to judge."""
    reason = reason.strip()
    return Finding(
        rule=NVML_UNAVAILABLE,
        severity=Severity.CRITICAL,
        title=text(f"{NVML_UNAVAILABLE}.title", lang),
        advice=text(f"{NVML_UNAVAILABLE}.advice", lang),
        evidence=(localize(ev("reason", reason, window=""), lang, 0),),
        started_at=now,
    )
