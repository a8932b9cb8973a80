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
from typing import Any

from gputui.model import SystemInfo
from gputui.record.format import (
    ActivityCarry,
    RecordingHeader,
    dumps,
)
from gputui.record.reader import NumberedLine, Recording, RecordParser
from gputui.store.chunk import (
    KIND_HEADER,
    KIND_MINUTES,
    KIND_TICKS,
    FrameInfo,
    read_payload,
)
from gputui.store.columns import decode_records
from gputui.store.directory import MINUTES_DIR, TICKS_DIR, read_store
from gputui.store.errors import NoStore
from gputui.store.files import (
    DAY_S,
    HOUR_S,
    MINUTE_NAME,
    TICK_NAME,
    ChunkFile,
    list_chunks,
    open_chunk,
)
from gputui.store.frames import (
    ChunkReader,
    damage_sentence,
    decoded_records,
    header_of,
    open_reader,
    say_damage,
    span_of,
)
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
        first = next((span for span in (span_of(hours[h]) for h in order) if span is not None), None)
        last = next((span for span in (span_of(hours[h]) for h in reversed(order)) if span is not None), None)
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
            reader = open_reader(chunk, warnings, self.directory)
            if reader is None:
                continue
            try:
                frames = [f for f in reader.frames(KIND_TICKS) if f.t_last >= start and f.t_first <= end]
                chunk_header = header_of(reader, warnings, self.directory) if frames else None
                if chunk_header is not None:
                    header = header or chunk_header
                    plan.append((chunk, frames))
                problems.count(chunk, reader.damaged)
                say_damage(reader, warnings, self.directory, running_chunk=chunk in newest, damage=False)
            finally:
                reader.close()
        lines = self._span_lines(plan, start, end, problems)
        recording = RecordParser(self.directory, header or self._any_header(), whole_ticks=True).load_lines(lines)
        warnings += [damage_sentence(self.directory, name, n) for name, n in problems.damaged.items() if n]
        if problems.activities:
            warnings.append(f"{self.directory}: left out {problems.activities} malformed activities")
        recording.warnings = warnings + recording.warnings
        return recording

    def _span_lines(
        self, plan: list[tuple[ChunkFile, list[FrameInfo]]], start: float, end: float, problems: _SpanProblems
    ) -> Iterator[NumberedLine]:
        """The span's records as lines, in time order, an hour's chunks at a time."""
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
                        decoded = decoded_records(reader, frame)
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
                number += 1
                yield number, dumps(record)[:-1].encode(), True

    def _any_header(self) -> RecordingHeader:
        """The header of the newest readable chunk, for a span that holds nothing; a placeholder for a store that
        holds no chunk at all."""
        for chunk in reversed(self._tick_chunks()):
            reader = open_reader(chunk, [], self.directory)
            if reader is None:
                continue
            try:
                header = header_of(reader, [], self.directory)
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
            reader = open_reader(chunk, [], self.directory)
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
            reader = open_reader(chunk, warnings, self.directory)
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
                say_damage(reader, warnings, self.directory, running_chunk=chunk in newest)
            finally:
                reader.close()
        minute_chunks = self._minute_chunks()
        m_first = m_last = None
        for chunk in minute_chunks:
            reader = open_reader(chunk, warnings, self.directory)
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


@dataclass
class _SpanProblems:
    damaged: dict[str, int] = field(default_factory=dict)  # chunk name -> frames damaged (crc, decoding, header)
    activities: int = 0  # malformed activities left out

    def count(self, chunk: ChunkFile, damaged: int) -> None:
        self.damaged[chunk.path.name] = self.damaged.get(chunk.path.name, 0) + damaged


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
