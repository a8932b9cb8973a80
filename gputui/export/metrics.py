"""Snapshot -> Prometheus metric families, under dcgm-exporter's names, units and labels where one exists.

Users who outgrow one server run Prometheus and Grafana with NVIDIA's dcgm-exporter dashboards; exporting the same
names (`DCGM_FI_DEV_*`), units (framebuffer in MiB, energy in mJ, violation time in µs) and labels (`gpu`, `UUID`,
`pci_bus_id`, `device`, `modelName`, `Hostname`) lets those dashboards read gputui unchanged. What dcgm-exporter
does not have lives under `gputui_`. The field tables below also drive the way back (gputui/sources/remote.py), so
what is written and what is read cannot drift apart.

A value that is None is left out, never written as 0. dcgm's cumulative fields (energy, PCIe replays, violation
time) keep their exact names and are typed `untyped`: prometheus-client appends `_total` to every counter it
writes, which would break the dashboards' queries, and `rate()` works the same on an untyped series.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from prometheus_client.metrics_core import GaugeMetricFamily, Metric, UnknownMetricFamily

from gputui import __version__
from gputui.diagnostics.findings import Finding
from gputui.model import GpuInfo, GpuSample, Snapshot, SystemInfo

MIB = 1024 * 1024

# dcgm-exporter's labels on every GPU series, in its order.
GPU_LABELS = ("gpu", "UUID", "pci_bus_id", "device", "modelName", "Hostname")
HOSTNAME_LABEL = "Hostname"
# Added to every series when the data does not come from this machine's driver, so no chart shows it unmarked.
SOURCE_LABEL = "gputui_source"


@dataclass(frozen=True, slots=True)
class MetricField:
    """One exported metric and the model attribute it carries: metric value = attribute value x `scale`."""

    name: str
    attr: str
    help: str
    kind: type = float  # the attribute's type, for reading the value back: float, int or bool
    scale: float = 1.0
    cumulative: bool = False


def _field(
    name: str, attr: str, help: str, kind: type = float, scale: float = 1.0, cumulative: bool = False
) -> MetricField:
    return MetricField(name, attr, help, kind, scale, cumulative)


GPU_SAMPLE_FIELDS: tuple[MetricField, ...] = (
    _field("DCGM_FI_DEV_GPU_UTIL", "utilization_gpu_pct", "GPU utilization (in %)."),
    _field("DCGM_FI_DEV_MEM_COPY_UTIL", "utilization_memory_pct", "Memory utilization (in %)."),
    _field("DCGM_FI_DEV_ENC_UTIL", "encoder_pct", "Encoder utilization (in %)."),
    _field("DCGM_FI_DEV_DEC_UTIL", "decoder_pct", "Decoder utilization (in %)."),
    _field("DCGM_FI_DEV_SM_CLOCK", "sm_clock_mhz", "SM clock frequency (in MHz).", int),
    _field("DCGM_FI_DEV_MEM_CLOCK", "memory_clock_mhz", "Memory clock frequency (in MHz).", int),
    _field("gputui_graphics_clock_mhz", "graphics_clock_mhz", "Graphics clock frequency (in MHz).", int),
    _field("DCGM_FI_DEV_GPU_TEMP", "temperature_c", "GPU temperature (in C)."),
    _field("DCGM_FI_DEV_MEMORY_TEMP", "memory_temperature_c", "Memory temperature (in C)."),
    _field("DCGM_FI_DEV_POWER_USAGE", "power_w", "Power draw (in W)."),
    _field("DCGM_FI_DEV_ENFORCED_POWER_LIMIT", "power_limit_w", "Power limit the driver enforces (in W)."),
    _field(
        "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
        "energy_mj",
        "Total energy consumption since boot (in mJ).",
        int,
        cumulative=True,
    ),
    _field("DCGM_FI_DEV_FB_USED", "memory_used_bytes", "Framebuffer memory used (in MiB).", int, 1 / MIB),
    _field("DCGM_FI_DEV_FB_FREE", "memory_free_bytes", "Framebuffer memory free (in MiB).", int, 1 / MIB),
    _field("DCGM_FI_DEV_FB_RESERVED", "memory_reserved_bytes", "Framebuffer memory reserved (in MiB).", int, 1 / MIB),
    _field("DCGM_FI_DEV_PCIE_LINK_GEN", "pcie_gen", "PCIe current link generation.", int),
    _field("DCGM_FI_DEV_PCIE_LINK_WIDTH", "pcie_width", "PCIe current link width (lanes).", int),
    _field("gputui_pcie_tx_bytes_per_second", "pcie_tx_bytes_s", "PCIe transmit throughput (bytes/s)."),
    _field("gputui_pcie_rx_bytes_per_second", "pcie_rx_bytes_s", "PCIe receive throughput (bytes/s)."),
    _field(
        "DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "pcie_replay_count", "Total number of PCIe retries.", int, cumulative=True
    ),
    _field("DCGM_FI_DEV_FAN_SPEED", "fan_pct", "Fan speed (in %).", int),
    _field("DCGM_FI_DEV_PSTATE", "pstate", "Performance state (P-State) 0-15; 0 is the highest.", int),
    _field(
        "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS",
        "clock_event_reasons_mask",
        "Current clock event (throttle) reasons, a bitmask of NVML's nvmlClocksEventReason* bits.",
        int,
    ),
    _field(
        "DCGM_FI_DEV_POWER_VIOLATION",
        "power_violation_ns",
        "Throttling duration due to power constraints (in us).",
        int,
        1e-3,
        cumulative=True,
    ),
    _field(
        "DCGM_FI_DEV_THERMAL_VIOLATION",
        "thermal_violation_ns",
        "Throttling duration due to thermal constraints (in us).",
        int,
        1e-3,
        cumulative=True,
    ),
    _field("gputui_ecc_uncorrected_errors", "ecc_uncorrected", "Uncorrected ECC errors the driver counts.", int),
    _field(
        "gputui_retired_pages_pending",
        "retired_pages_pending",
        "1 when a page retirement or row remap is pending (a reset is due).",
        bool,
    ),
)

GPU_INFO_FIELDS: tuple[MetricField, ...] = (
    _field("DCGM_FI_DEV_FB_TOTAL", "memory_total_bytes", "Total framebuffer memory (in MiB).", int, 1 / MIB),
    _field("DCGM_FI_DEV_MAX_SM_CLOCK", "max_sm_clock_mhz", "Maximum supported SM clock (in MHz).", int),
    _field("DCGM_FI_DEV_MAX_MEM_CLOCK", "max_memory_clock_mhz", "Maximum supported memory clock (in MHz).", int),
    _field(
        "gputui_max_graphics_clock_mhz", "max_graphics_clock_mhz", "Maximum supported graphics clock (in MHz).", int
    ),
    _field(
        "gputui_default_app_sm_clock_mhz", "default_app_sm_clock_mhz", "Default application SM clock (in MHz).", int
    ),
    _field(
        "gputui_default_app_memory_clock_mhz",
        "default_app_memory_clock_mhz",
        "Default application memory clock (in MHz).",
        int,
    ),
    _field("DCGM_FI_DEV_PCIE_MAX_LINK_GEN", "pcie_max_gen", "PCIe max link generation in this system.", int),
    _field("DCGM_FI_DEV_PCIE_MAX_LINK_WIDTH", "pcie_max_width", "PCIe max link width in this system (lanes).", int),
    _field(
        "gputui_pcie_gpu_max_link_gen",
        "pcie_gpu_max_gen",
        "PCIe generation the GPU itself supports (above the system max: slot or riser limited).",
        int,
    ),
    _field("DCGM_FI_DEV_POWER_MGMT_LIMIT_DEF", "power_default_limit_w", "Default power management limit (in W)."),
    _field("DCGM_FI_DEV_POWER_MGMT_LIMIT_MIN", "power_min_limit_w", "Minimum power management limit (in W)."),
    _field("DCGM_FI_DEV_POWER_MGMT_LIMIT_MAX", "power_max_limit_w", "Maximum power management limit (in W)."),
    _field("DCGM_FI_DEV_SLOWDOWN_TEMP", "temperature_slowdown_c", "Slowdown temperature (in C).", int),
    _field("DCGM_FI_DEV_SHUTDOWN_TEMP", "temperature_shutdown_c", "Shutdown temperature (in C).", int),
    _field("gputui_temperature_gpu_max_c", "temperature_gpu_max_c", "Maximum operating GPU temperature (in C).", int),
    _field(
        "gputui_temperature_memory_max_c",
        "temperature_memory_max_c",
        "Maximum operating memory temperature (in C).",
        int,
    ),
    _field("gputui_persistence_mode", "persistence_mode", "1 when persistence mode is on.", bool),
    _field("gputui_mig_mode", "mig_mode", "1 when MIG mode is on.", bool),
    _field("DCGM_FI_DEV_ECC_CURRENT", "ecc_mode", "Current ECC mode (1 = enabled).", bool),
)

HOST_FIELDS: tuple[MetricField, ...] = (
    _field("gputui_host_iowait_percent", "iowait_pct", "CPU time waiting for I/O (in %)."),
    _field("gputui_host_steal_percent", "steal_pct", "CPU time stolen by the hypervisor (in %)."),
    _field("gputui_host_memory_used_bytes", "memory_used_bytes", "Host memory used (bytes).", int),
    _field("gputui_host_memory_total_bytes", "memory_total_bytes", "Host memory installed (bytes).", int),
    _field("gputui_host_swap_used_bytes", "swap_used_bytes", "Swap used (bytes).", int),
    _field("gputui_host_swap_total_bytes", "swap_total_bytes", "Swap size (bytes).", int),
    _field("gputui_host_swap_in_bytes_per_second", "swap_in_bytes_s", "Swap-in rate (bytes/s)."),
    _field("gputui_host_swap_out_bytes_per_second", "swap_out_bytes_s", "Swap-out rate (bytes/s)."),
    _field("gputui_host_disk_read_bytes_per_second", "disk_read_bytes_s", "Disk read rate, all disks (bytes/s)."),
    _field("gputui_host_disk_write_bytes_per_second", "disk_write_bytes_s", "Disk write rate, all disks (bytes/s)."),
    _field("gputui_host_disk_busy_percent", "disk_busy_pct", "Busiest disk's busy time (in %)."),
    _field("gputui_host_network_receive_bytes_per_second", "net_rx_bytes_s", "Network receive rate (bytes/s)."),
    _field("gputui_host_network_transmit_bytes_per_second", "net_tx_bytes_s", "Network transmit rate (bytes/s)."),
    _field(
        "gputui_host_network_link_bytes_per_second",
        "net_link_bytes_s",
        "Link speed of the fastest up interface (bytes/s).",
    ),
)

PROC_FIELDS: tuple[MetricField, ...] = (
    _field("gputui_process_cpu_percent", "cpu_pct", "CPU use of a GPU process (100 = one full core)."),
    _field("gputui_process_threads", "threads", "Threads of a GPU process.", int),
    _field("gputui_process_children", "children", "Direct child processes (data-loader workers, mostly).", int),
    _field("gputui_process_read_bytes_per_second", "read_bytes_s", "Read rate of a GPU process (bytes/s)."),
    _field("gputui_process_rss_bytes", "rss_bytes", "Resident memory of a GPU process (bytes).", int),
)

CPU_CORE_METRIC = "gputui_host_cpu_core_percent"
CPU_MEAN_METRIC = "gputui_host_cpu_percent"
CPU_COUNT_METRIC = "gputui_host_cpu_count"
LOAD_METRICS = ("gputui_host_load1", "gputui_host_load5", "gputui_host_load15")
GPU_COUNT_METRIC = "gputui_gpu_count"
GPU_INFO_METRIC = "gputui_gpu_info"
GPU_LOST_METRIC = "gputui_gpu_lost"
GPU_PROCESS_METRIC = "gputui_gpu_process_info"
GPU_PROCESS_MEMORY_METRIC = "gputui_gpu_process_memory_bytes"
PROCESS_INFO_METRIC = "gputui_process_info"
XID_METRIC = "DCGM_FI_DEV_XID_ERRORS"
UP_METRIC = "gputui_up"
SOURCE_INFO_METRIC = "gputui_source_info"
TIMESTAMP_METRIC = "gputui_sample_timestamp_seconds"
FINDING_METRIC = "gputui_finding"


@dataclass(frozen=True, slots=True)
class ExportState:
    """What one scrape shows: the latest snapshot (None when the last reading failed) and its findings."""

    system: SystemInfo
    snapshot: Snapshot | None
    findings: tuple[Finding, ...] = ()
    last_xid: Mapping[int, int] = field(default_factory=dict)  # GPU index -> last XID seen since the start
    error: str | None = None


class _Families:
    """Gathers series by metric name so that each family is written once, with all its series."""

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
        family.add_metric(list(all_labels.values()), float(value))

    def add_field(self, spec: MetricField, labels: Mapping[str, str], obj: object) -> None:
        value = getattr(obj, spec.attr)
        self.add(
            spec.name, spec.help, labels, None if value is None else value * spec.scale, cumulative=spec.cumulative
        )

    def families(self) -> list[Metric]:
        return list(self._families.values())


def gpu_labels(info: GpuInfo | None, index: int, hostname: str) -> dict[str, str]:
    """dcgm-exporter's label set for one GPU; `device` is the /dev node name dcgm would give it."""
    return {
        "gpu": str(index),
        "UUID": (info.uuid or "") if info else "",
        "pci_bus_id": (info.pci_bus_id or "") if info else "",
        "device": f"nvidia{index}",
        "modelName": info.name if info else "",
        HOSTNAME_LABEL: hostname,
    }


