"""A recording played back as a Source, on a virtual clock that can pause, seek and run faster or slower.

The monitor can treat it as any source (`sample()` gives the tick at the play position), but to show what it
would have shown live it should feed every recorded tick to its history and diagnostics: `advance()` returns
all ticks passed since the last call, and after a seek it says `jumped` and returns the minute before the new
position, so the caller starts its history and its diagnostics engine over from those.
"""

from __future__ import annotations

import bisect
import dataclasses
import functools
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Concatenate, ParamSpec, TypeVar

from gputui.formatting import hms
from gputui.model import Snapshot, SystemInfo
from gputui.record.format import RecordedEvent, RecordingError, format_clock
from gputui.record.reader import Recording, load_recording
from gputui.sources.base import SourceUnavailable

P = ParamSpec("P")
R = TypeVar("R")

SPEEDS: tuple[float, ...] = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0)
# After a seek, this much of what came before the new position is handed over to rebuild history and findings.
HISTORY_S = 60.0


@dataclass(frozen=True, slots=True)
class ReplayStep:
    """What `advance()` hands over: the ticks to feed, oldest first, and whether to start over with them."""

    ticks: tuple[Snapshot, ...]
    jumped: bool = False


def _locked(method: Callable[Concatenate[ReplaySource, P], R]) -> Callable[Concatenate[ReplaySource, P], R]:
    """The sampling thread plays while the UI thread seeks and pauses: one call at a time."""

    @functools.wraps(method)
    def run(self: ReplaySource, /, *args: P.args, **kwargs: P.kwargs) -> R:
        with self._lock:
            return method(self, *args, **kwargs)

    return run


class ReplaySource:
    """The Source protocol over a recording; safe to drive from the sampling thread and the UI thread at once.

    `clock` returns seconds (default time.monotonic) and drives playback; tests inject one, or `step()`.
    `start` is the play position in seconds from the first tick.
    """

    def __init__(
        self,
        recording: Recording | str | Path,
        *,
        speed: float = 1.0,
        start: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        history_s: float = HISTORY_S,
    ) -> None:
        self._source = recording
        self._recording: Recording | None = recording if isinstance(recording, Recording) else None
        self._clock = clock
        self._speed = _check_speed(speed)
        self._start = start
        self._history_s = history_s
        self._system: SystemInfo | None = None
        self._offsets: list[float] = []
        self._pos = 0.0
        self._anchor = 0.0
        self._paused = False
        self._cursor = -1
        self._jump = True
        self._lock = threading.RLock()

    # -- Source protocol -----------------------------------------------------------------------------------

    def open(self) -> SystemInfo:
        """Read the recording; raises SourceUnavailable when it cannot be read or holds no tick."""
        if self._recording is None:
            try:
                self._recording = load_recording(Path(str(self._source)))
            except RecordingError as exc:
                raise SourceUnavailable(str(exc)) from exc
        recording = self._recording
        if not recording.ticks:
            raise SourceUnavailable(f"{recording.path} holds no samples to replay")
        original = recording.header.system
        self._system = dataclasses.replace(original, source="replay", recorded_source=original.source)
        first = recording.start
        self._offsets = [t - first for t in recording.ticks.timestamps]
        self._cursor = -1
        self._jump_to(0.0 if self._start is None else self._start)
        return self._system

    @_locked
    def sample(self) -> Snapshot:
        """The tick at the play position (the ticks passed over on the way are dropped: see `advance()`)."""
        self.advance()
        return self._deliver(self._cursor)

    def close(self) -> None:
        self._system = None

    # -- playback ------------------------------------------------------------------------------------------

    @property
    def recording(self) -> Recording:
        if self._recording is None:
            raise RuntimeError("ReplaySource used before open()")
        return self._recording

    @property
    def warnings(self) -> list[str]:
        """What the reader had to step around in the file."""
        return self.recording.warnings

    @property
    def duration(self) -> float:
        return self._offsets[-1] if self._offsets else 0.0

    @property
    def position(self) -> float:
        """Seconds from the first tick to the play position."""
        if self._paused:
            return self._pos
        return min(self.duration, self._pos + (self._clock() - self._anchor) * self._speed)

    @property
    def at_end(self) -> bool:
        return self.position >= self.duration

    @property
    def tick_count(self) -> int:
        return len(self._offsets)

    @property
    def ticks_shown(self) -> int:
        """How many ticks, from the first, are up to the one last handed over: 25 of 25 at the end."""
        return self._cursor + 1

    @property
    def speed(self) -> float:
        return self._speed

    @property
    def paused(self) -> bool:
        return self._paused

    @property
    @_locked
    def current(self) -> Snapshot | None:
        """The last tick handed over, None before the first."""
        return self._deliver(self._cursor) if self._cursor >= 0 else None

    @_locked
    def advance(self) -> ReplayStep:
        """Every tick from the last one handed over up to the play position; after a seek, the history before."""
        self._require_open()
        target = max(0, bisect.bisect_right(self._offsets, self.position) - 1)
        if self._jump:
            self._jump = False
            first = bisect.bisect_left(self._offsets, self._offsets[target] - self._history_s)
            self._cursor = target
            return ReplayStep(tuple(self._deliver(i) for i in range(first, target + 1)), jumped=True)
        ticks = tuple(self._deliver(i) for i in range(self._cursor + 1, target + 1))
        self._cursor = max(self._cursor, target)
        return ReplayStep(ticks)

    @_locked
    def step(self, count: int = 1) -> ReplayStep:
        """Move exactly `count` ticks (back when negative) and hand them over: playback without a clock."""
        self._require_open()
        index = min(max(self._cursor + count, 0), len(self._offsets) - 1)
        self._jump_to(self._offsets[index])
        return self.advance()

    @_locked
    def seek(self, delta_s: float) -> None:
        """Move the play position by `delta_s` seconds (back when negative), within the recording."""
        self._jump_to(self.position + delta_s)

    @_locked
    def seek_to(self, offset_s: float) -> None:
        self._jump_to(offset_s)

    @_locked
    def set_speed(self, speed: float) -> None:
        self._pos = self.position
        self._anchor = self._clock()
        self._speed = _check_speed(speed)

    @_locked
    def faster(self) -> float:
        """The next speed up in SPEEDS; returns the new speed."""
        self.set_speed(next((s for s in SPEEDS if s > self._speed), SPEEDS[-1]))
        return self._speed

    @_locked
    def slower(self) -> float:
        self.set_speed(next((s for s in reversed(SPEEDS) if s < self._speed), SPEEDS[0]))
        return self._speed

    @_locked
    def pause(self) -> None:
        if not self._paused:
            self._pos = self.position
            self._paused = True

    @_locked
    def resume(self) -> None:
        if self._paused:
            self._anchor = self._clock()
            self._paused = False

    @_locked
    def toggle_pause(self) -> bool:
        """Pause or resume; returns True when now paused."""
        if self._paused:
            self.resume()
        else:
            self.pause()
        return self._paused

    def events_until(self, t: float) -> list[RecordedEvent]:
        """The recorded events (marks, findings, probe results) up to recording time `t`."""
        return [event for event in self.recording.events if event.t <= t]

    @_locked
    def recording_now(self) -> datetime:
        """The recording machine's wall clock at the play position (naive, in its local time): the monitor's
        header clock during replay."""
        tick = self.current
        t = tick.timestamp if tick else self.recording.start
        return datetime.fromtimestamp(t + self.recording.header.utc_offset_s, tz=timezone.utc).replace(tzinfo=None)

    @_locked
    def status_text(self) -> str:
        """E.g. "03:12:40  +1:02:40 / 8:00:00  x4  paused": the recording's clock, where, how fast."""
        tick = self.current
        utc_offset = self.recording.header.utc_offset_s
        clock = format_clock(tick.timestamp, utc_offset) if tick else "--:--:--"
        text = f"{clock}  +{hms(self.position)} / {hms(self.duration)}  x{self._speed:g}"
        return text + ("  paused" if self._paused else "")

    # -- inside --------------------------------------------------------------------------------------------

    def _require_open(self) -> None:
        if self._system is None:
            raise RuntimeError("ReplaySource used before open() or after close()")

    def _deliver(self, index: int) -> Snapshot:
        assert self._system is not None
        return dataclasses.replace(self.recording.ticks[index], system=self._system)

    def _jump_to(self, offset_s: float) -> None:
        """Move the play position; a move back, or forward past the history window, starts the views over."""
        now = self.position if self._offsets else 0.0
        offset_s = min(max(offset_s, 0.0), self.duration)
        delivered = self._offsets[self._cursor] if self._cursor >= 0 else None
        if delivered is None or offset_s < delivered or offset_s - now > self._history_s:
            self._jump = True
        self._pos = offset_s
        self._anchor = self._clock()


