"""The lab: real PyTorch training jobs (examples/lab/train.py) on a simulated GPU, diagnosed in real time.

Each case starts one job as a subprocess (a torch.distributed one under torchrun, a rank per simulated GPU), waits
for its traces, follows it with the `--demo-job` source (gputui.sources.sim.job), the stacks' sampling and the
diagnostics engine at 0.5 s for the case's seconds (RUN_S, or more: see there), wired as the product's Sampler
wires them but with the lab's shorter window and holds (LAB_DIAGNOSTICS, LAB_STACKS), and returns what was seen:
the snapshots (with the activity read from the job's stacks), the verdict at the end, and every finding that was
open at some point. A variant runs the same job under `gputui run` (its stacks read from inside), or
reads its stacks as an unprivileged user (ptrace refused). The job is killed with every process under it (its
ranks and data-loader workers too) in a `finally`, and so is any cgroup made for it.

A case that this machine cannot stage raises CaseSkipped with the reason: tests turn it into pytest.skip, and
`python -m tests.lab.show` prints it. The cases measure CPU, so they run one after another, never in parallel,
and each needs the machine quiet beside its job. Before a job is followed the machine is settled (settle: what
the tests before left to end or write back) and watched while the job starts, for as long as QUIET_WAIT_S, until
other processes' CPU (and disk traffic, for the cold-disk case) is low enough (tests/lab/neighbours.py); it is
measured again over the run. A case skips for a busy machine only where it names a process that kept it busy:
with the figures, rather than judged.

The lab's own instruments stay off the resources a case stages: the job's trace (the simulated GPU's source)
and its log are written to a tmpfs (instrument_dir), not to the disk the cold-disk case makes the job wait for.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import pwd
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol

import psutil

from gputui.config import StacksConfig
from gputui.diagnostics.engine import DiagnosticsEngine, DiagnosticsState
from gputui.diagnostics.findings import Finding
from gputui.diagnostics.settings import DiagnosticsConfig
from gputui.diagnostics.thresholds import Thresholds
from gputui.diagnostics.tick import Tick
from gputui.model import HostSample, JobActivity, ProcSample, Snapshot
from gputui.serialize import activity_from_dict
from gputui.session.stacks import JobStacks
from gputui.sources.sim.job import JobSource, TraceError, read_trace
from tests.cgroups import remove_group
from tests.lab.contention import NoNeighbours, spinners
from tests.lab.neighbours import Neighbours, Usage, between, usage

REPO = Path(__file__).resolve().parents[2]
TRAIN = REPO / "examples/lab/train.py"
# torchrun, as a user starts the ranks of one job on one machine: a free port of its own (--standalone), and its
# agent checking on the ranks every second rather than ten times a second (a lab machine has two CPUs).
TORCHRUN = ("-m", "torch.distributed.run", "--standalone", "--monitor-interval", "1")
# What `gputui run -- CMD` is started as (H-agent's command: the job's stacks read from inside it).
GPUTUI_RUN = ("-m", "gputui", "run", "--")
# How long a case waits at its end for a window of stack samples in progress (LAB_STACKS's window_s is 2 s).
STACKS_CLOSE_S = 15.0
# How long a job has to stop when asked (SIGTERM) before it and its processes are killed.
STOP_GRACE_S = 10.0
# Who reads the stacks in the refused-ptrace variant: another user than the job's (root's), not root.
UNPRIVILEGED_USER = "nobody"
INTERVAL_S = 0.5
# The lab's diagnostics: the product's rules and thresholds, with the waits that pace a monitor left on all day
# shortened to what a case needs to see every finding and verdict it asserts settle. The rules look at the last
# LAB_WINDOW_S (the product's 10 s: the lab's jobs repeat every 0.1 to 0.6 s, so 12 readings hold many of their
# cycles) and the verdict needs half of it; a condition holds HOLD_S before its finding opens and is clear HOLD_S
# before it closes (the product's 3 s and 5 s), and a verdict gives way after HOLD_S too.
LAB_WINDOW_S = 6.0
HOLD_S = 1.5
# A job that has stopped (case p) is said after LAB_STOPPED_S of its ranks held in one place (the product's 240 s):
# only the ranks of a torch.distributed job whose GPUs all idle or spin are judged so, which no other case stages.
LAB_STOPPED_S = 8.0
LAB_DIAGNOSTICS = DiagnosticsConfig(
    thresholds=Thresholds(window_s=LAB_WINDOW_S, stopped_after_s=LAB_STOPPED_S),
    open_after_s=HOLD_S,
    close_after_s=HOLD_S,
)
# A window of stack samples of 2 s at 40 Hz (the product's: 4 s at 20 Hz), the same 80 samples; the product's
# cooldown_s and recheck_s (300 s, 60 s) outlast any case: one window of a process per case. The ranks of a job that
# may have stopped are sampled again every LAB_HANG_RECHECK_S (the product's 60 s): case p's alone.
LAB_HANG_RECHECK_S = 3.0
LAB_STACKS = StacksConfig(window_s=2.0, rate_hz=40, hang_recheck_s=LAB_HANG_RECHECK_S)
# The verdict comes after half the window (3 s), and gives way once (HOLD_S) where the first readings misled it;
# the findings are open by then: 6.5 s sees them all.
RUN_S = 6.5
# A verdict named by the stacks comes later: the first sign that the GPU waits (a starvation finding, ~2.5 s, or
# the verdict, 3 s) starts a window of stack samples (2 s); the finding that reads it opens HOLD_S after, the
# starvation finding it steps aside for closes HOLD_S after that, and the verdict gives way HOLD_S later (~9 s).
# Each further rank's window comes after the one before (~11 s for two). Under `gputui run` the stacks are what
# the job published, read at once: the verdict that names them settles by ~6 s.
STACKS_RUN_S = 11.0
RANKS_RUN_S = 13.5
# A stopped job (case p): its ranks are re-read once their GPUs have looked stopped for verdict_settle_s (3 s):
# their first windows (~5 s, one after the other), their second ones LAB_HANG_RECHECK_S on (~11 s), held
# LAB_STOPPED_S by then; job_stopped opens, and the verdict gives way HOLD_S later (~13-16 s). Margin for a slow
# py-spy start on a shared machine.
HANG_RUN_S = 24.0
IN_PROCESS_RUN_S = 7.5
# The longest a job may take to import torch, start its workers (and write its files) and report its first batch.
START_TIMEOUT_S = 60.0
# The most CPU other processes may use beside a lab job (cores, the mean over the run). The rules read the host's
# CPU whole: a quarter of a core leaves a case that needs a core spare one, and moves the host's busy share and
# the job's wait for a CPU by a few points at most.
OTHERS_MAX_CORES = 0.25
# The most other processes may move on the disks beside the job that reads a cold disk (MB/s): its own reads
# are 50 MB/s and more.
QUIET_DISK_MB_S = 10.0
# How the machine is watched before a case's job is followed: over the job's start, then for QUIET_CHECK_S at a
# time, for at most QUIET_WAIT_S, until it is quiet (OTHERS_MAX_CORES, QUIET_DISK_MB_S).
QUIET_CHECK_S = 1.0
QUIET_WAIT_S = 30.0
# Settling what the tests before left: the dirty pages written back (os.sync, then /proc/meminfo's Dirty and
# Writeback below SETTLED_DIRTY_KB), and this process's children gone, for at most SETTLE_S.
SETTLE_S = 20.0
SETTLED_DIRTY_KB = 4096


class CaseSkipped(Exception):
    """This machine cannot stage the case; the message says why."""


def crowded(neighbours: Neighbours, reads_disk: bool = False, named: bool = True) -> str | None:
    """Why the machine was busier than a lab job can bear (see OTHERS_MAX_CORES; the disk too for a job that
    reads one), with the figures and the processes that made it so; None when it was quiet enough. With `named`,
    also None where no process there can be named: a load that came and went (short-lived processes, the
    kernel) is not a neighbour to skip for, and the case is judged."""
    if neighbours.others_cores > OTHERS_MAX_CORES and (neighbours.busiest or not named):
        return (
            f"{neighbours.describe_cpu()}; the case needs the machine quiet beside its job (at most"
            f" {OTHERS_MAX_CORES:g} of a CPU used by other processes)"
        )
    if reads_disk:
        disk = neighbours.others_disk_mb_s
        if disk is None:
            return "the disks' counters cannot be read: whether other processes kept the disk busy is unknown"
        if disk > QUIET_DISK_MB_S and (neighbours.busiest_disk or not named):
            return f"{neighbours.describe_disk()}; the case needs a quiet disk (at most {QUIET_DISK_MB_S:g} MB/s)"
    return None


# How a case's job is started and its stacks read: as a user starts it, with the stacks read from outside
# (py-spy, as root); under `gputui run -- ...` (the in-process sampler publishes them); or started as root with
# its stacks read by an unprivileged user, whom ptrace refuses.
Variant = Literal["", "run", "unprivileged"]
VARIANTS: tuple[Variant, ...] = ("", "run", "unprivileged")


@dataclass(frozen=True)
class Case:
    """One lab job: what it stages, how train.py is started, and what the machine around it must be."""

    name: str  # "a" ... "j"
    slug: str
    title: str
    args: tuple[str, ...]  # train.py's options, --trace and --seconds aside
    near_cpus: str | None = None  # the simulated GPU's near CPUs (--demo-job-cpus); None: every CPU
    quota_cores: float | None = None  # run the job in a new cgroup v1 group with this CPU quota
    data_files: int = 0  # files of `file_mb` MiB the job writes and then reads with a cold page cache
    file_mb: int = 0
    needs_cpus: int = 1
    ranks: int = 1  # more than one: started by torchrun, a simulated GPU following each rank
    # CPU-bound processes of another user started beside the job before it (tests/lab/contention.py): the
    # neighbours a contention case stages on purpose, counted apart from the machine's others.
    neighbours: int = 0
    seconds: float | None = None  # how long the job is followed (None: RUN_S)
    # The variants its job, started as a user starts it, is read in at once, each by a stack reader and an engine
    # of its own: "" and "unprivileged" differ only in who reads the stacks ("run" starts another job).
    reads: tuple[Variant, ...] = ("",)


# Two workers making light samples (4 x 2 ms of CPU a batch): the loader keeps up with any step of 15 ms or more.
LOADER_KEEPS_UP = ("--num-workers", "2", "--batch-size", "4", "--sample-ms", "2")
# Each of two ranks with one such worker (two ranks share the machine's CPUs), and a GPU step of 20 ms.
RANK_ARGS = ("--num-workers", "1", "--batch-size", "4", "--sample-ms", "2", "--gpu-step-ms", "20")

CASES: tuple[Case, ...] = (
    Case(
        "a",
        "no-workers",
        "num_workers=0, heavy samples (4 x 20 ms of CPU a batch) in the main process, GPU step 25 ms; cores spare",
        ("--num-workers", "0", "--batch-size", "4", "--sample-ms", "20", "--gpu-step-ms", "25"),
    ),
    Case(
        "b",
        "keeps-up",
        "2 workers, light samples (4 x 2 ms a batch), GPU step 40 ms: the loader keeps up",
        ("--num-workers", "2", "--batch-size", "4", "--sample-ms", "2", "--gpu-step-ms", "40"),
    ),
    Case(
        "c",
        "too-few-workers",
        "1 worker, heavy samples (4 x 20 ms a batch), GPU step 25 ms: the worker is always busy, a core spare",
        ("--num-workers", "1", "--batch-size", "4", "--sample-ms", "20", "--gpu-step-ms", "25"),
    ),
    Case(
        "d",
        "quota",
        "4 workers, heavy samples (4 x 30 ms a batch), GPU step 25 ms, in a cgroup v1 group with a 1-CPU quota",
        ("--num-workers", "4", "--batch-size", "4", "--sample-ms", "30", "--gpu-step-ms", "25"),
        quota_cores=1.0,
    ),
    Case(
        "e",
        "far-cpus",
        "2 workers that keep up (as b), the job pinned to CPU 1 (--cpus 1) while the GPU's near CPUs are CPU 0",
        ("--num-workers", "2", "--batch-size", "4", "--sample-ms", "2", "--gpu-step-ms", "40", "--cpus", "1"),
        near_cpus="0",
        needs_cpus=2,
    ),
    Case(
        "f",
        "cold-disk",
        "2 workers reading a 32 MiB file per sample with a cold page cache (4 samples a batch, 1 ms of CPU each), "
        "GPU step 25 ms",
        ("--num-workers", "2", "--batch-size", "4", "--sample-ms", "1", "--gpu-step-ms", "25"),
        data_files=8,
        file_mb=32,
    ),
    Case(
        "g",
        "main-cpu",
        "2 workers that keep up, GPU step 20 ms, then 60 ms of the main loop's own Python (compute_metrics)",
        (*LOADER_KEEPS_UP, "--gpu-step-ms", "20", "--main-cpu-ms", "60"),
        seconds=STACKS_RUN_S,
    ),
    Case(
        "h",
        "blocked",
        "2 workers that keep up, GPU step 20 ms, then the main loop asleep 60 ms in wait_for_lock",
        (*LOADER_KEEPS_UP, "--gpu-step-ms", "20", "--block-ms", "60"),
        seconds=STACKS_RUN_S,
        reads=("", "unprivileged"),
    ),
    Case(
        "i",
        "checkpoint",
        "2 workers that keep up, GPU step 15 ms, a 128 MiB checkpoint (torch.save of a state dict) every 3 steps",
        (*LOADER_KEEPS_UP, "--gpu-step-ms", "15", "--checkpoint-every", "3", "--checkpoint-mb", "128"),
        seconds=STACKS_RUN_S,
    ),
    Case(
        "j",
        "two-ranks",
        "two ranks over gloo under torchrun, a GPU each, 1 worker each that keeps up, GPU step 20 ms; rank 1 adds"
        " 60 ms of its own Python a step, rank 0 waits for it in all_reduce",
        (*RANK_ARGS, "--main-cpu-ms", "60", "--slow-rank", "1"),
        ranks=2,
        seconds=RANKS_RUN_S,
    ),
    Case(
        "k",
        "neighbours",
        "2 workers, heavy samples (4 x 20 ms a batch), GPU step 25 ms, beside two CPU-bound processes of user nobody"
        " that take the CPUs the workers need",
        ("--num-workers", "2", "--batch-size", "4", "--sample-ms", "20", "--gpu-step-ms", "25"),
        needs_cpus=2,
        neighbours=2,
        seconds=STACKS_RUN_S,
    ),
    Case(
        "l",
        "producer-thread",
        "no DataLoader: one producer thread makes batches (8 x 20 ms of CPU) into a queue.Queue(maxsize=2) the loop"
        " takes them from, GPU step 50 ms: the producer cannot keep up (the GPU busy about a third of the time)",
        ("--loader", "thread", "--batch-size", "8", "--sample-ms", "20", "--gpu-step-ms", "50"),
        seconds=STACKS_RUN_S,
    ),
    Case(
        "m",
        "thread-pool",
        "no DataLoader: a ThreadPoolExecutor of 2 threads prefetches samples (8 x 20 ms of CPU a batch), the loop"
        " waits on each future's result(), GPU step 25 ms: the pool cannot keep up (the GPU busy about a third)",
        ("--loader", "pool", "--loader-threads", "2", "--batch-size", "8", "--sample-ms", "20", "--gpu-step-ms", "25"),
        needs_cpus=2,
        seconds=STACKS_RUN_S,
    ),
    Case(
        "n",
        "recompiles",
        "2 workers that keep up, GPU step 20 ms, then a torch.compile'd model called with a new input shape every 10"
        " steps: Dynamo and Inductor recompile it in the main thread (~1 s on a CPU) every ~0.3 s of steps",
        (*LOADER_KEEPS_UP, "--gpu-step-ms", "20", "--compile-every", "10"),
        seconds=STACKS_RUN_S,
    ),
    Case(
        "o",
        "checkpoint-minority",
        "2 workers that keep up, GPU step 40 ms, a 64 MiB checkpoint every 3 steps: the GPU busy ~60% of the time,"
        " the checkpoint a minority (~30%) of the main thread's samples, its GPU step the rest",
        (*LOADER_KEEPS_UP, "--gpu-step-ms", "40", "--checkpoint-every", "3", "--checkpoint-mb", "64"),
        seconds=STACKS_RUN_S,
    ),
    Case(
        "p",
        "stopped-rank",
        "two ranks over gloo under torchrun, a GPU each, as j; after 20 steps rank 1 blocks for good outside the"
        " collective (wait_forever) while rank 0 waits in all_reduce, its collective's kernel spinning (--spin)",
        (*RANK_ARGS, "--stop-rank", "1", "--stop-after", "20", "--spin"),
        ranks=2,
        seconds=HANG_RUN_S,
    ),
)
BY_NAME = {case.name: case for case in CASES} | {case.slug: case for case in CASES}


@dataclass(frozen=True)
class Outcome:
    """What following one lab job showed."""

    case: Case
    variant: Variant
    command: tuple[str, ...]
    pids: tuple[int, ...]  # the job's main process, one per rank: what each simulated GPU follows
    snapshots: tuple[Snapshot, ...]
    state: DiagnosticsState  # after the last snapshot: the verdict and the findings open then
    seen: tuple[Finding, ...]  # every finding open at some point, as last seen, by when it opened
    events: tuple[str, ...]  # every event of every snapshot (the stacks' notice among them), in order
    job_busy_pct: float  # the share of the time sampled that the job itself reports in its GPU step (rank 0's)
    neighbours: Neighbours  # what the machine did besides the job over the time sampled
    start_s: float  # from starting the job to its first record
    run_s: float  # the whole case, the job's start and stop included
    verdicts: tuple[tuple[float, str], ...] = ()  # (seconds from the first snapshot, the verdict's class) as it changed

    @property
    def pid(self) -> int:
        """The job's main process (rank 0's)."""
        return self.pids[0]

    def crowded(self) -> str | None:
        """Why the machine was busier than the case can bear while it ran, with the figures; None when quiet."""
        return crowded(self.neighbours, reads_disk=bool(self.case.data_files))

    def procs(self, rank: int = 0) -> list[ProcSample]:
        """The job's process (that of `rank`) in each snapshot it was read in."""
        return [p for p in (s.host.process(self.pids[rank]) for s in self.snapshots) if p is not None]

    def activity(self, rank: int = 0) -> JobActivity | None:
        """What the process of `rank` was doing as last read from its stacks; None when they never were."""
        read = [p.activity for p in self.procs(rank) if p.activity is not None]
        return read[-1] if read else None


