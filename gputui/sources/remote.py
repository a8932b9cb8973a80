"""Read another server's GPUs by scraping its exporter's /metrics: a Source (gputui/session/fleet.py polls many).

It reads what `gputui export` writes, and also a plain dcgm-exporter (the same names), which then gives GPU
metrics only. The metric tables in gputui/metric_schema.py drive both directions.
"""

from __future__ import annotations

import time
import urllib.error
import urllib.parse
import urllib.request
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from http.client import HTTPException
from typing import Any, Literal, cast

from prometheus_client.metrics_core import Metric
from prometheus_client.parser import text_string_to_metric_families

from gputui import metric_schema as m
from gputui.model import (
    ContainerInfo,
    ContainerSample,
    GpuInfo,
    GpuProcess,
    GpuSample,
    HostSample,
    ProcSample,
    PsiSample,
    Snapshot,
    SourceKind,
    SystemInfo,
)
from gputui.sources.base import SourceUnavailable

DEFAULT_PORT = 9400
DEFAULT_TIMEOUT_S = 2.0
MAX_BODY_BYTES = 32 * 1024 * 1024  # a 8-GPU exposition is ~100 KB; this only stops a runaway answer
_SOURCE_KINDS: tuple[SourceKind, ...] = ("nvml", "simulated", "replay", "remote")


class RemoteUnreachable(SourceUnavailable):
    """The exporter did not answer (down, refused, timed out, HTTP error): show it as unreachable and retry."""


class RemoteFormatError(SourceUnavailable):
    """The server answered, but not with metrics gputui can read."""


def parse_targets(text: str) -> tuple[str, ...]:
    """`host1:9400,host2` (as `--remote` takes it) -> the exporters' /metrics URLs; ValueError names a bad one."""
    targets = tuple(part.strip() for part in text.split(",") if part.strip())
    if not targets:
        raise ValueError("no exporter given (expected host:port[,host:port...], e.g. gpu01:9400,gpu02:9400)")
    return tuple(dict.fromkeys(metrics_url(target) for target in targets))


def metrics_url(target: str) -> str:
    """`host`, `host:9400` or a full URL -> the URL of its /metrics; ValueError with the reason on bad input."""
    text = target.strip()
    if not text:
        raise ValueError("empty exporter address (expected host:port, e.g. gpu01:9400)")
    parsed = urllib.parse.urlsplit(text if "://" in text else f"http://{text}")
    if parsed.scheme not in ("http", "https"):
        raise ValueError(f"not an http(s) address: {target!r}")
    try:
        port = parsed.port
    except ValueError:
        raise ValueError(f"bad port in {target!r} (expected host:port, e.g. gpu01:9400)") from None
    if not parsed.hostname:
        raise ValueError(f"no host in {target!r} (expected host:port, e.g. gpu01:9400)")
    host = f"[{parsed.hostname}]" if ":" in parsed.hostname else parsed.hostname
    path = parsed.path if parsed.path not in ("", "/") else "/metrics"
    return urllib.parse.urlunsplit((parsed.scheme, f"{host}:{port or DEFAULT_PORT}", path, parsed.query, ""))


class RemoteSource:
    """A Source that reads one exporter over HTTP. Each `sample()` is one scrape, bounded by `timeout`."""

    def __init__(
        self, target: str, *, timeout: float = DEFAULT_TIMEOUT_S, clock: Callable[[], float] = time.time
    ) -> None:
        self.url = metrics_url(target)
        self._timeout = timeout
        self._clock = clock
        # Monitoring traffic stays on the cluster network: a proxy from the environment would break it.
        self._opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))

    @property
    def address(self) -> str:
        """host:port, for messages and for a name until the exporter has told its hostname."""
        return urllib.parse.urlsplit(self.url).netloc

    def open(self) -> SystemInfo:
        return self.sample().system

    def sample(self) -> Snapshot:
        return parse_exposition(self._fetch(), fallback_hostname=self.address, now=self._clock())

    def close(self) -> None:
        """Nothing is held between scrapes."""

    def _fetch(self) -> str:
        request = urllib.request.Request(self.url, headers={"Accept": "text/plain"})
        try:
            with self._opener.open(request, timeout=self._timeout) as response:
                body = cast(bytes, response.read(MAX_BODY_BYTES + 1))
        except urllib.error.HTTPError as exc:
            raise RemoteUnreachable(f"{self.address}: the exporter answered HTTP {exc.code} {exc.reason}") from None
        except urllib.error.URLError as exc:
            raise RemoteUnreachable(f"{self.address}: unreachable ({_reason(exc.reason)})") from None
        except (TimeoutError, OSError, HTTPException) as exc:
            raise RemoteUnreachable(f"{self.address}: unreachable ({_reason(exc)})") from None
        if len(body) > MAX_BODY_BYTES:
            raise RemoteFormatError(f"{self.address}: the answer is larger than {MAX_BODY_BYTES // 2**20} MiB")
        try:
            return body.decode("utf-8")
        except UnicodeDecodeError:
            raise RemoteFormatError(f"{self.address}: the answer is not UTF-8 text") from None


