"""Hand-made activities (what a job's main thread did over a window of stack samples) for the views' tests, until
a test reads real ones: a DataLoader job waiting for its batches, and one whose stacks could not be read."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from gputui.model import ActivityFrame, ActivityShares, GpuProcess, JobActivity, Snapshot
from tests.snapshots import GIB, gpu, host, proc, snapshot, system_info

# The end of the window, on the tests' clock (snapshots at t=1.0 and later see it as fresh).
TAKEN_AT = 1.0
PTRACE_REFUSED = (
    "ptrace_refused: the kernel refuses gputui ptrace on PID 4242 (another user's process, gputui not root): run "
    "gputui as root, or start the job with gputui run -- CMD"
)


def waiting_for_data(**changes: Any) -> JobActivity:
    """py-spy's 4 s at 20 Hz of a job whose main thread waits for the DataLoader 71% of its samples, its two
    workers mostly reading files."""
    base = JobActivity(
        source="py-spy",
        taken_at=TAKEN_AT,
        window_s=4.0,
        samples=80,
        shares=ActivityShares(data=0.71, cpu=0.2, gpu_sync=0.06, idle=0.03),
        top=(
            ActivityFrame("data", "_next_data", "/usr/lib/python3/torch/utils/data/dataloader.py", 1327, 0.66),
            ActivityFrame("cpu", "train_step", "/home/alice/train.py", 88, 0.2),
            ActivityFrame("gpu_sync", "item", "/home/alice/train.py", 92, 0.06),
        ),
        workers=ActivityShares(io=0.6, loading=0.4),
        worker_samples=160,
    )
    return replace(base, **changes)


def unreadable(**changes: Any) -> JobActivity:
    """A window that read no stack: ptrace refused."""
    return replace(JobActivity("py-spy", TAKEN_AT, 4.0, 0, error=PTRACE_REFUSED), **changes)


def job_snapshot(t: float = 5.0, activity: JobActivity | None = None, **system: Any) -> Snapshot:
    """GPU 0 held by a training process (PID 4242, with `activity`, by default waiting for data) and an evaluation
    process never sampled (PID 4243)."""
    processes = (GpuProcess(4242, 16 * GIB), GpuProcess(4243, GIB))
    samples = [
        proc(4242, cmdline="python train.py --workers 2", activity=activity or waiting_for_data()),
        proc(4243, user="bob", cmdline="python eval.py"),
    ]
    return snapshot(t, [gpu(0, processes=processes)], host_sample=host(samples), system=system_info(**system))
