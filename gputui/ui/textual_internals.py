"""Every piece of Textual's private modules (`textual._*`) that gputui uses, imported here and nowhere else.

Textual's public API draws a frame and reads keys; it offers no hook for how a partial update is written to the
terminal, nor for the loop that reads the terminal. The monitor replaces both (lean_update.py: fewer bytes per tick
over SSH; driver.py: an input thread that sleeps until there is input), so it builds on these:

- `Compositor`: the screen's compositor. LeanCompositor subclasses it to render only the rows a tick dirtied; it
  overrides `render_partial_update()` and `_get_renders(crop)` and reads `_dirty_regions` and `visible_widgets`.
  A Screen keeps its compositor in `_compositor`, which LeanScreen replaces.
- `ChopsUpdate`: a partial update, `ChopsUpdate(chops, spans, chop_ends)`. LeanChopsUpdate subclasses it and
  writes `render_segments(console)` from each dirty span's start, with only the colours that change.
- `CompositorUpdate`: the base of every update the compositor hands to the terminal (the tests tell partial
  updates from full repaints by it).
- `XTermParser`: turns the bytes read from the terminal into key and mouse events: `XTermParser(debug)`, `feed(text)`
  and `tick()` (which times out a lone ESC). QuietLinuxDriver's own input loop needs the parser LinuxDriver's uses.
- `get_time`: the clock the parser sets its ESC deadline by; `escape_deadline(parser)` reads that deadline
  (`_timeout_time`, private to the parser), so the input thread sleeps until then and no longer.

tests/ui/test_textual_internals.py checks that each exists with the shape used here and still behaves as gputui
expects; a Textual release that moves or changes one fails there, by name. They pass on every Textual tried from
6.12.0 to 8.2.8 (the newest release when this was written); 5.3.0 renders a ChopsUpdate differently.
"""

from __future__ import annotations

from textual._compositor import ChopsUpdate, Compositor, CompositorUpdate
from textual._time import get_time
from textual._xterm_parser import XTermParser

__all__ = ["ChopsUpdate", "Compositor", "CompositorUpdate", "XTermParser", "escape_deadline", "get_time"]


def escape_deadline(parser: XTermParser) -> float | None:
    """When (on `get_time`'s clock) the parser gives up waiting for the rest of an escape sequence and reports what
    it holds (a lone ESC is the Escape key); None while it holds nothing partial."""
    deadline: float | None = parser._timeout_time
    return deadline
