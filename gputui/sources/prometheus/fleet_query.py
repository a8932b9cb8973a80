"""The whole fleet from Prometheus: a few queries per refresh for every host at once, then one Snapshot per host.

Each query asks for a batch of metric names (`{__name__=~"a|b|c", <--match>}`), so a refresh costs at most one
query per metric name, never one per host; the names are gputui's and dcgm-exporter's, from the tables in
gputui/metric_schema.py (and each older spelling in READ_ALIASES). Series are grouped by host, and each host's
series become a Snapshot through the same reader as a scraped /metrics page (gputui/sources/series.py).

Hosts are named by the label `hostname`, else `Hostname` (what dcgm-exporter's releases write), else the address
Prometheus scraped (`instance`). Prometheus renames a label the exporter wrote when it clashes with one of the
target's (`honor_labels: false`, the default): `exported_pod`, `exported_instance`... are read as the exporter's own.

A node that runs dcgm-exporter and not gputui gives GPU readings only: its host CPU, memory and processes are
None (never 0) and its source says why (NOT_FROM_DCGM).
"""

from __future__ import annotations

import re
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Literal

from gputui import metric_schema
from gputui.model import GpuSample, Snapshot
from gputui.sources.prometheus.client import PrometheusClient, QueryResult
from gputui.sources.series import Labels, RemoteFormatError, read_snapshot

NodeSource = Literal["gputui", "dcgm-exporter"]
# What a node that only runs dcgm-exporter cannot show, in the words the views print.
NOT_FROM_DCGM = "host CPU, memory and processes: not available from dcgm-exporter"
HOST_LABELS = (
    metric_schema.HOSTNAME_LABEL,
    metric_schema.LEGACY_HOSTNAME_LABEL,
)  # their exported_ forms too (exporter_labels)
INSTANCE_LABEL = "instance"
OWNER_LABELS = ("pod", "namespace", "container")  # dcgm-exporter's Kubernetes labels on a GPU in use
EXPORTED = "exported_"
NAMES_PER_QUERY = 16  # ~100 names in 7 queries; small enough that one answer stays far below the bounds
PARALLEL_QUERIES = 4

