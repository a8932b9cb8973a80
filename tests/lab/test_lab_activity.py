"""What the job's stacks show in the lab's cases, and the cause the verdict names by them (issue 31, item 8).

Each case follows a real PyTorch job with the stacks' sampling wired as the product's Sampler wires it
(tests/lab/jobs.py: attach before the engine, consider after): the first verdict that the GPU waits starts one
window of the main process's stacks, and its activity is on the job's process from then on. A case asserts the
activity's leading kind (and the frame it is named by) and the verdict's named cause; its variants run the same
job under `gputui run` (the stacks read from inside) and read its stacks as an unprivileged user (ptrace refused).
Cases a and c (num_workers=0, too few workers) assert theirs in test_lab_cases.py.

Case p (a rank stopped outside the collective) asserts the critical finding that names it, its alert and the
verdict `stopped`.

`python -m tests.lab.show g h i j p h@unprivileged g@run` prints the same outcomes in full.
"""

from __future__ import annotations

import os
import time

import pytest

from gputui.alerts.edges import Edges
from gputui.diagnostics.findings import Severity
from gputui.diagnostics.verdict import Verdict
from gputui.formatting import fmt_pct
from gputui.model import ActivityKind, JobActivity
from tests.lab.jobs import Lab, Outcome
from tests.lab.show import report

# The cause the verdict names `underused` by, for each kind of wait the stack shows (job_waits' `.cause` words),
# and the rule whose finding (its variant the kind) names the frame in its title. The issue asks for the function
# in `cpu`, the frame in `idle`, a checkpoint, and the other ranks (naming the rank) in `collective`.
STACK_CAUSES: dict[ActivityKind, str] = {
    "cpu": "the job's own Python on the CPU",
    "idle": "a blocked main thread",
    "checkpoint": "writing checkpoints",
    "collective": "other ranks, in a collective",
    "compile": "torch.compile compiling",
}
STACK_RULE = "job_waits"
# What the once-only notice says when ptrace is refused (what to do: among others, start the job under
# `gputui run -- ...`), and what the `underused` verdict says then.
PTRACE_NOTICE = "gputui run"
STACKS_UNREAD = "its stacks could not be read"


def _read(outcome: Outcome, rank: int = 0) -> JobActivity:
    """The activity last read from the stacks of the process of `rank`; it must have been read."""
    print("\n".join(report(outcome)))  # shown when an assertion fails, and with -s
    activity = outcome.activity(rank)
    assert activity is not None, "the job's stacks were never read"
    assert activity.error is None and activity.samples > 0, activity
    return activity


def _top(activity: JobActivity, kind: ActivityKind) -> tuple[str, str]:
    """The function and file name of the frame that holds the most of `kind`'s samples (py-spy names a file by a
    short path, the in-process sampler by its whole path)."""
    frames = [frame for frame in activity.top if frame.kind == kind]
    assert frames, f"no top frame of kind {kind}: {activity.top}"
    return frames[0].function, os.path.basename(frames[0].file)


def _verdict_of(outcome: Outcome, gpu: int = 0) -> Verdict:
    """The verdict at the end, or for a `mixed` one its group that holds `gpu`."""
    verdict = outcome.state.verdict
    assert verdict is not None
    if not verdict.groups:
        assert gpu in verdict.gpus, verdict
        return verdict
    [group] = [group for group in verdict.groups if gpu in group.gpus]
    return group


def _named_by_stack(outcome: Outcome, kind: ActivityKind, named: str, gpu: int = 0) -> None:
    """The verdict on `gpu` is `underused` with the stack's cause, and the finding that says so names `named`."""
    verdict = _verdict_of(outcome, gpu)
    assert verdict.cls == "underused", verdict.line
    assert STACK_CAUSES[kind] in verdict.summary, verdict.summary
    assert "look inside the job" not in verdict.summary  # measured, not handed back to the user
    [finding] = [f for f in outcome.state.active if f.rule == STACK_RULE and gpu in f.gpus]
    assert finding.variant == kind and named in finding.title, finding.title


def test_g_the_main_loops_own_python_is_cpu_in_its_function_and_names_underused(lab: Lab) -> None:
    outcome = lab("g")
    activity = _read(outcome)
    assert activity.leading == "cpu" and activity.shares.cpu >= 0.5  # 60 ms of every ~85
    assert _top(activity, "cpu") == ("compute_metrics", "train.py")
    _named_by_stack(outcome, "cpu", "compute_metrics (train.py:")


def test_h_a_main_loop_asleep_is_idle_in_the_blocking_frame_and_names_underused(lab: Lab) -> None:
    outcome = lab("h")
    activity = _read(outcome)
    assert activity.leading == "idle"
    assert _top(activity, "idle") == ("wait_for_lock", "train.py")  # 60 ms of every ~85; the GPU step 20
    _named_by_stack(outcome, "idle", "wait_for_lock (train.py:")


