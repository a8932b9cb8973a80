"""Messages to the app: from the sampling thread, one per finished poll; from the replay keys, one per move."""

from __future__ import annotations

from textual.message import Message

from gputui.diagnostics.tick import Tick
from gputui.ui.notices import Level


class TickReady(Message):
    """A new reading and the diagnostics on it. A newer one replaces one still queued, so a slow screen
    never works through a backlog of stale frames."""

    def __init__(self, tick: Tick) -> None:
        super().__init__()
        self.tick = tick

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, TickReady)


class SampleFailed(Message):
    """The source raised while sampling; the app shows the error and keeps polling."""

    def __init__(self, error: str) -> None:
        super().__init__()
        self.error = error


class ReplayMoved(Message):
    """A replay key paused, moved or sped up the playback: the app shows the new position now, not at the next
    poll."""


class Said(Message):
    """Words from another thread for the notices under the header (an alert target that fails, once)."""

    def __init__(self, text: str, level: Level) -> None:
        super().__init__()
        self.text = text
        self.level = level


class Ring(Message):
    """An alert opened: ring the terminal bell (only the UI thread may write to the terminal)."""