def resolve_start(recording: Recording, text: str) -> float:
    """`--start` as seconds from the first tick: "HH:MM[:SS]" is the recording machine's clock (the time the
    header and the report show), "+H:MM:SS", "+MM:SS" or "+SECONDS" an offset. Raises ValueError, with the
    recording's span when the time is not in it."""
    text = text.strip()
    relative = text.startswith("+")
    try:
        parts = [float(p) for p in text.lstrip("+").split(":")]
    except ValueError:
        raise ValueError(f"not a time: {text!r} (expected HH:MM:SS, or +H:MM:SS from the start)") from None
    if not parts or len(parts) > 3 or any(p < 0 for p in parts) or (not relative and len(parts) < 2):
        raise ValueError(f"not a time: {text!r} (expected HH:MM:SS, or +H:MM:SS from the start)")
    seconds = 0.0
    for part in parts:
        seconds = seconds * 60 + part
    first, utc_offset = recording.start, recording.header.utc_offset_s
    if relative:
        offset = seconds
    else:
        if seconds >= 86400:
            raise ValueError(f"not a time of day: {text!r}")
        start_of_day = (first + utc_offset) % 86400
        offset = (seconds - start_of_day) % 86400
    if offset > recording.duration_s:
        span = f"{format_clock(first, utc_offset)} to {format_clock(recording.end, utc_offset)}"
        raise ValueError(f"{text} is not in the recording: it runs from {span} (+{hms(recording.duration_s)})")
    return offset


def _check_speed(speed: float) -> float:
    if not SPEEDS[0] <= speed <= SPEEDS[-1]:
        raise ValueError(f"replay speed must be between {SPEEDS[0]:g} and {SPEEDS[-1]:g}, not {speed:g}")
    return speed
