"""What the sampling thread does each tick: read the source, run the diagnostics, hand back one Tick."""

from __future__ import annotations

from dataclasses import dataclass

from gputui.diagnostics.findings import Finding
from gputui.model import Snapshot
from gputui.sources.base import Source

# The refresh intervals `+` and `-` step through; `--interval` must lie within them.
INTERVALS: tuple[float, ...] = (0.25, 0.5, 1.0, 2.0, 3.0, 5.0, 10.0)
MIN_INTERVAL = INTERVALS[0]
MAX_INTERVAL = INTERVALS[-1]


@dataclass(frozen=True, slots=True)
class Tick:
    """One reading and the findings open (and recently closed) after it."""

    snapshot: Snapshot
    active: tuple[Finding, ...] = ()
    closed: tuple[Finding, ...] = ()


class Sampler:
    """Owns the source on the sampling thread; the app calls `take()` from one thread at a time."""

    def __init__(self, source: Source) -> None:
        self.source = source

    def take(self) -> Tick:
        return Tick(snapshot=self.source.sample())
