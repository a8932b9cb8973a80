"""All diagnostic rules, one module per family; their ids are part of gputui's interface."""

from __future__ import annotations

from gputui.diagnostics.rules import health, host, memory, pcie, power, sharing, software, starvation, thermal
from gputui.diagnostics.rules.base import Rule

ALL_RULES: tuple[Rule, ...] = (
    *thermal.RULES,
    *power.RULES,
    *memory.RULES,
    *pcie.RULES,
    *starvation.RULES,
    *sharing.RULES,
    *host.RULES,
    *software.RULES,
    *health.RULES,
)

# `nvml_unavailable` is not evaluated on snapshots: it is built when there are none (engine.unavailable_finding).
RULE_IDS: frozenset[str] = frozenset(rule.id for rule in ALL_RULES) | {"nvml_unavailable"}
