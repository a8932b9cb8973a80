"""End to end through gputui's own Prometheus client, on a real Prometheus: what `gputui --prometheus` and
`gputui diagnose --prometheus` read from real `gputui export` processes, the canned dcgm-exporter page and a
promtool TSDB of a small synthetic fleet (SIMULATED, benchmarks/fleet_data.py), and how the poller lives through
a Prometheus that goes down and comes back.

Each test is bounded: every wait has a deadline (20 s at most) and the subprocess a timeout.
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import pytest

from benchmarks.fleet_data import (
    FREE_GPUS,
    FREE_GPUS_NODE,
    GPUS,
    IDLE_ALLOCATED_GPUS,
    IDLE_ALLOCATED_NODES,
    SLOW_GPU,
    SLOW_GPU_NODE,
    SLOW_NODE,
    FleetParams,
    node_kind,
    node_name,
    pod_of,
    write_openmetrics,
)
from gputui.model import GpuSample
from gputui.session.fleet_poll import HostState, PrometheusPoller
from gputui.sources.prometheus.client import PrometheusClient
from gputui.sources.prometheus.fleet_query import (
    FleetReading,
    fleet_metric_names,
    parse_match,
    read_fleet,
    read_history,
    selectors,
)
from tests.sources.prometheus.prometheus_server import (
    build_tsdb,
    prometheus_on_tsdb,
    scraped_fleet,
    stoppable_prometheus,
)
from tests.sources.prometheus.targets import DCGM_HOST, DCGM_PAGE, ROOT, gputui_exporter, served_page

MIB = 1 << 20
WAIT_S = 20.0
DIAGNOSE_TIMEOUT_S = 60.0  # ~5 s here; a generous bound on a loaded CI machine
T = TypeVar("T")


class CountingClient(PrometheusClient):
    """gputui's client, counting the HTTP requests it makes (read_fleet sends them from a few threads)."""

    def __init__(self, url: str) -> None:
        super().__init__(url, timeout=5, env={})
        self.paths: list[str] = []
        self._lock = threading.Lock()

    def _get(self, path: str, params: Mapping[str, str]) -> dict[str, Any]:
        with self._lock:
            self.paths.append(path)
        return super()._get(path, params)

    def counted(self, read: Callable[[], T]) -> tuple[T, list[str]]:
        """What `read()` returns, and the request paths it made."""
        with self._lock:
            self.paths.clear()
        result = read()
        with self._lock:
            return result, list(self.paths)


