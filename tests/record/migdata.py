"""A machine in MIG mode for the formats, the exporter and the readers: H100s each cut into two 3g.40gb instances
with one training process on each, as the issue's user had it (tests/record/recdata.py is the machine without)."""

from __future__ import annotations

import dataclasses

from gputui.model import GpuProcess, GpuSample, MigDevice, MigState, ProcSample, Snapshot
from tests.record.recdata import T0, gpu_info, gpu_sample, host_sample, system
from tests.snapshots import GIB

MIG_GPM: dict[str, float] = {
    "gr_engine_active_pct": 93.5,
    "sm_active_pct": 81.25,
    "sm_occupancy_pct": 38.0,
    "tensor_active_pct": 44.0,
    "dram_bw_pct": 51.5,
    "fp32_active_pct": 9.0,
    "fp16_active_pct": 2.5,
    "fp64_active_pct": 0.0,
}
INSTANCE_TOTAL = 40_511_160_320  # what NVML gives a 3g.40gb instance of an H100 80GB


def pid_of(gpu: int, gi: int) -> int:
    return 5000 + 10 * gpu + gi


def instance(gpu: int, index: int, gi: int, *, used: int = 30 * GIB, **changes: object) -> MigDevice:
    """Instance `index` of GPU `gpu`: GPU instance `gi`, compute instance 0, its one process holding `used`."""
    proc = GpuProcess(pid=pid_of(gpu, gi), used_memory_bytes=used, gpu_instance_id=gi, compute_instance_id=0)
    base = MigDevice(
        index=index,
        uuid=f"MIG-2f6e1c3a-{gpu:04d}-5b7d-9e0f-00000000000{gi}",
        profile="3g.40gb",
        gpu_instance_id=gi,
        compute_instance_id=0,
        sm_count=60,
        slice_count=3,
        memory_used_bytes=used + 15 * 1024 * 1024,
        memory_total_bytes=INSTANCE_TOTAL,
        processes=(proc,),
        **MIG_GPM,  # type: ignore[arg-type]
    )
    return dataclasses.replace(base, **changes)  # type: ignore[arg-type]


def mig_gpu(index: int, t: float, devices: tuple[MigDevice, ...] | None = None, **changes: object) -> GpuSample:
    """A GPU in MIG mode: no whole-GPU utilization (NVML refuses it), the parent's own readings, every instance's
    processes in its list, and the instances under `mig`."""
    devices = devices if devices is not None else (instance(index, 0, 1), instance(index, 1, 2, used=12 * GIB))
    base = dataclasses.replace(
        gpu_sample(index, t),
        utilization_gpu_pct=None,
        utilization_memory_pct=None,
        encoder_pct=None,
        decoder_pct=None,
        memory_used_bytes=sum(d.memory_used_bytes or 0 for d in devices),
        memory_free_bytes=None,
        memory_reserved_bytes=None,
        processes=tuple(proc for device in devices for proc in device.processes),
        mig=MigState(mode=True, pending_mode=True, devices=devices),
    )
    return dataclasses.replace(base, **changes)  # type: ignore[arg-type]


def mig_snapshot(t: float = T0, n_gpus: int = 8) -> Snapshot:
    """`n_gpus` H100s in MIG mode, two 3g.40gb instances each, a python rank on each instance."""
    gpus = tuple(mig_gpu(i, t) for i in range(n_gpus))
    infos = tuple(dataclasses.replace(gpu_info(i), mig_mode=True) for i in range(n_gpus))
    host = host_sample(t, 0)
    ranks = tuple(
        ProcSample(pid=proc.pid, name="python", user="alice", cpu_pct=99.0, state="running")
        for g in gpus
        for proc in g.processes
    )
    return Snapshot(
        timestamp=t,
        system=dataclasses.replace(system(n_gpus), mig_slice=None),
        gpu_info=infos,
        gpus=gpus,
        host=dataclasses.replace(host, processes=ranks),
    )
