"""The plain data every part of gputui exchanges: sources produce it, diagnostics and views read it.

All classes are frozen: a Snapshot is a fact about one instant and is shared between threads without locks.
`None` always means "the driver or the OS did not report this"; it is never replaced by 0.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

SourceKind = Literal["nvml", "simulated", "replay", "remote"]

# Clock event ("throttle") reason bits, as defined by nvidia-ml-py's nvmlClocksEventReason* constants.
# They are repeated here (and checked against pynvml in the tests) so that the model imports no driver binding.
CLOCK_EVENT_REASONS: tuple[tuple[int, str], ...] = (
    (0x1, "gpu_idle"),
    (0x2, "applications_clocks"),
    (0x4, "sw_power_cap"),
    (0x8, "hw_slowdown"),
    (0x10, "sync_boost"),
    (0x20, "sw_thermal_slowdown"),
    (0x40, "hw_thermal_slowdown"),
    (0x80, "hw_power_brake"),
    (0x100, "display_clocks"),
)


def decode_clock_event_reasons(mask: int | None) -> tuple[str, ...] | None:
    """Names of the bits set in a clock event reason mask; unknown bits are kept as hex so none is hidden."""
    if mask is None:
        return None
    names = [name for bit, name in CLOCK_EVENT_REASONS if mask & bit]
    known = 0
    for bit, _ in CLOCK_EVENT_REASONS:
        known |= bit
    if mask & ~known:
        names.append(f"0x{mask & ~known:x}")
    return tuple(names)


def encode_clock_event_reasons(names: tuple[str, ...] | list[str]) -> int:
    """The inverse of decode_clock_event_reasons, for readers of recorded names."""
    by_name = {name: bit for bit, name in CLOCK_EVENT_REASONS}
    mask = 0
    for name in names:
        mask |= by_name[name] if name in by_name else int(name, 16)
    return mask


@dataclass(frozen=True, slots=True)
class SystemInfo:
    """What the machine is; read once when a source opens."""

    hostname: str
    source: SourceKind
    driver_version: str | None
    nvml_version: str | None
    cuda_driver_version: str | None  # decoded "major.minor" as the driver reports it
    gpu_count: int
    cpu_count: int
    kernel: str
    scenario: str | None = None  # the simulated scenario, when source == "simulated"
    # The CUDA version the local torch was built for, read once in a child process (never imported here).
    torch_cuda_version: str | None = None
    # Why the real driver could not be read, when the app fell back to the simulated source.
    fallback_reason: str | None = None
    # For source == "remote": what the remote exporter reads ("simulated" must be labelled here too); None if unknown.
    remote_source: SourceKind | None = None
    # For source == "replay": the source the recording was made from ("simulated" must be labelled here too).
    recorded_source: SourceKind | None = None

    @property
    def is_live(self) -> bool:
        """True only for data read from this machine's driver right now."""
        return self.source == "nvml"


@dataclass(frozen=True, slots=True)
class GpuInfo:
    """Static facts of one GPU, read once."""

    index: int
    name: str
    uuid: str | None = None
    serial: str | None = None
    pci_bus_id: str | None = None
    memory_total_bytes: int | None = None
    max_sm_clock_mhz: int | None = None
    max_memory_clock_mhz: int | None = None
    max_graphics_clock_mhz: int | None = None
    default_app_sm_clock_mhz: int | None = None
    default_app_memory_clock_mhz: int | None = None
    pcie_max_gen: int | None = None  # the max of this device in this system (slot, riser)
    pcie_max_width: int | None = None
    pcie_gpu_max_gen: int | None = None  # what the GPU itself supports
    power_default_limit_w: float | None = None
    power_min_limit_w: float | None = None
    power_max_limit_w: float | None = None
    temperature_slowdown_c: int | None = None
    temperature_shutdown_c: int | None = None
    temperature_gpu_max_c: int | None = None
    temperature_memory_max_c: int | None = None
    persistence_mode: bool | None = None
    compute_mode: str | None = None
    mig_mode: bool | None = None
    ecc_mode: bool | None = None


@dataclass(frozen=True, slots=True)
class GpuProcess:
    """A process that holds a context on a GPU, as the driver lists it."""

    pid: int
    used_memory_bytes: int | None
    kind: Literal["compute", "graphics"] = "compute"


