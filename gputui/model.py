"""The plain data every part of gputui exchanges: sources produce it, diagnostics and views read it.

All classes are frozen: a Snapshot is a fact about one instant and is shared between threads without locks.
`None` always means "the driver or the OS did not report this"; it is never replaced by 0.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal, TypedDict

SourceKind = Literal["nvml", "simulated", "replay", "remote"]

# What GpuInfo.nvlink_remote names a link to an NVSwitch; a link down may read "" (no remote).
NVSWITCH = "NVSwitch"

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


# Clock event ("throttle") reasons the diagnostics name, by the bits above.
CLOCK_THERMAL = encode_clock_event_reasons(("sw_thermal_slowdown", "hw_thermal_slowdown"))
CLOCK_SW_POWER_CAP = encode_clock_event_reasons(("sw_power_cap",))
CLOCK_HW_SLOWDOWN = encode_clock_event_reasons(("hw_slowdown",))
CLOCK_HW_POWER_BRAKE = encode_clock_event_reasons(("hw_power_brake",))
# nvml.h and the DCGM field docs: HwSlowdown is an umbrella (high temperature, an external power brake, or
# fast-trigger power protection; also briefly during a P-state or clock change), and drivers name its cause
# by setting HwThermalSlowdown or HwPowerBrakeSlowdown beside it. With one of these, that bit's rule speaks.
CLOCK_HW_CAUSE = encode_clock_event_reasons(("hw_thermal_slowdown", "hw_power_brake"))
# Reasons that explain low clocks by power, heat or hardware: clocks_low looks for their absence.
CLOCK_LIMITING = CLOCK_SW_POWER_CAP | CLOCK_HW_SLOWDOWN | CLOCK_THERMAL | CLOCK_HW_POWER_BRAKE


@dataclass(frozen=True, slots=True)
class ContainerInfo:
    """The cgroup gputui runs in and its limits, read once: a container's, or a systemd slice's with a quota.

    Inside a container psutil and `os.cpu_count()` report the host; these are what the job may really use.
    Every limit is None when unlimited or unreadable.
    """

    runtime: str | None  # docker, podman, kubernetes, containerd, lxc; None outside a container
    recognised_by: str | None  # what gave the runtime away, e.g. "/.dockerenv"
    cgroup_version: int | None  # 1 or 2; None when /proc/self/cgroup cannot be read
    cpu_quota_cores: float | None = None  # CFS quota / period
    cpuset_cpus: tuple[int, ...] | None = None  # the CPUs the group may run on
    memory_limit_bytes: int | None = None
    shm_bytes: int | None = None  # the size of /dev/shm

    @property
    def cpu_limit(self) -> float | None:
        """The CPUs the group can keep busy: the quota, or the cpuset when smaller; None when neither limits."""
        limits = [x for x in (self.cpu_quota_cores, len(self.cpuset_cpus) if self.cpuset_cpus else None) if x]
        return min(limits) if limits else None


def parse_cpus(text: str | None) -> tuple[int, ...] | None:
    """ "0-3,8,10-11" -> (0, 1, 2, 3, 8, 10, 11); None when empty or malformed. The kernel's cpulist (cpusets,
    /proc/PID/status) and a GPU's `Topology.cpu_affinity` alike, so a process's CPUs meet its GPU's here."""
    if not text or not text.strip():
        return None
    cpus: list[int] = []
    try:
        for part in text.strip().split(","):
            first, _, last = part.partition("-")
            cpus.extend(range(int(first), int(last or first) + 1))
    except ValueError:
        return None
    return tuple(cpus)