_LABEL = r"[a-zA-Z_][a-zA-Z0-9_]*"
_VALUE = r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`'
_MATCHER = re.compile(rf"\s*({_LABEL})\s*(=~|!~|!=|=)\s*({_VALUE})\s*")


def fleet_metric_names() -> tuple[str, ...]:
    """Every metric name the reader uses, gputui's and dcgm-exporter's, each once."""
    tables = (
        metric_schema.GPU_SAMPLE_FIELDS,
        metric_schema.GPU_INFO_FIELDS,
        metric_schema.HOST_FIELDS,
        metric_schema.CONTAINER_FIELDS,
        metric_schema.PSI_FIELDS,
        metric_schema.PROC_FIELDS,
        metric_schema.GPU_PROCESS_FIELDS,
        metric_schema.MIG_DEVICE_FIELDS,
        metric_schema.MIG_STATIC_FIELDS,
    )
    names = [spec.name for table in tables for spec in table]
    names += [name for group in metric_schema.READ_ALIASES for name in group]
    names += [
        metric_schema.SOURCE_INFO_METRIC,
        metric_schema.UP_METRIC,
        metric_schema.TIMESTAMP_METRIC,
        metric_schema.GPU_COUNT_METRIC,
        metric_schema.CPU_COUNT_METRIC,
        metric_schema.CPU_CORE_METRIC,
        metric_schema.CONTAINER_QUOTA_METRIC,
        *metric_schema.LOAD_METRICS,
        metric_schema.GPU_INFO_METRIC,
        metric_schema.GPU_LOST_METRIC,
        metric_schema.GPU_PROCESS_METRIC,
        metric_schema.PROCESS_INFO_METRIC,
        metric_schema.PROCESS_HELD_METRIC,
        metric_schema.MIG_PENDING_METRIC,
        metric_schema.MIG_INSTANCE_INFO_METRIC,
    ]
    return tuple(dict.fromkeys(names))


def parse_match(text: str | None) -> str | None:
    """`--match`: a label selector such as `{cluster="a"}` (braces optional) -> its matchers, to add to every
    query; None when empty. ValueError says what is wrong."""
    if text is None:
        return None
    inner = text.strip()
    if inner.startswith("{") != inner.endswith("}"):
        raise ValueError(f'unbalanced braces in --match {text!r} (expected e.g. {{cluster="a"}})')
    inner = inner[1:-1] if inner.startswith("{") else inner
    matchers = []
    rest = inner.strip().rstrip(",")
    position = 0
    while position < len(rest):
        found = _MATCHER.match(rest, position)
        if found is None:
            raise ValueError(
                f"--match {text!r} is not a label selector at {rest[position:]!r} "
                f'(expected label="value" pairs, e.g. {{cluster="a",job=~"dcgm.*"}})'
            )
        label, op, value = found.groups()
        if label == "__name__":
            raise ValueError("--match selects hosts by their labels; the metric names are gputui's to choose")
        matchers.append(f"{label}{op}{value}")
        position = found.end()
        if position < len(rest):
            if rest[position] != ",":
                raise ValueError(f"--match {text!r}: expected a comma at {rest[position:]!r}")
            position += 1
    return ",".join(matchers) or None


def selectors(match: str | None, names: Sequence[str] | None = None) -> tuple[str, ...]:
    """The queries of one refresh: each a batch of metric names, narrowed by `match` (from parse_match)."""
    names = fleet_metric_names() if names is None else names
    extra = f",{match}" if match else ""
    return tuple(
        f'{{__name__=~"{"|".join(names[i : i + NAMES_PER_QUERY])}"{extra}}}'
        for i in range(0, len(names), NAMES_PER_QUERY)
    )


@dataclass(frozen=True, slots=True)
class HostReading:
    """One host at one moment, as Prometheus holds it."""

    host: str
    source: NodeSource
    snapshot: Snapshot
    instance: str | None  # the address Prometheus scraped (its exporter), when the series say it
    owners: Mapping[int, Mapping[str, str]]  # GPU index -> its pod, namespace and container labels (_owners)
    # (GPU index, GPU instance id) -> the same labels of a MIG instance's series: the pod given that instance
    instance_owners: Mapping[tuple[int, int], Mapping[str, str]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class FleetReading:
    """Every host at one moment; `unreadable` names hosts whose series made no Snapshot, and why."""

    at: float
    hosts: Mapping[str, HostReading]
    unreadable: Mapping[str, str]
    warnings: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class HostHistory:
    """One host over a window: its readings, oldest first, one per step where Prometheus had its series."""

    host: str
    source: NodeSource
    snapshots: tuple[Snapshot, ...]
    instance: str | None


@dataclass(frozen=True, slots=True)
class FleetHistory:
    hosts: Mapping[str, HostHistory]
    warnings: tuple[str, ...]


def read_fleet(client: PrometheusClient, match: str | None = None, *, at: float | None = None) -> FleetReading:
    """Every host's reading now (or at unix time `at`): one instant query per batch of names, all at one instant.

    `match` is parse_match's answer. Raises PrometheusError when a query fails: a refresh is whole or nothing.
    """
    at = time.time() if at is None else at
    results = _run(lambda query: client.instant(query, at), selectors(match))
    series: list[tuple[Labels, float]] = [
        (labels, points[-1][1]) for result in results for labels, points in result.series if points
    ]
    hosts: dict[str, HostReading] = {}
    unreadable: dict[str, str] = {}
    for host, by_name in _by_host(series).items():
        try:
            hosts[host] = _reading(host, by_name, at)
        except RemoteFormatError as exc:
            unreadable[host] = str(exc)
    return FleetReading(at=at, hosts=hosts, unreadable=unreadable, warnings=_warnings(results))


def read_history(client: PrometheusClient, match: str | None, start: float, end: float, step: float) -> FleetHistory:
    """Every host's readings from `start` to `end`, one per `step` seconds: one range query per batch of names."""
    results = _run(lambda query: client.range(query, start, end, step), selectors(match))
    # time -> every series' value then: one reading per host and step; each series' labels are read once
    steps: dict[float, list[_Named]] = defaultdict(list)
    for result in results:
        for raw, points in result.series:
            host, instance, own = _named(raw)
            renamed = f"{EXPORTED}pod" in raw
            for at, value in points:
                steps[at].append((host, instance, own, value, renamed))
    readings: dict[str, list[HostReading]] = defaultdict(list)
    for at in sorted(steps):
        for host, by_name in _group(steps[at]).items():
            try:
                readings[host].append(_reading(host, by_name, at))
            except RemoteFormatError:
                continue  # only info series at this step: the node's GPUs were not scraped then
    hosts = {
        host: HostHistory(host, seen[-1].source, tuple(r.snapshot for r in seen), seen[-1].instance)
        for host, seen in readings.items()
    }
    return FleetHistory(hosts=hosts, warnings=_warnings(results))


def _run(ask: Callable[[str], QueryResult], queries: Sequence[str]) -> list[QueryResult]:
    """The queries, a few at a time (each waits mostly on Prometheus), their answers in order."""
    with ThreadPoolExecutor(max_workers=min(PARALLEL_QUERIES, len(queries)), thread_name_prefix="gputui-prom") as pool:
        return list(pool.map(ask, queries))


def _warnings(results: Iterable[QueryResult]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(w for result in results for w in result.warnings))


def exporter_labels(labels: Labels) -> dict[str, str]:
    """The labels as the exporter wrote them: `exported_X` (renamed by Prometheus on a clash) read as X. Series
    with no renamed label (most: a refresh of 200 nodes reads ~75,000 series) come back as they came, not copied:
    callers must not change them."""
    for key in labels:
        if key.startswith(EXPORTED):
            break
    else:
        return labels if isinstance(labels, dict) else dict(labels)
    out = {key: value for key, value in labels.items() if not key.startswith(EXPORTED)}
    out.update((key[len(EXPORTED) :], value) for key, value in labels.items() if key.startswith(EXPORTED) and value)
    return out


# A series as the grouping reads it: its host label, its scrape target, its labels as the exporter wrote them,
# its value, and whether Prometheus renamed its `pod` (the target itself has pod labels).
_Named = tuple[str | None, str | None, Labels, float, bool]


def _by_host(series: Iterable[tuple[Labels, float]]) -> dict[str, dict[str, list[tuple[Labels, float]]]]:
    """Series grouped by host, then by metric name (see `_group`)."""
    return _group([(*_named(raw), value, f"{EXPORTED}pod" in raw) for raw, value in series])


def _named(raw: Labels) -> tuple[str | None, str | None, Labels]:
    """A series' host label, scrape target and labels as the exporter wrote them: read once per series."""
    own = exporter_labels(raw)
    return next((own[k] for k in HOST_LABELS if own.get(k)), None), own.get(INSTANCE_LABEL) or None, own


def _group(named: Sequence[_Named]) -> dict[str, dict[str, list[tuple[Labels, float]]]]:
    """Series of one instant grouped by host, then by metric name. A series without a host label goes with the
    series of the same scrape target that have one, else under its target's address.

    Where some series of a target carry `exported_pod`, the target itself has pod labels (a ServiceMonitor): on
    that target's other series `pod`, `namespace` and `container` are the exporter's own pod, not a workload's,
    and are dropped (from a copy: the labels are shared by every step of a history)."""
    host_of_instance: dict[str, str] = {}
    clashing: set[str] = set()
    for host, instance, _, _, renamed in named:
        if instance is not None:
            if host is not None:
                host_of_instance.setdefault(instance, host)
            if renamed:
                clashing.add(instance)
    out: dict[str, dict[str, list[tuple[Labels, float]]]] = defaultdict(lambda: defaultdict(list))
    for host, instance, labels, value, renamed in named:
        key = host or (host_of_instance.get(instance) if instance else None) or instance
        name = labels.get("__name__")
        if key is None or name is None:
            continue
        if instance in clashing and not renamed:
            labels = {key: value for key, value in labels.items() if key not in OWNER_LABELS}
        out[key][name].append((labels, value))
    return out


def _reading(host: str, by_name: dict[str, list[tuple[Labels, float]]], at: float) -> HostReading:
    gputui_instances = {labels.get(INSTANCE_LABEL) for labels, _ in by_name.get(metric_schema.SOURCE_INFO_METRIC, ())}
    source: NodeSource = "gputui" if gputui_instances else "dcgm-exporter"
    if gputui_instances:
        # gputui and dcgm-exporter both on the node: gputui's series are the whole reading, in one unit each.
        by_name = {
            name: [s for s in found if s[0].get(INSTANCE_LABEL) in gputui_instances] for name, found in by_name.items()
        }
    owners, instance_owners = _owners(by_name)
    snapshot = _with_pods(read_snapshot(by_name, fallback_hostname=host, now=at), owners, instance_owners)
    instances = (labels.get(INSTANCE_LABEL) for found in by_name.values() for labels, _ in found)
    return HostReading(
        host=host,
        source=source,
        snapshot=snapshot,
        instance=next((i for i in instances if i), None),
        owners=owners,
        instance_owners=instance_owners,
    )


def _with_pods(
    snapshot: Snapshot,
    owners: Mapping[int, Mapping[str, str]],
    instance_owners: Mapping[tuple[int, int], Mapping[str, str]],
) -> Snapshot:
    """Each GPU, and each MIG instance, marked with the pod the exporter's labels say uses it, so a rule can name
    a holder there."""
    if not owners and not instance_owners:
        return snapshot
    return replace(snapshot, gpus=tuple(_gpu_with_pods(g, owners, instance_owners) for g in snapshot.gpus))


def _gpu_with_pods(
    gpu: GpuSample,
    owners: Mapping[int, Mapping[str, str]],
    instance_owners: Mapping[tuple[int, int], Mapping[str, str]],
) -> GpuSample:
    if gpu.lost:
        return gpu
    if gpu.index in owners:
        gpu = replace(gpu, pod=_pod_name(owners[gpu.index]))
    if gpu.mig is None or not any(index == gpu.index for index, _ in instance_owners):
        return gpu
    devices = tuple(
        replace(d, pod=_pod_name(owner))
        if d.gpu_instance_id is not None and (owner := instance_owners.get((gpu.index, d.gpu_instance_id)))
        else d
        for d in gpu.mig.devices
    )
    return replace(gpu, mig=replace(gpu.mig, devices=devices))


def _pod_name(owner: Mapping[str, str]) -> str:
    pod = owner.get("pod") or owner.get("container") or "?"
    return f"{owner['namespace']}/{pod}" if owner.get("namespace") else pod


def _owners(
    by_name: Mapping[str, Sequence[tuple[Labels, float]]],
) -> tuple[dict[int, dict[str, str]], dict[tuple[int, int], dict[str, str]]]:
    """The pod dcgm-exporter says uses each GPU (its pod, namespace and container labels), where it says one, and
    the pod given each MIG instance, from the series with `GPU_I_ID` (the kubelet lists MIG devices apart): an
    instance's pod is never its GPU's, which has one only where a series without `GPU_I_ID` names it. A target
    with pod labels of its own is known by the exported_pod of a GPU in use; while no pod uses any of its GPUs,
    the exporter pod's own labels cannot be told from a workload's and read as one."""
    gpus: dict[int, dict[str, str]] = {}
    instances: dict[tuple[int, int], dict[str, str]] = {}
    for spec in metric_schema.GPU_SAMPLE_FIELDS:
        for labels, _ in by_name.get(spec.name, ()):
            owner = {key: labels[key] for key in OWNER_LABELS if labels.get(key)}
            gpu = labels.get("gpu", "")
            if not owner or not gpu.isdigit():
                continue
            gi = labels.get(metric_schema.MIG_INSTANCE_LABEL)
            if not gi:
                gpus.setdefault(int(gpu), owner)
            elif gi.isdigit():  # an instance whose id is not a number is nobody's, as the reader has it
                instances.setdefault((int(gpu), int(gi)), owner)
    return gpus, instances
