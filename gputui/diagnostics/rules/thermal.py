"""Heat: throttling now (`thermal_throttle`) and the warning before it (`thermal_margin`).

Drivers set HW slowdown (0x8) beside HW thermal slowdown (0x40) when heat is the cause (nvml.h): that is this
family's finding, with the bits in its evidence, and not `hw_slowdown`'s (power.py).
"""

from __future__ import annotations

from collections.abc import Iterator

from gputui.diagnostics.figures import figures_of
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
from gputui.diagnostics.thresholds import Thresholds
from gputui.formatting import fmt_num
from gputui.model import CLOCK_THERMAL, GpuInfo, GpuSample


def _violation_growing(series: list[GpuSample]) -> bool:
    """The thermal violation counter moved since the previous sample: throttled even between two reads."""
    if len(series) < 2:
        return False
    now, before = series[-1].thermal_violation_ns, series[-2].thermal_violation_ns
    return now is not None and before is not None and now > before


def clock_evidence(w: Window, sample: GpuSample) -> tuple[Evidence, Evidence, Evidence]:
    """How far heat or power has slowed the GPU (power.py states it too): the clock's share of its max over the
    window, the verdict's figure (diagnostics/figures.py), then the SM clock of the latest reading beside its max,
    the moment labelled as one so that the two never read as two answers to one question."""
    figures = figures_of(w, sample.index)
    return (
        ev("clock_of_max", rounded(figures.clock_of_max_pct), "%", "mean"),
        ev("sm_clock", sample.sm_clock_mhz, "MHz", "moment"),
        ev("max_sm_clock", figures.max_sm_clock_mhz, "MHz", "static"),
    )


def heat_evidence(sample: GpuSample, info: GpuInfo | None) -> tuple[Evidence, Evidence]:
    """The temperature now beside the one at which the GPU slows itself down."""
    slowdown = info.temperature_slowdown_c if info else None
    return ev("temperature", sample.temperature_c, "C"), ev("slowdown_threshold", slowdown, "C", "static")


def thermal_throttle(w: Window, th: Thresholds) -> Iterator[Hit]:
    for g in w.gpus():
        series = w.series(g.index)
        if not is_busy(g, th) or not (has_bits(g, CLOCK_THERMAL) or _violation_growing(series)):
            continue
        yield Hit(
            gpus=(g.index,),
            value=g.temperature_c,
            params={"gpu": g.index},
            evidence=(
                *heat_evidence(g, w.info(g.index)),
                ev("throttled_share", figures_of(w, g.index).throttled_pct["thermal"], "%", "share"),
                *clock_evidence(w, g),
                ev("clock_events", clock_events(g)),
            ),
        )


def thermal_margin(w: Window, th: Thresholds) -> Iterator[Hit]:
    for g in w.gpus():
        info = w.info(g.index)
        slowdown = info.temperature_slowdown_c if info else None
        if slowdown is None or g.temperature_c is None or g.temperature_c < slowdown - th.thermal_margin_c:
            continue
        if has_bits(g, CLOCK_THERMAL) or _violation_growing(w.series(g.index)):
            continue
        yield Hit(
            gpus=(g.index,),
            value=g.temperature_c,
            params={"gpu": g.index, "margin": fmt_num(th.thermal_margin_c), "slowdown": slowdown},
            evidence=heat_evidence(g, info),
        )


RULES: tuple[Rule, ...] = (
    Rule(thermal_throttle, Severity.CRITICAL, metric="temperature_c", bound="throttled"),
    Rule(thermal_margin, Severity.WARNING, metric="temperature_c"),
)

TEXTS: Texts = {
    "en": {
        "thermal_throttle.title": "GPU {gpu}: thermal throttling",
        "thermal_throttle.advice": (
            "The GPU slows itself down to stay under its temperature limit. Improve the airflow (fans running, "
            "nothing blocking intake or exhaust), lower the room temperature, leave a slot free between GPUs, "
            "clean out dust; if one GPU runs much hotter than its neighbours, have its thermal paste redone."
        ),
        "thermal_throttle.cause": "heat",
        "thermal_margin.title": "GPU {gpu}: within {margin} C of thermal slowdown ({slowdown} C)",
        "thermal_margin.advice": (
            "Not throttling yet, but a little more heat will slow it down. Check the airflow and fans, the room "
            "temperature and the space between GPUs before a long run."
        ),
        "thermal_margin.cause": "a GPU near its slowdown temperature",
    },
    "zh": {
        "thermal_throttle.title": "GPU {gpu}：过热降频",
        "thermal_throttle.advice": (
            "GPU 为了不超过温度上限而主动降低频率。请改善风道（风扇正常运转，进出风口无遮挡），降低机房温度，"
            "GPU 之间留出空槽，清理灰尘；如果某一块 GPU 明显比相邻的更热，请重新涂抹导热硅脂。"
        ),
        "thermal_throttle.cause": "过热",
        "thermal_margin.title": "GPU {gpu}：距离过热降频（{slowdown} C）不到 {margin} C",
        "thermal_margin.advice": (
            "还没有降频，但再热一点就会降频。长时间训练前请检查风道和风扇、机房温度以及 GPU 间距。"
        ),
        "thermal_margin.cause": "GPU 接近降频温度",
    },
}
