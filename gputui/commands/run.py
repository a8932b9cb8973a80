"""`gputui run -- CMD ...`: run a job with gputui's stack sampler inside it, for where ptrace is refused.

The job is this command's child, started with the sampler's directory first on PYTHONPATH: Python runs the
sitecustomize there at start-up, in the job and in every Python process it starts (torchrun's ranks, DataLoader
workers), and each publishes its stacks for the monitor to read by PID (gputui/sources/stacks/inprocess.py).

Where: a directory made afresh for the job (mkdtemp: 0700, a name no one can foresee) in /dev/shm or /tmp, whose
sticky bit keeps other users from renaming it away, never in a place the environment names (root may run this with
a user's XDG_RUNTIME_DIR or TMPDIR); its path goes to the job in GPUTUI_STACKS_DIR, inherited by the processes it
starts, and the monitor reads it from the job's /proc/PID/environ. It is removed once the job has exited.
Everything else is the job's own, as if it had been started without gputui: its stdin, stdout, stderr and other
inherited file descriptors, its environment, its exit status (128+N where signal N ended it), and the signals
sent to this command, passed on to it.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import stat
import sys
import tempfile
from collections.abc import Mapping, Sequence
from typing import Any

from gputui.agent import gputui_stacks_agent as agent
from gputui.argtypes import positive_int
from gputui.commands import common

AGENT_DIR = os.path.dirname(os.path.abspath(agent.__file__))
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)
# Python ignores these at start-up; a program started from a shell has them at their defaults (as subprocess's
# restore_signals gives them back).
RESET_IN_CHILD = (signal.SIGPIPE, signal.SIGXFSZ)
SI_KERNEL = 0x80  # si_code of a signal the kernel sent itself (see passed_on)
EXIT_CANNOT_EXECUTE = 126  # as a shell answers
EXIT_NOT_FOUND = 127
# Where the job's record directory may be made: places of fixed paths, made by the system, that no other user
# may write in or only with the sticky bit (then none may rename or remove what is not theirs).
STACKS_BASES = ("/dev/shm", "/tmp")
USAGE = "gputui run [-h] [--hz N] [-v] -- CMD [ARGS ...]"


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "run",
        help="run a command with gputui's stack sampler inside it (for where ptrace is refused)",
        usage=USAGE,
        description="Run CMD as this command's child with gputui's stack sampler inside it, in every Python process "
        "it starts, publishing what the job's threads do for the monitor to read by PID. The job keeps its stdin, "
        "stdout, stderr, environment and exit status; signals sent here are passed on to it.",
    )
    parser.add_argument(
        "--hz",
        type=positive_int,
        default=None,
        metavar="N",
        help=f"stack samples per second in the job (default {agent.DEFAULT_HZ:g}, at most {agent.MAX_HZ:g})",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="say on stderr what started and how it ended")
    parser.add_argument("command_line", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    words: list[str] = args.command_line
    if not words or words[0] != "--":
        return common.usage_error(f"the command goes after '--': {USAGE}")
    if args.hz is not None and args.hz > agent.MAX_HZ:
        return common.usage_error(f"--hz: at most {agent.MAX_HZ:g} samples per second, not {args.hz}")
    command = words[1:]
    if not command:
        print("gputui run: no command after '--'", file=sys.stderr)
        return EXIT_NOT_FOUND
    directory = records_dir()
    if directory is None:
        print(f"gputui run: no private place in {' or '.join(STACKS_BASES)}: its stacks go unread", file=sys.stderr)
    try:
        return supervise(command, job_environment(os.environ, args.hz, directory), verbose=args.verbose)
    finally:
        if directory is not None:
            shutil.rmtree(directory, ignore_errors=True)


def records_dir() -> str | None:
    """A directory made afresh for the job's stack records, only this user's; None where no safe place is."""
    for base in STACKS_BASES:
        with contextlib.suppress(OSError):
            mode, owner = (status := os.lstat(base)).st_mode, status.st_uid
            if stat.S_ISDIR(mode) and owner in {0, os.geteuid()} and (not mode & 0o022 or mode & stat.S_ISVTX):
                return tempfile.mkdtemp(prefix="gputui-stacks-", dir=base)
    return None


def job_environment(environ: Mapping[str, str], hz: int | None, directory: str | None) -> dict[str, str]:
    """The caller's environment, with the sampler's directory first on PYTHONPATH (the user's entries after it),
    the place of its records (none: the sampler does not start) and its rate where one was asked for."""
    environment = dict(environ)
    user_path = environment.get("PYTHONPATH")
    environment["PYTHONPATH"] = AGENT_DIR + (os.pathsep + user_path if user_path else "")
    environment.pop(agent.ENV_DIR, None)
    if directory is not None:
        environment[agent.ENV_DIR] = directory
    if hz is not None:
        environment["GPUTUI_STACKS_HZ"] = str(hz)
    return environment


def supervise(command: Sequence[str], environment: dict[str, str], *, verbose: bool = False) -> int:
    """Start `command` and wait for it, passing on the signals sent to this process; its exit status as a shell
    gives it.

    The signals are blocked here and taken with sigwaitinfo, which says who sent each; the child starts with
    this process's own mask, as it had before they were blocked."""
    watched = {*FORWARDED, signal.SIGCHLD}
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, watched)
    try:
        try:
            pid = os.posix_spawnp(command[0], list(command), environment, setsigmask=mask, setsigdef=RESET_IN_CHILD)
        except OSError as error:
            return _not_started(command[0], error)
        if verbose:
            where = environment.get(agent.ENV_DIR, "no place")
            print(f"gputui run: pid {pid} started, its stacks published in {where}", file=sys.stderr)
        status = _wait(pid, watched)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
    code = os.waitstatus_to_exitcode(status)
    code = 128 - code if code < 0 else code
    if verbose:
        print(f"gputui run: pid {pid} exited with status {code}", file=sys.stderr)
    return code


def _wait(pid: int, watched: set[signal.Signals]) -> int:
    """The child's wait status, once it has exited; the signals received meanwhile passed on to it."""
    while True:
        received = signal.sigwaitinfo(watched)
        if received.si_signo == signal.SIGCHLD:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done == pid:
                return status
        elif passed_on(received):
            with contextlib.suppress(ProcessLookupError):  # it exited meanwhile: its SIGCHLD is pending
                os.kill(pid, received.si_signo)


def passed_on(received: signal.struct_siginfo) -> bool:
    """Whether a signal received here is sent on to the job: not where the kernel sent it (SI_KERNEL), for the
    terminal's Ctrl-C, Ctrl-\\ and hangup go to its whole foreground process group, which the job shares."""
    return received.si_code != SI_KERNEL


def _not_started(program: str, error: OSError) -> int:
    if isinstance(error, FileNotFoundError):
        print(f"gputui run: {program}: command not found", file=sys.stderr)
        return EXIT_NOT_FOUND
    print(f"gputui run: {program}: cannot run it: {error.strerror or error}", file=sys.stderr)
    return EXIT_CANNOT_EXECUTE
