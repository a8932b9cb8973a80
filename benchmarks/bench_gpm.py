"""Cost of the efficiency readings for 8 GPUs: GPM (one sample and one metrics call per GPU, each tick) and
per-process utilization (each slow tick), against the fake pynvml.

The fake builds the same ctypes structures the real pynvml fills (a c_nvmlGpmMetricsGet_t of 477 slots, of
which 10 are asked), so this is our own per-tick work: guards, decoding, building the values. The driver's time
is not in it. Budget (issue 12): GPM sampling and metrics for 8 GPUs at most 1 ms per tick. Also the whole
NVML tick (host left out) with and without GPM, to show what it adds there.

Run: .venv/bin/python benchmarks/bench_gpm.py [--ticks N]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

# The fake lives with the tests (it is test support, not part of the package); share it from there.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from fake_pynvml import FakeGpu, FakeNvml

from gputui.model import HostSample
from gputui.sources.nvml.efficiency import GpmReader, ProcessUtilization
from gputui.sources.nvml.query import Nvml
from gputui.sources.nvml.source import NvmlSource

GPUS = 8
BUDGET_MS = 1.0


class NoHost:
    """The host side, left out: only the NVML part of the tick is timed."""

    container = None

    def open(self) -> None:
        pass

    def close(self) -> None:
        pass

    def sample(self, pids: object, now: float) -> HostSample:
        return HostSample(timestamp=now)


def per_tick(call: object, ticks: int) -> list[float]:
    """CPU milliseconds of each of `ticks` calls of `call(tick)`."""
    out = []
    for tick in range(ticks):
        start = time.process_time()
        call(tick)  # type: ignore[operator]
        out.append((time.process_time() - start) * 1000)
    return out


def gpm_costs(ticks: int) -> list[float]:
    nvml = FakeNvml([FakeGpu() for _ in range(GPUS)])
    nvml.nvmlInit()
    readers = [GpmReader(Nvml(nvml), nvml.nvmlDeviceGetHandleByIndex(i), False) for i in range(GPUS)]
    costs = per_tick(lambda tick: [reader.read(float(tick)) for reader in readers], ticks)
    assert readers[0].read(float(ticks)).get("sm_active_pct") == 86.0, "metrics should be read"
    for reader in readers:
        reader.close()
    return costs[1:]  # the first tick takes the first sample only


def process_costs(ticks: int) -> list[float]:
    gpus = [FakeGpu() for _ in range(GPUS)]
    nvml = FakeNvml(gpus)
    nvml.nvmlInit()
    readers = [ProcessUtilization(Nvml(nvml), nvml.nvmlDeviceGetHandleByIndex(i)) for i in range(GPUS)]

    def tick(n: int) -> None:
        for gpu in gpus:  # four processes with a sample newer than the last one read
            gpu.process_samples = [(4242 + rank, 1_000 + n, 80, 40) for rank in range(4)]
        for reader in readers:
            reader.read()

    return per_tick(tick, ticks)


def tick_costs(ticks: int, gpm: bool) -> list[float]:
    gpus = [FakeGpu() if gpm else FakeGpu(gpm=None) for _ in range(GPUS)]
    now = [0.0]
    source = NvmlSource(pynvml=FakeNvml(gpus), host=NoHost(), clock=lambda: now[0], watch_xid=False)  # type: ignore[arg-type]
    source.open()

    def tick(_: int) -> None:
        now[0] += 1.0
        source.sample()

    try:
        per_tick(tick, 10)
        return per_tick(tick, ticks)
    finally:
        source.close()


def summary(ms: list[float]) -> str:
    ms = sorted(ms)
    return f"median {statistics.median(ms):.3f} ms, p95 {ms[int(0.95 * (len(ms) - 1))]:.3f} ms"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ticks", type=int, default=2000, help="ticks to measure (default 2000)")
    args = parser.parse_args()
    if args.ticks < 2:
        parser.error("--ticks must be at least 2")
    gpm = gpm_costs(args.ticks)
    verdict = "within" if statistics.median(gpm) <= BUDGET_MS else "OVER"
    print(f"GPM: {GPUS} GPUs, sample + metrics: {summary(gpm)} CPU per tick ({verdict} the {BUDGET_MS:g} ms budget)")
    print(
        f"process utilization: {GPUS} GPUs, 4 processes each: {summary(process_costs(args.ticks // 4))} per slow tick"
    )
    with_gpm, without = tick_costs(args.ticks // 4, True), tick_costs(args.ticks // 4, False)
    print(f"NVML tick, {GPUS} GPUs (host left out): {summary(with_gpm)} with GPM, {summary(without)} without")
    return 0


if __name__ == "__main__":
    sys.exit(main())
