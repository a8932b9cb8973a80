"""Reading a recording back, losing nothing that can be read.

Only what makes the whole file unreadable raises RecordingError (no file, an empty file, no header, a newer
schema). Everything else is read around and told in `warnings`, one line each: a cut-short last line (a
killed recorder), unreadable lines in the middle (skipped and counted), a damaged or unterminated gzip stream
(read up to the damage), ticks that list other GPUs than the header (the header's GPU list rules).
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from gputui.model import Snapshot
from gputui.record.format import (
    EVENT_KINDS,
    RecordedEvent,
    RecordingError,
    RecordingFormatError,
    RecordingHeader,
    event_from_dict,
    format_clock,
    header_from_dict,
    tick_from_dict,
)

_GZIP_MAGIC = b"\x1f\x8b"
_CHUNK = 1 << 16
_SALVAGE_STEP = 64


class _Bytes:
    """The file's bytes, gunzipped when it is gzip; `problem` says where reading had to stop early."""

    def __init__(self, raw: IO[bytes]) -> None:
        self._raw = raw
        self.problem: str | None = None

    def chunks(self) -> Iterator[bytes]:
        first = self._raw.read(_CHUNK)
        if not first.startswith(_GZIP_MAGIC):
            while first:
                yield first
                first = self._raw.read(_CHUNK)
            return
        # zlib rather than the gzip module: it hands over every byte it could inflate before the damage.
        inflater = zlib.decompressobj(wbits=31)
        chunk = first
        while chunk:
            while chunk:
                if inflater.eof:  # a file of several gzip members, one after the other
                    inflater = zlib.decompressobj(wbits=31)
                before = inflater.copy()
                try:
                    data = inflater.decompress(chunk)
                except zlib.error as exc:
                    yield from self._salvage(before, chunk)
                    self.problem = f"the gzip data is damaged ({exc}); read what came before the damage"
                    return
                if data:
                    yield data
                chunk = inflater.unused_data if inflater.eof else b""
            chunk = self._raw.read(_CHUNK)
        if not inflater.eof:
            self.problem = (
                "the gzip stream ends without its trailer (the recorder did not close the file: killed, or still "
                "running); read all it had flushed"
            )

    @staticmethod
    def _salvage(inflater: Any, chunk: bytes) -> Iterator[bytes]:
        """Inflate a damaged chunk in small steps, to keep what precedes the damage."""
        for start in range(0, len(chunk), _SALVAGE_STEP):
            try:
                data = inflater.decompress(chunk[start : start + _SALVAGE_STEP])
            except zlib.error:
                return
            if data:
                yield data


def _lines(stream: _Bytes) -> Iterator[tuple[int, bytes, bool]]:
    """(line number, bytes, ended by a newline) for every non-blank line."""
    pending = b""
    number = 0
    for chunk in stream.chunks():
        pending += chunk
        *complete, pending = pending.split(b"\n")
        for line in complete:
            number += 1
            if line.strip():
                yield number, line, True
    if pending.strip():
        yield number + 1, pending, False


@dataclass
class Recording:
    """A whole recording in memory, for replay and reports."""

    path: Path
    header: RecordingHeader
    ticks: list[Snapshot] = field(default_factory=list)
    events: list[RecordedEvent] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def start(self) -> float:
        return self.ticks[0].timestamp if self.ticks else self.header.started_at

    @property
    def end(self) -> float:
        return self.ticks[-1].timestamp if self.ticks else self.header.started_at

    @property
    def duration_s(self) -> float:
        return self.end - self.start


