"""How work is spread: several processes on one GPU (`gpu_contention`), one job's GPUs unevenly used."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator

from gputui.diagnostics.findings import Severity
from gputui.diagnostics.instances import instance_of
from gputui.diagnostics.locale import Texts
from gputui.diagnostics.rules.base import Hit, Rule, Window, ev
from gputui.diagnostics.rules.hang import stalled_now, stopped_gpus
from gputui.diagnostics.thresholds import Thresholds
from gputui.formatting import fmt_pct, fmt_ranges
from gputui.model import GpuSample

# Launchers pass each rank its own `--local-rank N`; without it the ranks of one job share a command line.
_RANK_ARG = re.compile(r"\s--local[-_]rank[= ]\d+")


def gpu_contention(w: Window, th: Thresholds) -> Iterator[Hit]:
    """Several compute processes on one GPU; on a MIG GPU, on one instance (per_instance): processes on
    separate instances do not compete, MIG isolates their SMs and memory."""
    for g in w.gpus():
        pids = w.pids(g)
        if len(pids) < 2:
            continue
        procs = [w.host.process(pid) for pid in pids]
        users = sorted({p.user for p in procs if p is not None and p.user})
        names = ", ".join(f"{p.name if p else '?'} ({pid})" for pid, p in zip(pids, procs, strict=True))
        params: dict[str, object] = {"gpu": g.index, "count": len(pids), "users": ", ".join(users) or "?"}
        shares = _sm_shares(w, g)
        variant = ""
        if len(shares) >= 2:
            # The biggest SM user is taken for the job the GPU is there for; the next one is who competes.
            (_, _), (pid, share) = shares[:2]
            proc = w.host.process(pid)
            params |= {"pid": pid, "who": proc.user if proc and proc.user else "?", "share": fmt_pct(share)}
            variant = "shares"
        elif instance_of(g.index) is not None:  # an instance: the way out is another instance, not another GPU
            variant = "mig"
        listed = ", ".join(f"{pid}: {fmt_pct(share)}" for pid, share in shares) or None
        yield Hit(
            gpus=(g.index,),
            pids=pids,
            value=len(pids),
            params=params,
            variant=variant,
            evidence=(ev("processes", names), ev("users", ", ".join(users) or None), ev("sm_shares", listed)),
        )


def _sm_shares(w: Window, sample: GpuSample) -> list[tuple[int, float]]:
    """(pid, SM %) of the compute processes whose share the driver sampled, biggest first."""
    known = [(p.pid, p.sm_pct) for p in sample.processes if p.kind == "compute" and p.sm_pct is not None]
    return sorted(known, key=lambda item: -item[1])


def _job_key(w: Window, pid: int) -> tuple[str, ...]:
    """Processes of one job: one user running one command line (ranks differ only in their rank argument)."""
    proc = w.host.process(pid)
    if proc is None or proc.cmdline is None:
        return (str(pid),)
    return (proc.user or "", _without_rank(proc.cmdline))


@functools.lru_cache(maxsize=256)
def _without_rank(cmdline: str) -> str:
    """The same few command lines come back every tick."""
    return _RANK_ARG.sub("", cmdline)


def jobs(w: Window) -> list[tuple[set[int], set[int]]]:
    """(GPUs, PIDs) of each job on the GPUs now: one user's processes of one command line, ranks together."""
    found: dict[tuple[str, ...], tuple[set[int], set[int]]] = {}
    for g in w.gpus():
        for pid in w.pids(g):
            gpus, pids = found.setdefault(_job_key(w, pid), (set(), set()))
            gpus.add(g.index)
            pids.add(pid)
    return list(found.values())


def imbalance(w: Window, th: Thresholds) -> Iterator[Hit]:
    """Compares whole GPUs only, never MIG instances (with each other or with a GPU): instances are separate
    slices of separate sizes, each a job's own, and one doing less than another says nothing about either. Not a job
    that has stopped or whose busy GPUs spin (rules/hang.py): its load is uneven because a rank is stuck, which no
    placement evens out."""
    stopped = stopped_gpus(w, th)
    for job_gpus, pids in jobs(w):
        gpus = {i for i in job_gpus if instance_of(i) is None}
        if len(gpus) < 2 or gpus & stopped or any(stalled_now(w, i, th) for i in gpus):
            continue
        utils = {i: w.mean(i, "utilization_gpu_pct") for i in sorted(gpus)}
        known = {i: u for i, u in utils.items() if u is not None}
        if len(known) < 2:
            continue
        spread = max(known.values()) - min(known.values())
        if spread <= th.imbalance_points:
            continue
        order = tuple(sorted(gpus))
        yield Hit(
            gpus=order,
            pids=tuple(sorted(pids)),
            value=round(spread, 1),
            params={"gpus": fmt_ranges(order)},
            evidence=(
                ev("util_spread", round(spread, 1), "points", "mean"),
                ev("gpu_utils", ", ".join(f"{i}: {fmt_pct(u)}" for i, u in known.items()), "", "mean"),
            ),
        )


