"""`K` in the monitor: a confirmation naming each target, then the signal to real child processes; tagging with
space; gone from the footer and refused in a replay and a read-only session."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
from collections.abc import Iterator, Sequence
from contextlib import closing
from pathlib import Path
from typing import TYPE_CHECKING

import psutil
import pytest
from textual.css.query import NoMatches
from textual.errors import NoWidget

from gputui.config import Config, MonitorConfig
from gputui.model import GpuProcess
from gputui.record.writer import RecordingWriter
from gputui.session.signals import READONLY_REFUSAL
from gputui.sources.sim.source import SimulatedSource
from gputui.ui.app import REPLAY_SIGNAL_REFUSAL, SIGNAL_HINT, SIMULATED_SIGNAL_REFUSAL, GpuTuiApp
from gputui.ui.screens.confirm_signal import ConfirmSignal
from gputui.ui.screens.mark import MarkScreen
from gputui.ui.widgets.processes import TAG_MARK
from tests.snapshots import gpu, host, proc, snapshot
from tests.ui.monitor_helpers import FIXED_NOW, ScriptedSource, screen_rows, session_of, until
from tests.ui.test_record_replay_keys import footer, record, replay_app

if TYPE_CHECKING:  # the instance comes from the `clock` fixture: tests/conftest.py cannot be imported by name
    from conftest import Clock

SIZE = (120, 40)


SLEEPER = "import signal, time; signal.signal(signal.SIGINT, signal.SIG_DFL); time.sleep(60)"


@pytest.fixture
def children() -> Iterator[list[subprocess.Popen[bytes]]]:
    """Two real processes to signal, SIGINT ending them as it ends `sleep`: with its default action, set in the
    child, since a test run started in the background by a shell hands SIGINT down ignored."""
    started = [subprocess.Popen([sys.executable, "-c", SLEEPER]) for _ in range(2)]
    try:
        yield started
    finally:
        for child in started:
            if child.poll() is None:
                child.kill()
            child.wait(timeout=10)


def on_gpus(
    children: Sequence[subprocess.Popen[bytes]],
    hidden: int | None = None,
    *,
    readonly: bool = False,
    recorder: RecordingWriter | None = None,
) -> GpuTuiApp:
    """The monitor fed one snapshot in which `children` hold GPU 0, as the host source would have sampled them;
    `hidden`: a process NVML lists from another PID namespace beside them."""
    processes = [GpuProcess(child.pid, 1 << 30) for child in children]
    if hidden is not None:
        processes.append(GpuProcess(hidden, None, seen="hidden"))
    samples = [
        proc(child.pid, user="me", cmdline=f"sleep 60 #{n}", create_time=psutil.Process(child.pid).create_time())
        for n, child in enumerate(children)
    ]
    source = ScriptedSource([snapshot(1.0, [gpu(0, processes=tuple(processes))], host_sample=host(samples))])
    config = Config(monitor=MonitorConfig(readonly=readonly))
    return GpuTuiApp(session_of(source, config=config, recorder=recorder), auto_sample=False, now=lambda: FIXED_NOW)


def clickable(app: GpuTuiApp, selector: str) -> bool:
    """Whether a click at the widget's middle reaches it: the screen's map of what lies where is made after the
    screen is pushed, and a click before that lands on what lay beneath."""
    try:
        wanted = app.screen.query_one(selector)
        region = wanted.region
        return (
            bool(region.area)
            and app.screen.get_widget_at(region.x + region.width // 2, region.y + region.height // 2)[0] is wanted
        )
    except (NoMatches, NoWidget):
        return False


def notices(app: GpuTuiApp) -> list[str]:
    return [notice.report.text for notice in app.notices.rows()]


async def test_k_asks_naming_each_target_and_cancel_sends_nothing(children: list[subprocess.Popen[bytes]]) -> None:
    child = children[0]
    app = on_gpus(children[:1], hidden=812345)
    async with app.run_test(size=SIZE) as pilot:
        await app.tick()
        app.main.table.focus()
        await pilot.press("down", "space", "up", "space")  # both rows tagged
        assert len(app.main.table.tagged) == 2
        await pilot.press("K")
        await until(lambda: isinstance(app.screen, ConfirmSignal), pilot)
        rows = "\n".join(screen_rows(app))
        assert f"{child.pid} (me) sleep 60 #0" in rows
        assert "812345 (?) ?" in rows and "refused: its PID in this namespace is unknown" in rows
        assert "SIGINT (i)" in rows and "SIGTERM (t)" in rows and "SIGKILL (k)" in rows and "Cancel" in rows
        await pilot.press("escape")
        await until(lambda: app.screen is app.main, pilot)
    assert child.poll() is None  # nothing was sent


async def test_k_then_t_terminates_the_selected_real_process(children: list[subprocess.Popen[bytes]]) -> None:
    child = children[0]
    app = on_gpus(children[:1])
    async with app.run_test(size=SIZE) as pilot:
        await app.tick()
        app.main.table.focus()
        await pilot.press("K")
        await until(lambda: isinstance(app.screen, ConfirmSignal), pilot)
        await pilot.press("t")
        assert await asyncio.to_thread(child.wait, 10) == -signal.SIGTERM
        await until(lambda: f"{child.pid} (me) sleep 60 #0: sent SIGTERM" in notices(app), pilot)


async def test_the_tagged_processes_get_the_signal_chosen_by_its_button(
    children: list[subprocess.Popen[bytes]],
) -> None:
    app = on_gpus(children)
    async with app.run_test(size=SIZE) as pilot:
        await app.tick()
        app.main.table.focus()
        await pilot.press("space", "down", "space")
        assert any(row.startswith(TAG_MARK) for row in screen_rows(app))  # the tag is marked on its row
        await pilot.press("K")
        await until(lambda: isinstance(app.screen, ConfirmSignal), pilot)
        await until(lambda: clickable(app, "#signal-sigint"), pilot)
        await pilot.click("#signal-sigint")
        await until(lambda: app.screen is app.main, pilot)
        for child in children:
            assert await asyncio.to_thread(child.wait, 10) == -signal.SIGINT
        await until(lambda: not app.main.table.tagged, pilot)


async def test_a_read_only_monitor_has_no_k_and_refuses_it(children: list[subprocess.Popen[bytes]]) -> None:
    app = on_gpus(children[:1], readonly=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await app.tick()
        await pilot.pause()
        assert not any(entry.startswith("K") or "Signal" in entry for entry in footer(app, 10_000))
        app.main.table.focus()
        await pilot.press("space", "K")
        await pilot.pause()
        assert not isinstance(app.screen, ConfirmSignal) and not app.main.table.tagged
        assert READONLY_REFUSAL in notices(app)
        assert app.help_refusals()["signal"] == app.help_refusals()["tag"] == READONLY_REFUSAL
    assert children[0].poll() is None


async def test_a_replay_has_no_k_and_refuses_it(tmp_path: Path, clock: Clock) -> None:
    app, _ = replay_app(record(tmp_path / "r.jsonl", 5), clock)
    async with app.run_test(size=SIZE) as pilot:
        await app.tick()
        await pilot.pause()
        assert not any(entry.startswith("K") for entry in footer(app, 10_000))
        app.main.table.focus()
        await pilot.press("space", "K")
        await pilot.pause()
        assert not isinstance(app.screen, ConfirmSignal)
        assert REPLAY_SIGNAL_REFUSAL in notices(app)
        assert app.help_refusals()["signal"] == REPLAY_SIGNAL_REFUSAL


async def test_the_footer_names_k_on_the_process_table_and_the_help_always(
    children: list[subprocess.Popen[bytes]],
) -> None:
    """Elsewhere `K` opens nothing and says where it works."""
    app = on_gpus(children)
    async with app.run_test(size=(80, 24)) as pilot:
        await app.tick()
        await pilot.pause()
        assert "K Signal" not in footer(app, 10_000)
        await pilot.press("K")
        await pilot.pause()
        assert app.screen is app.main and SIGNAL_HINT in notices(app)
        app.main.table.focus()
        await pilot.pause()
        entries = footer(app, 80)
        assert "K Signal" in entries and entries[-1] == "? Help", entries
        assert {"signal", "tag"} <= {b.action for b in app.help_bindings()}


async def test_the_simulated_machine_has_no_k_and_says_its_processes_are_made_up() -> None:
    """Its PIDs are made up: one may be a real process of this machine, which must not be hit."""
    source = SimulatedSource(scenario="healthy", gpu_count=4, seed=0, clock=lambda: 1.0)
    app = GpuTuiApp(session_of(source), auto_sample=False, now=lambda: FIXED_NOW)
    async with app.run_test(size=SIZE) as pilot:
        await app.tick()
        await pilot.pause()
        app.main.table.focus()
        await pilot.press("space", "K")
        await pilot.pause()
        assert not any(entry.startswith("K") for entry in footer(app, 10_000))
        assert not isinstance(app.screen, ConfirmSignal) and not app.main.table.tagged
        assert SIMULATED_SIGNAL_REFUSAL in notices(app)
        refusals = app.help_refusals()
        assert {"signal", "tag"} <= {b.action for b in app.help_bindings()}  # listed, with why not here
        assert refusals["signal"] == refusals["tag"] == SIMULATED_SIGNAL_REFUSAL


async def test_while_recording_k_takes_marks_place_so_help_stays_in_80_columns(
    children: list[subprocess.Popen[bytes]], tmp_path: Path
) -> None:
    with closing(RecordingWriter(tmp_path / "r.jsonl", interval_s=1.0, utc_offset_s=0)) as recorder:
        app = on_gpus(children, recorder=recorder)
        async with app.run_test(size=(80, 24)) as pilot:
            await app.tick()
            await pilot.pause()
            assert "M Mark" in footer(app, 80) and "K Signal" not in footer(app, 10_000)
            app.main.table.focus()
            await pilot.pause()
            entries = footer(app, 80)
            assert "K Signal" in entries and "M Mark" not in entries and entries[-1] == "? Help", entries
            await pilot.press("M")
            await pilot.pause()
            assert isinstance(app.screen, MarkScreen)  # unlisted, it still marks
