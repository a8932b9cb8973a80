"""--record in the monitor (ticks, findings, marks, a full disk) and replay in the monitor (keys, findings)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from gputui import cli
from gputui.config import Config
from gputui.diagnostics.engine import DiagnosticsEngine
from gputui.diagnostics.findings import Finding
from gputui.formatting import NA
from gputui.probes.protocol import BadLine, Progress, Result
from gputui.record.reader import load_recording
from gputui.record.writer import RecordingWriter
from gputui.session.builder import SessionOptions, open_session
from gputui.sources.playback import ReplaySource
from gputui.sources.sim.source import SimulatedSource
from gputui.ui.app import GpuTuiApp
from gputui.ui.widgets.processes import COLUMNS
from tests.ui.monitor_helpers import FIXED_NOW, plain, run_ticks, session_of

if TYPE_CHECKING:
    from conftest import Clock

SIZE = (120, 40)


@contextmanager
def recording_app(
    path: str | Path, *, clock: Clock, force: bool = False
) -> Iterator[tuple[GpuTuiApp, RecordingWriter]]:
    """The monitor recording the thermal scenario to `path`; the recording ends with the session."""
    source = SimulatedSource(scenario="thermal", gpu_count=2, seed=0, clock=clock)
    writer = RecordingWriter(path, interval_s=1.0, force=force, utc_offset_s=0)
    with open_session(SessionOptions(source=source, record=writer), Config()) as session:
        yield GpuTuiApp(session, auto_sample=False, now=lambda: FIXED_NOW), writer


def header(app: GpuTuiApp) -> str:
    return plain(app.main.header.build_lines(SIZE[0]))


def key(finding: Finding) -> tuple[str, tuple[int, ...], int, float]:
    return finding.rule, finding.gpus, finding.severity, finding.started_at


async def test_the_monitor_records_every_tick_and_the_findings(tmp_path: Path, clock: Clock) -> None:
    with recording_app(tmp_path / "run.jsonl", clock=clock) as (app, _):
        async with app.run_test(size=SIZE) as pilot:
            await run_ticks(app, clock, 12)
            await pilot.pause()
            assert " REC " in header(app)
    recording = load_recording(tmp_path / "run.jsonl")  # closed at the session's end
    assert len(recording.ticks) == 12 and recording.warnings == []
    opened = [e.data["finding"] for e in recording.events if e.kind == "finding_opened"]
    assert [(f["rule"], f["gpus"]) for f in opened] == [("thermal_throttle", [1])]


async def test_m_drops_a_labelled_mark_at_the_latest_tick(
    tmp_path: Path, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    toasts: list[str] = []
    monkeypatch.setattr(GpuTuiApp, "notify", lambda self, message, **kwargs: toasts.append(message))
    with recording_app(tmp_path / "run.jsonl.gz", clock=clock) as (app, _):
        async with app.run_test(size=SIZE) as pilot:
            await run_ticks(app, clock, 3)
            await pilot.press("M")
            await pilot.press(*"workers 8", "enter")
            await pilot.press("M", "x", "escape")  # cancelled: no mark
            await pilot.pause()
            assert app.latest is not None
            last = app.latest.snapshot.timestamp
            assert app.filter_text == ""  # the mark's text box is not the process filter
            assert "mark recorded: workers 8" in header(app)  # under the header, not in a toast over the findings
            assert toasts == []
    marks = [e for e in load_recording(tmp_path / "run.jsonl.gz").events if e.kind == "mark"]
    assert [(m.data["label"], m.t) for m in marks] == [("workers 8", last)]


async def test_a_failed_write_shows_in_the_header_and_the_monitor_goes_on(tmp_path: Path, clock: Clock) -> None:
    with recording_app("/dev/full", force=True, clock=clock) as (app, writer):  # every write: ENOSPC
        async with app.run_test(size=SIZE) as pilot:
            await run_ticks(app, clock, 2)
            writer.drain()
            await run_ticks(app, clock, 2)
            await pilot.pause()
            text = header(app)
            assert " REC STOPPED " in text and "No space left on device" in text
            assert app.latest is not None and len(app.history) == 4


def test_an_existing_file_is_not_overwritten_without_force(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "run.jsonl"
    target.write_text("keep me\n")
    assert cli.main(["--demo", "--record", str(target)]) == 2
    assert "already exists; choose another file or add --force" in capsys.readouterr().err
    assert target.read_text() == "keep me\n"


def test_a_missing_directory_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["--demo", "--record", str(tmp_path / "no" / "run.jsonl")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "does not exist" in err


def test_diagnose_records_its_ticks_and_findings(tmp_path: Path) -> None:
    target = tmp_path / "d.jsonl"
    assert cli.main(["diagnose", "--demo", "thermal", "--seconds", "10", "--json", "--record", str(target)]) == 4
    recording = load_recording(target)
    assert len(recording.ticks) == 16  # the verdict's 5 s of warm-up, then the 10 s judged
    assert any(e.kind == "finding_opened" and e.data["finding"]["rule"] == "thermal_throttle" for e in recording.events)
    assert cli.main(["diagnose", "--demo", "--record", str(target)]) == 2  # not overwritten


def live_thermal(path: Path, ticks: int) -> list[tuple[Finding, ...]]:
    """Record the thermal scenario as the monitor would, and what the engine found after each tick."""
    source = SimulatedSource(scenario="thermal", gpu_count=2, seed=0, clock=lambda: len(found))
    source.open()
    engine = DiagnosticsEngine()
    writer = RecordingWriter(path, interval_s=1.0, utc_offset_s=0)
    found: list[tuple[Finding, ...]] = []
    for _ in range(ticks):
        snapshot = source.sample()
        active = engine.update(snapshot).active
        writer.record(snapshot, active)
        found.append(active)
    writer.close()
    return found


async def test_replay_keys_and_the_findings_recomputed(tmp_path: Path, clock: Clock) -> None:
    live = live_thermal(tmp_path / "r.jsonl", 60)
    source = ReplaySource(tmp_path / "r.jsonl", clock=clock)
    app = GpuTuiApp(session_of(source), auto_sample=False, now=source.recording_now)
    async with app.run_test(size=SIZE) as pilot:
        await app.tick()
        text = header(app)
        assert " REPLAY " in text and " SIMULATED: thermal " in text and "00:00:00 / 00:00:59 x1" in text
        clock.now = 20.0
        tick = await app.tick()
        assert len(app.history) == 21  # every tick passed, none skipped
        assert [key(f) for f in tick.active] == [key(f) for f in live[20]] != []
        await pilot.pause()
        assert [key(f) for f in app.main.findings.entries] == [key(f) for f in live[20]]

        await pilot.press("space")
        clock.now = 25.0
        await app.tick()
        assert source.position == 20.0 and len(app.history) == 21  # paused: nothing repeated
        assert " PAUSED " in header(app)
        await pilot.press("right")
        tick = await app.tick()
        assert source.position == 30.0 and tick.snapshot.timestamp - source.recording.start == 30.0
        assert len(app.history) == 31
        await pilot.press("greater_than_sign")
        await app.tick()
        assert source.speed == 2.0 and "00:00:30 / 00:00:59 x2" in header(app)
        await pilot.press("left_square_bracket")  # back to the start: the views start over
        tick = await app.tick()
        assert source.position == 0.0 and len(app.history) == 1 and tick.active == ()
        await pilot.press("p")  # `p` in replay plays again, as space does
        assert not source.paused


def table(app: GpuTuiApp) -> dict[str, tuple[str, ...]]:
    """The process table as it reads: each row's cells, by GPU and PID."""
    return {key: tuple(cell.shown for cell in row) for key, row in app.main.table.rows.items()}


