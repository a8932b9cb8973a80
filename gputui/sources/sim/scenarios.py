"""The simulated scenarios, one entry each: the one table the simulator, the tests, `--demo` and the README read.

Each scenario is a situation from the field that shows its own problem and no other, so the diagnostics can be
tested for what must fire and for what must not. An entry names the scenario, says in one line what it shows,
builds the plan for every GPU and the host (the physics in physics.py fills in the rest), and lists what
it must produce: the raw signs in the values and the findings the diagnostics hold open after 30 s on the
default four GPUs. A new scenario is one builder and one entry in SCENARIO_TABLE; the tests run over the table.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from gputui.model import ContainerInfo
from gputui.sources.sim.physics import (
    BIT,
    CPU_COUNT,
    DEFAULT_GPU_COUNT,
    GIB,
    MEMORY_RESERVED_BYTES,
    MEMORY_TOTAL_BYTES,
    MIB,
    SLOWDOWN_C,
    ContainerPlan,
    GpuPlan,
    HostPlan,
    Job,
    Scene,
    spinning_plan,
)
from gputui.sources.sim.placement import socket_cpus, socket_of


@dataclass(frozen=True, slots=True)
class Stage:
    """The machine a scene is built for: its GPUs, its first PID, and which GPUs a one-GPU problem hits.

    Problems that hit one GPU hit one of the selected GPUs (`odd`: the second, or the first when only one is
    selected; `first` in `contention`, `imbalance` and `numa`; `last` in `nvlink`), so every `--gpus` selection
    shows its scenario.
    """

    count: int
    pid_base: int
    first: int
    odd: int
    last: int

    def busy(self) -> dict[int, GpuPlan]:
        """Every GPU busy at full clocks: the usual plan, which a scene then changes where its problem is."""
        return {index: GpuPlan() for index in range(self.count)}

    def ranks(self, cmdline: str, memory_gib: float, **overrides: Any) -> tuple[Job, ...]:
        """One process per GPU, as torchrun starts them (its launcher the PID before them): the usual shape of a
        training job."""
        fields: dict[str, Any] = {"user": "alice", "cpu_pct": 72.0, "ppid": self.pid_base - 1, **overrides}
        return tuple(
            Job(
                pid=self.pid_base + index,
                cmdline=f"{cmdline} --local-rank {index}",
                memory_gib=((index, memory_gib),),
                **fields,
            )
            for index in range(self.count)
        )


@dataclass(frozen=True, slots=True)
class ExpectedFinding:
    """A finding the diagnostics must hold open after 30 s of a scenario on the default four GPUs.

    The severity is the label (`warning`, `critical`), so that the sources need not import the diagnostics.
    """

    rule: str
    severity: str
    gpus: tuple[int, ...] = ()
    instances: tuple[int, ...] = ()  # the GPU instance ids of the MIG instances it names (of its one GPU)


@dataclass(frozen=True, slots=True)
class Scenario:
    """One simulated scenario and what it must produce.

    `build(stage, t)` is the plan `t` seconds into the scenario; a scenario whose plan does not move with
    time (`moves=False`) is built once and reused on each tick. `signs` are the raw signs of trouble the
    values show (the vocabulary of tests/sources/sim/test_scenarios.py); `findings` are what the diagnostics raise;
    `verdict` is the verdict class they add up to, with its groups' classes when it is `mixed`.
    """

    name: str
    description: str
    build: Callable[[Stage, float], Scene]
    signs: frozenset[str]
    findings: tuple[ExpectedFinding, ...]
    verdict: tuple[str, ...]
    moves: bool = False


# The board of the MIG scenarios: H100s each split into two 3g.40gb instances, GI 1 and GI 2.
_MIG_BOARD = "h100-mig"
_MIG_GIB = 31.0  # what a job sized for a 3g.40gb instance (39.5 GiB) holds
_FINETUNE = "python3 finetune.py --model bert-large --task squad"


def _halves(stage: Stage, first: str, second: str, memory_gib: float = _MIG_GIB) -> tuple[Job, ...]:
    """Two tenants renting a half of every GPU: alice's `first` in GI 1 and carol's `second` in GI 2, with
    four data-loader workers each (a half GPU needs half the input)."""
    return tuple(
        Job(
            pid=stage.pid_base + index + (0 if gi == 1 else 500),
            user=user,
            cmdline=f"{cmdline} --local-rank {index}",
            memory_gib=((index, memory_gib),),
            cpu_pct=72.0,
            children=4,
            gpu_instance_id=gi,
            ppid=stage.pid_base + (-1 if gi == 1 else 499),
        )
        for gi, user, cmdline in ((1, "alice", first), (2, "carol", second))
        for index in range(stage.count)
    )


def _each_gpu(rule: str, severity: str) -> tuple[ExpectedFinding, ...]:
    """One finding per GPU of the default machine, as a per-GPU problem on every GPU raises."""
    return tuple(ExpectedFinding(rule, severity, (index,)) for index in range(DEFAULT_GPU_COUNT))


_TRAIN = "python3 train.py --config configs/llama-7b.yaml"


def _healthy(stage: Stage, t: float) -> Scene:
    return Scene(stage.busy(), stage.ranks(_TRAIN, 61.0), HostPlan())


def _idle(stage: Stage, t: float) -> Scene:
    return Scene(
        {i: GpuPlan(idle=True, pcie_gen=1) for i in range(stage.count)},
        (),
        HostPlan(iowait_pct=0.1, disk_write_bytes_s=0.4e6, net_rx_bytes_s=30e3),
    )


def _thermal(stage: Stage, t: float) -> Scene:
    # Bad airflow on one GPU: it climbs from just below the margin past its slowdown threshold within a few
    # seconds, so a default 10 s `diagnose` sees the throttling.
    busy = stage.busy()
    busy[stage.odd] = GpuPlan(temperature_c=SLOWDOWN_C + 1.6 - 3.4 * math.exp(-t / 3.0))
    return Scene(busy, stage.ranks(_TRAIN, 61.0), HostPlan())


def _powercap(stage: Stage, t: float) -> Scene:
    # An admin lowered the limit: the power policy holds the draw under it by lowering the clocks, and the driver
    # sets SW power cap (0x4, nvml.h nvmlClocksEventReasonSwPowerCap) while the power violation counter grows.
    return Scene({i: GpuPlan(power_limit_w=400.0) for i in range(stage.count)}, stage.ranks(_TRAIN, 61.0), HostPlan())


def _hwslowdown(stage: Stage, t: float) -> Scene:
    # A PSU failed or the chassis management asked for less power: the driver sets HW slowdown and names the
    # cause with the power brake bit beside it (nvml.h).
    reasons = BIT["hw_slowdown"] | BIT["hw_power_brake"]
    plans = {i: GpuPlan(sm_clock_mhz=990.0, reasons=reasons) for i in range(stage.count)}
    return Scene(plans, stage.ranks(_TRAIN, 61.0), HostPlan())


def _hwslowdown_nocause(stage: Stage, t: float) -> Scene:
    # HW slowdown held for the whole run with no bit beside it to name the cause (nvml.h: heat, a power brake or
    # fast-trigger power protection); the GPUs are cool and well under their power limit.
    plans = {i: GpuPlan(sm_clock_mhz=990.0, reasons=BIT["hw_slowdown"]) for i in range(stage.count)}
    return Scene(plans, stage.ranks(_TRAIN, 61.0), HostPlan())


def _pcie(stage: Stage, t: float) -> Scene:
    # A link that trained narrow and slow stays so under load (nvmlDeviceGetCurrPcieLinkGeneration/Width below
    # the system's max); at idle every GPU downshifts, which is normal and not this.
    busy = stage.busy()
    busy[stage.odd] = GpuPlan(pcie_gen=3, pcie_width=8)
    return Scene(busy, stage.ranks(_TRAIN, 61.0), HostPlan())


def _vram(stage: Stage, t: float) -> Scene:
    # A caching allocator that keeps growing: ~97.5% at the start, creeping towards 99.5%.
    used = MEMORY_TOTAL_BYTES * (0.995 - 0.02 * math.exp(-t / 200.0))
    gib = (used - MEMORY_RESERVED_BYTES) / GIB
    return Scene(stage.busy(), stage.ranks(f"{_TRAIN} --batch-size 64", gib), HostPlan())


def _starved_cpu(stage: Stage, t: float) -> Scene:
    # DataLoader num_workers=0: the main process decodes and augments each batch, then waits on the GPU step, so it
    # reads 70-90% of a core (not a flat 100%: it sleeps in the CUDA sync) while its GPU waits ~80% of the time.
    jobs = stage.ranks(
        "python3 train_resnet50.py --data /data/imagenet --num-workers 0",
        21.0,
        cpu_pct=80.0,
        cpu_swing=9.0,
        children=0,
        threads=14,
        read_bytes_s=30e6,
        state="R",
    )
    plans = {i: GpuPlan(util=22.0, util_swing=10.0) for i in range(stage.count)}
    return Scene(plans, jobs, HostPlan(worker_cpu_pct=0.0))


def _starved_io(stage: Stage, t: float) -> Scene:
    # Workers blocked on reads: the CPUs they leave idle count as iowait (proc(5): "time waiting for I/O to
    # complete"), the disk is busy nearly all the time (/proc/diskstats io_ticks), and the GPU waits.
    jobs = stage.ranks(
        "python3 train_resnet50.py --data /mnt/hdd/imagenet --num-workers 8",
        21.0,
        cpu_pct=38.0,
        read_bytes_s=127e6,
    )
    plans = {i: GpuPlan(util=26.0, util_swing=10.0) for i in range(stage.count)}
    return Scene(plans, jobs, HostPlan(iowait_pct=36.0, disk_busy_pct=98.6, worker_cpu_pct=6.0))


def _notebook(stage: Stage, memory_gib: float, **placement: Any) -> Job:
    """bob's forgotten Jupyter kernel on the first GPU: the second user of a shared GPU (or MIG instance)."""
    return Job(
        pid=stage.pid_base + 3217,
        user="bob",
        cmdline="python3 -m ipykernel_launcher -f /home/bob/.local/share/jupyter/runtime/kernel-7f3.json",
        memory_gib=((stage.first, memory_gib),),
        cpu_pct=9.0,
        cpu_swing=4.0,
        children=0,
        threads=31,
        read_bytes_s=0.3e6,
        rss_gib=5.0,
        **placement,
    )