def test_i_a_checkpoint_every_few_steps_is_checkpoint(lab: Lab) -> None:
    outcome = lab("i")
    activity = _read(outcome)
    assert activity.leading == "checkpoint" and activity.shares.checkpoint >= 0.4
    _named_by_stack(outcome, "checkpoint", "save")  # torch.save


def test_n_a_torch_compile_that_recompiles_every_few_steps_is_compile_and_named(lab: Lab) -> None:
    outcome = lab("n")
    activity = _read(outcome)
    # ~1 s of recompiling for every ~0.3 s of steps: most of the main thread's time
    assert activity.leading == "compile" and activity.shares.compile >= 0.4
    assert _top(activity, "compile") == ("_compile", "convert_frame.py")  # Dynamo's, where Inductor runs inside
    _named_by_stack(outcome, "compile", "torch.compile")
    [finding] = [f for f in outcome.state.active if f.rule == STACK_RULE]
    assert "TORCH_LOGS=recompiles" in finding.advice


def test_o_a_checkpoint_that_does_not_lead_is_named_with_its_share(lab: Lab) -> None:
    """The issue's job: the GPU idle much of the time, a 64 MB checkpoint every 3 steps holding a minority of the
    main thread's samples (the GPU step, asleep, the most): the verdict names the checkpoint with its share, not
    "nothing on this machine explains the waiting"."""
    outcome = lab("o")
    activity = _read(outcome)
    assert activity.leading != "checkpoint" and 0.15 <= activity.shares.checkpoint < 0.5, activity.shares
    _named_by_stack(outcome, "checkpoint", "save")  # torch.save
    verdict = _verdict_of(outcome)
    share = f"{fmt_pct(100 * activity.shares.checkpoint)} of the main thread's samples"
    assert f"writing checkpoints ({share})" in verdict.summary, verdict.summary
    assert "nothing on this machine explains" not in verdict.summary


def test_j_the_rank_that_waits_for_a_slower_one_is_in_the_collective(lab: Lab) -> None:
    outcome = lab("j")
    waiting, slower = _read(outcome, 0), _read(outcome, 1)
    assert len(outcome.snapshots[-1].gpus) == 2  # a simulated GPU per rank
    assert (waiting.rank, slower.rank) == (0, 1)
    assert waiting.leading == "collective" and waiting.shares.collective >= 0.4
    assert slower.leading == "cpu" and _top(slower, "cpu") == ("compute_metrics", "train.py")
    _named_by_stack(outcome, "collective", "rank 0", gpu=0)
    _named_by_stack(outcome, "cpu", "compute_metrics (train.py:", gpu=1)


def test_k_another_users_processes_on_the_cpus_are_named_and_the_jobs_loading_is_not_blamed(lab: Lab) -> None:
    """The issue's neighbour case: two CPU-bound processes of user nobody take the cores a job's 2 workers need.
    gputui names them (whose, which), keeps the finding open while they run, puts them first among the verdict's
    causes, and does not blame the job's own data loading (more workers than CPUs, too few workers)."""
    outcome = lab("k")
    activity = _read(outcome)
    assert activity.leading == "data"  # the main thread waits for batches its starved workers cannot make
    contention = [f for f in outcome.seen if f.rule == "cpu_contention"]
    assert len(contention) == 1, contention  # opened once, not opened and closed as the window drifts
    [finding] = [f for f in outcome.state.active if f.rule == "cpu_contention"]
    assert finding.variant == "named" and "nobody" in finding.title, finding.title
    verdict = _verdict_of(outcome)
    assert verdict.cls == "input_bound", verdict.line
    assert "waiting for data (other processes on its CPUs" in verdict.summary, verdict.summary
    blamed = {(f.rule, f.variant) for f in outcome.seen} & {
        ("workers_oversubscribed", ""),
        ("starvation_cpu", "cpus"),
        ("starvation_cpu", "workers"),
    }
    assert not blamed, blamed


def _producer_named(outcome: Outcome, who: str) -> None:
    """Issue 40 item 1: the main thread's hand-off waits are `data`, waited on `who` running the dataset's code
    (Images.__getitem__ or the _augment inside it); the verdict is input-bound naming it, and starvation_cpu's
    finding is its `producer` variant (not num_workers=0's `main_process`)."""
    activity = _read(outcome)
    assert activity.leading == "data", activity.shares
    waited = activity.waited_on
    assert waited is not None, "no thread named as what the main thread waited for"
    assert waited.kind == "data" and waited.who.startswith(who), waited
    assert waited.running >= 0.5, waited  # how sure: the producer ran in most of its samples
    assert waited.frame is not None and waited.frame.function.startswith("Images."), waited.frame
    assert os.path.basename(waited.frame.file) == "train.py"
    verdict = _verdict_of(outcome)
    assert verdict.cls == "input_bound", verdict.line
    assert f"its producer {who}" in verdict.summary, verdict.summary
    assert f"in {waited.frame.function} (train.py:" in verdict.summary, verdict.summary
    [finding] = [f for f in outcome.state.active if f.rule == "starvation_cpu"]
    assert finding.variant == "producer" and who in finding.title, finding.title


