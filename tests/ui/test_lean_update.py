"""The lean partial updates leave a terminal showing exactly the frame a full repaint would, in fewer bytes.

The monitor's updates are captured as the app makes them, each with the whole frame as a full repaint would
write it then; the updates are written into one emulated terminal (pyte), each frame into another, and the two
screens compared cell by cell, colours and attributes included, after every update.
"""

from __future__ import annotations

import pyte
import pytest
from rich.color import ColorSystem
from rich.console import Console
from rich.style import Style
from rich.text import Text
from textual.screen import Screen
from textual.strip import Strip

from gputui.ui.app import GpuTuiApp
from gputui.ui.lean_update import LeanChopsUpdate, render_pieces
from gputui.ui.textual_internals import ChopsUpdate, CompositorUpdate
from tests.conftest import Clock
from tests.ui.monitor_helpers import run_ticks, simulated_app

COLS, ROWS = 120, 40


def terminal() -> tuple[pyte.Screen, pyte.Stream]:
    screen = pyte.Screen(COLS, ROWS)
    return screen, pyte.Stream(screen)


def cells(screen: pyte.Screen) -> list[list[pyte.screens.Char]]:
    return [[screen.buffer[y][x] for x in range(COLS)] for y in range(ROWS)]


async def captured_updates(
    app: GpuTuiApp, clock: Clock, ticks: int, ticks_done: list[int] | None = None
) -> list[tuple[CompositorUpdate, str]]:
    """Every update the app's screens hand to the terminal while `ticks` readings arrive, each with the whole
    frame as a full repaint would write it at that moment; and in `ticks_done`, for each update, how many readings
    had been handed over and drawn before it (on a busy machine Textual may draw two readings in one update)."""
    updates: list[tuple[CompositorUpdate, str]] = []
    done = 0

    def keep(screen: Screen[object], renderable: object) -> None:
        if isinstance(renderable, CompositorUpdate):
            full = screen._compositor.render_full_update().render_segments(app.console)
            updates.append((renderable, full))
            if ticks_done is not None:
                ticks_done.append(done)

    app._display = keep  # type: ignore[method-assign]
    async with app.run_test(size=(COLS, ROWS)) as pilot:
        for _ in range(ticks):
            await run_ticks(app, clock, 1)
            await pilot.pause()
            done += 1
    return updates


def replay_both(updates: list[tuple[CompositorUpdate, str]], app: GpuTuiApp) -> tuple[int, int]:
    """Writes every update the lean way into one terminal; after each, the cells it wrote must be the frame's
    (repainted whole in another terminal at that moment), and after the last, every cell. Returns the bytes
    Textual's own renderer and the lean one write for the partial updates.

    Only the written cells are compared after each update: Textual marks a widget dirty a moment after its
    content changes, so a frame may already show what the next update writes.
    """
    console = app.console
    lean_screen, lean_stream = terminal()
    textual_bytes = lean_bytes = 0
    partial = 0
    frame: list[list[pyte.screens.Char]] = []
    for update, full in updates:
        ours = update.render_segments(console)
        lean_stream.feed(ours)
        frame_screen, frame_stream = terminal()
        frame_stream.feed(full)
        frame = cells(frame_screen)
        if isinstance(update, LeanChopsUpdate):
            partial += 1
            textual_bytes += len(ChopsUpdate.render_segments(update, console).encode())
            lean_bytes += len(ours.encode())
            shown = cells(lean_screen)
            for y, x1, x2 in update.spans:
                assert shown[y][x1:x2] == frame[y][x1:x2], f"row {y}, columns {x1}-{x2}"
    assert cells(lean_screen) == frame
    assert partial >= 5, "the ticks made too few partial updates to compare"
    return textual_bytes, lean_bytes


@pytest.mark.parametrize(("scenario", "lang"), [("healthy", "en"), ("thermal", "zh"), ("starved-cpu", "en")])
async def test_lean_updates_show_what_textual_shows_in_fewer_bytes(
    scenario: str, lang: str, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LC_ALL", "zh_CN.UTF-8" if lang == "zh" else "C.UTF-8")
    clock.now = 1_000.0
    app = simulated_app(scenario, 8, clock=clock)
    updates = await captured_updates(app, clock, 12)
    textual_bytes, lean_bytes = replay_both(updates, app)
    assert lean_bytes < 0.8 * textual_bytes


def test_a_cut_never_splits_a_wide_character() -> None:
    """A span that starts inside a CJK word is written from the word's start, which the terminal then shows whole."""
    console = Console(color_system="standard")
    screen, stream = terminal()
    strip = Strip(list(Text("温度 61C").render(console)))
    stream.feed(LeanChopsUpdate([{0: strip}], [(0, 1, 7)], [[COLS]]).render_segments(console))
    assert "".join(screen.buffer[0][x].data for x in range(7)) == "温度 61"


def test_only_the_colour_that_changes_is_sent() -> None:
    console = Console(color_system="standard")
    grey, green = Style.parse("bright_black"), Style.parse("green")
    out: list[str] = []
    line = Text.assemble(("TEMP ", grey), ("61C", green), (" ok", green))
    render_pieces([(s.text, s.style) for s in line.render(console)], ColorSystem.STANDARD, None, out)
    assert "".join(out) == "\x1b[0;90mTEMP \x1b[32m61C ok"
    out.clear()
    line = Text.assemble(("a", Style.parse("bold red")), ("b", Style.parse("red")))
    render_pieces([(s.text, s.style) for s in line.render(console)], ColorSystem.STANDARD, None, out)
    assert "".join(out) == "\x1b[0;1;31ma\x1b[0;31mb"
