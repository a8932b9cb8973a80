"""One job's activity over a window, from whichever reader can give it: the record the job publishes itself (started
under `gputui run`), else py-spy from outside; py-spy too where the record is refused (outside what the sampler
writes: its user's to write, so possibly made to harm the reader), which `refused` is told of. It never raises for a
process it cannot read: the activity then has no sample and an `error` that starts with one of ERROR_KEYS, ": ",
and the words for the user."""

from __future__ import annotations

import time
from collections.abc import Callable

from gputui.model import JobActivity
from gputui.sources.stacks import pyspy
from gputui.sources.stacks.classify import summarize
from gputui.sources.stacks.inprocess import RecordRefused, read_published
from gputui.sources.stacks.permission import ptrace_refusal
from gputui.sources.stacks.samples import StacksUnavailable, StackWindow

# Reads one window from outside: (pid, window_s, rate_hz) -> the window; raises StacksUnavailable.
Recorder = Callable[[int, float, int], StackWindow]
# Reads the window a job started under `gputui run` published: (pid, window_s) -> the window, None where it
# publishes none; raises StacksUnavailable for a record it cannot use (RecordRefused for one it refuses).
Published = Callable[[int, float], StackWindow | None]
# Told of a refused record: (the user who could write it, why it was refused).
Refused = Callable[[str, str], None]

ERROR_KEYS = (
    "ptrace_refused",  # the kernel refuses to let gputui read the process (permission.py says why)
    "not_python",  # the process is no Python interpreter
    "gone",  # it exited
    "no_py_spy",  # py-spy is not installed
    "py_spy_failed",  # py-spy ran but read nothing (timed out, or an error of its own)
    "no_samples",  # stacks were read, but none of the main thread
    "record_unusable",  # the job publishes a record (gputui run) that cannot be used: unreadable, stale
)


def _keyed(reason: str) -> str:
    """The reason with its key in front: py-spy's reader keys its own; the in-process reader's words about a record
    it cannot use are keyed here."""
    key, separator, _ = reason.partition(": ")
    return reason if separator and key in ERROR_KEYS else f"record_unusable: {reason}"


def _from_outside(pid: int, window_s: float, rate_hz: int, record: Recorder) -> StackWindow:
    """py-spy's window, unless the kernel is known to refuse it: then why, without trying."""
    refusal = ptrace_refusal(pid)
    if refusal is not None:
        raise StacksUnavailable(refusal)
    return record(pid, window_s, rate_hz)


def _ignore(owner: str, why: str) -> None:
    """A refusal no one is told of (the reader's caller counts no notices)."""


def read_activity(
    pid: int,
    window_s: float = 4.0,
    rate_hz: int = 20,
    *,
    record: Recorder = pyspy.record,
    published: Published = read_published,
    refused: Refused = _ignore,
    clock: Callable[[], float] = time.time,
) -> JobActivity:
    """What process `pid`'s main thread did over about `window_s` (blocking that long: never on a UI loop)."""
    try:
        try:
            window = published(pid, window_s)
        except RecordRefused as refusal:
            refused(refusal.owner, str(refusal))
            window = None
        window = window or _from_outside(pid, window_s, rate_hz, record)
    except StacksUnavailable as unavailable:
        error = _keyed(str(unavailable))
        return JobActivity(source="py-spy", taken_at=clock(), window_s=window_s, samples=0, error=error)
    return summarize(window)
