"""What the tests of the in-process sampler share: a job started with the sampler on its path and its records in
the test's own directory, and a bounded wait for what it publishes."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

from gputui.commands.run import AGENT_DIR

T = TypeVar("T")
WAIT_S = 60.0  # a loaded machine starts torch slowly; the wait ends as soon as the state is there

# A job whose main thread spends all its time in one function of its own.
SPINNER = """
import time
def spin_here():
    end = time.monotonic() + 120
    while time.monotonic() < end:
        pass
print("ready", flush=True)
spin_here()
"""


def records_dir(runtime_dir: Path) -> Path:
    """The record directory the tests give a job, below `runtime_dir`, made as `gputui run` makes it (0700)."""
    directory = runtime_dir / "gputui-stacks"
    directory.mkdir(mode=0o700, exist_ok=True)
    return directory


def job_environment(runtime_dir: Path, **extra: str) -> dict[str, str]:
    """This process's environment, with the sampler first on PYTHONPATH and the records in `runtime_dir`'s
    record directory."""
    inherited = {name: value for name, value in os.environ.items() if not name.startswith("GPUTUI_STACKS_")}
    return {**inherited, "GPUTUI_STACKS_DIR": str(records_dir(runtime_dir)), "PYTHONPATH": AGENT_DIR, **extra}


def record_path(runtime_dir: Path, pid: int) -> Path:
    return runtime_dir / "gputui-stacks" / f"{pid}.json"


def until(read: Callable[[], T], done: Callable[[T], bool], what: str, timeout: float = WAIT_S) -> T:
    """`read()` once `done` holds for it; the test fails saying `what` it waited for, after `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        value = read()
        if done(value):
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"waited {timeout:.0f} s for {what}; last seen: {value!r}")
        time.sleep(0.05)


@contextmanager
def started(argv: list[str], environment: Mapping[str, str], **options: object) -> Iterator[subprocess.Popen[str]]:
    """A child process in a session of its own, with its stdout piped unless `options` say otherwise, killed (its
    whole session) and reaped at the end, its pipes closed."""
    process = subprocess.Popen(  # type: ignore[call-overload]
        argv, env=dict(environment), text=True, start_new_session=True, **{"stdout": subprocess.PIPE, **options}
    )
    try:
        yield process
    finally:
        if process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=30)
        for pipe in (process.stdout, process.stderr):
            if pipe is not None:
                pipe.close()


def python(*arguments: str) -> list[str]:
    return [sys.executable, *arguments]
