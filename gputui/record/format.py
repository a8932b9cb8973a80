"""The recording format: JSON Lines, one header, then tick and event lines in the order they happened.

A line is one JSON object with a `type`: `header` (first line only), `tick` (a snapshot in the keys of
`snapshot --json`, less the static part the header holds once) or `event` (finding opened/closed/still open at
the end, verdict, probe progress/result, user mark). Readers skip types they do not know, so a newer writer may
add some without a schema bump; anything an older reader would misread bumps RECORDING_SCHEMA.

A tick keeps every field of the model's samples, since a rule or a view may read any (a test walks them all), and
leaves out only what the reader restores: every key whose value is the field's default (None, False, empty), the
clock event reason names (the mask holds them) and the host stats `snapshot --json` repeats under each GPU process
(host.processes holds them once). Inside `mig` the same trimming applies to each instance, and an instance's
processes are left out when they are just the GPU's processes of its instance (as a MIG GPU lists them): the reader
picks them from the GPU's list again. Floats keep 3 decimals. This keeps a busy GPU near 1.5 KB a tick, 115 bytes
gzipped (benchmarks/bench_record.py measures it).

A process's activity (what its stacks showed over the last window, gputui/session/stacks.py) changes once a minute
at most: the writer puts it in the first tick that has it and again only when it changes (`null` once a process
that had one has none); the reader carries each process's activity forward to the ticks that leave it out, and
forgets it when the process leaves.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import MISSING, dataclass, field, fields
from typing import Any, Literal, get_args

from gputui import __version__
from gputui.diagnostics.findings import Evidence, Finding, Severity, finding_to_dict, instances_from_list
from gputui.diagnostics.verdict import Verdict, verdict_to_dict
from gputui.foreign_text import clean, is_clean
from gputui.model import (
    GpuInfo,
    GpuProcess,
    GpuSample,
    HostSample,
    JobActivity,
    MigDevice,
    ProcSample,
    Snapshot,
    SystemInfo,
    instance_holds,
)
from gputui.serialize import (
    SnapshotFormatError,
    activity_from_dict,
    gpu_info_from_dict,
    gpu_info_to_dict,
    snapshot_from_dict,
    snapshot_to_dict,
    system_from_dict,
    system_to_dict,
)

RECORDING_SCHEMA = 1

EventKind = Literal[
    "finding_opened", "finding_closed", "finding_still_open", "probe_progress", "probe_result", "mark", "verdict"
]
FindingEventKind = Literal["finding_opened", "finding_closed", "finding_still_open"]
EVENT_KINDS: tuple[str, ...] = get_args(EventKind)


class RecordingError(Exception):
    """A recording that cannot be written or read at all; the message says why, in words a user can act on."""


class RecordingFormatError(ValueError):
    """A line that is JSON but not a record this gputui can read; the message says what is wrong."""


@dataclass(frozen=True, slots=True)
class RecordingHeader:
    """What the first line says: who wrote the file, on what machine, at what cadence."""

    schema: int
    gputui_version: str
    system: SystemInfo
    gpu_info: tuple[GpuInfo, ...]
    interval_s: float
    started_at: float
    utc_offset_s: int = 0  # the recorder's local time zone, so times read as they did on that machine


@dataclass(frozen=True, slots=True)
class RecordedEvent:
    """Something that happened between ticks; `data` holds the kind's own keys."""

    kind: EventKind
    t: float
    data: Mapping[str, Any] = field(default_factory=dict)


def local_utc_offset_s(at: float) -> int:
    """This machine's offset from UTC at time `at` (daylight saving included)."""
    return int(time.localtime(at).tm_gmtoff)


def format_clock(t: float, utc_offset_s: int) -> str:
    """HH:MM:SS as the recording machine's wall clock showed it."""
    return time.strftime("%H:%M:%S", time.gmtime(t + utc_offset_s))


def format_datetime(t: float, utc_offset_s: int) -> str:
    sign = "+" if utc_offset_s >= 0 else "-"
    hours, minutes = divmod(abs(utc_offset_s) // 60, 60)
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(t + utc_offset_s)) + f" UTC{sign}{hours:02d}:{minutes:02d}"


