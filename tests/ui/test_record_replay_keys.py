"""Replay is replay: its footer shows its own keys, the probe keys only say why they do nothing, the marks show
when the play position reaches them, and the end of the recording is said and stops playback."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from textual.widgets import Footer
from textual.widgets._footer import FooterKey, FooterLabel

from gputui.record.writer import RecordingWriter
from gputui.sources.playback import ReplaySource
from gputui.sources.sim.source import SimulatedSource
from gputui.ui import probes
from gputui.ui.app import GpuTuiApp
from gputui.ui.probes import REPLAY_REFUSAL
from gputui.ui.screens.confirm_probe import ConfirmProbe
from gputui.ui.screens.help import HelpScreen, key_table
from tests.ui.monitor_helpers import FIXED_NOW, plain, session_of, until

if TYPE_CHECKING:
    from conftest import Clock
    from textual.pilot import Pilot

SIZES = [(80, 24), (120, 40)]
MARK = "changed num_workers to 8"


def record(path: Path, ticks: int, marks: dict[int, str] | None = None) -> Path:
    """The thermal scenario as the monitor records it, one tick a second from t=0, with marks at given ticks."""
    seen: list[float] = []
    source = SimulatedSource(scenario="thermal", gpu_count=2, seed=0, clock=lambda: float(len(seen)))
    source.open()
    writer = RecordingWriter(path, interval_s=1.0, utc_offset_s=0)
    for index in range(ticks):
        snapshot = source.sample()
        writer.record(snapshot, ())
        if marks and index in marks:
            writer.mark(marks[index], snapshot.timestamp)
        seen.append(snapshot.timestamp)
    writer.close()
    return path


def replay_app(path: Path, clock: Clock) -> tuple[GpuTuiApp, ReplaySource]:
    source = ReplaySource(path, clock=clock)
    return GpuTuiApp(session_of(source), auto_sample=False, now=source.recording_now), source


@contextmanager
def live_app(path: Path, clock: Clock) -> Iterator[GpuTuiApp]:
    """The monitor recording to `path`, the recording closed when done."""
    source = SimulatedSource(scenario="thermal", gpu_count=2, seed=0, clock=clock)
    with closing(RecordingWriter(path, interval_s=1.0, utc_offset_s=0)) as recorder:
        yield GpuTuiApp(session_of(source, recorder=recorder), auto_sample=False, now=lambda: FIXED_NOW)


# What footer() puts before a group's label whose keys are not there (yet): the footer is being recomposed.
HALF_BUILT = "(no keys)"


def footer(app: GpuTuiApp, width: int) -> list[str]:
    """The footer's entries as they read, left to right: "space Pause", "← → Seek"; each one checked to
    lie inside the terminal's width (the entries after the last fitting one scroll off to the right)."""
    entries: list[str] = []
    for widget in app.screen.query_one(Footer).query("FooterKey, FooterLabel"):
        if widget.region.right > width:
            break
        if isinstance(widget, FooterKey):
            if widget.description:
                entries.append(f"{widget.key_display} {widget.description}")
            else:  # a key of a group: its label follows the group's keys
                entries.append(widget.key_display)
        elif isinstance(widget, FooterLabel):
            keys = []
            while entries and " " not in entries[-1]:
                keys.insert(0, entries.pop())
            entries.append(" ".join([*(keys or [HALF_BUILT]), str(widget.content)]))
    return entries


async def footer_reading(app: GpuTuiApp, pilot: Pilot[Any], width: int, first: list[str]) -> list[str]:
    """The footer's entries once it is whole (every group's keys before its label, `? Help` last) and they start with
    `first`; else, after a bounded wait, as they last read, for the assertion to show. The footer recomposes when the
    bindings change, a group's keys a moment after its label: read once on a busy machine, it was half built."""
    entries = footer(app, width)
    for _ in range(250):
        whole = entries[-1:] == ["? Help"] and not any(entry.startswith(HALF_BUILT) for entry in entries)
        if whole and entries[: len(first)] == first:
            break
        await pilot.pause(0.02)
        entries = footer(app, width)
    return entries


