"""Recording as a sink of the loop: each tick goes to the writer from the sampling thread, never the event loop.

A writer is either a recording file's (`--record FILE`, record.writer.RecordingWriter) or a history store's
(store.writer.StoreWriter): both only enqueue, and both say in `warning` what went wrong and in `stopped` whether
they gave up.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from gputui.diagnostics.findings import Finding
from gputui.diagnostics.tick import Tick
from gputui.diagnostics.verdict import Verdict
from gputui.model import Snapshot
from gputui.record.format import RecordedEvent
from gputui.session.sampling import Sink


class Recorder(Protocol):
    """What the session, the UI's REC badge and the commands use of a writer."""

    @property
    def path(self) -> Path: ...

    @property
    def stopped(self) -> bool: ...

    @property
    def warning(self) -> str | None: ...

    def record(self, snapshot: Snapshot, active: Sequence[Finding], verdict: Verdict | None = None) -> None: ...

    def put_event(self, event: RecordedEvent) -> None: ...

    def mark(self, label: str, t: float | None = None) -> None: ...

    def close(self) -> None: ...


def record_ticks(writer: Recorder) -> Sink:
    """The sink that hands each tick, its finding transitions and verdict changes to the writer (which only
    enqueues)."""

    def record(tick: Tick) -> None:
        writer.record(tick.snapshot, tick.active, tick.verdict)

    return record


def record_badge(writer: Recorder) -> tuple[str, str | None]:
    """The header's badge ("REC", or "REC STOPPED" once the writer gave up) and its warning, if any."""
    return ("REC STOPPED" if writer.stopped else "REC"), writer.warning
