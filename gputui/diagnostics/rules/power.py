"""Clocks held down by power or hardware: `power_cap`, `hw_slowdown`, `power_brake`, and `clocks_low`.

The HW slowdown bit (0x8) is read with the bits beside it: HW thermal slowdown makes it heat (thermal.py),
the power brake makes it `power_brake`, and only alone is it `hw_slowdown`, cause not said.
"""

from __future__ import annotations

from collections.abc import Iterator

from gputui.diagnostics.figures import THROTTLE_CAUSES, figures_of
from gputui.diagnostics.findings import Evidence, Severity
from gputui.diagnostics.locale import Texts
from gputui.diagnostics.rules.base import (
    Hit,
    Rule,
    Window,
    clock_events,
    ev,
    has_bits,
    is_busy,
    rounded,
)
from gputui.diagnostics.rules.thermal import clock_evidence, heat_evidence
from gputui.diagnostics.thresholds import Thresholds
from gputui.formatting import fmt_num
from gputui.model import CLOCK_HW_POWER_BRAKE, CLOCK_LIMITING, CLOCK_SW_POWER_CAP, GpuSample


def power_cap(w: Window, th: Thresholds) -> Iterator[Hit]:
    """Critical when someone lowered the limit below the default; info at the normal full-load cap."""
    for g in w.gpus():
        if not is_busy(g, th) or not has_bits(g, CLOCK_SW_POWER_CAP):
            continue
        info = w.info(g.index)
        default = info.power_default_limit_w if info else None
        limit = g.power_limit_w
        lowered = limit is not None and default is not None and limit < default * (1 - th.power_cap_lowered_pct / 100)
        yield Hit(
            gpus=(g.index,),
            value=limit,
            severity=Severity.CRITICAL if lowered else Severity.INFO,
            variant="lowered" if lowered else "default",
            params={"gpu": g.index, "limit": fmt_num(limit), "default": fmt_num(default)},
            evidence=(
                ev("power", g.power_w, "W"),
                ev("power_limit", limit, "W"),
                ev("default_power_limit", default, "W", "static"),
                *clock_evidence(w, g),
                ev("throttled_share", figures_of(w, g.index).throttled_pct["power_cap"], "%", "share"),
            ),
        )


def hw_slowdown(w: Window, th: Thresholds) -> Iterator[Hit]:
    """HW slowdown with no cause bit beside it, in most of the window and now.

    nvml.h and the DCGM field docs: the bit stands for high temperature, an external power brake or fast-trigger
    power protection, and may show briefly during a P-state or clock change. Drivers name heat and the brake by a
    second bit (thermal_throttle and power_brake speak then); with none, the evidence holds what tells the causes
    apart: temperature against its slowdown threshold, power against its limit. A blip is no finding.
    """
    for g in w.gpus():
        if not _cause_unsaid(g):
            continue
        share = figures_of(w, g.index).throttled_pct["hw_slowdown"]
        if share < 100.0 * th.sustained_share:
            continue
        yield _held_down(
            g,
            *heat_evidence(g, w.info(g.index)),
            ev("power", g.power_w, "W"),
            ev("power_limit", g.power_limit_w, "W"),
            *clock_evidence(w, g),
            ev("clock_events", clock_events(g)),
            ev("throttled_share", round(share, 1), "%", "share"),
        )


def _held_down(g: GpuSample, *evidence: Evidence) -> Hit:
    """The hardware holds this GPU's clock down: the SM clock is the finding's value."""
    return Hit(gpus=(g.index,), value=g.sm_clock_mhz, params={"gpu": g.index}, evidence=evidence)


def _cause_unsaid(sample: GpuSample) -> bool:
    """HW slowdown with no cause beside it: the reading the `hw_slowdown` share counts (figures.py)."""
    return THROTTLE_CAUSES["hw_slowdown"].in_reading(sample.clock_event_reasons_mask)


def power_brake(w: Window, th: Thresholds) -> Iterator[Hit]:
    """The power brake bit (alone or beside HW slowdown) is bad whenever it is set: no load condition."""
    for g in w.gpus():
        if has_bits(g, CLOCK_HW_POWER_BRAKE):
            yield _held_down(
                g,
                *clock_evidence(w, g),
                ev("power", g.power_w, "W"),
                ev("temperature", g.temperature_c, "C"),
                ev("clock_events", clock_events(g)),
            )


def clocks_low(w: Window, th: Thresholds) -> Iterator[Hit]:
    """Busy, no power/thermal/hardware reason, yet far below max: locked or application clocks."""
    for g in w.gpus():
        info = w.info(g.index)
        top = info.max_sm_clock_mhz if info else None
        if top is None or g.sm_clock_mhz is None or g.clock_event_reasons_mask is None:
            continue
        if not is_busy(g, th) or has_bits(g, CLOCK_LIMITING) or g.sm_clock_mhz >= th.clocks_low_ratio * top:
            continue
        yield Hit(
            gpus=(g.index,),
            value=g.sm_clock_mhz,
            params={"gpu": g.index, "max": top},
            evidence=(
                *clock_evidence(w, g),
                ev("gpu_util", rounded(figures_of(w, g.index).busy_pct), "%", "mean"),
            ),
        )


