"""One chunk file being written: created on its first frame, its header frame first, each later frame compressed
against the chunk's dictionary (its first data frame's raw bytes), every write all or nothing: a failed write
(a full disk) is cut back to the last whole frame, so the file never holds half a frame the writer knows of."""

from __future__ import annotations

import contextlib
import os

from gputui.store import codec as codecs
from gputui.store.chunk import FLAG_DICT, KIND_HEADER, frame_bytes
from gputui.store.directory import StoreDirectory

# Files of one stem (a clock that went back into an hour already written, restarts within an hour): .1, .2, ...
MAX_SIBLINGS = 10_000


class ChunkAppender:
    """A chunk of `sub` named after `stem` (`<stem>.gtc`, else `<stem>.<n>.gtc`); `header` is its header frame's
    JSON, written before the first data frame."""

    def __init__(self, directory: StoreDirectory, sub: str, stem: str, suffix: str, header: bytes) -> None:
        self._directory = directory
        self._sub = sub
        self._stem = stem
        self._suffix = suffix
        self._header = header
        self._codec = codecs.preferred_codec()
        self._fd: int | None = None
        self._good = 0  # bytes of whole frames in the file
        self._header_written = False
        self._dictionary: codecs.Dictionary | None = None
        self.name: str | None = None

    @property
    def size(self) -> int:
        return self._good

    def append(self, kind: int, raw: bytes, count: int, t_first: float, t_last: float) -> None:
        """Write one frame (and the header frame before the first); OSError when it could not be, the file then
        as it was before."""
        if self._fd is None:
            self._create()
        assert self._fd is not None
        pending = b""
        if not self._header_written:
            pending = frame_bytes(
                KIND_HEADER, self._codec, 0, 0, codecs.compress(self._header, self._codec), t_first, t_first
            )
        flags = 0 if self._dictionary is None else FLAG_DICT
        payload = codecs.compress(raw, self._codec, self._dictionary)
        pending += frame_bytes(kind, self._codec, flags, count, payload, t_first, t_last)
        try:
            _write_all(self._fd, pending)
        except OSError:
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, self._good)
            raise
        self._good += len(pending)
        self._header_written = True
        if self._dictionary is None:
            self._dictionary = codecs.Dictionary(raw)

    def _create(self) -> None:
        for n in range(MAX_SIBLINGS):
            name = f"{self._stem}{'' if n == 0 else f'.{n}'}{self._suffix}"
            try:
                self._fd = self._directory.create(self._sub, name)
            except FileExistsError:
                continue
            self.name = name
            return
        raise OSError(f"{MAX_SIBLINGS} chunks named {self._stem} exist already")

    def close(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = None


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]
