"""The answer at a glance, at the sizes people keep a monitor in: 80x24 tmux panes and 120x40 windows.

On the thermal and fp32 boxes of 8 GPUs, driven by the Pilot: the verdict's whole sentence under the header, `? Help`
at the end of the footer on the main, detail and topology screens, findings alike on several GPUs as one row
with the GPUs it covers, and GPUs that do not fit counted on screen.
"""

from __future__ import annotations

import pytest

from tests.conftest import Clock
from tests.ui.monitor_helpers import run_ticks, screen_rows, simulated_app

SIZES = [(80, 24), (120, 40)]


def joined(rows: list[str]) -> str:
    """The screen as one line of words, as a sentence wrapped over rows reads."""
    return " ".join(" ".join(rows).split())


@pytest.mark.parametrize("size", SIZES, ids=["80x24", "120x40"])
async def test_the_thermal_box_says_its_verdict_whole_with_help_in_the_footer(
    clock: Clock, size: tuple[int, int]
) -> None:
    app = simulated_app("thermal", gpus=8, clock=clock)
    async with app.run_test(size=size) as pilot:
        await run_ticks(app, clock, 40)
        await pilot.pause()
        rows = screen_rows(app)
        verdict = app.latest.verdict if app.latest is not None else None
        assert verdict is not None and verdict.cls == "mixed"
        assert verdict.line in joined(rows[1:4])  # the whole sentence, right under the facts line
        assert rows[-1].rstrip().endswith("? Help") and len(rows[-1].rstrip()) <= size[0]
        for key in ("enter", "t"):
            await pilot.press(key)
            await pilot.pause()
            cover = screen_rows(app)
            assert verdict.line in joined(cover[1:4]) and cover[-1].rstrip().endswith("? Help"), key
            await pilot.press("escape")
            await pilot.pause()


@pytest.mark.parametrize("size", SIZES, ids=["80x24", "120x40"])
async def test_eight_gpus_alike_are_one_row_and_hidden_gpus_are_counted(clock: Clock, size: tuple[int, int]) -> None:
    app = simulated_app("fp32", gpus=8, clock=clock)
    async with app.run_test(size=size) as pilot:
        await run_ticks(app, clock, 40)
        await pilot.press("d")
        await pilot.pause()
        rows = screen_rows(app)
        text = "\n".join(rows)
        assert "Busy, not efficient: all 8 GPUs" in joined(rows[1:4])
        assert sum("WARN" in row and "tensor cores idle" in row for row in rows) == 1  # one row, not eight
        assert "WARN GPUs 0-7: tensor cores idle" in text and "1 warning" in text
        assert rows[-1].rstrip().endswith("? Help")
        shown = sum(1 for row in rows if row[:3].strip().isdigit() and "H100" in row)
        if shown < 8:
            assert f"+{8 - shown} GPUs" in text  # the GPUs the pane leaves no room for, counted
        assert all(len(row.rstrip()) <= size[0] for row in rows)
