"""Snapshot <-> JSON-ready dicts: the one shape shared by `snapshot --json`, recordings and exports.

Each GPU is one flat object holding its static info and its sample side by side, with the keys named as the
dataclass fields are, so a reader finds `max_sm_clock_mhz` next to `sm_clock_mhz`. Readers ignore keys they do
not know, so newer writers can add keys without breaking older readers.
"""

from __future__ import annotations

from dataclasses import MISSING, asdict, fields
from typing import Any, TypeVar

from gputui.model import (
    ACTIVITY_KINDS,
    ActivityFrame,
    ActivityShares,
    ContainerInfo,
    ContainerSample,
    DistRank,
    GpuInfo,
    GpuProcess,
    GpuSample,
    HostSample,
    JobActivity,
    MigDevice,
    MigState,
    ProcSample,
    PsiSample,
    Snapshot,
    SystemInfo,
    Topology,
    WaitedOn,
    encode_clock_event_reasons,
)

SCHEMA_VERSION = 1

_INFO_KEYS = tuple(f.name for f in fields(GpuInfo))
_SAMPLE_KEYS = tuple(f.name for f in fields(GpuSample) if f.name not in ("processes", "index", "mig"))
# Nested groups are objects of their own in JSON (`host.container`, `host.psi`, `system.container`).
_HOST_GROUPS = ("container", "psi")
# Lists of processes are read apart, each process with its activity as an object of its own.
_HOST_KEYS = tuple(f.name for f in fields(HostSample) if f.name not in ("processes", "busiest_others", *_HOST_GROUPS))
_SYSTEM_KEYS = tuple(f.name for f in fields(SystemInfo) if f.name not in ("container", "topology"))
_PROC_KEYS = tuple(f.name for f in fields(ProcSample))
# `processes[i].activity`: each scalar key and the JSON types it may hold (null aside where the field allows it).
_ACTIVITY_TYPES: dict[str, tuple[type, ...]] = {
    "source": (str,),
    "taken_at": (int, float),
    "window_s": (int, float),
    "samples": (int,),
    "worker_samples": (int,),
    "rank": (int,),
    "unchanged_since": (int, float),
    "error": (str,),
}
_ACTIVITY_NULLABLE = ("rank", "error", "unchanged_since")
_ACTIVITY_SOURCES = ("py-spy", "in-process")
# `processes[i].dist`: each key and the JSON type it holds (null aside, but for `unreadable`).
_DIST_TYPES: dict[str, tuple[type, ...]] = {
    "rank": (int,),
    "local_rank": (int,),
    "world_size": (int,),
    "job": (str,),
    "launcher_pid": (int,),
    "unreadable": (bool,),
}
# Whose job a process is (pod or Slurm job): repeated on each GPU's process list, so one object says it whole.
_OWNER_KEYS = ("pod", "namespace", "k8s_container", "job_id")
_GPU_PROCESS_KEYS = tuple(f.name for f in fields(GpuProcess))
_CONTAINER_KEYS = tuple(f.name for f in fields(ContainerInfo))
_MIG_INT_KEYS = (
    "index",
    "gpu_instance_id",
    "compute_instance_id",
    "sm_count",
    "slice_count",
    "memory_used_bytes",
    "memory_total_bytes",
)
# A process's MIG instance: written only for a process that runs in one, so every output off MIG stays as it was.
_INSTANCE_KEYS = ("gpu_instance_id", "compute_instance_id")
# `gpus[i].mig.devices[j]`: each key and the JSON types it may hold (null aside); processes are read apart.
_MIG_DEVICE_TYPES: dict[str, tuple[type, ...]] = {
    f.name: (str,) if f.name in ("uuid", "profile", "pod") else (int,) if f.name in _MIG_INT_KEYS else (int, float)
    for f in fields(MigDevice)
    if f.name != "processes"
}
# An instance's pod: written only where a source names one (dcgm-exporter's labels), so outputs without it stay
# as they were.
_MIG_WHEN_SET = ("pod",)
G = TypeVar("G", ContainerSample, PsiSample)


class SnapshotFormatError(ValueError):
    """A dict that does not hold a readable snapshot; the message names what is wrong."""


def system_to_dict(system: SystemInfo) -> dict[str, Any]:
    out = {key: getattr(system, key) for key in _SYSTEM_KEYS}
    container = system.container
    out["container"] = None if container is None else asdict(container)
    if container is not None and container.cpuset_cpus is not None:
        out["container"]["cpuset_cpus"] = list(container.cpuset_cpus)
    out["topology"] = topology_to_dict(system.topology) if system.topology is not None else None
    return out


