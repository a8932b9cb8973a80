"""The one sampling loop: when it polls (on simulated time), what it hands over, and how it ends."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable

import pytest

from gputui.session.loop import RealTime, SamplingLoop, SimulatedTime, failure_text


class Reads:
    """A take() that notes the time of each poll on the loop's clock, and may run a step during given polls."""

    def __init__(self, pace: SimulatedTime, steps: dict[int, object] | None = None) -> None:
        self.pace = pace
        self.times: list[float] = []
        self.steps = steps or {}

    def __call__(self) -> int:
        self.times.append(self.pace.now())
        step = self.steps.get(len(self.times))
        if callable(step):
            step()
        return len(self.times)


def loop_on(
    pace: SimulatedTime, take: Reads, interval: float, **hooks: Callable[[], object]
) -> tuple[SamplingLoop[int], list[int]]:
    """The loop on simulated time, and the list of what it handed over."""
    delivered: list[int] = []
    return SamplingLoop(take, interval, delivered.append, pace=pace, **hooks), delivered  # type: ignore[arg-type]


def test_polls_fall_on_a_grid_from_the_first_exactly() -> None:
    """Poll i at i * interval to the last bit: diagnose --demo's readings are those of `i * interval` seconds."""
    pace = SimulatedTime()
    reads = Reads(pace)
    loop, delivered = loop_on(pace, reads, 0.1)
    loop.run(polls=30)
    assert reads.times == [i * 0.1 for i in range(30)]
    assert delivered == list(range(1, 31))


def test_a_late_poll_is_followed_at_once_and_the_grid_starts_again_there() -> None:
    pace = SimulatedTime()
    reads = Reads(pace, {2: lambda: pace.wait_until(pace.now() + 2.5)})  # the second read takes 2.5 s
    loop_on(pace, reads, 1.0)[0].run(polls=5)
    assert reads.times == [0.0, 1.0, 3.5, 4.5, 5.5]  # no burst to catch up on 2, 3


def test_a_poll_taken_out_of_turn_moves_the_next_one_an_interval_after_it() -> None:
    """The exporter reads once before it serves; its loop reads next an interval later, not at once."""
    pace = SimulatedTime(start=100.0)
    reads = Reads(pace)
    loop, _ = loop_on(pace, reads, 2.0)
    loop.poll()
    loop.run(polls=2)
    assert reads.times == [100.0, 102.0, 104.0]


def test_a_new_interval_counts_from_the_start_of_the_last_poll() -> None:
    pace = SimulatedTime()
    reads = Reads(pace)
    loop, _ = loop_on(pace, reads, 1.0)
    reads.steps = {3: lambda: loop.set_interval(5.0)}  # `+` pressed while the third poll runs
    loop.run(polls=5)
    assert reads.times == [0.0, 1.0, 2.0, 7.0, 12.0]


def test_errors_go_to_failed_and_polling_goes_on() -> None:
    pace = SimulatedTime()
    errors: list[str] = []
    calls: list[float] = []

    def take() -> float:
        calls.append(pace.now())
        if len(calls) == 2:
            raise RuntimeError("driver hiccup")
        return pace.now()

    delivered: list[float] = []
    SamplingLoop(take, 1.0, delivered.append, lambda exc: errors.append(failure_text(exc)), pace=pace).run(polls=3)
    assert errors == ["RuntimeError: driver hiccup"]
    assert delivered == [0.0, 2.0]


def test_without_failed_an_error_ends_the_loop_and_reaches_the_caller() -> None:
    pace = SimulatedTime()
    closed: list[bool] = []

    def take() -> int:
        raise ConnectionError("the GPU fell off the bus")

    loop = SamplingLoop(take, 1.0, print, pace=pace, closing=lambda: closed.append(True))
    with pytest.raises(ConnectionError, match="fell off"):
        loop.run(polls=3)
    assert closed == [True]


def test_a_lost_terminal_ends_the_loop_once_and_says_so() -> None:
    pace = SimulatedTime()
    hangups: list[bool] = []
    closed: list[bool] = []
    reads = Reads(pace, {2: lambda: setattr(pace, "hung_up", True)})
    loop, _ = loop_on(pace, reads, 1.0, hangup=lambda: hangups.append(True), closing=lambda: closed.append(True))
    loop.run()  # no poll count: only the hang-up ends it
    assert reads.times == [0.0, 1.0]
    assert hangups == [True] and closed == [True]


def test_a_poll_that_ends_after_stop_is_dropped() -> None:
    pace = SimulatedTime()
    reads = Reads(pace)
    loop, delivered = loop_on(pace, reads, 1.0)
    reads.steps = {2: loop.stop}
    loop.run()
    assert reads.times == [0.0, 1.0]
    assert delivered == [1]


def test_stop_before_start_closes_at_once() -> None:
    closed: list[bool] = []
    loop = SamplingLoop(lambda: 1, 1.0, print, closing=lambda: closed.append(True))
    assert loop.stop()
    assert loop.stop()  # twice is fine
    assert closed == [True]


# -- on its own thread, in real time (bounded waits for events, nothing timed) -----------------------------------


def test_the_thread_polls_at_once_then_stops_and_closes_once() -> None:
    first = threading.Event()
    reads: list[int] = []
    closed: list[str] = []

    def take() -> int:
        reads.append(len(reads))
        first.set()
        return len(reads)

    loop = SamplingLoop(take, 60.0, print, closing=lambda: closed.append(threading.current_thread().name), name="t")
    loop.start()
    assert first.wait(5.0)
    assert loop.stop()  # the 60 s wait is cut short
    assert reads == [0] and closed == ["t"]
    assert loop.stop() and closed == ["t"]


def test_a_shorter_interval_cuts_a_long_wait_short() -> None:
    second = threading.Event()
    polls: list[int] = []

    def take() -> int:
        polls.append(1)
        if len(polls) == 2:
            second.set()
        return len(polls)

    loop = SamplingLoop(take, 60.0, print)
    loop.start()
    loop.set_interval(0.01)
    assert second.wait(5.0)
    assert loop.stop()


def test_a_closed_pty_ends_the_wait_at_once_as_hung_up() -> None:
    master, slave = os.openpty()
    pace = RealTime(slave)
    pace.open()
    try:
        pace.wait_until(time.monotonic())  # nothing to report: the terminal is there
        assert not pace.hung_up
        os.close(master)
        pace.wait_until(time.monotonic() + 60)  # returns on the hang-up, not after a minute
        assert pace.hung_up
    finally:
        pace.close()
        os.close(slave)


def test_the_loop_ends_and_says_so_when_its_terminal_goes() -> None:
    master, slave = os.openpty()
    gone = threading.Event()
    loop = SamplingLoop(lambda: 1, 60.0, print, pace=RealTime(slave), hangup=gone.set)
    loop.start()
    os.close(master)
    try:
        assert gone.wait(5.0)
        assert loop.stop()
    finally:
        os.close(slave)
