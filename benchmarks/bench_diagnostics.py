"""CPU cost of one diagnostics tick: DiagnosticsEngine.update with 8 simulated GPUs.

The engine runs every second in the monitor, so its cost per tick must stay small next to sampling. The
snapshots are made first (the simulated source's own cost is not measured); each update then runs all the
rules over a 10 s window and builds the findings. Measured per scenario: `healthy` (nothing fires, the usual
case), `starved-cpu` (a finding open on every GPU), and the `tour` (every scenario in turn).

Run: .venv/bin/python benchmarks/bench_diagnostics.py [--ticks N]
"""

from __future__ import annotations

import argparse
import statistics
import time

from gputui.diagnostics.engine import DiagnosticsEngine
from gputui.model import Snapshot
from gputui.sources.sim.source import SimulatedSource

GPUS = 8
WARMUP = 30
SCENARIOS = ("healthy", "starved-cpu", "tour")


def snapshots(scenario: str, count: int) -> list[Snapshot]:
    now = [0.0]
    source = SimulatedSource(scenario=scenario, gpu_count=GPUS, clock=lambda: now[0])
    source.open()
    out = []
    for t in range(count):
        now[0] = float(t)
        out.append(source.sample())
    source.close()
    return out


def measure(snaps: list[Snapshot]) -> list[float]:
    """CPU seconds of each update after the warm-up (the window is full from then on)."""
    engine = DiagnosticsEngine()
    costs = []
    for i, snap in enumerate(snaps):
        start = time.process_time()
        engine.update(snap)
        if i >= WARMUP:
            costs.append(time.process_time() - start)
    return costs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ticks", type=int, default=1000, help="ticks to measure per scenario (default 1000)")
    args = parser.parse_args()
    if args.ticks < 1:
        parser.error("--ticks must be at least 1")
    print(f"DiagnosticsEngine.update, {GPUS} simulated GPUs, {args.ticks} ticks per scenario (CPU time)")
    for scenario in SCENARIOS:
        costs = sorted(measure(snapshots(scenario, args.ticks + WARMUP)))
        median = statistics.median(costs) * 1e3
        p95 = costs[int(0.95 * (len(costs) - 1))] * 1e3
        print(f"  {scenario:<12} median {median:.3f} ms   p95 {p95:.3f} ms   ({median / 10:.3f}% of a core at 1 s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
