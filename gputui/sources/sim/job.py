"""The lab's machine: one simulated GPU that follows a real training job, on the real host.

A real job (examples/lab/train.py, or any job that writes the trace below) reports how long it has spent in
its "GPU step". This source has one simulated GPU whose utilization over each interval is exactly the share of
that interval the job spent there (one GPU per trace where it is given several: the ranks of a torch.distributed
job, each writing its own), as NVML's utilization is "% of the sample period in which a kernel ran";
clocks, power, temperature, memory activity and GPM follow from it through the simulator's physics. Everything
else is this machine's: the host through HostSource, the job's real process as the GPU's process (its CPU,
threads, data-loader workers, run-queue wait, CPUs), and the job's own cgroup and limits, not gputui's. So the
diagnosis can be tried on real PyTorch input pipelines without a GPU. Every view labels it SIMULATED.

The trace, which this module owns (the job writes it with the standard library alone): one JSON object,

    {"format": "gputui-job-trace", "version": 1, "pid": 1234, "gpu_busy_s": 12.5, "step_started": 8123.25,
     "step_s": 0.025, "steps": 300}

replaced whole on every entry to and exit from a GPU step: written to a temporary file in the same directory
and renamed over the trace (os.replace), so a reader sees the old record or the new one, never a mix of them.
`pid` is the job's main process; `gpu_busy_s` the GPU's busy seconds in the steps that have ended; `step_started`
the time.monotonic() at which the step in progress began, null between steps (CLOCK_MONOTONIC is one clock for
every process of a Linux machine, so this process can compare it with its own); `step_s` the GPU work that
step holds, when the job knows it (optional; null or absent: busy until the step ends); `steps` the steps
ended; `spinning_since` (optional; null or absent: not spinning) the time.monotonic() at which the job began to
wait in a collective whose kernel spins on the GPU until its peers arrive, as NCCL's does: the GPU reads busy
meanwhile, at ~3% SM activity and near-idle power (physics.spinning_plan), the sign of a rank waiting on a peer
that may never come. The GPU's time is not the process's: a process waiting for a CPU (a spent cgroup quota, a
busy core) wakes after its GPU has gone idle, so a step that knows its work counts only that. The job writes its first
record once its data-loader workers have started, so its process tree is complete from the first look. gputui
must see the job's PID namespace (the same machine or container).
"""

from __future__ import annotations

import json
import math
import os
import platform
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from types import ModuleType

import psutil

from gputui.model import Snapshot, SystemInfo, Topology, parse_cpus
from gputui.sources.base import InvalidGpuSelection, NoJobTrace, machine_name
from gputui.sources.host import procfs
from gputui.sources.host.cgroup import read_text
from gputui.sources.host.numa import numa_nodes
from gputui.sources.host.source import HostSource
from gputui.sources.sim.physics import (
    BOARDS,
    DEFAULT_BOARD,
    GpuPlan,
    HostPlan,
    Job,
    MachinePhysics,
    Scene,
    gpu_info,
    spinning_plan,
)

TRACE_FORMAT = "gputui-job-trace"
TRACE_VERSION = 1
# How the scenario of this machine reads in every view ("SIMULATED: GPU follows real job pid 1234"; with a GPU per
# rank, "SIMULATED: GPUs follow real job pids 1234, 1235").
SCENARIO_PREFIX = "GPU follows real job pid "
SCENARIO_PREFIX_RANKS = "GPUs follow real job pids "
# What the job holds on the simulated GPU: the trace does not say, and no memory rule should fire on it.
JOB_MEMORY_GIB = 20.0


class TraceError(ValueError):
    """The trace is missing or is not a record this module can read; the message says which."""


@dataclass(frozen=True, slots=True)
class JobTrace:
    """One record of the trace (see the module's docstring)."""

    pid: int
    gpu_busy_s: float
    step_started: float | None
    step_s: float | None
    steps: int
    spinning_since: float | None = None

    def spun(self, now: float, dt: float) -> float:
        """Seconds of the interval of `dt` ending at `now` in which a collective's kernel spun."""
        return 0.0 if self.spinning_since is None else max(0.0, min(dt, now - self.spinning_since))

    def busy_at(self, now: float) -> float:
        """The GPU's busy seconds up to monotonic time `now`, the step in progress included."""
        if self.step_started is None:
            return self.gpu_busy_s
        spent = max(0.0, now - self.step_started)
        return self.gpu_busy_s + (spent if self.step_s is None else min(spent, self.step_s))

    def busy_now(self, now: float) -> bool:
        """Whether the GPU is running the step's work at `now`."""
        if self.step_started is None:
            return False
        return self.step_s is None or now - self.step_started < self.step_s


