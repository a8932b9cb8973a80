"""Findings alike on several GPUs as one row: the rule, its cause and its words, with the GPUs it covers.

A thermal box raises the same finding on each hot GPU, and eight identical warnings with the same 250-character
advice tell a user less than one row that says "GPUs 4-7" and gives the advice once. The engine keeps a finding
per GPU (the exporter's `gpu` label and the JSON need that); the views (the pane, `diagnose`, the fleet view)
show these groups. Findings group when their rule, variant (cause), severity and state (open or closed) are the
same; the row's title is the rule's words made once from the members' placeholders (`Finding.params`), each
figure as its range over the group ("tensor cores idle (0.1-2.3%)"), and its evidence likewise.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from gputui.diagnostics.catalog import has_text, text
from gputui.diagnostics.findings import Evidence, Finding, Severity, instances_to_list
from gputui.formatting import fmt_evidence_value, fmt_ranges

# Distinct words of one evidence item shown across a group before "…" (process names, paths).
_MAX_WORDS = 3
# A placeholder that is a figure with its unit after it: "46%", "1560", "0.5 CPUs".
_FIGURE = re.compile(r"(-?\d+(?:\.\d+)?)(\D*)")
# Stands for the GPU in a row's title while it is made; replaced by the row's GPU list.
_GPU_MARK = "\x00"


@dataclass(frozen=True, slots=True)
class FindingGroup:
    """One row: its findings (one per GPU, in GPU order), its title naming their GPUs, and its evidence."""

    findings: tuple[Finding, ...]
    title: str
    evidence: tuple[Evidence, ...]

    @property
    def first(self) -> Finding:
        return self.findings[0]

    @property
    def key(self) -> tuple[object, ...]:
        """What stays the same while its GPUs come and go (a cursor on it stays)."""
        return row_key(self.first)

    @property
    def rule(self) -> str:
        return self.first.rule

    @property
    def variant(self) -> str:
        return self.first.variant

    @property
    def severity(self) -> Severity:
        return self.first.severity

    @property
    def advice(self) -> str:
        return self.first.advice

    @property
    def gpus(self) -> tuple[int, ...]:
        return tuple(sorted({gpu for f in self.findings for gpu in f.gpus}))

    @property
    def is_open(self) -> bool:
        return self.first.is_open

    @property
    def started_at(self) -> float:
        return min(f.started_at for f in self.findings)

    @property
    def ended_at(self) -> float | None:
        return None if self.is_open else max(f.ended_at or f.started_at for f in self.findings)

    @property
    def duration_s(self) -> float:
        return max(f.duration_s for f in self.findings)

    @property
    def metric(self) -> str | None:
        return self.first.metric


def group_findings(findings: Iterable[Finding], lang: str = "en") -> tuple[FindingGroup, ...]:
    """The findings as rows, in their given order of first appearance (open before closed stays so), each row's
    members ordered by GPU."""
    rows: dict[tuple[object, ...], list[Finding]] = {}
    for finding in findings:
        rows.setdefault(row_key(finding), []).append(finding)
    return tuple(_group(sorted(members, key=lambda f: f.gpus), lang) for members in rows.values())


def group_to_dict(group: FindingGroup, members: Sequence[int]) -> dict[str, Any]:
    """A row in `diagnose --json`'s `groups`: what it says once, and its findings by their index in `findings`."""
    out: dict[str, Any] = {
        "rule": group.rule,
        "variant": group.variant,
        "severity": group.severity.label,
        "gpus": list(group.gpus),
        "title": group.title,
        "advice": group.advice,
        "findings": list(members),
    }
    if group.first.mig_instances:
        out["mig_instances"] = instances_to_list(group.first.mig_instances)
    return out


def sort_groups(groups: Iterable[FindingGroup]) -> tuple[FindingGroup, ...]:
    """Open before closed, the worst first, then by their first GPU, so a thermal box reads 4, 5, 6, 7."""
    return tuple(sorted(groups, key=lambda g: (not g.is_open, -g.severity, g.gpus or (-1,), g.rule, g.started_at)))


