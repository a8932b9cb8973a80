"""A real Prometheus server for the fleet tests and the bench: started on a free loopback port, always stopped.

Debian's `prometheus` package provides the binaries (`.ci/run` installs it). The tests read through the real thing,
never a mock of its HTTP API: what `gputui --prometheus` must cope with (label rewriting on scrape, `exported_*`
labels, staleness, the API's JSON) is Prometheus's own behaviour. Two ways to start one:

- `running_prometheus(targets=[...])`: scraping the given `host:port` targets every second;
- `prometheus_on_tsdb(storage)`: serving a TSDB made beforehand with `build_tsdb` (promtool's backfill from
  OpenMetrics), for history and the 200-node bench;
- `stoppable_prometheus(targets=[...])`: as `running_prometheus`, but the test can stop it and start it again on
  the same port and storage (an outage).

Where a binary is missing, `PrometheusMissing` says so; `require()` turns that into a skip with the reason, or into
a failure when the environment variable CI is set, so CI can never skip these tests silently.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.sources.prometheus.targets import gputui_exporter, served_page, stop_process

MISSING_REASON = "Debian's prometheus package is not installed ({name} not found); .ci/run installs it"
READY_TIMEOUT_S = 20.0
STOP_TIMEOUT_S = 5.0
HTTP_TIMEOUT_S = 5.0
# Loopback only, and never through a proxy from the environment.
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class PrometheusMissing(RuntimeError):
    """A binary of Debian's prometheus package is not on PATH."""


def binary(name: str = "prometheus") -> str:
    """The path of `prometheus` or `promtool`; PrometheusMissing when it is not installed."""
    path = shutil.which(name)
    if path is None:
        raise PrometheusMissing(MISSING_REASON.format(name=name))
    return path


def require(name: str = "prometheus") -> str:
    """`binary(name)` for a test: skips with the reason where it is missing, fails instead under CI."""
    import pytest

    try:
        return binary(name)
    except PrometheusMissing as exc:
        if os.environ.get("CI"):
            pytest.fail(f"{exc} (CI must not skip the real-Prometheus tests)", pytrace=False)
        pytest.skip(str(exc))


def free_port() -> int:
    """A loopback port nothing listens on now (the kernel's choice for port 0)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def get_json(url: str, timeout: float = HTTP_TIMEOUT_S) -> Any:
    with _OPENER.open(url, timeout=timeout) as reply:
        return json.loads(reply.read())


@dataclass(frozen=True, slots=True)
class RunningPrometheus:
    """A started server: `url` is its base (http://127.0.0.1:PORT), ready for /api/v1 queries."""

    url: str
    storage: Path
    log: Path

    def api(self, path: str, **params: str) -> Any:
        """The `data` of one API call (e.g. `api("query", query="up")`); AssertionError on a non-success status."""
        reply = get_json(f"{self.url}/api/v1/{path}?{urllib.parse.urlencode(params)}")
        assert reply.get("status") == "success", reply
        return reply["data"]

    def query(self, promql: str) -> list[dict[str, Any]]:
        """An instant query's vector: [{"metric": {labels}, "value": [t, "v"]}, ...]."""
        data = self.api("query", query=promql)
        result: list[dict[str, Any]] = data["result"]
        return result

    def wait_for(self, promql: str, count: int = 1, timeout: float = 20.0) -> list[dict[str, Any]]:
        """The query's result once it has at least `count` series; AssertionError with the last result when not
        within `timeout` (scrapes every second, so a few seconds is the usual wait)."""
        deadline = time.monotonic() + timeout
        result: list[dict[str, Any]] = []
        while time.monotonic() < deadline:
            result = self.query(promql)
            if len(result) >= count:
                return result
            time.sleep(0.25)
        raise AssertionError(f"{promql!r}: {len(result)} series after {timeout:.0f} s, expected {count}: {result}")


def scrape_config(targets: Sequence[str], *, interval: str = "1s", honor_labels: bool = False) -> str:
    """prometheus.yml scraping each `host:port` target's /metrics; JSON is YAML, so no YAML writer is needed."""
    config = {
        "global": {"scrape_interval": interval, "scrape_timeout": interval, "evaluation_interval": interval},
        "scrape_configs": [
            {
                "job_name": "fleet",
                "honor_labels": honor_labels,
                "static_configs": [{"targets": list(targets)}],
            }
        ],
    }
    return json.dumps(config, indent=2)


@contextmanager
def running_prometheus(
    targets: Sequence[str] = (),
    *,
    interval: str = "1s",
    honor_labels: bool = False,
    ready_timeout: float = READY_TIMEOUT_S,
) -> Iterator[RunningPrometheus]:
    """A real Prometheus scraping `targets` (`host:port`) every `interval`, in a temporary directory removed after.

    honor_labels off (Prometheus's default) renames a target's own `instance`/`job` labels to `exported_*`.
    Raises PrometheusMissing where the binary is not installed (tests call `require()` first to skip or fail).
    """
    with tempfile.TemporaryDirectory(prefix="gputui-prometheus-") as tmp:
        config = Path(tmp) / "prometheus.yml"
        config.write_text(scrape_config(targets, interval=interval, honor_labels=honor_labels))
        with _serve(config, Path(tmp) / "data", Path(tmp), ready_timeout=ready_timeout) as prom:
            yield prom


class StoppablePrometheus:
    """A real Prometheus that a test stops and starts again, on the same port and the same storage: an outage
    that its clients see as refused connections, then the same server back with its data."""

    def __init__(self, config: Path, storage: Path, workdir: Path, *, ready_timeout: float = READY_TIMEOUT_S) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.storage = storage
        self._argv = _argv(config, storage, self.port)
        self._workdir = workdir
        self._log = workdir / "prometheus.log"
        self._ready_timeout = ready_timeout
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def running(self) -> RunningPrometheus:
        return RunningPrometheus(url=self.url, storage=self.storage, log=self._log)

    def start(self) -> None:
        """Start it (again) and wait until it is ready; the log is appended to, not replaced."""
        assert self._process is None or self._process.poll() is not None, "already running"
        with self._log.open("ab") as out:
            self._process = subprocess.Popen(
                self._argv, stdout=out, stderr=subprocess.STDOUT, cwd=self._workdir, env=_env()
            )
        _wait_ready(self._process, self.url, self._log, self._ready_timeout)

    def stop(self) -> None:
        if self._process is not None:
            stop_process(self._process, STOP_TIMEOUT_S)


@contextmanager
def stoppable_prometheus(targets: Sequence[str], *, interval: str = "1s") -> Iterator[StoppablePrometheus]:
    """A started StoppablePrometheus scraping `targets` every `interval`, always stopped and removed after."""
    with tempfile.TemporaryDirectory(prefix="gputui-prometheus-") as tmp:
        config = Path(tmp) / "prometheus.yml"
        config.write_text(scrape_config(targets, interval=interval))
        server = StoppablePrometheus(config, Path(tmp) / "data", Path(tmp))
        try:
            server.start()
            yield server
        finally:
            server.stop()


@contextmanager
def prometheus_on_tsdb(
    storage: Path, *, lookback_delta: str | None = None, ready_timeout: float = 60.0
) -> Iterator[RunningPrometheus]:
    """A real Prometheus serving the TSDB in `storage` (from `build_tsdb`) and scraping nothing.

    `lookback_delta` (e.g. "2h") widens how far back an instant query looks for a series' last sample (5m by
    default), so a cached TSDB whose data ended a while ago still answers "now" as if just scraped. The
    retention is long: blocks older than Prometheus's default 15 days are not deleted under the test.
    """
    with tempfile.TemporaryDirectory(prefix="gputui-prometheus-") as tmp:
        config = Path(tmp) / "prometheus.yml"
        config.write_text(scrape_config(()))
        extra = ["--storage.tsdb.retention.time=100y"]
        if lookback_delta is not None:
            extra.append(f"--query.lookback-delta={lookback_delta}")
        with _serve(config, storage, Path(tmp), extra=extra, ready_timeout=ready_timeout) as prom:
            yield prom


def build_tsdb(openmetrics: Path, storage: Path, *, timeout: float = 300.0) -> None:
    """Blocks in `storage` from an OpenMetrics file (ending in `# EOF`, timestamps in seconds), with promtool's
    backfill; CalledProcessError with promtool's output when the input is rejected."""
    storage.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [binary("promtool"), "tsdb", "create-blocks-from", "openmetrics", str(openmetrics), str(storage)],
        check=True,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@contextmanager
def _serve(
    config: Path, storage: Path, workdir: Path, *, extra: Sequence[str] = (), ready_timeout: float
) -> Iterator[RunningPrometheus]:
    port = free_port()
    log = workdir / "prometheus.log"
    argv = [*_argv(config, storage, port), *extra]
    with log.open("wb") as out:
        process = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, cwd=workdir, env=_env())
    try:
        url = f"http://127.0.0.1:{port}"
        _wait_ready(process, url, log, ready_timeout)
        yield RunningPrometheus(url=url, storage=storage, log=log)
    finally:
        stop_process(process, STOP_TIMEOUT_S)


