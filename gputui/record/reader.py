"""Reading a recording back, losing nothing that can be read.

Only what makes the whole file unreadable raises RecordingError (no file, an empty file, no header, a newer
schema). Everything else is read around and told in `warnings`, one line each: a cut-short last line (a
killed recorder), unreadable lines in the middle (skipped and counted), a damaged or unterminated gzip stream
(read up to the damage), ticks that list other GPUs than the header (the header's GPU list rules).

A recording may come from anyone (a file another user handed over, or planted, or another machine's), so:
every string of every line is cleaned as it is parsed (format.loads), and a replay and a report show a terminal
escape in it as a visible escape, never raw; and reading it is bounded: a line longer than MAX_LINE_BYTES is never
held whole but skipped and counted, and a gzip stream is inflated to at most GZIP_MAX_RATIO times the file's size
(GZIP_MIN_BUDGET for a small file), then read no further.
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, overload

from gputui.model import Snapshot
from gputui.record.format import (
    EVENT_KINDS,
    ActivityCarry,
    RecordedEvent,
    RecordingError,
    RecordingFormatError,
    RecordingHeader,
    dumps,
    event_from_dict,
    format_clock,
    header_from_dict,
    loads,
    tick_from_dict,
)

_GZIP_MAGIC = b"\x1f\x8b"
_CHUNK = 1 << 16
_SALVAGE_STEP = 64
_MIB = 1 << 20
# A tick of 8 GPUs with their processes is ~13-16 KB (the simulated 8-GPU machine, `diagnose --demo contention
# --demo-gpus 8 --record`): a thousand times that is room for hundreds of processes with long command lines, and
# bounds what one line costs to read (its bytes, then what json makes of them).
MAX_LINE_BYTES = 16 * _MIB
# gputui's recordings inflate ~14 times (the same machine, 10 minutes, .jsonl.gz); a stream that inflates past
# 200 times its file's size is not one of them but a bomb (zeros inflate ~1000 times). A ratio rather than an
# absolute cap, so that a long real recording always reads whole while the work stays a multiple of the file's
# size, as a plain file's is; the floor keeps a small file that is cut short or synced often from tripping it.
GZIP_MAX_RATIO = 200
GZIP_MIN_BUDGET = 64 * _MIB
# A line as read: its number, its bytes (None: longer than MAX_LINE_BYTES) and whether a newline ended it.
NumberedLine = tuple[int, bytes | None, bool]
# Ticks rebuilt at once: 64 ticks of 8 GPUs take ~30 ms, the most a replay seek waits for.
TICKS_PER_CHUNK = 64


class _Bytes:
    """The file's bytes, gunzipped when it is gzip; `problem` says where reading had to stop early."""

    def __init__(self, raw: IO[bytes]) -> None:
        self._raw = raw
        self.problem: str | None = None

    def chunks(self) -> Iterator[bytes]:
        """The file's bytes in pieces of at most _CHUNK (gunzipped, each piece inflated on its own)."""
        first = self._raw.read(_CHUNK)
        if not first.startswith(_GZIP_MAGIC):
            while first:
                yield first
                first = self._raw.read(_CHUNK)
            return
        budget = max(GZIP_MAX_RATIO * os.fstat(self._raw.fileno()).st_size, GZIP_MIN_BUDGET)
        inflated = 0
        for data in self._inflate(first):
            inflated += len(data)
            if inflated > budget:
                self.problem = (
                    f"the gzip data inflates to more than {GZIP_MAX_RATIO} times its size, as no recording does; "
                    f"read its first {budget // _MIB} MiB"
                )
                return
            yield data

    def _inflate(self, pending: bytes) -> Iterator[bytes]:
        # zlib rather than the gzip module: it hands over every byte it could inflate before the damage; and at most
        # _CHUNK bytes at a time (max_length), so that a bomb never lands in memory whole.
        inflater = zlib.decompressobj(wbits=31)
        full = False  # the last piece filled max_length: zlib may hold more output for the same input
        while True:
            if not pending and not full:
                pending = self._raw.read(_CHUNK)
                if not pending:
                    break
            if inflater.eof:  # a file of several gzip members, one after the other
                inflater = zlib.decompressobj(wbits=31)
            before = inflater.copy()
            try:
                data = inflater.decompress(pending, _CHUNK)
            except zlib.error as exc:
                yield from self._salvage(before, pending)
                self.problem = f"the gzip data is damaged ({exc}); read what came before the damage"
                return
            full = len(data) == _CHUNK and not inflater.eof
            pending = inflater.unconsumed_tail or (inflater.unused_data if inflater.eof else b"")
            if data:
                yield data
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
                data = inflater.decompress(chunk[start : start + _SALVAGE_STEP], _CHUNK)
            except zlib.error:
                return
            if data:
                yield data


