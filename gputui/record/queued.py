"""What the recording file's writer and the history store's share: a sampling side that only enqueues (the
sampling loop never waits for a disk, and what a full queue cannot take is counted, never lost unsaid), and one
thread of their own that owns the disk."""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

from gputui.diagnostics.findings import Finding
from gputui.diagnostics.verdict import Verdict
from gputui.model import Snapshot
from gputui.record.format import FindingLog, RecordedEvent, mark_event

# Items waiting for the writer thread; beyond this the disk is hung and ticks are dropped (and counted).
QUEUE_LIMIT = 1000
# On close, how long to wait for a hung disk before leaving the (daemon) writer thread behind.
CLOSE_TIMEOUT_S = 10.0


class Close:
    """The sentinel that ends the writer thread."""


class QueuedWriter:
    """The sampling side of a writer, and its thread's loop: each subclass says how a tick is queued
    (`_queued_tick`), what its thread does with an item (`_handle`), how an error ends its writing (`FAILURES`,
    `_failed`, `_stop`) and how it ends at Close (`_end`), where it writes (`path`) and what its warnings call it
    (`WHAT`); it calls `_start_thread` at the end of its construction."""

    WHAT: ClassVar[str]
    CONTROL: ClassVar[tuple[type, ...]] = ()  # items of the writer's own that are neither ticks nor events
    # The errors of the writer's thread that end its writing, never the sampling.
    FAILURES: ClassVar[tuple[type[Exception], ...]] = (OSError,)

    @property
    def path(self) -> Path:
        raise NotImplementedError

    def _start_thread(self, name: str) -> None:
        self.warning: str | None = None
        self.ticks_dropped = 0
        self.events_dropped = 0  # findings, verdicts, marks the queue had no room for
        self._findings = FindingLog()
        self._stopped = threading.Event()
        self._closed = False
        self._queue: queue.Queue[Any] = queue.Queue(maxsize=QUEUE_LIMIT)
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _queued_tick(self, snapshot: Snapshot, active: Sequence[Finding] | None, verdict: Verdict | None) -> object:
        raise NotImplementedError

    def _run(self) -> None:
        """Handles what is queued until Close, then ends; an error of FAILURES stops the writing, in `_failed`'s
        words, and the items after it are taken and dropped (a drain() still returns)."""
        while True:
            item = self._queue.get()
            try:
                if isinstance(item, Close):
                    break
                if not self._stopped.is_set():
                    self._handle(item)
            except self.FAILURES as exc:
                self._stop(self._failed(exc))
            finally:
                self._queue.task_done()
        self._end()

    def _handle(self, item: Any) -> None:
        raise NotImplementedError

    def _failed(self, exc: Exception) -> str:
        """The warning an error of FAILURES stops the writing with."""
        raise NotImplementedError

    def _stop(self, message: str) -> None:
        raise NotImplementedError

    def _end(self) -> None:
        """What the thread does at Close, after the last item."""
        raise NotImplementedError

    @property
    def stopped(self) -> bool:
        """True once the writer gave up (its `warning` says why)."""
        return self._stopped.is_set()

    def put(self, snapshot: Snapshot) -> None:
        """Queue one tick; never blocks."""
        self._enqueue(self._queued_tick(snapshot, None, None))

    def record(self, snapshot: Snapshot, active: Sequence[Finding], verdict: Verdict | None = None) -> None:
        """Queue a tick, the findings that opened or closed with it and the verdict when it changed: pass the
        engine's `state.active` and `state.verdict` after `update(snapshot)`; the writer remembers the last."""
        self._enqueue(self._queued_tick(snapshot, tuple(active), verdict))
        for event in self._findings.events(snapshot.timestamp, active, verdict):
            self._enqueue(event)

    def put_event(self, event: RecordedEvent) -> None:
        self._enqueue(event)

    def mark(self, label: str, t: float | None = None) -> None:
        """Drop a labelled mark into the timeline, e.g. "changed num_workers to 8"."""
        self._enqueue(mark_event(label, time.time() if t is None else t))

    def drain(self) -> None:
        """Wait until everything queued so far is handled; for tests and for a clean hand-over."""
        self._queue.join()

    def close(self) -> None:
        """Write what is queued and the findings still open, in their last words, and stop the thread; safe to
        call twice."""
        if self._closed:
            return
        for event in self._findings.still_open():
            self._enqueue(event)
        self._closed = True
        try:
            self._queue.put(Close(), timeout=CLOSE_TIMEOUT_S)
        except queue.Full:
            self.warning = f"{self.WHAT}: the disk did not keep up; {self.path} lacks the last ticks"
            return
        self._thread.join(timeout=CLOSE_TIMEOUT_S)

    def _enqueue(self, item: object) -> None:
        if self._closed or self._stopped.is_set():
            return
        try:
            self._queue.put_nowait(item)
        except queue.Full:
            if isinstance(item, RecordedEvent):
                self.events_dropped += 1
            elif not isinstance(item, self.CONTROL):
                self.ticks_dropped += 1
            self.warning = f"{self.WHAT} is falling behind the disk: {self.ticks_dropped} ticks dropped"
