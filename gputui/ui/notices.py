"""Notices: why the screen lacks something (no driver, no XID watch, a stopped recording), said in words.

A notice gets rows of its own under the header, wrapped whole, for its first minute; after that a notice that
stays true for the session keeps only a short badge in the header and its whole text in the `?` help, so no
notice holds a row for good. Time is the snapshots' own, not the wall clock: a replay and a test see the same.
The app says its own one-off words here too (a mark dropped, a worker that failed): rows under the header
cover nothing, where a pop-up would cover the findings.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from gputui.model import XID_UNWATCHED, Snapshot

ROW_S = 60.0  # how long a notice keeps rows of its own, in snapshot time
NO_DRIVER = "NO DRIVER"
# Source notices that stay true for the rest of the session once reported, by how they start, and their badge.
LASTING: tuple[tuple[str, str], ...] = ((XID_UNWATCHED, "NO XID"),)

Level = Literal["alarm", "warning", "info"]
LEVELS: tuple[Level, ...] = ("alarm", "warning", "info")


@dataclass(frozen=True, slots=True)
class Report:
    """A notice as a tick reports it."""

    text: str
    level: Level = "info"
    badge: str | None = None  # the header's label while it stays true; None: it passes, or a badge says it already


@dataclass(slots=True)
class Notice:
    report: Report
    since: float  # snapshot time its rows appeared
    seen: float  # snapshot time it was last reported
    once: bool = False  # said once by the app, not reported by ticks: not a standing notice for the help

    @property
    def text(self) -> str:
        return self.report.text


def reports(snapshot: Snapshot, recording_warning: str | None) -> list[Report]:
    """What a tick has to say: a stopped or lagging recording, the driver that could not be read, the source's
    events. The recording's own badge (REC STOPPED) already says it stopped; the fallback's says NO DRIVER."""
    out: list[Report] = []
    if recording_warning:
        out.append(Report(recording_warning, "alarm"))
    if snapshot.system.fallback_reason:
        reason = f"no live data ({snapshot.system.fallback_reason}); showing a simulated machine"
        out.append(Report(reason, "warning", NO_DRIVER))
    for event in snapshot.events:
        badge = next((label for start, label in LASTING if event.startswith(start)), None)
        out.append(Report(event, "warning" if badge else "info", badge))
    return out


class Notices:
    """The session's notices by text, fed once a tick with the snapshot's time."""

    def __init__(self) -> None:
        self._by_text: dict[str, Notice] = {}
        self._now: float | None = None  # the latest snapshot's time; None before the first
        self._pending: list[Notice] = []  # said before the first snapshot: shown now, their minute starts with it

    def observe(self, now: float, reported: Iterable[Report]) -> None:
        """A notice not reported for a minute and then reported again gets its rows again (a remote exporter
        that fails, recovers and fails); one gone for a minute without a badge is forgotten."""
        self._now = now
        for said in self._pending:
            said.since = said.seen = now
            self._by_text[said.text] = said
        self._pending.clear()
        for report in reported:
            known = self._by_text.get(report.text)
            if known is None or now - known.seen > ROW_S:
                self._by_text[report.text] = Notice(report, now, now)
            else:
                known.seen = now
        self._by_text = {text: n for text, n in self._by_text.items() if n.report.badge or now - n.seen <= ROW_S}

    def say(self, text: str, level: Level = "info") -> None:
        """A one-off notice from the app: rows for a minute from the latest snapshot's time, then forgotten."""
        if self._now is None:
            self._pending.append(Notice(Report(text, level), 0.0, 0.0, once=True))
        else:
            self._by_text[text] = Notice(Report(text, level), self._now, self._now, once=True)

    def clear(self) -> None:
        """A replay jumped: what was reported elsewhere in the recording is not news here."""
        self._by_text.clear()

    def rows(self) -> tuple[Notice, ...]:
        """The notices still in their first minute, the alarming first."""
        now = self._now
        fresh = [n for n in self._by_text.values() if now is not None and now - n.since < ROW_S] + self._pending
        return tuple(sorted(fresh, key=lambda n: LEVELS.index(n.report.level)))

    def badges(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(n.report.badge for n in self._by_text.values() if n.report.badge))

    def standing(self) -> tuple[str, ...]:
        """The whole text of each notice still true (the help lists them): the lasting ones, and those the
        latest tick reported."""
        now = self._now
        return tuple(
            n.text
            for n in self._by_text.values()
            if not n.once and (n.report.badge or (now is not None and n.seen >= now))
        )
