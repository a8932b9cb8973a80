"""The measure of the diagnostics: every simulated scenario raises what it must and nothing else.

Each scenario runs 30 simulated seconds on an injected clock. A scenario's expected rules must be open at
the end; no other rule may open at any time, except a named precursor that closes once the real problem
starts (the `thermal` GPU passes through the 5 C margin on its way past the slowdown threshold).
"""

from __future__ import annotations

import pytest

from gputui.diagnostics.engine import DiagnosticsEngine, DiagnosticsState
from gputui.diagnostics.findings import Severity
from gputui.sources.scenarios import SCENARIOS
from gputui.sources.simulated import SimulatedSource

SECONDS = 30

# scenario -> {rule: (severity, GPUs of each finding)}
EXPECTED: dict[str, dict[str, tuple[Severity, set[tuple[int, ...]]]]] = {
    "healthy": {},
    "idle": {},
    "thermal": {"thermal_throttle": (Severity.CRITICAL, {(1,)})},
    "powercap": {"power_cap": (Severity.CRITICAL, {(0,), (1,), (2,), (3,)})},
    "hwslowdown": {
        "hw_slowdown": (Severity.CRITICAL, {(0,), (1,), (2,), (3,)}),
        "power_brake": (Severity.CRITICAL, {(0,), (1,), (2,), (3,)}),
    },
    "pcie": {"pcie_downgrade": (Severity.CRITICAL, {(1,)})},
    "vram": {"vram_pressure": (Severity.WARNING, {(0,), (1,), (2,), (3,)})},
    "starved-cpu": {"starvation_cpu": (Severity.WARNING, {(0,), (1,), (2,), (3,)})},
    "starved-io": {"starvation_io": (Severity.WARNING, {(0,), (1,), (2,), (3,)})},
    "contention": {"gpu_contention": (Severity.WARNING, {(0,)})},
    "imbalance": {"imbalance": (Severity.WARNING, {(0, 1, 2, 3)})},
    "mismatch": {"cuda_mismatch": (Severity.WARNING, {()})},
}


def run_scenario(
    scenario: str, seconds: int = SECONDS, gpu_count: int | None = None
) -> tuple[DiagnosticsState, set[str]]:
    """The engine's state at the end, and every rule that opened at any tick."""
    now = [0.0]
    source = SimulatedSource(scenario=scenario, gpu_count=gpu_count, clock=lambda: now[0])
    source.open()
    engine = DiagnosticsEngine()
    raised: set[str] = set()
    state = DiagnosticsState()
    for t in range(seconds + 1):
        now[0] = float(t)
        state = engine.update(source.sample())
        raised |= {f.rule for f in state.active}
    source.close()
    return state, raised


def test_every_scenario_but_the_tour_is_covered() -> None:
    assert set(EXPECTED) == set(SCENARIOS) - {"tour"}


@pytest.mark.parametrize("scenario", sorted(EXPECTED))
def test_scenario_raises_what_it_must_and_nothing_else(scenario: str) -> None:
    state, raised = run_scenario(scenario)
    expected = EXPECTED[scenario]
    found = {(f.rule, f.severity, f.gpus) for f in state.active}
    assert found == {(rule, sev, gpus) for rule, (sev, each) in expected.items() for gpus in each}
    assert raised <= set(expected)


def test_thermal_throttle_opens_within_a_default_diagnose_run() -> None:
    state, _ = run_scenario("thermal", seconds=10)
    assert [f.rule for f in state.active] == ["thermal_throttle"]


def test_healthy_and_idle_raise_nothing_at_all_with_eight_gpus() -> None:
    for scenario in ("healthy", "idle"):
        state, raised = run_scenario(scenario, gpu_count=8)
        assert raised == set() and state.closed == ()


def test_the_tour_shows_every_scenarios_findings() -> None:
    segments = len(SCENARIOS) - 1
    _, raised = run_scenario("tour", seconds=30 * segments)
    wanted = {rule for rules in EXPECTED.values() for rule in rules}
    assert raised == wanted
