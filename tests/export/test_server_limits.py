"""`Exporter` under a flood, on 127.0.0.1 with its real limits: the connections beyond its workers wait in the
kernel's backlog (not in threads of their own), and one that never sends its request is closed at the deadline.

The bounds are generous: WAIT_S where the state is reached in milliseconds, ten deadlines for a deadline."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import ExitStack

import pytest

from gputui.export.httpd import DEADLINE_S, WORKERS
from gputui.export.server import Exporter
from gputui.session.sampling import Sampler
from tests.export.export_helpers import FakeSource, accept_queue, closed_by_peer, fetch, idle_connections, wait_until

WAIT_S = 10.0
FLOOD = 40


@pytest.fixture
def exporter(source: FakeSource) -> Iterator[Exporter]:
    with Exporter(Sampler(source), source.system, port=0, interval=3600) as started:
        yield started


def _port(exporter: Exporter) -> int:
    assert exporter.address is not None
    return exporter.address[1]


def test_a_flood_of_idle_connections_waits_in_the_backlog_not_in_threads(exporter: Exporter) -> None:
    before = {t for t in threading.enumerate()}
    with ExitStack() as stack:
        for conn in idle_connections(_port(exporter), FLOOD):
            stack.callback(conn.close)
        assert wait_until(lambda: accept_queue(_port(exporter)) == FLOOD - WORKERS, WAIT_S), (
            f"{accept_queue(_port(exporter))} of {FLOOD} connections wait in the backlog, not {FLOOD - WORKERS}"
        )
        started = [t for t in threading.enumerate() if t not in before]
        assert len(started) <= WORKERS


def test_a_connection_that_never_sends_its_request_is_closed(exporter: Exporter) -> None:
    with socket.create_connection(("127.0.0.1", _port(exporter)), timeout=10 * DEADLINE_S) as idle:
        idle.sendall(b"GET /metrics HTTP/1.1\r\n")  # and never the blank line that ends the request
        assert closed_by_peer(idle)
    assert "gputui_up" in fetch(exporter.url)[0]
