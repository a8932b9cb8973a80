"""The cgroup the job runs in: its CPU quota, memory limit, OOM kills and /dev/shm, judged against the limits
the kernel enforces rather than the host's (inside a container psutil and `os.cpu_count()` see the host).

Sources: kernel Documentation/scheduler/sched-bwc.rst (CFS bandwidth: nr_periods, nr_throttled),
admin-guide/cgroup-v2.rst (cpu.max, memory.max, memory.events oom_kill), accounting/psi.rst; Docker's
`--shm-size` default of 64 MiB and PyTorch's DataLoader notes on shared memory.
"""

from __future__ import annotations

from collections.abc import Iterator

from gputui.diagnostics.findings import Severity
from gputui.diagnostics.locale import Texts
from gputui.diagnostics.rules.base import Hit, Rule, Window, at_once, compute_pids, ev, rounded
from gputui.diagnostics.rules.cpus import contention, job_cpus, workers_that_fit
from gputui.diagnostics.thresholds import Thresholds
from gputui.formatting import fmt_bytes, fmt_num, fmt_pct
from gputui.model import ContainerInfo, ProcSample

_GIB = 1 << 30
_MIB = 1 << 20


def _limits(w: Window) -> ContainerInfo | None:
    return w.latest.system.container


def _jobs(w: Window) -> list[tuple[int, ProcSample]]:
    """The GPU jobs seen here, each once, with the GPU it was found on (a rank may hold several)."""
    seen: dict[int, tuple[int, ProcSample]] = {}
    for g in w.gpus():
        for pid in compute_pids(g):
            proc = w.host.process(pid)
            if proc is not None and pid not in seen:
                seen[pid] = (g.index, proc)
    return list(seen.values())


def cpu_throttled(w: Window, th: Thresholds) -> Iterator[Hit]:
    """The quota ran out in many CFS periods: every runnable thread of the group waited for the next period."""
    throttled = w.host_mean("container.cpu_throttled_pct")
    if throttled is None or throttled < th.cpu_throttled_pct:
        return
    limits = _limits(w)
    quota = limits.cpu_quota_cores if limits else None
    used = w.host_mean("container.cpu_pct_of_quota")
    yield Hit(
        gpus=(),
        value=round(throttled, 1),
        severity=Severity.CRITICAL if throttled >= th.cpu_throttled_critical_pct else None,
        params={"pct": fmt_pct(throttled), "quota": fmt_num(quota, 1), "workers": fmt_num(workers_that_fit(w, th))},
        evidence=(
            ev("cpu_quota", quota, "CPUs"),
            ev("quota_used", rounded(used), "%", "mean"),
            ev("throttled_periods", round(throttled, 1), "%", "mean"),
            ev("psi_cpu", rounded(w.host_mean("psi.cpu_some_pct")), "%", "mean"),
        ),
    )


def _demand(w: Window, proc: ProcSample) -> tuple[float, float] | None:
    """The cores a job's main process and its data-loader workers used over the window, and the cores' worth of
    time they waited on a run queue (runnable, no CPU free): together, what they want of a CPU. None when either is
    not read (an older recording, another user's workers)."""
    used = [w.proc_mean(proc.pid, key) for key in ("cpu_pct", "workers_cpu_pct")]
    waited = [w.proc_mean(proc.pid, key) for key in ("run_queue_wait_pct", "workers_run_queue_wait_pct")]
    if None in used or None in waited:
        return None
    return sum(v or 0.0 for v in used) / 100, sum(v or 0.0 for v in waited) / 100


