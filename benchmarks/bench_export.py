"""CPU cost of the exporter with 8 GPUs: per reading (sampling thread) and per scrape (HTTP thread), plus the
fleet side's cost of reading one scrape back into a Snapshot.

The machine is the simulated 8-GPU H100 server in the `starved-cpu` scenario (8 ranks, each with its host
process), so every GPU, process and finding family is filled. `sample` is the sampling thread's whole tick:
the simulated source's own reading, the diagnostics and publishing the state; `render` is metric_families()
alone; `scrape (text)` is prometheus-client writing the exposition, which the page does once per reading and
format (gputui/export/page.py); `scrape (HTTP)` is one GET of that page over loopback, server and client both in
this process; `remote parse` is RemoteSource turning the text back into a
Snapshot. CPU time is process time (all threads), so the HTTP figure includes the client's half.

Run: .venv/bin/python benchmarks/bench_export.py [--rounds N]
"""

from __future__ import annotations

import argparse
import statistics
import time
import urllib.request
from collections.abc import Callable

from prometheus_client import generate_latest

from gputui.export.metrics import metric_families
from gputui.export.page import SnapshotCollector
from gputui.export.server import Exporter
from gputui.session.diagnose import new_diagnose
from gputui.session.sampling import Sampler
from gputui.sources.remote import parse_exposition
from gputui.sources.sim.source import SimulatedSource

GPUS = 8
WARMUP = 20


def cpu_ms(action: Callable[[], object], rounds: int) -> list[float]:
    for _ in range(WARMUP):
        action()
    costs = []
    for _ in range(rounds):
        start = time.process_time()
        action()
        costs.append((time.process_time() - start) * 1000)
    return costs


def report(label: str, costs: list[float]) -> None:
    costs = sorted(costs)
    p95 = costs[int(len(costs) * 0.95) - 1]
    print(f"{label:<16} median {statistics.median(costs):7.3f} ms   p95 {p95:7.3f} ms   (CPU per call)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=300, help="calls to measure per figure (default 300)")
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    ticks = iter(range(10**9))
    source = SimulatedSource(scenario="starved-cpu", gpu_count=GPUS, clock=lambda: float(next(ticks)))
    system = source.open()
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with Exporter(Sampler(source, new_diagnose()), system, port=0, interval=3600) as exporter:
        sampler = exporter.sampler
        report("sample", cpu_ms(sampler.sample_once, args.rounds))
        state = sampler.state
        collector = SnapshotCollector(lambda: state)
        text = generate_latest(collector).decode()
        report("render", cpu_ms(lambda: metric_families(state), args.rounds))
        report("scrape (text)", cpu_ms(lambda: generate_latest(collector), args.rounds))
        report("scrape (HTTP)", cpu_ms(lambda: opener.open(exporter.url, timeout=5).read(), args.rounds))
        report("remote parse", cpu_ms(lambda: parse_exposition(text, fallback_hostname="x", now=0.0), args.rounds))
    series = sum(1 for line in text.splitlines() if line and not line.startswith("#"))
    print(f"one scrape: {len(text.encode()) / 1024:.1f} KiB, {series} series, {len(state.findings)} open findings")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
