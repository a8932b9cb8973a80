"""A simulated H100 machine: real-looking data for demos, tests and machines without an NVIDIA driver.

Each scenario is a situation from the field (see scenarios.py). Every value is a smooth function of time
(slow seeded sines, no jumps) so that the same seed and clock give the same snapshots, and the GPU and host
sides tell one story: a busy GPU draws power and heats, and the process that drives it shows on the host with
its CPU %, threads, data-loader children and read rate. A scenario shows its own problem and no other, so the
diagnostics can be tested for what must fire and for what must not.
"""

from __future__ import annotations

import functools
import math
import random
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from gputui.model import (
    CLOCK_EVENT_REASONS,
    GpuInfo,
    GpuProcess,
    GpuSample,
    HostSample,
    ProcSample,
    Snapshot,
    SystemInfo,
)
from gputui.sources.base import InvalidGpuSelection
from gputui.sources.scenarios import SCENARIO_DESCRIPTIONS, SCENARIOS

DEFAULT_GPU_COUNT = 4
TOUR_SEGMENT_S = 30.0
TOUR_SCENARIOS: tuple[str, ...] = tuple(name for name in SCENARIOS if name != "tour")

_BIT = {name: bit for bit, name in CLOCK_EVENT_REASONS}
_GIB = 1 << 30
_MIB = 1 << 20

# Static facts of an H100 SXM5 80GB, as its driver reports them.
GPU_NAME = "simulated H100 80GB HBM3"
MAX_SM_CLOCK_MHZ = 1980
MAX_MEMORY_CLOCK_MHZ = 2619
IDLE_SM_CLOCK_MHZ = 345
DEFAULT_POWER_LIMIT_W = 700.0
MIN_POWER_LIMIT_W = 200.0
SLOWDOWN_C = 89
SHUTDOWN_C = 92
GPU_MAX_C = 87
MEMORY_MAX_C = 95
MEMORY_TOTAL_BYTES = 80 * _GIB
MEMORY_RESERVED_BYTES = 512 * _MIB
PCIE_MAX_GEN = 5
PCIE_MAX_WIDTH = 16
_BUS_IDS = (0x18, 0x2A, 0x3A, 0x5D, 0x9A, 0xAB, 0xBA, 0xDB)

# The host: a 32-core server with 512 GiB of memory and a 25 Gbit/s link.
CPU_COUNT = 32
HOST_MEMORY_BYTES = 512 * _GIB
SWAP_TOTAL_BYTES = 8 * _GIB
NET_LINK_BYTES_S = 25e9 / 8

# Versions: a 570 driver (CUDA 12.8) and a torch built for 12.4, except in `mismatch` (535 driver, 12.2).
_DRIVER = ("570.133.20", "12.570.133.20", "12.8")
_OLD_DRIVER = ("535.183.01", "12.535.183.01", "12.2")
_TORCH_CUDA = "12.4"
_MISMATCH_TORCH_CUDA = "12.8"

# Timestamps of a source with an injected clock start here, so that tests get the same snapshots every run.
FIXED_EPOCH = 1_767_225_600.0  # 2026-01-01 00:00 UTC

# Scenarios whose plan moves with time; every other scene is built once and reused on each tick.
_MOVING_SCENES = frozenset({"thermal", "vram"})


@dataclass(frozen=True, slots=True)
class _Job:
    """A process of the simulated workload, as both the driver and the host see it."""

    pid: int
    user: str
    cmdline: str
    memory_gib: tuple[tuple[int, float], ...]  # (GPU index, GiB held there)
    cpu_pct: float
    cpu_swing: float = 6.0
    children: int = 8
    threads: int = 26
    read_bytes_s: float = 45e6
    rss_gib: float = 9.0
    state: str = "S"