def topology_to_dict(topology: Topology) -> dict[str, Any]:
    """`system.topology`: {matrix: [[str]], p2p: [[bool|null]], numa_node: [int|null], cpu_affinity: [str],
    numa_nodes: int|null}."""
    return {
        "matrix": [list(row) for row in topology.matrix],
        "p2p": [list(row) for row in topology.p2p],
        "numa_node": list(topology.numa_node),
        "cpu_affinity": list(topology.cpu_affinity),
        "numa_nodes": topology.numa_nodes,
    }


def _topology(data: Any) -> Topology | None:
    if not isinstance(data, dict):
        return None
    try:
        return Topology(
            matrix=tuple(tuple(row) for row in data["matrix"]),
            p2p=tuple(tuple(row) for row in data["p2p"]),
            numa_node=tuple(data["numa_node"]),
            cpu_affinity=tuple(data["cpu_affinity"]),
            numa_nodes=data.get("numa_nodes"),  # not in recordings made before it was read
        )
    except (KeyError, TypeError) as exc:
        raise SnapshotFormatError(f"system.topology: {exc}") from exc


def gpu_info_to_dict(info: GpuInfo) -> dict[str, Any]:
    return {key: getattr(info, key) for key in _INFO_KEYS}


def gpu_to_dict(info: GpuInfo | None, sample: GpuSample, host: HostSample | None) -> dict[str, Any]:
    """One GPU as a flat object; its processes are joined with their host-side stats when known."""
    out: dict[str, Any] = gpu_info_to_dict(info) if info is not None else {"index": sample.index}
    for key in _SAMPLE_KEYS:
        out[key] = getattr(sample, key)
    out["mig"] = mig_to_dict(sample.mig, host) if sample.mig is not None else None
    reasons = sample.clock_event_reasons
    out["clock_event_reasons"] = list(reasons) if reasons is not None else None
    out["xid_events"] = list(sample.xid_events)
    out["processes"] = [_gpu_process_to_dict(proc, host) for proc in sample.processes]
    return out


def mig_to_dict(mig: MigState, host: HostSample | None) -> dict[str, Any]:
    """`gpus[i].mig`: the mode, the mode after the next reset, and each instance with its own processes."""
    devices = []
    for device in mig.devices:
        out: dict[str, Any] = {
            key: getattr(device, key)
            for key in _MIG_DEVICE_TYPES
            if key not in _MIG_WHEN_SET or getattr(device, key) is not None
        }
        out["processes"] = [_gpu_process_to_dict(proc, host) for proc in device.processes]
        devices.append(out)
    return {"mode": mig.mode, "pending_mode": mig.pending_mode, "devices": devices}


def _gpu_process_to_dict(proc: GpuProcess, host: HostSample | None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "pid": proc.pid,
        "used_memory_bytes": proc.used_memory_bytes,
        "kind": proc.kind,
        "seen": proc.seen,
        "host_pid": proc.host_pid,
        "sm_pct": proc.sm_pct,
        "mem_pct": proc.mem_pct,
    }
    if proc.gpu_instance_id is not None or proc.compute_instance_id is not None:
        out.update((key, getattr(proc, key)) for key in _INSTANCE_KEYS)
    host_proc = host.process(proc.pid) if host is not None else None
    out["name"] = host_proc.name if host_proc else None
    out["user"] = host_proc.user if host_proc else None
    out["cpu_pct"] = host_proc.cpu_pct if host_proc else None
    out["threads"] = host_proc.threads if host_proc else None
    out["children"] = host_proc.children if host_proc else None
    out["container"] = host_proc.container if host_proc else None
    out["container_pid"] = host_proc.container_pid if host_proc else None
    out["unreadable"] = list(host_proc.unreadable) if host_proc else []
    for key in _OWNER_KEYS:
        out[key] = getattr(host_proc, key) if host_proc else None
    out["activity"] = activity_to_dict(host_proc.activity) if host_proc and host_proc.activity else None
    out["dist"] = dist_to_dict(host_proc.dist) if host_proc and host_proc.dist else None
    return out


def gpu_processes_to_dicts(snapshot: Snapshot) -> list[dict[str, Any]]:
    """Every GPU's processes in one list, each as in `gpus[].processes` with its GPU's index as `gpu`."""
    return [
        {"gpu": gpu.index, **_gpu_process_to_dict(proc, snapshot.host)}
        for gpu in snapshot.gpus
        for proc in gpu.processes
    ]


