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
from gputui.diagnostics.thresholds import Thresholds
from gputui.formatting import fmt_num
from gputui.model import GpuSample, ProcSample


def _starving(w: Window, th: Thresholds) -> list[tuple[GpuSample, float, tuple[int, ...]]]:
    """GPUs held by a process whose utilization averages low over the window, with that mean (all four rules
    start from them, so they are found once per window)."""

    def find() -> list[tuple[GpuSample, float, tuple[int, ...]]]:
        found = []
        for g in w.gpus():
            pids = w.pids(g)
            if not pids:
                continue
            util = w.mean(g.index, "utilization_gpu_pct")
            if util is not None and util < th.starved_util_pct:
                found.append((g, util, pids))
        return found

    return w.shared("starving", find)


def _busiest(w: Window, pids: tuple[int, ...]) -> ProcSample | None:
    procs = [p for p in (w.host.process(pid) for pid in pids) if p is not None and p.cpu_pct is not None]
    return max(procs, key=lambda p: p.cpu_pct or 0.0) if procs else None


def _util(util: float) -> Evidence:
    return ev("gpu_util", round(util, 1), "%", "mean")


def _cpu_bound(proc: ProcSample | None, th: Thresholds) -> bool:
    """About one core, or runnable that much of the time: on a CPU plus waiting on a run queue (schedstat),
    which is how a CPU-bound process looks when the CPUs it may use are all taken."""
    if proc is None or proc.cpu_pct is None:
        return False
    return proc.cpu_pct + (proc.run_queue_wait_pct or 0.0) >= th.starved_proc_cpu_pct


def _cpu_evidence(w: Window, host_cpu: float | None) -> tuple[Evidence, ...]:
    """The host's CPU and, inside a cgroup with a quota, the quota's: the host's is not what the job may use."""
    limits = w.latest.system.container
    quota = limits.cpu_quota_cores if limits else None
    cgroup = (
        ev("cpu_quota", quota, "CPUs"),
        ev("quota_used", rounded(w.host_mean("container.cpu_pct_of_quota")), "%", "mean"),
        ev("throttled_periods", rounded(w.host_mean("container.cpu_throttled_pct")), "%", "mean"),
        ev("psi_cpu", rounded(w.host_mean("psi.cpu_some_pct")), "%", "mean"),
    )
    # Without a quota or PSI these say nothing: left out rather than shown as n/a on every host.
    return (ev("host_cpu", rounded(host_cpu), "%", "mean"), *(e for e in cgroup if e.value is not None))


def _host_saturated(host_cpu: float | None, th: Thresholds) -> bool:
    return host_cpu is not None and host_cpu >= th.host_cpu_saturated_pct


def _quota_saturated(w: Window, th: Thresholds) -> bool:
    """The CPUs the cgroup may use are all busy: its quota spent, its periods throttled, tasks waiting."""
    quota_used = w.host_mean("container.cpu_pct_of_quota")
    throttled = w.host_mean("container.cpu_throttled_pct")
    waiting = w.host_mean("psi.cpu_some_pct")
    return (
        (quota_used is not None and quota_used >= th.host_cpu_saturated_pct)
        or (throttled is not None and throttled >= th.cpu_throttled_pct)
        or (waiting is not None and waiting >= th.psi_cpu_some_pct)
    )


