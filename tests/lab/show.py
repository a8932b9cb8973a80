"""Run lab cases and print what gputui's diagnostics said about each: `python -m tests.lab.show [case ...]`.

Cases are named by letter or slug (`a`, `no-workers`, ...; all of them by default), a variant after `@` (`h@run`:
under `gputui run`; `h@unprivileged`: its stacks read by another user). For each: the job, the verdict at the
end, every finding that was open at some point (rule, severity, the variant of its words, title, evidence), what
its stacks showed (each rank's activity, the stacks' notices), and the figures the rules read, as means over the
run. It asserts nothing: it is what the rules
are tuned and the lab's assertions written from.
"""

from __future__ import annotations

import argparse
import sys
import time

from gputui.diagnostics.catalog import severity_label
from gputui.diagnostics.findings import format_evidence
from gputui.model import ACTIVITY_KINDS, JobActivity
from tests.lab.jobs import (
    BY_NAME,
    CASES,
    INTERVAL_S,
    RUN_S,
    VARIANTS,
    Case,
    CaseSkipped,
    Outcome,
    Variant,
    describe_command,
    figures,
    last_cpus,
    run_case,
)


def _pct(value: float | None, digits: int = 1) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}%"


def _num(value: float | None, digits: int = 1, unit: str = "") -> str:
    return "n/a" if value is None else f"{value:.{digits}f}{unit}"


def describe_activity(activity: JobActivity | None) -> list[str]:
    """A process's activity as last read from its stacks: the shares of its main thread, the top frames."""
    if activity is None:
        return ["never read"]
    head = f"{activity.source}, {activity.samples} samples over {activity.window_s:g} s"
    head += "" if activity.rank is None else f", rank {activity.rank}"
    if activity.error is not None:
        return [f"{head}: {activity.error}"]
    shares = ", ".join(f"{kind} {activity.shares.of(kind):.0%}" for kind in ACTIVITY_KINDS if activity.shares.of(kind))
    lines = [f"{head}; leading {activity.leading}: {shares}"]
    lines += [f"  {f.share:4.0%} {f.kind:<10} {f.function} ({f.file}:{f.line})" for f in activity.top]
    if activity.workers is not None:
        workers = ", ".join(f"{k} {activity.workers.of(k):.0%}" for k in ACTIVITY_KINDS if activity.workers.of(k))
        lines.append(f"  workers ({activity.worker_samples} samples): {workers}")
    waited = activity.waited_on
    if waited is not None:
        frame = "" if waited.frame is None else f" in {waited.frame.function} ({waited.frame.file}:{waited.frame.line})"
        lines.append(
            f"  waited on ({waited.kind} {waited.share:.0%}): {waited.who}{frame}, running {waited.running:.0%}"
        )
    return lines


