"""Delivery on a daemon thread of its own: the caller only queues, so a target that hangs never delays a reading.

The queue is bounded (the oldest message gives way, counted); each request has a timeout and is retried with
exponential backoff; a webhook's redirect is refused, not followed; a target that fails is said once, and again
once when it works again, never once a message. A webhook is named by its redacted URL only.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import threading
import urllib.error
import urllib.request
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from gputui.alerts.message import redact, slack_text
from gputui.config import AlertsConfig

QUEUE_SIZE = 100
FIRST_BACKOFF_S = 0.5

Say = Callable[[str], object]


class DeliveryFailed(Exception):
    """A target did not take a message; the text says why without the webhook's secret."""


class Target(Protocol):
    name: str  # how notices name it: never a secret

    def send(self, message: dict[str, Any]) -> None:
        """Delivers one message or raises DeliveryFailed."""


class _RefuseRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None  # urllib then raises the 3xx as an HTTPError


class Webhook:
    """An HTTP POST of the message as JSON, or of Slack's {"text": ...}."""

    def __init__(self, url: str, *, slack: bool, timeout_s: float, proxy_from_env: bool = False) -> None:
        self._url = url
        self._slack = slack
        self._timeout_s = timeout_s
        # No proxy unless asked, as for --prometheus: an environment's proxy is not always the way to the target.
        proxies = urllib.request.ProxyHandler(None if proxy_from_env else {})
        self._opener = urllib.request.build_opener(proxies, _RefuseRedirects)
        self.name = f"webhook {redact(url)}"

    def send(self, message: dict[str, Any]) -> None:
        body = {"text": slack_text(message)} if self._slack else message
        request = urllib.request.Request(
            self._url,
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json", "User-Agent": "gputui-alerts"},
            method="POST",
        )
        try:
            with self._opener.open(request, timeout=self._timeout_s) as response:
                response.read()
        except urllib.error.HTTPError as exc:  # its text would not name the URL, but its attributes do
            redirect = " (redirects are not followed)" if 300 <= exc.code < 400 else ""
            raise DeliveryFailed(f"HTTP {exc.code}{redirect}") from None
        except urllib.error.URLError as exc:
            raise DeliveryFailed(str(exc.reason)) from None
        except (OSError, ValueError) as exc:  # a timeout while reading, a reset connection
            raise DeliveryFailed(type(exc).__name__ if not str(exc) else str(exc)) from None


class Command:
    """A command run once a message, the JSON on its stdin; killed if it overruns its timeout."""

    def __init__(self, command: str, *, shell: bool, timeout_s: float) -> None:
        self._argv = ["/bin/sh", "-c", command] if shell else shlex.split(command)
        self._timeout_s = timeout_s
        self.name = f"command {self._argv[0] if not shell else 'sh -c'}"

    def send(self, message: dict[str, Any]) -> None:
        try:
            done = subprocess.run(
                self._argv,
                input=json.dumps(message).encode(),
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                timeout=self._timeout_s,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise DeliveryFailed(f"did not finish in {self._timeout_s:g} s; killed") from None
        except OSError as exc:
            raise DeliveryFailed(exc.strerror or type(exc).__name__) from None
        if done.returncode != 0:
            raise DeliveryFailed(f"exit status {done.returncode}")


def targets_for(config: AlertsConfig) -> list[Target]:
    out: list[Target] = []
    if config.webhook is not None:
        slack = config.format == "slack"
        webhook = Webhook(config.webhook, slack=slack, timeout_s=config.timeout_s, proxy_from_env=config.proxy_from_env)
        out.append(webhook)
    if config.command is not None:
        out.append(Command(config.command, shell=config.shell, timeout_s=config.timeout_s))
    return out


class Outbox:
    """`post()` queues a message and returns at once; the outbox's thread sends it to every target in turn."""

    def __init__(
        self,
        targets: Sequence[Target],
        say: Say,
        *,
        retries: int = 3,
        first_backoff_s: float = FIRST_BACKOFF_S,
        capacity: int = QUEUE_SIZE,
    ) -> None:
        self._targets = tuple(targets)
        self._say = say
        self._retries = retries
        self._first_backoff_s = first_backoff_s
        self._queue: deque[dict[str, Any]] = deque()
        self._capacity = capacity
        self._ready = threading.Condition()
        self._stopping = threading.Event()
        self._idle = True
        self._dropped = 0
        self._failing: set[str] = set()
        self._thread = threading.Thread(target=self._run, name="gputui-alerts", daemon=True)
        self._thread.start()

    def post(self, message: dict[str, Any]) -> None:
        with self._ready:
            if len(self._queue) >= self._capacity:
                self._queue.popleft()
                self._dropped += 1
            self._queue.append(message)
            self._ready.notify()

    def drain(self, timeout: float) -> bool:
        """Waits (at most `timeout`) until every queued message has been tried; True if they all were."""
        with self._ready:
            return self._ready.wait_for(lambda: not self._queue and self._idle, timeout)

    def close(self, timeout: float = 0.0) -> None:
        """Stops after what is queued has been tried, waiting at most `timeout` for it (a daemon: never held up)."""
        self.drain(timeout)
        self._stopping.set()
        with self._ready:
            self._ready.notify_all()

    def _run(self) -> None:
        while True:
            with self._ready:
                self._idle = True
                self._ready.notify_all()
                self._ready.wait_for(lambda: self._queue or self._stopping.is_set())
                if self._stopping.is_set():
                    return
                message = self._queue.popleft()
                self._idle = False
                dropped, self._dropped = self._dropped, 0
            if dropped:
                self._say(f"alerts: {dropped} oldest alert(s) dropped, the targets are slower than the findings change")
            for target in self._targets:
                self._send(target, message)

    def _send(self, target: Target, message: dict[str, Any]) -> None:
        backoff = self._first_backoff_s
        for attempt in range(self._retries + 1):
            try:
                target.send(message)
            except DeliveryFailed as exc:
                if attempt < self._retries and not self._stopping.wait(backoff):
                    backoff *= 2
                    continue
                if target.name not in self._failing:
                    self._failing.add(target.name)
                    self._say(f"alerts: {target.name} failed ({exc}); said once, until it works again")
                return
            if target.name in self._failing:
                self._failing.discard(target.name)
                self._say(f"alerts: {target.name} works again")
            return
