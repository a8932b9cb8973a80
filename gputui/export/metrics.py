"""Snapshot -> Prometheus metric families, under dcgm-exporter's names, units and labels where one exists.

Users who outgrow one server run Prometheus and Grafana with NVIDIA's dcgm-exporter dashboards; exporting the same
names (`DCGM_FI_DEV_*`, `DCGM_FI_PROF_*`), units (framebuffer in MiB, energy in mJ, violation time in ns, GPM as
0-1 ratios) and labels (`gpu`, `UUID`, `pci_bus_id`, `device`, `modelName`, `hostname`, or dcgm-exporter's older
`Hostname` that its releases still write, on request) lets those dashboards read gputui unchanged. What dcgm-exporter
does not have lives under `gputui_`. The names and field tables live in gputui/metric_schema.py, which also drives
the way back (gputui/sources/remote.py), so what is written and what is read cannot drift apart.

A MIG GPU's instances get their own series as dcgm-exporter writes them: the GPU's labels plus `GPU_I_PROFILE` and
`GPU_I_ID`, for what an instance has of its own (framebuffer, the profiling metrics, its processes); the GPU's own
series (temperature, power, clocks, its memory aggregate where the driver gives one) are written once, without
them, and no whole-GPU utilization exists in MIG mode. So `{GPU_I_ID=""}` selects the GPUs, `{GPU_I_ID!=""}` the
instances, and a sum over both would count an instance's memory twice.

A value that is None is left out, never written as 0. dcgm's cumulative fields (energy, PCIe replays, violation
time) keep their exact names and are typed `untyped`: prometheus-client appends `_total` to every counter it
writes, which would break the dashboards' queries, and `rate()` works the same on an untyped series.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric, UnknownMetricFamily
from prometheus_client.samples import Sample

from gputui import __version__
from gputui.diagnostics.findings import Finding
from gputui.metric_schema import (
    CONTAINER_FIELDS,
    CONTAINER_QUOTA_METRIC,
    CPU_CORE_METRIC,
    CPU_COUNT_METRIC,
    CPU_MEAN_METRIC,
    FINDING_METRIC,
    GPU_COUNT_METRIC,
    GPU_INFO_FIELDS,
    GPU_INFO_METRIC,
    GPU_LOST_METRIC,
    GPU_PROCESS_FIELDS,
    GPU_PROCESS_METRIC,
    GPU_SAMPLE_FIELDS,
    HOST_FIELDS,
    HOSTNAME_LABEL,
    LOAD_METRICS,
    MIB,
    MIG_COMPUTE_INSTANCE_LABEL,
    MIG_DEVICE_FIELDS,
    MIG_FB_FREE_METRIC,
    MIG_INDEX_LABEL,
    MIG_INSTANCE_INFO_METRIC,
    MIG_INSTANCE_LABEL,
    MIG_PENDING_METRIC,
    MIG_PROFILE_LABEL,
    MIG_STATIC_FIELDS,
    MIG_UUID_LABEL,
    PROC_FIELDS,
    PROCESS_HELD_METRIC,
    PROCESS_INFO_METRIC,
    PROCESS_OWNER_LABELS,
    PSI_FIELDS,
    SOURCE_INFO_METRIC,
    SOURCE_LABEL,
    TIMESTAMP_METRIC,
    UP_METRIC,
    VERDICT_SECONDS_METRIC,
    XID_METRIC,
    HostnameLabel,
    MetricField,
)
from gputui.model import GpuInfo, GpuSample, ProcSample, Snapshot, SystemInfo


@dataclass(frozen=True, slots=True)
class ExportState:
    """What one scrape shows: the latest snapshot (None when the last reading failed) and its findings."""

    system: SystemInfo
    snapshot: Snapshot | None
    findings: tuple[Finding, ...] = ()
    last_xid: Mapping[int, int] = field(default_factory=dict)  # GPU index -> last XID seen since the start
    error: str | None = None
    # GPU index -> verdict class -> seconds in it since the start (gputui/diagnostics/account.py).
    verdict_seconds: Mapping[int, Mapping[str, float]] = field(default_factory=dict)


class _Families:
    """Gathers series by metric name so that each family is written once, with all its series. A family may
    hold series of different label sets (a MIG instance's has two labels more than its GPU's)."""

    def __init__(self, extra: Mapping[str, str]) -> None:
        self._extra = dict(extra)
        self._families: dict[str, GaugeMetricFamily | UnknownMetricFamily] = {}

    def add(
        self, name: str, help: str, labels: Mapping[str, str], value: float | None, *, cumulative: bool = False
    ) -> None:
        if value is None:
            return
        all_labels = {**labels, **self._extra}
        family = self._families.get(name)
        if family is None:
            cls = UnknownMetricFamily if cumulative else GaugeMetricFamily
            family = cls(name, help, labels=list(all_labels))
            self._families[name] = family
        family.samples.append(Sample(name, all_labels, float(value)))

    def add_fields(self, specs: Iterable[MetricField], labels: Mapping[str, str], obj: object) -> None:
        """One series per field of a metric_schema table, each read from `obj`'s attribute."""
        for spec in specs:
            value = getattr(obj, spec.attr)
            self.add(
                spec.name, spec.help, labels, None if value is None else value * spec.scale, cumulative=spec.cumulative
            )

    def families(self) -> list[Metric]:
        return list(self._families.values())


