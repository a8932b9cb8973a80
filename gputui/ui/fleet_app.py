"""`gputui --remote host1:9400,host2:9400` or `--prometheus URL`: several servers at once, one compact block each,
from their exporters or from the Prometheus that scrapes them (hosts found there are added as they appear).

Polling runs in the one sampling loop (gputui/session/loop.py), on its own thread: one FleetPoller.poll() scrapes
every server in parallel (bounded by its timeout), then the loop waits for the next, so polls never overlap and a
dead server only slows its own block. Parsing one scrape costs ~30 ms of CPU, hence 2 s between polls by default
and never under 1 s. Each server's readings go through its own diagnostics engine inside the poller, and the fleet
findings (a straggler, a GPU held and idle) are judged over every server's window on the same thread
(gputui/session/fleet_poll.py, `poll_and_judge`).

What needs attention comes first: unreachable servers, then those with a critical finding, a warning, one a fleet
finding names, then the rest, each group in the order given. When the servers' whole blocks do not fit the
terminal, each server gets one line, so that every one is on the first screen (40 at 160x50).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import ClassVar, Protocol

from rich.table import Table
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.message import Message
from textual.screen import ModalScreen, Screen
from textual.widgets import Footer, Static

from gputui.diagnostics.findings import Severity
from gputui.diagnostics.fleet_rules import FleetFinding
from gputui.diagnostics.locale import resolve_lang
from gputui.diagnostics.thresholds import Thresholds
from gputui.session.fleet_poll import (
    FLEET_DEFAULT_INTERVAL,
    FleetPoller,
    FleetRound,
    HostState,
    fleet_interval,
    poll_and_judge,
)
from gputui.session.loop import SamplingLoop, failure_text
from gputui.ui.lean_update import LeanScreen
from gputui.ui.live_app import LIVE_KEYS, LiveApp
from gputui.ui.marks import Marks
from gputui.ui.widgets.fleet_block import FleetBlock, FleetHostLines, block_height, data_badge
from gputui.ui.widgets.fleet_findings import FleetFindingsPane, fleet_pane_height
from gputui.ui.widgets.lines import Line, LineView

LABEL = "bright_black"
PANE_MOST = 8  # lines the fleet findings pane takes at most; a host list that needs them gets them first
PANE_LEAST = 2  # ... and at least, with findings: the title and one finding (or how many there are)


class Poller(Protocol):
    """What the app needs of a FleetPoller; tests give it a fake one."""

    @property
    def states(self) -> tuple[HostState, ...]: ...

    def poll(self) -> tuple[HostState, ...]: ...

    def close(self) -> None: ...


class FleetPolled(Message):
    """One finished poll of every server and the fleet findings after it (or why the poll itself failed);
    replaces one still queued."""

    def __init__(self, fleet: FleetRound | None, error: str | None = None) -> None:
        super().__init__()
        self.fleet = fleet
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


def attention_rank(state: HostState, flagged: bool) -> int:
    """0 for what needs attention first: unreachable, a critical finding, a warning, a fleet finding, the rest."""
    if not state.reachable and state.last_attempt is not None:
        return 0
    worst = max((f.severity for f in state.findings), default=None)
    if worst is Severity.CRITICAL:
        return 1
    if worst is Severity.WARNING:
        return 2
    return 3 if flagged else 4


def attention_order(
    states: Sequence[HostState], findings: Sequence[FleetFinding], names: dict[str, str] | None = None
) -> list[tuple[HostState, bool]]:
    """The servers, what needs attention first (a stable sort: each group in the order given), each with whether
    a fleet finding names it (by its hostname, or the one last seen while it is unreachable)."""
    named = {host for f in findings for host in f.hosts}
    known = names or {}
    rows = [(state, known.get(state.target, state.name) in named) for state in states]
    return sorted(rows, key=lambda row: attention_rank(*row))


KEYS: tuple[tuple[str, str], ...] = (
    ("q", "quit"),
    ("p", "pause / resume drawing (polling goes on, so the diagnostics keep their windows)"),
    ("?", "this help"),
    ("up / down, page up / down", "scroll when even a line per server does not fit"),
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
                "Each block (or line, when they do not all fit) is one server; an UNREACHABLE one is retried each "
                "poll. FLEET: a fleet finding names it (in the pane at the top). A GPU line is its latest reading "
                "(CLK: the SM clock against its max); the verdict and the findings say the window their means are "
                "over.",
                id="fleet-help-note",
            )


class FleetApp(LiveApp):
    """The fleet view. `auto_poll=False` leaves polling to explicit `await app.poll_now()` calls (tests)."""

    CSS_PATH = "fleet.tcss"
    TITLE = "gputui fleet"
    BINDINGS: ClassVar[list[BindingType]] = [
        *LIVE_KEYS,
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
        lang: str = "en",
    ) -> None:
        super().__init__()
        self.poller = poller
        self.interval = fleet_interval(interval)
        self.auto_poll = auto_poll
        self.states = poller.states
        self.findings: tuple[FleetFinding, ...] = ()
        self.lang = lang
        self.whole = True  # each server as a whole block; False: one line each
        self._clock = clock  # the poller's clock: "last seen N s ago" compares with its times
        self._now = now
        self._notices = notices  # what the header says beside the hosts (TLS off, partial data)
        self._error: str | None = None
        self._names: dict[str, str] = {}  # each server's hostname last seen, by target, kept while unreachable
        self.header = FleetHeader(id="fleet-header")
        self.pane = FleetFindingsPane(id="fleet-findings", lang=lang)
        # The pollers judge every server by the default thresholds (the fleet view reads no config file): so do the
        # blocks' colours.
        self.marks = Marks.of(Thresholds())
        self.blocks = [FleetBlock(state, self.marks) for state in self.states]
        self.host_lines = FleetHostLines(self.marks, id="fleet-lines")
        self._polling: SamplingLoop[FleetRound] | None = None

    def get_default_screen(self) -> Screen[None]:
        return LeanScreen(id="_default")

    def compose(self) -> ComposeResult:
        yield self.header
        yield self.pane
        with VerticalScroll(id="fleet"):
            yield from self.blocks
            yield self.host_lines
        yield Footer()

    def on_mount(self) -> None:
        self.draw()
        if self.auto_poll:
            self._polling = SamplingLoop(
                lambda: poll_and_judge(self.poller, self.lang),
                self.interval,
                deliver=lambda fleet: self.post_message(FleetPolled(fleet)),
                # a bug in one poll must not end polling: show it and try again next time
                failed=lambda error: self.post_message(FleetPolled(None, failure_text(error))),
                closing=self.poller.close,  # once no poll runs: now, or when the one running ends
                name="gputui-fleet-poll",
            )
            self._polling.start()

    def on_unmount(self) -> None:
        if self._polling is None:
            self.poller.close()
        else:
            self._polling.stop()

    # -- polling -----------------------------------------------------------------------------------------

    async def poll_now(self) -> tuple[HostState, ...]:
        """Poll every server once off the event loop, judge the fleet there too, and show the result: the explicit
        clock tests drive."""
        fleet = await asyncio.to_thread(poll_and_judge, self.poller, self.lang)
        self.show_states(fleet.states, fleet.findings)
        return fleet.states

    def on_fleet_polled(self, message: FleetPolled) -> None:
        self._error = message.error
        if message.fleet is not None:
            self.show_states(message.fleet.states, message.fleet.findings)
        else:
            self.draw()

    def on_resize(self) -> None:
        self.draw()

    # -- drawing -----------------------------------------------------------------------------------------

    def show_states(self, states: tuple[HostState, ...], findings: tuple[FleetFinding, ...] = ()) -> None:
        self.states = states
        self.findings = findings
        for state in states:
            if state.snapshot is not None:
                self._names[state.target] = state.snapshot.system.hostname
        if not self.paused:
            self.draw()

    def draw(self) -> None:
        clock = self._now().strftime("%H:%M:%S")
        now = self._clock()
        with self.batch_update():
            self.header.show(header_parts(self.states, clock, self.interval, self.paused, self._error, self._notices()))
            if not self.paused:
                self._draw_fleet(now)

    def _draw_fleet(self, now: float) -> None:
        """The pane and the servers, what needs attention first, whole when they fit and a line each when not."""
        rows = attention_order(self.states, self.findings, self._names)
        names = [self._names.get(state.target) for state, _ in rows]
        room = max(1, self.size.height - 2)  # less the header and the footer
        pane = fleet_pane_height(self.findings, PANE_MOST)
        if self.findings:  # the host list's lines first, then the pane, never under its title and one line
            pane = max(min(pane, PANE_LEAST), min(pane, room - len(rows)))
        heights = [block_height(state, now, self.marks, name) + 1 for (state, _), name in zip(rows, names, strict=True)]
        self.whole = sum(heights) - 1 <= room - pane
        self.pane.show(self.findings, pane)
        self._match_blocks(len(rows))
        self.host_lines.display = not self.whole
        for block in self.blocks:
            block.display = self.whole
        if self.whole:
            for block, (state, _), name in zip(self.blocks, rows, names, strict=True):
                block.show(state, now, name)
        else:
            self.host_lines.show(
                [(state, name, flagged) for (state, flagged), name in zip(rows, names, strict=True)], now
            )

    def _match_blocks(self, count: int) -> None:
        """As many blocks as servers: a poller that discovers servers (Prometheus) may find more or fewer."""
        if count > len(self.blocks):
            new = [FleetBlock(state, self.marks) for state in self.states[len(self.blocks) : count]]
            self.blocks += new
            self.query_one("#fleet", VerticalScroll).mount(*new, before=self.host_lines)
        elif count < len(self.blocks):
            for block in self.blocks[count:]:
                block.remove()
            del self.blocks[count:]

    # -- actions -----------------------------------------------------------------------------------------

    def action_help(self) -> None:
        if not isinstance(self.screen, FleetHelp):
            self.push_screen(FleetHelp())


def run_fleet(targets: Sequence[str], interval: float) -> int:
    """Run the fleet view on these exporters until the user quits; the exit code."""
    return run_fleet_on(FleetPoller(targets), interval)


def run_fleet_on(poller: Poller, interval: float, notices: Callable[[], Sequence[str]] = tuple) -> int:
    """Run the fleet view on this poller (exporters, or Prometheus) until the user quits; the exit code."""
    app = FleetApp(poller, interval=interval, notices=notices, lang=resolve_lang())
    app.run()
    return 0 if app.return_code is None else app.return_code
