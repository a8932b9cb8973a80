"""Reading a store: never locks, never waits for the writer, trusts nothing it reads.

A span is read by picking the chunks whose names cover it, walking their frame headers, and decoding only the
frames that overlap it. The records go through the same parsing as a recording file (record.reader.RecordParser):
strings cleaned, malformed ticks skipped and counted. Damage costs the frames it touches, and is said in the
Recording's warnings.
"""

from __future__ import annotations

import itertools
import math
import os
import socket
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from gputui.model import SystemInfo
from gputui.record.format import (
    ActivityCarry,
    RecordingFormatError,
    RecordingHeader,
    dumps,
    header_from_dict,
    loads,
)
from gputui.record.reader import NumberedLine, Recording, RecordParser
from gputui.store import codec as codecs
from gputui.store.chunk import (
    FLAG_DICT,
    KIND_HEADER,
    KIND_MINUTES,
    KIND_TICKS,
    ChunkScan,
    FrameInfo,
    read_payload,
    scan,
)
from gputui.store.columns import decode_records
from gputui.store.directory import MINUTES_DIR, TICKS_DIR, read_store
from gputui.store.errors import NoStore
from gputui.store.files import DAY_S, HOUR_S, MINUTE_NAME, TICK_NAME, ChunkFile, list_chunks, open_chunk
from gputui.store.lock import recorder_pid
from gputui.store.minutes import MinuteRow, row_from_dict
from gputui.store.retention import Retention, retention_from


@dataclass(frozen=True, slots=True)
class StoreSummary:
    """What a store holds, for `gputui history`."""

    directory: Path
    format: int
    first: float | None  # first and last tick held (tick tier)
    last: float | None
    ticks: int
    minutes_first: float | None  # the minute tier's span
    minutes_last: float | None
    bytes: int
    tick_chunks: int
    minute_chunks: int
    damaged_frames: int
    retention: Retention
    recorder_pid: int | None  # the PID holding the lock, None when no recorder runs
    warnings: tuple[str, ...]


class ChunkReader:
    """One chunk open for reading: its frames (headers walked once), its header record, its dictionary."""

    def __init__(self, chunk: ChunkFile, file: BinaryIO) -> None:
        self.chunk = chunk
        self.file = file
        self.scan: ChunkScan = scan(file)
        self.damaged = self.scan.damaged  # grows as frames fail their crc or do not decode
        self.unreadable = 0  # frames in a codec this Python lacks
        self._dictionaries: dict[int, codecs.Dictionary | None] = {}

    def header(self) -> dict[str, Any] | None:
        """The chunk's header record, None where its frame is damaged or missing."""
        for frame in self.scan.frames:
            if frame.kind == KIND_HEADER:
                raw = self.decode(frame, dictionary=False)
                if raw is None:
                    return None
                try:
                    data = loads(raw)
                except (ValueError, RecursionError):
                    self.damaged += 1
                    return None
                return data if isinstance(data, dict) else None
        return None

    def frames(self, kind: int) -> list[FrameInfo]:
        return [frame for frame in self.scan.frames if frame.kind == kind]

    def decode(self, frame: FrameInfo, *, dictionary: bool = True) -> bytes | None:
        """The frame's raw bytes; None (counted in `damaged`) where it fails its crc or does not decode, or its
        chunk's dictionary frame did."""
        payload = read_payload(self.file, frame)
        if payload is None:
            self.damaged += 1
            return None
        dict_ = None
        if frame.flags & FLAG_DICT and dictionary:
            dict_ = self._dictionary(frame.kind)
            if dict_ is None:
                self.damaged += 1
                return None
        if frame.codec == codecs.CODEC_ZSTD and codecs.zstd is None:
            self.unreadable += 1
            return None
        try:
            return codecs.decompress(payload, frame.codec, dict_)
        except codecs.CodecError:
            self.damaged += 1
            return None

    def _dictionary(self, kind: int) -> codecs.Dictionary | None:
        if kind not in self._dictionaries:
            first = next((f for f in self.scan.frames if f.kind == kind and not f.flags & FLAG_DICT), None)
            raw = None if first is None else self.decode(first, dictionary=False)
            self._dictionaries[kind] = None if raw is None else codecs.Dictionary(raw)
        return self._dictionaries[kind]

    def close(self) -> None:
        self.file.close()


