"""A job that has stopped: its ranks make no progress while their GPUs idle, or read "busy" as a collective's kernel
spins waiting for a peer that never comes (`job_stopped`, critical, read from the ranks' stacks); and, where no stack
can be read, a GPU that reads busy at near-zero SM activity and near-idle power for minutes (`gpu_stalled`).

A rank that blocks outside a collective leaves the others waiting in it: NVML's utilization counts the time any
kernel ran, and a waiting NCCL kernel runs, so their GPUs read ~100% busy at a few % of SM activity and little
more than idle power (NVIDIA/nccl#1025), and nothing happens until the NCCL watchdog fires (10 min) or never. The
stacks say which rank: the ranks of one job (`ProcSample.dist`, from their environment) whose main threads stay in
the same place window after window (`JobActivity.unchanged_since`, gputui/session/stacks.py re-samples them while
their GPUs look like this), the one not in the collective named by its frame.

Where such a job is found, the advice of a busy-but-empty GPU (bigger batches, CUDA graphs) and of uneven load
(DistributedDataParallel) is wrong: those rules step aside for the GPUs of a stopped job (`stopped_gpus`).
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from gputui.diagnostics.findings import Evidence, Severity
from gputui.diagnostics.locale import Texts
from gputui.diagnostics.rules.base import Hit, Rule, Window, compute_pids, ev, rounded
from gputui.diagnostics.rules.stacks import is_fresh, where
from gputui.diagnostics.thresholds import Thresholds
from gputui.formatting import fmt_duration, fmt_num, fmt_pct, fmt_ranges
from gputui.model import ActivityFrame, ActivityKind, GpuSample, ProcSample, Snapshot

# The kinds in which a rank waits on its peers: a collective (gloo blocks in it), or a sync point behind an NCCL
# collective's kernel (`.item()`, synchronize: FACTS, "Distributed jobs and hangs").
WAITING_ON_PEERS: frozenset[ActivityKind] = frozenset({"collective", "gpu_sync"})
# Where a main thread held window after window makes no progress: waiting on peers, or blocked (a lock, an event,
# a sleep). A rank held in its own Python, a checkpoint or reading files is working, however long: rank 0 writing
# a large checkpoint while the others wait in a barrier is slow, not stopped.
HELD: frozenset[ActivityKind] = WAITING_ON_PEERS | {"idle"}


def stalled(util: float | None, sm: float | None, power: float | None, limit: float | None, th: Thresholds) -> bool:
    """Busy (a kernel runs) at near-zero SM activity and near-idle power: a kernel that spins, waiting. At least one
    of SM activity (GPM) and power must be read to tell, and every one read must say so."""
    if util is None or util < th.busy_util_pct:
        return False
    low_sm = None if sm is None else sm <= th.stall_sm_active_pct
    low_power = None if power is None or not limit else 100 * power / limit <= th.stall_power_pct
    said = [flag for flag in (low_sm, low_power) if flag is not None]
    return bool(said) and all(said)


def sample_stalled(sample: GpuSample, th: Thresholds) -> bool:
    """One reading of a GPU that looks `stalled`: what the stack sampler asks between ticks (session/stacks.py)."""
    return stalled(sample.utilization_gpu_pct, sample.sm_active_pct, sample.power_w, sample.power_limit_w, th)


def suspects(snapshot: Snapshot, th: Thresholds) -> tuple[int, ...]:
    """The GPUs of a reading a stopped job would leave as they are: held by a process, and stalled or idle."""
    out = []
    for sample in snapshot.gpus:
        if sample.lost or not compute_pids(sample):
            continue
        util = sample.utilization_gpu_pct
        if sample_stalled(sample, th) or (util is not None and util < th.idle_util_pct):
            out.append(sample.index)
    return tuple(out)


def window_stalled(w: Window, index: int, th: Thresholds) -> bool:
    """`stalled` by the window's means."""
    return stalled(
        w.mean(index, "utilization_gpu_pct"),
        w.mean(index, "sm_active_pct"),
        w.mean(index, "power_w"),
        w.mean(index, "power_limit_w"),
        th,
    )


def stalled_now(w: Window, index: int, th: Thresholds) -> bool:
    """`stalled` in every reading of the last `verdict_settle_s`: a GPU that spins now, whatever the window's means
    still remember of the work before. The rules whose advice fits no spinning GPU step aside on it at once."""
    since = w.latest.timestamp - th.verdict_settle_s
    recent = [s for s in w.series(index) if s.timestamp >= since]
    return bool(recent) and all(sample_stalled(s, th) for s in recent)


def _window_idle(w: Window, index: int, th: Thresholds) -> bool:
    util = w.mean(index, "utilization_gpu_pct")
    return util is not None and util < th.idle_util_pct


