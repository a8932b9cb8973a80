"""The contract every source of snapshots keeps: live NVML, simulated, replayed or remote."""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping
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


NODE_NAME_ENV = "NODE_NAME"


def machine_name(environ: Mapping[str, str] = os.environ) -> str:
    """This machine's name: $NODE_NAME when set, else the host name.

    In a Kubernetes pod the host name is the pod's (gputui-x7k2p, new at every rollout); the DaemonSet sets
    NODE_NAME to the node's name from the downward API (spec.nodeName), the variable dcgm-exporter reads for its
    host label too, so both exporters name a node alike.
    """
    return environ.get(NODE_NAME_ENV, "").strip() or socket.gethostname()
