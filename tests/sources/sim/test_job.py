"""gputui.sources.sim.job without torch: the trace format, and the source over traces this test writes itself.

The job here is a real process (this one, or a child that sleeps); its trace is written by the test and time
is a fake monotonic clock, so the simulated GPU's utilization is exact. tests/lab runs it against real
PyTorch jobs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from gputui.cli import main
from gputui.commands.common import EXIT_NO_DRIVER, EXIT_USAGE
from gputui.foreign_text import is_clean
from gputui.model import parse_cpus
from gputui.sources.base import InvalidGpuSelection, NoJobTrace, Source, SourceUnavailable
from gputui.sources.sim.job import (
    JOB_MEMORY_GIB,
    JobSource,
    TraceError,
    is_job_scenario,
    job_banner,
    job_scenario,
    read_trace,
)
from tests.conftest import Clock


def write_trace(
    path: Path,
    pid: int,
    busy_s: float = 0.0,
    step_started: float | None = None,
    steps: int = 0,
    step_s: float | None = None,
) -> None:
    """A record as examples/lab/train.py writes it (which gives `step_s`; a job that does not know it leaves it
    out)."""
    record = {"format": "gputui-job-trace", "version": 1, "pid": pid, "gpu_busy_s": busy_s, "steps": steps}
    extra = {} if step_s is None else {"step_s": step_s}
    path.write_text(json.dumps({**record, "step_started": step_started, **extra}))


@pytest.fixture
def trace(tmp_path: Path) -> Path:
    path = tmp_path / "job.json"
    write_trace(path, os.getpid())
    return path


@pytest.fixture
def sleeper() -> Iterator[subprocess.Popen[bytes]]:
    """A second real process to stand for a job."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        yield child
    finally:
        child.kill()
        child.wait(timeout=10)


def opened(trace: Path | list[Path], clock: Clock, **options: Any) -> JobSource:
    source = JobSource(trace, clock=clock, **options)
    source.open()
    return source


def test_a_record_reads_and_counts_the_step_in_progress(trace: Path) -> None:
    write_trace(trace, 4242, busy_s=12.5, step_started=100.0, steps=300)
    record = read_trace(trace)
    assert (record.pid, record.gpu_busy_s, record.step_started, record.steps) == (4242, 12.5, 100.0, 300)
    assert record.step_s is None
    assert record.busy_at(100.25) == 12.75
    assert record.busy_at(99.0) == 12.5  # a step that began after `now` adds nothing
    write_trace(trace, 4242, busy_s=12.5)
    assert read_trace(trace).busy_at(500.0) == 12.5
    assert not read_trace(trace).busy_now(500.0)