def eventually(read: Callable[[], T], done: Callable[[T], bool], what: str, timeout: float = WAIT_S) -> T:
    """`read()` again until `done` holds for its answer; AssertionError with the last answer after `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        got = read()
        if done(got):
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"not {what} within {timeout:.0f} s: {got!r}")
        time.sleep(0.25)


def page_value(field: str, gpu: int) -> float:
    """A value of the canned dcgm-exporter page, as dcgm-exporter wrote it (its own units)."""
    found = re.search(rf'^{field}\{{gpu="{gpu}",.*\}} (\S+)$', DCGM_PAGE.read_text(), re.M)
    assert found is not None, f"{field} gpu {gpu} is not on the page"
    return float(found.group(1))


def percentages(gpu: GpuSample) -> dict[str, float]:
    return {
        name: value
        for name in GpuSample.__dataclass_fields__
        if name.endswith("_pct") and isinstance(value := getattr(gpu, name), float | int)
    }


@pytest.mark.usefixtures("prometheus_installed")
def test_read_fleet_finds_each_exporters_hosts_in_the_models_units() -> None:
    with scraped_fleet() as fleet:
        prom, healthy, legacy, dcgm = fleet.prom, fleet.healthy, fleet.legacy, fleet.dcgm
        client = CountingClient(prom.url)

        def complete(reading: FleetReading) -> bool:
            counts = {host: len(h.snapshot.gpus) for host, h in reading.hosts.items()}
            return counts == {"sim-healthy": 2, "sim-idle": 2, DCGM_HOST: 8}

        reading = eventually(lambda: read_fleet(client), complete, "three hosts with their GPUs")
        hosts = reading.hosts
        assert reading.unreadable == {} and reading.warnings == ()
        assert {host: h.source for host, h in hosts.items()} == {
            "sim-healthy": "gputui",
            "sim-idle": "gputui",
            DCGM_HOST: "dcgm-exporter",
        }
        assert {host: h.instance for host, h in hosts.items()} == {
            "sim-healthy": healthy,
            "sim-idle": legacy,
            DCGM_HOST: dcgm,
        }
        # gputui's nodes see their host; dcgm-exporter's cannot, and says so with None, never 0.
        for host in ("sim-healthy", "sim-idle"):
            assert hosts[host].snapshot.host.cpu_pct is not None
            assert hosts[host].snapshot.host.memory_used_bytes is not None
        assert hosts["sim-healthy"].snapshot.host.processes
        node = hosts[DCGM_HOST].snapshot
        assert node.host.cpu_pct is None and node.host.memory_used_bytes is None
        assert node.host.processes == () and all(g.processes == () for g in node.gpus)
        # dcgm-exporter's units turned into the model's: PROF ratios 0-1 -> %, FB MiB -> bytes.
        gpu0 = node.gpus[0]
        assert gpu0.tensor_active_pct == pytest.approx(100 * page_value("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", 0))
        assert gpu0.gr_engine_active_pct == pytest.approx(100 * page_value("DCGM_FI_PROF_GR_ENGINE_ACTIVE", 0))
        assert gpu0.tensor_active_pct is not None and gpu0.tensor_active_pct > 1.0
        assert gpu0.memory_used_bytes == page_value("DCGM_FI_DEV_FB_USED", 0) * MIB
        for h in hosts.values():
            for gpu in h.snapshot.gpus:
                assert all(0.0 <= v <= 100.0 for v in percentages(gpu).values()), (h.host, gpu.index)
        # The GPUs a pod holds carry it; the free ones do not.
        assert [g.pod is not None for g in node.gpus] == [True] * 6 + [False] * 2

        # One request per batch of names for the whole fleet, never one per host: narrowing to one host by
        # `--match` costs exactly as many.
        _, paths = client.counted(lambda: read_fleet(client))
        assert paths == ["/api/v1/query"] * len(selectors(None))
        assert len(paths) <= len(fleet_metric_names())
        for target, host in ((dcgm, DCGM_HOST), (legacy, "sim-idle")):
            match = parse_match(f'{{instance="{target}"}}')
            narrowed, narrowed_paths = client.counted(partial(read_fleet, client, match))
            assert list(narrowed.hosts) == [host]
            assert len(narrowed_paths) == len(paths)
        by_job = read_fleet(client, parse_match('{job="fleet"}'))
        assert set(by_job.hosts) == set(hosts)
        assert read_fleet(client, parse_match('{job="elsewhere"}')).hosts == {}


# -- diagnose --prometheus on a promtool TSDB of a small fleet ---------------------------------------------------

FLEET = FleetParams(nodes=12, minutes=35, step_s=15)
PLANTED = {SLOW_NODE, SLOW_GPU_NODE, FREE_GPUS_NODE, *IDLE_ALLOCATED_NODES}


@pytest.fixture(scope="module")
def fleet_tsdb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The small fleet's TSDB, ending now: built once for the module (~3 s), since `diagnose` reads the window
    that ends now and a TSDB kept from an earlier run would have aged out of it."""
    from tests.sources.prometheus.prometheus_server import require

    require("prometheus")
    require("promtool")
    root = tmp_path_factory.mktemp("fleet-tsdb")
    params = FleetParams(FLEET.nodes, FLEET.minutes, FLEET.step_s, end=int(time.time()))
    with (root / "fleet.om").open("w") as out:
        write_openmetrics(out, params)
    build_tsdb(root / "fleet.om", root / "data")
    (root / "fleet.om").unlink()
    yield root / "data"


