"""What every view says where no finding above info is open: "healthy" only when gputui knows it.

Before the rules have their readings the verdict is `unknown`, and a view that said "nothing slows the GPUs" then
would pass a health check blind; a verdict that is itself a problem (memory-bandwidth-bound, underused) is no
"healthy" either; and a condition the engine already sees, not yet held long enough to open its finding, is said
as watched. The monitor's pane and `diagnose` both say it from here, so they cannot disagree.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from gputui.diagnostics.catalog import text
from gputui.diagnostics.engine import Pending
from gputui.diagnostics.verdict import Verdict

# The verdict classes that say nothing holds the GPUs back: the machine delivers (GPU-bound), or has no work (idle).
HEALTHY_CLASSES = frozenset({"gpu_bound", "idle"})


@dataclass(frozen=True, slots=True)
class QuietLine:
    """One line in place of the findings: its words, and whether it says the GPUs are healthy (the views colour
    only that one as good)."""

    words: str
    healthy: bool = False


def is_healthy(verdict: Verdict) -> bool:
    """The verdict says nothing holds any GPU back; a `mixed` one, of each of its groups."""
    if verdict.cls == "mixed":
        return bool(verdict.groups) and all(is_healthy(group) for group in verdict.groups)
    return verdict.cls in HEALTHY_CLASSES


def quiet_lines(
    verdict: Verdict | None, pending: Sequence[Pending], above_info: bool, lang: str, healthy_key: str
) -> list[QuietLine]:
    """What to say beside (or in place of) the findings: each condition watched, and, unless a finding above info
    is there (`above_info`: open, in the pane; seen while sampling, in `diagnose`), why the GPUs are not called
    healthy, or `healthy_key`'s words ("ui.none", "cli.none") where they are."""
    watched = [
        QuietLine(text("quiet.watching", lang, title=p.title, seconds=max(1, math.ceil(p.opens_in_s)))) for p in pending
    ]
    if above_info:
        return watched
    if verdict is None:
        return [QuietLine(text("quiet.unjudged", lang)), *watched]
    if verdict.cls == "unknown":
        return [QuietLine(text("quiet.collecting", lang, summary=verdict.summary)), *watched]
    if not is_healthy(verdict):
        return [QuietLine(text("quiet.verdict", lang, label=verdict.label)), *watched]
    return watched or [QuietLine(text(healthy_key, lang), healthy=True)]
