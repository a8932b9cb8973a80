"""Write the README screenshots (screenshots/*.svg), made by the app itself from seeded simulated scenarios.

Usage: python scripts/export_screenshots.py [OUT_DIR]   (`make screenshots`)
Every frame is SIMULATED data and says so in its header; the activity frame's process carries what py-spy
measured of a real CPU PyTorch job (MEASURED).
"""

from __future__ import annotations

import asyncio
import sys
from dataclasses import replace
from datetime import datetime
from pathlib import Path

from gputui.config import Config
from gputui.model import ActivityFrame, ActivityShares, JobActivity, Snapshot
from gputui.session.builder import session_on
from gputui.sources.sim.source import SimulatedSource
from gputui.ui.app import GpuTuiApp

# name, scenario, GPUs, terminal size, keys pressed after the history is filled
FRAMES: tuple[tuple[str, str, int, tuple[int, int], tuple[str, ...]], ...] = (
    ("healthy", "healthy", 8, (120, 40), ()),
    ("thermal", "thermal", 4, (120, 40), ()),
    ("compact-8gpus-80x24", "healthy", 8, (80, 24), ()),
    ("thermal-8gpus-80x24", "thermal", 8, (80, 24), ("d",)),  # the verdict line and the pane in a tmux pane
    ("fp32-8gpus", "fp32", 8, (120, 40), ()),  # one finding row for eight GPUs alike
    ("detail", "powercap", 4, (120, 40), ("down", "enter")),
    ("launchbound", "launchbound", 4, (120, 40), ()),
    ("topology", "nvlink", 8, (120, 40), ("t",)),
    ("mig-starving", "mig-starving", 4, (120, 40), ()),  # MIG instances under their GPUs, one of them starved
    ("mig-8gpus-80x24", "mig-shared-slice", 8, (80, 24), ()),  # 8 split GPUs and the verdict in a tmux pane
)
TICKS = 120  # two minutes of history at 1 s

# What py-spy read (record --nonblocking --idle --format raw, 20 Hz, 4 s) of the lab's real job, MEASURED_COMMAND
# (CPU PyTorch; its GPU step a sleep), on 2026-12-05: 61 of its main thread's 79 samples in the dataset's own code
# in the main process, 17 in the step's sleep, 1 in the DataLoader's __next__.
MEASURED_COMMAND = "python examples/lab/train.py --num-workers 0 --sample-ms 20"
MEASURED = JobActivity(
    source="py-spy",
    taken_at=0.0,
    window_s=4.0,
    samples=79,
    shares=ActivityShares(loading=61 / 79, idle=17 / 79, data=1 / 79),
    top=(
        ActivityFrame("loading", "Images.__getitem__", "train.py", 69, 61 / 79),
        ActivityFrame("idle", "Trace.gpu_step", "train.py", 148, 17 / 79),
        ActivityFrame("data", "_BaseDataLoaderIter.__next__", "torch/utils/data/dataloader.py", 721, 1 / 79),
    ),
)
# The activity frame: the simulated num_workers=0 machine, the detail of GPU 0 with its process's activity.
ACTIVITY_FRAME = ("activity", "starved-cpu", 2, (120, 40), ("enter",))


class MeasuredActivity(SimulatedSource):
    """The simulated machine, GPU 0's process standing for the job measured: its command and MEASURED, read 3 s
    before each snapshot."""

    def sample(self) -> Snapshot:
        snapshot = super().sample()
        pid = snapshot.gpus[0].processes[0].pid
        job = {"cmdline": MEASURED_COMMAND, "activity": replace(MEASURED, taken_at=snapshot.timestamp - 3.0)}
        processes = tuple(replace(p, **job) if p.pid == pid else p for p in snapshot.host.processes)
        return replace(snapshot, host=replace(snapshot.host, processes=processes))


async def shoot(
    out: Path,
    name: str,
    scenario: str,
    gpus: int,
    size: tuple[int, int],
    keys: tuple[str, ...],
    machine: type[SimulatedSource] = SimulatedSource,
) -> Path:
    elapsed = [0.0]
    source = machine(scenario=scenario, gpu_count=gpus, seed=0, clock=lambda: elapsed[0])
    session = session_on(source, source.open(), Config())
    app = GpuTuiApp(session, auto_sample=False, now=lambda: datetime(2026, 1, 1, 12, 0, 0))
    async with app.run_test(size=size) as pilot:
        for _ in range(TICKS):
            await app.tick()
            elapsed[0] += 1.0
        await pilot.pause()
        if keys:
            await pilot.press(*keys)
            await pilot.pause()
        app.save_screenshot(filename=f"{name}.svg", path=str(out))
    return out / f"{name}.svg"


async def export(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for frame in FRAMES:
        print(await shoot(out, *frame))
    print(await shoot(out, *ACTIVITY_FRAME, machine=MeasuredActivity))


if __name__ == "__main__":
    asyncio.run(
        export(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent.parent / "screenshots")
    )