def gpu_labels(
    info: GpuInfo | None, index: int, hostname: str, hostname_label: HostnameLabel = HOSTNAME_LABEL
) -> dict[str, str]:
    """dcgm-exporter's label set for one GPU; `device` is the /dev node name dcgm would give it."""
    return {
        "gpu": str(index),
        "UUID": (info.uuid or "") if info else "",
        "pci_bus_id": (info.pci_bus_id or "") if info else "",
        "device": f"nvidia{index}",
        "modelName": info.name if info else "",
        hostname_label: hostname,
    }


def source_labels(system: SystemInfo) -> dict[str, str]:
    """The label that marks data not read from this machine's driver (simulated or replayed), or none."""
    return {} if system.is_live else {SOURCE_LABEL: system.source}


def metric_families(state: ExportState, *, hostname_label: HostnameLabel = HOSTNAME_LABEL) -> list[Metric]:
    """Everything a scrape shows, from one ExportState; pure, so it is tested without a server."""
    system = state.system
    host: dict[str, str] = {hostname_label: system.hostname}
    out = _Families(source_labels(system))
    out.add(UP_METRIC, "1 when the last reading of the GPUs succeeded.", host, 0 if state.snapshot is None else 1)
    out.add(
        SOURCE_INFO_METRIC,
        'Where the data comes from; source="simulated" marks a simulated machine, not real GPUs.',
        {
            **host,
            "source": system.source,
            "simulated": "true" if system.source == "simulated" else "false",
            "scenario": system.scenario or "",
            "driver_version": system.driver_version or "",
            "nvml_version": system.nvml_version or "",
            "cuda_driver_version": system.cuda_driver_version or "",
            "kernel": system.kernel,
            "fallback_reason": system.fallback_reason or "",
            "version": __version__,
        },
        1,
    )
    out.add(GPU_COUNT_METRIC, "GPUs on the machine.", host, system.gpu_count)
    out.add(CPU_COUNT_METRIC, "Logical CPUs on the machine.", host, system.cpu_count)
    snapshot = state.snapshot
    if snapshot is not None:
        out.add(TIMESTAMP_METRIC, "Unix time of the reading shown.", host, snapshot.timestamp)
        _add_gpus(out, snapshot, state.last_xid, hostname_label)
        _add_host(out, snapshot, host)
    _add_findings(out, state.findings, host)
    return [*out.families(), *_verdict_seconds(state, host)]