def run_diagnose(url: str, *args: str) -> tuple[int, dict[str, Any]]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}
    for name in [k for k in env if k.startswith("GPUTUI_PROMETHEUS_")]:
        del env[name]
    done = subprocess.run(
        [sys.executable, "-m", "gputui", "diagnose", "--prometheus", url, *args, "--json"],
        capture_output=True,
        text=True,
        timeout=DIAGNOSE_TIMEOUT_S,
        cwd=ROOT,
        env=env,
    )
    assert done.stdout, done.stderr
    return done.returncode, json.loads(done.stdout)


def test_diagnose_prometheus_names_the_planted_stragglers_and_idle_holders(fleet_tsdb: Path) -> None:
    with prometheus_on_tsdb(fleet_tsdb) as prom:
        code, document = run_diagnose(prom.url, "--since", "30m")
    assert document["schema"] == 1
    nodes = {node["host"]: node for node in document["nodes"]}
    assert list(nodes) == [node_name(i) for i in range(FLEET.nodes)]
    for i in range(FLEET.nodes):
        node = nodes[node_name(i)]
        assert {"host", "source", "verdict", "findings"} <= set(node)
        assert node["source"] == node_kind(i, FLEET)
        assert node["readings"] == 121  # 30 min every 15 s, both ends
        # Readings 15 s apart still fill each rule's window (diagnostics.settings.for_step): a verdict, not "unknown".
        assert node["verdict"] is not None and node["verdict"]["class"] != "unknown", node["verdict"]
    findings = document["findings"]
    for finding in findings:
        assert set(finding) == {"rule", "severity", "hosts", "gpus", "title", "advice", "evidence"}
        assert {g["host"] for g in finding["gpus"]} == set(finding["hosts"])

    def gpus(rule: str) -> set[tuple[str, int]]:
        return {(g["host"], g["gpu"]) for f in findings if f["rule"] == rule for g in f["gpus"]}

    # The slow node (dcgm-exporter's series) whole, and the one slow GPU on a gputui node: nothing else.
    slow_node, slow_gpu_node = node_name(SLOW_NODE), node_name(SLOW_GPU_NODE)
    assert node_kind(SLOW_NODE, FLEET) == "dcgm-exporter" and node_kind(SLOW_GPU_NODE, FLEET) == "gputui"
    assert gpus("straggler") == {*((slow_node, g) for g in range(GPUS)), (slow_gpu_node, SLOW_GPU)}
    # The held idle GPUs, on a dcgm-exporter node by its pod labels and on a gputui node by its processes; never
    # the free idle GPUs, which nothing holds.
    assert {node_kind(i, FLEET) for i in IDLE_ALLOCATED_NODES} == {"gputui", "dcgm-exporter"}
    assert gpus("idle_allocated") == {(node_name(i), g) for i in IDLE_ALLOCATED_NODES for g in IDLE_ALLOCATED_GPUS}
    assert not {(node_name(FREE_GPUS_NODE), g) for g in FREE_GPUS} & (gpus("idle_allocated") | gpus("straggler"))
    owners = {
        f["hosts"][0]: {e["value"] for e in f["evidence"] if e["key"] == "owner"}
        for f in findings
        if f["rule"] == "idle_allocated"
    }
    for i in IDLE_ALLOCATED_NODES:
        named = " ".join(owners[node_name(i)])
        if node_kind(i, FLEET) == "dcgm-exporter":
            pod = pod_of(i, "idle_allocated")
            assert pod is not None and f"{pod[1]}/{pod[0]}" in named
        else:
            assert "python3" in named  # the simulated server's training processes, by name and PID
    # Healthy dcgm-exporter nodes: nothing above info, from the fleet rules or their own engine.
    healthy_dcgm = {node_name(i) for i in range(FLEET.nodes) if i not in PLANTED and node_kind(i, FLEET) != "gputui"}
    assert len(healthy_dcgm) >= 3
    for finding in findings:
        if finding["severity"] != "info":
            assert not set(finding["hosts"]) & healthy_dcgm, finding["title"]
    for host in healthy_dcgm:
        assert [f["rule"] for f in nodes[host]["findings"] if f["severity"] != "info"] == [], host
    # The exit code is the worst severity's, as `gputui diagnose` has it.
    severities = {f["severity"] for f in findings} | {f["severity"] for n in nodes.values() for f in n["findings"]}
    assert code == (4 if "critical" in severities else 1 if "warning" in severities else 0)
    assert code != 0


