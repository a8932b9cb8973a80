"""Finding a store's chunks by name, and opening one to read without trusting it: a chunk's name says the UTC hour
(ticks) or day (minutes) of its first record, so a reader picks the few chunks a span needs without opening the
rest; a file is opened without following a link and read only when it is a regular file."""

from __future__ import annotations

import calendar
import os
import re
import stat
import time
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

TICK_NAME = re.compile(r"^(\d{8}T\d{2})(?:\.(\d{1,5}))?\.gtc$")
MINUTE_NAME = re.compile(r"^(\d{8})(?:\.(\d{1,5}))?\.gtm$")
HOUR_S = 3600.0
DAY_S = 86400.0
# An hour of 32 GPUs at 0.25 s is ~60 MB as JSON lines with zstd: a "chunk" far beyond that is not one of ours, and
# walking it after damage would read it all.
MAX_CHUNK_BYTES = 512 << 20


@dataclass(frozen=True, slots=True)
class ChunkFile:
    path: Path
    start: float  # the UTC hour (or day) its name gives: every tick in it lies in [start, start + period)
    period: float
    n: int  # 0, 1, 2 for <stem>, <stem>.1, <stem>.2: in the order they were written

    @property
    def end(self) -> float:
        return self.start + self.period


def list_chunks(directory: Path, pattern: re.Pattern[str], period: float) -> list[ChunkFile]:
    """The chunks in `directory` by time, then in the order written; names of other files are left alone."""
    try:
        names = os.listdir(directory)
    except OSError:
        return []
    found = [chunk for name in names if (chunk := chunk_named(directory, name, pattern, period)) is not None]
    found.sort(key=lambda c: (c.start, c.n))
    return found


def chunk_named(directory: Path, name: str, pattern: re.Pattern[str], period: float) -> ChunkFile | None:
    """The chunk `name` names; None for a name that is not a chunk's."""
    match = pattern.match(name)
    if match is None:
        return None
    try:
        start = float(calendar.timegm(time.strptime(match.group(1), "%Y%m%dT%H" if period == HOUR_S else "%Y%m%d")))
    except ValueError:
        return None
    return ChunkFile(directory / name, start, period, int(match.group(2) or 0))


def open_chunk(path: Path) -> BinaryIO | None:
    """The chunk open for reading; None where it is gone (retention deleted it) or is no regular file."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        return None
    return os.fdopen(fd, "rb")