class Store:
    """A store read: never locks, never blocks the writer."""

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)
        if not self.directory.is_dir():
            raise NoStore(self.directory)
        found = read_store(self.directory)
        if found is None:
            raise NoStore(self.directory)
        self.format: int = found["format"]
        self._retention = retention_from(found)
        self._ticks_dir = self.directory / TICKS_DIR
        self._minutes_dir = self.directory / MINUTES_DIR

    def _tick_chunks(self) -> list[ChunkFile]:
        return list_chunks(self._ticks_dir, TICK_NAME, HOUR_S)

    def _minute_chunks(self) -> list[ChunkFile]:
        return list_chunks(self._minutes_dir, MINUTE_NAME, DAY_S)

    def extent(self) -> tuple[float, float] | None:
        """The first and last tick time held: from the frame headers of the earliest and the latest hours that hold
        frames (every tick of a chunk lies in the hour its name gives)."""
        hours: dict[float, list[ChunkFile]] = {}
        for chunk in self._tick_chunks():
            hours.setdefault(chunk.start, []).append(chunk)
        order = sorted(hours)
        first = next((span for span in (_span_of(hours[h]) for h in order) if span is not None), None)
        last = next((span for span in (_span_of(hours[h]) for h in reversed(order)) if span is not None), None)
        if first is None or last is None:
            return None
        return first[0], last[1]

    def read(self, start: float, end: float) -> Recording:
        """The ticks and events with start <= t <= end, as a Recording (path = the directory), parsed by the same
        code as a recording file; what was damaged is skipped and said in `warnings`.

        Only the chunks of the span's hours are opened, and of them only the frames that overlap it are decoded.
        The records are handed to the parser an hour at a time: every tick of a chunk lies in the hour its name
        gives, so only chunks of one hour (a clock that went back within it) need merging by time."""
        warnings: list[str] = []
        problems = _SpanProblems()
        all_chunks = self._tick_chunks()
        newest = all_chunks[-1:]
        plan: list[tuple[ChunkFile, list[FrameInfo]]] = []
        header: RecordingHeader | None = None
        for chunk in (c for c in all_chunks if c.start <= end and c.end > start):
            reader = _open_reader(chunk, warnings, self.directory)
            if reader is None:
                continue
            try:
                frames = [f for f in reader.frames(KIND_TICKS) if f.t_last >= start and f.t_first <= end]
                chunk_header = _chunk_header(reader, warnings, self.directory) if frames else None
                if chunk_header is not None:
                    header = header or chunk_header
                    plan.append((chunk, frames))
                problems.count(chunk, reader.damaged)
                _say_damage(reader, warnings, self.directory, running_chunk=chunk in newest, damage=False)
            finally:
                reader.close()
        lines = self._span_lines(plan, start, end, problems)
        recording = RecordParser(self.directory, header or self._any_header()).load_lines(lines)
        warnings += [_damage_sentence(self.directory, name, n) for name, n in problems.damaged.items() if n]
        if problems.activities:
            warnings.append(f"{self.directory}: left out {problems.activities} malformed activities")
        recording.warnings = warnings + recording.warnings
        return recording

    def _span_lines(
        self, plan: list[tuple[ChunkFile, list[FrameInfo]]], start: float, end: float, problems: _SpanProblems
    ) -> Iterator[NumberedLine]:
        """The span's records as lines, in time order, an hour's chunks at a time."""
        carried = _Carried()
        number = 0
        for _, group in itertools.groupby(plan, key=lambda item: item[0].start):
            records: list[tuple[float, int, dict[str, Any]]] = []
            for chunk, frames in group:
                file = open_chunk(chunk.path)
                if file is None:  # deleted by retention since
                    continue
                reader = ChunkReader(chunk, file)
                try:
                    for frame in frames:
                        decoded = _decoded(reader, frame)
                        if decoded is None:
                            continue
                        problems.activities += _self_contained(decoded)
                        for record in decoded:
                            t = _time_of(record, frame.t_first)
                            if start <= t <= end:
                                records.append((t, len(records), record))
                    problems.count(chunk, reader.damaged - reader.scan.damaged)
                finally:
                    reader.close()
            records.sort(key=lambda item: (item[0], item[1]))
            for _, _, record in records:
                carried.mark_ended(record)
                number += 1
                yield number, dumps(record)[:-1].encode(), True

    def _any_header(self) -> RecordingHeader:
        """The header of the newest readable chunk, for a span that holds nothing; a placeholder for a store that
        holds no chunk at all."""
        for chunk in reversed(self._tick_chunks()):
            reader = _open_reader(chunk, [], self.directory)
            if reader is None:
                continue
            try:
                header = _chunk_header(reader, [], self.directory)
            finally:
                reader.close()
            if header is not None:
                return header
        return _empty_header()

    def minutes(self, start: float, end: float) -> list[MinuteRow]:
        """The minute rows with start <= row.start <= end (the minute tier), by time; damaged frames and malformed
        rows are left out."""
        rows: list[MinuteRow] = []
        for chunk in self._minute_chunks():
            if chunk.start > end or chunk.end <= start:
                continue
            reader = _open_reader(chunk, [], self.directory)
            if reader is None:
                continue
            try:
                for frame in reader.frames(KIND_MINUTES):
                    if frame.t_last < start or frame.t_first > end:
                        continue
                    raw = reader.decode(frame)
                    try:
                        decoded = [] if raw is None else decode_records(raw)
                    except (ValueError, RecursionError):
                        continue
                    for record in decoded:
                        try:
                            row = row_from_dict(record)
                        except (ValueError, TypeError, KeyError, AttributeError, ArithmeticError):
                            continue
                        if start <= row.start <= end:
                            rows.append(row)
            finally:
                reader.close()
        rows.sort(key=lambda row: row.start)
        return rows

    def summary(self) -> StoreSummary:
        """What the store holds; reads every frame header and checks every frame's crc (damage is counted)."""
        warnings: list[str] = []
        first = last = None
        ticks = damaged = 0
        tick_chunks = self._tick_chunks()
        newest = tick_chunks[-1:]
        for chunk in tick_chunks:
            reader = _open_reader(chunk, warnings, self.directory)
            if reader is None:
                continue
            try:
                for frame in reader.frames(KIND_TICKS):
                    if read_payload(reader.file, frame) is None:
                        reader.damaged += 1
                        continue
                    ticks += frame.count
                    first = frame.t_first if first is None else min(first, frame.t_first)
                    last = frame.t_last if last is None else max(last, frame.t_last)
                damaged += reader.damaged
                _say_damage(reader, warnings, self.directory, running_chunk=chunk in newest)
            finally:
                reader.close()
        minute_chunks = self._minute_chunks()
        m_first = m_last = None
        for chunk in minute_chunks:
            reader = _open_reader(chunk, warnings, self.directory)
            if reader is None:
                continue
            try:
                for frame in reader.scan.frames:
                    if frame.kind == KIND_HEADER:
                        continue
                    if read_payload(reader.file, frame) is None:
                        reader.damaged += 1
                        continue
                    m_first = frame.t_first if m_first is None else min(m_first, frame.t_first)
                    m_last = frame.t_last if m_last is None else max(m_last, frame.t_last)
                damaged += reader.damaged
            finally:
                reader.close()
        return StoreSummary(
            directory=self.directory,
            format=self.format,
            first=first,
            last=last,
            ticks=ticks,
            minutes_first=m_first,
            minutes_last=m_last,
            bytes=_bytes_under(self.directory),
            tick_chunks=len(tick_chunks),
            minute_chunks=len(minute_chunks),
            damaged_frames=damaged,
            retention=self._retention,
            recorder_pid=recorder_pid(self.directory),
            warnings=tuple(warnings),
        )


