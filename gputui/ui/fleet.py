"""`gputui --remote host1:9400,host2:9400` or `--prometheus URL`: several servers at once, one compact block each,
from their exporters or from the Prometheus that scrapes them (hosts found there are added as they appear).

Polling runs in the one sampling loop (gputui/session/loop.py), on its own thread: one FleetPoller.poll() scrapes
every server in parallel (bounded by its timeout), then the loop waits for the next, so polls never overlap and a
dead server only slows its own block. Parsing one scrape costs ~30 ms of CPU, hence 2 s between polls by default
and never under 1 s. Each server's readings go through its own diagnostics engine inside the poller
(gputui/session/fleet.py).
"""

from __future__ import annotations

import asyncio
import signal
import time
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import ClassVar, Protocol

from rich.table import Table
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.driver import Driver
from textual.message import Message
from textual.screen import ModalScreen, Screen
from textual.widgets import Footer, Static

from gputui.session.fleet import FLEET_DEFAULT_INTERVAL, FleetPoller, HostState, fleet_interval
from gputui.session.loop import SamplingLoop, failure_text
from gputui.ui.driver import quiet_driver
from gputui.ui.lean_update import LeanScreen
from gputui.ui.widgets.fleet_block import FleetBlock, data_badge
from gputui.ui.widgets.lines import Line, LineView

LABEL = "bright_black"


class Poller(Protocol):
    """What the app needs of a FleetPoller; tests give it a fake one."""

    @property
    def states(self) -> tuple[HostState, ...]: ...

    def poll(self) -> tuple[HostState, ...]: ...

    def close(self) -> None: ...


class FleetPolled(Message):
    """One finished poll of every server (or why the poll itself failed); replaces one still queued."""

    def __init__(self, states: tuple[HostState, ...] | None, error: str | None = None) -> None:
        super().__init__()
        self.states = states
        self.error = error

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, FleetPolled)


