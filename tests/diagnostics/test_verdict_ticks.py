"""The verdict and the findings agree at every moment, tick by tick, in every simulated scenario and the tour.

Two rules, checked on each tick of a headless run with an injected clock:
- no finding above info is open on a GPU while the verdict shown says nothing holds that GPU back (GPU-bound or
  underused with "nothing on this machine", idle's "no job");
- a verdict the readings plainly contradict gives way within the hold (+ one tick): idle while each of its
  GPUs reads busy, or busy (GPU-bound, underused) while each has read idle for the settling time (how the
  verdict tells a job that ended from a pause).
"""

from __future__ import annotations

import pytest

from gputui.diagnostics.engine import DiagnosticsEngine
from gputui.diagnostics.findings import Finding, Severity
from gputui.diagnostics.verdict import Verdict
from gputui.sources.sim.scenarios import BY_NAME, TOUR
from gputui.sources.sim.source import TOUR_SCENARIOS, TOUR_SEGMENT_S, SimulatedSource
from tests.conftest import Clock

SCENARIO_S = 60  # past every scenario's phases (heating, a job that ends, a finding that clears)
BUSY_PCT = 90.0


def _parts(verdict: Verdict) -> tuple[Verdict, ...]:
    return verdict.groups or (verdict,)


def _says_nothing_holds_back(part: Verdict) -> bool:
    """What the user reads: "nothing on this machine" holds them back / explains the waiting, or "no job" with
    nothing open named beside it."""
    return "nothing on this machine" in part.summary or (part.cls == "idle" and "open here" not in part.summary)


def _on(finding: Finding, part: Verdict) -> bool:
    """Whether `finding` concerns a GPU (or MIG instance) that `part` of the verdict speaks for."""
    if not finding.gpus:
        return True  # the whole machine
    split = {gpu for gpu, _ in part.mig_instances}
    if set(finding.gpus) & (set(part.gpus) - split):
        return True
    if finding.mig_instances:
        return bool(set(finding.mig_instances) & set(part.mig_instances))
    return bool(set(finding.gpus) & split)  # the whole GPU's heat, power... concern each of its instances


class Readings:
    """What the readings plainly say of each whole GPU: busy now, or idle for the settling time."""

    def __init__(self, idle_pct: float, settle_s: float) -> None:
        self.idle_pct, self.settle_s = idle_pct, settle_s
        self.busy: set[int] = set()
        self.idle_since: dict[int, float] = {}

    def read(self, now: float, utils: dict[int, float | None]) -> None:
        self.busy = {g for g, u in utils.items() if u is not None and u >= BUSY_PCT}
        for g, u in utils.items():
            if u is None or u >= self.idle_pct:
                self.idle_since.pop(g, None)
            else:
                self.idle_since.setdefault(g, now)

    def contradict(self, part: Verdict, now: float) -> bool:
        if part.mig_instances or not part.gpus:  # a MIG instance's activity is not its GPU's
            return False
        if part.cls == "idle":
            return set(part.gpus) <= self.busy
        idle = all(now - self.idle_since.get(g, now + 1) >= self.settle_s for g in part.gpus)
        return part.cls in ("gpu_bound", "underused") and idle


def _run(scenario: str, seconds: float, step_s: float = 1.0, gpu_count: int | None = None) -> None:
    clock = Clock()
    source = SimulatedSource(scenario=scenario, gpu_count=gpu_count, clock=clock)
    source.open()
    engine = DiagnosticsEngine()
    hold_s, th = engine.config.open_after_s, engine.config.thresholds
    readings = Readings(th.idle_util_pct, th.verdict_settle_s)
    contradicted_since: float | None = None
    try:
        for tick in range(int(seconds / step_s) + 1):
            clock.now = tick * step_s
            snapshot = source.sample()
            state = engine.update(snapshot)
            readings.read(clock.now, {g.index: g.utilization_gpu_pct for g in snapshot.gpus})
            verdict = state.verdict
            assert verdict is not None
            where = f"{scenario} at {clock.now:g} s: {verdict.line!r}"
            for finding in state.active:
                if finding.severity > Severity.INFO:
                    for part in _parts(verdict):
                        assert not (_says_nothing_holds_back(part) and _on(finding, part)), (where, finding.title)
            if any(readings.contradict(part, clock.now) for part in _parts(verdict)):
                contradicted_since = clock.now if contradicted_since is None else contradicted_since
                assert clock.now - contradicted_since <= hold_s, where
            else:
                contradicted_since = None
    finally:
        source.close()


@pytest.mark.parametrize("scenario", sorted(BY_NAME))
def test_each_scenario_s_verdict_agrees_with_its_findings_and_readings_at_every_tick(scenario: str) -> None:
    _run(scenario, SCENARIO_S)


@pytest.mark.parametrize("step_s", [1.0, 0.5])
def test_the_tour_s_verdict_agrees_with_its_findings_and_readings_at_every_tick(step_s: float) -> None:
    """Across each switch of scenario too: idle to thermal, a job that ends, findings that outlive their scene."""
    _run(TOUR, TOUR_SEGMENT_S * len(TOUR_SCENARIOS), step_s)


def test_eight_thermal_gpus_verdict_agrees_with_their_findings_at_every_tick() -> None:
    """The issue's 80x24 case: `CRIT GPU 1: thermal throttling` under "nothing on this machine holds them back"."""
    _run("thermal", SCENARIO_S, 0.5, gpu_count=8)
