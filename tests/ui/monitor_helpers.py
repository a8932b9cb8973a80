"""Apps for the monitor tests: simulated (seeded, with a clock the test moves) or fed hand-made snapshots."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from textual.app import App
from textual.pilot import Pilot

from gputui.config import Config
from gputui.diagnostics.thresholds import Thresholds
from gputui.model import (
    GpuInfo,
    GpuProcess,
    GpuSample,
    MigDevice,
    MigState,
    ProcSample,
    Snapshot,
    SystemInfo,
    Topology,
)
from gputui.record.writer import RecordingWriter
from gputui.session.builder import Session, session_on
from gputui.session.stacks import JobStacks
from gputui.sources.base import Source
from gputui.sources.sim.source import SimulatedSource
from gputui.ui.app import GpuTuiApp
from gputui.ui.marks import Marks
from gputui.ui.screens.help import help_keys, key_rows
from gputui.ui.widgets.lines import Line
from tests import snapshots
from tests.snapshots import GIB, gpu, gpu_info, host, proc, system_info

if TYPE_CHECKING:  # the instance comes from the `clock` fixture: tests/conftest.py cannot be imported by name
    from conftest import Clock

FIXED_NOW = datetime(2026, 1, 1, 12, 0, 0)
# The views' colours in a session without a config file: the default thresholds'.
MARKS = Marks.of(Thresholds())
FRESH_S = MARKS.thresholds.activity_fresh_s  # the age up to which the rules, and so the views, trust an activity


def session_of(
    source: Source,
    *,
    interval: float = 1.0,
    config: Config | None = None,
    recorder: RecordingWriter | None = None,
    stacks: JobStacks | None = None,
) -> Session:
    """A session around a source the test made (opened here), as the monitor takes one; what it hands in (a
    recorder) the test closes, where open_session would have."""
    return session_on(source, source.open(), config or Config(), interval_s=interval, recorder=recorder, stacks=stacks)


def simulated_app(scenario: str = "healthy", gpus: int = 8, interval: float = 1.0, *, clock: Clock) -> GpuTuiApp:
    """A seeded simulated machine on the test's clock (the `clock` fixture), sampled only by `app.tick()`."""
    source = SimulatedSource(scenario=scenario, gpu_count=gpus, seed=0, clock=clock)
    return GpuTuiApp(session_of(source, interval=interval), auto_sample=False, now=lambda: FIXED_NOW)


async def run_ticks(app: GpuTuiApp, clock: Clock, count: int, step: float = 1.0) -> None:
    for _ in range(count):
        await app.tick()
        clock.advance(step)


def plain(lines: Sequence[Line]) -> str:
    return "\n".join("".join(text for text, _ in line) for line in lines)


def screen_rows(app: App[object]) -> list[str]:
    """What the terminal shows now, row by row, as a user reads it (the composited screen, overlays included)."""
    return [strip.text for strip in app.screen._compositor.render_strips()]


def busy_gpu(index: int, t: float, util: float = 90.0) -> GpuSample:
    """The shared busy GPU at `util`, its process's PID 100 + index, without GPM (pre-Hopper boards read so)."""
    return gpu(
        index,
        pids=(100 + index,),
        gpm=None,
        timestamp=t,
        utilization_gpu_pct=util,
        power_w=500.0,
        memory_used_bytes=40 * GIB,
        pcie_tx_bytes_s=1e9,
    )


def rank(i: int) -> ProcSample:
    """The process of GPU i's rank at full use of its core."""
    return proc(100 + i, cmdline=f"python train.py --rank {i}", cpu_pct=99.0)


def snapshot(t: float, gpus: Sequence[GpuSample], infos: Sequence[GpuInfo] | None = None) -> Snapshot:
    """The monitor tests' box: four cores and two ranks, whatever GPUs it is given."""
    infos = infos if infos is not None else [gpu_info(g.index) for g in gpus]
    machine = system_info(gpu_count=len(infos), cpu_count=4)
    cores = host([rank(0), rank(1)], cpu_pct_per_core=(10.0, 20.0, 30.0, 40.0))
    return snapshots.snapshot(t, gpus, infos, cores, machine)


class ScriptedSource:
    """A Source that returns the given snapshots in turn (the last one again when they run out)."""

    def __init__(self, snapshots: Sequence[Snapshot]) -> None:
        self._snapshots = list(snapshots)
        self._iter: Iterator[Snapshot] = iter(self._snapshots)
        self.closed = False

    def open(self) -> SystemInfo:
        return self._snapshots[0].system

    def sample(self) -> Snapshot:
        return next(self._iter, self._snapshots[-1])

    def close(self) -> None:
        self.closed = True


def scripted_app(snapshots: Sequence[Snapshot]) -> tuple[GpuTuiApp, ScriptedSource]:
    source = ScriptedSource(snapshots)
    return GpuTuiApp(session_of(source), auto_sample=False, now=lambda: FIXED_NOW), source


