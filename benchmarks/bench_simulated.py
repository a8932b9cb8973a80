"""CPU cost of one simulated sampling tick: SimulatedSource.sample with 8 GPUs.

`gputui --demo` samples the simulated source every second on the monitor's sampling thread, so its cost is
part of the app's CPU budget. Measured per scenario: `healthy` (a training job on every GPU), `idle`, and the
`tour` (every scenario in turn, including the busiest hosts).

Run: .venv/bin/python benchmarks/bench_simulated.py [--ticks N]
"""

from __future__ import annotations

import argparse
import statistics
import time

from gputui.sources.sim.source import SimulatedSource

GPUS = 8
WARMUP = 10
SCENARIOS = ("healthy", "idle", "tour")


def measure(scenario: str, ticks: int) -> list[float]:
    """CPU seconds of each sample after the warm-up, one simulated second apart."""
    now = [0.0]
    source = SimulatedSource(scenario=scenario, gpu_count=GPUS, clock=lambda: now[0])
    source.open()
    costs = []
    for t in range(ticks + WARMUP):
        now[0] = float(t)
        start = time.process_time()
        source.sample()
        if t >= WARMUP:
            costs.append(time.process_time() - start)
    source.close()
    return costs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ticks", type=int, default=1000, help="ticks to measure per scenario (default 1000)")
    args = parser.parse_args()
    if args.ticks < 1:
        parser.error("--ticks must be at least 1")
    print(f"SimulatedSource.sample, {GPUS} GPUs, {args.ticks} ticks per scenario (CPU time)")
    for scenario in SCENARIOS:
        costs = sorted(measure(scenario, args.ticks))
        median = statistics.median(costs) * 1e3
        p95 = costs[int(0.95 * (len(costs) - 1))] * 1e3
        print(f"  {scenario:<12} median {median:.3f} ms   p95 {p95:.3f} ms   ({median / 10:.3f}% of a core at 1 s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
