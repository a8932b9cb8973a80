"""When to read a training job's stacks, on a thread of its own, and where the activity read goes.

A window of stack samples costs the job nothing (py-spy never pauses it) and gputui ~1% of a core while it lasts,
so it is taken only where it answers a question: when a GPU waits (the verdict `input_bound` or `underused`, or
a `starvation_*` finding on it) its main process is sampled once, then not again for `cooldown_s`; on demand (the
monitor's key, `diagnose` at its start). One worker thread takes the windows one at a time, and sleeps on its
queue while nothing is asked: an all-day monitor wakes it once a minute at most.

A job that may have stopped is another question (diagnostics/rules/hang.py): its GPUs idle, or busy at near-zero SM
activity and power (a collective's kernel spinning for a peer). Once its GPUs have looked so at every tick for
`verdict_settle_s` (one idle reading is a job between steps) and for as long as they do, every rank of the job on
this machine (the processes whose environment names the same job, `ProcSample.dist`) is sampled every
`hang_recheck_s`, so that windows follow each other; a window that finds the main thread where the one before left
it (the same leading kind and frame, by HELD_SHARE or more of both) carries `unchanged_since` on from it: how long
nothing moved, which `job_stopped` judges.

Each reading's GPU processes get the latest activity read for them (`attach`), so the rules, the views, the JSON
and the recording all see it as a field of the process. A refused ptrace is said once per reason, as a notice; a
stack record refused (outside what gputui's sampler writes) once per user who could write it.

Only this machine's processes are read: never in a replay, for a remote server or for a simulated machine whose
processes are made up (`stacks_allowed`).

    [stacks]
    enabled = true      # false: no window is taken, automatic or asked for
    window_s = 4.0      # seconds of samples per window
    rate_hz = 20        # samples a second
    cooldown_s = 300.0  # a process sampled automatically is not sampled again automatically before this, unless
                        # what it waits on changes (then after `recheck_s`, 60 s)
    hang_recheck_s = 120.0  # the ranks of a job that may have stopped, again and again while it looks so
    hang_window_s = 1.0     # seconds of samples per such window: a thread held for good shows in each one
"""

from __future__ import annotations

import math
import queue
import re
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from gputui.config import StacksConfig
from gputui.diagnostics.rules.hang import sample_stalled, suspects
from gputui.diagnostics.thresholds import Thresholds
from gputui.model import JobActivity, ProcSample, Snapshot, SystemInfo

if TYPE_CHECKING:
    from gputui.diagnostics.tick import Tick

# Reads one window of a process's stacks: (pid, window_s) -> its activity; never raises for a process it cannot
# read (samples 0 and `error` say why).
ReadActivity = Callable[[int, float], JobActivity]

# The verdict classes in which a GPU waits on something its job does: the stacks say what.
WAITING_CLASSES = frozenset({"input_bound", "underused"})
STARVATION_PREFIX = "starvation_"
# Errors that concern every process alike, and are said once as a notice (the activity says the rest).
NOTICED_ERRORS = ("ptrace_refused", "no_py_spy")
_DIGITS = re.compile(r"\d+")
# What says a process's GPU may belong to a stopped job, beside the waits above.
SUSPECTED_HANG = "suspected_hang"
# The share of both windows' samples the main thread must spend in one place for it to be "unchanged": a thread
# held for good is 100% there; a loop that passes through the place now and then is not.
HELD_SHARE = 0.95
# Why no stack is read of a machine's processes (stacks_refusal).
REPLAY_REFUSAL = "no stacks in a replay: its processes ran on the recorded machine, then"
REMOTE_REFUSAL = "no stacks of another machine's processes: run gputui there"
SIMULATED_REFUSAL = "no stacks on the simulated machine: its processes are made up, not this machine's"


def stacks_refusal(system: SystemInfo) -> str | None:
    """Why no stack is read of the processes `system` reports, in a sentence; None where they are this machine's
    own: the driver's, or the lab's machine, whose GPU is simulated but whose job is a real process here."""
    from gputui.sources.sim.job import is_job_scenario

    if system.is_live or (system.source == "simulated" and is_job_scenario(system.scenario)):
        return None
    if system.source == "replay":
        return REPLAY_REFUSAL
    if system.source == "remote":
        return REMOTE_REFUSAL
    return SIMULATED_REFUSAL


