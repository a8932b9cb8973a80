"""Each lab case stages what it claims (the raw signs on the simulated GPU, the job's processes, the host and its
cgroup, as gputui read them) and is diagnosed as a user would want it: the verdict, the cause in the words users
know with its advice, and nothing else raised; where its GPU waits, the job's stacks show what its main thread
does (test_lab_activity.py has the cases made for them). `python -m tests.lab.show` prints the same outcomes in
full.

A case is judged only where the machine was quiet beside its job while it ran (tests/lab/neighbours.py); else
it skips with the figures. Bounds on the raw figures are still wide: the jobs run on real CPUs.
"""

from __future__ import annotations

from gputui.diagnostics.findings import Finding, Severity
from gputui.model import JobActivity
from gputui.sources.host.cgroup import read_cgroup
from tests.lab.jobs import Lab, Outcome, figures, last_cpus
from tests.lab.show import report


def _figures(outcome: Outcome) -> dict[str, float | None]:
    print("\n".join(report(outcome)))  # shown when a bound fails, and with -s
    return figures(outcome)


def _seen(outcome: Outcome) -> set[tuple[str, str, str]]:
    """(rule, variant, severity) of every finding open at some point during the run."""
    return {(f.rule, f.variant, f.severity.label) for f in outcome.seen}


def _open(outcome: Outcome, rule: str) -> Finding:
    [finding] = [f for f in outcome.state.active if f.rule == rule]
    return finding


def _verdict(outcome: Outcome) -> tuple[str, str]:
    verdict = outcome.state.verdict
    assert verdict is not None
    return verdict.cls, verdict.summary


def _causes(summary: str) -> list[str]:
    """The causes a verdict names, in its order: "... waiting for data (the CPU quota, more workers than CPUs)"."""
    assert summary.endswith(")"), summary
    return summary[summary.rindex("(") + 1 : -1].split(", ")


def _activity(outcome: Outcome) -> JobActivity:
    """What the job's stacks showed, as last read (the first verdict that its GPU waits starts a window)."""
    activity = outcome.activity()
    assert activity is not None and activity.samples > 0, activity
    return activity


def _at_least(value: float | None, low: float) -> bool:
    return value is not None and value >= low


def _between(value: float | None, low: float, high: float) -> bool:
    return value is not None and low <= value <= high


def test_a_no_workers_the_main_process_loads_and_the_gpu_waits(lab: Lab) -> None:
    fig = _figures(lab("a"))
    assert fig["children"] == 0 and fig["workers_cpu"] == 0.0
    assert _between(fig["job_busy"], 10, 40)  # 25 ms of GPU after 80 ms of loading: ~24%
    assert _at_least(fig["proc_cpu"], 50)  # the main process does the samples' work, between its GPU steps
    outcome = lab("a")
    cls, summary = _verdict(outcome)
    assert cls == "input_bound" and "data loading in the main process (num_workers=0)" in summary
    assert _seen(outcome) == {("starvation_cpu", "main_process", "warning")}
    assert "num_workers=1" in _open(outcome, "starvation_cpu").advice  # 2 CPUs: one for the main process
    activity = _activity(outcome)  # the stacks, read once the GPU waited: the dataset's code in the main thread
    assert activity.leading == "loading" and activity.shares.loading >= 0.5  # 80 ms of every ~105


def test_b_workers_that_keep_up_keep_the_gpu_busy(lab: Lab) -> None:
    fig = _figures(lab("b"))
    assert fig["children"] == 2
    assert _at_least(fig["job_busy"], 80)
    assert _between(fig["workers_cpu"], 5, 80)  # they keep up with time to spare
    outcome = lab("b")
    assert _verdict(outcome)[0] == "gpu_bound" and "nothing on this machine holds them back" in _verdict(outcome)[1]
    assert _seen(outcome) == set()


