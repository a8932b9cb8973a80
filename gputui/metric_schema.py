"""The exporter's metric names, units and labels, shared by the two sides of the wire.

`gputui export` writes them (gputui/export/metrics.py) and `--remote` reads them back (gputui/sources/remote.py);
one table for both means what is written and what is read cannot drift apart, and sources never import the
exporter. dcgm-exporter's names (`DCGM_FI_DEV_*`, `DCGM_FI_PROF_*`), units and labels where one exists; `gputui_` for
the rest.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

MIB = 1024 * 1024

# The label naming the machine. Every dcgm-exporter release up to 4.5.3-4.8.2 (2026-05-06) writes `Hostname`
# (internal/pkg/rendermetrics/render_metrics.go:47 at that tag); its main branch writes `hostname` since
# NVIDIA/dcgm-exporter#655 (d5e5f51, 2026-05-12), in no release yet. gputui writes `hostname` by default: it is the
# spelling dcgm-exporter is moving to (so the two converge at its next release, not diverge), the one Prometheus'
# lower-case convention and Slurm-side exporters use (#655 was made so joins with them work), and NVIDIA's own
# dashboard (grafana/dcgm-exporter-dashboard.json) uses neither spelling, so no stock dashboard breaks. Sites whose
# own rules say `Hostname` get it with `gputui export --legacy-hostname-label`; readers accept both spellings.
HostnameLabel = Literal["hostname", "Hostname"]
HOSTNAME_LABEL: HostnameLabel = "hostname"
LEGACY_HOSTNAME_LABEL: HostnameLabel = "Hostname"
# dcgm-exporter's labels on every GPU series, in its order.
GPU_LABELS = ("gpu", "UUID", "pci_bus_id", "device", "modelName", HOSTNAME_LABEL)
# Added to every series when the data does not come from this machine's driver, so no chart shows it unmarked.
SOURCE_LABEL = "gputui_source"
# dcgm-exporter's labels of a MIG instance, added after `modelName` to its GPU's labels on every series of the
# instance (internal/pkg/rendermetrics/render_metrics.go at d5e5f51: GPU_I_PROFILE, then GPU_I_ID, the GPU
# instance id NVML gives; `UUID` stays the parent GPU's). A series with GPU_I_ID is an instance's, never the GPU's:
# the GPU's own series carry neither label, so a query for the GPU alone says `GPU_I_ID=""`.
MIG_PROFILE_LABEL = "GPU_I_PROFILE"
MIG_INSTANCE_LABEL = "GPU_I_ID"
# gputui's own labels on gputui_mig_instance_info (dcgm-exporter has no series naming these) and on a process's
# series, for the compute instance: with them `--remote` rebuilds the instances whole.
MIG_UUID_LABEL = "mig_uuid"
MIG_INDEX_LABEL = "mig_index"
MIG_COMPUTE_INSTANCE_LABEL = "compute_instance_id"


@dataclass(frozen=True, slots=True)
class MetricField:
    """One exported metric and the model attribute it carries: metric value = attribute value x `scale`."""

    name: str
    attr: str
    help: str
    kind: type = float  # the attribute's type, for reading the value back: float, int or bool
    scale: float = 1.0
    cumulative: bool = False


# GPM activity (Hopper and newer) under DCGM's profiling names, as 0-1 ratios like DCGM writes them, so dashboards that
# chart DCGM_FI_PROF_* (tensor-core activity, SM occupancy) read gputui unchanged: the activity a GPU and each of its
# MIG instances report alike (model.ACTIVITY_FIELDS), written alike for both.
ACTIVITY_METRICS: tuple[MetricField, ...] = tuple(
    MetricField(name, attr, help, scale=0.01)
    for name, attr, help in (
        ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gr_engine_active_pct", "Ratio of time the graphics engine is active."),
        ("DCGM_FI_PROF_SM_ACTIVE", "sm_active_pct", "The ratio of cycles an SM has at least 1 warp assigned."),
        ("DCGM_FI_PROF_SM_OCCUPANCY", "sm_occupancy_pct", "The ratio of number of warps resident on an SM."),
        ("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "tensor_active_pct", "Ratio of cycles any tensor pipe is active."),
        (
            "DCGM_FI_PROF_DRAM_ACTIVE",
            "dram_bw_pct",
            "Ratio of cycles the device memory interface is active sending or receiving data.",
        ),
        ("DCGM_FI_PROF_PIPE_FP32_ACTIVE", "fp32_active_pct", "Ratio of cycles the fp32 pipes are active."),
        ("DCGM_FI_PROF_PIPE_FP16_ACTIVE", "fp16_active_pct", "Ratio of cycles the fp16 pipes are active."),
        ("DCGM_FI_PROF_PIPE_FP64_ACTIVE", "fp64_active_pct", "Ratio of cycles the fp64 pipes are active."),
    )
)

GPU_SAMPLE_FIELDS: tuple[MetricField, ...] = (
    MetricField("DCGM_FI_DEV_GPU_UTIL", "utilization_gpu_pct", "GPU utilization (in %)."),
    MetricField("DCGM_FI_DEV_MEM_COPY_UTIL", "utilization_memory_pct", "Memory utilization (in %)."),
    MetricField("DCGM_FI_DEV_ENC_UTIL", "encoder_pct", "Encoder utilization (in %)."),
    MetricField("DCGM_FI_DEV_DEC_UTIL", "decoder_pct", "Decoder utilization (in %)."),
    MetricField("DCGM_FI_DEV_SM_CLOCK", "sm_clock_mhz", "SM clock frequency (in MHz).", int),
    MetricField("DCGM_FI_DEV_MEM_CLOCK", "memory_clock_mhz", "Memory clock frequency (in MHz).", int),
    MetricField("gputui_graphics_clock_mhz", "graphics_clock_mhz", "Graphics clock frequency (in MHz).", int),
    MetricField("DCGM_FI_DEV_GPU_TEMP", "temperature_c", "GPU temperature (in C)."),
    MetricField("DCGM_FI_DEV_MEMORY_TEMP", "memory_temperature_c", "Memory temperature (in C)."),
    MetricField("DCGM_FI_DEV_POWER_USAGE", "power_w", "Power draw (in W)."),
    MetricField("DCGM_FI_DEV_ENFORCED_POWER_LIMIT", "power_limit_w", "Power limit the driver enforces (in W)."),
    MetricField(
        "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
        "energy_mj",
        "Total energy consumption since boot (in mJ).",
        int,
        cumulative=True,
    ),
    MetricField("DCGM_FI_DEV_FB_USED", "memory_used_bytes", "Framebuffer memory used (in MiB).", int, 1 / MIB),
    MetricField("DCGM_FI_DEV_FB_FREE", "memory_free_bytes", "Framebuffer memory free (in MiB).", int, 1 / MIB),
    MetricField(
        "DCGM_FI_DEV_FB_RESERVED", "memory_reserved_bytes", "Framebuffer memory reserved (in MiB).", int, 1 / MIB
    ),
    MetricField("DCGM_FI_DEV_PCIE_LINK_GEN", "pcie_gen", "PCIe current link generation.", int),
    MetricField("DCGM_FI_DEV_PCIE_LINK_WIDTH", "pcie_width", "PCIe current link width (lanes).", int),
    MetricField("gputui_pcie_tx_bytes_per_second", "pcie_tx_bytes_s", "PCIe transmit throughput (bytes/s)."),
    MetricField("gputui_pcie_rx_bytes_per_second", "pcie_rx_bytes_s", "PCIe receive throughput (bytes/s)."),
    MetricField(
        "DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "pcie_replay_count", "Total number of PCIe retries.", int, cumulative=True
    ),
    MetricField("DCGM_FI_DEV_FAN_SPEED", "fan_pct", "Fan speed (in %).", int),
    MetricField("DCGM_FI_DEV_PSTATE", "pstate", "Performance state (P-State) 0-15; 0 is the highest.", int),
    # DCGM field 112. Its name is DCGM_FI_DEV_CLOCKS_EVENT_REASONS; DCGM_FI_DEV_CLOCK_THROTTLE_REASONS is the
    # deprecated alias of the same id (go-dcgm pkg/dcgm/dcgm_fields.h:587 and :592, const_fields.go:2129 and :2753).
    # dcgm-exporter names each series after the field as its counters csv spells it
    # (internal/pkg/counters/counter_config.go:140, `FieldName: record[0]`), so a shared Prometheus can hold
    # either: gputui writes the current name and reads both (READ_ALIASES below).
    MetricField(
        "DCGM_FI_DEV_CLOCKS_EVENT_REASONS",
        "clock_event_reasons_mask",
        "Current clock event (throttle) reasons, a bitmask of NVML's nvmlClocksEventReason* bits.",
        int,
    ),
    # Violation time in ns, as DCGM writes it: DCGM fills fields 240/241 from NVML's field values
    # NVML_FI_DEV_PERF_POLICY_POWER/THERMAL (DCGM dcgmlib/src/dcgm_fields.cpp:2373-2392, 72fa3fe) and stores them
    # unscaled; NVML counts those in ns (DCGM sdk/nvidia/nvml/dcgm_nvml.h:2330 "All counters are in nanoseconds",
    # :592 violationTime "in Nanoseconds"). DCGM's own field docs said "usec" until DCGM 4.1.0 and say "ns" since
    # (dcgmlib/dcgm_fields.h:829 and :834), with the same code path before and after: only the docs changed.
    # dcgm-exporter's help followed in PR #589 (e61056b, etc/default-counters.csv:30-31, "(in ns)", released from
    # 4.4.2-4.7.1). gputui wrote µs before, which would put one name in two units in a shared Prometheus.
    MetricField(
        "DCGM_FI_DEV_POWER_VIOLATION",
        "power_violation_ns",
        "Throttling duration due to power constraints (in ns).",
        int,
        cumulative=True,
    ),
    MetricField(
        "DCGM_FI_DEV_THERMAL_VIOLATION",
        "thermal_violation_ns",
        "Throttling duration due to thermal constraints (in ns).",
        int,
        cumulative=True,
    ),
    MetricField("gputui_ecc_uncorrected_errors", "ecc_uncorrected", "Uncorrected ECC errors the driver counts.", int),
    MetricField(
        "gputui_retired_pages_pending",
        "retired_pages_pending",
        "1 when a page retirement or row remap is pending (a reset is due).",
        bool,
    ),
    *ACTIVITY_METRICS,
    MetricField(
        "DCGM_FI_PROF_NVLINK_RX_BYTES",
        "nvlink_rx_bytes_s",
        "The rate of data received over NVLink, all links, in bytes per second.",
    ),
    MetricField(
        "DCGM_FI_PROF_NVLINK_TX_BYTES",
        "nvlink_tx_bytes_s",
        "The rate of data transmitted over NVLink, all links, in bytes per second.",
    ),
    MetricField("gputui_nvlink_links_active", "nvlink_links_active", "NVLinks of the GPU that are up now.", int),
    MetricField(
        "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL",
        "nvlink_replay_errors",
        "Total number of NVLink retries, all links.",
        int,
        cumulative=True,
    ),
    MetricField(
        "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL",
        "nvlink_recovery_errors",
        "Total number of NVLink recovery errors, all links.",
        int,
        cumulative=True,
    ),
    # DCGM's CRC_FLIT_ERROR_COUNT_TOTAL counts flit errors alone; this is flit + data, so it keeps gputui's name.
    MetricField(
        "gputui_nvlink_crc_errors_total",
        "nvlink_crc_errors",
        "Total number of NVLink CRC errors (flit and data), all links.",
        int,
        cumulative=True,
    ),
)

GPU_INFO_FIELDS: tuple[MetricField, ...] = (
    MetricField("DCGM_FI_DEV_FB_TOTAL", "memory_total_bytes", "Total framebuffer memory (in MiB).", int, 1 / MIB),
    MetricField("DCGM_FI_DEV_MAX_SM_CLOCK", "max_sm_clock_mhz", "Maximum supported SM clock (in MHz).", int),
    MetricField("DCGM_FI_DEV_MAX_MEM_CLOCK", "max_memory_clock_mhz", "Maximum supported memory clock (in MHz).", int),
    MetricField(
        "gputui_max_graphics_clock_mhz", "max_graphics_clock_mhz", "Maximum supported graphics clock (in MHz).", int
    ),
    MetricField(
        "gputui_default_app_sm_clock_mhz", "default_app_sm_clock_mhz", "Default application SM clock (in MHz).", int
    ),
    MetricField(
        "gputui_default_app_memory_clock_mhz",
        "default_app_memory_clock_mhz",
        "Default application memory clock (in MHz).",
        int,
    ),
    MetricField("DCGM_FI_DEV_PCIE_MAX_LINK_GEN", "pcie_max_gen", "PCIe max link generation in this system.", int),
    MetricField(
        "DCGM_FI_DEV_PCIE_MAX_LINK_WIDTH", "pcie_max_width", "PCIe max link width in this system (lanes).", int
    ),
    MetricField(
        "gputui_pcie_gpu_max_link_gen",
        "pcie_gpu_max_gen",
        "PCIe generation the GPU itself supports (above the system max: slot or riser limited).",
        int,
    ),
    MetricField("DCGM_FI_DEV_POWER_MGMT_LIMIT_DEF", "power_default_limit_w", "Default power management limit (in W)."),
    MetricField("DCGM_FI_DEV_POWER_MGMT_LIMIT_MIN", "power_min_limit_w", "Minimum power management limit (in W)."),
    MetricField("DCGM_FI_DEV_POWER_MGMT_LIMIT_MAX", "power_max_limit_w", "Maximum power management limit (in W)."),
    MetricField("DCGM_FI_DEV_SLOWDOWN_TEMP", "temperature_slowdown_c", "Slowdown temperature (in C).", int),
    MetricField("DCGM_FI_DEV_SHUTDOWN_TEMP", "temperature_shutdown_c", "Shutdown temperature (in C).", int),
    MetricField(
        "gputui_temperature_gpu_max_c", "temperature_gpu_max_c", "Maximum operating GPU temperature (in C).", int
    ),
    MetricField(
        "gputui_temperature_memory_max_c",
        "temperature_memory_max_c",
        "Maximum operating memory temperature (in C).",
        int,
    ),
    MetricField("gputui_persistence_mode", "persistence_mode", "1 when persistence mode is on.", bool),
    MetricField("gputui_mig_mode", "mig_mode", "1 when MIG mode is on.", bool),
    MetricField("DCGM_FI_DEV_ECC_CURRENT", "ecc_mode", "Current ECC mode (1 = enabled).", bool),
    MetricField("gputui_nvlink_links_total", "nvlink_links_total", "NVLinks the GPU has.", int),
)

HOST_FIELDS: tuple[MetricField, ...] = (
    MetricField("gputui_host_iowait_percent", "iowait_pct", "CPU time waiting for I/O (in %)."),
    MetricField("gputui_host_steal_percent", "steal_pct", "CPU time stolen by the hypervisor (in %)."),
    MetricField("gputui_host_memory_used_bytes", "memory_used_bytes", "Host memory used (bytes).", int),
    MetricField("gputui_host_memory_total_bytes", "memory_total_bytes", "Host memory installed (bytes).", int),
    MetricField("gputui_host_swap_used_bytes", "swap_used_bytes", "Swap used (bytes).", int),
    MetricField("gputui_host_swap_total_bytes", "swap_total_bytes", "Swap size (bytes).", int),
    MetricField("gputui_host_swap_in_bytes_per_second", "swap_in_bytes_s", "Swap-in rate (bytes/s)."),
    MetricField("gputui_host_swap_out_bytes_per_second", "swap_out_bytes_s", "Swap-out rate (bytes/s)."),
    MetricField("gputui_host_disk_read_bytes_per_second", "disk_read_bytes_s", "Disk read rate, all disks (bytes/s)."),
    MetricField(
        "gputui_host_disk_write_bytes_per_second", "disk_write_bytes_s", "Disk write rate, all disks (bytes/s)."
    ),
    MetricField("gputui_host_disk_busy_percent", "disk_busy_pct", "Busiest disk's busy time (in %)."),
    MetricField("gputui_host_network_receive_bytes_per_second", "net_rx_bytes_s", "Network receive rate (bytes/s)."),
    MetricField("gputui_host_network_transmit_bytes_per_second", "net_tx_bytes_s", "Network transmit rate (bytes/s)."),
    MetricField(
        "gputui_host_network_link_bytes_per_second",
        "net_link_bytes_s",
        "Link speed of the fastest up interface (bytes/s).",
    ),
)

CONTAINER_MEMORY_LIMIT_METRIC = "gputui_container_memory_limit_bytes"

# The cgroup gputui runs in (HostSample.container) and pressure stall information (HostSample.psi); shares are
# exported as 0-1 ratios, as Prometheus names them. PSI has no "cpu full" here: the model does not read it.
CONTAINER_FIELDS: tuple[MetricField, ...] = (
    MetricField(
        "gputui_container_cpu_throttled_ratio",
        "cpu_throttled_pct",
        "Share of CFS periods in which the cgroup's CPU quota ran out (0-1).",
        scale=0.01,
    ),
    MetricField(CONTAINER_MEMORY_LIMIT_METRIC, "memory_limit_bytes", "The cgroup's memory limit (bytes).", int),
    MetricField("gputui_container_memory_used_bytes", "memory_used_bytes", "Memory the cgroup uses (bytes).", int),
    MetricField(
        "gputui_container_oom_kills_total",
        "oom_kills",
        "Processes the OOM killer took in this cgroup.",
        int,
        cumulative=True,
    ),
)

PSI_FIELDS: tuple[MetricField, ...] = tuple(
    MetricField(
        f"gputui_psi_{resource}_{kind}_ratio",
        f"{resource}_{kind}_pct",
        f"Share of time {'some' if kind == 'some' else 'all'} runnable tasks waited for {resource} (0-1, PSI).",
        scale=0.01,
    )
    for resource, kind in (("cpu", "some"), ("io", "some"), ("io", "full"), ("memory", "some"), ("memory", "full"))
)

PROC_FIELDS: tuple[MetricField, ...] = (
    MetricField("gputui_process_cpu_percent", "cpu_pct", "CPU use of a GPU process (100 = one full core)."),
    MetricField("gputui_process_threads", "threads", "Threads of a GPU process.", int),
    MetricField("gputui_process_children", "children", "Direct child processes (data-loader workers, mostly).", int),
    MetricField(
        "gputui_process_workers_cpu_percent",
        "workers_cpu_pct",
        "CPU use of a GPU process's children (data-loader workers) together (100 = one full core).",
    ),
    MetricField(
        "gputui_process_run_queue_wait_ratio",
        "run_queue_wait_pct",
        "Share of time a GPU process's main thread waited on a run queue for a CPU (0-1, /proc/PID/schedstat).",
        scale=0.01,
    ),
    MetricField(
        "gputui_process_workers_run_queue_wait_percent",
        "workers_run_queue_wait_pct",
        "Time a GPU process's children waited on a run queue for a CPU, together (100 = one of them all the time).",
    ),
    MetricField("gputui_process_read_bytes_per_second", "read_bytes_s", "Read rate of a GPU process (bytes/s)."),
    MetricField("gputui_process_rss_bytes", "rss_bytes", "Resident memory of a GPU process (bytes).", int),
)

# Per process on a GPU, labelled like the GPU plus `pid` and `kind` (gputui_gpu_process_info lists them all).
GPU_PROCESS_FIELDS: tuple[MetricField, ...] = (
    MetricField("gputui_gpu_process_memory_bytes", "used_memory_bytes", "GPU memory a process uses (bytes).", int),
    MetricField(
        "gputui_process_sm_ratio",
        "sm_pct",
        "Share of time a process's kernels ran on the GPU's SMs (0-1), from the driver's process utilization.",
        scale=0.01,
    ),
)

# What dcgm-exporter repeats per MIG instance and the model holds per instance (MigDevice): framebuffer and the
# profiling (GPM) metrics, under the GPU's names and units, labelled with the instance. Free memory is written as
# total - used, both of the instance, as DCGM gives it for one; it is not read back (MigDevice has no such field).
# Whole-GPU utilization has no per-instance form: NVML and DCGM give none in MIG mode.
MIG_FB_FREE_METRIC = "DCGM_FI_DEV_FB_FREE"
MIG_DEVICE_FIELDS: tuple[MetricField, ...] = (
    MetricField("DCGM_FI_DEV_FB_USED", "memory_used_bytes", "Framebuffer memory used (in MiB).", int, 1 / MIB),
    MetricField("DCGM_FI_DEV_FB_TOTAL", "memory_total_bytes", "Total framebuffer memory (in MiB).", int, 1 / MIB),
    *ACTIVITY_METRICS,
)
# One series per MIG instance (value 1) naming what only gputui exports of it: its MIG UUID, its index under the
# GPU and its compute instance id as labels; its SM and slice counts are the two gauges after it (not `_count`:
# Prometheus keeps that suffix for histograms).
MIG_INSTANCE_INFO_METRIC = "gputui_mig_instance_info"
MIG_STATIC_FIELDS: tuple[MetricField, ...] = (
    MetricField("gputui_mig_instance_sms", "sm_count", "Streaming multiprocessors of a MIG instance.", int),
    MetricField("gputui_mig_instance_slices", "slice_count", "Compute slices of the GPU a MIG instance holds.", int),
)
# Per GPU whose MIG state is read: 1 when MIG is on after the next reset; differing from gputui_mig_mode, a mode
# change is pending (it needs a GPU reset).
MIG_PENDING_METRIC = "gputui_mig_pending_mode"

CPU_CORE_METRIC = "gputui_host_cpu_core_percent"
CPU_MEAN_METRIC = "gputui_host_cpu_percent"
CPU_COUNT_METRIC = "gputui_host_cpu_count"
CONTAINER_QUOTA_METRIC = "gputui_container_cpu_quota_cores"
LOAD_METRICS = ("gputui_host_load1", "gputui_host_load5", "gputui_host_load15")
GPU_COUNT_METRIC = "gputui_gpu_count"
GPU_INFO_METRIC = "gputui_gpu_info"
GPU_LOST_METRIC = "gputui_gpu_lost"
GPU_PROCESS_METRIC = "gputui_gpu_process_info"
# One series per GPU process and GPU it uses (value 1), whose labels say whose job it is: the series to join on
# (`gputui_process_info * on(hostname, gpu) group_left DCGM_FI_DEV_GPU_UTIL`: each process's GPU with its labels).
# No other series carries a pod or job label: copied onto every GPU series they would multiply the series count.
PROCESS_INFO_METRIC = "gputui_process_info"
# ProcSample field -> its label on PROCESS_INFO_METRIC (dcgm-exporter's own names for the pod's three).
PROCESS_OWNER_LABELS: tuple[tuple[str, str], ...] = (
    ("pod", "pod"),
    ("namespace", "namespace"),
    ("k8s_container", "container"),
    ("job_id", "job_id"),
)
# Per rank of a torch.distributed job whose stacks show its main thread held in one place (JobActivity's
# unchanged_since): the seconds it has been there as of the window that last showed it, labelled with the rank, the
# job's key and the place (kind, function, file, line), so that a fleet view judges a stopped job on any node.
PROCESS_HELD_METRIC = "gputui_process_held_seconds"
PROCESS_HELD_LABELS: tuple[str, ...] = ("rank", "job", "kind", "function", "file", "line")
XID_METRIC = "DCGM_FI_DEV_XID_ERRORS"
UP_METRIC = "gputui_up"
SOURCE_INFO_METRIC = "gputui_source_info"
TIMESTAMP_METRIC = "gputui_sample_timestamp_seconds"
FINDING_METRIC = "gputui_finding"
# Seconds each GPU has spent in each verdict class since the exporter started (gputui/diagnostics/account.py), a
# counter: the name prometheus-client writes it under, `_total` included.
VERDICT_SECONDS_METRIC = "gputui_verdict_seconds"

# Names one field goes by in different dcgm-exporter versions, all read as the one in the tables above: the
# clock-event reasons are field 112 under both names (go-dcgm maps both to it), the older name still written by
# older setups. A shared Prometheus may hold either, so `--prometheus` asks for every name here too.
READ_ALIASES: tuple[tuple[str, ...], ...] = (
    ("DCGM_FI_DEV_CLOCKS_EVENT_REASONS", "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS"),
)
