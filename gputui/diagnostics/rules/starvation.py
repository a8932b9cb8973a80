"""A GPU that waits for its input: on the CPU, the disk or the network; and CPUs taken by other work.

All four start from the same sign, a process holds the GPU and utilization averages below ~50% (the DCGM User
Guide's profiling metrics read SM activity below 0.5 as "likely indicates ineffective GPU usage"), and differ
in what the host shows at the same time.
"""

from __future__ import annotations

from collections.abc import Iterator

from gputui.diagnostics.findings import Evidence, Severity
from gputui.diagnostics.locale import Texts
from gputui.diagnostics.rules.base import Hit, Rule, Window, ev, rounded
from gputui.diagnostics.rules.cpus import Contention, Cpus, contention, job_count, job_cpus, workers_that_fit
from gputui.diagnostics.rules.stacks import Stack, main_process, read_stack, shares_text, stack_evidence, where
from gputui.diagnostics.thresholds import Thresholds
from gputui.formatting import fmt_num, fmt_pct
from gputui.model import GpuSample, ProcSample

# The busiest other processes a title names (the evidence names every one the host source read), and how much of
# a command line the evidence keeps.
_NAMED_IN_TITLE = 2
_COMMAND_CHARS = 48


def starving(w: Window, th: Thresholds) -> list[tuple[GpuSample, float, tuple[int, ...]]]:
    """GPUs held by a process whose utilization averages low over the window, with that mean, and that are not
    busy now (a job that just started: its window still remembers the idle GPU). All four rules (and job_waits)
    start from them, so they are found once per window."""

    def find() -> list[tuple[GpuSample, float, tuple[int, ...]]]:
        found = []
        for g in w.gpus():
            pids = w.pids(g)
            if not pids:
                continue
            util = w.mean(g.index, "utilization_gpu_pct")
            if util is not None and util < th.starved_util_pct and not w.busy_now(g.index, th):
                found.append((g, util, pids))
        return found

    return w.shared("starving", find)


def _util(util: float) -> Evidence:
    return ev("gpu_util", round(util, 1), "%", "mean")


def _starved(g: GpuSample, util: float, pids: tuple[int, ...], *evidence: Evidence) -> Hit:
    """A GPU that waits on one resource: its low mean utilization, then what that resource shows meanwhile."""
    return Hit(
        gpus=(g.index,), pids=pids, value=round(util, 1), params={"gpu": g.index}, evidence=(_util(util), *evidence)
    )


def _cause(w: Window, th: Thresholds, proc: ProcSample | None, util: float, cpus: Cpus) -> str | None:
    """Why a GPU held by `proc` waits on the CPU, as a `starvation_cpu` variant; None when the CPU side does not
    explain it. A process "wants" a CPU while it runs or waits on a run queue (schedstat): a main process at
    70-90% of a core while its GPU waits ~80% of the time is the one loading the data."""
    if cpus.quota_full:
        return "quota"
    if contention(w, th) is not None:
        return None  # CPUs that others take are cpu_contention's to name, not the job's data loading
    if cpus.saturated(th):
        # Full of this job's own work, more workers won't help; but workers that read a cold disk fill the CPUs
        # with the kernel's copying of what they wait for (the lab's case f on 2 CPUs): the disk is the cause.
        if _io_stalled(w, th):
            return None
        return "cpus" if cpus.used and cpus.own >= cpus.used / 2 else None
    if proc is None:
        return None
    wants = (w.proc_mean(proc.pid, "cpu_pct") or 0.0) + (w.proc_mean(proc.pid, "run_queue_wait_pct") or 0.0)
    main_busy = wants >= max(th.main_busy_cpu_pct, th.main_loading_share * (100.0 - util))
    if proc.children == 0:
        return "main_process" if main_busy else None
    per_worker = _per_worker(w, proc)
    if per_worker is None:
        # Workers not counted, or their CPU not read (an older recording, another user's process): only a main
        # process that is CPU-bound outright says the CPU holds the GPU back, not which part of it.
        return "" if wants >= th.starved_proc_cpu_pct else None
    if per_worker >= th.workers_busy_pct and not _io_stalled(w, th):
        # Workers that read a cold disk spend kernel time copying what they wait for: the disk is the cause.
        spare = cpus.spare
        return "workers" if spare is not None and spare >= th.spare_cpu_cores else "cpus"
    return "main_loop" if main_busy else None


