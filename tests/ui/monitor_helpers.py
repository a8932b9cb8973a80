"""Apps for the monitor tests: simulated (seeded, with a clock the test moves) or fed hand-made snapshots."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING

from textual.app import App

from gputui.model import GpuInfo, GpuSample, ProcSample, Snapshot, SystemInfo, Topology
from gputui.sources.sim.source import SimulatedSource
from gputui.ui.app import GpuTuiApp
from gputui.ui.widgets.lines import Line
from tests import snapshots
from tests.snapshots import GIB, gpu, gpu_info, host, proc, system_info

if TYPE_CHECKING:  # the instance comes from the `clock` fixture: tests/conftest.py cannot be imported by name
    from conftest import Clock

FIXED_NOW = datetime(2026, 1, 1, 12, 0, 0)


def simulated_app(scenario: str = "healthy", gpus: int = 8, interval: float = 1.0, *, clock: Clock) -> GpuTuiApp:
    """A seeded simulated machine on the test's clock (the `clock` fixture), sampled only by `app.tick()`."""
    source = SimulatedSource(scenario=scenario, gpu_count=gpus, seed=0, clock=clock)
    return GpuTuiApp(source, source.open(), interval=interval, auto_sample=False, now=lambda: FIXED_NOW)


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
    return GpuTuiApp(source, source.open(), auto_sample=False, now=lambda: FIXED_NOW), source


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
