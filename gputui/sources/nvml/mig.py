"""A MIG-capable GPU's mode and instances, read through the parent GPU's handle and each instance's own.

nvml.h (R560): nvmlDeviceGetMigMode gives the current and the pending mode (a change waits for a GPU reset);
nvmlDeviceGetMaxMigDeviceCount gives 0 when MIG is off; nvmlDeviceGetMigDeviceHandleByIndex answers NotFound
for an index holding no instance (instances need not be numbered without gaps) and InvalidArgument past the
last, and its handles "may be reused and their properties can change", so they are asked again at every
enumeration. Each MIG device is one compute instance: its UUID ("MIG-..."), name ("<GPU name> MIG 3g.40gb"),
GPU and compute instance ids, attributes (SMs, slices, memory) and processes come from its own handle; its
activity comes from GPM per GPU instance (nvmlGpmMigSampleGet on the parent's handle), since MIG mode gives no
whole-GPU utilization.

Processes: each instance's own lists, which non-root callers may read; where none can be read, the parent's
list (root only), whose entries carry their GPU and compute instance ids. The GPU's process list is their union;
`share_out` puts them under their instances again where the match with this machine's processes changed them.

When: the mode and the instance list on slow ticks (an administrator may run `nvidia-smi -mig 1` or create and
destroy instances while we watch), each instance's static facts once (kept by UUID), its processes on slow
ticks, its memory and GPM every tick. Every call goes through the query helper; questions asked of an
instance's handle are mig queries, which end for that instance alone.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gputui.model import ACTIVITY_FIELDS, GpmValues, GpuProcess, GpuSample, MigDevice, MigState, gpm_activity
from gputui.sources.nvml.efficiency import GpmReader
from gputui.sources.nvml.processes import COMPUTE_PROCESSES, GRAPHICS_PROCESSES, instance_id, merge_processes
from gputui.sources.nvml.query import Nvml, Query

MIB = 1024 * 1024
# What a tick reads of an instance; the rest of a MigDevice is its static facts, read on slow ticks.
_READINGS = frozenset({"memory_used_bytes", "memory_total_bytes", "processes", *ACTIVITY_FIELDS})
PROFILE_MARK = " MIG "  # "NVIDIA H100 80GB HBM3 MIG 3g.40gb": the profile follows the last of these


def profile_of(name: str | None) -> str | None:
    """The MIG profile in a MIG device's name ("3g.40gb", "1c.3g.40gb"); None when the name holds none."""
    if not name:
        return None
    _, mark, profile = name.rpartition(PROFILE_MARK)
    return profile.strip() or None if mark else None


@dataclass(slots=True)
class _Instance:
    """One MIG device: its handle of the last enumeration, its static facts, the queries still worth asking."""

    handle: Any
    facts: MigDevice  # index, uuid, profile, ids, SMs, slices, memory size; readings are filled in each tick
    memory: Query
    compute: Query
    graphics: Query
    processes: tuple[GpuProcess, ...] = ()  # as of the last slow tick
    # The facts as a MigDevice's keyword arguments, taken once: dataclasses.replace would take them again for
    # every instance every tick (~2 us each, 0.1 ms a tick on 8 GPUs of 7 instances).
    static: dict[str, Any] = dataclasses.field(init=False)

    def __post_init__(self) -> None:
        self.static = _static(self.facts)

    def move(self, index: int) -> None:
        """Its place under the GPU changed (an instance before it went)."""
        self.facts = dataclasses.replace(self.facts, index=index)
        self.static = _static(self.facts)


def _static(facts: MigDevice) -> dict[str, Any]:
    return {f.name: getattr(facts, f.name) for f in dataclasses.fields(facts) if f.name not in _READINGS}


