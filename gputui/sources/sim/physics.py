"""The simulated machine's physics: what an H100 and its host report when asked to do what a scene plans.

A scene says what each GPU and the host are asked to do (busy or idle, a lowered power limit, a forced
temperature, a narrow link); the physics fills in the rest so that both sides tell one story: a busy GPU draws
power and heats, and the process that drives it shows on the host with its CPU %, threads, data-loader
children and read rate.

A board in MIG mode (`h100-mig`) is split into GPU instances, each with its own load, memory, processes and
GPM, as a driver reports them: the parent has no whole-GPU utilization and no GPM, and keeps the readings that
only it has (temperature, power, clocks, PCIe, ECC, NVLink), which follow the instances' load together.
"""

from __future__ import annotations

import functools
import math
import random
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, replace

from gputui import model
from gputui.sources.sim.placement import near_cpu
from gputui.sources.sim.waves import Waves, clamp, smoothstep

BIT = {name: bit for bit, name in model.CLOCK_EVENT_REASONS}
GIB = 1 << 30
MIB = 1 << 20

DEFAULT_GPU_COUNT = 4
DEFAULT_POWER_LIMIT_W = 700.0
SLOWDOWN_C = 89
SHUTDOWN_C = 92
GPU_MAX_C = 87
MEMORY_MAX_C = 95
MEMORY_TOTAL_BYTES = 80 * GIB
MEMORY_RESERVED_BYTES = 512 * MIB
PCIE_MAX_GEN = 5
PCIE_MAX_WIDTH = 16


def held_bytes(gib: float) -> int:
    """GPU memory a process holds, in whole MiB as the driver reports it."""
    return int(gib * GIB) // MIB * MIB


@dataclass(frozen=True, slots=True)
class Board:
    """The GPU model the simulated machine has: its static facts and how its power follows its load."""

    name: str
    max_sm_clock_mhz: int
    max_memory_clock_mhz: int
    idle_sm_clock_mhz: int
    power_limit_w: float
    min_power_limit_w: float
    idle_power_w: float
    base_power_w: float  # drawn by a busy board before its clocks and load add theirs
    load_power_w: float  # added at 100% utilization and full clocks
    pcie_gen: int
    gpm: bool  # Hopper and newer report GPM (SM, tensor, DRAM activity); older boards answer not supported
    nvlinks: int | None  # links to the NVSwitch fabric; None on boards without NVLink
    nvlink_version: int | None
    memory_total_bytes: int = MEMORY_TOTAL_BYTES
    # In MIG mode: the GPU instances every GPU is split into, (profile, GPU instance id) in the driver's order;
    # empty: MIG off.
    mig: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True, slots=True)
class MigProfile:
    """A GPU instance profile of the H100 SXM 80GB, as `nvidia-smi mig -lgip` lists it."""

    name: str
    slices: int  # compute slices, of the GPU's MIG_SLICES
    sm_count: int
    memory_bytes: int


MIG_SLICES = 7  # an A100 or H100 has 7 compute slices (and 8 memory slices)
# Each with its own SMs and memory; the memory is what nvmlDeviceGetMemoryInfo gives on the instance's handle.
MIG_PROFILES: dict[str, MigProfile] = {
    profile.name: profile
    for profile in (
        MigProfile("1g.10gb", 1, 16, 9984 * MIB),
        MigProfile("1g.20gb", 1, 26, 20096 * MIB),
        MigProfile("2g.20gb", 2, 32, 20096 * MIB),
        MigProfile("3g.40gb", 3, 60, 40448 * MIB),
        MigProfile("4g.40gb", 4, 64, 40448 * MIB),
        MigProfile("7g.80gb", 7, 132, 81152 * MIB),
    )
}

_H100 = Board(
    "simulated H100 80GB HBM3", 1980, 2619, 345, DEFAULT_POWER_LIMIT_W, 200.0, 69.0, 90.0, 520.0, 5, True, 18, 4
)