def host_to_dict(host: HostSample) -> dict[str, Any]:
    out: dict[str, Any] = {key: getattr(host, key) for key in _HOST_KEYS}
    out["cpu_pct_per_core"] = list(host.cpu_pct_per_core)
    out["load_avg"] = list(host.load_avg) if host.load_avg is not None else None
    out["cpu_pct"] = host.cpu_pct
    for key in _HOST_GROUPS:
        group = getattr(host, key)
        out[key] = None if group is None else asdict(group)
    out["processes"] = [proc_to_dict(p) for p in host.processes]
    out["busiest_others"] = [proc_to_dict(p) for p in host.busiest_others]
    return out


def proc_to_dict(proc: ProcSample) -> dict[str, Any]:
    """A host process: its fields by name, its activity an object (or null where its stacks were never read)."""
    out = {key: getattr(proc, key) for key in _PROC_KEYS}
    out["activity"] = activity_to_dict(proc.activity) if proc.activity is not None else None
    out["dist"] = dist_to_dict(proc.dist) if proc.dist is not None else None
    return out


def dist_to_dict(dist: DistRank) -> dict[str, Any]:
    """`processes[i].dist`: {rank, local_rank, world_size, job, launcher_pid, unreadable}."""
    return {key: getattr(dist, key) for key in _DIST_TYPES}


def dist_from_dict(data: Any, where: str = "dist") -> DistRank:
    """`processes[i].dist` back; a malformed value is a SnapshotFormatError naming its key."""
    if not isinstance(data, dict):
        raise SnapshotFormatError(f"{where}: expected an object, got {type(data).__name__}")
    for key, allowed in _DIST_TYPES.items():
        value = data.get(key)
        if value is None:
            continue
        if (isinstance(value, bool) and allowed != (bool,)) or not isinstance(value, allowed):
            raise SnapshotFormatError(f"{where}.{key}: expected {allowed[0].__name__}, got {value!r}")
    return DistRank(
        rank=data.get("rank"),
        local_rank=data.get("local_rank"),
        world_size=data.get("world_size"),
        job=data.get("job"),
        launcher_pid=data.get("launcher_pid"),
        unreadable=bool(data.get("unreadable")),
    )


def shares_to_dict(shares: ActivityShares) -> dict[str, float]:
    return {kind: shares.of(kind) for kind in ACTIVITY_KINDS}


def activity_to_dict(activity: JobActivity) -> dict[str, Any]:
    """`processes[i].activity`: {source, window_s, samples, shares: {data, ...}, top: [{kind, function, file, line,
    share}], rank, workers, worker_samples, taken_at, error}; shares are fractions of the main thread's samples."""
    return {
        "source": activity.source,
        "window_s": activity.window_s,
        "samples": activity.samples,
        "shares": shares_to_dict(activity.shares),
        "top": [_frame_to_dict(f) for f in activity.top],
        "rank": activity.rank,
        "workers": shares_to_dict(activity.workers) if activity.workers is not None else None,
        "worker_samples": activity.worker_samples,
        "taken_at": activity.taken_at,
        "error": activity.error,
        "unchanged_since": activity.unchanged_since,
        **({"waited_on": _waited_on_to_dict(activity.waited_on)} if activity.waited_on is not None else {}),
    }


def _frame_to_dict(frame: ActivityFrame) -> dict[str, Any]:
    """{kind, function, file, line, share}, and source_line where the kind was read from the job's source."""
    out: dict[str, Any] = {
        "kind": frame.kind,
        "function": frame.function,
        "file": frame.file,
        "line": frame.line,
        "share": frame.share,
    }
    if frame.source_line is not None:
        out["source_line"] = frame.source_line
    return out


def _waited_on_to_dict(waited: WaitedOn) -> dict[str, Any]:
    """{kind, who, frame, share, running}: whom the main thread's hand-off waits waited for."""
    return {
        "kind": waited.kind,
        "who": waited.who,
        "frame": _frame_to_dict(waited.frame) if waited.frame is not None else None,
        "share": waited.share,
        "running": waited.running,
    }


