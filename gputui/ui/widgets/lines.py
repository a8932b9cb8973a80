"""A widget made of text lines that repaints only the parts that changed.

Every view of live data is built on this. A line is a list of (text, style) parts, which is cheap to build
and to compare; a new frame is compared with the last one line by line, unchanged lines cost nothing, and
for a changed line only the span from its first to its last changed part is marked dirty, so Textual
re-renders and sends just that. Over a slow SSH link each redrawn cell costs bytes; at 1 Hz with 8 GPUs
each Rich renderable or DataTable cell rebuilt per tick costs CPU that this avoids.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.geometry import Region
from textual.strip import Strip
from textual.widget import Widget

from gputui.ui.lean_update import LeanScreen

Part = tuple[str, str]  # (text, Rich style definition; "" for the widget's own style)
Line = list[Part]


def part_len(text: str) -> int:
    return len(text) if text.isascii() else cell_len(text)


def line_len(line: Line) -> int:
    """Cells of the whole line: one join and one ASCII check, cheaper than one per part."""
    text = "".join([part[0] for part in line])
    return len(text) if text.isascii() else cell_len(text)


def changed_span(
    old: Line, new: Line, old_len: int | None = None, new_len: int | None = None
) -> tuple[int, int] | None:
    """The [start, end) cells that cover every part that differs between two lines; None if none does.

    The lines' lengths in cells may be given when the caller knows them already.
    """
    if old == new:
        return None
    n = min(len(old), len(new))
    head = 0
    start = 0
    while head < n and old[head] == new[head]:
        start += part_len(new[head][0])
        head += 1
    old_len = line_len(old) if old_len is None else old_len
    new_len = line_len(new) if new_len is None else new_len
    tail = 0
    # Equal parts at the end are unchanged on screen only if they did not move: same line length.
    while old_len == new_len and tail < n - head and old[-1 - tail] == new[-1 - tail]:
        tail += 1
    end = max(old_len, new_len) - (line_len(new[len(new) - tail :]) if tail else 0)
    return (start, end) if end > start else None


class LineView(Widget):
    """Lines from `build_lines(width)`, painted through the Line API; call `redraw()` after new data."""

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._lines: list[Line] = []
        self._strips: list[Strip] = []
        self._lengths: list[int] = []  # cells of each line before padding
        self._width = 0
        self._base: Style | None = None
        self._styles: dict[str, Style] = {}
        self._own_style: Style | None = None
        # Set from the Resize event: `self.size` walks up to the screen on every read, too slow per line.
        self._known_width = 0
        self.known_height = 0  # the CSS style, cached: Textual recomputes it on each read

    @property
    def known_width(self) -> int:
        return self._known_width

    @property
    def lines(self) -> Sequence[Line]:
        """What is on screen now."""
        return self._lines

    def build_lines(self, width: int) -> Sequence[Line]:
        """The lines to show at this width; subclasses draw their data here."""
        raise NotImplementedError

    def redraw(self) -> None:
        if self._known_width > 0:
            self.set_lines(self.build_lines(self._known_width))

    def set_lines(self, lines: Sequence[Line]) -> None:
        """Show these lines; marks dirty only the spans that differ from what is on screen."""
        width = self._known_width
        if self._own_style is None:
            self._own_style = self.rich_style
        base = self._own_style
        if width != self._width or base != self._base or len(lines) != len(self._lines):
            self._width, self._base, self._styles = width, base, {}
            self._lines = list(lines)
            self._lengths = [line_len(line) for line in self._lines]
            self._strips = [
                self._to_strip(line, length) for line, length in zip(self._lines, self._lengths, strict=True)
            ]
            self.refresh()
            return
        dirty: list[Region] = []
        for y, line in enumerate(lines):
            old = self._lines[y]
            if line == old:
                continue
            length = line_len(line)
            span = changed_span(old, line, self._lengths[y], length)
            self._lines[y], self._lengths[y] = line, length
            self._strips[y] = self._to_strip(line, length)
            if span is not None and span[0] < width:
                dirty.append(Region(span[0], y, min(span[1], width) - span[0], 1))
        if dirty:
            self._repaint(dirty)

    def _repaint(self, regions: list[Region]) -> None:
        """`refresh(*regions)` for lines that changed in place: the widget's size, layout and styles did not.

        Textual's refresh takes a round trip through this widget's message queue (a Prompt, then Idle, then an
        Update message to the screen, then the screen's own Idle) before the screen's update timer is resumed;
        with five views changing every tick that is some twenty messages a second for what this does directly.
        """
        if not (self._is_mounted and self.display):
            self.refresh(*regions)
            return
        self._set_dirty(*regions)
        screen = self.screen
        screen._dirty_widgets.add(self)
        if not (isinstance(screen, LeanScreen) and screen.repainting_now):  # else the screen composites at its end
            screen._update_timer.resume()

    def _style(self, definition: str) -> Style:
        style = self._styles.get(definition)
        if style is None:
            base = self._base or Style()
            style = self._styles[definition] = base + Style.parse(definition) if definition else base
        return style

    def _to_strip(self, line: Line, length: int) -> Strip:
        """Parts to a strip of exactly the widget's width; neighbours of one style become one segment."""
        segments: list[Segment] = []
        texts: list[str] = []
        current = ""
        for text, style in line:
            if style != current and texts:
                segments.append(Segment("".join(texts), self._style(current)))
                texts = []
            current = style
            texts.append(text)
        if texts:
            segments.append(Segment("".join(texts), self._style(current)))
        if length > self._width:
            return Strip(segments).crop_extend(0, self._width, self._base)
        if length < self._width:
            segments.append(Segment(" " * (self._width - length), self._base))
        return Strip(segments, self._width)

    def render_line(self, y: int) -> Strip:
        if y < len(self._strips):
            return self._strips[y]
        return Strip.blank(self._known_width, self.rich_style)

    def _is_plain(self) -> bool:
        """True when Textual's CSS pass would only return our strips (and filter them) unchanged."""
        styles = self.styles
        return (
            not any(styles.gutter)
            and not any(edge_type for edge_type, _ in styles.outline)
            and styles.opacity == 1
            and styles.text_opacity == 1
            and styles.tint.a == 0
            and styles.background_tint.a == 0
            and not (styles.has_rule("hatch") and styles.hatch != "none")
        )

    def render_lines(self, crop: Region) -> list[Strip]:
        """The strips for `crop`, without Textual's per-line CSS pass when the widget has nothing for it to do.

        Textual renders every widget that overlaps the union of a frame's dirty regions, line by line through
        its style cache; with the clock at the top and a process row near the bottom, that is every panel,
        every tick. The strips here are already styled and padded, so only the app's line filters (colour
        reduction, dimming) are applied, and Strip caches those per filter.
        """
        if not self._is_plain():
            return super().render_lines(crop)
        render_line = self.render_line
        strips = [render_line(y) for y in crop.line_range]
        filters = self.get_line_filters()
        if filters:
            background = self.background_colors[1]
            for f in filters:
                strips = [strip.apply_filter(f, background) for strip in strips]
        x1, x2 = crop.column_span
        if (x1, x2) != (0, self._known_width):
            strips = [strip.crop(x1, x2) for strip in strips]
        return strips

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._own_style = None

    def sync_size(self) -> None:
        """Take the size the layout gave, and redraw if it is not the one known: for a caller that changed the
        layout and cannot wait for the Resize event, which may not come where the size changed and back."""
        width, height = self.size
        if (width, height) != (self._known_width, self.known_height):
            self._known_width, self.known_height = width, height
            self.redraw()

    def on_resize(self, event: events.Resize) -> None:
        self._known_width = event.size.width
        self.known_height = event.size.height
        self.redraw()
