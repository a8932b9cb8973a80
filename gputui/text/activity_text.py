"""A job's activity (what its main thread did over a window of stack samples) as words: the monitor's process row
and detail, `snapshot`, `diagnose` and the report say it alike, so that "data 71%" reads the same everywhere.

Plain ASCII: `snapshot` prints it over slow SSH links. The kinds keep their JSON names (data, gpu_sync ...);
only the process row, where every cell counts at 80 columns, shortens them.
"""

from __future__ import annotations

import re
from pathlib import PurePath

from gputui.formatting import fmt_share
from gputui.model import ACTIVITY_KINDS, ActivityFrame, ActivityKind, ActivityShares, JobActivity, WaitedOn

# The process row's short names: "ckpt 100%" is the widest cell.
KIND_SHORT: dict[ActivityKind, str] = {
    "data": "data",
    "loading": "load",
    "cpu": "cpu",
    "gpu_sync": "sync",
    "collective": "coll",
    "checkpoint": "ckpt",
    "compile": "comp",
    "io": "io",
    "idle": "idle",
}
# A share under this is left out of a list of shares (it still counts in the bar).
LISTED_SHARE = 0.01
# The reader's errors start with a machine-readable key ("ptrace_refused: ..."); the words after it are shown.
_ERROR_KEY = re.compile(r"^[a-z_]+: ")


def ranked(shares: ActivityShares) -> list[tuple[ActivityKind, float]]:
    """The kinds with a share, most first (ACTIVITY_KINDS' order on a tie)."""
    kinds = [(kind, shares.of(kind)) for kind in ACTIVITY_KINDS if shares.of(kind) > 0]
    return sorted(kinds, key=lambda pair: -pair[1])


def shares_text(shares: ActivityShares, limit: int = len(ACTIVITY_KINDS)) -> str:
    """ "data 71%, cpu 20%, idle 9%": the kinds of at least 1%, most first, at most `limit` of them."""
    listed = [(kind, share) for kind, share in ranked(shares) if share >= LISTED_SHARE][:limit]
    return ", ".join(f"{kind} {fmt_share(share)}" for kind, share in listed)


def error_words(error: str) -> str:
    """Why no stack was read, in words: the reader's error without its key."""
    return _ERROR_KEY.sub("", error, count=1)


def is_fresh(activity: JobActivity, now: float, fresh_s: float) -> bool:
    """Taken at most `fresh_s` ago: the rules' Thresholds.activity_fresh_s, the age up to which they trust one."""
    return now - activity.taken_at <= fresh_s


def age_text(seconds: float) -> str:
    """ "12 s ago", "3 min ago", "2 h ago": how long ago a window ended."""
    seconds = max(0.0, seconds)
    if seconds < 120:
        return f"{seconds:.0f} s ago"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min ago"
    return f"{seconds / 3600:.0f} h ago"


def source_text(activity: JobActivity, now: float | None = None) -> str:
    """ "py-spy, 4 s, 80 samples, 12 s ago": who read the stacks, over how long, how many, and when (with `now`)."""
    parts = [activity.source, f"{activity.window_s:g} s", f"{activity.samples} samples"]
    if now is not None:
        parts.append(age_text(now - activity.taken_at))
    return ", ".join(parts)


def short_activity(activity: JobActivity | None) -> str:
    """The process row's cell: "data 71%" (its leading kind), "no stack" where none could be read, "" never
    sampled."""
    if activity is None:
        return ""
    leading = activity.leading
    if leading is None:
        return "no stack"
    return f"{KIND_SHORT[leading]} {fmt_share(activity.shares.of(leading))}"


def short_file(path: str) -> str:
    """The file's last two parts ("data/dataloader.py"): enough to tell a frame, short enough for a line."""
    parts = PurePath(path).parts
    return "/".join(parts[-2:]) if len(parts) > 1 else path


def frame_place(frame: ActivityFrame) -> str:
    """ "data/dataloader.py:631" (no line where none was read)."""
    where = short_file(frame.file)
    return where if frame.line is None else f"{where}:{frame.line}"


def frame_text(frame: ActivityFrame) -> str:
    """ "data 65% in _next_data (data/dataloader.py:631)", and the line it was read from where no Python frame
    showed the kind (", read from its source line: `loss.item()`")."""
    text = f"{frame.kind} {fmt_share(frame.share)} in {frame.function} ({frame_place(frame)})"
    return text if frame.source_line is None else f"{text}{source_line_text(frame.source_line)}"


def source_line_text(line: str) -> str:
    """ ", read from its source line: `loss.item()`": how sure a kind read from the job's source is."""
    return f", read from its source line: `{line}`"


def waited_on_text(waited: WaitedOn) -> str:
    """ "thread producer (tid 4321), decode (loader.py:31) 97%": whom the main thread's waits waited for, their
    top frame, and the share of their samples in which they ran."""
    frame = waited.frame
    place = f", {frame.function} ({frame_place(frame)})" if frame is not None else ""
    return f"{waited.who}{place} {fmt_share(waited.running)}"


def who(activity: JobActivity) -> str:
    """ "main thread", or "rank 1 main thread" for a rank of torch.distributed."""
    return "main thread" if activity.rank is None else f"rank {activity.rank} main thread"


def activity_line(activity: JobActivity, now: float | None = None) -> str:
    """One line: "main thread: data 71%, cpu 20% (py-spy, 4 s, 80 samples, 12 s ago)", or why no stack was read."""
    if activity.error is not None and not activity.samples:
        return f"stacks not read ({activity.source}): {error_words(activity.error)}"
    return f"{who(activity)}: {shares_text(activity.shares) or 'no sample'} ({source_text(activity, now)})"


def detail_lines(activity: JobActivity, now: float | None = None) -> list[str]:
    """The activity line, then its top frame and its workers' shares where it has them: what `snapshot` and
    `diagnose` print under a process."""
    lines = [activity_line(activity, now)]
    if activity.top:
        lines.append(f"top frame: {frame_text(activity.top[0])}")
    if activity.waited_on is not None:
        lines.append(f"waits for: {waited_on_text(activity.waited_on)} running")
    if activity.workers is not None and activity.worker_samples:
        lines.append(f"workers ({activity.worker_samples} samples): {shares_text(activity.workers)}")
    return lines