RULES: tuple[Rule, ...] = (
    Rule(gpu_contention, Severity.WARNING, bound="contended", per_instance=True),
    # The GPUs below the busiest wait for it (nn.DataParallel gathers on GPU 0, uneven shards): their waiting is
    # explained, while the busiest one is judged on its own (verdict.py: a busy GPU is never "waiting").
    Rule(imbalance, Severity.WARNING, metric="utilization_gpu_pct", bound="underused", per_instance=True),
)

TEXTS: Texts = {
    "en": {
        "gpu_contention.title": "GPU {gpu}: shared by {count} processes ({users})",
        "gpu_contention.title.shares": (
            "GPU {gpu}: shared by {count} processes; pid {pid} ({who}) takes {share} of the SMs"
        ),
        "gpu_contention.advice": (
            "Processes compete for this GPU's time and memory. Move one to a free GPU (CUDA_VISIBLE_DEVICES), "
            "agree with the other user, or stop a forgotten notebook."
        ),
        "gpu_contention.advice.shares": (
            "Pid {pid} ({who}) takes {share} of this GPU's SMs, time your job does not get. Move one to a free "
            "GPU (CUDA_VISIBLE_DEVICES), agree with the other user, or stop a forgotten notebook."
        ),
        "gpu_contention.title.mig": "GPU {gpu}: shared by {count} processes ({users})",
        "gpu_contention.advice.mig": (
            "Processes compete for this MIG instance's SMs and memory; the GPU's other instances are isolated "
            "from it. Move one to a free instance (CUDA_VISIBLE_DEVICES=MIG-<uuid>, as `nvidia-smi -L` lists "
            "them), agree with the other user, or stop a forgotten notebook."
        ),
        "gpu_contention.cause": "other users' processes",
        "imbalance.title": "GPUs {gpus}: one job, uneven load",
        "imbalance.advice": (
            "One job uses its GPUs unevenly. With DataParallel the first GPU gathers the outputs: switch to "
            "DistributedDataParallel; otherwise balance the batch or the model split across the GPUs."
        ),
        "imbalance.cause": "uneven work across the job's GPUs",
        "ev.users": "users",
        "ev.sm_shares": "SM share per process",
        "ev.util_spread": "utilization spread",
        "ev.gpu_utils": "utilization per GPU",
    },
    "zh": {
        "gpu_contention.title": "GPU {gpu}：被 {count} 个进程共用（{users}）",
        "gpu_contention.title.shares": "GPU {gpu}：被 {count} 个进程共用；pid {pid}（{who}）占用了 {share} 的 SM",
        "gpu_contention.advice": (
            "多个进程在争用这块 GPU 的算力和显存。请把其中一个移到空闲的 GPU（CUDA_VISIBLE_DEVICES），"
            "与其他用户协商，或关掉遗忘的 notebook。"
        ),
        "gpu_contention.advice.shares": (
            "pid {pid}（{who}）占用了这块 GPU {share} 的 SM，这些时间你的任务用不上。请把其中一个移到空闲的 GPU"
            "（CUDA_VISIBLE_DEVICES），与其他用户协商，或关掉遗忘的 notebook。"
        ),
        "gpu_contention.title.mig": "GPU {gpu}：被 {count} 个进程共用（{users}）",
        "gpu_contention.advice.mig": (
            "多个进程在争用这个 MIG 实例的 SM 和显存；同一 GPU 的其他实例与它隔离。请把其中一个移到空闲的实例"
            "（CUDA_VISIBLE_DEVICES=MIG-<uuid>，`nvidia-smi -L` 可列出），与其他用户协商，或关掉遗忘的 notebook。"
        ),
        "gpu_contention.cause": "其他用户的进程",
        "imbalance.title": "GPU {gpus}：同一任务负载不均",
        "imbalance.advice": (
            "同一个任务的各 GPU 负载不均。使用 DataParallel 时第一块 GPU 负责汇总输出：请改用 "
            "DistributedDataParallel；否则请在各 GPU 间平衡 batch 或模型切分。"
        ),
        "imbalance.cause": "任务在各 GPU 上的负载不均",
        "ev.users": "用户",
        "ev.sm_shares": "各进程 SM 占比",
        "ev.util_spread": "利用率差距",
        "ev.gpu_utils": "各 GPU 利用率",
    },
}