@dataclass(frozen=True, slots=True)
class Topology:
    """How the GPUs connect, read once: what `nvidia-smi topo -m` prints, P2P, and where each GPU sits.

    Every table is in the order of the GPUs read (`Snapshot.gpu_info`), GPU x GPU for the pairs.
    """

    # "X" on the diagonal; "NV<n>" when n NVLinks join the pair (direct or through NVSwitch); else the PCIe path
    # from nvmlDeviceGetTopologyCommonAncestor: "PIX", "PXB", "PHB", "NODE", "SYS"; None when unknown.
    matrix: tuple[tuple[str | None, ...], ...]
    p2p: tuple[tuple[bool | None, ...], ...]  # peer read and write both OK; None on the diagonal or when unknown
    numa_node: tuple[int | None, ...]
    cpu_affinity: tuple[str | None, ...]  # the CPUs near each GPU as a cpulist, "0-31,64-95"
    # The host's NUMA nodes as sysfs lists them (/sys/devices/system/node/online); None when not read. With one,
    # no CPU is away from a GPU, whatever CPUs the driver's affinity mask names.
    numa_nodes: int | None = None


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
    # The CUDA version the local torch was built for, read once from torch/version.py as text (never imported).
    torch_cuda_version: str | None = None
    # Why the real driver could not be read, when the app fell back to the simulated source.
    fallback_reason: str | None = None
    # For source == "remote": what the remote exporter reads ("simulated" must be labelled here too); None if unknown.
    remote_source: SourceKind | None = None
    # For source == "replay": the source the recording was made from ("simulated" must be labelled here too).
    recorded_source: SourceKind | None = None
    # The cgroup and limits of the process that read this machine; None when not read (older recordings).
    container: ContainerInfo | None = None
    topology: Topology | None = None  # None where it was not read (a remote exporter, an older recording)
    # The one MIG instance this process was given ("MIG-<uuid>" in CUDA_VISIBLE_DEVICES or NVIDIA_VISIBLE_DEVICES,
    # as a Kubernetes device plugin or Slurm hands out a slice); None when it was given whole GPUs or no choice.
    mig_slice: str | None = None

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
    minor_number: int | None = None  # N in /dev/nvidiaN, the device file a CUDA process holds open
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
    nvlink_links_total: int | None = None  # links the GPU has; None on boards without NVLink
    nvlink_version: int | None = None  # NVLink generation (3 on A100, 4 on H100), not NVML's enum
    nvlink_remote: tuple[str, ...] | None = None  # what each link reaches: a GPU's PCI bus id, NVSWITCH, or ""


# How a GPU process was matched with a process in this PID namespace. NVML lists host PIDs, which inside a
# container are missing or name another process: "pid" - NVML's PID is this process here (it holds the device
# file, or its files cannot be read to check); "device" - found here through its open /dev/nvidiaN, NVML's PID
# beside it; "hidden" - NVML's PID is no process here that holds the GPU: it lives in another PID namespace.
ProcessSeen = Literal["pid", "device", "hidden"]


@dataclass(frozen=True, slots=True)
class GpuProcess:
    """A process that holds a context on a GPU, as the driver lists it, matched with this PID namespace."""

    pid: int  # the PID here; NVML's own when `seen` is "hidden"
    used_memory_bytes: int | None  # None when the driver does not say, or when NVML's figure is not this one's
    kind: Literal["compute", "graphics"] = "compute"
    seen: ProcessSeen = "pid"
    host_pid: int | None = None  # NVML's PID, when `seen` is "device"; None where it cannot be told apart
    # Its share of the GPU in the driver's last process-utilization sample; None when unsupported or not sampled.
    sm_pct: float | None = None  # % of time its kernels ran on the SMs
    mem_pct: float | None = None  # % of time it used the memory controller
    # The MIG instance it runs in (nvmlProcessInfo_t gpuInstanceId/computeInstanceId); None off MIG mode.
    gpu_instance_id: int | None = None
    compute_instance_id: int | None = None


def instance_holds(instance: tuple[int | None, int | None], process: tuple[int | None, int | None]) -> bool:
    """Whether a process with these (GPU instance, compute instance) ids runs in the MIG instance with these: the
    same GPU instance, and the same compute instance where both name one. A process without a GPU instance id
    runs in none (it is not on a MIG instance). Ids as read from NVML, or from JSON and recordings alike."""
    gpu_instance, compute_instance = instance
    process_gpu_instance, process_compute_instance = process
    if process_gpu_instance is None or process_gpu_instance != gpu_instance:
        return False
    return process_compute_instance is None or compute_instance in (None, process_compute_instance)


