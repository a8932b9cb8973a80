"""Scrape targets for the real Prometheus: `gputui export` processes and the canned dcgm-exporter page.

A canned page served over HTTP is a canned exporter (what dcgm-exporter 4.x writes for 8 GPUs, checked against
its source), not a mock of Prometheus: Prometheus scrapes it for real, parses it and stores it.
"""

from __future__ import annotations

import os
import re
import select
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[3]
DCGM_PAGE = Path(__file__).parent / "data" / "dcgm-exporter.prom"
# The canned page (made by benchmarks/fleet_data.py --dcgm-page): one host, 8 H100s, GPUs 0-3 busy in a training
# pod, 4-5 held idle by a notebook pod, 6-7 free; `Hostname` as dcgm-exporter 4.5.3-4.8.2 still writes it.
DCGM_HOST = "dgx-h100-07"
DCGM_BUSY_GPUS = ("0", "1", "2", "3")
DCGM_HELD_IDLE_GPUS = ("4", "5")
DCGM_FREE_GPUS = ("6", "7")
START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 10.0
_URL = re.compile(r"at http://(127\.0\.0\.1:\d+)/metrics")


def stop_process(process: subprocess.Popen[Any], timeout: float) -> None:
    """SIGTERM (an exporter or Prometheus closes cleanly), then SIGKILL when it takes longer than `timeout`: a
    child of the tests is never left running."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=timeout)


@contextmanager
def gputui_exporter(*args: str) -> Iterator[str]:
    """A real `gputui export --port 0 ARGS` child process of this tree's code; yields its `host:port` once it
    serves, and stops it (SIGTERM, then SIGKILL) on the way out."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": _pythonpath()}
    child = subprocess.Popen(
        [sys.executable, "-m", "gputui", "export", "--port", "0", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env=env,
    )
    try:
        yield _wait_serving(child)
    finally:
        stop_process(child, STOP_TIMEOUT_S)
        assert child.stderr is not None
        child.stderr.close()


def _pythonpath() -> str:
    """This tree first, so the child runs the code under test whatever is installed."""
    return os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)


def _wait_serving(child: subprocess.Popen[str]) -> str:
    assert child.stderr is not None
    seen = ""
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline and child.poll() is None:
        ready, _, _ = select.select([child.stderr], [], [], 0.5)
        if ready:
            seen += child.stderr.readline()
            if found := _URL.search(seen):
                return found.group(1)
    raise RuntimeError(f"gputui export did not start serving within {START_TIMEOUT_S:.0f} s: {seen!r}")


@contextmanager
def served_page(page: Path = DCGM_PAGE) -> Iterator[str]:
    """`page` served as /metrics on a free loopback port, as an exporter serves it; yields `host:port`."""
    body = page.read_bytes()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path.split("?")[0] != "/metrics":
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass  # the test's output is not the place for Prometheus's scrapes

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.timeout = 5
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=STOP_TIMEOUT_S)
