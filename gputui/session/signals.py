"""Signalling a GPU process from the monitor: whether it may be signalled, and the sending.

What the table showed is what is signalled, or nothing: a process is named by the PID this namespace knows and the
start time it had when it was sampled, and both are read again right before the signal goes, so that a PID reused
since the row was drawn is refused rather than hit. Only your own processes unless root (a process's real uid
against this reader's effective uid, as kill(2) allows). A process known here only by NVML's PID from another PID
namespace has no PID to signal here, and is refused with that reason. The /proc reads may block (a hung NFS mount
can stall them): the front end runs `decide` and `send` off its event loop.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Collection, Sequence
from dataclasses import dataclass

import psutil

from gputui.model import Snapshot

# The signals offered, in the order a confirmation lists them: the polite one first.
SIGNALS: tuple[signal.Signals, ...] = (signal.SIGINT, signal.SIGTERM, signal.SIGKILL)
# Start times read twice by psutil agree to the clock tick (1/100 s); a reused PID starts at least a tick later.
SAME_START_S = 0.005

READONLY_REFUSAL = "read-only session (--readonly, or [monitor] readonly in the config): no signals are sent"


@dataclass(frozen=True, slots=True)
class Target:
    """A process as its row showed it: `pid` is its PID in this namespace (None where unknown), `shown_pid` the
    PID the row shows; `create_time` its start time when sampled (None where unreadable)."""

    shown_pid: int
    pid: int | None
    user: str | None
    command: str | None
    create_time: float | None

    @property
    def label(self) -> str:
        """'4242 (alice) python train.py': as the confirmation names it."""
        return f"{self.shown_pid} ({self.user or '?'}) {self.command or '?'}"


@dataclass(frozen=True, slots=True)
class Decision:
    """Whether `target` may be signalled now; `reason` says why not."""

    target: Target
    reason: str | None = None

    @property
    def allowed(self) -> bool:
        return self.reason is None


@dataclass(frozen=True, slots=True)
class Outcome:
    """What became of one target: `sent` or not, and the words for the notice."""

    target: Target
    sent: bool
    text: str


def targets(snapshot: Snapshot, row_keys: Collection[str]) -> tuple[Target, ...]:
    """The processes of the table's rows keyed 'gpu:pid' in `snapshot`, once each (a process on two GPUs is one
    target), in the snapshot's order."""
    wanted = set(row_keys)
    found: dict[int, Target] = {}
    for gpu in snapshot.gpus:
        for proc in gpu.processes:
            if f"{gpu.index}:{proc.pid}" not in wanted or proc.pid in found:
                continue
            host = snapshot.host.process(proc.pid) if proc.seen != "hidden" else None
            found[proc.pid] = Target(
                shown_pid=proc.pid,
                pid=None if proc.seen == "hidden" else proc.pid,
                user=host.user if host else None,
                command=(host.cmdline or host.name) if host else None,
                create_time=host.create_time if host else None,
            )
    return tuple(found.values())


def decide(target: Target, *, euid: int | None = None, readonly: bool = False) -> Decision:
    """Whether `target` may be signalled by a reader with effective uid `euid` (this process's by default)."""
    if readonly:
        return Decision(target, READONLY_REFUSAL)
    if target.pid is None:
        return Decision(target, "its PID in this namespace is unknown (NVML's PID is from another PID namespace)")
    if target.create_time is None:
        return Decision(target, "its start time was not readable, so a reused PID could not be told apart")
    try:
        process = psutil.Process(target.pid)
        with process.oneshot():
            started = process.create_time()
            owner = process.uids().real
    except psutil.NoSuchProcess:
        return Decision(target, "it has already exited")
    except psutil.AccessDenied:
        return Decision(target, "its owner and start time cannot be read")
    if abs(started - target.create_time) > SAME_START_S:
        return Decision(target, "its PID now belongs to another process (the one shown has exited)")
    me = os.geteuid() if euid is None else euid
    if me != 0 and owner != me:
        return Decision(target, f"not your process (uid {owner}; only root may signal another user's)")
    return Decision(target)


def decide_all(found: Sequence[Target], *, euid: int | None = None, readonly: bool = False) -> tuple[Decision, ...]:
    return tuple(decide(target, euid=euid, readonly=readonly) for target in found)


def send(
    found: Sequence[Target], signum: signal.Signals, *, euid: int | None = None, readonly: bool = False
) -> tuple[Outcome, ...]:
    """Check each target again and signal those still allowed; the check is right before each kill(2)."""
    outcomes = []
    for target in found:
        decision = decide(target, euid=euid, readonly=readonly)
        if decision.reason is not None:
            outcomes.append(Outcome(target, False, f"{target.label}: refused: {decision.reason}"))
            continue
        assert target.pid is not None  # decide refuses a target without one
        try:
            os.kill(target.pid, signum)
        except OSError as exc:
            outcomes.append(Outcome(target, False, f"{target.label}: failed: {exc.strerror}"))
        else:
            outcomes.append(Outcome(target, True, f"{target.label}: sent {signum.name}"))
    return tuple(outcomes)
