"""What the exporter answers: /metrics, and / with a link to it; any other path is 404, any method but GET and HEAD
405. Nothing else is served, so nothing else needs to be safe against the local users who can reach the port."""

from __future__ import annotations

from http import HTTPStatus
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import urlsplit

from gputui import __version__
from gputui.export.page import MetricsPage, Page

METRICS_PATH = "/metrics"
ALLOWED = ("GET", "HEAD")
INDEX = Page(
    b'<html><head><title>gputui exporter</title></head>\n<body><h1>gputui exporter</h1>\n<p><a href="/metrics">'
    b"Metrics</a></p></body></html>\n",
    "text/html; charset=utf-8",
)
NOT_FOUND = Page(b"404 not found: the metrics are at /metrics\n", "text/plain; charset=utf-8")
NOT_ALLOWED = Page(b"405 method not allowed: GET or HEAD\n", "text/plain; charset=utf-8")


class ExportHandler(BaseHTTPRequestHandler):
    """One connection, one request (HTTP/1.0: the connection closes after the answer)."""

    server_version = f"gputui/{__version__}"
    sys_version = ""  # the Server header names no Python version

    def __init__(self, request: Any, client_address: Any, server: Any, *, page: MetricsPage) -> None:
        self._page = page  # set first: the base class answers the request inside its __init__
        super().__init__(request, client_address, server)

    def parse_request(self) -> bool:
        """The request line and headers, answered 405 here where the method is neither GET nor HEAD."""
        if not super().parse_request():
            return False
        if self.command in ALLOWED:
            return True
        self._answer(HTTPStatus.METHOD_NOT_ALLOWED, NOT_ALLOWED, body=True)
        return False

    def do_GET(self) -> None:
        self._route(body=True)

    def do_HEAD(self) -> None:
        self._route(body=False)

    def _route(self, *, body: bool) -> None:
        path = urlsplit(self.path).path  # a query string is ignored
        if path == METRICS_PATH:
            page = self._page.get(self.headers.get("Accept", ""), self.headers.get("Accept-Encoding", ""))
            self._answer(HTTPStatus.OK, page, body=body)
        elif path == "/":
            self._answer(HTTPStatus.OK, INDEX, body=body)
        else:
            self._answer(HTTPStatus.NOT_FOUND, NOT_FOUND, body=body)

    def _answer(self, status: HTTPStatus, page: Page, *, body: bool) -> None:
        self.send_response(status)
        self.send_header("Content-Type", page.content_type)
        if page.content_encoding is not None:
            self.send_header("Content-Encoding", page.content_encoding)
        self.send_header("Content-Length", str(len(page.body)))
        if status == HTTPStatus.METHOD_NOT_ALLOWED:
            self.send_header("Allow", ", ".join(ALLOWED))
        self.end_headers()
        if body:
            self.wfile.write(page.body)

    def log_message(self, format: str, *args: Any) -> None:
        """Nothing: each request would write a line of the client's choosing to the exporter's log."""