def starvation_cpu(w: Window, th: Thresholds) -> Iterator[Hit]:
    host_cpu = w.host_mean("cpu_pct")
    quota_full = _quota_saturated(w, th)
    saturated = quota_full or _host_saturated(host_cpu, th)
    for g, util, pids in _starving(w, th):
        hidden = [p.pid for p in g.processes if p.kind == "compute" and p.seen == "hidden"]
        if hidden and len(hidden) == len(pids):
            yield _hidden_job(w, g, util, hidden, host_cpu)
            continue
        proc = _busiest(w, pids)
        run_queue = proc.run_queue_wait_pct if proc else None
        cpu_bound = _cpu_bound(proc, th)
        if not (cpu_bound or saturated):
            continue
        name = f"{proc.name} ({proc.pid})" if proc else "?"
        children = proc.children if proc else None
        yield Hit(
            gpus=(g.index,),
            pids=(proc.pid,) if proc else pids,
            value=round(util, 1),
            # Where the cgroup's CPUs are what is full, more data-loader workers only queue for them.
            variant="quota" if quota_full and not cpu_bound else "",
            params={"gpu": g.index, "name": name, "children": fmt_num(children)},
            evidence=(
                _util(util),
                ev("process", name),
                ev("process_cpu", proc.cpu_pct if proc else None, "%"),
                *((ev("run_queue_wait", rounded(run_queue), "%"),) if run_queue is not None else ()),
                ev("workers", children),
                *_cpu_evidence(w, host_cpu),
            ),
        )


def _hidden_job(w: Window, g: GpuSample, util: float, hidden: list[int], host_cpu: float | None) -> Hit:
    """A GPU whose process lives in another PID namespace: its low use is reported from the GPU's side, with
    what the host and the cgroup show, rather than not at all."""
    pid = ", ".join(str(p) for p in hidden)
    return Hit(
        gpus=(g.index,),
        pids=tuple(hidden),
        value=round(util, 1),
        variant="hidden",
        params={"gpu": g.index, "pid": pid},
        evidence=(_util(util), ev("hidden_pid", pid), *_cpu_evidence(w, host_cpu)),
    )


def starvation_io(w: Window, th: Thresholds) -> Iterator[Hit]:
    iowait = w.host_mean("iowait_pct")
    busy = w.host_mean("disk_busy_pct")
    stalled = w.host_mean("psi.io_full_pct")
    if not (
        (iowait is not None and iowait >= th.iowait_pct)
        or (busy is not None and busy >= th.disk_busy_pct)
        or (stalled is not None and stalled >= th.psi_io_full_pct)
    ):
        return
    read = w.host_mean("disk_read_bytes_s")
    for g, util, pids in _starving(w, th):
        procs = [p for p in (w.host.process(pid) for pid in pids) if p is not None]
        proc_read = sum(p.read_bytes_s or 0.0 for p in procs) if procs else None
        yield Hit(
            gpus=(g.index,),
            pids=pids,
            value=round(util, 1),
            params={"gpu": g.index},
            evidence=(
                _util(util),
                ev("iowait", rounded(iowait), "%", "mean"),
                ev("disk_busy", rounded(busy), "%", "mean"),
                ev("disk_read", rounded(read, 1e6), "MB/s", "mean"),
                ev("process_read", rounded(proc_read, 1e6), "MB/s"),
                *((ev("psi_io_full", rounded(stalled), "%", "mean"),) if stalled is not None else ()),
            ),
        )


def starvation_net(w: Window, th: Thresholds) -> Iterator[Hit]:
    link = w.host.net_link_bytes_s
    rx = w.host_mean("net_rx_bytes_s")
    if not link or rx is None or rx < th.net_saturated_pct / 100 * link:
        return
    for g, util, pids in _starving(w, th):
        yield Hit(
            gpus=(g.index,),
            pids=pids,
            value=round(util, 1),
            params={"gpu": g.index},
            evidence=(
                _util(util),
                ev("net_rx", round(rx / 1e6, 1), "MB/s", "mean"),
                ev("net_link", round(link / 1e6, 1), "MB/s"),
            ),
        )


def cpu_contention(w: Window, th: Thresholds) -> Iterator[Hit]:
    """The CPUs the job may run on are saturated and most of that is not the GPU jobs' own main processes.

    Inside a cgroup with a cpuset those are the cpuset's CPUs: a host busy elsewhere takes nothing from it."""
    host_cpu, cores = _usable_cpu(w)
    if host_cpu is None or not cores or host_cpu < th.host_cpu_saturated_pct:
        return
    used = host_cpu * cores  # in % of one core
    jobs = sum(p.cpu_pct or 0.0 for p in w.host.processes)
    others = max(0.0, used - jobs)
    if others < used / 2:
        return
    for g, util, pids in _starving(w, th):
        yield Hit(
            gpus=(g.index,),
            pids=pids,
            value=round(100 * others / (cores * 100), 1),
            params={"gpu": g.index},
            evidence=(
                _util(util),
                ev("host_cpu", round(host_cpu, 1), "%", "mean"),
                ev("others_cpu", round(others / cores, 1), "%", "mean"),
            ),
        )