# H100 SXM5 80GB and A100 SXM4 80GB (NVLink through NVSwitch), the same H100 in MIG mode split into two 3g.40gb
# instances (GI 1 and GI 2, as the driver numbers the two halves), and the GeForce RTX 4090 of a consumer box (no
# NVLink, no GPM, 24 GiB), as their drivers report them.
BOARDS: dict[str, Board] = {
    "h100": _H100,
    "h100-mig": replace(_H100, mig=(("3g.40gb", 1), ("3g.40gb", 2))),
    "a100": Board("simulated A100-SXM4-80GB", 1410, 1593, 210, 400.0, 100.0, 52.0, 70.0, 280.0, 4, False, 12, 3),
    "rtx4090": Board(
        "simulated GeForce RTX 4090", 2520, 10501, 210, 450.0, 150.0, 22.0, 60.0, 330.0, 4, False, None, None, 24 * GIB
    ),
}
DEFAULT_BOARD = "h100"
_BUS_IDS = (0x18, 0x2A, 0x3A, 0x5D, 0x9A, 0xAB, 0xBA, 0xDB)

# The host: a 32-core server with 512 GiB of memory and a 25 Gbit/s link.
CPU_COUNT = 32
HOST_MEMORY_BYTES = 512 * GIB
SWAP_TOTAL_BYTES = 8 * GIB
NET_LINK_BYTES_S = 25e9 / 8


@dataclass(frozen=True, slots=True)
class Job:
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
    ppid: int | None = None  # the launcher that started it (torchrun): ranks of one job share it
    started_s_before: float = 9000.0  # how long it had run when the scenario began
    gpu_weight: float = 1.0  # its part of a shared GPU's time, against the other processes' weights
    cpus_allowed: tuple[int, ...] | None = None  # where it may run; None: anywhere on the host
    last_cpu: int | None = None  # where its main thread last ran; None: a CPU near its first GPU
    # The MIG instance it runs in on a board in MIG mode, its memory_gib sized for that instance; None: the
    # physics places it (the k-th process of a GPU in its k-th instance, round the layout), with its memory
    # scaled to the instance's share of the GPU, as a job sizes its batch to the memory it sees.
    gpu_instance_id: int | None = None


@dataclass(frozen=True, slots=True)
class GpuPlan:
    """What one GPU is asked to do at one instant; `MachinePhysics.gpu_sample` fills in the rest."""

    idle: bool = False
    util: float = 96.0
    util_swing: float = 3.0
    power_limit_w: float = DEFAULT_POWER_LIMIT_W
    sm_clock_mhz: float | None = None  # forced (HW slowdown); None: full clocks unless power or heat says no
    temperature_c: float | None = None  # forced (bad cooling); None: follows the power draw
    pcie_gen: int = PCIE_MAX_GEN
    pcie_width: int = PCIE_MAX_WIDTH
    reasons: int = 0  # clock event bits asserted from outside (HW slowdown, with or without the power brake)
    ecc_uncorrected: int = 0  # uncorrected ECC errors counted since the driver loaded
    nvlinks_down: int = 0  # of the board's NVLinks (a bad reseat, the fabric manager not running)
    nvlink_replays_s: float = 0.0  # NVLink replay errors added per second (a marginal link)
    # In MIG mode, the plan of each GPU instance in the board's order, of which the load counts (idle, util,
    # util_swing and how the busy time is spent); empty: an instance with processes runs as this plan says, one
    # without is idle.
    slices: tuple[GpuPlan, ...] = ()
    # The MIG mode an administrator set that waits for a GPU reset to take effect; None: no change pending.
    mig_pending: bool | None = None
    # How the busy time is spent, as GPM reads it: SM activity per unit of utilization (small kernels leave
    # SMs empty), tensor-core and plain-FP32 activity as shares of SM activity, DRAM bandwidth per unit of
    # utilization. The defaults are a bf16 training step that keeps the GPU well fed.
    sm_fill: float = 0.89
    tensor_share: float = 0.56
    fp32_share: float = 0.14
    dram_fill: float = 0.55
    # A collective's kernel waiting on a peer that does not come (NVIDIA/nccl#1025): it runs all the time, so
    # utilization reads busy, but on a few SMs doing nothing, so its power stays near idle (SPIN_LOAD of the load's).
    spinning: bool = False


