"""Retention as chunks close: by age (ticks after tick_days, minutes after minute_days, counted back from the newest
tick, so injected times drive it) and by size (the oldest first), never the chunks open."""

from __future__ import annotations

from pathlib import Path

from gputui.store.directory import StoreDirectory
from gputui.store.reader import Store
from gputui.store.retention import prune
from gputui.store.writer import Retention, hour_stem
from tests.store.storedata import T0, Step, simulate, write_store

DAY = 86400.0


def _steps(seconds: int, t0: float) -> list[Step]:
    return list(simulate("healthy", gpus=1, seconds=seconds, t0=t0))


def _names(directory: Path, sub: str) -> list[str]:
    return sorted(p.name for p in (directory / sub).iterdir())


def test_tick_chunks_older_than_tick_days_go_and_the_minutes_stay(tmp_path: Path) -> None:
    steps = _steps(20, T0) + _steps(20, T0 + 3600) + _steps(20, T0 + 8 * DAY)
    writer = write_store(tmp_path, steps)
    writer.close()
    assert _names(tmp_path, "ticks") == [f"{hour_stem(T0 + 8 * DAY)}.gtc"]
    assert len(_names(tmp_path, "minutes")) == 2  # the first day's and the last's: within 90 days
    assert writer.chunks_pruned == 2
    store = Store(tmp_path)
    assert store.extent() == (T0 + 8 * DAY, T0 + 8 * DAY + 19)
    assert [row.start for row in store.minutes(T0, T0 + 9 * DAY)] == [T0, T0 + 3600, T0 + 8 * DAY]


def test_minute_chunks_older_than_minute_days_go(tmp_path: Path) -> None:
    retention = Retention(tick_days=1.0, minute_days=2.0)
    writer = write_store(tmp_path, _steps(20, T0) + _steps(20, T0 + 3 * DAY), retention=retention)
    writer.close()
    assert len(_names(tmp_path, "minutes")) == 1 and len(_names(tmp_path, "ticks")) == 1
    assert [row.start for row in Store(tmp_path).minutes(T0, T0 + 4 * DAY)] == [T0 + 3 * DAY]


def test_beyond_max_bytes_the_oldest_chunks_go_but_never_the_open_ones(tmp_path: Path) -> None:
    hours = [_steps(15, T0 + h * 3600) for h in range(4)]
    writer = write_store(tmp_path, [step for hour in hours for step in hour], retention=Retention(max_bytes=1))
    writer.close()
    assert _names(tmp_path, "ticks") == [f"{hour_stem(T0 + 3 * 3600)}.gtc"]  # open to the end
    assert len(_names(tmp_path, "minutes")) == 1  # the day's, open to the end
    assert Store(tmp_path).extent() == (T0 + 3 * 3600, T0 + 3 * 3600 + 14)


def test_the_oldest_tick_chunks_go_first_until_the_store_fits(tmp_path: Path) -> None:
    directory = StoreDirectory(tmp_path, shared=False)
    try:
        for name in ("20260101T00.gtc", "20260101T01.gtc", "20260101T01.1.gtc", "20260101T02.gtc"):
            (tmp_path / "ticks" / name).write_bytes(b"t" * 1000)
        (tmp_path / "minutes" / "20260101.gtm").write_bytes(b"m" * 500)
        (tmp_path / "ticks" / "notes.txt").write_bytes(b"not a chunk: left alone and not counted")
        newest = T0 + 3 * 3600
        deleted = prune(directory, Retention(max_bytes=2600), newest, open_names={"20260101T02.gtc"})
        assert deleted == 2
        assert _names(tmp_path, "ticks") == ["20260101T01.1.gtc", "20260101T02.gtc", "notes.txt"]
        assert _names(tmp_path, "minutes") == ["20260101.gtm"]
        assert prune(directory, Retention(max_bytes=0), newest, open_names={"20260101T02.gtc"}) == 2
        assert _names(tmp_path, "ticks") == ["20260101T02.gtc", "notes.txt"] and _names(tmp_path, "minutes") == []
    finally:
        directory.close()


def test_the_summary_says_the_retention_the_recorder_keeps(tmp_path: Path) -> None:
    retention = Retention(tick_days=2.0, minute_days=30.0, max_bytes=5 << 20)
    write_store(tmp_path, _steps(5, T0), retention=retention).close()
    assert Store(tmp_path).summary().retention == retention
