"""The sources' tests' fixtures: a Prometheus that is installed, or a skip (a failure under CI) saying why;
and the exporter of a fake machine that the remote source reads (tests/export/conftest.py's `served`)."""

from __future__ import annotations

import pytest

# The exporter fixture tests/sources/test_remote.py uses is export's.
from tests.export.conftest import served  # noqa: F401
from tests.sources.prometheus.prometheus_server import require


@pytest.fixture
def prometheus_installed() -> None:
    require("prometheus")
    require("promtool")
