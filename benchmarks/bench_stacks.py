"""What reading the job's stacks costs the monitor: its CPU with one waiting job, with sampling and without.

Starts the lab's job (examples/lab/train.py, a real PyTorch process whose DataLoader keeps its simulated GPU
waiting: num_workers=0, every batch costs more CPU than its GPU step), then runs the monitor on it (`gputui
--demo-job TRACE`) under a real pty, once with `[stacks] enabled = true` and once with `enabled = false` in its
config file, `--rounds` times in turn, each for `--seconds` after its first frame. The job waits the whole time,
so the monitor takes a window of its stacks every `cooldown_s` (`--cooldown`, [stacks]' default unless given) while
sampling is on. The whole monitor's CPU moves more from run to run on a shared machine than sampling adds to it:
the py-spy figure is the one to read, and --rounds alternates the runs.
  cpu_pct_on / cpu_pct_off  CPU time of the monitor and of the children it has reaped (py-spy, each window's),
                            utime+stime+cutime+cstime from /proc, over wall time, in % of one core
  ratio                     on / off; the issue's bound is 1.10 over a 10-minute run (--seconds 600)
  py_spy                    the py-spy processes seen under the monitor while sampling was on (polled every 0.2 s;
                            a reader may run more than one a window) and the CPU they took
With --hung the job is one that has stopped (issue 40): two ranks under torchrun, rank 1 blocked for good after a
few steps, rank 0 waiting in all_reduce with its collective's kernel spinning (train.py --stop-rank 1 --spin); the
monitor follows rank 0's GPU, so it re-samples that rank every `hang_recheck_s` (`--hang-recheck`) while the job
looks stopped: the cost of the re-sampling per rank (a machine's monitor samples each of the job's ranks so).
Usage: python benchmarks/bench_stacks.py [--seconds 600] [--rounds 1] [--interval 1] [--cooldown S]
                                         [--hung [--hang-recheck S]]
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import os
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import time
from pathlib import Path

from bench_ui import drain, quit_monitor

from gputui.config import StacksConfig

ROOT = Path(__file__).resolve().parent.parent
JOB = ROOT / "examples" / "lab" / "train.py"
# The job's first record comes after its first batch, once torch is imported: a slow machine takes a while.
JOB_START_S = 120.0


def cpu_seconds(pid: int) -> tuple[float, float]:
    """utime+stime of the process, and of the children it has waited for (py-spy), in seconds."""
    fields = [int(value) for value in Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[11:15]]
    tick = os.sysconf("SC_CLK_TCK")
    return (fields[0] + fields[1]) / tick, (fields[2] + fields[3]) / tick


def py_spy_children(pid: int) -> set[int]:
    """The PIDs of the py-spy processes the monitor runs now (started by any of its threads)."""
    found = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            children = (task / "children").read_text().split()
        except OSError:  # the thread ended
            continue
        for child in children:
            try:
                if Path(f"/proc/{child}/comm").read_text().strip() == "py-spy":
                    found.add(int(child))
            except OSError:  # it ended
                continue
    return found


def start_job(trace: Path, seconds: float, hung: bool = False) -> subprocess.Popen[bytes]:
    """The lab's job, waiting on its data; or (`hung`) two ranks of one that has stopped, each writing its own
    trace beside `trace` (job.rank0.json, job.rank1.json)."""
    options = ["--seconds", f"{seconds:.0f}", "--num-workers", "0", "--sample-ms", "10", "--gpu-step-ms", "10"]
    launch: list[str] = []
    if hung:
        options += ["--stop-rank", "1", "--stop-after", "5", "--spin"]
        launch = ["-m", "torch.distributed.run", "--standalone", "--monitor-interval", "1", "--nproc-per-node", "2"]
    job = subprocess.Popen(
        [sys.executable, *launch, str(JOB), "--trace", str(trace), *options],
        stdout=subprocess.DEVNULL,
        start_new_session=True,
    )
    written = rank_trace(trace, 0) if hung else trace
    deadline = time.monotonic() + JOB_START_S
    while not written.exists():
        if time.monotonic() > deadline or job.poll() is not None:
            os.killpg(job.pid, signal.SIGTERM)  # torchrun passes it on to its ranks, each in a session of its own
            job.wait(timeout=30)
            raise RuntimeError(f"bench_stacks: the lab job wrote no trace within {JOB_START_S:g} s")
        time.sleep(0.2)
    return job


def rank_trace(trace: Path, rank: int) -> Path:
    """Where rank `rank` of a job told to write `trace` writes (train.py's rank_trace)."""
    return trace.with_name(f"{trace.stem}.rank{rank}{trace.suffix}")


def read_pid(trace: Path) -> int:
    """The PID of the process whose trace this is (a rank of torchrun's, not torchrun itself)."""
    deadline = time.monotonic() + JOB_START_S
    while True:
        try:
            return int(json.loads(trace.read_text())["pid"])
        except (OSError, ValueError, KeyError):
            if time.monotonic() > deadline:
                raise RuntimeError(f"bench_stacks: no record in {trace}") from None
            time.sleep(0.2)


def monitor(trace: Path, job: int, config: Path, args: argparse.Namespace) -> tuple[float, float, int]:
    """One run of the monitor on the job: its CPU with its children's in % of one core, the children's alone in
    seconds, and the py-spy processes it ran. Measured from its first frame that shows the job's process."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    dropped = ("COLORTERM", "TEXTUAL", "NO_COLOR", "PYTHONDONTWRITEBYTECODE")
    env = {**{k: v for k, v in os.environ.items() if k not in dropped}, "TERM": "xterm-256color"}
    command = [sys.executable, "-m", "gputui", "--demo-job", str(trace), "--config", str(config)]
    proc = subprocess.Popen(
        [*command, "--interval", str(args.interval)],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=env,
        start_new_session=True,
    )
    os.close(slave)
    seen, windows = b"", set()
    try:
        started = time.monotonic()
        while str(job).encode() not in seen:
            if time.monotonic() - started > 30 or proc.poll() is not None:
                print(seen[-2000:].decode(errors="replace"), file=sys.stderr)
                raise RuntimeError("bench_stacks: no first frame within 30 s")
            seen += drain(master, 0.05)
        cpu_start, wall_start = cpu_seconds(proc.pid), time.monotonic()
        end = wall_start + args.seconds
        while time.monotonic() < end:
            drain(master, min(0.2, max(0.0, end - time.monotonic())))
            windows |= py_spy_children(proc.pid)
        wall = time.monotonic() - wall_start
        own, children = (after - before for after, before in zip(cpu_seconds(proc.pid), cpu_start, strict=True))
    finally:
        quit_monitor(proc, master, timeout=10.0)
    return 100.0 * (own + children) / wall, children, len(windows)


def run(args: argparse.Namespace) -> int:
    with tempfile.TemporaryDirectory(prefix="gputui-bench-stacks-") as tmp:
        trace = Path(tmp) / "job.json"
        configs = {}
        for mode, enabled in (("on", "true"), ("off", "false")):
            configs[mode] = Path(tmp) / f"{mode}.toml"
            configs[mode].write_text(
                f"[stacks]\nenabled = {enabled}\ncooldown_s = {args.cooldown}\nhang_recheck_s = {args.hang_recheck}\n"
            )
        job = start_job(trace, 2 * args.rounds * (args.seconds + 60) + JOB_START_S, args.hung)
        # torchrun starts each rank in a session of its own: they are killed apart from its process group.
        ranks = [read_pid(rank_trace(trace, rank)) for rank in range(2)] if args.hung else []
        followed = rank_trace(trace, 0) if args.hung else trace
        figures: dict[str, list[float]] = {"on": [], "off": []}
        windows, py_spy_s = 0, 0.0
        try:
            for _ in range(args.rounds):
                for mode in ("off", "on"):
                    cpu, children, taken = monitor(followed, ranks[0] if ranks else job.pid, configs[mode], args)
                    figures[mode].append(cpu)
                    if mode == "on":
                        windows, py_spy_s = windows + taken, py_spy_s + children
                    if mode == "off" and taken:
                        raise RuntimeError("bench_stacks: the monitor ran py-spy with [stacks] enabled = false")
        finally:
            os.killpg(job.pid, signal.SIGKILL)
            for pid in ranks:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            job.wait(timeout=10)
    on, off = statistics.median(figures["on"]), statistics.median(figures["off"])
    label = f"{args.rounds} x {args.seconds:g} s each, interval {args.interval:g} s, cooldown {args.cooldown:g} s"
    if args.hung:
        label += f", a stopped job's rank 0, hang_recheck {args.hang_recheck:g} s"
    print(f"cpu_pct_off  {off:.2f} % of one core   ({label}; rounds: {', '.join(f'{v:.2f}' for v in figures['off'])})")
    print(f"cpu_pct_on   {on:.2f} % of one core   (rounds: {', '.join(f'{v:.2f}' for v in figures['on'])})")
    print(f"ratio        {on / off:.3f}")
    print(f"py_spy       {windows} processes, {py_spy_s:.2f} s of CPU in all ({py_spy_s / max(1, windows):.3f} s each)")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=600.0, help="each run's length (the issue's: 600)")
    parser.add_argument("--rounds", type=int, default=1, help="off and on runs in turn, this many of each")
    parser.add_argument("--interval", type=float, default=1.0)
    parser.add_argument("--cooldown", type=float, default=StacksConfig().cooldown_s, help="[stacks] cooldown_s")
    parser.add_argument("--hung", action="store_true", help="a job that has stopped (two ranks), not one that waits")
    parser.add_argument(
        "--hang-recheck", type=float, default=StacksConfig().hang_recheck_s, help="[stacks] hang_recheck_s"
    )
    return run(parser.parse_args())


if __name__ == "__main__":
    sys.exit(main())
