"""The diagnostics pane: open findings worst first, one row per rule and cause with the GPUs it covers
(groups.py), their evidence, the chosen one's advice, and history. The verdict is not repeated here: it is on
the line under the header on every screen.

It is one Rich Text, rebuilt only when what it shows changes (durations are shown to the second, so an open
finding repaints once a second at most). What does not fit is counted ("+3 more"), never dropped silently.
Only ASCII is used for its own marks, so it reads the same in PuTTY, tmux and a Linux console.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from rich.console import Group
from rich.text import Text
from textual import events
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.widget import Widget

from gputui.diagnostics.catalog import severity_label, text
from gputui.diagnostics.engine import Pending
from gputui.diagnostics.findings import Finding, Severity, format_evidence
from gputui.diagnostics.groups import FindingGroup, counts_text, group_findings, sort_groups
from gputui.diagnostics.verdict import Verdict
from gputui.formatting import fmt_duration
from gputui.text.quiet_text import QuietLine, quiet_lines

SEVERITY_STYLES = {Severity.CRITICAL: "bold red", Severity.WARNING: "yellow", Severity.INFO: "cyan"}
HISTORY_STYLE = "dim"
QUIET_STYLE = "yellow"  # not known to be healthy yet, or a condition watched: neither good nor a finding
CURSOR_STYLE = "reverse"
MAX_EVIDENCE = 4  # evidence items shown per finding; the rest is in `gputui diagnose --json`

GroupKey = tuple[object, ...]


class _Lines:
    """The pane's lines as they are built, and which finding owns each line (for mouse clicks)."""

    def __init__(self) -> None:
        self.texts: list[Text] = []
        self.owners: list[int | None] = []

    def add(self, content: Text, owner: int | None = None) -> None:
        """A line cut to the pane's width: the list stays one line per row, so clicks map to findings."""
        content.no_wrap, content.overflow = True, "ellipsis"
        self.texts.append(content)
        self.owners.append(owner)


def _key(group: FindingGroup) -> GroupKey:
    return group.key