def stacks_for(system: SystemInfo, config: StacksConfig, thresholds: Thresholds | None = None) -> JobStacks | None:
    """The sampler of the job stacks for a session on `system`; None where its processes are not this machine's."""
    return JobStacks(config, thresholds=thresholds) if stacks_refusal(system) is None else None


def error_key(error: str | None) -> str | None:
    """The machine-readable key an activity's error starts with ("ptrace_refused: ..." -> "ptrace_refused")."""
    if not error:
        return None
    key, sep, _ = error.partition(":")
    return key.strip() if sep else None


def main_process(snapshot: Snapshot, gpu_index: int) -> int | None:
    """The GPU's process that uses the most CPU (the training process; a second one is a notebook); None when
    the host knows none of them."""
    gpu = next((g for g in snapshot.gpus if g.index == gpu_index), None)
    if gpu is None:
        return None
    procs = [p for p in (snapshot.host.process(proc.pid) for proc in gpu.processes) if p is not None]
    return max(procs, key=lambda p: p.cpu_pct or 0.0).pid if procs else None


def waiting_gpus(tick: Tick) -> dict[int, frozenset[str]]:
    """The GPUs of the tick whose wait the stacks can explain, each with what says it waits: the verdict's class
    (it waits on its job), the starvation findings open on it."""
    out: dict[int, set[str]] = {}
    verdict = tick.verdict
    units = [verdict, *verdict.groups] if verdict is not None else []
    for unit in units:
        if unit.cls in WAITING_CLASSES:
            for index in unit.gpus:
                out.setdefault(index, set()).add(unit.cls)
    for finding in tick.active:
        if finding.rule.startswith(STARVATION_PREFIX) and finding.is_open:
            for index in finding.gpus:
                out.setdefault(index, set()).add(f"{finding.rule}.{finding.variant}")
    return {index: frozenset(why) for index, why in out.items()}


def hung_ranks(snapshot: Snapshot, th: Thresholds) -> tuple[int, ...]:
    """The ranks (PIDs) of the jobs whose GPUs all look as a stopped job leaves them (rules/hang.py `suspects`):
    every process on this machine whose environment names such a job, whatever GPU it holds."""
    suspect = set(suspects(snapshot, th))
    held: dict[str, set[int]] = {}  # each job's GPUs
    for gpu in snapshot.gpus:
        for proc in gpu.processes:
            host = snapshot.host.process(proc.pid)
            if host is not None and host.dist is not None and host.dist.job is not None:
                held.setdefault(host.dist.job, set()).add(gpu.index)
    jobs = {job for job, gpus in held.items() if gpus <= suspect}
    return tuple(
        sorted(p.pid for p in snapshot.host.processes if p.dist is not None and p.dist.job in jobs and p.dist.job)
    )


def held_since(before: JobActivity | None, now: JobActivity) -> JobActivity:
    """`now` with `unchanged_since` set where the window before it (`before`, of the same process) left its main
    thread in the same place: carried on from `before`, or the start of `before` where that was the first."""
    if before is None or not same_place(before, now):
        return now
    since = before.unchanged_since if before.unchanged_since is not None else before.taken_at - before.window_s
    return replace(now, unchanged_since=since)


def same_place(a: JobActivity, b: JobActivity) -> bool:
    """Both windows' main thread in one place: the same leading kind, HELD_SHARE or more of each, and the same top
    frame of that kind (function, file and line)."""
    kind = a.leading
    if kind is None or kind != b.leading or min(a.shares.of(kind), b.shares.of(kind)) < HELD_SHARE:
        return False
    places = [next(((f.function, f.file, f.line) for f in x.top if f.kind == kind), None) for x in (a, b)]
    return places[0] is not None and places[0] == places[1]


def _ranked(activity: JobActivity, proc: ProcSample) -> JobActivity:
    """The activity with the process's RANK, as the host source read it from its environment (py-spy reads only the
    stacks; the in-job sampler says its own)."""
    if activity.rank is not None or proc.dist is None or proc.dist.rank is None:
        return activity
    return replace(activity, rank=proc.dist.rank)


class _Stop:
    """The sentinel that ends the worker thread."""


