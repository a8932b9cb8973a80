"""Serve /metrics: a sampling thread keeps the latest ExportState; each scrape only renders it.

Sampling never happens inside a scrape: NVML and psutil calls would then run once per scraper (Prometheus, a
curl, a second Prometheus) and a slow driver would stall every scrape. prometheus-client's own WSGI server runs on
its own daemon thread and reads the state through a custom collector.
"""

from __future__ import annotations

import errno
import logging
import socket
import threading
import time
from collections.abc import Callable, Iterable
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry
from prometheus_client.exposition import start_http_server
from prometheus_client.metrics_core import Metric

from gputui.diagnostics.findings import Finding
from gputui.export.metrics import ExportState, metric_families
from gputui.metric_schema import HOSTNAME_LABEL, HostnameLabel
from gputui.model import Snapshot, SystemInfo
from gputui.session.diagnose import Diagnose
from gputui.sources.base import Source

log = logging.getLogger(__name__)


class ExportBindError(Exception):
    """The HTTP port could not be opened; the message says which and why, in one line."""


class ExportSampler:
    """Reads the source every `interval` seconds on its own thread and keeps the newest ExportState."""

    def __init__(
        self,
        source: Source,
        system: SystemInfo,
        *,
        interval: float,
        diagnose: Diagnose | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._source = source
        self._interval = interval
        self._diagnose = diagnose
        self._clock = clock
        self._last_xid: dict[int, int] = {}
        self._state = ExportState(system=system, snapshot=None, error="no reading yet")
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def state(self) -> ExportState:
        """The newest state; replaced whole, so a scrape on another thread never sees half an update."""
        return self._state

    def sample_once(self) -> ExportState:
        """Take one reading, run the diagnostics on it, and publish the result."""
        system = self._state.system
        try:
            snapshot = self._source.sample()
        except Exception as exc:  # a daemon keeps serving: the failure is shown as gputui_up 0
            if self._state.error != str(exc):
                log.warning("reading the GPUs failed: %s", exc)
            self._state = ExportState(system=system, snapshot=None, error=str(exc))
            return self._state
        for gpu in snapshot.gpus:
            if gpu.xid_events:
                self._last_xid[gpu.index] = gpu.xid_events[-1]
        self._state = ExportState(
            system=snapshot.system,
            snapshot=snapshot,
            findings=self._run_diagnostics(snapshot),
            last_xid=dict(self._last_xid),
        )
        return self._state

    def _run_diagnostics(self, snapshot: Snapshot) -> tuple[Finding, ...]:
        if self._diagnose is None:
            return ()
        try:
            return self._diagnose(snapshot).active
        except Exception:  # the GPU metrics are still worth serving when a rule breaks
            log.exception("the diagnostics failed on this reading")
            return ()

    def start(self) -> None:
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="gputui-export-sampler", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        next_at = self._clock() + self._interval
        while not self._stop.wait(max(0.0, next_at - self._clock())):
            self.sample_once()
            next_at = max(next_at + self._interval, self._clock())

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None


class SnapshotCollector:
    """A prometheus-client collector that renders the sampler's latest state, and does nothing else."""

    def __init__(self, state: Callable[[], ExportState], *, hostname_label: HostnameLabel = HOSTNAME_LABEL) -> None:
        self._state = state
        self._hostname_label = hostname_label

    def collect(self) -> Iterable[Metric]:
        return metric_families(self._state(), hostname_label=self._hostname_label)

    def describe(self) -> list[Metric]:
        # Without describe(), registering would call collect(); the names vary with the machine anyway.
        return []


class Exporter:
    """ExportSampler + HTTP server: `start()` reads once, opens the port, then samples in the background."""

    def __init__(
        self,
        source: Source,
        system: SystemInfo,
        *,
        bind: str = "127.0.0.1",
        port: int = 9400,
        interval: float = 1.0,
        diagnose: Diagnose | None = None,
        hostname_label: HostnameLabel = HOSTNAME_LABEL,
    ) -> None:
        self.sampler = ExportSampler(source, system, interval=interval, diagnose=diagnose)
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(SnapshotCollector(lambda: self.sampler.state, hostname_label=hostname_label))
        self._bind = bind
        self._port = port
        self._server: WSGIServer | None = None
        self.address: tuple[str, int] | None = None

    @property
    def url(self) -> str:
        if self.address is None:
            raise RuntimeError("the exporter is not started")
        host, port = self.address
        host = f"[{host}]" if ":" in host else host
        return f"http://{host}:{port}/metrics"

    def start(self) -> None:
        self.sampler.sample_once()
        try:
            server, _thread = start_http_server(self._port, addr=self._bind, registry=self.registry)
        except socket.gaierror as exc:
            raise ExportBindError(f"cannot listen on {self._bind!r}: not an address of this machine ({exc})") from None
        except OSError as exc:
            raise ExportBindError(_bind_error_message(exc, self._bind, self._port)) from None
        self._server = server
        self.address = (self._bind, int(server.server_address[1]))
        self.sampler.start()

    def stop(self) -> None:
        """Stop sampling and serving; safe to call twice."""
        self.sampler.stop()
        server = self._server
        if server is not None:
            server.shutdown()
            server.server_close()
            self._server = None

    def __enter__(self) -> Exporter:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _bind_error_message(exc: OSError, bind: str, port: int) -> str:
    where = f"{bind}:{port}"
    if exc.errno == errno.EADDRINUSE:
        return f"port {port} is already in use on {bind} (another exporter? choose one with --port)"
    if exc.errno == errno.EADDRNOTAVAIL:
        return f"cannot listen on {where}: {bind} is not an address of this machine"
    if exc.errno == errno.EACCES:
        return f"cannot listen on {where}: permission denied (ports below 1024 need root)"
    return f"cannot listen on {where}: {exc.strerror or exc}"