class Lab(Protocol):
    """The `lab` fixture (tests/lab/conftest.py): a case's outcome by name, in a variant."""

    def __call__(self, name: str, variant: Variant = "") -> Outcome: ...


@dataclass
class Job:
    """A started train.py (or torchrun, or `gputui run`, over it): the process started, the leader of its own
    process group, and where the job's ranks report."""

    process: subprocess.Popen[bytes]
    command: tuple[str, ...]
    traces: tuple[Path, ...]  # one per rank
    log: Path
    start_s: float = 0.0

    @property
    def trace(self) -> Path:
        return self.traces[0]

    def log_tail(self, lines: int = 15) -> str:
        with contextlib.suppress(OSError):
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        return ""


def torch_missing() -> str | None:
    """Why the lab's jobs cannot run here, when torch is not installed (it is looked up, not imported)."""
    if importlib.util.find_spec("torch") is None:
        return "the lab's jobs need torch (make test installs the CPU build), and it is not installed here"
    return None


def train_command(
    args: Sequence[str], trace: Path, seconds: float, ranks: int = 1, prefix: Sequence[str] = ()
) -> list[str]:
    """The command line of a lab job that reports to `trace` (each rank to its own: see train.py) and exits by
    itself after `seconds`; several ranks are started by torchrun, and the whole under `prefix` (gputui run)."""
    train = [str(TRAIN), "--trace", str(trace), "--seconds", f"{seconds:g}", *args]
    launch = [*TORCHRUN, "--nproc-per-node", str(ranks)] if ranks > 1 else []
    return [*([sys.executable, *prefix] if prefix else []), sys.executable, *launch, *train]