async def test_the_replayed_process_table_shows_what_live_showed(tmp_path: Path, clock: Clock) -> None:
    source = SimulatedSource(scenario="contention", gpu_count=2, seed=0, clock=clock)
    writer = RecordingWriter(tmp_path / "r.jsonl", interval_s=1.0, utc_offset_s=0)
    with open_session(SessionOptions(source=source, record=writer), Config()) as session:
        app = GpuTuiApp(session, auto_sample=False, now=lambda: FIXED_NOW)
        async with app.run_test(size=SIZE) as pilot:
            await run_ticks(app, clock, 5)
            await pilot.pause()
            live = table(app)
    replay = ReplaySource(tmp_path / "r.jsonl", clock=clock)
    app = GpuTuiApp(session_of(replay), auto_sample=False, now=replay.recording_now)
    async with app.run_test(size=SIZE) as pilot:
        clock.advance(4.0)  # to the fifth tick, the last live showed
        await app.tick()
        await pilot.pause()
        assert table(app) == live
    sm = [column.key for column in COLUMNS].index("sm")
    assert len(live) == 3 and NA not in {row[sm] for row in live.values()}  # GPU 0's two processes, GPU 1's one


async def test_a_replay_key_shows_the_new_position_at_once_not_at_the_next_poll(tmp_path: Path, clock: Clock) -> None:
    live_thermal(tmp_path / "r.jsonl", 30)
    source = ReplaySource(tmp_path / "r.jsonl", clock=clock)
    app = GpuTuiApp(session_of(source, interval=10.0), now=source.recording_now)  # sampled by its own thread
    async with app.run_test(size=SIZE) as pilot:
        while app.latest is None:  # the sampling thread's first poll; the next is 10 s away
            await pilot.pause(0.01)
        source.pause()
        before = app.latest.snapshot.timestamp
        await pilot.press("right")
        await app.workers.wait_for_complete()
        assert app.latest.snapshot.timestamp == before + 10.0 and source.position == 10.0


