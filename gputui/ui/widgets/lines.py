"""A widget made of text lines that repaints only the cells that changed.

Every view of live data is built on this. Over a slow SSH link each redrawn cell costs bytes, so a new
frame is compared with the last one line by line and only the span between the first and the last changed
cell is marked dirty; Textual then writes just that span. Unchanged lines are not even re-rendered.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.geometry import Region
from textual.strip import Strip
from textual.widget import Widget


def changed_span(old: Strip, new: Strip) -> tuple[int, int] | None:
    """The [start, end) cells where two strips differ, or None when they are the same."""
    if old == new:
        return None
    old_cells = [(ch, seg.style) for seg in old for ch in seg.text]
    new_cells = [(ch, seg.style) for seg in new for ch in seg.text]
    if len(old_cells) != len(new_cells):
        return 0, max(len(old_cells), len(new_cells))
    start = 0
    end = len(new_cells)
    while start < end and old_cells[start] == new_cells[start]:
        start += 1
    while end > start and old_cells[end - 1] == new_cells[end - 1]:
        end -= 1
    return (start, end) if end > start else None


class LineView(Widget):
    """Lines of Rich Text from `build_lines`, painted through the Line API; `redraw()` after new data."""

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._texts: list[Text] = []
        self._strips: list[Strip] = []
        self._width = 0
        self._base: Style | None = None

    def build_lines(self, width: int) -> Sequence[Text]:
        """The lines to show at this width; subclasses draw their data here."""
        raise NotImplementedError

    def redraw(self) -> None:
        if self.size.width > 0:
            self.set_lines(self.build_lines(self.size.width))

    def set_lines(self, lines: Sequence[Text]) -> None:
        """Show these lines; marks dirty only the spans that differ from what is on screen."""
        width = self.size.width
        base = self.rich_style
        if width != self._width or base != self._base or len(lines) != len(self._strips):
            self._width, self._base = width, base
            self._texts = list(lines)
            self._strips = [self._to_strip(text) for text in lines]
            self.refresh()
            return
        for y, text in enumerate(lines):
            if text == self._texts[y]:
                continue
            self._texts[y] = text
            strip = self._to_strip(text)
            span = changed_span(self._strips[y], strip)
            self._strips[y] = strip
            if span is not None:
                self.refresh(Region(span[0], y, span[1] - span[0], 1))

    def _to_strip(self, text: Text) -> Strip:
        segments = Segment.apply_style(text.render(self.app.console), self._base)
        return Strip(Segment.simplify(segments)).crop_extend(0, self._width, self._base)

    def render_line(self, y: int) -> Strip:
        if y < len(self._strips) and self._width == self.size.width:
            return self._strips[y]
        return Strip.blank(self.size.width, self.rich_style)

    def on_resize(self) -> None:
        self._width = 0
        self.redraw()
