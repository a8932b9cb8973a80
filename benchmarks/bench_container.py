"""Cost of reading the container each tick: one CgroupReader.sample() on this machine, and GpuUsers.scan() over
a fake /proc of 2,000 processes x 20 fds (cold: a new scanner's first scan, which reads at most its batch of
processes; warm: the cache of non-users in use), how many scans a new scanner needs to find every GPU user
(they are the oldest PIDs, read last), and the same over this machine's real /proc.

The cgroup figure is this machine's own layout (v1 or v2, whatever is mounted): a handful of small files, budget
0.5 ms. The fake /proc stands for a busy training host (data-loader workers, a notebook, system daemons), eight
of them holding a GPU; budget 20 ms for a scan. Wall time (perf_counter): the work is system calls.

Run: .venv/bin/python benchmarks/bench_container.py [--reads N] [--processes N] [--fds N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from gputui.sources.host.cgroup import CgroupReader, read_cgroup
from gputui.sources.host.procfs import GpuUsers

GPUS = 8
CGROUP_BUDGET_MS = 0.5
SCAN_BUDGET_MS = 20.0
BATCH = GpuUsers().batch  # processes a scan reads besides the known users


def timed(call: Callable[[], object], times: int) -> list[float]:
    """Milliseconds of each of `times` calls."""
    out = []
    for _ in range(times):
        start = time.perf_counter()
        call()
        out.append((time.perf_counter() - start) * 1000)
    return out


def fake_proc(root: Path, processes: int, fds: int) -> None:
    """/proc with `processes` processes of `fds` fds each; the first GPUS hold /dev/nvidia<N> among them."""
    common = ["/dev/null", "pipe:[1234]", "pipe:[1235]", "socket:[99]", "/dev/nvidiactl", "/dev/nvidia-uvm"]
    (root / "proc/self").mkdir(parents=True)
    for pid in range(1000, 1000 + processes):
        fd_dir = root / "proc" / str(pid) / "fd"
        fd_dir.mkdir(parents=True)
        targets = common + [f"/tmp/data/shard-{n}.bin" for n in range(fds - len(common))]
        if pid - 1000 < GPUS:
            targets[-1] = f"/dev/nvidia{pid - 1000}"
        for number, target in enumerate(targets[:fds]):
            os.symlink(target, fd_dir / str(number))


def scan_costs(root: Path, cold_runs: int, warm_runs: int) -> tuple[list[float], list[float], int, int]:
    """(cold scan ms, warm scan ms, processes found holding a GPU, scans a new scanner needed to find them)."""
    cold = []
    for _ in range(cold_runs):
        users = GpuUsers(root)
        start = time.perf_counter()
        users.scan()
        cold.append((time.perf_counter() - start) * 1000)
    users = GpuUsers(root)
    processes = sum(name.isdigit() for name in os.listdir(root / "proc"))
    counts = [sum(len(pids) for pids in users.scan().values()) for _ in range(processes // BATCH + 2)]
    found = counts[-1]
    warm = timed(users.scan, warm_runs)
    return cold, warm, found, counts.index(found) + 1


def row(name: str, ms: list[float], budget: float | None) -> str:
    median = statistics.median(ms)
    p95 = sorted(ms)[int(0.95 * (len(ms) - 1))]
    verdict = "" if budget is None else ("ok" if median <= budget else "OVER")
    limit = f"{budget:g}" if budget is not None else "-"
    return f"{name:<34} {median:>9.3f} {p95:>9.3f} {len(ms):>6} {limit:>8} {verdict:>5}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reads", type=int, default=2000, help="cgroup samples to time (default 2000)")
    parser.add_argument("--processes", type=int, default=2000, help="processes in the fake /proc (default 2000)")
    parser.add_argument("--fds", type=int, default=20, help="fds per fake process (default 20)")
    args = parser.parse_args()
    if args.reads < 1 or args.processes < GPUS or args.fds < 7:
        parser.error(f"--reads >= 1, --processes >= {GPUS}, --fds >= 7")

    cgroup = read_cgroup()
    reader = CgroupReader(cgroup)
    reader.sample()
    container, psi = reader.sample()
    sample_ms = timed(reader.sample, args.reads)

    with tempfile.TemporaryDirectory(prefix="gputui-bench-proc-") as tmp:
        fake_proc(Path(tmp), args.processes, args.fds)
        fake_cold, fake_warm, fake_found, fake_scans = scan_costs(Path(tmp), cold_runs=10, warm_runs=100)
    real_cold, real_warm, real_found, real_scans = scan_costs(Path("/"), cold_runs=10, warm_runs=100)
    real_processes = sum(name.isdigit() for name in os.listdir("/proc"))

    info = cgroup.info
    print(
        f"cgroup v{info.cgroup_version}, quota {info.cpu_quota_cores} cores, memory limit {info.memory_limit_bytes},"
        f" container sample read: {container is not None}, PSI read: {psi is not None}"
    )
    print(f"{'ms':<34} {'median':>9} {'p95':>9} {'runs':>6} {'budget':>8}")
    print(row("CgroupReader.sample() (real)", sample_ms, CGROUP_BUDGET_MS))
    fake = f"{args.processes}x{args.fds}"
    print(row(f"GpuUsers.scan() fake {fake} cold", fake_cold, SCAN_BUDGET_MS))
    print(row(f"GpuUsers.scan() fake {fake} warm", fake_warm, SCAN_BUDGET_MS))
    print(row(f"GpuUsers.scan() real ({real_processes} procs) cold", real_cold, None))
    print(row(f"GpuUsers.scan() real ({real_processes} procs) warm", real_warm, None))
    if fake_found != GPUS:
        print(f"error: the fake scan found {fake_found} GPU processes, expected {GPUS}", file=sys.stderr)
        return 1
    print(f"GPU processes found: fake {fake_found} after {fake_scans} scans, real {real_found} after {real_scans}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