def _contention(stage: Stage, t: float) -> Scene:
    notebook = _notebook(stage, 16.0, gpu_weight=0.65)
    return Scene(stage.busy(), (*stage.ranks(_TRAIN, 52.0), notebook), HostPlan())


def _imbalance(stage: Stage, t: float) -> Scene:
    first = stage.first
    memory = tuple((i, 70.0 if i == first else 38.0) for i in range(stage.count))
    job = Job(
        pid=stage.pid_base,
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
        i: GpuPlan(util=96.0 if i == first else 42.0, util_swing=3.0 if i == first else 7.0) for i in range(stage.count)
    }
    return Scene(plans, (job,), HostPlan())


def _hang(stage: Stage, t: float) -> Scene:
    # torchrun, one rank per GPU; one rank blocked for good outside the collective: its GPU idles while its process
    # lives, and the others' collective kernels spin waiting for it (busy, ~3% SM activity, near-idle power).
    plans = {i: GpuPlan(idle=True) if i == stage.odd else spinning_plan() for i in range(stage.count)}
    # Their main threads wait (gloo blocks in all_reduce, the stuck rank in its own wait): little CPU.
    return Scene(plans, stage.ranks(f"{_TRAIN} --nnodes 1", 52.0, cpu_pct=2.0, cpu_swing=0.5), HostPlan())