def nvlink_snapshot(t: float, topology: Topology | None, rx: float = 50e9, gpus: int = 8) -> Snapshot:
    """Busy GPUs with 18 NVLinks each (GPU 3 with two down) moving `rx` bytes/s in and half of it out."""
    infos = [replace(gpu_info(i), nvlink_links_total=18, nvlink_version=4) for i in range(gpus)]
    samples = [
        replace(
            busy_gpu(i, t),
            nvlink_links_active=16 if i == 3 else 18,
            nvlink_rx_bytes_s=rx * (i + 1),
            nvlink_tx_bytes_s=rx * (i + 1) / 2,
        )
        for i in range(gpus)
    ]
    snap = snapshot(t, samples, infos)
    return replace(snap, system=replace(snap.system, topology=topology))


def mig_uuid(gpu: int, gpu_instance_id: int) -> str:
    return f"MIG-{gpu:08x}-5a1c-4e2b-9d3f-{gpu_instance_id:012x}"


def mig_instance(
    gpu: int, gpu_instance_id: int, pids: Sequence[int] = (), *, sm: float | None = 80.0, **changes: Any
) -> MigDevice:
    """A 3g.40gb instance of GPU `gpu` (compute instance 0, 66 SMs) running `pids`, each holding 10 GiB, its SMs
    `sm`% active (GPM), tensor cores a little over half as much."""
    base = MigDevice(
        index=max(0, gpu_instance_id - 1),
        uuid=mig_uuid(gpu, gpu_instance_id),
        profile="3g.40gb",
        gpu_instance_id=gpu_instance_id,
        compute_instance_id=0,
        sm_count=66,
        slice_count=3,
        memory_used_bytes=10 * GIB * len(pids),
        memory_total_bytes=40 * GIB,
        sm_active_pct=sm,
        tensor_active_pct=None if sm is None else round(sm * 0.55),
        dram_bw_pct=None if sm is None else round(sm * 0.4),
        processes=tuple(
            GpuProcess(pid, 10 * GIB, gpu_instance_id=gpu_instance_id, compute_instance_id=0) for pid in pids
        ),
    )
    return replace(base, **changes)


def mig_gpu(index: int, t: float, instances: Sequence[MigDevice], *, pending: bool | None = True) -> GpuSample:
    """An H100 in MIG mode as a non-root reader sees it: no whole-GPU utilization, no GPM and no memory of its
    own, the parent's temperature, power and clocks, every instance's processes; `pending` is MIG after a reset."""
    return replace(
        busy_gpu(index, t),
        utilization_gpu_pct=None,
        memory_used_bytes=None,
        processes=tuple(p for device in instances for p in device.processes),
        mig=MigState(mode=True, pending_mode=pending, devices=tuple(instances)),
    )


def mig_pids(gpu: int) -> tuple[int, int]:
    """The PIDs of the two training processes on GPU `gpu`'s instances (GI 1 and GI 2)."""
    return 200 + 2 * gpu, 201 + 2 * gpu


def mig_snapshot(t: float, gpus: int = 8, *, mig_slice: str | None = None, pending: bool | None = True) -> Snapshot:
    """`gpus` H100s in MIG mode, each split in two 3g.40gb instances (GI 1, GI 2) with one training process each;
    GPU 0's GI 2 waits (12% SM active), and its GI 1 has no GPM reading (n/a)."""
    samples = []
    for i in range(gpus):
        first, second = mig_pids(i)
        sm_first = None if i == 0 else 85.0 + i
        sm_second = 12.0 if i == 0 else 80.0 + i
        instances = (mig_instance(i, 1, (first,), sm=sm_first), mig_instance(i, 2, (second,), sm=sm_second))
        samples.append(mig_gpu(i, t, instances, pending=pending))
    procs = [
        proc(pid, cmdline=f"python train.py --slice {pid}", cpu_pct=95.0) for i in range(gpus) for pid in mig_pids(i)
    ]
    snap = snapshot(t, samples)
    snap = replace(snap, host=replace(snap.host, processes=tuple(procs)))
    return replace(snap, system=replace(snap.system, mig_slice=mig_slice))


async def until(condition: Callable[[], bool], pilot: Pilot[Any]) -> None:
    """Wait, bounded, for `condition()`: what a key starts runs in a worker (a signal, a stack window)."""
    for _ in range(250):
        if condition():
            return
        await pilot.pause(0.02)
    raise AssertionError("never happened")


# The keys a hint on screen names: the named keys, and a one-character key where a hint's grammar uses it ("d:
# choose", "a reads", "K signals", "x cancels", "/ to change"), never a unit after a number ("89 C").
NAMED_KEYS = re.compile(r"(?<![\w-])(up/down|enter|tab|esc|space|pgup|pgdn)(?![\w-])")
LETTER_KEYS = re.compile(r"(?<![\w-])(?<!\d )([A-Za-z?/])(?=: | on | then| reads| signals| cancels| to change)")


def hint_keys(text: str) -> set[str]:
    """The keys the hints in `text` (the screen, or a notice) name."""
    named = {key for found in NAMED_KEYS.findall(text) for key in found.split("/")}
    return named | set(LETTER_KEYS.findall(text))


def footer_keys(app: App[object]) -> set[str]:
    """The keys the footer shows now, as it shows them: what the screen's enabled, shown bindings are."""
    return {
        active.binding.key_display or active.binding.key
        for active in app.screen.active_bindings.values()
        if active.binding.show and active.enabled
    }


def help_key_set(app: GpuTuiApp) -> set[str]:
    """Every key `?` lists in this session, as the help screen builds its table."""
    return help_keys(key_rows(app.help_bindings(), app.help_refusals()))
