"""The store's writer: RecordingWriter's duck interface, writing into a store's hour chunks on a thread of its own.

`record()` and `put()` only enqueue (the sampling loop never waits for a disk). The thread gathers ~10 s of ticks
and the events among them into a frame, and appends it to the open chunk: one file per UTC hour, and a new one at
each start and whenever a tick's time goes back before the chunk's last (a clock stepped back), so that within a
chunk time only moves forward. Each frame's first tick carries every process's activity whole, so any frame reads
given its chunk's header and first frame; a kill -9 loses the frame still open, ~10 s.

A full disk pauses the history, never the sampling: the frame that could not be written is dropped (counted), the
chunk cut back to its last whole frame, `warning` says so, and the next frame tries again.
"""

from __future__ import annotations

import contextlib
import errno
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from gputui.diagnostics.findings import Finding
from gputui.diagnostics.verdict import Verdict
from gputui.model import JobActivity, Snapshot
from gputui.record.format import (
    RecordedEvent,
    dumps,
    event_to_dict,
    header_to_dict,
    tick_to_dict,
)
from gputui.record.queued import Close, QueuedWriter
from gputui.store.appender import ChunkAppender
from gputui.store.chunk import KIND_MINUTES, KIND_TICKS
from gputui.store.columns import encode_records
from gputui.store.directory import MINUTES_DIR, TICKS_DIR, StoreDirectory, read_store
from gputui.store.errors import StoreError
from gputui.store.files import DAY_S
from gputui.store.lock import StoreLock
from gputui.store.minutes import MINUTES_PER_FRAME, MinuteAccumulator, MinuteRow, row_to_dict
from gputui.store.retention import DEFAULT_RETENTION, Retention, prune, retention_to_dict

# A frame holds this many seconds of ticks: what a kill -9 can lose, and the unit a reader decodes.
FRAME_SECONDS = 10.0
TICK_SUFFIX = ".gtc"
MINUTE_SUFFIX = ".gtm"
_FULL_DISK = (errno.ENOSPC, errno.EDQUOT)


def hour_stem(t: float) -> str:
    """A tick chunk's name: the UTC hour of its first tick."""
    return time.strftime("%Y%m%dT%H", time.gmtime(t))


class _Flush:
    """Ends the open frame now."""


@dataclass(frozen=True, slots=True)
class _Tick:
    """A tick and, where the caller ran the diagnostics, the findings open and the verdict shown with it."""

    snapshot: Snapshot
    active: tuple[Finding, ...] | None
    verdict: Verdict | None


_Item = _Tick | RecordedEvent | _Flush | Close


