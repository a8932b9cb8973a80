"""The issue's faults, each against a real store on disk: a damaged or truncated chunk loses only what is damaged,
a clock that jumps loses nothing and keeps the order, a store from a newer gputui and an unsafe directory are
refused with a sentence."""

from __future__ import annotations

import json
import os
import zlib
from pathlib import Path

import pytest

from gputui.store.chunk import HEADER_BYTES, KIND_TICKS, MAGIC, frame_bytes, scan
from gputui.store.errors import NewerStore, StoreError
from gputui.store.reader import Store
from gputui.store.writer import StoreWriter, hour_stem
from tests.store.storedata import T0, Step, simulate, write_store


def _steps(seconds: int, t0: float = T0) -> list[Step]:
    return list(simulate("tour", gpus=2, seconds=seconds, t0=t0))


def _chunk(directory: Path) -> Path:
    (chunk,) = sorted((directory / "ticks").iterdir())
    return chunk


def _tick_frames(chunk: Path) -> list[tuple[int, int, float, float]]:
    """(offset, length, first, last) of each data frame."""
    with chunk.open("rb") as file:
        return [(f.offset, f.length, f.t_first, f.t_last) for f in scan(file).frames if f.kind == KIND_TICKS]


def _times(directory: Path) -> list[float]:
    return [snap.timestamp - T0 for snap in Store(directory).read(T0 - 10 * 86400, T0 + 10 * 86400).ticks]


def test_a_frame_with_bytes_flipped_mid_payload_loses_only_itself_and_says_so(tmp_path: Path) -> None:
    write_store(tmp_path, _steps(60)).close()
    chunk = _chunk(tmp_path)
    frames = _tick_frames(chunk)
    assert len(frames) == 6
    offset, length, first, last = frames[3]
    data = bytearray(chunk.read_bytes())
    middle = offset + HEADER_BYTES + length // 2
    data[middle : middle + 8] = bytes(b ^ 0xFF for b in data[middle : middle + 8])
    chunk.write_bytes(bytes(data))
    recording = Store(tmp_path).read(T0, T0 + 100)
    assert [t for t in (s.timestamp - T0 for s in recording.ticks)] == [float(i) for i in range(60) if not 30 <= i < 40]
    assert (first, last) == (T0 + 30, T0 + 39)
    assert any("skipped 1 damaged frame in" in w for w in recording.warnings), recording.warnings
    assert Store(tmp_path).summary().damaged_frames == 1


def test_a_damaged_frame_header_costs_that_frame_and_the_reader_finds_the_next(tmp_path: Path) -> None:
    write_store(tmp_path, _steps(60)).close()
    chunk = _chunk(tmp_path)
    offset = _tick_frames(chunk)[2][0]
    data = bytearray(chunk.read_bytes())
    data[offset + 8] ^= 0x55  # inside the header: the length or the count, which its crc covers
    chunk.write_bytes(bytes(data))
    recording = Store(tmp_path).read(T0, T0 + 100)
    assert _times(tmp_path) == [float(i) for i in range(60) if not 20 <= i < 30]
    assert any("damaged frame" in w for w in recording.warnings)


