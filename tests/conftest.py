"""What every test directory shares: one fake clock that moves only when the test says so."""

from __future__ import annotations

import pytest


class Clock:
    """Seconds that move only when the test sets ``now`` or calls ``advance``; ``step`` moves them on each read.

    A step suits a caller that must see a new time on every read (an exporter that skips a repeated reading).
    """

    def __init__(self, now: float = 0.0, step: float = 0.0) -> None:
        self.now = now
        self.step = step

    def __call__(self) -> float:
        current = self.now
        self.now += self.step
        return current

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock() -> Clock:
    return Clock()
