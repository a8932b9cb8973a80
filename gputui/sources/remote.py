"""Read another server's GPUs by scraping its exporter's /metrics: a Source (gputui/session/fleet_poll.py polls many).

It reads what `gputui export` writes, and also a plain dcgm-exporter (the same names), which then gives GPU
metrics only. The page is parsed here; the series become a Snapshot in gputui/sources/series.py, the reader
`--prometheus` shares.
"""

from __future__ import annotations

import time
import urllib.error
import urllib.parse
import urllib.request
from collections import defaultdict
from collections.abc import Callable
from http.client import HTTPException
from typing import cast

from prometheus_client.parser import text_string_to_metric_families

from gputui.foreign_text import clean
from gputui.model import Snapshot, SystemInfo
from gputui.sources.base import SourceUnavailable
from gputui.sources.series import Labels, RemoteFormatError, read_snapshot

DEFAULT_PORT = 9400
DEFAULT_TIMEOUT_S = 2.0
MAX_BODY_BYTES = 32 * 1024 * 1024  # a 8-GPU exposition is ~100 KB; this only stops a runaway answer


class RemoteUnreachable(SourceUnavailable):
    """The exporter did not answer (down, refused, timed out, HTTP error): show it as unreachable and retry."""


def parse_targets(text: str) -> tuple[str, ...]:
    """`host1:9400,host2` (as `--remote` takes it) -> the exporters' /metrics URLs; ValueError names a bad one."""
    targets = tuple(part.strip() for part in text.split(",") if part.strip())
    if not targets:
        raise ValueError("no exporter given (expected host:port[,host:port...], e.g. gpu01:9400,gpu02:9400)")
    return tuple(dict.fromkeys(metrics_url(target) for target in targets))


def metrics_url(target: str) -> str:
    """`host`, `host:9400` or a full URL -> the URL of its /metrics; ValueError with the reason on bad input."""
    text = target.strip()
    if not text:
        raise ValueError("empty exporter address (expected host:port, e.g. gpu01:9400)")
    parsed = urllib.parse.urlsplit(text if "://" in text else f"http://{text}")
    if parsed.scheme not in ("http", "https"):
        raise ValueError(f"not an http(s) address: {target!r}")
    try:
        port = parsed.port
    except ValueError:
        raise ValueError(f"bad port in {target!r} (expected host:port, e.g. gpu01:9400)") from None
    if not parsed.hostname:
        raise ValueError(f"no host in {target!r} (expected host:port, e.g. gpu01:9400)")
    host = f"[{parsed.hostname}]" if ":" in parsed.hostname else parsed.hostname
    path = parsed.path if parsed.path not in ("", "/") else "/metrics"
    return urllib.parse.urlunsplit((parsed.scheme, f"{host}:{port or DEFAULT_PORT}", path, parsed.query, ""))


class RemoteSource:
    """A Source that reads one exporter over HTTP. Each `sample()` is one scrape, bounded by `timeout`."""

    def __init__(
        self, target: str, *, timeout: float = DEFAULT_TIMEOUT_S, clock: Callable[[], float] = time.time
    ) -> None:
        self.url = metrics_url(target)
        self._timeout = timeout
        self._clock = clock
        # Monitoring traffic stays on the cluster network: a proxy from the environment would break it.
        self._opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))

    @property
    def address(self) -> str:
        """host:port, for messages and for a name until the exporter has told its hostname."""
        return urllib.parse.urlsplit(self.url).netloc

    def open(self) -> SystemInfo:
        return self.sample().system

    def sample(self) -> Snapshot:
        return parse_exposition(self._fetch(), fallback_hostname=self.address, now=self._clock())

    def close(self) -> None:
        """Nothing is held between scrapes."""

    def _fetch(self) -> str:
        request = urllib.request.Request(self.url, headers={"Accept": "text/plain"})
        try:
            with self._opener.open(request, timeout=self._timeout) as response:
                body = cast(bytes, response.read(MAX_BODY_BYTES + 1))
        except urllib.error.HTTPError as exc:
            answer = f"HTTP {exc.code} {clean(str(exc.reason))}"  # the reason phrase is the other server's
            raise RemoteUnreachable(f"{self.address}: the exporter answered {answer}") from None
        except urllib.error.URLError as exc:
            raise RemoteUnreachable(f"{self.address}: unreachable ({_reason(exc.reason)})") from None
        except (TimeoutError, OSError, HTTPException) as exc:
            raise RemoteUnreachable(f"{self.address}: unreachable ({_reason(exc)})") from None
        if len(body) > MAX_BODY_BYTES:
            raise RemoteFormatError(f"{self.address}: the answer is larger than {MAX_BODY_BYTES // 2**20} MiB")
        try:
            return body.decode("utf-8")
        except UnicodeDecodeError:
            raise RemoteFormatError(f"{self.address}: the answer is not UTF-8 text") from None


def _reason(reason: object) -> str:
    if isinstance(reason, TimeoutError) or "timed out" in str(reason):
        return "timed out"
    if isinstance(reason, ConnectionRefusedError):
        return "connection refused: is `gputui export` running there?"
    return str(getattr(reason, "strerror", None) or reason)


def parse_exposition(text: str, *, fallback_hostname: str, now: float) -> Snapshot:
    """Prometheus text -> Snapshot, reading gputui's and dcgm-exporter's names; RemoteFormatError if neither."""
    series: dict[str, list[tuple[Labels, float]]] = defaultdict(list)
    try:
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                name = sample.name
                if family.type == "counter" and name == f"{family.name}_total":
                    # The parser names every counter sample `_total`; dcgm-exporter's counters have no such suffix.
                    name = family.name
                # Label values are the other server's text (its host name, its processes' names): cleaned here.
                series[name].append(({key: clean(value) for key, value in sample.labels.items()}, sample.value))
    except ValueError as exc:
        raise RemoteFormatError(clean(f"not Prometheus metrics: {exc}")) from None  # the parser quotes the line
    return read_snapshot(series, fallback_hostname=fallback_hostname, now=now)
