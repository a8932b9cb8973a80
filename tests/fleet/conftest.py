"""The fleet tests' one fixture: a Prometheus that is installed, or a skip (a failure under CI) saying why."""

from __future__ import annotations

import pytest

from tests.fleet.prometheus_server import require


@pytest.fixture
def prometheus_installed() -> None:
    require("prometheus")
    require("promtool")
