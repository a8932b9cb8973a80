"""How long and how much history a store keeps."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Collection
from dataclasses import asdict, dataclass
from typing import Any

from gputui.store.directory import MINUTES_DIR, TICKS_DIR, StoreDirectory
from gputui.store.files import DAY_S, HOUR_S, MINUTE_NAME, TICK_NAME, ChunkFile, chunk_named


@dataclass(frozen=True, slots=True)
class Retention:
    """Tick chunks wholly older than `tick_days` and minute chunks older than `minute_days` are deleted as chunks
    close, and the oldest chunks while the store holds more than `max_bytes`."""

    tick_days: float = 7.0
    minute_days: float = 90.0
    max_bytes: int = 1 << 30


DEFAULT_RETENTION = Retention()


def retention_to_dict(retention: Retention) -> dict[str, Any]:
    return asdict(retention)


def retention_from(store: dict[str, Any]) -> Retention:
    """The retention a recorder wrote into STORE; the defaults where it wrote none or one malformed."""
    kept = store.get("retention")
    if not isinstance(kept, dict):
        return DEFAULT_RETENTION
    try:
        return Retention(
            tick_days=float(kept.get("tick_days", DEFAULT_RETENTION.tick_days)),
            minute_days=float(kept.get("minute_days", DEFAULT_RETENTION.minute_days)),
            max_bytes=int(kept.get("max_bytes", DEFAULT_RETENTION.max_bytes)),
        )
    except (TypeError, ValueError, OverflowError):
        return DEFAULT_RETENTION


def prune(directory: StoreDirectory, retention: Retention, newest: float, open_names: Collection[str]) -> int:
    """Delete the tick chunks wholly older than tick_days and the minute chunks older than minute_days before
    `newest` (the latest tick's time), then, while the store holds more than max_bytes, the oldest tick chunks and,
    when none is left, the oldest minute chunks; never a chunk named in `open_names`. Returns the files deleted.
    A file that cannot be deleted (gone already, another's) is left: the next chunk's close tries again."""
    ticks = _chunks(directory, TICKS_DIR, TICK_NAME, HOUR_S)
    minutes = _chunks(directory, MINUTES_DIR, MINUTE_NAME, DAY_S)
    deleted = 0
    kept: list[tuple[str, ChunkFile, int]] = []
    for sub, chunks, days in ((TICKS_DIR, ticks, retention.tick_days), (MINUTES_DIR, minutes, retention.minute_days)):
        for chunk, size in chunks:
            if chunk.end <= newest - days * DAY_S and chunk.path.name not in open_names:
                deleted += _unlink(directory, sub, chunk.path.name)
            else:
                kept.append((sub, chunk, size))
    total = sum(size for _, _, size in kept) + _small_files(directory)
    # oldest first: the tick tier before the minute tier, which keeps the longer view
    for sub, chunk, size in sorted(kept, key=lambda k: (k[0] != TICKS_DIR, k[1].start, k[1].n)):
        if total <= retention.max_bytes:
            break
        if chunk.path.name in open_names:
            continue
        if _unlink(directory, sub, chunk.path.name):
            deleted += 1
            total -= size
    return deleted


def _chunks(
    directory: StoreDirectory, sub: str, pattern: re.Pattern[str], period: float
) -> list[tuple[ChunkFile, int]]:
    out = []
    for name in directory.names(sub):
        chunk = chunk_named(directory.path / sub, name, pattern, period)
        if chunk is None:
            continue
        try:
            out.append((chunk, directory.size(sub, name)))
        except OSError:
            continue
    return out


def _small_files(directory: StoreDirectory) -> int:
    """What DIR itself holds (STORE, the lock): counted, never deleted."""
    total = 0
    for name in directory.names(""):
        with contextlib.suppress(OSError):
            total += directory.size("", name)
    return total


def _unlink(directory: StoreDirectory, sub: str, name: str) -> int:
    try:
        directory.unlink(sub, name)
    except OSError:
        return 0
    return 1
