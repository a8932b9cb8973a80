"""The monitor's pane never says "nothing slows the GPUs" while it does not know: before the rules have their
readings it says it is collecting them, and a condition already seen, not yet held long enough to open its
finding, is said as watched (issue 38: at start the pane said "No findings: nothing slows the GPUs right now."
while GPU 1's panel showed TEMP 89/89C THERMAL)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text

from gputui.ui.widgets.diagnostics import DiagnosticsPane
from tests.ui.monitor_helpers import run_ticks, simulated_app

if TYPE_CHECKING:
    from conftest import Clock

NOTHING_SLOWS = "nothing slows the GPUs"


def pane_text(pane: DiagnosticsPane) -> str:
    return "\n".join(line.plain for line in pane.render().renderables if isinstance(line, Text))


async def test_at_start_the_pane_collects_and_watches_instead_of_saying_nothing_slows(clock: Clock) -> None:
    app = simulated_app("thermal", gpus=2, clock=clock)
    async with app.run_test(size=(120, 40)) as pilot:
        pane = app.main.query_one(DiagnosticsPane)
        await run_ticks(app, clock, 2)
        await pilot.pause()
        said = pane_text(pane)
        assert app.latest is not None and not app.latest.active  # nothing has held long enough to open yet
        assert NOTHING_SLOWS not in said
        assert "No findings yet: collecting readings: a verdict in 4 s; not known to be healthy" in said
        assert "watching: GPU 1: within 5 C of thermal slowdown (89 C) (opens in 2 s if it holds)" in said
        await run_ticks(app, clock, 10)
        await pilot.pause()
        said = pane_text(pane)
        assert "thermal throttling" in said and "watching" not in said and NOTHING_SLOWS not in said


async def test_the_pane_says_nothing_slows_once_the_verdict_knows_it(clock: Clock) -> None:
    app = simulated_app("healthy", gpus=2, clock=clock)
    async with app.run_test(size=(120, 40)) as pilot:
        pane = app.main.query_one(DiagnosticsPane)
        await run_ticks(app, clock, 1)
        await pilot.pause()
        assert NOTHING_SLOWS not in pane_text(pane)
        await run_ticks(app, clock, 6)
        await pilot.pause()
        assert "No findings: nothing slows the GPUs right now." in pane_text(pane)
