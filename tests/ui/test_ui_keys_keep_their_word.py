"""Keys that keep their word (issue 38, item 5): a hint never offers a key that refuses here, a key that cannot act
says why, and `?` lists every key the footer or a hint names.

On the simulated machine, where no stack is read and no signal sent, and without --record, where `M` marks nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gputui.session.stacks import SIMULATED_REFUSAL
from gputui.ui.app import SIMULATED_SIGNAL_REFUSAL
from gputui.ui.record_replay import MARK_REFUSAL
from gputui.ui.screens.detail import DetailScreen
from gputui.ui.screens.help import key_rows
from tests.ui.monitor_helpers import (
    footer_keys,
    help_key_set,
    hint_keys,
    run_ticks,
    screen_rows,
    simulated_app,
    until,
)

if TYPE_CHECKING:
    from conftest import Clock


def notices(app: object) -> list[str]:
    return [notice.report.text for notice in app.notices.rows()]  # type: ignore[attr-defined]


async def test_the_detail_on_the_simulated_machine_does_not_offer_a(clock: Clock) -> None:
    """The detail said "`a` on a process reads its stacks now" and `a` then answered "no stacks on the simulated
    machine"."""
    app = simulated_app("healthy", gpus=2, clock=clock)
    async with app.run_test(size=(120, 40)) as pilot:
        await run_ticks(app, clock, 3)
        app.main.table.focus()
        await pilot.press("enter")
        await until(lambda: isinstance(app.screen, DetailScreen), pilot)
        await run_ticks(app, clock, 1)
        await pilot.pause()
        text = "\n".join(screen_rows(app))
        assert "ACTIVITY  PID" in text
        assert "reads its stacks now" not in text and "a on a process" not in text
        assert SIMULATED_REFUSAL in " ".join(text.split())


async def test_space_on_the_simulated_machine_says_why_it_tags_nothing(clock: Clock) -> None:
    app = simulated_app("healthy", gpus=2, clock=clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await run_ticks(app, clock, 2)
        app.main.table.focus()
        await pilot.press("space")
        await pilot.pause()
        assert not app.main.table.tagged
        assert SIMULATED_SIGNAL_REFUSAL in notices(app)


async def test_m_without_record_says_why_it_marks_nothing(clock: Clock) -> None:
    app = simulated_app("healthy", gpus=2, clock=clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await run_ticks(app, clock, 2)
        await pilot.press("M")
        await pilot.pause()
        assert app.screen is app.main and MARK_REFUSAL in notices(app)


async def test_help_lists_every_key_the_footer_or_a_hint_names(clock: Clock) -> None:
    """`?` did not list `space`, `K` or `a`; those that cannot act here are listed with why."""
    app = simulated_app("thermal", gpus=4, clock=clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await run_ticks(app, clock, 5)
        listed = help_key_set(app)
        assert {"space", "K", "a", "M"} <= listed
        named: set[str] = set()
        for keys in ((), ("tab",), ("d",), ("escape", "enter")):  # the GPU list, the table, the pane, the detail
            await pilot.press(*keys)
            await run_ticks(app, clock, 1)
            await pilot.pause()
            named |= footer_keys(app) | hint_keys("\n".join(screen_rows(app)))
        for key in ("space", "K", "a", "M"):
            await pilot.press(key)
            await pilot.pause()
        named |= hint_keys("\n".join(notices(app)))
        assert named - listed == set(), (named - listed, listed)
        rows = dict(key_rows(app.help_bindings(), app.help_refusals()))
        assert rows["K"].endswith(f"(not here: {SIMULATED_SIGNAL_REFUSAL})")
        assert rows["a"].endswith(f"(not here: {SIMULATED_REFUSAL})")
        assert rows["M"].endswith(f"(not here: {MARK_REFUSAL})")
