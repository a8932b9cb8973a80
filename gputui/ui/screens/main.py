"""The main view: header, GPU panels, host, process filter and table, diagnostics slot, footer."""

from __future__ import annotations

from collections.abc import Callable

from textual.app import ComposeResult
from textual.containers import Container
from textual.widgets import Footer, Input

from gputui.diagnostics.tick import Tick
from gputui.model import Snapshot
from gputui.ui.lean_update import LeanScreen
from gputui.ui.marks import Marks
from gputui.ui.widgets.diagnostics import DiagnosticsPane
from gputui.ui.widgets.gpu_list import GpuList
from gputui.ui.widgets.header import HeaderState, StatusHeader
from gputui.ui.widgets.host import HostPanel
from gputui.ui.widgets.processes import (
    ProcessTable,
    process_count,
    process_jobs,
    process_rows,
    process_workers,
)

PROCESS_ROWS_MIN = 5  # the table's header and a few rows stay visible whatever the GPU count
PROCESS_ROWS_BESIDE_PANE = 3  # fewer while the pane is open on a short terminal: the findings come first
DIAGNOSTICS_HEIGHT = 10
DIAGNOSTICS_MIN_HEIGHT = 6
# The pane opens by itself when the terminal has room for it beside the panels; the verdict, under the header,
# is on screen at every size.
DIAGNOSTICS_SHOWN_FROM_HEIGHT = 36
# Below that height, the pane still shows where the panels and the table leave this many rows blank: its border,
# its title and a finding.
DIAGNOSTICS_SPARE_MIN = 3


def panel_layout(gpu_count: int, instance_rows: int, width: int, room: int) -> tuple[int, bool]:
    """Lines per GPU panel, and whether the MIG instances fold onto their GPU's line: three lines when all fit with
    a row per instance, then two, then one (8 GPUs in 80x24); when even one line and the instances' rows do not fit
    (8 MIG GPUs of 2 instances in 80x24), one line each with its instances on it, so every GPU stays in view."""
    for mode in (3, 2, 1):
        if (mode < 3 or width >= 100) and gpu_count * mode + instance_rows <= room:
            return mode, False
    return 1, instance_rows > 0


