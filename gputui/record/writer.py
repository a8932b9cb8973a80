"""Writing a recording: a thread owns the file so that no disk write ever runs on the UI event loop.

The monitor calls `put(snapshot)` and `put_event(event)`, which only enqueue. A full disk, a deleted directory
or the size limit stops the recording, never the monitor: the reason is left in `warning` for the UI to show.
Each tick reaches the OS at once (gzip: a sync flush every few seconds of ticks), so a killed process leaves a
readable file that lacks only its last seconds.

A recording holds every process's command line, and the stack frames a root monitor read from other users' jobs:
it is created readable by its owner alone (0600; 0640 where asked, for its group), and always as a new file, never
through a link another user planted where it goes: a symbolic link is refused, even with --force; an existing file
(or a hard link to one elsewhere) is unlinked, not truncated, and a new one created in its place.
"""

from __future__ import annotations

import gzip
import os
import stat
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

from gputui.diagnostics.findings import Finding
from gputui.diagnostics.verdict import Verdict
from gputui.model import JobActivity, Snapshot
from gputui.record.format import (
    RecordedEvent,
    RecordingError,
    dumps,
    event_to_dict,
    header_to_dict,
    tick_to_dict,
)
from gputui.record.queued import QueuedWriter

# A gzip stream is synced this often: each sync costs some compression, each gap is what a kill can lose.
GZIP_SYNC_SECONDS = 5.0
# Who may read a recording (the umask may narrow it further): its owner, and its group where asked.
PRIVATE_MODE = 0o600
GROUP_READABLE_MODE = 0o640


def is_gzip_path(path: Path) -> bool:
    return path.suffix == ".gz"


class RecordingFile:
    """The file itself, written synchronously: the writer thread's tool, and the benchmark's.

    Opening refuses an existing file unless `force`, and a symbolic link always, with a RecordingError that says so.
    """

    def __init__(self, path: str | Path, *, force: bool = False, group_readable: bool = False) -> None:
        self.path = Path(path)
        self.gzip = is_gzip_path(self.path)
        fd = _create(self.path, force=force, mode=GROUP_READABLE_MODE if group_readable else PRIVATE_MODE)
        self._raw: IO[bytes] = os.fdopen(fd, "wb")
        self._inode = os.fstat(self._raw.fileno()).st_ino
        self._out: IO[bytes] = self._raw
        if self.gzip:
            self._out = gzip.GzipFile(fileobj=self._raw, mode="wb", compresslevel=6)  # type: ignore[assignment]
        self.bytes_written = 0  # uncompressed

    @property
    def size(self) -> int:
        """Bytes in the file so far (compressed, for gzip; the part zlib still holds is not counted)."""
        return self._raw.tell()

    def write(self, record: dict[str, Any]) -> int:
        return self.write_line(dumps(record).encode())

    def write_line(self, line: bytes) -> int:
        """One line, already encoded, ending in a newline."""
        self._out.write(line)
        self.bytes_written += len(line)
        return len(line)

    def sync(self) -> None:
        """Hand everything written so far to the OS; for gzip, a Z_SYNC_FLUSH that ends on a byte boundary."""
        self._out.flush()
        if self._out is not self._raw:
            self._raw.flush()

    def vanished(self) -> bool:
        """True when the path no longer names this file (deleted, or its directory removed or replaced).

        Writes to such a file still succeed on POSIX and go nowhere, so this is checked, not caught.
        """
        try:
            return os.stat(self.path).st_ino != self._inode
        except OSError:
            return True

    def close(self) -> None:
        try:
            if self._out is not self._raw:
                self._out.close()  # writes the gzip trailer
        finally:
            self._raw.close()


def _create(path: Path, *, force: bool, mode: int) -> int:
    """A new file at `path`, created exclusively (O_EXCL, which never follows a link); with `force`, a regular file
    there is first unlinked, and a FIFO or a device of the user's (or root's) is written to in place."""
    if force:
        existing = _existing(path)
        if existing is not None and not stat.S_ISREG(existing.st_mode):
            return _open_in_place(path, existing)
        if existing is not None:
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
            except OSError as exc:
                raise RecordingError(f"cannot replace {path}: {exc.strerror or exc}") from exc
    try:
        return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
    except FileExistsError:
        if os.path.islink(path):
            raise _link_refused(path) from None
        if force:  # unlinked above, and created again since: another process writes there
            raise RecordingError(f"{path} was created again while gputui replaced it; choose another file") from None
        raise RecordingError(f"{path} already exists; choose another file or add --force to overwrite it") from None
    except FileNotFoundError:
        raise RecordingError(f"cannot create {path}: the directory {path.parent} does not exist") from None
    except IsADirectoryError:
        raise RecordingError(f"cannot record to {path}: it is a directory") from None
    except OSError as exc:
        raise RecordingError(f"cannot create {path}: {exc.strerror or exc}") from exc


def _existing(path: Path) -> os.stat_result | None:
    """What is at `path` itself (a link is not followed); None where nothing is, or it cannot be seen (creating the
    file then says why). A link or a directory is refused here."""
    try:
        found = os.lstat(path)
    except OSError:
        return None
    if stat.S_ISLNK(found.st_mode):
        raise _link_refused(path)
    if stat.S_ISDIR(found.st_mode):
        raise RecordingError(f"cannot record to {path}: it is a directory")
    return found