def _add_gpus(out: _Families, snapshot: Snapshot, last_xid: Mapping[int, int], hostname_label: HostnameLabel) -> None:
    hostname = snapshot.system.hostname
    for sample in snapshot.gpus:
        info = snapshot.info(sample.index)
        labels = gpu_labels(info, sample.index, hostname, hostname_label)
        if info is not None:
            out.add(
                GPU_INFO_METRIC,
                "Static facts of a GPU as labels.",
                {**labels, "serial": info.serial or "", "compute_mode": info.compute_mode or ""},
                1,
            )
            out.add_fields(GPU_INFO_FIELDS, labels, info)
        if sample.lost:
            out.add(GPU_LOST_METRIC, "1 when the GPU fell off the bus (no other value is read).", labels, 1)
            continue
        out.add_fields(GPU_SAMPLE_FIELDS, labels, sample)
        out.add(XID_METRIC, "Value of the last XID error encountered.", labels, last_xid.get(sample.index))
        _add_gpu_processes(out, sample, labels)
        _add_mig(out, sample, labels)


def instance_labels(labels: Mapping[str, str], profile: str | None, gpu_instance_id: int) -> dict[str, str]:
    """A MIG instance's labels: its GPU's with GPU_I_PROFILE and GPU_I_ID after `modelName`, as dcgm-exporter
    orders them (the host label last)."""
    out: dict[str, str] = {}
    for key, value in labels.items():
        out[key] = value
        if key == "modelName":
            out[MIG_PROFILE_LABEL] = profile or ""
            out[MIG_INSTANCE_LABEL] = str(gpu_instance_id)
    return out


def _add_gpu_processes(out: _Families, sample: GpuSample, labels: Mapping[str, str]) -> None:
    for proc in sample.processes:
        base: Mapping[str, str] = labels
        if proc.gpu_instance_id is not None:
            device = sample.instance_of(proc)
            base = instance_labels(labels, device.profile if device else None, proc.gpu_instance_id)
        proc_labels = {**base, "pid": str(proc.pid), "kind": proc.kind}
        if proc.compute_instance_id is not None:
            proc_labels[MIG_COMPUTE_INSTANCE_LABEL] = str(proc.compute_instance_id)
        out.add(GPU_PROCESS_METRIC, "A process that holds a context on the GPU.", proc_labels, 1)
        out.add_fields(GPU_PROCESS_FIELDS, proc_labels, proc)


def _add_mig(out: _Families, sample: GpuSample, labels: Mapping[str, str]) -> None:
    """The pending mode, then each instance's series; an instance without a GPU instance id cannot be labelled
    apart from its GPU, so it is left out rather than written as the GPU."""
    if sample.mig is None:
        return
    out.add(MIG_PENDING_METRIC, "1 when MIG mode is on after the next GPU reset.", labels, sample.mig.pending_mode)
    for device in sample.mig.devices:
        if device.gpu_instance_id is None:
            continue
        mig_labels = instance_labels(labels, device.profile, device.gpu_instance_id)
        info = {
            **mig_labels,
            MIG_UUID_LABEL: device.uuid or "",
            MIG_INDEX_LABEL: str(device.index),
            MIG_COMPUTE_INSTANCE_LABEL: "" if device.compute_instance_id is None else str(device.compute_instance_id),
        }
        out.add(MIG_INSTANCE_INFO_METRIC, "A MIG instance of a GPU, named by its labels.", info, 1)
        out.add_fields(MIG_STATIC_FIELDS, mig_labels, device)
        out.add_fields(MIG_DEVICE_FIELDS, mig_labels, device)
        used, total = device.memory_used_bytes, device.memory_total_bytes
        free = None if used is None or total is None else (total - used) / MIB
        out.add(MIG_FB_FREE_METRIC, "Framebuffer memory free (in MiB).", mig_labels, free)