class JobStacks:
    """Takes windows of stack samples on its own thread, one at a time, and hands the latest of each process to
    every reading. `request`, `consider` and `attach` may be called from any thread; the worker starts with the
    first window asked for."""

    def __init__(
        self,
        config: StacksConfig | None = None,
        read: ReadActivity | None = None,
        clock: Callable[[], float] = time.time,
        thresholds: Thresholds | None = None,
    ) -> None:
        self.config = config if config is not None else StacksConfig()
        self._thresholds = thresholds if thresholds is not None else Thresholds()
        self._read = read if read is not None else self._read_activity
        self._clock = clock
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._queue: queue.Queue[tuple[int, float] | _Stop] = queue.Queue()  # (pid, window_s)
        self._pending: set[int] = set()  # asked for or being read
        self._asked_at: dict[int, float] = {}  # when each process's last window was asked for
        self._asked_for: dict[int, frozenset[str]] = {}  # what said its GPU waited when consider() asked for it
        # A job that may have stopped: since when each of its ranks has looked so at every tick, and when each
        # rank's last short window was asked for (apart from _asked_at: a re-check never delays the window its
        # waiting GPU is due).
        self._suspect_since: dict[int, float] = {}
        self._rechecked_at: dict[int, float] = {}
        self._latest: dict[int, JobActivity] = {}
        self._noticed: set[str] = set()
        self._refused_owners: set[str] = set()
        self._notices: list[str] = []
        self._thread: threading.Thread | None = None
        self._closed = False
        self._read_count = 0  # windows taken so far
        self._attached_count = 0  # of those, the windows the last attach() handed over

    def _read_activity(self, pid: int, window_s: float) -> JobActivity:
        # Imported when the first window is taken: a monitor whose jobs never wait never loads the readers.
        from gputui.sources.stacks.activity_reader import read_activity

        return read_activity(pid, window_s, self.config.rate_hz, refused=self._refused)

    def _refused(self, owner: str, why: str) -> None:
        """A notice of a refused stack record, the first time one of `owner`'s is: its user may make one on purpose
        for every process, and one notice says all there is."""
        with self._lock:
            if owner not in self._refused_owners:
                self._refused_owners.add(owner)
                self._notices.append(f"job stacks: {why}; read with py-spy instead")

    @property
    def busy(self) -> bool:
        """A window is asked for or being taken."""
        with self._lock:
            return bool(self._pending)

    @property
    def unattached(self) -> bool:
        """A window ended after the last reading was given the activities: the next reading has news."""
        with self._lock:
            return self._read_count > self._attached_count

    def request(self, pid: int) -> str | None:
        """Sample `pid` now (after the window in progress); None when asked, else why not, in a sentence."""
        with self._lock:
            if self._closed:
                return "stack sampling has ended"
            if not self.config.enabled:
                return "stack sampling is off ([stacks] enabled = false in the config file)"
            if pid in self._pending:
                return f"the stacks of PID {pid} are being read already"
            self._ask(pid)
        return None

    def consider(self, tick: Tick) -> None:
        """Samples the main process of each GPU that waits on its job or spins, unless it was sampled within
        `cooldown_s`; and every rank of a job that may have stopped, unless sampled within `hang_recheck_s`."""
        if not self.config.enabled:
            return
        self._recheck(hung_ranks(tick.snapshot, self._thresholds))
        gpus = waiting_gpus(tick)
        for sample in tick.snapshot.gpus:  # spinning, of no job known: its main process, as any waiting GPU's
            if not sample.lost and sample_stalled(sample, self._thresholds):
                gpus[sample.index] = gpus.get(sample.index, frozenset()) | {SUSPECTED_HANG}
        if not gpus:
            return
        waits: dict[int, frozenset[str]] = {}
        for index in sorted(gpus):
            pid = main_process(tick.snapshot, index)
            if pid is not None:
                waits[pid] = waits.get(pid, frozenset()) | gpus[index]
        now = self._clock()
        with self._lock:
            if self._closed:
                return
            for pid, why in sorted(waits.items()):
                asked = self._asked_at.get(pid)
                changed = self._asked_for.get(pid) != why
                due = asked is None or now - asked >= (self.config.recheck_s if changed else self.config.cooldown_s)
                if pid not in self._pending and due:
                    self._asked_for[pid] = why
                    self._ask(pid)

    def _recheck(self, pids: tuple[int, ...]) -> None:
        """Samples the ranks of a job that may have stopped, each once it has looked so at every tick for
        `verdict_settle_s` (a GPU idle for one reading is a job between steps, not a stopped one), and then unless
        sampled within `hang_recheck_s` (by a re-check, or by a window its waiting GPU was due)."""
        now = self._clock()
        with self._lock:
            for pid in [pid for pid in self._suspect_since if pid not in pids]:
                del self._suspect_since[pid]
            if self._closed:
                return
            for pid in pids:
                since = self._suspect_since.setdefault(pid, now)
                last = max(self._rechecked_at.get(pid, -math.inf), self._asked_at.get(pid, -math.inf))
                settled = now - since >= self._thresholds.verdict_settle_s
                if settled and pid not in self._pending and now - last >= self.config.hang_recheck_s:
                    self._rechecked_at[pid] = now
                    self._pending.add(pid)
                    self._queue.put((pid, self.config.hang_window_s))
                    self._start()

    def attach(self, snapshot: Snapshot) -> Snapshot:
        """The reading with each process's latest activity on it, and the notices not yet said; the activities of
        processes gone from it are forgotten."""
        host = snapshot.host
        present = {proc.pid for proc in host.processes}
        with self._lock:
            for pid in [pid for pid in self._latest if pid not in present]:
                del self._latest[pid]
            for pid in [pid for pid in self._asked_at if pid not in present and pid not in self._pending]:
                del self._asked_at[pid]
                self._asked_for.pop(pid, None)
            for pid in [pid for pid in self._rechecked_at if pid not in present and pid not in self._pending]:
                del self._rechecked_at[pid]
            latest = dict(self._latest)
            notices, self._notices = tuple(self._notices), []
            self._attached_count = self._read_count
        if latest:
            processes = tuple(
                replace(proc, activity=_ranked(latest[proc.pid], proc)) if proc.pid in latest else proc
                for proc in host.processes
            )
            snapshot = replace(snapshot, host=replace(host, processes=processes))
        if notices:
            snapshot = replace(snapshot, events=(*snapshot.events, *notices))
        return snapshot

    def settle(self, timeout: float) -> bool:
        """Waits until no window is asked for or being taken; False when `timeout` passed first."""
        deadline = time.monotonic() + timeout
        with self._idle:
            while self._pending:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._idle.wait(left)
        return True

    def close(self, timeout: float | None = None) -> None:
        """No window after the one in progress (those asked for are dropped); waits `timeout` for it (None: not at
        all, the thread is a daemon)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            thread = self._thread
        self._queue.put(_Stop())
        if thread is not None and timeout is not None:
            thread.join(timeout)

    def _ask(self, pid: int) -> None:
        """Queues a window of `pid` (the lock held) and starts the worker with the first."""
        self._pending.add(pid)
        self._asked_at[pid] = self._clock()
        self._queue.put((pid, self.config.window_s))
        self._start()

    def _start(self) -> None:
        """Starts the worker thread with the first window asked for (the lock held)."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="gputui-stacks", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            with self._lock:
                closed = self._closed
            if isinstance(item, _Stop) or closed:
                return
            pid, window_s = item
            try:
                activity = self._read(pid, window_s)
            except Exception as exc:  # a reader must not raise; one that does costs its window, not the thread
                error = f"py_spy_failed: reading the stacks failed: {exc}"
                activity = JobActivity(source="py-spy", taken_at=self._clock(), window_s=0.0, samples=0, error=error)
            with self._idle:
                activity = held_since(self._latest.get(pid), activity)
                self._latest[pid] = activity
                self._read_count += 1
                self._note(activity)
                self._pending.discard(pid)
                self._idle.notify_all()

    def _note(self, activity: JobActivity) -> None:
        """A notice for an error that concerns every process alike, the first time it is read (the lock held)."""
        error = activity.error
        if error is None or error_key(error) not in NOTICED_ERRORS:
            return
        reason = _DIGITS.sub("#", error)  # the same refusal of another PID is the same reason
        if reason not in self._noticed:
            self._noticed.add(reason)
            self._notices.append(f"job stacks: {error.partition(':')[2].strip()}")
