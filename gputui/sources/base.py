"""The contract every source of snapshots keeps: live NVML, simulated, replayed or remote."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from gputui.model import Snapshot, SystemInfo


class SourceUnavailable(RuntimeError):
    """The source cannot start; the message says why in words a user can act on."""


@runtime_checkable
class Source(Protocol):
    """A blocking producer of Snapshots. `sample()` is called from a worker thread, one call at a time."""

    def open(self) -> SystemInfo:
        """Start the source and return what the machine is; raises SourceUnavailable with the reason."""
        ...

    def sample(self) -> Snapshot:
        """Take one reading now. Rates (bytes/s, CPU %) cover the time since the previous call."""
        ...

    def close(self) -> None:
        """Release what `open()` took; safe to call twice."""
        ...


class NoJobTrace(SourceUnavailable):
    """`--demo-job`: the job's trace is missing or unreadable; the message says how to start the job."""


class InvalidGpuSelection(ValueError):
    """`--gpus` named a GPU this machine does not have: a usage error, not a driver failure."""
