"""A GPU that waits while its job's main thread, as its stack samples show, waits on something other than its input:
other ranks in a collective, its own Python on the CPU, a checkpoint being written, torch.compile compiling, or a
frame it is blocked in.

Nothing on the host shows these: from outside, such a job reads as `underused`, "look inside the job". The stack
samples (gputui/sources/stacks) look inside, so the verdict can name the wait and the frame. The input pipeline's
kinds (waiting for the next batch, loading in the main process, reading files) are the starvation rules' to name;
a main thread that waits for the GPU has the GPU as its bound, which is no waiting cause.

A kind need not lead to be named: a checkpoint, a compile, file reads or the job's own Python measured holding a
real part of the GPU's waiting (stacks.measured_wait) names it, on any GPU that waits (under the verdict's busy
line), where no leading wait does. "Nothing on this machine explains the waiting" is then said only where nothing
measured does.
"""

from __future__ import annotations

from collections.abc import Iterator

from gputui.diagnostics.findings import Severity
from gputui.diagnostics.locale import Texts
from gputui.diagnostics.rules.base import Hit, Rule, Window, ev
from gputui.diagnostics.rules.stacks import main_process, measured_wait, read_stack, stack_evidence, where
from gputui.diagnostics.rules.starvation import feeds_a_busy_gpu
from gputui.diagnostics.thresholds import Thresholds
from gputui.formatting import fmt_num, fmt_pct
from gputui.model import ActivityKind, GpuSample

# The kinds this rule names when they lead a starving GPU's main thread, each a variant of its own; file reads
# (`io`) are one too, named only where measured (stacks.MEASURED_KINDS): leading, they are the starvation rules'.
WAITS: tuple[ActivityKind, ...] = ("collective", "cpu", "checkpoint", "compile", "idle")


def _waiting(w: Window, th: Thresholds) -> Iterator[tuple[GpuSample, float, tuple[int, ...]]]:
    """GPUs held by a process, under the verdict's busy line over the window and not busy now: those the verdict
    calls underused (the starvation rules' `starving` are those of them under half busy)."""
    for g in w.gpus():
        pids = w.pids(g)
        util = w.mean(g.index, "utilization_gpu_pct")
        if pids and util is not None and util < th.verdict_busy_util_pct and not w.busy_now(g.index, th):
            yield g, util, pids


