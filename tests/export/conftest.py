"""Fixtures: an exporter of a fake machine on a free loopback port, shared by a module's read-only tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from gputui.export.server import Exporter
from gputui.session.sampling import Sampler
from tests.export.export_helpers import FakeSource


@pytest.fixture
def source() -> FakeSource:
    return FakeSource()


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[Exporter, FakeSource]]:
    """Started once per module (stopping takes up to the server's 0.5 s poll); the long interval keeps the
    background sampler out of the way, so the served reading is the one `start()` took."""
    source = FakeSource()
    with Exporter(Sampler(source), source.system, port=0, interval=3600) as exporter:
        yield exporter, source
