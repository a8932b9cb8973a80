"""What matters shows at every size (issue 38, item 4): no GPU or finding leaves the screen without a count, with
room the findings show their titles, the clock is on the 8-GPU 80x24 layout, and "SM" alone is never a clock.

Each test drives a seeded simulated machine at 80x24 or 120x40 and reads the composited screen as a user reads it.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import pytest

from gputui.diagnostics.groups import group_findings
from gputui.ui.widgets.header import HeaderState, StatusHeader
from tests.snapshots import system_info
from tests.ui.monitor_helpers import plain, run_ticks, screen_rows, simulated_app

if TYPE_CHECKING:
    from conftest import Clock

GPU_COUNT = re.compile(r" \+(\d+) GPUs? \(")
SM_AS_A_CLOCK = re.compile(r"\bSM\s+(\d+|n/a)/\d+")


def drawn_gpus(rows: list[str], count: int) -> set[int]:
    """The GPUs whose panel's first line is on screen (" 3 H100 ...")."""
    return {i for i in range(count) for row in rows if row.startswith(f"{i:>2} H100")}


async def test_80x24_with_the_findings_open_counts_the_gpus_it_cannot_draw(clock: Clock) -> None:
    """`--demo container`, `d`: only GPU 0 was drawn, GPUs 1-3 gone without a count."""
    app = simulated_app("container", gpus=4, clock=clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await run_ticks(app, clock, 5)
        await pilot.press("d")
        await run_ticks(app, clock, 1)
        await pilot.pause()
        rows = screen_rows(app)
        assert app.main.findings.has_focus
        counted = [int(n) for row in rows for n in GPU_COUNT.findall(row)]
        drawn = drawn_gpus(rows, 4)
        assert counted and len(drawn) + sum(counted) == 4, "\n".join(rows)
        assert any(" +3 GPUs (1-3)" in row for row in rows) or len(drawn) > 1


async def test_with_room_the_findings_show_their_titles_not_only_their_counts(clock: Clock) -> None:
    """`--demo nvlink` with the pane closed: "1 CRITICAL 1 WARNING" above blank rows, the findings unseen."""
    app = simulated_app("nvlink", gpus=4, clock=clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await run_ticks(app, clock, 5)
        await pilot.pause()
        assert app.latest is not None and len(app.latest.active) == 2
        text = "\n".join(screen_rows(app))
        for group in group_findings(app.latest.active, "en"):
            assert group.title[:40] in text, (group.title, text)


@pytest.mark.parametrize("gpus", [8, 4])
async def test_the_clock_is_on_screen_where_the_verdict_is_about_it(gpus: int, clock: Clock) -> None:
    """`--demo thermal --demo-gpus 8` at 80x24 showed no clock though the verdict is about the clock."""
    app = simulated_app("thermal", gpus=gpus, clock=clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await run_ticks(app, clock, 12)
        await pilot.pause()
        assert app.latest is not None and "clock" in app.latest.verdict.line
        rows = screen_rows(app)
        gpu_lines = "\n".join(rows[app.main.gpus.region.y : app.main.gpus.region.bottom])
        for sample in app.latest.snapshot.gpus:
            assert sample.sm_clock_mhz is not None
            assert f"CLK {sample.sm_clock_mhz:.0f}" in gpu_lines, (sample.index, gpu_lines)
        if gpus == 8:  # one line a GPU: the clock made room, the tag that says why it fell is still beside it
            assert "HW-THERM" in next(row for row in gpu_lines.splitlines() if row.startswith(" 1 "))
        assert all(len(row.rstrip()) <= 80 for row in rows)


@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=["80x24", "120x40"])
@pytest.mark.parametrize("gpus", [1, 4, 8])
async def test_sm_alone_is_never_a_clock(gpus: int, size: tuple[int, int], clock: Clock) -> None:
    """`SM 84%` was SM activity in one layout and `SM 1980/1980` the clock in another: the clock is CLK."""
    app = simulated_app("thermal", gpus=gpus, clock=clock)
    async with app.run_test(size=size) as pilot:
        await run_ticks(app, clock, 3)
        await pilot.pause()
        text = "\n".join(screen_rows(app))
        assert not SM_AS_A_CLOCK.search(text), text
        assert "CLK " in text
        assert re.search(r"\bSM(ACT| act)\s+\d+%", text)


def test_the_header_counts_info_findings_too() -> None:
    """With the pane hidden, a finding at info that the header did not count was on screen nowhere."""
    header = StatusHeader()
    header.show(HeaderState(system=system_info(), interval_s=1.0, clock="12:00:00", warnings=1, info=2))
    assert " 1 WARNING " in plain(header.build_lines(120)) and " 2 INFO " in plain(header.build_lines(120))
