"""The lab's own machinery against real PyTorch jobs: the simulated GPU follows the job's reported GPU time, its
process is the job's real one with its real workers, a job that ends leaves an idle GPU, and `gputui diagnose
--demo-job` runs in real time, labelled SIMULATED; the neighbour check tells other processes from the job and from
gputui's own sampling (py-spy included), and an activity read as another user comes back whole. (That the cgroup
read is the job's: case d, test_lab_cases.py.)
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from gputui.cli import main
from gputui.sources.base import SourceUnavailable
from gputui.sources.sim.job import JobSource
from tests.lab.jobs import Job, await_quiet, crowded, follow_job, mean, settle, started_job
from tests.lab.neighbours import between, usage

# One worker making 4 samples of 10 ms of CPU (40 ms a batch) for a 20 ms GPU step: the GPU is busy about half
# of the time, and the worker all of it.
HALF = ("--num-workers", "1", "--batch-size", "4", "--sample-ms", "10", "--gpu-step-ms", "20")


@pytest.fixture(scope="module")
def half_busy() -> Iterator[Job]:
    with started_job(HALF, seconds=90.0) as job:
        yield job


def test_the_gpu_follows_the_jobs_gpu_time_and_its_process_is_the_real_job(half_busy: Job) -> None:
    pid = half_busy.process.pid
    settle(pid)
    await_quiet(pid, reads_disk=False)
    (worker,) = psutil.Process(pid).children()
    before = worker.cpu_times()
    started = time.monotonic()
    followed = follow_job(half_busy.trace, None, seconds=4.0, interval=0.25)
    after, elapsed = worker.cpu_times(), time.monotonic() - started
    busy = crowded(followed.neighbours)
    if busy is not None:
        pytest.skip(busy)  # the worker needs its core: what it is measured against
    [reading] = followed.readings
    utils = [s.gpus[0].utilization_gpu_pct for s in reading.snapshots]
    # After the first reading (the instant after open), the readings tile the time the job reports on.
    util = mean(utils[1:])
    print(f"GPU utilization {util}, the job's own share {followed.job_busy_pct}")
    assert util is not None and abs(util - followed.job_busy_pct) < 3
    assert 35 <= followed.job_busy_pct <= 65  # what the job was built to do: 20 ms of every ~40
    last = reading.snapshots[-1]
    assert [p.pid for p in last.gpus[0].processes] == [pid]
    proc = last.host.process(pid)
    assert proc is not None and proc.cmdline is not None and "examples/lab/train.py" in proc.cmdline
    assert proc.children == 1
    # The worker's CPU as psutil counts it over the same run: about one core, and what gputui read.
    measured = 100.0 * (sum(after[:2]) - sum(before[:2])) / elapsed
    print(f"workers_cpu_pct {proc.workers_cpu_pct}, psutil's {measured}")
    assert proc.workers_cpu_pct is not None and abs(proc.workers_cpu_pct - measured) < 25
    assert proc.workers_cpu_pct >= 50


def test_diagnose_follows_a_job_in_real_time_labelled_simulated(
    half_busy: Job, capsys: pytest.CaptureFixture[str]
) -> None:
    started = time.monotonic()
    code = main(["diagnose", "--demo-job", str(half_busy.trace), "--seconds", "2", "--interval", "0.5"])
    took = time.monotonic() - started
    out = capsys.readouterr().out
    print(out)
    assert code in (0, 1, 4)  # a health code: ok, warnings, critical
    assert out.splitlines()[0].startswith(f"SIMULATED GPU following the real job pid {half_busy.process.pid}:")
    assert took >= 2.0  # real time: two seconds of the job, not a simulated clock


def test_a_job_that_ends_leaves_an_idle_gpu() -> None:
    with started_job(HALF, seconds=1.0) as job:
        source = JobSource(job.trace)
        source.open()
        try:
            running = source.sample()
            job.process.wait(timeout=30)  # it ends by itself after its second
            ended = source.sample()
        finally:
            source.close()
    assert [p.pid for p in running.gpus[0].processes] == [job.process.pid]
    assert ended.gpus[0].processes == () and ended.host.processes == ()
    assert ended.gpus[0].utilization_gpu_pct == 0.0
    assert ended.events == (f"the job (pid {job.process.pid}) is no longer running: the simulated GPU is idle",)


def test_a_missing_or_corrupt_trace_cannot_open(tmp_path: Path) -> None:
    trace = tmp_path / "job.json"
    with pytest.raises(SourceUnavailable, match=r"no job trace at .*: start examples/lab/train.py --trace"):
        JobSource(trace).open()
    trace.write_text('{"format": "gputui-job-trace", "version": 1, "pid": 12')  # torn: what os.replace prevents
    with pytest.raises(SourceUnavailable, match="is not JSON"):
        JobSource(trace).open()


def test_a_neighbours_cpu_is_measured_and_named_and_neither_the_job_nor_the_sampling_is_one() -> None:
    """What a case checks its machine by: a spinning process counts as a neighbour and is named, unless it is the
    job; the thread that samples (here: spinning too) never counts."""
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        process = psutil.Process(spinner.pid)
        key = (spinner.pid, process.create_time())
        starts = usage(None), usage(spinner.pid)
        spun_from, sampled_from = sum(process.cpu_times()[:2]), time.thread_time()
        deadline = time.monotonic() + 60
        # This thread is the sampler: it spins as well, until each has used a CPU second.
        while time.thread_time() - sampled_from < 1.0 or sum(process.cpu_times()[:2]) - spun_from < 1.0:
            assert time.monotonic() < deadline, "the spinner and this thread had no CPU second in a minute"
        ends = usage(None), usage(spinner.pid)
    finally:
        spinner.kill()
        spinner.wait()
    beside, of_the_job = between(starts[0], ends[0]), between(starts[1], ends[1])
    print(beside, of_the_job, sep="\n")
    spun = (ends[0].processes[key][1] - starts[0].processes[key][1]) / beside.seconds  # cores, as read by usage
    assert [cores for who, cores in beside.busiest if who.startswith(f"pid {spinner.pid} ")] == [pytest.approx(spun)]
    assert beside.others_cores >= spun - 0.05
    assert abs(of_the_job.job_cores - spun) < 0.1  # over its own window: a few ms apart at each end
    assert not [who for who, _ in of_the_job.busiest if who.startswith(f"pid {spinner.pid} ")]
    assert beside.sampler_cores >= 1.0 / beside.seconds - 0.05  # the sampling's CPU second, not the others'
    assert not [who for who, _ in beside.busiest if who.startswith("this test run")]


def test_the_stack_sampler_under_this_process_is_its_own_work_not_a_neighbour(tmp_path: Path) -> None:
    """gputui runs py-spy as its child: the CPU of a py-spy under the lab's process is the sampling's, while it
    runs and once reaped, and it is never named among the neighbours."""
    (tmp_path / "py-spy").symlink_to(sys.executable)  # a process named py-spy: what psutil and /proc/PID/comm say
    spin = "import sys, time\nwhile time.process_time() < 0.5: pass\nsys.stdin.read()"
    start = usage(None)
    sampler = subprocess.Popen([str(tmp_path / "py-spy"), "-c", spin], stdin=subprocess.PIPE)
    try:
        process = psutil.Process(sampler.pid)
        assert process.name() == "py-spy"
        deadline = time.monotonic() + 60
        while sum(process.cpu_times()[:2]) < 0.45:  # it spins 0.5 s by its own clock; this one counts ticks
            assert time.monotonic() < deadline, "the stand-in sampler had no half CPU second in a minute"
            time.sleep(0.05)
        running = between(start, usage(None))
        assert sampler.stdin is not None
        sampler.stdin.close()
        sampler.wait(timeout=30)
        reaped = between(start, usage(None))
    finally:
        sampler.kill()
        sampler.wait()
    print(running, reaped, sep="\n")
    for seen in (running, reaped):
        assert 0.45 <= seen.stacks_cores * seen.seconds <= 1.0  # its half second, and Python's start
        assert seen.sampler_cores >= seen.stacks_cores
        assert not [who for who, _ in seen.busiest if who.startswith(f"pid {sampler.pid} ")]
