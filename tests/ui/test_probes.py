"""Probes from the live monitor: the real worker on the CPU with tiny sizes, through the real runner.

Each probe that imports torch costs a child process a few seconds here, so only two tests wait for one.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import psutil
import pytest
from textual.pilot import Pilot
from textual.widgets import Input

from gputui.diagnostics.findings import Severity
from gputui.probes.judge import other_users
from gputui.probes.protocol import INSTALL_HINT, Progress, Result
from gputui.probes.runner import ProbeRequest
from gputui.probes.worker import FAULT_ENV
from gputui.ui.app import GpuTuiApp
from gputui.ui.probes import format_progress, progress_line, result_finding
from gputui.ui.screens.confirm_probe import ConfirmProbe
from gputui.ui.screens.help import key_table
from tests.ui.monitor_helpers import busy_gpu, run_ticks, simulated_app, snapshot

if TYPE_CHECKING:
    from conftest import Clock

SIZE = (120, 40)
SIZES = [(80, 24), (120, 40)]


def tiny(request: ProbeRequest) -> ProbeRequest:
    """CPU runs small enough for a test: a 1 MiB copy three times, a 30 s stress that tests cancel."""
    return replace(request, cpu=True, max_bytes=1 << 20, reps=3, seconds=30.0, size=64, dtype="fp32")


def alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def wait_gone(pid: int, within_s: float = 8.0) -> bool:
    deadline = time.monotonic() + within_s
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not alive(pid)


async def wait_until(pilot: Pilot[int], condition: Callable[[], bool], within_s: float = 30.0) -> None:
    """For what only the child process decides (its start, its first progress line): poll the screen."""
    deadline = time.monotonic() + within_s
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting"
        await pilot.pause(0.05)


async def probe_done(app: GpuTuiApp, within_s: float = 30.0) -> None:
    """Until the probe's worker has handed in its finding and reaped its child: awaited, not polled; the limit
    only turns a hung child into a failure rather than a hung test."""
    running = [worker.wait() for worker in app.workers if worker.group == "probe"]  # a finished one has left
    await asyncio.wait_for(asyncio.gather(*running), within_s)
    assert not app.probes.running and app.probes.last is not None


def screen_row(app: GpuTuiApp, starting: str) -> str:
    """The terminal row, as drawn, that starts with `starting` (after the status line's padding)."""
    rows = [strip.text.strip() for strip in app.screen._compositor.render_strips()]
    return next(row for row in rows if row.startswith(starting))


@pytest.fixture
def toasts(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every pop-up the app would show: none is expected, they cover the findings."""
    shown: list[str] = []
    monkeypatch.setattr(GpuTuiApp, "notify", lambda self, message, **kwargs: shown.append(message))
    return shown


def probe_app(scenario: str = "idle", env: dict[str, str] | None = None, *, clock: Clock) -> GpuTuiApp:
    app = simulated_app(scenario, gpus=2, clock=clock)
    app.probes.adjust = tiny
    app.probes.env = env or {}
    app.probes.kill_grace_s = 0.5
    return app


def test_progress_reads_as_seconds_for_stress_and_percent_otherwise_in_si_units() -> None:
    stress = ProbeRequest("stress")
    assert format_progress(stress, Progress("stress", 0.4, 612.0, "TFLOP/s")) == "12/30 s  612 TFLOP/s"
    assert format_progress(stress, Progress("stress", 0.1, 0.001544, "TFLOP/s")) == "3/30 s  1.5 GFLOP/s"
    membw = ProbeRequest("membw")
    line = format_progress(membw, Progress("membw", 0.4, 12.34, "GB/s", "copy 8/20"))
    assert line == "40%  12.3 GB/s  (copy 8/20)"


def test_the_running_line_says_cpu_run_first_and_names_no_gpu_then() -> None:
    stress = ProbeRequest("stress", gpu=0)
    cpu = progress_line(stress, Progress("stress", 0.1, 0.001544, "TFLOP/s", "40 results checked", "cpu"), 0)
    assert cpu.plain == "CPU RUN stress probe  3/30 s  1.5 GFLOP/s  (40 results checked)   x cancels"
    assert "GPU" not in cpu.plain
    gpu = progress_line(stress, Progress("stress", 0.4, 781.2, "TFLOP/s", "", "cuda:0 NVIDIA H100"), 0)
    assert gpu.plain == "stress probe on GPU 0  12/30 s  781 TFLOP/s   x cancels"


def test_the_help_lists_the_probe_keys() -> None:
    table = key_table(GpuTuiApp.BINDINGS)
    keys = [str(cell) for cell in table.columns[0].cells]
    for key in ("s", "b", "m", "i", "n", "x"):
        assert key in keys
    assert "cancel the running probe" in [str(cell) for cell in table.columns[1].cells]


def test_a_gpu_run_is_judged_on_the_snapshots_taken_meanwhile() -> None:
    hot = [
        replace(busy_gpu(0, t, util=100.0), sm_clock_mhz=clock, clock_event_reasons_mask=mask)
        for t, clock, mask in [
            (0, 1980, 0),
            (1, 1980, 0),
            (2, 1980, 0),
            (3, 1410, 0x20),
            (4, 1410, 0x20),
            (5, 1410, 0x20),
        ]
    ]
    snapshots = [snapshot(float(s.timestamp), [s]) for s in hot]
    result = Result("stress", "cuda:0 NVIDIA H100 80GB HBM3", True, {"tflops": 700.0}, "700 TFLOP/s = 71% of peak")
    finding = result_finding(result, 0, 5.0, snapshots, 0.0)
    assert finding.severity == Severity.WARNING
    assert (
        finding.title
        == "GPU 0 stress: 700 TFLOP/s (no reference peak for this GPU, not judged); thermal slowdown began after 3 s"
    )
    assert "thermal slowdown began after 3 s" in finding.advice and "SM clock 1980 -> 1410 MHz" in finding.advice
    cpu = result_finding(replace(result, device="cpu"), 0, 5.0, snapshots, 0.0)
    assert cpu.title == "CPU RUN stress: 700 TFLOP/s on the CPU (no GPU, not judged)"
    assert cpu.severity == Severity.INFO and "During" not in cpu.advice


async def test_membw_runs_on_the_cpu_and_its_result_is_a_finding_labelled_cpu_run(clock: Clock) -> None:
    app = probe_app(clock=clock)
    async with app.run_test(size=SIZE) as pilot:
        await run_ticks(app, clock, 1)
        await pilot.press("m")
        assert app.probes.running and app.probes.status.display
        await pilot.press("s")  # one probe at a time
        assert app.probes.runner is not None and app.probes.runner.request.probe == "membw"
        await run_ticks(app, clock, 2)  # the panels go on while it runs
        await probe_done(app)
        finding = app.probes.last
        assert finding is not None and finding.rule == "probe_membw" and finding.severity == Severity.INFO
        assert finding.title.startswith("CPU RUN memory bandwidth: "), finding.title
        assert finding.title.endswith(" host memory copy (no GPU, not judged)"), finding.title
        assert app.probes.status.plain.startswith("CPU RUN memory bandwidth: ")
        await run_ticks(app, clock, 1)
        await pilot.pause()
        [shown] = [f for f in app.main.findings.entries if f.rule == "probe_membw"]
        assert shown.is_open and shown.title == finding.title
        assert app.latest is not None and shown.first in app.latest.active


async def test_x_cancels_a_running_stress_probe_and_its_process_is_gone(clock: Clock) -> None:
    app = probe_app(clock=clock)
    async with app.run_test(size=SIZE) as pilot:
        await run_ticks(app, clock, 1)
        await pilot.press("s")
        await wait_until(pilot, lambda: "FLOP/s" in app.probes.status.plain)
        line = app.probes.status.plain
        assert line.startswith("CPU RUN stress probe  ") and "/30 s  " in line and "GPU" not in line, line
        runner = app.probes.runner
        assert runner is not None and runner.pid is not None
        await pilot.press("x")
        await probe_done(app, within_s=5.0)
        assert not alive(runner.pid)
        assert app.probes.last is not None and app.probes.last.title == "stress probe cancelled"
        assert app.probes.status.plain.startswith("stress probe cancelled")
        await run_ticks(app, clock, 1)
        assert app.latest is not None  # the monitor goes on


async def test_a_gpu_with_another_users_process_asks_first(clock: Clock) -> None:
    app = probe_app("contention", clock=clock)
    async with app.run_test(size=SIZE) as pilot:
        await run_ticks(app, clock, 2)
        assert app.latest is not None
        others = other_users(app.latest.snapshot, 0)
        assert len(others) >= 2
        for abort in ("n", "escape"):
            await pilot.press("s")
            screen = app.screen
            assert isinstance(screen, ConfirmProbe)
            assert [line.split()[1] for line in screen.lines] == [str(pid) for pid in others]
            await pilot.press(abort)
            assert not isinstance(app.screen, ConfirmProbe) and not app.probes.running
        await pilot.press("b")
        assert isinstance(app.screen, ConfirmProbe)
        await pilot.press("y")
        assert app.probes.runner is not None
        assert app.probes.runner.request.probe == "pcie" and app.probes.runner.request.gpu == 0
        await pilot.press("x")
        await probe_done(app, within_s=5.0)


async def test_n_asks_first_then_runs_p2p_on_the_cpu_labelled(clock: Clock) -> None:
    """The p2p probe loads every GPU, so `n` always asks, even with nobody else on them."""
    app = probe_app(clock=clock)
    async with app.run_test(size=SIZE) as pilot:
        await run_ticks(app, clock, 1)
        await pilot.press("n")
        screen = app.screen
        assert isinstance(screen, ConfirmProbe) and screen.lines == ()
        assert "every pair of the 2 GPUs, 2 directions" in str(screen.query_one("#confirm-probe-title").render())
        await pilot.press("n")
        assert not isinstance(app.screen, ConfirmProbe) and not app.probes.running
        await pilot.press("n")
        await pilot.press("y")
        assert app.probes.runner is not None and app.probes.runner.request.probe == "p2p"
        assert app.probes.runner.request.peer is None
        await probe_done(app)
        finding = app.probes.last
        assert finding is not None and finding.rule == "probe_p2p" and finding.gpus == ()
        assert finding.title.startswith("CPU RUN GPU-to-GPU: "), finding.title
        assert finding.title.endswith(" host memory copies (no two GPUs, not judged)"), finding.title


async def test_a_gpu_probe_waits_for_the_first_reading(clock: Clock) -> None:
    app = probe_app(clock=clock)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("s")
        assert not app.probes.running and not isinstance(app.screen, ConfirmProbe)


async def test_without_torch_the_key_says_how_to_install_it(tmp_path: Path, clock: Clock) -> None:
    shim = tmp_path / "shim" / "torch"
    shim.mkdir(parents=True)
    (shim / "__init__.py").write_text("raise ImportError(\"No module named 'torch'\")\n")
    app = probe_app(env={"PYTHONPATH": str(shim.parent)}, clock=clock)
    async with app.run_test(size=SIZE) as pilot:
        await run_ticks(app, clock, 1)
        await pilot.press("m")
        await probe_done(app)
        assert INSTALL_HINT in app.probes.status.plain
        assert app.probes.last is not None and app.probes.last.advice == INSTALL_HINT
        assert app.probes.last.title == "memory bandwidth probe needs torch"


async def test_a_crashing_probe_gives_a_finding_with_its_stderr_and_the_monitor_goes_on(clock: Clock) -> None:
    app = probe_app(env={FAULT_ENV: "crash"}, clock=clock)
    async with app.run_test(size=SIZE) as pilot:
        await run_ticks(app, clock, 1)
        await pilot.press("m")
        await probe_done(app)
        finding = app.probes.last
        assert finding is not None and finding.severity == Severity.WARNING and "crashed" in finding.title
        assert "simulated crash in the probe worker" in finding.advice
        await run_ticks(app, clock, 1)
        assert app.latest is not None and [f.title for f in app.latest.active] == [finding.title]


async def test_the_disk_probe_asks_for_the_directory_and_refuses_a_missing_one(tmp_path: Path, clock: Clock) -> None:
    (tmp_path / "data.bin").write_bytes(b"x" * 65536)
    app = probe_app(clock=clock)
    async with app.run_test(size=SIZE) as pilot:
        await run_ticks(app, clock, 1)
        await pilot.press("i")
        screen = app.screen
        assert isinstance(screen, ConfirmProbe)
        box = screen.query_one(Input)
        assert box.value == str(Path.cwd())
        box.value = str(tmp_path / "missing")
        await pilot.press("enter")
        assert app.screen is screen and not app.probes.running
        box.value = str(tmp_path)
        await pilot.press("enter")
        await probe_done(app)
        assert app.filter_text == ""  # the path typed was not taken as a process filter
        finding = app.probes.last
        assert finding is not None and finding.rule == "probe_disk" and finding.gpus == ()
        assert {e.key: e.value for e in finding.evidence}["bytes"] == "64 KiB"  # it read tmp_path
        assert [e.label for e in finding.evidence] == [
            "sequential read",
            "from the page cache",
            "data read",
            "files read",
        ]


@pytest.mark.parametrize("how", ["q", "exit"])
async def test_quitting_while_a_probe_runs_leaves_no_child(how: str, clock: Clock) -> None:
    app = probe_app(clock=clock)
    async with app.run_test(size=SIZE) as pilot:
        await run_ticks(app, clock, 1)
        await pilot.press("s")
        await wait_until(pilot, lambda: app.probes.runner is not None and app.probes.runner.pid is not None)
        assert app.probes.runner is not None and app.probes.runner.pid is not None
        pid = app.probes.runner.pid
        assert alive(pid)
        if how == "q":
            await pilot.press("q")
        else:
            app.exit()  # what SIGHUP and a lost terminal do
    assert wait_gone(pid, within_s=3.0)


@pytest.mark.parametrize("size", SIZES)
async def test_a_cpu_stress_run_reads_cpu_run_and_si_units_then_cancelled_once(
    size: tuple[int, int], clock: Clock, toasts: list[str]
) -> None:
    app = probe_app(clock=clock)
    async with app.run_test(size=size) as pilot:
        await run_ticks(app, clock, 1)
        await pilot.press("s")
        await wait_until(pilot, lambda: "FLOP/s" in app.probes.status.plain)
        await pilot.pause()
        row = screen_row(app, "CPU RUN")
        assert re.match(r"CPU RUN stress probe  \d+/30 s  \d+(\.\d)? [kMGT]?FLOP/s  \(", row), row
        assert "GPU" not in row and "TFLOP/s" not in row  # a CPU does not reach a TFLOP/s: never 0.0015 TFLOP/s
        await pilot.press("x")
        await probe_done(app, within_s=5.0)
        await pilot.pause()
        row = screen_row(app, "stress probe cancelled")
        assert row.count("cancel") == 1, row
        assert toasts == []


@pytest.mark.parametrize("size", SIZES)
async def test_a_result_is_one_sentence_on_the_status_line_and_in_the_pane(
    size: tuple[int, int], clock: Clock, toasts: list[str]
) -> None:
    app = probe_app(clock=clock)
    async with app.run_test(size=size) as pilot:
        await run_ticks(app, clock, 1)
        await pilot.press("b")
        await probe_done(app)
        await run_ticks(app, clock, 1)
        await pilot.pause()
        sentence = r"CPU RUN PCIe: \d+(\.\d)? [kMGT]?B/s host memory copy \(no GPU, no PCIe link: not judged\)"
        assert re.match(sentence, screen_row(app, "CPU RUN PCIe")), screen_row(app, "CPU RUN PCIe")
        if size[1] < 36:  # the pane opens by itself only from 36 rows
            await pilot.press("d")
            await pilot.pause()
        [shown] = [f for f in app.main.findings.entries if f.rule == "probe_pcie"]
        assert re.fullmatch(sentence, shown.title), shown.title
        pane = "\n".join(strip.text for strip in app.screen._compositor.render_strips())
        assert "host memory copy" in pane and "copy_" not in pane and "kib" not in pane and "bytes " not in pane
        assert toasts == []


async def test_a_failing_probe_worker_frees_the_keys_and_says_so_under_the_header(
    clock: Clock, toasts: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    app = probe_app(clock=clock)

    def broken(message: object) -> None:
        raise RuntimeError("the recording is gone")

    monkeypatch.setattr(app, "record_probe", broken)
    async with app.run_test(size=SIZE) as pilot:
        await run_ticks(app, clock, 1)
        await pilot.press("s")
        runner = app.probes.runner
        await wait_until(pilot, lambda: not app.probes.running)
        assert runner is not None and runner.pid is not None and wait_gone(runner.pid)
        assert app.probes.status.plain == "stress probe stopped: RuntimeError: the recording is gone"
        header = "\n".join(text for line in app.main.header.build_lines(SIZE[0]) for text, _ in line)
        assert "probe-stress failed: RuntimeError: the recording is gone" in header
        assert toasts == []
