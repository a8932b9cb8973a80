"""A job's activity in a recording: written once per change, carried to every tick by the reader, and a malformed
one left out with a warning while the rest of the file reads as usual."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from gputui.model import ActivityFrame, ActivityShares, JobActivity, Snapshot, WaitedOn
from gputui.record.format import dumps, header_to_dict, tick_to_dict
from gputui.record.reader import TICKS_PER_CHUNK, load_recording
from gputui.record.writer import RecordingWriter
from gputui.sources.playback import ReplaySource
from tests.record.recdata import T0, gpu_info, snapshot, system

WAITING = JobActivity(
    source="py-spy",
    taken_at=T0 - 1.0,
    window_s=4.0,
    samples=80,
    shares=ActivityShares(data=0.75, cpu=0.25),
    top=(ActivityFrame("data", "_next_data", "torch/utils/data/dataloader.py", 674, 0.75),),
    rank=0,
)
BUSY = dataclasses.replace(WAITING, taken_at=T0 + 60.0, shares=ActivityShares(cpu=1.0), top=())


def _with(snap: Snapshot, activity: JobActivity | None, *, keep: int = 2) -> Snapshot:
    """The snapshot with its first process's activity set, and only its first `keep` processes."""
    first, *rest = snap.host.processes
    processes = (dataclasses.replace(first, activity=activity), *rest)[:keep]
    return dataclasses.replace(snap, host=dataclasses.replace(snap.host, processes=processes))


def _ticks() -> list[Snapshot]:
    """Ticks 0-2 waiting for data, 3 busy, 4 with no activity, 5 without the process, 6 back without one."""
    activities: list[JobActivity | None] = [WAITING, WAITING, WAITING, BUSY, None, None, None]
    return [_with(snapshot(T0 + i), a, keep=1 if i == 5 else 2) for i, a in enumerate(activities)]


def _recorded(tmp_path: Path, ticks: list[Snapshot]) -> Path:
    path = tmp_path / "run.jsonl"
    writer = RecordingWriter(path, interval_s=1.0)
    for snap in ticks:
        writer.put(snap)
    writer.close()
    return path


def _activity_keys(path: Path) -> list[object]:
    """Per tick line: the first process's activity key as written ("-" where it is left out)."""
    out: list[object] = []
    for line in path.read_text().splitlines()[1:]:
        procs = json.loads(line)["host"]["processes"]
        first = next((p for p in procs if p["pid"] == 4242), {})
        activity = first.get("activity", "-")
        out.append(activity if activity in (None, "-") else activity["shares"].get("data", 0.0))
    return out


def test_each_activity_is_written_once_and_every_tick_reads_it_back(tmp_path: Path) -> None:
    ticks = _ticks()
    path = _recorded(tmp_path, ticks)
    # Written in the first tick that has it and when it changes; null once the process has none; a process that
    # left and came back is not carried over.
    assert _activity_keys(path) == [0.75, "-", "-", 0.0, None, "-", "-"]
    recording = load_recording(path)
    assert recording.warnings == []
    assert list(recording.ticks) == ticks
    replay = ReplaySource(recording, clock=lambda: 0.0)
    replay.open()
    assert replay.sample().host.processes[0].activity == WAITING  # replay gives it back


def test_a_tick_alone_writes_every_activity() -> None:
    line = tick_to_dict(_with(snapshot(T0), WAITING))
    assert line["host"]["processes"][0]["activity"]["shares"]["data"] == 0.75


def test_a_malformed_activity_is_left_out_with_a_warning_and_nothing_else_is_lost(tmp_path: Path) -> None:
    ticks = [_with(snapshot(T0 + i), WAITING) for i in range(3)]
    lines = [tick_to_dict(snap) for snap in ticks]
    lines[0]["host"]["processes"][0]["activity"]["shares"]["data"] = "lots"
    header = header_to_dict(system(2), (gpu_info(0), gpu_info(1)), interval_s=1.0, started_at=T0, utc_offset_s=0)
    path = tmp_path / "bad.jsonl"
    path.write_text("".join(dumps(record) for record in (header, *lines)))
    recording = load_recording(path)
    assert recording.warnings == [
        f"{path}: left out a malformed activity (first: line 2: process 4242: activity.shares.data: expected a "
        "fraction from 0 to 1, got 'lots': read without it)"
    ]
    assert len(recording.ticks) == 3
    assert recording.ticks[0] == _with(ticks[0], None)  # the tick itself is kept whole
    assert recording.ticks[1].host.processes[0].activity == WAITING  # a later line holds it again


def test_ticks_that_carry_an_activity_read_back_past_the_first_chunk_of_ticks(tmp_path: Path) -> None:
    """The reader rewrites a tick that leaves out its activity (it carries it); such lines must read back also
    once they lie in the compressed part of the recording's tick store (past TICKS_PER_CHUNK ticks)."""
    ticks = [_with(snapshot(T0 + i), WAITING) for i in range(TICKS_PER_CHUNK + 6)]
    recording = load_recording(_recorded(tmp_path, ticks))
    assert list(recording.ticks) == ticks


def test_whom_the_main_thread_waited_for_and_a_source_line_survive_a_recording(tmp_path: Path) -> None:
    """Issue 40 items 1 and 3: waited_on and a frame's source_line are written and read back whole; a recording
    made before them (no such keys) reads them as None."""
    producer = ActivityFrame("data", "decode", "/srv/job/loader.py", 31, 0.82)
    waited = dataclasses.replace(
        WAITING,
        top=(ActivityFrame("gpu_sync", "step", "/srv/job/train.py", 8, 0.4, source_line="loss.item()"),),
        waited_on=WaitedOn(kind="data", who="thread producer (tid 4321)", frame=producer, share=0.6, running=0.97),
    )
    ticks = [_with(snapshot(T0), waited), _with(snapshot(T0 + 1), WAITING)]
    path = _recorded(tmp_path, ticks)
    first = json.loads(path.read_text().splitlines()[1])["host"]["processes"][0]["activity"]
    assert first["waited_on"]["who"] == "thread producer (tid 4321)"
    assert first["top"][0]["source_line"] == "loss.item()"
    recording = load_recording(path)
    assert recording.warnings == []
    assert list(recording.ticks) == ticks
    assert recording.ticks[1].host.processes[0].activity == WAITING  # no waited_on: None, as in older files
