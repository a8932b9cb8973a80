"""When the user last looked at a history store: the start of the monitor's "since you looked" line.

A small per-user file, $XDG_STATE_HOME/gputui/last-seen.json, maps a store's directory to the time the monitor
showing it ended. It is written on exit, whole (a new file renamed over the old one, so a reader never sees half
of it), inside a directory gputui opened without following a link and found to be the user's own: gputui runs as
root, and a $HOME or $XDG_STATE_HOME kept by `sudo -E` may lead into a directory another user controls.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import stat
from collections.abc import Mapping
from pathlib import Path

from gputui.trusted_file import Trust, UntrustedFile, read_trusted

FILE_NAME = "last-seen.json"
# Never looked at this store: the line covers the last 12 hours.
NEVER_SEEN_S = 12 * 3600.0
MAX_BYTES = 64 * 1024
# Stores remembered at most, the most recently looked at: the file stays small whatever the user opens.
MAX_STORES = 32
OWN = Trust(
    owners=frozenset({os.geteuid()}),
    forbidden=stat.S_IWGRP | stat.S_IWOTH,
    why="gputui takes when you last looked only from a file of yours that no one else may write",
)


def last_seen_path(env: Mapping[str, str] = os.environ) -> Path:
    """$XDG_STATE_HOME/gputui/last-seen.json, ~/.local/state where the variable is not set (or not absolute)."""
    state = env.get("XDG_STATE_HOME", "")
    base = Path(state) if os.path.isabs(state) else Path(env.get("HOME") or Path.home()) / ".local" / "state"
    return base / "gputui" / FILE_NAME


def _key(store: Path) -> str:
    return os.path.abspath(store)


def _read(path: Path) -> dict[str, float]:
    """The map as stored; an absent, unreadable, untrusted or malformed file is an empty one."""
    try:
        data = json.loads(read_trusted(path, OWN, MAX_BYTES))
    except (OSError, UntrustedFile, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {
        str(key): float(value)
        for key, value in data.items()
        if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    }


def last_seen(store: Path, path: Path | None = None) -> float | None:
    """When the monitor showing `store` last ended; None: never (or the file cannot be trusted)."""
    return _read(path or last_seen_path()).get(_key(store))


def since_when(store: Path, now: float, path: Path | None = None) -> float:
    """Where the since line starts: when the user last looked, else 12 hours ago; never in the future."""
    seen = last_seen(store, path)
    return min(now, seen) if seen is not None else now - NEVER_SEEN_S


def _own_directory(directory: Path) -> int:
    """The directory opened without following a link, created (0700) where missing; it must be the user's."""
    directory.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    with contextlib.suppress(FileExistsError):
        os.mkdir(directory, 0o700)
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    info = os.fstat(fd)
    if info.st_uid != os.geteuid() or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        os.close(fd)
        raise PermissionError(f"{directory} is not yours alone: when you last looked is not written there")
    return fd


def remember(store: Path, t: float, path: Path | None = None) -> str | None:
    """Note that the user looked at `store` until `t`; None when written, else why not (a sentence)."""
    path = path or last_seen_path()
    seen = _read(path)
    seen[_key(store)] = t
    kept = dict(sorted(seen.items(), key=lambda item: -item[1])[:MAX_STORES])
    body = json.dumps(kept, indent=1, sort_keys=True).encode()
    temporary = f".{FILE_NAME}.{os.getpid()}.tmp"
    try:
        directory = _own_directory(path.parent)
    except OSError as exc:
        return f"cannot note when you last looked ({path.parent}): {exc.strerror or exc}"
    try:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary, dir_fd=directory)  # left by a process of this PID that died mid-write
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(temporary, flags, 0o600, dir_fd=directory)
        try:
            os.write(fd, body)
        finally:
            os.close(fd)
        os.replace(temporary, path.name, src_dir_fd=directory, dst_dir_fd=directory)
    except OSError as exc:
        return f"cannot note when you last looked ({path}): {exc.strerror or exc}"
    finally:
        os.close(directory)
    return None
