"""One reading's series (metric name -> labelled values) -> a Snapshot: the one reader of gputui's and
dcgm-exporter's names, shared by `--remote` (a scraped /metrics page, gputui/sources/remote.py) and
`--prometheus` (answers of Prometheus's query API, gputui/sources/prometheus/).

It lives apart from both so that neither needs the other's dependencies: the /metrics parser comes from
prometheus-client, the query API is plain JSON. The metric tables in gputui/metric_schema.py drive it.

A series with a `GPU_I_ID` label is a MIG instance's, never its GPU's: what an instance has of its own (framebuffer,
the profiling metrics) goes to GpuSample.mig, and the GPU's memory and activity come only from series without the
label. dcgm-exporter writes every series of a MIG GPU per instance, the parent's temperature, power and clocks
repeated on each; those the GPU takes from an instance's series when it has none of its own.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any, Literal, cast

from gputui import metric_schema, model
from gputui.sources.base import SourceUnavailable

_SOURCE_KINDS: tuple[model.SourceKind, ...] = ("nvml", "simulated", "replay", "remote")

Labels = Mapping[str, str]
# One reading: each metric name's series, as (labels, value) pairs.
Series = Mapping[str, Sequence[tuple[Labels, float]]]


class RemoteFormatError(SourceUnavailable):
    """The server answered, but not with metrics gputui can read."""


def _canonical_names() -> dict[str, str]:
    """Each other spelling of a field (metric_schema.READ_ALIASES) -> the name its table holds, so both read as one."""
    in_tables = {spec.name for spec in metric_schema.GPU_SAMPLE_FIELDS + metric_schema.GPU_INFO_FIELDS}
    out: dict[str, str] = {}
    for names in metric_schema.READ_ALIASES:
        table_name = next(name for name in names if name in in_tables)
        out.update((name, table_name) for name in names if name != table_name)
    return out


_CANONICAL = _canonical_names()
_MIG_MODE_METRIC = next(spec.name for spec in metric_schema.GPU_INFO_FIELDS if spec.attr == "mig_mode")
# What an instance has of its own: never read as its GPU's, even where the GPU has no series of its own. Whole-GPU
# utilization is here too: DCGM has none per instance, and a GPU in MIG mode none at all.
_INSTANCE_ONLY = frozenset(
    spec.name
    for spec in metric_schema.GPU_SAMPLE_FIELDS + metric_schema.GPU_INFO_FIELDS
    if spec.name.startswith(("DCGM_FI_DEV_FB_", "DCGM_FI_PROF_")) or spec.name.endswith("_UTIL")
) - {"DCGM_FI_PROF_NVLINK_RX_BYTES", "DCGM_FI_PROF_NVLINK_TX_BYTES"}


def read_snapshot(series: Series, *, fallback_hostname: str, now: float) -> model.Snapshot:
    """The model.Snapshot these series hold (gputui's and dcgm-exporter's names); RemoteFormatError if neither is there.

    Of several series of one name on one GPU, the last given is read, as a scrape reads it; a MIG instance's
    series (with `GPU_I_ID`) are read into the GPU's `mig` instead.
    """
    return _Reader(series).snapshot(fallback_hostname, now)


class _Reader:
    """Holds one reading's series by metric name, then rebuilds the model from the field tables."""

    def __init__(self, series: Series) -> None:
        self.by_name: dict[str, list[tuple[Labels, float]]] = defaultdict(list)
        self._per_gpu: dict[str, dict[int, float]] = defaultdict(dict)
        # (GPU index, GPU instance id) -> metric name -> value; and the instance's profile, from its labels.
        self._per_instance: dict[tuple[int, int], dict[str, float]] = defaultdict(dict)
        self._profiles: dict[tuple[int, int], str] = {}
        repeated: dict[str, dict[int, float]] = defaultdict(dict)  # a parent's value as an instance repeats it
        for given, samples in series.items():
            name = _CANONICAL.get(given, given)
            for labels, value in samples:
                self.by_name[name].append((labels, value))
                index = _int_label(labels, "gpu")
                if index is None:
                    continue
                gi = _int_label(labels, metric_schema.MIG_INSTANCE_LABEL)
                if gi is None and labels.get(metric_schema.MIG_INSTANCE_LABEL):
                    continue  # an instance whose id is not a number: neither its GPU's nor readable as one
                if gi is None:
                    self._per_gpu[name][index] = value
                    continue
                self._per_instance[(index, gi)][name] = value
                if labels.get(metric_schema.MIG_PROFILE_LABEL):
                    self._profiles[(index, gi)] = labels[metric_schema.MIG_PROFILE_LABEL]
                if name not in _INSTANCE_ONLY:
                    repeated[name].setdefault(index, value)
        for name, values in repeated.items():
            for index, value in values.items():
                self._per_gpu[name].setdefault(index, value)

    def first(self, name: str) -> tuple[Labels, float] | None:
        series = self.by_name.get(name)
        return series[0] if series else None

    def value(self, name: str) -> float | None:
        found = self.first(name)
        return found[1] if found else None

    def per_gpu(self, name: str) -> Mapping[int, float]:
        """One value per GPU index (for metrics with one series per GPU)."""
        return self._per_gpu.get(name, {})

    def snapshot(self, fallback_hostname: str, now: float) -> model.Snapshot:
        gpu_labels = self._gpu_labels()
        source_info = self.first(metric_schema.SOURCE_INFO_METRIC)
        if not gpu_labels and source_info is None:
            raise RemoteFormatError("no gputui or dcgm-exporter GPU metrics in the answer")
        info_labels = source_info[0] if source_info else {}
        hostname = self._hostname(info_labels, gpu_labels) or fallback_hostname
        timestamp = self.value(metric_schema.TIMESTAMP_METRIC) or now
        gpu_info = tuple(self._gpu_info(index, gpu_labels[index]) for index in sorted(gpu_labels))
        gpus = tuple(self._gpu_sample(index, timestamp) for index in sorted(gpu_labels))
        system = model.SystemInfo(
            hostname=hostname,
            source="remote",
            driver_version=info_labels.get("driver_version") or None,
            nvml_version=info_labels.get("nvml_version") or None,
            cuda_driver_version=info_labels.get("cuda_driver_version") or None,
            gpu_count=int(self.value(metric_schema.GPU_COUNT_METRIC) or len(gpus)),
            cpu_count=int(self.value(metric_schema.CPU_COUNT_METRIC) or 0),
            kernel=info_labels.get("kernel", ""),
            scenario=info_labels.get("scenario") or None,
            fallback_reason=info_labels.get("fallback_reason") or None,
            remote_source=_source_kind(info_labels.get("source")),
            container=self._limits(),
        )
        events: tuple[str, ...] = ()
        if self.value(metric_schema.UP_METRIC) == 0:
            events = (f"{hostname}: the exporter runs but cannot read its GPUs (gputui_up 0)",)
        return model.Snapshot(
            timestamp=timestamp, system=system, gpu_info=gpu_info, gpus=gpus, host=self._host(timestamp), events=events
        )

    def _limits(self) -> model.ContainerInfo | None:
        """The exporter's cgroup limits, so the container rules judge the remote job against its quota, not
        the host's cores; what the runtime is does not travel."""
        quota = self.value(metric_schema.CONTAINER_QUOTA_METRIC)
        memory = self.value(metric_schema.CONTAINER_MEMORY_LIMIT_METRIC)
        if quota is None and memory is None:
            return None
        return model.ContainerInfo(
            runtime=None,
            recognised_by=None,
            cgroup_version=None,
            cpu_quota_cores=quota,
            memory_limit_bytes=None if memory is None else int(memory),
        )

    def _gpu_labels(self) -> dict[int, Labels]:
        """Each GPU's dcgm labels, from whichever of its metrics came first."""
        out: dict[int, Labels] = {}
        names = [spec.name for spec in metric_schema.GPU_SAMPLE_FIELDS + metric_schema.GPU_INFO_FIELDS]
        for name in (metric_schema.GPU_INFO_METRIC, metric_schema.GPU_LOST_METRIC, *names):
            for labels, _ in self.by_name.get(name, ()):
                index = _int_label(labels, "gpu")
                if index is not None and index not in out:
                    out[index] = labels
        return out

    def _hostname(self, info_labels: Labels, gpu_labels: Mapping[int, Labels]) -> str | None:
        """The host label in either spelling: older gputui and dcgm-exporter versions write `Hostname`."""
        for labels in (info_labels, *gpu_labels.values()):
            for key in (metric_schema.HOSTNAME_LABEL, metric_schema.LEGACY_HOSTNAME_LABEL):
                if labels.get(key):
                    return labels[key]
        return None

    def _gpu_info(self, index: int, labels: Labels) -> model.GpuInfo:
        values = self._fields(metric_schema.GPU_INFO_FIELDS, index)
        static = next(
            (lab for lab, _ in self.by_name.get(metric_schema.GPU_INFO_METRIC, ()) if _int_label(lab, "gpu") == index),
            {},
        )
        return model.GpuInfo(
            index=index,
            name=labels.get("modelName") or "unknown GPU",
            uuid=labels.get("UUID") or None,
            pci_bus_id=labels.get("pci_bus_id") or None,
            serial=static.get("serial") or None,
            compute_mode=static.get("compute_mode") or None,
            **values,
        )

    def _gpu_sample(self, index: int, timestamp: float) -> model.GpuSample:
        if index in self.per_gpu(metric_schema.GPU_LOST_METRIC):
            return model.GpuSample(index=index, timestamp=timestamp, lost=True)
        processes = self._gpu_processes(index)
        return model.GpuSample(
            index=index,
            timestamp=timestamp,
            processes=processes,
            mig=self._mig(index, processes),
            **self._fields(metric_schema.GPU_SAMPLE_FIELDS, index),
        )

    def _mig(self, index: int, processes: tuple[model.GpuProcess, ...]) -> model.MigState | None:
        """The GPU's MIG state: its instances from the series that carry GPU_I_ID, the modes from gputui's own
        series. None when neither says MIG is on or pending (a GPU without MIG, or dcgm-exporter's page of one)."""
        mode_value = self.per_gpu(_MIG_MODE_METRIC).get(index)
        pending_value = self.per_gpu(metric_schema.MIG_PENDING_METRIC).get(index)
        instances = sorted(gi for gpu, gi in self._per_instance if gpu == index)
        if not instances and not mode_value and pending_value is None:
            return None
        info = self._instance_info(index)
        devices = []
        for position, gi in enumerate(instances):
            values = self._per_instance[(index, gi)]
            labels = info.get(gi, {})
            mig_index = _int_label(labels, metric_schema.MIG_INDEX_LABEL)
            read: dict[str, Any] = {
                spec.attr: _from_metric(spec, values[spec.name])
                for spec in metric_schema.MIG_DEVICE_FIELDS + metric_schema.MIG_STATIC_FIELDS
                if spec.name in values
            }
            compute_instance = _int_label(labels, metric_schema.MIG_COMPUTE_INSTANCE_LABEL)
            ids = (gi, compute_instance)
            devices.append(
                model.MigDevice(
                    index=position if mig_index is None else mig_index,
                    uuid=labels.get(metric_schema.MIG_UUID_LABEL) or None,
                    profile=self._profiles.get((index, gi)),
                    gpu_instance_id=gi,
                    compute_instance_id=compute_instance,
                    processes=tuple(
                        p for p in processes if model.instance_holds(ids, (p.gpu_instance_id, p.compute_instance_id))
                    ),
                    **read,
                )
            )
        mode = bool(mode_value) if mode_value is not None else (True if instances else None)
        pending = None if pending_value is None else bool(pending_value)
        return model.MigState(mode=mode, pending_mode=pending, devices=tuple(devices))

    def _instance_info(self, index: int) -> dict[int, Labels]:
        """GPU instance id -> the labels of its gputui_mig_instance_info series (gputui's exporter only)."""
        out: dict[int, Labels] = {}
        for labels, _ in self.by_name.get(metric_schema.MIG_INSTANCE_INFO_METRIC, ()):
            gi = _int_label(labels, metric_schema.MIG_INSTANCE_LABEL)
            if _int_label(labels, "gpu") == index and gi is not None:
                out[gi] = labels
        return out

    def _gpu_processes(self, index: int) -> tuple[model.GpuProcess, ...]:
        """The processes gputui_gpu_process_info lists on this GPU, with the per-process values written for them."""
        per_pid: dict[int, dict[str, Any]] = defaultdict(dict)
        for spec in metric_schema.GPU_PROCESS_FIELDS:
            for labels, value in self.by_name.get(spec.name, ()):
                pid = _int_label(labels, "pid")
                if _int_label(labels, "gpu") == index and pid is not None:
                    per_pid[pid][spec.attr] = _from_metric(spec, value)
        processes = []
        for labels, _ in self.by_name.get(metric_schema.GPU_PROCESS_METRIC, ()):
            pid = _int_label(labels, "pid")
            if _int_label(labels, "gpu") != index or pid is None:
                continue
            kind: Literal["compute", "graphics"] = "graphics" if labels.get("kind") == "graphics" else "compute"
            values = {"used_memory_bytes": None, **per_pid.get(pid, {})}
            processes.append(
                model.GpuProcess(
                    pid=pid,
                    kind=kind,
                    gpu_instance_id=_int_label(labels, metric_schema.MIG_INSTANCE_LABEL),
                    compute_instance_id=_int_label(labels, metric_schema.MIG_COMPUTE_INSTANCE_LABEL),
                    **values,
                )
            )
        return tuple(processes)

    def _fields(self, specs: Sequence[metric_schema.MetricField], index: int) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for spec in specs:
            value = self.per_gpu(spec.name).get(index)
            if value is not None:
                out[spec.attr] = _from_metric(spec, value)
        return out

    def _host(self, timestamp: float) -> model.HostSample:
        cores = sorted(
            (core, value)
            for labels, value in self.by_name.get(metric_schema.CPU_CORE_METRIC, ())
            if (core := _int_label(labels, "cpu")) is not None
        )
        load1, load5, load15 = (self.value(name) for name in metric_schema.LOAD_METRICS)
        values = self._host_fields(metric_schema.HOST_FIELDS)
        container, psi = self._host_fields(metric_schema.CONTAINER_FIELDS), self._host_fields(metric_schema.PSI_FIELDS)
        return model.HostSample(
            timestamp=timestamp,
            container=model.ContainerSample(**container) if container else None,
            psi=model.PsiSample(**psi) if psi else None,
            cpu_pct_per_core=tuple(value for _, value in cores),
            load_avg=(load1, load5, load15) if load1 is not None and load5 is not None and load15 is not None else None,
            processes=self._processes(timestamp),
            **values,
        )

    def _host_fields(self, specs: Sequence[metric_schema.MetricField]) -> dict[str, Any]:
        """The host-wide series of these fields that the exporter wrote, as model values."""
        out: dict[str, Any] = {}
        for spec in specs:
            value = self.value(spec.name)
            if value is not None:
                out[spec.attr] = _from_metric(spec, value)
        return out

    def _processes(self, timestamp: float) -> tuple[model.ProcSample, ...]:
        per_pid: dict[int, dict[str, Any]] = {}
        for labels, _ in self.by_name.get(metric_schema.PROCESS_INFO_METRIC, ()):
            pid = _int_label(labels, "pid")
            if pid is not None:
                per_pid[pid] = {
                    "name": labels.get("name", ""),
                    "user": labels.get("user") or None,
                    "state": labels.get("state") or None,
                    **{attr: labels.get(label) or None for attr, label in metric_schema.PROCESS_OWNER_LABELS},
                }
        for spec in metric_schema.PROC_FIELDS:
            for labels, value in self.by_name.get(spec.name, ()):
                pid = _int_label(labels, "pid")
                if pid in per_pid:
                    per_pid[pid][spec.attr] = _from_metric(spec, value)
        for labels, value in self.by_name.get(metric_schema.PROCESS_HELD_METRIC, ()):
            pid = _int_label(labels, "pid")
            if pid in per_pid:
                per_pid[pid].update(_held(labels, value, timestamp))
        return tuple(model.ProcSample(pid=pid, **values) for pid, values in sorted(per_pid.items()))


