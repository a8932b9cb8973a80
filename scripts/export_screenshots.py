"""Write the README screenshots (screenshots/*.svg), made by the app itself from seeded simulated scenarios.

Usage: python scripts/export_screenshots.py [OUT_DIR]   (`make screenshots`)
Every frame is SIMULATED data and says so in its header.
"""

from __future__ import annotations

import asyncio
import sys
from datetime import datetime
from pathlib import Path

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


async def shoot(out: Path, name: str, scenario: str, gpus: int, size: tuple[int, int], keys: tuple[str, ...]) -> Path:
    elapsed = [0.0]
    source = SimulatedSource(scenario=scenario, gpu_count=gpus, seed=0, clock=lambda: elapsed[0])
    app = GpuTuiApp(source, source.open(), auto_sample=False, now=lambda: datetime(2026, 1, 1, 12, 0, 0))
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


if __name__ == "__main__":
    asyncio.run(
        export(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent.parent / "screenshots")
    )