def rank_traces(trace: Path, ranks: int) -> tuple[Path, ...]:
    """Where the ranks of a job told to report to `trace` write (train.py's rank_trace)."""
    if ranks == 1:
        return (trace,)
    return tuple(trace.with_name(f"{trace.stem}.rank{rank}{trace.suffix}") for rank in range(ranks))


def _tmpfs() -> Path | None:
    """/dev/shm where it is a tmpfs this process may write to, from this process's mountinfo; else None."""
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/mountinfo").read_text().splitlines():
            left, _, right = line.partition(" - ")
            fields, tail = left.split(), right.split()
            if len(fields) >= 5 and fields[4] == "/dev/shm" and tail[:1] == ["tmpfs"]:
                return Path("/dev/shm") if os.access("/dev/shm", os.W_OK) else None
    return None


@contextlib.contextmanager
def instrument_dir() -> Iterator[Path]:
    """A directory for what the lab itself writes beside a job (its trace, its log), removed on the way out: in a
    tmpfs where there is one, so that the job's reports never wait on a disk a case keeps busy (the cold-disk
    case's reads blocked the trace's rename in the job's main thread, and gputui rightly named it); else in the
    system's temporary directory."""
    with tempfile.TemporaryDirectory(prefix="gputui-lab-", dir=_tmpfs()) as directory:
        yield Path(directory)