def test_l_a_producer_thread_that_cannot_keep_up_is_what_the_loop_waits_for(lab: Lab) -> None:
    _producer_named(lab("l"), "thread producer (tid ")


def test_m_a_thread_pool_that_cannot_keep_up_is_named_as_a_pool(lab: Lab) -> None:
    _producer_named(lab("m"), "2 threads prefetch_*")


def test_ptrace_refused_says_so_once_and_the_verdict_is_still_given(lab: Lab) -> None:
    """Case h with its stacks read by another user than the job's (root's): the kernel refuses ptrace."""
    outcome = lab("h", "unprivileged")
    print("\n".join(report(outcome)))
    activity = outcome.activity()
    assert activity is not None and activity.samples == 0
    assert activity.error is not None and activity.error.startswith("ptrace_refused: ")
    notices = [event for event in outcome.events if PTRACE_NOTICE in event]
    assert len(notices) == 1, outcome.events  # once, not every tick
    assert not [event for event in outcome.events if "Traceback" in event]
    verdict = _verdict_of(outcome)
    assert verdict.cls == "underused", verdict.line  # no stack to name it by: as before, and it says why not
    assert "look inside the job" in verdict.summary and STACKS_UNREAD in verdict.summary, verdict.summary


# The leading kind of each case's rank 0, and of the cases under `gputui run`: the same job, read from inside.
UNDER_RUN: dict[str, ActivityKind] = {"c": "data", "g": "cpu", "j": "collective"}


@pytest.mark.parametrize("name", sorted(UNDER_RUN))
def test_the_same_jobs_under_gputui_run_read_the_same_from_inside(lab: Lab, name: str) -> None:
    outcome = lab(name, "run")
    assert outcome.command[1:5] == ("-m", "gputui", "run", "--")
    for rank in range(outcome.case.ranks):
        activity = _read(outcome, rank)
        assert activity.source == "in-process"
        assert activity.rank == (rank if outcome.case.ranks > 1 else None)
    assert _read(outcome).leading == UNDER_RUN[name]
    if name == "g":
        _named_by_stack(outcome, "cpu", "compute_metrics (train.py:")
    if name == "j":
        _named_by_stack(outcome, "collective", "rank 0", gpu=0)


def test_p_a_rank_stopped_outside_the_collective_is_a_stopped_job_naming_it_and_an_alert(lab: Lab) -> None:
    """Issue 40, item 5: torchrun, two ranks; after 20 steps rank 1 blocks for good in wait_forever while rank 0
    waits in all_reduce, its collective's kernel spinning (GPU 0 "busy" at ~3% SM activity). The critical finding
    names rank 1, its PID and its frame, and opens an alert; the verdict says the job stopped, not "use a bigger
    batch" nor "uneven load"."""
    outcome = lab("p")
    waiting, stuck = _read(outcome, 0), _read(outcome, 1)
    assert (waiting.rank, stuck.rank) == (0, 1)
    assert waiting.leading == "collective" and _top(waiting, "collective")[0] == "all_reduce"
    assert stuck.leading == "idle" and _top(stuck, "idle") == ("wait_forever", "train.py")
    assert stuck.unchanged_since is not None  # held across its windows
    [finding] = [f for f in outcome.state.active if f.rule == "job_stopped"]
    assert finding.severity == Severity.CRITICAL and finding.gpus == (0, 1)
    assert f"rank 1 (PID {outcome.pids[1]}) is blocked in wait_forever (train.py:" in finding.title
    assert f"py-spy dump --pid {outcome.pids[1]}" in finding.advice
    alerts = Edges(Severity.CRITICAL, min_interval_s=300.0).update(time.time(), outcome.state.active)
    assert [(state, f.rule) for state, f in alerts] == [("open", "job_stopped")]
    verdict = outcome.state.verdict
    assert verdict is not None and verdict.cls == "stopped", verdict.line
    assert "rank blocked outside the collective" in verdict.summary
    # "Busy, not efficient" and "uneven load" are not said of the stopped job. (Its first readings may still hold the
    # steps before rank 1 stopped, and the mean of those and of the spinning can read as either for a moment.)
    still = {f.rule for f in outcome.state.active}
    assert not still & {"low_sm_activity", "imbalance", "gpu_stalled"}, still
    stopped_at = next(f.started_at for f in outcome.seen if f.rule == "job_stopped")
    after = {f.rule for f in outcome.seen if f.started_at >= stopped_at}
    assert not after & {"low_sm_activity", "imbalance"}, after
