"""The main view: header, GPU panels, host, process filter and table, diagnostics slot, footer."""

from __future__ import annotations

from collections.abc import Callable

from textual.app import ComposeResult
from textual.containers import Container, VerticalScroll
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Footer, Input, Static

from gputui.diagnostics.findings import Finding
from gputui.model import Snapshot
from gputui.ui.sampling import Tick
from gputui.ui.widgets.gpu_panel import GpuPanel
from gputui.ui.widgets.header import HeaderState, StatusHeader
from gputui.ui.widgets.host import HostPanel
from gputui.ui.widgets.processes import ProcessTable, process_rows

PROCESS_ROWS_MIN = 5  # the table's header and a few rows stay visible whatever the GPU count
DIAGNOSTICS_HEIGHT = 10


def panel_mode(gpu_count: int, width: int, room: int) -> int:
    """Lines per GPU panel: three when they all fit, then two, then one (8 GPUs in 80x24)."""
    if gpu_count * 3 <= room and width >= 100:
        return 3
    if gpu_count * 2 <= room:
        return 2
    return 1


def diagnostics_widget() -> Widget:
    return Static("Diagnostics appear here.", id="diagnostics-pane")


def show_findings(pane: Widget, active: tuple[Finding, ...], closed: tuple[Finding, ...]) -> None:
    if isinstance(pane, Static):
        pane.update(f"Diagnostics: {len(active)} open, {len(closed)} closed.")


class MainScreen(Screen[None]):
    """`on_shown` is called once composed and whenever uncovered: nothing is drawn while it is covered."""

    AUTO_FOCUS = ""  # none: the first GPU panel takes focus once mounted, never the hidden filter box

    def __init__(self, on_shown: Callable[[], None]) -> None:
        super().__init__()
        self._on_shown = on_shown
        self._layout_key: tuple[object, ...] = ()

    def compose(self) -> ComposeResult:
        yield StatusHeader(id="header")
        yield VerticalScroll(id="gpus", can_focus=False)
        yield HostPanel(id="host")
        yield Input(placeholder="filter processes by user, PID or command", id="filter")
        yield ProcessTable(id="processes")
        with Container(id="diagnostics"):
            yield diagnostics_widget()
        yield Footer()

    def on_mount(self) -> None:
        self.query_one(Input).cursor_blink = False
        self._on_shown()

    def on_resize(self) -> None:
        self.relayout()

    def on_screen_resume(self) -> None:
        self._on_shown()

    @property
    def header(self) -> StatusHeader:
        return self.query_one(StatusHeader)

    @property
    def panels(self) -> list[GpuPanel]:
        return list(self.query(GpuPanel))

    @property
    def table(self) -> ProcessTable:
        return self.query_one(ProcessTable)

    @property
    def filter_box(self) -> Input:
        return self.query_one(Input)

    @property
    def diagnostics(self) -> Widget:
        return self.query_one("#diagnostics")

    def sync_panels(self, snapshot: Snapshot) -> None:
        """Mount one panel per GPU the first time (and again only if the set of GPUs changes)."""
        panels = self.panels
        wanted = [info.index for info in snapshot.gpu_info]
        if [p.gpu_index for p in panels] == wanted:
            return
        for panel in panels:
            panel.remove()
        new = [GpuPanel(info, id=f"gpu-{info.index}") for info in snapshot.gpu_info]
        self.query_one("#gpus", VerticalScroll).mount(*new)
        if new and self.focused is None:
            new[0].focus()
        self._layout_key = ()

    def relayout(self) -> None:
        """Size the parts for the terminal; runs on resize and when a part changes height, never per tick."""
        width, height = self.size
        header_lines = self.header.line_count()
        host = self.query_one(HostPanel)
        host_lines = host.line_count(width)
        panels = self.panels
        filter_shown = bool(self.filter_box.display)
        diagnostics_shown = bool(self.diagnostics.display)
        key = (width, height, header_lines, host_lines, len(panels), filter_shown, diagnostics_shown)
        if key == self._layout_key or not width:
            return
        self._layout_key = key
        self.header.styles.height = header_lines
        host.styles.height = host_lines
        fixed = header_lines + host_lines + 1 + int(filter_shown)
        fixed += DIAGNOSTICS_HEIGHT if diagnostics_shown else 0
        room = height - fixed - PROCESS_ROWS_MIN
        mode = panel_mode(len(panels), width, room)
        for panel in panels:
            if panel.mode != mode:
                panel.mode = mode
                panel.styles.height = mode
        self.query_one("#gpus").styles.max_height = max(3, room)
        self.table.set_command_width(width)

    def draw(self, tick: Tick, header: HeaderState, filter_text: str) -> None:
        self.header.show(header)
        for panel in self.panels:
            panel.redraw()
        self.query_one(HostPanel).show(tick.snapshot.host)
        self.table.show_rows(process_rows(tick.snapshot, filter_text))
        if self.diagnostics.display:
            show_findings(self.query_one("#diagnostics-pane"), tick.active, tick.closed)
        self.relayout()
