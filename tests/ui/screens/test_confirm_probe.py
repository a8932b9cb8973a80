"""The probe's confirmation: who it would slow down, named as the host reads them (other users' process names,
which may hold Rich markup), shown as plain text."""

from __future__ import annotations

from textual.app import App

from gputui.ui.screens.confirm_probe import ConfirmProbe
from tests.ui.monitor_helpers import screen_rows


async def test_the_processes_named_are_shown_as_written_never_read_as_markup() -> None:
    app: App[None] = App()
    lines = ("pid 4242     bob          [/]python[red]", "pid 4243     eve          [link=http://x]y")
    async with app.run_test(size=(120, 30)) as pilot:
        app.push_screen(ConfirmProbe("Stress probe on GPU 0 [H100]", lines))
        await pilot.pause()
        shown = "\n".join(screen_rows(app))
    assert all(line in shown for line in lines)
    assert "Stress probe on GPU 0 [H100]" in shown
