"""gputui's in-process stack sampler, which `gputui run -- CMD` puts into a job through sitecustomize.py.

Standard library only, never gputui or torch: the job may run in an environment without them. A daemon thread
reads every thread's Python stack (sys._current_frames) RATE times a second, and whether the thread was running
(its state in /proc, as py-spy reads it from outside). Once a second it writes what it saw over the last WINDOW_S
seconds, one slice per second, to a file the monitor finds by this process's PID; the format is documented in
gputui/sources/stacks/inprocess.py, which reads it. A forked child (a DataLoader worker) starts its own sampler
and file; spawned children and torchrun's ranks inherit PYTHONPATH, so sitecustomize starts one there too.

Nothing here may raise into the job: every error is swallowed, after one line on stderr at most per process.

Environment: GPUTUI_STACKS_HZ (samples per second, default 25; 0 turns the sampler off), GPUTUI_STACKS_WINDOW_S
(seconds kept, default 8).
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import re
import sys
import threading
import time
from collections import deque
from collections.abc import Mapping
from types import CodeType, FrameType
from typing import Any

FORMAT = "gputui-stacks"
VERSION = 1
DEFAULT_HZ = 25.0
MAX_HZ = 100.0
DEFAULT_WINDOW_S = 8.0
SLICE_S = 1.0  # one published slice per second: a reader takes the last few for a shorter window
STOP_WAIT_S = 1.0  # how long the exit waits for the sampler to finish a write in progress
STAT_BYTES = 64  # "tid (comm) S ...": the state follows a comm of 16 bytes at most
RECORD_NAME = re.compile(r"^\.?([0-9]+)\.json(?:\.tmp)?$")

# A sample of one thread's stack: its code objects and lines, innermost first, flattened (code, line, code, ...)
# so that taking one allocates a single tuple.
RawStack = tuple[Any, ...]


def record_dir(environ: Mapping[str, str], uid: int) -> str:
    """Where a process of user `uid` with this environment publishes: the reader looks in the same places."""
    runtime = environ.get("XDG_RUNTIME_DIR")
    if runtime:
        return os.path.join(runtime, "gputui-stacks")
    return fallback_dir(uid)


def fallback_dir(uid: int) -> str:
    return f"/dev/shm/gputui-stacks-{uid}"


def _positive(name: str, default: float, ceiling: float) -> float:
    """A number from the environment; the default where it is absent or not a number, at most `ceiling`."""
    try:
        value = float(os.environ.get(name, default))
    except ValueError:
        return default
    return min(value, ceiling) if value >= 0 else default


def _int_or_none(text: str | None) -> int | None:
    try:
        return None if text is None else int(text)
    except ValueError:
        return None


def _start_ticks() -> int:
    """This process's start time in clock ticks since boot (/proc/self/stat field 22): with the PID it names
    this process, where the PID alone may have been reused."""
    with open("/proc/self/stat", "rb") as stat:
        data = stat.read()
    return int(data[data.rindex(b")") + 2 :].split()[19])


def _running(stat_path: str) -> int:
    """1 when the thread whose /proc stat file this is was running (or runnable) on a CPU, else 0."""
    try:
        fd = os.open(stat_path, os.O_RDONLY)
        try:
            data = os.read(fd, STAT_BYTES)
        finally:
            os.close(fd)
    except OSError:
        return 0
    state = data.rfind(b")") + 2
    return 1 if data[state : state + 1] == b"R" else 0


class Slice:
    """One second of samples: per thread (OS id) and distinct stack, [samples, running]."""

    __slots__ = ("counts", "end", "names", "start", "ticks")

    def __init__(self, start: float) -> None:
        self.start = start
        self.end = start
        self.ticks = 0
        self.counts: dict[tuple[int, RawStack], list[int]] = {}
        self.names: dict[int, str] = {}


class Sampler:
    """The sampling thread of this process, and its record file."""

    def __init__(self, hz: float, window_s: float) -> None:
        self.hz = hz
        self.window_s = window_s
        self.warned = False
        self.stopping = False
        self.thread: threading.Thread | None = None
        self.path = ""
        self.mp_registered = False
        self.lines: dict[tuple[CodeType, int | None], tuple[str, str, int | None]] = {}

    # -- lifetime -------------------------------------------------------------------------------------------

    def start(self) -> None:
        """Start sampling this process (again, in a forked child: what the parent saw is not this one's)."""
        try:
            self.stopping = False
            self.pid = os.getpid()
            self.ppid = os.getppid()
            self.start_ticks = _start_ticks()
            self.slices: deque[Slice] = deque(maxlen=max(1, round(self.window_s / SLICE_S)))
            # ident -> (OS thread id, name, its /proc stat file); idents the threading module does not know are
            # asked about again only when the table is refreshed.
            self.threads: dict[int, tuple[int, str, str]] = {}
            self.unknown: set[int] = set()
            self.directory = self._directory()
            self.path = os.path.join(self.directory, f"{self.pid}.json")
            self.temporary = os.path.join(self.directory, f".{self.pid}.json.tmp")
            self.thread = threading.Thread(target=self._run, name="gputui-stacks", daemon=True)
            self.thread.start()
        except Exception as error:  # never into the job
            self.warn(error)

    def stop(self) -> None:
        """At exit: let the thread finish a write in progress, then take the record away."""
        self.stopping = True
        thread = self.thread
        try:
            if thread is not None and thread.is_alive() and thread is not threading.current_thread():
                thread.join(STOP_WAIT_S)
            if self.path:
                os.unlink(self.path)
        except FileNotFoundError:
            pass
        except Exception as error:
            self.warn(error)

    def before_fork(self) -> None:
        """A multiprocessing child leaves by os._exit, past atexit; its exit finalizers run, so register one
        there (on the first fork after multiprocessing is loaded; the registry is inherited)."""
        try:
            util = sys.modules.get("multiprocessing.util")
            if util is not None and not self.mp_registered:
                util.register_after_fork(self, Sampler._in_multiprocessing_child)
                self.mp_registered = True
        except Exception as error:
            self.warn(error)

    def _in_multiprocessing_child(self) -> None:
        util = sys.modules.get("multiprocessing.util")
        if util is not None:
            util.Finalize(None, self.stop, exitpriority=0)

    def warn(self, error: BaseException) -> None:
        if self.warned:
            return
        self.warned = True
        with contextlib.suppress(Exception):
            sys.stderr.write(f"gputui stack sampler: stopped in pid {os.getpid()}: {error!r}\n")

    # -- the thread -----------------------------------------------------------------------------------------

    def _directory(self) -> str:
        """The record directory, made 0700 and checked to be this user's own (/dev/shm is everyone's)."""
        uid = os.getuid()
        preferred = record_dir(os.environ, uid)
        for directory in dict.fromkeys((preferred, fallback_dir(uid))):
            try:
                os.makedirs(directory, mode=0o700, exist_ok=True)
                status = os.lstat(directory)
            except OSError:
                continue
            if status.st_uid == uid and os.path.isdir(directory) and not os.path.islink(directory):
                if status.st_mode & 0o077:
                    os.chmod(directory, 0o700)
                return directory
        raise OSError(f"no private directory to publish in ({preferred})")

    def _run(self) -> None:
        try:
            self.ident = threading.get_ident()
            self._sweep()
            interval = 1.0 / self.hz
            due = time.monotonic()
            current = Slice(time.time())
            while not self.stopping:
                self._sample(current)
                if time.time() - current.start >= SLICE_S:
                    current.end = time.time()
                    self.slices.append(current)
                    self._publish()
                    current = Slice(current.end)
                    self._refresh_threads()
                due += interval
                delay = due - time.monotonic()
                if delay < 0:  # late (the job held the GIL): the missed samples are not made up
                    due = time.monotonic()
                    delay = 0.0
                time.sleep(delay)
        except Exception as error:
            self.warn(error)

    def _refresh_threads(self) -> None:
        self.unknown.clear()
        threads = {}
        for thread in threading.enumerate():
            native = thread.native_id
            if thread.ident is not None and native is not None:
                threads[thread.ident] = (native, thread.name, f"/proc/self/task/{native}/stat")
        self.threads = threads

    def _sample(self, into: Slice) -> None:
        into.ticks += 1
        threads = self.threads
        counts = into.counts
        for ident, top in sys._current_frames().items():
            if ident == self.ident:
                continue
            known = threads.get(ident)
            if known is None and ident not in self.unknown:
                self._refresh_threads()
                threads = self.threads
                known = threads.get(ident)
                if known is None:
                    self.unknown.add(ident)
            if known is None:
                continue
            native, name, stat_path = known
            walked: list[Any] = []
            frame: FrameType | None = top
            while frame is not None:
                walked.append(frame.f_code)
                walked.append(frame.f_lineno)
                frame = frame.f_back
            key = (native, tuple(walked))
            running = _running(stat_path)
            seen = counts.get(key)
            if seen is None:
                counts[key] = [1, running]
                into.names[native] = name
            else:
                seen[0] += 1
                seen[1] += running

    def _frame(self, code: CodeType, line: int | None) -> tuple[str, str, int | None]:
        key = (code, line)
        frame = self.lines.get(key)
        if frame is None:
            if len(self.lines) > 50_000:  # code made on the fly (exec, compiled graphs) must not pile up
                self.lines.clear()
            frame = self.lines[key] = (code.co_name, code.co_filename, line)
        return frame

    def record(self) -> dict[str, Any]:
        """What is published: the slices in the window, their frames in one table that the stacks index."""
        table: dict[tuple[str, str, int | None], int] = {}
        slices = []
        for piece in self.slices:
            by_thread: dict[int, list[list[Any]]] = {}
            for (native, raw), (samples, running) in piece.counts.items():
                frames = [table.setdefault(self._frame(raw[i], raw[i + 1]), len(table)) for i in range(0, len(raw), 2)]
                by_thread.setdefault(native, []).append([frames, samples, running])
            threads = [
                {"tid": native, "name": piece.names.get(native, ""), "stacks": stacks}
                for native, stacks in by_thread.items()
            ]
            slices.append({"start": piece.start, "end": piece.end, "ticks": piece.ticks, "threads": threads})
        return {
            "format": FORMAT,
            "version": VERSION,
            "pid": self.pid,
            "ppid": self.ppid,
            "start_ticks": self.start_ticks,
            "rank": _int_or_none(os.environ.get("RANK")),
            "local_rank": _int_or_none(os.environ.get("LOCAL_RANK")),
            "rate_hz": self.hz,
            "window_start": self.slices[0].start if self.slices else None,
            "window_end": self.slices[-1].end if self.slices else None,
            "written_at": time.time(),
            "frames": [list(frame) for frame in table],
            "slices": slices,
        }

    def _publish(self) -> None:
        data = json.dumps(self.record(), separators=(",", ":")).encode()
        fd = os.open(self.temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)
        if not self.stopping:  # the exit takes the record away: never put one back after it
            os.replace(self.temporary, self.path)

    def _sweep(self) -> None:
        """Remove the records of processes that are gone without removing theirs (killed, or left by
        os._exit): the directory would otherwise fill with one file per DataLoader worker ever started."""
        for name in os.listdir(self.directory):
            match = RECORD_NAME.match(name)
            if match is not None and not os.path.exists(f"/proc/{match.group(1)}"):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(os.path.join(self.directory, name))


def install() -> Sampler | None:
    """Start sampling this process, and every process forked from it; None where the sampler is turned off."""
    hz = _positive("GPUTUI_STACKS_HZ", DEFAULT_HZ, MAX_HZ)
    if hz <= 0:
        return None
    sampler = Sampler(hz, _positive("GPUTUI_STACKS_WINDOW_S", DEFAULT_WINDOW_S, 600.0) or DEFAULT_WINDOW_S)
    sampler.start()
    atexit.register(sampler.stop)
    os.register_at_fork(before=sampler.before_fork, after_in_child=sampler.start)
    return sampler
