"""The one sampling loop: the monitor, `diagnose`, the exporter and the fleet view all poll through it.

A poll is `take()` (a Sampler: read, diagnose, record; for the fleet, every exporter at once); what it returns goes
to `deliver`, what it raises to `failed`. The loop polls once, waits until the next poll is due, and polls again,
so polls never overlap and a slow reading delays only the next one. The monitor, the exporter and the fleet view
run it on one long-lived thread of its own: a worker and a timer made afresh for every poll cost ~1 ms a tick in
Textual's machinery, a tenth of the monitor's CPU budget at 1 s; this loop costs one wake-up a poll. `diagnose`
runs it on the calling thread for a number of polls, on simulated time for the simulated machine (its seconds
pass at once).

Polls are due on a grid, `interval` apart from the first, so they do not drift. One that ends past the next one's
time is followed by one at once, and the grid starts again there: a stalled driver or a suspended laptop is not
caught up on in a burst.
"""

from __future__ import annotations

import contextlib
import math
import os
import select
import threading
import time
from collections.abc import Callable
from typing import Generic, Protocol, TypeVar

T = TypeVar("T")


class Pace(Protocol):
    """The loop's time: what time it is, and a wait for a deadline that `nudge()` (or a lost terminal) cuts short."""

    hung_up: bool  # the terminal the loop watches has gone

    def open(self) -> None: ...

    def now(self) -> float: ...

    def wait_until(self, deadline: float) -> None: ...

    def nudge(self) -> None: ...

    def close(self) -> None: ...


class RealTime:
    """Real time, waited for in poll(2) on a pipe and, when given, the terminal: a nudge (stop, a new interval) or a
    lost terminal ends a wait at once, so the loop wakes once a poll and never in between to look at the terminal.

    A closed pty polls as hung up, and sends no SIGHUP to a process that is not its session's foreground: the
    monitor must not outlive its terminal (an SSH link dropped, a tmux pane killed).
    """

    def __init__(self, terminal_fd: int | None = None) -> None:
        self.hung_up = False
        self._terminal_fd = terminal_fd
        self._lock = threading.Lock()
        self._pipe: tuple[int, int] | None = None
        self._poller = select.poll()

    def open(self) -> None:
        """Makes the pipe a nudge writes to; until then (and after close()) a nudge does nothing."""
        with self._lock:
            if self._pipe is not None:
                return
            read, write = os.pipe()
            os.set_blocking(read, False)
            os.set_blocking(write, False)
            self._pipe = (read, write)
            self._poller = select.poll()
            self._poller.register(read, select.POLLIN)
            if self._terminal_fd is not None:
                # Hang-ups and errors are reported whatever is asked; not POLLIN: what is typed is the app's to read.
                self._poller.register(self._terminal_fd, select.POLLHUP)

    def now(self) -> float:
        return time.monotonic()

    def wait_until(self, deadline: float) -> None:
        timeout_ms = max(0, math.ceil((deadline - time.monotonic()) * 1000))
        for fd, _events in self._poller.poll(timeout_ms):
            if fd == self._terminal_fd:
                self.hung_up = True  # HUP, ERR or NVAL: the terminal is gone, or no use
            elif self._pipe is not None:
                with contextlib.suppress(BlockingIOError):
                    os.read(fd, 4096)

    def nudge(self) -> None:
        with self._lock:
            if self._pipe is not None:
                with contextlib.suppress(BlockingIOError):  # full: a wake-up is already waiting
                    os.write(self._pipe[1], b"\0")

    def close(self) -> None:
        with self._lock:
            if self._pipe is not None:
                for fd in self._pipe:
                    os.close(fd)
                self._pipe = None


class SimulatedTime:
    """Time that passes only while the loop waits, and then at once to the deadline: `diagnose --demo` samples its
    N seconds this way, and the loop's tests run on it."""

    def __init__(self, start: float = 0.0) -> None:
        self.t = start
        self.hung_up = False

    def open(self) -> None:
        pass

    def now(self) -> float:
        return self.t

    def wait_until(self, deadline: float) -> None:
        self.t = max(self.t, deadline)

    def nudge(self) -> None:
        pass

    def close(self) -> None:
        pass


def failure_text(exc: Exception) -> str:
    """A failed poll in one line, for a header: "RuntimeError: driver hiccup"."""
    return f"{type(exc).__name__}: {exc}"


