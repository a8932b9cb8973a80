"""Reading a small file whose contents decide what gputui does (its config, which may run a command; the file that
holds a webhook's URL), only where no one but those it trusts could have written it.

gputui is often run as root on a shared machine, where a path can lead to a file another user controls: a $HOME kept
by `sudo -E`, a variable naming a file in /tmp. The checks are made on the file opened (fstat), not on its path,
so that the file cannot be swapped between the check and the read; links are followed, for the file they lead to is
what is checked. A FIFO or a device is refused (opened without blocking), and more than `max_bytes` is never read.
"""

from __future__ import annotations

import os
import pwd
import stat
from dataclasses import dataclass
from pathlib import Path

# Each mode bit a Trust may forbid, and its words in a refusal.
_BITS = (
    (stat.S_IWGRP, "writable by its group"),
    (stat.S_IWOTH, "writable by others"),
    (stat.S_IROTH, "readable by others"),
)


class UntrustedFile(ValueError):
    """The file is not one gputui may take: says why (its owner, its mode, its kind, its size)."""


@dataclass(frozen=True, slots=True)
class Trust:
    """Whose file is taken (`owners`, uids; None: anyone's), which mode bits must be clear (`forbidden`), and `why`,
    which ends each refusal so that the reader learns what to change."""

    owners: frozenset[int] | None
    forbidden: int
    why: str


def read_trusted(path: Path, trust: Trust, max_bytes: int) -> bytes:
    """The bytes of the file at `path`; UntrustedFile when `trust` refuses it or it holds more than `max_bytes`.
    OSError (no such file, no permission) is the caller's to word."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK | os.O_NOCTTY)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise UntrustedFile("not a regular file")
        if trust.owners is not None and info.st_uid not in trust.owners:
            raise UntrustedFile(f"it is owned by {user_name(info.st_uid)}: {trust.why}")
        wrong = [words for bit, words in _BITS if info.st_mode & trust.forbidden & bit]
        if wrong:
            raise UntrustedFile(f"it is {' and '.join(wrong)} (mode {stat.S_IMODE(info.st_mode):o}): {trust.why}")
        data = _read_at_most(fd, max_bytes + 1)
    finally:
        os.close(fd)
    if len(data) > max_bytes:
        raise UntrustedFile(f"it is larger than {max_bytes // 1024} KiB, more than such a file ever holds")
    return data


def _read_at_most(fd: int, limit: int) -> bytes:
    parts: list[bytes] = []
    left = limit
    while left > 0:
        part = os.read(fd, min(left, 1 << 16))
        if not part:
            break
        parts.append(part)
        left -= len(part)
    return b"".join(parts)


def user_name(uid: int) -> str:
    """The user's name and uid ("nobody (uid 65534)"), or the uid alone where the password database lacks it."""
    try:
        return f"{pwd.getpwuid(uid).pw_name} (uid {uid})"
    except KeyError:
        return f"uid {uid}"


def first_line(text: str) -> str:
    """The secret a file holds: its first line that is not blank, stripped ("" where there is none), as Kubernetes
    mounts a secret and as `echo URL > file` writes one."""
    stripped = text.strip()
    return stripped.splitlines()[0].strip() if stripped else ""
