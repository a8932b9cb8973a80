"""The disk probe: sequential read throughput of the files under a directory, never writing.

Whether the page cache served the read is decided per file, before reading it, with mincore(2) on a read-only
mapping: it tells exactly which pages were already resident, for local and network file systems alike. Timing
two passes instead would need the data read twice and misjudges sets larger than RAM. Where mincore is not
available the share is reported as unknown, never guessed.
"""

from __future__ import annotations

import ctypes
import mmap
import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

from gputui.formatting import fmt_size
from gputui.probes.protocol import Progress, Result

DEFAULT_MAX_BYTES = 1024**3
DEFAULT_SECONDS = 30.0
_CHUNK = 8 * 1024**2
_LOW_BIT = bytes(b & 1 for b in range(256))  # mincore sets bit 0 per resident page; other bits are undefined
_PROGRESS_EVERY_S = 0.5


class DiskProbeError(ValueError):
    """The directory cannot be probed (missing, not a directory, nothing readable in it)."""


def _libc() -> ctypes.CDLL | None:
    try:
        handle = ctypes.CDLL(None, use_errno=True)
        handle.mmap.restype = ctypes.c_void_p
        handle.mmap.argtypes = [
            ctypes.c_void_p,
            ctypes.c_size_t,
            ctypes.c_int,
            ctypes.c_int,
            ctypes.c_int,
            ctypes.c_long,
        ]
        handle.mincore.restype = ctypes.c_int
        handle.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_ubyte)]
        handle.munmap.restype = ctypes.c_int
        handle.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    except (OSError, AttributeError):
        return None
    return handle


def resident_bytes(libc: ctypes.CDLL | None, fd: int, length: int) -> int | None:
    """How many of the first `length` bytes of an open file are in the page cache now; None if unknowable."""
    if libc is None or length <= 0:
        return None
    lib = libc
    addr = lib.mmap(None, length, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
    if addr is None or addr == ctypes.c_void_p(-1).value:
        return None
    try:
        pages = (length + mmap.PAGESIZE - 1) // mmap.PAGESIZE
        vec = (ctypes.c_ubyte * pages)()
        if lib.mincore(ctypes.c_void_p(addr), length, vec) != 0:
            return None
        resident_pages = bytes(vec).translate(_LOW_BIT).count(1)
    finally:
        lib.munmap(ctypes.c_void_p(addr), length)
    return min(length, resident_pages * mmap.PAGESIZE)


def regular_files(root: Path) -> Iterator[tuple[Path, int]]:
    """Non-empty regular files under `root` in a stable order, each inode once; file symlinks are followed
    (dataset caches are made of them), directory symlinks are not (no loops)."""
    seen: set[tuple[int, int]] = set()
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames.sort()
        for name in sorted(filenames):
            path = Path(dirpath, name)
            try:
                info = path.stat()
            except OSError:
                continue
            key = (info.st_dev, info.st_ino)
            if stat.S_ISREG(info.st_mode) and info.st_size > 0 and key not in seen:
                seen.add(key)
                yield path, info.st_size


def _open_read_only(path: Path) -> int:
    """O_NOATIME keeps even the access time unwritten; the kernel allows it only to the file's owner."""
    noatime = getattr(os, "O_NOATIME", 0)
    try:
        return os.open(path, os.O_RDONLY | noatime)
    except PermissionError:
        if not noatime:
            raise
        return os.open(path, os.O_RDONLY)


def run_disk(
    root: Path, max_bytes: int, seconds: float, emit: Callable[[Progress], None], clock: Callable[[], float]
) -> Result:
    if not root.exists():
        raise DiskProbeError(f"no such directory: {root}")
    if not root.is_dir():
        raise DiskProbeError(f"not a directory: {root}")
    libc = _libc()
    buffer = memoryview(bytearray(_CHUNK))
    total = 0
    read_s = 0.0
    cached: int | None = 0
    files = skipped = 0
    started = last_progress = clock()
    for path, size in regular_files(root):
        if total >= max_bytes or clock() - started >= seconds:
            break
        want = min(size, max_bytes - total)
        try:
            fd = _open_read_only(path)
        except OSError:
            skipped += 1
            continue
        try:
            resident = resident_bytes(libc, fd, want)
            cached = None if cached is None or resident is None else cached + resident
            begin = clock()
            with open(fd, "rb", buffering=0, closefd=False) as stream:
                left = want
                while left > 0:
                    got = stream.readinto(buffer[: min(_CHUNK, left)])
                    if not got:
                        break
                    left -= got
                    total += got
            read_s += clock() - begin
            files += 1
        except OSError:
            skipped += 1
        finally:
            os.close(fd)
        now = clock()
        if now - last_progress >= _PROGRESS_EVERY_S:
            last_progress = now
            fraction = max(total / max_bytes, (now - started) / seconds)
            mb_s = total / read_s / 1e6 if read_s > 0 else None
            emit(Progress("disk", min(1.0, fraction), mb_s, "MB/s", f"{fmt_size(total)} from {files} files"))
    if total == 0:
        raise DiskProbeError(f"no readable non-empty files under {root}")
    return _disk_result(root, total, read_s, cached, files, skipped)


def _disk_result(root: Path, total: int, read_s: float, cached: int | None, files: int, skipped: int) -> Result:
    mb_s = total / read_s / 1e6 if read_s > 0 else None
    speed = f"{mb_s:.0f} MB/s" if mb_s is not None else "too fast to time"
    head = f"{speed} sequential read of {fmt_size(total)} from {files} files under {root}"
    cached_pct = 100.0 * cached / total if cached is not None else None
    if cached_pct is None:
        tail = "page-cache share unknown (mincore unavailable here)"
    elif cached_pct >= 90:
        tail = (
            f"{cached_pct:.0f}% was already in the page cache, so this is memory speed, not the storage's: "
            "point --path at data not read recently, or at a set larger than RAM"
        )
    elif cached_pct <= 10:
        tail = f"read from storage ({cached_pct:.0f}% was in the page cache)"
    else:
        tail = f"{cached_pct:.0f}% came from the page cache, the rest from storage"
    details = [
        "page cache: mincore(2) on each file before reading it counts the pages already resident",
        "never writes: files opened read-only (O_NOATIME where the kernel allows it)",
    ]
    if skipped:
        details.append(f"{skipped} unreadable files skipped")
    return Result(
        probe="disk",
        device=mount_label(root),
        ok=True,
        figures={
            "read_mb_s": mb_s,
            "bytes": float(total),
            "files": float(files),
            "read_seconds": read_s,
            "page_cache_pct": cached_pct,
        },
        verdict=f"{head}; {tail}",
        details=tuple(details),
    )


def mount_label(root: Path) -> str:
    """ "host: /dev/nvme0n1p2 (ext4) at /data": which file system the figure belongs to."""
    import psutil

    target = str(root.resolve())
    best = None
    for part in psutil.disk_partitions(all=True):
        mount = part.mountpoint
        inside = target == mount or target.startswith(mount.rstrip("/") + "/")
        if inside and (best is None or len(mount) > len(best.mountpoint)):
            best = part
    if best is None:
        return "host"
    return f"host: {best.device} ({best.fstype}) at {best.mountpoint}"
