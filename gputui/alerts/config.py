"""The `[alerts]` table of config.toml, and the command-line options that override it:

[alerts]
webhook = "https://hooks.slack.com/services/T000/B000/XXXX"
format = "slack"             # or "json" (default)
command = "notify-send gputui"
shell = false                # run `command` through /bin/sh
min_severity = "warning"     # info | warning | critical
bell = true                  # the monitor rings the terminal bell when an alert opens
min_interval_s = 300         # a flapping finding sends at most one open/close pair this often
timeout_s = 5
retries = 3
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any, Literal

from gputui.diagnostics.config import ConfigError, read_toml
from gputui.diagnostics.findings import Severity

WebhookFormat = Literal["json", "slack"]
FORMATS: tuple[WebhookFormat, ...] = ("json", "slack")


@dataclass(frozen=True, slots=True)
class AlertsConfig:
    """Where alerts go and how hard delivery tries; no webhook, no command and no bell: no alerts."""

    webhook: str | None = None
    format: WebhookFormat = "json"
    command: str | None = None
    shell: bool = False
    min_severity: Severity = Severity.WARNING
    bell: bool = False
    min_interval_s: float = 300.0
    timeout_s: float = 5.0
    retries: int = 3
    proxy_from_env: bool = False

    @property
    def enabled(self) -> bool:
        return self.webhook is not None or self.command is not None or self.bell


KEYS = frozenset(f.name for f in fields(AlertsConfig))  # the table's keys are the fields' names


def load_alerts_config(path: Path | None) -> AlertsConfig:
    """The `[alerts]` table of the config file (`path`, or the default one when it exists); defaults otherwise.
    Raises ConfigError naming the file and the key."""
    target, data = read_toml(path)
    try:
        return parse_alerts(data.get("alerts", {}))
    except ConfigError as exc:
        raise ConfigError(f"{target}: {exc}") from None


def alerts_config(args: argparse.Namespace) -> AlertsConfig:
    """The file's `[alerts]` with `--alert-webhook` and `--alert-command` over it."""
    config = load_alerts_config(getattr(args, "config", None))
    if getattr(args, "alert_webhook", None) is not None:
        config = replace(config, webhook=args.alert_webhook)
    if getattr(args, "alert_command", None) is not None:
        config = replace(config, command=args.alert_command)
    return config


def parse_alerts(table: Any) -> AlertsConfig:
    """The `[alerts]` table as a config; an unknown key or a wrong value is an error naming it."""
    if not isinstance(table, Mapping):
        raise ConfigError("'alerts' must be a table")
    for key in table:
        if key not in KEYS:
            raise ConfigError(f"unknown key 'alerts.{key}' (known: {', '.join(sorted(KEYS))})")
    default = AlertsConfig()
    format_ = table.get("format", default.format)
    if format_ not in FORMATS:
        raise ConfigError(f"'alerts.format' must be one of {', '.join(FORMATS)}, not {format_!r}")
    severities = {s.label: s for s in Severity}
    severity = table.get("min_severity", default.min_severity.label)
    if severity not in severities:
        raise ConfigError(f"'alerts.min_severity' must be one of {', '.join(severities)}, not {severity!r}")
    retries = table.get("retries", default.retries)
    if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
        raise ConfigError(f"'alerts.retries' must be a whole number of at least 0, not {retries!r}")
    return AlertsConfig(
        webhook=webhook_url(_text("webhook", table["webhook"])) if "webhook" in table else None,
        format=format_,
        command=_text("command", table["command"]) if "command" in table else None,
        shell=_flag(table, "shell", default.shell),
        min_severity=severities[severity],
        bell=_flag(table, "bell", default.bell),
        min_interval_s=_seconds(table, "min_interval_s", default.min_interval_s),
        timeout_s=_seconds(table, "timeout_s", default.timeout_s),
        retries=retries,
        proxy_from_env=_flag(table, "proxy_from_env", default.proxy_from_env),
    )


def webhook_url(text: str) -> str:
    """An http(s) URL; the error never repeats it, for it may hold a secret."""
    if not text.startswith(("http://", "https://")):
        raise ConfigError("the alert webhook must be an http:// or https:// URL")
    return text


def _text(key: str, value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"'alerts.{key}' must be a non-empty string")
    return value


def _flag(table: Mapping[str, Any], key: str, default: bool) -> bool:
    value = table.get(key, default)
    if not isinstance(value, bool):
        raise ConfigError(f"'alerts.{key}' must be true or false, not {value!r}")
    return value


def _seconds(table: Mapping[str, Any], key: str, default: float) -> float:
    value = table.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise ConfigError(f"'alerts.{key}' must be a number of seconds, not {value!r}")
    return float(value)