def test_a_chunk_cut_short_loses_only_its_tail(tmp_path: Path) -> None:
    write_store(tmp_path, _steps(45)).close()
    chunk = _chunk(tmp_path)
    offset, length, _, _ = _tick_frames(chunk)[-1]
    os.truncate(chunk, offset + HEADER_BYTES + length // 3)
    recording = Store(tmp_path).read(T0, T0 + 100)
    assert _times(tmp_path) == [float(i) for i in range(40)]
    assert any("cut short" in w for w in recording.warnings), recording.warnings
    os.truncate(chunk, offset + 7)  # inside the header itself
    assert _times(tmp_path) == [float(i) for i in range(40)]


def test_a_frame_claiming_an_absurd_length_is_damage_never_read(tmp_path: Path) -> None:
    write_store(tmp_path, _steps(20)).close()
    chunk = _chunk(tmp_path)
    with chunk.open("ab") as file:
        huge = bytearray(frame_bytes(KIND_TICKS, 0, 0, 1, b"x", T0 + 30, T0 + 30))
        huge[11:15] = (1 << 31).to_bytes(4, "little")  # the payload length, header crc now wrong as well
        file.write(bytes(huge) + b"tail")
    assert _times(tmp_path) == [float(i) for i in range(20)]


def test_a_clock_that_jumps_back_and_forward_loses_nothing_and_reads_in_order(tmp_path: Path) -> None:
    """Back an hour (a new chunk in an earlier hour), back 15 s into the same hour (two chunks overlap in time),
    then forward a day: every tick is read, in time order."""
    now = _steps(25)
    back_an_hour = _steps(12, T0 + 25 - 3600)
    overlap = _steps(20, T0 + 10)
    a_day_on = _steps(12, T0 + 86400)
    steps = now + back_an_hour + overlap + a_day_on
    writer = write_store(tmp_path, steps)
    writer.close()
    assert writer.ticks_written == len(steps)
    times = _times(tmp_path)
    expected = sorted(s.snapshot.timestamp - T0 for s in steps)
    assert times == expected and len(times) == 69
    assert len(list((tmp_path / "ticks").iterdir())) == 4
    assert Store(tmp_path).extent() == (T0 - 3600 + 25, T0 + 86400 + 11)


def test_a_store_of_a_newer_format_is_refused_with_a_sentence(tmp_path: Path) -> None:
    StoreWriter(tmp_path, interval_s=1.0).close()
    (tmp_path / "STORE").write_text(json.dumps({"format": 2, "written_by": "gputui 9.0"}))
    sentence = f"{tmp_path} was written by a newer gputui (store format 2; this one reads 1)"
    with pytest.raises(NewerStore, match=r"^" + sentence.replace("(", r"\(").replace(")", r"\)")):
        StoreWriter(tmp_path, interval_s=1.0)
    with pytest.raises(NewerStore, match="newer gputui"):
        Store(tmp_path)
    assert not (tmp_path / "recorder.lock").read_text()  # no recorder took it over


def test_a_chunk_from_a_newer_gputui_is_skipped_and_said(tmp_path: Path) -> None:
    write_store(tmp_path, _steps(20)).close()
    newer = bytearray(frame_bytes(KIND_TICKS, 0, 0, 1, b"{}", T0 + 1, T0 + 1))
    newer[3] = 2  # frame version 2
    newer[35:39] = zlib.crc32(bytes(newer[:35])).to_bytes(4, "little")
    assert newer[:3] == MAGIC
    (tmp_path / "ticks" / f"{hour_stem(T0)}.7.gtc").write_bytes(bytes(newer))
    recording = Store(tmp_path).read(T0 - 100, T0 + 100)
    assert len(recording.ticks) == 20
    assert any("a newer gputui wrote it" in w for w in recording.warnings), recording.warnings


def test_a_symlinked_directory_is_refused(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir(mode=0o700)
    (tmp_path / "link").symlink_to(tmp_path / "real")
    with pytest.raises(StoreError, match="is a symbolic link"):
        StoreWriter(tmp_path / "link", interval_s=1.0)
    assert list((tmp_path / "real").iterdir()) == []


def test_a_directory_others_may_write_is_refused(tmp_path: Path) -> None:
    shared = tmp_path / "open"
    shared.mkdir()
    shared.chmod(0o777)
    with pytest.raises(StoreError, match="writable by every user"):
        StoreWriter(shared, interval_s=1.0)
    assert list(shared.iterdir()) == []


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can hand a directory to another user")
def test_another_users_directory_is_refused(tmp_path: Path) -> None:
    theirs = tmp_path / "theirs"
    theirs.mkdir(mode=0o755)
    os.chown(theirs, 65534, 65534)
    with pytest.raises(StoreError, match="belongs to another user"):
        StoreWriter(theirs, interval_s=1.0)


def test_a_new_store_is_private_and_a_shared_one_readable_by_all(tmp_path: Path) -> None:
    before = os.umask(0o022)
    try:
        write_store(tmp_path / "private", _steps(11)).close()
        write_store(tmp_path / "shared", _steps(11), shared=True).close()
    finally:
        os.umask(before)
    for name, dir_mode, file_mode in (("private", 0o700, 0o600), ("shared", 0o755, 0o644)):
        root = tmp_path / name
        assert (root.stat().st_mode & 0o777, (root / "ticks").stat().st_mode & 0o777) == (dir_mode, dir_mode)
        assert _chunk(root).stat().st_mode & 0o777 == file_mode
        assert (root / "STORE").stat().st_mode & 0o777 == file_mode