# The activity a MigDevice shares with a GpuSample by name: GPM, of one GPU instance or of the whole GPU. A MIG
# instance read as a GPU of its own (diagnostics/instances.py) carries them over; sources fill them from GPM values.
ACTIVITY_FIELDS: tuple[str, ...] = (
    "gr_engine_active_pct",
    "sm_active_pct",
    "sm_occupancy_pct",
    "tensor_active_pct",
    "dram_bw_pct",
    "fp32_active_pct",
    "fp16_active_pct",
    "fp64_active_pct",
)


def gpm_activity(values: Mapping[str, object]) -> dict[str, Any]:
    """The ACTIVITY_FIELDS among GPM values, each None where they lack it: keyword arguments for a MigDevice or a
    GpuSample. NVLink traffic, the other GPM values, belongs to the whole GPU alone."""
    return {name: values.get(name) for name in ACTIVITY_FIELDS}


@dataclass(frozen=True, slots=True)
class MigDevice:
    """One MIG instance of a GPU in MIG mode: a slice with its own SMs, memory and processes, isolated from the
    others. Temperature, power, clocks, throttle reasons, PCIe, ECC and NVLink belong to the parent GPU only;
    whole-GPU utilization does not exist in MIG mode, so activity comes from GPM per instance."""

    index: int  # its position under the parent (nvmlDeviceGetMigDeviceHandleByIndex)
    uuid: str | None = None  # "MIG-...", as CUDA_VISIBLE_DEVICES and the Kubernetes device plugin name it
    profile: str | None = None  # "3g.40gb" (or "1c.3g.40gb" for a compute instance smaller than its GPU instance)
    gpu_instance_id: int | None = None
    compute_instance_id: int | None = None
    sm_count: int | None = None  # multiprocessorCount of nvmlDeviceGetAttributes
    slice_count: int | None = None  # gpuInstanceSliceCount: how many of the GPU's compute slices it holds
    memory_used_bytes: int | None = None
    memory_total_bytes: int | None = None
    # GPM of this GPU instance (nvmlGpmMigSampleGet), as GpuSample's fields of the same names (ACTIVITY_FIELDS).
    gr_engine_active_pct: float | None = None
    sm_active_pct: float | None = None
    sm_occupancy_pct: float | None = None
    tensor_active_pct: float | None = None
    dram_bw_pct: float | None = None
    fp32_active_pct: float | None = None
    fp16_active_pct: float | None = None
    fp64_active_pct: float | None = None
    processes: tuple[GpuProcess, ...] = ()  # the processes running in it
    pod: str | None = None  # "namespace/pod" given this instance, where dcgm-exporter labels its series with one

    def holds(self, process: GpuProcess) -> bool:
        """Whether the process runs in this instance (see `instance_holds`)."""
        return instance_holds(
            (self.gpu_instance_id, self.compute_instance_id), (process.gpu_instance_id, process.compute_instance_id)
        )

    @property
    def label(self) -> str:
        """How a person names it beside its GPU: "3g.40gb (GI 2)"."""
        profile = self.profile or f"MIG {self.index}"
        return f"{profile} (GI {self.gpu_instance_id})" if self.gpu_instance_id is not None else profile


@dataclass(frozen=True, slots=True)
class MigState:
    """A MIG-capable GPU's mode and instances (GpuSample.mig). A pending mode differs from the current one until
    the GPU is reset: the change an administrator asked for has not happened yet."""

    mode: bool | None  # MIG on now; None when the driver does not say
    pending_mode: bool | None = None  # MIG on after the next reset
    devices: tuple[MigDevice, ...] = ()

    @property
    def change_pending(self) -> bool:
        return self.mode is not None and self.pending_mode is not None and self.mode != self.pending_mode

    def gpu_instances(self) -> tuple[MigDevice, ...]:
        """One device per GPU instance (memory and GPM are the GPU instance's): a GPU instance split into compute
        instances lists one MIG device each, and is returned once, as its first, holding all their processes."""
        first: dict[int, MigDevice] = {}
        processes: dict[int, list[GpuProcess]] = {}
        for device in self.devices:
            gi = device.gpu_instance_id
            if gi is None:
                continue
            first.setdefault(gi, device)
            processes.setdefault(gi, []).extend(device.processes)
        return tuple(
            device if len(processes[gi]) == len(device.processes) else replace(device, processes=tuple(processes[gi]))
            for gi, device in first.items()
        )

    def device_of(self, gpu_instance_id: int | None) -> MigDevice | None:
        """The instance with this GPU instance id; None off MIG or when no instance has it."""
        if gpu_instance_id is None:
            return None
        for device in self.devices:
            if device.gpu_instance_id == gpu_instance_id:
                return device
        return None