def job_waits(w: Window, th: Thresholds) -> Iterator[Hit]:
    for g, util, pids in _waiting(w, th):
        proc = main_process(w, pids)
        if proc is None or feeds_a_busy_gpu(w, th, proc.pid):
            continue  # a process that keeps another GPU busy: this one waits on the imbalance (sharing.imbalance)
        stack = read_stack(w, th, proc)
        if stack is None:
            continue
        starved = util < th.starved_util_pct
        kind = stack.lead if starved and stack.lead in WAITS else measured_wait(stack, util, th)
        if kind is None:
            continue
        frame = stack.frame_of(kind)
        yield Hit(
            gpus=(g.index,),
            pids=(proc.pid,),
            value=round(util, 1),
            variant=kind,
            params={
                "gpu": g.index,
                "pid": proc.pid,
                "rank": fmt_num(stack.activity.rank),
                "share": fmt_pct(100 * stack.activity.shares.of(kind)),
                "function": frame.function if frame is not None else "?",
                "where": where(frame) or "?",
            },
            evidence=(
                ev("gpu_util", round(util, 1), "%", "mean"),
                ev("process", f"{proc.name} ({proc.pid})"),
                *stack_evidence(stack, kind),
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
        "job_waits.title.compile": "GPU {gpu}: waits while torch.compile compiles in its main thread ({function})",
        "job_waits.advice.compile": (
            "Its main thread spends {share} of its stack samples in torch.compile's compiler ({where}): Dynamo and "
            "Inductor compile (or recompile) in the main thread while the GPU waits. A job that recompiles every "
            "few steps sees new shapes or guards fail: confirm with TORCH_LOGS=recompiles (each recompile and its "
            'reason), and look for "hit config.recompile_limit (8)" in its log (past it the function runs eagerly). '
            "Mark the dims that change as dynamic (torch._dynamo.mark_dynamic, or torch.compile(dynamic=True)), pad "
            "inputs to a few bucket sizes, review torch._dynamo.config's recompile limits, and compile once (a "
            "warm-up step) before the loop."
        ),
        "job_waits.title.io": "GPU {gpu}: waits while its main thread reads files in {where}",
        "job_waits.advice.io": (
            "Its main thread spends {share} of its stack samples reading files or streams ({where}) while the GPU "
            "waits, though the reads do not lead its time. Move the reads off the step: into DataLoader workers or "
            "a prefetching thread, onto a faster or local disk, or read less per step."
        ),
        "job_waits.title.idle": "GPU {gpu}: waits while its main thread is blocked in {where}",
        "job_waits.advice.idle": (
            "Its main thread is neither running nor waiting for data, the GPU or other ranks: in {share} of its "
            "stack samples it is blocked in {where} (a sleep, a lock, a queue, a subprocess, a network call). "
            "Find out why the loop waits there."
        ),
        "job_waits.cause": "what its main thread waits on (stack samples)",
        "job_waits.cause.collective": "other ranks, in a collective ({share} of the main thread's samples)",
        "job_waits.cause.cpu": "the job's own Python on the CPU ({share} of the main thread's samples)",
        "job_waits.cause.checkpoint": "writing checkpoints ({share} of the main thread's samples)",
        "job_waits.cause.compile": "torch.compile compiling ({share} of the main thread's samples)",
        "job_waits.cause.io": "file reads in the main thread ({share} of its samples)",
        "job_waits.cause.idle": "a blocked main thread ({share} of its samples)",
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
        "job_waits.title.compile": "GPU {gpu}：torch.compile 在主线程中编译（{function}），GPU 在等待",
        "job_waits.advice.compile": (
            "它的主线程有 {share} 的栈采样处在 torch.compile 的编译器中（{where}）：Dynamo 和 Inductor 在主线程中"
            "编译（或重新编译），GPU 在等待。每隔几步就重新编译的任务遇到了新的形状或失效的 guard：用 "
            "TORCH_LOGS=recompiles 确认（列出每次重新编译及其原因），并在日志中查找 "
            '"hit config.recompile_limit (8)"（超过后该函数以 eager 方式运行）。请把会变化的维度标为动态'
            "（torch._dynamo.mark_dynamic，或 torch.compile(dynamic=True)），把输入填充到少数几种尺寸，"
            "检查 torch._dynamo.config 的重新编译上限，并在循环前先编译一次（预热一步）。"
        ),
        "job_waits.title.io": "GPU {gpu}：主线程在 {where} 中读文件，GPU 在等待",
        "job_waits.advice.io": (
            "它的主线程有 {share} 的栈采样在读文件或数据流（{where}），这期间 GPU 在等待，尽管读取并未占据它的大部分"
            "时间。请把读取移出训练步：放进 DataLoader worker 或预取线程，换到更快或本地的磁盘，或每步少读一些。"
        ),
        "job_waits.title.idle": "GPU {gpu}：主线程阻塞在 {where}，GPU 在等待",
        "job_waits.advice.idle": (
            "它的主线程既没有在运行，也没有在等数据、GPU 或其他 rank：它有 {share} 的栈采样阻塞在 {where}"
            "（sleep、锁、队列、子进程、网络调用）。请查明训练循环为什么在那里等待。"
        ),
        "job_waits.cause": "主线程所等待的（栈采样）",
        "job_waits.cause.collective": "集合通信中的其他 rank（主线程 {share} 的采样）",
        "job_waits.cause.cpu": "任务自己的 Python 代码占用 CPU（主线程 {share} 的采样）",
        "job_waits.cause.checkpoint": "写 checkpoint（主线程 {share} 的采样）",
        "job_waits.cause.compile": "torch.compile 在编译（主线程 {share} 的采样）",
        "job_waits.cause.io": "主线程读文件（其 {share} 的采样）",
        "job_waits.cause.idle": "主线程被阻塞（其 {share} 的采样）",
    },
}