def _reason(reason: object) -> str:
    if isinstance(reason, TimeoutError) or "timed out" in str(reason):
        return "timed out"
    if isinstance(reason, ConnectionRefusedError):
        return "connection refused: is `gputui export` running there?"
    return str(getattr(reason, "strerror", None) or reason)


Labels = Mapping[str, str]


def parse_exposition(text: str, *, fallback_hostname: str, now: float) -> Snapshot:
    """Prometheus text -> Snapshot, reading gputui's and dcgm-exporter's names; RemoteFormatError if neither."""
    try:
        families = list(text_string_to_metric_families(text))
    except ValueError as exc:
        raise RemoteFormatError(f"not Prometheus metrics: {exc}") from None
    return _Reader(families).snapshot(fallback_hostname, now)


class _Reader:
    """Sorts the samples of one scrape by metric name, then rebuilds the model from the field tables."""

    def __init__(self, families: Iterable[Metric]) -> None:
        self.by_name: dict[str, list[tuple[Labels, float]]] = defaultdict(list)
        self._per_gpu: dict[str, dict[int, float]] = defaultdict(dict)
        for family in families:
            for sample in family.samples:
                name = sample.name
                if family.type == "counter" and name == f"{family.name}_total":
                    # The parser names every counter sample `_total`; dcgm-exporter's counters have no such suffix.
                    name = family.name
                self.by_name[name].append((sample.labels, sample.value))
                index = _int_label(sample.labels, "gpu")
                if index is not None:
                    self._per_gpu[name][index] = sample.value

    def first(self, name: str) -> tuple[Labels, float] | None:
        series = self.by_name.get(name)
        return series[0] if series else None

    def value(self, name: str) -> float | None:
        found = self.first(name)
        return found[1] if found else None

    def per_gpu(self, name: str) -> Mapping[int, float]:
        """One value per GPU index (for metrics with one series per GPU)."""
        return self._per_gpu.get(name, {})

    def snapshot(self, fallback_hostname: str, now: float) -> Snapshot:
        gpu_labels = self._gpu_labels()
        source_info = self.first(m.SOURCE_INFO_METRIC)
        if not gpu_labels and source_info is None:
            raise RemoteFormatError("no gputui or dcgm-exporter GPU metrics in the answer")
        info_labels = source_info[0] if source_info else {}
        hostname = self._hostname(info_labels, gpu_labels) or fallback_hostname
        timestamp = self.value(m.TIMESTAMP_METRIC) or now
        gpu_info = tuple(self._gpu_info(index, gpu_labels[index]) for index in sorted(gpu_labels))
        gpus = tuple(self._gpu_sample(index, timestamp) for index in sorted(gpu_labels))
        system = SystemInfo(
            hostname=hostname,
            source="remote",
            driver_version=info_labels.get("driver_version") or None,
            nvml_version=info_labels.get("nvml_version") or None,
            cuda_driver_version=info_labels.get("cuda_driver_version") or None,
            gpu_count=int(self.value(m.GPU_COUNT_METRIC) or len(gpus)),
            cpu_count=int(self.value(m.CPU_COUNT_METRIC) or 0),
            kernel=info_labels.get("kernel", ""),
            scenario=info_labels.get("scenario") or None,
            fallback_reason=info_labels.get("fallback_reason") or None,
            remote_source=_source_kind(info_labels.get("source")),
            container=self._limits(),
        )
        events: tuple[str, ...] = ()
        if self.value(m.UP_METRIC) == 0:
            events = (f"{hostname}: the exporter runs but cannot read its GPUs (gputui_up 0)",)
        return Snapshot(
            timestamp=timestamp, system=system, gpu_info=gpu_info, gpus=gpus, host=self._host(timestamp), events=events
        )

    def _limits(self) -> ContainerInfo | None:
        """The exporter's cgroup limits, so the container rules judge the remote job against its quota, not
        the host's cores; what the runtime is does not travel."""
        quota = self.value(m.CONTAINER_QUOTA_METRIC)
        memory = self.value(m.CONTAINER_MEMORY_LIMIT_METRIC)
        if quota is None and memory is None:
            return None
        return ContainerInfo(
            runtime=None,
            recognised_by=None,
            cgroup_version=None,
            cpu_quota_cores=quota,
            memory_limit_bytes=None if memory is None else int(memory),
        )

    def _gpu_labels(self) -> dict[int, Labels]:
        """Each GPU's dcgm labels, from whichever of its metrics came first."""
        out: dict[int, Labels] = {}
        names = [spec.name for spec in m.GPU_SAMPLE_FIELDS + m.GPU_INFO_FIELDS]
        for name in (m.GPU_INFO_METRIC, m.GPU_LOST_METRIC, *names):
            for labels, _ in self.by_name.get(name, ()):
                index = _int_label(labels, "gpu")
                if index is not None and index not in out:
                    out[index] = labels
        return out

    def _hostname(self, info_labels: Labels, gpu_labels: Mapping[int, Labels]) -> str | None:
        """The host label in either spelling: older gputui and dcgm-exporter versions write `Hostname`."""
        for labels in (info_labels, *gpu_labels.values()):
            for key in (m.HOSTNAME_LABEL, m.LEGACY_HOSTNAME_LABEL):
                if labels.get(key):
                    return labels[key]
        return None

    def _gpu_info(self, index: int, labels: Labels) -> GpuInfo:
        values = self._fields(m.GPU_INFO_FIELDS, index)
        static = next(
            (lab for lab, _ in self.by_name.get(m.GPU_INFO_METRIC, ()) if _int_label(lab, "gpu") == index), {}
        )
        return GpuInfo(
            index=index,
            name=labels.get("modelName") or "unknown GPU",
            uuid=labels.get("UUID") or None,
            pci_bus_id=labels.get("pci_bus_id") or None,
            serial=static.get("serial") or None,
            compute_mode=static.get("compute_mode") or None,
            **values,
        )

    def _gpu_sample(self, index: int, timestamp: float) -> GpuSample:
        if index in self.per_gpu(m.GPU_LOST_METRIC):
            return GpuSample(index=index, timestamp=timestamp, lost=True)
        return GpuSample(
            index=index,
            timestamp=timestamp,
            processes=self._gpu_processes(index),
            **self._fields(m.GPU_SAMPLE_FIELDS, index),
        )

    def _gpu_processes(self, index: int) -> tuple[GpuProcess, ...]:
        """The processes gputui_gpu_process_info lists on this GPU, with the per-process values written for them."""
        per_pid: dict[int, dict[str, Any]] = defaultdict(dict)
        for spec in m.GPU_PROCESS_FIELDS:
            for labels, value in self.by_name.get(spec.name, ()):
                pid = _int_label(labels, "pid")
                if _int_label(labels, "gpu") == index and pid is not None:
                    per_pid[pid][spec.attr] = _from_metric(spec, value)
        processes = []
        for labels, _ in self.by_name.get(m.GPU_PROCESS_METRIC, ()):
            pid = _int_label(labels, "pid")
            if _int_label(labels, "gpu") != index or pid is None:
                continue
            kind: Literal["compute", "graphics"] = "graphics" if labels.get("kind") == "graphics" else "compute"
            values = {"used_memory_bytes": None, **per_pid.get(pid, {})}
            processes.append(GpuProcess(pid=pid, kind=kind, **values))
        return tuple(processes)

    def _fields(self, specs: Sequence[m.MetricField], index: int) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for spec in specs:
            value = self.per_gpu(spec.name).get(index)
            if value is not None:
                out[spec.attr] = _from_metric(spec, value)
        return out

    def _host(self, timestamp: float) -> HostSample:
        cores = sorted(
            (core, value)
            for labels, value in self.by_name.get(m.CPU_CORE_METRIC, ())
            if (core := _int_label(labels, "cpu")) is not None
        )
        load1, load5, load15 = (self.value(name) for name in m.LOAD_METRICS)
        values = self._host_fields(m.HOST_FIELDS)
        container, psi = self._host_fields(m.CONTAINER_FIELDS), self._host_fields(m.PSI_FIELDS)
        return HostSample(
            timestamp=timestamp,
            container=ContainerSample(**container) if container else None,
            psi=PsiSample(**psi) if psi else None,
            cpu_pct_per_core=tuple(value for _, value in cores),
            load_avg=(load1, load5, load15) if load1 is not None and load5 is not None and load15 is not None else None,
            processes=self._processes(),
            **values,
        )

    def _host_fields(self, specs: Sequence[m.MetricField]) -> dict[str, Any]:
        """The host-wide series of these fields that the exporter wrote, as model values."""
        out: dict[str, Any] = {}
        for spec in specs:
            value = self.value(spec.name)
            if value is not None:
                out[spec.attr] = _from_metric(spec, value)
        return out

    def _processes(self) -> tuple[ProcSample, ...]:
        per_pid: dict[int, dict[str, Any]] = {}
        for labels, _ in self.by_name.get(m.PROCESS_INFO_METRIC, ()):
            pid = _int_label(labels, "pid")
            if pid is not None:
                per_pid[pid] = {
                    "name": labels.get("name", ""),
                    "user": labels.get("user") or None,
                    "state": labels.get("state") or None,
                    **{attr: labels.get(label) or None for attr, label in m.PROCESS_OWNER_LABELS},
                }
        for spec in m.PROC_FIELDS:
            for labels, value in self.by_name.get(spec.name, ()):
                pid = _int_label(labels, "pid")
                if pid in per_pid:
                    per_pid[pid][spec.attr] = _from_metric(spec, value)
        return tuple(ProcSample(pid=pid, **values) for pid, values in sorted(per_pid.items()))


def _int_label(labels: Labels, key: str) -> int | None:
    try:
        return int(labels[key])
    except (KeyError, ValueError):
        return None


def _from_metric(spec: m.MetricField, value: float) -> float | int | bool:
    raw = value / spec.scale
    if spec.kind is bool:
        return raw != 0
    if spec.kind is int:
        return round(raw)
    return raw


def _source_kind(text: str | None) -> SourceKind | None:
    return next((kind for kind in _SOURCE_KINDS if kind == text), None)
