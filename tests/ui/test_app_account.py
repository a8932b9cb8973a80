"""The monitor's account of the session: with a price, a one-line tally under the findings, worked out at most once
a second; in `?`, where the session's GPU time went."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest
from textual.widgets import Static

from gputui.config import Config, CostConfig
from gputui.diagnostics.account import Price
from gputui.sources.sim.source import SimulatedSource
from gputui.ui.app import GpuTuiApp
from gputui.ui.screens.help import HelpScreen
from gputui.ui.widgets.diagnostics import DiagnosticsPane
from tests.ui.monitor_helpers import FIXED_NOW, run_ticks, screen_rows, session_of

if TYPE_CHECKING:
    from conftest import Clock

SIZE = (120, 40)


def starved_app(clock: Clock, price: Price | None, interval: float = 1.0) -> GpuTuiApp:
    source = SimulatedSource(scenario="starved-cpu", gpu_count=2, seed=0, clock=clock)
    cost = CostConfig() if price is None else CostConfig(price.per_gpu_hour, price.currency)
    session = session_of(source, interval=interval, config=Config(cost=cost))
    return GpuTuiApp(session, auto_sample=False, now=lambda: FIXED_NOW)


async def test_with_a_price_the_findings_end_with_the_cost_so_far(clock: Clock) -> None:
    app = starved_app(clock, Price(2.40))
    async with app.run_test(size=SIZE) as pilot:
        await run_ticks(app, clock, 31)
        await pilot.pause()
        input_bound = sum(g.seconds.get("input_bound", 0.0) for g in app.accountant.account().gpus)
        assert input_bound > 0
        cost = f"{input_bound / 3600 * 2.40:.2f}"
        [tally] = [row.strip() for row in screen_rows(app) if "Cost:" in row]
        assert tally.startswith(f"Cost: Input-bound {cost} USD")


async def test_without_a_price_there_is_no_tally(clock: Clock) -> None:
    app = starved_app(clock, None)
    async with app.run_test(size=SIZE) as pilot:
        await run_ticks(app, clock, 31)
        await pilot.pause()
        assert not [row for row in screen_rows(app) if "Cost:" in row]
        assert app.accountant.account().window_s == 30


async def test_the_tally_is_worked_out_at_most_once_a_second(clock: Clock, monkeypatch: pytest.MonkeyPatch) -> None:
    app = starved_app(clock, Price(2.40), interval=0.25)
    shown: list[str | None] = []
    show = DiagnosticsPane.show_tally
    monkeypatch.setattr(DiagnosticsPane, "show_tally", lambda pane, line: (shown.append(line), show(pane, line)))
    async with app.run_test(size=SIZE) as pilot:
        await run_ticks(app, clock, 41, step=0.25)
        await pilot.pause()
    assert len(shown) == 11  # 10 s of ticks 0.25 s apart: at 0, 1, ... 10 s


async def test_help_says_where_the_session_s_gpu_time_went(clock: Clock) -> None:
    app = starved_app(clock, None)
    async with app.run_test(size=SIZE) as pilot:
        await run_ticks(app, clock, 31)
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        lines = str(app.screen.query_one("#help-account", Static).content).splitlines()
        assert lines[0] == "Where the GPU time went (30s on 2 GPUs):"
        assert any(line.startswith("Input-bound ") and line.endswith("GPU-hours") for line in lines[1:])