class RecordingReader:
    """Reads the header at once (raising RecordingError when the file is not a readable recording) and the
    rest lazily: each `records()` pass reads the file again and leaves what it had to step around in
    `warnings`, complete once the pass is over."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.warnings: list[str] = []
        self.header = self._read_header()
        self._gpu_indices = tuple(info.index for info in self.header.gpu_info)

    def _open(self) -> IO[bytes]:
        try:
            return open(self.path, "rb")
        except FileNotFoundError:
            raise RecordingError(f"no such recording: {self.path}") from None
        except IsADirectoryError:
            raise RecordingError(f"{self.path} is a directory, not a recording") from None
        except OSError as exc:
            raise RecordingError(f"cannot read {self.path}: {exc.strerror or exc}") from exc

    def _read_header(self) -> RecordingHeader:
        with self._open() as raw:
            stream = _Bytes(raw)
            first = next(_lines(stream), None)
        if first is None:
            if stream.problem:
                raise RecordingError(f"{self.path} holds no readable header: {stream.problem}")
            raise RecordingError(f"{self.path} is empty: not a gputui recording")
        try:
            data = json.loads(first[1])
        except ValueError:
            raise RecordingError(f"{self.path} is not a gputui recording: its first line is not JSON") from None
        if not isinstance(data, dict):
            raise RecordingError(f"{self.path} is not a gputui recording: its first line is not a JSON object")
        try:
            return header_from_dict(data)
        except RecordingFormatError as exc:
            raise RecordingError(f"cannot read {self.path}: {exc}") from None

    def records(self) -> Iterator[Snapshot | RecordedEvent]:
        """Ticks and events in file order."""
        self.warnings = []
        bad: list[tuple[int, str]] = []
        unknown: dict[str, int] = {}
        other_gpus: list[tuple[float, tuple[int, ...]]] = []
        ticks = 0
        truncated: int | None = None
        with self._open() as raw:
            stream = _Bytes(raw)
            lines = _lines(stream)
            next(lines, None)  # the header, read already
            for number, line, complete in lines:
                try:
                    data = json.loads(line)
                    if not isinstance(data, dict):
                        raise RecordingFormatError("not a JSON object")
                    kind = data.get("type")
                    if kind == "tick":
                        snapshot = self._tick(data, other_gpus)
                        ticks += 1
                        yield snapshot
                    elif kind == "event" and data.get("kind") in EVENT_KINDS:
                        yield event_from_dict(data)
                    else:
                        label = f"{kind}/{data.get('kind')}" if kind == "event" else str(kind)
                        unknown[label] = unknown.get(label, 0) + 1
                except (ValueError, TypeError, KeyError, AttributeError) as exc:
                    if complete:
                        bad.append((number, str(exc)))
                    elif stream.problem is None:
                        truncated = number
        self._collect_warnings(ticks, bad, unknown, other_gpus, truncated, stream.problem)

    def _tick(self, data: dict[str, Any], other_gpus: list[tuple[float, tuple[int, ...]]]) -> Snapshot:
        gpus = data.get("gpus")
        if not isinstance(gpus, list) or not all(isinstance(g, dict) for g in gpus):
            raise RecordingFormatError("a tick's gpus must be a list of objects")
        indices = tuple(g.get("index") for g in gpus)
        if indices == self._gpu_indices:
            return tick_from_dict(data, self.header, self.header.system)
        snapshot = tick_from_dict(
            {**data, "gpus": [g for g in gpus if g.get("index") in self._gpu_indices]}, self.header, self.header.system
        )
        other_gpus.append((snapshot.timestamp, tuple(int(i) for i in indices)))
        return snapshot

    def _collect_warnings(
        self,
        ticks: int,
        bad: list[tuple[int, str]],
        unknown: dict[str, int],
        other_gpus: list[tuple[float, tuple[int, ...]]],
        truncated: int | None,
        problem: str | None,
    ) -> None:
        out = self.warnings
        if problem:
            out.append(f"{self.path}: {problem} ({ticks} ticks)")
        if truncated is not None:
            out.append(
                f"{self.path}: the last line (line {truncated}) is cut short, as when the recorder is killed "
                f"mid-write; read the {ticks} ticks before it"
            )
        if bad:
            number, reason = bad[0]
            out.append(
                f"{self.path}: skipped {len(bad)} unreadable line{'s' if len(bad) > 1 else ''} "
                f"(first: line {number}: {reason})"
            )
        if unknown:
            kinds = ", ".join(f"{count} {label}" for label, count in sorted(unknown.items()))
            out.append(f"{self.path}: ignored records this gputui does not know ({kinds}); a newer gputui wrote them")
        if other_gpus:
            t, indices = other_gpus[0]
            shown = ",".join(map(str, indices)) or "none"
            header = ",".join(map(str, self._gpu_indices)) or "none"
            out.append(
                f"{self.path}: {len(other_gpus)} ticks list other GPUs than the header ({header}); the first, at "
                f"{format_clock(t, self.header.utc_offset_s)}, lists {shown}; only the header's GPUs are shown"
            )

    def load(self) -> Recording:
        """Everything in memory, with the warnings of the pass."""
        recording = Recording(path=self.path, header=self.header)
        for record in self.records():
            if isinstance(record, Snapshot):
                recording.ticks.append(record)
            else:
                recording.events.append(record)
        recording.warnings = list(self.warnings)
        return recording


def load_recording(path: str | Path) -> Recording:
    """Read a whole recording; raises RecordingError only when nothing at all can be read."""
    return RecordingReader(path).load()
