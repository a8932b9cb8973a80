"""The help screen's notices: the whole text of each, as plain text (a notice may quote another server's host
name, which may hold Rich markup)."""

from __future__ import annotations

from textual.app import App

from gputui.ui.screens.help import HelpScreen
from tests.ui.monitor_helpers import screen_rows

# What a remote exporter's notice says of a host named by its own labels: `[/]` closes no tag, `[red]` opens one.
NOTICE = "gpu[/]01[red]: the exporter runs but cannot read its GPUs (gputui_up 0)"


async def test_notices_and_the_account_are_shown_as_written_never_read_as_markup() -> None:
    app: App[None] = App()
    async with app.run_test(size=(120, 40)) as pilot:
        app.push_screen(HelpScreen((), notices=(NOTICE,), account=("job [/]bob: 10 s [b]idle",)))
        await pilot.pause()
        shown = "\n".join(screen_rows(app))
    assert f"- {NOTICE}" in shown
    assert "job [/]bob: 10 s [b]idle" in shown
