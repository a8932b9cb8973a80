"""An alert's words: the JSON a webhook or a command receives, Slack's one line, and a webhook URL fit to print."""

from __future__ import annotations

import urllib.parse
from typing import Any, Literal

from gputui.diagnostics.findings import Finding, finding_to_dict
from gputui.diagnostics.verdict import Verdict, gpu_list

AlertState = Literal["open", "closed"]
HIDDEN = "…"


def alert_message(
    finding: Finding, state: AlertState, host: str, verdict: Verdict | None, *, simulated: bool = False
) -> dict[str, Any]:
    """{host, rule, variant, severity, state, gpus, title, advice, evidence, started_at, ended_at, verdict}, the
    finding's fields as `diagnose --json` writes them; `simulated` only when the machine is."""
    shown = finding_to_dict(finding)
    message: dict[str, Any] = {
        "host": host,
        "rule": finding.rule,
        "variant": finding.variant,
        "severity": finding.severity.label,
        "state": state,
        "gpus": list(finding.gpus),
        "title": finding.title,
        "advice": finding.advice,
        "evidence": shown["evidence"],
        "started_at": finding.started_at,
        "ended_at": finding.ended_at,
        "verdict": None if verdict is None else {"class": verdict.cls, "line": verdict.line},
    }
    if simulated:
        message["simulated"] = True
    return message


def slack_text(message: dict[str, Any]) -> str:
    """One line: '[gpu01] OPEN critical thermal (GPU 0): GPU 0 is throttling on heat'."""
    gpus = message["gpus"]
    where = f" ({gpu_list(gpus)})" if gpus else ""  # as the verdict and the fleet view write it: "GPUs 0-3"
    sim = " SIMULATED" if message.get("simulated") else ""
    line = f"[{message['host']}]{sim} {message['state'].upper()} {message['severity']} {message['rule']}{where}: "
    return slack_escape(" ".join((line + message["title"]).split()))


def slack_escape(text: str) -> str:
    """Text as Slack shows it literally: `&`, `<` and `>` as entities (Slack's rule for message text), so that a
    host, process or function name holding `<!channel>` or `<https://evil|a link>` pings no one and links nowhere."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def redact(url: str) -> str:
    """scheme://host[:port]/… : what may carry a secret (user and password, path, query) hidden; a Slack webhook
    carries its secret in the path."""
    try:
        parts = urllib.parse.urlsplit(url)
        host = parts.hostname or ""
        port = parts.port
    except ValueError:
        return HIDDEN
    host = f"[{host}]" if ":" in host else host
    where = f"{host}:{port}" if port is not None else host
    return f"{parts.scheme}://{where}/{HIDDEN}"
