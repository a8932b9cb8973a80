"""Compressing a frame's payload: zstd where this Python has it (3.14's compression.zstd, else the backports.zstd
dependency), zlib where neither imports. The codec goes into each frame's header, so a store written with one reads
with the other wherever both exist, and says what it lacks where not.

A chunk's first data frame (its raw bytes) is the dictionary of every later frame in the chunk: 10 s of ticks look
much like the 10 s before, and a raw-content dictionary needs no training step and no chain between frames.
"""

from __future__ import annotations

import zlib
from types import ModuleType

zstd: ModuleType | None
try:  # Python 3.14+
    from compression import zstd  # type: ignore[import-not-found, no-redef]
except ImportError:  # pragma: no cover - depends on the Python
    try:
        from backports import zstd
    except ImportError:
        zstd = None

CODEC_NONE = 0
CODEC_ZLIB = 1
CODEC_ZSTD = 2
CODEC_NAMES = {CODEC_NONE: "none", CODEC_ZLIB: "zlib", CODEC_ZSTD: "zstd"}
ZSTD_LEVEL = 3
ZLIB_LEVEL = 6
# The most one frame may inflate to: 10 s of 32 GPUs is ~0.5 MB raw; a frame beyond this is not one of ours.
MAX_DECODED_BYTES = 256 << 20


class CodecError(ValueError):
    """A payload that does not decode: damaged, not ours, or in a codec this Python lacks."""


def preferred_codec() -> int:
    return CODEC_ZSTD if zstd is not None else CODEC_ZLIB


class Dictionary:
    """A chunk's dictionary: the raw bytes, and zstd's prepared form made once."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self._zstd: object | None = None

    def zstd_dict(self) -> object:
        if self._zstd is None:
            assert zstd is not None
            self._zstd = zstd.ZstdDict(self.data, is_raw=True)
        return self._zstd


def compress(data: bytes, codec: int, dictionary: Dictionary | None = None) -> bytes:
    if codec == CODEC_ZSTD:
        if zstd is None:
            raise CodecError("zstd is not available in this Python")
        options = {zstd.CompressionParameter.compression_level: ZSTD_LEVEL, zstd.CompressionParameter.checksum_flag: 1}
        kwargs = {} if dictionary is None else {"zstd_dict": dictionary.zstd_dict()}
        return bytes(zstd.compress(data, options=options, **kwargs))
    if codec == CODEC_ZLIB:
        packer = (
            zlib.compressobj(ZLIB_LEVEL) if dictionary is None else zlib.compressobj(ZLIB_LEVEL, zdict=dictionary.data)
        )
        return packer.compress(data) + packer.flush()
    if codec == CODEC_NONE:
        return data
    raise CodecError(f"unknown codec {codec}")


def decompress(data: bytes, codec: int, dictionary: Dictionary | None = None) -> bytes:
    """The payload's bytes; CodecError when it does not decode whole within MAX_DECODED_BYTES."""
    if codec == CODEC_ZSTD:
        return _unzstd(data, dictionary)
    if codec == CODEC_ZLIB:
        unpacker = zlib.decompressobj() if dictionary is None else zlib.decompressobj(zdict=dictionary.data)
        try:
            out = unpacker.decompress(data, MAX_DECODED_BYTES)
        except zlib.error as exc:
            raise CodecError(f"zlib: {exc}") from None
        if not unpacker.eof or unpacker.unconsumed_tail:
            raise CodecError("zlib: the payload is cut short or inflates beyond any frame's size")
        return out
    if codec == CODEC_NONE:
        return data
    raise CodecError(f"unknown codec {codec} (a newer gputui wrote it)")


def _unzstd(data: bytes, dictionary: Dictionary | None) -> bytes:
    if zstd is None:
        raise CodecError("the frame is zstd, which this Python lacks (install backports.zstd)")
    try:
        unpacker = zstd.ZstdDecompressor(**({} if dictionary is None else {"zstd_dict": dictionary.zstd_dict()}))
        out = unpacker.decompress(data, max_length=MAX_DECODED_BYTES)
    except zstd.ZstdError as exc:
        raise CodecError(f"zstd: {exc}") from None
    if not unpacker.eof or unpacker.unused_data:
        raise CodecError("zstd: the payload is cut short or inflates beyond any frame's size")
    return bytes(out)