class MigReader:
    """One GPU's MIG mode and instances; `state()` each tick, `refresh()` and `processes()` on slow ticks."""

    def __init__(self, nvml: Nvml, handle: Any) -> None:
        self._nvml = nvml
        self._handle = handle
        self._mode = nvml.query(nvml.function("nvmlDeviceGetMigMode", handle))
        self._count = nvml.query(nvml.function("nvmlDeviceGetMaxMigDeviceCount", handle))
        self._by_index = nvml.query(nvml.function("nvmlDeviceGetMigDeviceHandleByIndex", handle))
        # Asked of a handle just enumerated: an InvalidArgument there means it went meanwhile, so these stay
        # queries of the parent, whose passing failures skip that handle this time only.
        self._uuid = nvml.query(nvml.function("nvmlDeviceGetUUID"))
        self._gpm_sample = nvml.query(nvml.function("nvmlGpmMigSampleGet", handle))
        self._past_last = getattr(nvml.pynvml, "NVML_ERROR_INVALID_ARGUMENT", None)
        self.mode: bool | None = None
        self.pending_mode: bool | None = None
        self._instances: dict[str, _Instance] = {}  # by UUID, in index order
        self._gpm: dict[int, GpmReader] = {}  # by GPU instance id: GPM is per GPU instance, not per MIG device

    @property
    def active(self) -> bool:
        """In MIG mode now: processes and memory belong to the instances."""
        return bool(self.mode)

    def refresh(self) -> None:
        """The mode, and the instances when MIG is on (a slow tick)."""
        modes = self._mode()
        if modes is not None:
            self.mode, self.pending_mode = bool(modes[0]), bool(modes[1])
        elif not self._mode.available:
            self.mode = self.pending_mode = None
        if self.mode:
            self._enumerate()
        else:
            self._forget(set(self._instances))

    def state(self, now: float) -> MigState | None:
        """The mode and each instance's memory and GPM now; None without MIG, or with MIG off and no change
        pending."""
        if self.mode is None or not (self.mode or self.pending_mode):
            return None
        activity: dict[int, GpmValues] = {}
        devices = []
        for instance in self._instances.values():
            facts = instance.facts
            memory = instance.memory(instance.handle)
            gi = facts.gpu_instance_id
            if gi is not None and gi not in activity:
                reader = self._gpm.get(gi)
                activity[gi] = reader.read(now) if reader is not None else {}
            devices.append(
                MigDevice(
                    **instance.static,
                    memory_used_bytes=memory.used if memory is not None else None,
                    memory_total_bytes=memory.total if memory is not None else facts.memory_total_bytes,
                    processes=instance.processes,
                    **gpm_activity(activity[gi] if gi is not None else {}),
                )
            )
        return MigState(mode=self.mode, pending_mode=self.pending_mode, devices=tuple(devices))

    def processes(self, parent: Callable[[], tuple[GpuProcess, ...]]) -> tuple[GpuProcess, ...]:
        """Every instance's processes, each with its instance's ids (a slow tick, after `refresh`); where no
        instance's own lists can be read, the parent's list, which carries the ids (given only to root)."""
        instances = list(self._instances.values())
        own = [self._instance_processes(instance) for instance in instances]
        if own and all(listed is None for listed in own):
            everyone = parent()
            for instance in instances:
                instance.processes = tuple(proc for proc in everyone if instance.facts.holds(proc))
            return everyone
        for instance, its_own in zip(instances, own, strict=True):
            instance.processes = its_own or ()
        union = {proc.pid: proc for listed in own for proc in listed or ()}
        return tuple(union[pid] for pid in sorted(union))

    def find(self, uuid: str) -> MigDevice | None:
        """The instance of this MIG UUID, as last enumerated."""
        instance = self._instances.get(uuid)
        return instance.facts if instance is not None else None

    def find_ids(self, gpu_instance_id: int, compute_instance_id: int) -> MigDevice | None:
        """The instance of these GPU and compute instance ids (how a pre-R470 MIG name says which)."""
        for instance in self._instances.values():
            facts = instance.facts
            if (facts.gpu_instance_id, facts.compute_instance_id) == (gpu_instance_id, compute_instance_id):
                return facts
        return None

    def close(self) -> None:
        """Free every instance's GPM buffers (before nvmlShutdown)."""
        self._forget(set(self._instances))

    def _enumerate(self) -> None:
        """Every index up to the maximum: NotFound skips a gap, InvalidArgument ends the list; an instance seen
        before (by UUID) keeps its facts and queries and takes its new handle and index."""
        count = self._count()
        if count is None:
            return  # a passing failure: the instances of the last enumeration stand
        found: dict[str, _Instance] = {}
        for index in range(count):
            handle = self._by_index(index)
            if handle is None:
                code = getattr(self._by_index.failure, "value", None)
                if code == self._past_last:
                    break
                continue  # NotFound (a gap) or a passing failure: the next index
            uuid = self._uuid(handle)
            if uuid is None:
                continue
            known = self._instances.get(uuid)
            instance = known if known is not None else self._open_instance(handle, uuid, index)
            instance.handle = handle
            if instance.facts.index != index:
                instance.move(index)
            found[uuid] = instance
        self._forget(set(self._instances) - set(found))
        self._instances = found
        for gi in {instance.facts.gpu_instance_id for instance in found.values()} - set(self._gpm):
            if gi is not None:
                self._gpm[gi] = GpmReader(self._nvml, self._handle, True, instance=(self._gpm_sample, gi))

    def _open_instance(self, handle: Any, uuid: str, index: int) -> _Instance:
        nvml = self._nvml

        def ask(name: str) -> Any:
            return nvml.mig_query(nvml.function(name, handle))()

        attributes = ask("nvmlDeviceGetAttributes")
        size_mib = attributes.memorySizeMB if attributes is not None else None
        facts = MigDevice(
            index=index,
            uuid=uuid,
            profile=profile_of(ask("nvmlDeviceGetName")),
            gpu_instance_id=instance_id(ask("nvmlDeviceGetGpuInstanceId")),
            compute_instance_id=instance_id(ask("nvmlDeviceGetComputeInstanceId")),
            sm_count=attributes.multiprocessorCount if attributes is not None else None,
            slice_count=attributes.gpuInstanceSliceCount if attributes is not None else None,
            memory_total_bytes=size_mib * MIB if size_mib else None,
        )
        return _Instance(
            handle=handle,
            facts=facts,
            memory=nvml.mig_query(*nvml.memory_info()),
            compute=nvml.mig_query(*nvml.variants(COMPUTE_PROCESSES)),
            graphics=nvml.mig_query(*nvml.variants(GRAPHICS_PROCESSES)),
        )

    def _instance_processes(self, instance: _Instance) -> tuple[GpuProcess, ...] | None:
        """Its own lists, each process marked with the instance's ids where the driver left them out."""
        compute = instance.compute(instance.handle)
        graphics = instance.graphics(instance.handle)
        if compute is None and graphics is None:
            return None
        facts = instance.facts
        return tuple(
            proc
            if proc.gpu_instance_id is not None
            else dataclasses.replace(
                proc, gpu_instance_id=facts.gpu_instance_id, compute_instance_id=facts.compute_instance_id
            )
            for proc in merge_processes(compute, graphics, {})
        )

    def _forget(self, uuids: set[str]) -> None:
        """Instances gone: their GPM readers too, where no remaining instance shares the GPU instance."""
        for uuid in uuids:
            self._instances.pop(uuid, None)
        kept = {instance.facts.gpu_instance_id for instance in self._instances.values()}
        for gi in set(self._gpm) - kept:
            self._gpm.pop(gi).close()


def share_out(gpu: GpuSample) -> GpuSample:
    """The GPU's processes under the instances they run in, again: after the match with this machine's processes
    changed them (a PID of this namespace for a host PID, a process seen by its device file alone)."""
    if gpu.mig is None or not gpu.mig.devices:
        return gpu
    devices = tuple(_with_processes(device, gpu.processes) for device in gpu.mig.devices)
    if all(new is old for new, old in zip(devices, gpu.mig.devices, strict=True)):
        return gpu
    return dataclasses.replace(gpu, mig=dataclasses.replace(gpu.mig, devices=devices))


def _with_processes(device: MigDevice, processes: tuple[GpuProcess, ...]) -> MigDevice:
    """The device with those of `processes` that run in it; itself when they are the ones it holds (most
    instances, most ticks: this runs for each of up to seven instances a GPU on every tick)."""
    mine = tuple(proc for proc in processes if device.holds(proc))
    return device if mine == device.processes else dataclasses.replace(device, processes=mine)