def activity_from_dict(data: Any, where: str = "activity") -> JobActivity:
    """`processes[i].activity` back; raises SnapshotFormatError naming the key that is wrong: a malformed activity
    must not read as another one."""
    if not isinstance(data, dict):
        raise SnapshotFormatError(f"{where}: expected an object, got {type(data).__name__}")
    for key, allowed in _ACTIVITY_TYPES.items():
        value = data.get(key)
        if value is None and (key in _ACTIVITY_NULLABLE or key == "worker_samples"):
            continue
        if value is None or isinstance(value, bool) or not isinstance(value, allowed):
            expected = "a string" if allowed == (str,) else "an integer" if allowed == (int,) else "a number"
            raise SnapshotFormatError(f"{where}.{key}: expected {expected}, got {value!r}")
    if data["source"] not in _ACTIVITY_SOURCES:
        raise SnapshotFormatError(
            f"{where}.source: expected one of {', '.join(_ACTIVITY_SOURCES)}, got {data['source']!r}"
        )
    top = data.get("top")
    if top is None:
        top = []
    if not isinstance(top, list):
        raise SnapshotFormatError(f"{where}.top: expected a list, got {type(top).__name__}")
    workers = data.get("workers")
    return JobActivity(
        source=data["source"],
        taken_at=float(data["taken_at"]),
        window_s=float(data["window_s"]),
        samples=data["samples"],
        shares=_shares(data.get("shares"), f"{where}.shares"),
        top=tuple(_frame(frame, f"{where}.top[{n}]") for n, frame in enumerate(top)),
        workers=None if workers is None else _shares(workers, f"{where}.workers"),
        worker_samples=data.get("worker_samples") or 0,
        rank=data.get("rank"),
        error=data.get("error"),
        unchanged_since=None if data.get("unchanged_since") is None else float(data["unchanged_since"]),
        waited_on=_waited_on(data.get("waited_on"), f"{where}.waited_on"),
    )


def _waited_on(data: Any, where: str) -> WaitedOn | None:
    """An activity's optional `waited_on` (absent in recordings made before it: None)."""
    if data is None:
        return None
    if not isinstance(data, dict):
        raise SnapshotFormatError(f"{where}: expected an object, got {type(data).__name__}")
    kind, who, frame = data.get("kind"), data.get("who"), data.get("frame")
    if kind not in ACTIVITY_KINDS:
        raise SnapshotFormatError(f"{where}.kind: expected one of {', '.join(ACTIVITY_KINDS)}, got {kind!r}")
    if not isinstance(who, str):
        raise SnapshotFormatError(f"{where}.who: expected a string, got {who!r}")
    return WaitedOn(
        kind=kind,
        who=who,
        frame=None if frame is None else _frame(frame, f"{where}.frame"),
        share=_share(data.get("share"), f"{where}.share"),
        running=_share(data.get("running"), f"{where}.running"),
    )