@dataclass(frozen=True, slots=True)
class Rank:
    """A rank of a job on this machine, and where its main thread has stayed."""

    proc: ProcSample
    kind: ActivityKind
    frame: ActivityFrame | None
    since: float

    @property
    def number(self) -> str:
        rank = self.proc.dist.rank if self.proc.dist is not None else None
        return fmt_num(rank)


@dataclass(frozen=True, slots=True)
class Stopped:
    """A job on this machine that makes no progress: its ranks, the one stuck outside the collective (None where all
    of them wait in it: the stuck one is on another machine), its GPUs, and since when nothing moved."""

    job: str
    ranks: tuple[Rank, ...]
    stuck: Rank | None
    gpus: tuple[int, ...]
    since: float


def stopped_jobs(w: Window, th: Thresholds) -> tuple[Stopped, ...]:
    """The jobs of the latest reading that have stopped, computed once per window for every rule that asks."""
    return w.shared("stopped_jobs", lambda: tuple(_stopped(w, th)))


def stopped_gpus(w: Window, th: Thresholds) -> frozenset[int]:
    """The GPUs of stopped jobs: no advice for a running job (batch sizes, load balance) fits them."""
    return frozenset(i for job in stopped_jobs(w, th) for i in job.gpus)


def _stopped(w: Window, th: Thresholds) -> Iterator[Stopped]:
    now = w.latest.timestamp
    jobs: dict[str, list[ProcSample]] = {}
    for proc in w.host.processes:
        if proc.dist is not None and proc.dist.job is not None:
            jobs.setdefault(proc.dist.job, []).append(proc)
    for job, procs in sorted(jobs.items()):
        ranks = [_held(w, th, proc, now) for proc in procs]
        held = [rank for rank in ranks if rank is not None]
        if not held or len(held) < len(ranks):
            continue  # a rank not read, or not held: progress cannot be ruled out
        pids = {proc.pid for proc in procs}
        gpus = tuple(g.index for g in w.gpus() if pids & set(w.pids(g)))
        if not gpus or not all(window_stalled(w, i, th) or _window_idle(w, i, th) for i in gpus):
            continue  # a GPU of the job does real work
        order = sorted(held, key=lambda r: r.proc.dist.rank if r.proc.dist and r.proc.dist.rank is not None else 0)
        outside = [rank for rank in order if rank.kind not in WAITING_ON_PEERS]
        yield Stopped(
            job=job,
            ranks=tuple(order),
            stuck=outside[0] if outside else None,
            gpus=gpus,
            since=max(rank.since for rank in held),
        )


def _held(w: Window, th: Thresholds, proc: ProcSample, now: float) -> Rank | None:
    """The rank, where its fresh stacks show its main thread held in one place for `stopped_after_s` or more."""
    activity = proc.activity
    if activity is None or not is_fresh(w, th, activity) or activity.unchanged_since is None:
        return None
    kind = activity.leading
    if kind is None or kind not in HELD or now - activity.unchanged_since < th.stopped_after_s:
        return None
    frame = next((f for f in activity.top if f.kind == kind), None)
    return Rank(proc=proc, kind=kind, frame=frame, since=activity.unchanged_since)


def job_stopped(w: Window, th: Thresholds) -> Iterator[Hit]:
    for job in stopped_jobs(w, th):
        now = w.latest.timestamp
        stuck = job.stuck
        waiting = [rank for rank in job.ranks if rank is not stuck]
        params: dict[str, object] = {
            "gpus": fmt_ranges(job.gpus),
            "count": len(job.gpus),
            "held": fmt_duration(now - job.since),
            "since": time.strftime("%H:%M:%S", time.localtime(job.since)),
            "waiting": ", ".join(rank.number for rank in waiting) or "-",
            "cost": "" if w.price is None else f" ({w.price.format(len(job.gpus) * w.price.per_gpu_hour)})",
        }
        if stuck is not None:
            params |= {"rank": stuck.number, "pid": stuck.proc.pid, "where": where(stuck.frame) or "?"}
            params["function"] = stuck.frame.function if stuck.frame is not None else "?"
        stuck_words = (
            f"{stuck.number} (PID {stuck.proc.pid}) in {where(stuck.frame) or '?'}" if stuck is not None else None
        )
        evidence = [
            ev("job", job.job),
            *((ev("stuck_rank", stuck_words),) if stuck_words is not None else ()),
            ev("stopped_for", round(now - job.since), "s"),
            *(
                ev("rank_held", f"{rank.number} (PID {rank.proc.pid}): {rank.kind} in {where(rank.frame) or '?'}")
                for rank in job.ranks
            ),
            ev("idle_gpu_hours", float(len(job.gpus)), "GPU-h/h"),
        ]
        yield Hit(
            gpus=job.gpus,
            pids=tuple(rank.proc.pid for rank in ((stuck, *waiting) if stuck is not None else waiting)),
            value=round(now - job.since),
            variant="rank" if stuck is not None else "elsewhere",
            params=params,
            evidence=tuple(evidence),
        )


