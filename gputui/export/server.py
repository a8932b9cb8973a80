"""Serve /metrics: the one sampling loop keeps the latest ExportState on its thread; each scrape only copies its page.

Sampling never happens inside a scrape: NVML and psutil calls would then run once per scraper (Prometheus, a
curl, a second Prometheus) and a slow driver would stall every scrape. Rendering does not either: the page is
rendered once per reading (gputui/export/page.py). The HTTP server (gputui/export/httpd.py) runs its accept loop on
a daemon thread of its own and answers on a fixed pool of workers (gputui/export/routes.py says what it answers).
"""

from __future__ import annotations

import errno
import logging
import socket
import threading
from functools import partial

from gputui.diagnostics.account import MAX_GAP_INTERVALS, Accountant
from gputui.diagnostics.tick import Tick
from gputui.export.httpd import PooledHTTPServer
from gputui.export.metrics import ExportState
from gputui.export.page import MetricsPage
from gputui.export.routes import ExportHandler
from gputui.metric_schema import HOSTNAME_LABEL, HostnameLabel
from gputui.model import SystemInfo
from gputui.session.loop import SamplingLoop
from gputui.session.sampling import Sampler

log = logging.getLogger(__name__)


class ExportBindError(Exception):
    """The HTTP port could not be opened; the message says which and why, in one line."""


class ExportSampler:
    """Takes a reading with `sampler` (the session's: the source through the diagnostics, each tick to the alerts)
    every `interval` seconds in the one sampling loop, on its own thread, and keeps the newest ExportState. A failed
    reading is served as gputui_up 0; the session of `gputui export` tolerates a rule that breaks, so that the GPU
    metrics are still served."""

    def __init__(self, sampler: Sampler, system: SystemInfo, *, interval: float) -> None:
        self._last_xid: dict[int, int] = {}
        self._state = ExportState(system=system, snapshot=None, error="no reading yet")
        # Each GPU's time in each verdict class, where the diagnostics run and give one.
        self._accountant = Accountant(MAX_GAP_INTERVALS * interval) if sampler.diagnoses else None
        self._loop = SamplingLoop(sampler.take, interval, self._publish, self._failed, name="gputui-export-sampler")

    @property
    def state(self) -> ExportState:
        """The newest state; replaced whole, so a scrape on another thread never sees half an update."""
        return self._state

    def sample_once(self) -> ExportState:
        """Take one reading now, run the diagnostics on it, and publish the result; the next is `interval` later."""
        self._loop.poll()
        return self._state

    def _publish(self, tick: Tick) -> None:
        snapshot = tick.snapshot
        for gpu in snapshot.gpus:
            if gpu.xid_events:
                self._last_xid[gpu.index] = gpu.xid_events[-1]
        seconds: dict[int, dict[str, float]] = {}
        if self._accountant is not None:
            self._accountant.add(snapshot, tick.verdict)
            seconds = self._accountant.gpu_seconds()
        self._state = ExportState(
            system=snapshot.system,
            snapshot=snapshot,
            findings=tick.active,
            last_xid=dict(self._last_xid),
            verdict_seconds=seconds,
        )

    def _failed(self, exc: Exception) -> None:
        if self._state.error != str(exc):  # a daemon keeps serving: said once, then shown as gputui_up 0
            log.warning("reading the GPUs failed: %s", exc)
        self._state = ExportState(
            system=self._state.system, snapshot=None, error=str(exc), verdict_seconds=self._state.verdict_seconds
        )

    def start(self) -> None:
        self._loop.start()

    def stop(self) -> None:
        """Ends the loop, once its reading in progress (if any) is done."""
        self._loop.stop(timeout=None)


class Exporter:
    """ExportSampler + HTTP server: `start()` reads once, opens the port, then samples in the background with
    `sampler`."""

    def __init__(
        self,
        sampler: Sampler,
        system: SystemInfo,
        *,
        bind: str = "127.0.0.1",
        port: int = 9400,
        interval: float = 1.0,
        hostname_label: HostnameLabel = HOSTNAME_LABEL,
    ) -> None:
        self.sampler = ExportSampler(sampler, system, interval=interval)
        self.page = MetricsPage(lambda: self.sampler.state, hostname_label=hostname_label)
        self._bind = bind
        self._port = port
        self._server: PooledHTTPServer | None = None
        self._serving: threading.Thread | None = None
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
            server = PooledHTTPServer((self._bind, self._port), partial(ExportHandler, page=self.page))
        except socket.gaierror as exc:
            raise ExportBindError(f"cannot listen on {self._bind!r}: not an address of this machine ({exc})") from None
        except OSError as exc:
            raise ExportBindError(_bind_error_message(exc, self._bind, self._port)) from None
        self._server = server
        self.address = (self._bind, int(server.server_address[1]))
        self._serving = threading.Thread(target=server.serve_forever, name="gputui-export-accept", daemon=True)
        self._serving.start()
        self.sampler.start()

    def stop(self) -> None:
        """Stop sampling and serving; safe to call twice."""
        self.sampler.stop()
        server, serving = self._server, self._serving
        if server is not None and serving is not None:
            server.shutdown()
            serving.join()
            server.server_close()
            self._server = self._serving = None

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
