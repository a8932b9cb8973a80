"""The monitor's alerts: the bell when an alert opens (rung on the UI thread) and a failing target as a notice
under the header, once, its secret hidden; the [diagnostics] config reaches the monitor's engine."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gputui.config import AlertsConfig, Config
from gputui.diagnostics.settings import DiagnosticsConfig
from gputui.session.builder import SessionOptions, open_session
from gputui.sources.sim.source import SimulatedSource
from gputui.ui.app import GpuTuiApp
from tests.alerts.receiver import receiving, refused_url
from tests.ui.monitor_helpers import FIXED_NOW, run_ticks

if TYPE_CHECKING:
    from conftest import Clock


async def test_an_opening_rings_the_bell_and_a_failing_target_is_one_notice(clock: Clock) -> None:
    source = SimulatedSource(scenario="thermal", gpu_count=2, seed=0, clock=clock)
    alerts = AlertsConfig(webhook=refused_url("/services/T0SECRET"), bell=True, retries=0, min_interval_s=0)
    config = Config(diagnostics=DiagnosticsConfig(open_after_s=0), alerts=alerts)
    with open_session(SessionOptions(source=source, alerts=True), config) as session:
        app = GpuTuiApp(session, auto_sample=False, now=lambda: FIXED_NOW)  # the alerter says and rings through it
        rung: list[str] = []
        app.bell = lambda: rung.append("ding")  # type: ignore[method-assign]
        alerter = session.alerter
        async with app.run_test(size=(120, 40)) as pilot:
            await run_ticks(app, clock, 5)
            assert alerter is not None and alerter.outbox is not None and alerter.outbox.drain(20)
            for _ in range(100):  # the delivery thread's notice and the sampler's bell arrive as messages
                if rung and app.notices.rows():
                    break
                await pilot.pause()
            notices = [n.text for n in app.notices.rows()]
    assert rung
    assert len([text for text in notices if text.startswith("alerts: webhook http://127.0.0.1:")]) == 1, notices
    assert not any("T0SECRET" in text for text in notices)
    assert app.engine.config.open_after_s == 0


async def test_the_monitor_posts_one_open_and_one_close_as_the_tour_heats_a_gpu_and_moves_on(clock: Clock) -> None:
    """The tour's thermal stretch (60-90 s) opens thermal_throttle on GPU 1, and it closes by the stretch's end: a
    real webhook gets the open, then the close, from the monitor's own sampling."""
    source = SimulatedSource(scenario="tour", gpu_count=2, seed=0, clock=clock)
    with receiving() as receiver:
        config = Config(alerts=AlertsConfig(webhook=receiver.url, min_interval_s=0))
        with open_session(SessionOptions(source=source, alerts=True), config) as session:
            app = GpuTuiApp(session, auto_sample=False, now=lambda: FIXED_NOW)
            async with app.run_test(size=(120, 40)):
                await run_ticks(app, clock, 110)
                assert app.latest is not None
                start = app.latest.snapshot.timestamp - 109  # the tour's first reading
            alerter = session.alerter
            assert alerter is not None and alerter.outbox is not None and alerter.outbox.drain(20)
    hot = [body for body in receiver.bodies if body["rule"] == "thermal_throttle"]
    assert [(body["state"], body["gpus"]) for body in hot] == [("open", [1]), ("closed", [1])]
    opened, closed = hot
    assert closed["started_at"] == opened["started_at"]
    assert 60 <= opened["started_at"] - start < closed["ended_at"] - start <= 95
