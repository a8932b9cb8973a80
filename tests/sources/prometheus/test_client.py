"""PrometheusClient's errors, bounds and credentials, against servers on 127.0.0.1."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gputui.sources.prometheus.client import (
    CredentialsError,
    PrometheusClient,
    PrometheusFormatError,
    PrometheusQueryError,
    PrometheusUnreachable,
    base_url,
    credentials_header,
)
from tests.sources.prometheus.canned import dcgm_series
from tests.sources.prometheus.prom_stub import Behaviour, canned_prometheus

NO_ENV: dict[str, str] = {}


def test_http_error_carries_prometheus_own_text() -> None:
    body = b'{"status":"error","errorType":"bad_data","error":"invalid parameter \\"query\\": parse error"}'
    bad_data = r"HTTP 400 .*bad_data: invalid parameter \"query\": parse"
    with (
        canned_prometheus(Behaviour(status=400, body=body)) as url,
        pytest.raises(PrometheusQueryError, match=bad_data),
    ):
        PrometheusClient(url, env=NO_ENV).instant("up")
    with (
        canned_prometheus(
            Behaviour(status=500, body=b'{"status":"error","errorType":"internal","error":"boom"}')
        ) as url,
        pytest.raises(PrometheusQueryError, match=r"HTTP 500 .*internal: boom"),
    ):
        PrometheusClient(url, env=NO_ENV).instant("up")


def test_unauthorised_says_where_credentials_come_from() -> None:
    says = r"HTTP 401 .*GPUTUI_PROMETHEUS_TOKEN"
    with (
        canned_prometheus(Behaviour(status=401, body=b"Unauthorized")) as url,
        pytest.raises(PrometheusQueryError, match=says),
    ):
        PrometheusClient(url, env=NO_ENV).instant("up")


@pytest.mark.parametrize("body", [b"<html>not prometheus</html>", b'{"data": 1}', b'{"status":"success","data":{}}'])
def test_an_answer_that_is_not_prometheus_json(body: bytes) -> None:
    with canned_prometheus(Behaviour(body=body)) as url, pytest.raises(PrometheusFormatError):
        PrometheusClient(url, env=NO_ENV).instant("up")


def test_answers_are_bounded_in_bytes_and_series() -> None:
    with canned_prometheus(Behaviour(series=dcgm_series())) as url:
        with pytest.raises(PrometheusFormatError, match="larger than"):
            PrometheusClient(url, max_bytes=1024, env=NO_ENV).instant('{__name__=~".+"}')
        with pytest.raises(PrometheusFormatError, match="more than 3 series"):
            PrometheusClient(url, max_series=3, env=NO_ENV).instant('{__name__=~".+"}')
        assert len(PrometheusClient(url, env=NO_ENV).instant('{__name__=~".+"}').series) == len(dcgm_series())


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A 127.0.0.1 socket that accepts connections and never answers."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        yield int(listener.getsockname()[1])


def test_a_server_that_never_answers_times_out(silent_port: int) -> None:
    started = time.monotonic()
    with pytest.raises(PrometheusUnreachable, match=r"timed out after 0\.3 s"):
        PrometheusClient(f"http://127.0.0.1:{silent_port}", timeout=0.3, env=NO_ENV).instant("up")
    assert time.monotonic() - started < 3


def test_refused() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(PrometheusUnreachable, match="connection refused"):
        PrometheusClient(f"http://127.0.0.1:{port}", timeout=2, env=NO_ENV).instant("up")


def test_bearer_token_from_env_and_from_file(tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text("s3cret-from-file\n")
    behaviour = Behaviour(series=dcgm_series())
    with canned_prometheus(behaviour) as url:
        PrometheusClient(url, env={"GPUTUI_PROMETHEUS_TOKEN": "s3cret"}).instant("up")
        PrometheusClient(url, env={"GPUTUI_PROMETHEUS_TOKEN_FILE": str(token_file)}).instant("up")
        PrometheusClient(url, env=NO_ENV).instant("up")
    sent = [headers.get("Authorization") for headers in behaviour.seen_headers]
    assert sent == ["Bearer s3cret", "Bearer s3cret-from-file", None]


def test_basic_auth_with_the_password_in_a_file(tmp_path: Path) -> None:
    password = tmp_path / "password"
    password.write_text("pa:ss")
    behaviour = Behaviour(series=dcgm_series())
    env = {"GPUTUI_PROMETHEUS_USER": "grafana", "GPUTUI_PROMETHEUS_PASSWORD_FILE": str(password)}
    with canned_prometheus(behaviour) as url:
        client = PrometheusClient(url, env=env)
        client.instant("up")
    assert behaviour.seen_headers[0]["Authorization"] == "Basic Z3JhZmFuYTpwYTpzcw=="  # grafana:pa:ss
    assert client.notices == (f"credentials are sent unencrypted to {url} (plain http)",)


@pytest.mark.parametrize(
    ("env", "says"),
    [
        ({"GPUTUI_PROMETHEUS_TOKEN": "t", "GPUTUI_PROMETHEUS_USER": "u"}, "keep one"),
        ({"GPUTUI_PROMETHEUS_TOKEN": "t", "GPUTUI_PROMETHEUS_TOKEN_FILE": "/x"}, "keep one"),
        ({"GPUTUI_PROMETHEUS_USER": "u"}, "neither"),
        ({"GPUTUI_PROMETHEUS_PASSWORD": "p"}, "USER is not"),
        ({"GPUTUI_PROMETHEUS_TOKEN_FILE": "/nonexistent/token"}, "cannot read /nonexistent/token"),
    ],
)
def test_contradictory_credentials_are_refused(env: dict[str, str], says: str) -> None:
    with pytest.raises(CredentialsError, match=says):
        credentials_header(env)


def test_tls_off_only_when_asked_and_then_said() -> None:
    assert PrometheusClient("https://prom:9090", env=NO_ENV).notices == ()
    insecure = PrometheusClient("https://prom:9090", verify_tls=False, env=NO_ENV)
    assert insecure.notices == ("TLS verification is OFF for https://prom:9090 (--prometheus-insecure)",)


@pytest.mark.parametrize(
    ("url", "want"),
    [("prom:9090", "http://prom:9090"), ("https://h/prometheus/", "https://h/prometheus")],
)
def test_base_url(url: str, want: str) -> None:
    assert base_url(url) == want


@pytest.mark.parametrize(
    ("url", "says"), [("ftp://h", "not an http"), ("http://u:p@h", "by environment"), ("http://h:x", "bad port")]
)
def test_bad_urls(url: str, says: str) -> None:
    with pytest.raises(ValueError, match=says):
        base_url(url)


HOSTILE = "\x1b]0;PWNED\x07\u202e[/]"
SHOWN = "\\x1b]0;PWNED\\x07\\u202e[/]"


def test_label_values_warnings_and_error_texts_are_cleaned_as_the_answer_is_read() -> None:
    """Every label is the text of a server Prometheus scraped, and warnings and errors are Prometheus's own."""
    series = [({"__name__": "DCGM_FI_DEV_GPU_UTIL", "Hostname": HOSTILE, "pod": f"p{HOSTILE}"}, 1.0)]
    with canned_prometheus(Behaviour(series=series, warnings=(HOSTILE,))) as url:
        result = PrometheusClient(url, env=NO_ENV).instant("DCGM_FI_DEV_GPU_UTIL")
    ((labels, _),) = result.series
    assert (labels["Hostname"], labels["pod"], result.warnings) == (SHOWN, f"p{SHOWN}", (SHOWN,))
    body = json.dumps({"status": "error", "errorType": "bad_data", "error": HOSTILE}).encode()
    with (
        canned_prometheus(Behaviour(status=400, body=body)) as url,
        pytest.raises(PrometheusQueryError) as failed,
    ):
        PrometheusClient(url, env=NO_ENV).instant("up")
    assert str(failed.value).endswith(f"bad_data: {SHOWN}")
