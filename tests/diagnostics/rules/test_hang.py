"""A job that has stopped (issue 40, item 5): `job_stopped` names the rank blocked outside the collective from the
ranks' stacks, critical, with an alert; the verdict says "stopped", not "use a bigger batch" nor "uneven load";
without stacks, `gpu_stalled` warns once a GPU has spun for `stopped_after_s`. Snapshots are built by hand."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import pytest

from gputui.alerts.edges import Edges
from gputui.diagnostics.account import Price
from gputui.diagnostics.engine import DiagnosticsEngine, DiagnosticsState
from gputui.diagnostics.findings import Severity
from gputui.diagnostics.rules.base import Window
from gputui.diagnostics.rules.hang import job_stopped, stalled
from gputui.diagnostics.thresholds import Thresholds
from gputui.model import ActivityFrame, ActivityKind, ActivityShares, DistRank, JobActivity, ProcSample, Snapshot
from tests.diagnostics.builders import T0, snap
from tests.snapshots import gpu, host, proc

TH = Thresholds()
JOB = "run 7f3a at 127.0.0.1:29500"
HELD_S = TH.stopped_after_s + 60  # held longer than it takes


def held(kind: ActivityKind, function: str, line: int, since: float | None, taken_at: float) -> JobActivity:
    """A 4 s window of a main thread 100% in one frame, held there since `since` (None: not held before)."""
    return JobActivity(
        source="py-spy",
        taken_at=taken_at,
        window_s=4.0,
        samples=80,
        shares=ActivityShares(**{kind: 1.0}),
        top=(
            ActivityFrame(kind, function, "/job/train.py" if kind == "idle" else "/t/distributed_c10d.py", line, 1.0),
        ),
        unchanged_since=since,
    )


def rank(pid: int, number: int, activity: JobActivity | None, job: str = JOB) -> ProcSample:
    return proc(pid, dist=DistRank(rank=number, local_rank=number, world_size=2, job=job), activity=activity)


def spinning(index: int, pid: int, **changes: object) -> object:
    """A GPU whose collective's kernel spins: 100% busy, 3% of its SMs, near-idle power."""
    return gpu(index, (pid,), utilization_gpu_pct=99.5, sm_active_pct=3.0, tensor_active_pct=0.0, power_w=110.0)


def idle(index: int, pid: int) -> object:
    return gpu(index, (pid,), utilization_gpu_pct=0.0, sm_active_pct=0.0, tensor_active_pct=0.0, power_w=70.0)


def hung(
    t: float,
    *,
    stuck: tuple[ActivityKind, str] = ("idle", "wait_forever"),
    since: float | None = None,
    gpus: Sequence[object] | None = None,
) -> Snapshot:
    """Two ranks of one job at T0 + t: rank 0 in all_reduce on a spinning GPU 0, rank 1 held in `stuck` on an
    idle GPU 1, both since `since` (T0 + t - HELD_S unless given)."""
    now = T0 + t
    start = now - HELD_S if since is None else since
    procs = (
        rank(100, 0, held("collective", "all_reduce", 2050, start, now)),
        rank(101, 1, held(stuck[0], stuck[1], 57, start, now)),
    )
    samples = gpus if gpus is not None else (spinning(0, 100), idle(1, 101))
    return snap(t, list(samples), host_sample=host(procs))  # type: ignore[arg-type]


def run(snapshots: Sequence[Snapshot], engine: DiagnosticsEngine | None = None) -> DiagnosticsState:
    engine = engine if engine is not None else DiagnosticsEngine()
    state = DiagnosticsState()
    for snapshot in snapshots:
        state = engine.update(snapshot)
    return state


def window(snapshots: Sequence[Snapshot]) -> Window:
    return Window(snapshots, TH.window_s)


def test_a_stopped_job_names_the_rank_outside_the_collective_its_pid_and_frame() -> None:
    state = run([hung(t) for t in range(10)])
    (finding,) = [f for f in state.active if f.rule == "job_stopped"]
    assert finding.severity == Severity.CRITICAL
    assert finding.gpus == (0, 1)
    assert finding.pids[0] == 101  # the stuck rank first
    assert "rank 1 (PID 101) is blocked in wait_forever (train.py:57)" in finding.title
    assert "py-spy dump --pid 101" in finding.advice
    assert "TORCH_NCCL_TRACE_BUFFER_SIZE" in finding.advice and "TORCH_NCCL_DUMP_ON_TIMEOUT" in finding.advice
    assert "last checkpoint" in finding.advice
    assert "2 GPU-hour(s) lost every hour" in finding.advice
    assert "for 5m" in finding.advice  # 300 s held, read at the last tick


def test_the_verdict_of_a_stopped_job_is_stopped_not_a_bigger_batch_nor_uneven_load() -> None:
    state = run([hung(t) for t in range(10)])
    assert state.verdict is not None
    assert state.verdict.cls == "stopped"
    assert "a rank blocked outside the collective" in state.verdict.summary
    rules = {f.rule for f in state.active}
    assert not rules & {"low_sm_activity", "imbalance", "gpu_stalled"}, rules


def test_in_chinese_too() -> None:
    state = run([hung(t) for t in range(10)], DiagnosticsEngine(lang="zh"))
    (finding,) = [f for f in state.active if f.rule == "job_stopped"]
    assert "任务已停止" in finding.title and "py-spy dump --pid 101" in finding.advice
    assert state.verdict is not None and state.verdict.label == "已停止"