@dataclass(frozen=True, slots=True)
class _GpuPlan:
    """What one GPU is asked to do at one instant; the physics in `_gpu_sample` fills in the rest."""

    idle: bool = False
    util: float = 96.0
    util_swing: float = 3.0
    power_limit_w: float = DEFAULT_POWER_LIMIT_W
    sm_clock_mhz: float | None = None  # forced (HW slowdown); None: full clocks unless power or heat says no
    temperature_c: float | None = None  # forced (bad cooling); None: follows the power draw
    pcie_gen: int = PCIE_MAX_GEN
    pcie_width: int = PCIE_MAX_WIDTH
    reasons: int = 0  # clock event bits asserted from outside (HW slowdown, power brake)


@dataclass(frozen=True, slots=True)
class _HostPlan:
    iowait_pct: float = 0.4
    disk_busy_pct: float | None = None  # None: follows the read rate
    disk_write_bytes_s: float = 22e6
    worker_cpu_pct: float = 30.0  # CPU % of each data-loader child
    net_rx_bytes_s: float = 4e6


@dataclass(frozen=True, slots=True)
class _Scene:
    gpus: dict[int, _GpuPlan]
    jobs: tuple[_Job, ...]
    host: _HostPlan
    mismatch: bool = False


_Sine = tuple[float, float, float]  # (angular frequency, phase, weight)


class _Waves:
    """Seeded smooth noise in [-1, 1]: three slow sines per key, so values drift without jumping.

    A tick asks for ~150 of them, so the three sines are spelled out rather than summed over a generator.
    """

    def __init__(self, seed: int) -> None:
        self._seed = seed
        self._params: dict[str, tuple[_Sine, _Sine, _Sine]] = {}
        self._groups: dict[tuple[str, ...], list[tuple[_Sine, _Sine, _Sine]]] = {}

    def __call__(self, key: str, t: float) -> float:
        (omega1, phase1, weight1), (omega2, phase2, weight2), (omega3, phase3, weight3) = self._get(key)
        sin = math.sin
        return (
            weight1 * sin(omega1 * t + phase1) + weight2 * sin(omega2 * t + phase2) + weight3 * sin(omega3 * t + phase3)
        )

    def many(self, keys: tuple[str, ...], t: float) -> list[float]:
        """The waves of many keys at `t` (a host's cores, a job's workers): the values one call each gives."""
        group = self._groups.get(keys)
        if group is None:
            group = self._groups[keys] = [self._get(key) for key in keys]
        sin = math.sin
        return [
            weight1 * sin(omega1 * t + phase1) + weight2 * sin(omega2 * t + phase2) + weight3 * sin(omega3 * t + phase3)
            for (omega1, phase1, weight1), (omega2, phase2, weight2), (omega3, phase3, weight3) in group
        ]

    def _get(self, key: str) -> tuple[_Sine, _Sine, _Sine]:
        params = self._params.get(key)
        if params is None:
            params = self._params[key] = self._draw(key)
        return params

    def _draw(self, key: str) -> tuple[_Sine, _Sine, _Sine]:
        rng = random.Random(f"{self._seed}/{key}")
        raw = [
            (2 * math.pi / rng.uniform(6.0, 60.0), rng.uniform(0, 2 * math.pi), rng.uniform(0.3, 1.0)) for _ in range(3)
        ]
        total = sum(weight for _, _, weight in raw)
        first, second, third = ((omega, phase, weight / total) for omega, phase, weight in raw)
        return first, second, third


def _clamp(value: float, low: float, high: float) -> float:
    """max(low, min(high, value)), ties and all, without two built-in calls: a tick clamps ~130 values."""
    capped = value if value < high else high
    return capped if capped > low else low


_CORE_KEYS = tuple(f"core{c}" for c in range(CPU_COUNT))


@functools.lru_cache(maxsize=256)
def _worker_keys(pid: int, children: int) -> tuple[str, ...]:
    """Wave keys of a job's data-loader workers, made once rather than formatted on every tick."""
    return tuple(f"pid{pid}/w{w}" for w in range(children))


def _smoothstep(x: float) -> float:
    x = _clamp(x, 0.0, 1.0)
    return x * x * (3 - 2 * x)


