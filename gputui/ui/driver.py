"""Textual's Linux driver with an input thread that sleeps until there is input, instead of ten times a second.

Textual (8.2) reads the terminal in a thread that wakes every 0.1 s to see whether it should stop and whether
a lone ESC has waited long enough to be the Escape key. For a monitor that sits in a tmux pane all day that is
most of its wake-ups. Here the thread blocks on the terminal and a pipe: the pipe is written when the driver
asks the thread to stop, and the wait is bounded only while the key parser holds a partial sequence.
"""

from __future__ import annotations

import contextlib
import os
import selectors
from codecs import getincrementaldecoder
from threading import Event
from typing import Any

from textual._time import get_time
from textual._xterm_parser import XTermParser
from textual.driver import Driver
from textual.drivers.linux_driver import LinuxDriver


class WakingEvent(Event):
    """An Event that also writes a byte to a pipe when set, so a thread blocked in select() sees it at once."""

    def __init__(self, wake_fd: int) -> None:
        super().__init__()
        self._wake_fd = wake_fd

    def set(self) -> None:
        super().set()
        os.write(self._wake_fd, b"x")


def input_timeout(parser: XTermParser, now: float) -> float | None:
    """How long the input thread may sleep: until the parser's pending ESC times out, or until input (None)."""
    deadline: float | None = parser._timeout_time
    return None if deadline is None else max(0.0, deadline - now)


class QuietLinuxDriver(LinuxDriver):
    """LinuxDriver whose input thread wakes for input, for a stop, or for a pending ESC; never to poll."""

    def __init__(self, app: Any, *, debug: bool = False, mouse: bool = True, size: tuple[int, int] | None = None):
        super().__init__(app, debug=debug, mouse=mouse, size=size)
        self._wake_read, self._wake_write = os.pipe()
        os.set_blocking(self._wake_read, False)
        self.exit_event = WakingEvent(self._wake_write)

    def run_input_thread(self) -> None:
        selector = selectors.PollSelector()  # epoll refuses regular files (stdin from /dev/null); poll takes any fd
        selector.register(self.fileno, selectors.EVENT_READ)
        selector.register(self._wake_read, selectors.EVENT_READ)
        parser = XTermParser(self._debug)
        decode = getincrementaldecoder("utf-8")().decode
        try:
            while not self.exit_event.is_set():
                for key, _ in selector.select(input_timeout(parser, get_time())):
                    if key.fd == self._wake_read:
                        self._drain_wake()
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
            selector.close()
            self._drain_wake()

    def _drain_wake(self) -> None:
        try:
            while os.read(self._wake_read, 64):
                pass
        except BlockingIOError:
            pass

    def close(self) -> None:
        super().close()
        for fd in (self._wake_read, self._wake_write):
            with contextlib.suppress(OSError):
                os.close(fd)


def quiet_driver(default: type[Driver]) -> type[Driver]:
    """The driver an app should run on: ours where Textual would pick its Linux driver, else Textual's own."""
    return QuietLinuxDriver if default is LinuxDriver else default
