"""LineView's own render path must give the compositor exactly what Textual's CSS pass would."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.geometry import Region
from textual.widget import Widget

from gputui.ui.widgets.lines import LineView
from tests.ui.monitor_helpers import run_ticks, simulated_app

if TYPE_CHECKING:
    from conftest import Clock


def textual_render(view: LineView, crop: Region) -> list[list[object]]:
    """What Textual's own Widget.render_lines makes of the view, from an empty style cache."""
    view._styles_cache.clear()
    return [list(strip) for strip in Widget.render_lines(view, crop)]


async def test_plain_views_render_as_textual_would(clock: Clock) -> None:
    app = simulated_app("thermal", gpus=8, clock=clock)
    async with app.run_test(size=(120, 40)) as pilot:
        await run_ticks(app, clock, 3)
        await pilot.pause()
        views = [app.main.header, app.main.gpus, app.main.host, app.main.table]
        for view in views:
            assert view._is_plain()
            width, height = view.size
            top = min(1, height - 1)  # a crop the compositor could ask for: inside the widget
            for crop in (Region(0, 0, width, height), Region(7, top, width - 20, height - top)):
                assert [list(strip) for strip in view.render_lines(crop)] == textual_render(view, crop)


async def test_a_view_with_padding_goes_through_textual(clock: Clock) -> None:
    app = simulated_app("healthy", gpus=2, clock=clock)
    async with app.run_test(size=(120, 40)) as pilot:
        await run_ticks(app, clock, 2)
        host = app.main.host
        host.styles.padding = (0, 2)
        await pilot.pause()
        assert not host._is_plain()
        width, height = host.size
        strips = host.render_lines(Region(0, 0, width, height))
        assert all(strip.text.startswith("  ") for strip in strips)