class StoreWriter(QueuedWriter):
    """Writes into DIR on a thread of its own; the same duck interface as record.writer.RecordingWriter, so the
    session builder, the recorder command, the exporter and the UI's REC badge take either.

    Raises StoreLocked (another recorder), NewerStore, or StoreError (DIR cannot be created or is not safe to
    write) at construction; later failures only set `warning`.
    """

    WHAT = "history"
    CONTROL = (_Flush,)

    def __init__(
        self,
        directory: Path,
        *,
        interval_s: float,
        retention: Retention = DEFAULT_RETENTION,
        shared: bool = False,
        utc_offset_s: int | None = None,
    ) -> None:
        if interval_s <= 0:
            raise StoreError(f"the sampling interval must be more than 0 s (got {interval_s})")
        self._path = Path(directory)
        self.interval_s = interval_s
        self.retention = retention
        self.shared = shared
        self._utc_offset_s = utc_offset_s
        self._ticks_per_frame = max(1, math.ceil(FRAME_SECONDS / interval_s - 1e-9))
        self._directory = StoreDirectory(self.path, shared=shared)
        try:
            self._lock = StoreLock(self.path, self._directory.fd, self._directory.file_mode)
            try:
                read_store(self.path, self._directory.fd)  # again: a newer recorder may have written it since
                self._directory.write_store_file({"retention": retention_to_dict(retention)})
            except OSError as exc:
                self._lock.release()
                raise StoreError(f"cannot write {self.path}: {exc.strerror or exc}") from None
            except BaseException:
                self._lock.release()
                raise
        except BaseException:
            self._directory.close()
            raise
        # the sampling side's state
        # the writer thread's state
        self._chunk: ChunkAppender | None = None
        self._chunk_hour = -1
        self._chunk_last_t = -math.inf
        self._header: bytes | None = None  # the open chunk's header frame
        self._early_events: list[RecordedEvent] = []
        self._records: list[dict[str, Any]] = []
        self._frame_ticks = 0
        self._frame_span: tuple[float, float] | None = None
        self._written: dict[int, JobActivity] = {}  # the activities the open frame's ticks carry
        self._paused_s = 0.0  # seconds of ticks the current pause lost
        self._pause_cause: str | None = None  # why the history is paused, None while it is not
        self._resumed = False  # `warning` says "history resumed" until the next frame is written
        self._minutes = MinuteAccumulator(interval_s)
        self._minute_rows: list[MinuteRow] = []
        self._minute_chunk: ChunkAppender | None = None
        self._minute_day = -1
        self._minute_last = -math.inf
        self._newest = -math.inf  # the latest tick time written: retention's "now"
        self.ticks_written = 0
        self.frames_lost = 0
        self.minutes_lost = 0
        self.chunks_pruned = 0
        self._start_thread("gputui-store-writer")

    @property
    def path(self) -> Path:
        """The store's directory."""
        return self._path

    # ---- the sampling side: only enqueues ------------------------------------------------------------------------

    def _queued_tick(self, snapshot: Snapshot, active: Sequence[Finding] | None, verdict: Verdict | None) -> _Tick:
        return _Tick(snapshot, None if active is None else tuple(active), verdict)

    def flush(self) -> None:
        """End the open frame now and wait until it is written."""
        self._enqueue(_Flush())
        self._queue.join()

    # ---- the writer thread -------------------------------------------------------------------------------------

    # Whatever goes wrong ends the history, never the sampling.
    FAILURES = (Exception,)

    def _failed(self, exc: Exception) -> str:
        return f"history stopped: {type(exc).__name__}: {exc}"

    def _end(self) -> None:
        try:
            if not self._stopped.is_set():
                self._end_frame()
                self._minute_row(self._minutes.finish())
                self._end_minute_frame()
                self._prune()
        except Exception as exc:
            self._stop(self._failed(exc))
        finally:
            self._finish()

    def _handle(self, item: _Tick | RecordedEvent | _Flush) -> None:
        if isinstance(item, _Flush):
            self._end_frame()
            self._end_minute_frame()
        elif isinstance(item, RecordedEvent):
            if self._header is None:
                self._early_events.append(item)
            else:
                self._add(event_to_dict(item), item.t)
        else:
            self._tick(item)

    def _tick(self, item: _Tick) -> None:
        snapshot = item.snapshot
        t = snapshot.timestamp
        hour = math.floor(t / 3600)
        if self._header is None or hour != self._chunk_hour or t < self._chunk_last_t:
            self._end_frame()
            self._new_chunk(snapshot, hour)
        self._chunk_last_t = t
        if self.shared:
            snapshot = _without_activities(snapshot)
        if not self._records:
            self._written = {}
        self._add(tick_to_dict(snapshot, self._written), t)
        self._frame_ticks += 1
        if self._early_events:
            for event in self._early_events:
                self._add(event_to_dict(event), event.t)
            self._early_events.clear()
        if self._frame_ticks >= self._ticks_per_frame:
            self._end_frame()
        self._newest = max(self._newest, t)
        self._minute_row(self._minutes.add(snapshot, item.active, item.verdict))

    def _new_chunk(self, snapshot: Snapshot, hour: int) -> None:
        if self._chunk is not None:
            self._chunk.close()
            self._chunk = None
        self._newest = max(self._newest, snapshot.timestamp)
        self._prune()
        header = header_to_dict(
            snapshot.system,
            snapshot.gpu_info,
            interval_s=self.interval_s,
            started_at=snapshot.timestamp,
            utc_offset_s=self._utc_offset_s,
        )
        self._header = dumps(header).encode()
        self._chunk = ChunkAppender(
            self._directory, TICKS_DIR, hour_stem(snapshot.timestamp), TICK_SUFFIX, self._header
        )
        self._chunk_hour = hour
        self._chunk_last_t = -math.inf

    def _add(self, record: dict[str, Any], t: float) -> None:
        self._records.append(record)
        span = self._frame_span
        self._frame_span = (t, t) if span is None else (min(span[0], t), max(span[1], t))

    def _end_frame(self) -> None:
        """Write the open frame, if any; a failure drops it (counted) and pauses the history until one succeeds."""
        if not self._records or self._chunk is None or self._frame_span is None:
            return
        records, ticks, (t_first, t_last) = self._records, self._frame_ticks, self._frame_span
        self._records, self._frame_ticks, self._frame_span = [], 0, None
        if self._directory.vanished():
            self._stop(f"history stopped: {self.path} was deleted or replaced")
            return
        try:
            self._chunk.append(KIND_TICKS, encode_records(records), ticks, t_first, t_last)
        except OSError as exc:
            self._pause(exc, ticks, t_last - t_first + self.interval_s if ticks else 0.0)
            return
        self.ticks_written += ticks
        self._resume()

    def _minute_row(self, row: MinuteRow | None) -> None:
        """Queue a finished minute's row; a new minute chunk each UTC day and when minutes go back."""
        if row is None:
            return
        day = math.floor(row.start / DAY_S)
        if self._minute_chunk is None or day != self._minute_day or row.start < self._minute_last:
            self._end_minute_frame()
            if self._minute_chunk is not None:
                self._minute_chunk.close()
                self._minute_chunk = None
                self._prune()
            header = {"type": "minutes_header", "schema": 1, "interval_s": self.interval_s}
            stem = time.strftime("%Y%m%d", time.gmtime(row.start))
            self._minute_chunk = ChunkAppender(
                self._directory, MINUTES_DIR, stem, MINUTE_SUFFIX, dumps(header).encode()
            )
            self._minute_day = day
        self._minute_last = row.start
        self._minute_rows.append(row)
        if len(self._minute_rows) >= MINUTES_PER_FRAME:
            self._end_minute_frame()

    def _end_minute_frame(self) -> None:
        rows, self._minute_rows = self._minute_rows, []
        if not rows or self._minute_chunk is None or self._stopped.is_set():
            return
        payload = encode_records([row_to_dict(row) for row in rows])
        try:
            self._minute_chunk.append(KIND_MINUTES, payload, len(rows), rows[0].start, rows[-1].start)
        except OSError as exc:
            self.minutes_lost += len(rows)
            self._pause(exc, 0, 0.0)

    def _prune(self) -> None:
        """Retention, as a chunk closes: never the chunks open now."""
        open_names = {c.name for c in (self._chunk, self._minute_chunk) if c is not None and c.name is not None}
        if self._newest > -math.inf:
            with contextlib.suppress(OSError):  # the directory cannot be listed now: the next close tries again
                self.chunks_pruned += prune(self._directory, self.retention, self._newest, open_names)

    def _pause(self, exc: OSError, ticks: int, seconds: float) -> None:
        self.frames_lost += 1
        self.ticks_dropped += ticks
        self._paused_s += seconds
        self._resumed = False
        full = exc.errno in _FULL_DISK
        self._pause_cause = "the full disk" if full else "write errors"
        if full:
            self.warning = f"history paused: the disk holding {self.path} is full; sampling goes on"
        else:
            self.warning = f"history paused: cannot write {self.path}: {exc.strerror or exc}; sampling goes on"

    def _resume(self) -> None:
        if self._pause_cause is not None:
            self.warning = f"history resumed: {self._paused_s:.0f} s lost to {self._pause_cause}"
            self._pause_cause = None
            self._paused_s = 0.0
            self._resumed = True
        elif self._resumed:
            self.warning = None
            self._resumed = False

    def _stop(self, message: str) -> None:
        self.warning = message
        self._stopped.set()

    def _finish(self) -> None:
        for chunk in (self._chunk, self._minute_chunk):
            if chunk is not None:
                chunk.close()
        self._lock.release()
        self._directory.close()


def _without_activities(snapshot: Snapshot) -> Snapshot:
    """The snapshot less its processes' activities (stacks): a shared store holds only what any user may see."""
    host = snapshot.host
    if not any(proc.activity is not None for proc in host.processes):
        return snapshot
    processes = tuple(replace(proc, activity=None) for proc in host.processes)
    return replace(snapshot, host=replace(host, processes=processes))
