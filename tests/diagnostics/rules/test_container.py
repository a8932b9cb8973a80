"""Rules inside a container: judged against the cgroup's quota and limits, not the host's; and a GPU whose
process lives in another PID namespace is still reported."""

from __future__ import annotations

from dataclasses import replace

from gputui.diagnostics.findings import Severity
from gputui.diagnostics.rules.container import cpu_throttled, memory_limit, oom_kill, shm_small, workers_oversubscribed
from gputui.diagnostics.rules.starvation import starvation_cpu, starvation_io
from gputui.model import ContainerInfo, ContainerSample, GpuProcess, ProcSample, PsiSample
from tests.diagnostics.builders import SYSTEM, series
from tests.diagnostics.rules.test_rules import TH, evidence, run, starved, steady
from tests.snapshots import GIB, gpu, host, proc

MIB = 1 << 20
# 8 CPUs of quota on a 128-core host, Docker's 64 MiB /dev/shm, a 64 GiB memory limit.
QUOTA = ContainerInfo("docker", "/.dockerenv", 2, 8.0, None, 64 * GIB, 64 * MIB)
IN_CONTAINER = replace(SYSTEM, cpu_count=128, container=QUOTA)
HOST_IDLE = (6.0,) * 128  # the host's view: 8 of 128 cores busy reads as 6%


def throttled(pct: float, used: float = 99.0) -> ContainerSample:
    return ContainerSample(cpu_pct_of_quota=used, cpu_throttled_pct=pct, memory_used_bytes=20 * GIB)


def test_a_throttled_quota_is_a_warning_with_its_numbers() -> None:
    snaps = steady(system=IN_CONTAINER, host_sample=host(container=throttled(40.0), psi=PsiSample(cpu_some_pct=35.0)))
    [hit] = run(cpu_throttled, snaps)
    assert hit.severity is None and hit.value == 40.0
    assert evidence(hit) == {"cpu_quota": 8.0, "quota_used": 99.0, "throttled_periods": 40.0, "psi_cpu": 35.0}
    assert hit.params["workers"] == "7"  # num_workers <= quota - 1


def test_throttled_half_the_time_is_critical_and_rarely_is_nothing() -> None:
    assert run(cpu_throttled, steady(system=IN_CONTAINER, host_sample=host(container=throttled(55.0))))[0].severity == (
        Severity.CRITICAL
    )
    assert run(cpu_throttled, steady(system=IN_CONTAINER, host_sample=host(container=throttled(10.0)))) == []
    assert run(cpu_throttled, steady(system=IN_CONTAINER, host_sample=host(container=None))) == []


def job(
    pid: int = 100, *, children: int, cpu: float, waited: float, workers_cpu: float, workers_waited: float
) -> ProcSample:
    """A job's main process with `children` workers: what each side used and waited on a run queue (100 = a core)."""
    return proc(
        pid,
        children=children,
        cpu_pct=cpu,
        run_queue_wait_pct=waited,
        workers_cpu_pct=workers_cpu,
        workers_run_queue_wait_pct=workers_waited,
    )


def queued(pid: int) -> ProcSample:
    """16 workers a job, sized by os.cpu_count(): each gets a fifth of a core and waits a third of the time for more."""
    return job(pid, children=16, cpu=60.0, waited=30.0, workers_cpu=340.0, workers_waited=480.0)


def test_workers_beyond_the_quota_are_oversubscribed() -> None:
    procs = [queued(100), queued(101)]
    gpus = [gpu(0, pids=(100,)), gpu(1, pids=(101,))]
    full = host(procs, container=throttled(40.0))
    [hit] = run(workers_oversubscribed, steady(system=IN_CONTAINER, gpus=gpus, host_sample=full))
    assert hit.gpus == (0, 1) and hit.pids == (100, 101) and hit.value == 18.2
    assert evidence(hit) == {
        "cpus_wanted": 18.2,
        "cpus_used": 8.0,
        "cpus_waited": 10.2,
        "workers": 32,
        "jobs": 2,
        "cpu_limit": 8.0,
        "host_cpus": 128,
    }
    assert hit.params == {"wanted": "18.2", "used": "8", "waited": "10.2", "limit": "8", "workers": "3"}


