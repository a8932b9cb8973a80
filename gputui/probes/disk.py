"""The disk probe: sequential read throughput of the files under a directory, never writing.

Files are read with O_DIRECT where the file system allows it: past the page cache, so the figure is the
storage's even for data read a moment ago, and the cache is left as it was (dropping it, with
posix_fadvise(DONTNEED), would evict a running job's data). Where O_DIRECT is refused, and on file systems that
keep their files in memory (tmpfs), the read goes through the page cache, and whether the cache served it is
decided per file, before reading it, with mincore(2) on a read-only mapping: it tells exactly which pages were
already resident. A read the cache served more than a little of is not a disk figure: the result says so and
does not pass. Where mincore is not available the share is reported as unknown, never guessed.
"""

from __future__ import annotations

import ctypes
import errno
import mmap
import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from gputui.formatting import fmt_size
from gputui.probes.protocol import Progress, Result
from gputui.probes.reference import DISK_CACHED_PCT_MAX

DEFAULT_MAX_BYTES = 1024**3
DEFAULT_SECONDS = 30.0
_CHUNK = 8 * 1024**2
_LOW_BIT = bytes(b & 1 for b in range(256))  # mincore sets bit 0 per resident page; other bits are undefined
_PROGRESS_EVERY_S = 0.5
_O_NOATIME = getattr(os, "O_NOATIME", 0)
_O_DIRECT = getattr(os, "O_DIRECT", 0)
# O_DIRECT reads whole logical blocks (512 B or 4 KiB) into an aligned buffer; a page covers both.
_DIRECT_ALIGN = mmap.PAGESIZE
# File systems whose files live in memory: reading them, O_DIRECT or not, measures memory, not a disk.
_MEMORY_FS = frozenset({"tmpfs", "ramfs"})


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


def _open_read_only(path: Path, direct: bool) -> tuple[int, bool]:
    """The file opened read-only, and whether with O_DIRECT: asked for with `direct`, and refused (EINVAL) by
    file systems without it, which are then read through the page cache."""
    if direct and _O_DIRECT:
        try:
            return _open(path, os.O_RDONLY | _O_DIRECT), True
        except OSError as exc:
            if exc.errno != errno.EINVAL:
                raise
    return _open(path, os.O_RDONLY), False


def _open(path: Path, flags: int) -> int:
    """O_NOATIME keeps even the access time unwritten; the kernel allows it only to the file's owner."""
    try:
        return os.open(path, flags | _O_NOATIME)
    except PermissionError:
        if not _O_NOATIME:
            raise
        return os.open(path, flags)


