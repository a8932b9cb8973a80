"""What the exporter answers, over HTTP on 127.0.0.1: /metrics and /, nothing else; GET and HEAD, nothing else."""

from __future__ import annotations

import gzip
import http.client
from urllib.parse import urlsplit

import pytest
from prometheus_client.openmetrics.parser import text_string_to_metric_families

from gputui.export.server import Exporter
from tests.export.export_helpers import FakeSource, fetch, parse


def request(exporter: Exporter, method: str, path: str, **headers: str) -> tuple[int, http.client.HTTPMessage, bytes]:
    """(status, headers, body) of one request."""
    address = urlsplit(exporter.url)
    conn = http.client.HTTPConnection(address.hostname or "", address.port, timeout=10)
    try:
        conn.request(method, path, headers=headers)
        response = conn.getresponse()
        return response.status, response.headers, response.read()
    finally:
        conn.close()


def test_root_links_to_the_metrics(served: tuple[Exporter, FakeSource]) -> None:
    status, headers, body = request(served[0], "GET", "/")
    assert status == 200
    assert headers["Content-Type"].startswith("text/html")
    assert b'<a href="/metrics">' in body


@pytest.mark.parametrize("path", ["/x", "/favicon.ico", "/metrics/", "/metricsx", "/api/v1/query", "/../metrics"])
def test_any_other_path_is_404(served: tuple[Exporter, FakeSource], path: str) -> None:
    status, _, body = request(served[0], "GET", path)
    assert status == 404
    assert b"gputui_up" not in body


def test_a_query_string_changes_nothing(served: tuple[Exporter, FakeSource]) -> None:
    _, _, plain = request(served[0], "GET", "/metrics")
    status, _, asked = request(served[0], "GET", "/metrics?name[]=gputui_up")
    assert status == 200
    assert asked == plain


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "OPTIONS", "PATCH", "TRACE", "BREW"])
def test_methods_but_get_and_head_are_405(served: tuple[Exporter, FakeSource], method: str) -> None:
    status, headers, body = request(served[0], method, "/metrics")
    assert status == 405
    assert headers["Allow"] == "GET, HEAD"
    assert b"gputui_up" not in body


def test_head_says_what_get_would_send_without_the_body(served: tuple[Exporter, FakeSource]) -> None:
    _, got_headers, got = request(served[0], "GET", "/metrics")
    status, headers, body = request(served[0], "HEAD", "/metrics")
    assert status == 200
    assert body == b""
    assert headers["Content-Length"] == str(len(got)) == got_headers["Content-Length"]
    assert headers["Content-Type"] == got_headers["Content-Type"]


def test_gzip_and_openmetrics_as_prometheus_asks(served: tuple[Exporter, FakeSource]) -> None:
    """Prometheus asks for OpenMetrics and gzip, and gets them: the same series as the text page."""
    accept = {"Accept": "application/openmetrics-text;version=1.0.0", "Accept-Encoding": "gzip"}
    _, headers, body = request(served[0], "GET", "/metrics", **accept)
    assert headers["Content-Encoding"] == "gzip"
    assert headers["Content-Type"].startswith("application/openmetrics-text")
    families = list(text_string_to_metric_families(gzip.decompress(body).decode()))
    temperatures = [s.value for f in families for s in f.samples if s.name == "DCGM_FI_DEV_GPU_TEMP"]
    text_series, _ = parse(fetch(served[0].url)[0])
    assert temperatures == [v for _, v in text_series["DCGM_FI_DEV_GPU_TEMP"]] == [71.0, 35.0]


def test_the_server_header_names_no_python(served: tuple[Exporter, FakeSource]) -> None:
    assert "Python" not in request(served[0], "GET", "/")[1]["Server"]