def test_c_one_worker_for_heavy_samples_is_busy_all_the_time(lab: Lab) -> None:
    fig = _figures(lab("c"))
    assert fig["children"] == 1
    assert _between(fig["job_busy"], 15, 50)  # 25 ms of GPU for each 80 ms batch: ~31%
    assert _at_least(fig["workers_cpu"], 60)  # one worker, about one core
    assert _between(fig["proc_cpu"], 0, 30)  # the main process mostly waits
    outcome = lab("c")
    cls, summary = _verdict(outcome)
    assert cls == "input_bound" and "too few data-loader workers" in summary
    assert _seen(outcome) == {("starvation_cpu", "workers", "warning")}
    assert "Raise DataLoader num_workers to about 2" in _open(outcome, "starvation_cpu").advice
    activity = _activity(outcome)  # the main thread waits for the worker's next batch
    assert activity.leading == "data" and activity.shares.data >= 0.5  # 55 ms of every ~80


def test_d_a_one_cpu_quota_throttles_four_workers(lab: Lab) -> None:
    outcome = lab("d")
    fig = _figures(outcome)
    container = outcome.snapshots[-1].system.container
    assert container is not None and container.cgroup_version == 1 and container.cpu_quota_cores == 1.0
    assert fig["children"] == 4
    assert _at_least(fig["throttled_periods"], 30)
    assert _between(fig["workers_cpu"], 50, 125)  # four workers held to about one core
    assert _between(fig["job_busy"], 10, 65)
    cls, summary = _verdict(outcome)
    assert cls == "input_bound" and "waiting for data (" in summary
    causes = _causes(summary)
    assert set(causes) == {"the CPU quota", "more workers than CPUs"}
    # Their order is the verdict's contract (README: the most severe first): the quota's critical throttling.
    if _open(outcome, "cpu_throttled").severity is Severity.CRITICAL:
        assert causes[0] == "the CPU quota"
    assert _seen(outcome) == {
        ("cpu_throttled", "", "critical"),
        ("workers_oversubscribed", "", "warning"),
        ("starvation_cpu", "quota", "warning"),
    }
    assert "More workers will not help: raise the quota" in _open(outcome, "starvation_cpu").advice


def test_d_the_cgroup_read_is_the_jobs(lab: Lab) -> None:
    """Case d runs its job in a new group with a 1-CPU quota; gputui itself runs outside it."""
    outcome = lab("d")
    container = outcome.snapshots[-1].system.container
    assert container is not None and container.cpu_quota_cores == 1.0
    assert read_cgroup().info.cpu_quota_cores != 1.0  # this process's own group has no such quota
    throttled = [s.host.container.cpu_throttled_pct for s in outcome.snapshots if s.host.container is not None]
    assert any(pct is not None and pct > 0 for pct in throttled)


def test_e_a_job_pinned_away_from_its_gpus_cpus(lab: Lab) -> None:
    outcome = lab("e")
    fig = _figures(outcome)
    topology = outcome.snapshots[-1].system.topology
    assert topology is not None and topology.cpu_affinity == ("0",)
    assert {p.cpus_allowed for p in outcome.procs()} == {(1,)}
    assert set(last_cpus(outcome)) == {1}
    assert fig["children"] == 2 and _at_least(fig["job_busy"], 70)
    cls, summary = _verdict(outcome)
    if topology.numa_nodes == 1:  # the GPU's near CPUs are some of one node's: there is no other socket to be on
        assert cls == "gpu_bound" and "nothing on this machine holds them back" in summary
        assert _seen(outcome) == set()
        return
    assert cls == "gpu_bound" and summary.endswith("not holding them back now: a rank on CPUs away from its GPU")
    assert _seen(outcome) == {("numa_mismatch", "", "warning")}
    assert _open(outcome, "numa_mismatch").title.endswith("is pinned to CPUs away from the GPU (NUMA node 0)")


def test_f_a_cold_page_cache_makes_the_loader_wait_for_the_disk(lab: Lab) -> None:
    fig = _figures(lab("f"))
    assert fig["children"] == 2
    assert _at_least(fig["disk_read_mb_s"], 50)
    assert _at_least(fig["iowait"], 2) or _at_least(fig["psi_io_some"], 2)
    assert _between(fig["job_busy"], 0, 80)
    outcome = lab("f")
    cls, summary = _verdict(outcome)
    assert cls == "input_bound" and summary.endswith("waiting for data (the disk)")
    assert _seen(outcome) == {("starvation_io", "", "warning")}
