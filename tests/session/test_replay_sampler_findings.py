"""Replay says what live said: a scenario sampled by the session loop and recorded, then played back through the
replay session, gives the same findings and verdict tick by tick, for every simulated scenario; so does the
report, from the recorded findings and from the samples alone."""

from __future__ import annotations

from pathlib import Path

import pytest

from gputui.diagnostics.account import MAX_GAP_INTERVALS
from gputui.diagnostics.engine import DiagnosticsEngine
from gputui.diagnostics.findings import format_evidence
from gputui.diagnostics.tick import Tick
from gputui.record.reader import load_recording
from gputui.record.writer import RecordingWriter
from gputui.report.summary import FindingSpan, FindingTracker, VerdictSpan, VerdictTimeline, build_report, judged_spans
from gputui.session.loop import SamplingLoop, SimulatedTime
from gputui.session.recording import record_ticks
from gputui.session.replay_sampler import ReplaySampler
from gputui.session.sampling import Sampler
from gputui.sources.playback import ReplaySource
from gputui.sources.sim.scenarios import BY_NAME, SCENARIOS, TOUR
from gputui.sources.sim.source import SimulatedSource

# Long enough for every scenario's findings to open (their windows confirm within ~30 s); the tour plays its first
# scenarios and the changes between them.
TICKS = 40
TOUR_TICKS = 100

Said = tuple[object, ...]


def live(scenario: str, path: Path, ticks: int) -> list[Tick]:
    """The scenario as `diagnose --demo --record` runs it: the session loop on simulated time, recording each tick."""
    pace = SimulatedTime()
    source = SimulatedSource(scenario, clock=pace.now)
    source.open()
    writer = RecordingWriter(path, interval_s=1.0, utc_offset_s=0)
    seen: list[Tick] = []
    sampler = Sampler(source, DiagnosticsEngine().update, sinks=(record_ticks(writer),))
    SamplingLoop(sampler.take, 1.0, seen.append, pace=pace).run(ticks)
    writer.close()
    return seen


def replayed(path: Path) -> list[Tick]:
    """The recording played as the monitor plays it, one poll a recorded second, through a new engine."""
    now = [0.0]
    source = ReplaySource(path, clock=lambda: now[0])
    source.open()
    sampler = ReplaySampler(source)
    ticks = [sampler.take()]
    while source.ticks_shown < source.tick_count:
        now[0] += 1.0
        ticks.append(sampler.take())
    return ticks


def said(tick: Tick) -> Said:
    """What a user reads of a tick: each finding (rule, cause, severity, GPUs and instances, words, evidence) and
    the verdict with its evidence."""
    findings = sorted(
        (
            f.rule,
            f.variant,
            f.severity.label,
            f.gpus,
            f.mig_instances,
            f.pids,
            f.title,
            f.advice,
            tuple(format_evidence(e) for e in f.evidence),
            f.started_at,
        )
        for f in tick.active
    )
    verdict = tick.verdict
    words = None if verdict is None else (verdict.line, tuple(format_evidence(e) for e in verdict.evidence))
    return tick.snapshot.timestamp, tuple(findings), words


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_replay_gives_the_findings_and_verdict_live_gave(tmp_path: Path, scenario: str) -> None:
    path = tmp_path / "run.jsonl.gz"
    ticks = TOUR_TICKS if scenario == TOUR else TICKS
    seen = live(scenario, path, ticks)
    assert [said(tick) for tick in replayed(path)] == [said(tick) for tick in seen]
    opened = {f.rule for tick in seen for f in tick.active}
    wanted = {f.rule for f in BY_NAME[scenario].findings} if scenario != TOUR else {"thermal_throttle"}
    assert opened >= wanted  # the comparison covered what the scenario is about


def live_spans(ticks: list[Tick]) -> tuple[list[FindingSpan], list[VerdictSpan]]:
    """The findings and verdicts of a live run as the report lays them out, each verdict over the readings it was
    judged on, as the account bills it (the recording's interval is 1 s)."""
    findings, verdicts = FindingTracker(), VerdictTimeline()
    for tick in ticks:
        findings.update(tick, tick.snapshot.timestamp)
        verdicts.update(tick.verdict, tick.snapshot.timestamp)
    timestamps = [tick.snapshot.timestamp for tick in ticks]
    return findings.spans(), judged_spans(verdicts.spans, timestamps, MAX_GAP_INTERVALS * 1.0)


# Per-process SM shares, the main process loading its data, a MIG instance shared, a container's limits.
@pytest.mark.parametrize("scenario", ["contention", "starved-cpu", "mig-shared-slice", "container"])
def test_the_report_gives_the_findings_live_gave(tmp_path: Path, scenario: str) -> None:
    path = tmp_path / "run.jsonl"
    findings, verdicts = live_spans(live(scenario, path, TICKS))
    recording = load_recording(path)
    report = build_report(recording)
    assert report.findings_origin == "recorded" and list(report.verdicts) == verdicts
    assert list(report.findings) == findings != []
    recording.events = []  # as a recording made without the engine: the report runs it on the samples
    recomputed = build_report(recording)
    assert recomputed.findings_origin == "recomputed"
    assert list(recomputed.findings) == findings and list(recomputed.verdicts) == verdicts
