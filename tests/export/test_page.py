"""The /metrics page: rendered once per reading and format, the same bytes for every scrape of that reading."""

from __future__ import annotations

import gzip
from collections.abc import Iterable
from dataclasses import replace

import pytest
from prometheus_client.metrics_core import Metric

from gputui.export import page as page_module
from gputui.export.metrics import ExportState, metric_families
from gputui.export.page import MAX_PAGES, MetricsPage
from tests.export.export_helpers import SYSTEM, make_snapshot, render

OPENMETRICS = "application/openmetrics-text;version=1.0.0"


@pytest.fixture
def renders(monkeypatch: pytest.MonkeyPatch) -> list[ExportState]:
    """The states rendered, one entry per rendering."""
    seen: list[ExportState] = []

    def counted(state: ExportState, **options: object) -> Iterable[Metric]:
        seen.append(state)
        return metric_families(state, **options)  # type: ignore[arg-type]

    monkeypatch.setattr(page_module, "metric_families", counted)
    return seen


def test_one_rendering_per_reading_shared_by_every_scrape(renders: list[ExportState]) -> None:
    first = ExportState(system=SYSTEM, snapshot=make_snapshot())
    second = replace(first, snapshot=make_snapshot(t=first.snapshot.timestamp + 1))  # type: ignore[union-attr]
    state = [first]
    page = MetricsPage(lambda: state[0])
    pages = [page.get("", "") for _ in range(5)]
    state[0] = second
    newer = page.get("", "")
    assert renders == [first, second]
    assert all(p.body is pages[0].body for p in pages)
    assert (pages[0].body.decode(), newer.body.decode()) == (render(first), render(second))


def test_each_format_once_gzip_included(renders: list[ExportState]) -> None:
    state = ExportState(system=SYSTEM, snapshot=make_snapshot())
    page = MetricsPage(lambda: state)
    plain = page.get("", "")
    zipped = page.get("", "gzip, deflate")
    openmetrics = page.get(OPENMETRICS, "")
    for _ in range(3):
        page.get("", "gzip")
        page.get(OPENMETRICS, "")
    assert len(renders) == 3
    assert (zipped.content_encoding, plain.content_encoding) == ("gzip", None)
    assert gzip.decompress(zipped.body) == plain.body
    assert openmetrics.content_type.startswith("application/openmetrics-text")
    assert openmetrics.body.endswith(b"# EOF\n")


def test_formats_a_client_makes_up_are_not_kept(renders: list[ExportState]) -> None:
    """Each version number in an Accept header is a format of its own: past MAX_PAGES, each is rendered for its
    scrape and dropped, so a client cannot fill the memory with pages."""
    state = ExportState(system=SYSTEM, snapshot=make_snapshot())
    page = MetricsPage(lambda: state)
    made_up = [f"application/openmetrics-text;version=1.0.{n}" for n in range(MAX_PAGES + 3)]
    for accept in made_up:
        page.get(accept, "")
    assert len(renders) == MAX_PAGES + 3
    for accept in made_up:
        assert page.get(accept, "").content_type.startswith("application/openmetrics-text; version=1.0.")
    assert len(renders) == MAX_PAGES + 3 + 3  # the first MAX_PAGES kept, the 3 beyond rendered again
