"""GPU memory: nearly full and still growing, or at the ceiling and churning (`vram_pressure`), or held by an
idle process (`idle_allocation`)."""

from __future__ import annotations

from collections.abc import Iterator

from gputui.diagnostics.findings import Severity
from gputui.diagnostics.locale import Texts
from gputui.diagnostics.rules.base import Hit, Rule, Window, ev
from gputui.diagnostics.thresholds import Thresholds
from gputui.formatting import fmt_num, fmt_pct

_MIB = 1 << 20
_GIB = 1 << 30


def vram_pressure(w: Window, th: Thresholds) -> Iterator[Hit]:
    """Full alone is normal under a caching allocator. Full and growing is heading for out-of-memory; at the
    ceiling and swinging by hundreds of MiB, the allocator is freeing and retrying (cudaMalloc retries, cache
    flushes) at every step."""
    for g in w.gpus():
        info = w.info(g.index)
        total = info.memory_total_bytes if info else None
        if not total or g.memory_used_bytes is None:
            continue
        used_pct = 100.0 * g.memory_used_bytes / total
        if used_pct < th.vram_pressure_pct:
            continue
        readings = [s.memory_used_bytes for s in w.series(g.index) if s.memory_used_bytes is not None]
        growth_mib = (g.memory_used_bytes - readings[0]) / _MIB if readings else 0.0
        swing_mib = (max(readings) - min(readings)) / _MIB if readings else 0.0
        lowest_pct = 100.0 * min(readings) / total if readings else used_pct
        churn = lowest_pct >= th.vram_ceiling_pct and swing_mib > th.vram_churn_mib
        if growth_mib < th.vram_rise_mib and not churn:
            continue
        evidence = [ev("memory_used", round(used_pct, 1), "%")]
        if churn:
            evidence.append(ev("memory_swing", round(swing_mib), "MiB", "change"))
        else:
            evidence.append(ev("memory_growth", round(growth_mib), "MiB", "change"))
        yield Hit(
            gpus=(g.index,),
            pids=w.pids(g),
            value=used_pct,
            variant="churn" if churn and growth_mib < th.vram_rise_mib else "",
            params={"gpu": g.index, "pct": fmt_pct(used_pct)},
            evidence=tuple(evidence),
        )


def idle_allocation(w: Window, th: Thresholds) -> Iterator[Hit]:
    """A process holds memory at 0% utilization; the engine waits `idle_allocation_s` before it says so."""
    for g in w.gpus():
        if g.utilization_gpu_pct != 0 or not g.processes:
            continue
        held = sum(p.used_memory_bytes or 0 for p in g.processes)
        names = []
        for proc in g.processes:
            host_proc = w.host.process(proc.pid)
            names.append(f"{host_proc.name if host_proc else '?'} ({proc.pid})")
        yield Hit(
            gpus=(g.index,),
            pids=tuple(p.pid for p in g.processes),
            params={"gpu": g.index, "name": ", ".join(names), "memory": f"{fmt_num(held / _GIB, 1)} GiB"},
            evidence=(
                ev("processes", ", ".join(names)),
                ev("process_memory", round(held / _GIB, 1), "GiB"),
                ev("gpu_util", g.utilization_gpu_pct, "%", "moment"),
            ),
        )


RULES: tuple[Rule, ...] = (
    Rule(vram_pressure, Severity.WARNING, metric="memory_used_bytes", per_instance=True),
    Rule(
        idle_allocation,
        Severity.INFO,
        metric="memory_used_bytes",
        open_after=lambda th: th.idle_allocation_s,
        per_instance=True,
    ),
)

TEXTS: Texts = {
    "en": {
        "vram_pressure.title": "GPU {gpu}: memory {pct} full and rising",
        "vram_pressure.advice": (
            "Close to running out of GPU memory. Caching allocators (PyTorch) keep freed memory, so a full "
            "reading alone is normal; growth is not. Use a smaller batch, mixed precision (FP16/BF16), "
            "gradient accumulation or activation checkpointing."
        ),
        "vram_pressure.title.churn": "GPU {gpu}: memory {pct} full, the allocator churning at the ceiling",
        "vram_pressure.advice.churn": (
            "Memory stays at the ceiling and swings by hundreds of MiB: the caching allocator frees and retries "
            "on each step, which stalls the job. Use a smaller batch, mixed precision or activation "
            "checkpointing; PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True reduces fragmentation."
        ),
        "vram_pressure.cause": "GPU memory nearly full",
        "idle_allocation.title": "GPU {gpu}: {name} holds {memory} and does nothing",
        "idle_allocation.advice": (
            "A process has held GPU memory at 0% utilization for minutes: a forgotten notebook or a job that "
            "did not exit. Stop it or restart its kernel to free the GPU."
        ),
        "ev.memory_used": "memory used",
        "ev.memory_growth": "memory growth",
        "ev.memory_swing": "memory swing",
        "ev.process_memory": "process GPU memory",
    },
    "zh": {
        "vram_pressure.title": "GPU {gpu}：显存已用 {pct} 且仍在增长",
        "vram_pressure.advice": (
            "显存快要耗尽。缓存分配器（PyTorch）会保留已释放的显存，所以单看占满是正常的，但持续增长不正常。"
            "请减小 batch size，使用混合精度（FP16/BF16）、梯度累积或激活检查点（activation checkpointing）。"
        ),
        "vram_pressure.title.churn": "GPU {gpu}：显存已用 {pct}，分配器在上限处反复释放重试",
        "vram_pressure.advice.churn": (
            "显存一直顶在上限，并上下波动数百 MiB：缓存分配器每一步都在释放并重试，拖慢任务。"
            "请减小 batch size，使用混合精度或激活检查点；设置 PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True "
            "可减少碎片。"
        ),
        "vram_pressure.cause": "显存接近用满",
        "idle_allocation.title": "GPU {gpu}：{name} 占用 {memory} 显存却没有在计算",
        "idle_allocation.advice": (
            "有进程占用显存且利用率为 0% 已持续数分钟：可能是遗忘的 notebook 或没有退出的任务。"
            "请结束它或重启其内核以释放 GPU。"
        ),
        "ev.memory_used": "显存已用",
        "ev.memory_growth": "显存增长",
        "ev.memory_swing": "显存波动",
        "ev.process_memory": "进程显存",
    },
}
