"""One poll: the source read, the diagnostics run, the tick handed to the sinks (the recording among them)."""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path

import pytest

from gputui.diagnostics.engine import DiagnosticsEngine, DiagnosticsState
from gputui.diagnostics.findings import Finding, Severity
from gputui.diagnostics.tick import Tick
from gputui.model import Snapshot
from gputui.record.reader import load_recording
from gputui.record.writer import RecordingWriter
from gputui.session.diagnose import once_per_reading, tolerant
from gputui.session.loop import SamplingLoop, SimulatedTime
from gputui.session.recording import record_ticks
from gputui.session.sampling import Sampler
from gputui.sources.sim.source import SimulatedSource

HOT = Finding(rule="thermal_throttle", severity=Severity.CRITICAL, title="", advice="", gpus=(1,))


def simulated(scenario: str, pace: SimulatedTime) -> SimulatedSource:
    source = SimulatedSource(scenario=scenario, gpu_count=2, clock=pace.now)
    source.open()
    return source


def test_each_sink_gets_the_diagnosed_tick_that_take_returns() -> None:
    pace = SimulatedTime()
    seen: list[tuple[str, Tick]] = []
    sampler = Sampler(
        simulated("healthy", pace),
        lambda snapshot: DiagnosticsState(active=(HOT,)),
        sinks=(lambda tick: seen.append(("first", tick)), lambda tick: seen.append(("second", tick))),
    )
    tick = sampler.take()
    assert tick.active == (HOT,)
    assert seen == [("first", tick), ("second", tick)]


def test_without_diagnostics_a_tick_is_the_reading_alone() -> None:
    tick = Sampler(simulated("thermal", SimulatedTime())).take()
    assert (tick.active, tick.closed, tick.verdict) == ((), (), None)
    assert len(tick.snapshot.gpus) == 2


def test_the_recording_is_a_sink_of_the_loop(tmp_path: Path) -> None:
    """Thirty simulated seconds of a throttling GPU through the loop: every tick and the finding are written."""
    pace = SimulatedTime()
    writer = RecordingWriter(tmp_path / "run.jsonl", interval_s=1.0)
    sampler = Sampler(simulated("thermal", pace), DiagnosticsEngine().update, sinks=(record_ticks(writer),))
    last: list[Tick] = []
    SamplingLoop(sampler.take, 1.0, last.append, pace=pace).run(polls=30)
    writer.close()
    recording = load_recording(tmp_path / "run.jsonl")
    assert len(recording.ticks) == 30
    assert recording.duration_s == 29.0
    opened = [e.data["finding"]["rule"] for e in recording.events if e.kind == "finding_opened"]
    assert "thermal_throttle" in opened
    assert {f.rule for f in last[-1].active} >= {"thermal_throttle"}


def test_a_broken_rule_leaves_the_reading_without_findings_and_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    def broken(snapshot: Snapshot) -> DiagnosticsState:
        raise ZeroDivisionError("a rule broke")

    with caplog.at_level(logging.ERROR):
        tick = Sampler(simulated("healthy", SimulatedTime()), tolerant(broken, "gpu01:9400")).take()
    assert tick.active == () and tick.snapshot.gpus
    assert "the diagnostics failed on gpu01:9400" in caplog.text


def test_a_reading_seen_again_is_judged_once() -> None:
    judged: list[float] = []

    def diagnose(snapshot: Snapshot) -> DiagnosticsState:
        judged.append(snapshot.timestamp)
        return DiagnosticsState(active=(replace(HOT, started_at=snapshot.timestamp),))

    once = once_per_reading(diagnose)
    first = Sampler(simulated("healthy", SimulatedTime())).take().snapshot
    later = replace(first, timestamp=first.timestamp + 1)
    states = [once(first), once(first), once(later), once(later)]
    assert judged == [first.timestamp, later.timestamp]
    assert states[0] is states[1] and states[2] is states[3] and states[1] != states[2]


def test_closed_findings_are_told_apart_by_instance_and_by_start() -> None:
    """A health check and a fleet's history list each closed finding once: two MIG instances' findings of one
    rule that open together are two; the same finding seen closed again is one; a later reopening is another."""
    from gputui.diagnostics.findings import Finding, Severity
    from gputui.session.diagnose import ClosedFindings

    def closed(gi: int, start: float, severity: Severity = Severity.WARNING) -> Finding:
        return Finding(
            "gpu_contention", severity, "t", "a", gpus=(0,), mig_instances=((0, gi),), started_at=start, ended_at=9.0
        )

    still_open = Finding("thermal_throttle", Severity.CRITICAL, "t", "a", gpus=(1,))
    ended = ClosedFindings()
    ended.add((closed(1, 1.0), closed(2, 1.0), still_open))
    ended.add((closed(1, 1.0), closed(1, 5.0, Severity.CRITICAL)))
    assert ended.worst_first() == (closed(1, 5.0, Severity.CRITICAL), closed(1, 1.0), closed(2, 1.0))
