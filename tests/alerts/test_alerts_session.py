"""The alerter as a sink of the one sampling loop: a scripted finding opens and closes and a real webhook gets
one "open" and one "closed" with the documented fields; a target that hangs does not slow the polls."""

from __future__ import annotations

from dataclasses import replace

from gputui.alerts.alerter import Alerter
from gputui.config import AlertsConfig
from gputui.diagnostics.engine import DiagnosticsEngine, DiagnosticsState
from gputui.diagnostics.findings import Evidence, Finding, Severity
from gputui.diagnostics.tick import Tick
from gputui.model import Snapshot
from gputui.session.diagnose import Diagnose
from gputui.session.loop import SamplingLoop, SimulatedTime
from gputui.session.sampling import Sampler
from gputui.sources.sim.source import SimulatedSource
from tests.alerts.receiver import hanging, receiving

HOT = Finding(
    "thermal_throttle",
    Severity.CRITICAL,
    "GPU 1: thermal throttling",
    "Improve the airflow.",
    gpus=(1,),
    evidence=(Evidence("GPU temperature", 91.0, "°C", "mean over 10 s", key="temperature_c"),),
)
FIELDS = {"host", "rule", "variant", "severity", "state", "gpus", "title", "advice", "evidence", "started_at"}
FIELDS |= {"ended_at", "verdict", "simulated"}


def scripted(open_from: int, open_until: int) -> Diagnose:
    """The real engine for the verdict, with HOT open from the poll `open_from` to `open_until` (0 the first)."""
    engine = DiagnosticsEngine()
    polls: list[float] = []

    def update(snapshot: Snapshot) -> DiagnosticsState:
        state = engine.update(snapshot)
        polls.append(snapshot.timestamp)
        n = len(polls) - 1
        if open_from <= n < open_until:
            hot = replace(HOT, started_at=polls[open_from], duration_s=snapshot.timestamp - polls[open_from])
            return replace(state, active=(hot,))
        if n == open_until:
            return replace(state, closed=(replace(HOT, started_at=polls[open_from], ended_at=snapshot.timestamp),))
        return state

    return update


def run(alerter: Alerter, polls: int, diagnose: Diagnose) -> list[Tick]:
    pace = SimulatedTime(start=1000.0)
    source = SimulatedSource(scenario="healthy", gpu_count=2, seed=0, clock=pace.now)
    source.open()
    ticks: list[Tick] = []
    sampler = Sampler(source, diagnose, sinks=(alerter.observe,))
    SamplingLoop(sampler.take, 1.0, ticks.append, pace=pace).run(polls=polls)
    return ticks


def test_a_webhook_gets_one_open_and_one_close_with_the_documented_fields() -> None:
    with receiving() as receiver:
        alerter = Alerter(AlertsConfig(webhook=receiver.url, min_interval_s=0), say=print)
        run(alerter, 20, scripted(3, 10))
        opened, closed = [body for _, body in receiver.wait_for(2)]
        alerter.close(timeout=5)
        assert len(receiver.posts) == 2
    assert set(opened) == FIELDS and set(closed) == FIELDS
    assert (opened["state"], opened["ended_at"], closed["state"]) == ("open", None, "closed")
    assert closed["started_at"] == opened["started_at"] and closed["ended_at"] - closed["started_at"] == 7.0
    assert opened["host"] == "sim-healthy" and opened["simulated"] is True
    assert (opened["rule"], opened["severity"], opened["gpus"], opened["title"]) == (
        "thermal_throttle",
        "critical",
        [1],
        "GPU 1: thermal throttling",
    )
    assert opened["evidence"] == [
        {"key": "temperature_c", "label": "GPU temperature", "value": 91.0, "unit": "°C", "window": "mean over 10 s"}
    ]
    assert set(opened["verdict"]) == {"class", "line"}


def test_polls_go_on_at_their_rate_while_the_target_hangs() -> None:
    said: list[str] = []
    with hanging() as url:
        alerter = Alerter(AlertsConfig(webhook=url, timeout_s=1.0, retries=0, min_interval_s=0), say=said.append)
        ticks = run(alerter, 30, scripted(3, 10))
        assert alerter.outbox is not None
        assert not alerter.outbox.drain(0)  # the open is still being tried: the polls did not wait for it
        start = ticks[0].snapshot.timestamp
        assert [t.snapshot.timestamp - start for t in ticks] == [float(i) for i in range(30)]
        assert alerter.outbox.drain(30)
        alerter.close()
    assert len(said) == 1 and "failed (timed out)" in said[0]


def test_the_bell_rings_once_per_opening_at_or_above_the_minimum_severity() -> None:
    rung: list[str] = []
    alerter = Alerter(AlertsConfig(bell=True, min_interval_s=0), say=print, bell=lambda: rung.append("ding"))
    run(alerter, 20, scripted(3, 10))
    assert rung == ["ding"]
    assert alerter.outbox is None