class GpmValues(TypedDict, total=False):
    """GpuSample's GPM fields, as a source reads them apart from the rest of the sample (see GpuSample)."""

    gr_engine_active_pct: float | None
    sm_active_pct: float | None
    sm_occupancy_pct: float | None
    tensor_active_pct: float | None
    dram_bw_pct: float | None
    fp32_active_pct: float | None
    fp16_active_pct: float | None
    fp64_active_pct: float | None
    nvlink_rx_bytes_s: float | None
    nvlink_tx_bytes_s: float | None


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
    # GPM (Hopper and newer) between this sample and the previous one, in % of 0-100; None where the GPU, the
    # driver or MIG mode gives no GPM. Unlike utilization_gpu_pct (a kernel ran at all), these say how full.
    gr_engine_active_pct: float | None = None  # time the graphics/compute engine was active
    sm_active_pct: float | None = None  # share of SMs busy
    sm_occupancy_pct: float | None = None  # resident warps against the maximum
    tensor_active_pct: float | None = None  # SMs doing any tensor-core work
    dram_bw_pct: float | None = None  # DRAM bandwidth used against the peak
    fp32_active_pct: float | None = None  # SMs doing non-tensor FP32 math
    fp16_active_pct: float | None = None
    fp64_active_pct: float | None = None
    nvlink_rx_bytes_s: float | None = None  # all NVLinks together
    nvlink_tx_bytes_s: float | None = None
    nvlink_links_active: int | None = None  # links up now (slow cadence); None on boards without NVLink
    nvlink_replay_errors: int | None = None  # error counters summed over the links, cumulative (slow cadence)
    nvlink_recovery_errors: int | None = None
    nvlink_crc_errors: int | None = None  # CRC flit + CRC data
    processes: tuple[GpuProcess, ...] = ()
    # The Kubernetes pod that uses it ("namespace/pod"), where the exporter labels its series with one and lists
    # no processes (dcgm-exporter): the one sign of a holder on such a node. None where not said.
    pod: str | None = None
    # MIG mode and instances on a MIG-capable GPU (A100, H100, H200...); None on a GPU without MIG, or with MIG
    # off and no change pending. In MIG mode utilization_gpu_pct is None (NVML gives none): see `mig.devices`.
    mig: MigState | None = None

    @property
    def clock_event_reasons(self) -> tuple[str, ...] | None:
        return decode_clock_event_reasons(self.clock_event_reasons_mask)

    @property
    def in_mig_mode(self) -> bool:
        """Split into MIG instances now: no whole-GPU utilization, the instances hold the work."""
        return self.mig is not None and bool(self.mig.mode)

    def instance_of(self, process: GpuProcess) -> MigDevice | None:
        """The MIG instance the process runs in; None off MIG or where no instance has its id."""
        return self.mig.device_of(process.gpu_instance_id) if self.mig is not None else None


# What a job's main thread is doing at a stack sample (gputui/sources/stacks/classify.py sorts frames into them):
# waiting for the DataLoader's next batch; the dataset's own code in the main process (num_workers=0); the job's own
# Python on a CPU; waiting for the GPU (.item(), .cpu(), synchronize); waiting on other ranks in a collective;
# writing a checkpoint; torch.compile (Dynamo, Inductor) compiling; reading files; sleeping or blocked elsewhere.
ActivityKind = Literal["data", "loading", "cpu", "gpu_sync", "collective", "checkpoint", "compile", "io", "idle"]
ACTIVITY_KINDS: tuple[ActivityKind, ...] = (
    "data",
    "loading",
    "cpu",
    "gpu_sync",
    "collective",
    "checkpoint",
    "compile",
    "io",
    "idle",
)
# Who read the stacks: py-spy from outside (ptrace), or the sampler `gputui run` puts inside the job.
ActivitySource = Literal["py-spy", "in-process"]