def _measured(w: Window, th: Thresholds, cause: str | None, proc: ProcSample | None, stack: Stack | None) -> str | None:
    """The cause once the main thread's stack samples are heard: what they measure wins over what was inferred.

    - Waiting for the next batch (`data`) while the workers are not all busy: the loader cannot keep up, whatever
      the main process's CPU suggested (`main_loop`); without workers, it loads in the main process.
    - The dataset's own code in a main process without workers (`loading`): data loading in the main process.
    - Its own Python, other ranks, a checkpoint, a blocked frame: job_waits names them by the frame; waiting for
      the GPU: the GPU is no input's to name. Either way this rule's guess steps aside.
    - Waiting in a hand-off (a queue, a future) on the job's own threads or processes that run its data code
      (JobActivity.waited_on): a producer that cannot keep up, named, whatever the CPU side suggested.
    A spent quota is measured too, and stands."""
    if stack is None or stack.lead is None or proc is None or cause == "quota":
        return cause
    waited = stack.activity.waited_on
    if stack.lead == "data" and waited is not None and waited.kind == "data":
        return "producer"
    if stack.lead in ("data", "loading") and proc.children == 0:
        return "main_process"
    if stack.lead == "data":
        if cause in ("workers", "cpus"):
            return cause  # the CPUs are why the loader is slow
        # The disk, or others on the CPUs, are why it is slow: starvation_io's and cpu_contention's to name.
        return None if contention(w, th) is not None or _io_stalled(w, th) else "loader"
    return cause if stack.lead in ("loading", "io") else None


def feeds_a_busy_gpu(w: Window, th: Thresholds, pid: int) -> bool:
    """One process driving several GPUs (nn.DataParallel) that keeps one of them busy: its CPU side keeps up."""

    def feeders() -> frozenset[int]:
        busy = [g for g in w.gpus() if (u := w.mean(g.index, "utilization_gpu_pct")) and u >= th.verdict_busy_util_pct]
        return frozenset(pid for g in busy for pid in w.pids(g))

    return pid in w.shared("feeders", feeders)


def _per_worker(w: Window, proc: ProcSample) -> float | None:
    workers = w.proc_mean(proc.pid, "workers_cpu_pct")
    return None if workers is None or not proc.children else workers / proc.children


def _cores(value: float | None) -> str:
    """8 CPUs, 1.5 CPUs: a whole number of cores without the decimal."""
    return fmt_num(value, 1 if value is not None and value % 1 else 0)


def _suggested_workers(w: Window, th: Thresholds, cause: str, proc: ProcSample | None, cpus: Cpus) -> int | None:
    """num_workers to try: the workers that fit here (cpus.workers_that_fit, what every advice on too many workers
    says); or, with workers that are all busy while CPUs stay idle, one more for each spare CPU its share allows, up
    to its share of the CPUs (its main process waits for them, so it needs little) and never fewer than one more
    than it has: advice to "raise" to what it has would contradict itself. The two never stand together: idle CPUs
    and CPUs too few for the workers exclude each other."""
    fit = workers_that_fit(w, th)
    if fit is None:
        return None
    if cause == "main_process":
        return fit
    if cause == "workers" and proc is not None and proc.children and cpus.spare is not None and cpus.usable:
        jobs = job_count(w)
        share = int(cpus.usable / jobs)
        return max(proc.children + 1, min(share, proc.children + max(1, int(cpus.spare / jobs))))
    return None


def _cpu_evidence(w: Window, cpus: Cpus) -> tuple[Evidence, ...]:
    """The CPUs the job may use and how busy they were; inside a cgroup with a quota, the quota's figures too
    (without one, or without PSI, these say nothing and are left out rather than shown as n/a)."""
    cgroup = (
        ev("cpu_quota", cpus.quota, "CPUs"),
        ev("quota_used", rounded(w.host_mean("container.cpu_pct_of_quota")), "%", "mean"),
        ev("throttled_periods", rounded(w.host_mean("container.cpu_throttled_pct")), "%", "mean"),
        ev("psi_cpu", rounded(w.host_mean("psi.cpu_some_pct")), "%", "mean"),
    )
    return (
        ev("host_cpu", rounded(w.host_mean("cpu_pct")), "%", "mean"),
        ev("cpus_usable", rounded(cpus.usable), "CPUs"),
        ev("cpus_spare", rounded(cpus.spare), "CPUs", "mean"),
        *(e for e in cgroup if e.value is not None),
    )


