"""Which machine a session reads, and opening it: the driver, the simulated machine, the lab's machine that follows a
real job (`--demo-job`), or a recording played back; the commands say which with a SourceChoice or a ReplayChoice
built from their options."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from gputui.model import Snapshot, SystemInfo
from gputui.record.reader import Recording
from gputui.session.loop import Pace, SimulatedTime
from gputui.sources.base import Source, SourceUnavailable
from gputui.sources.sim.physics import DEFAULT_BOARD


@dataclass(frozen=True, slots=True)
class SourceChoice:
    """This machine's driver, or the simulated machine (`demo`, a scenario), or the lab's (`demo_job`, a job's
    trace), and how to read it."""

    demo: str | None = None
    demo_job: Path | None = None
    demo_job_cpus: str | None = None  # the CPUs near the lab's simulated GPU (default: every CPU)
    demo_gpu: str = DEFAULT_BOARD  # the simulated GPU model
    demo_gpus: int | None = None  # how many GPUs the simulated machine has
    gpus: tuple[int, ...] | None = None  # only these GPUs
    fallback_demo: bool = False  # the simulated machine, saying why, where the driver cannot be read
    long_running: bool = False  # the driver's XID thread wakes every few seconds, not 5 times a second
    own_cgroup: bool = True  # read the cgroup gputui runs in (not for an exporter in a pod of its own)
    simulated_time: bool = False  # the simulated machine's seconds pass at once, as the loop waits (diagnose)


@dataclass(frozen=True, slots=True)
class ReplayChoice:
    """A recording played back at `speed`, from `start` (seconds after its first tick; None: its start)."""

    recording: Recording
    speed: float = 1.0
    start: float | None = None


def open_source(choice: SourceChoice | ReplayChoice | Source) -> tuple[Source, SystemInfo, Pace | None]:
    """The source chosen (or one made by the caller, a test's), opened; what it reports of the machine; and the time
    it runs on where that is not real time (the simulated machine's in `simulated_time`).

    Raises SourceUnavailable when it cannot be read (the driver, unless `fallback_demo`; a recording), and
    ValueError for a choice that cannot be (InvalidGpuSelection: `gpus` names a GPU that is not there)."""
    if isinstance(choice, ReplayChoice):
        from gputui.sources.playback import ReplaySource

        replay = ReplaySource(choice.recording, speed=choice.speed, start=choice.start)
        return replay, replay.open(), None
    if not isinstance(choice, SourceChoice):
        return choice, choice.open(), None
    if choice.demo_job is not None:
        from gputui.sources.sim.job import JobSource

        followed = JobSource(
            choice.demo_job, near_cpus=choice.demo_job_cpus, board=choice.demo_gpu, gpu_indices=choice.gpus
        )
        return followed, followed.open(), None
    if choice.demo is not None:
        return _simulated(choice)
    return _driver(choice)


def _simulated(choice: SourceChoice) -> tuple[Source, SystemInfo, Pace | None]:
    from gputui.sources.sim.source import SimulatedSource

    pace = SimulatedTime() if choice.simulated_time else None
    demo = SimulatedSource(
        scenario=choice.demo or "tour",
        gpu_count=choice.demo_gpus,
        gpu_indices=choice.gpus,
        board=choice.demo_gpu,
        clock=None if pace is None else pace.now,
    )
    return demo, demo.open(), pace


def _driver(choice: SourceChoice) -> tuple[Source, SystemInfo, Pace | None]:
    from gputui.sources.host.source import HostSource
    from gputui.sources.nvml.events import DEFAULT_WAIT_MS, LONG_WAIT_MS
    from gputui.sources.nvml.source import NvmlSource
    from gputui.sources.sim.source import SimulatedSource

    source: Source = NvmlSource(
        gpu_indices=choice.gpus,
        xid_wait_ms=LONG_WAIT_MS if choice.long_running else DEFAULT_WAIT_MS,
        host=None if choice.own_cgroup else HostSource(cgroup_pid=None),
    )
    try:
        return source, source.open(), None
    except SourceUnavailable as exc:
        if not choice.fallback_demo:
            raise
        source = SimulatedSource(scenario="tour", gpu_indices=choice.gpus, fallback_reason=str(exc))
        return source, source.open(), None


class WithTorchCuda:
    """The live source, its readings marked with the CUDA version the local torch was built for (read once, from
    torch's version.py: no import, no child process), for `cuda_mismatch` to compare with the driver's."""

    def __init__(self, source: Source) -> None:
        from gputui.sources.host.torch_cuda import torch_cuda_version

        self._source = source
        self._version = torch_cuda_version()

    def open(self) -> SystemInfo:
        return self._source.open()

    def sample(self) -> Snapshot:
        snapshot = self._source.sample()
        if self._version is None:
            return snapshot
        return replace(snapshot, system=replace(snapshot.system, torch_cuda_version=self._version))

    def close(self) -> None:
        self._source.close()