def _add_host(out: _Families, snapshot: Snapshot, host: Mapping[str, str]) -> None:
    sample = snapshot.host
    out.add(CPU_MEAN_METRIC, "CPU use, mean over all cores (in %).", host, sample.cpu_pct)
    for core, pct in enumerate(sample.cpu_pct_per_core):
        out.add(CPU_CORE_METRIC, "CPU use of one core (in %).", {**host, "cpu": str(core)}, pct)
    if sample.load_avg is not None:
        for name, value in zip(LOAD_METRICS, sample.load_avg, strict=True):
            out.add(name, "Load average.", host, value)
    out.add_fields(HOST_FIELDS, host, sample)
    limits = snapshot.system.container
    if limits is not None:
        out.add(CONTAINER_QUOTA_METRIC, "The cgroup's CPU quota (in CPUs).", host, limits.cpu_quota_cores)
    for specs, group in ((CONTAINER_FIELDS, sample.container), (PSI_FIELDS, sample.psi)):
        if group is not None:
            out.add_fields(specs, host, group)
    # Each process's GPUs, with its MIG instance (profile and GPU instance id) where it runs in one.
    gpus_of: dict[int, list[dict[str, str]]] = {}
    for gpu in snapshot.gpus:
        for gpu_proc in gpu.processes:
            where = {"gpu": str(gpu.index)}
            if gpu_proc.gpu_instance_id is not None:
                device = gpu.instance_of(gpu_proc)
                where[MIG_PROFILE_LABEL] = (device.profile or "") if device else ""
                where[MIG_INSTANCE_LABEL] = str(gpu_proc.gpu_instance_id)
            gpus_of.setdefault(gpu_proc.pid, []).append(where)
    for proc in sample.processes:
        labels = {**host, "pid": str(proc.pid), "name": proc.name}
        owner = {label: getattr(proc, attr) or "" for attr, label in PROCESS_OWNER_LABELS}
        for where in gpus_of.get(proc.pid) or [{"gpu": ""}]:
            out.add(
                PROCESS_INFO_METRIC,
                "A process that uses a GPU, seen from the host, and whose job it is (pod, Slurm job): join on it.",
                {**labels, **where, "user": proc.user or "", "state": proc.state or "", **owner},
                1,
            )
        out.add_fields(PROC_FIELDS, labels, proc)
        _add_held(out, proc, labels)


def _add_held(out: _Families, proc: ProcSample, labels: Mapping[str, str]) -> None:
    """How long a rank's main thread has been held in one place, where its stacks say so (rules/hang.py)."""
    activity, dist = proc.activity, proc.dist
    kind = activity.leading if activity is not None else None
    if activity is None or activity.unchanged_since is None or kind is None or dist is None or dist.job is None:
        return
    frame = next((f for f in activity.top if f.kind == kind), None)
    place = {
        "rank": "" if dist.rank is None else str(dist.rank),
        "job": dist.job,
        "kind": kind,
        "function": frame.function if frame is not None else "",
        "file": frame.file if frame is not None else "",
        "line": "" if frame is None or frame.line is None else str(frame.line),
    }
    out.add(
        PROCESS_HELD_METRIC,
        "Seconds a rank's main thread has stayed in one place (its stack samples), as of its last window.",
        {**labels, **place},
        activity.taken_at - activity.unchanged_since,
    )


def _add_findings(out: _Families, findings: Iterable[Finding], host: Mapping[str, str]) -> None:
    seen: set[tuple[str, str, str]] = set()
    for finding in findings:
        for gpu in [str(g) for g in finding.gpus] or [""]:
            key = (finding.rule, finding.severity.label, gpu)
            if key in seen:
                continue
            seen.add(key)
            out.add(
                FINDING_METRIC,
                "1 for each open diagnostic finding; gpu is empty for a host-wide finding.",
                {**host, "rule": finding.rule, "severity": finding.severity.label, "gpu": gpu},
                1,
            )


def _verdict_seconds(state: ExportState, host: Mapping[str, str]) -> list[Metric]:
    """Each GPU's seconds in each verdict class, a counter, so that Prometheus adds up the fleet's lost GPU-hours
    per cause (`increase()` over a day, summed by class)."""
    if not state.verdict_seconds:
        return []
    extra = {**host, **source_labels(state.system)}
    family = CounterMetricFamily(
        VERDICT_SECONDS_METRIC,
        "Seconds each GPU spent in each verdict class since the exporter started; idle is split into "
        "idle_allocated (a process or pod holds the GPU) and idle_free; stopped is a job that makes no progress.",
        labels=[*extra, "gpu", "class"],
    )
    for gpu, seconds in sorted(state.verdict_seconds.items()):
        for cls, value in seconds.items():
            family.add_metric([*extra.values(), str(gpu), cls], value)
    return [family]
