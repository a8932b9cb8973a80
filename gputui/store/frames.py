"""Reading one chunk's frames without trusting them: headers walked once, each payload checked (crc32) and decoded
against the chunk's dictionary, and what was stepped around (damage, a torn tail, a codec this Python lacks, a newer
gputui's frames) said in a sentence each."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, BinaryIO

from gputui.record.format import RecordingFormatError, RecordingHeader, header_from_dict, loads
from gputui.store import codec as codecs
from gputui.store.chunk import FLAG_DICT, KIND_HEADER, KIND_TICKS, ChunkScan, FrameInfo, read_payload, scan
from gputui.store.columns import decode_records
from gputui.store.files import MAX_CHUNK_BYTES, ChunkFile, open_chunk
from gputui.store.lock import recorder_pid


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


def open_reader(chunk: ChunkFile, warnings: list[str], directory: Path) -> ChunkReader | None:
    file = open_chunk(chunk.path)
    if file is None:
        return None
    size = os.fstat(file.fileno()).st_size
    if size > MAX_CHUNK_BYTES:
        file.close()
        warnings.append(
            f"{directory}: skipped {chunk.path.name}: {size >> 20} MiB, more than any chunk gputui writes "
            f"({MAX_CHUNK_BYTES >> 20} MiB at most)"
        )
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


def header_of(reader: ChunkReader, warnings: list[str], directory: Path) -> RecordingHeader | None:
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


def damage_sentence(directory: Path, name: str, damaged: int) -> str:
    return f"{directory}: skipped {damaged} damaged frame{'s' if damaged > 1 else ''} in {name} (about 10 s each)"


def say_damage(
    reader: ChunkReader, warnings: list[str], directory: Path, *, running_chunk: bool, damage: bool = True
) -> None:
    """What reading the chunk stepped around, a sentence each: damaged frames (where `damage`), frames in a codec
    this Python lacks, a torn tail (not in the newest chunk while a recorder writes it: a frame being written)."""
    name = reader.chunk.path.name
    if damage and reader.damaged:
        warnings.append(damage_sentence(directory, name, reader.damaged))
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


def span_of(chunks: list[ChunkFile]) -> tuple[float, float] | None:
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


def decoded_records(reader: ChunkReader, frame: FrameInfo) -> list[dict[str, Any]] | None:
    raw = reader.decode(frame)
    if raw is None:
        return None
    try:
        return decode_records(raw)
    except (ValueError, RecursionError):
        reader.damaged += 1
        return None
