"""A real Prometheus scraping real `gputui export` processes and the canned dcgm-exporter page, and serving a TSDB
backfilled by promtool: the series arrive under the names and host labels the fleet view reads.

Read through Prometheus's HTTP API with plain urllib (RunningPrometheus.query), not gputui's client, so these hold
whatever that client does. Each test is bounded: starts wait at most 20-30 s, and the scrape interval is 1 s.
"""

from __future__ import annotations

import re
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from benchmarks.fleet_data import (
    FB_TOTAL_MIB,
    SLOW_NODE,
    FleetParams,
    dcgm_page,
    node_name,
    write_openmetrics,
)
from tests.sources.prometheus.prometheus_server import (
    PrometheusMissing,
    binary,
    build_tsdb,
    prometheus_on_tsdb,
    require,
    running_prometheus,
    scraped_fleet,
)
from tests.sources.prometheus.targets import (
    DCGM_BUSY_GPUS,
    DCGM_FREE_GPUS,
    DCGM_HELD_IDLE_GPUS,
    DCGM_HOST,
    DCGM_PAGE,
    served_page,
)


def by(result: list[dict[str, object]], label: str) -> dict[str, dict[str, str]]:
    """An instant query's series keyed by one of their labels."""
    out = {}
    for series in result:
        metric = series["metric"]
        assert isinstance(metric, dict)
        out[metric.get(label, "")] = metric
    return out


@pytest.mark.usefixtures("prometheus_installed")
def test_two_gputui_exporters_and_dcgm_page_arrive_with_their_host_labels() -> None:
    with scraped_fleet() as fleet:
        prom, healthy, legacy, dcgm = fleet.prom, fleet.healthy, fleet.legacy, fleet.dcgm

        up = by(prom.wait_for("up == 1", count=3), "instance")
        assert set(up) == {healthy, legacy, dcgm}
        # gputui's own series say which node runs gputui; the default host label is `hostname`, the legacy one
        # `Hostname`, as dcgm-exporter's releases write it.
        sources = by(prom.wait_for("gputui_source_info", count=2), "instance")
        assert sources[healthy]["hostname"] == "sim-healthy"
        assert sources[legacy]["Hostname"] == "sim-idle"
        assert "Hostname" not in sources[healthy] and "hostname" not in sources[legacy]
        assert {s["source"] for s in sources.values()} == {"simulated"}

        util = prom.wait_for("DCGM_FI_DEV_GPU_UTIL", count=2 + 2 + 8)
        hosts = {(s["metric"].get("hostname") or s["metric"].get("Hostname"), s["metric"]["gpu"]) for s in util}
        assert hosts == {
            *(("sim-healthy", g) for g in "01"),
            *(("sim-idle", g) for g in "01"),
            *((DCGM_HOST, str(g)) for g in range(8)),
        }
        # Every GPU series carries dcgm-exporter's GPU labels, whichever exporter wrote it.
        for series in util:
            assert {"gpu", "UUID", "pci_bus_id", "device", "modelName"} <= set(series["metric"])
        # The simulated machines stay marked as such in Prometheus; the canned dcgm page is not gputui's.
        marked = {s["metric"]["instance"] for s in util if s["metric"].get("gputui_source") == "simulated"}
        assert marked == {healthy, legacy}
        assert prom.query(f'gputui_source_info{{instance="{dcgm}"}}') == []


@pytest.mark.usefixtures("prometheus_installed")
def test_dcgm_page_pod_labels_and_units_as_scraped() -> None:
    with served_page() as dcgm, running_prometheus(targets=[dcgm]) as prom:
        util = by(prom.wait_for('DCGM_FI_DEV_GPU_UTIL{Hostname="dgx-h100-07"}', count=8), "gpu")
        for gpu in (*DCGM_BUSY_GPUS, *DCGM_HELD_IDLE_GPUS):
            assert {"pod", "namespace", "container"} <= set(util[gpu])
        for gpu in DCGM_FREE_GPUS:
            assert not {"pod", "namespace", "container"} & set(util[gpu])
        assert {util[g]["pod"] for g in DCGM_BUSY_GPUS} != {util[g]["pod"] for g in DCGM_HELD_IDLE_GPUS}
        # honor_labels off: the page has no instance/job of its own, so Prometheus's are not renamed exported_*.
        assert util["0"]["instance"] == dcgm and "exported_instance" not in util["0"]
        values = {
            s["metric"]["gpu"]: float(s["value"][1])
            for s in prom.query("DCGM_FI_DEV_FB_USED + DCGM_FI_DEV_FB_FREE + DCGM_FI_DEV_FB_RESERVED")
        }
        assert values == {str(g): float(FB_TOTAL_MIB) for g in range(8)}  # MiB, as dcgm writes FB
        ratios = [float(s["value"][1]) for s in prom.query('{__name__=~"DCGM_FI_PROF_.*_ACTIVE"}')]
        assert ratios and all(0.0 <= r <= 1.0 for r in ratios)  # PROF activity as 0-1 ratios
        busy = [float(s["value"][1]) for s in prom.query('DCGM_FI_DEV_GPU_UTIL{pod=~"train-.*"}')]
        idle = [float(s["value"][1]) for s in prom.query('DCGM_FI_DEV_GPU_UTIL{pod=~"notebook-.*"}')]
        assert min(busy) > 90 and idle == [0.0, 0.0]


