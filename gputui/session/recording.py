"""`--record` in the monitor: each tick goes to the writer from the sampling thread, never the event loop."""

from __future__ import annotations

from gputui.diagnostics.engine import DiagnosticsEngine
from gputui.record.writer import RecordingWriter
from gputui.session.sampling import Sampler, Tick
from gputui.sources.base import Source


class RecordingSampler(Sampler):
    """A Sampler that hands each tick, its finding transitions and verdict changes to the writer (which only
    enqueues)."""

    def __init__(self, source: Source, writer: RecordingWriter, engine: DiagnosticsEngine | None = None) -> None:
        super().__init__(source, engine)
        self.writer = writer

    def take(self) -> Tick:
        tick = super().take()
        self.writer.record(tick.snapshot, tick.active, tick.verdict)
        return tick


def record_badge(writer: RecordingWriter) -> tuple[str, str | None]:
    """The header's badge ("REC", or "REC STOPPED" once the writer gave up) and its warning, if any."""
    return ("REC STOPPED" if writer.stopped else "REC"), writer.warning
