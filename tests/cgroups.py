"""Real cgroups the tests make (as root): removing one once the processes in it are gone."""

from __future__ import annotations

import time
from pathlib import Path


def remove_group(path: Path, seconds: float = 10.0) -> None:
    """Remove a cgroup directory; the kernel refuses while it holds a process, so a killed one's group is tried
    again until it has been reaped, for at most `seconds`. One already gone is fine."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            path.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            if time.monotonic() > deadline:
                return
            time.sleep(0.1)
