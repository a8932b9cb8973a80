"""How `diagnose` and `diagnose --prometheus` print findings: one way for both, so a node of the fleet reads as a
health check of that node does (the exit code from the same findings: gputui.commands.common.exit_code)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from gputui.diagnostics.catalog import severity_label, text
from gputui.diagnostics.engine import Pending
from gputui.diagnostics.findings import Severity, format_evidence
from gputui.diagnostics.groups import FindingGroup
from gputui.diagnostics.verdict import Verdict
from gputui.formatting import fmt_duration
from gputui.model import Snapshot
from gputui.text.activity_text import detail_lines
from gputui.text.quiet_text import quiet_lines


def finding_lines(
    groups: Sequence[FindingGroup], lang: str, verdict: Verdict | None, pending: Sequence[Pending] = ()
) -> list[str]:
    """One row per rule and cause, worst first (groups.py), each with how long it has held or when it held (a
    finding that closed), its evidence and its advice; first, what is watched and, where none above info was
    seen, whether that means healthy (quiet_text.py: not before the verdict is known, nor beside a verdict that is
    a problem)."""
    above_info = any(group.severity > Severity.INFO for group in groups)  # one that closed counts: it held
    out = [line.words for line in quiet_lines(verdict, pending, above_info, lang, "cli.none")]
    now = text("win.now", lang)
    for group in groups:
        where = group.rule
        ended = group.ended_at
        if ended is not None:
            where += ", " + text("cli.was", lang, span=f"{_clock(group.started_at)}-{_clock(ended)}")
        elif group.duration_s >= 1:
            where += ", " + text("cli.since", lang, duration=fmt_duration(group.duration_s))
        out.append(f"{severity_label(group.severity, lang)}  {group.title}  [{where}]")
        if group.evidence:
            out.append("      " + " | ".join(format_evidence(ev, quiet_window=now) for ev in group.evidence))
        out.append(f"      {text('cli.advice', lang)}: {group.advice}")
    return out


def activity_lines(last: Snapshot | None, lang: str) -> list[str]:
    """What each GPU process's main thread did where its stacks were read (its activity), then its top frame and
    its workers: the measurement behind a verdict that names it."""
    if last is None:
        return []
    out: list[str] = []
    pids = dict.fromkeys(p.pid for gpu in last.gpus for p in gpu.processes if p.seen != "hidden")
    for pid in pids:
        proc = last.host.process(pid)
        if proc is None or proc.activity is None:
            continue
        first, *rest = detail_lines(proc.activity, last.timestamp)
        out.append(text("cli.activity", lang, pid=pid, name=proc.name, activity=first))
        out += [f"      {line}" for line in rest]
    return out


def _clock(timestamp: float) -> str:
    """A time of day on this machine's clock, as the user's own logs show it."""
    return datetime.fromtimestamp(timestamp).strftime("%H:%M:%S")
