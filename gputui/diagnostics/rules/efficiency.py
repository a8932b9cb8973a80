"""Busy is not efficient (GPM, Hopper and newer): SMs left empty (`low_sm_activity`), tensor cores idle while
FP32 runs on CUDA cores (`tensor_cores_idle`), bound by DRAM bandwidth (`memory_bound`).

NVML's utilization counts the time any kernel ran; GPM says how full the GPU was meanwhile. Each rule judges
window means, so one short phase (an evaluation step, a checkpoint) does not open a finding. GPUs without
GPM report None and these rules stay silent about them.
"""

from __future__ import annotations

from collections.abc import Iterator

from gputui.diagnostics.figures import figures_of
from gputui.diagnostics.findings import Severity
from gputui.diagnostics.locale import Texts
from gputui.diagnostics.rules.base import Hit, Rule, Window, ev, rounded
from gputui.diagnostics.rules.hang import stalled_now, stopped_gpus
from gputui.diagnostics.thresholds import Thresholds
from gputui.formatting import fmt_pct


def low_sm_activity(w: Window, th: Thresholds) -> Iterator[Hit]:
    """Not for a GPU whose job has stopped (job_stopped, gpu_stalled name it). A GPU that spins now (busy at near-zero
    SM activity and power) is the `spinning` variant until then: a collective's kernel waiting for a late or lost
    peer is empty, and no batch size fills it (rules/hang.py); nor is such a GPU GPU-bound."""
    stopped = stopped_gpus(w, th)
    for g in w.gpus():
        if g.index in stopped:
            continue
        figures = figures_of(w, g.index)
        util, sm = figures.busy_pct, figures.sm_active_pct
        if util is None or sm is None or util < th.efficiency_busy_util_pct or sm >= th.sm_active_low_pct:
            continue
        yield Hit(
            gpus=(g.index,),
            pids=w.pids(g),
            value=round(sm, 1),
            variant="spinning" if stalled_now(w, g.index, th) else "",
            params={"gpu": g.index, "util": fmt_pct(util), "sm": fmt_pct(sm)},
            evidence=(
                ev("gpu_util", rounded(util), "%", "mean"),
                ev("sm_active", rounded(sm), "%", "mean"),
                ev("sm_occupancy", rounded(w.mean(g.index, "sm_occupancy_pct")), "%", "mean"),
            ),
        )


def tensor_cores_idle(w: Window, th: Thresholds) -> Iterator[Hit]:
    for g in w.gpus():
        figures = figures_of(w, g.index)
        sm, tensor = figures.sm_active_pct, figures.tensor_active_pct
        fp32 = w.mean(g.index, "fp32_active_pct")
        if sm is None or tensor is None or fp32 is None:
            continue
        if sm < th.sm_active_low_pct or tensor >= th.tensor_idle_pct or fp32 < th.tensor_idle_fp32_pct:
            continue
        yield Hit(
            gpus=(g.index,),
            pids=w.pids(g),
            value=round(tensor, 1),
            params={"gpu": g.index, "tensor": fmt_pct(tensor, 1), "fp32": fmt_pct(fp32)},
            evidence=(
                ev("sm_active", rounded(sm), "%", "mean"),
                ev("tensor_active", rounded(tensor), "%", "mean"),
                ev("fp32_active", rounded(fp32), "%", "mean"),
            ),
        )


def memory_bound(w: Window, th: Thresholds) -> Iterator[Hit]:
    for g in w.gpus():
        figures = figures_of(w, g.index)
        dram = figures.dram_bw_pct
        if dram is None or dram < th.memory_bound_dram_pct:
            continue
        yield Hit(
            gpus=(g.index,),
            pids=w.pids(g),
            value=round(dram, 1),
            params={"gpu": g.index, "dram": fmt_pct(dram)},
            evidence=(
                ev("dram_bw", rounded(dram), "%", "mean"),
                ev("sm_active", rounded(figures.sm_active_pct), "%", "mean"),
                ev("tensor_active", rounded(figures.tensor_active_pct), "%", "mean"),
            ),
        )


RULES: tuple[Rule, ...] = (
    Rule(
        low_sm_activity,
        Severity.WARNING,
        metric="sm_active_pct",
        higher_is_worse=False,
        bound="inefficient",
        per_instance=True,
    ),
    Rule(
        tensor_cores_idle,
        Severity.WARNING,
        metric="tensor_active_pct",
        higher_is_worse=False,
        bound="inefficient",
        per_instance=True,
    ),
    Rule(memory_bound, Severity.INFO, metric="dram_bw_pct", bound="memory_bound_gpu", per_instance=True),
)

