"""A fake of nvidia-ml-py's `pynvml` module, for tests and the sampling benchmark.

Only the functions are fake. Constants, ctypes structures and exception classes are the installed pynvml's
own, so code under test catches the real `NVMLError_NotSupported` and reads the real `c_nvmlMemory_v2_t`.
Return types follow nvidia-ml-py 13: names are `str`, memory info is a c_nvmlMemory(_v2)_t, process lists
hold nvmlFriendlyObjects whose `usedGpuMemory` may be None, PCIe throughput is in KB/s.

A FakeGpu field set to None makes its function raise NotSupported, as the driver does on boards without it;
`errors` makes a function raise any other NVML error; `lost = True` makes every call raise GpuIsLost.
GPM: `gpm` holds each metric's value by NVML_GPM_METRIC_* id (None: `isSupportedDevice` is 0, as on
pre-Hopper boards), `gpm_returns` a metric's own return code; sample buffers are real c_nvmlGpmSample_t
pointers, and metrics are refused for buffers not filled, freed, or from another GPU. Process utilization
returns the `process_samples` newer than the timestamp asked, else NotFound, as the driver does.
NVLink: `nvlink_remotes` says what each link reaches ("NVSwitch" or a GPU's PCI bus id; None: no NVLink, so
every NVLink call raises NotSupported), links past the last raise InvalidArgument as on H100, `nvlink_down` are
inactive, `nvlink_errors` holds counters per (link, NVML_NVLINK_ERROR_*) and `nvlink_error_fields` the *_TOTAL
fields that sum them, `nvlink_rx_kib`/`nvlink_tx_kib` the cumulative throughput fields. Topology comes from
each GPU's `socket` and `pcie_switch`; P2P is OK within a socket or over NVLink, and the P2P index must be an
int (pynvml's NVML_P2P_CAPS_INDEX_READ is a tuple).
Events: `push_xid` delivers an XID to the event sets a GPU is registered on, `fail_wait` makes the next wait
raise, and `settle` waits until the waiting thread has taken everything pushed.
MIG: a GPU's `mig_devices` (FakeMig, each one compute instance at its `slot`) answer through FakeMigHandles
from nvmlDeviceGetMigDeviceHandleByIndex while the current mode is on: NotFound at a slot holding none,
InvalidArgument past `max_mig_devices`. A MIG handle answers UUID, name ("<GPU> MIG <profile>"), instance ids,
attributes, memory and process lists (with its ids); any other question NotSupported, as drivers do. In MIG mode
the parent answers no utilization, no whole-GPU GPM and no process utilization (NotSupported), and lists every
instance's processes with their ids (a non-root caller gets NoPermission: `mig_gpu(root=False)`).
nvmlGpmMigSampleGet samples one GPU instance by id. A `destroyed` instance is gone: its slot reads NotFound, its
old handle InvalidArgument. `mig_gpu` builds an H100 in MIG mode from profile names.
"""

from __future__ import annotations

import ctypes
import inspect
import itertools
import threading
import types
from collections import Counter, deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pynvml as real

MIB = 1024 * 1024
_raw_get, _raw_set = object.__getattribute__, object.__setattr__  # ctypes' own field access

# Functions that drivers before ~535 (clock events), ~550 (TemperatureV) and ~510 (memory v2, v3 process
# lists) do not have: an "old driver" fake raises FunctionNotFound for them, as the real pynvml does.
NEW_FUNCTIONS = frozenset(
    {
        "nvmlDeviceGetCurrentClocksEventReasons",
        "nvmlDeviceGetTemperatureV",
        "nvmlDeviceGetMemoryInfo_v2",
        "nvmlDeviceGetComputeRunningProcesses_v3",
        "nvmlDeviceGetGraphicsRunningProcesses_v3",
        "nvmlDeviceGetNvLinkRemoteDeviceType",
        "nvmlDeviceGetNumaNodeId",
    }
)
ALL_LINKS = 0xFFFFFFFF  # a field value's scopeId for "every NVLink"
SWITCH_BUS_ID = "00000000:C5:00.0"  # what a link to an NVSwitch answers for its remote PCI info
# GPM arrived in R520: an old driver's answer to the first is FunctionNotFound, and the rest are never called.
GPM_FUNCTIONS = frozenset({"nvmlGpmQueryDeviceSupport", "nvmlGpmSampleAlloc", "nvmlGpmSampleGet", "nvmlGpmMetricsGet"})

# An H100 SXM in a busy bf16 training step, as `nvidia-smi dmon --gpm-metrics` reads it.
H100_GPM: dict[int, float] = {
    real.NVML_GPM_METRIC_GRAPHICS_UTIL: 97.0,
    real.NVML_GPM_METRIC_SM_UTIL: 86.0,
    real.NVML_GPM_METRIC_SM_OCCUPANCY: 41.0,
    real.NVML_GPM_METRIC_ANY_TENSOR_UTIL: 48.0,
    real.NVML_GPM_METRIC_DRAM_BW_UTIL: 55.0,
    real.NVML_GPM_METRIC_FP32_UTIL: 12.0,
    real.NVML_GPM_METRIC_FP16_UTIL: 3.0,
    real.NVML_GPM_METRIC_FP64_UTIL: 0.0,
    real.NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC: 20_480.0,
    real.NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC: 19_456.0,
}


@dataclass
class FakeHandle:
    """Stands in for c_nvmlDevice_t; only the fake looks inside."""

    index: int


