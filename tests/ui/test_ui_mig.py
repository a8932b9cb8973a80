"""MIG on screen: instances as rows under their GPU in every layout (folded onto its line where they do not fit),
"MIG" where utilization would be, n/a for activity not given, the instance of each process, the one slice given.

Built from the model (tests/ui/monitor_helpers.py's MIG builders), not from the simulated MIG board.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from textual.geometry import Region

from gputui.model import MigState
from gputui.ui.lean_update import LeanChopsUpdate
from gputui.ui.screens.detail import MIG_NOTE, DetailScreen, DetailView
from gputui.ui.screens.main import panel_layout
from gputui.ui.widgets.gpu_list import _first_fitting
from gputui.ui.widgets.gpu_panel import GpuPanel
from gputui.ui.widgets.header import HeaderState, StatusHeader
from gputui.ui.widgets.processes import COLUMNS, process_rows
from tests.conftest import Clock
from tests.snapshots import gpu_info, system_info
from tests.ui.monitor_helpers import (
    FRESH_S,
    MARKS,
    busy_gpu,
    mig_gpu,
    mig_instance,
    mig_snapshot,
    mig_uuid,
    plain,
    screen_rows,
    scripted_app,
)
from tests.ui.test_lean_update import captured_updates, replay_both

WIDE, NARROW = (120, 40), (80, 24)


def panel_text(sample: Any, width: int, mode: int, fold: bool = False, only_slice: str | None = None) -> str:
    panel = GpuPanel(gpu_info(0), MARKS)
    panel.only_slice = only_slice
    panel.add_sample(gpu_info(0), sample)
    return plain(panel.build_lines(width, mode, fold))


def two_slices(pending: bool | None = True) -> Any:
    """GPU 0 with GI 1 (no GPM reading) and GI 2 (12% SM active), one process each."""
    return mig_snapshot(1.0, 1, pending=pending).gpus[0]


def test_each_layout_has_a_row_per_instance_with_its_activity_memory_and_processes() -> None:
    sample = two_slices()
    full = panel_text(sample, 120, 3).splitlines()
    assert len(full) == 5
    assert "UTIL [per instance]  MIG  activity per instance" in full[1]
    assert full[3] == (
        "   - 3g.40gb (GI 1)          SM act  n/a · tensor  n/a · DRAM  n/a  VRAM [||||            ] 10.0/40G  1 proc"
    )
    assert "3g.40gb (GI 2)          SM act  12% · tensor   7% · DRAM   5%  VRAM [||||" in full[4]
    for mode in (2, 1):
        lines = panel_text(sample, 80, mode).splitlines()
        assert len(lines) == mode + 2
        assert lines[-2] == "   - 3g.40gb (GI 1)    SMACT  n/a TC  n/a  [||      ] 10.0/40G  1 proc"
        assert lines[-1] == "   - 3g.40gb (GI 2)    SMACT  12% TC   7%  [||      ] 10.0/40G  1 proc"
        assert all(len(line) <= 80 for line in lines)


def test_the_parent_says_mig_never_util_na_and_keeps_its_own_readings() -> None:
    one = panel_text(two_slices(), 80, 1).splitlines()[0]
    assert one.startswith(" 0 H100 80GB  MIG CLK 1980  60C 500W ")
    two = panel_text(two_slices(), 80, 2).splitlines()
    assert " MIG " in two[0] and "n/a%" not in two[0] and "CLK 1980/1980" in two[1]
    whole = panel_text(busy_gpu(0, 1.0), 80, 1)
    assert " 90% " in whole and "MIG" not in whole and "   - " not in whole


def test_activity_falls_back_to_the_graphics_engine_and_reads_na_never_zero() -> None:
    gr_only = mig_instance(0, 1, (200,), sm=None, gr_engine_active_pct=64.0)
    none = mig_instance(0, 2, (), sm=None)
    sample = mig_gpu(0, 1.0, (gr_only, none))
    lines = panel_text(sample, 80, 1).splitlines()
    assert "GRACT  64% TC  n/a" in lines[1] and "1 proc" in lines[1]
    assert "SMACT  n/a TC  n/a" in lines[2] and "0 procs" in lines[2] and " 0% " not in lines[2]


def test_folded_instances_sit_on_the_parent_line_and_are_counted_past_the_room() -> None:
    folded = panel_text(two_slices(), 80, 1, fold=True)
    assert folded.endswith("n/a/80G GI1 n/a GI2 12%")
    seven = mig_gpu(0, 1.0, [mig_instance(0, gi, (), sm=50.0, profile="1g.10gb") for gi in range(1, 8)])
    line = panel_text(seven, 80, 1, fold=True)
    assert len(line) <= 80 and line.endswith("GI1 50% GI2 50% GI3 50% GI4 50% +3")


def test_a_pending_mode_change_marks_the_parent() -> None:
    assert "MIG->OFF" in panel_text(two_slices(pending=False), 120, 3).splitlines()[0]
    assert "MIG->OFF" in panel_text(two_slices(pending=False), 80, 1, fold=True)
    assert "MIG->" not in panel_text(two_slices(pending=True), 120, 3)
    turning_on = replace(busy_gpu(0, 1.0), mig=MigState(mode=False, pending_mode=True))
    line = panel_text(turning_on, 80, 1)
    assert "MIG->ON" in line and " 90% " in line  # MIG is not on yet: the whole GPU's utilization stands


def test_the_layout_folds_only_when_even_one_line_each_and_the_rows_do_not_fit() -> None:
    assert panel_layout(8, 0, 80, 13) == (1, False)  # as before MIG: 8 GPUs in 80x24
    assert panel_layout(8, 16, 80, 13) == (1, True)
    assert panel_layout(8, 16, 120, 24) == (1, False)
    assert panel_layout(2, 4, 120, 10) == (3, False)
    assert panel_layout(2, 4, 80, 10) == (2, False)


def test_the_process_table_names_each_process_s_instance() -> None:
    rows = process_rows(mig_snapshot(1.0, 2), FRESH_S)
    column = [c.key for c in COLUMNS].index("mig")
    assert rows["0:200"][column].shown == "GI1 3g.40gb" and rows["1:203"][column].shown == "GI2 3g.40gb"
    assert set(process_rows(mig_snapshot(1.0, 2), FRESH_S, "gi2")) == {"0:201", "1:203"}
    plain_rows = process_rows(replace(mig_snapshot(1.0, 1), gpus=(busy_gpu(0, 1.0),)), FRESH_S)
    assert all(row[column].value is None for row in plain_rows.values())


def test_the_header_says_one_slice_was_given() -> None:
    uuid = mig_uuid(0, 2)
    header = StatusHeader()
    state = HeaderState(system=system_info(mig_slice=uuid), interval_s=1.0, clock="12:00:00")
    assert f"  box  1 MIG slice: {uuid}  driver" in plain([header._facts(state, 130)])
    narrow = plain([header._facts(state, 80)])
    assert f"  box  1 MIG slice {uuid}  " in narrow and len(narrow) <= 80  # the versions give way
    assert "MIG" not in plain([header._facts(replace(state, system=system_info()), 120)])


async def test_at_120x40_every_instance_has_its_row_and_every_process_its_instance() -> None:
    app, _ = scripted_app([mig_snapshot(1.0)])
    async with app.run_test(size=WIDE) as pilot:
        await app.tick()
        await pilot.pause()
        assert (app.main.gpus.mode, app.main.gpus.fold) == (1, False)
        rows = screen_rows(app)
        gpu_rows = plain(app.main.gpus.lines).splitlines()
        assert len(gpu_rows) == 24 and app.main.gpus.size.height == 24
        for i in range(8):
            assert gpu_rows[3 * i].startswith(f"{i:>2} H100 80GB  MIG ")
            assert gpu_rows[3 * i + 1].startswith("   - 3g.40gb (GI 1)    SMACT ")
            assert gpu_rows[3 * i + 2].startswith("   - 3g.40gb (GI 2)    SMACT ")
        assert "SMACT  n/a TC  n/a" in gpu_rows[1]
        table = "\n".join(rows)
        assert "GPU       PID  MIG            CPU%" in table and "  0       201  GI2 3g.40gb      95" in table


async def test_at_80x24_eight_mig_gpus_fold_and_the_verdict_stays_in_view() -> None:
    app, _ = scripted_app([mig_snapshot(float(t)) for t in range(1, 5)])
    async with app.run_test(size=NARROW) as pilot:
        for _ in range(4):
            await app.tick()
        await pilot.pause()
        assert (app.main.gpus.mode, app.main.gpus.fold) == (1, True)
        rows = screen_rows(app)
        assert app.latest is not None and app.latest.verdict is not None
        assert app.latest.verdict.line.split(":")[0] in rows[1]
        gpu_rows = [row for row in rows if row[:2].strip().isdigit() and "H100" in row]
        assert (
            len(gpu_rows) == 8
            and "GPU" not in [r.split(")")[0] for r in rows if r.startswith(" +")]
            and " GPUs (" not in "\n".join(rows)
        )
        assert gpu_rows[0].rstrip().endswith("GI1 n/a GI2 12%") and gpu_rows[7].rstrip().endswith("GI1 92% GI2 87%")
        assert all(len(row.rstrip()) <= 80 for row in rows)
        header = next(row for row in rows if row.startswith("GPU "))
        assert " MIG " not in header  # left out early, as POD/JOB is: the panels name the instances


async def test_a_container_given_one_slice_centres_on_it() -> None:
    given = mig_uuid(1, 2)
    app, _ = scripted_app([mig_snapshot(1.0, 2, mig_slice=given)])
    async with app.run_test(size=WIDE) as pilot:
        await app.tick()
        await pilot.pause()
        assert f"1 MIG slice {given}" in screen_rows(app)[0]
        assert app.main.gpus.selected == 1
        lines = plain(app.main.gpus.lines)
        assert lines.count("3g.40gb (GI") == 3  # GPU 0's two, and only the given one under GPU 1
        under_one = lines.split("\n 1 NVIDIA H100")[1]
        assert "(GI 2)" in under_one and "(GI 1)" not in under_one


async def test_the_detail_view_lists_the_instances() -> None:
    app, _ = scripted_app([mig_snapshot(1.0, 2)])
    async with app.run_test(size=WIDE) as pilot:
        await app.tick()
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, DetailScreen)
        text = plain(app.screen.query_one(DetailView).lines)
        assert MIG_NOTE in text and "3g.40gb (GI 2)          SM act  12%" in text and "no GPM" not in text


async def test_unchanged_mig_readings_redraw_nothing_and_a_changed_instance_only_its_row() -> None:
    first = mig_snapshot(1.0)
    same = mig_snapshot(2.0)
    sample = same.gpus[3]
    assert sample.mig is not None
    devices = (sample.mig.devices[0], replace(sample.mig.devices[1], sm_active_pct=40.0))
    moved = replace(
        same,
        timestamp=3.0,
        gpus=(*same.gpus[:3], replace(sample, mig=replace(sample.mig, devices=devices)), *same.gpus[4:]),
    )
    app, _ = scripted_app([first, same, moved])
    async with app.run_test(size=WIDE) as pilot:
        await app.tick()
        await pilot.pause()
        gpus = app.main.gpus
        dirty: list[Region] = []
        gpus._repaint = dirty.extend  # type: ignore[method-assign]
        await app.tick()
        await pilot.pause()
        assert dirty == []
        await app.tick()
        await pilot.pause()
        assert [region.y for region in dirty] == [3 * 3 + 2]  # GPU 3's GI 2 row, from its SM value on
        assert dirty[0].x == len("   - 3g.40gb (GI 2)    SMACT ")


@pytest.mark.parametrize("size", [WIDE, NARROW], ids=["120x40", "80x24"])
def test_mig_box_snapshot(snap_compare: Any, size: tuple[int, int]) -> None:
    """Two H100s in MIG mode, two 3g.40gb instances each (one GPU's pending change marked); built from the model,
    as the simulated MIG board is built elsewhere."""
    snap = mig_snapshot(1.0, 2)
    second = mig_snapshot(1.0, 2, pending=False).gpus[1]
    app, _ = scripted_app([replace(snap, gpus=(snap.gpus[0], second))])

    async def before(pilot: Any) -> None:
        await app.tick()
        await pilot.pause()

    assert snap_compare(app, terminal_size=size, run_before=before)


def moving_mig(t: int) -> Any:
    """Eight MIG GPUs whose GI 2 activity moves a little every tick, as a training step's does."""
    snap = mig_snapshot(float(t))
    gpus = []
    for sample in snap.gpus:
        assert sample.mig is not None
        first, second = sample.mig.devices
        second = replace(second, sm_active_pct=70.0 + (t * 7 + sample.index) % 20)
        gpus.append(replace(sample, mig=replace(sample.mig, devices=(first, second)), temperature_c=60.0 + t % 3))
    return replace(snap, gpus=tuple(gpus))


async def test_mig_rows_stay_within_the_byte_budget_and_show_what_a_full_repaint_shows(clock: Clock) -> None:
    """The lean updates of eight MIG GPUs (16 instance rows, every temperature and GI 2's activity moving each
    tick) leave the terminal as a full repaint would; once drawn, the GPU rows send only the parents' temperatures
    and GI 2's activity, far within the 2 KB/s budget at 1 Hz, and the unchanged GI 1 rows nothing."""
    app, _ = scripted_app([moving_mig(t) for t in range(1, 14)])
    regions: list[Region] = []
    tick = app.tick

    async def tick_and_keep_the_panels_place() -> None:
        await tick()
        regions.append(app.main.gpus.region)

    app.tick = tick_and_keep_the_panels_place  # type: ignore[method-assign]
    ticks_done: list[int] = []
    updates = await captured_updates(app, clock, 12, ticks_done)
    textual_bytes, lean_bytes = replay_both(updates, app)
    assert lean_bytes < 0.8 * textual_bytes
    assert len(set(regions[1:])) == 1 and regions[-1].height == 24
    top = regions[-1].y
    steady: list[tuple[int, set[int]]] = []  # after the first frames drew the panels whole, and they stay put
    for (update, _), done in zip(updates, ticks_done, strict=True):
        if done < 3:
            continue
        spans = [span for span in update.spans if top <= span[0] < regions[-1].bottom]
        if isinstance(update, LeanChopsUpdate) and spans:
            sent = LeanChopsUpdate(update.chops, spans, update.chop_ends).render_segments(app.console)
            steady.append((len(sent.encode()), {span[0] - top for span in spans}))
    assert len(steady) >= 5
    assert all(size < 500 for size, _ in steady)  # a quarter of the budget for 8 GPUs and 16 instances
    assert all(rows == {row for gpu in range(8) for row in (3 * gpu, 3 * gpu + 2)} for _, rows in steady)


def test_the_gpu_list_scrolls_panels_of_different_heights() -> None:
    """GPUs with and without instance rows: the first panel from which those up to the cursor's fit."""
    heights = [3, 1, 3, 1]
    assert _first_fitting(heights, 8) == 0
    assert _first_fitting(heights, 4) == 2
    assert _first_fitting(heights[:3], 3) == 2  # the cursor's panel alone
    assert _first_fitting([5], 2) == 0 and _first_fitting([], 3) == 0


async def test_a_click_on_an_instance_row_selects_its_gpu() -> None:
    app, _ = scripted_app([mig_snapshot(1.0, 3)])
    async with app.run_test(size=WIDE) as pilot:
        await app.tick()
        await pilot.pause()
        assert app.main.gpus.mode == 3
        await pilot.click("#gpus", offset=(10, 5 + 3))  # GPU 1's first instance row
        assert app.main.gpus.selected == 1
        await pilot.click("#gpus", offset=(10, 4))  # GPU 0's last instance row
        assert app.main.gpus.selected == 0
