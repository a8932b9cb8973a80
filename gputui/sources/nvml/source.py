"""Live readings from the NVIDIA driver through nvidia-ml-py (the `pynvml` module); never spawns nvidia-smi.

NVML is started once; handles, the static facts of each GPU and the queries worth asking are made once in
`open()`. Every reading goes through the query helper (query.py) and its one error policy: a reading the GPU does
not give is None and not asked again, a renamed function falls back to its deprecated name, a passing failure costs
that reading one tick, and a GPU that falls off the bus is marked lost while the others go on. Process lists, PCIe
throughput (each a 20 ms window in the driver), the health counters and NVLink state and errors are read every
`slow_every` ticks and reused between. How the GPUs connect (`SystemInfo.topology`) is read once, after every GPU
is open. XID errors are events, caught between ticks by an `XidWatcher` thread and handed to the next sample.
A MIG-capable GPU's mode and instances are read by a `MigReader` (mig.py); in MIG mode the GPU's processes are its
instances', and when this process was given one MIG slice (SystemInfo.mig_slice) only the GPU holding it is kept.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import platform
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from gputui.model import XID_UNWATCHED, GpmValues, GpuInfo, GpuProcess, GpuSample, Snapshot, SystemInfo, Topology
from gputui.sources.base import InvalidGpuSelection, SourceUnavailable, machine_name
from gputui.sources.host import procfs
from gputui.sources.host.numa import numa_nodes
from gputui.sources.host.process_join import ProcessJoin
from gputui.sources.host.source import HostSource
from gputui.sources.host.visible import mig_slice, old_mig_name
from gputui.sources.nvml.efficiency import GpmReader, ProcessUtilization
from gputui.sources.nvml.events import DEFAULT_WAIT_MS, XidWatcher
from gputui.sources.nvml.links import NvLinkCounters, NvLinkReader, read_topology, resolve_remotes
from gputui.sources.nvml.mig import MigReader, share_out
from gputui.sources.nvml.processes import COMPUTE_PROCESSES, GRAPHICS_PROCESSES, merge_processes
from gputui.sources.nvml.query import Fields, GpuLost, Nvml, Query, Verdict

KIB = 1024  # nvmlDeviceGetPcieThroughput reports KB/s, which NVML means as KiB/s
LAST_PSTATE = 15  # P15; NVML_PSTATE_UNKNOWN (32) and anything else is not a P-state
COMPUTE_MODES = {0: "default", 1: "exclusive_thread", 2: "prohibited", 3: "exclusive_process"}

# What a user can do about each reason NVML will not start, by pynvml exception class name.
INIT_ERRORS = {
    "NVMLError_LibraryNotFound": (
        "no NVIDIA driver found: libnvidia-ml.so.1 could not be loaded "
        "(install the NVIDIA driver, or in a container run with GPU access, e.g. docker --gpus all)"
    ),
    "NVMLError_DriverNotLoaded": (
        "the NVIDIA driver is installed but its kernel module is not loaded "
        "(load it with 'sudo modprobe nvidia' or reboot; 'dmesg | grep -i nvidia' says why it failed)"
    ),
    "NVMLError_LibRmVersionMismatch": (
        "the NVIDIA driver library and the loaded kernel module are different versions, usually after a "
        "driver upgrade: reboot, or reload the module ('sudo rmmod nvidia_uvm nvidia_drm nvidia_modeset "
        "nvidia && sudo modprobe nvidia')"
    ),
    "NVMLError_NoPermission": (
        "no permission to read the NVIDIA driver: check access to /dev/nvidia* "
        "(your user may need to be in the 'video' group; in a container, run with GPU access)"
    ),
}
NO_DEVICES = "the NVIDIA driver is running but reports no GPUs (check 'lspci | grep -i nvidia' and 'dmesg')"
STOP_WAIT_S = 0.3  # how long close() waits for an XID thread in a long wait (a short one is waited out)


def cuda_version(encoded: int | None) -> str | None:
    """12040 -> "12.4", as nvmlSystemGetCudaDriverVersion encodes it."""
    if encoded is None:
        return None
    return f"{encoded // 1000}.{(encoded % 1000) // 10}"


def _sampled_queries(nvml: Nvml, handle: Any) -> dict[str, Query]:
    """One GPU's readings of each tick and of the slow ticks, by key; each query's variants newest first."""
    pynvml = nvml.pynvml

    def one(name: str, *args: Any) -> Query:
        return nvml.query(nvml.function(name, handle, *args))

    def newest_first(*names: str, args: tuple[Any, ...] = ()) -> Query:
        return nvml.query(*nvml.variants(names, handle, *args))

    return {
        # every tick
        "utilization": one("nvmlDeviceGetUtilizationRates"),
        "sm_clock": one("nvmlDeviceGetClockInfo", pynvml.NVML_CLOCK_SM),
        "memory_clock": one("nvmlDeviceGetClockInfo", pynvml.NVML_CLOCK_MEM),
        "graphics_clock": one("nvmlDeviceGetClockInfo", pynvml.NVML_CLOCK_GRAPHICS),
        "temperature": newest_first(
            "nvmlDeviceGetTemperatureV", "nvmlDeviceGetTemperature", args=(pynvml.NVML_TEMPERATURE_GPU,)
        ),
        "power": one("nvmlDeviceGetPowerUsage"),
        "power_limit": one("nvmlDeviceGetEnforcedPowerLimit"),
        "memory": nvml.query(*nvml.memory_info(handle)),
        "pcie_gen": one("nvmlDeviceGetCurrPcieLinkGeneration"),
        "pcie_width": one("nvmlDeviceGetCurrPcieLinkWidth"),
        "pcie_replay": one("nvmlDeviceGetPcieReplayCounter"),
        "fan": one("nvmlDeviceGetFanSpeed"),
        "pstate": newest_first("nvmlDeviceGetPerformanceState", "nvmlDeviceGetPowerState"),
        "clock_events": newest_first(
            "nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons"
        ),
        "power_violation": one("nvmlDeviceGetViolationStatus", pynvml.NVML_PERF_POLICY_POWER),
        "thermal_violation": one("nvmlDeviceGetViolationStatus", pynvml.NVML_PERF_POLICY_THERMAL),
        "energy": one("nvmlDeviceGetTotalEnergyConsumption"),
        "encoder": one("nvmlDeviceGetEncoderUtilization"),
        "decoder": one("nvmlDeviceGetDecoderUtilization"),
        # every `slow_every` ticks
        "compute_processes": nvml.query(*nvml.variants(COMPUTE_PROCESSES, handle)),
        "graphics_processes": nvml.query(*nvml.variants(GRAPHICS_PROCESSES, handle)),
        "pcie_tx": one("nvmlDeviceGetPcieThroughput", pynvml.NVML_PCIE_UTIL_TX_BYTES),
        "pcie_rx": one("nvmlDeviceGetPcieThroughput", pynvml.NVML_PCIE_UTIL_RX_BYTES),
        "ecc_uncorrected": one(
            "nvmlDeviceGetTotalEccErrors", pynvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED, pynvml.NVML_VOLATILE_ECC
        ),
        "retired_pages_pending": one("nvmlDeviceGetRetiredPagesPendingStatus"),
        "remapped_rows": one("nvmlDeviceGetRemappedRows"),
    }


def _read_info(nvml: Nvml, index: int, handle: Any, memory: Query) -> GpuInfo:
    """The facts that do not change while the driver runs, each asked once."""
    pynvml = nvml.pynvml

    def ask(name: str, *args: Any) -> Any:
        return nvml.ask(name, handle, *args)

    def threshold(name: str) -> Any:
        kind = getattr(pynvml, name, None)
        return ask("nvmlDeviceGetTemperatureThreshold", kind) if kind is not None else None

    pci = ask("nvmlDeviceGetPciInfo")
    total = memory()
    constraints = ask("nvmlDeviceGetPowerManagementLimitConstraints")
    mig = ask("nvmlDeviceGetMigMode")
    ecc = ask("nvmlDeviceGetEccMode")
    persistence = ask("nvmlDeviceGetPersistenceMode")
    compute_mode = ask("nvmlDeviceGetComputeMode")
    return GpuInfo(
        index=index,
        name=ask("nvmlDeviceGetName") or "unknown",
        uuid=ask("nvmlDeviceGetUUID"),
        serial=ask("nvmlDeviceGetSerial"),
        pci_bus_id=pci.busId if pci is not None else None,
        minor_number=ask("nvmlDeviceGetMinorNumber"),
        memory_total_bytes=total.total if total is not None else None,
        max_sm_clock_mhz=ask("nvmlDeviceGetMaxClockInfo", pynvml.NVML_CLOCK_SM),
        max_memory_clock_mhz=ask("nvmlDeviceGetMaxClockInfo", pynvml.NVML_CLOCK_MEM),
        max_graphics_clock_mhz=ask("nvmlDeviceGetMaxClockInfo", pynvml.NVML_CLOCK_GRAPHICS),
        default_app_sm_clock_mhz=ask("nvmlDeviceGetDefaultApplicationsClock", pynvml.NVML_CLOCK_SM),
        default_app_memory_clock_mhz=ask("nvmlDeviceGetDefaultApplicationsClock", pynvml.NVML_CLOCK_MEM),
        pcie_max_gen=ask("nvmlDeviceGetMaxPcieLinkGeneration"),
        pcie_max_width=ask("nvmlDeviceGetMaxPcieLinkWidth"),
        pcie_gpu_max_gen=ask("nvmlDeviceGetGpuMaxPcieLinkGeneration"),
        power_default_limit_w=_watts(ask("nvmlDeviceGetPowerManagementDefaultLimit")),
        power_min_limit_w=_watts(constraints[0]) if constraints is not None else None,
        power_max_limit_w=_watts(constraints[1]) if constraints is not None else None,
        temperature_slowdown_c=threshold("NVML_TEMPERATURE_THRESHOLD_SLOWDOWN"),
        temperature_shutdown_c=threshold("NVML_TEMPERATURE_THRESHOLD_SHUTDOWN"),
        temperature_gpu_max_c=threshold("NVML_TEMPERATURE_THRESHOLD_GPU_MAX"),
        temperature_memory_max_c=threshold("NVML_TEMPERATURE_THRESHOLD_MEM_MAX"),
        persistence_mode=bool(persistence) if persistence is not None else None,
        compute_mode=COMPUTE_MODES.get(compute_mode) if compute_mode is not None else None,
        mig_mode=bool(mig[0]) if mig is not None else None,
        ecc_mode=bool(ecc[0]) if ecc is not None else None,
    )


@dataclass(slots=True)
class _Gpu:
    """One GPU's handle, static facts, the queries still worth asking, and the slow values last read."""

    index: int
    handle: Any = None
    queries: dict[str, Query] = field(default_factory=dict)
    memory_temperature: Fields | None = None
    info: GpuInfo | None = None
    lost: str | None = None
    processes: tuple[GpuProcess, ...] = ()
    pcie_tx_bytes_s: float | None = None
    pcie_rx_bytes_s: float | None = None
    ecc_uncorrected: int | None = None
    retired_pages_pending: bool | None = None
    gpm: GpmReader | None = None
    process_utilization: ProcessUtilization | None = None
    nvlink: NvLinkReader | None = None
    nvlink_counters: NvLinkCounters = field(default_factory=NvLinkCounters)
    mig: MigReader | None = None  # on a GPU whose MIG mode the driver gave at open
    events: list[str] = field(default_factory=list)


