"""What a job's stack samples say, for the rules and the verdict that read them: the main process of a waiting GPU,
its activity where fresh, the kind of wait that leads its main thread's samples, and that as evidence.

The rest of the diagnostics infer what a job does from outside (its CPU, its workers, the host); a stack sample
measures it. Where both speak, the stack wins: a rule that reads one drops the cause it would have guessed.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from gputui.diagnostics.findings import Evidence
from gputui.diagnostics.rules.base import Window, ev
from gputui.diagnostics.thresholds import Thresholds
from gputui.formatting import fmt_num
from gputui.model import (
    ACTIVITY_KINDS,
    ActivityFrame,
    ActivityKind,
    ActivityShares,
    JobActivity,
    ProcSample,
    WaitedOn,
)

# The evidence key each kind's share is stated under ("stack_collective": the main thread waiting on other ranks).
SHARE_KEYS: Mapping[ActivityKind, str] = {kind: f"stack_{kind}" for kind in ACTIVITY_KINDS}
# Evidence keys stated here by name rather than as a literal
# (tests/diagnostics/rules/test_rules_families.py reads this).
EVIDENCE_KEYS: frozenset[str] = frozenset({*SHARE_KEYS.values(), "stack_waited_on", "stack_source_line"})


# The kinds in which the main thread waits for its input: the starvation rules' to explain by the host's readings.
INPUT_KINDS: frozenset[ActivityKind] = frozenset({"data", "loading", "io"})
# The kinds that, measured holding a real part of the GPU's waiting, name it even where they do not lead: work the
# main thread does in the step's place (a checkpoint, a compile, file reads, its own Python), most first on a tie.
MEASURED_KINDS: tuple[ActivityKind, ...] = ("checkpoint", "compile", "io", "cpu")


@dataclass(frozen=True, slots=True)
class Stack:
    """A fresh reading of a process's main thread, and the kind that leads it (None: no kind leads by
    `activity_lead_share`, the time is spread)."""

    proc: ProcSample
    activity: JobActivity
    lead: ActivityKind | None

    @property
    def share(self) -> float:
        return self.activity.shares.of(self.lead) if self.lead is not None else 0.0

    @property
    def busy_elsewhere(self) -> bool:
        """The main thread measured doing something other than waiting for its input (its own Python, other ranks,
        a checkpoint, the GPU, a blocked frame): a busy disk or network is then not what its GPU waits on."""
        return self.lead is not None and self.lead not in INPUT_KINDS

    def frame_of(self, kind: ActivityKind | None) -> ActivityFrame | None:
        """The frame that held most of a kind's samples (the leading one's, or a measured one's): what the wait or
        the work is named by."""
        return next((f for f in self.activity.top if f.kind == kind), None)


def measured_wait(stack: Stack, util: float, th: Thresholds) -> ActivityKind | None:
    """The kind, leading or not, that accounts for a real part of the GPU's waiting: of MEASURED_KINDS, the
    one with the most samples of those holding `measured_wait_share` of them and `measured_wait_of_idle` of the
    GPU's idle share at `util` % mean utilization. None where the main thread's lead is its input (the starvation
    rules') or the GPU (its own bound), or where nothing measured holds that much."""
    if stack.lead in INPUT_KINDS or stack.lead == "gpu_sync":
        return None
    shares = stack.activity.shares
    idle = max(0.0, 1.0 - util / 100.0)
    held = [
        kind
        for kind in MEASURED_KINDS
        if shares.of(kind) >= th.measured_wait_share and shares.of(kind) >= th.measured_wait_of_idle * idle
    ]
    return max(held, key=shares.of, default=None)


def main_process(w: Window, pids: tuple[int, ...]) -> ProcSample | None:
    """A GPU's busiest process over the window (the training process; a second one is a notebook)."""
    procs = [p for p in (w.host.process(pid) for pid in pids) if p is not None]
    return max(procs, key=lambda p: w.proc_mean(p.pid, "cpu_pct") or 0.0) if procs else None


def is_fresh(w: Window, th: Thresholds, activity: JobActivity | None) -> bool:
    """Samples taken, and recently enough to speak for the job now."""
    return (
        activity is not None and activity.samples > 0 and w.latest.timestamp - activity.taken_at <= th.activity_fresh_s
    )


def read_stack(w: Window, th: Thresholds, proc: ProcSample | None) -> Stack | None:
    """The process's fresh stack reading, as the latest snapshot carries it; None where there is none."""
    activity = proc.activity if proc is not None else None
    if proc is None or activity is None or not is_fresh(w, th, activity):
        return None
    lead = activity.shares.leading
    if lead is not None and activity.shares.of(lead) < th.activity_lead_share:
        lead = None
    return Stack(proc, activity, lead)


def why_unread(activity: JobActivity | None) -> str | None:
    """Why the stacks could not be read, in the reader's words (its error less the machine-readable key); None
    where the reason is only that none was sampled."""
    if activity is None or activity.samples or not activity.error:
        return None
    key, sep, words = activity.error.partition(": ")
    return words if sep and words else key


def shares_text(shares: ActivityShares) -> str:
    """'data 40%, cpu 35%, idle 25%': the kinds that hold any sample, most first."""
    held = sorted((k for k in ACTIVITY_KINDS if shares.of(k) > 0), key=shares.of, reverse=True)
    return ", ".join(f"{kind} {fmt_num(100 * shares.of(kind))}%" for kind in held)


def where(frame: ActivityFrame | None) -> str | None:
    """'all_reduce (distributed_c10d.py:2050)': a frame by its function, file and line."""
    if frame is None:
        return None
    place = os.path.basename(frame.file) if frame.file else ""
    if frame.line is not None:
        place = f"{place}:{frame.line}"
    return f"{frame.function} ({place})" if place else frame.function


def waited_on_text(waited: WaitedOn) -> str:
    """'thread producer (tid 4321): decode (loader.py:31), running 97%': whom the main thread's waits waited for,
    where, and how sure (the share of their samples in which they ran)."""
    place = where(waited.frame)
    named = f"{waited.who}: {place}" if place else waited.who
    return f"{named}, running {fmt_num(round(100 * waited.running))}%"


def stack_evidence(stack: Stack, kind: ActivityKind | None = None) -> tuple[Evidence, ...]:
    """The measurement behind a cause: the share of the main thread's samples in `kind` (the leading one unless
    given), of how many samples, by what, over how long; the frame it is named by, and the line it was read from
    where no Python frame showed it; whom its waits waited for where they are counted in `kind`; the rank."""
    kind = kind or stack.lead
    if kind is None:
        return ()
    activity = stack.activity
    frame = next((f for f in activity.top if f.kind == kind), None)
    share = ev(
        SHARE_KEYS[kind],
        round(100 * activity.shares.of(kind), 1),
        "%",
        f"stack.{activity.source}",
        samples=activity.samples,
        sampled_s=fmt_num(activity.window_s, 1 if activity.window_s % 1 else 0),
    )
    named: tuple[Evidence, ...] = (ev("stack_frame", where(frame)),) if frame is not None else ()
    if frame is not None and frame.source_line is not None:
        named += (ev("stack_source_line", frame.source_line),)
    waited = activity.waited_on
    if waited is not None and waited.kind == kind:
        named += (ev("stack_waited_on", waited_on_text(waited)),)
    rank = (ev("rank", activity.rank),) if activity.rank is not None else ()
    return (share, *named, *rank)
