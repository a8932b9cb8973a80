"""gputui's in-process stack sampler, which `gputui run -- CMD` puts into a job through sitecustomize.py.

Standard library only, never gputui or torch: the job may run in an environment without them. A daemon thread
reads every thread's Python stack (sys._current_frames) RATE times a second, and how much of the time since the
previous sample the thread spent on a CPU (its CPU clock). Once a second it writes what it saw over the last
WINDOW_S seconds, one slice per second, to a file the monitor finds by this process's PID; the format is
documented in gputui/sources/stacks/inprocess.py, which reads it. A forked child (a DataLoader worker) starts
its own sampler and file; spawned children and torchrun's ranks inherit PYTHONPATH, so sitecustomize starts one
there too.

Nothing here may raise into the job: every error is swallowed, after one line on stderr at most per process.

Where: the directory GPUTUI_STACKS_DIR names, which `gputui run` makes afresh for the job (0700, its own user's). It
is opened once, checked to be this user's and writable by no one else, and every write, rename and unlink after
that is made relative to that descriptor, the temporary files created exclusively under random names: renaming the
directory away and planting a symlink in its place, or a hard link at a temporary name, redirects nothing. A forked
child keeps its parent's descriptor; a process started afresh (a spawned worker, a rank) opens the directory again.

What: a record within the bounds below (MAX_*), which the reader checks before it parses anything: the deepest
stacks are cut to their innermost MAX_DEPTH frames, names to MAX_NAME characters, and where a window holds more
than the record may, its oldest slices are left out.

Environment: GPUTUI_STACKS_DIR (where to publish; without it the sampler does not start), GPUTUI_STACKS_HZ
(samples per second, default 25; 0 turns the sampler off), GPUTUI_STACKS_WINDOW_S (seconds kept, default 8).
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import re
import secrets
import sys
import threading
import time
from collections import deque
from types import CodeType, FrameType
from typing import Any

FORMAT = "gputui-stacks"
VERSION = 1
DEFAULT_HZ = 25.0
MAX_HZ = 100.0
DEFAULT_WINDOW_S = 8.0
SLICE_S = 1.0  # one published slice per second: a reader takes the last few for a shorter window
STOP_WAIT_S = 1.0  # how long the exit waits for the sampler to finish a write in progress
ENV_DIR = "GPUTUI_STACKS_DIR"
RECORD_NAME = re.compile(r"^\.?([0-9]+)\.json(?:\.[0-9a-f]+\.tmp)?$")
# The bounds of a record, which the reader refuses one outside of. A real job's (examples/lab/train.py with two
# workers, at its start, when imports make the most distinct frames) weighs 43 kB: 323 frames, 3,450 indices,
# 102 frames deep; these leave ~100 times that.
MAX_RECORD_BYTES = 4 << 20
MAX_FRAMES = 10_000  # distinct frames in the table
MAX_INDICES = 250_000  # frame indices in all the record's stacks together
MAX_DEPTH = 2_000  # frames in one stack (Python's recursion limit is 1,000 by default)
MAX_NAME = 4_096  # characters of a function's, file's or thread's name
MAX_THREADS = 1_024  # threads in one slice
MAX_WINDOW_S = 600.0
MAX_SLICES = round(MAX_WINDOW_S / SLICE_S)

# A sample of one thread's stack as it is taken: its code objects' ids and the offsets of the instructions they run,
# innermost first, flattened (id, offset, id, offset, ...): ints hash at a fraction of a code object's cost, and
# f_lasti costs a tenth of f_lineno. The lines are looked up once a second, for the distinct stacks only.
RawStack = tuple[int, ...]
# A frame as published: function, file, line.
PublishedFrame = tuple[str, str, "int | None"]


class NotPrivate(OSError):
    """A record directory that another user than its job's could write in."""