def gpu_stalled(w: Window, th: Thresholds) -> Iterator[Hit]:
    """Busy at near-zero SM activity and near-idle power, where the stacks do not say more: `job_stopped` speaks
    for the GPUs of a job whose ranks' stacks were read. The engine holds it `stopped_after_s` before it opens."""
    stopped = stopped_gpus(w, th)
    for g in w.gpus():
        if g.index in stopped or not w.pids(g) or not window_stalled(w, g.index, th):
            continue
        pids = w.pids(g)
        procs = [p for p in (w.host.process(pid) for pid in pids) if p is not None]
        util, sm = w.mean(g.index, "utilization_gpu_pct"), w.mean(g.index, "sm_active_pct")
        power, limit = w.mean(g.index, "power_w"), w.mean(g.index, "power_limit_w")
        power_pct = None if power is None or not limit else 100 * power / limit
        ranks = [p for p in procs if p.dist is not None and p.dist.rank is not None]
        yield Hit(
            gpus=(g.index,),
            pids=pids,
            value=rounded(sm if sm is not None else power_pct),
            params={"gpu": g.index, "pid": pids[0], "sm": fmt_pct(sm), "power": fmt_pct(power_pct)},
            evidence=(
                ev("gpu_util", rounded(util), "%", "mean"),
                ev("sm_active", rounded(sm), "%", "mean"),
                ev("power_of_limit", rounded(power_pct), "%", "mean"),
                *((ev("rank", ranks[0].dist.rank if ranks[0].dist else None),) if ranks else ()),
                *_unread(procs),
            ),
        )


def _unread(procs: Sequence[ProcSample]) -> tuple[Evidence, ...]:
    """Why the stacks say nothing, where they were tried, and whose environment could not be read."""
    out = []
    errors = [p.activity.error for p in procs if p.activity is not None and p.activity.error]
    if errors:
        out.append(ev("stacks_unread", errors[0].partition(": ")[2] or errors[0]))
    if any(p.dist is not None and p.dist.unreadable for p in procs):
        out.append(ev("environ_unreadable", ", ".join(str(p.pid) for p in procs if p.dist and p.dist.unreadable)))
    return tuple(out)


def _stopped_after(th: Thresholds) -> float:
    return th.stopped_after_s


def _at_once(_: Thresholds) -> float:
    return 0.0


# job_stopped carries its own hold (the ranks held `stopped_after_s` in their stacks); gpu_stalled, which reads
# only the GPU, is held that long by the engine. A stopped job is the most serious class a GPU can take.
RULES: tuple[Rule, ...] = (
    Rule(job_stopped, Severity.CRITICAL, metric="utilization_gpu_pct", bound="stopped", open_after=_at_once),
    Rule(
        gpu_stalled,
        Severity.WARNING,
        metric="sm_active_pct",
        higher_is_worse=False,
        bound="stopped",
        open_after=_stopped_after,
    ),
)

_EN: Mapping[str, str] = {
    "job_stopped.title.rank": "GPUs {gpus}: job stopped: rank {rank} (PID {pid}) is blocked in {where}",
    "job_stopped.advice.rank": (
        "Nothing has progressed for {held} (since {since}): rank {rank} is held outside the collective in "
        "{where}, and rank(s) {waiting} wait for it in the collective, their GPUs idle or spinning (busy at "
        "near-zero SM activity). {count} GPU-hour(s) lost every hour{cost}. Look at rank {rank}: py-spy dump --pid "
        "{pid}, and its log. With NCCL, TORCH_NCCL_TRACE_BUFFER_SIZE=2000 and TORCH_NCCL_DUMP_ON_TIMEOUT=1 make "
        "the flight recorder dump what each rank was doing when the watchdog fires. Then kill the job and restart "
        "it from its last checkpoint."
    ),
    "job_stopped.title.elsewhere": "GPUs {gpus}: job stopped: every rank here waits in the collective",
    "job_stopped.advice.elsewhere": (
        "Nothing has progressed for {held} (since {since}): rank(s) {waiting} on this machine all wait in the "
        "collective, so the rank that does not arrive runs on another machine (gputui fleet names it where "
        "gputui serves each node). {count} GPU-hour(s) lost every hour{cost}. Find it: py-spy dump --pid on the ranks "
        "of the other nodes, their logs, and the NCCL flight recorder (TORCH_NCCL_TRACE_BUFFER_SIZE=2000, "
        "TORCH_NCCL_DUMP_ON_TIMEOUT=1). Then kill the job and restart it from its last checkpoint."
    ),
    "job_stopped.cause": "a job that makes no progress",
    "job_stopped.cause.rank": "a rank blocked outside the collective",
    "job_stopped.cause.elsewhere": "ranks waiting on a rank of another machine",
    "gpu_stalled.title": "GPU {gpu}: busy at {sm} SM activity and {power} power: likely a job that has stopped",
    "gpu_stalled.advice": (
        "Its kernels run but do nothing: a collective's kernel spinning while it waits for a rank that never "
        "arrives reads like this (utilization ~100%, SM activity and power near idle), for minutes, until the NCCL "
        "watchdog fires or never. Confirm with py-spy dump --pid {pid} (as root or the job's owner), or start the "
        "job under `gputui run -- ...` so that gputui reads its stacks and names the rank that is stuck."
    ),
    "gpu_stalled.cause": "a kernel that spins without work (likely a stopped job)",
    "ev.job": "job (its ranks' environment)",
    "ev.stopped_for": "nothing progressed for",
    "ev.stuck_rank": "the rank not in the collective",
    "ev.rank_held": "rank held",
    "ev.idle_gpu_hours": "GPU-hours lost an hour",
    "ev.power_of_limit": "power (% of the limit)",
    "ev.stacks_unread": "stacks not read",
    "ev.environ_unreadable": "environment unreadable (PIDs)",
}

