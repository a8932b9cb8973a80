"""CPU cost of one sampling tick: NvmlSource over the fake pynvml with 8 GPUs, plus the real HostSource.

The NVML side measures our own per-tick work (guards, fallbacks, building the frozen samples) over a fake
whose calls build the same ctypes structures the real pynvml returns; the driver's own time is not in it.
The host side is the real psutil on this machine, following 8 real processes (this one and 7 children,
standing in for 8 training ranks, each of the 7 with 12 children of its own standing in for data-loader
workers, whose CPU is read every few ticks). Matching NVML's PIDs with their device files reads a fake /proc in which
each rank holds 50 files, one of them its GPU's /dev/nvidiaN (no real one exists here). Target: under 5 ms
of CPU per tick.

Run: .venv/bin/python benchmarks/bench_sampling.py [--ticks N]
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# The fake lives with the tests (it is test support, not part of the package); share it from there.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from fake_pynvml import FakeGpu, FakeNvml

from gputui.sources.host.source import HostSource
from gputui.sources.nvml.source import NvmlSource

GPUS = 8
WORKERS = 12
WARMUP = 10


FDS_PER_RANK = 50


def fake_proc(root: Path, pids: list[int]) -> Path:
    """A /proc where rank i holds /dev/nvidia<i> among its files, as a CUDA process does."""
    (root / "proc/self").mkdir(parents=True)
    for minor, pid in enumerate(pids):
        fd = root / f"proc/{pid}/fd"
        fd.mkdir(parents=True)
        for n in range(FDS_PER_RANK):
            (fd / str(n)).symlink_to(f"/dev/nvidia{minor}" if n == 10 else f"socket:[{1000 + n}]")
    return root


def measure(ticks: int, pids: list[int], root: Path) -> list[float]:
    """CPU seconds of each of `ticks` samples, after a short warm-up."""
    gpus = [FakeGpu(compute_processes=[(pid, 60_000 * 1024 * 1024)]) for pid in pids]
    source = NvmlSource(pynvml=FakeNvml(gpus), host=HostSource(), slow_every=5, root=fake_proc(root, pids))
    source.open()
    try:
        for _ in range(WARMUP):
            source.sample()
        costs = []
        for _ in range(ticks):
            start = time.process_time()
            snap = source.sample()
            costs.append(time.process_time() - start)
        assert len(snap.gpus) == GPUS and len(snap.host.processes) == GPUS, "every rank should be followed"
        assert sum(p.children or 0 for p in snap.host.processes) == (GPUS - 1) * (WORKERS + 1), "workers counted"
        return costs
    finally:
        source.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ticks", type=int, default=500, help="ticks to measure (default 500)")
    args = parser.parse_args()
    if args.ticks < 1:
        parser.error("--ticks must be at least 1")
    workers = f"for i in $(seq {WORKERS}); do sleep 600 & done; wait"
    ranks = [subprocess.Popen(["sh", "-c", workers], start_new_session=True) for _ in range(GPUS - 1)]
    try:
        with tempfile.TemporaryDirectory() as root:
            costs = measure(args.ticks, [os.getpid(), *(rank.pid for rank in ranks)], Path(root))
    finally:
        for rank in ranks:
            os.killpg(rank.pid, signal.SIGKILL)  # the rank and its workers
            rank.wait()
    ms = sorted(cost * 1000 for cost in costs)
    print(f"sampling: {GPUS} GPUs + host: median {statistics.median(ms):.2f} ms CPU per tick ({len(ms)} ticks)")
    print(f"  mean {statistics.fmean(ms):.2f} ms, p95 {ms[int(0.95 * (len(ms) - 1))]:.2f} ms, max {ms[-1]:.2f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
