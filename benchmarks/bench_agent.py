"""Cost of the in-process stack sampler to the job: the lab's step rate with and without it.

examples/lab/train.py (a real PyTorch input pipeline, its GPU step a sleep) is measured for --seconds, once as it is
and once with the sampler in it, alternating, --rounds times each way. "With" is the environment `gputui run` gives
its job (gputui.commands.run.job_environment: the sampler first on PYTHONPATH, at --hz), the job started from
here so that the figures hold the sampler and not gputui's own start-up. Each run's rate is the steps its trace
counts from --warmup seconds after its first record (its workers have started) for --seconds, then it is killed
(its own end, which stops its workers, is not measured); the trace is read every 0.2 s, on both sides alike.
Its CPU over the same steps (the job's and its workers') per step shows what the sampler's threads cost, where
the rate shows what they take from the job's own work.

The default job loads its batches in the main process (--num-workers 0): its main thread runs Python all the
time, so every sample the sampler takes is time the step waits for the GIL. The issue's target: the step rate
with the sampler at least 99% of the rate without it. The machine may be shared: the medians of alternating
rounds, and the spread, say how far to trust a difference of a percent.

A shared machine blurs a percent; the sampler's own thread is measured exactly too: its CPU time
(/proc schedstat) per second, here, sampling a main thread that runs Python at a stack depth of --depth
beside --threads threads of that depth waiting (a DataLoader's pin-memory and queue threads). It holds the
GIL while it runs: where the CPUs are not all busy, this is about what it takes from the job's Python.

Run: .venv/bin/python benchmarks/bench_agent.py [--rounds N] [--seconds S] [--hz N] [--num-workers N] ...
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import psutil

from gputui.agent import gputui_stacks_agent as agent
from gputui.commands.run import job_environment

ROOT = Path(__file__).resolve().parent.parent
LAB = ROOT / "examples" / "lab" / "train.py"
TARGET_RATIO = 0.99
POLL_S = 0.2
JOB_MARGIN_S = 30.0  # the job runs this much longer than it is measured (its start-up included), then is killed


def tree_cpu_s(job: psutil.Process) -> float:
    """CPU seconds of the job and its workers so far (the workers live as long as the job's one long epoch)."""
    total = 0.0
    for process in (job, *job.children(recursive=True)):
        try:
            times = process.cpu_times()
        except psutil.Error:
            continue
        total += times.user + times.system
    return total


def read_steps(trace: Path) -> int | None:
    try:
        return int(json.loads(trace.read_text())["steps"])
    except (OSError, ValueError, KeyError):
        return None  # not written yet (or caught while being replaced: never, it is renamed over)


def one_run(args: argparse.Namespace, with_sampler: bool, directory: Path) -> tuple[float, float]:
    """(steps per second, CPU ms per step) of one run of the lab's job."""
    trace = directory / f"trace-{'with' if with_sampler else 'without'}.json"
    trace.unlink(missing_ok=True)
    environment = {name: value for name, value in os.environ.items() if not name.startswith("GPUTUI_STACKS_")}
    environment.pop("PYTHONPATH", None)
    if with_sampler:
        records = directory / "records"
        records.mkdir(mode=0o700, exist_ok=True)
        environment = job_environment(environment, args.hz, str(records))
    command = [
        sys.executable,
        str(LAB),
        "--trace",
        str(trace),
        "--seconds",
        str(args.seconds + args.warmup + JOB_MARGIN_S),
        "--num-workers",
        str(args.num_workers),
        "--sample-ms",
        str(args.sample_ms),
        "--gpu-step-ms",
        str(args.gpu_step_ms),
    ]
    job = subprocess.Popen(command, env=environment, cwd=directory, start_new_session=True)
    try:
        return measured(job, trace, args)
    finally:  # the job and its workers, at once: its own end, which stops the workers, is not measured
        with contextlib.suppress(ProcessLookupError):
            os.killpg(job.pid, signal.SIGKILL)
        job.wait()


def measured(job: subprocess.Popen[bytes], trace: Path, args: argparse.Namespace) -> tuple[float, float]:
    """(steps per second, CPU ms per step) of the running job over `args.seconds`, after its warm-up."""
    tree = psutil.Process(job.pid)
    first: float | None = None
    start: tuple[float, int, float] | None = None  # (time, steps, CPU seconds)
    while job.poll() is None:
        time.sleep(POLL_S)
        steps = read_steps(trace)
        if steps is None:
            continue
        now = time.monotonic()
        first = now if first is None else first
        if start is None and now - first >= args.warmup:
            start = (now, steps, tree_cpu_s(tree))
        elif start is not None and now - start[0] >= args.seconds:
            cpu_s = tree_cpu_s(tree)
            if job.poll() is not None or steps <= start[1]:
                break
            return (steps - start[1]) / (now - start[0]), (cpu_s - start[2]) * 1000 / (steps - start[1])
    raise SystemExit(f"the lab's job ended or made no steps before it was measured (exit {job.returncode})")


def on_cpu_ns(native_id: int) -> int:
    with open(f"/proc/self/task/{native_id}/schedstat") as schedstat:
        return int(schedstat.read().split()[0])


def at_depth(depth: int, work: Callable[[], None]) -> None:
    """`work` called `depth` frames down, as a job's step is below its loop, trainer and launcher."""
    if depth <= 0:
        work()
    else:
        at_depth(depth - 1, work)


def sampler_cpu_ms_per_s(hz: int | None, seconds: float, depth: int, threads: int, directory: str) -> float:
    """The CPU the sampler's thread takes per second in this process, its main thread spinning in Python."""
    os.environ[agent.ENV_DIR] = directory  # a TemporaryDirectory: 0700, this user's
    done = threading.Event()
    waiting = [threading.Thread(target=at_depth, args=(depth, lambda: done.wait())) for _ in range(threads)]
    for thread in waiting:
        thread.start()
    sampler = agent.Sampler(float(hz or agent.DEFAULT_HZ), agent.DEFAULT_WINDOW_S)
    sampler.start()
    assert sampler.thread is not None and sampler.thread.native_id is not None
    native_id = sampler.thread.native_id

    def spin() -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            pass

    before = on_cpu_ns(native_id)
    at_depth(depth, spin)
    spent_ns = on_cpu_ns(native_id) - before
    sampler.stop()
    done.set()
    for thread in waiting:
        thread.join()
    return spent_ns / 1e6 / seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3, help="runs each way, alternating (default 3)")
    parser.add_argument("--seconds", type=float, default=20.0, help="measured seconds of each run (default 20)")
    parser.add_argument("--warmup", type=float, default=2.0, help="seconds not measured after the first step")
    parser.add_argument("--hz", type=int, default=None, help="the sampler's rate (default: its own, 25)")
    parser.add_argument("--num-workers", type=int, default=0, help="the job's DataLoader workers (default 0)")
    parser.add_argument("--sample-ms", type=float, default=5.0, help="CPU each sample costs (default 5)")
    parser.add_argument("--gpu-step-ms", type=float, default=10.0, help="the simulated GPU step (default 10)")
    parser.add_argument("--depth", type=int, default=40, help="stack depth of the in-process measure (default 40)")
    parser.add_argument("--threads", type=int, default=3, help="waiting threads in the in-process measure")
    args = parser.parse_args()

    rates: dict[bool, list[float]] = {False: [], True: []}
    cpu: dict[bool, list[float]] = {False: [], True: []}
    with tempfile.TemporaryDirectory(prefix="bench-agent-") as directory:
        for round_no in range(1, args.rounds + 1):
            for with_sampler in (False, True):
                rate, cpu_ms = one_run(args, with_sampler, Path(directory))
                rates[with_sampler].append(rate)
                cpu[with_sampler].append(cpu_ms)
                side = "with   " if with_sampler else "without"
                print(f"round {round_no} {side}: {rate:.2f} steps/s, {cpu_ms:.1f} ms CPU per step", flush=True)
    without, with_ = statistics.median(rates[False]), statistics.median(rates[True])
    ratio = with_ / without
    print(
        f"lab job: --num-workers {args.num_workers} --sample-ms {args.sample_ms:g} --gpu-step-ms "
        f"{args.gpu_step_ms:g}; sampler at {args.hz or 'its default'} Hz; {args.rounds} rounds x {args.seconds:g} s"
    )
    print(f"steps_per_s_without      {without:.3f}   (rounds: {', '.join(f'{r:.2f}' for r in rates[False])})")
    print(f"steps_per_s_with         {with_:.3f}   (rounds: {', '.join(f'{r:.2f}' for r in rates[True])})")
    print(f"ratio                    {ratio:.4f}   (target at least {TARGET_RATIO})")
    print(f"cpu_ms_per_step_without  {statistics.median(cpu[False]):.2f}")
    print(f"cpu_ms_per_step_with     {statistics.median(cpu[True]):.2f}")
    with tempfile.TemporaryDirectory(prefix="bench-agent-") as directory:
        own = sampler_cpu_ms_per_s(args.hz, args.seconds, args.depth, args.threads, directory)
    print(f"sampler_cpu_ms_per_s     {own:.2f}   (its thread, {args.threads + 1} threads {args.depth} frames deep)")
    print(f"sampler_cpu_pct          {own / 10:.2f}   (of one core; target under 1)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