TEXTS: Texts = {
    "en": {
        "low_sm_activity.title": "GPU {gpu}: {util} busy, but only {sm} of its SMs at work",
        "low_sm_activity.advice": (
            "A kernel is nearly always running, but each fills few SMs: the kernels are too small for this GPU "
            "(tiny batch, many small ops, the CPU busy launching them). Use a bigger batch, capture the step in "
            "CUDA graphs, try torch.compile, or fuse small ops."
        ),
        "low_sm_activity.cause": "kernels too small to fill the SMs",
        "low_sm_activity.title.spinning": (
            "GPU {gpu}: {util} busy at {sm} SM activity and near-idle power: a kernel spins"
        ),
        "low_sm_activity.advice.spinning": (
            "A kernel is always running but does no work and draws almost no power: most often a collective (NCCL) "
            "waiting for a rank that is late or has stopped. If it holds, gputui says whether the job has stopped and "
            "which rank holds it (its stacks; or py-spy dump --pid on each rank). No batch size or compiler fills it."
        ),
        "low_sm_activity.cause.spinning": "a kernel spinning without work, likely a collective waiting for a peer",
        "tensor_cores_idle.title": "GPU {gpu}: tensor cores idle ({tensor}), math in FP32 on CUDA cores ({fp32})",
        "tensor_cores_idle.advice": (
            "The math runs in plain FP32, which tensor cores do not take. Train with bf16/fp16 autocast "
            "(torch.autocast), or allow TF32 (torch.backends.cuda.matmul.allow_tf32 = True, "
            "torch.backends.cudnn.allow_tf32 = True)."
        ),
        "tensor_cores_idle.cause": "math in FP32, tensor cores idle",
        "memory_bound.title": "GPU {gpu}: bound by memory bandwidth (DRAM {dram} of peak)",
        "memory_bound.advice": (
            "The GPU waits on its memory more than on its math. Fused kernels, FlashAttention (scaled_dot_"
            "product_attention), larger tiles and fewer element-wise passes move less data per step."
        ),
        "memory_bound.cause": "bound by DRAM bandwidth",
        "ev.sm_occupancy": "SM occupancy",
        "ev.tensor_active": "tensor-core activity",
        "ev.fp32_active": "plain FP32 math activity",
        "ev.dram_bw": "DRAM bandwidth",
    },
    "zh": {
        "low_sm_activity.title": "GPU {gpu}：利用率 {util}，但只有 {sm} 的 SM 在工作",
        "low_sm_activity.advice": (
            "几乎一直有 kernel 在运行，但每个 kernel 只占用很少的 SM：kernel 太小，填不满这块 GPU"
            "（batch 太小、小算子太多、CPU 忙于发射 kernel）。请加大 batch，用 CUDA graphs 捕获训练步，"
            "尝试 torch.compile，或融合小算子。"
        ),
        "low_sm_activity.cause": "kernel 太小，填不满 SM",
        "low_sm_activity.title.spinning": "GPU {gpu}：利用率 {util}，SM 活跃度 {sm}，功耗接近空闲：有 kernel 在空转",
        "low_sm_activity.advice.spinning": (
            "一直有 kernel 在运行，却不做事、几乎不耗电：多半是集合通信（NCCL）在等一个迟到或已停止的 rank。"
            "若持续下去，gputui 会判断任务是否已停止、是哪个 rank 卡住了它（读取其栈；或对每个 rank 运行 "
            "py-spy dump --pid）。加大 batch 或编译都填不满它。"
        ),
        "low_sm_activity.cause.spinning": "kernel 空转不做事，多半是集合通信在等其他 rank",
        "tensor_cores_idle.title": "GPU {gpu}：Tensor Core 空闲（{tensor}），计算以 FP32 跑在 CUDA core 上（{fp32}）",
        "tensor_cores_idle.advice": (
            "计算使用普通 FP32，Tensor Core 用不上。请用 bf16/fp16 autocast（torch.autocast）训练，"
            "或开启 TF32（torch.backends.cuda.matmul.allow_tf32 = True，torch.backends.cudnn.allow_tf32 = True）。"
        ),
        "tensor_cores_idle.cause": "以 FP32 计算，Tensor Core 空闲",
        "memory_bound.title": "GPU {gpu}：受显存带宽限制（DRAM 达峰值的 {dram}）",
        "memory_bound.advice": (
            "GPU 等显存多于等计算。融合 kernel、FlashAttention（scaled_dot_product_attention）、"
            "更大的分块和更少的逐元素操作，都能减少每步搬运的数据量。"
        ),
        "memory_bound.cause": "受显存带宽限制",
        "ev.sm_occupancy": "SM 占用率",
        "ev.tensor_active": "Tensor Core 活跃度",
        "ev.fp32_active": "FP32 流水线活跃度",
        "ev.dram_bw": "显存带宽",
    },
}
