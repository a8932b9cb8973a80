"""The PCIe link: trained down under load, limited by the slot, retrying, or saturated."""

from __future__ import annotations

from collections.abc import Iterator

from gputui.diagnostics.findings import Severity
from gputui.diagnostics.rules.base import Hit, Rule, Window, ev, is_busy, link_bytes_s
from gputui.diagnostics.thresholds import Thresholds


def _link(gen: int | None, width: int | None) -> str:
    return f"Gen{gen if gen is not None else '?'} x{width if width is not None else '?'}"


def _gb(value: float | None) -> float | None:
    return None if value is None else round(value / 1e9, 1)


def pcie_downgrade(w: Window, th: Thresholds) -> Iterator[Hit]:
    """Only under load: GPUs drop to Gen1 at idle on purpose."""
    for g in w.gpus():
        info = w.info(g.index)
        if info is None or not is_busy(g, th):
            continue
        slow_gen = g.pcie_gen is not None and info.pcie_max_gen is not None and g.pcie_gen < info.pcie_max_gen
        narrow = g.pcie_width is not None and info.pcie_max_width is not None and g.pcie_width < info.pcie_max_width
        if not (slow_gen or narrow):
            continue
        current = link_bytes_s(g.pcie_gen, g.pcie_width)
        yield Hit(
            gpus=(g.index,),
            value=_gb(current),
            params={
                "gpu": g.index,
                "current": _link(g.pcie_gen, g.pcie_width),
                "max": _link(info.pcie_max_gen, info.pcie_max_width),
            },
            evidence=(
                ev("pcie_link", _link(g.pcie_gen, g.pcie_width)),
                ev("pcie_max_link", _link(info.pcie_max_gen, info.pcie_max_width), "", "static"),
                ev("link_bandwidth", _gb(current), "GB/s"),
                ev("gpu_util", g.utilization_gpu_pct, "%"),
            ),
        )


def pcie_slot_limited(w: Window, th: Thresholds) -> Iterator[Hit]:
    for g in w.gpus():
        info = w.info(g.index)
        if info is None or info.pcie_max_gen is None or info.pcie_gpu_max_gen is None:
            continue
        if info.pcie_max_gen < info.pcie_gpu_max_gen:
            yield Hit(
                gpus=(g.index,),
                value=info.pcie_max_gen,
                params={"gpu": g.index, "system": info.pcie_max_gen, "gpu_max": info.pcie_gpu_max_gen},
                evidence=(
                    ev("pcie_max_link", _link(info.pcie_max_gen, info.pcie_max_width), "", "static"),
                    ev("pcie_gpu_max_gen", info.pcie_gpu_max_gen, "", "static"),
                ),
            )


def pcie_errors(w: Window, th: Thresholds) -> Iterator[Hit]:
    for g in w.gpus():
        counts = [s.pcie_replay_count for s in w.series(g.index) if s.pcie_replay_count is not None]
        if len(counts) < 2 or counts[-1] <= counts[0]:
            continue
        growth = counts[-1] - counts[0]
        yield Hit(
            gpus=(g.index,),
            value=growth,
            params={"gpu": g.index, "count": growth},
            evidence=(ev("pcie_replays", growth, "", "change"), ev("pcie_link", _link(g.pcie_gen, g.pcie_width))),
        )


def pcie_saturated(w: Window, th: Thresholds) -> Iterator[Hit]:
    """TX or RX above a share of the link's theory for most of the window."""
    for g in w.gpus():
        link = link_bytes_s(g.pcie_gen, g.pcie_width)
        if link is None:
            continue
        limit = th.pcie_saturated_pct / 100 * link
        series = w.series(g.index)
        rx = sum(1 for s in series if (s.pcie_rx_bytes_s or 0.0) >= limit) / len(series)
        tx = sum(1 for s in series if (s.pcie_tx_bytes_s or 0.0) >= limit) / len(series)
        if max(rx, tx) < th.sustained_share:
            continue
        directions = [name for name, share in (("RX", rx), ("TX", tx)) if share >= th.sustained_share]
        mean_rx = w.mean(g.index, "pcie_rx_bytes_s")
        mean_tx = w.mean(g.index, "pcie_tx_bytes_s")
        peak = max(mean_rx or 0.0, mean_tx or 0.0)
        yield Hit(
            gpus=(g.index,),
            value=round(100 * peak / link),
            params={"gpu": g.index, "direction": "+".join(directions)},
            evidence=(
                ev("pcie_rx", _gb(mean_rx), "GB/s", "mean"),
                ev("pcie_tx", _gb(mean_tx), "GB/s", "mean"),
                ev("link_bandwidth", _gb(link), "GB/s"),
                ev("saturated_share", round(100 * max(rx, tx)), "%", "share"),
            ),
        )


RULES = (
    Rule("pcie_downgrade", Severity.CRITICAL, pcie_downgrade, metric="pcie_gen", higher_is_worse=False),
    Rule("pcie_slot_limited", Severity.WARNING, pcie_slot_limited, metric="pcie_gen", higher_is_worse=False),
    Rule("pcie_errors", Severity.WARNING, pcie_errors, metric="pcie_replay_count"),
    Rule("pcie_saturated", Severity.WARNING, pcie_saturated, metric="pcie_rx_bytes_s"),
)
