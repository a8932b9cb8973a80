"""Bad input, each case: a clear message, and nothing readable lost."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from gputui.foreign_text import is_clean
from gputui.record.format import (
    RECORDING_SCHEMA,
    RecordingError,
    dumps,
    event_to_dict,
    header_to_dict,
    mark_event,
    tick_to_dict,
)
from gputui.record.reader import TICKS_PER_CHUNK, load_recording
from tests.hostile import HOSTILE, SHOWN, hostile_snapshot, strings
from tests.record.recdata import T0, gpu_info, snapshot, system


def _lines(ticks: int = 5, gpus: int = 2) -> list[str]:
    header = header_to_dict(system(gpus), tuple(gpu_info(i) for i in range(gpus)), interval_s=1.0, started_at=T0)
    varied = (
        snapshot(T0 + i, gpus, util=(i * 37) % 101 + i / 7, temp=60 + i % 23 + i / 11, power=300 + i * 3.7)
        for i in range(ticks)
    )
    return [dumps(header)] + [dumps(tick_to_dict(snap)) for snap in varied]


def _file(tmp_path: Path, lines: list[str], name: str = "r.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("".join(lines))
    return path


def test_a_clean_file_reads_without_warnings(tmp_path: Path) -> None:
    lines = _lines(3)
    lines.insert(2, dumps(event_to_dict(mark_event("bs 64", T0 + 0.5))))
    recording = load_recording(_file(tmp_path, lines))
    assert len(recording.ticks) == 3 and recording.events[0].data["label"] == "bs 64"
    assert recording.warnings == [] and recording.duration_s == 2.0


def test_a_missing_file(tmp_path: Path) -> None:
    with pytest.raises(RecordingError, match="no such recording"):
        load_recording(tmp_path / "nope.jsonl")


def test_an_empty_file(tmp_path: Path) -> None:
    with pytest.raises(RecordingError, match="is empty"):
        load_recording(_file(tmp_path, []))


def test_a_file_that_is_not_a_recording(tmp_path: Path) -> None:
    with pytest.raises(RecordingError, match="first line is not JSON"):
        load_recording(_file(tmp_path, ["hello world\n"]))
    with pytest.raises(RecordingError, match="header"):
        load_recording(_file(tmp_path, _lines(2)[1:]))


@pytest.mark.parametrize(
    ("drop", "change", "says"),
    [
        (("system", "gpu_info"), {}, "its header lacks system, gpu_info: it was cut short or not made by gputui"),
        (("started_at",), {}, "its header lacks started_at"),
        ((), {"system": {}}, "system lacks hostname, source, driver_version, nvml_version, cuda_driver_version"),
        ((), {"gpu_info": [{"index": 0}]}, "gpu info lacks name"),
        ((), {"system": ["a"]}, "its header's system is not a JSON object"),
        ((), {"gpu_info": 2}, "its header's gpu_info is not a list of JSON objects"),
        ((), {"interval_s": "soon"}, "its header's started_at, interval_s and utc_offset_s are not all numbers"),
    ],
    ids=["no-system", "no-start", "system-empty", "gpu-unnamed", "system-list", "gpu-info-number", "interval-word"],
)
def test_a_header_short_of_a_key_names_it_in_words(
    tmp_path: Path, drop: tuple[str, ...], change: dict[str, object], says: str
) -> None:
    """Not Python's KeyError text ('system'): the sentence says which key the header lacks or holds wrongly."""
    lines = _lines(1)
    header = {key: value for key, value in json.loads(lines[0]).items() if key not in drop}
    lines[0] = dumps(header | change)
    with pytest.raises(RecordingError) as raised:
        load_recording(_file(tmp_path, lines))
    assert says in str(raised.value)


