"""The diagnostics as the loop runs them: one function per machine's stream of readings, and the two ways the
exporter and the fleet view wrap it (a broken rule must not stop the readings; a reading seen twice counts once)."""

from __future__ import annotations

import logging
from collections.abc import Callable

from gputui.diagnostics.engine import DiagnosticsState
from gputui.model import Snapshot

# Takes each new reading of one machine, returns the verdict and findings after it. Stateful (windows, hysteresis),
# so each machine gets its own.
Diagnose = Callable[[Snapshot], DiagnosticsState]

log = logging.getLogger(__name__)


def new_diagnose() -> Diagnose:
    """A fresh diagnostics engine for one machine, as a function of each new reading."""
    from gputui.diagnostics.engine import DiagnosticsEngine

    engine = DiagnosticsEngine()

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
