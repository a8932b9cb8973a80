"""The live monitor app: sampling off the event loop, and the keys.

The async boundary of the TUI lives here. One sampling thread (gputui.session.loop.SamplingLoop) takes one
sample at a time, so polls never overlap and a slow driver only slows the refresh, never the keyboard. Each sample
arrives as one TickReady message that replaces any still queued. Drawing is skipped while paused and for
views that are hidden; what is drawn goes through LineView, which sends the terminal only what changed.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from datetime import datetime
from pathlib import Path
from typing import ClassVar, TypeVar

from textual.binding import Binding, BindingType
from textual.widgets import Input
from textual.worker import Worker, WorkerState

from gputui.diagnostics.account import MAX_GAP_INTERVALS, Accountant, account_lines, tally_line
from gputui.diagnostics.findings import Finding, Severity
from gputui.diagnostics.groups import row_key
from gputui.diagnostics.tick import Tick
from gputui.history import History
from gputui.model import Snapshot
from gputui.probes.protocol import ProbeName
from gputui.probes.result_finding import PROBE_NAMES
from gputui.session.builder import Session
from gputui.session.last_seen import remember, since_when
from gputui.session.loop import RealTime, SamplingLoop, failure_text
from gputui.session.past import (
    NO_HISTORY,
    Pieces,
    Timeline,
    UtilPoint,
    Walk,
    chart_tail,
    held_span,
    judged,
    load_recent,
    load_since,
    nearest,
    read_around,
    util_of,
)
from gputui.session.replay_sampler import ReplaySampler
from gputui.session.sampling import INTERVALS, MAX_INTERVAL, MIN_INTERVAL
from gputui.session.signals import READONLY_REFUSAL, Target, decide_all, send, targets
from gputui.session.stacks import stacks_refusal
from gputui.store.errors import StoreError
from gputui.store.when import parse_when
from gputui.text.since_text import since_line
from gputui.ui.lean_update import LeanScreen
from gputui.ui.live_app import LIVE_KEYS
from gputui.ui.marks import Marks
from gputui.ui.messages import Ring, Said, SampleFailed, TickReady
from gputui.ui.notices import Level, Notices, reports
from gputui.ui.probes import REPLAY_REFUSAL, ProbeController
from gputui.ui.record_replay import RecordReplayApp
from gputui.ui.screens.confirm_signal import ConfirmSignal
from gputui.ui.screens.detail import DetailScreen
from gputui.ui.screens.goto import GotoScreen
from gputui.ui.screens.help import DESCRIPTIONS, HelpScreen
from gputui.ui.screens.main import MainScreen
from gputui.ui.screens.topo import TopoScreen
from gputui.ui.widgets.diagnostics import DiagnosticsPane
from gputui.ui.widgets.gpu_panel import SPARK_BUCKET_S, SPARK_CELLS
from gputui.ui.widgets.header import HeaderState
from gputui.ui.widgets.probe_status import ProbeStatus
from gputui.ui.widgets.processes import ProcessTable

log = logging.getLogger(__name__)
T = TypeVar("T")


def _capitalized(name: str) -> str:
    """The first letter upper-cased and the rest kept: str.capitalize() would make "PCIe" "Pcie"."""
    return name[:1].upper() + name[1:]


def terminal_fd() -> int | None:
    """The terminal the app draws on, watched so that the app ends with it."""
    for stream in (sys.__stdin__, sys.__stdout__):
        if stream is not None and stream.isatty():
            return stream.fileno()
    return None


# Keys that do one kind of thing share one footer entry ("s b m i n Probe"), and the refresh and sort keys are
# left to `?`, so that the footer, compact, fits 80 columns with `? Help` at its end on every screen.
PROBE_GROUP = Binding.Group("Probe")
VIEW_KEYS = Binding.Group("Views")
# What stops something: `x` a running probe, `K` a process (it asks which signal); "x K Stop" while a probe runs.
STOP_KEYS = Binding.Group("Stop")
# The key that starts each probe, in the footer's order; in replay the same keys only say why nothing starts.
PROBE_KEYS: dict[ProbeName, str] = {"stress": "s", "pcie": "b", "membw": "m", "disk": "i", "p2p": "n"}
MAIN_VIEW_ACTIONS = frozenset(
    {"toggle_diagnostics", "detail", "topo", "topo_unlisted", "filter", "sort", "fold_tree", "close_filter"}
)
# Actions on this machine now, which a replay is not: in replay they are hidden from the footer and the help, and
# do nothing (check_action); the replay keys take space and `p`, and a probe key says why it does nothing.
LIVE_ONLY = frozenset({"toggle_pause", "slower", "faster", "probe", "cancel_probe", "past_step", "past_live"})
# The pane's cost tally is worked out again at most this often (the monitor's bytes to the terminal are few).
TALLY_EVERY_S = 1.0
# `K` signals the process table's tagged or selected processes: it is in the footer while the table has the focus
# (at 80 columns the footer has room for it only there, and while recording only in the place of `M Mark`).
# Where no signal may be sent (a replay, a read-only session) it is gone from the footer and the help, and says why
# (signal_refused); the table's space then tags nothing.
SIGNAL_HINT = "K signals from the process table: tab to it, choose a process (space tags several), then K"
REPLAY_SIGNAL_REFUSAL = "no signals in a replay: its processes ran on the recorded machine, then"
SIMULATED_SIGNAL_REFUSAL = "no signals on the simulated machine: its processes are made up, not this machine's"
# `a` reads the stacks of the process table's selected process, or of the one the detail shows, now
# (`request_activity`, the session's JobStacks); like `K`, only live on this machine, and in the footer while the
# table has the focus or the detail shows a process.
ACTIVITY_HINT = "a reads a process's stacks from the process table (tab to it, choose a process, then a) or its detail"
ACTIVITY_OFF = "stack sampling is off in this session (config [stacks] enabled = false)"
# While the panels show a past tick (paused, walked back with ← →), what acts on this machine's processes now would
# act on what the screen does not show.
PAST_SIGNAL_REFUSAL = "no signals from the past: the table shows the processes as they were then (p: back to live)"
PAST_ACTIVITY_REFUSAL = "no stacks from the past: the table shows the processes as they were then (p: back to live)"
WALK_HINT = "paused: ← → walk back, [ ] by a minute, g: jump to a time, p: live"
WALK_HINT_RING = "paused: ← → walk back through this session, [ ] by a minute, p: live"
NO_PAST_IN_REPLAY = "a replay walks with its own keys: ← → seek, [ ] by a minute"


def off_loop(work: Callable[[], T]) -> asyncio.Future[T]:
    """`work` on a daemon thread of its own, awaited: a store read of an hour takes seconds, and a monitor quit
    meanwhile must not wait for it (asyncio.to_thread's pool is joined when the loop closes)."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()

    def settle(outcome: Callable[[], None]) -> None:
        if not future.done():
            outcome()

    def run() -> None:
        try:
            result = work()
        except Exception as exc:  # handed to the awaiting worker, which says it
            outcome: Callable[[], None] = functools.partial(future.set_exception, exc)
        else:
            outcome = functools.partial(future.set_result, result)
        with contextlib.suppress(RuntimeError):  # the loop has closed: the app is gone, nobody waits
            loop.call_soon_threadsafe(settle, outcome)

    threading.Thread(target=run, name="gputui-history", daemon=True).start()
    return future


def clamp_interval(seconds: float) -> float:
    return min(MAX_INTERVAL, max(MIN_INTERVAL, seconds))


class GpuTuiApp(RecordReplayApp):
    """The monitor. `auto_sample=False` leaves sampling to explicit `await app.tick()` calls (tests)."""

    CSS_PATH = "gputui.tcss"
    TITLE = "gputui"
    BINDINGS: ClassVar[list[BindingType]] = [
        *LIVE_KEYS,
        # A subclass's key replaces its base class's, so replay's `p` (play/pause, as space) is bound here.
        Binding("p", "replay_pause", "Play/pause", show=False),
        Binding("plus,equals_sign", "slower", "Slower refresh", key_display="+", show=False),
        Binding("minus", "faster", "Faster refresh", key_display="-", show=False),
        Binding("d", "toggle_diagnostics", "Findings"),
        Binding("enter", "detail", "Detail", key_display="enter", group=VIEW_KEYS),
        Binding("t", "topo", "Topology", group=VIEW_KEYS),
        Binding("t", "topo_unlisted", "Topology", show=False),
        Binding("slash", "filter", "Filter", key_display="/"),
        Binding("o", "sort", "Sort", show=False),
        Binding("f", "fold_tree", "Tree", show=False),
        Binding("escape", "close_filter", "Close filter", show=False),
        *(
            Binding(key, f"probe('{probe}')", f"{_capitalized(PROBE_NAMES[probe])} probe", group=PROBE_GROUP)
            for probe, key in PROBE_KEYS.items()
        ),
        Binding("x", "cancel_probe", "Stop", group=STOP_KEYS),
        Binding("K", "signal", "Signal", key_display="K", group=STOP_KEYS),
        Binding("K", "signal_refused", "Signal", show=False),
        Binding("a", "sample_activity", "Activity"),
        Binding("a", "sample_activity_refused", "Activity", show=False),
        Binding("g", "past_goto", "Go to time", show=False),
        # In replay only, where the probes are not.
        Binding(",".join([*PROBE_KEYS.values(), "x"]), "probe_refused", "Probe", show=False),
        Binding("question_mark", "help", "Help", key_display="?"),
    ]

    def __init__(
        self,
        session: Session,
        *,
        auto_sample: bool = True,
        now: Callable[[], datetime] = datetime.now,
        history_size: int = 600,
        store: Path | None = None,
        store_named: bool = False,
        last_seen_file: Path | None = None,
    ) -> None:
        """`session` is opened, and closed after, by its builder (gputui/session/builder.py): the app samples it,
        and says the alerter's reports and rings its bell. `now` is the clock the header shows (a replay's is the
        recording's). `store`: the history store whose last hour joins the charts after the first frame, and whose
        minutes say what happened since the user last looked (`last_seen_file`, else the user's own); a store that is
        not there is said only where the user `store_named` it."""
        super().__init__(
            recorder=session.recorder,
            replay=session.replay,
            timeline=self._recording_time,
            say=self._say,
        )
        self.session = session
        # The history: read on workers once the first frame is drawn; never in a replay (it has its own past).
        self.store = store if self.replay is None else None
        self.last_seen_file = last_seen_file
        self.store_named = store_named
        self.past: Pieces | None = None  # the store's last hour, compact: the walk goes back through it
        self.history_problem: str | None = None if self.store is not None else NO_HISTORY  # why `g` cannot act
        self.since: str | None = None  # the since-you-looked line, once the history has joined the view
        self.walk: Walk | None = None  # the past tick the panels show while paused; None: now
        self.past_tick: Tick | None = None  # that tick, judged again (its findings and verdict)
        self._history_started = False
        self._walk_hinted = False
        # Live, the engine that judges every tick (probe results join it); a replay's seek starts its own anew.
        self.engine = session.engine
        # The views' colours, judged by the thresholds this engine's rules use (the config file's overrides too).
        self.marks = Marks.of(self.engine.config.thresholds)
        self.sampler = session.sampler
        self.system = session.system
        self.interval = session.interval_s  # within MIN_INTERVAL..MAX_INTERVAL: the commands see to it
        # Where the session's GPU time went, live only (a replay's is `gputui report`'s); its cost with a price.
        self.accountant = Accountant(MAX_GAP_INTERVALS * self.interval)
        self.price = session.config.cost.price
        self._tallied_at: float | None = None
        self.auto_sample = auto_sample
        self.history = History(history_size)
        self._history_size = history_size
        self.latest: Tick | None = None
        self.filter_text = ""
        # No signal is sent to a process, and the keys for it are gone ([monitor] readonly, --readonly).
        self.readonly = session.config.monitor.readonly
        # Starts a window of stack samples of a process: None when started, else why not; None: sampling is off.
        self.request_activity: Callable[[int], str | None] | None = (
            session.stacks.request if session.stacks is not None else None
        )
        self.main = MainScreen(on_shown=self._main_shown, marks=self.marks)
        self.main.table.taggable = self.signal_refusal is None
        self._now = now
        self._error: str | None = None
        self.notices = Notices()
        self._sampling: SamplingLoop[Tick] | None = None
        self.probes = ProbeController(
            self, refusal=REPLAY_REFUSAL if self.replay is not None else None, lang=self.engine.lang
        )
        session.alerts_through(say=self.say_from_thread, bell=self.ring_from_thread)

    def get_default_screen(self) -> MainScreen:
        return self.main

    def _main_shown(self) -> None:
        """The main view is composed (first call: start sampling) or uncovered again (draw what it missed)."""
        if self.auto_sample and self._sampling is None:
            self._sampling = self.session.sampling_loop(
                deliver=lambda tick: self.post_message(TickReady(tick)),
                failed=lambda error: self.post_message(SampleFailed(failure_text(error))),
                pace=RealTime(terminal_fd()),
                hangup=lambda: self.call_from_thread(self.exit),
            )
            self._sampling.start()
        self.draw()

    def on_unmount(self) -> None:
        """No tick is posted to the app once it has gone; the session's end closes its parts."""
        self.probes.kill_now()
        if self._sampling is not None:
            self._sampling.stop()

    # -- sampling ----------------------------------------------------------------------------------------

    async def tick(self) -> Tick:
        """Take one sample off the event loop and show it: the explicit clock the tests drive."""
        tick = await asyncio.to_thread(self.sampler.take)
        self.on_tick_ready(TickReady(tick))
        return tick

    def on_sample_failed(self, message: SampleFailed) -> None:
        self._error = message.error
        self._show_header()

    def on_tick_ready(self, message: TickReady) -> None:
        tick = message.tick
        snapshot = tick.snapshot
        self.latest = tick
        self.system = snapshot.system
        self._error = None
        for passed in self._passed_snapshots(tick):
            self.history.append(passed)
            self.main.add_snapshot(passed)
            self.notices.observe(passed.timestamp, reports(passed, self.recording_warning))
        self.probes.observe(snapshot)
        if self.replay is None:
            self._account(tick)
        self.sync_play_key()
        if self.past_tick is not None:  # the live reading went into the panels: they keep showing the past one
            self.main.gpus.show_samples(self.past_tick.snapshot)
        if not self.paused:
            self.draw()
        if self.store is not None and not self._history_started:
            self._history_started = True
            self.call_after_refresh(self._start_history, snapshot.timestamp)

    def _account(self, tick: Tick) -> None:
        """Add the tick to the session's account; with a price, the pane's tally, at most once a second."""
        self.accountant.add(tick.snapshot, tick.verdict)
        now = tick.snapshot.timestamp
        if self.price is None or (self._tallied_at is not None and now - self._tallied_at < TALLY_EVERY_S):
            return
        self._tallied_at = now
        account = self.accountant.account()
        self.main.findings.show_tally(tally_line(account, self.price, self.engine.lang) if account.totals else None)

    def _passed_snapshots(self, tick: Tick) -> Sequence[Snapshot]:
        """The snapshots a tick adds to the history: live, its own; in replay, every recorded tick passed
        (after a seek the views start over from the minute before the new position)."""
        if not isinstance(self.sampler, ReplaySampler):
            return (tick.snapshot,)
        jumped, ticks = self.sampler.drain()
        if jumped:
            self.history.clear()
            self.notices.clear()
            self.main.gpus.panels = []  # their sparklines start over too; the next snapshot builds them anew
        return ticks

    def _recording_time(self) -> float | None:
        """The recording's time now: the newest reading's own timestamp."""
        return self.latest.snapshot.timestamp if self.latest is not None else None

    # -- the history store -------------------------------------------------------------------------------

    def _start_history(self, now: float) -> None:
        """After the first frame: the store is read on a thread, and what it holds joins the view after."""
        self.run_worker(self._load_history(now), group="history", exclusive=True, exit_on_error=False)

    async def _load_history(self, now: float) -> None:
        """The since line first (the store's minutes, a few dozen ms), then the hour's ticks for the charts and the
        walk back (seconds for 8 GPUs), each read on a thread."""
        store, live, lang, keep = self.store, self.system, self.engine.lang, self._history_size
        assert store is not None

        def read_since() -> str | None:
            since = since_when(store, now, self.last_seen_file)
            held = load_since(store, since, now)
            return None if held is None else since_line(held.minutes, since, now, lang, ticks_held=held.ticks_held)

        def read_ticks() -> tuple[Pieces | None, list[Snapshot], list[UtilPoint], tuple[str, ...]] | None:
            """On a thread: the store's hour, and the ticks the charts show decoded (only those)."""
            recent = load_recent(store, now, live)
            if recent is None:
                return None
            said = (*recent.warnings, *([recent.note] if recent.note else []))
            if recent.note:
                return None, [], [], said
            tail, points = chart_tail(recent.ticks, now - SPARK_CELLS * SPARK_BUCKET_S, now, keep)
            return recent.ticks, tail, points, said

        try:
            since = await off_loop(read_since)
            if since is not None:
                self._say(since)
            read_back = None if since is None else await off_loop(read_ticks)
        except StoreError as exc:  # a newer store, a damaged one: said, and the monitor goes on as before
            self.history_problem = str(exc)
            self._say(str(exc), "warning")
            return
        if read_back is None:  # no store (or it went between the two reads)
            self.history_problem = NO_HISTORY
            if self.store_named:
                self._say(f"no history at {store}: start `gputui record --store {store}`", "warning")
            return
        self.past, tail, points, warnings = read_back
        self.since = since  # set last: the history has joined the view
        for said in warnings:
            self._say(said, "warning")
        self._join_past(tail, points)

    def _join_past(self, tail: Sequence[Snapshot], points: Sequence[UtilPoint]) -> None:
        """The past's ticks before the live ones: in the history (as far as its capacity keeps) and in the
        panels' sparklines, which are built again from the past's utilization on."""
        ring = list(self.history)
        first = ring[0].timestamp if ring else None
        older = [s for s in tail if first is None or s.timestamp < first]
        if not older:
            return
        self.history.clear()
        for snapshot in [*older, *ring]:
            self.history.append(snapshot)
        earlier = [p for p in points if first is None or p[0] < first]
        self.main.gpus.rebuild_sparklines([*earlier, *((s.timestamp, util_of(s)) for s in ring)])
        self.draw()

    def remember_looked(self) -> str | None:
        """When the monitor ends: the user has seen the store's history up to the latest tick (the next since
        line starts there). Off the event loop: the app has ended. None, or why it could not be noted."""
        if self.store is None or self.since is None or self.latest is None:
            return None
        return remember(self.store, self.latest.snapshot.timestamp, self.last_seen_file)

    # -- walking back --------------------------------------------------------------------------------------

    def action_toggle_pause(self) -> None:
        """Un-pausing returns to live from wherever the walk was; the first pause says how to walk back."""
        if self.paused:
            self._leave_past()
        elif not self._walk_hinted:
            self._walk_hinted = True
            self._say(WALK_HINT if self.store is not None else WALK_HINT_RING)
        super().action_toggle_pause()

    def action_past_live(self) -> None:
        self.action_toggle_pause()

    def _leave_past(self) -> None:
        self.walk = self.past_tick = None
        if self.latest is not None:
            self.main.gpus.show_samples(self.latest.snapshot)
        self.refresh_bindings()

    def action_past_step(self, seconds: float) -> None:
        """← → while paused: the tick `seconds` away on the timeline held (the store's hour, then the ring)."""
        walk = self.walk
        if walk is None:
            timeline = Timeline(self.past, list(self.history))
            if not timeline:
                return
            walk = Walk(timeline, len(timeline) - 1)
        stepped = walk.stepped(seconds)
        if stepped is None:
            where = "the newest tick held: p goes live" if seconds > 0 else "the oldest tick held here"
            self._say(f"{where}; g jumps to a time" if self.store is not None else where)
            if self.walk is None:
                self._show_walk(walk)
            return
        self._show_walk(stepped)

    def _show_walk(self, walk: Walk) -> None:
        self.walk = walk
        self.refresh_bindings()
        self._show_header()
        self.run_worker(self._judge(walk), group="past", exclusive=True, exit_on_error=False)

    async def _judge(self, walk: Walk) -> None:
        """The tick's findings and verdict, judged on a thread (an engine's two minutes of readings)."""
        tick = await off_loop(functools.partial(judged, walk.ticks, walk.index, self.engine.config, self.engine.lang))
        if self.walk is walk and self.paused:
            self.past_tick = tick
            self.main.gpus.show_samples(tick.snapshot)
            self._draw_past()

    def action_past_goto(self) -> None:
        """`g`: ask for a time, then read the store around it on a thread and walk there (paused)."""
        if self.replay is not None:
            self._say(NO_PAST_IN_REPLAY)
        elif self.history_problem is not None or self.store is None:
            self._say(self.history_problem or NO_HISTORY, "warning")
        elif not isinstance(self.screen, GotoScreen):
            self.push_screen(GotoScreen(), callback=self._goto)

    def _goto(self, asked: str | None) -> None:
        if asked is None or self.store is None:
            return
        now = self.latest.snapshot.timestamp if self.latest is not None else time.time()
        try:
            t = parse_when(asked, now)
        except ValueError as exc:
            self._say(str(exc), "warning")
            return
        self.run_worker(self._jump(self.store, t), group="past", exclusive=True, exit_on_error=False)

    async def _jump(self, store: Path, t: float) -> None:
        try:
            ticks = await off_loop(functools.partial(read_around, store, t))
        except StoreError as exc:
            self._say(str(exc), "warning")
            return
        if not ticks:
            held = await off_loop(functools.partial(held_span, store))
            span = "nothing" if held is None else f"{self._clock_of(held[0])} to {self._clock_of(held[1])}"
            self._say(f"the history holds nothing near {self._clock_of(t)} (it holds {span})", "warning")
            return
        if not self.paused:
            self.paused = True
        self._show_walk(Walk(ticks, nearest(ticks.timestamps, t)))

    def _clock_of(self, t: float) -> str:
        """A past time as the header says it: HH:MM:SS today, with its date on another day."""
        then = time.localtime(t)
        today = time.localtime(self.latest.snapshot.timestamp if self.latest is not None else time.time())
        same_day = (then.tm_year, then.tm_yday) == (today.tm_year, today.tm_yday)
        return time.strftime("%H:%M:%S" if same_day else "%Y-%m-%d %H:%M:%S", then)

    def _draw_past(self) -> None:
        tick = self.past_tick
        if tick is None or not self.main.is_attached or self.screen is not self.main:
            self._show_header()
            return
        with self.main.repainting_at_once(), self.batch_update():
            self.main.draw(tick, self._header_state(), self.filter_text)

    def on_replay_moved(self) -> None:
        """Show the new position now rather than at the next poll (tests drive their ticks themselves)."""
        if self.auto_sample:
            self.run_worker(self.tick(), group="replay", exit_on_error=False)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """A worker that raised (a replay refresh, a probe's run) is shown under the header and logged, never
        dropped; a probe's run also frees the probe keys and says so on its status line."""
        if event.state != WorkerState.ERROR:
            return
        worker, error = event.worker, event.worker.error
        what = worker.name or worker.group
        log.error("worker %s failed", what, exc_info=error)
        if worker.group == "probe" and error is not None:
            self.probes.failed(error)
        self._say(f"{what} failed: {type(error).__name__}: {error}", "alarm")

    def say_from_thread(self, text: str, level: Level = "warning") -> None:
        """_say for another thread (the alerts' delivery): safe from any thread, shown on the UI's."""
        self.post_message(Said(text, level))

    def ring_from_thread(self) -> None:
        """The terminal bell, asked for from another thread (the sampling loop, when an alert opens)."""
        self.post_message(Ring())

    def on_said(self, message: Said) -> None:
        self._say(message.text, message.level)

    def on_ring(self) -> None:
        self.bell()

    def _say(self, text: str, level: Level = "info") -> None:
        """A one-off word under the header, for a minute of sampled time: it covers nothing, as a toast would."""
        self.notices.say(text, level)
        self._show_header()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """The footer shows the keys that work here and now: in replay the live-only keys are hidden and inert
        (the probe keys fall to `probe_refused`, which says why); `x` only while a probe runs; the keys of the
        main view (the pane, the views, the filter, the sort) only there, not on the detail and topology views."""
        if action in LIVE_ONLY and self.replay is not None:
            return False
        if action == "past_step":
            return self.paused and self.replay is None and not isinstance(self.focused, Input)
        if action == "past_live":
            return self.walk is not None and not isinstance(self.focused, Input)
        if action == "probe_refused":
            return self.replay is not None
        if action == "cancel_probe" and not self.probes.running:
            return False
        signal_listed = self.signal_refusal is None and self.focused is self.main.table
        if action == "signal" and not signal_listed:
            return False
        # Both do not fit 80 columns beside `? Help`: while `K` is in the footer, `M` still marks, unlisted.
        if (action == "mark" and signal_listed) or (action == "mark_unlisted" and not signal_listed):
            return False
        if action == "signal_refused":
            return self.signal_refusal is not None or (self.screen is self.main and self.focused is not self.main.table)
        activity_listed = self.activity_refusal is None and self._activity_pid() is not None
        # `a` takes the place of `t Topology` in the footer while it is listed: `t` still opens the view, unlisted.
        if (action == "topo" and activity_listed) or (action == "topo_unlisted" and not activity_listed):
            return False
        if action == "sample_activity":
            return activity_listed
        if action == "sample_activity_refused":
            return not activity_listed and (self.screen is self.main or isinstance(self.screen, DetailScreen))
        if action in MAIN_VIEW_ACTIONS and self.screen is not self.main:
            return False
        return super().check_action(action, parameters)

    # -- what the probe controller needs (ProbeHost) -------------------------------------------------------

    def selected_gpu(self) -> int | None:
        return self.main.gpus.selected

    def latest_snapshot(self) -> Snapshot | None:
        return self.latest.snapshot if self.latest is not None else None

    def add_finding(self, finding: Finding, open_for_s: float) -> None:
        self.engine.add_external(finding, open_for_s=open_for_s)

    def mount_probe_status(self, status: ProbeStatus) -> None:
        """Under the panels, above the diagnostics; once the main view is there."""
        main = self.main
        if not status.is_mounted and main.is_mounted:
            main.mount(status, before=main.diagnostics)

    # -- drawing -----------------------------------------------------------------------------------------

    def _header_state(self) -> HeaderState:
        # Counted as the pane lists them: a finding alike on eight GPUs is one thing to fix, not eight. Walking the
        # past, the counts and the verdict are the past tick's, as the pane's findings are.
        shown = self.past_tick if self.past_tick is not None and self.paused else self.latest
        rows = {row_key(f): f.severity for f in (shown.active if shown is not None else ())}
        return HeaderState(
            critical=sum(1 for severity in rows.values() if severity == Severity.CRITICAL),
            warnings=sum(1 for severity in rows.values() if severity == Severity.WARNING),
            info=sum(1 for severity in rows.values() if severity == Severity.INFO),
            system=self.system,
            interval_s=self.interval,
            clock=self._now().strftime("%H:%M:%S"),
            paused=self.paused or self.replay_paused,
            notices=self.notices.rows(),
            flags=self.notices.badges(),
            error=self._error,
            recording=self.recording_badge,
            replay=self.replay_position,
            verdict=shown.verdict if shown is not None else None,
            replay_notes=self.replay_notes,
            past=None if self.walk is None else f"PAST {self._clock_of(self.walk.at)} — space/p: live",
        )

    def _show_header(self) -> None:
        """Also while paused: a notice's rows come and go with the ticks, and the header's height with them."""
        state = self._header_state()
        self.main.header.show(state)
        self.main.relayout()
        if isinstance(self.screen, (DetailScreen, TopoScreen)):
            self.screen.show_header(state)

    def draw(self) -> None:
        """Push the latest tick to the view on screen; the main view waits while another view covers it."""
        tick = self.latest
        if self.paused and self.past_tick is not None:
            self._draw_past()
            return
        if tick is None or self.paused:
            self._show_header()
            return
        screen = self.screen
        repainting = screen.repainting_at_once() if isinstance(screen, LeanScreen) else nullcontext()
        with repainting, self.batch_update():
            if isinstance(self.screen, DetailScreen):
                self.screen.show(self.history, tick.snapshot, self._header_state())
            elif isinstance(self.screen, TopoScreen):
                self.screen.show(tick.snapshot, self._header_state())
            elif self.main.is_attached:
                self.main.draw(tick, self._header_state(), self.filter_text)

    # -- actions -----------------------------------------------------------------------------------------

    def _set_interval(self, seconds: float) -> None:
        self.interval = clamp_interval(seconds)
        self.accountant.max_gap_s = MAX_GAP_INTERVALS * self.interval
        self._show_header()
        if self._sampling is not None:
            self._sampling.set_interval(self.interval)

    def action_slower(self) -> None:
        self._set_interval(next((s for s in INTERVALS if s > self.interval), MAX_INTERVAL))

    def action_faster(self) -> None:
        self._set_interval(next((s for s in reversed(INTERVALS) if s < self.interval), MIN_INTERVAL))

    def action_toggle_diagnostics(self) -> None:
        if self.screen is self.main:
            self.main.toggle_diagnostics()
            self.draw()

    def action_detail(self, index: int | None = None, pid: int | None = None) -> None:
        if self.screen is not self.main:
            return
        if index is None:
            index = self.main.gpus.selected
        if index is None:
            return
        self.push_screen(
            DetailScreen(index, self.marks, on_shown=self.draw, pid=pid, activity_refusal=self.activity_refusal)
        )

    def action_topo(self) -> None:
        if self.screen is self.main:
            self.push_screen(TopoScreen(on_shown=self.draw))

    def action_topo_unlisted(self) -> None:
        self.action_topo()

    def on_diagnostics_pane_finding_selected(self, message: DiagnosticsPane.FindingSelected) -> None:
        self.main.gpus.highlight(message.finding.gpus, message.finding.metric)
        self.main.relayout()  # its advice may need more of the pane

    def on_process_table_tag_refused(self) -> None:
        self.action_signal_refused()

    def on_process_table_chosen(self, message: ProcessTable.Chosen) -> None:
        self.action_detail(message.gpu, message.pid)

    def action_filter(self) -> None:
        if self.screen is not self.main:
            return
        box = self.main.filter_box
        box.display = True
        box.focus()
        self.main.relayout()

    def on_input_changed(self, event: Input.Changed) -> None:
        self.filter_text = event.value.strip()
        if self.latest is not None:
            self.main.show_processes(self.latest.snapshot, self.filter_text)
            self.main.relayout()

    def on_input_submitted(self) -> None:
        self.action_close_filter()

    def action_close_filter(self) -> None:
        box = self.main.filter_box
        if self.screen is not self.main or not box.display:
            return
        box.display = False
        self.main.table.focus()
        self.main.relayout()

    def action_sort(self) -> None:
        if self.screen is self.main:
            self.main.table.cycle_sort()

    def action_fold_tree(self) -> None:
        if self.screen is self.main:
            self.main.table.toggle_tree()

    def action_probe(self, probe: ProbeName) -> None:
        self.probes.start(probe)

    def action_cancel_probe(self) -> None:
        self.probes.cancel()

    def action_probe_refused(self) -> None:
        self.probes.refuse()

    @property
    def signal_refusal(self) -> str | None:
        """Why no signal may be sent in this session; None where it may."""
        if self.replay is not None:
            return REPLAY_SIGNAL_REFUSAL
        if self.walk is not None:
            return PAST_SIGNAL_REFUSAL
        if self.system.source == "simulated":
            return SIMULATED_SIGNAL_REFUSAL
        return READONLY_REFUSAL if self.readonly else None

    def action_signal(self) -> None:
        """Ask, then signal the tagged processes, else the selected one, as the table shows them."""
        shown = self.main.processes_of
        found = targets(shown, self.main.table.chosen_rows()) if shown is not None else ()
        if not found:
            self._say("no process to signal: the process table lists none")
            return
        self.run_worker(self._signal(found), group="signal", exclusive=True)

    def action_signal_refused(self) -> None:
        refusal = self.signal_refusal
        if refusal is None:
            self._say(SIGNAL_HINT)
        else:
            self._say(refusal, "warning")

    async def _signal(self, found: Sequence[Target]) -> None:
        """Who may be signalled is read off the event loop (it reads /proc), and again right before sending."""
        decisions = await asyncio.to_thread(decide_all, found, readonly=self.readonly)
        signum: signal.Signals | None = await self.push_screen_wait(ConfirmSignal(decisions))
        if signum is None:
            return
        outcomes = await asyncio.to_thread(send, found, signum, readonly=self.readonly)
        for outcome in outcomes:
            self._say(outcome.text, "info" if outcome.sent else "warning")
        self.main.table.tagged.clear()
        self.main.table.redraw()

    @property
    def activity_refusal(self) -> str | None:
        """Why `a` reads no stack in this session; None where it may (whether the process can be read is
        request_activity's to say)."""
        if self.walk is not None:
            return PAST_ACTIVITY_REFUSAL
        refusal = stacks_refusal(self.system)  # the lab's machine (--demo-job) follows a real job: that one may
        if refusal is not None:
            return refusal
        return ACTIVITY_OFF if self.request_activity is None else None

    def _activity_pid(self) -> int | None:
        """The process `a` samples: the one the detail shows, else the process table's selected one while it has
        the focus."""
        screen = self.screen
        if isinstance(screen, DetailScreen):
            return screen.shown_pid
        cursor = self.main.table.cursor
        if screen is not self.main or self.focused is not self.main.table or cursor is None:
            return None
        return int(cursor.split(":", 1)[1])

    def action_sample_activity(self) -> None:
        """Read the stacks of the chosen process now: its row and the detail show them after."""
        pid = self._activity_pid()
        if pid is not None:
            self.run_worker(self._sample_activity(pid), group="activity", exclusive=True)

    def action_sample_activity_refused(self) -> None:
        refusal = self.activity_refusal
        self._say(ACTIVITY_HINT if refusal is None else refusal, "info" if refusal is None else "warning")

    async def _sample_activity(self, pid: int) -> None:
        """Off the event loop: starting a window may read /proc or take a lock the sampling thread holds."""
        request = self.request_activity
        if request is None:
            return
        refused = await asyncio.to_thread(request, pid)
        if refused is None:
            self._say(f"reading PID {pid}'s stacks for a few seconds: its row and the detail show what it does")
        else:
            self._say(f"PID {pid}: no stacks read: {refused}", "warning")

    async def action_quit(self) -> None:
        """A running probe's process group is stopped (SIGTERM, then SIGKILL) before the app ends."""
        await self.probes.shutdown()
        self.exit()

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            live = self.replay is None
            lines = account_lines(self.accountant.account(), self.price, self.engine.lang) if live else []
            refusals = self.help_refusals()
            self.push_screen(HelpScreen(self.help_bindings(), self.notices.standing(), lines, refusals))

    def help_bindings(self) -> list[Binding]:
        """Every key of this session, those the footer leaves out too (+ - o), and those that cannot act here
        (help_refusals says why): the app's (in replay, not the live-only ones; live, not replay's `p`), and
        replay's keys in replay; live, the table's space (tag) and `M`."""
        keys = [b for b in self.BINDINGS if isinstance(b, Binding) and b.action in DESCRIPTIONS]
        if self.replay is not None:
            keys = [b for b in keys if b.action.partition("(")[0] not in LIVE_ONLY]
            return [*keys, *self.mode_bindings()]
        keys = [b for b in keys if not b.action.startswith("replay_")]
        keys += [b for b in ProcessTable.BINDINGS if isinstance(b, Binding) and b.action == "tag"]
        mine = [b for b in RecordReplayApp.BINDINGS if isinstance(b, Binding) and b.action.startswith("past_")]
        return [*keys, *mine, *(b for b in RecordReplayApp.BINDINGS if isinstance(b, Binding) and b.action == "mark")]

    def help_refusals(self) -> dict[str, str]:
        """Why a key the help lists cannot act in this session, by its action: what it says when pressed."""
        refusals = {"signal": self.signal_refusal, "tag": self.signal_refusal, "mark": self.mark_refusal}
        refusals["sample_activity"] = self.activity_refusal
        refusals["past_goto"] = NO_PAST_IN_REPLAY if self.replay is not None else self.history_problem
        return {action: why for action, why in refusals.items() if why is not None}
