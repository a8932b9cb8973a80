"""Replayed samples give the diagnostics engine what live ones gave it: the same findings at the same times."""

from __future__ import annotations

from pathlib import Path

import pytest

from gputui.diagnostics.engine import DiagnosticsEngine
from gputui.model import Snapshot
from gputui.record.writer import RecordingWriter
from gputui.sources.replay import ReplaySource
from gputui.sources.sim.source import SimulatedSource


def _timeline(snapshots: list[Snapshot]) -> list[tuple[float, tuple[tuple[str, tuple[int, ...], str], ...]]]:
    engine = DiagnosticsEngine()
    out = []
    for snap in snapshots:
        state = engine.update(snap)
        out.append((snap.timestamp, tuple(sorted((f.rule, f.gpus, f.severity.label) for f in state.active))))
    return out


@pytest.mark.parametrize("scenario", ["thermal", "starved-cpu", "pcie"])
def test_replay_gives_the_same_findings_as_live(tmp_path: Path, scenario: str) -> None:
    clock = [0.0]
    live_source = SimulatedSource(scenario, gpu_count=2, clock=lambda: clock[0])
    live_source.open()
    path = tmp_path / "s.jsonl.gz"
    writer = RecordingWriter(path, interval_s=1.0)
    live: list[Snapshot] = []
    for i in range(90):
        clock[0] = float(i)
        snap = live_source.sample()
        live.append(snap)
        writer.put(snap)
    writer.close()

    replay = ReplaySource(path)
    replay.open()
    replay.pause()
    replayed = list(replay.advance().ticks)
    while not replay.at_end:
        replayed.extend(replay.step().ticks)

    expected = _timeline(live)
    assert _timeline(replayed) == expected
    assert any(findings for _, findings in expected)  # the scenario did raise something to compare