def dumps(record: Mapping[str, Any]) -> str:
    """One line, compact; non-ASCII (hostnames, mark labels in Chinese) kept as written."""
    return json.dumps(record, separators=(",", ":"), ensure_ascii=False) + "\n"


# A JSON escape that gives a control character or a surrogate (\\uXXXX, \\n...): where a line has none, and no raw
# character clean() replaces, no string in it can hold one.
_CONTROL_ESCAPE = re.compile(r"\\[bfnrtu]")


def loads(line: bytes | str) -> Any:
    """One line parsed, every string in it (keys too) cleaned: a recording may come from another user or machine,
    and what it holds of processes, pods, hosts and stacks reaches every view of a replay and a report. A line that
    cannot hold such a character (almost every line) is not walked: the check costs a tenth of the parse."""
    text = line.decode() if isinstance(line, bytes) else line
    value = json.loads(text)
    if is_clean(text.strip()) and _CONTROL_ESCAPE.search(text) is None:  # a raw newline ends a line, in no string
        return value
    return _cleaned(value)


def _cleaned(value: Any) -> Any:
    if isinstance(value, str):
        return clean(value)
    if isinstance(value, list):
        return [_cleaned(item) for item in value]
    if isinstance(value, dict):
        return {clean(key): _cleaned(item) for key, item in value.items()}
    return value


# ---- writing -------------------------------------------------------------------------------------------------


def header_to_dict(
    system: SystemInfo,
    gpu_info: tuple[GpuInfo, ...],
    *,
    interval_s: float,
    started_at: float,
    utc_offset_s: int | None = None,
) -> dict[str, Any]:
    return {
        "type": "header",
        "schema": RECORDING_SCHEMA,
        "gputui_version": __version__,
        "started_at": started_at,
        "utc_offset_s": local_utc_offset_s(started_at) if utc_offset_s is None else utc_offset_s,
        "interval_s": interval_s,
        "system": system_to_dict(system),
        "gpu_info": [gpu_info_to_dict(info) for info in gpu_info],
    }


def _defaults(cls: type) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for f in fields(cls):
        if f.default is not MISSING:
            out[f.name] = f.default
    return out


_GPU_DEFAULTS = _defaults(GpuSample)
_HOST_DEFAULTS = _defaults(HostSample)
_PROC_DEFAULTS = _defaults(ProcSample)
_MIG_DEVICE_DEFAULTS = _defaults(MigDevice)
_EMPTY: tuple[Any, ...] = (None, [], ())
# A GPU process is recorded whole, every field of GpuProcess (SM share, how it was seen...): the rules and the process
# table read them. The keys `snapshot --json` adds beside them are its host-side stats, kept once in host.processes.
_GPU_PROC_KEYS = tuple(f.name for f in fields(GpuProcess))
_GPU_PROC_DEFAULTS = _defaults(GpuProcess)


def _compact(value: Any) -> Any:
    """Floats to 3 decimals (milliseconds, for times): sensors say no more, and long digits cost bytes."""
    if isinstance(value, float):
        return round(value, 3)
    if isinstance(value, list):
        return [round(v, 3) if isinstance(v, float) else v for v in value]
    return value


def _trim(data: dict[str, Any], defaults: Mapping[str, Any]) -> dict[str, Any]:
    """Leave out keys whose value the reader would restore anyway: a field default or nothing at all."""
    return {
        key: _compact(value)
        for key, value in data.items()
        if not (value in _EMPTY or (key in defaults and type(value) is type(defaults[key]) and value == defaults[key]))
    }


