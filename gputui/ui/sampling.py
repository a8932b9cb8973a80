"""The sampling thread: read the source, run the diagnostics, hand one Tick to the UI; never on the event loop.

One long-lived thread polls in a loop and waits on an Event between polls, so polls never overlap and a
slow driver delays only the next reading. A worker and a timer made afresh for every poll cost ~1 ms a
tick in Textual's machinery, a tenth of the app's CPU budget at 1 s; this loop costs a wake-up.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from gputui.diagnostics.engine import DiagnosticsEngine
from gputui.diagnostics.findings import Finding
from gputui.model import Snapshot
from gputui.sources.base import Source

# The refresh intervals `+` and `-` step through; `--interval` must lie within them.
INTERVALS: tuple[float, ...] = (0.25, 0.5, 1.0, 2.0, 3.0, 5.0, 10.0)
MIN_INTERVAL = INTERVALS[0]
MAX_INTERVAL = INTERVALS[-1]


@dataclass(frozen=True, slots=True)
class Tick:
    """One reading and the findings open (and recently closed) after it."""

    snapshot: Snapshot
    active: tuple[Finding, ...] = ()
    closed: tuple[Finding, ...] = ()


class Sampler:
    """Owns the source and the diagnostics engine; `take()` runs on the sampling thread, one call at a time."""

    def __init__(self, source: Source, engine: DiagnosticsEngine | None = None) -> None:
        self.source = source
        self.engine = engine if engine is not None else DiagnosticsEngine()

    def take(self) -> Tick:
        snapshot = self.source.sample()
        state = self.engine.update(snapshot)
        return Tick(snapshot=snapshot, active=state.active, closed=state.closed)


class SamplingLoop:
    """Calls `sampler.take()` every `interval` seconds (from the start of one poll to the next) on its own
    thread and hands each Tick, or the error as text, to `deliver` / `failed` (both must be thread-safe)."""

    def __init__(
        self,
        sampler: Sampler,
        interval: float,
        deliver: Callable[[Tick], object],
        failed: Callable[[str], object],
    ) -> None:
        self.sampler = sampler
        self.interval = interval
        self._deliver = deliver
        self._failed = failed
        self._wake = threading.Event()
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name="gputui-sampler", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def set_interval(self, seconds: float) -> None:
        """Takes effect at once: a long wait in progress is cut short and measured again."""
        self.interval = seconds
        self._wake.set()

    def stop(self, timeout: float = 2.0) -> bool:
        """Ends the loop; True once the thread is gone (a driver call can hold it up to `timeout`)."""
        self._stopping = True
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join(timeout)
        return not self._thread.is_alive()

    def _run(self) -> None:
        while not self._stopping:
            started = time.monotonic()
            try:
                tick = self.sampler.take()
            except Exception as exc:  # any source failure is shown, and the next poll tries again
                self._failed(f"{type(exc).__name__}: {exc}")
            else:
                self._deliver(tick)
            while not self._stopping:
                remaining = self.interval - (time.monotonic() - started)
                if remaining <= 0:
                    break
                self._wake.wait(remaining)
                self._wake.clear()
