"""Fixtures: a fake source and an exporter on a free loopback port."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from export_helpers import FakeSource

from gputui.export.server import Exporter


@pytest.fixture
def source() -> FakeSource:
    return FakeSource()


@pytest.fixture
def exporter(source: FakeSource) -> Iterator[Exporter]:
    """An exporter on a free loopback port; the long interval keeps the background sampler out of the way."""
    with Exporter(source, source.system, bind="127.0.0.1", port=0, interval=3600) as running:
        yield running