def _share(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise SnapshotFormatError(f"{where}: expected a fraction from 0 to 1, got {value!r}")
    return float(value)


def _shares(data: Any, where: str) -> ActivityShares:
    if not isinstance(data, dict):
        raise SnapshotFormatError(f"{where}: expected an object, got {type(data).__name__}")
    return ActivityShares(**{kind: _share(data[kind], f"{where}.{kind}") for kind in ACTIVITY_KINDS if kind in data})


def _frame(data: Any, where: str) -> ActivityFrame:
    if not isinstance(data, dict):
        raise SnapshotFormatError(f"{where}: expected an object, got {type(data).__name__}")
    kind, function, file, line = data.get("kind"), data.get("function"), data.get("file"), data.get("line")
    if kind not in ACTIVITY_KINDS:
        raise SnapshotFormatError(f"{where}.kind: expected one of {', '.join(ACTIVITY_KINDS)}, got {kind!r}")
    if not isinstance(function, str) or not isinstance(file, str):
        raise SnapshotFormatError(f"{where}: function and file must be strings, got {function!r} and {file!r}")
    if line is not None and (isinstance(line, bool) or not isinstance(line, int)):
        raise SnapshotFormatError(f"{where}.line: expected an integer or null, got {line!r}")
    source_line = data.get("source_line")
    if source_line is not None and not isinstance(source_line, str):
        raise SnapshotFormatError(f"{where}.source_line: expected a string or null, got {source_line!r}")
    return ActivityFrame(
        kind=kind,
        function=function,
        file=file,
        line=line,
        share=_share(data.get("share"), f"{where}.share"),
        source_line=source_line,
    )


def snapshot_to_dict(snapshot: Snapshot, *, include_static: bool = True) -> dict[str, Any]:
    """The JSON-ready form; `include_static=False` leaves out what a recording keeps once in its header."""
    out: dict[str, Any] = {"schema": SCHEMA_VERSION, "timestamp": snapshot.timestamp}
    if include_static:
        out["system"] = system_to_dict(snapshot.system)
    gpus = []
    for sample in snapshot.gpus:
        info = snapshot.info(sample.index) if include_static else None
        gpus.append(gpu_to_dict(info, sample, snapshot.host))
    out["gpus"] = gpus
    out["host"] = host_to_dict(snapshot.host)
    if snapshot.events:
        out["events"] = list(snapshot.events)
    return out


def _pick(cls_keys: tuple[str, ...], data: dict[str, Any]) -> dict[str, Any]:
    return {key: data[key] for key in cls_keys if key in data}


def _container_info(data: Any) -> ContainerInfo | None:
    if not isinstance(data, dict):
        return None
    values = _pick(_CONTAINER_KEYS, data)
    if values.get("cpuset_cpus") is not None:
        values["cpuset_cpus"] = tuple(values["cpuset_cpus"])
    return ContainerInfo(**{"runtime": None, "recognised_by": None, "cgroup_version": None, **values})


def _group(cls: type[G], data: Any) -> G | None:
    return cls(**_pick(tuple(f.name for f in fields(cls)), data)) if isinstance(data, dict) else None


def _lacks(cls: type, data: dict[str, Any], where: str) -> None:
    """A key the dataclass cannot do without, absent from the JSON, named in a sentence (not Python's TypeError)."""
    missing = [
        f.name for f in fields(cls) if f.default is MISSING and f.default_factory is MISSING and f.name not in data
    ]
    if missing:
        raise SnapshotFormatError(f"{where} lacks {', '.join(missing)}")


def system_from_dict(data: dict[str, Any]) -> SystemInfo:
    _lacks(SystemInfo, data, "system")
    try:
        return SystemInfo(
            container=_container_info(data.get("container")),
            topology=_topology(data.get("topology")),
            **_pick(_SYSTEM_KEYS, data),
        )
    except TypeError as exc:
        raise SnapshotFormatError(f"system: {exc}") from exc


def gpu_info_from_dict(data: dict[str, Any]) -> GpuInfo:
    _lacks(GpuInfo, data, "gpu info")
    values = _pick(_INFO_KEYS, data)
    if values.get("nvlink_remote") is not None:
        values["nvlink_remote"] = tuple(values["nvlink_remote"])
    try:
        return GpuInfo(**values)
    except TypeError as exc:
        raise SnapshotFormatError(f"gpu info: {exc}") from exc


def gpu_sample_from_dict(data: dict[str, Any]) -> GpuSample:
    values = _pick(_SAMPLE_KEYS, data)
    if values.get("clock_event_reasons_mask") is None and data.get("clock_event_reasons") is not None:
        values["clock_event_reasons_mask"] = encode_clock_event_reasons(data["clock_event_reasons"])
    if "xid_events" in values:
        values["xid_events"] = tuple(values["xid_events"] or ())
    procs = tuple(_gpu_process(p) for p in data.get("processes") or ())
    try:
        index = int(data["index"])
        return GpuSample(index=index, processes=procs, mig=mig_from_dict(data.get("mig"), index), **values)
    except (KeyError, TypeError) as exc:
        raise SnapshotFormatError(f"gpu sample: {exc}") from exc


def mig_from_dict(data: Any, gpu: int) -> MigState | None:
    """`gpus[i].mig` back; a missing key or null (an older file, a GPU off MIG) is no MIG. Raises
    SnapshotFormatError naming the key that is malformed: a wrong MIG object must not read as another one."""
    if data is None:
        return None
    where = f"GPU {gpu}: mig"
    if not isinstance(data, dict):
        raise SnapshotFormatError(f"{where}: expected an object or null, got {type(data).__name__}")
    for key in ("mode", "pending_mode"):
        if data.get(key) is not None and not isinstance(data[key], bool):
            raise SnapshotFormatError(f"{where}.{key}: expected true, false or null, got {data[key]!r}")
    devices = data.get("devices") or []
    if not isinstance(devices, list):
        raise SnapshotFormatError(f"{where}.devices: expected a list, got {type(devices).__name__}")
    return MigState(
        mode=data.get("mode"),
        pending_mode=data.get("pending_mode"),
        devices=tuple(_mig_device(device, f"{where}.devices[{n}]") for n, device in enumerate(devices)),
    )


def _mig_device(data: Any, where: str) -> MigDevice:
    if not isinstance(data, dict):
        raise SnapshotFormatError(f"{where}: expected an object, got {type(data).__name__}")
    if data.get("index") is None:
        raise SnapshotFormatError(f"{where}.index: missing")
    values = _pick(tuple(_MIG_DEVICE_TYPES), data)
    for key, value in values.items():
        allowed = _MIG_DEVICE_TYPES[key]
        if value is not None and (isinstance(value, bool) or not isinstance(value, allowed)):
            expected = "a string" if allowed == (str,) else "an integer" if allowed == (int,) else "a number"
            raise SnapshotFormatError(f"{where}.{key}: expected {expected} or null, got {value!r}")
    processes = data.get("processes") or []
    if not isinstance(processes, list):
        raise SnapshotFormatError(f"{where}.processes: expected a list, got {type(processes).__name__}")
    try:
        procs = tuple(_gpu_process(proc) for proc in processes)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise SnapshotFormatError(f"{where}.processes: {exc!r}") from exc
    return MigDevice(processes=procs, **values)


def _gpu_process(data: dict[str, Any]) -> GpuProcess:
    """A process of a GPU's list; files that leave its memory (or, off MIG, its instance) out read None."""
    return GpuProcess(**{"used_memory_bytes": None, **_pick(_GPU_PROCESS_KEYS, data), "pid": int(data["pid"])})


def host_from_dict(data: dict[str, Any]) -> HostSample:
    values = _pick(_HOST_KEYS, data)
    values["cpu_pct_per_core"] = tuple(values.get("cpu_pct_per_core") or ())
    if values.get("load_avg") is not None:
        values["load_avg"] = tuple(values["load_avg"])
    try:
        procs = _procs(data.get("processes"), "host.processes")
        others = _procs(data.get("busiest_others"), "host.busiest_others")
        container = _group(ContainerSample, data.get("container"))
        return HostSample(
            processes=procs,
            busiest_others=others,
            container=container,
            psi=_group(PsiSample, data.get("psi")),
            **values,
        )
    except TypeError as exc:
        raise SnapshotFormatError(f"host: {exc}") from exc


def _procs(data: Any, where: str) -> tuple[ProcSample, ...]:
    return tuple(ProcSample(**_proc_values(p, f"{where}[{n}]")) for n, p in enumerate(data or ()))


def _proc_values(data: dict[str, Any], where: str) -> dict[str, Any]:
    values = _pick(_PROC_KEYS, data)
    if values.get("cpus_allowed") is not None:
        values["cpus_allowed"] = tuple(values["cpus_allowed"])
    values["unreadable"] = tuple(values.get("unreadable") or ())
    if values.get("activity") is not None:
        values["activity"] = activity_from_dict(values["activity"], f"{where}.activity")
    if values.get("dist") is not None:
        values["dist"] = dist_from_dict(values["dist"], f"{where}.dist")
    return values


def snapshot_from_dict(
    data: dict[str, Any],
    *,
    system: SystemInfo | None = None,
    gpu_info: tuple[GpuInfo, ...] | None = None,
) -> Snapshot:
    """Rebuild a Snapshot; `system` and `gpu_info` supply the static part when the dict leaves it out."""
    if not isinstance(data, dict):
        raise SnapshotFormatError("a snapshot must be a JSON object")
    schema = data.get("schema", SCHEMA_VERSION)
    if not isinstance(schema, int) or schema > SCHEMA_VERSION:
        raise SnapshotFormatError(
            f"snapshot schema {schema!r} is newer than this gputui reads ({SCHEMA_VERSION}); upgrade gputui"
        )
    try:
        gpu_dicts = list(data["gpus"])
        timestamp = float(data["timestamp"])
        host = host_from_dict(data["host"])
    except SnapshotFormatError:
        raise  # names what is wrong already
    except (KeyError, TypeError, ValueError) as exc:
        raise SnapshotFormatError(f"missing or malformed key: {exc}") from exc
    if system is None:
        if "system" not in data:
            raise SnapshotFormatError("missing key: system")
        system = system_from_dict(data["system"])
    if gpu_info is None:
        gpu_info = tuple(gpu_info_from_dict(g) for g in gpu_dicts)
    return Snapshot(
        timestamp=timestamp,
        system=system,
        gpu_info=gpu_info,
        gpus=tuple(gpu_sample_from_dict(g) for g in gpu_dicts),
        host=host,
        events=tuple(data.get("events") or ()),
    )
