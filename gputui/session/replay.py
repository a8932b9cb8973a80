"""Replay in the monitor: every recorded tick passed goes through the same diagnostics engine and history.

The source plays on its own clock; each poll `advance()`s it and feeds all the ticks passed since the last
poll to the engine, so findings come out as they would have live at any speed, and none is fed twice while
paused. The UI takes the same ticks for its history with `drain()`: a tick message a newer one replaced loses
nothing, since the ticks wait here until taken.
"""

from __future__ import annotations

import threading
from collections import deque

from gputui.diagnostics.engine import DiagnosticsEngine, DiagnosticsState
from gputui.formatting import hms
from gputui.model import Snapshot
from gputui.session.sampling import Sampler, Tick
from gputui.sources.replay import ReplaySource

# Ticks kept for a UI that has not taken them; beyond this the oldest go (its history holds fewer anyway).
BACKLOG = 3600


class ReplaySampler(Sampler):
    """Plays a ReplaySource; `take()` may run on the sampling thread and a seek's worker, one at a time."""

    def __init__(self, source: ReplaySource, engine: DiagnosticsEngine | None = None) -> None:
        super().__init__(source, engine)
        self.replay = source
        self._take_lock = threading.Lock()
        self._backlog_lock = threading.Lock()
        self._backlog: deque[Snapshot] = deque(maxlen=BACKLOG)
        self._jumped = False
        self._state = DiagnosticsState(active=(), closed=())

    def take(self) -> Tick:
        with self._take_lock:
            step = self.replay.advance()
            if step.jumped:  # a seek: the findings start over from the history before the new position
                self.engine = DiagnosticsEngine(self.engine.config, self.engine.lang)
            for snapshot in step.ticks:
                self._state = self.engine.update(snapshot)
            with self._backlog_lock:
                if step.jumped:
                    self._backlog.clear()
                    self._jumped = True
                self._backlog.extend(step.ticks)
            current = self.replay.current
            state = self._state
        assert current is not None  # advance() always hands over at least the first tick
        return Tick(snapshot=current, active=state.active, closed=state.closed, verdict=state.verdict)

    def drain(self) -> tuple[bool, list[Snapshot]]:
        """The ticks passed since the last call, oldest first, and whether a seek came first (start over)."""
        with self._backlog_lock:
            jumped, ticks = self._jumped, list(self._backlog)
            self._jumped = False
            self._backlog.clear()
        return jumped, ticks


def replay_status(source: ReplaySource) -> str:
    """Where the replay is and how fast, e.g. "01:12:30 / 08:00:00 x4"."""
    return f"{hms(source.position, pad_hours=True)} / {hms(source.duration, pad_hours=True)} x{source.speed:g}"
