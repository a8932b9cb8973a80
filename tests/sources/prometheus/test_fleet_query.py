"""read_fleet and read_history over canned query answers: gputui's series and dcgm-exporter's, grouped by host."""

from __future__ import annotations

import pytest

from gputui.sources.prometheus.client import PrometheusClient
from gputui.sources.prometheus.fleet_query import (
    fleet_metric_names,
    parse_match,
    read_fleet,
    read_history,
    selectors,
)
from gputui.sources.remote import parse_exposition
from tests.sources.prometheus.canned import MIB, dcgm_series, gputui_page, gputui_series
from tests.sources.prometheus.prom_stub import Behaviour, canned_prometheus

AT = 1_767_225_700.0


def test_gputui_series_read_back_as_the_exporter_page_reads() -> None:
    with canned_prometheus(Behaviour(series=gputui_series())) as url:
        reading = read_fleet(PrometheusClient(url, timeout=5), at=AT)
    assert list(reading.hosts) == ["gpu01"]
    host = reading.hosts["gpu01"]
    assert (host.source, host.instance) == ("gputui", "10.0.0.1:9400")
    # the same reader as a scrape of the page: every value the same
    assert host.snapshot == parse_exposition(gputui_page(), fallback_hostname="x", now=AT)
    assert host.snapshot.host.processes  # gputui's own series carry the processes
    assert host.snapshot.system.source == "remote"


def test_dcgm_exporter_series_in_their_units_and_labels() -> None:
    series = dcgm_series() + dcgm_series("node8", host_label="hostname", instance="10.0.0.8:9400", exported=False)
    with canned_prometheus(Behaviour(series=series)) as url:
        reading = read_fleet(PrometheusClient(url, timeout=5), at=AT)
    assert sorted(reading.hosts) == ["node7", "node8"]
    node = reading.hosts["node7"]
    assert node.source == "dcgm-exporter"
    snap = node.snapshot
    assert snap.system.hostname == "node7"
    assert snap.timestamp == AT
    gpu0, gpu1 = snap.gpus
    assert gpu1.utilization_gpu_pct == 97.0
    assert gpu1.memory_used_bytes == 40960 * MIB  # FB in MiB
    assert gpu1.tensor_active_pct == pytest.approx(42.0)  # PROF ratios 0-1
    assert gpu1.sm_active_pct == pytest.approx(90.0)
    assert gpu0.clock_event_reasons_mask == 1  # the older name
    assert gpu1.clock_event_reasons_mask == 4  # the current name
    assert snap.gpu_info[1].name == "NVIDIA A100-SXM4-80GB"
    # what dcgm-exporter cannot see is None, never 0
    assert snap.host.cpu_pct is None and snap.host.memory_used_bytes is None and snap.host.processes == ()
    assert gpu1.processes == ()
    # exported_* read as the exporter's own labels: the workload's pod, not the exporter's
    assert node.owners == {1: {"pod": "train-0", "namespace": "ml", "container": "trainer"}}
    assert reading.hosts["node8"].owners == {1: {"pod": "train-0", "namespace": "ml", "container": "trainer"}}


def test_series_without_a_host_label_go_with_their_target_or_by_address() -> None:
    series = dcgm_series()
    for labels, _ in series:
        labels.pop("Hostname")
    with canned_prometheus(Behaviour(series=series)) as url:
        reading = read_fleet(PrometheusClient(url, timeout=5), at=AT)
    assert list(reading.hosts) == ["10.0.0.7:9400"]


def test_exported_hostname_is_the_exporters() -> None:
    series = [({**labels, "exported_hostname": "node9"}, value) for labels, value in dcgm_series("ignored")]
    for labels, _ in series:
        labels.pop("Hostname")
    with canned_prometheus(Behaviour(series=series)) as url:
        reading = read_fleet(PrometheusClient(url, timeout=5), at=AT)
    assert list(reading.hosts) == ["node9"]


def test_match_narrows_every_query_and_one_query_holds_many_names() -> None:
    series = [({**labels, "cluster": "a"}, v) for labels, v in dcgm_series()]
    series += [({**labels, "cluster": "b"}, v) for labels, v in dcgm_series("node8", instance="10.0.0.8:9400")]
    behaviour = Behaviour(series=series)
    with canned_prometheus(behaviour) as url:
        reading = read_fleet(PrometheusClient(url, timeout=5), parse_match('{cluster="a"}'), at=AT)
    assert list(reading.hosts) == ["node7"]
    assert len(behaviour.queries) == len(selectors(None)) < len(fleet_metric_names()) / 5
    assert all(query.endswith(',cluster="a"}') for query in behaviour.queries)
    assert "DCGM_FI_DEV_CLOCKS_EVENT_REASONS" in fleet_metric_names()
    assert "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS" in fleet_metric_names()


def test_prometheus_warnings_come_back_with_the_reading() -> None:
    with canned_prometheus(Behaviour(series=dcgm_series(), warnings=("remote read of shard 2 failed",))) as url:
        reading = read_fleet(PrometheusClient(url, timeout=5), at=AT)
    assert reading.warnings == ("remote read of shard 2 failed",)
    assert "node7" in reading.hosts


def test_history_gives_one_snapshot_per_step() -> None:
    behaviour = Behaviour(series=dcgm_series() + gputui_series())
    with canned_prometheus(behaviour) as url:
        history = read_history(PrometheusClient(url, timeout=5), None, AT - 60, AT, 15)
    node = history.hosts["node7"]
    assert [s.timestamp for s in node.snapshots] == [AT - 60 + 15 * i for i in range(5)]
    assert node.source == "dcgm-exporter"
    assert history.hosts["gpu01"].source == "gputui"


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ('{cluster="a"}', 'cluster="a"'),
        ('cluster="a", job=~"dcgm.*"', 'cluster="a",job=~"dcgm.*"'),
        ("{}", None),
        ('{ns!="kube-system",}', 'ns!="kube-system"'),
    ],
)
def test_match_selectors_read(text: str, want: str | None) -> None:
    assert parse_match(text) == want


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("{cluster=a}", "not a label selector"),
        ('{cluster="a"', "unbalanced braces"),
        ('{__name__="up"}', "metric names"),
        ('{a="1" b="2"}', "expected a comma"),
        ('{1a="x"}', "not a label selector"),
    ],
)
def test_bad_match_selectors_say_what_is_wrong(text: str, says: str) -> None:
    with pytest.raises(ValueError, match=says):
        parse_match(text)
