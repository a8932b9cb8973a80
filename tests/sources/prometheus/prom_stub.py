"""A canned Prometheus query API on 127.0.0.1 for the unit tests: it answers /api/v1/query and /api/v1/query_range
from a list of series, selecting them by `__name__=~"a|b"` and `label="value"` matchers as Prometheus would, and
can be told to fail (HTTP error, bad JSON, silence). The real Prometheus is
tests/sources/prometheus/prometheus_server.py's."""

from __future__ import annotations

import http.server
import json
import re
import threading
import time
import urllib.parse
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

Series = list[tuple[dict[str, str], float]]
_MATCHER = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)(=~|=)"((?:[^"\\]|\\.)*)"')


def series_of_page(page: str, **target: str) -> Series:
    """An exporter's /metrics page as Prometheus stores it after a scrape: each sample with __name__ and the
    target's labels (instance, job) added."""
    out: Series = []
    for family in text_string_to_metric_families(page):
        for sample in family.samples:
            out.append(({"__name__": sample.name, **target, **sample.labels}, sample.value))
    return out


@dataclass
class Behaviour:
    series: Series = field(default_factory=list)
    status: int = 200
    body: bytes | None = None  # sent as is (bad JSON, an error document)
    delay_s: float = 0.0
    warnings: tuple[str, ...] = ()
    seen_headers: list[Mapping[str, str]] = field(default_factory=list)
    queries: list[str] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)


def _select(series: Series, query: str) -> Series:
    matchers = _MATCHER.findall(query)
    out = []
    for labels, value in series:
        ok = True
        for label, op, wanted in matchers:
            got = labels.get(label, "")
            ok = ok and (re.fullmatch(wanted, got) is not None if op == "=~" else got == wanted)
        if ok:
            out.append((labels, value))
    return out


class _Handler(http.server.BaseHTTPRequestHandler):
    behaviour: Behaviour

    def do_GET(self) -> None:
        b = self.server.behaviour  # type: ignore[attr-defined]
        b.seen_headers.append(dict(self.headers))
        url = urllib.parse.urlsplit(self.path)
        params = dict(urllib.parse.parse_qsl(url.query))
        b.queries.append(params.get("query", ""))
        b.paths.append(url.path)
        if b.delay_s:
            time.sleep(b.delay_s)
        if b.body is not None:
            self._send(b.status, b.body)
            return
        selected = _select(b.series, params.get("query", ""))
        data: dict[str, Any]
        if url.path == "/api/v1/query":
            at = float(params.get("time", time.time()))
            result = [{"metric": labels, "value": [at, repr(value)]} for labels, value in selected]
            data = {"resultType": "vector", "result": result}
        elif url.path == "/api/v1/query_range":
            start, end = float(params["start"]), float(params["end"])
            step = float(params["step"].removesuffix("ms")) / 1000
            steps = [start + i * step for i in range(int((end - start) / step) + 1)]
            result = [{"metric": labels, "values": [[t, repr(value)] for t in steps]} for labels, value in selected]
            data = {"resultType": "matrix", "result": result}
        else:
            self._send(404, b'{"status":"error","errorType":"not_found","error":"no such path"}')
            return
        document: dict[str, Any] = {"status": "success", "data": data}
        if b.warnings:
            document["warnings"] = list(b.warnings)
        self._send(b.status, json.dumps(document).encode())

    def _send(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        """Quiet."""


@contextmanager
def canned_prometheus(behaviour: Behaviour) -> Iterator[str]:
    """A server on 127.0.0.1 answering from `behaviour` (changeable while it runs); yields its URL."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.daemon_threads = True
    server.behaviour = behaviour  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