def _argv(config: Path, storage: Path, port: int) -> list[str]:
    return [
        binary("prometheus"),
        f"--config.file={config}",
        f"--storage.tsdb.path={storage}",
        f"--web.listen-address=127.0.0.1:{port}",
        "--log.level=warn",
    ]


def _env() -> Mapping[str, str]:
    # GOMAXPROCS bounds the Go runtime's threads on a shared, small machine; the tests need no more.
    return {**os.environ, "GOMAXPROCS": os.environ.get("GOMAXPROCS", "2")}


def _wait_ready(process: subprocess.Popen[bytes], url: str, log: Path, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"prometheus exited with {process.returncode} before it was ready:\n{_tail(log)}")
        try:
            with _OPENER.open(f"{url}/-/ready", timeout=1.0) as reply:
                if reply.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"prometheus was not ready at {url} within {timeout:.0f} s:\n{_tail(log)}")


def _tail(log: Path, lines: int = 20) -> str:
    try:
        return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


@dataclass(frozen=True, slots=True)
class ScrapedFleet:
    """A real Prometheus scraping two real `gputui export` children (the default `hostname` label, and the
    legacy `Hostname`) and the canned dcgm-exporter page; each target as `host:port`."""

    prom: RunningPrometheus
    healthy: str  # `--demo healthy`, 2 GPUs: host sim-healthy
    legacy: str  # `--demo idle --legacy-hostname-label`, 2 GPUs: host sim-idle
    dcgm: str  # the canned page: DCGM_HOST, 8 GPUs


@contextmanager
def scraped_fleet() -> Iterator[ScrapedFleet]:
    with ExitStack() as stack:
        healthy = stack.enter_context(gputui_exporter("--demo", "healthy", "--demo-gpus", "2"))
        legacy = stack.enter_context(
            gputui_exporter("--demo", "idle", "--demo-gpus", "2", "--legacy-hostname-label", "--interval", "0.5")
        )
        dcgm = stack.enter_context(served_page())
        prom = stack.enter_context(running_prometheus(targets=[healthy, legacy, dcgm]))
        yield ScrapedFleet(prom, healthy, legacy, dcgm)