def _held(labels: Labels, seconds: float, timestamp: float) -> dict[str, Any]:
    """A rank's place in its job and where its main thread has been held (gputui_process_held_seconds), as the
    ProcSample fields the stopped-job rule reads: all that was served of its stacks is that one place, so its
    activity says that place alone, as of this reading. Nothing where a label is not what the exporter writes."""
    kind = cast(model.ActivityKind, labels.get("kind", ""))
    if kind not in model.ACTIVITY_KINDS or not labels.get("job") or not math.isfinite(seconds) or seconds < 0:
        return {}
    frame = model.ActivityFrame(
        kind=kind,
        function=labels.get("function", ""),
        file=labels.get("file", ""),
        line=_int_label(labels, "line"),
        share=1.0,
    )
    activity = model.JobActivity(
        source="py-spy",
        taken_at=timestamp,
        window_s=0.0,
        samples=1,
        shares=model.ActivityShares(**{kind: 1.0}),
        top=(frame,),
        rank=_int_label(labels, "rank"),
        unchanged_since=timestamp - seconds,
    )
    return {"dist": model.DistRank(rank=_int_label(labels, "rank"), job=labels["job"]), "activity": activity}


def _int_label(labels: Labels, key: str) -> int | None:
    try:
        return int(labels[key])
    except (KeyError, ValueError):
        return None


def _from_metric(spec: metric_schema.MetricField, value: float) -> float | int | bool:
    raw = value / spec.scale
    if spec.kind is bool:
        return raw != 0
    if spec.kind is int:
        return round(raw)
    return raw


def _source_kind(text: str | None) -> model.SourceKind | None:
    return next((kind for kind in _SOURCE_KINDS if kind == text), None)