async def test_replay_keys_do_nothing_live(tmp_path: Path, clock: Clock) -> None:
    with recording_app(tmp_path / "run.jsonl", clock=clock) as (app, _):
        async with app.run_test(size=SIZE) as pilot:
            await run_ticks(app, clock, 1)
            await pilot.press("space", "right", "greater_than_sign")
            assert not app.paused and app.replay is None


async def test_help_lists_the_replay_keys_only_in_replay(tmp_path: Path, clock: Clock) -> None:
    live_thermal(tmp_path / "r.jsonl", 3)
    source = ReplaySource(tmp_path / "r.jsonl", clock=clock)
    replay = GpuTuiApp(session_of(source), auto_sample=False)
    with recording_app(tmp_path / "live.jsonl", clock=clock) as (live, _):
        assert {b.action for b in replay.mode_bindings()} >= {
            "replay_stop",
            "replay_play",
            "replay_seek(60)",
            "replay_faster",
        }
        assert [b.action for b in live.mode_bindings()] == ["mark"]


async def test_probe_progress_and_results_are_recorded(tmp_path: Path, clock: Clock) -> None:
    with recording_app(tmp_path / "run.jsonl", clock=clock) as (app, _):
        async with app.run_test(size=SIZE):
            await run_ticks(app, clock, 2)
            app.record_probe(Progress("stress", 0.5, 612.0, "TFLOP/s"))
            app.record_probe(BadLine("stress", "garbage", "not JSON"))
            app.record_probe(Result("stress", "cuda:0 H100", True, {"tflops": float("nan")}, "as expected"))
    recorded = load_recording(tmp_path / "run.jsonl").events
    events = [(e.kind, e.data["probe"]) for e in recorded if e.kind.startswith("probe")]  # the verdict is one too
    probes = [(kind, probe["type"], probe["probe"]) for kind, probe in events]
    assert probes == [("probe_progress", "progress", "stress"), ("probe_result", "result", "stress")]
    assert events[-1][1]["figures"] == {"tflops": None}  # JSON has no NaN
