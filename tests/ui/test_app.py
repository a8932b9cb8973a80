"""The live monitor driven by Pilot: every key, the layouts, a lost GPU, missing values, the badges."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from rich.table import Table
from rich.text import Text
from textual.binding import Binding
from textual.widgets import Static
from textual.worker import WorkerFailed

from gputui.config import Config
from gputui.diagnostics.findings import Severity
from gputui.model import XID_UNWATCHED, GpuSample, Snapshot
from gputui.session.builder import SessionOptions, open_session
from gputui.session.past import NO_HISTORY
from gputui.sources.sim.job import JobSource
from gputui.ui.app import ACTIVITY_OFF, GpuTuiApp
from gputui.ui.messages import SampleFailed
from gputui.ui.screens.confirm_probe import ConfirmProbe
from gputui.ui.screens.detail import DetailScreen, DetailView
from gputui.ui.screens.help import DESCRIPTIONS, EXTRA_KEYS, HelpScreen
from gputui.ui.widgets.diagnostics import DiagnosticsPane
from gputui.ui.widgets.header import verdict_lines
from tests.ui.monitor_helpers import (
    ScriptedSource,
    busy_gpu,
    plain,
    run_ticks,
    scripted_app,
    session_of,
    simulated_app,
    snapshot,
)

if TYPE_CHECKING:
    from conftest import Clock

SIZE = (120, 40)


def gpu_text(app: GpuTuiApp) -> str:
    return plain(app.main.gpus.lines)


def header_text(app: GpuTuiApp) -> str:
    return plain(app.main.header.lines)


async def test_the_simulated_badge_and_the_machine_facts_are_in_the_header(clock: Clock) -> None:
    app = simulated_app("healthy", gpus=2, clock=clock)
    async with app.run_test(size=SIZE) as pilot:
        await run_ticks(app, clock, 1)
        await pilot.pause()
        header = header_text(app)
        assert "SIMULATED: healthy" in header
        for fact in ("12:00:00", "570.133.20", "CUDA 12.8", "2 GPUs", "every 1s"):
            assert fact in header


async def test_live_data_has_no_badge() -> None:
    app, _ = scripted_app([snapshot(1.0, [busy_gpu(0, 1.0)])])
    async with app.run_test(size=SIZE) as pilot:
        await app.tick()
        await pilot.pause()
        assert "SIMULATED" not in header_text(app)
        assert "PAUSED" not in header_text(app)


async def test_a_fallback_says_why_there_is_no_live_data() -> None:
    snap = snapshot(1.0, [busy_gpu(0, 1.0)])
    snap = replace(snap, system=replace(snap.system, source="simulated", fallback_reason="NVML: driver not loaded"))
    app, _ = scripted_app([snap])
    async with app.run_test(size=SIZE) as pilot:
        await app.tick()
        await pilot.pause()
        assert "NVML: driver not loaded" in header_text(app)
        assert app.latest is not None and app.latest.verdict is not None
        verdict = len(verdict_lines(app.latest.verdict, SIZE[0]))  # the facts, the verdict, then the notice
        assert app.main.header.styles.height is not None and app.main.header.styles.height.value == 2 + verdict


LONG_REASON = (
    "the NVIDIA driver library and the loaded kernel module are different versions, usually after a driver "
    "upgrade: reboot, or reload the module ('sudo rmmod nvidia_uvm nvidia_drm nvidia_modeset nvidia && sudo "
    "modprobe nvidia')"
)
XID_NOTICE = f"{XID_UNWATCHED}: waiting for XID events failed: NVMLError_Unknown: Unknown Error (the watch ended)"


@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=["80x24", "120x40"])
async def test_a_long_notice_is_shown_whole_then_only_its_badge_after_a_minute(size: tuple[int, int]) -> None:
    def snap(t: float, events: tuple[str, ...] = ()) -> Snapshot:
        base = snapshot(t, [busy_gpu(0, t), busy_gpu(1, t)])
        system = replace(base.system, source="simulated", fallback_reason=LONG_REASON)
        return replace(base, system=system, events=events)

    app, _ = scripted_app([snap(1.0, (XID_NOTICE,)), snap(2.0), snap(60.9), snap(61.0)])
    async with app.run_test(size=size) as pilot:
        await app.tick()
        await pilot.pause()
        rows = app.main.header.lines[1:]
        said = " ".join(plain([row]) for row in rows)
        assert f"no live data ({LONG_REASON}); showing a simulated machine" in said
        assert XID_NOTICE in said
        assert all(len(plain([row])) <= size[0] for row in rows) and len(rows) >= 3
        assert app.main.header.size.height == 1 + len(rows)
        for _ in range(2):  # 59.9 s later: still in its first minute
            await app.tick()
        await pilot.pause()
        assert XID_NOTICE in header_text(app).replace("\n", " ")
        await app.tick()  # a minute after they appeared: the badges remain, the rows are gone
        await pilot.pause()
        assert app.latest is not None and app.latest.verdict is not None
        verdict = len(verdict_lines(app.latest.verdict, size[0]))  # the verdict line stays under the facts
        assert header_text(app).count("\n") == verdict and app.main.header.size.height == 1 + verdict
        assert " NO DRIVER " in header_text(app) and " NO XID " in header_text(app)
        await pilot.press("question_mark")
        await pilot.pause()
        notices = app.screen.query_one("#help-notices", Static).content
        assert f"no live data ({LONG_REASON}); showing a simulated machine" in str(notices)
        assert XID_NOTICE in str(notices)


async def test_eight_gpus_fit_80x24_one_line_each(clock: Clock) -> None:
    app = simulated_app("healthy", gpus=8, clock=clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await run_ticks(app, clock, 3)
        await pilot.pause()
        assert app.main.gpus.mode == 1
        assert app.main.gpus.size.height == 8
        lines = gpu_text(app).splitlines()
        assert [line[:2] for line in lines] == [f"{i:>2}" for i in range(8)]
        assert all(len(line) <= 80 for line in lines)


async def test_sixteen_gpus_fit_120x40(clock: Clock) -> None:
    app = simulated_app("healthy", gpus=16, clock=clock)
    async with app.run_test(size=SIZE) as pilot:
        await run_ticks(app, clock, 2)
        await pilot.pause()
        assert app.main.gpus.size.height == 16
        assert len(gpu_text(app).splitlines()) == 16


async def test_a_few_gpus_get_full_panels_at_120x40(clock: Clock) -> None:
    app = simulated_app("healthy", gpus=4, clock=clock)
    async with app.run_test(size=SIZE) as pilot:
        await run_ticks(app, clock, 2)
        await pilot.pause()
        assert app.main.gpus.mode == 3
        text = gpu_text(app)
        for label in ("UTIL [", "CLK 1980/1980", "MEM 2619/2619", "TEMP", "/89C", "POWER", "/700W", "VRAM", "Gen5 x16"):
            assert label in text


async def test_the_layout_follows_a_resize(clock: Clock) -> None:
    app = simulated_app("powercap", gpus=8, clock=clock)
    async with app.run_test(size=SIZE) as pilot:
        await run_ticks(app, clock, 10)
        await pilot.pause()
        assert app.main.gpus.mode == 3 and app.main.diagnostics.display  # full panels beside a pane of one row
        await pilot.resize_terminal(80, 24)
        await pilot.pause()
        assert app.main.gpus.mode == 1 and not app.main.diagnostics.display  # the panels come first
        await pilot.resize_terminal(120, 60)
        await pilot.pause()
        assert app.main.gpus.mode == 3 and app.main.diagnostics.display


async def test_a_lost_gpu_says_so_and_the_others_go_on() -> None:
    lost = GpuSample(index=1, timestamp=2.0, lost=True, error="GPU is lost (NVML_ERROR_GPU_IS_LOST)")
    app, _ = scripted_app(
        [
            snapshot(1.0, [busy_gpu(0, 1.0, util=50.0), busy_gpu(1, 1.0)]),
            snapshot(2.0, [busy_gpu(0, 2.0, util=77.0), lost]),
        ]
    )
    async with app.run_test(size=SIZE) as pilot:
        await app.tick()
        await app.tick()
        await pilot.pause()
        lines = gpu_text(app).splitlines()
        gpu1 = next(line for line in lines if line.startswith(" 1 "))
        assert "LOST" in gpu1 and "NVML_ERROR_GPU_IS_LOST" in gpu1
        assert " 77%" in gpu_text(app)
        assert all(row.startswith("0:") for row in app.main.table.order)  # the lost GPU's processes are gone


async def test_values_not_reported_read_na_never_zero() -> None:
    bare = GpuSample(index=0, timestamp=1.0)
    app, _ = scripted_app([snapshot(1.0, [bare])])
    async with app.run_test(size=SIZE) as pilot:
        await app.tick()
        await pilot.pause()
        text = gpu_text(app)
        assert "n/a" in text
        for shown in ("n/a/89C", "n/a/n/aW", "CLK  n/a/1980", "Fan  n/a", "TX       n/a", "n/a/80G", "UTIL [????"):
            assert shown in text, shown
        assert " 0%" not in text and " 0W" not in text


async def test_pause_freezes_the_screen_and_resume_catches_up() -> None:
    app, _ = scripted_app([snapshot(float(t), [busy_gpu(0, float(t), util=10.0 * t)]) for t in (1, 2, 3)])
    async with app.run_test(size=SIZE) as pilot:
        await app.tick()
        await pilot.pause()
        assert " 10%" in gpu_text(app)
        await pilot.press("p")
        assert "PAUSED" in header_text(app)
        await app.tick()
        await pilot.pause()
        assert " 10%" in gpu_text(app) and " 20%" not in gpu_text(app)
        assert len(app.history) == 2  # sampling goes on while paused
        await pilot.press("p")
        await pilot.pause()
        assert " 20%" in gpu_text(app) and "PAUSED" not in header_text(app)


async def test_plus_and_minus_step_the_interval_within_its_bounds(clock: Clock) -> None:
    app = simulated_app("healthy", gpus=1, interval=1.0, clock=clock)
    async with app.run_test(size=SIZE) as pilot:
        await run_ticks(app, clock, 1)
        await pilot.press("plus")
        assert app.interval == 2.0
        await pilot.press(*["plus"] * 10)
        assert app.interval == 10.0
        assert "every 10s" in header_text(app)
        await pilot.press(*["minus"] * 12)
        assert app.interval == 0.25
        assert "every 0.25s" in header_text(app)


async def test_q_quits() -> None:
    """And the session it ran closes the source (before, the app closed it as it went)."""
    source = ScriptedSource([snapshot(1.0, [busy_gpu(0, 1.0)])])
    with open_session(SessionOptions(source=source), Config()) as session:
        app = GpuTuiApp(session, auto_sample=False)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("q")
            await pilot.pause()
            assert not app.is_running
    assert source.closed


async def test_a_pane_with_nothing_to_say_takes_little_and_the_panels_get_the_rest(clock: Clock) -> None:
    app = simulated_app("healthy", gpus=8, clock=clock)
    async with app.run_test(size=SIZE) as pilot:
        await run_ticks(app, clock, 10)
        await pilot.pause()
        assert app.main.diagnostics.display and app.main.diagnostics.size.height == 2  # its title and "none"
        assert app.main.gpus.mode == 3


async def test_d_toggles_the_diagnostics_pane_and_it_gets_the_findings(clock: Clock) -> None:
    app = simulated_app("thermal", gpus=2, clock=clock)
    async with app.run_test(size=SIZE) as pilot:
        await run_ticks(app, clock, 40)
        await pilot.pause()
        pane = app.main.query_one(DiagnosticsPane)
        assert app.main.diagnostics.display and pane.region.height > 0  # open by default when there is room
        assert app.latest is not None and app.latest.active  # the thermal scenario has an open finding
        assert [f for row in pane.entries for f in row.findings] == [*app.latest.active, *app.latest.closed]
        await pilot.press("d")  # on the pane that opened by itself, `d` first gives it the keys
        await pilot.pause()
        assert app.main.diagnostics.display and pane.has_focus
        await pilot.press("d")
        await pilot.pause()
        assert not app.main.diagnostics.display and app.main.gpus.has_focus
        await pilot.resize_terminal(120, 50)
        await pilot.pause()
        assert not app.main.diagnostics.display  # the user's choice outlives a resize
        await pilot.press("d")
        await pilot.pause()
        assert app.main.diagnostics.display


def pane_text(pane: DiagnosticsPane) -> str:
    return "\n".join(line.plain for line in pane.render().renderables if isinstance(line, Text))


@pytest.mark.parametrize("height", [40, 24], ids=["pane-opened-by-itself", "pane-hidden"])
async def test_d_then_down_and_enter_show_a_findings_advice_not_the_detail_view(clock: Clock, height: int) -> None:
    app = simulated_app("powercap", gpus=4, clock=clock)  # a power-cap finding on each GPU: one row
    async with app.run_test(size=(120, height)) as pilot:
        await run_ticks(app, clock, 40)
        await pilot.pause()
        pane = app.main.findings
        assert app.main.diagnostics.display == (height >= 36)
        if app.main.diagnostics.display:
            assert "d: choose a finding" in pane_text(pane)
        await pilot.press("d")
        await pilot.pause()
        assert pane.has_focus and not any(panel.selected for panel in app.main.gpus.panels)
        await pilot.press("down", "enter")
        await pilot.pause()
        assert app.screen is app.main and app.main.diagnostics.display
        assert len(pane.entries) == 1 and pane.chosen == pane.entries[0] and pane.chosen.gpus == (0, 1, 2, 3)
        text = pane_text(pane)
        assert "Advice: GPUs 0-3: power capped at 400 W, below its default 700 W" in text
        assert text.count(pane.chosen.advice[:40]) == 1  # the advice once, for the four GPUs
        assert app.main.gpus.cursor == 0  # down moved through the findings, not the GPUs
        assert [p.highlight is not None for p in app.main.gpus.panels] == [i in pane.chosen.gpus for i in range(4)]


async def test_enter_on_the_gpu_list_opens_the_detail_view_beside_the_pane_and_after_it(clock: Clock) -> None:
    app = simulated_app("thermal", gpus=4, clock=clock)
    async with app.run_test(size=SIZE) as pilot:
        await run_ticks(app, clock, 40)
        await pilot.pause()
        assert app.main.diagnostics.display and app.main.gpus.has_focus  # shown by itself: the GPUs keep the keys
        await pilot.press("down", "enter")
        await pilot.pause()
        assert isinstance(app.screen, DetailScreen) and app.screen.index == 1
        await pilot.press("escape", "d", "enter")  # into the pane and choose...
        await pilot.pause()
        assert app.screen is app.main and app.main.findings.chosen is not None
        await pilot.press("d", "enter")  # ...then hide it: enter is the GPU list's again
        await pilot.pause()
        assert isinstance(app.screen, DetailScreen) and app.screen.index == 1


async def test_enter_opens_the_detail_view_of_the_selected_gpu_and_esc_returns(clock: Clock) -> None:
    app = simulated_app("healthy", gpus=4, clock=clock)
    async with app.run_test(size=SIZE) as pilot:
        await run_ticks(app, clock, 5)
        await pilot.pause()
        await pilot.press("down", "down", "enter")
        await pilot.pause()
        assert isinstance(app.screen, DetailScreen) and app.screen.index == 2
        detail = plain(app.screen.query_one(DetailView).lines)
        assert detail.startswith("GPU 2")
        for chart in ("UTIL", "SM CLOCK", "TEMP", "POWER", "PCIe TX", "PCIe RX"):
            assert f"\n{chart}" in detail
        assert "SIMULATED" in plain(app.screen.header.lines)
        await run_ticks(app, clock, 1)
        await pilot.pause()
        assert "6 samples" in plain(app.screen.query_one(DetailView).lines)
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is app.main


async def test_the_main_view_is_not_drawn_while_covered_and_catches_up_after() -> None:
    app, _ = scripted_app([snapshot(float(t), [busy_gpu(0, float(t), util=10.0 * t)]) for t in (1, 2)])
    async with app.run_test(size=SIZE) as pilot:
        await app.tick()
        await pilot.press("enter")
        await pilot.pause()
        await app.tick()
        await pilot.pause()
        assert " 20%" not in gpu_text(app)
        await pilot.press("escape")
        await pilot.pause()
        assert " 20%" in gpu_text(app)


async def test_slash_filters_the_processes() -> None:
    app, _ = scripted_app([snapshot(1.0, [busy_gpu(0, 1.0), busy_gpu(1, 1.0)])])
    async with app.run_test(size=SIZE) as pilot:
        await app.tick()
        await pilot.pause()
        assert app.main.table.order == ["0:100", "1:101"]
        await pilot.press("slash")
        assert app.main.filter_box.display and app.main.filter_box.has_focus
        await pilot.press(*"rank 1")
        await pilot.pause()
        assert app.main.table.order == ["1:101"]
        await pilot.press("enter")
        assert not app.main.filter_box.display
        await app.tick()
        assert app.main.table.order == ["1:101"]  # the filter stays after the box closes


async def test_o_sorts_the_processes_by_the_next_column() -> None:
    app, _ = scripted_app([snapshot(1.0, [busy_gpu(0, 1.0), busy_gpu(1, 1.0)])])
    async with app.run_test(size=SIZE) as pilot:
        await app.tick()
        table = app.main.table
        assert table.sort_column == 0
        await pilot.press("o")
        assert table.sort_column == 1
        header = plain(table.lines).splitlines()[0]
        assert "PID^" in header


async def test_enter_on_a_process_opens_its_gpu() -> None:
    app, _ = scripted_app([snapshot(1.0, [busy_gpu(0, 1.0), busy_gpu(1, 1.0)])])
    async with app.run_test(size=SIZE) as pilot:
        await app.tick()
        app.main.table.focus()
        await pilot.press("down", "enter")
        await pilot.pause()
        assert isinstance(app.screen, DetailScreen) and app.screen.index == 1


async def test_question_mark_shows_every_key() -> None:
    app, _ = scripted_app([snapshot(1.0, [busy_gpu(0, 1.0)])])
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        (table,) = [s.content for s in app.screen.query(Static) if isinstance(s.content, Table)]
        shown = [str(cell) for cell in table.columns[0].cells]
        what = [str(cell) for cell in table.columns[1].cells]
        # Every key of the live monitor in the footer's order, those the footer leaves out too (esc, which
        # closes things, is among the extras; replay's `p` and its refusal of the probe keys are not live keys),
        # then the keys that walk the past while paused, then `M`, whose line says it needs --record; the replay keys
        # only in replay. This app was given no stack sampling (request_activity): `a` is listed with why it reads
        # none here; nor a history store: `g` says how to start one.
        keys = [
            b.key_display or b.key
            for b in GpuTuiApp.BINDINGS
            if isinstance(b, Binding) and b.action in DESCRIPTIONS and not b.action.startswith("replay_")
        ]
        past = ["←", "→", "[", "]", "space"]
        assert shown == [*keys, "space", *past, "M", *(key for key, _ in EXTRA_KEYS)]  # space: the table's tag
        assert {"+", "-", "o", "f", "t", "n", "x", "M", "K", "a", "g"} <= set(shown) and all(what)
        assert what[shown.index("a")].endswith(f"(not here: {ACTIVITY_OFF})")
        assert what[shown.index("g")].endswith(f"(not here: {NO_HISTORY})")
        spaces = [w for key, w in zip(shown, what, strict=True) if key == "space"]
        assert spaces == [DESCRIPTIONS["tag"], DESCRIPTIONS["past_live"]]  # not play
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is app.main


async def test_probe_keys_on_a_busy_gpu_ask_first_and_escape_starts_nothing() -> None:
    """The GPU probes name the process they would slow down; the disk probe (no GPU) asks what it does."""
    app, _ = scripted_app([snapshot(1.0, [busy_gpu(0, 1.0)])])
    async with app.run_test(size=SIZE) as pilot:
        await app.tick()
        for key, probe in (("s", "stress"), ("b", "pcie"), ("m", "membw"), ("i", None)):
            await pilot.press(key)
            await pilot.pause()
            screen = app.screen
            assert isinstance(screen, ConfirmProbe) and not app.probes.running
            title = str(screen.query_one("#confirm-probe-title").render())
            if probe is None:
                assert screen.lines == () and title.startswith("Disk read probe: ")
            else:
                assert [line.split() for line in screen.lines] == [["pid", "100", "alice", "python3"]]
                assert title == f"GPU 0 is used by 1 other process: a {probe} probe would slow them down."
            await pilot.press("escape")
            await pilot.pause()
            assert app.is_running and app.screen is app.main and not app.probes.running


async def test_a_failing_sample_is_shown_and_the_next_good_one_clears_it() -> None:
    app, _ = scripted_app([snapshot(1.0, [busy_gpu(0, 1.0)])])
    async with app.run_test(size=SIZE) as pilot:
        app.post_message(SampleFailed("NVMLError: Unknown Error"))
        await pilot.pause()
        assert "sampling failed: NVMLError: Unknown Error" in header_text(app)
        await app.tick()
        await pilot.pause()
        assert "sampling failed" not in header_text(app)


async def test_open_findings_are_counted_in_the_header_and_a_chosen_one_is_marked_on_its_gpu(clock: Clock) -> None:
    app = simulated_app("thermal", gpus=2, clock=clock)
    async with app.run_test(size=SIZE) as pilot:
        await run_ticks(app, clock, 40)
        await pilot.pause()
        assert app.latest is not None
        # The thermal scenario throttles GPU 1 hard enough to be critical, and nothing else is open.
        [finding] = app.latest.active
        assert (finding.rule, finding.severity, finding.gpus) == ("thermal_throttle", Severity.CRITICAL, (1,))
        assert "1 CRITICAL" in header_text(app) and "WARN" not in header_text(app)
        app.main.findings.focus()
        await pilot.press("enter")
        await pilot.pause()
        marked = {panel.gpu_index: panel.highlight for panel in app.main.gpus.panels}
        assert finding.metric is not None
        assert all((marked[i] is not None) == (i in finding.gpus) for i in marked)
        assert any(style.endswith("reverse") for line in app.main.gpus.lines for _, style in line)


async def test_a_worker_that_raises_is_shown_on_screen_and_logged(caplog: pytest.LogCaptureFixture) -> None:
    app, _ = scripted_app([snapshot(1.0, [busy_gpu(0, 1.0)])])

    async def broken() -> None:
        raise RuntimeError("the replay refresh broke")

    async with app.run_test(size=SIZE, notifications=True) as pilot:
        worker = app.run_worker(broken(), name="refresh", exit_on_error=False)
        with pytest.raises(WorkerFailed):
            await worker.wait()
        await pilot.pause()
        header = "\n".join(text for line in app.main.header.build_lines(SIZE[0]) for text, _ in line)
        assert "refresh failed: RuntimeError: the replay refresh broke" in header  # under the header,
        assert not app.screen.query("Toast")  # not in a pop-up over the findings
        assert app.is_running
    assert "worker refresh failed" in caplog.text and "RuntimeError: the replay refresh broke" in caplog.text


async def test_a_followed_job_is_labelled_simulated_with_its_pid(tmp_path: Path) -> None:
    """`gputui --demo-job FILE`: the header names the real job the simulated GPU follows."""
    trace = tmp_path / "job.json"
    record = {"format": "gputui-job-trace", "version": 1, "pid": os.getpid(), "gpu_busy_s": 0.0, "steps": 0}
    trace.write_text(json.dumps(record))
    source = JobSource(trace)
    app = GpuTuiApp(session_of(source), auto_sample=False)
    async with app.run_test(size=SIZE) as pilot:
        await app.tick()
        await pilot.pause()
        assert f"SIMULATED: GPU follows real job pid {os.getpid()}" in header_text(app)
        assert "simulated H100" in gpu_text(app)
    source.close()