@contextlib.contextmanager
def started_job(
    args: Sequence[str],
    seconds: float = 120.0,
    cgroups: Sequence[Path] = (),
    ranks: int = 1,
    prefix: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
) -> Iterator[Job]:
    """Start train.py with `args` (in the cgroups given, from its first instruction on, so its workers are too;
    `ranks` of it under torchrun; under `prefix`; with `env` added to its environment), its trace and log in an
    instrument_dir, wait for every rank's
    first record, and kill every process under it on the way out, whatever happens."""
    with instrument_dir() as directory:
        trace, log = directory / "job.json", directory / "job.log"
        train = train_command(args, trace, seconds, ranks, prefix)
        command = train
        if cgroups:
            join = 'for g in $LAB_CGROUPS; do echo $$ > "$g/cgroup.procs" || exit 97; done; exec "$@"'
            command = ["sh", "-c", join, "sh", *train]
        env = {**os.environ, **(env or {}), "LAB_CGROUPS": " ".join(str(g) for g in cgroups)}
        began = time.monotonic()
        with log.open("wb") as output:
            process = subprocess.Popen(
                command,
                stdout=output,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                env=env,
            )
        job = Job(process, tuple(train), rank_traces(trace, ranks), log)
        try:
            wait_for_trace(job, START_TIMEOUT_S)
            job.start_s = time.monotonic() - began
            yield job
        finally:
            stop(job)


