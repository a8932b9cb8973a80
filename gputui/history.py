"""A bounded ring of recent Snapshots: short history for the panels and windows for the diagnostic rules."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator
from typing import TypeVar

from gputui.model import GpuSample, Snapshot

T = TypeVar("T")


class History:
    """The last `capacity` snapshots, oldest first. Not thread-safe: one owner appends, on one thread."""

    def __init__(self, capacity: int = 600) -> None:
        if capacity < 1:
            raise ValueError("history capacity must be at least 1")
        self._snapshots: deque[Snapshot] = deque(maxlen=capacity)

    def append(self, snapshot: Snapshot) -> None:
        self._snapshots.append(snapshot)

    def clear(self) -> None:
        self._snapshots.clear()

    def __len__(self) -> int:
        return len(self._snapshots)

    def __iter__(self) -> Iterator[Snapshot]:
        return iter(self._snapshots)

    @property
    def latest(self) -> Snapshot | None:
        return self._snapshots[-1] if self._snapshots else None

    def window(self, seconds: float) -> list[Snapshot]:
        """Snapshots whose timestamp lies within `seconds` of the latest one, oldest first."""
        if not self._snapshots:
            return []
        cutoff = self._snapshots[-1].timestamp - seconds
        out: list[Snapshot] = []
        for snap in reversed(self._snapshots):
            if snap.timestamp < cutoff:
                break
            out.append(snap)
        out.reverse()
        return out

    def gpu_series(self, index: int, value: Callable[[GpuSample], T | None], last: int | None = None) -> list[T | None]:
        """One metric of one GPU over the newest `last` snapshots (all when None); missing readings are None."""
        snaps = list(self._snapshots)[-last:] if last else list(self._snapshots)
        out: list[T | None] = []
        for snap in snaps:
            sample = next((g for g in snap.gpus if g.index == index), None)
            out.append(value(sample) if sample is not None and not sample.lost else None)
        return out