def _read(fd: int, want: int, buffer: memoryview, direct: bool) -> int:
    """Reads up to `want` bytes from the start; O_DIRECT asks for whole aligned blocks, counted up to `want`."""
    done = 0
    with open(fd, "rb", buffering=0, closefd=False) as stream:
        while done < want:
            ask = min(len(buffer), want - done)
            if direct:
                ask = -(-ask // _DIRECT_ALIGN) * _DIRECT_ALIGN
            got = stream.readinto(buffer[:ask])
            if not got:
                break
            done += min(got, want - done)
    return done


def run_disk(
    root: Path, max_bytes: int, seconds: float, emit: Callable[[Progress], None], clock: Callable[[], float]
) -> Result:
    if not root.exists():
        raise DiskProbeError(f"no such directory: {root}")
    if not root.is_dir():
        raise DiskProbeError(f"not a directory: {root}")
    mount = _mount(root)
    in_memory = mount is not None and mount.fstype in _MEMORY_FS
    libc = _libc()
    buffer = memoryview(mmap.mmap(-1, _CHUNK))  # page-aligned, as O_DIRECT needs
    total = direct_bytes = 0
    read_s = 0.0
    cached: int | None = 0
    files = skipped = 0
    started = last_progress = clock()
    for path, size in regular_files(root):
        if total >= max_bytes or clock() - started >= seconds:
            break
        want = min(size, max_bytes - total)
        try:
            fd, read_direct = _open_read_only(path, direct=not in_memory)
        except OSError:
            skipped += 1
            continue
        try:
            # Past the cache, none of it came from there; through it, what was resident before the read did.
            resident = 0 if read_direct else resident_bytes(libc, fd, want)
            begin = clock()
            got = _read(fd, want, buffer, read_direct)
            read_s += clock() - begin
            cached = None if cached is None or resident is None else cached + min(resident, got)
            total += got
            direct_bytes += got if read_direct else 0
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
    return _disk_result(root, mount, total, read_s, cached, direct_bytes, files, skipped)


def _disk_result(
    root: Path,
    mount: Any,
    total: int,
    read_s: float,
    cached: int | None,
    direct_bytes: int,
    files: int,
    skipped: int,
) -> Result:
    mb_s = total / read_s / 1e6 if read_s > 0 else None
    speed = f"{mb_s:.0f} MB/s" if mb_s is not None else "too fast to time"
    head = f"{speed} sequential read of {fmt_size(total)} from {files} files under {root}"
    cached_pct = 100.0 * cached / total if cached is not None else None
    direct_pct = 100.0 * direct_bytes / total
    tail, ok = _judged(mount, cached_pct, direct_pct)
    counted = "its share counted with mincore(2) on each file before reading it"
    if direct_pct == 100.0:
        how = "read with O_DIRECT, past the page cache (left as it was for running jobs)"
    elif direct_pct == 0.0:
        how = f"read through the page cache (O_DIRECT not used on this file system); {counted}"
    else:
        how = f"{direct_pct:.0f}% read with O_DIRECT, past the page cache; the rest through it, {counted}"
    details = [how, "never writes: files opened read-only (O_NOATIME where the kernel allows it)"]
    if skipped:
        details.append(f"{skipped} unreadable files skipped")
    return Result(
        probe="disk",
        device=_label(mount),
        ok=ok,
        figures={
            "read_mb_s": mb_s,
            "bytes": float(total),
            "files": float(files),
            "read_seconds": read_s,
            "page_cache_pct": cached_pct,
            "direct_pct": direct_pct,
        },
        verdict=f"{head}; {tail}",
        details=tuple(details),
    )


def _judged(mount: Any, cached_pct: float | None, direct_pct: float) -> tuple[str, bool]:
    """Where the bytes came from, and whether the figure is the storage's: not where memory served them."""
    if mount is not None and mount.fstype in _MEMORY_FS:
        return f"not a disk measurement: {mount.fstype} keeps its files in memory, so this is memory speed", False
    if cached_pct is None:
        return "page-cache share unknown (mincore unavailable here)", True
    if cached_pct >= 90:
        return (
            f"not a disk measurement: {cached_pct:.0f}% was already in the page cache, so this is memory speed, "
            "not the storage's: point --path at data not read recently, or at a set larger than RAM"
        ), False
    if cached_pct > DISK_CACHED_PCT_MAX:
        return (
            f"not a disk measurement: {cached_pct:.0f}% came from the page cache, so the figure is faster than "
            "the storage alone: point --path at data not read recently"
        ), False
    if direct_pct == 100.0:
        return "read from storage with O_DIRECT, past the page cache", True
    return f"read from storage ({cached_pct:.0f}% was in the page cache)", True


def _mount(root: Path) -> Any:
    """The psutil partition holding `root` (the longest mount point above it), or None."""
    import psutil

    target = str(root.resolve())
    best = None
    for part in psutil.disk_partitions(all=True):
        mount = part.mountpoint
        inside = target == mount or target.startswith(mount.rstrip("/") + "/")
        if inside and (best is None or len(mount) > len(best.mountpoint)):
            best = part
    return best


def _label(mount: Any) -> str:
    """ "host: /dev/nvme0n1p2 (ext4) at /data": which file system the figure belongs to."""
    if mount is None:
        return "host"
    return f"host: {mount.device} ({mount.fstype}) at {mount.mountpoint}"
