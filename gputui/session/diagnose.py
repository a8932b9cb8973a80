"""The diagnostics as the exporter and the fleet poller use them: one function per machine's stream of readings."""

from __future__ import annotations

from collections.abc import Callable

from gputui.diagnostics.engine import DiagnosticsState
from gputui.model import Snapshot

# Takes each new reading of one machine, returns the verdict and findings after it. Stateful (windows, hysteresis),
# so each machine gets its own.
Diagnose = Callable[[Snapshot], DiagnosticsState]


def new_diagnose() -> Diagnose:
    """A fresh diagnostics engine for one machine, as a function of each new reading."""
    from gputui.diagnostics.engine import DiagnosticsEngine

    engine = DiagnosticsEngine()

    return engine.update
