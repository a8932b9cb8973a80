"""The PCIe link: trained down under load, limited by the slot, retrying, or saturated."""

from __future__ import annotations

from collections.abc import Iterator

from gputui.diagnostics.findings import Severity
from gputui.diagnostics.locale import Texts
from gputui.diagnostics.rules.base import Hit, Rule, Window, ev, is_busy, link_bytes_s, rounded
from gputui.diagnostics.thresholds import Thresholds


def _link(gen: int | None, width: int | None) -> str:
    return f"Gen{gen if gen is not None else '?'} x{width if width is not None else '?'}"


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
            value=rounded(current, 1e9),
            params={
                "gpu": g.index,
                "current": _link(g.pcie_gen, g.pcie_width),
                "max": _link(info.pcie_max_gen, info.pcie_max_width),
            },
            evidence=(
                ev("pcie_link", _link(g.pcie_gen, g.pcie_width)),
                ev("pcie_max_link", _link(info.pcie_max_gen, info.pcie_max_width), "", "static"),
                ev("link_bandwidth", rounded(current, 1e9), "GB/s"),
                ev("gpu_util", g.utilization_gpu_pct, "%", "moment"),
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
                ev("pcie_rx", rounded(mean_rx, 1e9), "GB/s", "mean"),
                ev("pcie_tx", rounded(mean_tx, 1e9), "GB/s", "mean"),
                ev("link_bandwidth", rounded(link, 1e9), "GB/s"),
                ev("saturated_share", round(100 * max(rx, tx)), "%", "share"),
            ),
        )


RULES: tuple[Rule, ...] = (
    Rule(pcie_downgrade, Severity.CRITICAL, metric="pcie_gen", higher_is_worse=False, bound="interconnect"),
    Rule(pcie_slot_limited, Severity.WARNING, metric="pcie_gen", higher_is_worse=False),
    Rule(pcie_errors, Severity.WARNING, metric="pcie_replay_count"),
    Rule(pcie_saturated, Severity.WARNING, metric="pcie_rx_bytes_s", bound="interconnect"),
)

TEXTS: Texts = {
    "en": {
        "pcie_downgrade.title": "GPU {gpu}: PCIe link at {current} under load (max {max})",
        "pcie_downgrade.advice": (
            "The link trained below its maximum while the GPU is busy (at idle this is normal). Reseat the "
            "GPU, try another slot, replace or remove the riser, check the BIOS PCIe settings, and compare "
            "with `nvidia-smi topo -m`."
        ),
        "pcie_downgrade.cause": "PCIe link below its max",
        "pcie_slot_limited.title": "GPU {gpu}: the slot allows PCIe Gen{system}, the GPU supports Gen{gpu_max}",
        "pcie_slot_limited.advice": (
            "The slot, riser or BIOS setting limits the link below what the GPU can do. Try another slot, "
            "a riser of the right generation, or the BIOS PCIe speed setting; see `nvidia-smi topo -m`."
        ),
        "pcie_slot_limited.cause": "a slot slower than the GPU",
        "pcie_errors.title": "GPU {gpu}: PCIe link errors (+{count} replays)",
        "pcie_errors.advice": (
            "The link keeps retrying transfers. Reseat the GPU, check the riser and the slot, update the BIOS; "
            "steady growth points to a bad slot or riser."
        ),
        "pcie_errors.cause": "PCIe errors",
        "pcie_saturated.title": "GPU {gpu}: PCIe {direction} saturated",
        "pcie_saturated.advice": (
            "Host-GPU copies run at the link's limit. Keep data on the GPU, use pinned memory and larger "
            "transfers, overlap copies with compute, and check the link runs at its full generation and width."
        ),
        "pcie_saturated.cause": "PCIe link saturated",
        "ev.pcie_link": "PCIe link",
        "ev.pcie_max_link": "max PCIe link",
        "ev.pcie_gpu_max_gen": "GPU's own max PCIe generation",
        "ev.link_bandwidth": "link bandwidth (theory)",
        "ev.pcie_replays": "PCIe replays",
        "ev.pcie_tx": "PCIe TX",
        "ev.pcie_rx": "PCIe RX",
        "ev.saturated_share": "time above the limit",
    },
    "zh": {
        "pcie_downgrade.title": "GPU {gpu}：负载下 PCIe 链路只有 {current}（最大 {max}）",
        "pcie_downgrade.advice": (
            "GPU 忙碌时链路低于最大速率（空闲时降速是正常的）。请重新插拔 GPU、换一个插槽、更换或去掉转接卡（riser），"
            "检查 BIOS 中的 PCIe 设置，并用 `nvidia-smi topo -m` 对比。"
        ),
        "pcie_downgrade.cause": "PCIe 链路低于最大规格",
        "pcie_slot_limited.title": "GPU {gpu}：插槽只支持 PCIe Gen{system}，GPU 支持 Gen{gpu_max}",
        "pcie_slot_limited.advice": (
            "插槽、转接卡或 BIOS 设置限制了链路速率。请换插槽、使用对应代数的转接卡或调整 BIOS 的 PCIe 速率；"
            "参见 `nvidia-smi topo -m`。"
        ),
        "pcie_slot_limited.cause": "插槽比 GPU 慢",
        "pcie_errors.title": "GPU {gpu}：PCIe 链路错误（重传 +{count}）",
        "pcie_errors.advice": (
            "链路在不断重传。请重新插拔 GPU，检查转接卡和插槽，更新 BIOS；持续增长说明插槽或转接卡有问题。"
        ),
        "pcie_errors.cause": "PCIe 错误",
        "pcie_saturated.title": "GPU {gpu}：PCIe {direction} 饱和",
        "pcie_saturated.advice": (
            "主机与 GPU 之间的拷贝已达到链路上限。请尽量把数据留在 GPU 上，使用锁页内存（pinned memory）和更大的传输，"
            "让拷贝与计算重叠，并确认链路运行在满代数和满宽度。"
        ),
        "pcie_saturated.cause": "PCIe 链路已饱和",
        "ev.pcie_link": "PCIe 链路",
        "ev.pcie_max_link": "PCIe 最大链路",
        "ev.pcie_gpu_max_gen": "GPU 自身支持的 PCIe 代数",
        "ev.link_bandwidth": "链路带宽（理论值）",
        "ev.pcie_replays": "PCIe 重传次数",
        "ev.pcie_tx": "PCIe 发送",
        "ev.pcie_rx": "PCIe 接收",
        "ev.saturated_share": "超过上限的时间",
    },
}
