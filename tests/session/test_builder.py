"""The session builder: it opens the source, the recording, the job stacks and the alerter in that order and closes
them the other way round, in one place, also when opening one of them fails or what runs in the session raises; a
loop still inside a poll closes the source when that poll returns, never beneath it."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gputui.alerts.alerter import Alerter
from gputui.cli import main
from gputui.config import AlertsConfig, Config
from gputui.diagnostics.tick import Tick
from gputui.model import Snapshot, SystemInfo
from gputui.record.format import RecordingError
from gputui.record.reader import load_recording
from gputui.record.writer import RecordingWriter
from gputui.session.builder import RecordTarget, SessionOptions, StoreTarget, open_session
from gputui.session.replay_sampler import ReplaySampler
from gputui.session.sampling import Sampler
from gputui.session.source_choice import ReplayChoice, SourceChoice, WithTorchCuda
from gputui.session.stacks import JobStacks
from gputui.sources.sim.job import JobSource
from gputui.store.errors import StoreLocked
from gputui.store.reader import Store
from gputui.store.writer import StoreWriter
from tests.record.recdata import T0, write_recording
from tests.snapshots import gpu, snapshot, system_info

WAIT_S = 10.0  # a bound on what the tests wait for (a thread to end), never reached when all is well


class LiveSource:
    """This machine's driver, as far as the session can tell: its readings say `nvml`; what happens to it is logged."""

    def __init__(self, log: list[str], *, hold: threading.Event | None = None) -> None:
        self.log = log
        self.hold = hold  # set: sample() returns; clear: it waits, as a driver call that hangs
        self.sampling = threading.Event()
        self.closing = threading.Event()

    def open(self) -> SystemInfo:
        self.log.append("source opened")
        return system_info()

    def sample(self) -> Snapshot:
        self.sampling.set()
        if self.hold is not None:
            self.hold.wait(WAIT_S)
        return snapshot(1.0, [gpu(0)])

    def close(self) -> None:
        self.log.append("source closed")
        self.closing.set()

    @property
    def closed(self) -> bool:
        return self.closing.is_set()


