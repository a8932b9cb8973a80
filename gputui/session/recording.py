"""`--record` as a sink of the loop: each tick goes to the writer from the sampling thread, never the event loop."""

from __future__ import annotations

from gputui.diagnostics.tick import Tick
from gputui.record.writer import RecordingWriter
from gputui.session.sampling import Sink


def record_ticks(writer: RecordingWriter) -> Sink:
    """The sink that hands each tick, its finding transitions and verdict changes to the writer (which only
    enqueues)."""

    def record(tick: Tick) -> None:
        writer.record(tick.snapshot, tick.active, tick.verdict)

    return record


def record_badge(writer: RecordingWriter) -> tuple[str, str | None]:
    """The header's badge ("REC", or "REC STOPPED" once the writer gave up) and its warning, if any."""
    return ("REC STOPPED" if writer.stopped else "REC"), writer.warning