def _open_reader(chunk: ChunkFile, warnings: list[str], directory: Path) -> ChunkReader | None:
    file = open_chunk(chunk.path)
    if file is None:
        return None
    reader = ChunkReader(chunk, file)
    if reader.scan.newer is not None:
        warnings.append(
            f"{directory}: skipped {chunk.path.name}: a newer gputui wrote it (frame format {reader.scan.newer})"
        )
        if not reader.scan.frames:
            reader.close()
            return None
    return reader


def _chunk_header(reader: ChunkReader, warnings: list[str], directory: Path) -> RecordingHeader | None:
    data = reader.header()
    if data is None and reader.unreadable:
        warnings.append(
            f"{directory}: skipped {reader.chunk.path.name}: its frames are zstd, which this Python lacks "
            "(install backports.zstd)"
        )
        return None
    if data is None:
        warnings.append(f"{directory}: skipped {reader.chunk.path.name}: its header frame is damaged")
        return None
    try:
        return header_from_dict(data)
    except RecordingFormatError as exc:
        warnings.append(f"{directory}: skipped {reader.chunk.path.name}: {exc}")
        return None
    except (ValueError, TypeError, KeyError, AttributeError, ArithmeticError) as exc:
        warnings.append(
            f"{directory}: skipped {reader.chunk.path.name}: its header is malformed ({type(exc).__name__})"
        )
        return None


def _damage_sentence(directory: Path, name: str, damaged: int) -> str:
    return f"{directory}: skipped {damaged} damaged frame{'s' if damaged > 1 else ''} in {name} (about 10 s each)"


