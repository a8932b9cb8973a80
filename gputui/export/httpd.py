"""The exporter's HTTP server: a fixed pool of worker threads, a listen backlog that holds a burst, and a deadline
on every connection.

The port is open to every local user (and to the network with --bind), so what a client does must not cost the
exporter more than a bounded share: a flood of connections waits in the kernel's backlog instead of starting a
thread each (nothing is accepted while every worker is busy, so it cannot run the process out of threads or file
descriptors either), and a client that sends its request a byte at a time (slowloris) or never reads its answer is
cut off at its deadline, which frees its worker for the next connection in the backlog, in arrival order.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import socketserver
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

log = logging.getLogger(__name__)

# Connections served at once. A scrape only copies a page rendered once per reading (gputui/export/page.py), so a
# few workers answer dozens of scrapers; each idle or slow connection holds one until its deadline.
WORKERS = 8
# The kernel's queue of connections not yet accepted: a burst of scrapers beyond the workers waits there rather
# than being dropped, which makes a client retry its SYN 1, 3, 7 s later (the stdlib's default is 5).
BACKLOG = 128
# Seconds a connection may take from its accept to its last byte sent: a scrape over loopback takes milliseconds
# and Prometheus times out at 10 s by default, so a scraper queued behind WORKERS stalled connections still gets
# its answer in time.
DEADLINE_S = 5.0
# How long the accept loop waits for a free worker before it checks the deadlines and a shutdown again.
SLOT_WAIT_S = 0.1


class PooledHTTPServer(socketserver.TCPServer):
    """A TCPServer whose requests run on `workers` threads, each connection cut off `deadline_s` after its accept.

    Deadlines are enforced by the accept loop itself (service_actions, at least every half second): shutting a
    connection's socket down wakes its worker out of a blocked read or write, whatever the client does meanwhile.
    """

    allow_reuse_address = True  # a restarted exporter gets its port back while old connections sit in TIME_WAIT
    request_queue_size = BACKLOG

    def __init__(
        self,
        address: tuple[str, int],
        handler: Any,
        *,
        workers: int = WORKERS,
        deadline_s: float = DEADLINE_S,
    ) -> None:
        """`address` is a host name or address and a port (0: any free one); socket.gaierror where the host has
        no address, OSError where it cannot be bound."""
        host, port = address
        family, _, _, _, sockaddr = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
        self.address_family = family  # an IPv6 address needs an AF_INET6 socket
        self.deadline_s = deadline_s
        self._slots = threading.BoundedSemaphore(workers)
        self._pool = ThreadPoolExecutor(workers, thread_name_prefix="gputui-export-http")
        self._deadlines: dict[socket.socket, float] = {}
        self._lock = threading.Lock()
        super().__init__((str(sockaddr[0]), port), handler)

    def get_request(self) -> tuple[Any, Any]:
        """Accept only once a worker is free: until then the connection stays in the kernel's backlog."""
        if not self._slots.acquire(timeout=SLOT_WAIT_S):
            raise OSError("every worker is busy")  # socketserver skips this round; the loop checks deadlines
        try:
            return super().get_request()
        except BaseException:
            self._slots.release()
            raise

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._lock:
            self._deadlines[request] = time.monotonic() + self.deadline_s
        try:
            self._pool.submit(self._serve, request, client_address)
        except BaseException:
            self._done(request)
            raise

    def _serve(self, request: socket.socket, client_address: Any) -> None:
        try:
            self.finish_request(request, client_address)
        except Exception:
            self.handle_error(request, client_address)
        finally:
            self._done(request)
            self.shutdown_request(request)
            self._slots.release()

    def _done(self, request: socket.socket) -> None:
        with self._lock:
            self._deadlines.pop(request, None)

    def service_actions(self) -> None:
        """Cut off the connections past their deadline; their workers then finish with an error and are free."""
        now = time.monotonic()
        with self._lock:
            late = [conn for conn, deadline in self._deadlines.items() if deadline <= now]
            for conn in late:
                del self._deadlines[conn]
                _cut(conn)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hangs up or is cut off is routine, and said only at debug level (any local user can cause
        it at will); anything else is a bug of the exporter, logged with its traceback."""
        error = sys.exc_info()[1]
        if isinstance(error, OSError):
            log.debug("connection from %s ended: %s", client_address, error)
        else:
            log.error("answering %s failed", client_address, exc_info=True)

    def server_close(self) -> None:
        """Close the port, cut off every open connection and wait for the workers: prompt whatever the clients do."""
        super().server_close()
        with self._lock:
            for conn in self._deadlines:
                _cut(conn)
            self._deadlines.clear()
        self._pool.shutdown(wait=True)


def _cut(conn: socket.socket) -> None:
    """Shut the connection down both ways: a worker blocked reading it reads end-of-file, one writing gets EPIPE."""
    with contextlib.suppress(OSError):  # the client has gone already
        conn.shutdown(socket.SHUT_RDWR)
