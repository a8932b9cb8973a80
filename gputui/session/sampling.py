"""The sampling thread: read the source, run the diagnostics, hand one Tick to the UI; never on the event loop.

One long-lived thread polls in a loop and waits on an Event between polls, so polls never overlap and a
slow driver delays only the next reading. A worker and a timer made afresh for every poll cost ~1 ms a
tick in Textual's machinery, a tenth of the app's CPU budget at 1 s; this loop costs a wake-up.
"""

from __future__ import annotations

import select
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from gputui.diagnostics.engine import DiagnosticsEngine
from gputui.diagnostics.findings import Finding
from gputui.diagnostics.verdict import Verdict
from gputui.model import Snapshot
from gputui.sources.base import Source

# The refresh intervals `+` and `-` step through; `--interval` must lie within them.
INTERVALS: tuple[float, ...] = (0.25, 0.5, 1.0, 2.0, 3.0, 5.0, 10.0)
MIN_INTERVAL = INTERVALS[0]
MAX_INTERVAL = INTERVALS[-1]


@dataclass(frozen=True, slots=True)
class Tick:
    """One reading, the verdict, and the findings open (and recently closed) after it."""

    snapshot: Snapshot
    active: tuple[Finding, ...] = ()
    closed: tuple[Finding, ...] = ()
    verdict: Verdict | None = None


class Sampler:
    """Owns the source and the diagnostics engine; `take()` runs on the sampling thread, one call at a time."""

    def __init__(self, source: Source, engine: DiagnosticsEngine | None = None) -> None:
        self.source = source
        self.engine = engine if engine is not None else DiagnosticsEngine()

    def take(self) -> Tick:
        snapshot = self.source.sample()
        state = self.engine.update(snapshot)
        return Tick(snapshot=snapshot, active=state.active, closed=state.closed, verdict=state.verdict)


# How often, at most, the loop looks for a lost terminal while it waits for the next poll.
HANGUP_CHECK_S = 1.0


def hung_up(fd: int) -> bool:
    """True when the terminal on `fd` has gone (SSH link dropped, tmux pane killed): it polls as HUP."""
    poller = select.poll()
    poller.register(fd, select.POLLHUP)
    return any(events & (select.POLLHUP | select.POLLNVAL) for _, events in poller.poll(0))


class SamplingLoop:
    """Calls `sampler.take()` every `interval` seconds (from the start of one poll to the next) on its own
    thread and hands each Tick, or the error as text, to `deliver` / `failed` (both must be thread-safe).

    With `terminal_fd`, it also calls `hangup` (and ends) once that terminal is gone: a closed pty sends
    no SIGHUP to a process that is not its session's foreground, and the app must not outlive it.
    """

    def __init__(
        self,
        sampler: Sampler,
        interval: float,
        deliver: Callable[[Tick], object],
        failed: Callable[[str], object],
        terminal_fd: int | None = None,
        hangup: Callable[[], object] | None = None,
    ) -> None:
        self.sampler = sampler
        self.interval = interval
        self._deliver = deliver
        self._failed = failed
        self._terminal_fd = terminal_fd
        self._hangup = hangup
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

    def _terminal_lost(self) -> bool:
        if self._terminal_fd is None or not hung_up(self._terminal_fd):
            return False
        self._stopping = True
        if self._hangup is not None:
            self._hangup()
        return True

    def _run(self) -> None:
        while not self._stopping and not self._terminal_lost():
            started = time.monotonic()
            try:
                tick = self.sampler.take()
            except Exception as exc:  # any source failure is shown, and the next poll tries again
                self._failed(f"{type(exc).__name__}: {exc}")
            else:
                self._deliver(tick)
            while not self._stopping:
                remaining = self.interval - (time.monotonic() - started)
                if remaining <= 0 or self._terminal_lost():
                    break
                self._wake.wait(min(remaining, HANGUP_CHECK_S))
                self._wake.clear()