def _open_in_place(path: Path, existing: os.stat_result) -> int:
    """--force on a FIFO or a device (/dev/full, a pipe the user reads): written to as it is, where it is the user's
    or root's; another user's FIFO would hand them the recording. The file opened is checked again (fstat)."""
    trusted = {os.geteuid(), 0}
    if existing.st_uid in trusted:
        try:
            fd = os.open(path, os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError as exc:
            raise RecordingError(f"cannot record to {path}: {exc.strerror or exc}") from exc
        opened = os.fstat(fd)
        if opened.st_uid in trusted and not stat.S_ISREG(opened.st_mode):
            return fd
        os.close(fd)
    raise RecordingError(
        f"cannot record to {path}: it is another user's FIFO or device, which would hand them the recording"
    )


def _link_refused(path: Path) -> RecordingError:
    return RecordingError(
        f"{path} is a symbolic link: gputui never records through one, even with --force; remove it or choose "
        "another file"
    )


class RecordingWriter(QueuedWriter):
    """A recording written by its own thread (record/queued.py). Thread-safe to `put` from one producer; `close()`
    once at the end.

    Raises RecordingError at construction when the file cannot be created (exists without `force`, no such
    directory, no permission); later failures only set `warning` and stop the recording.
    """

    WHAT = "recording"

    def __init__(
        self,
        path: str | Path,
        *,
        interval_s: float,
        force: bool = False,
        group_readable: bool = False,
        max_mb: float | None = None,
        utc_offset_s: int | None = None,
    ) -> None:
        if interval_s <= 0:
            raise RecordingError(f"the sampling interval must be more than 0 s (got {interval_s})")
        if max_mb is not None and max_mb <= 0:
            raise RecordingError(f"the size limit must be more than 0 MB (got {max_mb})")
        self._file = RecordingFile(path, force=force, group_readable=group_readable)
        self.interval_s = interval_s
        self.max_bytes = None if max_mb is None else int(max_mb * 1_000_000)
        self._max_mb = max_mb
        self._utc_offset_s = utc_offset_s
        self._sync_every = max(1, int(GZIP_SYNC_SECONDS / interval_s)) if self._file.gzip else 1
        self._since_sync = 0
        self._header_written = False
        self._early_events: list[RecordedEvent] = []
        self._activities: dict[int, JobActivity] = {}  # what the ticks written so far carry (the writer's thread)
        self.ticks_written = 0
        self._start_thread("gputui-recorder")

    @property
    def path(self) -> Path:
        return self._file.path

    @property
    def bytes_written(self) -> int:
        """Uncompressed bytes written so far."""
        return self._file.bytes_written

    def _queued_tick(self, snapshot: Snapshot, active: Sequence[Finding] | None, verdict: Verdict | None) -> Snapshot:
        return snapshot  # the first one also writes the header, from its static part

    def _warn(self, message: str) -> None:
        self.warning = message

    def _failed(self, exc: Exception) -> str:
        return f"recording stopped: cannot write {self.path}: {getattr(exc, 'strerror', None) or exc}"

    def _end(self) -> None:
        if not self._stopped.is_set():
            self._finish()

    def _handle(self, item: Snapshot | RecordedEvent) -> None:
        if isinstance(item, RecordedEvent):
            if not self._header_written:
                self._early_events.append(item)
                return
            self._write_record(event_to_dict(item), sync=item.kind != "probe_progress")
            return
        if not self._header_written:
            header = header_to_dict(
                item.system,
                item.gpu_info,
                interval_s=self.interval_s,
                started_at=item.timestamp,
                utc_offset_s=self._utc_offset_s,
            )
            if not self._write_record(header, sync=False):
                return
            self._header_written = True
            for event in self._early_events:
                if not self._write_record(event_to_dict(event), sync=False):
                    return
            self._early_events.clear()
        self._since_sync += 1
        if self._write_record(tick_to_dict(item, self._activities), sync=self._since_sync >= self._sync_every):
            self.ticks_written += 1

    def _write_record(self, record: dict[str, Any], *, sync: bool) -> bool:
        """Write one line (and sync when asked); False when the size limit stopped the recording instead."""
        line = dumps(record).encode()
        if self.max_bytes is not None:
            projected = self._file.size + (0 if self._file.gzip else len(line))
            if projected > self.max_bytes:
                self._stop(
                    f"recording stopped at the {self._max_mb:g} MB limit (--record-max-mb): "
                    f"{self.path} holds {self.ticks_written} ticks"
                )
                return False
        self._file.write_line(line)
        if sync:
            self._file.sync()
            self._since_sync = 0
            if self._file.vanished():
                self._stop(f"recording stopped: {self.path} was deleted or its directory vanished")
                return False
        return True

    def _stop(self, message: str) -> None:
        self._warn(message)
        self._stopped.set()
        self._finish()

    def _finish(self) -> None:
        try:
            self._file.close()
        except OSError as exc:
            if self.warning is None:
                self._warn(f"recording: closing {self.path} failed: {exc.strerror or exc}")
