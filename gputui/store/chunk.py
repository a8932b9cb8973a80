"""The frame format every chunk file is made of, and walking a chunk's frames without trusting it.

A chunk is frames one after the other, appended and never rewritten. A frame is a fixed header, then its payload:

    magic "GTF" | version u8 | kind u8 | codec u8 | flags u8 | records u32 | payload length u32 |
    crc32 of the payload u32 | first time f64 | last time f64 | crc32 of the header's bytes before it u32
    (little-endian, 39 bytes; records: the ticks, or the minute rows, the frame holds)

The header's own checksum lets a reader tell a damaged header from a good one and look for the next frame after
damage (by its magic), so damage costs the frames it touches and no more. A frame cut short at the end (a recorder
killed mid-write) is the torn tail: skipped and counted. A length beyond MAX_FRAME_BYTES is damage, never read.
"""

from __future__ import annotations

import os
import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO

FRAME_VERSION = 1
MAGIC = b"GTF"
KIND_HEADER = 1  # the recording header (format.header_to_dict), JSON
KIND_TICKS = 2  # records (ticks and events) encoded by columns.encode_records
KIND_MINUTES = 3  # the minute tier's rows
FLAG_DICT = 1  # compressed against the chunk's dictionary (its first data frame's payload)
# The most a frame's payload may hold: 10 s of 32 GPUs compress to ~20 KB; anything near this is not ours.
MAX_FRAME_BYTES = 64 << 20

_HEAD = struct.Struct("<3sBBBBIIIdd")
_CRC = struct.Struct("<I")
HEADER_BYTES = _HEAD.size + _CRC.size
_RESYNC_BLOCK = 1 << 20


@dataclass(frozen=True, slots=True)
class FrameInfo:
    """One frame's header, and where its payload is."""

    offset: int  # of the header
    kind: int
    codec: int
    flags: int
    count: int
    length: int
    crc: int
    t_first: float
    t_last: float

    @property
    def end(self) -> int:
        return self.offset + HEADER_BYTES + self.length


@dataclass(frozen=True, slots=True)
class ChunkScan:
    """What walking a chunk's headers found: its frames in file order, damage stepped over, a torn tail, and a
    frame from a newer gputui (the walk stops there: what follows cannot be read)."""

    frames: tuple[FrameInfo, ...]
    damaged: int
    torn_tail: bool
    newer: int | None  # the frame version found, where newer than ours
    size: int


def frame_bytes(kind: int, codec: int, flags: int, count: int, payload: bytes, t_first: float, t_last: float) -> bytes:
    head = _HEAD.pack(
        MAGIC, FRAME_VERSION, kind, codec, flags, count, len(payload), zlib.crc32(payload), t_first, t_last
    )
    return head + _CRC.pack(zlib.crc32(head)) + payload


def _parse_header(data: bytes, offset: int) -> FrameInfo | int | None:
    """The header at the start of `data`; its version where newer than ours; None where it is not a good header."""
    if len(data) < HEADER_BYTES or data[:3] != MAGIC:
        return None
    _magic, version, kind, codec, flags, count, length, crc, t_first, t_last = _HEAD.unpack_from(data)
    (head_crc,) = _CRC.unpack_from(data, _HEAD.size)
    if zlib.crc32(data[: _HEAD.size]) != head_crc:
        return None
    if version > FRAME_VERSION:
        return int(version)
    if version != FRAME_VERSION or length > MAX_FRAME_BYTES:
        return None
    return FrameInfo(offset, kind, codec, flags, count, length, crc, t_first, t_last)


def scan(file: BinaryIO) -> ChunkScan:
    """Walk the frame headers of an open chunk (reads headers, seeks over payloads; reads on only after damage)."""
    size = os.fstat(file.fileno()).st_size
    frames: list[FrameInfo] = []
    damaged = 0
    torn = False
    newer: int | None = None
    pos = 0
    while pos < size:
        file.seek(pos)
        head = file.read(HEADER_BYTES)
        found = _parse_header(head, pos)
        if isinstance(found, FrameInfo) and found.end <= size:
            frames.append(found)
            pos = found.end
            continue
        if isinstance(found, int):
            newer = found
            break
        nxt = _resync(file, pos + 1, size)
        if nxt is None:
            # nothing good after it: a frame cut short (a header whole or not) is the torn tail, else damage
            torn = isinstance(found, FrameInfo) or len(head) < HEADER_BYTES
            damaged += 0 if torn else 1
            break
        damaged += 1
        pos = nxt
    return ChunkScan(tuple(frames), damaged, torn, newer, size)


def _resync(file: BinaryIO, pos: int, size: int) -> int | None:
    """The offset of the next good, whole frame (or a newer one) at or after `pos`; None where there is none."""
    while pos < size:
        file.seek(pos)
        block = file.read(_RESYNC_BLOCK + HEADER_BYTES)  # overlapping the next block by a header
        start = 0
        while (i := block.find(MAGIC, start)) != -1 and i < _RESYNC_BLOCK:
            found = _parse_header(block[i : i + HEADER_BYTES], pos + i)
            if isinstance(found, int) or (isinstance(found, FrameInfo) and found.end <= size):
                return pos + i
            start = i + 1
        pos += _RESYNC_BLOCK
    return None


def read_payload(file: BinaryIO, frame: FrameInfo) -> bytes | None:
    """The frame's payload as written, None where its crc32 does not match (damaged since)."""
    file.seek(frame.offset + HEADER_BYTES)
    payload = file.read(frame.length)
    if len(payload) != frame.length or zlib.crc32(payload) != frame.crc:
        return None
    return payload


def frames_of(file: BinaryIO, found: ChunkScan) -> Iterator[tuple[FrameInfo, bytes | None]]:
    """Each frame with its checked payload (None: damaged)."""
    for frame in found.frames:
        yield frame, read_payload(file, frame)