# What a spinning kernel draws of a full load's power, and fills of the SMs: a busy GPU doing nothing.
SPIN_LOAD = 0.05
SPIN_SM_FILL = 0.03


def spinning_plan() -> GpuPlan:
    """A GPU whose collective's kernel spins, waiting: ~100% busy at ~3% SM activity and near-idle power."""
    return GpuPlan(util=99.5, util_swing=0.4, sm_fill=SPIN_SM_FILL, tensor_share=0.0, dram_fill=0.01, spinning=True)


@dataclass(frozen=True, slots=True)
class HostPlan:
    iowait_pct: float = 0.4
    disk_busy_pct: float | None = None  # None: follows the read rate
    disk_write_bytes_s: float = 22e6
    worker_cpu_pct: float = 30.0  # CPU % of each data-loader child
    net_rx_bytes_s: float = 4e6
    # Share of the time each of a job's processes (its main thread, each data-loader child) waits on a run queue;
    # None: not simulated, read as not reported.
    run_queue_wait_pct: float | None = None


@dataclass(frozen=True, slots=True)
class ContainerPlan:
    """The container the workload runs in: its limits, the host it sits on, and how hard the kernel holds it.

    The jobs' CPU then adds up to what the quota allows, spread over a host of `host_cpus` cores that reads
    nearly idle, as it does from inside a real container.
    """

    info: model.ContainerInfo
    host_cpus: int = 128
    quota_used_pct: float = 60.0
    throttled_pct: float = 1.0
    memory_used_gib: float = 20.0
    shm_used_bytes: int = 0
    oom_kills: int = 0  # the cgroup's counter so far
    psi_cpu_some_pct: float = 2.0


@dataclass(frozen=True, slots=True)
class Scene:
    """The plan for every GPU and the host at one instant of a scenario."""

    gpus: dict[int, GpuPlan]
    jobs: tuple[Job, ...]
    host: HostPlan
    mismatch: bool = False
    container: ContainerPlan | None = None
    # The BOARDS key of the GPUs this scene runs on, when not the machine's own: `pcie-box` needs consumer boards
    # even in the tour, and the scene is what the physics and the source's static facts both read.
    board: str | None = None

    @property
    def cpu_count(self) -> int:
        return self.container.host_cpus if self.container is not None else CPU_COUNT


@functools.lru_cache(maxsize=4)
def _core_keys(count: int) -> tuple[str, ...]:
    return tuple(f"core{c}" for c in range(count))


@functools.lru_cache(maxsize=4)
def _all_cpus(count: int) -> tuple[int, ...]:
    """Every CPU of the host: where a process not pinned by anyone may run."""
    return tuple(range(count))


@functools.lru_cache(maxsize=256)
def _worker_keys(pid: int, children: int) -> tuple[str, ...]:
    """Wave keys of a job's data-loader workers, made once rather than formatted on every tick."""
    return tuple(f"pid{pid}/w{w}" for w in range(children))


@dataclass(frozen=True, slots=True)
class _Slice:
    """One MIG instance at one instant: its profile, its plan, its processes (with the GiB each holds in it) and
    its load."""

    profile: MigProfile
    gpu_instance_id: int
    plan: GpuPlan
    jobs: tuple[tuple[Job, float], ...]
    util: float

    @property
    def used_bytes(self) -> int:
        """What its processes hold; an instance without any reads the little an idle GPU does."""
        return sum(held_bytes(gib) for _, gib in self.jobs) if self.jobs else MIB


@functools.lru_cache(maxsize=256)
def mig_uuid(seed: int, index: int, gpu_instance_id: int) -> str:
    """The UUID of GPU `index`'s instance `gpu_instance_id`, as drivers from R470 name one: "MIG-" and a UUID."""
    rng = random.Random(f"{seed}/mig/{index}/{gpu_instance_id}")
    return f"MIG-{uuid.UUID(int=rng.getrandbits(128), version=4)}"