def test_a_truncated_last_line_is_read_up_to_and_told(tmp_path: Path) -> None:
    lines = _lines(4)
    lines[-1] = lines[-1][: len(lines[-1]) // 2]
    recording = load_recording(_file(tmp_path, lines))
    assert len(recording.ticks) == 3
    assert len(recording.warnings) == 1 and "last line (line 5) is cut short" in recording.warnings[0]
    assert "3 ticks" in recording.warnings[0]


def test_a_complete_last_line_without_newline_is_fine(tmp_path: Path) -> None:
    lines = _lines(2)
    lines[-1] = lines[-1].rstrip("\n")
    recording = load_recording(_file(tmp_path, lines))
    assert len(recording.ticks) == 2 and recording.warnings == []


def test_garbage_lines_in_the_middle_are_skipped_and_counted(tmp_path: Path) -> None:
    lines = _lines(4)
    lines.insert(2, "\x00\x00garbage{{\n")
    lines.insert(4, '{"type": "tick", "gpus": "nonsense"}\n')
    lines.insert(5, "[1, 2]\n")
    recording = load_recording(_file(tmp_path, lines))
    assert len(recording.ticks) == 4
    assert len(recording.warnings) == 1
    assert "skipped 3 unreadable lines (first: line 3" in recording.warnings[0]


def test_a_newer_schema_is_a_clear_error(tmp_path: Path) -> None:
    lines = _lines(1)
    header = json.loads(lines[0])
    header.update(schema=RECORDING_SCHEMA + 1, gputui_version="3.0.0")
    lines[0] = dumps(header)
    with pytest.raises(RecordingError, match=r"gputui 3\.0\.0 with recording schema 2.*upgrade gputui"):
        load_recording(_file(tmp_path, lines))


def test_unknown_record_types_are_ignored_and_named(tmp_path: Path) -> None:
    lines = _lines(2)
    lines.insert(1, '{"type": "annotation", "t": 1}\n')
    recording = load_recording(_file(tmp_path, lines))
    assert len(recording.ticks) == 2 and "1 annotation" in recording.warnings[0]


def test_a_corrupt_gzip_stream_reads_what_is_readable(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl.gz"
    good = "".join(_lines(40))
    data = bytearray(gzip.compress(good.encode()))
    middle = len(data) // 2
    data[middle : middle + 64] = b"\xff" * 64
    path.write_bytes(bytes(data))
    recording = load_recording(path)
    assert 0 < len(recording.ticks) < 40
    assert len(recording.warnings) == 1 and "gzip data is damaged" in recording.warnings[0]


def test_a_gzip_cut_short_reads_what_is_readable(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl.gz"
    data = gzip.compress("".join(_lines(40)).encode())
    path.write_bytes(data[: len(data) * 3 // 4])
    recording = load_recording(path)
    assert 10 < len(recording.ticks) < 40
    assert len(recording.warnings) == 1 and "without its trailer" in recording.warnings[0]


def test_gzip_is_detected_by_content_not_name(tmp_path: Path) -> None:
    path = tmp_path / "no-suffix"
    path.write_bytes(gzip.compress("".join(_lines(3)).encode()))
    assert len(load_recording(path).ticks) == 3


def test_a_recording_from_a_machine_with_another_gpu_count(tmp_path: Path) -> None:
    lines = _lines(3, gpus=4)  # made on a 4-GPU box; this one has none, and that does not matter
    odd = json.loads(lines[2])
    odd["gpus"] = [*odd["gpus"][:3], {**odd["gpus"][0], "index": 7}]
    lines[2] = dumps(odd)
    recording = load_recording(_file(tmp_path, lines))
    assert [len(t.gpus) for t in recording.ticks] == [4, 3, 4]
    assert all(len(t.gpu_info) == 4 for t in recording.ticks)
    assert len(recording.warnings) == 1
    assert "1 ticks list other GPUs than the header (0,1,2,3)" in recording.warnings[0]
    assert "lists 0,1,2,7" in recording.warnings[0]


def test_the_header_alone_is_a_recording_without_ticks(tmp_path: Path) -> None:
    recording = load_recording(_file(tmp_path, _lines(0)))
    assert len(recording.ticks) == 0 and recording.duration_s == 0.0


def test_the_tick_store_gives_back_every_tick_across_chunks(tmp_path: Path) -> None:
    count = TICKS_PER_CHUNK * 2 + 5
    ticks = load_recording(_file(tmp_path, _lines(count))).ticks
    assert len(ticks) == count and ticks.timestamps[-1] == T0 + count - 1
    assert [t.timestamp for t in ticks] == [T0 + i for i in range(count)]
    assert ticks[TICKS_PER_CHUNK].timestamp == T0 + TICKS_PER_CHUNK  # first of the second chunk
    assert ticks[-1].timestamp == T0 + count - 1 and ticks[3] == ticks[3 - count]
    assert [t.timestamp for t in ticks[TICKS_PER_CHUNK - 1 : TICKS_PER_CHUNK + 1]] == [
        T0 + TICKS_PER_CHUNK - 1,
        T0 + TICKS_PER_CHUNK,
    ]
    with pytest.raises(IndexError):
        ticks[count]


def test_a_shared_recording_reads_back_clean(tmp_path: Path) -> None:
    """A recording another user wrote (here with JSON's \\u escapes, as any tool may write it) carries their text in
    every field: each string of the header, the ticks (processes, pods, jobs, stack frames, notices) and the events
    is cleaned as it is read, so a replay and a report show it as visible escapes."""
    hostile = [hostile_snapshot(snapshot(T0 + i, 2)) for i in range(3)]
    first = hostile[0]
    records = [header_to_dict(first.system, first.gpu_info, interval_s=1.0, started_at=T0)]
    records += [tick_to_dict(snap) for snap in hostile]
    records.append(event_to_dict(mark_event(f"mark {HOSTILE}", T0 + 1.5)))
    path = _file(tmp_path, [json.dumps(record) + "\n" for record in records])
    assert "\\u001b]0;PWNED" in path.read_text()  # the file holds the raw escapes
    recording = load_recording(path)
    ticks = list(recording.ticks)
    assert len(ticks) == 3 and recording.warnings == []
    texts = [*strings(recording.header), *strings(ticks), *strings([event.data for event in recording.events])]
    assert [text for text in texts if not is_clean(text)] == []
    assert ticks[0].system.hostname == f"gpu{SHOWN}"
    proc = ticks[2].host.processes[0]
    assert (proc.cmdline, proc.pod, proc.job_id) == (f"python {SHOWN} --lr 3e-4", f"pod{SHOWN}", f"42{SHOWN}")
    assert proc.activity is not None and proc.activity.top[1].function == SHOWN
    assert recording.events[0].data["label"] == f"mark {SHOWN}"
