"""Textual's Linux driver with an input thread that sleeps until there is input, instead of ten times a second.

Textual (8.2) reads the terminal in a thread that wakes every 0.1 s to see whether it should stop and whether
a lone ESC has waited long enough to be the Escape key. For a monitor that sits in a tmux pane all day that is
most of its wake-ups. Here the thread blocks on the terminal and a pipe of its own, which the driver's stop
event writes to; the wait is bounded by the key parser's deadline while it holds a partial sequence, and
otherwise by `IDLE_WAIT_S`, so that a thread nobody stops (Textual restarts input on SIGCONT, even on its way
out) still looks at the stop event now and then.
"""

from __future__ import annotations

import contextlib
import os
import select
import selectors
import threading
from codecs import getincrementaldecoder
from typing import Any

from textual.driver import Driver
from textual.drivers.linux_driver import LinuxDriver

from gputui.ui.textual_internals import XTermParser, escape_deadline, get_time

IDLE_WAIT_S = 1.0


class WakingEvent(threading.Event):
    """An Event that, when set, also writes to the pipe of the thread waiting for it in select(), if any."""

    def __init__(self) -> None:
        super().__init__()
        self._lock = threading.Lock()
        self._wake_fd: int | None = None

    def wake_through(self, fd: int | None) -> None:
        with self._lock:
            self._wake_fd = fd

    def set(self) -> None:
        super().set()
        with self._lock, contextlib.suppress(OSError):  # full: a wake-up is already waiting
            if self._wake_fd is not None:
                os.write(self._wake_fd, b"x")


def hung_up(fd: int) -> bool:
    """True when the terminal on `fd` is gone: it polls as hung up (or the fd is no longer valid)."""
    poller = select.poll()
    poller.register(fd, select.POLLHUP)
    return any(events & (select.POLLHUP | select.POLLNVAL | select.POLLERR) for _, events in poller.poll(0))


def input_timeout(parser: XTermParser, now: float) -> float:
    """How long the input thread may sleep: until the parser's pending ESC times out, else `IDLE_WAIT_S`."""
    deadline = escape_deadline(parser)
    return IDLE_WAIT_S if deadline is None else max(0.0, min(IDLE_WAIT_S, deadline - now))


class QuietLinuxDriver(LinuxDriver):
    """LinuxDriver whose input thread wakes for input, for a stop, or for a pending ESC, and at most once a second
    otherwise."""

    def __init__(self, app: Any, *, debug: bool = False, mouse: bool = True, size: tuple[int, int] | None = None):
        super().__init__(app, debug=debug, mouse=mouse, size=size)
        self.exit_event: WakingEvent = WakingEvent()

    def _sigcont_application(self, *args: Any) -> None:
        """Textual resumes on SIGCONT; a closed terminal sends SIGHUP and SIGCONT together, and a resume then would
        start input and output threads on a terminal that is gone, which keep the process alive after it exits."""
        if not hung_up(self.fileno):
            super()._sigcont_application(*args)

    def run_input_thread(self) -> None:
        wake_read, wake_write = os.pipe()
        for fd in (wake_read, wake_write):
            os.set_blocking(fd, False)
        selector = selectors.PollSelector()  # epoll refuses regular files (stdin from /dev/null); poll takes any fd
        selector.register(self.fileno, selectors.EVENT_READ)
        selector.register(wake_read, selectors.EVENT_READ)
        self.exit_event.wake_through(wake_write)
        parser = XTermParser(self._debug)
        decode = getincrementaldecoder("utf-8")().decode
        try:
            while not self.exit_event.is_set():
                for key, _ in selector.select(input_timeout(parser, get_time())):
                    if key.fd == wake_read:
                        with contextlib.suppress(BlockingIOError):
                            os.read(wake_read, 64)
                        continue
                    try:
                        raw = os.read(self.fileno, 1024 * 4)
                    except OSError:
                        raw = b""
                    if not raw:  # end of input or a lost terminal: stop reading it, or select spins
                        selector.unregister(self.fileno)
                        continue
                    for event in parser.feed(decode(raw)):
                        self.process_message(event)
                for event in parser.tick():
                    self.process_message(event)
        finally:
            self.exit_event.wake_through(None)
            selector.close()
            os.close(wake_read)
            os.close(wake_write)


def quiet_driver(default: type[Driver]) -> type[Driver]:
    """The driver an app should run on: ours where Textual would pick its Linux driver, else Textual's own."""
    return QuietLinuxDriver if default is LinuxDriver else default
