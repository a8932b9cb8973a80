"""Real HTTP servers on 127.0.0.1 for the alert tests: one that records what it is sent (and can answer 500 first
or redirect), and one that accepts connections and never answers."""

from __future__ import annotations

import http.server
import json
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any


class Receiver:
    """What the server was sent: (path, body as JSON), in order; `wait_for(n)` waits (bounded) for n of them."""

    def __init__(self) -> None:
        self.posts: list[tuple[str, Any]] = []
        self.failures_left = 0  # answer this many requests with 500 first
        self.redirect_to: str | None = None  # answer 302 to this path instead of taking the message
        self._changed = threading.Condition()
        self.url = ""

    def record(self, path: str, body: bytes) -> int:
        with self._changed:
            self.posts.append((path, json.loads(body)))
            self._changed.notify_all()
            if self.failures_left:
                self.failures_left -= 1
                return 500
            return 302 if self.redirect_to is not None and path != self.redirect_to else 200

    def wait_for(self, count: int, timeout: float = 20.0) -> list[tuple[str, Any]]:
        with self._changed:
            assert self._changed.wait_for(lambda: len(self.posts) >= count, timeout), self.posts
            return list(self.posts)

    def wait_for_body(self, wanted: Callable[[Any], bool], timeout: float = 20.0) -> tuple[str, Any]:
        """The first post whose body is `wanted`, waited for (bounded)."""
        with self._changed:
            assert self._changed.wait_for(lambda: any(wanted(body) for body in self.bodies), timeout), self.posts
            return next(post for post in self.posts if wanted(post[1]))

    @property
    def bodies(self) -> list[Any]:
        return [body for _, body in self.posts]


@contextmanager
def receiving(path: str = "/hook/T0SECRET/B0SECRET") -> Iterator[Receiver]:
    """A recording server in a thread, on a free port; its URL (with `path`) in `receiver.url`."""
    receiver = Receiver()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            status = receiver.record(self.path, body)
            self.send_response(status)
            if status == 302:
                self.send_header("Location", receiver.redirect_to or "/")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    receiver.url = f"http://127.0.0.1:{server.server_address[1]}{path}"
    try:
        yield receiver
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


@contextmanager
def hanging(path: str = "/hook/T0SECRET") -> Iterator[str]:
    """A URL whose server accepts the connection (the kernel does, in the backlog) and never answers."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)
        yield f"http://127.0.0.1:{listener.getsockname()[1]}{path}"


def refused_url(path: str = "/hook/T0SECRET") -> str:
    """A URL on a port nothing listens on."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}{path}"