@dataclass
class FakeGpu:
    """What one GPU reports; the defaults are a busy H100 SXM with every field supported."""

    name: str = "NVIDIA H100 80GB HBM3"
    uuid: str = ""  # "" gets one made from the GPU's index
    serial: str | None = "1654922001234"
    pci_bus_id: str = ""  # likewise
    minor_number: int | None = -1  # -1 gets the GPU's index, as /dev/nvidiaN is numbered; None: not supported
    memory_total: int = 81559 * MIB
    memory_used: int = 61_000 * MIB  # excluding `memory_reserved`, as memory info v2 reports it
    memory_reserved: int = 519 * MIB
    utilization_gpu: int = 97
    utilization_memory: int = 61
    sm_clock: int = 1980
    memory_clock: int = 2619
    graphics_clock: int = 1980
    max_sm_clock: int = 1980
    max_memory_clock: int = 2619
    max_graphics_clock: int = 1980
    default_app_sm_clock: int | None = 1755
    default_app_memory_clock: int | None = 2619
    temperature: int = 63
    memory_temperature: int | None = 71
    thresholds: dict[int, int] = field(
        default_factory=lambda: {
            real.NVML_TEMPERATURE_THRESHOLD_SHUTDOWN: 92,
            real.NVML_TEMPERATURE_THRESHOLD_SLOWDOWN: 89,
            real.NVML_TEMPERATURE_THRESHOLD_MEM_MAX: 95,
            real.NVML_TEMPERATURE_THRESHOLD_GPU_MAX: 87,
        }
    )
    power_mw: int = 612_000
    enforced_limit_mw: int = 700_000
    default_limit_mw: int = 700_000
    limit_constraints_mw: tuple[int, int] = (200_000, 700_000)
    pcie_gen: int = 5
    pcie_width: int = 16
    pcie_max_gen: int = 5
    pcie_max_width: int = 16
    pcie_gpu_max_gen: int | None = 5
    pcie_tx_kbs: int | None = 1_200_000
    pcie_rx_kbs: int | None = 9_800_000
    pcie_replay: int | None = 0
    fan: int | None = None  # passively cooled: NotSupported
    pstate: int = real.NVML_PSTATE_0
    clock_event_reasons: int = real.nvmlClocksEventReasonSwPowerCap
    power_violation_ns: int | None = 4_000_000_000
    thermal_violation_ns: int | None = 0
    violation_reference_us: int = 1_700_000_000_000_000
    energy_mj: int | None = 9_876_543_210
    ecc_uncorrected: int | None = 0
    retired_pages_pending: int | None = None  # Ampere and newer remap rows instead
    remapped_rows: tuple[int, int, int, int] | None = (0, 0, 0, 0)
    encoder: int | None = 0
    decoder: int | None = 0
    persistence_mode: int = real.NVML_FEATURE_ENABLED
    compute_mode: int = real.NVML_COMPUTEMODE_DEFAULT
    mig_mode: tuple[int, int] | None = (real.NVML_DEVICE_MIG_DISABLE, real.NVML_DEVICE_MIG_DISABLE)
    ecc_mode: tuple[int, int] | None = (real.NVML_FEATURE_ENABLED, real.NVML_FEATURE_ENABLED)
    compute_processes: list[tuple[int, int | None]] = field(default_factory=lambda: [(4242, 60_000 * MIB)])
    graphics_processes: list[tuple[int, int | None]] = field(default_factory=list)
    # (pid, timeStamp µs, smUtil, memUtil) in the driver's buffer; None: NotSupported
    process_samples: list[tuple[int, int, int, int]] | None = field(
        default_factory=lambda: [(4242, 1_700_000_000_000_000, 83, 41)]
    )
    gpm: dict[int, float] | None = field(default_factory=lambda: dict(H100_GPM))
    gpm_returns: dict[int, int] = field(default_factory=dict)  # metric id -> NVML_ERROR_* for that metric
    event_types: int | None = (  # what nvmlDeviceGetSupportedEventTypes reports; None: NotSupported
        real.nvmlEventTypeSingleBitEccError
        | real.nvmlEventTypeDoubleBitEccError
        | real.nvmlEventTypePState
        | real.nvmlEventTypeXidCriticalError
        | real.nvmlEventTypeClock
    )
    nvlink_remotes: list[str] | None = field(default_factory=lambda: ["NVSwitch"] * 18)
    nvlink_down: set[int] = field(default_factory=set)  # links whose state is inactive
    nvlink_version: int = real.NVML_NVLINK_VERSION_4_0
    nvlink_errors: dict[tuple[int, int], int] = field(default_factory=dict)  # (link, NVML_NVLINK_ERROR_*) -> count
    # the driver's totals over the links: field id -> the NVML_NVLINK_ERROR_* it sums; {}: NotSupported
    nvlink_error_fields: dict[int, int] = field(
        default_factory=lambda: {
            real.NVML_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL: real.NVML_NVLINK_ERROR_DL_REPLAY,
            real.NVML_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL: real.NVML_NVLINK_ERROR_DL_RECOVERY,
            real.NVML_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL: real.NVML_NVLINK_ERROR_DL_CRC_FLIT,
            real.NVML_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL: real.NVML_NVLINK_ERROR_DL_CRC_DATA,
        }
    )
    nvlink_rx_kib: int = 1_000_000  # cumulative, all links
    nvlink_tx_kib: int = 2_000_000
    socket: int = 0  # CPU socket, which is also the NUMA node
    pcie_switch: int | None = None  # GPUs on the same switch are PIX; None: a switch of its own
    numa_node: int | None = 0
    cpu_affinity: tuple[int, ...] | None = tuple(range(32))
    errors: dict[str, int] = field(default_factory=dict)  # function (C symbol) name -> NVML_ERROR_* code
    lost: bool = False
    mig_devices: list[FakeMig] = field(default_factory=list)  # answered while mig_mode's current mode is on
    max_mig_devices: int = 7  # nvmlDeviceGetMaxMigDeviceCount in MIG mode (7 on A100/H100/H200)

    @property
    def in_mig_mode(self) -> bool:
        return self.mig_mode is not None and self.mig_mode[0] == real.NVML_DEVICE_MIG_ENABLE


# What one instance of each H100 80GB profile holds: (SMs, GPU slices, memorySizeMB).
H100_PROFILES: dict[str, tuple[int, int, int]] = {
    "1g.10gb": (16, 1, 9_856),
    "1g.20gb": (26, 1, 19_968),
    "2g.20gb": (32, 2, 19_968),
    "3g.40gb": (60, 3, 40_192),
    "4g.40gb": (64, 4, 40_192),
    "7g.80gb": (132, 7, 80_384),
}
# A busy GPU instance, as `nvidia-smi dmon --gpm-metrics` reads one: GPM per instance has no NVLink metrics.
MIG_GPM: dict[int, float] = {
    metric: value
    for metric, value in H100_GPM.items()
    if metric not in (real.NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC, real.NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC)
}


@dataclass
class FakeMig:
    """One MIG device (a compute instance) as its own handle answers; sizes are the profile's on an H100 80GB."""

    profile: str = "3g.40gb"
    gpu_instance_id: int = 1
    compute_instance_id: int = 0
    slot: int = 0  # its index under nvmlDeviceGetMigDeviceHandleByIndex
    uuid: str = ""  # "" gets one made from the GPU's index and the slot
    sm_count: int = -1  # -1: the profile's
    slice_count: int = -1
    memory_size_mib: int = -1  # memorySizeMB of its attributes
    memory_used: int = 30_000 * MIB
    memory_reserved: int = 0
    compute_processes: list[tuple[int, int | None]] = field(default_factory=list)
    graphics_processes: list[tuple[int, int | None]] = field(default_factory=list)
    gpm: dict[int, float] | None = field(default_factory=lambda: dict(MIG_GPM))  # None: NotSupported
    errors: dict[str, int] = field(default_factory=dict)  # function (C symbol) name -> NVML_ERROR_* code
    destroyed: bool = False

    def __post_init__(self) -> None:
        sm, slices, size = H100_PROFILES.get(
            self.profile.split(".", 1)[-1] if "c." in self.profile else self.profile, (0, 0, 0)
        )
        self.sm_count = sm if self.sm_count == -1 else self.sm_count
        self.slice_count = slices if self.slice_count == -1 else self.slice_count
        self.memory_size_mib = size if self.memory_size_mib == -1 else self.memory_size_mib