def header(app: GpuTuiApp, width: int) -> str:
    """The header as it reads at `width`: its rows joined, so a wrapped notice reads whole."""
    return " ".join(plain(app.main.header.build_lines(width)).split("\n"))


@pytest.mark.parametrize("size", SIZES)
async def test_the_replay_footer_shows_the_replay_keys_and_not_the_live_ones(
    tmp_path: Path, clock: Clock, size: tuple[int, int]
) -> None:
    app, _ = replay_app(record(tmp_path / "r.jsonl", 5), clock)
    async with app.run_test(size=size) as pilot:
        await app.tick()
        entries = await footer_reading(app, pilot, size[0], ["space Pause", "← → Seek", "< > Speed"])
        assert entries[:3] == ["space Pause", "← → Seek", "< > Speed"], entries  # it plays: space pauses
        assert entries[-1] == "? Help", entries  # whole, within the terminal's width
        for live in ("p Pause", "+ Slower", "- Faster", "s b m i n Probe", "x Stop", "M Mark"):
            assert live not in entries
        every_key = [entry.split()[0] for entry in footer(app, 10_000)]
        assert not {"p", "+", "-", "s", "x", "M"} & set(every_key), every_key


@pytest.mark.parametrize("size", SIZES)
async def test_the_live_footer_keeps_its_keys(tmp_path: Path, clock: Clock, size: tuple[int, int]) -> None:
    """Recording: the live keys and `M`, `? Help` still within the width; `x` only while a probe runs; none of
    the replay keys."""
    with live_app(tmp_path / "live.jsonl", clock) as app:
        async with app.run_test(size=size) as pilot:
            await app.tick()
            entries = await footer_reading(app, pilot, size[0], ["M Mark", "q Quit", "p Pause", "d Findings"])
            assert entries[:4] == ["M Mark", "q Quit", "p Pause", "d Findings"], entries
            assert "s b m i n Probe" in entries and "x Stop" not in entries and entries[-1] == "? Help"
            assert not any(entry.startswith(("space", "←", "<")) for entry in entries)


