"""At 80x24 nothing is hidden without saying so: a tag that does not fit is counted or moves to the free line, a
value keeps its unit, the help scrolls, the process table counts the rows out of view, an active filter is named,
the detail view names the charts it has no room for.

The main view at 2, 4 and 8 simulated GPUs; all read off the composited screen as a user reads it.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import TYPE_CHECKING

import pytest

from gputui.formatting import fmt_gib
from gputui.model import GpuSample
from gputui.ui.app import GpuTuiApp
from gputui.ui.screens.detail import CHARTS, GPM_CHARTS, DetailScreen
from gputui.ui.screens.help import EXTRA_KEYS, HelpScreen
from gputui.ui.widgets.gpu_panel import GpuPanel, panel_tags
from gputui.ui.widgets.processes import process_count
from tests.snapshots import gpu_info
from tests.ui.monitor_helpers import (
    MARKS,
    busy_gpu,
    mig_gpu,
    mig_instance,
    plain,
    run_ticks,
    screen_rows,
    scripted_app,
    simulated_app,
    snapshot,
)

if TYPE_CHECKING:
    from conftest import Clock

NARROW = (80, 24)
GPU_COUNTS = [2, 4, 8]
COUNT = re.compile(r" \+(\d+)(?= |$)")


def panel_rows(app: GpuTuiApp) -> dict[int, str]:
    """Each GPU's panel as it is on screen: its rows (one or two at 80x24) joined by a newline."""
    gpus = app.main.gpus
    rows = screen_rows(app)[gpus.region.y : gpus.region.bottom]
    mode = gpus.mode
    return {panel.gpu_index: "\n".join(rows[n * mode : (n + 1) * mode]) for n, panel in enumerate(gpus.panels)}


@pytest.mark.parametrize("gpus", GPU_COUNTS)
@pytest.mark.parametrize("scenario", ["thermal", "powercap", "mig-pending"])
async def test_every_tag_is_on_screen_or_counted_and_every_value_keeps_its_unit(
    scenario: str, gpus: int, clock: Clock
) -> None:
    app = simulated_app(scenario, gpus=gpus, clock=clock)
    async with app.run_test(size=NARROW) as pilot:
        await run_ticks(app, clock, 10)
        await pilot.pause()
        tagged = 0
        for panel, text in zip(app.main.gpus.panels, panel_rows(app).values(), strict=True):
            tags = [tag for tag, _ in panel_tags(panel.sample)]
            counts = [int(n) for n in COUNT.findall(text)]
            shown = [tag for tag in tags if re.search(rf"(^| ){re.escape(tag)}( |$)", text, re.MULTILINE)]
            assert len(shown) + sum(counts) == len(tags), (tags, text)
            assert panel.sample is not None and panel.sample.memory_used_bytes is not None
            vram = f"{fmt_gib(panel.sample.memory_used_bytes)}/{fmt_gib(panel.info.memory_total_bytes, 0)}G"
            assert re.search(rf"(^| ){re.escape(vram)}( |$)", text, re.MULTILINE), (vram, text)
            assert all(len(row.rstrip()) <= 80 for row in text.splitlines())
            tagged += bool(tags)
        assert tagged  # the scenario has something to tag


def test_tags_that_do_not_fit_beside_the_values_go_to_the_free_line_and_the_rest_are_counted() -> None:
    sample = replace(busy_gpu(0, 1.0), clock_event_reasons_mask=0x2 | 0x4 | 0x10 | 0x40 | 0x80 | 0x100)
    panel = GpuPanel(gpu_info(0), MARKS)
    panel.add_sample(gpu_info(0), sample)
    tags = [tag for tag, _ in panel_tags(sample)]
    assert len(tags) == 6
    head, below = plain(panel.build_lines(80, 2)).splitlines()
    assert not any(tag in head for tag in tags)
    assert below.startswith("   CLK ") and len(below) <= 80
    shown = [tag for tag in tags if f" {tag}" in below]
    assert shown == tags[: len(shown)] and shown  # worst first
    assert below.endswith(f" +{len(tags) - len(shown)}")


def test_the_full_panels_first_line_counts_the_tags_past_its_width() -> None:
    sample = replace(busy_gpu(0, 1.0), clock_event_reasons_mask=0x2 | 0x4 | 0x10 | 0x40 | 0x80 | 0x100)
    panel = GpuPanel(gpu_info(0), MARKS)
    panel.add_sample(gpu_info(0), sample)
    tags = [tag for tag, _ in panel_tags(sample)]
    head = plain(panel.build_lines(100, 3)).splitlines()[0]
    shown = [tag for tag in tags if f" {tag}" in head]
    assert len(head) <= 100 and shown == tags[: len(shown)]
    assert head.endswith(f" +{len(tags) - len(shown)}")
    wide = plain(panel.build_lines(200, 3)).splitlines()[0]  # the same panel, wider: all of them, no count
    assert all(f" {tag}" in wide for tag in tags) and not COUNT.search(wide)


def table_rows(app: GpuTuiApp) -> list[str]:
    table = app.main.table
    return screen_rows(app)[table.region.y : table.region.bottom]