def open_private_dir(path: str, uid: int) -> int:
    """A descriptor of the directory `path`, checked to be a real directory (not a symlink to one) of user `uid`
    that no one else may write in; NotPrivate where it is another's, OSError where it is none. The reader checks
    the same."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    status = os.fstat(fd)
    if status.st_uid != uid or status.st_mode & 0o022:
        os.close(fd)
        raise NotPrivate(f"{path} is not a directory of uid {uid} that only it may write in")
    return fd


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


def _line(code: CodeType, offset: int) -> int | None:
    """The line of the instruction at byte `offset` (a frame's f_lasti) in `code`, as f_lineno would say (None
    before Python 3.10, whose code objects do not say)."""
    try:
        ranges = code.co_lines()
    except AttributeError:
        return None
    for start, end, line in ranges:
        if start <= offset < end:
            return line
    return None


class Watched:
    """A thread the sampler reads: its OS id and name, and its CPU clock.

    Whether it was running is read from that clock (one system call, and Python keeps the GIL through it), not
    from its state in /proc: a read of /proc lets go of the GIL, and a job's main thread running Python takes it
    then, so each read cost a hand-over of the GIL there and back (the sampler's cost tripled). A sample counts the
    share of the time since the previous one that the thread spent on a CPU, where py-spy counts a 1 for a state R;
    both estimate how much of the window it ran, but this one does not count a thread that waits for a CPU as
    running (a data-loader worker starved by other processes)."""

    __slots__ = ("at_ns", "clock", "cpu_ns", "name", "native")

    def __init__(self, native: int, name: str) -> None:
        self.native = native
        self.name = name
        # Linux's CPU clock of one thread of this process: ~tid << 3 | CPUCLOCK_PERTHREAD | CPUCLOCK_SCHED, as
        # glibc's pthread_getcpuclockid makes it (which takes a pthread_t, unsafe for a thread that has ended).
        self.clock = (~native << 3) | 6
        self.cpu_ns = 0
        self.at_ns = 0

    def on_cpu(self, now_ns: int) -> float:
        """The share of the time since the previous sample that the thread spent on a CPU (0 at its first)."""
        try:
            cpu_ns = time.clock_gettime_ns(self.clock)
        except OSError:  # it has ended
            return 0.0
        elapsed_ns = now_ns - self.at_ns
        share = (cpu_ns - self.cpu_ns) / elapsed_ns if self.at_ns and elapsed_ns > 0 else 0.0
        self.cpu_ns, self.at_ns = cpu_ns, now_ns
        return min(share, 1.0)


class Slice:
    """One second of samples: per thread (OS id) and distinct stack, [samples, of which on a CPU (a sum of
    shares), its code objects]; once
    it ends, the same with the frames as published (`frames`)."""

    __slots__ = ("counts", "end", "frames", "names", "start", "ticks")

    def __init__(self, start: float) -> None:
        self.start = start
        self.end = start
        self.ticks = 0
        self.counts: dict[tuple[int, RawStack], list[Any]] = {}
        self.names: dict[int, str] = {}
        self.frames: list[tuple[int, tuple[PublishedFrame, ...], int, float]] = []


class Sampler:
    """The sampling thread of this process, and its record file."""

    def __init__(self, hz: float, window_s: float) -> None:
        self.hz = hz
        self.window_s = window_s
        self.warned = False
        self.stopping = False
        self.thread: threading.Thread | None = None
        self.dir_fd: int | None = None  # the record directory, opened once (a forked child inherits it)
        self.name = ""  # the record's name in it, once placed
        self.mp_registered = False
        self.threads: dict[int, Watched] = {}
        # (id of a code object, offset) -> (that code object, the frame as published); the code object kept is
        # what keeps the id its own.
        self.lines: dict[tuple[int, int], tuple[CodeType, PublishedFrame]] = {}

    # -- lifetime -------------------------------------------------------------------------------------------

    def start(self) -> None:
        """Start sampling this process (again, in a forked child: what the parent saw is not this one's)."""
        self.thread = None
        self.name = ""  # a forked child's own, once placed: never its parent's, which its exit would remove
        try:
            self.stopping = False
            self.pid = os.getpid()
            self.ppid = os.getppid()
            self.start_ticks = _start_ticks()
            self.slices: deque[Slice] = deque(maxlen=max(1, round(self.window_s / SLICE_S)))
            # ident -> the thread; idents the threading module does not know are asked about again only when the
            # table is refreshed.
            self.threads = {}
            self.unknown: set[int] = set()
            self._place()
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
            if self.name and self.dir_fd is not None:
                os.unlink(self.name, dir_fd=self.dir_fd)
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
            sys.stderr.write(f"gputui stack sampler (pid {os.getpid()}): {error!r}; the job runs on without it\n")

    # -- the thread -----------------------------------------------------------------------------------------

    def _place(self) -> None:
        """Where this process's record goes: the directory `gputui run` made, opened once and checked; a forked
        child keeps the descriptor its parent opened, never the path, which may lead elsewhere by now."""
        if self.dir_fd is None:
            path = os.environ.get(ENV_DIR)
            if not path:
                raise OSError(f"{ENV_DIR} is not set: start the job with `gputui run -- CMD`")
            self.dir_fd = open_private_dir(path, os.geteuid())
        self.name = f"{self.pid}.json"

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
                    self._close_slice(current)
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
        """The threads as the threading module knows them now: new ones watched, ended ones let go."""
        self.unknown.clear()
        previous = self.threads
        threads = {}
        for thread in threading.enumerate():
            native = thread.native_id
            if thread.ident is None or native is None:
                continue
            kept = previous.pop(thread.ident, None)
            if kept is not None and kept.native == native:
                kept.name = thread.name
                threads[thread.ident] = kept
            else:
                threads[thread.ident] = Watched(native, thread.name)
        self.threads = threads

    def _sample(self, into: Slice) -> None:
        into.ticks += 1
        counts = into.counts
        now_ns = time.monotonic_ns()
        for ident, top in sys._current_frames().items():
            if ident == self.ident:
                continue
            watched = self.threads.get(ident)
            if watched is None:
                if ident in self.unknown:
                    continue
                self._refresh_threads()
                watched = self.threads.get(ident)
                if watched is None:
                    self.unknown.add(ident)
                    continue
            walked: list[int] = []
            codes: list[CodeType] = []
            frame: FrameType | None = top
            while frame is not None:
                code = frame.f_code
                codes.append(code)
                walked.append(id(code))
                walked.append(frame.f_lasti)
                frame = frame.f_back
            key = (watched.native, tuple(walked))
            running = watched.on_cpu(now_ns)
            seen = counts.get(key)
            if seen is None:
                counts[key] = [1, running, codes]  # its code objects keep their ids in the key theirs
                into.names[watched.native] = watched.name
            else:
                seen[0] += 1
                seen[1] += running

    def _close_slice(self, piece: Slice) -> None:
        """Its stacks' frames as published (the innermost MAX_DEPTH), looked up once; the code objects let go."""
        for (native, raw), (samples, running, codes) in piece.counts.items():
            frames = tuple(self._frame(code, raw[2 * n + 1]) for n, code in enumerate(codes[:MAX_DEPTH]))
            piece.frames.append((native, frames, samples, round(running, 2)))
        piece.counts = {}

    def _frame(self, code: CodeType, offset: int) -> PublishedFrame:
        key = (id(code), offset)
        cached = self.lines.get(key)
        if cached is not None and cached[0] is code:
            return cached[1]
        if len(self.lines) > 50_000:  # code made on the fly (exec, compiled graphs) must not pile up
            self.lines.clear()
        frame = (code.co_name[:MAX_NAME], code.co_filename[:MAX_NAME], _line(code, offset))
        self.lines[key] = (code, frame)
        return frame

    def record(self) -> dict[str, Any]:
        """What is published: the slices in the window, their frames in one table that the stacks index; the
        newest slices that fit the bounds (the newest at least in part)."""
        table: dict[PublishedFrame, int] = {}
        slices: list[dict[str, Any]] = []
        indices = 0
        for piece in reversed(self.slices):
            known = len(table)
            by_thread: dict[int, list[list[Any]]] = {}
            full = False
            for native, stack, samples, running in piece.frames:
                if indices + len(stack) > MAX_INDICES or len(table) + len(stack) > MAX_FRAMES:
                    full = True
                    break
                indices += len(stack)
                frames = [table.setdefault(frame, len(table)) for frame in stack]
                by_thread.setdefault(native, []).append([frames, samples, running])
            if full and slices:  # an older slice that does not fit: left out, its frames with it
                for frame in list(table)[known:]:
                    del table[frame]
                break
            threads = [
                {"tid": native, "name": piece.names.get(native, "")[:MAX_NAME], "stacks": stacks}
                for native, stacks in list(by_thread.items())[:MAX_THREADS]
            ]
            slices.append({"start": piece.start, "end": piece.end, "ticks": piece.ticks, "threads": threads})
            if full:
                break
        slices.reverse()
        return {
            "format": FORMAT,
            "version": VERSION,
            "pid": self.pid,
            "ppid": self.ppid,
            "start_ticks": self.start_ticks,
            "rank": _int_or_none(os.environ.get("RANK")),
            "local_rank": _int_or_none(os.environ.get("LOCAL_RANK")),
            "rate_hz": self.hz,
            "window_start": slices[0]["start"] if slices else None,
            "window_end": slices[-1]["end"] if slices else None,
            "written_at": time.time(),
            "frames": [list(frame) for frame in table],
            "slices": slices,
        }

    def _publish(self) -> None:
        data = json.dumps(self.record(), separators=(",", ":"), allow_nan=False).encode()
        if len(data) > MAX_RECORD_BYTES:  # names of the longest, in the most frames: this second is not published
            self.warn(ValueError(f"a record of {len(data)} bytes, over the {MAX_RECORD_BYTES} the reader takes"))
            return
        try:
            self._write(data)
        except FileNotFoundError:
            assert self.dir_fd is not None
            if os.fstat(self.dir_fd).st_nlink:
                raise
            self.stopping = True  # `gputui run` ended and took the directory away: nothing is read any more

    def _write(self, data: bytes) -> None:
        """The record written beside its place under a name no one can foresee (and created, never opened where
        it is: a hard link planted there is never written through), then renamed over the last one."""
        assert self.dir_fd is not None
        temporary = f".{self.name}.{secrets.token_hex(8)}.tmp"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(temporary, flags, 0o600, dir_fd=self.dir_fd)
        renamed = False
        try:
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
            finally:
                os.close(fd)
            if not self.stopping:  # the exit takes the record away: never put one back after it
                os.replace(temporary, self.name, src_dir_fd=self.dir_fd, dst_dir_fd=self.dir_fd)
                renamed = True
        finally:
            if not renamed:
                with contextlib.suppress(OSError):
                    os.unlink(temporary, dir_fd=self.dir_fd)

    def _sweep(self) -> None:
        """Remove the records of processes that are gone without removing theirs (killed, or left by
        os._exit): the directory would otherwise fill with one file per DataLoader worker ever started."""
        assert self.dir_fd is not None
        for name in os.listdir(self.dir_fd):
            match = RECORD_NAME.match(name)
            if match is not None and not os.path.exists(f"/proc/{match.group(1)}"):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(name, dir_fd=self.dir_fd)


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