@dataclass(frozen=True, slots=True)
class ActivityShares:
    """The share of a thread's stack samples in each kind; they sum to 1 where any sample was taken."""

    data: float = 0.0
    loading: float = 0.0
    cpu: float = 0.0
    gpu_sync: float = 0.0
    collective: float = 0.0
    checkpoint: float = 0.0
    compile: float = 0.0
    io: float = 0.0
    idle: float = 0.0

    def of(self, kind: ActivityKind) -> float:
        share: float = getattr(self, kind)
        return share

    @property
    def leading(self) -> ActivityKind | None:
        """The kind with the most samples (the first in ACTIVITY_KINDS on a tie); None with no sample."""
        best = max(ACTIVITY_KINDS, key=self.of)
        return best if self.of(best) > 0 else None


@dataclass(frozen=True, slots=True)
class ActivityFrame:
    """A frame that held many samples: the user function a kind is named by ("cpu" in `step`, train.py:88)."""

    kind: ActivityKind
    function: str
    file: str
    line: int | None
    share: float  # of the main thread's samples
    # Set only where the kind was read from the job's source line rather than a Python frame (gpu_sync from a line
    # calling `.item()`, which synchronizes in C++): the line's text, cleaned, stripped, at most 120 characters.
    source_line: str | None = None


@dataclass(frozen=True, slots=True)
class WaitedOn:
    """Who the main thread's hand-off waits (a queue's get, a condition, a future, a join...) were waiting for:
    the job's other threads or processes that ran meanwhile, and what they did."""

    kind: ActivityKind  # what the main thread's wait is counted as: "data" (they run the job's code), "io" (they
    # read files or the network), or their own kind where a table names it
    who: str  # "thread producer (tid 4321)", "4 threads ThreadPoolExecutor-0_*", "3 processes"
    frame: ActivityFrame | None  # their top frame (its share: of THEIR samples)
    share: float  # the share of the main thread's samples attributed to them
    running: float  # the share of their samples in which they ran on a CPU


@dataclass(frozen=True, slots=True)
class JobActivity:
    """What a job's main thread did over one window of stack samples: measured, where the rest is inferred.

    A process whose stacks cannot be read (not Python, ptrace refused) has `samples` 0 and `error` saying why."""

    source: ActivitySource
    taken_at: float  # seconds since the epoch when the window ended
    window_s: float
    samples: int  # the main thread's samples in the window
    shares: ActivityShares = ActivityShares()
    top: tuple[ActivityFrame, ...] = ()  # the frames that held the most samples, most first
    # Its data-loader workers' and pin-memory thread's samples pooled, where any were read: a worker stuck in
    # file reads shows here.
    workers: ActivityShares | None = None
    worker_samples: int = 0
    rank: int | None = None  # RANK from its environment, for a rank of torch.distributed
    error: str | None = None
    # Since when (epoch seconds) this window and the ones before it of the same process showed its main thread held
    # in the same place (the same leading kind and top frame, by a large share): set by gputui/session/stacks.py
    # JobStacks; None where the window before showed it elsewhere, or there was none.
    unchanged_since: float | None = None
    waited_on: WaitedOn | None = None  # whom its hand-off waits waited for, where others ran meanwhile

    @property
    def leading(self) -> ActivityKind | None:
        return self.shares.leading if self.samples else None