@dataclass(frozen=True, slots=True)
class GpuSample:
    """One reading of one GPU."""

    index: int
    timestamp: float
    lost: bool = False  # the GPU fell off the bus (GpuIsLost); every other field is then None
    error: str | None = None
    utilization_gpu_pct: float | None = None
    utilization_memory_pct: float | None = None
    sm_clock_mhz: int | None = None
    memory_clock_mhz: int | None = None
    graphics_clock_mhz: int | None = None
    temperature_c: float | None = None
    memory_temperature_c: float | None = None
    power_w: float | None = None
    power_limit_w: float | None = None  # the enforced limit
    memory_used_bytes: int | None = None
    memory_reserved_bytes: int | None = None
    memory_free_bytes: int | None = None
    pcie_gen: int | None = None
    pcie_width: int | None = None
    pcie_tx_bytes_s: float | None = None
    pcie_rx_bytes_s: float | None = None
    pcie_replay_count: int | None = None
    fan_pct: int | None = None
    pstate: int | None = None  # 0 for P0 ... 15; 32 (unknown) is reported as None
    clock_event_reasons_mask: int | None = None
    power_violation_ns: int | None = None  # cumulative time held back by the power policy
    thermal_violation_ns: int | None = None  # cumulative time held back by the thermal policy
    energy_mj: int | None = None
    ecc_uncorrected: int | None = None
    retired_pages_pending: bool | None = None  # pending page retirement or remapped-row failure
    xid_events: tuple[int, ...] = ()  # XID error codes seen since the previous sample
    encoder_pct: float | None = None
    decoder_pct: float | None = None
    processes: tuple[GpuProcess, ...] = ()

    @property
    def clock_event_reasons(self) -> tuple[str, ...] | None:
        return decode_clock_event_reasons(self.clock_event_reasons_mask)


@dataclass(frozen=True, slots=True)
class ProcSample:
    """Host-side view of a process that uses a GPU (or of a data-loader worker's parent)."""

    pid: int
    name: str
    user: str | None = None
    cmdline: str | None = None
    cpu_pct: float | None = None  # 100 = one full core
    threads: int | None = None
    children: int | None = None  # direct child processes: data-loader workers, mostly
    read_bytes_s: float | None = None
    rss_bytes: int | None = None
    state: str | None = None


@dataclass(frozen=True, slots=True)
class HostSample:
    """One reading of the host the GPUs sit in."""

    timestamp: float
    cpu_pct_per_core: tuple[float, ...] = ()
    iowait_pct: float | None = None
    steal_pct: float | None = None
    load_avg: tuple[float, float, float] | None = None
    memory_used_bytes: int | None = None
    memory_total_bytes: int | None = None
    swap_used_bytes: int | None = None
    swap_total_bytes: int | None = None
    swap_in_bytes_s: float | None = None
    swap_out_bytes_s: float | None = None
    disk_read_bytes_s: float | None = None
    disk_write_bytes_s: float | None = None
    disk_busy_pct: float | None = None
    net_rx_bytes_s: float | None = None
    net_tx_bytes_s: float | None = None
    net_link_bytes_s: float | None = None  # the fastest up interface's link speed
    processes: tuple[ProcSample, ...] = ()

    @property
    def cpu_pct(self) -> float | None:
        """Mean over all cores."""
        if not self.cpu_pct_per_core:
            return None
        return sum(self.cpu_pct_per_core) / len(self.cpu_pct_per_core)

    def process(self, pid: int) -> ProcSample | None:
        for proc in self.processes:
            if proc.pid == pid:
                return proc
        return None


@dataclass(frozen=True, slots=True)
class Snapshot:
    """Everything known at one instant: the unit that flows from sources to diagnostics and views."""

    timestamp: float
    system: SystemInfo
    gpu_info: tuple[GpuInfo, ...]
    gpus: tuple[GpuSample, ...]
    host: HostSample
    events: tuple[str, ...] = field(default=())  # source-level notices, e.g. "GPU 2 fell off the bus"

    def info(self, index: int) -> GpuInfo | None:
        for info in self.gpu_info:
            if info.index == index:
                return info
        return None