class NvmlSource:
    """The live source: NVIDIA GPUs through NVML, plus the host through `HostSource`."""

    def __init__(
        self,
        gpu_indices: Sequence[int] | None = None,
        host: HostSource | None = None,
        pynvml: ModuleType | None = None,
        clock: Callable[[], float] = time.time,
        slow_every: int = 5,
        watch_xid: bool = True,
        root: Path = Path("/"),
        xid_wait_ms: int = DEFAULT_WAIT_MS,
    ):
        if slow_every < 1:
            raise ValueError(f"slow_every must be at least 1, not {slow_every}")
        self._wanted = tuple(dict.fromkeys(gpu_indices)) if gpu_indices is not None else None
        self._host = host
        self._root = root  # where /proc is read to match GPU processes: tests point it at a fake tree
        self._join = ProcessJoin(procfs.DeviceCheck(root), procfs.GpuUsers(root).scan)
        self._pynvml = pynvml  # the module, imported at open() unless given
        self._nvml: Nvml | None = None
        self._clock = clock
        self._slow_every = slow_every
        self._gpus: list[_Gpu] = []
        self._minors: dict[int, int | None] = {}  # GPU index -> N of /dev/nvidiaN
        self._uuids: dict[int, str] = {}  # GPU index -> UUID, as the kubelet names the GPU it allocates
        self._system: SystemInfo | None = None
        self._started = False
        self._tick = 0
        self._watch_xid = watch_xid
        self._xid_wait_ms = xid_wait_ms
        self._watcher: XidWatcher | None = None
        self._xid_error_reported = False

    @property
    def xid_watcher(self) -> XidWatcher | None:
        """The thread collecting XID events, while open and asked for."""
        return self._watcher

    def open(self) -> SystemInfo:
        self.close()
        pynvml = self._pynvml if self._pynvml is not None else _import_pynvml()
        self._pynvml = pynvml
        nvml = self._nvml = Nvml(pynvml)
        try:
            pynvml.nvmlInit()
        except pynvml.NVMLError as exc:
            raise SourceUnavailable(_init_message(exc)) from None
        self._started = True
        try:
            return self._open_gpus(pynvml, nvml)
        except BaseException:  # whatever failed after nvmlInit: shut NVML down, free what was opened, then say it
            self.close()
            raise

    def _open_gpus(self, pynvml: Any, nvml: Nvml) -> SystemInfo:
        """open()'s part once NVML is initialised: the GPUs, their topology, the host, the XID thread."""
        try:
            count = pynvml.nvmlDeviceGetCount()
        except pynvml.NVMLError as exc:
            raise SourceUnavailable(_init_message(exc)) from None
        if count == 0:
            raise SourceUnavailable(NO_DEVICES)
        indices = self._wanted if self._wanted is not None else tuple(range(count))
        missing = [i for i in indices if not 0 <= i < count]
        if missing:
            raise InvalidGpuSelection(
                f"there is no GPU {missing[0]}: this machine has {count} GPU(s), numbered 0 to {count - 1}"
            )
        for index in indices:  # one by one, so close() frees the GPM buffers of those opened if one fails
            self._gpus.append(self._open_gpu(nvml, index))
        given_slice = mig_slice()
        if given_slice is not None:
            given_slice = self._keep_slice(given_slice)
        self._minors = {gpu.index: gpu.info.minor_number if gpu.info else None for gpu in self._gpus}
        self._uuids = {gpu.index: gpu.info.uuid for gpu in self._gpus if gpu.info is not None and gpu.info.uuid}
        topology = self._read_topology(nvml)
        if self._host is None:
            self._host = HostSource(root=self._root)
        self._host.open()
        self._tick = 0
        if self._watch_xid:
            handles = {gpu.index: gpu.handle for gpu in self._gpus if gpu.lost is None}
            self._watcher = XidWatcher(nvml, handles, wait_ms=self._xid_wait_ms)
            self._xid_error_reported = False
            self._watcher.start()
        self._system = SystemInfo(
            hostname=machine_name(),
            source="nvml",
            driver_version=nvml.ask("nvmlSystemGetDriverVersion"),
            nvml_version=nvml.ask("nvmlSystemGetNVMLVersion"),
            cuda_driver_version=cuda_version(nvml.ask("nvmlSystemGetCudaDriverVersion")),
            gpu_count=count,
            cpu_count=os.cpu_count() or 0,
            kernel=platform.release(),
            container=self._host.container,
            topology=topology,
            mig_slice=given_slice,
        )
        return self._system

    def close(self) -> None:
        """Stop the XID thread first (it waits inside NVML), free GPM buffers, shut NVML down once, release the host.

        An XID thread in a long wait gets STOP_WAIT_S to end; one still waiting is left to end by itself (it
        frees its event set then), and NVML is left initialised under it: shutting the library down beneath a
        waiting call is not safe, and a closing monitor should not hang for a wait that only times out."""
        thread_ended = True
        if self._watcher is not None:
            thread_ended = self._watcher.stop(STOP_WAIT_S if self._xid_wait_ms > DEFAULT_WAIT_MS else None)
            self._watcher = None
        for gpu in self._gpus:
            self._free(gpu)
        if self._started and self._pynvml is not None:
            self._started = False
            if thread_ended:
                with contextlib.suppress(self._pynvml.NVMLError):
                    self._pynvml.nvmlShutdown()
        if self._host is not None:
            self._host.close()
        self._gpus = []

    def sample(self) -> Snapshot:
        if self._system is None or not self._started or self._host is None:
            raise RuntimeError("NvmlSource.sample() called before open()")
        now = self._clock()
        slow = self._tick % self._slow_every == 0
        self._tick += 1
        xids = self._watcher.drain() if self._watcher is not None else {}
        gpus = tuple(self._sample_gpu(gpu, now, slow, xids.get(gpu.index, ())) for gpu in self._gpus)
        joined = self._join.join(gpus, self._minors, slow)
        gpus = tuple(gpu if gpu is read else share_out(gpu) for gpu, read in zip(joined, gpus, strict=True))
        pids: set[int] = set()
        # pid -> the UUIDs of its devices, by which the kubelet names its pod's container: its GPU's, or in MIG mode
        # its instance's ("MIG-..."), as a device plugin hands out a MIG slice
        gpus_of: dict[int, list[str]] = {}
        for gpu_sample in gpus:
            uuid = self._uuids.get(gpu_sample.index)
            for proc in gpu_sample.processes:
                if proc.seen == "hidden":
                    continue
                pids.add(proc.pid)
                instance = gpu_sample.instance_of(proc)
                device = instance.uuid if instance is not None and instance.uuid else uuid
                if device is not None:
                    gpus_of.setdefault(proc.pid, []).append(device)
        events: list[str] = []
        if self._watcher is not None and self._watcher.error is not None and not self._xid_error_reported:
            self._xid_error_reported = True
            events.append(f"{XID_UNWATCHED}: {self._watcher.error}")
        for gpu in self._gpus:
            events.extend(gpu.events)
            gpu.events.clear()
        return Snapshot(
            timestamp=now,
            system=self._system,
            gpu_info=tuple(gpu.info for gpu in self._gpus if gpu.info is not None),
            gpus=gpus,
            host=self._host.sample(pids, now, gpus_of),
            events=tuple(events),
        )

    @staticmethod
    def _free(gpu: _Gpu) -> None:
        """Free a GPU's GPM buffers, its MIG instances' included."""
        if gpu.gpm is not None:
            gpu.gpm.close()
        if gpu.mig is not None:
            gpu.mig.close()

    def _keep_slice(self, name: str) -> str:
        """Keep only the GPU holding the MIG slice this process was given (unless GPUs were chosen), and name
        the slice by its MIG UUID as NVML gives it (a pre-R470 name is its GPU's UUID and instance ids). A slice
        no GPU shows leaves every GPU kept and the name as given."""
        old = old_mig_name(name)
        for gpu in self._gpus:
            if gpu.mig is None or gpu.lost is not None:
                continue
            try:
                gpu.mig.refresh()
            except GpuLost as lost:
                self._mark_lost(gpu, lost.reason)
                continue
            if old is None:
                found = gpu.mig.find(name)
            elif gpu.info is not None and gpu.info.uuid == old[0]:
                found = gpu.mig.find_ids(old[1], old[2])
            else:
                found = None
            if found is None:
                continue
            if self._wanted is None:
                for other in self._gpus:
                    if other is not gpu:
                        self._free(other)
                self._gpus = [gpu]
            return found.uuid or name
        return name

    def _mark_lost(self, gpu: _Gpu, error: str) -> None:
        gpu.lost = error
        gpu.processes = ()
        gpu.events.append(f"GPU {gpu.index}: {error}")

    def _open_gpu(self, nvml: Nvml, index: int) -> _Gpu:
        """The handle (a GPU the driver will not open is listed as lost, with why), then its facts and readers."""
        gpu = _Gpu(index=index)
        pynvml = nvml.pynvml
        try:
            gpu.handle = pynvml.nvmlDeviceGetHandleByIndex(index)
        except pynvml.NVMLError_NoPermission as exc:
            raise SourceUnavailable(_init_message(exc)) from None
        except pynvml.NVMLError as exc:
            code = exc.value
            lost = nvml.lost(code).reason if nvml.verdict(code) is Verdict.LOST else None
            self._mark_lost(gpu, lost or f"the driver could not open this GPU: {exc}")
        if gpu.lost is None:
            try:
                gpu.queries = _sampled_queries(nvml, gpu.handle)
                gpu.memory_temperature = Fields(nvml, gpu.handle, [pynvml.NVML_FI_DEV_MEMORY_TEMP])
                gpu.info = _read_info(nvml, index, gpu.handle, gpu.queries["memory"])
                gpu.gpm = GpmReader(nvml, gpu.handle, gpu.info.mig_mode)
                gpu.process_utilization = ProcessUtilization(nvml, gpu.handle)
                gpu.nvlink = NvLinkReader(nvml, gpu.handle, gpm_gives_traffic=gpu.gpm.supported)
                if gpu.info.mig_mode is not None:
                    gpu.mig = MigReader(nvml, gpu.handle)
            except GpuLost as lost:
                self._mark_lost(gpu, lost.reason)
        if gpu.info is None:
            gpu.info = GpuInfo(index=index, name="unknown")
        return gpu

    def _read_topology(self, nvml: Nvml) -> Topology:
        """The pairs, once every GPU is open; each GPU's NVLink facts, whose remotes name GPUs by bus id."""
        buses = [gpu.info.pci_bus_id if gpu.info is not None else None for gpu in self._gpus]
        for gpu in self._gpus:
            if gpu.info is not None and gpu.nvlink is not None and gpu.lost is None:
                gpu.info = dataclasses.replace(
                    gpu.info,
                    nvlink_links_total=gpu.nvlink.total,
                    nvlink_version=gpu.nvlink.version,
                    nvlink_remote=resolve_remotes(gpu.nvlink, buses),
                )
        return read_topology(
            nvml,
            [gpu.handle if gpu.lost is None else None for gpu in self._gpus],
            [gpu.nvlink if gpu.lost is None else None for gpu in self._gpus],
            buses,
            numa_nodes(self._root),
        )

    def _sample_gpu(self, gpu: _Gpu, now: float, slow: bool, xids: tuple[int, ...]) -> GpuSample:
        """A lost GPU keeps its XIDs: the one that took it off the bus (79) is the news."""
        if gpu.lost is None:
            try:
                return self._read_sample(gpu, now, slow, xids)
            except GpuLost as lost:
                self._mark_lost(gpu, lost.reason)
        return GpuSample(index=gpu.index, timestamp=now, lost=True, error=gpu.lost, xid_events=xids)

    def _read_sample(self, gpu: _Gpu, now: float, slow: bool, xids: tuple[int, ...]) -> GpuSample:
        q = gpu.queries
        if slow:
            self._read_slow(gpu)
        util = q["utilization"]()
        memory = q["memory"]()
        temperature = q["temperature"]()
        memory_temperature = gpu.memory_temperature()[0] if gpu.memory_temperature is not None else None
        pstate = q["pstate"]()
        power_violation = q["power_violation"]()
        thermal_violation = q["thermal_violation"]()
        encoder = q["encoder"]()
        decoder = q["decoder"]()
        gpm: GpmValues = {**(gpu.gpm.read(now) if gpu.gpm is not None else {})}
        if gpu.nvlink is not None:
            gpm.update(gpu.nvlink.traffic(now))  # {} where GPM gives the NVLink traffic
        nvlink = gpu.nvlink_counters
        return GpuSample(
            index=gpu.index,
            timestamp=now,
            utilization_gpu_pct=float(util.gpu) if util is not None else None,
            utilization_memory_pct=float(util.memory) if util is not None else None,
            sm_clock_mhz=q["sm_clock"](),
            memory_clock_mhz=q["memory_clock"](),
            graphics_clock_mhz=q["graphics_clock"](),
            temperature_c=float(temperature) if temperature is not None else None,
            memory_temperature_c=float(memory_temperature) if memory_temperature is not None else None,
            power_w=_watts(q["power"]()),
            power_limit_w=_watts(q["power_limit"]()),
            memory_used_bytes=memory.used if memory is not None else None,
            memory_reserved_bytes=getattr(memory, "reserved", None),  # v2 only; v1's `used` includes it
            memory_free_bytes=memory.free if memory is not None else None,
            pcie_gen=q["pcie_gen"](),
            pcie_width=q["pcie_width"](),
            pcie_tx_bytes_s=gpu.pcie_tx_bytes_s,
            pcie_rx_bytes_s=gpu.pcie_rx_bytes_s,
            pcie_replay_count=q["pcie_replay"](),
            fan_pct=q["fan"](),
            pstate=pstate if pstate is not None and 0 <= pstate <= LAST_PSTATE else None,
            clock_event_reasons_mask=q["clock_events"](),
            power_violation_ns=power_violation.violationTime if power_violation is not None else None,
            thermal_violation_ns=thermal_violation.violationTime if thermal_violation is not None else None,
            energy_mj=q["energy"](),
            ecc_uncorrected=gpu.ecc_uncorrected,
            retired_pages_pending=gpu.retired_pages_pending,
            xid_events=xids,
            encoder_pct=float(encoder[0]) if encoder is not None else None,
            decoder_pct=float(decoder[0]) if decoder is not None else None,
            processes=gpu.processes,
            nvlink_links_active=nvlink.active,
            nvlink_replay_errors=nvlink.replay,
            nvlink_recovery_errors=nvlink.recovery,
            nvlink_crc_errors=nvlink.crc,
            mig=gpu.mig.state(now) if gpu.mig is not None else None,
            **gpm,
        )

    def _read_slow(self, gpu: _Gpu) -> None:
        q = gpu.queries
        shares = gpu.process_utilization.read() if gpu.process_utilization is not None else {}

        def listed() -> tuple[GpuProcess, ...]:
            return merge_processes(q["compute_processes"](), q["graphics_processes"](), shares)

        if gpu.mig is not None:
            gpu.mig.refresh()
        gpu.processes = gpu.mig.processes(listed) if gpu.mig is not None and gpu.mig.active else listed()
        tx = q["pcie_tx"]()
        rx = q["pcie_rx"]()
        gpu.pcie_tx_bytes_s = float(tx * KIB) if tx is not None else None
        gpu.pcie_rx_bytes_s = float(rx * KIB) if rx is not None else None
        gpu.ecc_uncorrected = q["ecc_uncorrected"]()
        retired = q["retired_pages_pending"]()
        remapped = q["remapped_rows"]()  # (corrected, uncorrected, pending, failure), Ampere and newer
        flags = [bool(retired)] if retired is not None else []
        if remapped is not None:
            flags.append(bool(remapped[2] or remapped[3]))
        gpu.retired_pages_pending = any(flags) if flags else None
        if gpu.nvlink is not None:
            gpu.nvlink_counters = gpu.nvlink.counters()


def _import_pynvml() -> ModuleType:
    try:
        import pynvml
    except ImportError:
        raise SourceUnavailable(
            "nvidia-ml-py is not installed (pip install nvidia-ml-py); it provides the pynvml module"
        ) from None
    module: ModuleType = pynvml
    return module


def _init_message(exc: BaseException) -> str:
    return INIT_ERRORS.get(type(exc).__name__, f"the NVIDIA driver could not be read: {exc}")


def _watts(milliwatts: int | None) -> float | None:
    return milliwatts / 1000.0 if milliwatts is not None else None
