"""The measure of the diagnostics: every simulated scenario raises what it must and nothing else.

Each scenario runs 30 simulated seconds on an injected clock. A scenario's expected rules must be open at
the end; no other rule may open at any time, except a named precursor that closes once the real problem
starts (the `thermal` GPU passes through the 5 C margin on its way past the slowdown threshold).
"""

from __future__ import annotations

import pytest

from gputui.diagnostics.engine import DiagnosticsEngine, DiagnosticsState
from gputui.sources.sim.scenarios import BY_NAME, SCENARIO_TABLE
from gputui.sources.sim.source import SimulatedSource
from tests.conftest import Clock

SECONDS = 30


def run_scenario(
    scenario: str, seconds: int = SECONDS, gpu_count: int | None = None
) -> tuple[DiagnosticsState, set[str]]:
    """The engine's state at the end, and every rule that opened at any tick."""
    clock = Clock()
    source = SimulatedSource(scenario=scenario, gpu_count=gpu_count, clock=clock)
    source.open()
    engine = DiagnosticsEngine()
    raised: set[str] = set()
    state = DiagnosticsState()
    for t in range(seconds + 1):
        clock.now = float(t)
        state = engine.update(source.sample())
        raised |= {f.rule for f in state.active}
    source.close()
    return state, raised


@pytest.mark.parametrize("scenario", sorted(BY_NAME))
def test_scenario_raises_what_it_must_and_nothing_else(scenario: str) -> None:
    state, raised = run_scenario(scenario)
    expected = BY_NAME[scenario].findings
    assert {(f.rule, f.severity.label, f.gpus, f.mig_instances) for f in state.active} == {
        (e.rule, e.severity, e.gpus, tuple((e.gpus[0], gi) for gi in e.instances)) for e in expected
    }
    assert raised <= {e.rule for e in expected}


def test_thermal_throttle_opens_within_a_default_diagnose_run() -> None:
    state, _ = run_scenario("thermal", seconds=10)
    assert [f.rule for f in state.active] == ["thermal_throttle"]


def test_healthy_and_idle_raise_nothing_at_all_with_eight_gpus() -> None:
    for scenario in ("healthy", "idle"):
        state, raised = run_scenario(scenario, gpu_count=8)
        assert raised == set() and state.closed == ()


def test_the_tour_shows_every_scenarios_findings() -> None:
    _, raised = run_scenario("tour", seconds=30 * len(SCENARIO_TABLE))
    assert raised == {e.rule for scenario in SCENARIO_TABLE for e in scenario.findings}