@pytest.mark.parametrize("size", SIZES)
async def test_every_probe_key_in_replay_says_why_and_starts_nothing(
    tmp_path: Path, clock: Clock, size: tuple[int, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    started: list[object] = []
    monkeypatch.setattr(probes, "ProbeRunner", lambda *args, **kwargs: started.append(args))
    app, _ = replay_app(record(tmp_path / "r.jsonl", 5), clock)
    async with app.run_test(size=size) as pilot:
        await app.tick()
        for focus in ("none", "tab", "tab", "tab", "shift+tab", "d"):  # the panels, the processes, the pane
            if focus != "none":
                await pilot.press(focus)
            for key in ("s", "b", "m", "i", "n", "x"):
                app.probes.status.show(None)
                await pilot.press(key)
                await pilot.pause()
                assert not isinstance(app.screen, ConfirmProbe), (focus, key)
                assert app.probes.status.display and app.probes.status.plain == REPLAY_REFUSAL, (focus, key)
        assert started == [] and app.probes.runner is None
        assert not [worker for worker in app.workers if worker.group.startswith("probe")]
        row = next(strip.text for strip in app.screen._compositor.render_strips() if REPLAY_REFUSAL in strip.text)
        assert row.strip() == REPLAY_REFUSAL  # in plain sight, whole, on the status line
        app.action_probe("stress")  # however it is asked
        assert started == [] and app.probes.status.plain == REPLAY_REFUSAL


async def test_the_replay_help_lists_no_probe_or_interval_key(tmp_path: Path, clock: Clock) -> None:
    app, _ = replay_app(record(tmp_path / "r.jsonl", 5), clock)
    async with app.run_test(size=(120, 40)) as pilot:
        await app.tick()
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        keys = [str(cell) for cell in key_table(app.help_bindings()).columns[0].cells]
        assert {"space", "←", "[", "<", ">", "q", "d"} <= set(keys)
        assert not {"s", "b", "m", "i", "n", "x", "+", "-", "p", "M"} & set(keys), keys


async def test_p_and_space_both_play_and_pause_a_replay(tmp_path: Path, clock: Clock) -> None:
    app, source = replay_app(record(tmp_path / "r.jsonl", 30), clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await app.tick()
        await pilot.press("p")
        assert source.paused and not app.paused
        await pilot.press("tab", "p")  # the process table has the focus: still the replay's key
        assert not source.paused
        await pilot.press("space")
        assert source.paused
        await until(lambda: footer(app, 80)[:1] == ["space Play"], pilot)  # the footer says what space does now
        await pilot.press("space")
        assert not source.paused
        await until(lambda: footer(app, 80)[:1] == ["space Pause"], pilot)
        await pilot.press("plus")  # the refresh interval is live-only
        assert app.interval == 1.0


@pytest.mark.parametrize("size", SIZES)
async def test_a_mark_shows_when_the_replay_reaches_it(tmp_path: Path, clock: Clock, size: tuple[int, int]) -> None:
    app, source = replay_app(record(tmp_path / "r.jsonl", 120, {10: MARK}), clock)
    row = f"mark 00:00:10: {MARK}"
    async with app.run_test(size=size) as pilot:
        clock.now = 9.0
        await app.tick()
        assert "mark" not in header(app, size[0])
        clock.now = 10.0
        await app.tick()
        assert row in header(app, size[0])  # reached by playing
        clock.now = 69.0
        await app.tick()
        assert row in header(app, size[0])  # for a minute of playing time
        clock.now = 71.0
        await app.tick()
        assert "mark" not in header(app, size[0])
        await pilot.press("space", "left_square_bracket", "left")  # paused, back before the mark
        await app.tick()
        assert source.position < 10.0 and "mark" not in header(app, size[0])
        await pilot.press("right", "right")  # a seek over the mark shows it too
        await app.tick()
        assert source.position > 10.0 and row in header(app, size[0])
        await pilot.pause()
        assert any(row in strip.text for strip in app.screen._compositor.render_strips())


async def test_a_mark_stays_a_minute_of_playing_time_at_any_speed(tmp_path: Path, clock: Clock) -> None:
    app, source = replay_app(record(tmp_path / "r.jsonl", 400, {10: MARK}), clock)
    async with app.run_test(size=(120, 40)) as pilot:
        await app.tick()
        await pilot.press("greater_than_sign", "greater_than_sign")  # x4: a minute of playing is 240 s of recording
        clock.now = 60.0
        await app.tick()
        assert source.position == 240.0 and f"mark 00:00:10: {MARK}" in header(app, 120)


@pytest.mark.parametrize("size", SIZES)
async def test_the_end_of_the_recording_is_said_and_playback_stops(
    tmp_path: Path, clock: Clock, size: tuple[int, int]
) -> None:
    app, source = replay_app(record(tmp_path / "r.jsonl", 25), clock)
    end = "end of recording, 25/25 ticks: playback stopped (← or [ to go back)"
    async with app.run_test(size=size) as pilot:
        clock.now = 23.0
        await app.tick()
        assert "end of recording" not in header(app, size[0]) and not source.paused
        clock.now = 30.0
        await app.tick()
        text = header(app, size[0])
        assert end in text and " PAUSED " in text and source.paused
        clock.now = 60.0  # stopped: the clock moving on changes nothing
        await app.tick()
        assert source.position == 24.0 and end in header(app, size[0])
        await pilot.pause()
        rows = [strip.text for strip in app.screen._compositor.render_strips()]
        assert any("end of recording" in row for row in rows)  # under the header, in plain sight
        await pilot.press("left")
        await app.tick()
        assert source.position == 14.0 and source.paused and "end of recording" not in header(app, size[0])
        await pilot.press("space")  # and it plays on from there
        clock.now = 65.0
        await app.tick()
        assert source.position == 19.0