def gpu_info(index: int, rng: random.Random, board: Board) -> model.GpuInfo:
    """The static facts of simulated GPU `index`; its UUID and serial are drawn from `rng`."""
    bus = _BUS_IDS[index] if index < len(_BUS_IDS) else 0xE0 + index
    return model.GpuInfo(
        index=index,
        name=board.name,
        uuid=f"GPU-{uuid.UUID(int=rng.getrandbits(128), version=4)}",
        serial=str(rng.randrange(1_650_000_000_000, 1_660_000_000_000)),
        pci_bus_id=f"00000000:{bus:02X}:00.0",
        memory_total_bytes=board.memory_total_bytes,
        max_sm_clock_mhz=board.max_sm_clock_mhz,
        max_memory_clock_mhz=board.max_memory_clock_mhz,
        max_graphics_clock_mhz=board.max_sm_clock_mhz,
        default_app_sm_clock_mhz=round(board.max_sm_clock_mhz * 0.886),
        default_app_memory_clock_mhz=board.max_memory_clock_mhz,
        pcie_max_gen=board.pcie_gen,
        pcie_max_width=PCIE_MAX_WIDTH,
        pcie_gpu_max_gen=board.pcie_gen,
        power_default_limit_w=board.power_limit_w,
        power_min_limit_w=board.min_power_limit_w,
        power_max_limit_w=board.power_limit_w,
        temperature_slowdown_c=SLOWDOWN_C,
        temperature_shutdown_c=SHUTDOWN_C,
        temperature_gpu_max_c=GPU_MAX_C,
        temperature_memory_max_c=MEMORY_MAX_C,
        persistence_mode=True,
        compute_mode="Default",
        mig_mode=bool(board.mig),
        ecc_mode=True,
        nvlink_links_total=board.nvlinks,
        nvlink_version=board.nvlink_version,
        nvlink_remote=None if board.nvlinks is None else (model.NVSWITCH,) * board.nvlinks,
    )


