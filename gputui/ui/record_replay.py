"""What recording and replay add to the monitor app: their keys and the header's parts.

GpuTuiApp inherits this and hands it, when built, the recorder, the replay, the recording's clock and where to
say a word (the header's notice rows); nothing else of the app is read here. Replay keys work only in replay, `M`
only while recording; the footer shows only the keys that work: in replay "space Play/pause", "← → Seek" and
"< > Speed" (`p` pauses too, bound beside the live pause in the app; `[` `]` are in the help). Replay keys are
priority bindings (the process table would take left/right), so they step aside while a text box has the focus.
A replay key posts ReplayMoved, so that the app shows the new position at once.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import ClassVar, Literal

from textual.binding import Binding, BindingType
from textual.widgets import Input

from gputui.probes.protocol import BadLine, Message, Progress, to_line
from gputui.record.format import probe_event
from gputui.session.recording import Recorder, record_badge
from gputui.session.replay_sampler import replay_notes, replay_status
from gputui.sources.playback import ReplaySource
from gputui.ui.live_app import LiveApp
from gputui.ui.messages import ReplayMoved
from gputui.ui.screens.mark import MarkScreen

# Seeking and the playing speed each take one footer entry ("← → Seek", "< > Speed").
SEEK_KEYS = Binding.Group("Seek")
SPEED_KEYS = Binding.Group("Speed")


MARK_REFUSAL = "M marks a recording, and this session records nothing: start gputui with --record FILE"
REPLAY_MARK_REFUSAL = "no marks in a replay: they go into a recording while it is made (--record)"


class RecordReplayApp(LiveApp):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("M", "mark", "Mark", key_display="M"),
        # The same key out of the footer, where a front end gives Mark's room to another key (GpuTuiApp: `K`).
        Binding("M", "mark_unlisted", "Mark", show=False),
        # Where nothing is recorded, `M` says so rather than nothing.
        Binding("M", "mark_refused", "Mark", show=False),
        # One key, two entries: the footer says what space does now ("Pause" while playing, "Play" while paused).
        Binding("space", "replay_stop", "Pause", key_display="space", priority=True),
        Binding("space", "replay_play", "Play", key_display="space", priority=True),
        Binding("left", "replay_seek(-10)", "-10s", key_display="←", priority=True, group=SEEK_KEYS),
        Binding("right", "replay_seek(10)", "+10s", key_display="→", priority=True, group=SEEK_KEYS),
        Binding("left_square_bracket", "replay_seek(-60)", "-1m", key_display="[", priority=True, show=False),
        Binding("right_square_bracket", "replay_seek(60)", "+1m", key_display="]", priority=True, show=False),
        Binding("less_than_sign", "replay_slower", "Slower play", key_display="<", priority=True, group=SPEED_KEYS),
        Binding("greater_than_sign", "replay_faster", "Faster play", key_display=">", priority=True, group=SPEED_KEYS),
    ]

    def __init__(
        self,
        *,
        recorder: Recorder | None,
        replay: ReplaySource | None,
        timeline: Callable[[], float | None],
        say: Callable[[str], None],
    ) -> None:
        """`timeline()` is the recording's time now (the newest reading's timestamp, None before the first): a
        simulated or replayed source's clock is not the wall clock. `say(text)` shows a one-off word under the
        header."""
        super().__init__()
        self.recorder = recorder
        self.replay = replay
        self._timeline = timeline
        self._say = say
        self._footer_paused: bool | None = None  # the playing state the footer's space entry was chosen for

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action.startswith("replay_"):
            if self.replay is None or isinstance(self.focused, Input):
                return False
            if action in ("replay_stop", "replay_play"):
                return self.replay.paused == (action == "replay_play")
            return True
        if action in ("mark", "mark_unlisted"):
            return self.recorder is not None
        if action == "mark_refused":
            return self.recorder is None
        return True

    def mode_bindings(self) -> list[Binding]:
        """The keys of this class that work in this session (replay, or recording), for the help screen."""
        return [
            b
            for b in RecordReplayApp.BINDINGS
            if isinstance(b, Binding)
            and b.action not in ("mark_unlisted", "mark_refused")
            and (self.replay is not None if b.action.startswith("replay_") else self.recorder is not None)
        ]

    # -- header --------------------------------------------------------------------------------------------

    @property
    def replay_paused(self) -> bool:
        return self.replay is not None and self.replay.paused

    @property
    def recording_badge(self) -> str | None:
        return None if self.recorder is None else record_badge(self.recorder)[0]

    @property
    def recording_warning(self) -> str | None:
        return None if self.recorder is None else self.recorder.warning

    @property
    def replay_position(self) -> str | None:
        return None if self.replay is None else replay_status(self.replay)

    @property
    def replay_notes(self) -> tuple[str, ...]:
        """The recording's end, and the marks just passed, for the header's rows."""
        return () if self.replay is None else tuple(replay_notes(self.replay))

    def record_probe(self, message: Message | BadLine) -> None:
        """A probe's progress and how it ended, into the recording (with --record); the probe controller
        calls this for every message its runner yields."""
        if self.recorder is None or isinstance(message, BadLine):
            return
        kind: Literal["probe_progress", "probe_result"] = (
            "probe_progress" if isinstance(message, Progress) else "probe_result"
        )
        t = self._timeline()
        self.recorder.put_event(probe_event(kind, json.loads(to_line(message)), time.time() if t is None else t))

    # -- keys ----------------------------------------------------------------------------------------------

    def action_mark(self) -> None:
        if self.recorder is not None and not isinstance(self.screen, MarkScreen):
            self.push_screen(MarkScreen(), callback=self._drop_mark)

    def action_mark_unlisted(self) -> None:
        self.action_mark()

    @property
    def mark_refusal(self) -> str | None:
        """Why `M` drops no mark in this session; None where it does."""
        if self.recorder is not None:
            return None
        return REPLAY_MARK_REFUSAL if self.replay is not None else MARK_REFUSAL

    def action_mark_refused(self) -> None:
        if self.mark_refusal is not None:
            self._say(self.mark_refusal)

    def _drop_mark(self, label: str | None) -> None:
        if label is None or self.recorder is None:
            return
        self.recorder.mark(label, self._timeline())
        self._say(f"mark recorded: {label}")

    def action_replay_pause(self) -> None:
        self._steer(ReplaySource.toggle_pause)

    def action_replay_stop(self) -> None:
        self.action_replay_pause()

    def action_replay_play(self) -> None:
        self.action_replay_pause()

    def sync_play_key(self) -> None:
        """Playback paused or resumed (a key, or the end of the recording): the footer's space entry follows."""
        if self.replay is not None and self.replay.paused != self._footer_paused:
            self._footer_paused = self.replay.paused
            self.refresh_bindings()

    def action_replay_seek(self, seconds: float) -> None:
        self._steer(lambda replay: replay.seek(seconds))

    def action_replay_faster(self) -> None:
        self._steer(ReplaySource.faster)

    def action_replay_slower(self) -> None:
        self._steer(ReplaySource.slower)

    def _steer(self, move: Callable[[ReplaySource], object]) -> None:
        """A replay key: move the replay, then have the footer and the app show where it is now."""
        if self.replay is not None:
            move(self.replay)
            self.sync_play_key()
            self.post_message(ReplayMoved())