def _lines(stream: _Bytes) -> Iterator[tuple[int, bytes | None, bool]]:
    """(line number, bytes, ended by a newline) for every non-blank line; a line longer than MAX_LINE_BYTES comes
    as None, its bytes dropped as they arrive: no more than MAX_LINE_BYTES of a line is ever held."""
    pending = bytearray()
    overlong = False
    number = 0
    for chunk in stream.chunks():
        start = 0
        while (end := chunk.find(b"\n", start)) != -1:
            number += 1
            if overlong or len(pending) + end - start > MAX_LINE_BYTES:
                yield number, None, True
            else:
                line = bytes(pending) + chunk[start:end]
                if line.strip():
                    yield number, line, True
            overlong = False
            pending.clear()
            start = end + 1
        if not overlong and len(pending) + len(chunk) - start > MAX_LINE_BYTES:
            overlong = True
            pending.clear()
        elif not overlong:
            pending += chunk[start:]
    if overlong:
        yield number + 1, None, False
    elif pending.strip():
        yield number + 1, bytes(pending), False


class TickSequence(Sequence[Snapshot]):
    """Ticks by index, oldest first, with a list's slices and negative indices; each kind says how it gets one
    tick (`_at`) and how many it holds."""

    def _at(self, index: int) -> Snapshot:
        raise NotImplementedError

    @overload
    def __getitem__(self, index: int) -> Snapshot: ...

    @overload
    def __getitem__(self, index: slice) -> list[Snapshot]: ...

    def __getitem__(self, index: int | slice) -> Snapshot | list[Snapshot]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError("tick index out of range")
        return self._at(index)


