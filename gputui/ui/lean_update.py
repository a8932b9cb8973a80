"""Partial screen updates in fewer bytes: only the changed span of a line, and only the colours that change.

Textual (8.2) sends a changed line from the left edge of its widget to the end of the dirty span, and wraps
every segment in a full SGR sequence followed by a reset. At 1 Hz with 8 GPUs that is most of what the monitor
writes to an SSH link: a changed "61/89C" in the middle of a panel row costs the row's unchanged left half and
two escape sequences per colour change. `LeanCompositor` renders the same updates starting at the dirty span
(never inside a double-width character) and changes only the foreground or background that differs from the
segment before; anything else (bold, reverse, links) is set from a reset, as Textual does.
A terminal fed these updates shows what a full repaint shows; tests replay both through a terminal emulator
to check it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache

from rich.color import ColorSystem
from rich.console import Console
from rich.segment import Segment
from rich.style import Style
from textual.geometry import Region
from textual.screen import Screen, ScreenResultType
from textual.strip import Strip

from gputui.ui.textual_internals import ChopsUpdate, Compositor

RESET = "\x1b[0m"


@dataclass(frozen=True, slots=True)
class _Sgr:
    """A style as the terminal holds it: attributes (bold, dim, reverse, ...) apart from the two colours."""

    attributes: int
    foreground: str  # SGR codes, "" for the terminal's default
    background: str
    codes: str  # all of them, as Rich writes them


_PLAIN = _Sgr(0, "", "", "")


@lru_cache(maxsize=1024)
def _sgr(style: Style, color_system: ColorSystem) -> _Sgr:
    foreground = style.color.downgrade(color_system).get_ansi_codes() if style.color else ()
    background = style.bgcolor.downgrade(color_system).get_ansi_codes(foreground=False) if style.bgcolor else ()
    return _Sgr(
        style._attributes & style._set_attributes,
        ";".join(foreground),
        ";".join(background),
        style._make_ansi_codes(color_system),
    )


def _switch(current: _Sgr | None, wanted: _Sgr) -> str:
    """The shortest SGR sequence that takes the terminal from `current` (None: not known) to `wanted`."""
    if current == wanted:
        return ""
    if current is None or current.attributes != wanted.attributes:
        return f"\x1b[0;{wanted.codes}m" if wanted.codes else RESET
    changes = []
    if current.foreground != wanted.foreground:
        changes.append(wanted.foreground or "39")
    if current.background != wanted.background:
        changes.append(wanted.background or "49")
    return f"\x1b[{';'.join(changes)}m"


Piece = tuple[str, "Style | None"]


def cells_between(strip: Strip, start: int, stop: int) -> tuple[int, list[Piece]]:
    """The strip's text and styles over the cells [start, stop), and the cell where they begin.

    They begin at `start`, or at the start of its segment when that segment has wide characters, which a cut
    there could split; a cut at `stop` halves a wide character into a space, as Textual's own crop does.
    """
    begin: int | None = None
    pieces: list[Piece] = []
    x = 0
    for segment in strip:
        text, style = segment.text, segment.style
        ascii_text = text.isascii()
        end = x + (len(text) if ascii_text else segment.cell_length)
        if end <= start:
            x = end
            continue
        if x >= stop:
            break
        if begin is None:
            if x < start and ascii_text:
                text, x = text[start - x :], start
            begin = x
        if end > stop:
            text = text[: stop - x] if ascii_text else Segment(text, style).split_cells(stop - x)[0].text
        pieces.append((text, style))
        x = end
    return (start if begin is None else begin), pieces


def render_pieces(pieces: list[Piece], color_system: ColorSystem, current: _Sgr | None, out: list[str]) -> _Sgr | None:
    """Appends the pieces' text and style changes to `out`; returns the terminal's style after them."""
    for text, style in pieces:
        if style is None:
            wanted = _PLAIN
        elif style.link:
            out.append(RESET)
            out.append(style.render(text, color_system=color_system))  # Rich's OSC 8 link, ending in a reset
            current = _PLAIN
            continue
        else:
            wanted = _sgr(style, color_system)
        out.append(_switch(current, wanted))
        out.append(text)
        current = wanted
    return current


class LeanChopsUpdate(ChopsUpdate):
    """Textual's partial update, written from each dirty span's start with only the style changes."""

    def render_segments(self, console: Console) -> str:
        color_system = console._color_system or ColorSystem.TRUECOLOR
        out: list[str] = []
        current: _Sgr | None = None
        last_y = self.spans[-1][0]
        for y, x1, x2 in self.spans:
            for end, (x, strip) in zip(self.chop_ends[y], self.chops[y].items(), strict=False):
                if strip is None or x > x2 or end <= x1:
                    continue
                begin, pieces = cells_between(strip, max(0, x1 - x), min(end, x2) - x)
                out.append(f"\x1b[{y + 1};{x + begin + 1}H")
                current = render_pieces(pieces, color_system, current, out)
            if y != last_y:
                out.append("\n")
        if current not in (None, _PLAIN):
            out.append(RESET)
        return "".join(out)


class LeanCompositor(Compositor):
    """The screen's compositor: partial updates render only the widgets and rows they change, and are written by
    `LeanChopsUpdate`.

    Textual renders every widget that overlaps the box around all of a frame's dirty regions, each over its whole
    height: with the clock at the top and a process row near the bottom, that is the screen's own 40 blank lines,
    the footer and every container, every tick, for cells no span sends. Only rows with a dirty region are sent:
    widgets with no such row, or whose such rows widgets in front cover whole, are left out, and the rest are
    rendered only from their first such row to their last.
    """

    def __init__(self) -> None:
        super().__init__()
        self._dirty_rows: frozenset[int] | None = None

    def render_partial_update(self) -> ChopsUpdate | None:
        self._dirty_rows = frozenset(y for _, y, _, height in self._dirty_regions for y in range(y, y + height))
        try:
            update = super().render_partial_update()
        finally:
            self._dirty_rows = None
        if update is None:
            return None
        return LeanChopsUpdate(update.chops, update.spans, update.chop_ends)

    def _get_renders(self, crop: Region | None = None) -> Iterable[tuple[Region, Region, list[Strip]]]:
        dirty_rows = self._dirty_rows
        if crop is None or dirty_rows is None:
            yield from super()._get_renders(crop)
            return
        covered: dict[int, list[tuple[int, int]]] = {}  # row -> columns widgets in front have drawn there
        for widget, (region, clip) in self.visible_widgets.items():
            x, top, width, height = region.intersection(clip)
            right = x + width
            rows = [
                y
                for y in range(top, top + height)
                if y in dirty_rows and not any(x1 <= x and right <= x2 for x1, x2 in covered.get(y, ()))
            ]
            if not rows:
                continue  # nothing dirty here, or all of it covered by widgets in front (the screen behind them)
            first, last = rows[0], rows[-1] + 1
            shown = Region(x, first, width, last - first)
            strips = widget.render_lines(Region(x - region.x, first - region.y, width, last - first))
            if all(strip.cell_length == width for strip in strips):  # else not yet sized: it covers nothing
                for y in range(first, last):
                    covered.setdefault(y, []).append((x, right))
            yield region, shown, strips


class LeanScreen(Screen[ScreenResultType]):
    """A screen whose partial updates go through `LeanCompositor`; the live views are built on it.

    A tick's redraw runs inside `repainting_at_once()`: the views it changes are composited and written at its
    end, in the same turn of the event loop. Textual would resume the screen's update timer instead, which
    ticks in the next turn and then sleeps a frame before it pauses again: a second wake-up every tick.
    """

    def __init__(self, name: str | None = None, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self._compositor = LeanCompositor()
        self.repainting_now = False

    @contextmanager
    def repainting_at_once(self) -> Iterator[None]:
        self.repainting_now = True
        try:
            yield
        finally:
            self.repainting_now = False
            if self._dirty_widgets:
                self._on_timer_update()
