"""The disk probe in-process: bounded reads, nothing written, O_DIRECT past the page cache where the file system
allows it, and where not the page-cache share measured by mincore; a read the cache served does not pass."""

from __future__ import annotations

import errno
import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from gputui.probes import disk
from gputui.probes.disk import DiskProbeError, _libc, regular_files, resident_bytes, run_disk
from gputui.probes.protocol import Progress

KIB = 1024


class TickClock:
    """Each reading advances 0.3 s, so progress and the time cap are deterministic."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        self.now += 0.3
        return self.now


@pytest.fixture(autouse=True)
def on_ext4(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same file system on every machine (a CI's /tmp may be tmpfs); a test names another where it needs."""
    on(monkeypatch, "ext4")


def on(monkeypatch: pytest.MonkeyPatch, fstype: str) -> None:
    part = SimpleNamespace(device="/dev/test0", mountpoint="/", fstype=fstype)
    monkeypatch.setattr(disk, "_mount", lambda root: part)


def direct_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """A file system without O_DIRECT (FUSE, older tmpfs): opening with it is EINVAL."""
    real_open = os.open

    def refuse(path: Any, flags: int, *args: Any) -> int:
        if flags & os.O_DIRECT:
            raise OSError(errno.EINVAL, "Invalid argument")
        return real_open(path, flags, *args)

    monkeypatch.setattr(disk.os, "open", refuse)


def allows_direct(path: Path) -> bool:
    try:
        os.close(os.open(path, os.O_RDONLY | os.O_DIRECT))
    except OSError:
        return False
    return True


def make_tree(root: Path) -> dict[Path, bytes]:
    files = {
        root / "a.bin": os.urandom(300 * KIB),
        root / "sub" / "b.bin": os.urandom(200 * KIB),
        root / "sub" / "c.bin": os.urandom(100 * KIB),
        root / "empty": b"",
    }
    for path, data in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    (root / "link-to-a").symlink_to(root / "a.bin")  # the same inode: read once
    (root / "loop").symlink_to(root, target_is_directory=True)  # not followed
    return files


def test_reads_every_file_once_and_writes_nothing(tmp_path: Path) -> None:
    files = make_tree(tmp_path)
    before = {p: (p.stat().st_mtime_ns, p.read_bytes()) for p in files}
    updates: list[Progress] = []
    result = run_disk(tmp_path, 10 * 1024 * KIB, 60.0, updates.append, TickClock())
    assert result.figures["bytes"] == 600 * KIB
    assert result.figures["files"] == 3
    assert result.ok and result.device.startswith("host")
    assert {p: (p.stat().st_mtime_ns, p.read_bytes()) for p in files} == before
    assert sorted(p.name for p in tmp_path.rglob("*")) == sorted(
        ["a.bin", "b.bin", "c.bin", "empty", "link-to-a", "loop", "sub"]
    )
    assert updates and all(u.probe == "disk" and u.unit == "MB/s" for u in updates)


def test_stops_at_max_bytes(tmp_path: Path) -> None:
    make_tree(tmp_path)
    result = run_disk(tmp_path, 350 * KIB, 60.0, lambda _: None, TickClock())
    assert result.figures["bytes"] == 350 * KIB
    assert result.figures["files"] == 2


def test_stops_at_the_time_cap(tmp_path: Path) -> None:
    make_tree(tmp_path)
    result = run_disk(tmp_path, 10 * 1024 * KIB, 0.5, lambda _: None, TickClock())
    assert result.figures["files"] == 1


def test_o_direct_reads_past_the_page_cache_and_leaves_it_as_it_was(tmp_path: Path) -> None:
    files = make_tree(tmp_path)
    if not allows_direct(tmp_path / "a.bin"):
        pytest.skip("this machine's temporary directory refuses O_DIRECT")
    before = cached_share(files)
    result = run_disk(tmp_path, 10 * 1024 * KIB, 60.0, lambda _: None, TickClock())
    assert (result.figures["direct_pct"], result.figures["page_cache_pct"]) == (100.0, 0.0)
    assert result.ok and result.verdict.endswith("; read from storage with O_DIRECT, past the page cache")
    assert cached_share(files) == before  # nothing dropped from the cache, nothing added


def cached_share(files: dict[Path, bytes]) -> dict[Path, int | None]:
    shares = {}
    for path, data in files.items():
        fd = os.open(path, os.O_RDONLY)
        try:
            shares[path] = resident_bytes(_libc(), fd, len(data))
        finally:
            os.close(fd)
    return shares


def test_a_read_the_page_cache_served_is_not_a_disk_measurement(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Freshly written files, on a file system that refuses O_DIRECT: memory speed, said so, and not passed."""
    make_tree(tmp_path)
    direct_refused(monkeypatch)
    result = run_disk(tmp_path, 10 * 1024 * KIB, 60.0, lambda _: None, TickClock())
    assert result.figures["page_cache_pct"] == pytest.approx(100.0) and result.figures["direct_pct"] == 0.0
    assert not result.ok
    assert "; not a disk measurement: 100% was already in the page cache, so this is memory speed" in result.verdict
    assert result.details[0].startswith("read through the page cache (O_DIRECT not used on this file system)")


def test_a_file_system_in_memory_is_not_a_disk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """tmpfs takes O_DIRECT on newer kernels, and still reads from memory: never judged a disk figure."""
    make_tree(tmp_path)
    on(monkeypatch, "tmpfs")
    result = run_disk(tmp_path, 10 * 1024 * KIB, 60.0, lambda _: None, TickClock())
    assert not result.ok and result.figures["direct_pct"] == 0.0
    assert result.verdict.endswith("; not a disk measurement: tmpfs keeps its files in memory, so this is memory speed")
    assert result.device == "host: /dev/test0 (tmpfs) at /"


def test_mincore_sees_pages_dropped_from_the_cache(tmp_path: Path) -> None:
    path = tmp_path / "cold.bin"
    path.write_bytes(os.urandom(512 * KIB))
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)  # our own test file, so dropping it is harmless
        cold = resident_bytes(_libc(), fd, 512 * KIB)
        os.read(fd, 512 * KIB)
        warm = resident_bytes(_libc(), fd, 512 * KIB)
    finally:
        os.close(fd)
    assert cold is not None and cold < 512 * KIB // 2
    assert warm == 512 * KIB
    assert resident_bytes(None, 0, 10) is None


@pytest.mark.parametrize(
    ("setup", "message"),
    [("missing", "no such directory"), ("file", "not a directory"), ("empty", "no readable non-empty files")],
)
def test_unusable_directories_are_one_line_errors(tmp_path: Path, setup: str, message: str) -> None:
    target = tmp_path / "x"
    if setup == "file":
        target.write_bytes(b"data")
    elif setup == "empty":
        target.mkdir()
        (target / "zero").write_bytes(b"")
    with pytest.raises(DiskProbeError, match=message):
        run_disk(target, 1024, 10.0, lambda _: None, TickClock())


def test_regular_files_order_is_stable(tmp_path: Path) -> None:
    make_tree(tmp_path)
    assert [p.name for p, _ in regular_files(tmp_path)] == ["a.bin", "b.bin", "c.bin"]
