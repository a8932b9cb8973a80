"""Where a store lives, what `history` is told about it, the zlib fallback, and what another user may have planted
in a store's directory: nothing there redirects a write or freezes a reader."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gputui.store import codec
from gputui.store.errors import NoStore, StoreError
from gputui.store.location import STORE_ENV, default_store_dir
from gputui.store.reader import Store
from gputui.store.writer import Retention, StoreWriter, hour_stem
from tests.store.storedata import T0, simulate, write_store


def test_the_default_store_is_the_env_then_root_s_then_the_user_s_state_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(STORE_ENV, str(tmp_path / "env"))
    assert default_store_dir() == tmp_path / "env"
    monkeypatch.delenv(STORE_ENV)
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    assert default_store_dir() == Path("/var/lib/gputui")
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    assert default_store_dir() == tmp_path / "state" / "gputui"
    monkeypatch.setenv("XDG_STATE_HOME", "relative/state")  # the XDG spec says to ignore it
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_store_dir() == tmp_path / "home" / ".local" / "state" / "gputui"


def test_no_store_says_how_to_start_one(tmp_path: Path) -> None:
    with pytest.raises(NoStore, match=r"no history at .*: start a recorder with `gputui record`"):
        Store(tmp_path / "nothing")
    with pytest.raises(NoStore):
        Store(tmp_path)  # a directory without STORE


def test_the_summary_says_what_the_store_holds(tmp_path: Path) -> None:
    steps = list(simulate("healthy", gpus=1, seconds=25)) + list(simulate("healthy", gpus=1, seconds=5, t0=T0 + 3600))
    writer = write_store(tmp_path, steps, retention=Retention(tick_days=3.0))
    try:
        summary = Store(tmp_path).summary()
        assert summary.recorder_pid == os.getpid()
    finally:
        writer.close()
    summary = Store(tmp_path).summary()
    assert (summary.first, summary.last, summary.ticks) == (T0, T0 + 3604, 30)
    assert (summary.tick_chunks, summary.minute_chunks, summary.damaged_frames) == (2, 1, 0)
    assert summary.bytes == sum(p.stat().st_size for p in tmp_path.rglob("*") if p.is_file())
    assert summary.retention.tick_days == 3.0 and summary.format == 1 and summary.recorder_pid is None
    assert summary.warnings == ()


def test_without_zstd_frames_are_zlib_and_read_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(codec, "zstd", None)
    steps = list(simulate("tour", gpus=2, seconds=25))
    write_store(tmp_path, steps).close()
    read = Store(tmp_path).read(T0, T0 + 100)
    assert [s.timestamp for s in read.ticks] == [s.snapshot.timestamp for s in steps] and read.warnings == []


def test_a_link_planted_where_the_next_chunk_goes_is_stepped_around(tmp_path: Path) -> None:
    StoreWriter(tmp_path / "store", interval_s=1.0).close()
    victim = tmp_path / "victim"
    victim.write_text("keep me")
    (tmp_path / "store" / "ticks" / f"{hour_stem(T0)}.gtc").symlink_to(victim)
    write_store(tmp_path / "store", list(simulate("healthy", gpus=1, seconds=12))).close()
    assert victim.read_text() == "keep me"
    assert (tmp_path / "store" / "ticks" / f"{hour_stem(T0)}.1.gtc").is_file()
    assert len(Store(tmp_path / "store").read(T0, T0 + 100).ticks) == 12


def test_a_fifo_or_a_link_posing_as_a_chunk_is_not_read(tmp_path: Path) -> None:
    write_store(tmp_path, list(simulate("healthy", gpus=1, seconds=12))).close()
    os.mkfifo(tmp_path / "ticks" / f"{hour_stem(T0)}.3.gtc")  # reading it would wait forever
    (tmp_path / "ticks" / f"{hour_stem(T0)}.4.gtc").symlink_to("/dev/zero")
    store = Store(tmp_path)
    assert len(store.read(T0, T0 + 100).ticks) == 12
    assert store.summary().ticks == 12


def test_a_store_directory_deleted_under_the_writer_stops_it_with_a_warning(tmp_path: Path) -> None:
    steps = list(simulate("healthy", gpus=1, seconds=30))
    writer = write_store(tmp_path / "store", steps[:10])
    try:
        (tmp_path / "store").rename(tmp_path / "moved")
        for step in steps[10:]:
            writer.record(step.snapshot, step.active, step.verdict)
        writer.flush()
        assert writer.stopped and writer.warning == f"history stopped: {tmp_path / 'store'} was deleted or replaced"
    finally:
        writer.close()


def test_a_store_path_that_is_a_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(StoreError, match="cannot"):
        StoreWriter(tmp_path / "file", interval_s=1.0)


def test_an_unexpected_error_in_the_writer_stops_the_history_and_never_hangs_its_callers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gputui.store import writer as writer_module

    def broken(records: object) -> bytes:
        raise ValueError("a record this encoder cannot hold")

    monkeypatch.setattr(writer_module, "encode_records", broken)
    writer = write_store(tmp_path, list(simulate("healthy", gpus=1, seconds=12)))  # flushes: returns, not hangs
    assert writer.stopped and writer.warning == "history stopped: ValueError: a record this encoder cannot hold"
    writer.close()
    StoreWriter(tmp_path, interval_s=1.0).close()  # the lock was released


def test_zstd_frames_where_this_python_lacks_zstd_are_said_not_damaged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_store(tmp_path, list(simulate("healthy", gpus=1, seconds=25))).close()
    monkeypatch.setattr(codec, "zstd", None)
    read = Store(tmp_path).read(T0, T0 + 100)
    assert len(read.ticks) == 0
    assert any("frames are zstd, which this Python lacks" in w for w in read.warnings), read.warnings
    assert not any("damaged" in w for w in read.warnings)


def test_a_directory_of_other_files_is_not_made_a_store(tmp_path: Path) -> None:
    (tmp_path / "thesis.tex").write_text("precious")
    with pytest.raises(StoreError, match=r"is not a gputui history store \(no STORE file\) and holds other files"):
        StoreWriter(tmp_path, interval_s=1.0)
    assert [p.name for p in tmp_path.iterdir()] == ["thesis.tex"]


def test_a_file_posing_as_a_chunk_larger_than_any_chunk_is_not_walked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gputui.store import frames as frames_module

    write_store(tmp_path, list(simulate("healthy", gpus=1, seconds=12))).close()
    real = (tmp_path / "ticks" / f"{hour_stem(T0)}.gtc").stat().st_size
    (tmp_path / "ticks" / f"{hour_stem(T0)}.2.gtc").write_bytes(b"\0" * (real + 1))
    monkeypatch.setattr(frames_module, "MAX_CHUNK_BYTES", real)
    read = Store(tmp_path).read(T0, T0 + 100)
    assert len(read.ticks) == 12
    assert any("more than any chunk gputui writes" in w for w in read.warnings), read.warnings