def workers_oversubscribed(w: Window, th: Thresholds) -> Iterator[Hit]:
    """The jobs' processes want markedly more CPU than they may use, and those CPUs are full: what they use plus
    what they wait on a run queue (schedstat) against the limit. `num_workers=os.cpu_count()` counts the host's
    CPUs. Counting what wants a CPU, not processes: a main process that mostly waits for its workers, and workers
    that keep up (num_workers equal to the CPUs, common advice), take turns with no one. While others take the
    CPUs (cpu_contention) the workers' waits are theirs as much as the job's: the job is not blamed for them."""
    if contention(w, th) is not None:
        return
    limits = _limits(w)
    limit = limits.cpu_limit if limits else None
    jobs = [(gpu, proc) for gpu, proc in _jobs(w) if proc.children is not None]
    if limit is None or not jobs:
        return
    processes = sum(1 + (proc.children or 0) for _, proc in jobs)
    demands = [_demand(w, proc) for _, proc in jobs]
    if processes <= limit or None in demands or not job_cpus(w, th).saturated(th):
        return
    used = sum(d[0] for d in demands if d is not None)
    waited = sum(d[1] for d in demands if d is not None)
    if used + waited < th.cpu_demand_ratio * limit:
        return
    workers = sum(proc.children or 0 for _, proc in jobs)
    yield Hit(
        gpus=tuple(sorted({gpu for gpu, _ in jobs})),
        pids=tuple(proc.pid for _, proc in jobs),
        value=round(used + waited, 1),
        params={
            "wanted": _cores(used + waited),
            "used": _cores(used),
            "waited": _cores(waited),
            "limit": _cores(limit),
            "workers": fmt_num(workers_that_fit(w, th)),
        },
        evidence=(
            ev("cpus_wanted", round(used + waited, 1), "CPUs", "mean"),
            ev("cpus_used", round(used, 1), "CPUs", "mean"),
            ev("cpus_waited", round(waited, 1), "CPUs", "mean"),
            ev("workers", workers),
            ev("jobs", len(jobs)),
            ev("cpu_limit", round(limit, 1), "CPUs"),
            ev("host_cpus", w.latest.system.cpu_count or None),
        ),
    )


def _cores(value: float) -> str:
    """8 CPUs, 2.5 CPUs: a whole number without the decimal."""
    return fmt_num(value, 1 if round(value, 1) % 1 else 0)


def shm_small(w: Window, th: Thresholds) -> Iterator[Hit]:
    """Data-loader workers hand batches over through /dev/shm; too small, they die with a bus error."""
    limits = _limits(w)
    size = limits.shm_bytes if limits else None
    workers = sum(proc.children or 0 for _, proc in _jobs(w))
    if not size or workers == 0:
        return
    used = w.host.shm_used_bytes
    used_pct = None if used is None else 100.0 * used / size
    small = size < th.shm_small_gib * _GIB
    if not small and (used_pct is None or used_pct < th.shm_used_pct):
        return
    yield Hit(
        gpus=(),
        value=size / _MIB,
        variant="" if small else "full",
        params={"size": fmt_bytes(size), "pct": fmt_num(used_pct, 0, "%")},
        evidence=(
            ev("shm_size", round(size / _MIB), "MiB"),
            ev("shm_used", rounded(used_pct), "%"),
            ev("workers", workers),
        ),
    )


def oom_kill(w: Window, th: Thresholds) -> Iterator[Hit]:
    """The OOM killer took a process in the window: the cgroup's counter, or the host's where there is none."""
    first, last = w.snapshots[0].host, w.host
    before: int | None = first.oom_kills
    now: int | None = last.oom_kills
    scope = "host"
    if last.container is not None and last.container.oom_kills is not None and first.container is not None:
        before, now, scope = first.container.oom_kills, last.container.oom_kills, "cgroup"
    if before is None or now is None or now <= before:
        return
    container = last.container
    limit = container.memory_limit_bytes if container else None
    used = container.memory_used_bytes if container else last.memory_used_bytes
    yield Hit(
        gpus=(),
        value=float(now - before),
        variant=scope,
        params={"kills": now - before, "limit": fmt_bytes(limit)},
        evidence=(
            ev("oom_kills", now - before, "", "change"),
            ev("memory_limit", rounded(limit, _GIB), "GiB"),
            ev("cgroup_memory", rounded(used, _GIB), "GiB"),
        ),
    )


def memory_limit(w: Window, th: Thresholds) -> Iterator[Hit]:
    """Near its memory limit the cgroup reclaims its own page cache first, then the OOM killer picks a worker."""
    container = w.host.container
    if container is None or not container.memory_limit_bytes or container.memory_used_bytes is None:
        return
    pct = 100.0 * container.memory_used_bytes / container.memory_limit_bytes
    if pct < th.memory_limit_pct:
        return
    yield Hit(
        gpus=(),
        value=round(pct, 1),
        params={"pct": fmt_pct(pct), "limit": fmt_bytes(container.memory_limit_bytes)},
        evidence=(
            ev("cgroup_memory", round(container.memory_used_bytes / _GIB, 1), "GiB"),
            ev("memory_limit", round(container.memory_limit_bytes / _GIB, 1), "GiB"),
            ev("psi_memory", rounded(w.host_mean("psi.memory_some_pct")), "%", "mean"),
        ),
    )