def _usable_cpu(w: Window) -> tuple[float | None, int]:
    """Mean busy % over the window of the CPUs this machine's jobs may use, and how many there are."""
    limits = w.latest.system.container
    cpuset = limits.cpuset_cpus if limits is not None else None
    cores = len(w.host.cpu_pct_per_core)
    if not cpuset or len(cpuset) >= cores:
        return w.host_mean("cpu_pct"), cores

    def busy() -> float | None:
        readings = [
            sum(per_core[c] for c in cpuset if c < len(per_core)) / len(cpuset)
            for per_core in (snap.host.cpu_pct_per_core for snap in w.snapshots)
            if per_core
        ]
        return sum(readings) / len(readings) if readings else None

    return w.shared("cpuset_cpu", busy), len(cpuset)


RULES: tuple[Rule, ...] = (
    Rule(
        "starvation_cpu",
        Severity.WARNING,
        starvation_cpu,
        metric="utilization_gpu_pct",
        higher_is_worse=False,
        bound="input_bound",
    ),
    Rule(
        "starvation_io",
        Severity.WARNING,
        starvation_io,
        metric="utilization_gpu_pct",
        higher_is_worse=False,
        bound="input_bound",
    ),
    Rule(
        "starvation_net",
        Severity.WARNING,
        starvation_net,
        metric="utilization_gpu_pct",
        higher_is_worse=False,
        bound="input_bound",
    ),
    Rule("cpu_contention", Severity.INFO, cpu_contention, metric="utilization_gpu_pct"),
)

