"""What a diagnostic rule says: a Finding, with its evidence as numbers and advice a user can act on."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

from gputui.diagnostics.instances import unit_index
from gputui.formatting import fmt_evidence_value


class Severity(enum.IntEnum):
    """Ordered so that max() gives the worst; the names are the interface (`info`, `warning`, `critical`)."""

    INFO = 0
    WARNING = 1
    CRITICAL = 2

    @property
    def label(self) -> str:
        return self.name.lower()


@dataclass(frozen=True, slots=True)
class Evidence:
    """One measured fact behind a finding, e.g. ('SM clock', 1410.0, 'MHz', 'mean over 10 s')."""

    label: str
    value: float | str | None
    unit: str = ""
    window: str = ""
    key: str = ""  # a stable, untranslated name of what was measured, for JSON readers
    # What a rule's window words need beyond the window's seconds ("of {samples} stack samples"); () once in words.
    params: tuple[tuple[str, object], ...] = ()


@dataclass(frozen=True, slots=True)
class Finding:
    """One named cause of slowness, open from `started_at` for `duration_s` (to `ended_at` once closed)."""

    rule: str
    severity: Severity
    title: str
    advice: str
    gpus: tuple[int, ...] = ()
    variant: str = ""  # which of its rule's causes (`main_process`, `quota`...): a stable key, like `rule`
    pids: tuple[int, ...] = ()
    evidence: tuple[Evidence, ...] = field(default=())
    started_at: float = 0.0
    duration_s: float = 0.0
    ended_at: float | None = None  # None while the finding is open
    worst: float | None = None  # the worst value seen of the rule's key metric
    metric: str | None = None  # the GpuSample field it concerns, so a view can highlight it
    # The placeholders its title and advice were made from: findings of one rule and cause on several GPUs are
    # worded as one row from them (groups.py). Not in the JSON; () for findings no rule made.
    params: tuple[tuple[str, object], ...] = ()
    # The MIG instances it concerns, as (GPU index, GPU instance id), their GPUs in `gpus`; () for a whole GPU's
    # finding (heat, power, PCIe... of a MIG GPU concern all its instances alike).
    mig_instances: tuple[tuple[int, int], ...] = ()

    @property
    def is_open(self) -> bool:
        return self.ended_at is None

    @property
    def key(self) -> tuple[str, tuple[int, ...]]:
        """What makes two readings the same finding: the rule and the GPUs it concerns; for MIG instances, their
        unit indices (instances.py), so two instances of one GPU are two findings."""
        if self.mig_instances:
            return self.rule, tuple(unit_index(gpu, gi) for gpu, gi in self.mig_instances)
        return self.rule, self.gpus


def finding_to_dict(finding: Finding) -> dict[str, Any]:
    """The JSON shape of `gputui diagnose --json` (and of recordings): keys as the issue names them."""
    out: dict[str, Any] = {
        "rule": finding.rule,
        "variant": finding.variant,
        "severity": finding.severity.label,
        "gpus": list(finding.gpus),
        "pids": list(finding.pids),
        "title": finding.title,
        "evidence": [
            {"key": ev.key, "label": ev.label, "value": ev.value, "unit": ev.unit, "window": ev.window}
            for ev in finding.evidence
        ],
        "advice": finding.advice,
        "started_at": finding.started_at,
        "ended_at": finding.ended_at,
        "duration_s": round(finding.duration_s, 3),
    }
    if finding.mig_instances:
        out["mig_instances"] = instances_to_list(finding.mig_instances)
    return out


def instances_to_list(pairs: tuple[tuple[int, int], ...]) -> list[dict[str, int]]:
    """MIG instances in JSON: [{"gpu": 0, "gpu_instance_id": 2}]."""
    return [{"gpu": gpu, "gpu_instance_id": gi} for gpu, gi in pairs]


def instances_from_list(items: Any) -> tuple[tuple[int, int], ...]:
    """The inverse of instances_to_list, for readers of recordings; absent (older files) reads as ()."""
    return tuple((int(item["gpu"]), int(item["gpu_instance_id"])) for item in items or ())


def format_evidence(ev: Evidence, *, quiet_window: str = "") -> str:
    """'SM clock 1410 MHz (mean over 10 s)'; a window equal to `quiet_window` (e.g. "now") is left out."""
    unit = ev.unit if ev.unit in ("%", "") else f" {ev.unit}"
    window = f" ({ev.window})" if ev.window and ev.window != quiet_window else ""
    if isinstance(ev.value, str) and not ev.unit:  # words ("process: python3 (4242)"); a range has its unit
        return f"{ev.label}: {ev.value}{window}"
    return f"{ev.label} {fmt_evidence_value(ev.value)}{unit}{window}"
