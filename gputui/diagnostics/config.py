"""The diagnostics config: the TOML file that overrides the thresholds, switches rules off and sets hysteresis.

The file is `~/.config/gputui/config.toml` (or `--config PATH`); the diagnostics read its `[diagnostics]`
table and leave the other tables to the parts of gputui that own them:

    [diagnostics]
    disabled = ["gpu_contention"]      # rule ids
    open_after_s = 3.0

    [diagnostics.thresholds]
    busy_util_pct = 50
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from gputui.diagnostics.rules import RULE_IDS
from gputui.diagnostics.thresholds import Thresholds

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

DEFAULT_CONFIG_PATH = Path("~/.config/gputui/config.toml")


class ConfigError(ValueError):
    """The config file cannot be used; the message names the file and the key."""


@dataclass(frozen=True, slots=True)
class DiagnosticsConfig:
    """Thresholds, hysteresis and the rules switched off by id."""

    thresholds: Thresholds = field(default_factory=Thresholds)
    disabled: frozenset[str] = frozenset()
    open_after_s: float = 3.0  # a condition must hold this long before its finding opens
    close_after_s: float = 5.0  # and be clear this long before it closes
    history_size: int = 20  # closed findings kept


# Readings a rule's window holds at the least when readings come far apart (Prometheus's history, 15 s a step).
WINDOW_READINGS = 4


def for_step(config: DiagnosticsConfig, step_s: float) -> DiagnosticsConfig:
    """The config for readings `step_s` apart: each rule's window holds WINDOW_READINGS of them at the least, and
    the verdict settles over one step. At 15 s a step the 10 s window holds one reading, and no rule can tell a
    pattern from a moment in one: the verdict stays unknown and windowed findings never open."""
    th = config.thresholds
    window_s = max(th.window_s, WINDOW_READINGS * step_s)
    settle_s = max(th.verdict_settle_s, step_s)
    if (window_s, settle_s) == (th.window_s, th.verdict_settle_s):
        return config
    return replace(config, thresholds=replace(th, window_s=window_s, verdict_settle_s=settle_s))


_THRESHOLD_KEYS = {f.name for f in fields(Thresholds)}
_TOP_KEYS = {"disabled", "thresholds", "open_after_s", "close_after_s", "history_size"}


def default_config_path() -> Path:
    return DEFAULT_CONFIG_PATH.expanduser()


def load_config(path: Path | None = None, *, known_rules: frozenset[str] | None = None) -> DiagnosticsConfig:
    """The config from `path`, or from the default file when it exists; defaults otherwise.

    An explicit `path` must exist. Raises ConfigError naming the file and the key.
    """
    target, data = read_toml(path)
    try:
        return parse_config(data.get("diagnostics", {}), known_rules=known_rules)
    except ConfigError as exc:
        raise ConfigError(f"{target}: {exc}") from None


def read_toml(path: Path | None) -> tuple[Path, dict[str, Any]]:
    """The config file (`path`, or the default one) and its tables, for every part that owns one: {} when the
    default file does not exist; an explicit `path` must. Raises ConfigError naming the file."""
    target = path if path is not None else default_config_path()
    if not target.exists():
        if path is not None:
            raise ConfigError(f"{target}: no such config file")
        return target, {}
    try:
        with target.open("rb") as handle:
            return target, tomllib.load(handle)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{target}: not valid TOML: {exc}") from None
    except OSError as exc:
        raise ConfigError(f"{target}: cannot read: {exc.strerror}") from None


def parse_config(table: Any, *, known_rules: frozenset[str] | None = None) -> DiagnosticsConfig:
    """The `[diagnostics]` table as a config; every unknown key or wrong type is an error naming it."""
    if known_rules is None:
        known_rules = RULE_IDS
    if not isinstance(table, Mapping):
        raise ConfigError("'diagnostics' must be a table")
    for key in table:
        if key not in _TOP_KEYS:
            raise ConfigError(f"unknown key 'diagnostics.{key}' (known: {', '.join(sorted(_TOP_KEYS))})")
    config = DiagnosticsConfig()
    disabled = table.get("disabled", [])
    if not isinstance(disabled, list) or not all(isinstance(rule, str) for rule in disabled):
        raise ConfigError("'diagnostics.disabled' must be a list of rule ids")
    for rule in disabled:
        if rule not in known_rules:
            raise ConfigError(f"'diagnostics.disabled' names an unknown rule {rule!r}")
    config = replace(config, disabled=frozenset(disabled))
    if "open_after_s" in table:
        config = replace(config, open_after_s=_number("diagnostics.open_after_s", table["open_after_s"]))
    if "close_after_s" in table:
        config = replace(config, close_after_s=_number("diagnostics.close_after_s", table["close_after_s"]))
    if "history_size" in table:
        size = table["history_size"]
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise ConfigError(f"'diagnostics.history_size' must be a whole number of at least 1, not {size!r}")
        config = replace(config, history_size=size)
    overrides = table.get("thresholds", {})
    if not isinstance(overrides, Mapping):
        raise ConfigError("'diagnostics.thresholds' must be a table")
    values: dict[str, float] = {}
    for key, value in overrides.items():
        if key not in _THRESHOLD_KEYS:
            raise ConfigError(f"unknown key 'diagnostics.thresholds.{key}'")
        values[key] = _number(f"diagnostics.thresholds.{key}", value)
    return replace(config, thresholds=replace(config.thresholds, **values))


def _number(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(f"'{name}' must be a number, not {value!r}")
    if value < 0:
        raise ConfigError(f"'{name}' must not be negative, not {value!r}")
    return float(value)