RULES: tuple[Rule, ...] = (
    # A quota that stalls data loading bounds the GPUs that wait (never a busy one: see verdict.py).
    Rule(cpu_throttled, Severity.WARNING, bound="input_bound"),
    Rule(workers_oversubscribed, Severity.WARNING, bound="input_bound"),
    Rule(shm_small, Severity.WARNING, higher_is_worse=False),
    Rule(oom_kill, Severity.CRITICAL, open_after=at_once, close_after=lambda th: th.oom_hold_s),
    Rule(memory_limit, Severity.WARNING),
)

TEXTS: Texts = {
    "en": {
        "cpu_throttled.title": "CPU quota of {quota} CPUs ran out in {pct} of periods",
        "cpu_throttled.advice": (
            "The kernel stops every thread of this container until the next period once its CPU quota is "
            "spent, so data loading stalls in bursts. Raise the quota (docker --cpus, Kubernetes "
            "resources.limits.cpu), or use fewer data-loader workers: num_workers <= {workers} per job here."
        ),
        "cpu_throttled.cause": "the CPU quota",
        "workers_oversubscribed.title": "The jobs and their data-loader workers want {wanted} CPUs of the {limit} "
        "they may use",
        "workers_oversubscribed.advice": (
            "The jobs' processes use {used} CPUs and wait on a run queue for {waited} more: they want more CPU "
            "than this container may use, so they take turns. os.cpu_count() reports the host's CPUs inside a "
            "container; size num_workers by the quota instead: about {workers} per job here "
            "(len(os.sched_getaffinity(0)) honours a cpuset, not a quota)."
        ),
        "workers_oversubscribed.cause": "more workers than CPUs",
        "shm_small.title": "/dev/shm is only {size} while data-loader workers use it",
        "shm_small.title.full": "/dev/shm is {pct} full while data-loader workers use it",
        "shm_small.advice": (
            "DataLoader workers hand batches over through shared memory; when it is too small they fail with "
            "'bus error' or 'insufficient shared memory'. Start the container with --shm-size=16g or "
            "--ipc=host; in Kubernetes mount an emptyDir with medium: Memory at /dev/shm."
        ),
        "shm_small.advice.full": (
            "DataLoader workers hand batches over through shared memory; when it fills up they fail with "
            "'bus error'. Look for leftovers of killed workers (`du -sh /dev/shm/*`), and give the container "
            "more with --shm-size=16g or --ipc=host (Kubernetes: an emptyDir with medium: Memory)."
        ),
        "shm_small.cause": "a small /dev/shm",
        "oom_kill.title.cgroup": "The container's memory limit ({limit}) killed {kills} process(es)",
        "oom_kill.title.host": "The kernel's OOM killer killed {kills} process(es)",
        "oom_kill.advice.cgroup": (
            "A process, often a data-loader worker ('DataLoader worker (pid N) is killed by signal: Killed'), "
            "was killed for memory. Raise the container's memory limit, lower num_workers or prefetch_factor, "
            "or keep datasets out of each worker's memory (memory-map them)."
        ),
        "oom_kill.advice.host": (
            "A process was killed for lack of memory. Find it with `dmesg | grep -i oom`, then lower the "
            "job's memory (fewer data-loader workers, smaller prefetch) or add memory."
        ),
        "oom_kill.cause": "processes killed for memory",
        "memory_limit.title": "Container memory at {pct} of its {limit} limit",
        "memory_limit.advice": (
            "Near its limit the container reclaims its own page cache, then the OOM killer takes a process. "
            "Raise the limit (docker --memory, Kubernetes resources.limits.memory) or lower the job's memory: "
            "fewer data-loader workers, smaller prefetch_factor, memory-mapped datasets."
        ),
        "memory_limit.cause": "the memory limit nearly reached",
        "ev.jobs": "GPU jobs",
        "ev.cpus_wanted": "CPUs wanted (used + waited for)",
        "ev.cpus_used": "CPUs used",
        "ev.cpus_waited": "CPUs' worth of waiting on a run queue",
        "ev.cpu_limit": "CPUs it may use",
        "ev.host_cpus": "host CPUs",
        "ev.shm_size": "/dev/shm size",
        "ev.shm_used": "/dev/shm used",
        "ev.oom_kills": "OOM kills",
        "ev.memory_limit": "memory limit",
        "ev.cgroup_memory": "memory used",
        "ev.psi_memory": "time tasks waited for memory",
    },
    "zh": {
        "cpu_throttled.title": "{quota} 核的 CPU 配额在 {pct} 的周期内被用完",
        "cpu_throttled.advice": (
            "配额用完后，内核会让容器内所有线程停到下一个周期，数据加载因此一阵一阵地卡住。请提高配额"
            "（docker --cpus，Kubernetes resources.limits.cpu），或减少数据加载 worker："
            "这里每个任务 num_workers <= {workers}。"
        ),
        "cpu_throttled.cause": "CPU 配额",
        "workers_oversubscribed.title": "任务进程和数据加载 worker 需要 {wanted} 个 CPU，而可用的只有 {limit} 个",
        "workers_oversubscribed.advice": (
            "任务进程用了 {used} 个 CPU，还在运行队列里等了相当于 {waited} 个 CPU 的时间：它们想用的 CPU 多于容器"
            "能用的，只能轮流运行。容器内 os.cpu_count() 返回的是宿主机的 CPU 数；请按配额设置 num_workers："
            "这里每个任务约 {workers} 个（len(os.sched_getaffinity(0)) 只考虑 cpuset，不考虑配额）。"
        ),
        "workers_oversubscribed.cause": "worker 多于 CPU",
        "shm_small.title": "/dev/shm 只有 {size}，而数据加载 worker 正在使用它",
        "shm_small.title.full": "/dev/shm 已用 {pct}，而数据加载 worker 正在使用它",
        "shm_small.advice": (
            "DataLoader worker 通过共享内存传递 batch；共享内存太小时会报 'bus error' 或 'insufficient shared "
            "memory'。请用 --shm-size=16g 或 --ipc=host 启动容器；Kubernetes 中在 /dev/shm 挂载 medium: Memory "
            "的 emptyDir。"
        ),
        "shm_small.advice.full": (
            "DataLoader worker 通过共享内存传递 batch；共享内存用满时会报 'bus error'。请查看被杀 worker 留下的文件"
            "（`du -sh /dev/shm/*`），并用 --shm-size=16g 或 --ipc=host 给容器更多共享内存"
            "（Kubernetes：medium: Memory 的 emptyDir）。"
        ),
        "shm_small.cause": "/dev/shm 太小",
        "oom_kill.title.cgroup": "容器内存上限（{limit}）杀死了 {kills} 个进程",
        "oom_kill.title.host": "内核 OOM killer 杀死了 {kills} 个进程",
        "oom_kill.advice.cgroup": (
            "有进程因内存不足被杀，常见的是数据加载 worker（'DataLoader worker (pid N) is killed by signal: "
            "Killed'）。请提高容器内存上限，减少 num_workers 或 prefetch_factor，或让数据集不占每个 worker 的内存"
            "（用内存映射）。"
        ),
        "oom_kill.advice.host": (
            "有进程因内存不足被杀。用 `dmesg | grep -i oom` 找到它，然后降低任务内存（更少的数据加载 worker、"
            "更小的预取）或增加内存。"
        ),
        "oom_kill.cause": "有进程因内存不足被杀",
        "memory_limit.title": "容器内存已达上限 {limit} 的 {pct}",
        "memory_limit.advice": (
            "接近上限时容器会先回收自己的页缓存，然后 OOM killer 会杀掉一个进程。请提高上限（docker --memory，"
            "Kubernetes resources.limits.memory），或降低任务内存：更少的数据加载 worker、更小的 prefetch_factor、"
            "内存映射的数据集。"
        ),
        "memory_limit.cause": "接近内存上限",
        "ev.jobs": "GPU 任务数",
        "ev.cpus_wanted": "需要的 CPU（已用 + 等待）",
        "ev.cpus_used": "已用 CPU",
        "ev.cpus_waited": "在运行队列中等待（折合 CPU 数）",
        "ev.cpu_limit": "可用 CPU",
        "ev.host_cpus": "宿主机 CPU",
        "ev.shm_size": "/dev/shm 大小",
        "ev.shm_used": "/dev/shm 已用",
        "ev.oom_kills": "OOM 次数",
        "ev.memory_limit": "内存上限",
        "ev.cgroup_memory": "已用内存",
        "ev.psi_memory": "任务等待内存的时间",
    },
}
