"""The HTML report's MIG instances: each instance's activity over time, a line per instance.

A GPU in MIG mode has no whole-GPU utilization (NVML refuses it), so its utilization line would be empty; what
it did is in its instances' GPM figures. Each instance is charted by its SM activity, or, when it gave none
over the whole recording, by its graphics engine activity, named as such: one line never switches metric
half-way, so a rise is a change in the work and not in what is measured. An instance is known by its GPU and
its GPU and compute instance ids, as the text report keeps it; a tick in which it is missing (destroyed, or
not yet made) is a gap.
"""

from __future__ import annotations

from dataclasses import dataclass

from gputui.model import GpuSample, MigDevice

_Key = tuple[int, int | None, int | None]  # GPU index, GPU instance id, compute instance id


@dataclass(frozen=True, slots=True)
class InstanceLine:
    """One instance's activity, a value per tick of the recording (None: not reported then)."""

    gpu: int
    gpu_instance_id: int | None
    compute_instance_id: int | None
    name: str  # "GPU 0 GI 2 3g.40gb", and " (gr engine)" when the line is graphics engine activity
    values: tuple[float | None, ...]

    @property
    def reported(self) -> bool:
        return any(v is not None for v in self.values)


class InstanceSeries:
    """Every MIG instance's readings, gathered tick by tick alongside the GPUs' (one pass over the recording)."""

    def __init__(self) -> None:
        self._ticks = 0
        self._devices: dict[_Key, MigDevice] = {}  # the first reading of each, for its name
        self._sm: dict[_Key, list[float | None]] = {}
        self._engine: dict[_Key, list[float | None]] = {}

    def add(self, samples: dict[int, GpuSample]) -> None:
        """One tick's GPU samples, by GPU index."""
        for index, sample in samples.items():
            if sample.lost or sample.mig is None:
                continue
            for device in sample.mig.devices:
                key = (index, device.gpu_instance_id, device.compute_instance_id)
                if key not in self._devices:
                    self._devices[key] = device
                    self._sm[key] = [None] * self._ticks
                    self._engine[key] = [None] * self._ticks
                if len(self._sm[key]) == self._ticks:  # a second listing of one instance in a tick is ignored
                    self._sm[key].append(device.sm_active_pct)
                    self._engine[key].append(device.gr_engine_active_pct)
        self._ticks += 1
        for key, values in self._sm.items():
            if len(values) < self._ticks:
                values.append(None)
                self._engine[key].append(None)

    def lines(self) -> list[InstanceLine]:
        """A line per instance, by GPU and then in the order the instances were first seen."""
        keys = sorted(self._devices, key=lambda k: k[0])  # a stable sort keeps first-seen order within a GPU
        shared_gi = {k[:2] for k in keys if sum(1 for o in keys if o[:2] == k[:2]) > 1}
        out = []
        for key in keys:
            sm, engine = self._sm[key], self._engine[key]
            by_engine = all(v is None for v in sm) and any(v is not None for v in engine)
            name = _name(key, self._devices[key], key[:2] in shared_gi) + (" (gr engine)" if by_engine else "")
            out.append(InstanceLine(key[0], key[1], key[2], name, tuple(engine if by_engine else sm)))
        return out


def _name(key: _Key, device: MigDevice, with_ci: bool) -> str:
    """'GPU 0 GI 2 3g.40gb'; the compute instance too when its GPU instance is split into more than one."""
    gpu, gi, ci = key
    parts = [f"GPU {gpu}"]
    if gi is not None:
        parts.append(f"GI {gi}")
    if with_ci and ci is not None:
        parts.append(f"CI {ci}")
    parts.append(device.profile or f"MIG {device.index}")
    return " ".join(parts)