def wait_for_trace(job: Job, timeout: float) -> None:
    """Until every rank's first record can be read; RuntimeError with the job's output if it ends or stalls
    first."""
    deadline = time.monotonic() + timeout
    while True:
        with contextlib.suppress(TraceError):
            for trace in job.traces:
                read_trace(trace)
            return
        code = job.process.poll()
        if code is not None:
            raise RuntimeError(f"the lab job exited ({code}) before its first record:\n{job.log_tail()}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"the lab job wrote no record in {timeout:g} s:\n{job.log_tail()}")
        time.sleep(0.05)


def stop(job: Job) -> None:
    """Ask the job to stop, then kill it and every process under it, and reap it. Asking first lets `gputui run`
    remove the private directory its job's stack records live in (killed, it would leave it in /dev/shm). Its
    process group is not enough: torchrun starts each rank in a session of its own, so the processes under it are
    listed before it is asked, while they are still its."""
    try:
        below = psutil.Process(job.process.pid).children(recursive=True)
    except psutil.Error:
        below = []
    job.process.terminate()
    with contextlib.suppress(subprocess.TimeoutExpired):
        job.process.wait(timeout=STOP_GRACE_S)
    for process in below:
        with contextlib.suppress(psutil.Error):
            process.kill()
    with contextlib.suppress(ProcessLookupError):
        os.killpg(job.process.pid, signal.SIGKILL)
    job.process.wait(timeout=30)


# -- staging: a CPU quota, a disk the page cache does not hide ------------------------------------------------


def _v1_mount(controller: str) -> Path | None:
    """Where the cgroup v1 hierarchy of `controller` is mounted, from this process's mountinfo."""
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        left, _, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if len(fields) >= 5 and len(tail) >= 3 and tail[0] == "cgroup" and controller in tail[2].split(","):
            return Path(fields[4])
    return None


@contextlib.contextmanager
def quota_group(cores: float) -> Iterator[tuple[Path, ...]]:
    """A new cgroup v1 cpu (and cpuacct) group with a CFS quota of `cores`, removed on the way out once empty.
    Needs root and the v1 cpu and cpuacct hierarchies (as tests/sources/host/test_cgroup_real_kernel.py);
    else CaseSkipped."""
    if os.geteuid() != 0:
        raise CaseSkipped("needs root: creating a cgroup and moving a process into it are privileged")
    cpu_mount, cpuacct_mount = _v1_mount("cpu"), _v1_mount("cpuacct")
    if cpu_mount is None or cpuacct_mount is None:
        raise CaseSkipped("no cgroup v1 cpu and cpuacct hierarchies are mounted here (the lab stages v1 quotas)")
    name = f"gputui-lab-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    groups: list[Path] = []
    try:
        for mount in dict.fromkeys((cpu_mount, cpuacct_mount)):  # co-mounted: one directory for both
            try:
                (mount / name).mkdir()
            except OSError as error:
                raise CaseSkipped(f"the cgroup fs is not writable here: {error}") from None
            groups.append(mount / name)
        cpu = cpu_mount / name
        period = 100_000
        (cpu / "cpu.cfs_period_us").write_text(f"{period}\n")
        (cpu / "cpu.cfs_quota_us").write_text(f"{round(cores * period)}\n")
        yield tuple(groups)
    finally:
        for group in groups:
            remove_group(group)  # the group empties once its killed processes are reaped


def _read_bytes() -> int | None:
    """This process's bytes read from storage (/proc/self/io), the page cache aside."""
    with contextlib.suppress(OSError, ValueError, KeyError):
        rows = dict(line.split(": ") for line in Path("/proc/self/io").read_text().splitlines())
        return int(rows["read_bytes"])
    return None


def cold_reads_reach_the_disk(directory: Path) -> str | None:
    """None when a file written, synced and dropped from the page cache here is read back from a storage device;
    otherwise why not (tmpfs, no fadvise, no I/O accounting): the cold-disk case then cannot make disk waits."""
    if not hasattr(os, "posix_fadvise"):
        return "os.posix_fadvise is not available on this platform"
    before = _read_bytes()
    if before is None:
        return "/proc/self/io cannot be read (no task I/O accounting): disk reads cannot be told from cache hits"
    probe = directory / "cold-probe.bin"
    size = 4 << 20
    with probe.open("wb") as handle:
        handle.write(os.urandom(size))
        handle.flush()
        os.fsync(handle.fileno())
        os.posix_fadvise(handle.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
    fd = os.open(probe, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        while os.read(fd, 1 << 20):
            pass
    finally:
        os.close(fd)
        probe.unlink()
    read = (_read_bytes() or 0) - before
    if read < size // 2:
        return f"reads in {directory} do not reach a disk after POSIX_FADV_DONTNEED (read {read} of {size} bytes)"
    return None


# -- settling the machine ------------------------------------------------------------------------------------


def _dirty_kb() -> int:
    """The page cache's dirty pages and those being written back now (/proc/meminfo), in kB."""
    rows = dict(line.split(":", 1) for line in Path("/proc/meminfo").read_text().splitlines() if ":" in line)
    return sum(int(rows.get(name, "0 kB").split()[0]) for name in ("Dirty", "Writeback"))


def settle(job: int | None = None, timeout: float = SETTLE_S) -> None:
    """Let what the tests before this case left end before it measures: this process's children (a server or a
    job on its way out; `job` and those under it are the case's own), and the pages they wrote, which the kernel
    would write back over the case (os.sync, then until /proc/meminfo's Dirty and Writeback are under
    SETTLED_DIRTY_KB). Bounded by `timeout`: what is still busy then is measured like any neighbour."""
    deadline = time.monotonic() + timeout
    me = psutil.Process()
    while time.monotonic() < deadline:
        with contextlib.suppress(psutil.Error):
            own = {job} | {p.pid for p in psutil.Process(job).children(recursive=True)} if job is not None else set()
            left = [p for p in me.children(recursive=True) if p.pid not in own and p.status() != psutil.STATUS_ZOMBIE]
            if not left:
                break
        time.sleep(0.1)
    os.sync()
    while _dirty_kb() > SETTLED_DIRTY_KB and time.monotonic() < deadline:
        time.sleep(0.1)


def await_quiet(root: int, reads_disk: bool, since: Usage | None = None, staged: Sequence[int] = ()) -> None:
    """Until the machine is quiet beside the job under `root` (and the neighbours a case `staged`): measured from
    `since` (taken before the job started, so that its start counts; None: from now, over QUIET_CHECK_S) and then
    QUIET_CHECK_S at a time, for at most QUIET_WAIT_S. CaseSkipped where it is still busy then and a process there
    is named for it; where none is, the case goes on and its figures say what the machine did."""
    deadline = time.monotonic() + QUIET_WAIT_S
    if since is None:
        since = usage(root)
        time.sleep(QUIET_CHECK_S)
    start = since
    while True:
        end = usage(root)
        seen = between(start, end, frozenset(staged))
        if crowded(seen, reads_disk, named=False) is None:
            return
        if time.monotonic() >= deadline:
            named = crowded(seen, reads_disk)
            if named is not None:
                raise CaseSkipped(f"for {QUIET_WAIT_S:g} s before its job was followed, {named}")
            return
        start = end
        time.sleep(QUIET_CHECK_S)


# -- following a job ---------------------------------------------------------------------------------------


def run_case(
    case: Case,
    seconds: float | None = None,
    interval: float = INTERVAL_S,
    log: Callable[[str], object] | None = None,
    variant: Variant = "",
) -> Outcome:
    """Stage `case` (in `variant`), follow its job for `seconds` (default: the case's) at `interval`, and return
    what was seen; CaseSkipped when this machine cannot stage it."""
    return run_reads(case, (variant,), seconds, interval, log)[variant]


def run_reads(
    case: Case,
    variants: Sequence[Variant],
    seconds: float | None = None,
    interval: float = INTERVAL_S,
    log: Callable[[str], object] | None = None,
) -> dict[Variant, Outcome]:
    """Stage `case` once and read its job in each of `variants` at once (those of case.reads, or "run" alone),
    following it for `seconds` (default: the case's) at `interval`; each variant's outcome. CaseSkipped when this
    machine cannot stage it."""
    began = time.monotonic()
    if seconds is None:
        seconds = case.seconds or RUN_S
        if "run" in variants:
            seconds = min(seconds, IN_PROCESS_RUN_S)
    if len(variants) > 1 and not set(variants) <= set(case.reads):
        raise ValueError(f"case {case.name} is read in {case.reads} at once, not in {tuple(variants)}")
    missing = torch_missing()
    if missing is not None:
        raise CaseSkipped(missing)
    if (os.cpu_count() or 1) < case.needs_cpus:
        raise CaseSkipped(f"needs {case.needs_cpus} CPUs, this machine has {os.cpu_count()}")
    prefix: tuple[str, ...] = ()
    readers: list[JobStacks] = []
    for variant in variants:
        if variant == "run":
            if importlib.util.find_spec("gputui.commands.run") is None:
                raise CaseSkipped("`gputui run` is not in this gputui (gputui/commands/run.py)")
            prefix = GPUTUI_RUN
        reader = read_as(UNPRIVILEGED_USER) if variant == "unprivileged" else None
        readers.append(JobStacks(LAB_STACKS) if reader is None else JobStacks(LAB_STACKS, read=reader))
    reads_disk = bool(case.data_files)
    with contextlib.ExitStack() as stack:
        # Data files and checkpoints go beside the repository, on the disk it is on: /tmp may be a tmpfs, which
        # no read misses and where no write waits.
        workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix=".lab-", dir=REPO)))
        args = list(case.args)
        if case.data_files:
            reason = cold_reads_reach_the_disk(workdir)
            if reason is not None:
                raise CaseSkipped(reason)
            data = ["--make-data", str(case.data_files), "--file-mb", str(case.file_mb), "--cold-cache"]
            args += ["--data-dir", str(workdir / "data"), *data]
        if "--checkpoint-every" in args:
            args += ["--checkpoint-dir", str(workdir)]
        # Inductor keeps what it compiles in a cache shared by every job of the user (/tmp/torchinductor_USER): a
        # job killed at a case's end mid-compile left a truncated .so there, which failed the next run's job at
        # its first compile ("file too short"). Each case's job compiles into its own.
        job_env = {"TORCHINDUCTOR_CACHE_DIR": str(workdir / "inductor")}
        groups = stack.enter_context(quota_group(case.quota_cores)) if case.quota_cores is not None else ()
        settle()
        staged: tuple[int, ...] = ()
        if case.neighbours:
            try:
                staged = stack.enter_context(spinners(case.neighbours))
            except NoNeighbours as missing:
                raise CaseSkipped(str(missing)) from None
        since = usage(None)
        lasts = seconds + QUIET_WAIT_S + 60.0
        job = stack.enter_context(started_job(args, lasts, groups, case.ranks, prefix, job_env))
        await_quiet(job.process.pid, reads_disk, since, staged)
        if log is not None:
            log(f"case {case.name}: job pid {job.process.pid} reported after {job.start_s:.1f} s; following it")
        followed = follow_job(
            job.traces, case.near_cpus, seconds, interval, root=job.process.pid, readers=readers, staged=staged
        )
        pids = tuple(read_trace(trace).pid for trace in job.traces)
    run_s = time.monotonic() - began  # the job stopped and its files and cgroup removed
    return {
        variant: Outcome(
            case=case,
            variant=variant,
            command=job.command,
            pids=pids,
            snapshots=reading.snapshots,
            state=reading.state,
            seen=reading.seen,
            events=reading.events,
            job_busy_pct=followed.job_busy_pct,
            neighbours=followed.neighbours,
            start_s=job.start_s,
            run_s=run_s,
            verdicts=reading.verdicts,
        )
        for variant, reading in zip(variants, followed.readings, strict=True)
    }