def test_workers_within_the_limit_or_without_a_limit_are_fine() -> None:
    fits = host([job(children=7, cpu=60.0, waited=5.0, workers_cpu=500.0, workers_waited=40.0)])
    assert run(workers_oversubscribed, steady(system=IN_CONTAINER, host_sample=fits)) == []
    many = host([job(children=64, cpu=60.0, waited=30.0, workers_cpu=800.0, workers_waited=3000.0)])
    assert run(workers_oversubscribed, steady(host_sample=many)) == []  # no container: the host's cores
    cpuset = replace(SYSTEM, container=ContainerInfo(None, None, 1, None, (0, 1, 2, 3)))
    queued = host(
        [job(children=8, cpu=40.0, waited=40.0, workers_cpu=350.0, workers_waited=300.0)],
        cpu_pct_per_core=(98.0,) * 4 + (5.0,) * 4,
    )
    assert len(run(workers_oversubscribed, steady(system=cpuset, host_sample=queued))) == 1


TWO_CPUS = replace(SYSTEM, container=ContainerInfo(None, None, 1, None, (0, 1)))


def test_workers_as_many_as_the_cpus_beside_a_main_process_that_waits_are_not_oversubscribed() -> None:
    """num_workers = 2 on 2 CPUs, both workers busy, the main process mostly waiting for their batches: three
    processes on two full CPUs, but what they want (used + run-queue wait) is about two CPUs."""
    busy = job(children=2, cpu=10.0, waited=5.0, workers_cpu=175.0, workers_waited=20.0)
    full = host([busy], cpu_pct_per_core=(97.0,) * 2)
    assert run(workers_oversubscribed, steady(system=TWO_CPUS, host_sample=full)) == []
    calm = host(
        [job(children=2, cpu=5.0, waited=1.0, workers_cpu=25.0, workers_waited=1.0)], cpu_pct_per_core=(15.0,) * 2
    )
    assert run(workers_oversubscribed, steady(system=TWO_CPUS, host_sample=calm)) == []


def test_workers_that_queue_for_the_cpus_are_oversubscribed_and_unread_waits_say_nothing() -> None:
    """Four workers on two CPUs, each runnable twice as long as it runs: 4.3 CPUs wanted of 2."""
    queued = job(children=4, cpu=10.0, waited=40.0, workers_cpu=180.0, workers_waited=200.0)
    full = host([queued], cpu_pct_per_core=(97.0,) * 2)
    [hit] = run(workers_oversubscribed, steady(system=TWO_CPUS, host_sample=full))
    assert hit.params["wanted"] == "4.3" and hit.params["limit"] == "2"
    unread = host([replace(queued, workers_run_queue_wait_pct=None)], cpu_pct_per_core=(97.0,) * 2)
    assert run(workers_oversubscribed, steady(system=TWO_CPUS, host_sample=unread)) == []


def test_small_or_full_shm_with_workers() -> None:
    [small] = run(shm_small, steady(system=IN_CONTAINER))
    assert small.variant == "" and evidence(small)["shm_size"] == 64
    roomy = replace(SYSTEM, container=ContainerInfo(None, None, 2, shm_bytes=16 * GIB))
    [full] = run(shm_small, steady(system=roomy, host_sample=host(shm_used_bytes=15 * GIB)))
    assert full.variant == "full" and evidence(full)["shm_used"] == 93.8
    assert run(shm_small, steady(system=roomy, host_sample=host(shm_used_bytes=GIB))) == []
    no_workers = host([proc(children=0)])
    assert run(shm_small, steady(system=IN_CONTAINER, host_sample=no_workers)) == []


def test_an_oom_kill_in_the_window_is_critical_from_the_cgroup_first() -> None:
    def tick(i: int) -> dict[str, object]:
        kills = 2 if i < 5 else 3
        return {"host_sample": host(container=ContainerSample(oom_kills=kills, memory_limit_bytes=64 * GIB))}

    [hit] = run(oom_kill, series(10, tick))
    assert hit.variant == "cgroup" and evidence(hit)["oom_kills"] == 1 and evidence(hit)["memory_limit"] == 64.0
    assert run(oom_kill, steady(host_sample=host(container=ContainerSample(oom_kills=3)))) == []