@pytest.fixture
def log(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """What the session opens and closes, in order: the source logs itself, the other parts' close() is watched."""
    events: list[str] = []

    def watched(cls: type[Any], name: str) -> None:
        original: Callable[..., None] = cls.close

        def close(self: object, *args: object, **kwargs: object) -> None:
            events.append(f"{name} closed")
            original(self, *args, **kwargs)

        monkeypatch.setattr(cls, "close", close)

    watched(RecordingWriter, "recorder")
    watched(JobStacks, "stacks")
    watched(Alerter, "alerter")
    return events


ALERTING = Config(alerts=AlertsConfig(command="true"))
# The lab's trace of a job that is this test's process, and has taken no step.
JOB_TRACE = {"format": "gputui-job-trace", "version": 1, "pid": os.getpid(), "gpu_busy_s": 0.0, "steps": 0}


def test_the_parts_open_in_order_and_close_the_other_way_round(tmp_path: Path, log: list[str]) -> None:
    source = LiveSource(log)
    options = SessionOptions(
        source=source, record=RecordTarget(tmp_path / "r.jsonl"), stacks=True, alerts=True, alert_flush_s=0
    )
    with open_session(options, ALERTING) as session:
        assert log == ["source opened"]
        assert session.recorder is not None and session.stacks is not None and session.alerter is not None
        assert isinstance(session.sampler, Sampler) and session.sampler.diagnoses
        tick = session.sampler.take()
        assert tick.verdict is not None  # through the diagnostics, and on to the recording and the alerter
    assert log == ["source opened", "alerter closed", "stacks closed", "recorder closed", "source closed"]
    assert len(load_recording(tmp_path / "r.jsonl").ticks) == 1


def test_a_recorder_that_cannot_open_closes_the_source_already_open(tmp_path: Path, log: list[str]) -> None:
    taken = tmp_path / "r.jsonl"
    taken.write_text("keep me\n")
    source = LiveSource(log)
    options = SessionOptions(source=source, record=RecordTarget(taken), stacks=True, alerts=True)
    with pytest.raises(RecordingError, match="already exists"), open_session(options, ALERTING):
        raise AssertionError("the session opened")
    assert log == ["source opened", "source closed"]  # nothing after the recorder was made
    assert taken.read_text() == "keep me\n"


def test_a_store_target_records_the_session_into_a_store(tmp_path: Path) -> None:
    options = SessionOptions(source=LiveSource([]), record=StoreTarget(tmp_path / "store"))
    with open_session(options, Config()) as session:
        assert isinstance(session.recorder, StoreWriter)
        session.sampler.take()
    assert session.recorder.stopped is False and session.recorder.ticks_written == 1  # the frame ended at close
    assert len(Store(tmp_path / "store").read(0.0, 10.0).ticks) == 1


def test_a_store_another_recorder_holds_refuses_the_session_and_closes_the_source(
    tmp_path: Path, log: list[str]
) -> None:
    holder = StoreWriter(tmp_path, interval_s=1.0)
    try:
        options = SessionOptions(source=LiveSource(log), record=StoreTarget(tmp_path))
        with pytest.raises(StoreLocked, match=f"PID {os.getpid()}"), open_session(options, ALERTING):
            raise AssertionError("the session opened")
    finally:
        holder.close()
    assert log == ["source opened", "source closed"]


def test_what_raises_in_the_session_still_closes_every_part(tmp_path: Path, log: list[str]) -> None:
    source = LiveSource(log)
    options = SessionOptions(source=source, record=RecordTarget(tmp_path / "r.jsonl"), stacks=True, alerts=True)
    with pytest.raises(RuntimeError, match="the app broke"), open_session(options, ALERTING) as session:
        session.sampler.take()
        raise RuntimeError("the app broke")
    assert log == ["source opened", "alerter closed", "stacks closed", "recorder closed", "source closed"]
    assert session.stacks is not None and session.stacks.request(os.getpid()) == "stack sampling has ended"
    assert len(load_recording(tmp_path / "r.jsonl").ticks) == 1  # ended properly


def test_a_monitor_that_raises_still_closes_its_recording_and_stacks(
    tmp_path: Path, log: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The monitor on the lab's machine (its job is a real process here, so its stacks are read) with --record;
    the app raises as it runs."""
    from gputui.commands import monitor
    from gputui.ui.app import GpuTuiApp

    trace = tmp_path / "job.json"
    trace.write_text(json.dumps(JOB_TRACE))

    def broken(app: GpuTuiApp) -> None:
        raise RuntimeError("the app broke")

    monkeypatch.setattr(GpuTuiApp, "run", broken)
    monkeypatch.setattr(monitor, "settle_gc", lambda: None)
    monkeypatch.setenv("HOME", str(tmp_path))
    with pytest.raises(RuntimeError, match="the app broke"):
        main(["--demo-job", str(trace), "--record", str(tmp_path / "r.jsonl")])
    assert log == ["stacks closed", "recorder closed"]


def test_a_loop_inside_a_poll_closes_the_source_when_the_poll_returns(log: list[str]) -> None:
    hold = threading.Event()
    source = LiveSource(log, hold=hold)
    delivered: list[Tick] = []
    with open_session(SessionOptions(source=source), Config()) as session:
        loop = session.sampling_loop(delivered.append)
        loop.start()
        assert source.sampling.wait(WAIT_S)  # in a poll that does not return (the stop below waits 2 s for it)
    assert not source.closed and not loop.ended  # not closed beneath the call in progress
    hold.set()
    assert source.closing.wait(WAIT_S)  # by the loop's thread, once its poll returned
    assert loop.ended and log.count("source closed") == 1
    assert delivered == []  # the poll that ended after the stop is dropped


def test_a_loop_that_ended_has_closed_the_source_once(log: list[str]) -> None:
    source = LiveSource(log)
    with open_session(SessionOptions(source=source), Config()) as session:
        loop = session.sampling_loop(lambda tick: None)
        loop.start()
        assert source.sampling.wait(WAIT_S)
        assert loop.stop()
        assert source.closed  # by the loop, as it ended
    assert log == ["source opened", "source closed"]


def test_the_alerters_words_go_to_the_log_until_a_front_end_attaches_its_own(
    caplog: pytest.LogCaptureFixture, log: list[str]
) -> None:
    with open_session(SessionOptions(source=LiveSource(log), alerts=True), ALERTING) as session:
        session.voice.say("alerts: command true failed")
        said: list[str] = []
        rung: list[str] = []
        session.alerts_through(say=said.append, bell=lambda: rung.append("ding"))
        session.voice.say("alerts: command true works again")
        session.voice.ring()
    assert "alerts: command true failed" in caplog.text and "works again" not in caplog.text
    assert said == ["alerts: command true works again"] and rung == ["ding"]


def test_no_alerter_without_a_target_nor_where_the_front_end_does_not_alert(log: list[str]) -> None:
    with open_session(SessionOptions(source=LiveSource(log), alerts=True), Config()) as session:
        assert session.alerter is None
    with open_session(SessionOptions(source=LiveSource(log)), ALERTING) as session:
        assert session.alerter is None


def test_readings_only_and_the_local_torch(log: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    from gputui.sources.host import torch_cuda

    monkeypatch.setattr(torch_cuda, "torch_cuda_version", lambda: "13.0")
    with open_session(SessionOptions(source=LiveSource(log), diagnose=False, torch_cuda=True), Config()) as session:
        assert isinstance(session.source, WithTorchCuda)  # a live machine: its readings carry torch's CUDA
        tick = session.sampler.take()
        assert tick.verdict is None and tick.active == ()
        assert tick.snapshot.system.torch_cuda_version == "13.0"
    options = SessionOptions(source=SourceChoice(demo="healthy", demo_gpus=1), torch_cuda=True, stacks=True)
    with open_session(options, Config()) as session:
        assert not isinstance(session.source, WithTorchCuda) and session.stacks is None  # made-up processes


def test_a_replay_is_played_through_its_own_sampler(tmp_path: Path) -> None:
    ticks = [snapshot(T0 + n, [gpu(0)]) for n in range(5)]
    recording = load_recording(write_recording(tmp_path / "r.jsonl", ticks))
    with open_session(SessionOptions(source=ReplayChoice(recording, speed=4.0), stacks=True), Config()) as session:
        assert isinstance(session.sampler, ReplaySampler) and session.replay is session.source
        assert session.replay.speed == 4.0 and session.stacks is None


def test_the_simulated_machine_runs_on_simulated_time_where_asked() -> None:
    choice = SourceChoice(demo="healthy", demo_gpus=1, simulated_time=True)
    with open_session(SessionOptions(source=choice), Config()) as session:
        assert session.pace is not None
        first = session.sampler.take().snapshot.timestamp
        session.pace.wait_until(session.pace.now() + 60.0)  # at once
        assert session.sampler.take().snapshot.timestamp == first + 60.0


def test_the_lab_machine_reads_its_jobs_stacks(tmp_path: Path) -> None:
    trace = tmp_path / "job.json"
    trace.write_text(json.dumps(JOB_TRACE))
    with open_session(SessionOptions(source=SourceChoice(demo_job=trace), stacks=True), Config()) as session:
        assert isinstance(session.source, JobSource) and session.stacks is not None
