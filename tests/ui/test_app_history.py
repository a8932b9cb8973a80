"""The monitor and the history store (issue 39, item 3): the last hour joins the charts after the first frame, the
since-you-looked line, and walking back into the past while paused; each against a real store on disk."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from gputui.record.reader import Recording
from gputui.session.past import NO_HISTORY
from gputui.sources.sim.source import SimulatedSource
from gputui.store.minutes import MinuteRow
from gputui.store.reader import Store
from gputui.ui.app import PAST_SIGNAL_REFUSAL, GpuTuiApp
from gputui.ui.screens.goto import GotoScreen
from tests.store.storedata import T0, simulate, write_store
from tests.ui.monitor_helpers import FIXED_NOW, run_ticks, screen_rows, session_of, until

pytestmark = pytest.mark.usefixtures("utc")

if TYPE_CHECKING:
    from conftest import Clock

SIZE = (120, 40)
STORED_S = 600  # ten minutes of thermal ticks in the store, from T0
LIVE_FROM_S = 620.0  # the monitor starts 20 s after the store's last tick


@pytest.fixture
def store(tmp_path: Path) -> Path:
    directory = tmp_path / "store"
    write_store(directory, list(simulate("thermal", gpus=2, seconds=STORED_S))).close()
    return directory


def history_app(clock: Clock, store: Path | None, tmp_path: Path, **kwargs: Any) -> GpuTuiApp:
    """The thermal machine live from LIVE_FROM_S on, sampled by `app.tick()`, reading `store` after its first frame."""
    clock.now = LIVE_FROM_S
    source = SimulatedSource(scenario="thermal", gpu_count=2, seed=0, clock=clock)
    return GpuTuiApp(
        session_of(source),
        auto_sample=False,
        now=lambda: FIXED_NOW,
        store=store,
        last_seen_file=tmp_path / "state" / "last-seen.json",
        **kwargs,
    )


@pytest.fixture
def blocked_reads(monkeypatch: pytest.MonkeyPatch) -> tuple[threading.Event, threading.Event]:
    """Store.read blocks until the test sets the second event; the first is set once a read has begun."""
    reading, release = threading.Event(), threading.Event()
    read = Store.read

    def slow_read(self: Store, start: float, end: float) -> Recording:
        reading.set()
        assert release.wait(10), "the test never let the read finish"
        return read(self, start, end)

    monkeypatch.setattr(Store, "read", slow_read)
    return reading, release


def text_of(app: GpuTuiApp) -> str:
    return "\n".join(screen_rows(app))


async def test_the_first_frame_does_not_wait_for_the_store_and_the_charts_hold_its_ticks_after(
    clock: Clock, store: Path, tmp_path: Path, blocked_reads: tuple[threading.Event, threading.Event]
) -> None:
    reading, release = blocked_reads
    app = history_app(clock, store, tmp_path, history_size=1000)
    async with app.run_test(size=SIZE) as pilot:
        try:
            await run_ticks(app, clock, 1)
            await until(reading.is_set, pilot)  # the read has begun, and it blocks...
            await run_ticks(app, clock, 2)  # ...while ticks are drawn and keys answered
            await pilot.press("d")
            await pilot.pause()
            assert "SIMULATED" in text_of(app) and len(app.history) == 3
        finally:
            release.set()
        await until(lambda: app.since is not None, pilot)
        times = [s.timestamp - T0 for s in app.history]
        assert times == [float(t) for t in range(STORED_S)] + [LIVE_FROM_S, LIVE_FROM_S + 1, LIVE_FROM_S + 2]
        # The sparklines were built again from the store's first tick: more cells than three live seconds fill.
        assert all(sum(v is not None for v in p.history.values) > 10 for p in app.main.gpus.panels)
        # The live engine judged only the live ticks: the past is not fed into it.
        assert len(app.engine.history) == 3


async def test_the_since_line_shows_before_the_hours_ticks_are_read(
    clock: Clock, store: Path, tmp_path: Path, blocked_reads: tuple[threading.Event, threading.Event]
) -> None:
    """The minutes take a few dozen ms to read, the hour's ticks seconds: the line does not wait for the ticks."""
    reading, release = blocked_reads
    app = history_app(clock, store, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        try:
            await run_ticks(app, clock, 1)
            await until(reading.is_set, pilot)
            await until(lambda: any(n.text.startswith("since ") for n in app.notices.rows()), pilot)
            assert app.since is None and app.past is None  # the ticks are still being read
        finally:
            release.set()
        await until(lambda: app.since is not None, pilot)
        assert app.past is not None and [n.text for n in app.notices.rows()].count(app.since) == 1


async def test_the_history_keeps_what_its_capacity_bounds(clock: Clock, store: Path, tmp_path: Path) -> None:
    app = history_app(clock, store, tmp_path, history_size=100)
    async with app.run_test(size=SIZE) as pilot:
        await run_ticks(app, clock, 1)
        await until(lambda: app.since is not None, pilot)
        assert len(app.history) == 100
        assert [s.timestamp - T0 for s in app.history][-2:] == [STORED_S - 1, LIVE_FROM_S]


async def test_the_since_line_says_what_was_recorded_and_the_next_one_starts_when_the_user_left(
    clock: Clock, store: Path, tmp_path: Path
) -> None:
    app = history_app(clock, store, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await run_ticks(app, clock, 1)
        await until(lambda: app.since is not None, pilot)
        # Never looked: the last 12 hours, of which the store holds the thermal machine's ten minutes.
        assert app.since == (
            "since 2025-12-31 12:10: Throttled 10 min on GPU 1, GPU-bound 10 min on GPU 0, heat 10 min on GPU 1 "
            "(recorded 10 min of 12 h)"
        )
        assert app.since in [n.text for n in app.notices.rows()]  # a notice: gone after its minute, like the others
        await pilot.pause()
        assert app.since.split(":", 1)[0] in text_of(app)
    assert app.remember_looked() is None
    seen = json.loads((tmp_path / "state" / "last-seen.json").read_text())
    assert seen == {str(store): T0 + LIVE_FROM_S}
    # Looked again later: the line starts when the user left, and nothing was recorded since.
    again = history_app(clock, store, tmp_path)
    clock.now = LIVE_FROM_S + 60
    async with again.run_test(size=SIZE) as pilot:
        await run_ticks(again, clock, 1)
        await until(lambda: again.since is not None, pilot)
        assert again.since is not None and again.since.startswith("no recorder ran since 00:10:")


async def test_no_store_no_word_until_a_key_needs_one(clock: Clock, tmp_path: Path) -> None:
    app = history_app(clock, tmp_path / "none", tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await run_ticks(app, clock, 2)
        await until(lambda: app.history_problem == NO_HISTORY, pilot)
        assert app.notices.rows() == ()
        await pilot.press("g")
        await pilot.pause()
        assert not isinstance(app.screen, GotoScreen)
        assert [n.text for n in app.notices.rows()] == [NO_HISTORY]
    assert app.remember_looked() is None and not (tmp_path / "state").exists()


async def test_a_store_of_a_newer_gputui_is_said_and_the_monitor_runs_on(clock: Clock, tmp_path: Path) -> None:
    directory = tmp_path / "newer"
    directory.mkdir()
    (directory / "STORE").write_text(json.dumps({"format": 99, "written_by": "gputui 99"}))
    app = history_app(clock, directory, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await run_ticks(app, clock, 1)
        await until(lambda: app.history_problem is not None and app.history_problem != NO_HISTORY, pilot)
        assert "newer gputui" in app.history_problem
        assert app.history_problem in [n.text for n in app.notices.rows()]
        await run_ticks(app, clock, 2)
        assert len(app.history) == 3 and app.latest is not None


async def test_paused_left_walks_back_into_the_store_and_p_returns_live(
    clock: Clock, store: Path, tmp_path: Path
) -> None:
    app = history_app(clock, store, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await run_ticks(app, clock, 5)
        await until(lambda: app.since is not None, pilot)
        await pilot.press("left")  # not paused: the key is not the walk's
        await pilot.pause()
        assert app.walk is None
        await pilot.press("p", "left")
        await until(lambda: app.past_tick is not None, pilot)
        assert app.walk is not None and app.walk.at == T0 + LIVE_FROM_S  # 10 s back from the newest: the ring's first
        await pilot.press("left")  # 10 s back falls in the gap between the two: the store's newest tick is next
        await until(lambda: app.past_tick is not None and app.past_tick.snapshot.timestamp == T0 + STORED_S - 1, pilot)
        # The store's last tick, shown: the header says when, the panels show its readings, the findings are the
        # thermal machine's as judged from the two minutes before it.
        walked = app.past_tick
        assert walked is not None and walked.verdict is not None
        assert [f.rule for f in walked.active] == ["thermal_throttle"] and walked.verdict.cls == "mixed"
        assert walked.verdict.line.startswith("Mixed: Throttled GPU 1") and walked.verdict.line in text_of(app)
        assert f"PAST {time.strftime('%H:%M:%S', time.localtime(T0 + STORED_S - 1))}" in text_of(app)
        assert [p.sample.timestamp for p in app.main.gpus.panels if p.sample] == [T0 + STORED_S - 1] * 2
        assert app.signal_refusal == PAST_SIGNAL_REFUSAL
        await run_ticks(app, clock, 2)  # live ticks arrive meanwhile: the panels stay on the past
        assert [p.sample.timestamp for p in app.main.gpus.panels if p.sample] == [T0 + STORED_S - 1] * 2
        await pilot.press("p")
        await pilot.pause()
        assert app.walk is None and app.past_tick is None and not app.paused
        assert "PAST" not in text_of(app)
        latest = app.latest.snapshot.timestamp if app.latest else None
        assert [p.sample.timestamp for p in app.main.gpus.panels if p.sample] == [latest] * 2


async def test_g_jumps_to_a_time_read_from_the_store_and_space_returns_live(
    clock: Clock, store: Path, tmp_path: Path
) -> None:
    app = history_app(clock, store, tmp_path)
    target = T0 + 123
    async with app.run_test(size=SIZE) as pilot:
        await run_ticks(app, clock, 1)
        await until(lambda: app.since is not None, pilot)
        await pilot.press("g")
        await until(lambda: isinstance(app.screen, GotoScreen), pilot)
        await pilot.press(*time.strftime("%H:%M:%S", time.localtime(target)), "enter")
        await until(lambda: app.past_tick is not None, pilot)
        assert app.paused and app.walk is not None and app.walk.at == target
        assert app.past_tick is not None and app.past_tick.snapshot.timestamp == target
        await pilot.press("right")
        await until(lambda: app.past_tick is not None and app.past_tick.snapshot.timestamp == target + 10, pilot)
        await pilot.press("space")
        await pilot.pause()
        assert app.walk is None and not app.paused


async def test_g_at_a_time_the_store_does_not_hold_says_what_it_holds(
    clock: Clock, store: Path, tmp_path: Path
) -> None:
    app = history_app(clock, store, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await run_ticks(app, clock, 1)
        await until(lambda: app.since is not None, pilot)
        await pilot.press("g")
        await until(lambda: isinstance(app.screen, GotoScreen), pilot)
        await pilot.press(*"2d ago", "enter")
        await until(lambda: any("holds nothing near" in n.text for n in app.notices.rows()), pilot)
        assert app.walk is None and not app.paused


def minute_rows(start: float) -> list[MinuteRow]:
    """Two hours of a night as the minute tier sums it (the tier's own tests are the store's): input-bound on both
    GPUs throughout, GPU 1 throttled by heat for its first 12 minutes."""
    return [
        MinuteRow(
            start=start + 60 * m,
            ticks=60,
            verdict_s={("input_bound", (0, 1)): 60.0},
            finding_s={("thermal_throttle", (1,)): 60.0} if m < 12 else {},
            gpus={},
            host={},
        )
        for m in range(130)
    ]


@pytest.mark.parametrize("size", [(120, 40), (80, 24)])
def test_the_since_line_then_a_past_frame(
    snap_compare: Any, clock: Clock, store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, size: tuple[int, int]
) -> None:
    """The since line under the header; then, paused and walked back into the store, its newest tick: PAST in the
    header, that tick's readings in the panels and its findings in the pane."""
    monkeypatch.setattr(Store, "minutes", lambda self, start, end: minute_rows(start))
    app = history_app(clock, store, tmp_path)

    async def before(pilot: Any) -> None:
        await run_ticks(app, clock, 5)
        await until(lambda: app.since is not None, pilot)
        assert app.since is not None and "Input-bound 2 h 10 min on GPUs 0-1, heat 12 min on GPU 1" in app.since
        await pilot.press("p", "left", "left")
        await until(lambda: app.past_tick is not None and app.past_tick.snapshot.timestamp == T0 + STORED_S - 1, pilot)
        await pilot.pause()

    assert snap_compare(app, terminal_size=size, run_before=before)


async def test_a_damaged_chunk_is_said_and_the_rest_joins_the_charts(clock: Clock, store: Path, tmp_path: Path) -> None:
    (chunk,) = sorted((store / "ticks").glob("*.gtc"))
    data = bytearray(chunk.read_bytes())
    middle = len(data) // 2
    data[middle : middle + 64] = bytes(64)  # a frame's payload no longer matches its checksum
    chunk.write_bytes(bytes(data))
    app = history_app(clock, store, tmp_path, history_size=1000)
    async with app.run_test(size=SIZE) as pilot:
        await run_ticks(app, clock, 1)
        await until(lambda: app.since is not None, pilot)
        said = [n.text for n in app.notices.rows() if n.report.level == "warning"]
        assert len(said) == 1 and "damaged" in said[0] and chunk.name in said[0]
        held = [s.timestamp - T0 for s in app.history]
        assert 0 < len(held) - 1 < STORED_S  # the damaged frame's ticks are gone, the others joined
        assert held[0] == 0.0 and held[-1] == LIVE_FROM_S