def starvation_cpu(w: Window, th: Thresholds) -> Iterator[Hit]:
    waiting = starving(w, th)
    if not waiting:
        return  # the usual tick: the CPUs are measured only when some GPU waits
    cpus = job_cpus(w, th)
    for g, util, pids in waiting:
        hidden = [p.pid for p in g.processes if p.kind == "compute" and p.seen == "hidden"]
        if hidden and len(hidden) == len(pids):
            yield _hidden_job(w, g, util, hidden, cpus)
            continue
        proc = main_process(w, pids)
        if proc is not None and feeds_a_busy_gpu(w, th, proc.pid):
            continue  # the CPU keeps its other GPU busy: this one waits on the imbalance (sharing.imbalance)
        stack = read_stack(w, th, proc)
        cause = _measured(w, th, _cause(w, th, proc, util, cpus), proc, stack)
        if cause is None:
            continue
        pid = proc.pid if proc else None
        cpu = w.proc_mean(pid, "cpu_pct") if pid is not None else None
        run_queue = w.proc_mean(pid, "run_queue_wait_pct") if pid is not None else None
        per_worker = _per_worker(w, proc) if proc else None
        children = proc.children if proc else None
        yield Hit(
            gpus=(g.index,),
            pids=(pid,) if pid is not None else pids,
            value=round(util, 1),
            variant=cause,
            params={
                "gpu": g.index,
                "pid": "?" if pid is None else pid,
                "children": fmt_num(children),
                "quota": _cores(cpus.quota),
                "usable": _cores(cpus.usable),
                "suggest": fmt_num(_suggested_workers(w, th, cause, proc, cpus)),
                **_producer_params(stack),
            },
            evidence=(
                _util(util),
                ev("process", f"{proc.name} ({proc.pid})" if proc else None),
                ev("process_cpu", rounded(cpu), "%", "mean"),
                *((ev("run_queue_wait", rounded(run_queue), "%", "mean"),) if run_queue is not None else ()),
                ev("job_workers", children),
                *((ev("worker_cpu", rounded(per_worker), "%", "mean"),) if per_worker is not None else ()),
                *_cpu_evidence(w, cpus),
                *_loading_evidence(stack),
            ),
        )


def _producer_params(stack: Stack | None) -> dict[str, object]:
    """The producer the `producer` variant names: who, its top frame, the share of its samples it ran."""
    waited = stack.activity.waited_on if stack is not None else None
    if waited is None:
        return {"who": "?", "frame": "?", "running": "?"}
    return {"who": waited.who, "frame": where(waited.frame) or "?", "running": fmt_pct(100 * waited.running)}


def _loading_evidence(stack: Stack | None) -> tuple[Evidence, ...]:
    """What the main thread's stack samples measured of the job's input: the share it waited for the next batch
    (or loaded, or read files), and where its workers spent theirs."""
    if stack is None:
        return ()
    kind = stack.lead if stack.lead in ("data", "loading", "io") else "data"
    measured = stack_evidence(stack, kind) if stack.activity.shares.of(kind) > 0 else ()
    activity = stack.activity
    workers = activity.workers
    if workers is None or not activity.worker_samples:
        return measured
    return (*measured, ev("stack_workers", f"{shares_text(workers)} ({activity.worker_samples})"))


def _hidden_job(w: Window, g: GpuSample, util: float, hidden: list[int], cpus: Cpus) -> Hit:
    """A GPU whose process lives in another PID namespace: its low use is reported from the GPU's side, with
    what the host and the cgroup show, rather than not at all."""
    pid = ", ".join(str(p) for p in hidden)
    return Hit(
        gpus=(g.index,),
        pids=tuple(hidden),
        value=round(util, 1),
        variant="hidden",
        params={"gpu": g.index, "pid": pid},
        evidence=(_util(util), ev("hidden_pid", pid), *_cpu_evidence(w, cpus)),
    )


def _io_stalled(w: Window, th: Thresholds) -> bool:
    """Tasks wait on storage: iowait, the busiest disk, or PSI io "full" (every task waiting on I/O)."""
    iowait = w.host_mean("iowait_pct")
    busy = w.host_mean("disk_busy_pct")
    stalled = w.host_mean("psi.io_full_pct")
    return (
        (iowait is not None and iowait >= th.iowait_pct)
        or (busy is not None and busy >= th.disk_busy_pct)
        or (stalled is not None and stalled >= th.psi_io_full_pct)
    )


