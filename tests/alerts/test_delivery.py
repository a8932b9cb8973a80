"""Delivery to real targets: a webhook (JSON and Slack's form) on a server in the test, a command that gets the
JSON on stdin; a target that hangs, fails or redirects; a full queue. A webhook's secret is never said."""

from __future__ import annotations

import json
import logging
import shlex
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from gputui.alerts.delivery import Command, DeliveryFailed, Outbox, Webhook
from gputui.alerts.message import redact
from tests.alerts.receiver import hanging, receiving, refused_url

MESSAGE = {"host": "gpu01", "rule": "thermal_throttle", "state": "open", "severity": "critical", "gpus": [1]}
MESSAGE |= {"title": "GPU 1: thermal throttling"}


class Said:
    """What the outbox says, from its thread; `wait_for(n)` waits (bounded) for n sayings."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self._changed = threading.Condition()

    def __call__(self, text: str) -> None:
        with self._changed:
            self.lines.append(text)
            self._changed.notify_all()


def test_a_webhook_gets_the_message_as_json_and_slack_gets_one_line() -> None:
    with receiving() as receiver:
        Webhook(receiver.url, slack=False, timeout_s=5).send(MESSAGE)
        Webhook(receiver.url, slack=True, timeout_s=5).send({**MESSAGE, "simulated": True})
        assert receiver.posts == [
            ("/hook/T0SECRET/B0SECRET", MESSAGE),
            (
                "/hook/T0SECRET/B0SECRET",
                {"text": "[gpu01] SIMULATED OPEN critical thermal_throttle (GPU 1): GPU 1: thermal throttling"},
            ),
        ]


def test_a_command_gets_the_json_on_stdin(tmp_path: Path) -> None:
    out = tmp_path / "alert.json"
    script = f"import sys; open({str(out)!r}, 'wb').write(sys.stdin.buffer.read())"
    Command(shlex.join([sys.executable, "-c", script]), shell=False, timeout_s=20).send(MESSAGE)
    assert json.loads(out.read_text()) == MESSAGE


def test_a_command_that_overruns_is_killed_and_one_that_fails_is_a_failure() -> None:
    with pytest.raises(DeliveryFailed, match=r"did not finish in 0\.5 s; killed"):
        Command(shlex.join([sys.executable, "-c", "import time; time.sleep(60)"]), shell=False, timeout_s=0.5).send(
            MESSAGE
        )
    with pytest.raises(DeliveryFailed, match="exit status 3"):
        Command("exit 3", shell=True, timeout_s=20).send(MESSAGE)


def test_no_proxy_is_used_unless_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("no_proxy", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("http_proxy", refused_url(""))
    with receiving() as receiver:
        Webhook(receiver.url, slack=False, timeout_s=5).send(MESSAGE)
        with pytest.raises(DeliveryFailed, match="Connection refused"):
            Webhook(receiver.url, slack=False, timeout_s=5, proxy_from_env=True).send(MESSAGE)
        assert len(receiver.posts) == 1


def test_a_redirect_is_refused_and_its_target_never_asked() -> None:
    with receiving() as receiver:
        receiver.redirect_to = "/elsewhere"
        with pytest.raises(DeliveryFailed, match="HTTP 302 \\(redirects are not followed\\)"):
            Webhook(receiver.url, slack=False, timeout_s=5).send(MESSAGE)
        assert [path for path, _ in receiver.posts] == ["/hook/T0SECRET/B0SECRET"]


def test_post_returns_at_once_while_a_target_hangs_and_the_failure_is_said_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    said = Said()
    with hanging() as url:
        outbox = Outbox([Webhook(url, slack=False, timeout_s=1.0)], said, retries=1, first_backoff_s=0.05)
        outbox.post(MESSAGE)
        outbox.post(MESSAGE)  # the thread is inside the first request, for a second at the least
        assert not outbox.drain(0)
        assert outbox.drain(30)
        outbox.close()
    assert said.lines == [f"alerts: webhook {redact(url)} failed (timed out); said once, until it works again"]
    assert "T0SECRET" not in said.lines[0] + caplog.text


def test_a_target_that_recovers_is_said_once_again_and_the_retry_delivers() -> None:
    said = Said()
    with receiving() as receiver:
        receiver.failures_left = 2  # the first message fails twice: once more than its retries
        outbox = Outbox([Webhook(receiver.url, slack=False, timeout_s=5)], said, retries=1, first_backoff_s=0.01)
        outbox.post({**MESSAGE, "n": 1})
        outbox.post({**MESSAGE, "n": 2})
        outbox.post({**MESSAGE, "n": 3})
        assert outbox.drain(30)
        outbox.close()
        assert [body["n"] for body in receiver.bodies] == [1, 1, 2, 3]
    name = f"webhook http://127.0.0.1:{receiver.url.split(':')[2].split('/')[0]}/…"
    assert said.lines == [
        f"alerts: {name} failed (HTTP 500); said once, until it works again",
        f"alerts: {name} works again",
    ]


def test_a_full_queue_drops_the_oldest_and_says_how_many() -> None:
    entered, release = threading.Event(), threading.Event()
    sent: list[Any] = []

    class Slow:
        name = "slow"

        def send(self, message: dict[str, Any]) -> None:
            entered.set()
            assert release.wait(20)
            sent.append(message["n"])

    said = Said()
    outbox = Outbox([Slow()], said, capacity=2)
    outbox.post({"n": 1})
    assert entered.wait(20)
    for n in (2, 3, 4, 5):
        outbox.post({"n": n})
    release.set()
    assert outbox.drain(20)
    outbox.close()
    assert sent == [1, 4, 5]
    assert said.lines == ["alerts: 2 oldest alert(s) dropped, the targets are slower than the findings change"]


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("https://hooks.slack.com/services/T0SECRET/B0SECRET/X0SECRET", "https://hooks.slack.com/…"),
        ("http://user:T0SECRET@10.0.0.1:8080/hook?token=T0SECRET", "http://10.0.0.1:8080/…"),
        ("http://[::1]:9000/T0SECRET", "http://[::1]:9000/…"),
    ],
)
def test_redact_keeps_only_scheme_host_and_port(url: str, shown: str) -> None:
    assert redact(url) == shown


def test_a_refused_webhook_s_secret_is_in_no_report_or_log(caplog: pytest.LogCaptureFixture) -> None:
    said = Said()
    url = refused_url("/services/T0SECRET?token=T0SECRET")
    with caplog.at_level(logging.DEBUG):
        outbox = Outbox([Webhook(url, slack=True, timeout_s=2)], said, retries=0)
        outbox.post(MESSAGE)
        assert outbox.drain(20)
        outbox.close()
        with pytest.raises(DeliveryFailed) as raised:
            Webhook(url, slack=False, timeout_s=2).send(MESSAGE)
    assert said.lines and "Connection refused" in said.lines[0]
    assert "T0SECRET" not in " ".join([*said.lines, caplog.text, str(raised.value), repr(raised.value)])
