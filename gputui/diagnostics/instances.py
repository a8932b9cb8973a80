"""MIG instances as units of their own, so the rules that judge a GPU's work judge each instance alike.

In MIG mode a GPU is split into isolated instances, each with its own SMs, memory and processes, and NVML gives
no whole-GPU utilization. The engine therefore diagnoses each instance as a GPU of its own: `expand` turns a
snapshot into one where each MIG GPU is replaced by one sample per instance, under a unit index of its own
(`unit_index`), holding the instance's memory, processes and GPM, its utilization from its graphics engine's
activity when GPM gives it (else None: unknown, never idle), and the parent's own readings (clocks, throttle
reasons, temperature, power, PCIe, ECC, XID), which apply to every instance on it. The rules that judge the work
(`Rule.per_instance`) read such snapshots; the others read the GPU itself, so heat is one finding on the GPU,
not one per instance. A unit index is never a real GPU's: no GPU has a million indices. A unit is a GPU instance:
one split into compute instances (one MIG device each) is judged once, with all their processes, as its memory
and GPM are the GPU instance's (`MigState.gpu_instances`).
"""

from __future__ import annotations

import dataclasses

from gputui.model import ACTIVITY_FIELDS, GpuInfo, GpuSample, MigDevice, MigState, Snapshot

_BASE = 1 << 20  # above any real GPU index
_PER_GPU = 1 << 10  # above any GPU instance id (H100 has 7 slices; ids stay small)


def unit_index(gpu: int, gpu_instance_id: int) -> int:
    """The index an instance goes by among the GPUs of an expanded snapshot."""
    return _BASE + gpu * _PER_GPU + gpu_instance_id


def instance_of(index: int) -> tuple[int, int] | None:
    """(GPU index, GPU instance id) of a unit index; None for a whole GPU's index."""
    if index < _BASE:
        return None
    gpu, gi = divmod(index - _BASE, _PER_GPU)
    return gpu, gi


def has_instances(snapshot: Snapshot) -> bool:
    """Whether some GPU of the snapshot is split into instances: the engine's one check on every tick."""
    return any(g.mig is not None and g.mig.devices for g in snapshot.gpus)


def split(units: tuple[int, ...]) -> tuple[tuple[int, ...], tuple[tuple[int, int], ...]]:
    """Unit indices as a finding or verdict names them: the GPUs (each once, in order) and the instances."""
    found = [(unit, instance_of(unit)) for unit in units]
    pairs = tuple(pair for _, pair in found if pair is not None)
    if not pairs:
        return units, ()
    return tuple(sorted({unit if pair is None else pair[0] for unit, pair in found})), pairs


def instance_name(sample: GpuSample) -> str:
    """'0 / 3g.40gb (GI 2)' for an instance's unit sample (what follows "GPU " in a title), its index otherwise."""
    pair = instance_of(sample.index)
    if pair is None or sample.mig is None or not sample.mig.devices:
        return str(sample.index)
    return f"{pair[0]} / {sample.mig.devices[0].label}"


def expand(snapshot: Snapshot) -> Snapshot:
    """The snapshot with each MIG GPU replaced by its instances (see the module); unchanged without MIG."""
    if not has_instances(snapshot):
        return snapshot
    infos = {info.index: info for info in snapshot.gpu_info}
    gpus: list[GpuSample] = []
    unit_infos: list[GpuInfo] = []
    for sample in snapshot.gpus:
        devices = () if sample.mig is None else sample.mig.gpu_instances()
        if sample.lost or not devices:
            gpus.append(sample)
            continue
        info = infos.get(sample.index)
        for device in devices:
            unit = _unit(sample, device)
            gpus.append(unit)
            if info is not None:
                unit_infos.append(
                    dataclasses.replace(
                        info, index=unit.index, uuid=device.uuid, memory_total_bytes=device.memory_total_bytes
                    )
                )
    return dataclasses.replace(snapshot, gpus=tuple(gpus), gpu_info=(*snapshot.gpu_info, *unit_infos))


def _unit(parent: GpuSample, device: MigDevice) -> GpuSample:
    """One instance as a GPU sample: its own memory, processes and activity; the parent's own readings."""
    gi = device.gpu_instance_id
    assert gi is not None  # expand keeps only instances with an id
    processes = device.processes or tuple(p for p in parent.processes if p.gpu_instance_id == gi)
    used, total = device.memory_used_bytes, device.memory_total_bytes
    return dataclasses.replace(
        parent,
        index=unit_index(parent.index, gi),
        utilization_gpu_pct=device.gr_engine_active_pct,
        utilization_memory_pct=None,
        memory_used_bytes=used,
        memory_reserved_bytes=None,
        memory_free_bytes=None if used is None or total is None else max(0, total - used),
        **{name: getattr(device, name) for name in ACTIVITY_FIELDS},
        processes=processes,
        # The instance it is, so its words can name it (instance_name).
        mig=MigState(mode=True, pending_mode=None, devices=(device,)),
    )