@dataclass
class FakeMigHandle:
    """Stands in for the c_nvmlDevice_t of a MIG device: its parent's index and its slot."""

    index: int
    slot: int


def mig_gpu(
    profiles: Sequence[str] = ("3g.40gb", "3g.40gb"),
    processes: Sequence[Sequence[int]] = (),
    *,
    root: bool = True,
    pending: bool | None = None,
    **overrides: Any,
) -> FakeGpu:
    """An H100 in MIG mode with one instance per profile (GPU instance ids 1, 2, ... at slots 0, 1, ...), each
    running the pids of `processes` at its position (20 GB each); `pending` False: MIG off after the next reset;
    `root` False: the parent's memory and process lists answer NoPermission, as for a user who is not root."""
    devices = []
    for position, profile in enumerate(profiles):
        pids = processes[position] if position < len(processes) else ()
        devices.append(
            FakeMig(
                profile=profile,
                gpu_instance_id=position + 1,
                slot=position,
                compute_processes=[(pid, 20_000 * MIB) for pid in pids],
                memory_used=20_000 * MIB * len(pids) + 500 * MIB,
            )
        )
    mode = real.NVML_DEVICE_MIG_ENABLE
    pending_mode = mode if pending is None or pending else real.NVML_DEVICE_MIG_DISABLE
    errors: dict[str, int] = {}
    if not root:
        for symbol in (
            "nvmlDeviceGetMemoryInfo",
            "nvmlDeviceGetMemoryInfo_v2",
            "nvmlDeviceGetComputeRunningProcesses_v3",
            "nvmlDeviceGetComputeRunningProcesses_v2",
            "nvmlDeviceGetGraphicsRunningProcesses_v3",
            "nvmlDeviceGetGraphicsRunningProcesses_v2",
        ):
            errors[symbol] = real.NVML_ERROR_NO_PERMISSION
    values: dict[str, Any] = {
        "mig_mode": (mode, pending_mode),
        "mig_devices": devices,
        "memory_used": sum(device.memory_used for device in devices),
        "compute_processes": [],
        "process_samples": None,
        "errors": errors,
    }
    values.update(overrides)
    return FakeGpu(**values)


def consumer_gpu(**overrides: Any) -> FakeGpu:
    """A GeForce board: fans, but no ECC, serial, memory temperature, MIG, violation counters, app clocks."""
    values: dict[str, Any] = {
        "name": "NVIDIA GeForce RTX 4090",
        "serial": None,
        "memory_total": 24564 * MIB,
        "memory_used": 20_000 * MIB,
        "memory_reserved": 300 * MIB,
        "max_sm_clock": 3120,
        "sm_clock": 2520,
        "graphics_clock": 2520,
        "memory_clock": 10501,
        "max_memory_clock": 10501,
        "default_app_sm_clock": None,
        "default_app_memory_clock": None,
        "memory_temperature": None,
        "power_mw": 402_000,
        "enforced_limit_mw": 450_000,
        "default_limit_mw": 450_000,
        "limit_constraints_mw": (150_000, 600_000),
        "pcie_gen": 4,
        "pcie_max_gen": 4,
        "pcie_gpu_max_gen": 4,
        "fan": 64,
        "power_violation_ns": None,
        "thermal_violation_ns": None,
        "ecc_uncorrected": None,
        "remapped_rows": None,
        "mig_mode": None,
        "ecc_mode": None,
        "persistence_mode": real.NVML_FEATURE_DISABLED,
        "compute_processes": [(5151, None)],
        "process_samples": [(5151, 1_700_000_000_000_000, 64, 22)],
        "gpm": None,
        "nvlink_remotes": None,
    }
    values.update(overrides)
    return FakeGpu(**values)