def source_labels(system: SystemInfo) -> dict[str, str]:
    """The label that marks data not read from this machine's driver (simulated or replayed), or none."""
    return {} if system.is_live else {SOURCE_LABEL: system.source}


def metric_families(state: ExportState) -> list[Metric]:
    """Everything a scrape shows, from one ExportState; pure, so it is tested without a server."""
    system = state.system
    host = {HOSTNAME_LABEL: system.hostname}
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
        _add_gpus(out, snapshot, state.last_xid)
        _add_host(out, snapshot, host)
    _add_findings(out, state.findings, host)
    return out.families()


def _add_gpus(out: _Families, snapshot: Snapshot, last_xid: Mapping[int, int]) -> None:
    hostname = snapshot.system.hostname
    for sample in snapshot.gpus:
        info = snapshot.info(sample.index)
        labels = gpu_labels(info, sample.index, hostname)
        if info is not None:
            out.add(
                GPU_INFO_METRIC,
                "Static facts of a GPU as labels.",
                {**labels, "serial": info.serial or "", "compute_mode": info.compute_mode or ""},
                1,
            )
            for spec in GPU_INFO_FIELDS:
                out.add_field(spec, labels, info)
        if sample.lost:
            out.add(GPU_LOST_METRIC, "1 when the GPU fell off the bus (no other value is read).", labels, 1)
            continue
        for spec in GPU_SAMPLE_FIELDS:
            out.add_field(spec, labels, sample)
        out.add(XID_METRIC, "Value of the last XID error encountered.", labels, last_xid.get(sample.index))
        _add_gpu_processes(out, sample, labels)


