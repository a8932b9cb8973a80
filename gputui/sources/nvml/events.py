"""XID errors from the NVIDIA driver, caught by a thread that waits on an NVML event set.

An XID is an event, not a state: no query made at sampling time can see one that has passed. So one daemon
thread blocks in nvmlEventSetWait_v2 and buffers the codes per GPU; the sampler takes them with `drain()` each
tick. An event ends the wait at once whatever its timeout, so the timeout only sets how often the thread wakes
for nothing (each wake-up is a driver call and an exception) and how long `stop()` may take: a short-lived
command keeps it short, the long-running monitor and exporter make it long and do not wait for the thread.
A GPU that cannot report XIDs is skipped; an unexpected error ends the watch, is kept in `error`, and never
reaches the sampler or the process. Creating the event set and registering each GPU go through the query helper
(query.py); the wait does not, since its Timeout is no failure but how a wait without events ends.
"""

from __future__ import annotations

import contextlib
import ctypes
import threading
from collections.abc import Mapping
from typing import Any

from gputui.sources.nvml.query import GpuLost, Nvml

DEFAULT_WAIT_MS = 200
LONG_WAIT_MS = 5000  # the monitor and the exporter: a wake-up every 5 s instead of 5 a second
THREAD = "gputui-xid"  # the name py-spy and faulthandler show
NO_EVENT_API = "this nvidia-ml-py has no event API"


class XidWatcher:
    """Collects XID codes per GPU index from a background thread; `drain()` hands them over."""

    def __init__(self, nvml: Nvml, handles: Mapping[int, Any], wait_ms: int = DEFAULT_WAIT_MS) -> None:
        if wait_ms < 1:
            raise ValueError(f"wait_ms must be at least 1, not {wait_ms}")
        self._nvml = nvml
        self._handles = dict(handles)
        self._wait_ms = wait_ms
        self._lock = threading.Lock()
        self._seen: dict[int, list[int]] = {}
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self.skipped: dict[int, str] = {}  # GPU index -> why it reports no XIDs
        self.error: str | None = None  # why the watch ended early; XIDs are then not collected

    @property
    def watching(self) -> tuple[int, ...]:
        """The GPU indices registered for XID events."""
        return tuple(index for index in self._handles if index not in self.skipped)

    @property
    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> None:
        """Register each GPU here, so `skipped` and `error` are known on return, then start the thread."""
        create = self._nvml.query(self._nvml.function("nvmlEventSetCreate"))
        event_set = create()
        if event_set is None:
            self.error = f"the driver could not create an event set: {create.failure or NO_EVENT_API}"
            return
        devices: list[tuple[object, int]] = []
        for index, handle in self._handles.items():
            reason = self._register(handle, event_set)
            if reason is None:
                devices.append((_address(handle), index))
            else:
                self.skipped[index] = reason
        if not devices:
            self._free(event_set)
            return
        self._thread = threading.Thread(target=self._run, args=(event_set, devices), name=THREAD, daemon=True)
        self._thread.start()

    def stop(self, timeout_s: float | None = None) -> bool:
        """Ask the thread to end and wait for it, up to `timeout_s` (default: one wait, plus slack); True once it
        has ended. It frees the event set itself, when its wait returns."""
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(self._wait_ms / 1000 + 1.0 if timeout_s is None else timeout_s)
        return not self.alive

    def drain(self) -> dict[int, tuple[int, ...]]:
        """The XID codes seen per GPU since the last drain, oldest first; a swap under the lock."""
        with self._lock:
            seen, self._seen = self._seen, {}
        return {index: tuple(codes) for index, codes in seen.items()}

    def _register(self, handle: Any, event_set: Any) -> str | None:
        """None when the GPU now reports XIDs to `event_set`, else the reason it cannot."""
        nvml = self._nvml
        xid = nvml.pynvml.nvmlEventTypeXidCriticalError
        supported = nvml.query(nvml.function("nvmlDeviceGetSupportedEventTypes", handle))
        register = nvml.query(nvml.function("nvmlDeviceRegisterEvents", handle, xid, event_set))
        try:
            types = supported()
            if types is None:
                return str(supported.failure or NO_EVENT_API)
            if not types & xid:
                return "the driver reports no XID events for this GPU"
            register()
        except GpuLost as lost:
            return lost.reason
        if register.failure is not None or not register.available:
            return str(register.failure or NO_EVENT_API)
        return None

    def _run(self, event_set: Any, devices: list[tuple[object, int]]) -> None:
        pynvml = self._nvml.pynvml
        try:
            while not self._stopping.is_set():
                try:
                    data = pynvml.nvmlEventSetWait_v2(event_set, self._wait_ms)
                except pynvml.NVMLError_Timeout:
                    continue
                if not data.eventType & pynvml.nvmlEventTypeXidCriticalError:
                    continue
                device = _address(data.device)
                for address, index in devices:
                    if address == device:
                        with self._lock:
                            self._seen.setdefault(index, []).append(int(data.eventData))
                        break
        except Exception as exc:  # the watch ends here; sampling and the process go on
            self.error = f"waiting for XID events failed: {exc}"
        finally:
            self._free(event_set)

    def _free(self, event_set: Any) -> None:
        pynvml = self._nvml.pynvml
        with contextlib.suppress(pynvml.NVMLError):
            pynvml.nvmlEventSetFree(event_set)


def _address(handle: Any) -> object:
    """What identifies a device: ctypes pointers compare by identity, so a real handle is its address."""
    if isinstance(handle, ctypes._Pointer):
        return ctypes.cast(handle, ctypes.c_void_p).value
    return handle
