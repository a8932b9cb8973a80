"""`gputui diagnose --at T [--window 10m]`: the span of the history store a past health check reads, and where its
answer says it came from (the check itself is diagnose.py's, on these readings: `judge_recorded`)."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from gputui.commands import common
from gputui.record.reader import Recording


@dataclass(frozen=True, slots=True)
class FromHistory:
    """Where an answer from the store comes from: the store, the span asked, the readings found in it."""

    store: Path
    start: float
    end: float
    readings: int

    def line(self) -> str:
        return (
            f"FROM THE HISTORY  {common.clock(self.start)} to {common.clock(self.end)} "
            f"({self.readings} readings), store {self.store}"
        )

    def to_dict(self) -> dict[str, object]:
        return {"store": str(self.store), "from": self.start, "to": self.end, "readings": self.readings}


def read_span(directory: Path, start: float, end: float) -> tuple[Recording, FromHistory]:
    """The store's readings from `start` to `end` (its damaged frames said on stderr); StoreError: no store (how to
    start one), a newer one, or nothing in the span (what the store holds)."""
    from gputui.store.reader import Store

    store = Store(directory)
    recording = common.read_history(store, start, end)
    for warning in recording.warnings:
        print(f"gputui: warning: {warning}", file=sys.stderr)
    return recording, FromHistory(store.directory, start, end, len(recording.ticks))
