"""What recording and replay add to the monitor app: their keys, the samplers, and the header's parts.

GpuTuiApp inherits this. Replay keys work only in replay, `M` only while recording; the footer shows only the
keys that work. Replay keys are priority bindings (the process table would take left/right), so they step
aside while a text box has the focus.
"""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import ClassVar, Literal

from textual.app import App
from textual.binding import Binding, BindingType
from textual.widgets import Input

from gputui.history import History
from gputui.model import Snapshot
from gputui.probes.protocol import BadLine, Message, Progress, to_line
from gputui.record.format import probe_event
from gputui.record.writer import RecordingWriter
from gputui.session.recording import RecordingSampler, record_badge
from gputui.session.replay import ReplaySampler, replay_status
from gputui.session.sampling import Sampler, Tick
from gputui.sources.base import Source
from gputui.sources.replay import ReplaySource
from gputui.ui.screens.main import MainScreen
from gputui.ui.screens.mark import MarkScreen


class RecordReplayApp(App[int]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("M", "mark", "Mark", key_display="M"),
        Binding("space", "replay_pause", "Play/pause", key_display="space", priority=True),
        Binding("left", "replay_seek(-10)", "-10s", key_display="←", priority=True),
        Binding("right", "replay_seek(10)", "+10s", key_display="→", priority=True),
        Binding("left_square_bracket", "replay_seek(-60)", "-1m", key_display="[", priority=True, show=False),
        Binding("right_square_bracket", "replay_seek(60)", "+1m", key_display="]", priority=True, show=False),
        Binding("less_than_sign", "replay_slower", "Slower play", key_display="<", priority=True, show=False),
        Binding("greater_than_sign", "replay_faster", "Faster play", key_display=">", priority=True, show=False),
    ]

    # Set by GpuTuiApp.
    auto_sample: bool
    history: History
    latest: Tick | None
    main: MainScreen
    sampler: Sampler
    tick: Callable[[], Awaitable[Tick]]

    recorder: RecordingWriter | None = None
    replay: ReplaySource | None = None

    def make_sampler(self, source: Source, recorder: RecordingWriter | None) -> Sampler:
        """The sampler for this source: a replay is played tick by tick; a recording writes each tick."""
        self.recorder = recorder
        if isinstance(source, ReplaySource):
            self.replay = source
            return ReplaySampler(source)
        if recorder is not None:
            return RecordingSampler(source, recorder)
        return Sampler(source)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action.startswith("replay_"):
            return self.replay is not None and not isinstance(self.focused, Input)
        if action == "mark":
            return self.recorder is not None
        return True

    def mode_bindings(self) -> list[Binding]:
        """The keys of this class that work in this session (replay, or recording), for the help screen."""
        return [
            b
            for b in RecordReplayApp.BINDINGS
            if isinstance(b, Binding)
            and (self.replay is not None if b.action.startswith("replay_") else self.recorder is not None)
        ]

    # -- what a tick adds ----------------------------------------------------------------------------------

    def passed_snapshots(self, tick: Tick) -> Sequence[Snapshot]:
        """The snapshots a tick adds to the history: live, its own; in replay, every recorded tick passed
        (after a seek the views start over from the minute before the new position)."""
        if not isinstance(self.sampler, ReplaySampler):
            return (tick.snapshot,)
        jumped, ticks = self.sampler.drain()
        if jumped:
            self.history.clear()
            self.main.gpus.panels = []  # their sparklines start over too; the next snapshot builds them anew
        return ticks

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

    def stop_recording(self) -> None:
        """Write what is queued and end the file properly; safe to call more than once."""
        if self.recorder is not None:
            self.recorder.close()

    def record_probe(self, message: Message | BadLine) -> None:
        """A probe's progress and how it ended, into the recording (with --record); the probe controller
        calls this for every message its runner yields."""
        if self.recorder is None or isinstance(message, BadLine):
            return
        kind: Literal["probe_progress", "probe_result"] = (
            "probe_progress" if isinstance(message, Progress) else "probe_result"
        )
        t = self.latest.snapshot.timestamp if self.latest is not None else time.time()
        self.recorder.put_event(probe_event(kind, json.loads(to_line(message)), t))

    # -- keys ----------------------------------------------------------------------------------------------

    def action_mark(self) -> None:
        if self.recorder is not None and not isinstance(self.screen, MarkScreen):
            self.push_screen(MarkScreen(), callback=self._drop_mark)

    def _drop_mark(self, label: str | None) -> None:
        if label is None or self.recorder is None:
            return
        # On the recording's timeline: a simulated source's clock is not the wall clock.
        self.recorder.mark(label, self.latest.snapshot.timestamp if self.latest is not None else None)
        self.notify(f"mark recorded: {label}", timeout=3)

    def action_replay_pause(self) -> None:
        if self.replay is not None:
            self.replay.toggle_pause()
            self._replay_moved()

    def action_replay_seek(self, seconds: float) -> None:
        if self.replay is not None:
            self.replay.seek(seconds)
            self._replay_moved()

    def action_replay_faster(self) -> None:
        if self.replay is not None:
            self.replay.faster()
            self._replay_moved()

    def action_replay_slower(self) -> None:
        if self.replay is not None:
            self.replay.slower()
            self._replay_moved()

    def _replay_moved(self) -> None:
        """Show the new position now rather than at the next poll (tests drive their ticks themselves)."""
        if self.auto_sample:
            self.run_worker(self.tick(), group="replay", exit_on_error=False)