def _fp32(stage: Stage, t: float) -> Scene:
    # Training in plain FP32 with TF32 off: the GPU is busy and its SMs are full, but the math runs on the CUDA
    # cores; the tensor cores, where an H100 has ~15x the FP32 throughput, stay idle.
    plans = {i: GpuPlan(sm_fill=0.86, tensor_share=0.01, fp32_share=0.55, dram_fill=0.42) for i in range(stage.count)}
    return Scene(plans, stage.ranks(f"{_TRAIN} --precision fp32", 61.0), HostPlan())


def _launchbound(stage: Stage, t: float) -> Scene:
    # Batch size 4 and many small ops: a kernel is nearly always running, so utilization reads ~100%, but each
    # fills a fifth of the SMs and the CPU spends its time launching them.
    plans = {i: GpuPlan(util=99.0, util_swing=0.8, sm_fill=0.22, dram_fill=0.12) for i in range(stage.count)}
    return Scene(plans, stage.ranks(f"{_TRAIN} --batch-size 4", 18.0, cpu_pct=96.0, cpu_swing=2.0), HostPlan())


def _membound(stage: Stage, t: float) -> Scene:
    # Element-wise heavy work (normalisation, activations, optimizer steps without fused kernels): the SMs wait
    # on DRAM, whose bandwidth stays near its peak.
    plans = {i: GpuPlan(sm_fill=0.62, tensor_share=0.3, dram_fill=0.92) for i in range(stage.count)}
    return Scene(plans, stage.ranks(_TRAIN, 61.0), HostPlan())