def test_canned_page_is_what_the_generator_writes_in_dcgm_exporters_layout() -> None:
    text = DCGM_PAGE.read_text()
    assert text == dcgm_page(), "regenerate: python benchmarks/fleet_data.py --dcgm-page > " + str(DCGM_PAGE)
    lines = text.splitlines()
    families = [line.split()[2] for line in lines if line.startswith("# HELP ")]
    assert families == [line.split()[2] for line in lines if line.startswith("# TYPE ")]
    assert len(families) == len(set(families))
    order = re.compile(
        r'^[A-Z_]+\{gpu="\d",UUID="GPU-[0-9a-f-]{36}",pci_bus_id="00000000:[0-9A-F]{2}:00\.0",device="nvidia\d",'
        r'modelName="NVIDIA H100 80GB HBM3",Hostname="dgx-h100-07",DCGM_FI_DRIVER_VERSION="[0-9.]+"'
        r'(,container="[^"]+",namespace="[^"]+",pod="[^"]+")?\} -?[0-9]+(\.[0-9]{6})?$'
    )
    samples = [line for line in lines if not line.startswith("#")]
    assert len(samples) == 8 * len(families)
    assert [line for line in samples if not order.match(line)] == []
    # Go's %f for doubles (six decimals) and %d for integers, as dcgm-exporter's collector formats them.
    assert re.search(r"^DCGM_FI_DEV_POWER_USAGE\{.*\} \d+\.\d{6}$", text, re.M)
    assert re.search(r"^DCGM_FI_DEV_SM_CLOCK\{.*\} \d+$", text, re.M)


@pytest.mark.usefixtures("prometheus_installed")
def test_history_from_a_promtool_tsdb(tmp_path: Path) -> None:
    """The helper the bench and the history tests use: fleet_data -> promtool -> Prometheus -> query_range."""
    end = int(time.time())
    params = FleetParams(nodes=SLOW_NODE + 2, minutes=5, step_s=15, end=end)
    source = tmp_path / "fleet.om"
    with source.open("w") as out:
        write_openmetrics(out, params)
    build_tsdb(source, tmp_path / "tsdb")
    with prometheus_on_tsdb(tmp_path / "tsdb") as prom:
        clocks = prom.query("DCGM_FI_DEV_SM_CLOCK")
        hosts = {s["metric"].get("hostname") or s["metric"].get("Hostname") for s in clocks}
        assert hosts == {node_name(i) for i in range(params.nodes)}
        assert len(clocks) == 8 * params.nodes
        slow = node_name(SLOW_NODE)
        mean = {
            s["metric"]["node"]: float(s["value"][1])
            for s in prom.query(
                'avg by (node) (label_replace(label_replace(DCGM_FI_DEV_SM_CLOCK, "node", "$1", "hostname", "(.+)"),'
                ' "node", "$1", "Hostname", "(.+)"))'
            )
        }
        others = sorted(v for k, v in mean.items() if k != slow)
        assert mean[slow] < 0.8 * others[len(others) // 2]  # the planted slow node, below the median node
        window = prom.api(
            "query_range", query='DCGM_FI_DEV_GPU_UTIL{gpu="0"}', start=str(end - 300), end=str(end), step="15"
        )
        assert len(window["result"]) == params.nodes
        assert all(len(s["values"]) == params.samples for s in window["result"])


@pytest.mark.usefixtures("prometheus_installed")
def test_prometheus_is_stopped_on_the_way_out_even_after_an_error() -> None:
    with pytest.raises(ZeroDivisionError), running_prometheus() as prom:
        url = prom.url
        assert prom.query("vector(1)")[0]["value"][1] == "1"
        1 / 0  # noqa: B018 - the error leaving the block
    with pytest.raises(urllib.error.URLError):
        urllib.request.build_opener(urllib.request.ProxyHandler({})).open(f"{url}/-/ready", timeout=2)
    assert not prom.storage.exists()


def test_a_missing_prometheus_skips_with_the_reason_outside_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(PrometheusMissing, match="Debian's prometheus package is not installed"):
        binary("promtool")
    with pytest.raises(pytest.skip.Exception, match=r"prometheus not found\); \.ci/run installs it"):
        require("prometheus")


def test_a_missing_prometheus_fails_under_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI must not skip"):
        require("prometheus")


@pytest.mark.usefixtures("prometheus_installed")
def test_a_prometheus_that_cannot_start_is_an_error_with_its_log(tmp_path: Path) -> None:
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("")
    with pytest.raises(RuntimeError, match=r"exited with \d+ before it was ready"), prometheus_on_tsdb(not_a_dir):
        pass