def report(outcome: Outcome) -> list[str]:
    """The lines printed for one case."""
    state = outcome.state
    first = outcome.snapshots[0].timestamp
    lines = [
        f"job: {describe_command(outcome)}",
        f"     pid {outcome.pid}; first record {outcome.start_s:.1f} s after start; sampled {len(outcome.snapshots)}"
        f" times at {INTERVAL_S:g} s; the case took {outcome.run_s:.1f} s",
    ]
    verdict = state.verdict
    if verdict is None:
        lines.append("verdict: none")
    else:
        lines.append(f"verdict: [{verdict.cls}] {verdict.line}")
        lines += [f"         group [{group.cls}] GPUs {list(group.gpus)}: {group.line}" for group in verdict.groups]
        if verdict.evidence:
            lines.append("         " + " | ".join(format_evidence(ev) for ev in verdict.evidence))
    lines.append("         over time: " + ", ".join(f"{cls} from {at:.1f} s" for at, cls in outcome.verdicts))
    open_now = {(f.rule, f.gpus, f.started_at) for f in state.active}
    lines.append(f"findings seen: {len(outcome.seen)}")
    for f in outcome.seen:
        key = (f.rule, f.gpus, f.started_at)
        end = "open at the end" if key in open_now else f"closed at {(f.ended_at or first) - first:.1f} s"
        lines.append(
            f"  {severity_label(f.severity, 'en')} {f.rule} [variant: {f.variant or '-'}] GPUs {list(f.gpus)}"
            f" from {f.started_at - first:.1f} s, {end}"
        )
        lines.append(f"       title: {f.title}")
        if f.evidence:
            lines.append("       evidence: " + " | ".join(format_evidence(ev) for ev in f.evidence))
    for rank, pid in enumerate(outcome.pids):
        who = f"pid {pid}" + (f" (rank {rank})" if len(outcome.pids) > 1 else "")
        head, *rest = describe_activity(outcome.activity(rank))
        lines += [f"activity of {who}: {head}", *(f"     {line}" for line in rest)]
    lines += [f"event: {event}" for event in outcome.events]
    fig = figures(outcome)
    procs = outcome.procs()
    allowed = procs[-1].cpus_allowed if procs else None
    container = outcome.snapshots[-1].system.container
    topology = outcome.snapshots[-1].system.topology
    near = topology.cpu_affinity[0] if topology is not None else None
    lines += [
        "figures (means over the run):",
        f"  GPU 0: util {_pct(fig['gpu_util'])} (the job reports {_pct(fig['job_busy'])} of the time in its GPU"
        f" step); near CPUs {near}",
        f"  job process: CPU {_pct(fig['proc_cpu'])}, threads {_num(fig['threads'])}, children"
        f" {_num(fig['children'])}, workers_cpu {_pct(fig['workers_cpu'])}, run-queue wait"
        f" {_pct(fig['run_queue_wait'])}, cpus_allowed {allowed}, last_cpu {dict(sorted(last_cpus(outcome).items()))}",
        f"  host: CPU {_pct(fig['host_cpu'])} of {outcome.snapshots[-1].system.cpu_count} CPUs, iowait"
        f" {_pct(fig['iowait'])}, disk read {_num(fig['disk_read_mb_s'], 1, ' MB/s')}, disk busy"
        f" {_pct(fig['disk_busy'])}",
        f"  PSI: cpu some {_pct(fig['psi_cpu_some'])}, io some {_pct(fig['psi_io_some'])}, io full"
        f" {_pct(fig['psi_io_full'])}, memory some {_pct(fig['psi_memory_some'])}",
        f"  container: v{container.cgroup_version if container else None}, CPU quota"
        f" {container.cpu_quota_cores if container else None}, cpuset {container.cpuset_cpus if container else None};"
        f" used {_pct(fig['quota_used'])} of the quota, throttled in {_pct(fig['throttled_periods'])} of periods"
        f" ({_num(fig['throttled_s'], 3, ' s')} a sample)",
    ]
    near_job = outcome.neighbours
    lines += [
        f"beside the job: {near_job.describe_cpu()}; disk traffic of others {_num(near_job.others_disk_mb_s, 1)}"
        f" MB/s; the job used {near_job.job_cores:.2f} CPUs, the lab's sampling {100 * near_job.sampler_cores:.1f}%"
        f" of one (the stack sampler {100 * near_job.stacks_cores:.1f}%)",
    ]
    busy = outcome.crowded()
    if busy is not None:
        lines.append(f"NOT JUDGED (the tests skip it): {busy}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.lab.show", description=__doc__)
    parser.add_argument(
        "cases", nargs="*", metavar="case", help="a-j or their slugs, a variant after @: h@run (default: all)"
    )
    parser.add_argument(
        "--seconds", type=float, default=None, help=f"how long to follow each job (default: the case's, or {RUN_S:g})"
    )
    args = parser.parse_args(argv)
    chosen: list[tuple[Case, Variant]] = []
    for given in args.cases:
        name, _, wanted = given.partition("@")
        variant = next((v for v in VARIANTS if v == wanted), None)
        if name not in BY_NAME or variant is None:
            choices = (
                f"{', '.join(c.name for c in CASES)} or their slugs, then @{' or @'.join(v for v in VARIANTS if v)}"
            )
            parser.error(f"unknown case {given!r} (choose from {choices})")
        chosen.append((BY_NAME[name], variant))
    began = time.monotonic()
    for case, variant in chosen or [(case, "") for case in CASES]:
        print(f"=== {case.name}{'@' + variant if variant else ''} ({case.slug}): {case.title}", flush=True)
        try:
            outcome = run_case(case, args.seconds, variant=variant)
        except CaseSkipped as skipped:
            print(f"SKIPPED: {skipped}\n", flush=True)
            continue
        print("\n".join(report(outcome)) + "\n", flush=True)
    print(f"all cases: {time.monotonic() - began:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