TEXTS: Texts = {
    "en": {
        "starvation_cpu.title": "GPU {gpu}: starved by the CPU ({name})",
        "starvation_cpu.advice": (
            "The GPU waits for input the CPU cannot prepare fast enough ({children} data-loader workers). Raise "
            "DataLoader num_workers, set pin_memory=True, prefetch (prefetch_factor), and move preprocessing "
            "and augmentation to the GPU."
        ),
        "starvation_cpu.title.quota": "GPU {gpu}: starved by the container's CPU quota ({name})",
        "starvation_cpu.advice.quota": (
            "The GPU waits for input while the CPUs this container may use are all busy ({children} data-loader "
            "workers per job share them). More workers will not help: raise the CPU quota, or do less per "
            "sample on the CPU (decode and augment on the GPU, e.g. NVIDIA DALI; pre-process the dataset once)."
        ),
        "starvation_cpu.title.hidden": "GPU {gpu}: waits for input; its process (host PID {pid}) is outside this "
        "PID namespace",
        "starvation_cpu.advice.hidden": (
            "A process holds this GPU but uses it little, and it cannot be seen from here: the driver names it "
            "by its host PID, which this container's PID namespace does not show. Run gputui in the job's own "
            "container (or on the host) to see its CPU and data-loader workers; the host and quota figures "
            "below are this container's."
        ),
        "starvation_io.title": "GPU {gpu}: starved by disk I/O",
        "starvation_io.advice": (
            "The GPU waits for data the disk cannot deliver fast enough. Copy the dataset to a local SSD, cache "
            "it in memory, use more DataLoader workers, and read larger sequential files instead of many small "
            "ones (WebDataset, LMDB, TFRecord)."
        ),
        "starvation_net.title": "GPU {gpu}: starved by the network",
        "starvation_net.advice": (
            "Network receive runs near the link speed while the GPU waits. Stage the data on a local disk, "
            "cache it, compress it, or use a faster link."
        ),
        "cpu_contention.title": "GPU {gpu}: waits while other processes fill the host CPUs",
        "cpu_contention.advice": (
            "The host's CPUs are busy with other work while this GPU waits. Find the busy processes with `top`, "
            "lower their priority (nice) or give the training job its own cores (taskset)."
        ),
        "ev.process": "process",
        "ev.process_cpu": "process CPU (100 = one core)",
        "ev.run_queue_wait": "waiting for a CPU (100 = all the time)",
        "ev.hidden_pid": "host PID, not visible here",
        "ev.psi_io_full": "I/O pressure (full)",
        "ev.host_cpu": "host CPU",
        "ev.others_cpu": "CPU used by other processes",
        "ev.iowait": "iowait",
        "ev.disk_busy": "disk busy",
        "ev.disk_read": "disk read",
        "ev.process_read": "process read",
        "ev.net_rx": "network receive",
        "ev.net_link": "link speed",
    },
    "zh": {
        "starvation_cpu.title": "GPU {gpu}：被 CPU 拖慢（{name}）",
        "starvation_cpu.advice": (
            "GPU 在等 CPU 准备数据（数据加载 worker 数：{children}）。请增大 DataLoader 的 num_workers，"
            "设置 pin_memory=True，开启预取（prefetch_factor），并把预处理和数据增强移到 GPU 上。"
        ),
        "starvation_cpu.title.quota": "GPU {gpu}：被容器的 CPU 配额拖慢（{name}）",
        "starvation_cpu.advice.quota": (
            "GPU 在等待输入，而容器可用的 CPU 已全部占满（每个任务有 {children} 个数据加载 worker 在争用）。"
            "增加 worker 没有用：请提高 CPU 配额，或减少每个样本在 CPU 上的工作（在 GPU 上解码和增强，"
            "如 NVIDIA DALI；预先处理好数据集）。"
        ),
        "starvation_cpu.title.hidden": "GPU {gpu}：在等待输入；其进程（宿主机 PID {pid}）不在本 PID 命名空间内",
        "starvation_cpu.advice.hidden": (
            "有进程占用这块 GPU 但利用率很低，而且从这里看不到它：驱动给出的是宿主机 PID，"
            "本容器的 PID 命名空间里没有它。请在任务所在的容器（或宿主机）上运行 gputui，"
            "以查看它的 CPU 和数据加载 worker；下面的主机和配额数据是本容器的。"
        ),
        "starvation_io.title": "GPU {gpu}：被磁盘 I/O 拖慢",
        "starvation_io.advice": (
            "GPU 在等磁盘读数据。请把数据集拷到本地 SSD，缓存到内存，增加 DataLoader worker，"
            "并改用大的顺序读文件代替大量小文件（WebDataset、LMDB、TFRecord）。"
        ),
        "starvation_net.title": "GPU {gpu}：被网络拖慢",
        "starvation_net.advice": (
            "GPU 等待时网络接收接近链路速率。请先把数据放到本地磁盘、做缓存、压缩，或使用更快的网络。"
        ),
        "cpu_contention.title": "GPU {gpu}：主机 CPU 被其他进程占满",
        "cpu_contention.advice": (
            "GPU 等待时主机 CPU 被其他任务占满。请用 `top` 找出这些进程，降低其优先级（nice），"
            "或为训练任务绑定专用核心（taskset）。"
        ),
        "ev.process": "进程",
        "ev.process_cpu": "进程 CPU（100 = 一个核心）",
        "ev.run_queue_wait": "等待 CPU（100 = 一直在等）",
        "ev.hidden_pid": "宿主机 PID（此处不可见）",
        "ev.psi_io_full": "I/O 压力（full）",
        "ev.host_cpu": "主机 CPU",
        "ev.others_cpu": "其他进程的 CPU",
        "ev.iowait": "iowait",
        "ev.disk_busy": "磁盘繁忙",
        "ev.disk_read": "磁盘读取",
        "ev.process_read": "进程读取",
        "ev.net_rx": "网络接收",
        "ev.net_link": "链路速率",
    },
}
