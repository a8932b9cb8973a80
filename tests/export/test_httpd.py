"""The pooled server on 127.0.0.1 with a line protocol: workers bounded, a burst held in the backlog, slow clients
cut off at their deadline while the others are served.

Time bounds here are generous (10 s where the answer takes milliseconds, or 20 deadlines of 0.5 s): only a server
that never frees a worker, or drops the connections beyond its backlog, fails them.
"""

from __future__ import annotations

import contextlib
import socket
import socketserver
import threading
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from functools import partial

import pytest

from gputui.export.httpd import PooledHTTPServer
from tests.export.export_helpers import accept_queue, closed_by_peer, idle_connections, wait_until

BIG = 32 << 20  # more than the socket buffers of both ends hold: writing it blocks until the client reads
WAIT_S = 10.0


class LineHandler(socketserver.StreamRequestHandler):
    """Reads one line; answers `big` with BIG bytes and anything else with `ok`."""

    def __init__(self, request: socket.socket, client_address: object, server: object, *, entered: list[int]) -> None:
        self._entered = entered
        super().__init__(request, client_address, server)  # type: ignore[arg-type]

    def handle(self) -> None:
        self._entered.append(1)
        line = self.rfile.readline()
        self.wfile.write(b"x" * BIG if line == b"big\n" else b"ok\n")


@contextmanager
def serving(*, workers: int, deadline_s: float) -> Iterator[tuple[PooledHTTPServer, list[int]]]:
    """A server on a free loopback port for the block, its accept loop on a thread; closed at the end."""
    entered: list[int] = []
    server = PooledHTTPServer(
        ("127.0.0.1", 0), partial(LineHandler, entered=entered), workers=workers, deadline_s=deadline_s
    )
    loop = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    loop.start()
    try:
        yield server, entered
    finally:
        server.shutdown()
        loop.join()
        server.server_close()


def ask(port: int, line: bytes = b"hi\n") -> bytes:
    """One request on a new connection: its whole answer, or an error past WAIT_S."""
    with socket.create_connection(("127.0.0.1", port), timeout=WAIT_S) as conn:
        conn.sendall(line)
        answer = b""
        while chunk := conn.recv(65536):
            answer += chunk
        return answer


def port_of(server: PooledHTTPServer) -> int:
    return int(server.server_address[1])


def test_slow_senders_leave_a_free_worker_to_the_others_and_closing_cuts_them() -> None:
    """Workers - 1 connections that never finish their request: a scrape is still answered at once (the deadline
    is a minute, so only the free worker answers it within WAIT_S), and closing the server ends them all."""
    with ExitStack() as stack, serving(workers=4, deadline_s=60) as (server, entered):
        slow = idle_connections(port_of(server), 3)
        for conn in slow:
            stack.callback(conn.close)
            conn.sendall(b"GET /metr")
        assert wait_until(lambda: len(entered) == 3)
        assert ask(port_of(server)) == b"ok\n"
        closing = threading.Thread(target=lambda: (server.shutdown(), server.server_close()))
        closing.start()
        closing.join(WAIT_S)
        assert not closing.is_alive(), "closing the server waited for its slow clients"
        assert all(closed_by_peer(conn) for conn in slow)


def test_slowloris_and_idle_connections_are_cut_at_their_deadline(capfd: pytest.CaptureFixture[str]) -> None:
    """More stalled connections than workers, one of them sending a byte every 20 ms (a timeout per read would
    never fire): each is closed by the server, and a request behind them all is answered once they are."""
    with ExitStack() as stack, serving(workers=2, deadline_s=0.5) as (server, _):
        idle = idle_connections(port_of(server), 3)
        for conn in idle:
            stack.callback(conn.close)
        trickling = socket.create_connection(("127.0.0.1", port_of(server)), timeout=WAIT_S)
        stack.callback(trickling.close)
        cut = threading.Event()

        def trickle() -> None:
            try:
                while not cut.wait(0.02):
                    trickling.send(b"x")
            except OSError:  # EPIPE or a reset: the server closed it
                cut.set()

        trickler = threading.Thread(target=trickle)
        trickler.start()
        stack.callback(trickler.join)
        stack.callback(cut.set)
        assert ask(port_of(server)) == b"ok\n"
        assert all(closed_by_peer(conn) for conn in idle)
        assert cut.wait(WAIT_S), "the connection trickling its request was never closed"
    assert capfd.readouterr().err == ""  # routine for a server anyone can reach: no traceback per client


def test_a_client_that_never_reads_its_answer_is_cut_off() -> None:
    """One worker, held by a client that asks for more than the socket buffers hold and reads nothing: after its
    deadline the next client is answered, and the first finds its answer cut short."""
    with serving(workers=1, deadline_s=0.5) as (server, entered), socket.socket() as stalled:
        stalled.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        stalled.settimeout(WAIT_S)
        stalled.connect(("127.0.0.1", port_of(server)))
        stalled.sendall(b"big\n")
        assert wait_until(lambda: len(entered) == 1)
        assert ask(port_of(server)) == b"ok\n"
        received = 0
        with contextlib.suppress(ConnectionResetError):
            while chunk := stalled.recv(1 << 20):
                received += len(chunk)
        assert received < BIG


def test_a_burst_beyond_the_workers_waits_in_the_backlog_then_is_served() -> None:
    """Both workers held: a burst of 100 connections all complete their handshake (the kernel queues them; a
    backlog of 5 would drop the SYNs beyond it for a second or more), wait unaccepted, and are answered once the
    workers are free; the workers are never more than two threads."""
    before = set(threading.enumerate())
    with ExitStack() as stack, serving(workers=2, deadline_s=60) as (server, entered):
        port = port_of(server)
        holding = idle_connections(port, 2)
        assert wait_until(lambda: len(entered) == 2)
        burst = idle_connections(port, 100)
        for conn in burst:
            stack.callback(conn.close)
            conn.sendall(b"hi\n")
        assert wait_until(lambda: accept_queue(port) == 100)
        for conn in holding:
            conn.close()
        for conn in burst:
            assert conn.recv(16) == b"ok\n"
        workers = [t for t in threading.enumerate() if t not in before and t.name.startswith("gputui-export-http")]
        assert len(workers) == 2
