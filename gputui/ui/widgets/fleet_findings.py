"""The fleet findings pane: what no single server can see (a straggler, a GPU held and idle), worst first.

One line per finding, its severity and its title in the app's language; as many as the pane's height holds, then
how many more. The lines are built by a pure function, as the fleet blocks' are.
"""

from __future__ import annotations

from collections.abc import Sequence

from gputui.diagnostics.catalog import severity_label, text
from gputui.diagnostics.fleet_rules import FleetFinding
from gputui.ui.widgets.diagnostics import SEVERITY_STYLES
from gputui.ui.widgets.lines import Line, LineView

LABEL = "bright_black"


def fleet_finding_lines(findings: Sequence[FleetFinding], lang: str, height: int) -> list[Line]:
    """The pane's `height` lines (at least one): its title with the count, then each finding, or that none is
    open; the last line says how many more there are when they do not all fit."""
    title = text("ui.fleet.title", lang)
    if not findings:
        return [[(title, "bold"), ("  ", ""), (text("ui.fleet.none", lang), LABEL)]]
    lines: list[Line] = [[(title, "bold"), (f" ({len(findings)})", LABEL)]]
    room = max(1, height - 1)
    shown = findings if len(findings) <= room else findings[: room - 1]
    for f in shown:
        lines.append([(severity_label(f.severity, lang), SEVERITY_STYLES[f.severity]), (" ", ""), (f.title, "")])
    if len(shown) < len(findings):
        lines.append([(text("ui.fleet.more", lang, count=len(findings) - len(shown)), LABEL)])
    return lines


def fleet_pane_height(findings: Sequence[FleetFinding], most: int) -> int:
    """Lines the pane wants: its title and one per finding, within `most` (and at least one)."""
    return max(1, min(1 + len(findings), most))


class FleetFindingsPane(LineView):
    """The fleet findings; `show()` takes the newest and the height the layout gives the pane."""

    def __init__(self, *, id: str | None = None, lang: str = "en") -> None:
        super().__init__(id=id)
        self.lang = lang
        self.findings: Sequence[FleetFinding] = ()
        self.height = 1

    def show(self, findings: Sequence[FleetFinding], height: int) -> None:
        self.findings, self.height = findings, max(1, height)
        lines = fleet_finding_lines(findings, self.lang, self.height)
        if self.styles.height is None or self.styles.height.value != len(lines):
            self.styles.height = len(lines)
        self.redraw()

    def build_lines(self, width: int) -> Sequence[Line]:
        return fleet_finding_lines(self.findings, self.lang, self.height)
