"""GPM on screen: SM, tensor and DRAM activity on the panels, in the detail view, the help, and SM% per process."""

from __future__ import annotations

from dataclasses import replace

from textual.widgets import Static

from gputui.model import GpuProcess
from gputui.sources.sim.source import SimulatedSource
from gputui.ui.app import GpuTuiApp
from gputui.ui.screens.detail import NO_GPM, DetailView
from gputui.ui.screens.help import UTIL_VS_SM, HelpScreen
from gputui.ui.widgets.gpu_panel import GpuPanel
from gputui.ui.widgets.processes import COLUMNS, process_rows
from tests.conftest import Clock
from tests.snapshots import gpu_info
from tests.ui.monitor_helpers import (
    FIXED_NOW,
    FRESH_S,
    MARKS,
    busy_gpu,
    plain,
    run_ticks,
    scripted_app,
    session_of,
    snapshot,
)

SIZE = (120, 40)
HOPPER = replace(busy_gpu(0, 1.0), sm_active_pct=86.0, tensor_active_pct=48.0, dram_bw_pct=55.0)


def panel_text(sample: object, width: int, mode: int) -> str:
    panel = GpuPanel(gpu_info(0), MARKS)
    panel.add_sample(gpu_info(0), sample)  # type: ignore[arg-type]
    return plain(panel.build_lines(width, mode))


def test_each_layout_shows_sm_and_tensor_activity_next_to_utilization() -> None:
    full = panel_text(HOPPER, 120, 3)
    assert "UTIL [" in full and "SM act  86% · tensor  48% · DRAM  55%" in full
    assert "SM act  86% tensor  48%" in panel_text(HOPPER, 80, 2)
    one = panel_text(HOPPER, 80, 1)
    assert " 90% SMACT  86% TC  48% " in one and len(one) <= 80


def test_a_gpu_without_gpm_reads_na_in_full_and_keeps_compact_lines_short() -> None:
    pre_hopper = busy_gpu(0, 1.0)
    assert "SM act  n/a · tensor  n/a · DRAM  n/a" in panel_text(pre_hopper, 120, 3)
    assert "SM act" not in panel_text(pre_hopper, 80, 2)
    assert " TC " not in panel_text(pre_hopper, 80, 1)


def test_the_sm_share_column_reads_na_when_the_driver_gave_none() -> None:
    sampled = replace(HOPPER, processes=(GpuProcess(100, 1 << 30, sm_pct=83.0),))
    column = [c.key for c in COLUMNS].index("sm")
    assert process_rows(snapshot(1.0, [sampled]), FRESH_S)["0:100"][column].shown == "83"
    assert process_rows(snapshot(1.0, [busy_gpu(0, 1.0)]), FRESH_S)["0:100"][column].shown == "n/a"


async def test_the_detail_view_charts_gpm_where_the_gpu_reports_it(clock: Clock) -> None:
    for board, has_gpm in (("h100", True), ("a100", False)):
        source = SimulatedSource("healthy", gpu_count=2, seed=0, clock=clock, board=board)
        app = GpuTuiApp(session_of(source), auto_sample=False, now=lambda: FIXED_NOW)
        async with app.run_test(size=SIZE) as pilot:
            await run_ticks(app, clock, 4)
            await pilot.press("enter")
            await pilot.pause()
            detail = plain(app.screen.query_one(DetailView).lines)
            for chart in ("SM ACT", "TENSOR", "DRAM BW"):
                assert (f"\n{chart}" in detail) is has_gpm
            assert (NO_GPM in detail) is not has_gpm


async def test_help_says_why_utilization_and_sm_activity_differ() -> None:
    app, _ = scripted_app([snapshot(1.0, [HOPPER])])
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        texts = [str(s.content) for s in app.screen.query(Static)]
        assert UTIL_VS_SM in texts
        assert all(len(line) <= 80 for line in UTIL_VS_SM.splitlines())
