"""Each figure once (issue 38): two findings about the same CPUs advise one num_workers."""

from __future__ import annotations

import re

from gputui.diagnostics.engine import DiagnosticsEngine, DiagnosticsState
from gputui.diagnostics.findings import Finding
from gputui.sources.sim.source import SimulatedSource
from tests.conftest import Clock


def _ticks(scenario: str, seconds: int) -> list[DiagnosticsState]:
    """The engine's state after each second of a simulated scenario, as `diagnose --seconds` runs it."""
    clock = Clock()
    source = SimulatedSource(scenario=scenario, clock=clock)
    source.open()
    engine = DiagnosticsEngine()
    states = []
    for t in range(seconds + 1):
        clock.now = float(t)
        states.append(engine.update(source.sample()))
    source.close()
    return states


def _workers_advised(finding: Finding) -> set[str]:
    """Every num_workers number a finding's advice gives."""
    return set(re.findall(r"num_workers\D{0,12}?(\d+)", finding.advice)) | set(
        re.findall(r"about (\d+) per job", finding.advice)
    )


def test_the_container_findings_advise_one_num_workers() -> None:
    """`--demo container`: `cpu_throttled` advised `num_workers <= 7` (the quota less one, as if one job ran) while
    `workers_oversubscribed` said "about 1 per job here" (four ranks share the 8 CPUs). One number now, the workers
    that fit here."""
    state = _ticks("container", 12)[-1]
    advising = {f.rule: _workers_advised(f) for f in state.active if _workers_advised(f)}
    assert {"cpu_throttled", "workers_oversubscribed"} <= set(advising)
    assert set().union(*advising.values()) == {"1"}
