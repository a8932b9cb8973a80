"""Each process's activity over a recording: the windows its stacks were sampled in, what led each, and the shares
averaged over them (text, JSON and the HTML table of `gputui report`).

A window stands once in the sum however many ticks carried it: a process keeps its last activity on every tick
until the next window, so windows are told apart by when they ended. Each window counts the same in the mean (a
window is a few seconds, taken when the GPU waited or on demand: a mean over time would weigh what was asked for).
"""

from __future__ import annotations

import html
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from gputui.formatting import fmt_share
from gputui.model import ACTIVITY_KINDS, ActivityFrame, ActivityShares, JobActivity, Snapshot
from gputui.text.activity_text import error_words, frame_text, shares_text


@dataclass(frozen=True, slots=True)
class ProcessActivity:
    """One process's windows of stack samples over the recording."""

    pid: int
    command: str
    gpus: tuple[int, ...]
    rank: int | None
    windows: int  # windows with samples
    samples: int  # the main thread's samples over them
    shares: ActivityShares  # each kind's share, the mean over those windows
    led: dict[str, int]  # kind -> windows it led
    top: ActivityFrame | None  # the top frame of the window with the most samples
    unread: int = 0  # windows that read no stack
    error: str | None = None  # why, the last time


class ActivityTally:
    """Reads each snapshot's processes' activities, keeping each window once."""

    def __init__(self) -> None:
        self._windows: dict[int, dict[float, JobActivity]] = {}
        self._commands: dict[int, str] = {}
        self._gpus: dict[int, set[int]] = {}

    def add(self, snapshot: Snapshot) -> None:
        for gpu in snapshot.gpus:
            for proc in gpu.processes:
                host = snapshot.host.process(proc.pid) if proc.seen != "hidden" else None
                if host is None or host.activity is None:
                    continue
                self._windows.setdefault(host.pid, {})[host.activity.taken_at] = host.activity
                self._commands[host.pid] = host.cmdline or host.name
                self._gpus.setdefault(host.pid, set()).add(gpu.index)

    def report(self) -> tuple[ProcessActivity, ...]:
        return tuple(self._process(pid, list(windows.values())) for pid, windows in sorted(self._windows.items()))

    def _process(self, pid: int, windows: Sequence[JobActivity]) -> ProcessActivity:
        read = [w for w in windows if w.samples > 0]
        unread = [w for w in windows if w.samples == 0]
        mean = {kind: sum(w.shares.of(kind) for w in read) / len(read) if read else 0.0 for kind in ACTIVITY_KINDS}
        led = Counter(str(w.leading) for w in read if w.leading is not None)
        fullest = max(read, key=lambda w: w.samples, default=None)
        ranks = [w.rank for w in windows if w.rank is not None]
        return ProcessActivity(
            pid=pid,
            command=self._commands[pid],
            gpus=tuple(sorted(self._gpus[pid])),
            rank=ranks[-1] if ranks else None,
            windows=len(read),
            samples=sum(w.samples for w in read),
            shares=ActivityShares(**{kind: round(share, 4) for kind, share in mean.items()}),
            led=dict(led.most_common()),
            top=fullest.top[0] if fullest is not None and fullest.top else None,
            unread=len(unread),
            error=unread[-1].error if unread else None,
        )


def _who(process: ProcessActivity) -> str:
    gpus = ", ".join(str(index) for index in process.gpus)
    rank = f", rank {process.rank}" if process.rank is not None else ""
    return f"PID {process.pid} (GPU {gpus}{rank}) {process.command}"


def summary(process: ProcessActivity) -> str:
    """ "data 71%, cpu 20% over 6 windows (480 samples); data led 5 of 6", or why no stack was read."""
    if not process.windows:
        why = error_words(process.error) if process.error else "no sample"
        return f"no stack read in {process.unread} windows: {why}"
    led = ", ".join(f"{kind} led {count} of {process.windows}" for kind, count in process.led.items())
    said = f"{shares_text(process.shares)} over {process.windows} windows ({process.samples} samples); {led}"
    if process.unread:
        said += f"; {process.unread} more read no stack"
    return said


def activity_lines(activities: Sequence[ProcessActivity]) -> list[str]:
    """The text report's section; none where no process was sampled."""
    if not activities:
        return []
    lines = ["job activity (stack samples; shares are the mean over the windows each process was sampled in):"]
    for process in activities:
        lines.append(f"  {_who(process)}")
        lines.append(f"    {summary(process)}")
        if process.top is not None:
            lines.append(f"    top frame of its fullest window: {frame_text(process.top)}")
    return lines


ACTIVITY_COLUMNS = ("process", "windows", "samples", "leading", "shares (mean over the windows)", "top frame")


def activity_table(activities: Sequence[ProcessActivity]) -> str:
    """The HTML report's table of the same; "" where no process was sampled."""
    if not activities:
        return ""
    rows = []
    for process in activities:
        leading = process.shares.leading
        cells = (
            _who(process),
            str(process.windows) + (f" (+{process.unread} unread)" if process.unread else ""),
            str(process.samples),
            f"{leading} {fmt_share(process.shares.of(leading))}" if leading is not None else "n/a",
            shares_text(process.shares) if process.windows else summary(process),
            frame_text(process.top) if process.top is not None else "",
        )
        rows.append("<tr>" + "".join(f"<td>{html.escape(cell)}</td>" for cell in cells) + "</tr>")
    head = "".join(f"<th>{html.escape(column)}</th>" for column in ACTIVITY_COLUMNS)
    return (
        '<p class="meta"><b>What the jobs did (their main thread\'s stack samples)</b></p>'
        f'<table class="mig activity"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'
    )
