"""A simulated session's ticks, findings and verdicts on an injected clock, for writing the same session to a
recording and to a store."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from gputui.diagnostics.engine import DiagnosticsEngine
from gputui.diagnostics.findings import Finding
from gputui.diagnostics.verdict import Verdict
from gputui.model import Snapshot
from gputui.sources.sim.source import FIXED_EPOCH, SimulatedSource
from gputui.store.writer import StoreWriter

T0 = FIXED_EPOCH  # where the simulated source on an injected clock starts


@dataclass(frozen=True, slots=True)
class Step:
    snapshot: Snapshot
    active: tuple[Finding, ...]
    verdict: Verdict | None


def simulate(scenario: str = "tour", *, gpus: int = 2, seconds: int = 60, t0: float = T0) -> Iterator[Step]:
    """One step a second from `t0` on, with the engine's findings and verdict after each."""
    now = [0.0]
    source = SimulatedSource(scenario, gpu_count=gpus, clock=lambda: now[0])
    source.open()
    engine = DiagnosticsEngine()
    try:
        for i in range(seconds):
            now[0] = t0 - FIXED_EPOCH + i
            snap = source.sample()
            state = engine.update(snap)
            yield Step(snap, tuple(state.active), state.verdict)
    finally:
        source.close()


def write_store(directory: Path, steps: list[Step], **kwargs: object) -> StoreWriter:
    """The steps written into a store at 1 s, flushed; the writer still open (close it)."""
    writer = StoreWriter(directory, interval_s=1.0, **kwargs)  # type: ignore[arg-type]
    for step in steps:
        writer.record(step.snapshot, step.active, step.verdict)
    writer.flush()
    return writer