@dataclass(frozen=True)
class Reading:
    """What one reader of the job's stacks and the engine after it saw: every snapshot (with the activity that
    reader read), the engine's state after the last, every finding seen."""

    snapshots: tuple[Snapshot, ...]
    state: DiagnosticsState
    seen: tuple[Finding, ...]
    events: tuple[str, ...]
    verdicts: tuple[tuple[float, str], ...]  # (seconds from the first snapshot, the verdict's class) as it changed


@dataclass(frozen=True)
class Followed:
    """What following a job showed: a Reading per stack reader, and what the job and the machine did."""

    readings: tuple[Reading, ...]
    # The share of the time from the first snapshot to the last that the job itself reports in its GPU step:
    # what the simulated GPU's utilization after the first snapshot must add up to.
    job_busy_pct: float
    neighbours: Neighbours  # what the machine did besides the job from the first snapshot to the last


class Stacks(Protocol):
    """What the Sampler calls of gputui.session.stacks.JobStacks: the latest activity attached to each snapshot
    before the diagnostics, the tick considered for a window after them."""

    def attach(self, snapshot: Snapshot) -> Snapshot: ...

    def consider(self, tick: Tick) -> None: ...

    def close(self, timeout: float | None = None) -> None: ...


class _Pipeline:
    """One reader's way through a follow: its stacks (None: none read), its engine, and what they saw."""

    def __init__(self, stacks: Stacks | None, config: DiagnosticsConfig) -> None:
        self.stacks = stacks
        self.engine = DiagnosticsEngine(config)
        self.state = DiagnosticsState()
        self.snapshots: list[Snapshot] = []
        self.events: list[str] = []
        self.seen: dict[tuple[str, tuple[int, ...], float], Finding] = {}
        self.verdicts: list[tuple[float, str]] = []

    def update(self, sampled: Snapshot) -> None:
        snapshot = self.stacks.attach(sampled) if self.stacks is not None else sampled
        self.snapshots.append(snapshot)
        self.events += snapshot.events
        state = self.state = self.engine.update(snapshot)
        if self.stacks is not None:
            self.stacks.consider(Tick(snapshot, state.active, state.closed, state.verdict))
        self.seen.update(((f.rule, f.gpus, f.started_at), f) for f in (*state.active, *state.closed))
        cls = state.verdict.cls if state.verdict is not None else "none"
        if not self.verdicts or self.verdicts[-1][1] != cls:
            self.verdicts.append((snapshot.timestamp - self.snapshots[0].timestamp, cls))

    def reading(self) -> Reading:
        ordered = tuple(sorted(self.seen.values(), key=lambda f: (f.started_at, f.rule)))
        return Reading(tuple(self.snapshots), self.state, ordered, tuple(self.events), tuple(self.verdicts))


