"""Partial screen updates in fewer bytes: only the changed span of a line, and only the colours that change.

Textual (8.2) sends a changed line from the left edge of its widget to the end of the dirty span, and wraps
every segment in a full SGR sequence followed by a reset. At 1 Hz with 8 GPUs that is most of what the monitor
writes to an SSH link: a changed "61/89C" in the middle of a panel row costs the row's unchanged left half and
two escape sequences per colour change. `LeanCompositor` renders the same updates starting at the dirty span
(never inside a double-width character) and changes only the foreground or background that differs from the
segment before; anything else (bold, reverse, links) is set from a reset, as Textual does.
The screen a terminal shows after each update is the same as with Textual's own renderer; tests replay both
through a terminal emulator to check it.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from rich.color import ColorSystem
from rich.console import Console
from rich.control import Control
from rich.style import Style
from textual._compositor import ChopsUpdate, Compositor
from textual.screen import Screen, ScreenResultType
from textual.strip import Strip

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


def _safe_start(strip: Strip, start: int) -> int:
    """`start`, or the start of its segment when that segment has wide characters a cut could split."""
    x = 0
    for segment in strip:
        end = x + segment.cell_length
        if end > start:
            return start if segment.text.isascii() else x
        x = end
    return start


def render_strip(strip: Strip, color_system: ColorSystem, current: _Sgr | None, out: list[str]) -> _Sgr | None:
    """Appends the strip's text and style changes to `out`; returns the terminal's style after it."""
    for text, style, _ in strip:
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
                start = _safe_start(strip, x1 - x) if x < x1 else 0
                out.append(Control.move_to(x + start, y).segment.text)
                current = render_strip(strip.crop(start, min(end, x2) - x), color_system, current, out)
            if y != last_y:
                out.append("\n")
        if current not in (None, _PLAIN):
            out.append(RESET)
        return "".join(out)


class LeanCompositor(Compositor):
    """The screen's compositor, with partial updates rendered by `LeanChopsUpdate`."""

    def render_partial_update(self) -> ChopsUpdate | None:
        update = super().render_partial_update()
        if update is None:
            return None
        return LeanChopsUpdate(update.chops, update.spans, update.chop_ends)


class LeanScreen(Screen[ScreenResultType]):
    """A screen whose partial updates go through `LeanCompositor`; the live views are built on it."""

    def __init__(self, name: str | None = None, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self._compositor = LeanCompositor()