def test_a_step_that_knows_its_gpu_work_counts_no_more(trace: Path) -> None:
    """The process may wake long after its GPU finished (a spent CPU quota): the GPU was busy only `step_s`."""
    write_trace(trace, 4242, busy_s=1.0, step_started=100.0, step_s=0.025)
    record = read_trace(trace)
    assert record.busy_at(100.01) == pytest.approx(1.01)
    assert record.busy_at(100.5) == pytest.approx(1.025)
    assert record.busy_now(100.01) and not record.busy_now(100.5)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{", "is not JSON"),
        ('{"format": "other", "version": 1}', "is not a gputui job trace"),
        ('{"format": "gputui-job-trace", "version": 2}', "is version 2; this gputui reads 1"),
        ('{"format": "gputui-job-trace", "version": 1, "pid": "x", "gpu_busy_s": 0, "steps": 0}', "bad pid: 'x'"),
        ('{"format": "gputui-job-trace", "version": 1, "pid": 0, "gpu_busy_s": 0, "steps": 0}', "bad pid: 0"),
        ('{"format": "gputui-job-trace", "version": 1, "pid": 5, "gpu_busy_s": -1, "steps": 0}', "bad gpu_busy_s"),
        ('{"format": "gputui-job-trace", "version": 1, "pid": 5, "gpu_busy_s": 1, "steps": true}', "bad steps"),
        (
            '{"format": "gputui-job-trace", "version": 1, "pid": 5, "gpu_busy_s": 1, "steps": 1, "step_started": "x"}',
            "bad step_started",
        ),
        (
            '{"format": "gputui-job-trace", "version": 1, "pid": 5, "gpu_busy_s": 1, "steps": 1, "step_s": -1}',
            "bad step_s",
        ),
    ],
)
def test_a_malformed_record_says_what_is_wrong(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "job.json"
    path.write_text(text)
    with pytest.raises(TraceError, match=message):
        read_trace(path)


@pytest.mark.parametrize("key", ["version", "pid", "gpu_busy_s", "steps", "step_started"])
def test_a_trace_the_job_filled_with_escapes_is_quoted_clean(tmp_path: Path, key: str) -> None:
    """The job writes the trace: a value that is not a number is quoted in the message the monitor shows (and the
    notice a running session keeps), escaped, never raw."""
    record = {"format": "gputui-job-trace", "version": 1, "pid": 5, "gpu_busy_s": 1, "steps": 1}
    path = tmp_path / "job.json"
    path.write_text(json.dumps({**record, key: "\x1b]0;PWNED\x07\u202e\n"}))
    with pytest.raises(TraceError) as refused:
        read_trace(path)
    assert is_clean(str(refused.value)) and "PWNED" in str(refused.value)


def test_a_missing_trace_cannot_open_and_says_how_to_start_the_job(tmp_path: Path, clock: Clock) -> None:
    missing = tmp_path / "none.json"
    with pytest.raises(SourceUnavailable) as raised:
        JobSource(missing, clock=clock).open()
    assert isinstance(raised.value, NoJobTrace)
    assert str(raised.value) == f"no job trace at {missing}: start examples/lab/train.py --trace {missing} first"
    missing.write_text("not json")
    with pytest.raises(NoJobTrace, match="is not JSON"):
        JobSource(missing, clock=clock).open()


def test_it_is_a_source_labelled_simulated_with_the_jobs_pid(trace: Path, clock: Clock) -> None:
    source = opened(trace, clock)
    try:
        assert isinstance(source, Source)
        snapshot = source.sample()
    finally:
        source.close()
    system = snapshot.system
    assert (system.source, system.scenario, system.gpu_count) == ("simulated", job_scenario(os.getpid()), 1)
    assert not system.is_live and is_job_scenario(system.scenario)
    assert system.driver_version is None  # no driver was read: not made up
    assert system.cpu_count == os.cpu_count()
    assert system.topology is not None and system.topology.cpu_affinity == (f"0-{(os.cpu_count() or 1) - 1}",)
    assert [info.name for info in snapshot.gpu_info] == ["simulated H100 80GB HBM3"]


def test_utilization_is_the_share_of_each_interval_in_the_gpu_step(trace: Path) -> None:
    clock = Clock(now=100.0)
    source = opened(trace, clock)
    pid = os.getpid()
    readings = []
    # (time of the reading, the record then): a quarter, all, none, then a step in progress half the interval.
    for now, busy, started in ((101.0, 0.25, None), (102.0, 1.25, None), (104.0, 1.25, None), (105.0, 1.25, 104.5)):
        write_trace(trace, pid, busy_s=busy, step_started=started)
        clock.now = now
        readings.append(source.sample().gpus[0])
    source.close()
    assert [g.utilization_gpu_pct for g in readings] == [25.0, 100.0, 0.0, 50.0]
    full, idle = readings[1], readings[2]
    assert full.power_w is not None and idle.power_w is not None and full.power_w > idle.power_w + 200
    assert full.sm_active_pct is not None and full.sm_active_pct > 80 and idle.sm_active_pct == 0.0
    assert [p.pid for p in readings[0].processes] == [pid]
    assert readings[0].processes[0].used_memory_bytes == int(JOB_MEMORY_GIB) << 30


def test_the_gpu_process_is_the_real_job_on_the_host(trace: Path, clock: Clock) -> None:
    source = opened(trace, clock)
    try:
        snapshot = source.sample()
    finally:
        source.close()
    me = snapshot.host.process(os.getpid())
    # This process's own command line, whatever started it (pytest, an xdist worker, an IDE's runner).
    command = " ".join(psutil.Process().cmdline())
    assert me is not None and me.cmdline == command
    assert me.cpus_allowed == tuple(sorted(os.sched_getaffinity(0)))


def test_a_job_that_exits_leaves_an_idle_gpu(tmp_path: Path, clock: Clock) -> None:
    job = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    trace = tmp_path / "job.json"
    write_trace(trace, job.pid, busy_s=0.0, step_started=0.0)
    source = opened(trace, clock)
    clock.now += 1.0
    busy = source.sample()
    assert busy.gpus[0].utilization_gpu_pct == 100.0 and busy.host.process(job.pid) is not None
    assert job.stdin is not None
    job.stdin.close()
    for reaped in (False, True):  # an exited child not yet reaped (a zombie), then gone
        if reaped:
            job.wait(timeout=10)
        else:
            deadline = time.monotonic() + 10
            while Path(f"/proc/{job.pid}/stat").read_text().split(") ")[1][0] != "Z":
                assert time.monotonic() < deadline, "the child did not exit"
                time.sleep(0.01)
        clock.now += 1.0
        idle = source.sample()
        assert idle.gpus[0].utilization_gpu_pct == 0.0
        assert idle.gpus[0].processes == () and idle.host.processes == ()
        assert idle.gpus[0].clock_event_reasons == ("gpu_idle",)
        assert idle.events == (
            () if reaped else (f"the job (pid {job.pid}) is no longer running: the simulated GPU is idle",)
        )
    source.close()


def test_a_new_pid_in_the_trace_is_followed(trace: Path, clock: Clock, sleeper: subprocess.Popen[bytes]) -> None:
    source = opened(trace, clock)
    write_trace(trace, sleeper.pid, busy_s=30.0)  # a restarted job: its own counter, from its own start
    clock.now += 2.0
    snapshot = source.sample()
    source.close()
    assert snapshot.system.scenario == job_scenario(sleeper.pid)
    assert [p.pid for p in snapshot.gpus[0].processes] == [sleeper.pid]
    assert [p.pid for p in snapshot.host.processes] == [sleeper.pid]
    assert snapshot.gpus[0].utilization_gpu_pct == 100.0  # its 30 s cannot be more than the 2 s interval
    assert any(f"new job, pid {sleeper.pid}" in event for event in snapshot.events)


def test_a_trace_that_breaks_after_open_idles_the_gpu_and_says_so_once(trace: Path, clock: Clock) -> None:
    source = opened(trace, clock)
    trace.write_text("{")
    events = []
    for _ in range(2):
        clock.now += 1.0
        snapshot = source.sample()
        assert snapshot.gpus[0].utilization_gpu_pct == 0.0 and snapshot.gpus[0].processes == ()
        events.append(snapshot.events)
    write_trace(trace, os.getpid(), busy_s=0.5)
    clock.now += 1.0
    back = source.sample()
    source.close()
    assert len(events[0]) == 1 and "is not JSON" in events[0][0] and events[1] == ()
    assert [p.pid for p in back.gpus[0].processes] == [os.getpid()]


def test_near_cpus_board_and_gpu_selection(trace: Path, clock: Clock) -> None:
    source = opened(trace, clock, near_cpus="0", board="a100")
    snapshot = source.sample()
    source.close()
    assert snapshot.system.topology is not None and snapshot.system.topology.cpu_affinity == ("0",)
    assert snapshot.gpus[0].sm_active_pct is None  # the A100 has no GPM
    with pytest.raises(InvalidGpuSelection, match="GPU 1 does not exist"):
        JobSource(trace, gpu_indices=(1,))
    with pytest.raises(ValueError, match="not a CPU list"):
        JobSource(trace, near_cpus="x")
    assert parse_cpus(JobSource(trace, gpu_indices=(0,))._near) == tuple(range(os.cpu_count() or 1))


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["diagnose", "--demo-job-cpus", "0"], "--demo-job-cpus needs --demo-job"),
        (["diagnose", "--demo-job", "x.json", "--demo-job-cpus", "a"], "not a CPU list: 'a'"),
        (["snapshot", "--demo", "idle", "--demo-job", "x.json"], "not allowed with argument --demo"),
        (["--demo-job", "x.json", "--demo-gpus", "2"], "--demo-gpus is for --demo"),
        (["--demo-job", "x.json", "--remote", "gpu01:9400"], "cannot be combined with --demo-job"),
    ],
)
def test_bad_options_are_one_line_usage_errors(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == EXIT_USAGE
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("command", ["diagnose", "snapshot"])
def test_a_missing_trace_exits_3_with_how_to_start_the_job(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "job.json"
    assert main([command, "--demo-job", str(missing)]) == EXIT_NO_DRIVER
    out = capsys.readouterr()
    assert out.err.strip() == f"gputui: no job trace at {missing}: start examples/lab/train.py --trace {missing} first"
    assert "nvml" not in out.out.lower()  # no driver was asked: no driver finding


def test_snapshot_of_a_followed_job_is_labelled_simulated(trace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["snapshot", "--demo-job", str(trace), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["system"]["source"] == "simulated"
    assert document["system"]["scenario"] == job_scenario(os.getpid())
    assert [p["pid"] for p in document["gpus"][0]["processes"]] == [os.getpid()]
    assert main(["snapshot", "--demo-job", str(trace)]) == 0
    text = capsys.readouterr().out
    assert f"SIMULATED GPU following the real job pid {os.getpid()}" in text


def test_two_traces_are_two_gpus_each_following_its_own_rank(
    tmp_path: Path, sleeper: subprocess.Popen[bytes], capsys: pytest.CaptureFixture[str]
) -> None:
    """The ranks of a torch.distributed job each write a trace: GPU i follows traces[i], its process the rank's."""
    ranks = [tmp_path / "job.rank0.json", tmp_path / "job.rank1.json"]
    write_trace(ranks[0], os.getpid())
    write_trace(ranks[1], sleeper.pid)
    clock = Clock(now=100.0)
    source = opened(ranks, clock)
    write_trace(ranks[0], os.getpid(), busy_s=0.75)
    write_trace(ranks[1], sleeper.pid, busy_s=0.25)
    clock.now = 101.0
    both = source.sample()
    sleeper.kill()
    sleeper.wait(timeout=10)
    clock.now = 102.0
    one = source.sample()
    source.close()
    assert [g.index for g in both.gpus] == [0, 1]
    assert [g.utilization_gpu_pct for g in both.gpus] == [75.0, 25.0]
    assert [[p.pid for p in g.processes] for g in both.gpus] == [[os.getpid()], [sleeper.pid]]
    assert {p.pid for p in both.host.processes} == {os.getpid(), sleeper.pid}
    system = both.system
    assert system.gpu_count == 2 and system.scenario == job_scenario([os.getpid(), sleeper.pid])
    assert system.scenario == f"GPUs follow real job pids {os.getpid()}, {sleeper.pid}" and is_job_scenario(
        system.scenario
    )
    assert job_banner(system).startswith(f"SIMULATED GPUs following the real job pids {os.getpid()}, {sleeper.pid},")
    assert system.topology is not None and system.topology.matrix == (("X", None), (None, "X"))
    # The rank that ended idles its own GPU; the other goes on.
    assert one.gpus[1].utilization_gpu_pct == 0.0 and one.gpus[1].processes == ()
    assert [p.pid for p in one.gpus[0].processes] == [os.getpid()]
    assert one.events == (f"the job (pid {sleeper.pid}) is no longer running: the simulated GPU is idle",)
    assert main(["snapshot", "--demo-job", str(ranks[0])]) == 0  # the command line still follows one trace
    assert f"SIMULATED GPU following the real job pid {os.getpid()}:" in capsys.readouterr().out


def test_a_gpu_of_several_is_selected_by_index(tmp_path: Path, clock: Clock) -> None:
    ranks = [tmp_path / "job.rank0.json", tmp_path / "job.rank1.json"]
    for path in ranks:
        write_trace(path, os.getpid(), busy_s=0.5)
    source = opened(ranks, clock, gpu_indices=(1,))
    snapshot = source.sample()
    source.close()
    assert [g.index for g in snapshot.gpus] == [1] and [info.index for info in snapshot.gpu_info] == [1]
    with pytest.raises(InvalidGpuSelection, match=r"GPU 2 does not exist \(the lab's machine has 2 GPUs, 0-1\)"):
        JobSource(ranks, gpu_indices=(2,))
    with pytest.raises(NoJobTrace, match=r"no job trace at .*rank2.json"):
        JobSource([*ranks, tmp_path / "job.rank2.json"]).open()


def test_a_rank_waiting_in_a_spinning_collective_reads_busy_at_few_sms_and_little_power(trace: Path) -> None:
    """Issue 40: `spinning_since` in the trace (train.py --spin under torchrun) is a collective's kernel waiting on
    a peer: the GPU reads ~100% busy, at ~3% SM activity and near-idle power; a short wait in one is not."""
    clock = Clock(now=100.0)
    source = opened(trace, clock)
    pid = os.getpid()
    record = {"format": "gputui-job-trace", "version": 1, "pid": pid, "gpu_busy_s": 0.0, "steps": 3}
    readings = []
    for now, since in ((101.0, 100.0), (102.0, 100.0), (103.0, 102.9), (104.0, None)):
        trace.write_text(json.dumps({**record, "step_started": None, "spinning_since": since}))
        clock.now = now
        readings.append(source.sample().gpus[0])
    source.close()
    spun, later, brief, after = readings
    for gpu in (spun, later):
        assert gpu.utilization_gpu_pct == 100.0
        assert gpu.sm_active_pct is not None and gpu.sm_active_pct <= 5.0
        assert gpu.power_w is not None and gpu.power_limit_w is not None and gpu.power_w < 0.3 * gpu.power_limit_w
    assert brief.utilization_gpu_pct == pytest.approx(10.0) and (brief.sm_active_pct or 0) > 5.0
    assert after.utilization_gpu_pct == 0.0


def test_a_bad_spinning_since_says_what_is_wrong(tmp_path: Path) -> None:
    path = tmp_path / "job.json"
    record = {"format": "gputui-job-trace", "version": 1, "pid": 5, "gpu_busy_s": 0.0, "steps": 0}
    path.write_text(json.dumps({**record, "step_started": None, "spinning_since": "soon"}))
    with pytest.raises(TraceError, match="bad spinning_since: 'soon'"):
        read_trace(path)