def follow_job(
    traces: Path | Sequence[Path],
    near_cpus: str | None,
    seconds: float,
    interval: float,
    root: int | None = None,
    readers: Sequence[Stacks | None] = (None,),
    staged: Sequence[int] = (),
    config: DiagnosticsConfig = LAB_DIAGNOSTICS,
) -> Followed:
    """Follow the job writing `traces` (one per rank) in real time with the source, and for each of `readers` the
    stacks' sampling and an engine (`config`), as `gputui diagnose --demo-job` runs them, one snapshot every
    `interval` from the first (taken at once) for `seconds`, and measure what the machine did besides the job
    meanwhile: the job is `root` (default: the first trace's process) and every process under it; the sampling
    itself is left out (it runs on this thread, the stack sampler's py-spy as this process's child), and so are
    the neighbours the case `staged`. Each reader sees the same readings of the source."""
    paths = (traces,) if isinstance(traces, Path) else tuple(traces)
    source = JobSource(paths, near_cpus=near_cpus)
    source.open()
    pipelines = [_Pipeline(stacks, config) for stacks in readers]
    marks: list[tuple[float, float]] = []  # (monotonic time, the job's busy seconds then) at the first and last
    counters: list[Usage] = []  # the machine's counters at the first and last
    start = time.monotonic()
    count = round(seconds / interval) + 1
    try:
        for i in range(count):
            time.sleep(max(0.0, start + i * interval - time.monotonic()))
            snapshot = source.sample()
            if i in (0, count - 1):
                now, record = time.monotonic(), read_trace(paths[0])
                marks.append((now, record.busy_at(now)))
                counters.append(usage(record.pid if root is None else root))
            for pipeline in pipelines:
                pipeline.update(snapshot)
    finally:
        source.close()
        for pipeline in pipelines:
            if pipeline.stacks is not None:
                pipeline.stacks.close(timeout=STACKS_CLOSE_S)  # the window in progress ends: no py-spy outlives it
    (first_at, first_busy), (last_at, last_busy) = marks[0], marks[-1]
    busy_pct = 100.0 * (last_busy - first_busy) / (last_at - first_at) if last_at > first_at else 0.0
    neighbours = between(counters[0], counters[-1], frozenset(staged))
    return Followed(tuple(p.reading() for p in pipelines), busy_pct, neighbours)