def starvation_io(w: Window, th: Thresholds) -> Iterator[Hit]:
    if not _io_stalled(w, th):
        return
    iowait = w.host_mean("iowait_pct")
    busy = w.host_mean("disk_busy_pct")
    stalled = w.host_mean("psi.io_full_pct")
    read = w.host_mean("disk_read_bytes_s")
    for g, util, pids in starving(w, th):
        procs = [p for p in (w.host.process(pid) for pid in pids) if p is not None]
        proc_read = sum(p.read_bytes_s or 0.0 for p in procs) if procs else None
        stack = read_stack(w, th, main_process(w, pids))
        if stack is not None and stack.busy_elsewhere:
            continue  # e.g. the job's own checkpoint keeps the disk busy: job_waits names what it waits on
        yield _starved(
            g,
            util,
            pids,
            ev("iowait", rounded(iowait), "%", "mean"),
            ev("disk_busy", rounded(busy), "%", "mean"),
            ev("disk_read", rounded(read, 1e6), "MB/s", "mean"),
            ev("process_read", rounded(proc_read, 1e6), "MB/s"),
            *((ev("psi_io_full", rounded(stalled), "%", "mean"),) if stalled is not None else ()),
            *_loading_evidence(stack),
        )


def starvation_net(w: Window, th: Thresholds) -> Iterator[Hit]:
    link = w.host.net_link_bytes_s
    rx = w.host_mean("net_rx_bytes_s")
    if not link or rx is None or rx < th.net_saturated_pct / 100 * link:
        return
    for g, util, pids in starving(w, th):
        stack = read_stack(w, th, main_process(w, pids))
        if stack is not None and stack.busy_elsewhere:
            continue  # waiting on other ranks over the same link is not waiting for input: job_waits names it
        yield _starved(
            g,
            util,
            pids,
            ev("net_rx", round(rx / 1e6, 1), "MB/s", "mean"),
            ev("net_link", round(link / 1e6, 1), "MB/s"),
        )


def cpu_contention(w: Window, th: Thresholds) -> Iterator[Hit]:
    """The CPUs the job may run on are saturated and other processes (not the GPU jobs' main processes and
    data-loader workers) take a real part of them while the jobs wait for a CPU (cpus.contention): named, with
    the busiest of them, so that the job's own data loading is not blamed for CPUs it does not get."""
    taken = contention(w, th)
    if taken is None:
        return
    others = _busiest_others(w)
    for g, util, pids in starving(w, th):
        stack = read_stack(w, th, main_process(w, pids))
        yield Hit(
            gpus=(g.index,),
            pids=pids,
            value=round(100 * taken.others / taken.cores, 1),
            variant="named" if others else "",
            params={"gpu": g.index, "who": ", ".join(_who(p, command=False) for p in others[:_NAMED_IN_TITLE])},
            evidence=(
                _util(util),
                ev("host_cpu", round(taken.busy_pct, 1), "%", "mean"),
                ev("others_cpu", round(100 * taken.others / taken.cores, 1), "%", "mean"),
                *((ev("busiest_others", ", ".join(_who(p) for p in others)),) if others else ()),
                *_waited_evidence(taken),
                *(stack_evidence(stack, "data") if stack is not None and stack.activity.shares.data > 0 else ()),
            ),
        )


def _busiest_others(w: Window) -> tuple[ProcSample, ...]:
    """The busiest processes outside the GPU jobs, as last read in the window (the host reads them only while its
    CPUs are busy, so a reading without them is a moment the CPUs were not)."""
    pids = {pid for g in w.gpus() for pid in w.pids(g)}
    for snap in reversed(w.snapshots):
        if snap.host.busiest_others:
            return tuple(p for p in snap.host.busiest_others if p.pid not in pids)
    return ()


def _who(proc: ProcSample, command: bool = True) -> str:
    """'stress (PID 4242, bob, pod ml/train-0) 98%': what it is, whose, where, and its CPU (100 = one core)."""
    name = proc.cmdline if command and proc.cmdline else proc.name
    if len(name) > _COMMAND_CHARS:
        name = name[: _COMMAND_CHARS - 1] + "…"
    where = None
    if proc.pod:
        where = f"pod {proc.namespace}/{proc.pod}" if proc.namespace else f"pod {proc.pod}"
    elif proc.container:
        where = f"container {proc.container}"
    owner = ", ".join(part for part in (f"PID {proc.pid}", proc.user, where) if part)
    share = f" {fmt_num(proc.cpu_pct)}%" if command and proc.cpu_pct is not None else ""
    return f"{name} ({owner}){share}"