def _add_gpu_processes(out: _Families, sample: GpuSample, labels: Mapping[str, str]) -> None:
    for proc in sample.processes:
        proc_labels = {**labels, "pid": str(proc.pid), "kind": proc.kind}
        out.add(GPU_PROCESS_METRIC, "A process that holds a context on the GPU.", proc_labels, 1)
        out.add(GPU_PROCESS_MEMORY_METRIC, "GPU memory a process uses (bytes).", proc_labels, proc.used_memory_bytes)


def _add_host(out: _Families, snapshot: Snapshot, host: Mapping[str, str]) -> None:
    sample = snapshot.host
    out.add(CPU_MEAN_METRIC, "CPU use, mean over all cores (in %).", host, sample.cpu_pct)
    for core, pct in enumerate(sample.cpu_pct_per_core):
        out.add(CPU_CORE_METRIC, "CPU use of one core (in %).", {**host, "cpu": str(core)}, pct)
    if sample.load_avg is not None:
        for name, value in zip(LOAD_METRICS, sample.load_avg, strict=True):
            out.add(name, "Load average.", host, value)
    for spec in HOST_FIELDS:
        out.add_field(spec, host, sample)
    for proc in sample.processes:
        labels = {**host, "pid": str(proc.pid), "name": proc.name}
        out.add(
            PROCESS_INFO_METRIC,
            "A process that uses a GPU, seen from the host.",
            {**labels, "user": proc.user or "", "state": proc.state or ""},
            1,
        )
        for spec in PROC_FIELDS:
            out.add_field(spec, labels, proc)


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
