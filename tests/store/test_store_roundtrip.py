"""A session written to a store reads back as the same recording a --record file holds."""

from __future__ import annotations

from pathlib import Path

from gputui.record.reader import load_recording
from gputui.record.writer import RecordingWriter
from gputui.store.reader import Store
from tests.store.storedata import T0, simulate, write_store


def test_a_simulated_session_reads_back_from_the_store_as_from_a_recording(tmp_path: Path) -> None:
    steps = list(simulate("tour", gpus=4, seconds=95))
    recorder = RecordingWriter(tmp_path / "session.jsonl", interval_s=1.0, utc_offset_s=0)
    for step in steps:
        recorder.record(step.snapshot, step.active, step.verdict)
    recorder.close()
    writer = write_store(tmp_path / "store", steps, utc_offset_s=0)
    writer.close()
    from_file = load_recording(tmp_path / "session.jsonl")
    from_store = Store(tmp_path / "store").read(T0 - 1, T0 + 1000)
    assert from_store.warnings == [] and from_file.warnings == []
    assert len(from_store.ticks) == 95 and writer.ticks_written == 95 and writer.ticks_dropped == 0
    assert list(from_store.ticks) == list(from_file.ticks)
    assert from_store.events == from_file.events
    assert any(e.kind == "finding_opened" for e in from_store.events)
    assert any(e.kind == "verdict" for e in from_store.events)
    assert from_store.header.gpu_info == from_file.header.gpu_info
    assert from_store.header.system == from_file.header.system


def test_a_span_reads_only_its_ticks(tmp_path: Path) -> None:
    steps = list(simulate("healthy", gpus=1, seconds=40))
    write_store(tmp_path / "store", steps).close()
    store = Store(tmp_path / "store")
    part = store.read(T0 + 12, T0 + 21.5)
    assert [s.timestamp - T0 for s in part.ticks] == [float(i) for i in range(12, 22)]
    assert store.extent() == (T0, T0 + 39)
