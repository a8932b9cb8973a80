"""The lean partial updates leave a terminal showing exactly what Textual's own renderer leaves, in fewer bytes.

The monitor's updates are captured as the app makes them, written once as Textual renders them and once as
`LeanChopsUpdate` does into two emulated terminals (pyte), and the two screens compared cell by cell, colours
and attributes included, after every update.
"""

from __future__ import annotations

import pyte
import pytest
from rich.color import ColorSystem
from rich.console import Console
from rich.style import Style
from rich.text import Text
from textual._compositor import ChopsUpdate, CompositorUpdate
from textual.strip import Strip

from gputui.ui.app import GpuTuiApp
from gputui.ui.lean_update import LeanChopsUpdate, render_pieces
from tests.conftest import Clock
from tests.ui.monitor_helpers import run_ticks, simulated_app

COLS, ROWS = 120, 40


def terminal() -> tuple[pyte.Screen, pyte.Stream]:
    screen = pyte.Screen(COLS, ROWS)
    return screen, pyte.Stream(screen)


def cells(screen: pyte.Screen) -> list[list[pyte.screens.Char]]:
    return [[screen.buffer[y][x] for x in range(COLS)] for y in range(ROWS)]


async def captured_updates(app: GpuTuiApp, clock: Clock, ticks: int) -> list[CompositorUpdate]:
    """Every update the app's screens hand to the terminal while `ticks` readings arrive."""
    updates: list[CompositorUpdate] = []

    def keep(screen: object, renderable: object) -> None:
        if isinstance(renderable, CompositorUpdate):
            updates.append(renderable)

    app._display = keep  # type: ignore[method-assign]
    async with app.run_test(size=(COLS, ROWS)) as pilot:
        for _ in range(ticks):
            await run_ticks(app, clock, 1)
            await pilot.pause()
    return updates


def replay_both(updates: list[CompositorUpdate], app: GpuTuiApp) -> tuple[int, int]:
    """Writes every update both ways, comparing the screens after each; returns the bytes of each way."""
    console = app.console
    textual_screen, textual_stream = terminal()
    lean_screen, lean_stream = terminal()
    textual_bytes = lean_bytes = 0
    partial = 0
    for update in updates:
        if isinstance(update, LeanChopsUpdate):
            partial += 1
            theirs = ChopsUpdate.render_segments(update, console)
            ours = update.render_segments(console)
        else:
            theirs = ours = update.render_segments(console)
        textual_stream.feed(theirs)
        lean_stream.feed(ours)
        textual_bytes += len(theirs.encode())
        lean_bytes += len(ours.encode())
        assert cells(lean_screen) == cells(textual_screen)
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
