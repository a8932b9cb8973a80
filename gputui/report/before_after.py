"""Before and after each mark: did the change the mark names ("changed num_workers to 8") help?

A recording's marks cut it into spans; each span gets an account of its own (account.py, the same rule: the time
from a tick back to the one before goes to the verdict judged on it, and to the span that tick is in), and the
GPU busy share over it (each GPU's utilization, weighted by the time since the reading before: NVML's utilization
is the share of that time a kernel ran). Each mark compares the span before it with the span after: the busy share
and the classes that took most of the GPU time on either side. A span shorter than the verdict's window is too short to
judge: its verdicts are mostly the previous span's readings.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gputui.diagnostics.account import Accountant, class_label
from gputui.diagnostics.catalog import text
from gputui.diagnostics.thresholds import Thresholds
from gputui.diagnostics.verdict import Verdict
from gputui.formatting import fmt_duration, fmt_share
from gputui.model import Snapshot

# A span shorter than this is too short to judge: the verdict looks at this much history.
JUDGED_S = Thresholds().window_s
# The classes each comparison names: the largest of each side (shares are largest first), at most this many.
PER_SIDE = 2
TOP_CLASSES = 3
MIN_SHARE = 0.01


@dataclass(frozen=True, slots=True)
class SpanFigures:
    """One span between marks: its seconds (the account's window), the GPU busy share, each class's share of its
    GPU-seconds (largest first); busy None where no GPU reported its utilization."""

    start: float
    end: float
    window_s: float
    busy_share: float | None
    shares: Mapping[str, float]


@dataclass(frozen=True, slots=True)
class Comparison:
    """A mark and the spans either side of it; `judged`: both last the verdict's window."""

    t: float
    label: str
    before: SpanFigures
    after: SpanFigures

    @property
    def judged(self) -> bool:
        return min(self.before.window_s, self.after.window_s) >= JUDGED_S

    def classes(self) -> list[str]:
        """The classes worth naming: the largest before (what the change was meant to fix), then the largest after
        not named yet; at most TOP_CLASSES, each above MIN_SHARE on its side."""
        named: dict[str, None] = {}
        for shares in (self.before.shares, self.after.shares):
            largest = [cls for cls, share in shares.items() if share >= MIN_SHARE][:PER_SIDE]
            named.update(dict.fromkeys(largest))
        return list(named)[:TOP_CLASSES]


class _Span:
    """One span's account and busy share, fed the tick before it (which opens it) and its ticks."""

    def __init__(self, max_gap_s: float) -> None:
        self.accountant = Accountant(max_gap_s)
        self.max_gap_s = max_gap_s
        self.busy_s = 0.0
        self.known_s = 0.0
        self._last: Snapshot | None = None

    def add(self, snapshot: Snapshot, verdict: Verdict | None) -> None:
        self.accountant.add(snapshot, verdict)
        last, self._last = self._last, snapshot
        if last is None:
            return
        dt = min(max(0.0, snapshot.timestamp - last.timestamp), self.max_gap_s)
        for sample in snapshot.gpus:
            if sample.utilization_gpu_pct is not None and not sample.lost:
                self.busy_s += sample.utilization_gpu_pct / 100.0 * dt
                self.known_s += dt

    def figures(self, start: float, end: float) -> SpanFigures:
        account = self.accountant.account()
        gpu_seconds = sum(t.gpu_seconds for t in account.totals)
        shares = {t.cls: t.gpu_seconds / gpu_seconds for t in account.totals} if gpu_seconds > 0 else {}
        busy = self.busy_s / self.known_s if self.known_s > 0 else None
        ordered = dict(sorted(shares.items(), key=lambda item: -item[1]))
        return SpanFigures(start, end, account.window_s, busy, ordered)


class MarkSpans:
    """The spans between a recording's marks, fed each tick with the verdict shown after it, in order. The interval
    up to a tick is the span's that tick is in: the first tick after a mark opens its span with the tick before."""

    def __init__(self, marks: Sequence[tuple[float, str]], max_gap_s: float) -> None:
        self._marks = sorted(marks, key=lambda mark: mark[0])
        self._cuts = [t for t, _ in self._marks]
        self._spans = [_Span(max_gap_s) for _ in range(len(self._marks) + 1)]
        self._current = 0
        self._previous: tuple[Snapshot, Verdict | None] | None = None
        self._first: float | None = None
        self._last: float | None = None

    def add(self, snapshot: Snapshot, verdict: Verdict | None) -> None:
        if not self._marks:
            return
        self._first = snapshot.timestamp if self._first is None else self._first
        self._last = snapshot.timestamp
        index = bisect.bisect_right(self._cuts, snapshot.timestamp)
        if index != self._current and self._previous is not None:
            self._spans[index].add(*self._previous)  # the reading the interval up to this tick starts from
        self._current = index
        self._spans[index].add(snapshot, verdict)
        self._previous = (snapshot, verdict)

    def comparisons(self) -> tuple[Comparison, ...]:
        """Each mark with the span before it (from the previous mark, or the first tick) and after it (to the next
        mark, or the last tick)."""
        if self._first is None or self._last is None:
            return ()
        edges = [min(self._first, *self._cuts), *self._cuts, max(self._last, *self._cuts)]
        figures = [span.figures(a, b) for span, (a, b) in zip(self._spans, itertools.pairwise(edges), strict=True)]
        return tuple(Comparison(t, label, figures[n], figures[n + 1]) for n, (t, label) in enumerate(self._marks))


def comparison_line(comparison: Comparison, clock: str, lang: str = "en") -> str:
    """'00:05:00 changed num_workers to 8: GPU busy 22% → 90%, Input-bound 81% → 4%', or why it cannot be told."""
    before, after = comparison.before, comparison.after
    if not comparison.judged:
        return text(
            "account.compare.short",
            lang,
            clock=clock,
            label=comparison.label,
            before=fmt_duration(before.window_s),
            after=fmt_duration(after.window_s),
            need=fmt_duration(JUDGED_S),
        )
    figures = [
        text("account.compare.busy", lang, before=fmt_share(before.busy_share), after=fmt_share(after.busy_share))
    ]
    figures += [
        text(
            "account.compare.class",
            lang,
            label=class_label(cls, lang),
            before=fmt_share(before.shares.get(cls, 0.0)),
            after=fmt_share(after.shares.get(cls, 0.0)),
        )
        for cls in comparison.classes()
    ]
    items = text("account.separator", lang).join(figures)
    return text("account.compare.line", lang, clock=clock, label=comparison.label, figures=items)


def comparison_to_dict(comparison: Comparison) -> dict[str, Any]:
    """The JSON shape: the mark, whether it can be judged, and each side's figures (shares keyed by class id)."""

    def side(figures: SpanFigures) -> dict[str, Any]:
        busy = None if figures.busy_share is None else round(figures.busy_share, 4)
        return {
            "start": figures.start,
            "end": figures.end,
            "window_s": round(figures.window_s, 3),
            "busy_share": busy,
            "shares": {cls: round(share, 4) for cls, share in figures.shares.items()},
        }

    return {
        "t": comparison.t,
        "label": comparison.label,
        "judged": comparison.judged,
        "classes": comparison.classes(),
        "before": side(comparison.before),
        "after": side(comparison.after),
    }
