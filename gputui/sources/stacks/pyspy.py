"""Stacks read from outside the job by py-spy (ptrace, process_vm_readv), never pausing it.

py-spy runs twice at once over the same window: with `--idle` it writes every sample, without it only those in
which the thread was running, so the two together say how much of each stack was spent on a CPU. It writes
speedscope's JSON, never its raw format: that is one line per stack with the names as they are, so a function whose
name holds a newline forged a line of its own (a thread that never was, with any count). In JSON a name is a string
and nothing else: one profile per process and thread, named `Process 28570 Thread 28570 "MainThread"` (the numbers
first, the thread's name, its user's to choose, last), each sample a list of indices into one table of frames
`{name, file, line}`, outermost first, starting with py-spy's own frames for the processes above it and the thread
(`process 28563:"python t.py"`, `thread (28570): MainThread`, of no file), which are cut off. Names are cleaned
(gputui.foreign_text) where they enter.

It never runs blocking (that would stop the job at every sample), and never longer than the window and a few
seconds: then it is killed and reaped. Where it fails, its stderr says why (_failure).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from gputui.foreign_text import clean
from gputui.sources.stacks.permission import refusal_notice
from gputui.sources.stacks.samples import Frame, Stack, StackCount, StacksUnavailable, StackWindow, ThreadStacks

# What py-spy needs beyond the window itself: to attach (reading the interpreter's symbols) and to write its file.
STARTUP_S = 5.0

# A profile's name: its process and thread, then the thread's name in quotes (matched at its start only).
_PROFILE = re.compile(r'Process ([0-9]{1,10}) Thread (0x[0-9a-fA-F]{1,16}|[0-9]{1,10})(?: "|$)')
# How py-spy's own frames (of no file) are named: the processes above the thread (--subprocesses), the thread.
_OWN_FRAMES = {"process": "process ", "thread": "thread ("}

# py-spy's stderr, in its words, and what it means for this process.
_REFUSED = ("permission denied", "operation not permitted")
_NOT_PYTHON = ("failed to find python version", "failed to find a python interpreter", "not a python")
_ALIKE = "no python processes found"
_GONE = ("no such process", "check that the process is running", "failed to get process executable name")

# (pid, tid) -> (the thread's name, {stack: samples})
RawCounts = Mapping[tuple[int, int], tuple[str, Mapping[Stack, int]]]


def find_py_spy() -> str | None:
    """py-spy on PATH, or beside this interpreter (a virtual environment's bin/, not on PATH when not activated)."""
    found = shutil.which("py-spy")
    if found:
        return found
    beside = Path(sys.executable).parent / "py-spy"
    return str(beside) if beside.is_file() and os.access(beside, os.X_OK) else None


def parse_speedscope(text: str, pid: int) -> RawCounts:
    """py-spy's speedscope output as counts per thread; StacksUnavailable where it is not what py-spy writes."""
    try:
        data = json.loads(text)
        frames = [_frame(entry) for entry in data["shared"]["frames"]]
        counts: dict[tuple[int, int], tuple[str, dict[Stack, int]]] = {}
        for profile in data["profiles"]:
            owner, tid, name = _thread(profile["name"])
            thread = counts.setdefault((owner, tid), (name, {}))[1]
            for sample in profile["samples"]:
                stack = _stack([frames[index] for index in sample])
                thread[stack] = thread.get(stack, 0) + 1
    except (ValueError, KeyError, TypeError, IndexError, RecursionError) as error:
        why = f"{type(error).__name__}"
        raise StacksUnavailable(f"py_spy_failed: py-spy's output for process {pid} could not be read ({why})") from None
    return counts


def _thread(name: str) -> tuple[int, int, str]:
    """The process and thread a profile is of, and the thread's name, from the profile's name."""
    match = _PROFILE.match(name)
    if match is None:
        raise ValueError("a profile of no process's thread")
    return int(match.group(1)), int(match.group(2), 0), clean(name[match.end() :].removesuffix('"'))


def _frame(entry: dict[str, object]) -> tuple[Frame, str]:
    """One frame of py-spy's table, and whether it looks like py-spy's own frame of a "process" or a "thread"."""
    name, file, line = entry["name"], entry["file"], entry.get("line")
    if not isinstance(name, str) or not isinstance(file, str) or not isinstance(line, int | None):
        raise TypeError("a frame that is not py-spy's")
    own = next((kind for kind in _OWN_FRAMES if not file and name.startswith(_OWN_FRAMES[kind])), "")
    return Frame(function=clean(name), file=clean(file), line=line), own


def _stack(frames: list[tuple[Frame, str]]) -> Stack:
    """A sample's frames innermost first, less py-spy's own outermost ones: the processes', then the thread's.
    Past the thread's every frame is the job's, whatever it is named."""
    start = 0
    while start < len(frames) and frames[start][1] == "process":
        start += 1
    if start < len(frames) and frames[start][1] == "thread":
        start += 1
    return tuple(frame for frame, _ in reversed(frames[start:]))


def _function_key(stack: Stack) -> tuple[tuple[str, str], ...]:
    return tuple((frame.function, frame.file) for frame in stack)


def merge(every: RawCounts, running: RawCounts) -> tuple[ThreadStacks, ...]:
    """Each thread's stacks from the --idle run, with the samples the other run found it running in.

    The two runs sample at their own instants, so a thread running one function is caught at one line by one run and
    another line by the other: stacks are matched by their functions (lines left out), and the running samples of
    those functions shared out among their stacks in proportion to their samples."""
    threads = []
    for (owner, tid), (name, stacks) in every.items():
        ran: dict[tuple[tuple[str, str], ...], int] = defaultdict(int)
        for stack, samples in running.get((owner, tid), ("", {}))[1].items():
            ran[_function_key(stack)] += samples
        seen: dict[tuple[tuple[str, str], ...], int] = defaultdict(int)
        for stack, samples in stacks.items():
            seen[_function_key(stack)] += samples
        counts = []
        for stack, samples in stacks.items():
            key = _function_key(stack)
            share = min(1.0, ran[key] / seen[key])
            counts.append(StackCount(stack=stack, samples=samples, running=min(samples, round(samples * share))))
        counts.sort(key=lambda count: -count.samples)
        threads.append(ThreadStacks(pid=owner, tid=tid, name=name, stacks=tuple(counts)))
    return tuple(threads)


def _duration(window_s: float) -> int:
    """py-spy's duration is whole seconds: a window shorter than one second is one second."""
    return max(1, round(window_s))


def _record_command(py_spy: str, pid: int, window_s: float, rate_hz: int, output: Path, idle: bool) -> list[str]:
    # Full file names: the job's own source lines are read from them (source_line.py); classify shortens them.
    flags = ["--nonblocking", *(["--idle"] if idle else []), "--threads", "--subprocesses", "--full-filenames"]
    flags += ["--format", "speedscope"]
    timing = ["--rate", str(rate_hz), "--duration", str(_duration(window_s))]
    return [py_spy, "record", *flags, *timing, "--pid", str(pid), "-o", str(output)]


def _reason(pid: int, stderr: str, proc: Path) -> str:
    """What py-spy's failure means, in words that start with the reader's error key."""
    words = stderr.lower()
    if any(phrase in words for phrase in _REFUSED):
        return refusal_notice(pid, proc)
    if any(phrase in words for phrase in _GONE) or not (proc / str(pid)).exists():
        return f"gone: process {pid} is no longer running"
    if any(phrase in words for phrase in _NOT_PYTHON):
        exe = executable(pid, proc)
        if not looks_like_python(exe):
            return f"not_python: process {pid} ({exe or 'unknown'}) is not a Python interpreter: it has no Python stack"
        return f"py_spy_failed: py-spy found no Python interpreter in process {pid} ({exe}): starting, or exiting?"
    last = next((line.strip() for line in stderr.splitlines() if line.strip().startswith("Error")), "")
    return f"py_spy_failed: py-spy could not read process {pid}" + (f" ({last})" if last else "")


def executable(pid: int, proc: Path = Path("/proc")) -> str | None:
    """The name of the program process `pid` runs: its executable's, else its command name; None when gone. Either
    is the process owner's choice (a file name, prctl's PR_SET_NAME), in any bytes: cleaned, as it may be shown."""
    with contextlib.suppress(OSError):
        return clean(Path(os.readlink(proc / str(pid) / "exe")).name)
    with contextlib.suppress(OSError):
        return clean((proc / str(pid) / "comm").read_text(errors="replace").strip())
    return None


def looks_like_python(name: str | None) -> bool:
    """python, python3.11, pypy3, a virtual environment's python: an interpreter py-spy should read."""
    return name is not None and re.match(r"(python|pypy)(\d+(\.\d+)*)?[a-z]?$", name) is not None


def _run(commands: Sequence[list[str]], folder: Path, timeout_s: float, pid: int) -> tuple[bool, str]:
    """Run py-spy's commands at once, each bounded by `timeout_s`: whether all of them succeeded, and what they said
    on stderr. Killed and reaped on any error, the timeout's included."""
    processes: list[subprocess.Popen[bytes]] = []
    errors = [folder / f"{command[1]}-{index}.err" for index, command in enumerate(commands)]
    try:
        for command, error in zip(commands, errors, strict=True):
            with error.open("wb") as stderr:
                processes.append(
                    subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=stderr)
                )
        deadline = time.monotonic() + timeout_s
        for process in processes:
            process.wait(timeout=max(0.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        raise StacksUnavailable(f"py_spy_failed: py-spy did not finish reading process {pid} in time") from None
    except OSError as error:
        raise StacksUnavailable(f"py_spy_failed: py-spy could not be started ({error.strerror})") from None
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
        for process in processes:
            process.wait()
    said = "\n".join(error.read_text(errors="replace") for error in errors)
    return all(process.returncode == 0 for process in processes), said


def _failure(py_spy: str, pid: int, stderr: str, folder: Path, proc: Path) -> StacksUnavailable:
    """Why the recording failed. With --subprocesses, py-spy words a refused ptrace and a process that is no Python
    alike ("No python processes found in process N or any of its subprocesses"): one dump of the process alone,
    without them, tells which."""
    if _ALIKE in stderr.lower():
        _, stderr = _run([[py_spy, "dump", "--nonblocking", "--pid", str(pid)]], folder, STARTUP_S, pid)
    return StacksUnavailable(_reason(pid, stderr, proc))


def record(
    pid: int,
    window_s: float = 4.0,
    rate_hz: int = 20,
    *,
    py_spy: str | None = None,
    proc: Path = Path("/proc"),
    clock: Callable[[], float] = time.time,
) -> StackWindow:
    """Sample process `pid` and its child processes for about `window_s`; raises StacksUnavailable (its message
    starting with the reader's error key) when py-spy cannot. Blocks for the window: never on a UI loop."""
    binary = py_spy or find_py_spy()
    if binary is None:
        raise StacksUnavailable("no_py_spy: py-spy is not installed here (pip install py-spy, or gputui run -- CMD)")
    with tempfile.TemporaryDirectory(prefix="gputui-stacks-") as name:
        folder = Path(name)
        every, running = folder / "every.json", folder / "running.json"
        commands = [
            _record_command(binary, pid, window_s, rate_hz, output, output == every) for output in (every, running)
        ]
        succeeded, stderr = _run(commands, folder, _duration(window_s) + STARTUP_S, pid)
        if not succeeded or not every.exists():
            raise _failure(binary, pid, stderr, folder, proc)
        samples = parse_speedscope(every.read_text(errors="replace"), pid)
        ran = parse_speedscope(running.read_text(errors="replace"), pid) if running.exists() else {}
    return StackWindow(
        source="py-spy",
        pid=pid,
        taken_at=clock(),
        window_s=float(_duration(window_s)),
        threads=merge(samples, ran),
    )