def _waited_evidence(taken: Contention) -> tuple[Evidence, ...]:
    """How long the jobs' processes waited for a CPU that others held, where the kernel told."""
    return () if taken.waited is None else (ev("jobs_waited", round(taken.waited, 1), "CPUs", "mean"),)


# Each finds a GPU kept waiting by its input (the CPU, the disk, the network, other work on the job's CPUs): its
# utilization is what falls, and what it argues for is the input-bound verdict.
RULES: tuple[Rule, ...] = tuple(
    Rule(
        check,
        Severity.WARNING,
        metric="utilization_gpu_pct",
        higher_is_worse=False,
        bound="input_bound",
        per_instance=True,
    )
    for check in (starvation_cpu, starvation_io, starvation_net, cpu_contention)
)

TEXTS: Texts = {
    "en": {
        "ev.job_workers": "data-loader workers of the job",
        "starvation_cpu.title": "GPU {gpu}: starved by the CPU",
        "starvation_cpu.advice": (
            "The GPU waits while its process keeps a CPU busy ({children} data-loader workers). Load the data in "
            "DataLoader workers (num_workers), set pin_memory=True, prefetch (prefetch_factor), and move "
            "preprocessing and augmentation to the GPU."
        ),
        "starvation_cpu.title.main_process": "GPU {gpu}: waits while the main process loads the data (num_workers=0)",
        "starvation_cpu.advice.main_process": (
            "The training process prepares every batch itself (DataLoader num_workers=0), so the GPU idles while "
            "it does. Set DataLoader num_workers={suggest} (this job's share of the CPUs, less one for the main "
            "process), pin_memory=True and persistent_workers=True."
        ),
        "starvation_cpu.title.workers": "GPU {gpu}: its {children} data-loader workers are all busy and cannot "
        "keep up, CPUs spare",
        "starvation_cpu.advice.workers": (
            "Every worker is busy preparing samples and the GPU still waits, while CPUs this job may use stay "
            "idle. Raise DataLoader num_workers to about {suggest} and keep prefetch_factor at 2 or more; if "
            "that is not enough, do less per sample on the CPU."
        ),
        "starvation_cpu.title.cpus": "GPU {gpu}: waits while the {usable} CPUs it may use are all busy with its "
        "data loading",
        "starvation_cpu.advice.cpus": (
            "The job's main process and {children} data-loader workers keep every CPU it may use busy, and the "
            "GPU still waits. More workers will not help: do less per sample on the CPU (decode and augment on "
            "the GPU, e.g. NVIDIA DALI; pre-process the dataset once), or run it where it gets more CPUs."
        ),
        "starvation_cpu.title.quota": "GPU {gpu}: waits while its CPU quota of {quota} CPUs is spent",
        "starvation_cpu.advice.quota": (
            "The GPU waits for input while the CPU quota this job runs under is used up ({children} data-loader "
            "workers share it). More workers will not help: raise the quota (docker --cpus, Kubernetes "
            "resources.limits.cpu, Slurm --cpus-per-task), or do less per sample on the CPU (decode and augment "
            "on the GPU, e.g. NVIDIA DALI; pre-process the dataset once)."
        ),
        "starvation_cpu.title.main_loop": "GPU {gpu}: waits while the training loop itself keeps the CPU busy",
        "starvation_cpu.advice.main_loop": (
            "The data-loader workers keep up, but the main process is busy most of the time the GPU waits: work "
            "in the loop itself holds the GPU back (preprocessing in the loop, logging or metrics every step, a "
            "CPU-side optimizer or loss). Profile it (py-spy top --pid {pid}) and move that work off the step."
        ),
        "starvation_cpu.title.loader": "GPU {gpu}: waits for the next batch from its {children} data-loader workers",
        "starvation_cpu.advice.loader": (
            "The main thread's stack samples show it waiting for the next batch most of the time, yet the workers "
            "are not all busy on a CPU: they wait on something else (a slow read from a network file system or "
            "object storage, a lock, a remote service). See where a worker waits (py-spy dump --pid of a worker), "
            "read from a local disk or a cache, and raise num_workers and prefetch_factor so that more of the "
            "waiting overlaps."
        ),
        "starvation_cpu.title.producer": "GPU {gpu}: waits for the next batch from {who}, which cannot keep up",
        "starvation_cpu.advice.producer": (
            "The main thread waits in a hand-off (a queue's get, a future's result) most of the time, while {who} "
            "runs the job's data code ({frame}, running {running} of its samples): the producer cannot keep up. "
            "Produce in parallel (more threads help only where the work releases the GIL, as torch and most "
            "decoders do; otherwise processes: a DataLoader with num_workers, a multiprocessing pool), prefetch "
            "more batches, or do less per sample on the CPU (decode and augment on the GPU, pre-process once)."
        ),
        "starvation_cpu.cause.producer": "its producer {who} in {frame}, running {running}",
        "starvation_cpu.title.hidden": "GPU {gpu}: waits for input; its process (host PID {pid}) is outside this "
        "PID namespace",
        "starvation_cpu.advice.hidden": (
            "A process holds this GPU but uses it little, and it cannot be seen from here: the driver names it "
            "by its host PID, which this container's PID namespace does not show. Run gputui in the job's own "
            "container (or on the host) to see its CPU and data-loader workers; the host and quota figures "
            "below are this container's."
        ),
        "starvation_cpu.cause": "the CPU",
        "starvation_cpu.cause.main_process": "data loading in the main process (num_workers=0)",
        "starvation_cpu.cause.workers": "too few data-loader workers",
        "starvation_cpu.cause.cpus": "every CPU it may use busy with data loading",
        "starvation_cpu.cause.quota": "the CPU quota",
        "starvation_cpu.cause.main_loop": "CPU work in the training loop",
        "starvation_cpu.cause.hidden": "a process in another PID namespace",
        "starvation_cpu.cause.loader": "a data loader that cannot keep up, its workers not CPU-bound",
        "starvation_io.title": "GPU {gpu}: starved by disk I/O",
        "starvation_io.advice": (
            "The GPU waits for data the disk cannot deliver fast enough. Copy the dataset to a local SSD, cache "
            "it in memory, use more DataLoader workers, and read larger sequential files instead of many small "
            "ones (WebDataset, LMDB, TFRecord)."
        ),
        "starvation_io.cause": "the disk",
        "starvation_net.title": "GPU {gpu}: starved by the network",
        "starvation_net.advice": (
            "Network receive runs near the link speed while the GPU waits. Stage the data on a local disk, "
            "cache it, compress it, or use a faster link."
        ),
        "starvation_net.cause": "the network",
        "cpu_contention.title": "GPU {gpu}: waits while other processes fill the host CPUs",
        "cpu_contention.advice": (
            "The host's CPUs are busy with other work while this GPU waits. Find the busy processes with `top`, "
            "lower their priority (nice) or give the training job its own cores (taskset)."
        ),
        "cpu_contention.title.named": "GPU {gpu}: waits while other processes take its CPUs: {who}",
        "cpu_contention.advice.named": (
            "Processes outside this job ({who} the busiest) keep the CPUs it may use busy while its GPU waits, and "
            "its own processes wait for a CPU: its data loading is slowed by them, not by too few workers. Lower "
            "their priority (renice), give the training job its own cores (taskset, a cpuset, a CPU request in "
            "its pod), or ask their owners to run them elsewhere."
        ),
        "cpu_contention.cause": "other processes on its CPUs",
        "ev.process_cpu": "process CPU (100 = one core)",
        "ev.run_queue_wait": "waiting for a CPU (100 = all the time)",
        "ev.worker_cpu": "CPU per data-loader worker (100 = one core)",
        "ev.cpus_usable": "CPUs the job may use",
        "ev.cpus_spare": "CPUs spare",
        "ev.hidden_pid": "host PID, not visible here",
        "ev.psi_io_full": "time every task waited on I/O",
        "ev.host_cpu": "host CPU",
        "ev.others_cpu": "CPU used by other processes",
        "ev.busiest_others": "busiest other processes (100% = one core)",
        "ev.jobs_waited": "the jobs' processes waiting for a CPU",
        "ev.stack_workers": "data-loader workers' stack samples",
        "ev.iowait": "CPUs idle waiting on I/O (iowait)",
        "ev.disk_busy": "disk busy",
        "ev.disk_read": "disk read",
        "ev.process_read": "process read",
        "ev.net_rx": "network receive",
        "ev.net_link": "link speed",
    },
    "zh": {
        "ev.job_workers": "该任务的数据加载 worker 数",
        "starvation_cpu.title": "GPU {gpu}：被 CPU 拖慢",
        "starvation_cpu.advice": (
            "GPU 在等待，而它的进程一直占着 CPU（数据加载 worker 数：{children}）。请在 DataLoader worker 中加载数据"
            "（num_workers），设置 pin_memory=True，开启预取（prefetch_factor），并把预处理和数据增强移到 GPU 上。"
        ),
        "starvation_cpu.title.main_process": "GPU {gpu}：主进程在自己加载数据，GPU 在等待（num_workers=0）",
        "starvation_cpu.advice.main_process": (
            "训练进程自己准备每一个 batch（DataLoader num_workers=0），这期间 GPU 空闲。请设置 DataLoader "
            "num_workers={suggest}（本任务可用的 CPU 数减去主进程的一个），pin_memory=True，persistent_workers=True。"
        ),
        "starvation_cpu.title.workers": "GPU {gpu}：{children} 个数据加载 worker 全部忙碌仍跟不上，CPU 还有空闲",
        "starvation_cpu.advice.workers": (
            "每个 worker 都在忙着准备样本，GPU 仍在等待，而本任务可用的 CPU 还有空闲。请把 DataLoader num_workers "
            "提高到 {suggest} 左右，prefetch_factor 保持 2 或以上；如果仍不够，请减少每个样本在 CPU 上的工作。"
        ),
        "starvation_cpu.title.cpus": "GPU {gpu}：可用的 {usable} 个 CPU 全部忙于数据加载，GPU 在等待",
        "starvation_cpu.advice.cpus": (
            "任务的主进程和 {children} 个数据加载 worker 占满了它可用的所有 CPU，GPU 仍在等待。增加 worker 没有用："
            "请减少每个样本在 CPU 上的工作（在 GPU 上解码和增强，如 NVIDIA DALI；预先处理好数据集），"
            "或在 CPU 更多的机器上运行。"
        ),
        "starvation_cpu.title.quota": "GPU {gpu}：CPU 配额（{quota} 个 CPU）已用尽，GPU 在等待",
        "starvation_cpu.advice.quota": (
            "GPU 在等待输入，而本任务所在的 CPU 配额已经用尽（{children} 个数据加载 worker 在争用）。"
            "增加 worker 没有用："
            "请提高配额（docker --cpus、Kubernetes resources.limits.cpu、Slurm --cpus-per-task），"
            "或减少每个样本在 CPU 上的工作（在 GPU 上解码和增强，如 NVIDIA DALI；预先处理好数据集）。"
        ),
        "starvation_cpu.title.main_loop": "GPU {gpu}：训练循环本身占满了 CPU，GPU 在等待",
        "starvation_cpu.advice.main_loop": (
            "数据加载 worker 跟得上，但在 GPU 等待的大部分时间里主进程都在忙：循环本身的工作拖住了 GPU"
            "（循环内的预处理、每步的日志或指标计算、在 CPU 上的优化器或损失计算）。请用 py-spy top --pid {pid} "
            "分析，并把这些工作移出训练步。"
        ),
        "starvation_cpu.title.loader": "GPU {gpu}：在等 {children} 个数据加载 worker 送来下一个 batch",
        "starvation_cpu.advice.loader": (
            "主线程的栈采样显示它大部分时间都在等下一个 batch，而 worker 并没有都在 CPU 上忙：它们在等别的东西"
            "（从网络文件系统或对象存储的慢速读取、锁、远程服务）。请查看 worker 在哪里等待"
            "（对某个 worker 执行 py-spy dump --pid），改从本地磁盘或缓存读取，并提高 num_workers 和 "
            "prefetch_factor，让更多等待相互重叠。"
        ),
        "starvation_cpu.title.producer": "GPU {gpu}：在等 {who} 送来下一个 batch，而它跟不上",
        "starvation_cpu.advice.producer": (
            "主线程大部分时间都在交接处等待（队列的 get、future 的 result），而 {who} 在运行任务的数据代码"
            "（{frame}，其采样中 {running} 在运行）：生产者跟不上。请并行生产（只有在工作会释放 GIL 时多开线程才有用，"
            "torch 和大多数解码库都会释放；否则用进程：设置 num_workers 的 DataLoader、multiprocessing 进程池），"
            "预取更多 batch，或减少每个样本在 CPU 上的工作（在 GPU 上解码和增强，预先处理一次）。"
        ),
        "starvation_cpu.cause.producer": "其生产者 {who} 在 {frame}，运行占比 {running}",
        "starvation_cpu.title.hidden": "GPU {gpu}：在等待输入；其进程（宿主机 PID {pid}）不在本 PID 命名空间内",
        "starvation_cpu.advice.hidden": (
            "有进程占用这块 GPU 但利用率很低，而且从这里看不到它：驱动给出的是宿主机 PID，"
            "本容器的 PID 命名空间里没有它。请在任务所在的容器（或宿主机）上运行 gputui，"
            "以查看它的 CPU 和数据加载 worker；下面的主机和配额数据是本容器的。"
        ),
        "starvation_cpu.cause": "CPU",
        "starvation_cpu.cause.main_process": "主进程自己加载数据（num_workers=0）",
        "starvation_cpu.cause.workers": "数据加载 worker 太少",
        "starvation_cpu.cause.cpus": "可用的 CPU 全部忙于数据加载",
        "starvation_cpu.cause.quota": "CPU 配额",
        "starvation_cpu.cause.main_loop": "训练循环中的 CPU 工作",
        "starvation_cpu.cause.hidden": "另一个 PID 命名空间中的进程",
        "starvation_cpu.cause.loader": "数据加载跟不上，而 worker 并不受 CPU 限制",
        "starvation_io.title": "GPU {gpu}：被磁盘 I/O 拖慢",
        "starvation_io.advice": (
            "GPU 在等磁盘读数据。请把数据集拷到本地 SSD，缓存到内存，增加 DataLoader worker，"
            "并改用大的顺序读文件代替大量小文件（WebDataset、LMDB、TFRecord）。"
        ),
        "starvation_io.cause": "磁盘",
        "starvation_net.title": "GPU {gpu}：被网络拖慢",
        "starvation_net.advice": (
            "GPU 等待时网络接收接近链路速率。请先把数据放到本地磁盘、做缓存、压缩，或使用更快的网络。"
        ),
        "starvation_net.cause": "网络",
        "cpu_contention.title": "GPU {gpu}：主机 CPU 被其他进程占满",
        "cpu_contention.advice": (
            "GPU 等待时主机 CPU 被其他任务占满。请用 `top` 找出这些进程，降低其优先级（nice），"
            "或为训练任务绑定专用核心（taskset）。"
        ),
        "cpu_contention.title.named": "GPU {gpu}：其他进程占用了它的 CPU，GPU 在等待：{who}",
        "cpu_contention.advice.named": (
            "本任务之外的进程（最忙的是 {who}）占满了它可用的 CPU，GPU 在等待，而它自己的进程在等 CPU："
            "拖慢数据加载的是这些进程，而不是 worker 太少。请降低它们的优先级（renice），为训练任务分配专用核心"
            "（taskset、cpuset、pod 的 CPU request），或请它们的所有者把它们移到别处运行。"
        ),
        "cpu_contention.cause": "其他进程占用了它的 CPU",
        "ev.process_cpu": "进程 CPU（100 = 一个核心）",
        "ev.run_queue_wait": "等待 CPU（100 = 一直在等）",
        "ev.worker_cpu": "每个数据加载 worker 的 CPU（100 = 一个核心）",
        "ev.cpus_usable": "任务可用的 CPU",
        "ev.cpus_spare": "空闲的 CPU",
        "ev.hidden_pid": "宿主机 PID（此处不可见）",
        "ev.psi_io_full": "所有任务都在等 I/O 的时间",
        "ev.host_cpu": "主机 CPU",
        "ev.others_cpu": "其他进程的 CPU",
        "ev.busiest_others": "最忙的其他进程（100% = 一个核心）",
        "ev.jobs_waited": "任务进程等待 CPU",
        "ev.stack_workers": "数据加载 worker 的栈采样",
        "ev.iowait": "CPU 空闲等待 I/O（iowait）",
        "ev.disk_busy": "磁盘繁忙",
        "ev.disk_read": "磁盘读取",
        "ev.process_read": "进程读取",
        "ev.net_rx": "网络接收",
        "ev.net_link": "链路速率",
    },
}
