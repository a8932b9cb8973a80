"""All GPU panels in one widget, with a cursor for the GPU that `enter` opens.

One widget for all panels rather than one per GPU: every refreshed widget costs Textual a message, an
idle pass and a compositor render each tick, which at 8 GPUs was a large share of the 1% CPU budget.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import ClassVar

from textual import events
from textual.binding import Binding, BindingType

from gputui.formatting import fmt_ranges
from gputui.model import Snapshot
from gputui.ui.marks import Marks
from gputui.ui.widgets.gpu_panel import METRIC_GROUPS, GpuPanel, UtilBuckets
from gputui.ui.widgets.lines import Line, LineView


class GpuList(LineView):
    """`mode` lines per GPU and a row per MIG instance under its GPU (none when `fold`: the instances then sit on
    their GPU's line); up/down move the cursor; the view scrolls to keep it when GPUs overflow."""

    can_focus = True
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up,k", "move(-1)", "Previous GPU", show=False),
        Binding("down,j", "move(1)", "Next GPU", show=False),
    ]

    def __init__(self, marks: Marks, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.marks = marks
        self.panels: list[GpuPanel] = []
        self.mode = 3
        self.fold = False
        self.cursor = 0
        self._top = 0

    @property
    def selected(self) -> int | None:
        """The GPU index under the cursor."""
        return self.panels[self.cursor].gpu_index if self.panels else None

    def add_snapshot(self, snapshot: Snapshot) -> bool:
        """Keep each GPU's reading and history; True when the set of GPUs changed (a layout is due)."""
        changed = [p.gpu_index for p in self.panels] != [info.index for info in snapshot.gpu_info]
        if changed:
            self.panels = [GpuPanel(info, self.marks) for info in snapshot.gpu_info]
            self.cursor = min(self.cursor, max(0, len(self.panels) - 1))
        samples = {sample.index: sample for sample in snapshot.gpus}
        given = snapshot.system.mig_slice
        for panel in self.panels:
            panel.only_slice = given
            panel.add_sample(snapshot.info(panel.gpu_index) or panel.info, samples.get(panel.gpu_index))
        if changed and given is not None:  # a container given one slice: the view starts on its GPU
            held = [n for n, panel in enumerate(self.panels) if any(d.uuid == given for d in panel.instances())]
            self.cursor = held[0] if held else self.cursor
        return changed

    def show_samples(self, snapshot: Snapshot) -> None:
        """Show each GPU's reading of `snapshot` (a past tick walked back to) without adding it to the history:
        the sparklines stay the timeline it sits on."""
        samples = {sample.index: sample for sample in snapshot.gpus}
        for panel in self.panels:
            panel.sample = samples.get(panel.gpu_index)
        self.redraw()

    def rebuild_sparklines(self, points: Sequence[tuple[float, Mapping[int, float | None]]]) -> None:
        """Each panel's sparkline built again from these utilizations, oldest first: the history store's past
        joined before the live readings."""
        for panel in self.panels:
            buckets = UtilBuckets()
            for t, utils in points:
                buckets.add(t, utils.get(panel.gpu_index))
            panel.history = buckets
        self.redraw()

    @property
    def instance_rows(self) -> int:
        """The rows the MIG instances take under their GPUs when not folded."""
        return sum(len(panel.instances()) for panel in self.panels)

    def highlight(self, gpus: Sequence[int], metric: str | None) -> None:
        """Reverse the value a chosen finding is about on the GPUs it names (and clear it elsewhere), and bring
        the first of them into view."""
        group = METRIC_GROUPS.get(metric or "")
        for panel in self.panels:
            panel.highlight = group if panel.gpu_index in gpus else None
        named = [n for n, panel in enumerate(self.panels) if panel.gpu_index in gpus]
        if named:
            self.cursor = named[0]
        self.redraw()

    def total_height(self, mode: int, fold: bool) -> int:
        """The lines every panel takes at this layout: what the list needs to show them all."""
        return sum(panel.height(mode, fold) for panel in self.panels)

    def _heights(self) -> list[int]:
        return [panel.height(max(1, self.mode), self.fold) for panel in self.panels]

    def build_lines(self, width: int) -> Sequence[Line]:
        """The panels that fit, scrolled to keep the cursor's; when some do not fit, the last line counts them."""
        heights = self._heights()
        count = len(self.panels)
        room = self.known_height
        if sum(heights) > room:
            room -= 1  # a line for the count of those out of view
        cursor = min(self.cursor, max(0, count - 1))
        # The first panel from which the cursor's still fits, and the first from which all the rest fit.
        first_with_cursor = _first_fitting(heights[: cursor + 1], room)
        last_page = _first_fitting(heights, room)
        self._top = min(max(first_with_cursor, self._top), cursor, last_page)
        shown: list[GpuPanel] = []
        used = 0
        for panel, height in zip(self.panels[self._top :], heights[self._top :], strict=True):
            # Where not even one panel fits beside the count, the count alone: a GPU is never cut off unsaid.
            if used + height > room:
                break
            shown.append(panel)
            used += height
        lines: list[Line] = []
        for n, panel in enumerate(shown, start=self._top):
            panel.selected = n == self.cursor and self.has_focus
            lines += panel.build_lines(width, self.mode, self.fold)
        hidden = [p.gpu_index for p in self.panels if p not in shown]
        if hidden:
            lines.append([(hidden_gpus_text(hidden), "bright_black")])
        return lines

    def action_move(self, delta: int) -> None:
        if self.panels:
            self.cursor = max(0, min(len(self.panels) - 1, self.cursor + delta))
            self.redraw()

    def on_click(self, event: events.Click) -> None:
        y = event.y
        n = self._top
        for height in self._heights()[self._top :]:
            if y < height:
                break
            y -= height
            n += 1
        self.cursor = min(len(self.panels) - 1, n)
        self.redraw()

    def watch_has_focus(self, has_focus: bool) -> None:
        """The cursor is marked only while focused; `on_focus` would run before `has_focus` is set."""
        super().watch_has_focus(has_focus)
        self.redraw()


def hidden_gpus_text(hidden: Sequence[int]) -> str:
    """The count of the GPUs out of view, which: " +3 GPUs (1-3): up/down, or a taller window" (the shape
    "+N GPUs" is what the screen invariants look for)."""
    return f" +{len(hidden)} GPU{'s' if len(hidden) > 1 else ''} ({fmt_ranges(hidden)}): up/down, or a taller window"


def _first_fitting(heights: Sequence[int], room: int) -> int:
    """The smallest start from which the panels of these heights up to the last fit in `room` (the last alone
    when it does not)."""
    start = len(heights)
    used = 0
    while start > 0 and used + heights[start - 1] <= room:
        start -= 1
        used += heights[start]
    return min(start, max(0, len(heights) - 1))
