"""All diagnostic rules, one module per family; their ids are part of gputui's interface.

A family module holds its rules (`RULES`) and their words (`TEXTS`: each rule's title, advice and cause, and
the evidence labels no other family uses, in every language). Listing the module in `FAMILIES` registers both;
the engine evaluates the rules in this order. A new rule goes into its family module alone: its check, its
`Rule` in `RULES`, and its title and advice (per variant), the few words the verdict names its cause by (a rule
that argues for a class, `bound=`, or warns), and any new evidence label in `TEXTS`, en and zh.
The three modules that are no family are what families stand on: `base` (what a rule is, the window it reads),
`cpus` (the CPUs the jobs may use, which the starvation and container rules judge alike) and `stacks` (what a
job's stack samples say, which the starvation and waits rules and the verdict read alike).
"""

from __future__ import annotations

from typing import Protocol

from gputui.diagnostics.locale import LANGS, Texts
from gputui.diagnostics.rules import (
    container,
    efficiency,
    hang,
    health,
    host,
    interconnect,
    memory,
    mig,
    pcie,
    power,
    sharing,
    software,
    starvation,
    thermal,
    waits,
)
from gputui.diagnostics.rules.base import Rule


class Family(Protocol):
    """What a family module provides (mypy checks each module in FAMILIES against it)."""

    RULES: tuple[Rule, ...]
    TEXTS: Texts


FAMILIES: tuple[Family, ...] = (
    thermal,
    power,
    memory,
    pcie,
    interconnect,
    starvation,
    waits,
    hang,
    container,
    efficiency,
    sharing,
    host,
    software,
    health,
    mig,
)

ALL_RULES: tuple[Rule, ...] = tuple(rule for family in FAMILIES for rule in family.RULES)

RULE_IDS: frozenset[str] = frozenset(rule.id for rule in ALL_RULES) | {software.NVML_UNAVAILABLE}

RULE_TEXTS: Texts = {
    lang: {key: words for family in FAMILIES for key, words in family.TEXTS[lang].items()} for lang in LANGS
}