# -- the poller through an outage --------------------------------------------------------------------------------


def by_name(states: tuple[HostState, ...]) -> dict[str, HostState]:
    return {state.name: state for state in states}


@pytest.mark.usefixtures("prometheus_installed")
def test_the_poller_keeps_the_last_readings_through_an_outage_and_recovers() -> None:
    with ExitStack() as stack:
        exporter = stack.enter_context(gputui_exporter("--demo", "healthy", "--demo-gpus", "2", "--interval", "0.5"))
        dcgm = stack.enter_context(served_page())
        prom = stack.enter_context(stoppable_prometheus(targets=[exporter, dcgm]))
        client = PrometheusClient(prom.url, timeout=2, env={})
        poller = PrometheusPoller(client, warm_up_s=0)
        first_seen = time.time()
        before = by_name(
            eventually(
                poller.poll,
                lambda states: {s.name for s in states if s.reachable} == {"sim-healthy", DCGM_HOST},
                "both hosts",
            )
        )
        # A few polls, so each host has a window and its engine a verdict to keep.
        before = by_name(
            eventually(poller.poll, lambda s: all(len(x.recent) >= 3 for x in s), "a window", timeout=WAIT_S)
        )
        stopped_at = time.time()

        prom.stop()
        during = by_name(poller.poll())
        assert set(during) == set(before)
        for host, state in during.items():
            old = before[host]
            assert state.stale and state.reachable, host
            assert (state.snapshot, state.recent, state.findings, state.verdict) == (
                old.snapshot,
                old.recent,
                old.findings,
                old.verdict,
            )
            assert state.last_ok == old.last_ok and state.last_attempt is not None
            assert state.last_attempt > (old.last_attempt or 0)
            assert state.error is not None and "unreachable" in state.error and "refused" in state.error
        assert poller.error is not None
        assert any(n.startswith("Prometheus failed, showing the last readings") for n in poller.notices)
        assert by_name(poller.poll())[DCGM_HOST].stale  # still down: still the last readings

        prom.start()  # same port, same storage
        old_reading = before["sim-healthy"].snapshot
        assert old_reading is not None

        def recovered(states: tuple[HostState, ...]) -> bool:
            """Every host current again, and gputui's with a reading made after the outage."""
            new = by_name(states)["sim-healthy"].snapshot
            fresh = new is not None and new.timestamp > old_reading.timestamp
            return fresh and all(s.reachable and not s.stale for s in states)

        after = by_name(eventually(poller.poll, recovered, "recovered with new readings"))
        assert set(after) == set(before)
        assert poller.error is None and not any("failed" in n for n in poller.notices)
        for host, state in after.items():
            assert state.error is None and state.verdict is not None, host
            assert state.last_ok is not None and state.last_ok > stopped_at
        # The storage survived the restart: what was scraped before the outage is still there to read.
        history = read_history(client, None, first_seen, time.time(), 1.0)
        for host in (DCGM_HOST, "sim-healthy"):
            stamps = [s.timestamp for s in history.hosts[host].snapshots]
            assert stamps and min(stamps) < stopped_at, host
            assert all(math.isfinite(t) for t in stamps)