@dataclass(frozen=True, slots=True)
class DistRank:
    """A process's place in a torch.distributed (torchrun / elastic) job, from its environment as it started, read
    once (gputui/sources/host/dist.py). The ranks of one job on a machine share `job`.

    `unreadable`: the kernel refused its environment (another user's process, read without ptrace rights): nothing
    else is known, and nothing is guessed."""

    rank: int | None = None  # RANK
    local_rank: int | None = None  # LOCAL_RANK
    world_size: int | None = None  # WORLD_SIZE
    # What its ranks share: "run <TORCHELASTIC_RUN_ID> at <MASTER_ADDR>:<MASTER_PORT>", as much of it as is set;
    # None where neither is.
    job: str | None = None
    launcher_pid: int | None = None  # its parent, where that is torchrun's elastic agent
    unreadable: bool = False


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
    # CPU of those children together over the last few ticks (100 = one core): whether the workers keep up.
    workers_cpu_pct: float | None = None
    # How long those children waited on a run queue together (/proc/PID/schedstat of each; 100 = one of them all the
    # time): what they wanted of a CPU beyond what they got.
    workers_run_queue_wait_pct: float | None = None
    read_bytes_s: float | None = None
    rss_bytes: int | None = None
    state: str | None = None
    # Share of wall time the main thread waited on a run queue (/proc/PID/schedstat): runnable but not running.
    run_queue_wait_pct: float | None = None
    container: str | None = None  # the container or pod it runs in, seen from the host: short id or pod uid
    container_pid: int | None = None  # its PID inside that container (the last of NSpid)
    cpus_allowed: tuple[int, ...] | None = None  # where it may run (/proc/PID/status Cpus_allowed_list)
    last_cpu: int | None = None  # where its main thread last ran (/proc/PID/stat field 39)
    # Its /proc files the kernel refuses this reader ("fd", "io", "environ": procfs.GUARDED_FILES): another user's
    # process while unprivileged, or a privileged one without CAP_SYS_PTRACE. What they hold reads n/a (its disk
    # reads, its environment's Slurm job), and which GPU it holds is the driver's word, unchecked.
    unreadable: tuple[str, ...] = ()
    # Whose job it is on a cluster (gputui/sources/host/attribution.py). On Kubernetes: the pod's name (its uid
    # when the kubelet's pod-resources API cannot be asked), its namespace (None without the API), and the
    # container's name (its short id without the API). On Slurm: the job's id, from its cgroup or environment.
    pod: str | None = None
    namespace: str | None = None
    k8s_container: str | None = None
    job_id: str | None = None
    # When it started (seconds since the epoch, psutil's create_time); None unreadable. A signal is sent only to the
    # process that had this PID when it was sampled: a PID reused since starts later.
    create_time: float | None = None
    # Its parent (psutil's ppid, read once): ranks that share one (torchrun's launcher) are one job, the process
    # table's tree. None unreadable, or in a recording made before it was kept.
    ppid: int | None = None
    # Its main thread's stacks over the last window sampled (gputui/sources/stacks); None where none was taken.
    activity: JobActivity | None = None
    # Its place in a torch.distributed job (its environment's RANK, WORLD_SIZE, MASTER_ADDR...); None where it is
    # no rank of one, or in a recording made before it was kept.
    dist: DistRank | None = None


@dataclass(frozen=True, slots=True)
class ContainerSample:
    """The cgroup's own figures over the last interval: what the kernel allowed, not what the host had."""

    cpu_pct_of_quota: float | None = None  # CPU used as % of the quota
    cpu_throttled_pct: float | None = None  # % of CFS periods in which the group was throttled
    cpu_throttled_s: float | None = None  # time throttled in the interval
    memory_used_bytes: int | None = None
    memory_limit_bytes: int | None = None
    oom_kills: int | None = None  # the cgroup's OOM-kill counter, cumulative


@dataclass(frozen=True, slots=True)
class PsiSample:
    """Pressure stall information: % of the interval in which some (or all) runnable tasks waited for it."""

    cpu_some_pct: float | None = None
    io_some_pct: float | None = None
    io_full_pct: float | None = None
    memory_some_pct: float | None = None
    memory_full_pct: float | None = None


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
    shm_used_bytes: int | None = None  # used in /dev/shm, where data-loader workers hand over batches
    oom_kills: int | None = None  # the host's OOM-kill counter (/proc/vmstat oom_kill), cumulative
    container: ContainerSample | None = None  # the cgroup gputui runs in; None when it cannot be read
    psi: PsiSample | None = None  # the cgroup's pressure (v2), else the host's; None where PSI is off
    processes: tuple[ProcSample, ...] = ()
    # The processes outside the GPU jobs that use the most CPU, busiest first: read only while the host's CPUs
    # are busy, so that a job starved by another user's work is told whose it is.
    busiest_others: tuple[ProcSample, ...] = ()

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


# How a source's notice starts when XID errors stop being watched: it stays true for the rest of the session.
XID_UNWATCHED = "XID events are not collected"


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