def test_a_critical_finding_so_it_opens_an_alert() -> None:
    edges = Edges(Severity.CRITICAL, min_interval_s=300.0)
    state = run([hung(t) for t in range(10)])
    alerts = edges.update(T0 + 9, state.active)
    assert [(what, f.rule) for what, f in alerts] == [("open", "job_stopped")]


def test_held_for_less_than_stopped_after_s_is_not_stopped_yet() -> None:
    snaps = [hung(t, since=T0 - TH.stopped_after_s + 30) for t in range(10)]
    assert list(job_stopped(window(snaps), TH)) == []


def test_a_rank_whose_stacks_were_not_read_leaves_progress_possible() -> None:
    snaps = [hung(t) for t in range(10)]
    last = snaps[-1]
    procs = (last.host.processes[0], replace(last.host.processes[1], activity=None))
    snaps[-1] = replace(last, host=replace(last.host, processes=procs))
    assert list(job_stopped(window(snaps), TH)) == []


def test_a_gpu_of_the_job_at_work_is_no_stopped_job() -> None:
    working = gpu(0, (100,), utilization_gpu_pct=98.0, sm_active_pct=70.0, power_w=560.0)
    snaps = [hung(t, gpus=(working, idle(1, 101))) for t in range(10)]
    assert list(job_stopped(window(snaps), TH)) == []


def test_a_rank_writing_a_checkpoint_works_it_has_not_stopped() -> None:
    snaps = [hung(t, stuck=("checkpoint", "save")) for t in range(10)]
    assert list(job_stopped(window(snaps), TH)) == []


def test_every_rank_here_in_the_collective_says_the_stuck_one_is_elsewhere() -> None:
    snaps = [hung(t, stuck=("collective", "all_reduce")) for t in range(10)]
    (hit,) = job_stopped(window(snaps), TH)
    assert hit.variant == "elsewhere"
    assert hit.pids == (100, 101)


def test_ranks_of_two_jobs_are_two_jobs() -> None:
    now = T0 + 9
    start = now - HELD_S
    procs = (
        rank(100, 0, held("collective", "all_reduce", 2050, start, now)),
        rank(101, 0, held("idle", "wait_forever", 57, start, now), job="at 127.0.0.1:29600"),
    )
    snaps = [snap(t, [spinning(0, 100), idle(1, 101)], host_sample=host(procs)) for t in range(10)]  # type: ignore[list-item]
    hits = list(job_stopped(window(snaps), TH))
    assert sorted(h.variant for h in hits) == ["elsewhere", "rank"]
    assert sorted(h.gpus for h in hits) == [(0,), (1,)]


@pytest.mark.parametrize(
    ("util", "sm", "power", "expected"),
    [
        (99.5, 3.0, 110.0, True),
        (99.5, None, 110.0, True),  # no GPM: power alone
        (99.5, 3.0, None, True),  # no power reading: SM activity alone
        (99.5, None, None, False),  # neither: cannot tell
        (99.5, 3.0, 500.0, False),  # drawing power: it works
        (99.5, 40.0, 110.0, False),
        (30.0, 3.0, 110.0, False),  # not busy
    ],
)
def test_what_a_spinning_gpu_reads(util: float, sm: float | None, power: float | None, expected: bool) -> None:
    assert stalled(util, sm, power, 700.0, TH) is expected


def no_stacks(t: float) -> Snapshot:
    """A GPU spinning, its process's stacks refused (another user's, no ptrace rights)."""
    refused = JobActivity(
        source="py-spy", taken_at=T0 + t, window_s=0.0, samples=0, error="ptrace_refused: ptrace is refused"
    )
    procs = (proc(100, activity=refused), proc(101))
    return snap(t, [spinning(0, 100), gpu(1, (101,))], host_sample=host(procs))  # type: ignore[list-item]


def test_without_stacks_a_spinning_gpu_warns_once_it_held_stopped_after_s() -> None:
    engine = DiagnosticsEngine()
    step = 5
    before = run([no_stacks(t) for t in range(0, int(TH.stopped_after_s) - step, step)], engine)
    assert "gpu_stalled" not in {f.rule for f in before.active}
    assert any(p.rule == "gpu_stalled" for p in before.pending)  # watched, said as such
    # until then the spinning GPU is busy, not efficient, and told why: never "GPU-bound", never "a bigger batch"
    [spinning] = [f for f in before.active if f.rule == "low_sm_activity"]
    assert spinning.variant == "spinning" and "bigger batch" not in spinning.advice
    assert before.verdict is not None and [g.cls for g in before.verdict.groups] == ["inefficient", "gpu_bound"]
    after = run(
        [no_stacks(t) for t in range(int(TH.stopped_after_s) - step, int(TH.stopped_after_s) + 20, step)], engine
    )
    (finding,) = [f for f in after.active if f.rule == "gpu_stalled"]
    assert finding.severity == Severity.WARNING and finding.gpus == (0,)
    assert "likely a job that has stopped" in finding.title
    assert "py-spy dump --pid 100" in finding.advice and "gputui run" in finding.advice
    assert {e.key: e.value for e in finding.evidence}["stacks_unread"] == "ptrace is refused"
    assert after.verdict is not None
    assert [g.cls for g in after.verdict.groups] == ["stopped", "gpu_bound"]


def test_with_a_price_it_says_what_the_stopped_job_costs_an_hour() -> None:
    state = run([hung(t) for t in range(10)], DiagnosticsEngine(price=Price(2.40, "USD")))
    (finding,) = [f for f in state.active if f.rule == "job_stopped"]
    assert "2 GPU-hour(s) lost every hour (4.80 USD)." in finding.advice