class SimulatedSource:
    """The Source protocol over a simulated machine of `gpu_count` H100s running one scenario.

    `clock` returns simulated elapsed seconds (default: monotonic seconds since `open()`); with an injected
    clock the timestamps start at FIXED_EPOCH, so the same seed and clock give the same snapshots.
    Problems that hit one GPU hit one of the selected GPUs (the second, or the first in `contention` and
    `imbalance`), so every `gpu_indices` selection shows its scenario.
    """

    def __init__(
        self,
        scenario: str = "tour",
        gpu_count: int | None = None,
        gpu_indices: Sequence[int] | None = None,
        seed: int = 0,
        clock: Callable[[], float] | None = None,
        fallback_reason: str | None = None,
    ) -> None:
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
        self._seed = seed
        self._clock = clock
        self._fallback_reason = fallback_reason
        self._waves = _Waves(seed)
        rng = random.Random(f"{seed}/machine")
        self._pid_base = rng.randrange(18_000, 60_000)
        self._info = tuple(self._gpu_info(index, rng) for index in range(count))
        self._temp_offset = tuple(rng.uniform(-2.5, 2.5) for _ in range(count))
        self._start_counters = tuple(
            (rng.uniform(2e9, 9e9), rng.randrange(10**12, 10**13), rng.randrange(10**9, 10**10)) for _ in range(count)
        )
        self._system: SystemInfo | None = None
        self._epoch = FIXED_EPOCH
        self._started = 0.0
        self._last_t: float | None = None
        self._last_scenario: str | None = None
        self._scenes: dict[str, _Scene] = {}
        self._tour_systems: dict[bool, SystemInfo] = {}
        self._energy_mj: list[float] = []
        self._power_violation_ns: list[float] = []
        self._thermal_violation_ns: list[float] = []

    # -- Source protocol ---------------------------------------------------------------------------------

    def open(self) -> SystemInfo:
        self._started = time.monotonic()
        self._epoch = FIXED_EPOCH if self._clock is not None else time.time()
        self._last_t = None
        self._last_scenario = None
        self._energy_mj = [c[0] for c in self._start_counters]
        self._power_violation_ns = [float(c[1]) for c in self._start_counters]
        self._thermal_violation_ns = [float(c[2]) for c in self._start_counters]
        self._system = self._system_info(mismatch=self.scenario == "mismatch")
        self._tour_systems = {mismatch: self._system_info(mismatch=mismatch) for mismatch in (False, True)}
        return self._system

    def sample(self) -> Snapshot:
        if self._system is None:
            raise RuntimeError("SimulatedSource.sample() called before open()")
        t = self._elapsed()
        dt = 0.0 if self._last_t is None else max(0.0, t - self._last_t)
        self._last_t = t
        name, t_local = self.scenario_at(t)
        events: tuple[str, ...] = ()
        if self.scenario == "tour" and name != self._last_scenario:
            events = (f"simulated tour: now {name!r} - {SCENARIO_DESCRIPTIONS[name]}",)
        self._last_scenario = name
        scene = self._scene(name, t_local)
        timestamp = self._epoch + t
        gpus = tuple(self._gpu_sample(index, scene, t, timestamp, dt) for index in self._selected)
        host = self._host_sample(scene, gpus, t, timestamp)
        system = self._system
        if self.scenario == "tour":
            system = self._tour_systems[scene.mismatch]
        return Snapshot(
            timestamp=timestamp,
            system=system,
            gpu_info=tuple(self._info[index] for index in self._selected),
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
        if self.scenario != "tour":
            return self.scenario, elapsed
        segment = int(elapsed // TOUR_SEGMENT_S)
        return TOUR_SCENARIOS[segment % len(TOUR_SCENARIOS)], elapsed - segment * TOUR_SEGMENT_S

    # -- static facts --------------------------------------------------------------------------------------

    def _system_info(self, *, mismatch: bool) -> SystemInfo:
        driver, nvml, cuda = _OLD_DRIVER if mismatch else _DRIVER
        return SystemInfo(
            hostname=f"sim-{self.scenario}",
            source="simulated",
            driver_version=driver,
            nvml_version=nvml,
            cuda_driver_version=cuda,
            gpu_count=self._count,
            cpu_count=CPU_COUNT,
            kernel="5.15.0-simulated",
            scenario=self.scenario,
            torch_cuda_version=_MISMATCH_TORCH_CUDA if mismatch else _TORCH_CUDA,
            fallback_reason=self._fallback_reason,
        )

    @staticmethod
    def _gpu_info(index: int, rng: random.Random) -> GpuInfo:
        bus = _BUS_IDS[index] if index < len(_BUS_IDS) else 0xE0 + index
        return GpuInfo(
            index=index,
            name=GPU_NAME,
            uuid=f"GPU-{uuid.UUID(int=rng.getrandbits(128), version=4)}",
            serial=str(rng.randrange(1_650_000_000_000, 1_660_000_000_000)),
            pci_bus_id=f"00000000:{bus:02X}:00.0",
            memory_total_bytes=MEMORY_TOTAL_BYTES,
            max_sm_clock_mhz=MAX_SM_CLOCK_MHZ,
            max_memory_clock_mhz=MAX_MEMORY_CLOCK_MHZ,
            max_graphics_clock_mhz=MAX_SM_CLOCK_MHZ,
            default_app_sm_clock_mhz=1755,
            default_app_memory_clock_mhz=MAX_MEMORY_CLOCK_MHZ,
            pcie_max_gen=PCIE_MAX_GEN,
            pcie_max_width=PCIE_MAX_WIDTH,
            pcie_gpu_max_gen=PCIE_MAX_GEN,
            power_default_limit_w=DEFAULT_POWER_LIMIT_W,
            power_min_limit_w=MIN_POWER_LIMIT_W,
            power_max_limit_w=DEFAULT_POWER_LIMIT_W,
            temperature_slowdown_c=SLOWDOWN_C,
            temperature_shutdown_c=SHUTDOWN_C,
            temperature_gpu_max_c=GPU_MAX_C,
            temperature_memory_max_c=MEMORY_MAX_C,
            persistence_mode=True,
            compute_mode="Default",
            mig_mode=False,
            ecc_mode=True,
        )

    # -- the scenarios -------------------------------------------------------------------------------------

    def _ranks(self, cmdline: str, memory_gib: float, **overrides: Any) -> tuple[_Job, ...]:
        """One process per GPU, as torchrun starts them: the usual shape of a training job."""
        fields: dict[str, Any] = {"user": "alice", "cpu_pct": 72.0, **overrides}
        return tuple(
            _Job(
                pid=self._pid_base + index,
                cmdline=f"{cmdline} --local-rank {index}",
                memory_gib=((index, memory_gib),),
                **fields,
            )
            for index in range(self._count)
        )

    def _scene(self, name: str, t: float) -> _Scene:
        """The plan for every GPU and the host, `t` seconds into scenario `name`."""
        scene = self._scenes.get(name)
        if scene is None:
            scene = self._build_scene(name, t)
            if name not in _MOVING_SCENES:
                self._scenes[name] = scene
        return scene

    def _build_scene(self, name: str, t: float) -> _Scene:
        train = "python3 train.py --config configs/llama-7b.yaml"
        odd = self._selected[1] if len(self._selected) > 1 else self._selected[0]
        first = self._selected[0]
        busy = {index: _GpuPlan() for index in range(self._count)}
        if name == "idle":
            return _Scene(
                {i: _GpuPlan(idle=True, pcie_gen=1) for i in busy},
                (),
                _HostPlan(iowait_pct=0.1, disk_write_bytes_s=0.4e6, net_rx_bytes_s=30e3),
            )
        if name == "thermal":
            # Bad airflow on one GPU: it climbs from just below the margin past its slowdown threshold within
            # a few seconds, so a default 10 s `diagnose` sees the throttling.
            temp = SLOWDOWN_C + 1.6 - 3.4 * math.exp(-t / 3.0)
            busy[odd] = _GpuPlan(temperature_c=temp)
            return _Scene(busy, self._ranks(train, 61.0), _HostPlan())
        if name == "powercap":
            return _Scene({i: _GpuPlan(power_limit_w=400.0) for i in busy}, self._ranks(train, 61.0), _HostPlan())
        if name == "hwslowdown":
            reasons = _BIT["hw_slowdown"] | _BIT["hw_power_brake"]
            plans = {i: _GpuPlan(sm_clock_mhz=990.0, reasons=reasons) for i in busy}
            return _Scene(plans, self._ranks(train, 61.0), _HostPlan())
        if name == "pcie":
            busy[odd] = _GpuPlan(pcie_gen=3, pcie_width=8)
            return _Scene(busy, self._ranks(train, 61.0), _HostPlan())
        if name == "vram":
            # A caching allocator that keeps growing: ~97.5% at the start, creeping towards 99.5%.
            used = MEMORY_TOTAL_BYTES * (0.995 - 0.02 * math.exp(-t / 200.0))
            gib = (used - MEMORY_RESERVED_BYTES) / _GIB
            return _Scene(busy, self._ranks(f"{train} --batch-size 64", gib), _HostPlan())
        if name == "starved-cpu":
            jobs = self._ranks(
                "python3 train_resnet50.py --data /data/imagenet --num-workers 0",
                21.0,
                cpu_pct=99.2,
                cpu_swing=0.6,
                children=0,
                threads=14,
                read_bytes_s=30e6,
                state="R",
            )
            plans = {i: _GpuPlan(util=22.0, util_swing=10.0) for i in busy}
            return _Scene(plans, jobs, _HostPlan(worker_cpu_pct=0.0))
        if name == "starved-io":
            jobs = self._ranks(
                "python3 train_resnet50.py --data /mnt/hdd/imagenet --num-workers 8",
                21.0,
                cpu_pct=38.0,
                read_bytes_s=127e6,
            )
            plans = {i: _GpuPlan(util=26.0, util_swing=10.0) for i in busy}
            return _Scene(plans, jobs, _HostPlan(iowait_pct=36.0, disk_busy_pct=98.6, worker_cpu_pct=6.0))
        if name == "contention":
            notebook = _Job(
                pid=self._pid_base + 3217,
                user="bob",
                cmdline="python3 -m ipykernel_launcher -f /home/bob/.local/share/jupyter/runtime/kernel-7f3.json",
                memory_gib=((first, 16.0),),
                cpu_pct=9.0,
                cpu_swing=4.0,
                children=0,
                threads=31,
                read_bytes_s=0.3e6,
                rss_gib=5.0,
            )
            return _Scene(busy, (*self._ranks(train, 52.0), notebook), _HostPlan())
        if name == "imbalance":
            memory = tuple((i, 70.0 if i == first else 38.0) for i in range(self._count))
            job = _Job(
                pid=self._pid_base,
                user="alice",
                cmdline="python3 train_dataparallel.py --model resnet152 --batch-size 512",
                memory_gib=memory,
                cpu_pct=64.0,
                children=6,
                threads=40,
                read_bytes_s=160e6,
                rss_gib=14.0,
            )
            plans = {
                i: _GpuPlan(util=96.0 if i == first else 42.0, util_swing=3.0 if i == first else 7.0) for i in busy
            }
            return _Scene(plans, (job,), _HostPlan())
        if name == "mismatch":
            return _Scene(busy, self._ranks(train, 61.0), _HostPlan(), mismatch=True)
        return _Scene(busy, self._ranks(train, 61.0), _HostPlan())  # healthy

    # -- the physics ---------------------------------------------------------------------------------------

    def _gpu_sample(self, index: int, scene: _Scene, t: float, timestamp: float, dt: float) -> GpuSample:
        plan = scene.gpus[index]
        wave = self._waves
        key = f"gpu{index}"
        procs = tuple(
            GpuProcess(pid=job.pid, used_memory_bytes=int(gib * _GIB) // _MIB * _MIB)
            for job in scene.jobs
            for gpu, gib in job.memory_gib
            if gpu == index
        )
        used = sum(p.used_memory_bytes or 0 for p in procs)
        power_throttled = thermal_throttled = False
        if plan.idle:
            util = mem_util = 0.0
            clock = float(IDLE_SM_CLOCK_MHZ)
            power = 69.0 + 2.0 * wave(f"{key}/power", t)
            temp = 31.0 + self._temp_offset[index] + 0.8 * wave(f"{key}/temp", t)
            rx = 18e3 + 6e3 * wave(f"{key}/rx", t)
            tx = 12e3 + 4e3 * wave(f"{key}/tx", t)
            reasons = _BIT["gpu_idle"]
            pstate = 8
            used = _MIB
        else:
            util = _clamp(plan.util + plan.util_swing * wave(f"{key}/util", t), 0.0, 100.0)
            mem_util = _clamp(util * 0.45 + 4.0 * wave(f"{key}/memutil", t), 0.0, 100.0)
            reasons = plan.reasons
            pstate = 0
            clock = float(MAX_SM_CLOCK_MHZ)
            if plan.sm_clock_mhz is not None:
                clock = plan.sm_clock_mhz + 15.0 * wave(f"{key}/clock", t)
            temp = 0.0
            if plan.temperature_c is not None:
                temp = plan.temperature_c + 0.3 * wave(f"{key}/temp", t)
                clock -= 420.0 * _smoothstep((temp - SLOWDOWN_C) / 1.5)
                if temp >= SLOWDOWN_C:
                    reasons |= _BIT["sw_thermal_slowdown"]
                    thermal_throttled = True
                if temp >= SLOWDOWN_C + 1:
                    reasons |= _BIT["hw_thermal_slowdown"]
            dynamic = util / 100.0 * 520.0
            power = 90.0 + dynamic * (clock / MAX_SM_CLOCK_MHZ) ** 2 + 12.0 * wave(f"{key}/power", t)
            if power > plan.power_limit_w - 6.0:
                # The power policy holds the draw just under the enforced limit by lowering the clock.
                power = plan.power_limit_w - 4.0 + 2.0 * wave(f"{key}/power", t)
                clock = min(clock, MAX_SM_CLOCK_MHZ * math.sqrt(max(0.0, power - 90.0) / max(dynamic, 1.0)))
                reasons |= _BIT["sw_power_cap"]
                power_throttled = True
            if plan.temperature_c is None:
                temp = 28.0 + self._temp_offset[index] + power * 0.058 + 0.6 * wave(f"{key}/temp", t)
            load = util / 100.0
            rx = 2.2e9 * load + 0.3e9 * load * wave(f"{key}/rx", t)
            tx = 0.6e9 * load + 0.1e9 * load * wave(f"{key}/tx", t)
        self._energy_mj[index] += power * dt * 1000.0
        if power_throttled:
            self._power_violation_ns[index] += dt * 1e9
        if thermal_throttled:
            self._thermal_violation_ns[index] += dt * 1e9
        return GpuSample(
            index=index,
            timestamp=timestamp,
            utilization_gpu_pct=round(util, 1),
            utilization_memory_pct=round(mem_util, 1),
            sm_clock_mhz=round(clock),
            memory_clock_mhz=MAX_MEMORY_CLOCK_MHZ,
            graphics_clock_mhz=round(clock),
            temperature_c=round(temp, 1),
            memory_temperature_c=round(temp + 6.0, 1),
            power_w=round(power, 1),
            power_limit_w=plan.power_limit_w,
            memory_used_bytes=used,
            memory_reserved_bytes=MEMORY_RESERVED_BYTES,
            memory_free_bytes=MEMORY_TOTAL_BYTES - MEMORY_RESERVED_BYTES - used,
            pcie_gen=plan.pcie_gen,
            pcie_width=plan.pcie_width,
            pcie_tx_bytes_s=round(tx),
            pcie_rx_bytes_s=round(rx),
            pcie_replay_count=0,
            fan_pct=None,  # passively cooled SXM boards report no fan (NotSupported)
            pstate=pstate,
            clock_event_reasons_mask=reasons,
            power_violation_ns=int(self._power_violation_ns[index]),
            thermal_violation_ns=int(self._thermal_violation_ns[index]),
            energy_mj=int(self._energy_mj[index]),
            ecc_uncorrected=0,
            retired_pages_pending=False,
            encoder_pct=0.0,
            decoder_pct=0.0,
            processes=procs,
        )

    def _host_sample(self, scene: _Scene, gpus: tuple[GpuSample, ...], t: float, timestamp: float) -> HostSample:
        wave = self._waves
        plan = scene.host
        shown = {sample.index for sample in gpus}
        listed = {job.pid for job in scene.jobs if any(gpu in shown for gpu, _ in job.memory_gib)}
        # Every process of the workload runs, whether or not its GPU is shown: the host sees them all.
        procs = []
        loads: list[float] = []
        for job in scene.jobs:
            cpu = _clamp(job.cpu_pct + job.cpu_swing * wave(f"pid{job.pid}/cpu", t), 0.0, 100.0 * CPU_COUNT)
            loads.append(cpu)
            if plan.worker_cpu_pct > 0:
                workers = wave.many(_worker_keys(job.pid, job.children), t)
                loads.extend(_clamp(plan.worker_cpu_pct + 8.0 * w, 0.0, 100.0) for w in workers)
            if job.pid in listed:
                procs.append(
                    ProcSample(
                        pid=job.pid,
                        name="python3",
                        user=job.user,
                        cmdline=job.cmdline,
                        cpu_pct=round(cpu, 1),
                        threads=job.threads,
                        children=job.children,
                        read_bytes_s=round(job.read_bytes_s * (1.0 + 0.03 * wave(f"pid{job.pid}/read", t))),
                        rss_bytes=int(job.rss_gib * _GIB),
                        state=job.state,
                    )
                )
        cores = [1.5 + 1.2 * c for c in wave.many(_CORE_KEYS, t)]
        for n, load in enumerate(loads):
            core = (n * 5) % CPU_COUNT
            cores[core] = _clamp(cores[core] + load, 0.0, 100.0)
        iowait = _clamp(plan.iowait_pct * (1.0 + 0.1 * wave("iowait", t)), 0.0, 100.0)
        read = sum(job.read_bytes_s for job in scene.jobs) * (1.0 + 0.03 * wave("disk/read", t)) + 1.5e6
        busy = plan.disk_busy_pct
        if busy is None:
            busy = 3.0 + read / 2.5e9 * 100.0
        busy = _clamp(busy + 1.2 * wave("disk/busy", t), 0.0, 100.0)
        running = sum(cores) / 100.0 + (iowait / 100.0) * CPU_COUNT
        rss = sum(job.rss_gib for job in scene.jobs) * _GIB
        return HostSample(
            timestamp=timestamp,
            cpu_pct_per_core=tuple(round(c, 1) for c in cores),
            iowait_pct=round(iowait, 1),
            steal_pct=0.0,
            load_avg=(round(running, 2), round(running * 0.97, 2), round(running * 0.93, 2)),
            memory_used_bytes=int(38 * _GIB + rss + 2 * _GIB * wave("host/mem", t)),
            memory_total_bytes=HOST_MEMORY_BYTES,
            swap_used_bytes=300 * _MIB,
            swap_total_bytes=SWAP_TOTAL_BYTES,
            swap_in_bytes_s=0.0,
            swap_out_bytes_s=0.0,
            disk_read_bytes_s=round(read),
            disk_write_bytes_s=round(plan.disk_write_bytes_s * (1.0 + 0.2 * wave("disk/write", t))),
            disk_busy_pct=round(busy, 1),
            net_rx_bytes_s=round(plan.net_rx_bytes_s * (1.0 + 0.2 * wave("net/rx", t))),
            net_tx_bytes_s=round(3e6 * (1.0 + 0.2 * wave("net/tx", t))),
            net_link_bytes_s=NET_LINK_BYTES_S,
            processes=tuple(procs),
        )