def _ecc(stage: Stage, t: float) -> Scene:
    # One GPU's HBM reports uncorrected errors and a page retirement waits for a reset; the job goes on.
    busy = stage.busy()
    busy[stage.odd] = GpuPlan(ecc_uncorrected=2)
    return Scene(busy, stage.ranks(_TRAIN, 61.0), HostPlan())


def _mismatch(stage: Stage, t: float) -> Scene:
    return Scene(stage.busy(), stage.ranks(_TRAIN, 61.0), HostPlan(), mismatch=True)


# A rented container on a 128-core host: 8 CPUs of quota, 64 GiB, and Docker's default 64 MiB of /dev/shm.
_SMALL_CONTAINER = ContainerInfo(
    "docker", "/.dockerenv", 2, cpu_quota_cores=8.0, memory_limit_bytes=64 * GIB, shm_bytes=64 * MIB
)
# A roomier one: 32 CPUs, 128 GiB, --shm-size=16g.
_LARGE_CONTAINER = ContainerInfo(
    "docker", "/.dockerenv", 2, cpu_quota_cores=32.0, memory_limit_bytes=128 * GIB, shm_bytes=16 * GIB
)
_OOM_EVERY_S = 150.0


def _container(stage: Stage, t: float) -> Scene:
    # num_workers=16 per rank, sized by os.cpu_count() on the 128-core host: 68 processes share 8 CPUs of
    # quota, the kernel throttles the group in ~40% of its periods, each process waits on a run queue a fifth of
    # the time (~14 CPUs' worth of waiting beside the 8 used), and the GPUs wait for batches. The host itself
    # reads ~6% busy.
    jobs = stage.ranks(
        "python3 train.py --config configs/vit-b16.yaml --num-workers 16", 21.0, cpu_pct=62.0, children=16, threads=40
    )
    plans = {i: GpuPlan(util=28.0, util_swing=8.0) for i in range(stage.count)}
    limits = ContainerPlan(
        _SMALL_CONTAINER,
        quota_used_pct=98.0,
        throttled_pct=41.0,
        memory_used_gib=38.0,
        shm_used_bytes=41 * MIB,
        psi_cpu_some_pct=35.0,
    )
    return Scene(plans, jobs, HostPlan(worker_cpu_pct=8.0, run_queue_wait_pct=20.0), container=limits)


