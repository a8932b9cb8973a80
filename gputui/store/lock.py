"""One recorder per store: an flock on DIR/recorder.lock held for the recorder's life, with its PID inside so that
the second one can say who holds it. The kernel drops the lock when the holder dies (kill -9 included), so no stale
lock outlives a recorder; a stale PID in the file is ignored, since readers ask the kernel who holds the lock."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
from pathlib import Path

from gputui.store.errors import StoreError, StoreLocked

LOCK_NAME = "recorder.lock"
_MAX_PID_TEXT = 32


class StoreLock:
    """The lock, taken at construction (StoreLocked where another process holds it); `release()` once."""

    def __init__(self, directory: Path, dir_fd: int, mode: int) -> None:
        self.directory = directory
        flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
        try:
            fd = os.open(LOCK_NAME, flags, mode, dir_fd=dir_fd)
        except OSError as exc:
            raise StoreError(f"cannot open the lock {directory / LOCK_NAME}: {exc.strerror or exc}") from None
        try:
            found = os.fstat(fd)
            if not stat.S_ISREG(found.st_mode) or found.st_uid not in (os.geteuid(), 0):
                raise StoreError(f"{directory / LOCK_NAME} is not a file of this user's or root's: remove it")
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                    raise StoreError(f"cannot lock {directory / LOCK_NAME}: {exc.strerror or exc}") from None
                raise StoreLocked(directory, _pid_in(fd)) from None
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        except BaseException:
            os.close(fd)
            raise
        self._fd: int | None = fd

    def release(self) -> None:
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)  # the PID of a recorder that ended says nothing
        os.close(fd)


def _pid_in(fd: int) -> int | None:
    try:
        text = os.pread(fd, _MAX_PID_TEXT, 0).decode("ascii").strip()
        return int(text) if text.isdigit() else None
    except (OSError, UnicodeDecodeError, ValueError):
        return None


def recorder_pid(directory: Path) -> int | None:
    """The PID of the recorder holding the store's lock; None when none does. Asks /proc/locks (which takes no
    lock, so a reader never delays a recorder that starts); where that cannot be read, the PID in the file when
    that process lives."""
    path = directory / LOCK_NAME
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        found = os.fstat(fd)
        if not stat.S_ISREG(found.st_mode):
            return None
        written = _pid_in(fd)
    finally:
        os.close(fd)
    holders = _flock_holders(found.st_dev, found.st_ino)
    if holders is None:
        return written if written is not None and _alive(written) else None
    if not holders:
        return None
    return written if written in holders else holders[0]


def _flock_holders(dev: int, ino: int) -> list[int] | None:
    """PIDs /proc/locks lists as holding an flock on the inode; None where /proc/locks cannot be read."""
    try:
        with open("/proc/locks", encoding="ascii", errors="replace") as locks:
            lines = locks.read(1 << 20).splitlines()
    except OSError:
        return None
    wanted = f"{os.major(dev):02x}:{os.minor(dev):02x}:{ino}"
    holders = []
    for line in lines:
        parts = line.split()
        if "->" in parts or len(parts) < 6 or parts[1] != "FLOCK":
            continue
        if parts[5] == wanted and parts[4].isdigit():
            holders.append(int(parts[4]))
    return holders


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
