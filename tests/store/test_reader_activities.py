"""Job activities (stacks) in the store: written whole in each frame's first tick, so a span read from mid-frame,
or ticks of two chunks merged after the clock went back, carry each process's own activity and no other's."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from gputui.model import JobActivity, Snapshot
from gputui.store.reader import Store
from gputui.store.writer import StoreWriter
from tests.record.recdata import T0, snapshot
from tests.record.test_format_activity import BUSY, WAITING


def _with(snap: Snapshot, activity: JobActivity | None, *, keep: int = 2) -> Snapshot:
    first, *rest = snap.host.processes
    processes = (dataclasses.replace(first, activity=activity), *rest)[:keep]
    return dataclasses.replace(snap, host=dataclasses.replace(snap.host, processes=processes))


def _ticks(t0: float, pattern: list[JobActivity | None], gone: int = -1) -> list[Snapshot]:
    return [_with(snapshot(t0 + i), a, keep=1 if i == gone else 2) for i, a in enumerate(pattern)]


PATTERN: list[JobActivity | None] = [WAITING] * 13 + [BUSY] * 4 + [None] * 3 + [None] + [None] * 4


def _write(directory: Path, ticks: list[Snapshot], **kwargs: object) -> None:
    writer = StoreWriter(directory, interval_s=1.0, **kwargs)  # type: ignore[arg-type]
    for snap in ticks:
        writer.put(snap)
    writer.close()


def test_every_tick_reads_back_its_activity_also_from_mid_frame(tmp_path: Path) -> None:
    ticks = _ticks(T0, PATTERN, gone=20)
    _write(tmp_path, ticks)
    store = Store(tmp_path)
    whole = store.read(T0, T0 + 100)
    assert whole.warnings == [] and list(whole.ticks) == ticks
    assert list(store.read(T0 + 13, T0 + 100).ticks) == ticks[13:]  # from mid-frame: BUSY, then none
    assert list(store.read(T0 + 5, T0 + 12).ticks) == ticks[5:13]  # WAITING, though written at tick 0 only


def test_ticks_of_chunks_merged_by_time_keep_their_own_activities(tmp_path: Path) -> None:
    """The clock goes back 10 s: the second chunk's ticks interleave with the first's."""
    first = _ticks(T0, [WAITING] * 15)
    second = _ticks(T0 + 5, [BUSY] * 3 + [None] * 4 + [WAITING] * 8)
    _write(tmp_path, first + second)
    assert len(list((tmp_path / "ticks").iterdir())) == 2
    read = list(Store(tmp_path).read(T0, T0 + 100).ticks)
    expected = sorted(first + second, key=lambda s: s.timestamp)  # stable: the first chunk's tick first
    assert read == expected


def test_a_shared_store_records_no_activities(tmp_path: Path) -> None:
    ticks = _ticks(T0, PATTERN[:12])
    _write(tmp_path, ticks, shared=True)
    read = list(Store(tmp_path).read(T0, T0 + 100).ticks)
    assert [s.host.processes[0].activity for s in read] == [None] * 12
    assert [s.host.processes[0].pid for s in read] == [s.host.processes[0].pid for s in ticks]
