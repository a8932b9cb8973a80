"""Cost of topology and NVLink for 8 GPUs against the fake pynvml: our own work (guards, decoding), not the
driver's time.

Budgets (issue 13): the topology read once in open() at most 50 ms; the NVML tick grows by at most 0.5 ms,
averaged over ticks (NVLink state and error counters are read on the slow cadence, every 5th tick by default;
traffic every tick only where GPM does not give it). The growth is the tick of NVSwitch-connected H100s minus
the same GPUs without NVLink.

Run: .venv/bin/python benchmarks/bench_topology.py [--ticks N]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

# The fake lives with the tests (it is test support, not part of the package); share it from there.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from bench_gpm import NoHost
from fake_pynvml import FakeGpu, FakeNvml

from gputui.sources.nvml.links import NvLinkReader, read_topology
from gputui.sources.nvml.query import Nvml
from gputui.sources.nvml.source import NvmlSource

GPUS = 8
TOPOLOGY_BUDGET_MS = 50.0
TICK_BUDGET_MS = 0.5


def topology_costs(runs: int) -> list[float]:
    """Reading every GPU's links and the 8 x 8 pairs, as open() does."""
    nvml = FakeNvml([FakeGpu() for _ in range(GPUS)])
    nvml.nvmlInit()
    handles = [nvml.nvmlDeviceGetHandleByIndex(i) for i in range(GPUS)]
    buses = [nvml.nvmlDeviceGetPciInfo(h).busId for h in handles]
    out = []
    for _ in range(runs):
        start = time.process_time()
        links = [NvLinkReader(Nvml(nvml), h, gpm_gives_traffic=True) for h in handles]
        topology = read_topology(Nvml(nvml), handles, links, buses)
        out.append((time.process_time() - start) * 1000)
    assert topology.matrix[0][1] == "NV18", "the NVSwitch pairs should be read"
    return out


def _source(nvlink: bool, gpm: bool, now: list[float]) -> NvmlSource:
    gpus = [
        FakeGpu(nvlink_remotes=None if not nvlink else ["NVSwitch"] * 18, gpm=FakeGpu().gpm if gpm else None)
        for _ in range(GPUS)
    ]
    source = NvmlSource(pynvml=FakeNvml(gpus), host=NoHost(), clock=lambda: now[0], watch_xid=False)  # type: ignore[arg-type]
    source.open()
    return source


def tick_costs(ticks: int, gpm: bool) -> tuple[list[float], list[float]]:
    """CPU ms of each NVML tick (host left out) for 8 GPUs with NVLink and without, the two sources sampled
    in turn so that a busy machine slows both alike."""
    now = [0.0]
    sources = (_source(True, gpm, now), _source(False, gpm, now))
    out: tuple[list[float], list[float]] = ([], [])
    try:
        for tick in range(ticks + 10):
            now[0] += 1.0
            for source, costs in zip(sources, out, strict=True):
                start = time.process_time()
                source.sample()
                if tick >= 10:
                    costs.append((time.process_time() - start) * 1000)
    finally:
        for source in sources:
            source.close()
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ticks", type=int, default=1000, help="ticks to measure (default 1000, a multiple of 5)")
    args = parser.parse_args()
    topology = statistics.median(topology_costs(20))
    verdict = "within" if topology <= TOPOLOGY_BUDGET_MS else "OVER"
    print(f"topology read, {GPUS} GPUs: median {topology:.2f} ms CPU ({verdict} the {TOPOLOGY_BUDGET_MS:g} ms budget)")
    for gpm, label in ((True, "H100, traffic from GPM"), (False, "no GPM, traffic from field values")):
        with_costs, without_costs = tick_costs(args.ticks, gpm)
        with_nvlink, without = statistics.mean(with_costs), statistics.mean(without_costs)
        growth = with_nvlink - without
        verdict = "within" if growth <= TICK_BUDGET_MS else "OVER"
        print(
            f"NVML tick, {GPUS} GPUs, {label}: mean {with_nvlink:.3f} ms with NVLink, {without:.3f} ms without: "
            f"{growth:+.3f} ms ({verdict} the {TICK_BUDGET_MS:g} ms budget)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