def _gpu_processes(processes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [_trim({key: proc.get(key) for key in _GPU_PROC_KEYS}, _GPU_PROC_DEFAULTS) for proc in processes]


def _mig_tick(mig: dict[str, Any], sample: GpuSample) -> dict[str, Any]:
    """`gpus[i].mig` trimmed as the GPU is; an instance's `processes` is written only when it is not the GPU's
    processes of that instance (then even when empty), so the reader can tell the two apart."""
    devices = []
    instances = sample.mig.devices if sample.mig is not None else ()
    for data, device in zip(mig["devices"], instances, strict=True):
        processes = data.pop("processes")
        trimmed = _trim(data, _MIG_DEVICE_DEFAULTS)
        trimmed["index"] = data["index"]
        if device.processes != tuple(proc for proc in sample.processes if device.holds(proc)):
            trimmed["processes"] = _gpu_processes(processes)
        devices.append(trimmed)
    return _trim({**mig, "devices": devices}, {"pending_mode": None})


def _mig_processes_back(gpu: dict[str, Any]) -> None:
    """Put back each instance's processes that _mig_tick left out, from the GPU's list; what is malformed is
    left for snapshot_from_dict to name."""
    mig = gpu.get("mig")
    devices = mig.get("devices") if isinstance(mig, dict) else None
    processes = gpu.get("processes") or []
    if not isinstance(devices, list) or not isinstance(processes, list):
        return
    for device in devices:
        if isinstance(device, dict) and "processes" not in device:
            ids = (device.get("gpu_instance_id"), device.get("compute_instance_id"))
            device["processes"] = [
                proc
                for proc in processes
                if isinstance(proc, dict)
                and instance_holds(ids, (proc.get("gpu_instance_id"), proc.get("compute_instance_id")))
            ]


def _compact_all(value: Any) -> Any:
    """_compact through nested objects and lists (a process's activity)."""
    if isinstance(value, dict):
        return {key: _compact_all(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_compact_all(item) for item in value]
    return _compact(value)


def _host_processes(
    processes: Sequence[ProcSample], dicts: list[dict[str, Any]], written: dict[int, JobActivity] | None
) -> list[dict[str, Any]]:
    """The host's processes trimmed; each activity written only where it is not the one the reader carries from
    the tick before (`written`, updated here: None writes every one)."""
    out = []
    carried = written if written is not None else {}
    for proc, data in zip(processes, dicts, strict=True):
        activity = data.pop("activity")
        trimmed = _trim(data, _PROC_DEFAULTS)
        if proc.activity is not None and carried.get(proc.pid) != proc.activity:
            trimmed["activity"] = _compact_all(activity)
        elif proc.activity is None and proc.pid in carried:
            trimmed["activity"] = None  # the reader must stop carrying it
        out.append(trimmed)
    if written is not None:
        written.clear()
        written.update((proc.pid, proc.activity) for proc in processes if proc.activity is not None)
    return out


def tick_to_dict(snapshot: Snapshot, written: dict[int, JobActivity] | None = None) -> dict[str, Any]:
    """A tick's line. `written`: the activities the lines before it hold (the writer's, kept up to date here), so
    that each is written once; without it every activity is written."""
    data = snapshot_to_dict(snapshot, include_static=False)
    gpus = []
    for gpu, sample in zip(data["gpus"], snapshot.gpus, strict=True):
        gpu.pop("clock_event_reasons", None)
        gpu["processes"] = _gpu_processes(gpu["processes"])
        if gpu.get("mig") is not None:
            gpu["mig"] = _mig_tick(gpu["mig"], sample)
        trimmed = _trim(gpu, _GPU_DEFAULTS)
        trimmed["index"] = gpu["index"]
        gpus.append(trimmed)
    host = data["host"]
    host.pop("cpu_pct", None)
    host["processes"] = _host_processes(snapshot.host.processes, host["processes"], written)
    host["busiest_others"] = [_trim(proc, _PROC_DEFAULTS) for proc in host["busiest_others"]]
    out: dict[str, Any] = {
        "type": "tick",
        "timestamp": round(data["timestamp"], 3),
        "gpus": gpus,
        "host": _trim(host, _HOST_DEFAULTS),
    }
    if "events" in data:
        out["events"] = data["events"]
    return out


def event_to_dict(event: RecordedEvent) -> dict[str, Any]:
    return {**event.data, "type": "event", "kind": event.kind, "t": event.t}


def _finding_record(finding: Finding) -> dict[str, Any]:
    """The `diagnose --json` shape, plus what a timeline needs: when it ended, how bad it got."""
    return {**finding_to_dict(finding), "ended_at": finding.ended_at, "worst": finding.worst, "metric": finding.metric}


def finding_event(kind: FindingEventKind, finding: Finding, t: float) -> RecordedEvent:
    """A finding that opened or closed at `t`; `finding_still_open` is one open when the recording ended, in the
    words it had last (a finding's words follow its numbers: "takes 37% of the SMs")."""
    return RecordedEvent(kind=kind, t=t, data={"finding": _finding_record(finding)})


def verdict_event(verdict: Verdict, t: float) -> RecordedEvent:
    """The verdict shown from the tick at `t` on (its `since`, in its data, may be earlier: when it was first
    judged, before the hysteresis let it take over): the report's verdict over time, and its account, read these
    as the monitor showed them. An older gputui wrote `since` as `t`."""
    return RecordedEvent(kind="verdict", t=t, data={"verdict": verdict_to_dict(verdict)})


def mark_event(label: str, t: float) -> RecordedEvent:
    """A user's note in the timeline, e.g. "changed num_workers to 8"."""
    return RecordedEvent(kind="mark", t=t, data={"label": label})


def probe_event(kind: Literal["probe_progress", "probe_result"], payload: Mapping[str, Any], t: float) -> RecordedEvent:
    """A probe message as the probe runner reports it; the payload must be JSON-ready."""
    return RecordedEvent(kind=kind, t=t, data={"probe": dict(payload)})


def finding_transitions(before: Sequence[Finding], after: Sequence[Finding], t: float) -> list[RecordedEvent]:
    """Events for the findings that opened or closed between two engine states: pass `state.active` of the
    previous and the current DiagnosticsEngine update."""
    old = {f.key: f for f in before}
    new = {f.key: f for f in after}
    events = [finding_event("finding_opened", f, t) for key, f in new.items() if key not in old]
    events += [finding_event("finding_closed", f, t) for key, f in old.items() if key not in new]
    return events


class FindingLog:
    """What a writer adds to the ticks it is given: the findings that opened or closed with each, the verdict when
    it changed, and at the end the findings still open, in their last words. One per writer, on the side that
    gives it the ticks (the recording file's and the history store's writers alike)."""

    def __init__(self) -> None:
        self._active: tuple[Finding, ...] = ()
        self._verdict: Verdict | None = None
        self._last_t = 0.0

    def events(self, t: float, active: Sequence[Finding], verdict: Verdict | None) -> list[RecordedEvent]:
        """The events of the tick at `t`, after the engine's update: its `state.active` and `state.verdict`."""
        events = finding_transitions(self._active, active, t)
        self._active, self._last_t = tuple(active), t
        if verdict is not None and (self._verdict is None or verdict.key != self._verdict.key):
            events.append(verdict_event(verdict, t))
            self._verdict = verdict
        return events

    def still_open(self) -> list[RecordedEvent]:
        return [finding_event("finding_still_open", finding, self._last_t) for finding in self._active]


# ---- reading -------------------------------------------------------------------------------------------------


# What a header cannot do without (utc_offset_s and gputui_version came later, and have defaults).
_HEADER_KEYS = ("started_at", "interval_s", "system", "gpu_info")


def header_from_dict(data: Mapping[str, Any]) -> RecordingHeader:
    """Raises RecordingFormatError for a line that is not a header, or one from a newer schema."""
    if data.get("type") != "header":
        raise RecordingFormatError("it does not start with a gputui recording header")
    schema = data.get("schema")
    if not isinstance(schema, int):
        raise RecordingFormatError(f"its header has no schema version (got {schema!r})")
    if schema > RECORDING_SCHEMA:
        raise RecordingFormatError(
            f"it was written by gputui {data.get('gputui_version', '?')} with recording schema {schema}; "
            f"this gputui {__version__} reads schema {RECORDING_SCHEMA} at most: upgrade gputui"
        )
    missing = [key for key in _HEADER_KEYS if key not in data]
    if missing:
        raise RecordingFormatError(f"its header lacks {', '.join(missing)}: it was cut short or not made by gputui")
    if not isinstance(data["system"], dict):
        raise RecordingFormatError("its header's system is not a JSON object")
    if not isinstance(data["gpu_info"], list) or not all(isinstance(g, dict) for g in data["gpu_info"]):
        raise RecordingFormatError("its header's gpu_info is not a list of JSON objects")
    try:
        started_at = float(data["started_at"])
        interval_s = float(data["interval_s"])
        utc_offset_s = int(data.get("utc_offset_s", 0))
    except (TypeError, ValueError):
        raise RecordingFormatError("its header's started_at, interval_s and utc_offset_s are not all numbers") from None
    try:
        system = system_from_dict(data["system"])
        gpu_info = tuple(gpu_info_from_dict(g) for g in data["gpu_info"])
    except SnapshotFormatError as exc:
        raise RecordingFormatError(f"its header is malformed: {exc}") from exc
    return RecordingHeader(
        schema=schema,
        gputui_version=str(data.get("gputui_version", "?")),
        system=system,
        gpu_info=gpu_info,
        interval_s=interval_s,
        started_at=started_at,
        utc_offset_s=utc_offset_s,
    )


class ActivityCarry:
    """The reader's side of writing each activity once: the last activity (as JSON) of each process, put back into
    the ticks that leave it out. One per pass over a file, fed every tick in order."""

    def __init__(self) -> None:
        self._last: dict[int, dict[str, Any]] = {}

    def fill(self, data: dict[str, Any]) -> tuple[bool, list[str]]:
        """Puts the carried activities into the tick `data` (in place) and takes its new ones; (whether it changed
        `data`, a sentence for each activity too malformed to read, which is left out: the rest of the tick is
        read as usual)."""
        host = data.get("host")
        processes = host.get("processes") if isinstance(host, dict) else None
        if not isinstance(processes, list):
            return False, []
        changed, problems = False, []
        present = set()
        for proc in processes:
            pid = proc.get("pid") if isinstance(proc, dict) else None
            if not isinstance(pid, int):
                continue
            present.add(pid)
            if "activity" not in proc:
                if pid in self._last:
                    proc["activity"] = self._last[pid]
                    changed = True
                continue
            activity = proc["activity"]
            if activity is None:
                self._last.pop(pid, None)
                del proc["activity"]
                changed = True
                continue
            try:
                activity_from_dict(activity, f"process {pid}: activity")
            except SnapshotFormatError as exc:
                problems.append(f"{exc}: read without it")
                self._last.pop(pid, None)
                del proc["activity"]
                changed = True
                continue
            self._last[pid] = activity
        for pid in [pid for pid in self._last if pid not in present]:
            del self._last[pid]
        return changed, problems


def tick_from_dict(data: dict[str, Any], header: RecordingHeader, system: SystemInfo) -> Snapshot:
    """A tick rebuilt on the header's static info; raises RecordingFormatError when it is malformed."""
    for gpu in data.get("gpus") or ():
        if isinstance(gpu, dict) and gpu.get("mig") is not None:
            _mig_processes_back(gpu)
    try:
        return snapshot_from_dict(data, system=system, gpu_info=header.gpu_info)
    except SnapshotFormatError as exc:
        raise RecordingFormatError(str(exc)) from exc


def event_from_dict(data: Mapping[str, Any]) -> RecordedEvent:
    kind = data.get("kind")
    if kind not in EVENT_KINDS:
        raise RecordingFormatError(f"unknown event kind {kind!r}")
    try:
        t = float(data["t"])
    except (KeyError, TypeError, ValueError) as exc:
        raise RecordingFormatError(f"event without a time: {exc}") from exc
    payload = {key: value for key, value in data.items() if key not in ("type", "kind", "t")}
    return RecordedEvent(kind=kind, t=t, data=payload)


def finding_from_dict(data: Mapping[str, Any]) -> Finding:
    try:
        return Finding(
            rule=str(data["rule"]),
            severity=Severity[str(data["severity"]).upper()],
            title=str(data["title"]),
            advice=str(data.get("advice", "")),
            gpus=tuple(int(g) for g in data.get("gpus") or ()),
            mig_instances=instances_from_list(data.get("mig_instances")),
            variant=str(data.get("variant") or ""),
            pids=tuple(int(p) for p in data.get("pids") or ()),
            evidence=tuple(
                Evidence(
                    label=str(e["label"]),
                    value=e.get("value"),
                    unit=e.get("unit", ""),
                    window=e.get("window", ""),
                    key=e.get("key", ""),
                )
                for e in data.get("evidence") or ()
            ),
            started_at=float(data.get("started_at", 0.0)),
            duration_s=float(data.get("duration_s", 0.0)),
            ended_at=None if data.get("ended_at") is None else float(data["ended_at"]),
            worst=data.get("worst"),
            metric=data.get("metric"),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise RecordingFormatError(f"malformed finding: {exc}") from exc