_ZH: Mapping[str, str] = {
    "job_stopped.title.rank": "GPU {gpus}：任务已停止：rank {rank}（PID {pid}）阻塞在 {where}",
    "job_stopped.advice.rank": (
        "已有 {held} 没有任何进展（自 {since} 起）：rank {rank} 停在集合通信之外的 {where}，rank {waiting} "
        "在集合通信中等它，它们的 GPU 空闲或在空转（忙碌但 SM 活动接近零）。每小时损失 {count} GPU 小时{cost}。"
        "请查看 rank {rank}：py-spy dump --pid {pid} 及其日志。使用 NCCL 时，设置 "
        "TORCH_NCCL_TRACE_BUFFER_SIZE=2000 和 TORCH_NCCL_DUMP_ON_TIMEOUT=1，看门狗触发时 flight recorder "
        "会记录各 rank 当时在做什么。然后终止任务，从最近的 checkpoint 重新开始。"
    ),
    "job_stopped.title.elsewhere": "GPU {gpus}：任务已停止：本机所有 rank 都在集合通信中等待",
    "job_stopped.advice.elsewhere": (
        "已有 {held} 没有任何进展（自 {since} 起）：本机的 rank {waiting} 都在集合通信中等待，没有到达的 rank "
        "在另一台机器上（各节点都由 gputui 提供数据时，gputui fleet 会指出它）。每小时损失 {count} GPU 小时{cost}。"
        "请找到它：对其他节点的 rank 执行 py-spy dump --pid，查看它们的日志和 NCCL flight recorder"
        "（TORCH_NCCL_TRACE_BUFFER_SIZE=2000，TORCH_NCCL_DUMP_ON_TIMEOUT=1）。然后终止任务，"
        "从最近的 checkpoint 重新开始。"
    ),
    "job_stopped.cause": "任务没有进展",
    "job_stopped.cause.rank": "有 rank 阻塞在集合通信之外",
    "job_stopped.cause.elsewhere": "各 rank 在等另一台机器上的 rank",
    "gpu_stalled.title": "GPU {gpu}：忙碌但 SM 活动仅 {sm}、功耗仅 {power}：任务很可能已停止",
    "gpu_stalled.advice": (
        "它的 kernel 在运行却没有做事：集合通信的 kernel 在等一个永远不到的 rank 时就是这样空转的"
        "（利用率约 100%，SM 活动和功耗接近空闲），持续数分钟，直到 NCCL 看门狗触发，或一直如此。"
        "请用 py-spy dump --pid {pid} 确认（以 root 或任务所有者身份），或用 `gputui run -- ...` 启动任务，"
        "让 gputui 读取它的栈并指出卡住的 rank。"
    ),
    "gpu_stalled.cause": "kernel 空转而无实际工作（很可能任务已停止）",
    "ev.job": "任务（各 rank 的环境变量）",
    "ev.stopped_for": "无进展时长",
    "ev.stuck_rank": "不在集合通信中的 rank",
    "ev.rank_held": "停住的 rank",
    "ev.idle_gpu_hours": "每小时损失的 GPU 小时",
    "ev.power_of_limit": "功耗（占上限的 %）",
    "ev.stacks_unread": "未能读取栈",
    "ev.environ_unreadable": "无法读取环境变量（PID）",
}

TEXTS: Texts = {"en": dict(_EN), "zh": dict(_ZH)}
