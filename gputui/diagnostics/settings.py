"""What the diagnostics are set to: the thresholds, the rules switched off, the hysteresis (the config file's
`[diagnostics]` table, read by gputui/config.py), and the same fitted to readings far apart (`for_step`)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from gputui.config_values import names_of, seconds, setting, table, whole
from gputui.diagnostics.rules import RULE_IDS
from gputui.diagnostics.thresholds import Thresholds


@dataclass(frozen=True, slots=True)
class DiagnosticsConfig:
    """Thresholds, hysteresis and the rules switched off by id."""

    thresholds: Thresholds = field(
        default_factory=Thresholds, metadata=table("The numbers the rules compare against; units are in the names.")
    )
    disabled: frozenset[str] = field(
        default=frozenset(),
        metadata=setting('Rule ids switched off, e.g. ["gpu_contention"].', names_of(RULE_IDS, "rule ids")),
    )
    open_after_s: float = field(
        default=3.0, metadata=setting("Seconds a condition must hold before its finding opens.", seconds())
    )
    close_after_s: float = field(
        default=5.0, metadata=setting("Seconds a condition must be clear before its finding closes.", seconds())
    )
    history_size: int = field(default=20, metadata=setting("Closed findings kept.", whole(1)))


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