def read_trace(path: Path) -> JobTrace:
    """The trace's current record; TraceError when it is missing or malformed."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise TraceError(f"no job trace at {path}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise TraceError(f"the job trace at {path} cannot be read: {exc}") from None
    try:
        record = json.loads(text)
    except json.JSONDecodeError as exc:
        raise TraceError(f"the job trace at {path} is not JSON: {exc}") from None
    if not isinstance(record, dict) or record.get("format") != TRACE_FORMAT:
        raise TraceError(f'{path} is not a gputui job trace (no "format": "{TRACE_FORMAT}")')
    if record.get("version") != TRACE_VERSION:
        raise TraceError(
            f"the job trace at {path} is version {record.get('version')!r}; this gputui reads {TRACE_VERSION}"
        )
    pid = _count(record, "pid", path)
    if pid == 0:
        raise TraceError(f"the job trace at {path} has a bad pid: 0")
    return JobTrace(
        pid,
        _seconds(record, "gpu_busy_s", path),
        None if record.get("step_started") is None else _seconds(record, "step_started", path),
        None if record.get("step_s") is None else _seconds(record, "step_s", path),
        _count(record, "steps", path),
        None if record.get("spinning_since") is None else _seconds(record, "spinning_since", path),
    )


def _count(record: dict[str, object], key: str, path: Path) -> int:
    value = record.get(key)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise TraceError(f"the job trace at {path} has a bad {key}: {value!r}")
    return value


def _seconds(record: dict[str, object], key: str, path: Path) -> float:
    value = record.get(key)
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value) or value < 0:
        raise TraceError(f"the job trace at {path} has a bad {key}: {value!r}")
    return float(value)


def job_scenario(pids: int | Sequence[int]) -> str:
    """SystemInfo.scenario of this machine: what the SIMULATED label says in the header, reports and exports."""
    followed = (pids,) if isinstance(pids, int) else tuple(pids)
    if len(followed) == 1:
        return f"{SCENARIO_PREFIX}{followed[0]}"
    return SCENARIO_PREFIX_RANKS + ", ".join(str(pid) for pid in followed)


def is_job_scenario(scenario: str | None) -> bool:
    return scenario is not None and scenario.startswith((SCENARIO_PREFIX, SCENARIO_PREFIX_RANKS))


def job_banner(system: SystemInfo) -> str:
    """The one line that says what is simulated here and what is not (the GPU is; the host and the job are not)."""
    scenario = system.scenario or ""
    if scenario.startswith(SCENARIO_PREFIX_RANKS):
        return (
            f"SIMULATED GPUs following the real job pids {scenario.removeprefix(SCENARIO_PREFIX_RANKS)}, one each: the"
            " GPUs' figures are simulated; the host, the jobs' processes and their cgroup are this machine's"
        )
    return (
        f"SIMULATED GPU following the real job pid {scenario.removeprefix(SCENARIO_PREFIX)}: the GPU's figures are"
        " simulated; the host, the job's processes and its cgroup are this machine's"
    )


@dataclass(slots=True)
class _Followed:
    """What one simulated GPU knows of the job it follows, from one reading to the next."""

    trace: Path
    pid: int = 0
    running: bool = False
    broken: bool = False  # the trace could not be read at the last reading (said once)
    last_busy: float | None = None  # the job's busy seconds as of the last reading


class JobSource:
    """The Source protocol over simulated GPUs that follow the jobs writing `traces`: GPU i follows traces[i] (one
    path: one GPU).

    `near_cpus` is the cpulist of the CPUs near the GPUs (their `Topology.cpu_affinity`); default every CPU of this
    machine. `clock` must be CLOCK_MONOTONIC (the traces' clock); tests move it themselves. `open()` raises
    NoJobTrace (a SourceUnavailable) when a trace is missing or unreadable; once open, a job that has exited, or
    a trace that went unreadable, is an idle GPU with no process, and a new PID in a trace is followed. The host's
    cgroup is read through the first GPU's job (the ranks of one job share theirs).

    The first sample's utilization covers the moments since `open()`; later ones each cover one interval.
    """

    def __init__(
        self,
        traces: Path | str | Sequence[Path | str],
        near_cpus: str | None = None,
        board: str = DEFAULT_BOARD,
        gpu_indices: Sequence[int] | None = None,
        seed: int = 0,
        clock: Callable[[], float] = time.monotonic,
        root: Path = Path("/"),
        psutil_module: ModuleType = psutil,
    ) -> None:
        paths = (Path(traces),) if isinstance(traces, (str, Path)) else tuple(Path(t) for t in traces)
        if not paths:
            raise ValueError("JobSource needs a job trace to follow")
        if board not in BOARDS:
            raise ValueError(f"unknown board {board!r} (choose from {', '.join(BOARDS)})")
        if near_cpus is not None and parse_cpus(near_cpus) is None:
            raise ValueError(f"not a CPU list: {near_cpus!r} (expected e.g. 0-3,8)")
        for index in gpu_indices or ():
            if not 0 <= index < len(paths):
                has = "one GPU, 0" if len(paths) == 1 else f"{len(paths)} GPUs, 0-{len(paths) - 1}"
                raise InvalidGpuSelection(f"GPU {index} does not exist (the lab's machine has {has})")
        self._selected = tuple(dict.fromkeys(gpu_indices)) if gpu_indices else tuple(range(len(paths)))
        self._near = near_cpus.strip() if near_cpus is not None else f"0-{(os.cpu_count() or 1) - 1}"
        self._board = BOARDS[board]
        self._clock = clock
        self._root = root
        self._ps = psutil_module
        rng = random.Random(f"{seed}/job")
        infos = [gpu_info(index, rng, self._board) for index in range(len(paths))]
        self._info = tuple(infos[index] for index in self._selected)
        self._physics = MachinePhysics.drawn(rng, len(paths), seed, self._board)
        self._gpus = tuple(_Followed(paths[index]) for index in self._selected)
        self._host: HostSource | None = None
        self._cgroup_pid = 0
        self._system: SystemInfo | None = None
        self._started = 0.0
        self._epoch = 0.0
        self._last_at = 0.0

    # -- Source protocol ---------------------------------------------------------------------------------

    def open(self) -> SystemInfo:
        traces = []
        for gpu in self._gpus:
            try:
                traces.append(read_trace(gpu.trace))
            except TraceError as exc:
                hint = f"start examples/lab/train.py --trace {gpu.trace} first"
                raise NoJobTrace(f"{exc}: {hint}") from None
        self._physics.reset()
        self._started = self._last_at = self._clock()
        self._epoch = time.time()
        for gpu, trace in zip(self._gpus, traces, strict=True):
            gpu.pid, gpu.broken = trace.pid, False
            gpu.running = self._is_running(trace.pid)
            gpu.last_busy = trace.busy_at(self._last_at) if gpu.running else None
        return self._describe()

    def sample(self) -> Snapshot:
        if self._system is None or self._host is None:
            raise RuntimeError("JobSource.sample() called before open()")
        now = self._clock()
        dt = max(0.0, now - self._last_at)
        events: list[str] = []
        plans: dict[int, GpuPlan] = {}
        jobs: list[Job] = []
        for index, gpu in zip(self._selected, self._gpus, strict=True):
            plans[index], job = self._plan(gpu, index, now, dt, events)
            jobs += [] if job is None else [job]
        if self._system.scenario != job_scenario([gpu.pid for gpu in self._gpus]):  # a new job: follow it
            self._describe()
        self._last_at = now
        timestamp = self._epoch + (now - self._started)
        scene = Scene(plans, tuple(jobs), HostPlan())
        gpus = tuple(self._physics.gpu_sample(index, scene, now - self._started, timestamp, dt) for index in plans)
        host = self._host.sample([job.pid for job in jobs], timestamp)
        return Snapshot(timestamp, self._system, self._info, gpus, host, tuple(events))

    def close(self) -> None:
        if self._host is not None:
            self._host.close()
            self._host = None
        self._system = None

    # -- the jobs ------------------------------------------------------------------------------------------

    def _plan(self, gpu: _Followed, index: int, now: float, dt: float, events: list[str]) -> tuple[GpuPlan, Job | None]:
        """What GPU `index` does over the interval ending `now`, and the job on it (None: idle, no job)."""
        trace = self._read(gpu, events)
        if trace is not None and trace.pid != gpu.pid:
            events.append(f"the trace names a new job, pid {trace.pid} (was {gpu.pid}): following it")
            gpu.pid, gpu.last_busy = trace.pid, None
        running = trace is not None and self._is_running(trace.pid)
        if gpu.running and not running and trace is not None:  # an unreadable trace said so already
            events.append(f"the job (pid {gpu.pid}) is no longer running: the simulated GPU is idle")
        gpu.running = running
        if trace is None or not running:
            gpu.last_busy = None
            return GpuPlan(idle=True, pcie_gen=1), None
        busy = trace.busy_at(now)
        # Since the last reading; a job seen for the first time counts from its start, within the interval.
        spent = busy - gpu.last_busy if gpu.last_busy is not None else busy
        gpu.last_busy = busy
        spun = trace.spun(now, dt)
        util = 100.0 * min(max(spent, 0.0) + spun, dt) / dt if dt > 0 else (100.0 if trace.busy_now(now) else 0.0)
        job = Job(pid=trace.pid, user="", cmdline="", memory_gib=((index, JOB_MEMORY_GIB),), cpu_pct=0.0)
        if dt > 0 and spun >= dt / 2:  # most of the interval a kernel spun, waiting on a peer: busy, doing nothing
            return replace(spinning_plan(), util=util, util_swing=0.0), job
        return GpuPlan(util=util, util_swing=0.0), job

    def _read(self, gpu: _Followed, events: list[str]) -> JobTrace | None:
        """The trace's record now; None (and a notice, once) while it cannot be read."""
        try:
            trace = read_trace(gpu.trace)
        except TraceError as exc:
            if not gpu.broken:
                events.append(f"{exc}: the simulated GPU is idle until it can be read again")
            gpu.broken = True
            return None
        gpu.broken = False
        return trace

    def _is_running(self, pid: int) -> bool:
        """The job's process exists and has not exited (an exited child not yet reaped reads Z)."""
        return procfs.state(pid, self._root) not in (None, "Z", "X")

    def _numa_node(self) -> int | None:
        """This machine's NUMA node of the CPUs the simulated GPU sits near (sysfs), as NVML would give a real
        GPU's; None where sysfs has no nodes or the CPUs span several."""
        near = set(parse_cpus(self._near) or ())
        nodes = {
            int(path.name.removeprefix("node"))
            for path in (self._root / "sys/devices/system/node").glob("node[0-9]*")
            if near & set(parse_cpus(read_text(path / "cpulist")) or ())
        }
        return nodes.pop() if len(nodes) == 1 else None

    def _describe(self) -> SystemInfo:
        """Read the host through the first GPU's job's cgroup, and describe the machine with the jobs followed."""
        pid = self._gpus[0].pid
        if self._host is None or pid != self._cgroup_pid:
            if self._host is not None:
                self._host.close()
            self._cgroup_pid = pid
            self._host = HostSource(clock=self._clock, psutil_module=self._ps, root=self._root, cgroup_pid=pid)
            self._host.open()
        count = len(self._gpus)
        # The simulated GPUs are not linked to each other in any way the lab simulates: unknown, not made up.
        links = tuple(tuple("X" if a == b else None for b in range(count)) for a in range(count))
        self._system = SystemInfo(
            # The host's name: every figure but the GPUs' is this machine's, and the jobs' PIDs only mean
            # something here; `source` and `scenario` say the GPUs are simulated wherever the name is shown.
            hostname=machine_name(),
            source="simulated",
            # The simulated GPU has no driver to ask: not reported, rather than made up.
            driver_version=None,
            nvml_version=None,
            cuda_driver_version=None,
            gpu_count=count,
            cpu_count=os.cpu_count() or 0,
            kernel=platform.release(),
            scenario=job_scenario([gpu.pid for gpu in self._gpus]),
            container=self._host.container,
            topology=Topology(
                matrix=links,
                p2p=tuple((None,) * count for _ in range(count)),
                numa_node=(self._numa_node(),) * count,
                cpu_affinity=(self._near,) * count,
                numa_nodes=numa_nodes(self._root),  # this machine's: the simulated GPUs sit in it
            ),
        )
        return self._system