class TickStore(TickSequence):
    """The ticks of a recording, kept as compressed JSON lines and rebuilt into Snapshots when read.

    An overnight recording of 8 GPUs then takes tens of MB, not a gigabyte of Snapshots. A chunk of ticks is
    rebuilt at a time and the last one kept, so reading in order (replay, reports) rebuilds each tick once.
    """

    def __init__(self, header: RecordingHeader) -> None:
        self._header = header
        self.timestamps: list[float] = []
        self._chunks: list[bytes] = []
        self._pending: list[bytes] = []
        self._cache: tuple[int, list[Snapshot]] | None = None

    def append(self, line: bytes, timestamp: float) -> None:
        """A tick line already read and found good, and its time."""
        self.timestamps.append(timestamp)
        self._pending.append(line)
        if len(self._pending) == TICKS_PER_CHUNK:
            self._chunks.append(zlib.compress(b"\n".join(self._pending), 1))
            self._pending = []

    def __len__(self) -> int:
        return len(self.timestamps)

    def _at(self, index: int) -> Snapshot:
        chunk, offset = divmod(index, TICKS_PER_CHUNK)
        return self._chunk(chunk)[offset]

    def __iter__(self) -> Iterator[Snapshot]:
        for chunk in range(-(-len(self) // TICKS_PER_CHUNK)):
            yield from self._chunk(chunk)

    def _chunk(self, number: int) -> list[Snapshot]:
        if self._cache is not None and self._cache[0] == number:
            return self._cache[1]
        lines = self._pending if number == len(self._chunks) else zlib.decompress(self._chunks[number]).split(b"\n")
        header = self._header
        ticks = [tick_from_dict(loads(line), header, header.system) for line in lines]
        self._cache = (number, ticks)
        return ticks


@dataclass
class Recording:
    """A whole recording, for replay and reports: the ticks compact in memory, the events as read."""

    path: Path
    header: RecordingHeader
    ticks: TickStore
    events: list[RecordedEvent] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def start(self) -> float:
        return self.ticks.timestamps[0] if self.ticks else self.header.started_at

    @property
    def end(self) -> float:
        return self.ticks.timestamps[-1] if self.ticks else self.header.started_at

    @property
    def duration_s(self) -> float:
        return self.end - self.start


class RecordParser:
    """The checks every record of a recording goes through, over lines from any origin (a file, a history store's
    frames): each line parsed and cleaned, malformed ones skipped and counted, activities carried, ticks that list
    other GPUs than the header trimmed to the header's; what it stepped around is left in `warnings`, complete once
    a pass is over."""

    def __init__(self, path: Path, header: RecordingHeader, *, whole_ticks: bool = False) -> None:
        self.path = path
        self.header = header
        # Each tick holds its processes' activities whole (a history store's, made so as it reads them): nothing is
        # carried from one tick to the next, where a file writes each activity once and the ticks after leave it out.
        self._whole_ticks = whole_ticks
        self.warnings: list[str] = []
        self._gpu_indices = tuple(info.index for info in header.gpu_info)

    def records(
        self, lines: Iterable[NumberedLine], stopped_early: Callable[[], str | None] = lambda: None
    ) -> Iterator[tuple[Snapshot | RecordedEvent, bytes]]:
        """Each record of `lines` (the header's line not among them) with the line that holds it (for a tick with
        GPUs the header lacks, the line without them); `stopped_early`, asked once the lines are over, says where their
        origin had to stop early."""
        self.warnings = []
        bad: list[tuple[int, str]] = []
        unknown: dict[str, int] = {}
        other_gpus: list[tuple[float, tuple[int, ...]]] = []
        carry = ActivityCarry()
        malformed: list[tuple[int, str]] = []  # activities left out of the ticks that held them
        ticks = 0
        truncated: int | None = None
        for number, line, complete in lines:
            if line is None:
                bad.append((number, f"longer than {MAX_LINE_BYTES / _MIB:g} MiB, the most a line may hold"))
                continue
            try:
                data = loads(line)
                if not isinstance(data, dict):
                    raise RecordingFormatError("not a JSON object")
                kind = data.get("type")
                if kind == "tick":
                    changed, problems = (False, []) if self._whole_ticks else carry.fill(data)
                    malformed += [(number, problem) for problem in problems]
                    snapshot, kept = self._tick(data, dumps(data)[:-1].encode() if changed else line, other_gpus)
                    ticks += 1
                    yield snapshot, kept
                elif kind == "event" and data.get("kind") in EVENT_KINDS:
                    yield event_from_dict(data), line
                else:
                    label = f"{kind}/{data.get('kind')}" if kind == "event" else str(kind)
                    unknown[label] = unknown.get(label, 0) + 1
            # RecursionError: arrays nested thousands deep; ArithmeticError: a number too large for a float.
            except (ValueError, TypeError, KeyError, AttributeError, ArithmeticError, RecursionError) as exc:
                if complete:
                    bad.append((number, str(exc)))
                elif stopped_early() is None:
                    truncated = number
        self._collect_warnings(ticks, bad, unknown, other_gpus, truncated, stopped_early())
        if malformed:
            number, problem = malformed[0]
            many = f"{len(malformed)} malformed activities" if len(malformed) > 1 else "a malformed activity"
            self.warnings.append(f"{self.path}: left out {many} (first: line {number}: {problem})")

    def _tick(
        self, data: dict[str, Any], line: bytes, other_gpus: list[tuple[float, tuple[int, ...]]]
    ) -> tuple[Snapshot, bytes]:
        gpus = data.get("gpus")
        if not isinstance(gpus, list) or not all(isinstance(g, dict) for g in gpus):
            raise RecordingFormatError("a tick's gpus must be a list of objects")
        indices = tuple(g.get("index") for g in gpus)
        if indices == self._gpu_indices:
            return tick_from_dict(data, self.header, self.header.system), line
        data = {**data, "gpus": [g for g in gpus if g.get("index") in self._gpu_indices]}
        snapshot = tick_from_dict(data, self.header, self.header.system)
        other_gpus.append((snapshot.timestamp, tuple(int(i) for i in indices)))
        return snapshot, dumps(data)[:-1].encode()

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

    def load_lines(
        self, lines: Iterable[NumberedLine], stopped_early: Callable[[], str | None] = lambda: None
    ) -> Recording:
        """The whole recording `lines` hold, with the warnings of the pass; each tick is read (and checked) once."""
        recording = Recording(path=self.path, header=self.header, ticks=TickStore(self.header))
        for record, line in self.records(lines, stopped_early):
            if isinstance(record, Snapshot):
                recording.ticks.append(line, record.timestamp)
            else:
                recording.events.append(record)
        recording.warnings = list(self.warnings)
        return recording


class RecordingReader(RecordParser):
    """Reads the header at once (raising RecordingError when the file is not a readable recording) and the
    rest lazily: each pass reads the file again and leaves what it had to step around in `warnings`."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        super().__init__(self.path, self._read_header())

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
        if first[1] is None:
            raise RecordingError(
                f"{self.path} is not a gputui recording: its first line is longer than {MAX_LINE_BYTES / _MIB:g} MiB"
            )
        try:
            data = loads(first[1])
        except (ValueError, RecursionError):
            raise RecordingError(f"{self.path} is not a gputui recording: its first line is not JSON") from None
        if not isinstance(data, dict):
            raise RecordingError(f"{self.path} is not a gputui recording: its first line is not a JSON object")
        try:
            return header_from_dict(data)
        except RecordingFormatError as exc:
            raise RecordingError(f"cannot read {self.path}: {exc}") from None
        except (ValueError, TypeError, KeyError, AttributeError, ArithmeticError) as exc:  # a value of the wrong kind
            raise RecordingError(f"cannot read {self.path}: its header is malformed ({type(exc).__name__})") from None

    def load(self) -> Recording:
        """The whole recording, with the warnings of the pass; each tick is read (and checked) once here."""
        with self._open() as raw:
            stream = _Bytes(raw)
            lines = _lines(stream)
            next(lines, None)  # the header, read already
            return self.load_lines(lines, lambda: stream.problem)


def load_recording(path: str | Path) -> Recording:
    """Read a whole recording; raises RecordingError only when nothing at all can be read."""
    return RecordingReader(path).load()
