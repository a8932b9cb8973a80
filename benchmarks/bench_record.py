"""What a recording costs: bytes per GPU per tick, an hour of 8 GPUs gzipped, writer CPU per tick, reading.

Ticks come from the simulated 8-GPU machine (the `tour`, every scenario in turn). Its values are smooth
curves, which gzip better than real sensors do, so each figure is also given for a `noisy` copy where every
GPU reading carries the jitter real NVML readings show (±2% utilization and power, ±0.5 C, ±10% PCIe): the
honest estimate. The gzip file is written the way the writer writes it (a sync flush every 5 ticks at 1 Hz).

Run: .venv/bin/python benchmarks/bench_record.py [--ticks N]
"""

from __future__ import annotations

import argparse
import dataclasses
import random
import tempfile
import time
import tracemalloc
from pathlib import Path

from gputui.model import GpuSample, Snapshot
from gputui.record.format import dumps, tick_to_dict
from gputui.record.reader import load_recording
from gputui.record.writer import GZIP_SYNC_SECONDS, RecordingWriter
from gputui.serialize import snapshot_to_dict
from gputui.sources.sim.source import SimulatedSource

GPUS = 8
HOUR = 3600


def snapshots(count: int) -> list[Snapshot]:
    now = [0.0]
    source = SimulatedSource(scenario="tour", gpu_count=GPUS, clock=lambda: now[0])
    source.open()
    out = []
    for t in range(count):
        now[0] = float(t)
        out.append(source.sample())
    return out


def _jitter(value: float | None, rng: random.Random, rel: float = 0.0, absolute: float = 0.0) -> float | None:
    if value is None:
        return None
    return value * (1 + rng.uniform(-rel, rel)) + rng.uniform(-absolute, absolute)


def noisy(snaps: list[Snapshot], seed: int = 1) -> list[Snapshot]:
    rng = random.Random(seed)

    def gpu(g: GpuSample) -> GpuSample:
        return dataclasses.replace(
            g,
            utilization_gpu_pct=_jitter(g.utilization_gpu_pct, rng, rel=0.02),
            power_w=_jitter(g.power_w, rng, rel=0.02),
            temperature_c=_jitter(g.temperature_c, rng, absolute=0.5),
            pcie_rx_bytes_s=_jitter(g.pcie_rx_bytes_s, rng, rel=0.1),
            pcie_tx_bytes_s=_jitter(g.pcie_tx_bytes_s, rng, rel=0.1),
        )

    return [dataclasses.replace(s, gpus=tuple(gpu(g) for g in s.gpus)) for s in snaps]


def measure(label: str, snaps: list[Snapshot]) -> None:
    count = len(snaps)
    lines = [dumps(tick_to_dict(s)).encode() for s in snaps]
    per_gpu = sum(len(line) for line in lines) / count / GPUS
    worst = max(len(line) for line in lines) / GPUS
    full = sum(len(dumps(snapshot_to_dict(s, include_static=False))) for s in snaps) / count / GPUS

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "bench.jsonl.gz"
        cpu0, wall0 = time.process_time(), time.perf_counter()
        put_s = 0.0
        writer = RecordingWriter(path, interval_s=1.0)
        for snap in snaps:
            t = time.perf_counter()
            writer.put(snap)
            put_s += time.perf_counter() - t
        writer.close()
        cpu = time.process_time() - cpu0
        wall = time.perf_counter() - wall0
        size = path.stat().st_size
        t = time.perf_counter()
        recording = load_recording(path)
        read_s = time.perf_counter() - t
        assert len(recording.ticks) == count
        del recording
        tracemalloc.start()
        kept = load_recording(path)
        held = tracemalloc.get_traced_memory()[0]
        tracemalloc.stop()
        assert len(kept.ticks) == count

    per_tick_gz = size / count
    print(f"{label}: {count} ticks of {GPUS} GPUs")
    print(
        f"  uncompressed  {per_gpu:7.0f} B per GPU per tick (largest {worst:.0f}; untrimmed snapshot keys {full:.0f})"
    )
    print(f"  gzip          {per_tick_gz / GPUS:7.0f} B per GPU per tick (sync flush every {GZIP_SYNC_SECONDS:g} s)")
    print(
        f"  one hour, {GPUS} GPUs at 1 Hz: {per_tick_gz * HOUR / 1e6:.1f} MB gzipped, "
        f"{per_gpu * GPUS * HOUR / 1e6:.1f} MB uncompressed"
    )
    print(
        f"  writer CPU    {cpu / count * 1e3:.2f} ms per tick (both threads; {wall / count * 1e3:.2f} ms wall); "
        f"put() on the caller's thread {put_s / count * 1e6:.1f} us"
    )
    print(
        f"  reading back  {read_s / count * 1e3:.2f} ms per tick; {held / count / 1e3:.1f} KB of memory per tick held "
        f"({held / count * HOUR / 1e6:.0f} MB per hour replayed)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ticks", type=int, default=600)
    args = parser.parse_args()
    snaps = snapshots(args.ticks)
    measure("simulated (smooth)", snaps)
    measure("noisy (real-sensor jitter)", noisy(snaps))


if __name__ == "__main__":
    main()
