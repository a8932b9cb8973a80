"""PrometheusPoller: hosts found, kept stale when Prometheus fails, vanished hosts kept unreachable."""

from __future__ import annotations

from gputui.session.fleet_poll import VANISHED, PrometheusPoller
from gputui.sources.prometheus.client import PrometheusClient
from tests.sources.prometheus.canned import dcgm_series, gputui_series
from tests.sources.prometheus.prom_stub import Behaviour, canned_prometheus
from tests.ui.monitor_helpers import until


class Clock:
    def __init__(self) -> None:
        self.now = 1_767_225_700.0

    def __call__(self) -> float:
        return self.now


def test_the_poller_keeps_the_last_data_when_prometheus_fails_and_tracks_hosts() -> None:
    clock = Clock()
    behaviour = Behaviour(series=dcgm_series())
    with canned_prometheus(behaviour) as url:
        poller = PrometheusPoller(PrometheusClient(url, timeout=1, env={}), clock=clock, warm_up_s=30, step_s=15)
        (node7,) = poller.poll()
        assert behaviour.paths[0] == "/api/v1/query_range"  # the warm-up read history first
        assert behaviour.paths[-1] == "/api/v1/query"
        assert (node7.name, node7.source, node7.reachable, node7.stale) == ("node7", "dcgm-exporter", True, False)
        assert node7.verdict is not None  # judged by its own engine
        assert node7.url == "//10.0.0.7:9400"

        clock.now += 5
        behaviour.status, behaviour.body = 503, b'{"status":"error","errorType":"unavailable","error":"TSDB closed"}'
        (stale,) = poller.poll()
        assert stale.snapshot == node7.snapshot and stale.stale
        assert stale.error is not None and "unavailable: TSDB closed" in stale.error
        assert any("TSDB closed" in notice for notice in poller.notices)

        clock.now += 5
        behaviour.status, behaviour.body = 200, None
        behaviour.series = gputui_series()  # node7 gone, gpu01 appears
        gone, new = poller.poll()
        assert (gone.name, gone.reachable, gone.error, gone.last_ok) == ("node7", False, VANISHED, node7.last_ok)
        assert (new.name, new.source, new.reachable) == ("gpu01", "gputui", True)
        assert poller.error is None and not any("failed" in n for n in poller.notices)


def test_a_prometheus_down_from_the_start_leaves_no_hosts_and_says_why() -> None:
    with canned_prometheus(Behaviour(status=500, body=b"oops")) as url:
        poller = PrometheusPoller(PrometheusClient(url, timeout=1, env={}), warm_up_s=0)
        assert poller.poll() == ()
    assert poller.error is not None and "HTTP 500" in poller.error


async def test_the_fleet_view_adds_a_block_for_each_host_found() -> None:
    from datetime import datetime

    from gputui.ui.fleet_app import FleetApp

    behaviour = Behaviour(series=dcgm_series())
    with canned_prometheus(behaviour) as url:
        poller = PrometheusPoller(PrometheusClient(url, timeout=1, env={}), warm_up_s=0)
        app = FleetApp(poller, auto_poll=False, notices=lambda: poller.notices, now=lambda: datetime(2026, 1, 1))
        async with app.run_test(size=(160, 50)) as pilot:
            await app.poll_now()
            await pilot.pause()
            assert len(app.blocks) == 1
            # A new block draws once it has been laid out, a moment after it is mounted.
            await until(lambda: "dcgm-exporter only: host n/a" in str(app.blocks[0].render_line(0)), pilot)
            behaviour.series = dcgm_series() + gputui_series()
            await app.poll_now()
            await pilot.pause()
            assert sorted(block.state.name for block in app.blocks) == ["gpu01", "node7"]  # in attention order
            behaviour.status, behaviour.body = 500, b'{"status":"error","error":"boom"}'
            await app.poll_now()
            await pilot.pause()
            assert all(block.state.stale for block in app.blocks)
            await until(lambda: "STALE" in str(app.blocks[0].render_line(0)), pilot)
