"""Stacks as both readers hand them over, before they are classified: one window of one process's threads."""

from __future__ import annotations

from dataclasses import dataclass

from gputui.model import ActivitySource


@dataclass(frozen=True, slots=True)
class Frame:
    """One Python frame: the function, its file as the reader names it, and the line running in it."""

    function: str
    file: str
    line: int | None


# Innermost frame first: what the thread was executing, then who called it.
Stack = tuple[Frame, ...]


@dataclass(frozen=True, slots=True)
class StackCount:
    """One distinct stack of a thread over the window: how many samples found it, and in how many of those the
    thread was running on a CPU (the rest it slept, waited on a lock, a pipe, the disk...)."""

    stack: Stack
    samples: int
    running: int


@dataclass(frozen=True, slots=True)
class ThreadStacks:
    """One thread's samples over the window. `pid` is its process's: the job's, or a data-loader worker's."""

    pid: int
    tid: int  # the OS thread id; the main thread's is its process's pid
    name: str  # "MainThread", "pin_memory", ...
    stacks: tuple[StackCount, ...]

    @property
    def is_main(self) -> bool:
        return self.tid == self.pid


@dataclass(frozen=True, slots=True)
class StackWindow:
    """What one reader saw of one job (the process `pid` and its child processes) over `window_s`."""

    source: ActivitySource
    pid: int
    taken_at: float  # seconds since the epoch when the window ended
    window_s: float
    threads: tuple[ThreadStacks, ...]
    rank: int | None = None  # RANK from the job's environment


class StacksUnavailable(Exception):
    """The stacks of a process cannot be read; the message says why and what to do, in the user's words."""