class DiagnosticsPane(Widget, can_focus=True):
    """Finding rows by severity; up/down and enter (or a click) choose one and show its advice.

    It fills the slot it is given (height 100%) and scrolls its list to keep the cursor in view.
    """

    DEFAULT_CSS = """
    DiagnosticsPane {
        height: 100%;
        padding: 0 1;
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up", "cursor(-1)", "Previous finding", show=False),
        Binding("down", "cursor(1)", "Next finding", show=False),
        Binding("enter", "choose", "Advice", show=False),
    ]

    class FindingSelected(Message):
        """A row was chosen: the app highlights `finding.metric` on the GPU panels it names."""

        def __init__(self, finding: FindingGroup) -> None:
            super().__init__()
            self.finding = finding

    def __init__(
        self, lang: str = "en", *, name: str | None = None, id: str | None = None, classes: str | None = None
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.lang = lang
        self._open: tuple[FindingGroup, ...] = ()
        self._history: tuple[FindingGroup, ...] = ()
        self._shown: tuple[object, ...] | None = None
        self._quiet: tuple[QuietLine, ...] = (QuietLine(text("quiet.unjudged", lang)),)  # before the first tick
        self._cursor = 0
        self._chosen: GroupKey | None = None
        self._line_owner: list[int | None] = []  # rendered line -> index into _entries
        self._tally: str | None = None  # what the session's time has cost so far, with a price set
        self.wanted_height = 2  # the lines it would take to show everything: the layout gives it no more
        self._text: Group = Group()

    @property
    def entries(self) -> tuple[FindingGroup, ...]:
        """What can be chosen, in screen order: open rows, then history."""
        return self._open + self._history

    @property
    def chosen(self) -> FindingGroup | None:
        for group in self.entries:
            if _key(group) == self._chosen:
                return group
        return None

    def show_findings(
        self,
        active: Sequence[Finding],
        closed: Sequence[Finding],
        verdict: Verdict | None = None,
        pending: Sequence[Pending] = (),
    ) -> None:
        """New engine state; nothing is redrawn when the screen would not change. Without a finding open, the pane
        says "nothing slows the GPUs" only where the verdict knows it (quiet_text.py); what is about to open is
        said as watched."""
        # "No findings" would read against any finding listed under it, info included.
        quiet = tuple(quiet_lines(verdict, pending, bool(active), self.lang, "ui.none"))
        shown = (
            *(
                (f.rule, f.gpus, f.started_at, f.severity, f.title, int(f.duration_s), f.evidence, f.ended_at is None)
                for f in (*active, *closed)
            ),
            quiet,
        )
        if shown == self._shown:
            return
        self._quiet = quiet
        cursor_key = _key(self.entries[self._cursor]) if self.entries else None
        self._open = sort_groups(group_findings(active, self.lang))
        self._history = group_findings(closed, self.lang)
        self._shown = shown
        keys = [_key(f) for f in self.entries]
        self._cursor = keys.index(cursor_key) if cursor_key in keys else min(self._cursor, max(0, len(keys) - 1))
        self._rebuild()

    def show_tally(self, line: str | None) -> None:
        """The session's cost so far, on the pane's last line; redrawn only when its text changes."""
        if line != self._tally:
            self._tally = line
            self._rebuild()

    def action_cursor(self, step: int) -> None:
        if self.entries:
            self._cursor = (self._cursor + step) % len(self.entries)
            self._rebuild()

    def action_choose(self) -> None:
        if self.entries:
            self._choose(self._cursor)

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None or not 0 <= offset.y < len(self._line_owner):
            return
        owner = self._line_owner[offset.y]
        if owner is not None:
            self._cursor = owner
            self._choose(owner)

    def _choose(self, index: int) -> None:
        group = self.entries[index]
        self._chosen = _key(group)
        self._rebuild()
        self.post_message(self.FindingSelected(group))

    def _rebuild(self) -> None:
        """New text for the same region: the pane fills its slot, so no layout pass is needed."""
        if not self.is_mounted:
            return
        self._text = self._build()
        self.refresh()

    def render(self) -> Group:
        return self._text

    def _build(self) -> Group:
        """Header, the findings (scrolled to keep the cursor in view when the pane is short), then advice."""
        lang = self.lang
        header = Text(text("ui.title", lang), style="bold", no_wrap=True, overflow="ellipsis")
        counts = counts_text(self._open, lang)
        if counts:
            header.append("  " + counts)
        top = [header]
        body = _Lines()
        for line in self._quiet:
            body.add(Text(line.words, style="green" if line.healthy else QUIET_STYLE))
        for index, finding in enumerate(self.entries):
            history = not finding.is_open
            if history and index == len(self._open):
                body.add(Text(f"-- {text('ui.history', lang)} --", style=HISTORY_STYLE))
            self._finding_lines(finding, index, history, body)
        chosen = self.chosen
        foot: list[Text] = []
        if chosen is not None:
            advice = Text(chosen.advice)
            foot = [Text(f"{text('ui.advice', lang)}: {chosen.title}", style="bold", no_wrap=True), advice]
            foot_rows = 1 + len(advice.wrap(self.app.console, max(1, self.size.width)))
        elif self.entries:
            # The keys reach the pane only while it has focus (`d` gives it); the hint says which to press.
            hint = text("ui.hint" if self.has_focus else "ui.hint.unfocused", lang)
            foot = [Text(hint, style=HISTORY_STYLE, no_wrap=True)]
            foot_rows = 1
        else:
            foot_rows = 0
        if self._tally is not None:
            foot.append(Text(self._tally, style=HISTORY_STYLE, no_wrap=True, overflow="ellipsis"))
            foot_rows += 1
        self.wanted_height = len(top) + len(body.texts) + foot_rows
        room = self.size.height - len(top) - foot_rows
        start, rows = self._scroll(body.owners, room)
        if self._hidden(body.owners, start, rows):
            # What does not fit is counted on a row of its own, rather than left to be guessed.
            start, rows = self._scroll(body.owners, room - 1)
        shown = body.texts[start : start + rows]
        owners = body.owners[start : start + rows]
        hidden = self._hidden(body.owners, start, rows)
        if hidden:
            shown.append(Text(text("ui.more", lang, count=hidden), style=HISTORY_STYLE, no_wrap=True))
            owners.append(None)
        # Only the findings can be clicked; the header and the advice below own no finding.
        self._line_owner = [*(None for _ in top), *owners]
        return Group(*top, *shown, *foot)

    @staticmethod
    def _hidden(owners: list[int | None], start: int, rows: int) -> int:
        """Rows (findings) none of whose lines are among those shown."""
        return len({o for o in owners if o is not None} - set(owners[start : start + rows]))

    def _scroll(self, owners: list[int | None], room: int) -> tuple[int, int]:
        """The first body line to show and how many, so that the cursor's lines are in view."""
        if self.size.height <= 0 or len(owners) <= room:
            return 0, len(owners)
        room = max(1, room)
        mine = [i for i, owner in enumerate(owners) if owner == self._cursor] or [0]
        start = max(0, mine[-1] + 1 - room)
        return min(start, mine[0]), room

    def _finding_lines(self, group: FindingGroup, index: int, history: bool, lines: _Lines) -> None:
        lang = self.lang
        style = HISTORY_STYLE if history else SEVERITY_STYLES[group.severity]
        head = Text("> " if index == self._cursor else "  ", style=CURSOR_STYLE if self.has_focus else "")
        head.append(severity_label(group.severity, lang) + " ", style=style)
        head.append(group.title, style=HISTORY_STYLE if history else "")
        duration = fmt_duration(group.duration_s)
        head.append("  " + (text("ui.lasted", lang, duration=duration) if history else duration), style=HISTORY_STYLE)
        lines.add(head, index)
        if not history and group.evidence:
            now = text("win.now", lang)
            evidence = " | ".join(format_evidence(e, quiet_window=now) for e in group.evidence[:MAX_EVIDENCE])
            lines.add(Text("       " + evidence, style=HISTORY_STYLE), index)

    def on_mount(self) -> None:
        self._rebuild()

    def on_resize(self) -> None:
        self._rebuild()

    def watch_has_focus(self, has_focus: bool) -> None:
        """The cursor is marked only while focused; `on_focus` would run before `has_focus` is set."""
        super().watch_has_focus(has_focus)
        self._rebuild()