@pytest.mark.parametrize("gpus", GPU_COUNTS)
async def test_the_process_table_counts_the_rows_out_of_view(gpus: int, clock: Clock) -> None:
    app = simulated_app("mig-shared-slice", gpus=gpus, clock=clock)
    async with app.run_test(size=NARROW) as pilot:
        await run_ticks(app, clock, 3)
        await pilot.pause()
        rows = table_rows(app)
        listed = [row for row in rows if row[:3].strip().isdigit()]
        more = [int(n) for row in rows for n in re.findall(r"^ \+(\d+) process(?:es)? ", row)]
        assert len(listed) + sum(more) == len(app.main.table.order)
        assert bool(more) == (gpus >= 4)  # 5 processes fit below 2 GPUs; 9 and 17 do not
        app.main.table.focus()
        await pilot.press("end")
        await pilot.pause()
        rows = table_rows(app)
        assert len([row for row in rows if row[:3].strip().isdigit()]) == len(listed)  # scrolled, still counted
        assert sum(int(n) for row in rows for n in re.findall(r"^ \+(\d+) process", row)) == sum(more)


@pytest.mark.parametrize("gpus", GPU_COUNTS)
async def test_an_active_filter_is_named_above_the_table_until_it_is_cleared(gpus: int, clock: Clock) -> None:
    app = simulated_app("mig-shared-slice", gpus=gpus, clock=clock)
    async with app.run_test(size=NARROW) as pilot:
        await run_ticks(app, clock, 3)
        await pilot.press("slash", *"bob", "escape")
        await run_ticks(app, clock, 1)  # the box is closed; the filter holds on the next tick
        await pilot.pause()
        assert not app.main.filter_box.display and app.latest is not None
        everyone = process_count(app.latest.snapshot)
        kept = app.main.table.order
        rows = table_rows(app)
        assert rows[0].startswith(f'filter "bob": {len(kept)} of {everyone} processes')
        assert 0 < len(kept) < everyone
        assert all(" bob " in row for row in rows[2 : 2 + len(kept)])
        await pilot.press("slash", "backspace", "backspace", "backspace", "escape")
        await pilot.pause()
        rows = table_rows(app)
        assert not any("filter" in row for row in rows) and rows[0].startswith("GPU ")
        assert len(app.main.table.order) == everyone


@pytest.mark.parametrize("gpus", GPU_COUNTS)
async def test_help_covers_the_monitor_and_scrolls_to_its_last_key(gpus: int, clock: Clock) -> None:
    app = simulated_app("thermal", gpus=gpus, clock=clock)
    last = EXTRA_KEYS[-1][0]
    async with app.run_test(size=NARROW) as pilot:
        await run_ticks(app, clock, 3)
        await pilot.press("question_mark")
        await run_ticks(app, clock, 2)  # the monitor goes on under it
        await pilot.pause()
        rows = screen_rows(app)
        assert isinstance(app.screen, HelpScreen)
        assert all(row[0] in "┌│└" and row[-1] in "┐│┘" for row in rows)  # the box, edge to edge: nothing behind
        assert not any(row[4:].lstrip().startswith(last) for row in rows)  # taller than 24 rows
        await pilot.press("end")
        await pilot.pause()
        assert any(row[4:].lstrip().startswith(last) for row in screen_rows(app))
        await pilot.press("home", "pagedown")
        await pilot.pause()
        assert screen_rows(app) != rows


async def test_help_on_a_wide_terminal_shows_nothing_of_the_monitor_around_it(clock: Clock) -> None:
    app = simulated_app("thermal", gpus=4, clock=clock)
    async with app.run_test(size=(120, 40)) as pilot:
        await run_ticks(app, clock, 3)
        await pilot.press("question_mark")
        await run_ticks(app, clock, 2)
        await pilot.pause()
        box = app.screen.query_one("#help").region
        assert box.width < 120
        assert all(not row[: box.x].strip() and not row[box.right :].strip() for row in screen_rows(app))


async def detail_rows(sample: GpuSample) -> list[str]:
    """The screen's rows at 80x24 once the detail view of a machine of this one GPU is open."""
    app, _ = scripted_app([snapshot(1.0, [sample])])
    async with app.run_test(size=NARROW) as pilot:
        await app.tick()
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, DetailScreen)
        return screen_rows(app)


async def test_the_detail_views_title_counts_the_tags_past_its_width() -> None:
    sample = replace(busy_gpu(0, 1.0), clock_event_reasons_mask=0x2 | 0x4 | 0x10 | 0x40 | 0x80 | 0x100 | 0x10000)
    title = next(row for row in await detail_rows(sample) if row.startswith("GPU 0 ")).rstrip()
    tags = [tag for tag, _ in panel_tags(sample)]
    shown = [tag for tag in tags if f" {tag} " in f"{title} "]
    assert shown == tags[: len(shown)] and len(shown) < len(tags)
    assert title.endswith(f" +{len(tags) - len(shown)}")


@pytest.mark.parametrize("instances", [2, 7])
async def test_the_detail_view_names_the_charts_it_has_no_room_for(instances: int) -> None:
    devices = [mig_instance(0, gi, (), sm=50.0, profile="1g.10gb") for gi in range(1, instances + 1)]
    sample = replace(mig_gpu(0, 1.0, devices), sm_active_pct=50.0, tensor_active_pct=20.0, dram_bw_pct=30.0)
    rows = await detail_rows(sample)
    titles = [chart.title for chart in (*CHARTS, *GPM_CHARTS)]
    drawn = [title for title in titles if any(row.startswith(f"{title} ") for row in rows)]
    (more,) = [row for row in rows if re.match(r"\+\d+ more charts", row)]
    left_out = [title for title in titles if title not in drawn]
    assert drawn == titles[: len(drawn)] and left_out
    assert more.startswith(f"+{len(left_out)} more charts") and more.rstrip().endswith(", ".join(left_out))
