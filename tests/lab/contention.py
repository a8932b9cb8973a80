"""Another user's CPU-bound processes beside a lab job: the neighbours the contention case stages on purpose.

Each spinner is a shell's busy loop run as user `nobody` (setpriv drops root's ids before it starts), in a session of
its own so that it and nothing else is killed on the way out. They need root (to run as another user) and setpriv
(util-linux); else NoNeighbours says which is missing.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import subprocess
from collections.abc import Iterator

import psutil


class NoNeighbours(Exception):
    """This machine cannot start another user's processes; the message says why."""


SPIN = "trap - INT; while :; do :; done"  # a shell's busy loop: another user's work needs no Python of ours
OTHER_USER = "nobody"


# Started through a shell that prints its PID and exits at once, so that each spinner is nobody's child here:
# another user's work is not gputui's child, and gputui leaves its own children (py-spy, the probes) out of the
# busiest others. The spinner's own output goes nowhere, so the launcher's pipe ends when the launcher does.
LAUNCH = 'sh -c "$0" </dev/null >/dev/null 2>&1 & echo $!'
GONE_S = 10.0  # how long a killed spinner may take to be gone


@contextlib.contextmanager
def spinners(count: int) -> Iterator[tuple[int, ...]]:
    """`count` CPU-bound processes of user nobody, not children of this one, killed on the way out; their PIDs."""
    if os.geteuid() != 0:
        raise NoNeighbours("needs root: another user's processes are started with setpriv, which needs root")
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        raise NoNeighbours("needs setpriv (util-linux) to run the neighbours as another user")
    try:
        user = pwd.getpwnam(OTHER_USER)
    except KeyError:
        raise NoNeighbours(f"no user {OTHER_USER!r} here to run the neighbours as") from None
    ids = [f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}", "--clear-groups"]
    started: list[psutil.Process] = []
    try:
        for _ in range(count):
            launched = subprocess.run(
                [setpriv, *ids, "sh", "-c", LAUNCH, SPIN],
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                cwd="/",
                timeout=30,
                check=True,
            )
            started.append(psutil.Process(int(launched.stdout.strip())))
        yield tuple(p.pid for p in started)
    finally:
        for process in started:
            with contextlib.suppress(psutil.NoSuchProcess):
                process.kill()
        _, alive = psutil.wait_procs(started, timeout=GONE_S)
        alive = [p for p in alive if _running(p)]
        if alive:
            raise RuntimeError(f"the neighbours {[p.pid for p in alive]} outlived SIGKILL for {GONE_S:g} s")


def _running(process: psutil.Process) -> bool:
    """Not gone, and not a zombie waiting for the process that adopted it to reap it."""
    try:
        return process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
