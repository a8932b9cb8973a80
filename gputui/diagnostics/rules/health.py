"""Hardware health the driver reports: uncorrected ECC errors and pending retirement (`ecc_errors`), XIDs,
and GPUs that fell off the bus (`gpu_lost`)."""

from __future__ import annotations

from collections.abc import Iterator

from gputui.diagnostics.findings import Severity
from gputui.diagnostics.locale import Texts
from gputui.diagnostics.rules.base import Hit, Rule, Window, at_once, ev
from gputui.diagnostics.thresholds import Thresholds


def ecc_errors(w: Window, th: Thresholds) -> Iterator[Hit]:
    for g in w.gpus():
        if (g.ecc_uncorrected or 0) > 0 or g.retired_pages_pending:
            yield Hit(
                gpus=(g.index,),
                value=g.ecc_uncorrected,
                params={"gpu": g.index},
                evidence=(
                    ev("ecc_uncorrected", g.ecc_uncorrected),
                    ev("retired_pending", None if g.retired_pages_pending is None else str(g.retired_pages_pending)),
                ),
            )


def xid(w: Window, th: Thresholds) -> Iterator[Hit]:
    """An XID is an event, not a state: the finding opens on it and stays open for `xid_hold_s`.

    Lost GPUs are included: XID 79 is what takes a GPU off the bus, and it arrives with the loss.
    """
    for g in w.latest.gpus:
        if g.xid_events:
            codes = ", ".join(str(code) for code in sorted(set(g.xid_events)))
            yield Hit(
                gpus=(g.index,),
                value=len(g.xid_events),
                params={"gpu": g.index, "codes": codes},
                evidence=(ev("xid_codes", codes),),
            )


def gpu_lost(w: Window, th: Thresholds) -> Iterator[Hit]:
    """A GPU the driver can no longer reach: every job on it has failed or hangs."""
    for g in w.latest.gpus:
        if g.lost:
            yield Hit(gpus=(g.index,), params={"gpu": g.index}, evidence=(ev("gpu_error", g.error or "GpuIsLost"),))


RULES: tuple[Rule, ...] = (
    Rule(gpu_lost, Severity.CRITICAL, open_after=at_once, bound="degraded"),
    Rule(ecc_errors, Severity.CRITICAL, open_after=at_once, bound="degraded"),
    Rule(xid, Severity.CRITICAL, open_after=at_once, close_after=lambda th: th.xid_hold_s, bound="degraded"),
)

TEXTS: Texts = {
    "en": {
        "ecc_errors.title": "GPU {gpu}: uncorrected memory errors",
        "ecc_errors.advice": (
            "Uncorrected ECC errors or pending page retirement: results on this GPU may be wrong. Drain the "
            "jobs, reset the GPU (`sudo nvidia-smi -i {gpu} -r`) or reboot; if it comes back, replace the board."
        ),
        "ecc_errors.cause": "uncorrected ECC errors",
        "gpu_lost.title": "GPU {gpu} fell off the bus",
        "gpu_lost.advice": (
            "The driver can no longer reach this GPU (GpuIsLost): jobs on it have failed or hang. Check the kernel "
            "log (`sudo dmesg | grep -i xid`, XID 79), then power, cooling and the PCIe seating or riser; a reset "
            "(`sudo nvidia-smi -i {gpu} -r`) or a reboot brings it back. If it happens again, report the board."
        ),
        "gpu_lost.cause": "a GPU fell off the bus",
        "xid.title": "GPU {gpu}: XID error {codes}",
        "xid.advice": (
            "The driver reported an XID error. Look the code up in NVIDIA's XID catalog and the kernel log "
            "(`sudo dmesg | grep -i xid`): 79 means the GPU fell off the bus, 48/63/64/94/95 memory errors, "
            "13/31/43 are usually faults of the application."
        ),
        "xid.cause": "XID errors",
        "ev.xid_codes": "XID codes",
        "ev.gpu_error": "driver error",
        "ev.ecc_uncorrected": "uncorrected ECC errors",
        "ev.retired_pending": "page retirement pending",
    },
    "zh": {
        "ecc_errors.title": "GPU {gpu}：存在不可纠正的显存错误",
        "ecc_errors.advice": (
            "存在不可纠正的 ECC 错误或待退役的页：这块 GPU 的计算结果可能出错。请迁走任务，复位 GPU"
            "（`sudo nvidia-smi -i {gpu} -r`）或重启；如果再次出现，请更换板卡。"
        ),
        "ecc_errors.cause": "不可纠正的 ECC 错误",
        "gpu_lost.title": "GPU {gpu} 已掉卡（驱动无法访问）",
        "gpu_lost.advice": (
            "驱动已无法访问这块 GPU（GpuIsLost）：其上的任务已失败或卡住。请查看内核日志"
            "（`sudo dmesg | grep -i xid`，XID 79），再检查供电、散热以及 PCIe 插槽或转接卡是否插好；"
            "复位（`sudo nvidia-smi -i {gpu} -r`）或重启可恢复。如果再次发生，请向机房报告这块板卡。"
        ),
        "gpu_lost.cause": "有 GPU 掉卡",
        "xid.title": "GPU {gpu}：XID 错误 {codes}",
        "xid.advice": (
            "驱动报告了 XID 错误。请在 NVIDIA 的 XID 列表和内核日志（`sudo dmesg | grep -i xid`）中查找该代码："
            "79 表示 GPU 掉卡，48/63/64/94/95 为显存错误，13/31/43 通常是应用程序的错误。"
        ),
        "xid.cause": "XID 错误",
        "ev.xid_codes": "XID 代码",
        "ev.gpu_error": "驱动错误",
        "ev.ecc_uncorrected": "不可纠正 ECC 错误",
        "ev.retired_pending": "待退役页",
    },
}
