"""A small client of Prometheus's HTTP API (`/api/v1/query` and `/api/v1/query_range`), on the
standard library alone.

Every request has a timeout (on the whole answer, not each read) and a bounded answer (bytes and series), and
every failure is a PrometheusError whose message says what to do: down, refused, timed out, TLS, an HTTP error
with Prometheus's own error text, an answer that is not its JSON. Warnings Prometheus sends with an answer (partial
data) come back with it.

Credentials never come from the command line, where `ps` and shell history show them: a bearer token from
GPUTUI_PROMETHEUS_TOKEN or the file GPUTUI_PROMETHEUS_TOKEN_FILE names, or basic auth from GPUTUI_PROMETHEUS_USER
and GPUTUI_PROMETHEUS_PASSWORD (or _PASSWORD_FILE). TLS is verified unless the caller turns it off explicitly
(`verify_tls=False`, which `notices` then says); GPUTUI_PROMETHEUS_CA_FILE names a CA bundle for a private CA.
No proxy is taken from the environment unless asked (`proxy_from_env=True`), as `--remote` does: monitoring
traffic stays on the cluster network, where a desktop's HTTP(S)_PROXY would send it out and break it.
"""

from __future__ import annotations

import base64
import json
import math
import os
import ssl
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from http.client import HTTPException
from pathlib import Path
from typing import Any

from gputui.foreign_text import clean
from gputui.sources.base import SourceUnavailable
from gputui.sources.series import Labels
from gputui.trusted_file import first_line

DEFAULT_TIMEOUT_S = 5.0
MAX_ANSWER_BYTES = 128 * 2**20  # ~100k series of gputui's labels; bounds a runaway answer, not a fleet
MAX_SERIES = 200_000  # 200 nodes x 8 GPUs x a few dozen names per query, with room
_ERROR_BODY_BYTES = 64 * 1024
_CHUNK = 1 << 20

TOKEN_ENV = "GPUTUI_PROMETHEUS_TOKEN"
USER_ENV = "GPUTUI_PROMETHEUS_USER"
PASSWORD_ENV = "GPUTUI_PROMETHEUS_PASSWORD"
CA_FILE_ENV = "GPUTUI_PROMETHEUS_CA_FILE"
FILE_SUFFIX = "_FILE"

Point = tuple[float, float]  # (unix time, value)


class PrometheusError(SourceUnavailable):
    """Prometheus could not give an answer; the message says why and, where it can, what to do."""


class PrometheusUnreachable(PrometheusError):
    """No answer: down, refused, timed out, name or TLS failure."""


class PrometheusQueryError(PrometheusError):
    """Prometheus answered with an error (HTTP status and its own error text)."""


class PrometheusFormatError(PrometheusError):
    """An answer that is not Prometheus's JSON, or larger than the bounds."""


class CredentialsError(ValueError):
    """The credentials' environment variables are contradictory or name a file that cannot be read."""


@dataclass(frozen=True, slots=True)
class QueryResult:
    """The series of one answer, each its labels and points (one for an instant query), and Prometheus's warnings
    (partial data: a shard or remote read that failed)."""

    series: tuple[tuple[Labels, tuple[Point, ...]], ...]
    warnings: tuple[str, ...] = ()


def credentials_header(env: Mapping[str, str] | None = None) -> str | None:
    """The Authorization header the environment asks for (bearer token or basic auth), or None.

    CredentialsError when both kinds are given, a value and its _FILE twin both, a user without a password, or a
    file that cannot be read.
    """
    env = os.environ if env is None else env
    token = _secret(env, TOKEN_ENV)
    user = env.get(USER_ENV) or None
    password = _secret(env, PASSWORD_ENV)
    if token is not None and (user is not None or password is not None):
        raise CredentialsError(f"both a bearer token ({TOKEN_ENV}) and basic auth ({USER_ENV}) are set: keep one")
    if token is not None:
        return f"Bearer {token}"
    if password is not None and user is None:
        raise CredentialsError(f"{PASSWORD_ENV} is set but {USER_ENV} is not")
    if user is not None:
        if password is None:
            raise CredentialsError(f"{USER_ENV} is set but neither {PASSWORD_ENV} nor {PASSWORD_ENV}{FILE_SUFFIX}")
        pair = base64.b64encode(f"{user}:{password}".encode()).decode("ascii")
        return f"Basic {pair}"
    return None


