"""A simulated H100 machine (or A100, a board without GPM): real-looking data for demos, tests and machines
without an NVIDIA driver.

The scenarios and their scenes are in scenarios.py, what the GPUs and the host report for a scene in
physics.py, and the noise in waves.py; this module is the Source over them. Every value is a smooth
function of time (slow seeded sines, no jumps), so that the same seed and clock give the same snapshots.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from dataclasses import replace

from gputui.model import ContainerInfo, GpuInfo, Snapshot, SystemInfo
from gputui.sources.base import InvalidGpuSelection
from gputui.sources.sim.physics import BOARDS, DEFAULT_BOARD, DEFAULT_GPU_COUNT, MachinePhysics, Scene, gpu_info
from gputui.sources.sim.placement import topology
from gputui.sources.sim.scenarios import BY_NAME, SCENARIO_DESCRIPTIONS, SCENARIOS, TOUR, Stage

TOUR_SEGMENT_S = 30.0
TOUR_SCENARIOS: tuple[str, ...] = tuple(BY_NAME)

# Versions: a 570 driver (CUDA 12.8) and a torch built for 12.4, except in `mismatch` (535 driver, 12.2).
_DRIVER = ("570.133.20", "12.570.133.20", "12.8")
_OLD_DRIVER = ("535.183.01", "12.535.183.01", "12.2")
_TORCH_CUDA = "12.4"
_MISMATCH_TORCH_CUDA = "12.8"

# Timestamps of a source with an injected clock start here, so that tests get the same snapshots every run.
FIXED_EPOCH = 1_767_225_600.0  # 2026-01-01 00:00 UTC


class SimulatedSource:
    """The Source protocol over a simulated machine of `gpu_count` H100s running one scenario.

    `clock` returns simulated elapsed seconds (default: monotonic seconds since `open()`); with an injected
    clock the timestamps start at FIXED_EPOCH, so the same seed and clock give the same snapshots.
    Problems that hit one GPU hit one of the selected GPUs (see `Stage`), so every `gpu_indices` selection
    shows its scenario.
    """

    def __init__(
        self,
        scenario: str = TOUR,
        gpu_count: int | None = None,
        gpu_indices: Sequence[int] | None = None,
        seed: int = 0,
        clock: Callable[[], float] | None = None,
        fallback_reason: str | None = None,
        board: str = DEFAULT_BOARD,
    ) -> None:
        if board not in BOARDS:
            raise ValueError(f"unknown board {board!r} (choose from {', '.join(BOARDS)})")
        if scenario not in SCENARIOS:
            raise ValueError(f"unknown scenario {scenario!r} (choose from {', '.join(SCENARIOS)})")
        count = DEFAULT_GPU_COUNT if gpu_count is None else gpu_count
        if count < 1:
            raise ValueError(f"a simulated machine needs at least one GPU, not {count}")
        if gpu_indices is None:
            selected = tuple(range(count))
        else:
            for index in gpu_indices:
                if not 0 <= index < count:
                    raise InvalidGpuSelection(
                        f"GPU {index} does not exist (the simulated machine has GPUs 0-{count - 1})"
                    )
            selected = tuple(dict.fromkeys(gpu_indices))
            if not selected:
                raise InvalidGpuSelection("no GPU selected")
        self.scenario = scenario
        self._count = count
        self._selected = selected
        self._clock = clock
        self._fallback_reason = fallback_reason
        self._seed = seed
        self._board = board
        rng = random.Random(f"{seed}/machine")
        pid_base = rng.randrange(18_000, 60_000)
        # The static facts of each board a scene runs on; the machine's own are drawn first, as they always were.
        self._infos = {board: tuple(gpu_info(index, rng, BOARDS[board]) for index in range(count))}
        self._physics = MachinePhysics.drawn(rng, count, seed, BOARDS[board])
        odd = selected[1] if len(selected) > 1 else selected[0]
        self._stage = Stage(count=count, pid_base=pid_base, first=selected[0], odd=odd, last=selected[-1])
        self._system: SystemInfo | None = None
        self._epoch = FIXED_EPOCH
        self._started = 0.0
        self._last_t: float | None = None
        self._last_scenario: str | None = None
        self._scenes: dict[str, Scene] = {}
        # What a scene says of the machine (driver versions, a container's limits, the board and its NVLinks up),
        # built once per kind of scene.
        self._systems: dict[tuple[bool, ContainerInfo | None, int, str, tuple[int, ...]], SystemInfo] = {}

    # -- Source protocol ---------------------------------------------------------------------------------

    def open(self) -> SystemInfo:
        self._started = time.monotonic()
        self._epoch = FIXED_EPOCH if self._clock is not None else time.time()
        self._last_t = None
        self._last_scenario = None
        self._physics.reset()
        self._systems = {}
        first = self.scenario_at(0.0)[0]
        self._system = self._system_info(self._scene(first, 0.0))
        return self._system

    def sample(self) -> Snapshot:
        if self._system is None:
            raise RuntimeError("SimulatedSource.sample() called before open()")
        t = self._elapsed()
        dt = 0.0 if self._last_t is None else max(0.0, t - self._last_t)
        self._last_t = t
        name, t_local = self.scenario_at(t)
        events: tuple[str, ...] = ()
        if self.scenario == TOUR and name != self._last_scenario:
            events = (f"simulated tour: now {name!r} - {SCENARIO_DESCRIPTIONS[name]}",)
        self._last_scenario = name
        scene = self._scene(name, t_local)
        timestamp = self._epoch + t
        physics = self._physics
        gpus = tuple(physics.gpu_sample(index, scene, t, timestamp, dt) for index in self._selected)
        host = physics.host_sample(scene, gpus, t, timestamp)
        return Snapshot(
            timestamp=timestamp,
            system=self._system_info(scene),
            gpu_info=self._gpu_info(scene),
            gpus=gpus,
            host=host,
            events=events,
        )

    def close(self) -> None:
        self._system = None

    # -- time ----------------------------------------------------------------------------------------------

    def _elapsed(self) -> float:
        if self._clock is not None:
            return float(self._clock())
        return time.monotonic() - self._started

    def scenario_at(self, elapsed: float) -> tuple[str, float]:
        """The scenario running `elapsed` seconds after open() and the seconds since it began."""
        if self.scenario != TOUR:
            return self.scenario, elapsed
        segment = int(elapsed // TOUR_SEGMENT_S)
        return TOUR_SCENARIOS[segment % len(TOUR_SCENARIOS)], elapsed - segment * TOUR_SEGMENT_S

    def _scene(self, name: str, t: float) -> Scene:
        """The plan for every GPU and the host, `t` seconds into scenario `name`; built once unless it moves."""
        scene = self._scenes.get(name)
        if scene is None:
            scenario = BY_NAME[name]
            scene = scenario.build(self._stage, t)
            if not scenario.moves:
                self._scenes[name] = scene
        return scene

    # -- static facts --------------------------------------------------------------------------------------

    def _gpu_info(self, scene: Scene) -> tuple[GpuInfo, ...]:
        """The selected GPUs' static facts, of the board the scene runs on. The machine's own board with MIG
        switched on or off is the same GPUs (the same UUIDs and serials) in the other mode."""
        board = scene.board or self._board
        infos = self._infos.get(board)
        if infos is None:
            if replace(BOARDS[board], mig=()) == replace(BOARDS[self._board], mig=()):
                mode = bool(BOARDS[board].mig)
                infos = tuple(replace(info, mig_mode=mode) for info in self._infos[self._board])
            else:
                rng = random.Random(f"{self._seed}/machine/{board}")
                infos = tuple(gpu_info(index, rng, BOARDS[board]) for index in range(self._count))
            self._infos[board] = infos
        return tuple(infos[index] for index in self._selected)

    def _system_info(self, scene: Scene) -> SystemInfo:
        container = scene.container.info if scene.container is not None else None
        down = tuple(scene.gpus[index].nvlinks_down for index in self._selected)
        key = (scene.mismatch, container, scene.cpu_count, scene.board or self._board, down)
        system = self._systems.get(key)
        if system is None:
            system = self._systems[key] = self._make_system_info(*key)
        return system

    def _make_system_info(
        self, mismatch: bool, container: ContainerInfo | None, cpu_count: int, board: str, down: tuple[int, ...]
    ) -> SystemInfo:
        driver, nvml, cuda = _OLD_DRIVER if mismatch else _DRIVER
        links = BOARDS[board].nvlinks
        nvlinks = {
            index: None if links is None else links - lost for index, lost in zip(self._selected, down, strict=True)
        }
        return SystemInfo(
            hostname=f"sim-{self.scenario}",
            source="simulated",
            driver_version=driver,
            nvml_version=nvml,
            cuda_driver_version=cuda,
            gpu_count=self._count,
            cpu_count=cpu_count,
            kernel="5.15.0-simulated",
            scenario=self.scenario,
            torch_cuda_version=_MISMATCH_TORCH_CUDA if mismatch else _TORCH_CUDA,
            fallback_reason=self._fallback_reason,
            container=container,
            topology=topology(self._selected, self._count, nvlinks, cpu_count),
        )
