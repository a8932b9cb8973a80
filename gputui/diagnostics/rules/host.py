"""The host under memory pressure: sustained swapping (`host_swap`)."""

from __future__ import annotations

from collections.abc import Iterator

from gputui.diagnostics.findings import Severity
from gputui.diagnostics.locale import Texts
from gputui.diagnostics.rules.base import Hit, Rule, Window, ev, rounded
from gputui.diagnostics.thresholds import Thresholds
from gputui.model import HostSample

_MIB = 1 << 20


def _swap_rate(h: HostSample) -> float | None:
    if h.swap_in_bytes_s is None and h.swap_out_bytes_s is None:
        return None
    return (h.swap_in_bytes_s or 0.0) + (h.swap_out_bytes_s or 0.0)


def host_swap(w: Window, th: Thresholds) -> Iterator[Hit]:
    limit = th.swap_mib_s * _MIB
    share = w.host_share(lambda h: (_swap_rate(h) or 0.0) >= limit)
    if share < th.sustained_share:
        return
    swap_in = w.host_mean("swap_in_bytes_s")
    swap_out = w.host_mean("swap_out_bytes_s")
    rate = ((swap_in or 0.0) + (swap_out or 0.0)) / _MIB
    yield Hit(
        gpus=(),
        value=round(rate, 1),
        params={},
        evidence=(
            ev("swap_in", rounded(swap_in, _MIB), "MiB/s", "mean"),
            ev("swap_out", rounded(swap_out, _MIB), "MiB/s", "mean"),
        ),
    )


# A host paging to disk stalls the data loader's reads and its workers: a cause for a GPU that waits.
RULES: tuple[Rule, ...] = (Rule(host_swap, Severity.WARNING, bound="input_bound"),)

TEXTS: Texts = {
    "en": {
        "host_swap.title": "Host is swapping",
        "host_swap.advice": (
            "The host ran out of memory and pages to disk. Use fewer DataLoader workers or a smaller prefetch, "
            "cache less data in RAM, or add memory."
        ),
        "host_swap.cause": "the host swapping",
        "ev.swap_in": "swap in",
        "ev.swap_out": "swap out",
    },
    "zh": {
        "host_swap.title": "主机正在使用交换分区",
        "host_swap.advice": (
            "主机内存不足，正在换页到磁盘。请减少 DataLoader worker 或预取量，少在内存中缓存数据，或增加内存。"
        ),
        "host_swap.cause": "主机在使用交换分区",
        "ev.swap_in": "换入",
        "ev.swap_out": "换出",
    },
}