class FleetHeader(LineView):
    """Clock, how many servers answer, the poll period, and PAUSED / SIMULATED when they apply."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.parts: Line = [("gputui fleet", "bold")]

    def show(self, parts: Line) -> None:
        self.parts = parts
        self.redraw()

    def build_lines(self, width: int) -> Sequence[Line]:
        return [self.parts]


def header_parts(
    states: Sequence[HostState],
    clock: str,
    interval: float,
    paused: bool,
    error: str | None = None,
    notices: Sequence[str] = (),
) -> Line:
    down = sum(1 for s in states if not s.reachable and s.last_attempt is not None)
    simulated = sum(1 for s in states if s.snapshot is not None and data_badge(s.snapshot.system) is not None)
    parts: Line = [(clock, ""), ("  gputui fleet  ", "bold")]
    if paused:
        parts += [(" PAUSED ", "bold white on red"), ("  ", "")]
    parts.append((f"{len(states)} server{'s' if len(states) != 1 else ''}", ""))
    if down:
        parts += [("  ", ""), (f" {down} UNREACHABLE ", "bold white on red")]
    if simulated:
        parts += [("  ", ""), (f" SIMULATED data on {simulated} ", "bold black on yellow")]
    parts += [("  every ", LABEL), (f"{interval:g}s", "")]
    if error:
        parts.append((f"  polling failed: {error}", "bold red"))
    parts += [(f"  {notice}", "bold yellow") for notice in notices]
    return parts


KEYS: tuple[tuple[str, str], ...] = (
    ("q", "quit"),
    ("p", "pause / resume drawing (polling goes on, so the diagnostics keep their windows)"),
    ("?", "this help"),
    ("up / down, page up / down", "scroll when the servers do not fit"),
)


class FleetHelp(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,question_mark,q", "dismiss", "Close")]

    def compose(self) -> ComposeResult:
        table = Table(box=None, show_header=False, padding=(0, 2))
        table.add_column(style="bold")
        table.add_column()
        for key, what in KEYS:
            table.add_row(key, what)
        with Vertical(id="fleet-help"):
            yield Static("gputui fleet keys", id="fleet-help-title")
            yield Static(table)
            yield Static(
                "Each block is one exporter (`gputui export`); an UNREACHABLE one is retried each poll.",
                id="fleet-help-note",
            )


class FleetApp(App[int]):
    """The fleet view. `auto_poll=False` leaves polling to explicit `await app.poll_now()` calls (tests)."""

    CSS_PATH = "fleet.tcss"
    TITLE = "gputui fleet"
    ENABLE_COMMAND_PALETTE = False
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q", "quit", "Quit"),
        Binding("p", "toggle_pause", "Pause"),
        Binding("question_mark", "help", "Help", key_display="?"),
    ]

    def __init__(
        self,
        poller: Poller,
        *,
        interval: float = FLEET_DEFAULT_INTERVAL,
        auto_poll: bool = True,
        clock: Callable[[], float] = time.time,
        now: Callable[[], datetime] = datetime.now,
        notices: Callable[[], Sequence[str]] = tuple,
    ) -> None:
        super().__init__(ansi_color=True)
        self.animation_level = "none"
        self.poller = poller
        self.interval = fleet_interval(interval)
        self.auto_poll = auto_poll
        self.paused = False
        self.states = poller.states
        self._clock = clock  # the poller's clock: "last seen N s ago" compares with its times
        self._now = now
        self._notices = notices  # what the header says beside the hosts (TLS off, partial data)
        self._error: str | None = None
        self.header = FleetHeader(id="fleet-header")
        self.blocks = [FleetBlock(state) for state in self.states]
        self._polling: SamplingLoop[tuple[HostState, ...]] | None = None

    def get_driver_class(self) -> type[Driver]:
        return quiet_driver(super().get_driver_class())

    def get_default_screen(self) -> Screen[None]:
        return LeanScreen(id="_default")

    def compose(self) -> ComposeResult:
        yield self.header
        with VerticalScroll(id="fleet"):
            yield from self.blocks
        yield Footer()

    def on_mount(self) -> None:
        asyncio.get_running_loop().add_signal_handler(signal.SIGHUP, self.exit)  # a lost SSH session ends it
        self.draw()
        if self.auto_poll:
            self._polling = SamplingLoop(
                self.poller.poll,
                self.interval,
                deliver=lambda states: self.post_message(FleetPolled(states)),
                # a bug in one poll must not end polling: show it and try again next time
                failed=lambda error: self.post_message(FleetPolled(None, failure_text(error))),
                closing=self.poller.close,  # once no poll runs: now, or when the one running ends
                name="gputui-fleet-poll",
            )
            self._polling.start()

    def on_unmount(self) -> None:
        asyncio.get_running_loop().remove_signal_handler(signal.SIGHUP)
        if self._polling is None:
            self.poller.close()
        else:
            self._polling.stop()

    # -- polling -----------------------------------------------------------------------------------------

    async def poll_now(self) -> tuple[HostState, ...]:
        """Poll every server once off the event loop and show the result: the explicit clock tests drive."""
        states = await asyncio.to_thread(self.poller.poll)
        self.show_states(states)
        return states

    def on_fleet_polled(self, message: FleetPolled) -> None:
        self._error = message.error
        if message.states is not None:
            self.show_states(message.states)
        else:
            self.draw()

    # -- drawing -----------------------------------------------------------------------------------------

    def show_states(self, states: tuple[HostState, ...]) -> None:
        self.states = states
        if not self.paused:
            self.draw()

    def draw(self) -> None:
        clock = self._now().strftime("%H:%M:%S")
        now = self._clock()
        with self.batch_update():
            self.header.show(header_parts(self.states, clock, self.interval, self.paused, self._error, self._notices()))
            if not self.paused:
                self._add_blocks()
                for block, state in zip(self.blocks, self.states, strict=True):
                    block.show(state, now)

    def _add_blocks(self) -> None:
        """A block for each host found since the last draw; hosts are only ever added (a vanished one stays)."""
        if len(self.states) > len(self.blocks):
            new = [FleetBlock(state) for state in self.states[len(self.blocks) :]]
            self.blocks += new
            self.query_one("#fleet", VerticalScroll).mount(*new)

    # -- actions -----------------------------------------------------------------------------------------

    def action_toggle_pause(self) -> None:
        self.paused = not self.paused
        self.draw()

    def action_help(self) -> None:
        if not isinstance(self.screen, FleetHelp):
            self.push_screen(FleetHelp())


def run_fleet(targets: Sequence[str], interval: float) -> int:
    """Run the fleet view on these exporters until the user quits; the exit code."""
    return run_fleet_on(FleetPoller(targets), interval)


def run_fleet_on(poller: Poller, interval: float, notices: Callable[[], Sequence[str]] = tuple) -> int:
    """Run the fleet view on this poller (exporters, or Prometheus) until the user quits; the exit code."""
    app = FleetApp(poller, interval=interval, notices=notices)
    app.run()
    return 0 if app.return_code is None else app.return_code
