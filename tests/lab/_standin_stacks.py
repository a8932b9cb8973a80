"""STAND-IN, to be deleted at merge: the lab's minimal copy of the JobStacks API (gputui.session.stacks) and of
read_activity (gputui.sources.stacks.reader) until those land, so that the lab's cases can run meanwhile.

py-spy twice at once over one window (with --idle: every sample; without: the running ones), the main thread's
stacks sorted by a few frame patterns. Not the product's classification; the lead swaps the imports in
tests/lab/jobs.py (STACKS_READER, and JobStacks/StacksConfig) for the real ones.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from gputui.model import ActivityFrame, ActivityKind, ActivityShares, JobActivity, Snapshot
from gputui.session.sampling import Tick

Frame = tuple[str, str, int | None]  # function, file, line


@dataclasses.dataclass(frozen=True)
class StacksConfig:
    enabled: bool = True
    window_s: float = 4.0
    rate_hz: int = 20
    cooldown_s: float = 60.0
    fresh_s: float = 120.0


def _py_spy() -> str:
    return shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))


def _record(pid: int, window_s: float, rate_hz: int, idle: bool, out: Path) -> subprocess.Popen[bytes]:
    command = [_py_spy(), "record", "--nonblocking", "--threads", "--format", "raw", "-r", str(rate_hz)]
    command += ["-d", f"{max(1, round(window_s))}", "--pid", str(pid), "-o", str(out), *(["--idle"] if idle else [])]
    return subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _main_stacks(path: Path, pid: int) -> Counter[tuple[Frame, ...]]:
    """The main thread's stacks (innermost first) and their counts."""
    counts: Counter[tuple[Frame, ...]] = Counter()
    for line in path.read_text().splitlines() if path.exists() else ():
        body, _, count = line.rpartition(" ")
        parts = body.split(";")
        if not parts[0].startswith(f"thread ({pid})"):
            continue
        frames = []
        for part in parts[2:]:
            function, _, where = part.rpartition(" (")
            file, _, line_no = where.rstrip(")").rpartition(":")
            frames.append((function, file, int(line_no) if line_no.isdigit() else None))
        counts[tuple(reversed(frames))] += int(count)
    return counts


def _kind(stack: tuple[Frame, ...], running: bool) -> ActivityKind:
    files = [file for _, file, _ in stack]
    if any("torch/distributed/" in f for f in files):
        return "collective"
    if any(f.endswith("torch/serialization.py") for f in files):
        return "checkpoint"
    if any(f.endswith("torch/utils/data/_utils/fetch.py") for f in files):
        return "loading"
    if any(file.endswith("torch/utils/data/dataloader.py") and "_next_data" in fn for fn, file, _ in stack):
        return "data"
    return "cpu" if running else "idle"


def _user_frame(stack: tuple[Frame, ...]) -> Frame:
    for frame in stack:
        if "/" not in frame[1] and frame[1] not in ("threading.py", "queue.py", "selectors.py", "connection.py"):
            return frame
    return stack[0]


def read_activity(pid: int, window_s: float = 4.0, rate_hz: int = 20) -> JobActivity:
    with tempfile.TemporaryDirectory(prefix="gputui-standin-") as tmp:
        every, active = Path(tmp) / "all.txt", Path(tmp) / "active.txt"
        runs = [_record(pid, window_s, rate_hz, True, every), _record(pid, window_s, rate_hz, False, active)]
        errors = [run.communicate()[1].decode(errors="replace") for run in runs]
        taken_at = time.time()
        if runs[0].returncode != 0:
            words = "may not read another user's process: run as root, or start the job under gputui run -- ..."
            error = f"ptrace_refused: {words}" if "Permission Denied" in errors[0] else f"gone: {errors[0][:200]}"
            return JobActivity("py-spy", taken_at, window_s, 0, error=error)
        stacks, running = _main_stacks(every, pid), _main_stacks(active, pid)
    total = sum(stacks.values())
    kinds: Counter[ActivityKind] = Counter()
    frames: Counter[tuple[ActivityKind, Frame]] = Counter()
    for stack, count in stacks.items():
        kind = _kind(stack, running[stack] * 2 > count)
        kinds[kind] += count
        frames[(kind, _user_frame(stack))] += count
    shares = ActivityShares(**{kind: n / total for kind, n in kinds.items()}) if total else ActivityShares()
    top = tuple(ActivityFrame(k, f[0], f[1], f[2], n / total) for (k, f), n in frames.most_common(5))
    rank = None
    environ = Path(f"/proc/{pid}/environ")
    for entry in environ.read_bytes().split(b"\0") if os.access(environ, os.R_OK) else ():
        if entry.startswith(b"RANK="):
            rank = int(entry[5:])
    return JobActivity("py-spy", taken_at, window_s, total, shares, top, rank=rank)


class JobStacks:
    def __init__(
        self,
        config: StacksConfig = StacksConfig(),
        read: Callable[[int, float], JobActivity] = read_activity,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._config, self._read, self._clock = config, read, clock
        self._latest: dict[int, JobActivity] = {}
        self._started: dict[int, float] = {}
        self._noticed = False
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []

    def attach(self, snapshot: Snapshot) -> Snapshot:
        with self._lock:
            latest = dict(self._latest)
        procs = tuple(dataclasses.replace(p, activity=latest.get(p.pid, p.activity)) for p in snapshot.host.processes)
        events = snapshot.events
        refused = [a.error for a in latest.values() if a.error and a.error.startswith("ptrace_refused")]
        if refused and not self._noticed:
            self._noticed = True
            events += (f"the job's stacks cannot be read: {refused[0]}",)
        host = dataclasses.replace(snapshot.host, processes=procs)
        return dataclasses.replace(snapshot, host=host, events=events)

    def consider(self, tick: Tick) -> None:
        verdict = tick.verdict
        if verdict is None:
            return
        waiting = {g for v in (verdict, *verdict.groups) if v.cls in ("input_bound", "underused") for g in v.gpus}
        for gpu in tick.snapshot.gpus:
            for proc in gpu.processes if gpu.index in waiting else ():
                self.request(proc.pid)

    def request(self, pid: int) -> str | None:
        now = self._clock()
        if now - self._started.get(pid, -1e9) < self._config.cooldown_s:
            return "sampled within the cooldown"
        self._started[pid] = now
        thread = threading.Thread(target=self._window, args=(pid,), daemon=True)
        self._threads.append(thread)
        thread.start()
        return None

    def _window(self, pid: int) -> None:
        activity = self._read(pid, self._config.window_s)
        with self._lock:
            self._latest[pid] = activity

    def close(self, timeout: float | None = None) -> None:
        for thread in self._threads:
            thread.join(timeout=timeout)
