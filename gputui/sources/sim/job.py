"""The lab's machine: one simulated GPU that follows a real training job, on the real host.

A real job (examples/lab/train.py, or any job that writes the trace below) reports how long it has spent in
its "GPU step". This source has one simulated GPU whose utilization over each interval is exactly the share of
that interval the job spent there, as NVML's utilization is "% of the sample period in which a kernel ran";
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
ended. The GPU's time is not the process's: a process waiting for a CPU (a spent cgroup quota, a busy core)
wakes after its GPU has gone idle, so a step that knows its work counts only that. The job writes its first
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
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import psutil

from gputui.model import Snapshot, SystemInfo, Topology, parse_cpus
from gputui.sources.base import InvalidGpuSelection, NoJobTrace, machine_name
from gputui.sources.host import procfs
from gputui.sources.host.cgroup import read_text
from gputui.sources.host.numa import numa_nodes
from gputui.sources.host.source import HostSource
from gputui.sources.sim.physics import BOARDS, DEFAULT_BOARD, GpuPlan, HostPlan, Job, MachinePhysics, Scene, gpu_info

TRACE_FORMAT = "gputui-job-trace"
TRACE_VERSION = 1
# How the scenario of this machine reads in every view ("SIMULATED: GPU follows real job pid 1234").
SCENARIO_PREFIX = "GPU follows real job pid "
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


def job_scenario(pid: int) -> str:
    """SystemInfo.scenario of this machine: what the SIMULATED label says in the header, reports and exports."""
    return f"{SCENARIO_PREFIX}{pid}"


def is_job_scenario(scenario: str | None) -> bool:
    return scenario is not None and scenario.startswith(SCENARIO_PREFIX)


def job_banner(system: SystemInfo) -> str:
    """The one line that says what is simulated here and what is not (the GPU is; the host and the job are not)."""
    pid = (system.scenario or "").removeprefix(SCENARIO_PREFIX)
    return (
        f"SIMULATED GPU following the real job pid {pid}: the GPU's figures are simulated; the host, the job's "
        "processes and its cgroup are this machine's"
    )


class JobSource:
    """The Source protocol over one simulated GPU that follows the job writing `trace`.

    `near_cpus` is the cpulist of the CPUs near the GPU (its `Topology.cpu_affinity`); default every CPU of this
    machine. `clock` must be CLOCK_MONOTONIC (the trace's clock); tests move it themselves. `open()` raises
    NoJobTrace (a SourceUnavailable) when the trace is missing or unreadable; once open, a job that has exited,
    or a trace that went unreadable, is an idle GPU with no process, and a new PID in the trace is followed.

    The first sample's utilization covers the moments since `open()`; later ones each cover one interval.
    """

    def __init__(
        self,
        trace: Path | str,
        near_cpus: str | None = None,
        board: str = DEFAULT_BOARD,
        gpu_indices: Sequence[int] | None = None,
        seed: int = 0,
        clock: Callable[[], float] = time.monotonic,
        root: Path = Path("/"),
        psutil_module: ModuleType = psutil,
    ) -> None:
        if board not in BOARDS:
            raise ValueError(f"unknown board {board!r} (choose from {', '.join(BOARDS)})")
        if near_cpus is not None and parse_cpus(near_cpus) is None:
            raise ValueError(f"not a CPU list: {near_cpus!r} (expected e.g. 0-3,8)")
        for index in gpu_indices or ():
            if index != 0:
                raise InvalidGpuSelection(f"GPU {index} does not exist (the lab's machine has one GPU, 0)")
        self.trace_path = Path(trace)
        self._near = near_cpus.strip() if near_cpus is not None else f"0-{(os.cpu_count() or 1) - 1}"
        self._board = BOARDS[board]
        self._clock = clock
        self._root = root
        self._ps = psutil_module
        rng = random.Random(f"{seed}/job")
        self._info = (gpu_info(0, rng, self._board),)
        self._physics = MachinePhysics.drawn(rng, 1, seed, self._board)
        self._host: HostSource | None = None
        self._system: SystemInfo | None = None
        self._pid = 0
        self._running = False
        self._trace_broken = False
        self._started = 0.0
        self._epoch = 0.0
        self._last_at = 0.0
        self._last_busy: float | None = None  # the followed job's busy seconds as of `_last_at`

    # -- Source protocol ---------------------------------------------------------------------------------

    def open(self) -> SystemInfo:
        try:
            trace = read_trace(self.trace_path)
        except TraceError as exc:
            hint = f"start examples/lab/train.py --trace {self.trace_path} first"
            raise NoJobTrace(f"{exc}: {hint}") from None
        self._physics.reset()
        self._started = self._last_at = self._clock()
        self._epoch = time.time()
        self._trace_broken = False
        system = self._follow(trace.pid)
        self._running = self._is_running(trace.pid)
        self._last_busy = trace.busy_at(self._last_at) if self._running else None
        return system

    def sample(self) -> Snapshot:
        if self._system is None or self._host is None:
            raise RuntimeError("JobSource.sample() called before open()")
        now = self._clock()
        dt = max(0.0, now - self._last_at)
        events: list[str] = []
        trace = self._read(events)
        if trace is not None and trace.pid != self._pid:
            events.append(f"the trace names a new job, pid {trace.pid} (was {self._pid}): following it")
            self._follow(trace.pid)
            self._last_busy = None
        running = trace is not None and self._is_running(trace.pid)
        if self._running and not running and trace is not None:  # an unreadable trace said so already
            events.append(f"the job (pid {self._pid}) is no longer running: the simulated GPU is idle")
        self._running = running
        timestamp = self._epoch + (now - self._started)
        if trace is not None and running:
            busy = trace.busy_at(now)
            # Since the last reading; a job seen for the first time counts from its start, within the interval.
            spent = busy - self._last_busy if self._last_busy is not None else busy
            self._last_busy = busy
            util = 100.0 * min(max(spent, 0.0), dt) / dt if dt > 0 else (100.0 if trace.busy_now(now) else 0.0)
            job = Job(pid=trace.pid, user="", cmdline="", memory_gib=((0, JOB_MEMORY_GIB),), cpu_pct=0.0)
            scene = Scene({0: GpuPlan(util=util, util_swing=0.0)}, (job,), HostPlan())
        else:
            self._last_busy = None
            scene = Scene({0: GpuPlan(idle=True, pcie_gen=1)}, (), HostPlan())
        self._last_at = now
        gpu = self._physics.gpu_sample(0, scene, now - self._started, timestamp, dt)
        host = self._host.sample([self._pid] if running else [], timestamp)
        return Snapshot(timestamp, self._system, self._info, (gpu,), host, tuple(events))

    def close(self) -> None:
        if self._host is not None:
            self._host.close()
            self._host = None
        self._system = None

    # -- the job -------------------------------------------------------------------------------------------

    def _read(self, events: list[str]) -> JobTrace | None:
        """The trace's record now; None (and a notice, once) while it cannot be read."""
        try:
            trace = read_trace(self.trace_path)
        except TraceError as exc:
            if not self._trace_broken:
                events.append(f"{exc}: the simulated GPU is idle until it can be read again")
            self._trace_broken = True
            return None
        self._trace_broken = False
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

    def _follow(self, pid: int) -> SystemInfo:
        """Read the host through job `pid`'s cgroup, and describe the machine with it."""
        if self._host is not None:
            self._host.close()
        self._pid = pid
        self._host = HostSource(clock=self._clock, psutil_module=self._ps, root=self._root, cgroup_pid=pid)
        self._host.open()
        self._system = SystemInfo(
            # The host's name: every figure but the GPU's is this machine's, and the job's PID only means
            # something here; `source` and `scenario` say the GPU is simulated wherever the name is shown.
            hostname=machine_name(),
            source="simulated",
            # The simulated GPU has no driver to ask: not reported, rather than made up.
            driver_version=None,
            nvml_version=None,
            cuda_driver_version=None,
            gpu_count=1,
            cpu_count=os.cpu_count() or 0,
            kernel=platform.release(),
            scenario=job_scenario(pid),
            container=self._host.container,
            topology=Topology(
                matrix=(("X",),),
                p2p=((None,),),
                numa_node=(self._numa_node(),),
                cpu_affinity=(self._near,),
                numa_nodes=numa_nodes(self._root),  # this machine's: the simulated GPU sits in it
            ),
        )
        return self._system