def _oom(stage: Stage, t: float) -> Scene:
    # A healthy job whose data-loader workers outgrow the container's memory: the kernel kills one 20 s in,
    # then every 150 s, and the job restarts it.
    kills = int((t + _OOM_EVERY_S - 20.0) // _OOM_EVERY_S)
    limits = ContainerPlan(
        _LARGE_CONTAINER, quota_used_pct=55.0, memory_used_gib=104.0, shm_used_bytes=2 * GIB, oom_kills=kills
    )
    return Scene(stage.busy(), stage.ranks(_TRAIN, 61.0, children=6), HostPlan(), container=limits)


def _nvlink(stage: Stage, t: float) -> Scene:
    # A GPU reseated badly: 2 of its 18 NVLinks never came up and one that did is marginal, so its replay counter
    # climbs. NCCL's rings go at the pace of the slowest GPU, while every GPU still reads ~100% busy.
    busy = stage.busy()
    busy[stage.last] = GpuPlan(nvlinks_down=2, nvlink_replays_s=4.0)
    return Scene(busy, stage.ranks(_TRAIN, 61.0), HostPlan())


def _nvswitch(stage: Stage, t: float) -> Scene:
    # One of the HGX board's NVSwitches failed: every GPU lost the 2 links it had to that switch, alike. No GPU
    # has all its links to be held against, yet every collective crosses a fabric short of bandwidth.
    plans = {i: GpuPlan(nvlinks_down=2) for i in range(stage.count)}
    return Scene(plans, stage.ranks(_TRAIN, 61.0), HostPlan())


def _numa(stage: Stage, t: float) -> Scene:
    # The launcher pinned rank 0 to the other socket (a `numactl --cpunodebind` meant for another rank): its
    # batches cross the link between the sockets to reach its GPU, which waits a little on each.
    first = stage.first
    far = socket_cpus(1 - socket_of(first, stage.count), CPU_COUNT)
    jobs = list(stage.ranks(_TRAIN, 61.0))
    jobs[first] = replace(jobs[first], cpus_allowed=tuple(far), last_cpu=far[3])
    busy = stage.busy()
    busy[first] = GpuPlan(util=76.0, util_swing=3.0)
    return Scene(busy, tuple(jobs), HostPlan())


def _pcie_box(stage: Stage, t: float) -> Scene:
    # Four GeForce cards in a two-socket workstation, one process training on all of them: no NVLink, and no P2P
    # across the sockets, so every gradient between the two halves goes through host memory.
    job = Job(
        pid=stage.pid_base,
        user="alice",
        cmdline="python3 finetune.py --model llama-7b --devices 0,1,2,3",
        memory_gib=tuple((index, 20.0) for index in range(stage.count)),
        cpu_pct=88.0,
        children=8,
        threads=48,
        rss_gib=18.0,
    )
    plans = {index: GpuPlan(util=90.0, util_swing=4.0) for index in range(stage.count)}
    return Scene(plans, (job,), HostPlan(), board="rtx4090")


def _mig_isolated(stage: Stage, t: float) -> Scene:
    # Two tenants, each on a 3g.40gb half of every GPU: their processes share a GPU but not an SM or a byte of
    # memory bandwidth, so nothing is contended, and whole-GPU utilization does not exist (NotSupported).
    return Scene(stage.busy(), _halves(stage, _TRAIN, _FINETUNE), HostPlan(), board=_MIG_BOARD)


def _mig_starving(stage: Stage, t: float) -> Scene:
    # On the first GPU, carol's job in GI 2 loads its data in the main process (num_workers=0), as in
    # `starved-cpu`: the process reads 70-90% of a core and its instance's SMs wait; alice's GI 1 beside it is busy.
    first = stage.first
    jobs = [
        replace(
            job,
            cmdline=f"python3 train_resnet50.py --data /data/imagenet --num-workers 0 --local-rank {first}",
            memory_gib=((first, 14.0),),
            cpu_pct=80.0,
            cpu_swing=9.0,
            children=0,
            threads=14,
            read_bytes_s=30e6,
            state="R",
        )
        if job.gpu_instance_id == 2 and job.memory_gib[0][0] == first
        else job
        for job in _halves(stage, _TRAIN, _FINETUNE)
    ]
    busy = stage.busy()
    busy[first] = GpuPlan(slices=(GpuPlan(), GpuPlan(util=22.0, util_swing=10.0)))
    return Scene(busy, tuple(jobs), HostPlan(), board=_MIG_BOARD)


def _mig_shared_slice(stage: Stage, t: float) -> Scene:
    # On the first GPU, bob's notebook runs in alice's GI 1: the two take turns on the instance's SMs, while
    # carol's GI 2 beside them, isolated, is not touched.
    notebook = _notebook(stage, 8.0, gpu_instance_id=1)
    first = stage.first
    jobs = tuple(
        replace(job, memory_gib=((first, 24.0),)) if job.gpu_instance_id == 1 and job.memory_gib[0][0] == first else job
        for job in _halves(stage, _TRAIN, _FINETUNE)
    )
    return Scene(stage.busy(), (*jobs, notebook), HostPlan(), board=_MIG_BOARD)


def _mig_pending(stage: Stage, t: float) -> Scene:
    # An administrator enabled MIG on the first GPU (`nvidia-smi -i 0 -mig 1`) while its job ran: the mode waits
    # for a GPU reset, and until then the GPU runs whole, as before.
    busy = stage.busy()
    busy[stage.first] = GpuPlan(mig_pending=True)
    return Scene(busy, stage.ranks(_TRAIN, 61.0), HostPlan(), board="h100")


SCENARIO_TABLE: tuple[Scenario, ...] = (
    Scenario(
        "healthy",
        "busy training job, cool GPUs at full clocks, one process per GPU: nothing to fix",
        _healthy,
        signs=frozenset(),
        findings=(),
        verdict=("gpu_bound",),
    ),
    Scenario(
        "idle",
        "no jobs: P8, PCIe downshifted to Gen1 (normal at idle)",
        _idle,
        signs=frozenset({"idle"}),
        findings=(),
        verdict=("idle",),
    ),
    Scenario(
        "thermal",
        "one GPU heats past its slowdown threshold; SW/HW thermal slowdown (HW slowdown beside); SM clock falls",
        _thermal,
        signs=frozenset({"hot", "thermal_bits"}),
        findings=(ExpectedFinding("thermal_throttle", "critical", (1,)),),
        verdict=("mixed", "throttled", "gpu_bound"),
        moves=True,
    ),
    Scenario(
        "powercap",
        "power limit lowered to 400 W (default 700 W); SW power cap; clocks reduced",
        _powercap,
        signs=frozenset({"limit_lowered", "sw_power_cap"}),
        findings=_each_gpu("power_cap", "critical"),
        verdict=("throttled",),
    ),
    Scenario(
        "hwslowdown",
        "HW slowdown with the power brake bit (power supply or chassis management); clocks halved",
        _hwslowdown,
        signs=frozenset({"power_brake_bit"}),
        findings=_each_gpu("power_brake", "critical"),
        verdict=("throttled",),
    ),
    Scenario(
        "hwslowdown-nocause",
        "HW slowdown held with no bit naming its cause (heat, power brake or power protection); clocks halved",
        _hwslowdown_nocause,
        signs=frozenset({"hw_slowdown_unexplained"}),
        findings=_each_gpu("hw_slowdown", "critical"),
        verdict=("throttled",),
    ),
    Scenario(
        "pcie",
        "one busy GPU's link trained at Gen3 x8 on a Gen5 x16 part",
        _pcie,
        signs=frozenset({"pcie_low_busy"}),
        findings=(ExpectedFinding("pcie_downgrade", "critical", (1,)),),
        verdict=("mixed", "interconnect", "gpu_bound"),
    ),
    Scenario(
        "vram",
        "GPU memory ~98% full and still growing",
        _vram,
        signs=frozenset({"vram_high"}),
        findings=_each_gpu("vram_pressure", "warning"),
        verdict=("gpu_bound",),
        moves=True,
    ),
    Scenario(
        "starved-cpu",
        "num_workers=0: the main process loads the data at 70-90% of a core; GPU utilization 10-35%",
        _starved_cpu,
        signs=frozenset({"low_util", "main_loading"}),
        findings=_each_gpu("starvation_cpu", "warning"),
        verdict=("input_bound",),
    ),
    Scenario(
        "starved-io",
        "data read from a saturated disk: high iowait, disk ~100% busy, GPU utilization low",
        _starved_io,
        signs=frozenset({"low_util", "iowait", "disk_busy"}),
        findings=_each_gpu("starvation_io", "warning"),
        verdict=("input_bound",),
    ),
    Scenario(
        "contention",
        "a second user's process shares the first GPU with the training job",
        _contention,
        signs=frozenset({"shared_gpu"}),
        findings=(ExpectedFinding("gpu_contention", "warning", (0,)),),
        verdict=("mixed", "contended", "gpu_bound"),
    ),
    Scenario(
        "imbalance",
        "one process drives all GPUs (nn.DataParallel): the first GPU far busier than the rest",
        _imbalance,
        signs=frozenset({"imbalance"}),
        findings=(ExpectedFinding("imbalance", "warning", tuple(range(DEFAULT_GPU_COUNT))),),
        verdict=("mixed", "underused", "gpu_bound"),
    ),
    Scenario(
        "fp32",
        "busy GPUs doing the math in FP32 on CUDA cores: SM activity high, tensor cores idle",
        _fp32,
        signs=frozenset({"tensor_idle"}),
        findings=_each_gpu("tensor_cores_idle", "warning"),
        verdict=("inefficient",),
    ),
    Scenario(
        "launchbound",
        "utilization ~100% but SM activity 15-30%: kernels too small to fill the GPU",
        _launchbound,
        signs=frozenset({"sm_low_busy"}),
        findings=_each_gpu("low_sm_activity", "warning"),
        verdict=("inefficient",),
    ),
    Scenario(
        "membound",
        "element-wise heavy step: DRAM bandwidth ~90% of peak, SM activity ~60%",
        _membound,
        signs=frozenset({"dram_high"}),
        findings=_each_gpu("memory_bound", "info"),
        verdict=("memory_bound_gpu",),
    ),
    Scenario(
        "ecc",
        "one GPU reports uncorrected ECC errors, a page retirement pending a reset",
        _ecc,
        signs=frozenset({"ecc"}),
        findings=(ExpectedFinding("ecc_errors", "critical", (1,)),),
        verdict=("mixed", "degraded", "gpu_bound"),
    ),
    Scenario(
        "hang",
        "torchrun: one rank blocked outside the collective; the others' GPUs 100% busy at 3% SM activity, ~17% power",
        _hang,
        signs=frozenset({"spinning", "sm_low_busy", "idle", "imbalance"}),
        # No stack is read of a simulated machine's made-up processes: `gpu_stalled` (warning, the spinning GPUs)
        # opens once it has held `stopped_after_s` (240 s), past the 30 s this table judges; until then each spinning
        # GPU is busy, not efficient, as a kernel that spins without work (`low_sm_activity`'s `spinning`), never
        # GPU-bound, and the verdict names the condition it watches (tests/diagnostics/test_hang.py plays it longer).
        findings=tuple(ExpectedFinding("low_sm_activity", "warning", (g,)) for g in (0, 2, 3)),
        verdict=("inefficient",),
    ),
    Scenario(
        "mismatch",
        "driver supports CUDA 12.2, the job's torch was built for CUDA 12.8",
        _mismatch,
        signs=frozenset({"mismatch"}),
        findings=(ExpectedFinding("cuda_mismatch", "warning"),),
        verdict=("gpu_bound",),
    ),
    Scenario(
        "container",
        "8-CPU quota on a 128-core host, throttled ~40%; 16 workers per rank; 64 MiB /dev/shm",
        _container,
        signs=frozenset({"low_util", "throttled"}),
        findings=(
            *_each_gpu("starvation_cpu", "warning"),
            ExpectedFinding("cpu_throttled", "warning"),
            ExpectedFinding("workers_oversubscribed", "warning", tuple(range(DEFAULT_GPU_COUNT))),
            ExpectedFinding("shm_small", "warning"),
        ),
        verdict=("input_bound",),
    ),
    Scenario(
        "oom",
        "a data-loader worker OOM-killed by the container's memory limit every few minutes",
        _oom,
        signs=frozenset({"oom"}),
        findings=(ExpectedFinding("oom_kill", "critical"),),
        verdict=("gpu_bound",),
        moves=True,
    ),
    Scenario(
        "nvlink",
        "one GPU with 2 of its 18 NVLinks down and replay errors climbing; the job still reads ~100% busy",
        _nvlink,
        signs=frozenset({"nvlink_down", "nvlink_errors"}),
        findings=(
            ExpectedFinding("nvlink_down", "critical", (3,)),
            ExpectedFinding("nvlink_errors", "warning", (3,)),
        ),
        verdict=("mixed", "interconnect", "gpu_bound"),
    ),
    Scenario(
        "nvswitch",
        "every GPU of the NVSwitch board with 2 of its 18 NVLinks down alike: a failed NVSwitch or fabric manager",
        _nvswitch,
        signs=frozenset({"nvlink_down"}),
        findings=_each_gpu("nvlink_down", "critical"),
        verdict=("interconnect",),
    ),
    Scenario(
        "numa",
        "rank 0's process pinned to the CPUs of the other socket, far from its GPU",
        _numa,
        signs=frozenset({"numa_far"}),
        findings=(ExpectedFinding("numa_mismatch", "warning", (0,)),),
        verdict=("mixed", "input_bound", "gpu_bound"),
    ),
    Scenario(
        "pcie-box",
        "four RTX 4090s on two sockets, one job on all: no NVLink, no P2P across the sockets",
        _pcie_box,
        signs=frozenset({"no_p2p"}),
        findings=(ExpectedFinding("p2p_unavailable", "warning", tuple(range(DEFAULT_GPU_COUNT))),),
        verdict=("interconnect",),
    ),
    Scenario(
        "mig-isolated",
        "H100s in MIG mode, two 3g.40gb instances each, one busy training process in each: isolated, not shared",
        _mig_isolated,
        signs=frozenset({"mig"}),
        findings=(),
        verdict=("gpu_bound",),
    ),
    Scenario(
        "mig-starving",
        "MIG: on the first GPU the process in GI 2 loads its data itself (num_workers=0) and its slice waits",
        _mig_starving,
        signs=frozenset({"mig", "low_util", "main_loading"}),
        findings=(ExpectedFinding("starvation_cpu", "warning", (0,), (2,)),),
        verdict=("mixed", "input_bound", "gpu_bound"),
    ),
    Scenario(
        "mig-shared-slice",
        "MIG: a second user's notebook shares the first GPU's GI 1 with a training job; GI 2 runs its own",
        _mig_shared_slice,
        signs=frozenset({"mig", "shared_gpu"}),
        findings=(ExpectedFinding("gpu_contention", "warning", (0,), (1,)),),
        verdict=("mixed", "contended", "gpu_bound"),
    ),
    Scenario(
        "mig-pending",
        "MIG enabled on the first GPU while its job ran: the change waits for a GPU reset; the GPU still runs whole",
        _mig_pending,
        signs=frozenset({"mig_pending"}),
        findings=(ExpectedFinding("mig_pending", "warning", (0,)),),
        verdict=("gpu_bound",),
    ),
)

BY_NAME: dict[str, Scenario] = {scenario.name: scenario for scenario in SCENARIO_TABLE}

# The tour is no scene of its own: it plays every scenario of the table in turn.
TOUR = "tour"
TOUR_DESCRIPTION = "cycles through all the scenarios above, 30 s each"

SCENARIOS: tuple[str, ...] = (*BY_NAME, TOUR)

# One line each, for `--help`, the README and the SIMULATED banner.
SCENARIO_DESCRIPTIONS: dict[str, str] = {
    **{scenario.name: scenario.description for scenario in SCENARIO_TABLE},
    TOUR: TOUR_DESCRIPTION,
}