def _say_damage(
    reader: ChunkReader, warnings: list[str], directory: Path, *, running_chunk: bool, damage: bool = True
) -> None:
    """What reading the chunk stepped around, a sentence each: damaged frames (where `damage`), frames in a codec
    this Python lacks, a torn tail (not in the newest chunk while a recorder writes it: a frame being written)."""
    name = reader.chunk.path.name
    if damage and reader.damaged:
        warnings.append(_damage_sentence(directory, name, reader.damaged))
    if reader.unreadable:
        warnings.append(
            f"{directory}: skipped {reader.unreadable} frames of {name}: they are zstd, which this Python lacks "
            "(install backports.zstd)"
        )
    if reader.scan.torn_tail and not (running_chunk and recorder_pid(directory) is not None):
        warnings.append(
            f"{directory}: {name} ends in a frame cut short, as when the recorder is killed mid-write; "
            "read the frames before it"
        )


def _span_of(chunks: list[ChunkFile]) -> tuple[float, float] | None:
    first = last = None
    for chunk in chunks:
        file = open_chunk(chunk.path)
        if file is None:
            continue
        with file:
            for frame in scan(file).frames:
                if frame.kind != KIND_TICKS:
                    continue
                first = frame.t_first if first is None else min(first, frame.t_first)
                last = frame.t_last if last is None else max(last, frame.t_last)
    return None if first is None or last is None else (first, last)


def _time_of(record: dict[str, Any], fallback: float) -> float:
    value = record.get("timestamp") if record.get("type") == "tick" else record.get("t")
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return fallback  # left for the parser to name


def _self_contained(records: list[dict[str, Any]]) -> int:
    """Every tick of a frame made to hold its processes' activities whole (a frame writes each once, at its first
    tick or where it changed), so that a span may start mid-frame and ticks of several chunks may be merged by
    time; returns the activities left out as malformed."""
    carry = ActivityCarry()
    dropped = 0
    for record in records:
        if record.get("type") == "tick":
            dropped += len(carry.fill(record)[1])
    return dropped


class _Carried:
    """The parser carries a process's activity to the ticks that leave it out: fed whole ticks (_self_contained)
    in the order the parser reads them, this puts an explicit `"activity": null` where a process's activity ended,
    so the ended one is not carried on. Every other tick reads as it is, with nothing for the parser to rewrite."""

    def __init__(self) -> None:
        self._carried: set[int] = set()

    def mark_ended(self, record: dict[str, Any]) -> None:
        host = record.get("host") if record.get("type") == "tick" else None
        processes = host.get("processes") if isinstance(host, dict) else None
        if not isinstance(processes, list):
            return
        present = set()
        for proc in processes:
            pid = proc.get("pid") if isinstance(proc, dict) else None
            if not isinstance(pid, int):
                continue
            present.add(pid)
            if proc.get("activity") is not None:
                self._carried.add(pid)
            elif pid in self._carried:
                proc["activity"] = None
                self._carried.discard(pid)
        self._carried &= present


@dataclass
class _SpanProblems:
    damaged: dict[str, int] = field(default_factory=dict)  # chunk name -> frames damaged (crc, decoding, header)
    activities: int = 0  # malformed activities left out

    def count(self, chunk: ChunkFile, damaged: int) -> None:
        self.damaged[chunk.path.name] = self.damaged.get(chunk.path.name, 0) + damaged


def _decoded(reader: ChunkReader, frame: FrameInfo) -> list[dict[str, Any]] | None:
    raw = reader.decode(frame)
    if raw is None:
        return None
    try:
        return decode_records(raw)
    except (ValueError, RecursionError):
        reader.damaged += 1
        return None


def _bytes_under(directory: Path) -> int:
    total = 0
    for sub in (directory, directory / TICKS_DIR, directory / MINUTES_DIR):
        try:
            with os.scandir(sub) as entries:
                total += sum(e.stat(follow_symlinks=False).st_size for e in entries if e.is_file(follow_symlinks=False))
        except OSError:
            continue
    return total


def _empty_header() -> RecordingHeader:
    system = SystemInfo(
        hostname=socket.gethostname(),
        source="replay",
        driver_version=None,
        nvml_version=None,
        cuda_driver_version=None,
        gpu_count=0,
        cpu_count=0,
        kernel="",
    )
    return RecordingHeader(
        schema=1, gputui_version="?", system=system, gpu_info=(), interval_s=1.0, started_at=0.0, utc_offset_s=0
    )
