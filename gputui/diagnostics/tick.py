"""A Tick: one reading and what the diagnostics made of it, the unit every sink and view of a session takes.

It lives with the diagnostics, below the session that makes it, so that the sinks the session feeds (the recording,
the alerts) and the session's own parts (the stack sampler) read it without importing the loop that makes it.
"""

from __future__ import annotations

from dataclasses import dataclass

from gputui.diagnostics.engine import DiagnosticsState, Pending
from gputui.diagnostics.findings import Finding
from gputui.diagnostics.verdict import Verdict
from gputui.model import Snapshot


@dataclass(frozen=True, slots=True)
class Tick:
    """One reading, the verdict, the findings open (and recently closed) after it, and those about to open."""

    snapshot: Snapshot
    active: tuple[Finding, ...] = ()
    closed: tuple[Finding, ...] = ()
    verdict: Verdict | None = None
    pending: tuple[Pending, ...] = ()  # conditions seen, not held long enough yet to open (DiagnosticsState)


def tick_of(snapshot: Snapshot, state: DiagnosticsState | None) -> Tick:
    """The tick of a reading and what the engine made of it (None: no diagnostics in this session)."""
    if state is None:
        return Tick(snapshot)
    return Tick(snapshot, state.active, state.closed, state.verdict, state.pending)
