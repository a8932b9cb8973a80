"""The diagnostics as the exporter and the fleet poller use them: one function per machine's stream of readings."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from gputui.diagnostics.findings import Finding
from gputui.model import Snapshot

# Takes each new reading of one machine, returns the findings open after it. Stateful (windows, hysteresis), so each
# machine gets its own.
Diagnose = Callable[[Snapshot], Sequence[Finding]]


def new_diagnose() -> Diagnose:
    """A fresh diagnostics engine for one machine, as a function of each new reading."""
    from gputui.diagnostics.engine import DiagnosticsEngine

    engine = DiagnosticsEngine()

    def diagnose(snapshot: Snapshot) -> Sequence[Finding]:
        return tuple(engine.update(snapshot).active)

    return diagnose