class FakeNvml(types.ModuleType):
    """A module object that answers like pynvml for the GPUs it was given, and counts every call."""

    def __init__(
        self,
        gpus: Sequence[FakeGpu],
        *,
        driver_version: str = "550.54.15",
        nvml_version: str = "12.550.54.15",
        cuda_driver_version: int = 12040,
        init_error: int | None = None,
        count_error: int | None = None,
        old_driver: bool = False,
        missing: Iterable[str] = (),
    ):
        super().__init__("pynvml")
        for name, value in vars(real).items():
            if not inspect.isfunction(value) and not name.startswith("__"):
                setattr(self, name, value)
        self.gpus = list(gpus)
        for index, gpu in enumerate(self.gpus):
            gpu.uuid = gpu.uuid or f"GPU-6f2a1c3e-0000-4b1e-9a57-{index:012x}"
            for mig in gpu.mig_devices:
                mig.uuid = mig.uuid or f"MIG-5c1d2e3f-0000-4a1b-8c2d-{index:06x}{mig.slot:06x}"
            gpu.pci_bus_id = gpu.pci_bus_id or f"00000000:{0x18 + index * 0x10:02X}:00.0"
            gpu.minor_number = index if gpu.minor_number == -1 else gpu.minor_number
        self.driver_version = driver_version
        self.nvml_version = nvml_version
        self.cuda_driver_version = cuda_driver_version
        self.init_error = init_error
        self.count_error = count_error
        self.absent = NEW_FUNCTIONS | GPM_FUNCTIONS if old_driver else frozenset()
        missing = frozenset(missing)
        if missing:
            # A subclass whose missing names raise AttributeError, as in an nvidia-ml-py that predates them.
            self.__class__ = type("FakeNvml", (FakeNvml,), {name: _Missing() for name in missing})
        self.initialized = 0
        self.shutdowns = 0
        self.calls: Counter[tuple[str, int | None]] = Counter()
        self.event_sets: list[FakeEventSet] = []
        self.wait_cap_ms: int | None = None  # shortens every event wait, so tests need not sit it out
        # address -> (memory, ((GPU, GPU instance id or None), order)): what filled it, and when
        self.gpm_buffers: dict[int, tuple[Any, tuple[tuple[int, int | None], int] | None]] = {}
        self._gpm_order = itertools.count(1)

    # --- what tests read -------------------------------------------------------------------------------

    def count(self, name: str, index: int | None = None) -> int:
        """Calls of one function (for one GPU), including those that raised."""
        if index is not None:
            return self.calls[(name, index)]
        return sum(n for (fn, _), n in self.calls.items() if fn == name)

    # --- library and system ----------------------------------------------------------------------------

    def nvmlInit(self) -> None:
        self.calls[("nvmlInit", None)] += 1
        if self.init_error is not None:
            raise real.NVMLError(self.init_error)
        self.initialized += 1

    def nvmlShutdown(self) -> None:
        self.calls[("nvmlShutdown", None)] += 1
        self._require_init()
        self.initialized -= 1
        self.shutdowns += 1

    def nvmlSystemGetDriverVersion(self) -> str:
        self._require_init()
        return self.driver_version

    def nvmlSystemGetNVMLVersion(self) -> str:
        self._require_init()
        return self.nvml_version

    def nvmlSystemGetCudaDriverVersion(self) -> int:
        self._require_init()
        return self.cuda_driver_version

    def nvmlDeviceGetCount(self) -> int:
        self._require_init()
        if self.count_error is not None:
            raise real.NVMLError(self.count_error)
        return len(self.gpus)

    def nvmlDeviceGetHandleByIndex(self, index: int) -> FakeHandle:
        self._require_init()
        if not 0 <= index < len(self.gpus):
            raise real.NVMLError(real.NVML_ERROR_INVALID_ARGUMENT)
        self._enter(FakeHandle(index), "nvmlDeviceGetHandleByIndex")
        return FakeHandle(index)

    # --- static facts ----------------------------------------------------------------------------------

    def nvmlDeviceGetName(self, handle: FakeHandle | FakeMigHandle) -> str:
        if isinstance(handle, FakeMigHandle):
            gpu, mig = self._enter_mig(handle, "nvmlDeviceGetName")
            return f"{gpu.name} MIG {mig.profile}"
        return self._enter(handle, "nvmlDeviceGetName").name

    def nvmlDeviceGetUUID(self, handle: FakeHandle | FakeMigHandle) -> str:
        if isinstance(handle, FakeMigHandle):
            return self._enter_mig(handle, "nvmlDeviceGetUUID")[1].uuid
        return self._enter(handle, "nvmlDeviceGetUUID").uuid

    def nvmlDeviceGetMinorNumber(self, handle: FakeHandle) -> int:
        return int(_supported(self._enter(handle, "nvmlDeviceGetMinorNumber").minor_number))

    def nvmlDeviceGetSerial(self, handle: FakeHandle) -> str:
        return _supported(self._enter(handle, "nvmlDeviceGetSerial").serial)

    def nvmlDeviceGetPciInfo(self, handle: FakeHandle) -> Any:
        gpu = self._enter(handle, "nvmlDeviceGetPciInfo_v3")
        info = real.nvmlPciInfo_t()
        info.busId = gpu.pci_bus_id
        info.busIdLegacy = gpu.pci_bus_id
        return info

    def nvmlDeviceGetMaxClockInfo(self, handle: FakeHandle, clock: int) -> int:
        gpu = self._enter(handle, "nvmlDeviceGetMaxClockInfo")
        return {
            real.NVML_CLOCK_SM: gpu.max_sm_clock,
            real.NVML_CLOCK_MEM: gpu.max_memory_clock,
            real.NVML_CLOCK_GRAPHICS: gpu.max_graphics_clock,
        }[clock]

    def nvmlDeviceGetDefaultApplicationsClock(self, handle: FakeHandle, clock: int) -> int:
        gpu = self._enter(handle, "nvmlDeviceGetDefaultApplicationsClock")
        return _supported({real.NVML_CLOCK_SM: gpu.default_app_sm_clock}.get(clock, gpu.default_app_memory_clock))

    def nvmlDeviceGetMaxPcieLinkGeneration(self, handle: FakeHandle) -> int:
        return self._enter(handle, "nvmlDeviceGetMaxPcieLinkGeneration").pcie_max_gen

    def nvmlDeviceGetMaxPcieLinkWidth(self, handle: FakeHandle) -> int:
        return self._enter(handle, "nvmlDeviceGetMaxPcieLinkWidth").pcie_max_width

    def nvmlDeviceGetGpuMaxPcieLinkGeneration(self, handle: FakeHandle) -> int:
        return _supported(self._enter(handle, "nvmlDeviceGetGpuMaxPcieLinkGeneration").pcie_gpu_max_gen)

    def nvmlDeviceGetPowerManagementDefaultLimit(self, handle: FakeHandle) -> int:
        return self._enter(handle, "nvmlDeviceGetPowerManagementDefaultLimit").default_limit_mw

    def nvmlDeviceGetPowerManagementLimitConstraints(self, handle: FakeHandle) -> list[int]:
        return list(self._enter(handle, "nvmlDeviceGetPowerManagementLimitConstraints").limit_constraints_mw)

    def nvmlDeviceGetTemperatureThreshold(self, handle: FakeHandle, threshold: int) -> int:
        gpu = self._enter(handle, "nvmlDeviceGetTemperatureThreshold")
        return _supported(gpu.thresholds.get(threshold))

    def nvmlDeviceGetPersistenceMode(self, handle: FakeHandle) -> int:
        return self._enter(handle, "nvmlDeviceGetPersistenceMode").persistence_mode

    def nvmlDeviceGetComputeMode(self, handle: FakeHandle) -> int:
        return self._enter(handle, "nvmlDeviceGetComputeMode").compute_mode

    def nvmlDeviceGetMigMode(self, handle: FakeHandle) -> list[int]:
        return list(_supported(self._enter(handle, "nvmlDeviceGetMigMode").mig_mode))

    def nvmlDeviceGetEccMode(self, handle: FakeHandle) -> list[int]:
        return list(_supported(self._enter(handle, "nvmlDeviceGetEccMode").ecc_mode))

    # --- per tick --------------------------------------------------------------------------------------

    def nvmlDeviceGetUtilizationRates(self, handle: FakeHandle) -> Any:
        gpu = self._enter(handle, "nvmlDeviceGetUtilizationRates")
        if gpu.in_mig_mode:  # nvml.h: "On MIG-enabled GPUs, querying device utilization rates is not supported"
            raise real.NVMLError(real.NVML_ERROR_NOT_SUPPORTED)
        return real.c_nvmlUtilization_t(gpu=gpu.utilization_gpu, memory=gpu.utilization_memory)

    def nvmlDeviceGetClockInfo(self, handle: FakeHandle, clock: int) -> int:
        gpu = self._enter(handle, "nvmlDeviceGetClockInfo")
        return {
            real.NVML_CLOCK_SM: gpu.sm_clock,
            real.NVML_CLOCK_MEM: gpu.memory_clock,
            real.NVML_CLOCK_GRAPHICS: gpu.graphics_clock,
        }[clock]

    def nvmlDeviceGetTemperatureV(self, handle: FakeHandle, sensor: int, version: int = real.nvmlTemperature_v1) -> int:
        return self._enter(handle, "nvmlDeviceGetTemperatureV").temperature

    def nvmlDeviceGetTemperature(self, handle: FakeHandle, sensor: int) -> int:
        return self._enter(handle, "nvmlDeviceGetTemperature").temperature

    def nvmlDeviceGetFieldValues(self, handle: FakeHandle, field_ids: Sequence[int | tuple[int, int]]) -> Any:
        """Field ids bare or as (id, scopeId), as pynvml takes them; per-link fields read link 0 unless scoped."""
        gpu = self._enter(handle, "nvmlDeviceGetFieldValues")
        values = (real.c_nvmlFieldValue_t * len(field_ids))()
        for value, asked in zip(values, field_ids, strict=True):
            field_id, scope = asked if isinstance(asked, tuple) else (asked, 0)
            value.fieldId, value.scopeId = field_id, scope
            reading = _field_reading(gpu, field_id, scope)
            if reading is None:
                value.nvmlReturn = real.NVML_ERROR_NOT_SUPPORTED
            else:
                value.nvmlReturn = real.NVML_SUCCESS
                value.valueType, member = reading[0]
                setattr(value.value, member, reading[1])
        return values

    def nvmlDeviceGetPowerUsage(self, handle: FakeHandle) -> int:
        return self._enter(handle, "nvmlDeviceGetPowerUsage").power_mw

    def nvmlDeviceGetEnforcedPowerLimit(self, handle: FakeHandle) -> int:
        return self._enter(handle, "nvmlDeviceGetEnforcedPowerLimit").enforced_limit_mw

    def nvmlDeviceGetMemoryInfo(self, handle: FakeHandle | FakeMigHandle, version: int | None = None) -> Any:
        if isinstance(handle, FakeMigHandle):
            return self._mig_memory(handle, version)
        if not version:
            gpu = self._enter(handle, "nvmlDeviceGetMemoryInfo")
            used = gpu.memory_used + gpu.memory_reserved  # v1 counts reserved memory as used
            return real.c_nvmlMemory_t(total=gpu.memory_total, free=gpu.memory_total - used, used=used)
        gpu = self._enter(handle, "nvmlDeviceGetMemoryInfo_v2")
        return real.c_nvmlMemory_v2_t(
            version=version,
            total=gpu.memory_total,
            reserved=gpu.memory_reserved,
            free=gpu.memory_total - gpu.memory_used - gpu.memory_reserved,
            used=gpu.memory_used,
        )

    def nvmlDeviceGetCurrPcieLinkGeneration(self, handle: FakeHandle) -> int:
        return self._enter(handle, "nvmlDeviceGetCurrPcieLinkGeneration").pcie_gen

    def nvmlDeviceGetCurrPcieLinkWidth(self, handle: FakeHandle) -> int:
        return self._enter(handle, "nvmlDeviceGetCurrPcieLinkWidth").pcie_width

    def nvmlDeviceGetPcieReplayCounter(self, handle: FakeHandle) -> int:
        return _supported(self._enter(handle, "nvmlDeviceGetPcieReplayCounter").pcie_replay)

    def nvmlDeviceGetPcieThroughput(self, handle: FakeHandle, counter: int) -> int:
        gpu = self._enter(handle, "nvmlDeviceGetPcieThroughput")
        return _supported(gpu.pcie_tx_kbs if counter == real.NVML_PCIE_UTIL_TX_BYTES else gpu.pcie_rx_kbs)

    def nvmlDeviceGetFanSpeed(self, handle: FakeHandle) -> int:
        return _supported(self._enter(handle, "nvmlDeviceGetFanSpeed").fan)

    def nvmlDeviceGetPerformanceState(self, handle: FakeHandle) -> int:
        return self._enter(handle, "nvmlDeviceGetPerformanceState").pstate

    def nvmlDeviceGetPowerState(self, handle: FakeHandle) -> int:
        return self._enter(handle, "nvmlDeviceGetPowerState").pstate

    def nvmlDeviceGetCurrentClocksEventReasons(self, handle: FakeHandle) -> int:
        return self._enter(handle, "nvmlDeviceGetCurrentClocksEventReasons").clock_event_reasons

    def nvmlDeviceGetCurrentClocksThrottleReasons(self, handle: FakeHandle) -> int:
        return self._enter(handle, "nvmlDeviceGetCurrentClocksThrottleReasons").clock_event_reasons

    def nvmlDeviceGetViolationStatus(self, handle: FakeHandle, policy: int) -> Any:
        gpu = self._enter(handle, "nvmlDeviceGetViolationStatus")
        ns = gpu.power_violation_ns if policy == real.NVML_PERF_POLICY_POWER else gpu.thermal_violation_ns
        return real.c_nvmlViolationTime_t(referenceTime=gpu.violation_reference_us, violationTime=_supported(ns))

    def nvmlDeviceGetTotalEnergyConsumption(self, handle: FakeHandle) -> int:
        return _supported(self._enter(handle, "nvmlDeviceGetTotalEnergyConsumption").energy_mj)

    def nvmlDeviceGetEncoderUtilization(self, handle: FakeHandle) -> list[int]:
        return [_supported(self._enter(handle, "nvmlDeviceGetEncoderUtilization").encoder), 167_000]

    def nvmlDeviceGetDecoderUtilization(self, handle: FakeHandle) -> list[int]:
        return [_supported(self._enter(handle, "nvmlDeviceGetDecoderUtilization").decoder), 167_000]

    def nvmlDeviceGetTotalEccErrors(self, handle: FakeHandle, error_type: int, counter_type: int) -> int:
        return _supported(self._enter(handle, "nvmlDeviceGetTotalEccErrors").ecc_uncorrected)

    def nvmlDeviceGetRetiredPagesPendingStatus(self, handle: FakeHandle) -> int:
        return _supported(self._enter(handle, "nvmlDeviceGetRetiredPagesPendingStatus").retired_pages_pending)

    def nvmlDeviceGetRemappedRows(self, handle: FakeHandle) -> tuple[int, int, int, int]:
        return _supported(self._enter(handle, "nvmlDeviceGetRemappedRows").remapped_rows)

    def nvmlDeviceGetComputeRunningProcesses_v3(self, handle: FakeHandle | FakeMigHandle) -> list[Any]:
        return self._process_list(handle, "nvmlDeviceGetComputeRunningProcesses_v3", "compute_processes")

    def nvmlDeviceGetComputeRunningProcesses_v2(self, handle: FakeHandle | FakeMigHandle) -> list[Any]:
        return self._process_list(handle, "nvmlDeviceGetComputeRunningProcesses_v2", "compute_processes")

    def nvmlDeviceGetGraphicsRunningProcesses_v3(self, handle: FakeHandle | FakeMigHandle) -> list[Any]:
        return self._process_list(handle, "nvmlDeviceGetGraphicsRunningProcesses_v3", "graphics_processes")

    def nvmlDeviceGetGraphicsRunningProcesses_v2(self, handle: FakeHandle | FakeMigHandle) -> list[Any]:
        return self._process_list(handle, "nvmlDeviceGetGraphicsRunningProcesses_v2", "graphics_processes")

    def nvmlDeviceGetProcessUtilization(self, handle: FakeHandle, timeStamp: int) -> list[Any]:
        gpu = self._enter(handle, "nvmlDeviceGetProcessUtilization")
        samples = _supported(None if gpu.in_mig_mode else gpu.process_samples)
        newer = [s for s in samples if s[1] > timeStamp]
        if not newer:
            raise real.NVMLError(real.NVML_ERROR_NOT_FOUND)
        return [
            real.c_nvmlProcessUtilizationSample_t(pid=pid, timeStamp=stamp, smUtil=sm, memUtil=mem)
            for pid, stamp, sm, mem in newer
        ]

    # --- NVLink and topology ------------------------------------------------------------------------------

    def nvmlDeviceGetNvLinkState(self, device: FakeHandle, link: int) -> int:
        gpu, _ = self._link(device, link, "nvmlDeviceGetNvLinkState")
        return real.NVML_FEATURE_DISABLED if link in gpu.nvlink_down else real.NVML_FEATURE_ENABLED

    def nvmlDeviceGetNvLinkVersion(self, device: FakeHandle, link: int) -> int:
        return self._link(device, link, "nvmlDeviceGetNvLinkVersion")[0].nvlink_version

    def nvmlDeviceGetNvLinkRemotePciInfo(self, device: FakeHandle, link: int) -> Any:
        _, remote = self._link(device, link, "nvmlDeviceGetNvLinkRemotePciInfo_v2")
        info = real.nvmlPciInfo_t()
        info.busId = SWITCH_BUS_ID if remote == "NVSwitch" else remote
        return info

    def nvmlDeviceGetNvLinkRemoteDeviceType(self, handle: FakeHandle, link: int) -> int:
        _, remote = self._link(handle, link, "nvmlDeviceGetNvLinkRemoteDeviceType")
        return real.NVML_NVLINK_DEVICE_TYPE_SWITCH if remote == "NVSwitch" else real.NVML_NVLINK_DEVICE_TYPE_GPU

    def nvmlDeviceGetNvLinkErrorCounter(self, device: FakeHandle, link: int, counter: int) -> int:
        gpu, _ = self._link(device, link, "nvmlDeviceGetNvLinkErrorCounter")
        return gpu.nvlink_errors.get((link, counter), 0)

    def nvmlDeviceGetTopologyCommonAncestor(self, device1: FakeHandle, device2: FakeHandle) -> int:
        first = self._enter(device1, "nvmlDeviceGetTopologyCommonAncestor")
        second = self._enter(device2, "nvmlDeviceGetTopologyCommonAncestor")
        if first.socket != second.socket:
            return real.NVML_TOPOLOGY_SYSTEM
        if first.pcie_switch is not None and first.pcie_switch == second.pcie_switch:
            return real.NVML_TOPOLOGY_SINGLE
        return real.NVML_TOPOLOGY_HOSTBRIDGE

    def nvmlDeviceGetP2PStatus(self, device1: FakeHandle, device2: FakeHandle, p2pIndex: int) -> int:
        if not isinstance(p2pIndex, int):  # ctypes refuses the tuple NVML_P2P_CAPS_INDEX_READ is
            raise ctypes.ArgumentError(f"argument 3: wrong type {type(p2pIndex).__name__}")
        first = self._enter(device1, "nvmlDeviceGetP2PStatus")
        second = self._enter(device2, "nvmlDeviceGetP2PStatus")
        if first.socket == second.socket or (first.nvlink_remotes and second.nvlink_remotes):
            return real.NVML_P2P_STATUS_OK
        return real.NVML_P2P_STATUS_CHIPSET_NOT_SUPPORTED

    def nvmlDeviceGetCpuAffinity(self, handle: FakeHandle, cpuSetSize: int) -> Any:
        cpus = _supported(self._enter(handle, "nvmlDeviceGetCpuAffinity").cpu_affinity)
        words = (ctypes.c_ulonglong * cpuSetSize)()
        for cpu in cpus:
            if cpu < 64 * cpuSetSize:
                words[cpu // 64] |= 1 << (cpu % 64)
        return words

    def nvmlDeviceGetNumaNodeId(self, handle: FakeHandle) -> int:
        return int(_supported(self._enter(handle, "nvmlDeviceGetNumaNodeId").numa_node))

    def _link(self, handle: FakeHandle, link: int, symbol: str) -> tuple[FakeGpu, str]:
        """NotSupported without NVLink, InvalidArgument past the GPU's last link (not NVML_NVLINK_MAX_LINKS)."""
        gpu = self._enter(handle, symbol)
        remotes = _supported(gpu.nvlink_remotes)
        if not 0 <= link < len(remotes):
            raise real.NVMLError(real.NVML_ERROR_INVALID_ARGUMENT)
        return gpu, remotes[link]

    # --- MIG -------------------------------------------------------------------------------------------

    def nvmlDeviceGetMaxMigDeviceCount(self, device: FakeHandle) -> int:
        """nvml.h: "Returns zero if MIG is not supported or enabled"."""
        gpu = self._enter(device, "nvmlDeviceGetMaxMigDeviceCount")
        return gpu.max_mig_devices if gpu.in_mig_mode else 0

    def nvmlDeviceGetMigDeviceHandleByIndex(self, device: FakeHandle, index: int) -> FakeMigHandle:
        gpu = self._enter(device, "nvmlDeviceGetMigDeviceHandleByIndex")
        if not gpu.in_mig_mode:
            raise real.NVMLError(real.NVML_ERROR_NOT_SUPPORTED)
        if not 0 <= index < gpu.max_mig_devices:
            raise real.NVMLError(real.NVML_ERROR_INVALID_ARGUMENT)
        if not any(mig.slot == index and not mig.destroyed for mig in gpu.mig_devices):
            raise real.NVMLError(real.NVML_ERROR_NOT_FOUND)
        return FakeMigHandle(device.index, index)

    def nvmlDeviceGetGpuInstanceId(self, device: FakeMigHandle) -> int:
        return self._enter_mig(device, "nvmlDeviceGetGpuInstanceId")[1].gpu_instance_id

    def nvmlDeviceGetComputeInstanceId(self, device: FakeMigHandle) -> int:
        return self._enter_mig(device, "nvmlDeviceGetComputeInstanceId")[1].compute_instance_id

    def nvmlDeviceGetAttributes(self, device: FakeMigHandle) -> Any:
        """nvml.h: "This API currently only supports MIG device handles"."""
        if not isinstance(device, FakeMigHandle):
            self._enter(device, "nvmlDeviceGetAttributes_v2")
            raise real.NVMLError(real.NVML_ERROR_NOT_SUPPORTED)
        _, mig = self._enter_mig(device, "nvmlDeviceGetAttributes_v2")
        return real.c_nvmlDeviceAttributes(
            multiprocessorCount=mig.sm_count,
            sharedCopyEngineCount=mig.slice_count,
            sharedDecoderCount=mig.slice_count // 2,
            sharedEncoderCount=0,
            sharedJpegCount=mig.slice_count // 3,
            sharedOfaCount=mig.slice_count // 7,
            gpuInstanceSliceCount=mig.slice_count,
            computeInstanceSliceCount=mig.slice_count,
            memorySizeMB=mig.memory_size_mib,
        )

    def _mig_memory(self, handle: FakeMigHandle, version: int | None) -> Any:
        if not version:
            _, mig = self._enter_mig(handle, "nvmlDeviceGetMemoryInfo")
            total, used = mig.memory_size_mib * MIB, mig.memory_used + mig.memory_reserved
            return real.c_nvmlMemory_t(total=total, free=total - used, used=used)
        _, mig = self._enter_mig(handle, "nvmlDeviceGetMemoryInfo_v2")
        total = mig.memory_size_mib * MIB
        return real.c_nvmlMemory_v2_t(
            version=version,
            total=total,
            reserved=mig.memory_reserved,
            free=total - mig.memory_used - mig.memory_reserved,
            used=mig.memory_used,
        )

    def _process_list(self, handle: FakeHandle | FakeMigHandle, symbol: str, kind: str) -> list[Any]:
        """An instance's own processes; on the parent in MIG mode, every live instance's, with their ids."""
        if isinstance(handle, FakeMigHandle):
            _, mig = self._enter_mig(handle, symbol)
            return _processes(getattr(mig, kind), mig.gpu_instance_id, mig.compute_instance_id)
        gpu = self._enter(handle, symbol)
        if not gpu.in_mig_mode:
            return _processes(getattr(gpu, kind))
        listed = []
        for mig in gpu.mig_devices:
            if not mig.destroyed:
                listed.extend(_processes(getattr(mig, kind), mig.gpu_instance_id, mig.compute_instance_id))
        return listed

    @staticmethod
    def _instance(gpu: FakeGpu, gpu_instance_id: int) -> FakeMig | None:
        for mig in gpu.mig_devices:
            if mig.gpu_instance_id == gpu_instance_id and not mig.destroyed:
                return mig
        return None

    def _enter_mig(self, handle: FakeMigHandle, symbol: str) -> tuple[FakeGpu, FakeMig]:
        """Count the call (under the parent's index) and raise what the driver would for this MIG handle: the
        parent's errors where lost, InvalidArgument for an instance destroyed since the handle was given."""
        gpu = self._enter(FakeHandle(handle.index), symbol, mig=True)
        for mig in gpu.mig_devices:
            if mig.slot == handle.slot and not mig.destroyed and gpu.in_mig_mode:
                if symbol in mig.errors:
                    raise real.NVMLError(mig.errors[symbol])
                return gpu, mig
        raise real.NVMLError(real.NVML_ERROR_INVALID_ARGUMENT)

    # --- GPM -------------------------------------------------------------------------------------------

    def nvmlGpmQueryDeviceSupport(self, handle: FakeHandle) -> Any:
        gpu = self._enter(handle, "nvmlGpmQueryDeviceSupport")
        return real.c_nvmlGpmSupport_t(
            version=real.NVML_GPM_SUPPORT_VERSION, isSupportedDevice=int(gpu.gpm is not None)
        )

    def nvmlGpmSampleAlloc(self) -> Any:
        self._count_library("nvmlGpmSampleAlloc")
        memory = ctypes.create_string_buffer(16)
        sample = ctypes.cast(memory, real.c_nvmlGpmSample_t)
        self.gpm_buffers[_address(sample)] = (memory, None)
        return sample

    def nvmlGpmSampleFree(self, sample: Any) -> None:
        self._count_library("nvmlGpmSampleFree")
        if self.gpm_buffers.pop(_address(sample), None) is None:
            raise real.NVMLError(real.NVML_ERROR_INVALID_ARGUMENT)

    def nvmlGpmSampleGet(self, handle: FakeHandle, sample: Any) -> Any:
        if self._enter(handle, "nvmlGpmSampleGet").in_mig_mode:  # MIG mode: GPM per GPU instance only
            raise real.NVMLError(real.NVML_ERROR_NOT_SUPPORTED)
        memory, _ = self._gpm_buffer(sample)
        self.gpm_buffers[_address(sample)] = (memory, ((handle.index, None), next(self._gpm_order)))
        return sample

    def nvmlGpmMigSampleGet(self, device: FakeHandle, gpuInstanceId: int, gpmSample: Any) -> Any:
        gpu = self._enter(device, "nvmlGpmMigSampleGet")
        if not gpu.in_mig_mode or self._instance(gpu, gpuInstanceId) is None:
            raise real.NVMLError(real.NVML_ERROR_NOT_FOUND)
        memory, _ = self._gpm_buffer(gpmSample)
        self.gpm_buffers[_address(gpmSample)] = (memory, ((device.index, gpuInstanceId), next(self._gpm_order)))
        return gpmSample

    def nvmlGpmMetricsGet(self, request: Any) -> Any:
        if request.version != real.NVML_GPM_METRICS_GET_VERSION:
            raise real.NVMLError(real.NVML_ERROR_ARGUMENT_VERSION_MISMATCH)
        _, first = self._gpm_buffer(request.sample1)
        _, second = self._gpm_buffer(request.sample2)
        if first is None or second is None or first[0] != second[0] or first[1] >= second[1]:
            raise real.NVMLError(real.NVML_ERROR_INVALID_ARGUMENT)
        (index, gpu_instance_id), _ = first
        gpu = self._enter(FakeHandle(index), "nvmlGpmMetricsGet")
        if gpu_instance_id is None:
            values = _supported(gpu.gpm)
        else:
            instance = self._instance(gpu, gpu_instance_id)
            values = _supported(instance.gpm if instance is not None else None)
        # The driver fills the slots in C; the fake writes them through ctypes itself, not pynvml's Python
        # __setattr__ and __getattribute__, so that the benchmarks time the reader rather than the fake.
        metrics = _raw_get(request, "metrics")
        for i in range(_raw_get(request, "numMetrics")):
            metric = metrics[i]
            metric_id = _raw_get(metric, "metricId")
            code = gpu.gpm_returns.get(metric_id, real.NVML_SUCCESS)
            if code == real.NVML_SUCCESS and metric_id not in values:
                code = real.NVML_ERROR_NOT_SUPPORTED
            _raw_set(metric, "nvmlReturn", code)
            _raw_set(metric, "value", values[metric_id] if code == real.NVML_SUCCESS else 0.0)
        return request

    def _gpm_buffer(self, sample: Any) -> tuple[Any, tuple[tuple[int, int | None], int] | None]:
        buffer = self.gpm_buffers.get(_address(sample))
        if buffer is None:
            raise real.NVMLError(real.NVML_ERROR_INVALID_ARGUMENT)
        return buffer

    # --- events --------------------------------------------------------------------------------------------

    def nvmlEventSetCreate(self) -> FakeEventSet:
        self.calls[("nvmlEventSetCreate", None)] += 1
        self._require_init()
        event_set = FakeEventSet()
        self.event_sets.append(event_set)
        return event_set

    def nvmlDeviceGetSupportedEventTypes(self, handle: FakeHandle) -> int:
        return _supported(self._enter(handle, "nvmlDeviceGetSupportedEventTypes").event_types)

    def nvmlDeviceRegisterEvents(self, handle: FakeHandle, event_types: int, event_set: FakeEventSet) -> None:
        gpu = self._enter(handle, "nvmlDeviceRegisterEvents")
        if event_types & ~_supported(gpu.event_types):
            raise real.NVMLError(real.NVML_ERROR_NOT_SUPPORTED)
        with event_set.cond:
            event_set.registered[handle.index] = event_set.registered.get(handle.index, 0) | event_types

    def nvmlEventSetWait_v2(self, event_set: FakeEventSet, timeoutms: int) -> FakeEventData:
        """Block up to `timeoutms` for the next event, then raise Timeout, as the driver does."""
        self.calls[("nvmlEventSetWait_v2", None)] += 1
        self._require_init()
        with event_set.cond:
            if event_set.freed:
                raise real.NVMLError(real.NVML_ERROR_INVALID_ARGUMENT)
            event_set.waiting = True
            event_set.cond.notify_all()
            cap = timeoutms if self.wait_cap_ms is None else min(timeoutms, self.wait_cap_ms)
            event_set.cond.wait_for(lambda: bool(event_set.pending), cap / 1000)
            event_set.waiting = False
            if not event_set.pending:
                raise real.NVMLError(real.NVML_ERROR_TIMEOUT)
            item = event_set.pending.popleft()
        if isinstance(item, int):
            raise real.NVMLError(item)
        return item

    def nvmlEventSetFree(self, event_set: FakeEventSet) -> None:
        self.calls[("nvmlEventSetFree", None)] += 1
        self._require_init()
        with event_set.cond:
            event_set.freed = True
            event_set.cond.notify_all()

    def push_xid(self, index: int, code: int) -> None:
        """The driver reports XID `code` on GPU `index`: every live set it is registered on receives it."""
        for event_set in self.event_sets:
            with event_set.cond:
                registered = event_set.registered.get(index, 0)
                if not event_set.freed and registered & real.nvmlEventTypeXidCriticalError:
                    data = FakeEventData(FakeHandle(index), real.nvmlEventTypeXidCriticalError, code)
                    event_set.pending.append(data)
                    event_set.cond.notify_all()

    def fail_wait(self, code: int) -> None:
        """The next wait on each live event set raises NVMLError(code)."""
        for event_set in self.event_sets:
            with event_set.cond:
                if not event_set.freed:
                    event_set.pending.append(code)
                    event_set.cond.notify_all()

    def settle(self, timeout: float = 2.0) -> bool:
        """Wait until each live set's thread has taken all that was pushed and is waiting again."""
        for event_set in self.event_sets:
            with event_set.cond:
                done = event_set.cond.wait_for(event_set.idle, timeout)
            if not done:
                return False
        return True

    # --- plumbing --------------------------------------------------------------------------------------

    def _count_library(self, symbol: str) -> None:
        """A call that names no GPU: counted, and refused before init or by an old driver."""
        self.calls[(symbol, None)] += 1
        self._require_init()
        if symbol in self.absent:
            raise real.NVMLError(real.NVML_ERROR_FUNCTION_NOT_FOUND)

    def _require_init(self) -> None:
        if self.initialized <= 0:
            raise real.NVMLError(real.NVML_ERROR_UNINITIALIZED)

    def _enter(self, handle: FakeHandle | FakeMigHandle, symbol: str, mig: bool = False) -> FakeGpu:
        """Count the call and raise what the driver would raise for it on this GPU; a MIG handle given to a
        question of the whole GPU gets NotSupported, and the parent's own `errors` do not reach its instances."""
        self.calls[(symbol, handle.index)] += 1
        self._require_init()
        if symbol in self.absent:
            raise real.NVMLError(real.NVML_ERROR_FUNCTION_NOT_FOUND)
        gpu = self.gpus[handle.index]
        if gpu.lost:
            raise real.NVMLError(real.NVML_ERROR_GPU_IS_LOST)
        if isinstance(handle, FakeMigHandle):
            raise real.NVMLError(real.NVML_ERROR_NOT_SUPPORTED)
        if symbol in gpu.errors and (not mig or gpu.errors[symbol] == real.NVML_ERROR_FUNCTION_NOT_FOUND):
            raise real.NVMLError(gpu.errors[symbol])
        return gpu


@dataclass
class FakeEventData:
    """Stands in for c_nvmlEventData_t, with its field names."""

    device: FakeHandle
    eventType: int
    eventData: int
    gpuInstanceId: int = 0xFFFFFFFF
    computeInstanceId: int = 0xFFFFFFFF


class FakeEventSet:
    """Stands in for c_nvmlEventSet_t: the GPUs registered on it and what waits to be delivered.

    `pending` holds events, and NVML error codes that the wait raises in their turn.
    """

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.registered: dict[int, int] = {}  # GPU index -> event types
        self.pending: deque[FakeEventData | int] = deque()
        self.waiting = False
        self.freed = False

    def idle(self) -> bool:
        """Nothing left to deliver, and the waiting thread is back in the wait (or the set is gone)."""
        return self.freed or (not self.pending and self.waiting)


class _Missing:
    def __get__(self, obj: object, owner: type | None = None) -> Any:
        raise AttributeError("not in this pynvml")


def _address(sample: Any) -> int:
    return ctypes.cast(sample, ctypes.c_void_p).value or 0


def _supported(value: Any) -> Any:
    if value is None:
        raise real.NVMLError(real.NVML_ERROR_NOT_SUPPORTED)
    return value


def _field_reading(gpu: FakeGpu, field_id: int, scope: int) -> tuple[tuple[int, str], int] | None:
    """((value type, union member), value) for the fields the fake knows; None: NotSupported."""
    uint, ull = (real.NVML_VALUE_TYPE_UNSIGNED_INT, "uiVal"), (real.NVML_VALUE_TYPE_UNSIGNED_LONG_LONG, "ullVal")
    if field_id == real.NVML_FI_DEV_MEMORY_TEMP:
        return (uint, gpu.memory_temperature) if gpu.memory_temperature is not None else None
    if gpu.nvlink_remotes is None:
        return None
    if field_id == real.NVML_FI_DEV_NVLINK_LINK_COUNT:
        return uint, len(gpu.nvlink_remotes)
    if field_id in gpu.nvlink_error_fields:
        counter = gpu.nvlink_error_fields[field_id]
        return ull, sum(count for (_, kind), count in gpu.nvlink_errors.items() if kind == counter)
    totals = {
        real.NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX: gpu.nvlink_rx_kib,
        real.NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX: gpu.nvlink_tx_kib,
    }
    if field_id in totals:
        share = 1 if scope == ALL_LINKS else len(gpu.nvlink_remotes)  # one link's part when scoped to a link
        return ull, totals[field_id] // share
    return None


def _processes(
    entries: list[tuple[int, int | None]], gpu_instance_id: int = 0xFFFFFFFF, compute_instance_id: int = 0xFFFFFFFF
) -> list[Any]:
    """nvmlFriendlyObjects as pynvml makes them of nvmlProcessInfo_t; the ids are 0xFFFFFFFF off MIG (nvml.h)."""
    return [
        real.nvmlFriendlyObject(
            {
                "pid": pid,
                "usedGpuMemory": used,
                "gpuInstanceId": gpu_instance_id,
                "computeInstanceId": compute_instance_id,
            }
        )
        for pid, used in entries
    ]