RULES: tuple[Rule, ...] = (
    Rule(power_cap, Severity.CRITICAL, metric="power_limit_w", higher_is_worse=False, bound="throttled"),
    Rule(hw_slowdown, Severity.CRITICAL, metric="sm_clock_mhz", higher_is_worse=False, bound="throttled"),
    Rule(power_brake, Severity.CRITICAL, metric="sm_clock_mhz", higher_is_worse=False, bound="throttled"),
    Rule(clocks_low, Severity.WARNING, metric="sm_clock_mhz", higher_is_worse=False, bound="throttled"),
)

TEXTS: Texts = {
    "en": {
        "power_cap.title.default": "GPU {gpu}: at its default power limit ({limit} W)",
        "power_cap.advice.default": (
            "Normal at full load: the GPU runs as fast as its default power limit allows. Nothing to fix."
        ),
        "power_cap.title.lowered": "GPU {gpu}: power capped at {limit} W, below its default {default} W",
        "power_cap.advice.lowered": (
            "Someone lowered the power limit (an admin, a start-up script or out-of-band management), so the "
            "clocks drop under load. Restore it with `sudo nvidia-smi -i {gpu} -pl {default}`, or ask the "
            "administrator why it was lowered."
        ),
        "power_cap.cause": "the power cap",
        "hw_slowdown.title": "GPU {gpu}: hardware slowdown, cause not reported (heat, power brake or power protection)",
        "hw_slowdown.advice": (
            "The board holds its clocks down (HW slowdown) and the driver sets no bit naming the cause. NVML's HW "
            "slowdown covers a temperature too high, an external power brake (e.g. the power supply) and "
            "fast-trigger power protection against a draw too high. Compare the temperature with its slowdown "
            "threshold and the power with its limit: near the threshold, check the cooling; otherwise check the "
            "PSUs, the GPU's power cables and the server's BMC/IPMI event log. If it persists, report the GPU to "
            "the host."
        ),
        "hw_slowdown.cause": "a hardware slowdown",
        "power_brake.title": "GPU {gpu}: hardware power brake",
        "power_brake.advice": (
            "An external power brake signal holds the clocks down: the power supply or the chassis management "
            "asked for it. Check that every PSU works and is plugged in, and the BMC/IPMI event log."
        ),
        "power_brake.cause": "the power brake",
        "clocks_low.title": "GPU {gpu}: SM clock far below its max {max} MHz, no throttle reason",
        "clocks_low.advice": (
            "Busy, yet far below its max clock with no power or thermal reason: the clocks were locked or set "
            "as application clocks. Check `nvidia-smi -q -d CLOCK`; reset with `sudo nvidia-smi -rgc` and "
            "`sudo nvidia-smi -rac`."
        ),
        "clocks_low.cause": "clocks low for no reported reason",
        "ev.power": "power draw",
        "ev.power_limit": "enforced power limit",
        "ev.default_power_limit": "default power limit",
    },
    "zh": {
        "power_cap.title.default": "GPU {gpu}：达到默认功耗上限（{limit} W）",
        "power_cap.advice.default": "满载时属于正常现象：GPU 在默认功耗上限内全速运行，无需处理。",
        "power_cap.title.lowered": "GPU {gpu}：功耗被限制在 {limit} W，低于默认的 {default} W",
        "power_cap.advice.lowered": (
            "功耗上限被调低了（管理员、开机脚本或带外管理），负载下频率会下降。可用 "
            "`sudo nvidia-smi -i {gpu} -pl {default}` 恢复，或询问管理员为何调低。"
        ),
        "power_cap.cause": "功耗上限",
        "hw_slowdown.title": "GPU {gpu}：硬件强制降频，原因未报告（过热、功率制动或功耗保护）",
        "hw_slowdown.advice": (
            "板卡在强制压低频率（硬件降频），而驱动没有置位说明原因的标志。NVML 的硬件降频涵盖温度过高、"
            "外部功率制动（例如电源）以及功耗过高时的快速触发保护。请对照温度与降频阈值、功耗与功耗上限："
            "接近降频阈值时检查散热；否则检查电源、GPU 供电线以及服务器 BMC/IPMI 事件日志。若持续存在，"
            "请向主机提供商报告这块 GPU。"
        ),
        "hw_slowdown.cause": "硬件降速",
        "power_brake.title": "GPU {gpu}：硬件功率制动",
        "power_brake.advice": (
            "外部功率制动信号压低了频率：由电源或机箱管理发出。请检查每个电源是否正常并已接好，以及 BMC/IPMI 事件日志。"
        ),
        "power_brake.cause": "功耗制动",
        "clocks_low.title": "GPU {gpu}：SM 频率远低于最大值 {max} MHz，且没有降频原因",
        "clocks_low.advice": (
            "GPU 正忙，但频率远低于最大值，又没有功耗或温度原因：频率被锁定或设置了应用频率。请查看 "
            "`nvidia-smi -q -d CLOCK`，用 `sudo nvidia-smi -rgc` 和 `sudo nvidia-smi -rac` 复位。"
        ),
        "clocks_low.cause": "频率偏低且无原因",
        "ev.power": "功耗",
        "ev.power_limit": "当前功耗上限",
        "ev.default_power_limit": "默认功耗上限",
    },
}