class MainScreen(LeanScreen[None]):
    """`on_shown` is called once composed and whenever uncovered: nothing is drawn while it is covered.

    The parts are made once here and kept as attributes, so a tick never searches the DOM.
    """

    AUTO_FOCUS = "GpuList"  # never the hidden filter box

    def __init__(self, on_shown: Callable[[], None], marks: Marks) -> None:
        super().__init__()
        self._on_shown = on_shown
        self._layout_key: tuple[object, ...] = ()
        # Until the user toggles the pane with `d`, it is shown whenever the terminal is tall enough.
        self.diagnostics_follow_size = True
        self.header = StatusHeader(id="header")
        self.marks = marks
        self.gpus = GpuList(marks, id="gpus")
        self.host = HostPanel(marks, id="host")
        self.filter_box = Input(placeholder="filter processes by user, PID, pod, job or command", id="filter")
        self.filter_box.cursor_blink = False
        self.table = ProcessTable(id="processes")
        self.processes_of: Snapshot | None = None  # the snapshot the table's rows show: what a signal names
        self.diagnostics = Container(id="diagnostics")
        self.findings = DiagnosticsPane(id="diagnostics-pane")
        self.open_findings = 0  # the latest tick's: whether rows left blank should show the pane

    def compose(self) -> ComposeResult:
        yield self.header
        yield self.gpus
        yield self.host
        yield self.filter_box
        yield self.table
        with self.diagnostics:
            yield self.findings
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self._on_shown()

    def on_resize(self) -> None:
        self.relayout()

    def on_descendant_focus(self) -> None:
        """The pane with the keys is being read: it may take more room (and gives it back on blur)."""
        self.relayout()

    def on_descendant_blur(self) -> None:
        self.relayout()

    def on_screen_resume(self) -> None:
        self._on_shown()

    def add_snapshot(self, snapshot: Snapshot) -> None:
        """Keep the GPUs' readings and history, drawn or not; a new set of GPUs gets a new layout."""
        if self.gpus.add_snapshot(snapshot):
            self._layout_key = ()

    def toggle_diagnostics(self) -> None:
        """`d`: show the pane and give it the keys; on a pane already shown (it opens by itself when the terminal
        is tall) but not focused, only give it the keys, so that `d` then up/down and enter always reach it as
        its hint says; on the focused pane, hide it and give the keys back to the GPU list."""
        self.diagnostics_follow_size = False
        if self.diagnostics.display and self.findings.has_focus:
            self.diagnostics.display = False
            self.gpus.focus()
        else:
            self.diagnostics.display = True
            self.findings.focus()
        self.relayout()

    def relayout(self) -> None:
        """Size the parts for the terminal; runs on resize and when a part changes height, never per tick.

        Nothing leaves the screen without a count: the GPU list keeps a line for "+N GPUs" beside at least one
        panel, the table a line for "+N processes", the pane one for "+N findings"; and rows the panels and the
        table leave blank go to the findings, titles first, while the pane follows the terminal's size."""
        width, height = self.size
        header_lines = self.header.line_count(width)
        host_lines = self.host.line_count(width)
        count = len(self.gpus.panels)
        instance_rows = self.gpus.instance_rows
        filter_shown = bool(self.filter_box.display)
        empty = self.table.empty  # no GPU process: the table is one line, and its room goes to the pane
        left = height - header_lines - host_lines - 1 - int(filter_shown)
        if self.diagnostics_follow_size and height:
            self.diagnostics.display = height >= DIAGNOSTICS_SHOWN_FROM_HEIGHT or (
                self.open_findings > 0 and self._spare_rows(left, width) >= DIAGNOSTICS_SPARE_MIN
            )
            if not self.diagnostics.display and self.findings.has_focus:  # tabbed into, then shrunk away
                self.gpus.focus()
        diagnostics_shown = bool(self.diagnostics.display)
        wanted = self.findings.wanted_height + 1  # and the pane's top border
        reading = self.findings.has_focus
        table_wanted = self.table.wanted_height
        key: tuple[object, ...] = (width, height, header_lines, host_lines, count, instance_rows)
        key += (filter_shown, diagnostics_shown, empty, wanted, reading, table_wanted)
        if key == self._layout_key or not width:
            return
        self._layout_key = key
        self.header.styles.height = header_lines
        self.host.styles.height = host_lines
        # The pane takes what its rows need, up to a third of the terminal, or 10 lines while it has the keys (its
        # advice is being read): what does not fit is counted in it.
        cap = DIAGNOSTICS_HEIGHT if reading else max(DIAGNOSTICS_MIN_HEIGHT, height // 3)
        cap = min(DIAGNOSTICS_HEIGHT, cap)
        table = 1 if empty else PROCESS_ROWS_BESIDE_PANE if diagnostics_shown and height < 40 else PROCESS_ROWS_MIN
        pane = min(cap, wanted) if diagnostics_shown else 0
        spare = self._spare_rows(left, width) if diagnostics_shown else 0
        shown_for_spare = self.diagnostics_follow_size and height < DIAGNOSTICS_SHOWN_FROM_HEIGHT
        if diagnostics_shown and (shown_for_spare or min(wanted, spare) > pane):
            # The rows the panels and the whole table leave blank go to the findings; the table keeps its rows.
            pane, table = min(wanted, spare), self.table.wanted_height
        # At least one panel and its "+N GPUs" line, and the table's header and its count, before the pane's cap.
        least_gpus = min(self.gpus.total_height(1, True), 2)
        pane = max(min(pane, left - least_gpus - min(table, 2)), min(pane, DIAGNOSTICS_SPARE_MIN))
        room = left - pane - table
        mode, fold = panel_layout(count, instance_rows, width, room)
        self.gpus.mode, self.gpus.fold = mode, fold
        needed = self.gpus.total_height(mode, fold)
        gpu_rows = needed if needed <= room else max(min(needed, mode + 1), room)
        self.gpus.styles.height = gpu_rows
        # What the panels leave goes to the table, or to the pane when there is no process to list.
        self.table.styles.height = 1 if empty else "1fr"
        self.diagnostics.styles.height = max(pane, left - gpu_rows - 1) if diagnostics_shown and empty else pane
        self.gpus.redraw()
        # Once the new heights are laid out, the lists draw at them: a part whose height changed and back again
        # before a Resize reached it would keep drawing at the old one (its count line cut off).
        self.call_after_refresh(self._redraw_at_new_heights)

    def _redraw_at_new_heights(self) -> None:
        for view in (self.gpus, self.table):
            view.sync_size()

    def _spare_rows(self, left: int, width: int) -> int:
        """The rows the panels and the table, each whole, leave blank: where the findings may show on their own."""
        room = left - self.table.wanted_height
        mode, fold = panel_layout(len(self.gpus.panels), self.gpus.instance_rows, width, room)
        return room - self.gpus.total_height(mode, fold)

    def draw(self, tick: Tick, header: HeaderState, filter_text: str) -> None:
        self.header.show(header)
        self.gpus.redraw()
        self.host.show(tick.snapshot.host, tick.snapshot.system.container)
        self.show_processes(tick.snapshot, filter_text)
        self.open_findings = len(tick.active)
        # Kept while hidden too: the layout weighs what the pane would need; one layout pass for both.
        self.findings.show_findings(tick.active, tick.closed, tick.verdict, tick.pending)
        self.relayout()

    def show_processes(self, snapshot: Snapshot, filter_text: str) -> None:
        """The table's rows: those `filter_text` keeps, counted against all of them."""
        self.processes_of = snapshot
        self.table.show_rows(
            process_rows(snapshot, self.marks.thresholds.activity_fresh_s, filter_text),
            filter_text,
            process_count(snapshot),
            process_jobs(snapshot),
            process_workers(snapshot),
        )
