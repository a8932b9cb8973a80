"""Replay in the monitor: every recorded tick passed goes through the same diagnostics engine and history.

The source plays on its own clock; each poll `advance()`s it and feeds all the ticks passed since the last
poll to the engine, so findings come out as they would have live at any speed, and none is fed twice while
paused. The UI takes the same ticks for its history with `drain()`: a tick message a newer one replaced loses
nothing, since the ticks wait here until taken. Playback stops on the last tick, and `replay_notes` says so,
and which marks the play position has just passed.
"""

from __future__ import annotations

import threading
from collections import deque

from gputui.diagnostics.engine import DiagnosticsEngine, DiagnosticsState
from gputui.diagnostics.tick import Tick, tick_of
from gputui.formatting import hms
from gputui.model import Snapshot
from gputui.record.format import format_clock
from gputui.sources.playback import ReplaySource

# Ticks kept for a UI that has not taken them; beyond this the oldest go (its history holds fewer anyway).
BACKLOG = 3600
# A mark is said for this long of playing time after the play position passes it: a minute on screen at any speed.
MARK_SHOWN_S = 60.0
# At most this many marks at once, the newest; each takes a header row.
MARKS_SHOWN = 2


class ReplaySampler:
    """Plays a ReplaySource; `take()` may run on the sampling thread and a seek's worker, one at a time. A seek
    starts the findings over in an engine of its own, made like the first."""

    def __init__(self, source: ReplaySource, engine: DiagnosticsEngine | None = None) -> None:
        self.source = source
        self.engine = engine if engine is not None else DiagnosticsEngine()
        self._take_lock = threading.Lock()
        self._backlog_lock = threading.Lock()
        self._backlog: deque[Snapshot] = deque(maxlen=BACKLOG)
        self._jumped = False
        self._state = DiagnosticsState(active=(), closed=())

    def take(self) -> Tick:
        with self._take_lock:
            step = self.source.advance()
            if step.jumped:  # a seek: the findings start over from the history before the new position
                self.engine = DiagnosticsEngine(self.engine.config, self.engine.lang, self.engine.price)
            for snapshot in step.ticks:
                self._state = self.engine.update(snapshot)
            with self._backlog_lock:
                if step.jumped:
                    self._backlog.clear()
                    self._jumped = True
                self._backlog.extend(step.ticks)
            current = self.source.current
            state = self._state
            if self.source.ticks_shown == self.source.tick_count:
                self.source.pause()  # the end: playback stops there rather than idling on the last tick
        assert current is not None  # advance() always hands over at least the first tick
        return tick_of(current, state)

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


def replay_notes(source: ReplaySource) -> list[str]:
    """What the header says of the recording at the play position: its end, and the marks passed within the last
    minute of playing time (MARK_SHOWN_S times the speed), however the position got there, played or seeked
    over; a seek back before a mark hides it again. E.g. "mark 12:03:07: changed num_workers to 8"."""
    current = source.current
    if current is None:
        return []
    notes = []
    if source.ticks_shown == source.tick_count:
        notes.append(
            f"end of recording, {source.ticks_shown}/{source.tick_count} ticks: playback stopped (← or [ to go back)"
        )
    now, since = current.timestamp, current.timestamp - MARK_SHOWN_S * source.speed
    utc_offset = source.recording.header.utc_offset_s
    marks = [e for e in source.recording.events if e.kind == "mark" and since < e.t <= now]
    notes += [f"mark {format_clock(m.t, utc_offset)}: {m.data.get('label', '')}" for m in marks[-MARKS_SHOWN:]]
    return notes
