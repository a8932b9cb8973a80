"""The store's directory, opened without trusting what is in it: gputui writes here as root on shared machines, so
the directory must be ours (or root's), no symbolic link, and not writable by other users; every file in it is
created new (O_EXCL|O_NOFOLLOW) through a descriptor of its checked directory, so no link planted in it redirects
a write."""

from __future__ import annotations

import contextlib
import json
import os
import stat
from pathlib import Path
from typing import Any

from gputui import __version__
from gputui.store.errors import NewerStore, StoreError
from gputui.store.lock import LOCK_NAME

STORE_FORMAT = 1
STORE_FILE = "STORE"
TICKS_DIR = "ticks"
MINUTES_DIR = "minutes"
PRIVATE_DIR_MODE = 0o700
SHARED_DIR_MODE = 0o755
PRIVATE_FILE_MODE = 0o600
SHARED_FILE_MODE = 0o644
_MAX_STORE_FILE = 1 << 16
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def read_store(directory: Path, dir_fd: int | None = None) -> dict[str, Any] | None:
    """What DIR/STORE says (its "format" an int this gputui reads); None where there is no such file; NewerStore
    where the format is newer than ours, StoreError where it is not a STORE file gputui wrote."""
    path = directory / STORE_FILE
    try:
        fd = os.open(
            STORE_FILE if dir_fd is not None else path,
            os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK,
            dir_fd=dir_fd,
        )
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise StoreError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise StoreError(f"{path} is not a regular file: this is not a gputui history store")
        text = os.read(fd, _MAX_STORE_FILE)
    finally:
        os.close(fd)
    try:
        data = json.loads(text)
        found = data["format"]
        if not isinstance(data, dict) or not isinstance(found, int) or isinstance(found, bool):
            raise TypeError
    except (ValueError, KeyError, TypeError):
        raise StoreError(f"{path} is not a gputui STORE file: this is not a gputui history store") from None
    if found > STORE_FORMAT:
        raise NewerStore(directory, found, STORE_FORMAT)
    return data


def check_directory(fd: int, path: Path) -> None:
    """StoreError unless the opened directory is ours or root's and not writable by other users."""
    found = os.fstat(fd)
    if found.st_uid not in (os.geteuid(), 0):
        raise StoreError(f"{path} belongs to another user (uid {found.st_uid}): gputui keeps history only in its own")
    if found.st_mode & stat.S_IWOTH:
        raise StoreError(f"{path} is writable by every user: make it private (chmod o-w) or choose another --store")


def open_directory(path: Path, dir_fd: int | None = None) -> int:
    """A descriptor of the directory at `path` (relative to `dir_fd` where given), refusing a symbolic link."""
    try:
        return os.open(path.name if dir_fd is not None else path, _DIR_FLAGS, dir_fd=dir_fd)
    except OSError as exc:
        if os.path.islink(path):
            raise StoreError(f"{path} is a symbolic link: gputui never keeps history through one") from None
        raise StoreError(f"cannot open {path}: {exc.strerror or exc}") from None


class StoreDirectory:
    """DIR, created where missing and checked where not, with its tick and minute subdirectories; the writer's.
    Raises NewerStore for a store of a newer format, StoreError for a directory unsafe to write or not a store."""

    def __init__(self, path: Path, *, shared: bool) -> None:
        self.path = path
        self.dir_mode = SHARED_DIR_MODE if shared else PRIVATE_DIR_MODE
        self.file_mode = SHARED_FILE_MODE if shared else PRIVATE_FILE_MODE
        self._fds: dict[str, int] = {}
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            with contextlib.suppress(FileExistsError):
                os.mkdir(path, self.dir_mode)
        except OSError as exc:
            raise StoreError(f"cannot create {path}: {exc.strerror or exc}") from None
        try:
            self.fd = open_directory(path)
            self._fds[""] = self.fd
            check_directory(self.fd, path)
            self._identity = _identity(self.fd)
            if read_store(path, self.fd) is None:  # NewerStore before anything is written
                self.check_new_store()
            for sub in (TICKS_DIR, MINUTES_DIR):
                with contextlib.suppress(FileExistsError):
                    os.mkdir(sub, self.dir_mode, dir_fd=self.fd)
                self._fds[sub] = open_directory(path / sub, self.fd)
                check_directory(self._fds[sub], path / sub)
        except OSError as exc:
            self.close()
            raise StoreError(f"cannot create {path}: {exc.strerror or exc}") from None
        except StoreError:
            self.close()
            raise

    def write_store_file(self, extra: dict[str, Any]) -> None:
        """DIR/STORE written anew (our format, and `extra`: what readers should know of this recorder), through a
        new file renamed over it: a reader sees the old file or the new, whole. Only the lock's holder calls it."""
        text = json.dumps({"format": STORE_FORMAT, "written_by": f"gputui {__version__}", **extra}) + "\n"
        temporary = f".{STORE_FILE}.new"  # only the lock's holder writes it: one name, no leftovers
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary, dir_fd=self.fd)
        fd = self.create("", temporary)
        try:
            os.write(fd, text.encode())
        finally:
            os.close(fd)
        os.rename(temporary, STORE_FILE, src_dir_fd=self.fd, dst_dir_fd=self.fd)

    def check_new_store(self) -> None:
        """StoreError where DIR has no STORE yet but holds files of its own: `--store ~` must not turn a home
        directory into a store."""
        ours = {TICKS_DIR, MINUTES_DIR, LOCK_NAME, STORE_FILE, f".{STORE_FILE}.new"}
        others = sorted(name for name in self.names("") if name not in ours)
        if others:
            raise StoreError(
                f"{self.path} is not a gputui history store (no STORE file) and holds other files ({others[0]}, ...): "
                "choose an empty or new directory"
            )

    def create(self, sub: str, name: str) -> int:
        """A new file `name` in the subdirectory `sub` ("" for DIR), open for appending; FileExistsError where
        something is there already, other OSErrors as they come."""
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        return os.open(name, flags, self.file_mode, dir_fd=self._fds[sub])

    def names(self, sub: str) -> list[str]:
        return os.listdir(self._fds[sub])

    def size(self, sub: str, name: str) -> int:
        """The bytes of the regular file `name`; 0 for anything else (a subdirectory, a link)."""
        found = os.stat(name, dir_fd=self._fds[sub], follow_symlinks=False)
        return found.st_size if stat.S_ISREG(found.st_mode) else 0

    def unlink(self, sub: str, name: str) -> None:
        os.unlink(name, dir_fd=self._fds[sub])

    def vanished(self) -> bool:
        """True when DIR no longer names the directory written to (deleted, moved, replaced)."""
        try:
            return _identity_of(os.stat(self.path, follow_symlinks=False)) != self._identity
        except OSError:
            return True

    def close(self) -> None:
        for fd in self._fds.values():
            with contextlib.suppress(OSError):
                os.close(fd)
        self._fds.clear()


def _identity(fd: int) -> tuple[int, int]:
    return _identity_of(os.fstat(fd))


def _identity_of(found: os.stat_result) -> tuple[int, int]:
    return found.st_dev, found.st_ino
