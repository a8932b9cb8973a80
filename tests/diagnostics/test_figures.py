"""Each figure once (issue 38): the verdict, the findings under it and the alert state one clock figure, worked
out once per tick (diagnostics/figures.py), and two findings about the same CPUs advise one num_workers."""

from __future__ import annotations

import re

from gputui.alerts.message import alert_message
from gputui.diagnostics.engine import DiagnosticsEngine, DiagnosticsState
from gputui.diagnostics.figures import figures_of
from gputui.diagnostics.findings import Evidence, Finding
from gputui.diagnostics.rules.base import Window
from gputui.diagnostics.rules.cpus import workers_that_fit
from gputui.diagnostics.settings import DiagnosticsConfig
from gputui.diagnostics.verdict import Verdict
from gputui.formatting import fmt_pct
from gputui.sources.sim.source import SimulatedSource
from tests.conftest import Clock


def _ticks(scenario: str, seconds: int) -> list[tuple[DiagnosticsState, Window]]:
    """The engine's state after each second of a simulated scenario, as `diagnose --seconds` runs it, and the window
    its rules read then (the figures module's figures are those of that window)."""
    clock = Clock()
    source = SimulatedSource(scenario=scenario, clock=clock)
    source.open()
    engine = DiagnosticsEngine()
    window_s = engine.config.thresholds.window_s
    ticks = []
    for t in range(seconds + 1):
        clock.now = float(t)
        state = engine.update(source.sample())
        ticks.append((state, Window(engine.history.window(window_s), window_s)))
    source.close()
    return ticks


def _throttled(verdict: Verdict | None) -> Verdict | None:
    groups = () if verdict is None else (verdict.groups or (verdict,))
    return next((g for g in groups if g.cls == "throttled"), None)


def _evidence(items: tuple[Evidence, ...], key: str) -> tuple[float | str | None, str]:
    found = [(e.value, e.window) for e in items if e.key == key]
    assert len(found) == 1, key
    return found[0]


def _lost_in_words(verdict: Verdict) -> str:
    """The `N%` of 'N% of the clock lost' in the verdict's sentence."""
    match = re.search(r"(\d+%) of the clock lost, mean over \d+ s", verdict.short or verdict.summary)
    assert match is not None, verdict.summary
    return match.group(1)


def test_the_thermal_verdict_and_its_finding_state_the_same_clock_figure_on_every_tick() -> None:
    """`diagnose --demo thermal --seconds 10`: the verdict said `6% of the clock lost` while the finding under it
    said `SM clock 1561 MHz | max SM clock 1980 MHz` (21% lost). Now both state the clock's mean share of its max
    over the same window (evidence key `clock_of_max`), each tick, and the clock now says it is a moment."""
    compared = 0
    for state, read in _ticks("thermal", 12):
        hot = next((f for f in state.active if f.rule == "thermal_throttle"), None)
        group = _throttled(state.verdict)
        if hot is None or group is None:
            continue
        assert group.gpus == hot.gpus == (1,)
        share, window = _evidence(hot.evidence, "clock_of_max")
        assert (share, window) == _evidence(group.evidence, "clock_of_max")
        assert window.startswith("mean over ")
        assert isinstance(share, float)
        assert _lost_in_words(group) == fmt_pct(100.0 - share)
        assert _evidence(hot.evidence, "sm_clock")[1] == "latest reading"
        figures = figures_of(read, 1)
        assert figures.clock_of_max_pct is not None
        assert round(figures.clock_of_max_pct, 1) == share
        compared += 1
    assert compared >= 3  # the finding opened and the verdict named it on several ticks


def test_the_alert_repeats_the_verdicts_clock_figure() -> None:
    """The webhook's message carried the verdict's `6%` beside evidence that said 21%: now one figure."""
    state, _ = _ticks("thermal", 10)[-1]
    hot: Finding = next(f for f in state.active if f.rule == "thermal_throttle")
    message = alert_message(hot, "open", "gpu01", state.verdict)
    [share] = [e["value"] for e in message["evidence"] if e["key"] == "clock_of_max"]
    assert f"{fmt_pct(100.0 - share)} of the clock lost" in message["verdict"]["line"]


def _workers_advised(finding: Finding) -> set[str]:
    """Every num_workers number a finding's advice gives."""
    return set(re.findall(r"num_workers\D{0,12}?(\d+)", finding.advice)) | set(
        re.findall(r"about (\d+) per job", finding.advice)
    )


def test_the_container_findings_advise_one_num_workers() -> None:
    """`--demo container`: `cpu_throttled` advised `num_workers <= 7` (the quota less one, as if one job ran) while
    `workers_oversubscribed` said "about 1 per job here" (four ranks share the 8 CPUs). One number now, the workers
    that fit here, rules/cpus.py's one figure."""
    state, read = _ticks("container", 12)[-1]
    advising = {f.rule: _workers_advised(f) for f in state.active if _workers_advised(f)}
    assert {"cpu_throttled", "workers_oversubscribed"} <= set(advising)
    assert set().union(*advising.values()) == {"1"}
    assert workers_that_fit(read, DiagnosticsConfig().thresholds) == 1
