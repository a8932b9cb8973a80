"""A GPU that waits while its job's main thread, as its stack samples show, waits on something other than its input:
other ranks in a collective, its own Python on the CPU, a checkpoint being written, or a frame it is blocked in.

Nothing on the host shows these: from outside, such a job reads as `underused`, "look inside the job". The stack
samples (gputui/sources/stacks) look inside, so the verdict can name the wait and the frame. The input pipeline's
kinds (waiting for the next batch, loading in the main process, reading files) are the starvation rules' to name;
a main thread that waits for the GPU has the GPU as its bound, which is no waiting cause.
"""

from __future__ import annotations

from collections.abc import Iterator

from gputui.diagnostics.findings import Severity
from gputui.diagnostics.locale import Texts
from gputui.diagnostics.rules.base import Hit, Rule, Window, ev
from gputui.diagnostics.rules.stacks import main_process, read_stack, stack_evidence, where
from gputui.diagnostics.rules.starvation import feeds_a_busy_gpu, starving
from gputui.diagnostics.thresholds import Thresholds
from gputui.formatting import fmt_num, fmt_pct
from gputui.model import ActivityKind

# The kinds this rule names, each a variant of its own.
WAITS: tuple[ActivityKind, ...] = ("collective", "cpu", "checkpoint", "idle")


def job_waits(w: Window, th: Thresholds) -> Iterator[Hit]:
    for g, util, pids in starving(w, th):
        proc = main_process(w, pids)
        if proc is None or feeds_a_busy_gpu(w, th, proc.pid):
            continue  # a process that keeps another GPU busy: this one waits on the imbalance (sharing.imbalance)
        stack = read_stack(w, th, proc)
        if stack is None or stack.lead not in WAITS:
            continue
        frame = stack.frame
        yield Hit(
            gpus=(g.index,),
            pids=(proc.pid,),
            value=round(util, 1),
            variant=stack.lead,
            params={
                "gpu": g.index,
                "pid": proc.pid,
                "rank": fmt_num(stack.activity.rank),
                "share": fmt_pct(100 * stack.share),
                "function": frame.function if frame is not None else "?",
                "where": where(frame) or "?",
            },
            evidence=(
                ev("gpu_util", round(util, 1), "%", "mean"),
                ev("process", f"{proc.name} ({proc.pid})"),
                *stack_evidence(stack),
            ),
        )


# The GPU's utilization is what falls; what it argues for is `underused` with its cause named: the machine
# delivers, the job waits on itself (or on other nodes).
RULES: tuple[Rule, ...] = (
    Rule(
        job_waits,
        Severity.WARNING,
        metric="utilization_gpu_pct",
        higher_is_worse=False,
        bound="underused",
        per_instance=True,
    ),
)

TEXTS: Texts = {
    "en": {
        "job_waits.title.collective": "GPU {gpu}: rank {rank} waits on the other ranks in {function}",
        "job_waits.advice.collective": (
            "Its main thread spends {share} of its stack samples in a collective ({where}), waiting for the "
            "slowest rank to arrive: the others are slower, not this one. Look at them (their GPUs, their input, "
            "a slow node: gputui on each node, or gputui fleet), even out the work across ranks (batch and "
            "sequence lengths), and overlap communication with compute (DDP bucket_cap_mb, no_sync() with "
            "gradient accumulation)."
        ),
        "job_waits.title.cpu": "GPU {gpu}: waits while its main thread runs the job's own Python in {where}",
        "job_waits.advice.cpu": (
            "Its main thread spends {share} of its stack samples running the job's own code on a CPU, most in "
            "{where}, while the GPU waits: that work holds every step back. Move it off the step (onto the GPU, "
            "into a DataLoader worker, or less often: logging, metrics, .item() per step), or profile it "
            "(py-spy top --pid {pid})."
        ),
        "job_waits.title.checkpoint": "GPU {gpu}: waits while its job writes a checkpoint ({function})",
        "job_waits.advice.checkpoint": (
            "Its main thread spends {share} of its stack samples saving a checkpoint ({where}), and the GPU "
            "waits meanwhile. Save less often, save asynchronously (torch.distributed.checkpoint.async_save, or "
            "copy the state to the CPU and write it on a thread), or write to a fast local disk and copy it away "
            "in the background."
        ),
        "job_waits.title.idle": "GPU {gpu}: waits while its main thread is blocked in {where}",
        "job_waits.advice.idle": (
            "Its main thread is neither running nor waiting for data, the GPU or other ranks: in {share} of its "
            "stack samples it is blocked in {where} (a sleep, a lock, a queue, a subprocess, a network call). "
            "Find out why the loop waits there."
        ),
        "job_waits.cause": "what its main thread waits on (stack samples)",
        "job_waits.cause.collective": "other ranks, in a collective",
        "job_waits.cause.cpu": "the job's own Python on the CPU",
        "job_waits.cause.checkpoint": "writing checkpoints",
        "job_waits.cause.idle": "a blocked main thread",
    },
    "zh": {
        "job_waits.title.collective": "GPU {gpu}：rank {rank} 在 {function} 中等待其他 rank",
        "job_waits.advice.collective": (
            "它的主线程有 {share} 的栈采样处在集合通信中（{where}），在等最慢的 rank 到达：慢的是其他 rank，"
            "不是这一个。请查看它们（它们的 GPU、输入、较慢的节点：在各节点运行 gputui，或用 gputui fleet），"
            "在各 rank 间均衡工作量（batch 和序列长度），并让通信与计算重叠"
            "（DDP bucket_cap_mb，梯度累积时用 no_sync()）。"
        ),
        "job_waits.title.cpu": "GPU {gpu}：主线程在运行任务自己的 Python 代码（{where}），GPU 在等待",
        "job_waits.advice.cpu": (
            "它的主线程有 {share} 的栈采样在 CPU 上运行任务自己的代码，大多在 {where}，而 GPU 在等待：这些工作拖住了"
            "每一步。请把它移出训练步（放到 GPU 上、放进 DataLoader worker，或降低频率：每步的日志、指标、.item()），"
            "或用 py-spy top --pid {pid} 分析。"
        ),
        "job_waits.title.checkpoint": "GPU {gpu}：任务在写 checkpoint（{function}），GPU 在等待",
        "job_waits.advice.checkpoint": (
            "它的主线程有 {share} 的栈采样在保存 checkpoint（{where}），这期间 GPU 在等待。请降低保存频率，"
            "异步保存（torch.distributed.checkpoint.async_save，或把状态拷到 CPU 后在线程中写出），"
            "或写到快速的本地磁盘再在后台拷走。"
        ),
        "job_waits.title.idle": "GPU {gpu}：主线程阻塞在 {where}，GPU 在等待",
        "job_waits.advice.idle": (
            "它的主线程既没有在运行，也没有在等数据、GPU 或其他 rank：它有 {share} 的栈采样阻塞在 {where}"
            "（sleep、锁、队列、子进程、网络调用）。请查明训练循环为什么在那里等待。"
        ),
        "job_waits.cause": "主线程所等待的（栈采样）",
        "job_waits.cause.collective": "集合通信中的其他 rank",
        "job_waits.cause.cpu": "任务自己的 Python 代码占用 CPU",
        "job_waits.cause.checkpoint": "写 checkpoint",
        "job_waits.cause.idle": "主线程被阻塞",
    },
}
