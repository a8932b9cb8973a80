"""The derived readings more than one view states, worked out once per tick, so that no two views can disagree.

The contract, which the verdict, the findings, the fleet view, the alerts and the invariant test hold to:

- Once per tick, over the verdict's window: `gpu_figures(window)` is computed on the first call for a Window and
  kept on it (`Window.shared`); every rule and `classify()` read that one result, and the views state it through
  the verdict's and the findings' evidence. (With MIG the verdict's window holds each instance as a unit and the
  rules on a board's own readings read the whole GPUs: each window has its figures, and an instance's clock is
  its board's.)
- Every figure here is a MEAN over that window (`window_s`): evidence states it with window "mean" ("mean over
  10 s"), `throttled_share` with window "share" ("of the last 10 s"). A view that states the same figure uses
  the same evidence key, window and rounding (`rules.base.rounded`): `gpu_util`, `clock_of_max`, `sm_active`,
  `tensor_active`, `dram_bw`, `throttled_share`. A reading of one moment beside it (the SM clock now) is no
  figure of this module, and says "latest reading" (window "moment") wherever a mean of the same thing stands.
- A verdict about a group of several GPUs states the mean of its GPUs' figures.
- The data-loader workers that fit here are rules/cpus.py's `workers_that_fit`, the one num_workers number any
  advice gives.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Protocol, TypeVar

from gputui.model import (
    CLOCK_HW_CAUSE,
    CLOCK_HW_POWER_BRAKE,
    CLOCK_HW_SLOWDOWN,
    CLOCK_LIMITING,
    CLOCK_SW_POWER_CAP,
    CLOCK_THERMAL,
    GpuInfo,
    GpuSample,
    Snapshot,
)

T = TypeVar("T")


class Window(Protocol):
    """What the figures read of a window (rules/base.py's Window: this module stands below the rules)."""

    @property
    def latest(self) -> Snapshot: ...

    def info(self, index: int) -> GpuInfo | None: ...

    def series(self, index: int) -> list[GpuSample]: ...

    def mean(self, index: int, field: str) -> float | None: ...

    def shared(self, name: str, compute: Callable[[], T]) -> T: ...


@dataclass(frozen=True, slots=True)
class ThrottleCause:
    """A cause of throttling by its clock event bits (model.py names nvidia-ml-py's nvmlClocksEventReason* bits):
    set in a reading with none of `without` beside it; `counter`, the cumulative violation counter that measures it
    more finely than the bits read at each tick, where the driver has one."""

    bits: int
    without: int = 0
    counter: Callable[[GpuSample], int | None] | None = None

    def in_reading(self, mask: int | None) -> bool:
        return mask is not None and bool(mask & self.bits) and not mask & self.without


# The causes the throttle findings and the verdict name. HW slowdown counts alone only: with HW thermal slowdown
# or the power brake beside it, the driver named the cause (nvml.h), and that cause's share holds it.
THROTTLE_CAUSES: Mapping[str, ThrottleCause] = {
    "thermal": ThrottleCause(CLOCK_THERMAL, counter=lambda s: s.thermal_violation_ns),
    "power_cap": ThrottleCause(CLOCK_SW_POWER_CAP, counter=lambda s: s.power_violation_ns),
    "hw_slowdown": ThrottleCause(CLOCK_HW_SLOWDOWN, without=CLOCK_HW_CAUSE),
    "power_brake": ThrottleCause(CLOCK_HW_POWER_BRAKE),
}


@dataclass(frozen=True, slots=True)
class GpuFigures:
    """One GPU's (or MIG instance's) means over the window; None where the driver never reported the reading."""

    index: int
    busy_pct: float | None  # mean utilization
    sm_clock_mhz: float | None  # mean SM clock
    max_sm_clock_mhz: int | None
    clock_of_max_pct: float | None  # mean SM clock as a % of its max, at most 100
    sm_active_pct: float | None
    tensor_active_pct: float | None
    dram_bw_pct: float | None
    throttled_pct: Mapping[str, float]  # % of the window throttled, by cause (THROTTLE_CAUSES' names)


def gpu_figures(w: Window) -> Mapping[int, GpuFigures]:
    """Every readable GPU's figures over `w`, computed by the first caller of a tick and shared."""
    return w.shared("figures", lambda: {g.index: _of(w, g.index) for g in w.latest.gpus if not g.lost})


def figures_of(w: Window, index: int) -> GpuFigures:
    """One GPU's figures over `w` (all None for one the window does not hold)."""
    found = gpu_figures(w).get(index)
    return found if found is not None else _of(w, index)


def mean_of(values: list[float | None]) -> float | None:
    """The mean of the known values: a group's figure is the mean of its GPUs' (None when none is known)."""
    known = [v for v in values if v is not None]
    return sum(known) / len(known) if known else None


def _of(w: Window, index: int) -> GpuFigures:
    info = w.info(index)
    top = info.max_sm_clock_mhz if info is not None else None
    clock = w.mean(index, "sm_clock_mhz")
    series = w.series(index)
    return GpuFigures(
        index=index,
        busy_pct=w.mean(index, "utilization_gpu_pct"),
        sm_clock_mhz=clock,
        max_sm_clock_mhz=top,
        clock_of_max_pct=None if clock is None or not top else min(100.0, 100.0 * clock / top),
        sm_active_pct=w.mean(index, "sm_active_pct"),
        tensor_active_pct=w.mean(index, "tensor_active_pct"),
        dram_bw_pct=w.mean(index, "dram_bw_pct"),
        throttled_pct=_throttled(series),
    )


def _throttled(series: list[GpuSample]) -> Mapping[str, float]:
    """Each cause's share of the window; every share 0 at once where no reading set a throttle bit and no violation
    counter moved (most ticks of most GPUs), without a pass over the window per cause."""
    if not series:
        return {}
    first, last = series[0], series[-1]
    moved = any(
        cause.counter is not None and (cause.counter(last) or 0) != (cause.counter(first) or 0)
        for cause in THROTTLE_CAUSES.values()
    )
    if not moved and not any((g.clock_event_reasons_mask or 0) & CLOCK_LIMITING for g in series):
        return dict.fromkeys(THROTTLE_CAUSES, 0.0)
    return {name: throttled_pct(series, cause) for name, cause in THROTTLE_CAUSES.items()}


def throttled_pct(series: list[GpuSample], cause: ThrottleCause) -> float:
    """% of the window throttled by `cause`: from its cumulative violation counter when reported, else from the
    share of readings with its bits set."""
    first, last = series[0], series[-1]
    start, end = (None, None) if cause.counter is None else (cause.counter(first), cause.counter(last))
    span_ns = (last.timestamp - first.timestamp) * 1e9
    if start is not None and end is not None and span_ns > 0:
        return max(0.0, min(100.0, (end - start) / span_ns * 100.0))
    return 100.0 * sum(1 for g in series if cause.in_reading(g.clock_event_reasons_mask)) / len(series)
