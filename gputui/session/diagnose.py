"""The diagnostics as the loop runs them: one function per machine's stream of readings, and the two ways the
exporter and the fleet view wrap it (a broken rule must not stop the readings; a reading seen twice counts once)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable

from gputui.diagnostics.engine import DiagnosticsState
from gputui.diagnostics.findings import Finding
from gputui.diagnostics.settings import DiagnosticsConfig
from gputui.model import Snapshot

# Takes each new reading of one machine, returns the verdict and findings after it. Stateful (windows, hysteresis),
# so each machine gets its own.
Diagnose = Callable[[Snapshot], DiagnosticsState]

log = logging.getLogger(__name__)


def new_diagnose(config: DiagnosticsConfig | None = None) -> Diagnose:
    """A fresh diagnostics engine for one machine (with `config`, the file's `[diagnostics]`), as a function of each
    new reading."""
    from gputui.diagnostics.engine import DiagnosticsEngine

    engine = DiagnosticsEngine(config)

    return engine.update


def tolerant(diagnose: Diagnose, reading: str) -> Diagnose:
    """`diagnose`, but a rule that raises is logged (naming `reading`) and leaves no findings: the readings are
    still worth serving and showing."""

    def run(snapshot: Snapshot) -> DiagnosticsState:
        try:
            return diagnose(snapshot)
        except Exception:
            log.exception("the diagnostics failed on %s", reading)
            return DiagnosticsState()

    return run


def once_per_reading(diagnose: Diagnose) -> Diagnose:
    """`diagnose` on new readings only; a reading seen again (a fleet poll faster than the exporter samples) gets
    the state it got the first time, so that no window counts it twice."""
    last: dict[float, DiagnosticsState] = {}

    def run(snapshot: Snapshot) -> DiagnosticsState:
        if snapshot.timestamp not in last:
            state = diagnose(snapshot)
            last.clear()
            last[snapshot.timestamp] = state
        return last[snapshot.timestamp]

    return run


class ClosedFindings:
    """Every finding that closed during a run (a health check, a fleet's history), each once, worst first. A
    finding is its rule on its GPUs or MIG instances (`Finding.key`) from when it opened: the same rule on the
    same GPUs may open and close twice, and two instances of one GPU are two findings."""

    def __init__(self) -> None:
        self._ended: dict[tuple[object, ...], Finding] = {}

    def add(self, closed: Iterable[Finding]) -> None:
        self._ended.update(((*f.key, f.started_at), f) for f in closed if f.ended_at is not None)

    def worst_first(self) -> tuple[Finding, ...]:
        return tuple(sorted(self._ended.values(), key=lambda f: (-f.severity, f.started_at)))