# -- reading the stacks as another user ------------------------------------------------------------------------

# Run as the other user: the reader's activity for one process, as JSON on stdout.
_READ_AS = """
import json, sys
from gputui.serialize import activity_to_dict
from gputui.sources.stacks.activity_reader import read_activity
print(json.dumps(activity_to_dict(read_activity(int(sys.argv[1]), float(sys.argv[2])))))
"""


def read_as(user: str) -> Callable[[int, float], JobActivity]:
    """The stacks' reader (read_activity) run as `user` in a process of its own: a reader whom
    the kernel refuses ptrace of another user's job, as gputui run by that user is. CaseSkipped where this
    process cannot start one (not root, no setpriv, no such user)."""
    setpriv = shutil.which("setpriv")
    if os.geteuid() != 0 or setpriv is None:
        raise CaseSkipped("reading the stacks as another user needs root and setpriv (util-linux)")
    try:
        entry = pwd.getpwnam(user)
    except KeyError:
        raise CaseSkipped(f"no user {user!r} here to read the stacks as") from None
    command = [setpriv, f"--reuid={entry.pw_uid}", f"--regid={entry.pw_gid}", "--clear-groups", "--"]
    command += [sys.executable, "-c", _READ_AS]
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(REPO), "HOME": "/nonexistent", "LANG": "C.UTF-8"}

    def read(pid: int, window_s: float) -> JobActivity:
        done = subprocess.run(
            [*command, str(pid), f"{window_s:g}"], capture_output=True, text=True, env=env, timeout=window_s + 60
        )
        if done.returncode != 0:
            raise RuntimeError(f"reading the stacks as {user} failed ({done.returncode}):\n{done.stderr}")
        return activity_from_dict(json.loads(done.stdout))

    return read


# -- what the rules saw --------------------------------------------------------------------------------------


def mean(values: Sequence[float | int | None]) -> float | None:
    """The mean of the values that were read; None when none was."""
    known = [float(v) for v in values if v is not None]
    return sum(known) / len(known) if known else None


def host_mean(outcome: Outcome, read: Callable[[HostSample], float | None]) -> float | None:
    return mean([read(s.host) for s in outcome.snapshots])


def figures(outcome: Outcome) -> dict[str, float | None]:
    """The means over the run of what the rules read: the GPU, the job's process, the host, PSI, the cgroup."""
    procs = outcome.procs()

    def proc(read: Callable[[ProcSample], float | int | None]) -> float | None:
        return mean([read(p) for p in procs])

    def container(name: str) -> float | None:
        return host_mean(outcome, lambda h: getattr(h.container, name) if h.container is not None else None)

    def psi(name: str) -> float | None:
        return host_mean(outcome, lambda h: getattr(h.psi, name) if h.psi is not None else None)

    return {
        "gpu_util": mean([s.gpus[0].utilization_gpu_pct for s in outcome.snapshots]),
        "job_busy": outcome.job_busy_pct,
        "proc_cpu": proc(lambda p: p.cpu_pct),
        "children": proc(lambda p: p.children),
        "threads": proc(lambda p: p.threads),
        "workers_cpu": proc(lambda p: p.workers_cpu_pct),
        "run_queue_wait": proc(lambda p: p.run_queue_wait_pct),
        "host_cpu": host_mean(outcome, lambda h: h.cpu_pct),
        "iowait": host_mean(outcome, lambda h: h.iowait_pct),
        "disk_read_mb_s": host_mean(outcome, lambda h: h.disk_read_bytes_s and h.disk_read_bytes_s / 1e6),
        "disk_busy": host_mean(outcome, lambda h: h.disk_busy_pct),
        "psi_cpu_some": psi("cpu_some_pct"),
        "psi_io_some": psi("io_some_pct"),
        "psi_io_full": psi("io_full_pct"),
        "psi_memory_some": psi("memory_some_pct"),
        "quota_used": container("cpu_pct_of_quota"),
        "throttled_periods": container("cpu_throttled_pct"),
        "throttled_s": container("cpu_throttled_s"),
    }


def last_cpus(outcome: Outcome) -> Counter[int]:
    """How often the job's main thread was last seen on each CPU."""
    return Counter(p.last_cpu for p in outcome.procs() if p.last_cpu is not None)


def describe_command(outcome: Outcome) -> str:
    return shlex.join(str(Path(part).relative_to(REPO)) if part == str(TRAIN) else part for part in outcome.command)