def _secret(env: Mapping[str, str], name: str) -> str | None:
    """A secret from `name` or from the file `name_FILE` names (its first line, as Kubernetes mounts them)."""
    value, path = env.get(name) or None, env.get(name + FILE_SUFFIX) or None
    if value is not None and path is not None:
        raise CredentialsError(f"both {name} and {name}{FILE_SUFFIX} are set: keep one")
    if path is None:
        return value
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CredentialsError(
            f"{name}{FILE_SUFFIX}: cannot read {path}: {getattr(exc, 'strerror', None) or exc}"
        ) from None
    secret = first_line(text)
    if not secret:
        raise CredentialsError(f"{name}{FILE_SUFFIX}: {path} is empty")
    return secret


class PrometheusClient:
    """One Prometheus server. Safe to share between threads: each call opens its own connection."""

    def __init__(
        self,
        url: str,
        *,
        timeout: float = DEFAULT_TIMEOUT_S,
        max_bytes: int = MAX_ANSWER_BYTES,
        max_series: int = MAX_SERIES,
        verify_tls: bool = True,
        proxy_from_env: bool = False,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.url = base_url(url)
        self.timeout = timeout
        self.max_bytes = max_bytes
        self.max_series = max_series
        self.verify_tls = verify_tls
        env = os.environ if env is None else env
        self._authorization = credentials_header(env)
        handlers: list[urllib.request.BaseHandler] = []
        if not proxy_from_env:
            handlers.append(urllib.request.ProxyHandler({}))
        if self.url.startswith("https:"):
            handlers.append(urllib.request.HTTPSHandler(context=_tls_context(verify_tls, env.get(CA_FILE_ENV))))
        self._opener = urllib.request.build_opener(*handlers)

    @property
    def notices(self) -> tuple[str, ...]:
        """What the view must say about this connection's safety."""
        out = []
        if self.url.startswith("https:") and not self.verify_tls:
            out.append(f"TLS verification is OFF for {self.url} (--prometheus-insecure)")
        if self._authorization is not None and self.url.startswith("http:"):
            out.append(f"credentials are sent unencrypted to {self.url} (plain http)")
        return tuple(out)

    def instant(self, query: str, at: float | None = None) -> QueryResult:
        """`/api/v1/query`: the instant vector `query` selects, now or at unix time `at`."""
        params = {"query": query, "timeout": _duration(self.timeout)}
        if at is not None:
            params["time"] = f"{at:.3f}"
        return self._result(self._get("/api/v1/query", params), "vector")

    def range(self, query: str, start: float, end: float, step: float) -> QueryResult:
        """`/api/v1/query_range`: `query` every `step` seconds from `start` to `end` (unix times)."""
        params = {
            "query": query,
            "start": f"{start:.3f}",
            "end": f"{end:.3f}",
            "step": _duration(step),
            "timeout": _duration(self.timeout),
        }
        return self._result(self._get("/api/v1/query_range", params), "matrix")

    # -- the wire ----------------------------------------------------------------------------------------

    def _get(self, path: str, params: Mapping[str, str]) -> dict[str, Any]:
        query = urllib.parse.urlencode(params)
        request = urllib.request.Request(f"{self.url}{path}?{query}" if query else f"{self.url}{path}")
        request.add_header("Accept", "application/json")
        if self._authorization is not None:
            request.add_header("Authorization", self._authorization)
        deadline = time.monotonic() + self.timeout
        try:
            with self._opener.open(request, timeout=self.timeout) as response:
                body = self._read(response, deadline)
        except urllib.error.HTTPError as exc:
            raise self._http_error(exc) from None
        except urllib.error.URLError as exc:
            raise PrometheusUnreachable(f"{self.url}: unreachable ({self._reason(exc.reason)})") from None
        except (TimeoutError, OSError, HTTPException) as exc:
            raise PrometheusUnreachable(f"{self.url}: unreachable ({self._reason(exc)})") from None
        document = _json(body)
        if not isinstance(document, dict) or document.get("status") not in ("success", "error"):
            raise PrometheusFormatError(f"{self.url}: the answer is not Prometheus's API JSON (is it Prometheus?)")
        if document["status"] == "error":
            raise PrometheusQueryError(f"{self.url}: {_error_text(document)}")
        return document

    def _read(self, response: Any, deadline: float) -> bytes:
        """The body, up to max_bytes, within the deadline: a server that trickles is as good as one that hangs."""
        chunks: list[bytes] = []
        size = 0
        while True:
            if time.monotonic() > deadline:
                raise TimeoutError("timed out")
            chunk = response.read(min(_CHUNK, self.max_bytes + 1 - size))
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
            size += len(chunk)
            if size > self.max_bytes:
                raise PrometheusFormatError(
                    f"{self.url}: the answer is larger than {self.max_bytes // 2**20} MiB: narrow it with --match"
                )

    def _http_error(self, exc: urllib.error.HTTPError) -> PrometheusError:
        try:
            document = _json(exc.read(_ERROR_BODY_BYTES))
        except (PrometheusFormatError, OSError, HTTPException):
            document = None
        own = f": {_error_text(document)}" if isinstance(document, dict) and "error" in document else ""
        hint = ""
        if exc.code in (401, 403):
            hint = f" (credentials come from {TOKEN_ENV}[{FILE_SUFFIX}] or {USER_ENV} + {PASSWORD_ENV}[{FILE_SUFFIX}])"
        return PrometheusQueryError(f"{self.url}: HTTP {exc.code} {clean(str(exc.reason))}{own}{hint}")

    def _reason(self, reason: object) -> str:
        if isinstance(reason, TimeoutError) or "timed out" in str(reason):
            return f"timed out after {self.timeout:g} s"
        if isinstance(reason, ConnectionRefusedError):
            return "connection refused: is Prometheus running there?"
        if isinstance(reason, ssl.SSLCertVerificationError):
            return f"TLS certificate not trusted: {reason.verify_message}; name its CA with {CA_FILE_ENV}"
        return str(getattr(reason, "strerror", None) or reason)

    def _result(self, document: dict[str, Any], want: str) -> QueryResult:
        data = document.get("data")
        warnings = document.get("warnings") or []
        if not isinstance(data, dict) or data.get("resultType") != want or not isinstance(data.get("result"), list):
            got = data.get("resultType") if isinstance(data, dict) else None
            raise PrometheusFormatError(f"{self.url}: expected a {want} answer, got {got or 'something else'}")
        result = data["result"]
        if len(result) > self.max_series:
            raise PrometheusFormatError(
                f"{self.url}: more than {self.max_series} series in one answer: narrow it with --match"
            )
        try:
            if want == "vector":
                series = tuple((_labels(s["metric"]), _points([s["value"]])) for s in result)
            else:
                series = tuple((_labels(s["metric"]), _points(s["values"])) for s in result)
        except (KeyError, TypeError, ValueError, IndexError, AttributeError):
            raise PrometheusFormatError(f"{self.url}: a series in the answer is not [time, value]") from None
        return QueryResult(series=series, warnings=tuple(clean(str(w)) for w in warnings))


def base_url(url: str) -> str:
    """The server's root URL (a path prefix kept: Prometheus behind a reverse proxy); ValueError says what is
    wrong."""
    text = url.strip()
    parsed = urllib.parse.urlsplit(text if "://" in text else f"http://{text}")
    if parsed.scheme not in ("http", "https"):
        raise ValueError(f"not an http(s) URL: {url!r} (expected e.g. http://prometheus:9090)")
    if not parsed.hostname:
        raise ValueError(f"no host in {url!r} (expected e.g. http://prometheus:9090)")
    try:
        parsed.port  # noqa: B018 (a bad port raises here)
    except ValueError:
        raise ValueError(f"bad port in {url!r} (expected e.g. http://prometheus:9090)") from None
    if parsed.username or parsed.password:
        raise ValueError(f"credentials in the URL {url!r}: give them by environment (see gputui --help)")
    return urllib.parse.urlunsplit((parsed.scheme, parsed.netloc, parsed.path.rstrip("/"), "", ""))


def _tls_context(verify: bool, ca_file: str | None) -> ssl.SSLContext:
    if not verify:
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        return context
    try:
        return ssl.create_default_context(cafile=ca_file or None)
    except (OSError, ssl.SSLError) as exc:
        raise CredentialsError(
            f"{CA_FILE_ENV}: cannot read {ca_file}: {getattr(exc, 'strerror', None) or exc}"
        ) from None


def _json(body: bytes) -> Any:
    try:
        return json.loads(body)
    except (ValueError, UnicodeDecodeError):
        raise PrometheusFormatError("the answer is not JSON (is it Prometheus's API?)") from None


def _error_text(document: Mapping[str, Any]) -> str:
    kind, error = document.get("errorType"), document.get("error")
    return clean(f"{kind}: {error}" if kind else str(error))


def _labels(metric: Mapping[str, Any]) -> dict[str, str]:
    """A series' labels, each value cleaned: they are the text of every server Prometheus scrapes (host names,
    pod names, process names), and its labels name hosts and pods in every view."""
    return {key: clean(value) for key, value in metric.items()}


def _points(pairs: list[Any]) -> tuple[Point, ...]:
    """[[time, "value"], ...] -> (time, value) pairs; NaN and infinities (no value) are left out."""
    out = []
    for at, text in pairs:
        value = float(text)
        if math.isfinite(value):
            out.append((float(at), value))
    return tuple(out)


def _duration(seconds: float) -> str:
    """Seconds as Prometheus's duration ("1.5s" is not one; "1500ms" is)."""
    return f"{max(1, round(seconds * 1000))}ms"
