"""Replay: the recorded ticks come back in order, on a virtual clock that pauses, seeks and changes speed."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from gputui.record.format import mark_event
from gputui.record.reader import load_recording
from gputui.session.replay_sampler import ReplaySampler, replay_notes
from gputui.sources.base import Source, SourceUnavailable
from gputui.sources.playback import ReplaySource, resolve_start
from tests.conftest import Clock
from tests.record.recdata import T0, snapshot, system, write_recording


def _recording(tmp_path: Path, seconds: int = 300) -> Path:
    snaps = [snapshot(T0 + i, 2, util=float(i % 100)) for i in range(seconds)]
    return write_recording(tmp_path / "r.jsonl", snaps, events=(mark_event("bs 128", T0 + 42.5),))


def _utils(ticks: tuple[object, ...]) -> list[float]:
    return [t.gpus[0].utilization_gpu_pct for t in ticks]  # type: ignore[attr-defined]


@pytest.fixture
def clock() -> Clock:
    return Clock(now=100.0)


@pytest.fixture
def replay(tmp_path: Path, clock: Clock) -> ReplaySource:
    source = ReplaySource(_recording(tmp_path), clock=clock)
    source.open()
    return source


def test_it_is_a_source_that_says_replay_and_keeps_the_hostname(tmp_path: Path) -> None:
    source = ReplaySource(_recording(tmp_path))
    assert isinstance(source, Source)
    info = source.open()
    assert info.source == "replay" and info.hostname == "train-07" and info.recorded_source == "nvml"
    assert source.sample().system.source == "replay"
    assert source.duration == 299.0


def test_a_simulated_recording_stays_labelled_simulated(tmp_path: Path) -> None:
    snaps = [snapshot(T0 + i, 1, sys_info=system(1, source="simulated")) for i in range(3)]
    source = ReplaySource(write_recording(tmp_path / "s.jsonl", snaps))
    info = source.open()
    assert info.recorded_source == "simulated" and info.scenario == "healthy"


def test_bad_files_are_source_unavailable_with_the_reason(tmp_path: Path) -> None:
    with pytest.raises(SourceUnavailable, match="no such recording"):
        ReplaySource(tmp_path / "missing.jsonl").open()
    only_header = write_recording(tmp_path / "h.jsonl", [snapshot(T0)])
    only_header.write_text(only_header.read_text().splitlines()[0] + "\n")
    with pytest.raises(SourceUnavailable, match="no samples"):
        ReplaySource(only_header).open()


def test_playback_follows_the_clock_and_hands_over_every_tick(replay: ReplaySource, clock: Clock) -> None:
    first = replay.advance()
    assert first.jumped and _utils(first.ticks) == [0.0]
    clock.now += 3.0
    assert _utils(replay.advance().ticks) == [1.0, 2.0, 3.0]
    assert replay.advance().ticks == ()
    clock.now += 0.5
    assert replay.sample().gpus[0].utilization_gpu_pct == 3.0


def test_speed_scales_the_clock(replay: ReplaySource, clock: Clock) -> None:
    replay.advance()
    replay.set_speed(4.0)
    clock.now += 2.0
    assert _utils(replay.advance().ticks) == [float(i) for i in range(1, 9)]
    assert replay.faster() == 8.0 and replay.slower() == 4.0 and replay.slower() == 2.0
    with pytest.raises(ValueError, match="between"):
        replay.set_speed(0.0)


def test_pause_freezes_and_resume_goes_on(replay: ReplaySource, clock: Clock) -> None:
    replay.advance()
    assert replay.toggle_pause() is True
    clock.now += 50.0
    assert replay.advance().ticks == () and replay.position == 0.0
    replay.resume()
    clock.now += 2.0
    assert _utils(replay.advance().ticks) == [1.0, 2.0]
    assert "paused" not in replay.status_text()


def test_seek_back_starts_over_with_the_minute_before(replay: ReplaySource, clock: Clock) -> None:
    replay.advance()
    clock.now += 200.0
    replay.advance()
    replay.seek(-10.0)
    step = replay.advance()
    assert step.jumped and len(step.ticks) == 61
    assert step.ticks[-1].timestamp == T0 + 190 and step.ticks[0].timestamp == T0 + 130


def test_seek_forward_a_little_hands_over_the_ticks_skipped(replay: ReplaySource) -> None:
    replay.pause()
    replay.advance()
    replay.seek(10.0)
    step = replay.advance()
    assert not step.jumped and len(step.ticks) == 10
    replay.seek(100.0)
    far = replay.advance()
    assert far.jumped and far.ticks[-1].timestamp == T0 + 110


def test_seek_stays_within_the_recording(replay: ReplaySource) -> None:
    replay.pause()
    replay.seek(-999.0)
    assert replay.position == 0.0
    replay.seek(1e6)
    assert replay.position == replay.duration and replay.at_end
    assert replay.sample().timestamp == T0 + 299


def test_step_is_deterministic(replay: ReplaySource) -> None:
    replay.pause()
    replay.advance()
    assert _utils(replay.step().ticks) == [1.0]
    assert _utils(replay.step(3).ticks) == [2.0, 3.0, 4.0]
    back = replay.step(-2)
    assert back.jumped and back.ticks[-1].gpus[0].utilization_gpu_pct == 2.0


def test_start_and_status_text(tmp_path: Path, clock: Clock) -> None:
    source = ReplaySource(_recording(tmp_path), start=65.0, clock=clock)
    source.open()
    assert source.advance().ticks[-1].timestamp == T0 + 65
    assert source.status_text().startswith("20:27:45  +0:01:05 / 0:04:59  x1")  # T0 is 20:26:40 UTC
    assert [e.data["label"] for e in source.events_until(T0 + 65)] == ["bs 128"]


def test_resolve_start_reads_clock_times_and_offsets(tmp_path: Path) -> None:
    recording = load_recording(_recording(tmp_path))
    assert resolve_start(recording, "+65") == 65.0
    assert resolve_start(recording, "+1:05") == 65.0
    assert resolve_start(recording, "20:27:45") == 65.0
    with pytest.raises(ValueError, match=r"not in the recording: it runs from 20:26:40 to 20:31:39"):
        resolve_start(recording, "21:00:00")
    with pytest.raises(ValueError, match="not a time"):
        resolve_start(recording, "soon")


def test_the_ui_thread_can_seek_while_the_sampling_thread_plays(replay: ReplaySource) -> None:
    errors: list[BaseException] = []

    def play() -> None:
        try:
            for _ in range(500):
                replay.advance()
                replay.sample()
        except BaseException as exc:  # pragma: no cover - only on failure
            errors.append(exc)

    worker = threading.Thread(target=play)
    worker.start()
    for i in range(500):
        replay.seek(-7.0 if i % 2 else 11.0)
        replay.toggle_pause()
    worker.join()
    assert errors == []
    assert 0.0 <= replay.position <= replay.duration


def test_playback_stops_at_the_last_tick_and_says_so(replay: ReplaySource, clock: Clock) -> None:
    sampler = ReplaySampler(replay)
    sampler.take()
    assert (replay.ticks_shown, replay.tick_count) == (1, 300) and not replay.paused
    clock.now += 1000.0
    tick = sampler.take()
    assert tick.snapshot.timestamp == T0 + 299 and replay.paused  # stopped there, not idling on
    assert replay_notes(replay)[0] == "end of recording, 300/300 ticks: playback stopped (← or [ to go back)"
    replay.seek(-30.0)
    sampler.take()
    assert replay.paused and not any(note.startswith("end") for note in replay_notes(replay))


def test_a_mark_is_said_for_a_minute_of_playing_time_after_the_position_passes_it(
    replay: ReplaySource, clock: Clock
) -> None:
    """The mark "bs 128" lies at T0 + 42.5, between two ticks: it shows from the tick after it."""
    sampler = ReplaySampler(replay)
    replay.pause()
    for position, said in ((42.0, False), (43.0, True), (102.0, True), (103.0, False)):
        replay.seek_to(position)
        sampler.take()
        assert (replay_notes(replay) == ["mark 20:27:22: bs 128"]) is said, position  # T0 is 20:26:40 UTC
    replay.set_speed(4.0)  # a minute of playing is four of the recording
    assert replay_notes(replay) == ["mark 20:27:22: bs 128"]
