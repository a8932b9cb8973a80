"""Clocks held down by power or hardware: `power_cap`, `hw_slowdown`, `power_brake`, and `clocks_low`."""

from __future__ import annotations

from collections.abc import Iterator

from gputui.diagnostics.findings import Severity
from gputui.diagnostics.rules.base import (
    CLOCK_HW_POWER_BRAKE,
    CLOCK_HW_SLOWDOWN,
    CLOCK_LIMITING,
    CLOCK_SW_POWER_CAP,
    Hit,
    Rule,
    Window,
    ev,
    fmt,
    has_bits,
    is_busy,
)
from gputui.diagnostics.rules.thermal import throttled_pct
from gputui.diagnostics.thresholds import Thresholds


def power_cap(w: Window, th: Thresholds) -> Iterator[Hit]:
    """Critical when someone lowered the limit below the default; info at the normal full-load cap."""
    for g in w.gpus():
        if not is_busy(g, th) or not has_bits(g, CLOCK_SW_POWER_CAP):
            continue
        info = w.info(g.index)
        default = info.power_default_limit_w if info else None
        limit = g.power_limit_w
        lowered = limit is not None and default is not None and limit < default * (1 - th.power_cap_lowered_pct / 100)
        series = w.series(g.index)
        yield Hit(
            gpus=(g.index,),
            value=limit,
            severity=Severity.CRITICAL if lowered else Severity.INFO,
            variant="lowered" if lowered else "default",
            params={"gpu": g.index, "limit": fmt(limit), "default": fmt(default)},
            evidence=(
                ev("power", g.power_w, "W"),
                ev("power_limit", limit, "W"),
                ev("default_power_limit", default, "W", "static"),
                ev("sm_clock", g.sm_clock_mhz, "MHz"),
                ev(
                    "throttled_share",
                    throttled_pct(series, CLOCK_SW_POWER_CAP, lambda s: s.power_violation_ns),
                    "%",
                    "share",
                ),
            ),
        )


def _hardware(w: Window, bits: int) -> Iterator[Hit]:
    """HW slowdown and power brake are bad whenever they are set: no load condition."""
    for g in w.gpus():
        if has_bits(g, bits):
            info = w.info(g.index)
            yield Hit(
                gpus=(g.index,),
                value=g.sm_clock_mhz,
                params={"gpu": g.index},
                evidence=(
                    ev("sm_clock", g.sm_clock_mhz, "MHz"),
                    ev("max_sm_clock", info.max_sm_clock_mhz if info else None, "MHz", "static"),
                    ev("power", g.power_w, "W"),
                    ev("temperature", g.temperature_c, "C"),
                ),
            )


def hw_slowdown(w: Window, th: Thresholds) -> Iterator[Hit]:
    return _hardware(w, CLOCK_HW_SLOWDOWN)


def power_brake(w: Window, th: Thresholds) -> Iterator[Hit]:
    return _hardware(w, CLOCK_HW_POWER_BRAKE)


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
                ev("sm_clock", g.sm_clock_mhz, "MHz"),
                ev("max_sm_clock", top, "MHz", "static"),
                ev("gpu_util", g.utilization_gpu_pct, "%"),
            ),
        )


RULES = (
    Rule("power_cap", Severity.CRITICAL, power_cap, metric="power_limit_w", higher_is_worse=False),
    Rule("hw_slowdown", Severity.CRITICAL, hw_slowdown, metric="sm_clock_mhz", higher_is_worse=False),
    Rule("power_brake", Severity.CRITICAL, power_brake, metric="sm_clock_mhz", higher_is_worse=False),
    Rule("clocks_low", Severity.WARNING, clocks_low, metric="sm_clock_mhz", higher_is_worse=False),
)