def test_without_a_cgroup_counter_the_hosts_oom_kills_count() -> None:
    [hit] = run(oom_kill, series(10, lambda i: {"host_sample": host(oom_kills=7 + i // 5)}))
    assert hit.variant == "host" and hit.value == 1.0


def test_memory_near_the_cgroup_limit() -> None:
    near = ContainerSample(memory_used_bytes=60 * GIB, memory_limit_bytes=64 * GIB)
    [hit] = run(memory_limit, steady(host_sample=host(container=near)))
    assert hit.value == 93.8 and hit.params["limit"] == "64.0 GiB"
    unlimited = ContainerSample(memory_used_bytes=60 * GIB, memory_limit_bytes=None)
    assert run(memory_limit, steady(host_sample=host(container=unlimited))) == []


def test_starvation_cpu_is_judged_against_the_quota_not_the_host() -> None:
    """The host reads 6% busy; the job's 8 CPUs are all in use and throttled: that starves the GPU."""
    busy_quota = host([proc(cpu_pct=60.0)], cpu_pct_per_core=HOST_IDLE, container=throttled(40.0))
    [hit] = run(starvation_cpu, steady(system=IN_CONTAINER, gpus=[starved()], host_sample=busy_quota))
    assert evidence(hit)["host_cpu"] == 6.0 and evidence(hit)["throttled_periods"] == 40.0
    assert hit.variant == "quota"  # "raise num_workers" would make it worse: the advice says so
    idle_quota = host([proc(cpu_pct=60.0)], cpu_pct_per_core=HOST_IDLE, container=throttled(0.0, used=30.0))
    assert run(starvation_cpu, steady(system=IN_CONTAINER, gpus=[starved()], host_sample=idle_quota)) == []


def test_cpu_pressure_counts_as_saturation() -> None:
    """Half the cores read busy, but runnable tasks wait for a CPU 30% of the time: the job's own workers fill
    what they may use."""
    job = proc(cpu_pct=60.0, workers_cpu_pct=350.0)
    waiting = host([job], cpu_pct_per_core=(50.0,) * 8, psi=PsiSample(cpu_some_pct=30.0))
    [hit] = run(starvation_cpu, steady(gpus=[starved()], host_sample=waiting))
    assert hit.variant == "cpus"
    calm = host([replace(job, cpu_pct=20.0)], cpu_pct_per_core=(50.0,) * 8, psi=PsiSample(cpu_some_pct=3.0))
    assert run(starvation_cpu, steady(gpus=[starved()], host_sample=calm)) == []


def test_a_main_process_that_waits_for_a_cpu_is_cpu_bound() -> None:
    """60% on a CPU and 35% waiting on a run queue: it would use a whole core if it got one."""
    contended = host([proc(cpu_pct=60.0, run_queue_wait_pct=35.0)])
    [hit] = run(starvation_cpu, steady(gpus=[starved()], host_sample=contended))
    assert evidence(hit)["run_queue_wait"] == 35.0 and hit.variant == ""
    not_waiting = host([proc(cpu_pct=60.0, run_queue_wait_pct=2.0)])
    assert run(starvation_cpu, steady(gpus=[starved()], host_sample=not_waiting)) == []


def test_a_gpu_whose_process_is_in_another_pid_namespace_is_still_reported() -> None:
    """The false "healthy": NVML's host PID is no process here, so nothing on the host side can be joined."""
    hidden = starved(processes=(GpuProcess(81234, 30 * GIB, seen="hidden"),))
    snaps = steady(system=IN_CONTAINER, gpus=[hidden], host_sample=host([proc(999)], container=throttled(5.0, 40.0)))
    [hit] = run(starvation_cpu, snaps)
    assert hit.variant == "hidden" and hit.pids == (81234,)
    assert evidence(hit)["hidden_pid"] == "81234" and evidence(hit)["cpu_quota"] == 8.0


def test_outside_a_container_the_evidence_has_no_empty_quota_lines() -> None:
    [hit] = run(starvation_cpu, steady(gpus=[starved()], host_sample=host([proc(cpu_pct=99.0)])))
    assert set(evidence(hit)) == {
        "gpu_util",
        "process",
        "process_cpu",
        "workers",
        "host_cpu",
        "cpus_usable",
        "cpus_spare",
    }


def test_io_pressure_full_counts_as_an_io_stall() -> None:
    stalled = host(psi=PsiSample(io_full_pct=25.0))
    [hit] = run(starvation_io, steady(gpus=[starved()], host_sample=stalled))
    assert evidence(hit)["psi_io_full"] == 25.0
    assert TH.psi_io_full_pct == 10.0
    assert run(starvation_io, steady(gpus=[starved()], host_sample=host(psi=PsiSample(io_full_pct=2.0)))) == []
