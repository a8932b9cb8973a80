"""The /metrics page: rendered once per reading and format, then the same bytes for every scrape until the next.

Rendering the exposition of 8 GPUs takes about 10 ms of CPU (prometheus-client writing ~650 series), under the
GIL: done per scrape, 50 scrapers would queue for half a second each, and any local user could make the exporter
busy by asking often. A scrape only copies bytes; the formats (prometheus-client picks text or OpenMetrics from the
Accept header, gzip from Accept-Encoding) are each rendered at most once per reading, on the first scrape that
asks for it, while the others that want it wait for that one.
"""

from __future__ import annotations

import gzip
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from prometheus_client.exposition import choose_encoder, gzip_accepted
from prometheus_client.metrics_core import Metric

from gputui.export.metrics import ExportState, metric_families
from gputui.metric_schema import HOSTNAME_LABEL, HostnameLabel

# Formats kept per reading: Prometheus asks for one, a person's curl another. The Accept header is the client's
# text (any version number makes another format), so the pages beyond these are rendered for their scrape and not
# kept, lest a client fill the memory with a page per version it makes up.
MAX_PAGES = 4


@dataclass(frozen=True)
class Page:
    """One answer's body and the headers that describe it."""

    body: bytes
    content_type: str
    content_encoding: str | None = None


class SnapshotCollector:
    """A prometheus-client collector that renders one state, and does nothing else."""

    def __init__(self, state: Callable[[], ExportState], *, hostname_label: HostnameLabel = HOSTNAME_LABEL) -> None:
        self._state = state
        self._hostname_label = hostname_label

    def collect(self) -> Iterable[Metric]:
        return metric_families(self._state(), hostname_label=self._hostname_label)

    def describe(self) -> list[Metric]:
        # Without describe(), registering would call collect(); the names vary with the machine anyway.
        return []


class MetricsPage:
    """The newest state's page in each format asked for; `state` is read on each scrape (the sampling thread
    replaces it whole), and a new state drops the pages of the old one."""

    def __init__(self, state: Callable[[], ExportState], *, hostname_label: HostnameLabel = HOSTNAME_LABEL) -> None:
        self._state = state
        self._hostname_label = hostname_label
        self._lock = threading.Lock()
        self._rendered_for: ExportState | None = None
        self._pages: dict[tuple[str, bool], Page] = {}

    def get(self, accept: str, accept_encoding: str) -> Page:
        """The page for a scrape's Accept and Accept-Encoding headers ("" where it sent none)."""
        encoder, content_type = choose_encoder(accept)
        gzipped = gzip_accepted(accept_encoding)
        state = self._state()
        with self._lock:
            if state is not self._rendered_for:
                self._rendered_for, self._pages = state, {}
            page = self._pages.get((content_type, gzipped))
            if page is None:
                body = encoder(SnapshotCollector(lambda: state, hostname_label=self._hostname_label))
                page = Page(gzip.compress(body), content_type, "gzip") if gzipped else Page(body, content_type)
                if len(self._pages) < MAX_PAGES:
                    self._pages[(content_type, gzipped)] = page
        return page
