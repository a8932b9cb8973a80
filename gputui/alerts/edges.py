"""Which alerts a tick makes: an "open" when a finding at or above the minimum severity is open and was not
announced, a "closed" when an announced one is no longer open.

The engine has already applied the hysteresis, so a finding in the tick's list is open. A finding is its rule,
its cause (variant) and its GPUs. A flapping finding sends at most one open/close pair per `min_interval_s`: a
close is always sent (the receiver must not believe a finding open that is gone), but an open within
`min_interval_s` of the last open announced for the same finding is held back; if the finding is still open once
the interval has passed, the open is sent then, so what the receiver believes catches up with what is true. A
finding that opened and closed again while held back sends nothing.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from gputui.alerts.message import AlertState
from gputui.diagnostics.findings import Finding, Severity

FindingKey = tuple[object, ...]


def alert_key(finding: Finding) -> FindingKey:
    return (*finding.key, finding.variant)


class Edges:
    """Fed each tick's open and just-closed findings with the tick's time; says what to announce."""

    def __init__(self, min_severity: Severity, min_interval_s: float) -> None:
        self._min_severity = min_severity
        self._min_interval_s = min_interval_s
        self._announced: dict[FindingKey, Finding] = {}  # announced open, and not yet announced closed
        self._last_open: dict[FindingKey, float] = {}  # when each finding's last open was announced

    def update(
        self, now: float, active: Iterable[Finding], closed: Iterable[Finding] = ()
    ) -> list[tuple[AlertState, Finding]]:
        open_now = {alert_key(f): f for f in active if f.severity >= self._min_severity}
        ended = {alert_key(f): f for f in closed}
        out: list[tuple[AlertState, Finding]] = []
        for key, finding in list(self._announced.items()):
            if key not in open_now:
                del self._announced[key]
                out.append(("closed", ended.get(key) or replace(finding, ended_at=now)))
        for key, finding in open_now.items():
            if key in self._announced:
                continue
            last = self._last_open.get(key)
            if last is None or now - last >= self._min_interval_s:
                self._announced[key] = finding
                self._last_open[key] = now
                out.append(("open", finding))
        # A finding announced long enough ago and no longer open can open at once next time: forget it.
        self._last_open = {
            k: t for k, t in self._last_open.items() if k in self._announced or now - t < self._min_interval_s
        }
        return out