class MachinePhysics:
    """Turns scenes into samples, and keeps the counters that only grow (energy, throttled time) per GPU."""

    def __init__(
        self,
        waves: Waves,
        temp_offset: tuple[float, ...],
        start_counters: tuple[tuple[float, int, int], ...],
        board: Board = BOARDS[DEFAULT_BOARD],
        seed: int = 0,
    ) -> None:
        self._waves = waves
        self._board = board
        self._seed = seed  # of the MIG instances' UUIDs
        self._temp_offset = temp_offset
        self._start_counters = start_counters
        self._energy_mj: list[float] = []
        self._power_violation_ns: list[float] = []
        self._thermal_violation_ns: list[float] = []
        self._nvlink_replays: list[float] = []

    @classmethod
    def drawn(cls, rng: random.Random, count: int, seed: int, board: Board) -> MachinePhysics:
        """`count` GPUs of `board` whose temperatures and cumulative counters (energy, power and thermal
        violation time) start where `rng` draws them: a seeded machine gives the same snapshots every run."""
        temp_offset = tuple(rng.uniform(-2.5, 2.5) for _ in range(count))
        start_counters = tuple(
            (rng.uniform(2e9, 9e9), rng.randrange(10**12, 10**13), rng.randrange(10**9, 10**10)) for _ in range(count)
        )
        return cls(Waves(seed), temp_offset, start_counters, board, seed)

    def reset(self) -> None:
        """Back to the counters the machine had when it was made, as on each open()."""
        self._energy_mj = [c[0] for c in self._start_counters]
        self._power_violation_ns = [float(c[1]) for c in self._start_counters]
        self._thermal_violation_ns = [float(c[2]) for c in self._start_counters]
        self._nvlink_replays = [0.0 for _ in self._start_counters]

    def gpu_sample(self, index: int, scene: Scene, t: float, timestamp: float, dt: float) -> model.GpuSample:
        plan = scene.gpus[index]
        board = self.board(scene)
        wave = self._waves
        key = f"gpu{index}"
        jobs = [(job, gib) for job in scene.jobs for gpu, gib in job.memory_gib if gpu == index]
        slices = self._slices(board, plan, jobs, key, t) if board.mig else None
        # In MIG mode, the aggregate the driver gives on the parent (to root): what the instances hold together.
        used = sum(held_bytes(gib) for _, gib in jobs) if slices is None else sum(piece.used_bytes for piece in slices)
        power_limit = min(plan.power_limit_w, board.power_limit_w)
        power_throttled = thermal_throttled = False
        if plan.idle:
            util = mem_util = 0.0
            clock = float(board.idle_sm_clock_mhz)
            power = board.idle_power_w + 2.0 * wave(f"{key}/power", t)
            temp = 31.0 + self._temp_offset[index] + 0.8 * wave(f"{key}/temp", t)
            rx = 18e3 + 6e3 * wave(f"{key}/rx", t)
            tx = 12e3 + 4e3 * wave(f"{key}/tx", t)
            reasons = BIT["gpu_idle"]
            pstate = 8
            if slices is None and not jobs:
                used = MIB
        else:
            if slices is None:
                util = clamp(plan.util + plan.util_swing * wave(f"{key}/util", t), 0.0, 100.0)
            else:
                # The GPU's load, which its power and heat follow: each instance's, by its share of the SMs.
                util = sum(piece.util * piece.profile.slices for piece in slices) / MIG_SLICES
            mem_util = clamp(util * 0.45 + 4.0 * wave(f"{key}/memutil", t), 0.0, 100.0)
            reasons = plan.reasons
            pstate = 0
            clock = float(board.max_sm_clock_mhz)
            if plan.sm_clock_mhz is not None:
                clock = plan.sm_clock_mhz + 15.0 * wave(f"{key}/clock", t)
            temp = 0.0
            if plan.temperature_c is not None:
                temp = plan.temperature_c + 0.3 * wave(f"{key}/temp", t)
                clock -= 420.0 * smoothstep((temp - SLOWDOWN_C) / 1.5)
                if temp >= SLOWDOWN_C:
                    reasons |= BIT["sw_thermal_slowdown"]
                    thermal_throttled = True
                if temp >= SLOWDOWN_C + 1:
                    # As a driver reports it (nvml.h): HW slowdown, and HW thermal slowdown beside it for the cause.
                    reasons |= BIT["hw_thermal_slowdown"] | BIT["hw_slowdown"]
            dynamic = util / 100.0 * board.load_power_w * (SPIN_LOAD if plan.spinning else 1.0)
            power = (
                board.base_power_w + dynamic * (clock / board.max_sm_clock_mhz) ** 2 + 12.0 * wave(f"{key}/power", t)
            )
            if power > power_limit - 6.0:
                # The power policy holds the draw just under the enforced limit by lowering the clock.
                power = power_limit - 4.0 + 2.0 * wave(f"{key}/power", t)
                headroom = max(0.0, power - board.base_power_w) / max(dynamic, 1.0)
                clock = min(clock, board.max_sm_clock_mhz * math.sqrt(headroom))
                reasons |= BIT["sw_power_cap"]
                power_throttled = True
            if plan.temperature_c is None:
                temp = 28.0 + self._temp_offset[index] + power * 0.058 + 0.6 * wave(f"{key}/temp", t)
            load = util / 100.0
            rx = 2.2e9 * load + 0.3e9 * load * wave(f"{key}/rx", t)
            tx = 0.6e9 * load + 0.1e9 * load * wave(f"{key}/tx", t)
        if slices is None:
            weights = sum(job.gpu_weight for job, _ in jobs) or 1.0
            procs = tuple(
                model.GpuProcess(
                    pid=job.pid,
                    used_memory_bytes=held_bytes(gib),
                    sm_pct=round(util * job.gpu_weight / weights),
                    mem_pct=round(mem_util * job.gpu_weight / weights),
                )
                for job, gib in jobs
            )
            mig = model.MigState(mode=False, pending_mode=True) if plan.mig_pending else None
        else:
            devices = self._mig_devices(index, slices, board, key, t)
            procs = tuple(proc for device in devices for proc in device.processes)
            pending = True if plan.mig_pending is None else plan.mig_pending
            mig = model.MigState(mode=True, pending_mode=pending, devices=devices)
        self._energy_mj[index] += power * dt * 1000.0
        if power_throttled:
            self._power_violation_ns[index] += dt * 1e9
        if thermal_throttled:
            self._thermal_violation_ns[index] += dt * 1e9
        self._nvlink_replays[index] += plan.nvlink_replays_s * dt
        links = None if board.nvlinks is None else board.nvlinks - plan.nvlinks_down
        errors = None if links is None else 0
        whole = slices is None  # in MIG mode NVML gives no whole-GPU utilization (NotSupported)
        return model.GpuSample(
            index=index,
            timestamp=timestamp,
            utilization_gpu_pct=round(util, 1) if whole else None,
            utilization_memory_pct=round(mem_util, 1) if whole else None,
            sm_clock_mhz=round(clock),
            memory_clock_mhz=board.max_memory_clock_mhz,
            graphics_clock_mhz=round(clock),
            temperature_c=round(temp, 1),
            memory_temperature_c=round(temp + 6.0, 1),
            power_w=round(power, 1),
            power_limit_w=power_limit,
            memory_used_bytes=used,
            memory_reserved_bytes=MEMORY_RESERVED_BYTES,
            memory_free_bytes=board.memory_total_bytes - MEMORY_RESERVED_BYTES - used,
            pcie_gen=min(plan.pcie_gen, board.pcie_gen),
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
            ecc_uncorrected=plan.ecc_uncorrected,
            retired_pages_pending=plan.ecc_uncorrected > 0,
            # In MIG mode the video engines belong to the instances that were given them.
            encoder_pct=0.0 if whole else None,
            decoder_pct=0.0 if whole else None,
            nvlink_links_active=links,
            nvlink_replay_errors=None if links is None else int(self._nvlink_replays[index]),
            nvlink_recovery_errors=errors,
            nvlink_crc_errors=errors,
            processes=procs,
            # In MIG mode NVML's GPM is read per GPU instance (nvmlGpmMigSampleGet): a whole-GPU figure would mix
            # tenants that the hardware isolates, and the real reader takes none (GpmReader), so neither does this.
            **(self._gpm(plan, key, util, t) if board.gpm and whole else model.GpmValues()),
            mig=mig,
        )

    def _slices(
        self, board: Board, plan: GpuPlan, jobs: Sequence[tuple[Job, float]], key: str, t: float
    ) -> tuple[_Slice, ...]:
        """The GPU's MIG instances at `t`: each with its plan, the processes placed in it, and its load."""
        layout = board.mig
        if plan.slices and len(plan.slices) != len(layout):
            raise ValueError(f"{len(plan.slices)} instance plans for a GPU split into {len(layout)} instances")
        held: dict[int, list[tuple[Job, float]]] = {gi: [] for _, gi in layout}
        for k, (job, gib) in enumerate(jobs):
            if job.gpu_instance_id is not None:
                if job.gpu_instance_id not in held:
                    have = ", ".join(str(gi) for gi in held)
                    raise ValueError(
                        f"process {job.pid} runs in GPU instance {job.gpu_instance_id}; the GPU has {have}"
                    )
                held[job.gpu_instance_id].append((job, gib))
            else:
                name, gi = layout[k % len(layout)]
                held[gi].append((job, gib * MIG_PROFILES[name].memory_bytes / board.memory_total_bytes))
        pieces = []
        for position, (name, gi) in enumerate(layout):
            if plan.idle:
                mine = GpuPlan(idle=True)
            elif plan.slices:
                mine = plan.slices[position]
            else:
                mine = plan if held[gi] else GpuPlan(idle=True)
            util = (
                0.0 if mine.idle else clamp(mine.util + mine.util_swing * self._waves(f"{key}/gi{gi}/util", t), 0, 100)
            )
            pieces.append(_Slice(MIG_PROFILES[name], gi, mine, tuple(held[gi]), util))
        return tuple(pieces)

    def _mig_devices(
        self, index: int, slices: Sequence[_Slice], board: Board, key: str, t: float
    ) -> tuple[model.MigDevice, ...]:
        """The instances as the driver lists them on their own handles: memory, processes and GPM of each."""
        devices = []
        for position, piece in enumerate(slices):
            gi = piece.gpu_instance_id
            gpm = self._gpm(piece.plan, f"{key}/gi{gi}", piece.util, t) if board.gpm else model.GpmValues()
            devices.append(
                model.MigDevice(
                    index=position,
                    uuid=mig_uuid(self._seed, index, gi),
                    profile=piece.profile.name,
                    gpu_instance_id=gi,
                    compute_instance_id=0,  # one compute instance spanning its GPU instance, as by default
                    sm_count=piece.profile.sm_count,
                    slice_count=piece.profile.slices,
                    memory_used_bytes=piece.used_bytes,
                    memory_total_bytes=piece.profile.memory_bytes,
                    **model.gpm_activity(gpm),
                    # Per-process utilization is not given in MIG mode (NotSupported): only memory and the ids.
                    processes=tuple(
                        model.GpuProcess(
                            pid=job.pid,
                            used_memory_bytes=held_bytes(gib),
                            gpu_instance_id=gi,
                            compute_instance_id=0,
                        )
                        for job, gib in piece.jobs
                    ),
                )
            )
        return tuple(devices)

    def board(self, scene: Scene) -> Board:
        """The board `scene` runs on: its own when it names one, else the machine's."""
        return self._board if scene.board is None else BOARDS[scene.board]

    def _gpm(self, plan: GpuPlan, key: str, util: float, t: float) -> model.GpmValues:
        """What GPM reads for a GPU at `util` % under `plan`: how full its SMs, tensor cores and DRAM are.

        One wave drives all of them (a step that fills the SMs more also moves more data): the per-tick cost
        of the simulator stays near what it was without GPM."""
        wave = 0.0 if plan.idle else self._waves(f"{key}/gpm", t)
        load = 0.0 if plan.idle else util / 100.0
        sm = 0.0 if plan.idle else clamp(util * plan.sm_fill + 2.0 * wave, 0.0, 100.0)
        tensor = clamp(sm * plan.tensor_share + 3.0 * wave, 0.0, 100.0) if load else 0.0
        dram = clamp(util * plan.dram_fill - 4.0 * wave, 0.0, 100.0) if load else 0.0
        nvlink = 21e9 * load + 1.5e9 * load * wave
        return {
            "gr_engine_active_pct": round(util, 1),
            "sm_active_pct": round(sm, 1),
            "sm_occupancy_pct": round(sm * 0.48, 1),
            "tensor_active_pct": round(tensor, 1),
            "dram_bw_pct": round(dram, 1),
            "fp32_active_pct": round(sm * plan.fp32_share, 1),
            "fp16_active_pct": round(sm * 0.03, 1),
            "fp64_active_pct": 0.0,
            "nvlink_rx_bytes_s": round(nvlink),
            "nvlink_tx_bytes_s": round(nvlink * 0.97),
        }

    def host_sample(
        self, scene: Scene, gpus: tuple[model.GpuSample, ...], t: float, timestamp: float
    ) -> model.HostSample:
        wave = self._waves
        plan = scene.host
        shown = {sample.index for sample in gpus}
        listed = {job.pid for job in scene.jobs if any(gpu in shown for gpu, _ in job.memory_gib)}
        # Every process of the workload runs, whether or not its GPU is shown: the host sees them all.
        procs = []
        loads: list[float] = []
        for job in scene.jobs:
            cpu = clamp(job.cpu_pct + job.cpu_swing * wave(f"pid{job.pid}/cpu", t), 0.0, 100.0 * CPU_COUNT)
            loads.append(cpu)
            worker_loads = [0.0] * job.children
            if plan.worker_cpu_pct > 0:
                workers = wave.many(_worker_keys(job.pid, job.children), t)
                worker_loads = [clamp(plan.worker_cpu_pct + 8.0 * w, 0.0, 100.0) for w in workers]
            loads.extend(worker_loads)
            if job.pid in listed:
                procs.append(
                    model.ProcSample(
                        pid=job.pid,
                        name="python3",
                        user=job.user,
                        cmdline=job.cmdline,
                        cpu_pct=round(cpu, 1),
                        threads=job.threads,
                        children=job.children,
                        workers_cpu_pct=round(sum(worker_loads), 1),
                        run_queue_wait_pct=plan.run_queue_wait_pct,
                        workers_run_queue_wait_pct=None
                        if plan.run_queue_wait_pct is None
                        else plan.run_queue_wait_pct * job.children,
                        read_bytes_s=round(job.read_bytes_s * (1.0 + 0.03 * wave(f"pid{job.pid}/read", t))),
                        rss_bytes=int(job.rss_gib * GIB),
                        state=job.state,
                        cpus_allowed=job.cpus_allowed or _all_cpus(scene.cpu_count),
                        last_cpu=self._last_cpu(job, scene),
                        create_time=timestamp - t - job.started_s_before,
                        ppid=job.ppid,
                    )
                )
        cores = [1.5 + 1.2 * c for c in wave.many(_core_keys(scene.cpu_count), t)]
        for n, load in enumerate(loads):
            core = (n * 5) % len(cores)
            cores[core] = clamp(cores[core] + load, 0.0, 100.0)
        iowait = clamp(plan.iowait_pct * (1.0 + 0.1 * wave("iowait", t)), 0.0, 100.0)
        read = sum(job.read_bytes_s for job in scene.jobs) * (1.0 + 0.03 * wave("disk/read", t)) + 1.5e6
        busy = plan.disk_busy_pct
        if busy is None:
            busy = 3.0 + read / 2.5e9 * 100.0
        busy = clamp(busy + 1.2 * wave("disk/busy", t), 0.0, 100.0)
        running = sum(cores) / 100.0 + (iowait / 100.0) * len(cores)
        rss = sum(job.rss_gib for job in scene.jobs) * GIB
        host = model.HostSample(
            timestamp=timestamp,
            cpu_pct_per_core=tuple(round(c, 1) for c in cores),
            iowait_pct=round(iowait, 1),
            steal_pct=0.0,
            load_avg=(round(running, 2), round(running * 0.97, 2), round(running * 0.93, 2)),
            memory_used_bytes=int(38 * GIB + rss + 2 * GIB * wave("host/mem", t)),
            memory_total_bytes=HOST_MEMORY_BYTES,
            swap_used_bytes=300 * MIB,
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
        return host if scene.container is None else self._in_container(host, scene.container, t)

    def _last_cpu(self, job: Job, scene: Scene) -> int:
        if job.last_cpu is not None:
            return job.last_cpu
        return near_cpu(job.memory_gib[0][0], len(self._temp_offset), scene.cpu_count, job.pid)

    def _in_container(self, host: model.HostSample, plan: ContainerPlan, t: float) -> model.HostSample:
        """The cgroup's figures and PSI of a containerised scene."""
        wave = self._waves
        used = clamp(plan.quota_used_pct + 2.0 * wave("cgroup/cpu", t), 0.0, 100.0)
        throttled = clamp(plan.throttled_pct + 3.0 * wave("cgroup/throttled", t), 0.0, 100.0)
        return replace(
            host,
            shm_used_bytes=plan.shm_used_bytes,
            container=model.ContainerSample(
                cpu_pct_of_quota=round(used, 1),
                cpu_throttled_pct=round(throttled, 1),
                cpu_throttled_s=round(throttled / 100.0 * 0.8, 3),
                memory_used_bytes=int((plan.memory_used_gib + 0.5 * wave("cgroup/mem", t)) * GIB),
                memory_limit_bytes=plan.info.memory_limit_bytes,
                oom_kills=plan.oom_kills,
            ),
            psi=model.PsiSample(
                cpu_some_pct=round(clamp(plan.psi_cpu_some_pct + 2.0 * wave("psi/cpu", t), 0.0, 100.0), 1),
                io_some_pct=round(clamp(1.0 + 0.5 * wave("psi/io", t), 0.0, 100.0), 1),
                io_full_pct=round(clamp(0.4 + 0.2 * wave("psi/io", t), 0.0, 100.0), 1),
                memory_some_pct=0.0,
                memory_full_pct=0.0,
            ),
        )
