"""GPU memory: nearly full and still growing (`vram_pressure`), or held by an idle process (`idle_allocation`)."""

from __future__ import annotations

from collections.abc import Iterator

from gputui.diagnostics.findings import Severity
from gputui.diagnostics.rules.base import Hit, Rule, Window, ev, fmt
from gputui.diagnostics.thresholds import Thresholds

_MIB = 1 << 20
_GIB = 1 << 30


def vram_pressure(w: Window, th: Thresholds) -> Iterator[Hit]:
    """Full alone is normal under a caching allocator; full and growing is heading for out-of-memory."""
    for g in w.gpus():
        info = w.info(g.index)
        total = info.memory_total_bytes if info else None
        if not total or g.memory_used_bytes is None:
            continue
        used_pct = 100.0 * g.memory_used_bytes / total
        if used_pct < th.vram_pressure_pct:
            continue
        first = next((s.memory_used_bytes for s in w.series(g.index) if s.memory_used_bytes is not None), None)
        growth_mib = (g.memory_used_bytes - first) / _MIB if first is not None else 0.0
        if growth_mib < th.vram_rise_mib:
            continue
        yield Hit(
            gpus=(g.index,),
            pids=w.pids(g),
            value=used_pct,
            params={"gpu": g.index, "pct": f"{used_pct:.0f}%"},
            evidence=(
                ev("memory_used", round(used_pct, 1), "%"),
                ev("memory_growth", round(growth_mib), "MiB", "change"),
            ),
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
            params={"gpu": g.index, "name": ", ".join(names), "memory": f"{fmt(held / _GIB, 1)} GiB"},
            evidence=(
                ev("processes", ", ".join(names)),
                ev("process_memory", round(held / _GIB, 1), "GiB"),
                ev("gpu_util", g.utilization_gpu_pct, "%"),
            ),
        )


RULES = (
    Rule("vram_pressure", Severity.WARNING, vram_pressure, metric="memory_used_bytes"),
    Rule(
        "idle_allocation",
        Severity.INFO,
        idle_allocation,
        metric="memory_used_bytes",
        open_after=lambda th: th.idle_allocation_s,
    ),
)