def row_key(finding: Finding) -> tuple[object, ...]:
    """What findings of one row share: the rule, its cause, severity and state; findings no rule made (a probe's
    result) have no words to share, and are a row each. A MIG instance's finding is a row of its own: two
    instances are separate jobs of separate sizes, and a row of both would read as "GPU 0"."""
    key = finding.rule, finding.variant, finding.severity, finding.is_open, "" if finding.params else finding.title
    return (*key, finding.mig_instances) if finding.mig_instances else key


def counts_text(groups: Iterable[FindingGroup], lang: str = "en") -> str:
    """'1 critical, 2 warnings': the rows by severity, worst first, in words; "" when there are none."""
    rows = list(groups)
    parts = []
    for severity in sorted(Severity, reverse=True):
        count = sum(1 for group in rows if group.severity == severity)
        if count:
            key = f"ui.count.{severity.label}"
            parts.append(text(f"{key}.plural" if count > 1 and has_text(f"{key}.plural") else key, lang, count=count))
    return ", ".join(parts)


def _group(members: Sequence[Finding], lang: str) -> FindingGroup:
    first = members[0]
    key = f"{first.rule}.title" + (f".{first.variant}" if first.variant else "")
    title = first.title
    if len(members) > 1 and has_text(key):
        gpus = fmt_ranges({gpu for f in members for gpu in f.gpus})
        params = {name: _merged_param([dict(f.params).get(name) for f in members]) for name, _ in first.params}
        made = text(key, lang, **{**params, "gpu": _GPU_MARK})
        title = made.replace(f"GPU {_GPU_MARK}", text("ui.gpus", lang, list=gpus)).replace(_GPU_MARK, gpus)
    return FindingGroup(tuple(members), title, merged_evidence(members))


def _merged_param(values: Sequence[object]) -> object:
    """One placeholder over a group: the value all share, a figure's range ("0.1-2.3%"), or the values met."""
    distinct = list(dict.fromkeys(values))
    if len(distinct) == 1:
        return distinct[0]
    figures = [_FIGURE.fullmatch(str(v)) for v in distinct]
    if all(figures) and len({m.group(2) for m in figures if m}) == 1:
        numbers = [float(m.group(1)) for m in figures if m]
        unit = figures[0].group(2) if figures[0] else ""
        return f"{fmt_evidence_value(min(numbers))}-{fmt_evidence_value(max(numbers))}{unit}"
    return _words(distinct)


def _words(values: Sequence[object]) -> str:
    words = list(dict.fromkeys(str(v) for v in values))
    left_out = len(words) - _MAX_WORDS
    return ", ".join(words[:_MAX_WORDS]) + (f", … (+{left_out} more)" if left_out > 0 else "")


def merged_evidence(members: Sequence[Finding]) -> tuple[Evidence, ...]:
    """The first member's evidence items, each with its values over the group: one value where all agree, a
    range "88-91" of numbers, or the distinct words (a few, then "… (+2 more)": what is left out is counted)."""
    if len(members) == 1:
        return members[0].evidence
    by_key = [{e.key: e for e in f.evidence} for f in members]
    merged = []
    for item in members[0].evidence:
        values = [found[item.key].value for found in by_key if item.key in found]
        merged.append(Evidence(item.label, _merged_value(values), item.unit, item.window, item.key))
    return tuple(merged)


def _merged_value(values: Sequence[float | str | None]) -> float | str | None:
    known = [v for v in values if v is not None]
    if not known:
        return None
    numbers = [v for v in known if isinstance(v, (int, float))]
    if len(numbers) == len(known):
        low, high = min(numbers), max(numbers)
        return low if low == high else f"{fmt_evidence_value(low)}-{fmt_evidence_value(high)}"
    return _words(known)