class SamplingLoop(Generic[T]):
    """Calls `take()` every `interval` seconds and hands what it returns to `deliver`, what it raises to `failed`;
    without `failed` an error ends the loop, raised to whoever runs it. Both are called on the loop's thread, so a
    UI's must be thread-safe; a poll that ends after stop() is dropped.

    `pace` is its time (default: real time). Given RealTime(terminal_fd), the loop ends and calls `hangup` once
    that terminal is gone. `closing` runs once, when the loop has ended and no poll can run any more: the place to
    close what `take()` reads.
    """

    def __init__(
        self,
        take: Callable[[], T],
        interval: float,
        deliver: Callable[[T], object],
        failed: Callable[[Exception], object] | None = None,
        *,
        pace: Pace | None = None,
        hangup: Callable[[], object] | None = None,
        closing: Callable[[], object] | None = None,
        name: str = "gputui-sampler",
    ) -> None:
        self.interval = interval
        self._take = take
        self._deliver = deliver
        self._failed = failed
        self._pace: Pace = pace if pace is not None else RealTime()
        self._hangup = hangup
        self._closing = closing
        self._stopping = False
        self._polling = threading.Lock()  # one poll at a time: the loop's own, or poll()'s
        self._schedule = threading.Lock()  # the grid below, which set_interval() moves from another thread
        self._origin: float | None = None  # when the grid of due polls starts (None: the first poll is due now)
        self._polls = 0  # polls on the grid since its origin: the next is due at origin + polls * interval
        self._last_started = 0.0
        self._regrid = False  # the interval changed: the grid starts again at the last poll
        self._state = threading.Lock()
        self._running = False
        self._ended = False
        self._thread = threading.Thread(target=self.run, name=name, daemon=True)

    @property
    def ended(self) -> bool:
        """No poll runs any more, nor will (`closing` runs, or has run)."""
        with self._state:
            return self._ended

    def start(self) -> None:
        """Runs the loop on its own thread (a daemon: a driver call that hangs never holds the process up)."""
        self._thread.start()

    def run(self, polls: int | None = None) -> None:
        """Polls until stopped (or `polls` times) on this thread: the first poll at once, or `interval` after the
        one poll() took."""
        with self._state:
            self._running = True
        self._pace.open()
        try:
            taken = 0
            while (polls is None or taken < polls) and self._wait_until_due():
                self._poll(on_grid=True)
                taken += 1
        finally:
            self._end()

    def poll(self) -> None:
        """Takes one reading now, on this thread, and hands it over; the loop's next poll is due `interval` later."""
        self._poll(on_grid=False)

    def set_interval(self, seconds: float) -> None:
        """Takes effect at once: the next poll is due `seconds` after the last one began, now if that has passed."""
        with self._schedule:
            self.interval = seconds
            self._regrid = True
            if self._origin is not None:  # for a wait in progress; a poll in progress starts the grid anew
                self._origin, self._polls = self._last_started, 1
        self._pace.nudge()

    def stop(self, timeout: float | None = 2.0) -> bool:
        """Ends the loop; True once no poll can run any more. A driver call can hold the thread up past `timeout`;
        `closing` then runs when it ends."""
        self._stopping = True
        self._pace.nudge()
        if self._thread.ident is not None:
            self._thread.join(timeout)
            return not self._thread.is_alive()
        with self._state:
            running = self._running
        if not running:  # never run: nothing else will end it
            self._end()
        return not running

    def _wait_until_due(self) -> bool:
        """Waits until the next poll is due; False when the loop is to end instead (stopped, or its terminal gone)."""
        while not self._stopping:
            if self._pace.hung_up:
                self._stopping = True
                if self._hangup is not None:
                    self._hangup()
                return False
            due = self._due()
            if self._pace.now() >= due:
                return True
            self._pace.wait_until(due)
        return False

    def _due(self) -> float:
        with self._schedule:
            return -math.inf if self._origin is None else self._origin + self._polls * self.interval

    def _poll(self, *, on_grid: bool) -> None:
        with self._polling:
            started = self._pace.now()
            try:
                result = self._take()
            except Exception as exc:
                if self._failed is None:
                    raise
                if not self._stopping:
                    self._failed(exc)
            else:
                if not self._stopping:
                    self._deliver(result)
            finally:
                self._advance(started, on_grid=on_grid)

    def _advance(self, started: float, *, on_grid: bool) -> None:
        """The next poll's place on the grid, after one that began at `started`."""
        with self._schedule:
            self._last_started = started
            if on_grid and self._origin is not None and not self._regrid:
                self._polls += 1
            else:  # the first poll, one taken out of turn, or a new interval: the grid starts at it
                self._origin, self._polls = started, 1
            self._regrid = False
            now = self._pace.now()
            if self._origin + self._polls * self.interval < now:  # late: the next at once, and the grid from there
                self._origin, self._polls = now, 0

    def _end(self) -> None:
        with self._state:
            if self._ended:
                return
            self._ended = True
        self._pace.close()
        if self._closing is not None:
            self._closing()
