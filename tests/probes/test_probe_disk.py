"""The disk probe in-process: bounded reads, nothing written, and the page-cache share measured by mincore."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

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


def test_freshly_written_files_are_in_the_page_cache(tmp_path: Path) -> None:
    make_tree(tmp_path)
    result = run_disk(tmp_path, 10 * 1024 * KIB, 60.0, lambda _: None, TickClock())
    assert result.figures["page_cache_pct"] == pytest.approx(100.0)
    assert "already in the page cache" in result.verdict


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
