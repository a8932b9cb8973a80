"""A job's activity on screen: the process row's mark ("data 71%") and the detail's block (a bar with a colour
per kind, its legend, where the stacks came from, the top frames, the workers, why no stack could be read).

Lines of (text, style) parts as every LineView draws them; the words are gputui.text.activity_text's, which
`snapshot`, `diagnose` and the report use too.
"""

from __future__ import annotations

from gputui.formatting import fmt_share
from gputui.model import ActivityFrame, ActivityKind, ActivityShares, JobActivity, ProcSample
from gputui.text.activity_text import (
    error_words,
    frame_place,
    is_fresh,
    ranked,
    short_activity,
    source_line_text,
    source_text,
    waited_on_text,
)
from gputui.ui.cells import wrap_text
from gputui.ui.widgets.lines import Line, line_len

LABEL = "bright_black"
# A colour per kind: waiting kinds warm (data, loading, io), the GPU as the bound green, the rest apart.
KIND_STYLES: dict[ActivityKind, str] = {
    "data": "yellow",
    "loading": "dark_orange",
    "cpu": "cyan",
    "gpu_sync": "green",
    "collective": "magenta",
    "checkpoint": "blue",
    "compile": "bright_blue",
    "io": "red",
    "idle": "bright_black",
}
STALE = "dim"  # an activity older than the rules trust (activity_fresh_s): what the job did then, maybe not now
BAR = "█"
TOP_FRAMES = 5
# The detail's words when no process of the GPU was ever sampled, and the key that samples one; where `a` would
# refuse (the simulated machine, a replay), why none is read instead: a hint never offers a key that refuses.
NOT_SAMPLED = "activity: not sampled yet (a on a process in the table reads its stacks now)"
NOT_SAMPLED_HERE = "activity: not sampled: {refusal}"


def row_mark(activity: JobActivity | None, now: float, fresh_s: float) -> tuple[str, str]:
    """The process row's mark before its command and its style: the leading kind's colour, dim once stale."""
    text = short_activity(activity)
    if activity is None or not text:
        return "", ""
    if activity.leading is None:
        return text, LABEL
    return text, KIND_STYLES[activity.leading] if is_fresh(activity, now, fresh_s) else STALE


def bar(shares: ActivityShares, width: int) -> Line:
    """`width` cells split among the kinds by their shares (largest remainders round), most first."""
    kinds = ranked(shares)
    total = sum(share for _, share in kinds)
    if not kinds or width <= 0:
        return [("·" * max(0, width), LABEL)]
    exact = {kind: share / total * width for kind, share in kinds}
    cells = {kind: int(value) for kind, value in exact.items()}
    left = width - sum(cells.values())
    for kind in sorted(exact, key=lambda kind: exact[kind] - cells[kind], reverse=True)[:left]:
        cells[kind] += 1
    return [(BAR * cells[kind], KIND_STYLES[kind]) for kind, _ in kinds if cells[kind]]


def legend(shares: ActivityShares, width: int) -> list[Line]:
    """Each kind with a share, in its colour, most first, on as many lines as `width` needs."""
    lines: list[Line] = [[]]
    used = 0
    for kind, share in ranked(shares):
        entry = f"{kind} {fmt_share(share)}"
        room = len(entry) + 2 + (2 if used else 0)
        if used and used + room > width:
            lines.append([])
            used = 0
        if used:
            lines[-1].append(("  ", ""))
        lines[-1] += [(f"{BAR} ", KIND_STYLES[kind]), (entry, "")]
        used += room
    return lines


def _frame_line(frame: ActivityFrame, width: int) -> Line:
    """ "  data        66%  _next_data  data/dataloader.py:1327", cut to `width`."""
    head: Line = [(f"  {frame.kind:<10}", KIND_STYLES[frame.kind]), (f"{fmt_share(frame.share):>5}  ", "")]
    room = max(8, width - line_len(head))
    text = f"{frame.function}  {frame_place(frame)}"
    if frame.source_line is not None:
        text += source_line_text(frame.source_line)
    return [*head, (text if len(text) <= room else text[: room - 1] + "…", "")]


def activity_lines(
    process: ProcSample, now: float, width: int, fresh_s: float, refusal: str | None = None
) -> list[Line]:
    """The block the detail shows for one process: what its main thread did in the last window sampled; stale
    once older than `fresh_s` (the rules' activity_fresh_s). `refusal`: why `a` reads no stack in this session."""
    activity = process.activity
    name = process.cmdline or process.name
    title: Line = [("ACTIVITY", "bold"), (f"  PID {process.pid}", ""), (f"  {name}", LABEL)]
    if activity is None:
        words = NOT_SAMPLED if refusal is None else NOT_SAMPLED_HERE.format(refusal=refusal)
        return [title, *([(row, LABEL)] for row in wrap_text(words, width))]
    if activity.rank is not None:
        title.insert(1, (f"  rank {activity.rank}", "bold"))
    stale = not is_fresh(activity, now, fresh_s)
    lines: list[Line] = [title, [(source_text(activity, now), STALE if stale else LABEL)]]
    if activity.error is not None and not activity.samples:
        words = f"no stack could be read: {error_words(activity.error)}"
        return lines + [[(row, "yellow")] for row in wrap_text(words, width)]
    lines.append(bar(activity.shares, width))
    lines += legend(activity.shares, width)
    if stale:
        lines.append([(f"older than {fresh_s / 60:g} min: what the job did then, maybe not now", STALE)])
    for frame in activity.top[:TOP_FRAMES]:
        lines.append(_frame_line(frame, width))
    waited = activity.waited_on
    if waited is not None:
        words = f"waits for: {waited_on_text(waited)} running"
        lines += [[(row, KIND_STYLES[waited.kind])] for row in wrap_text(words, width)]
    if activity.workers is not None and activity.worker_samples:
        pooled: Line = [(f"workers, {activity.worker_samples} samples pooled: ", LABEL)]
        for n, (kind, share) in enumerate(ranked(activity.workers)):
            pooled += [(", " if n else "", ""), (f"{kind} {fmt_share(share)}", KIND_STYLES[kind])]
        lines.append(pooled)
    return lines
