"""Pure text helpers for the TUI: bars, sparklines, throttle tags (numbers: gputui.formatting; colours: marks.py).

Everything here is plain Python and Rich, so it is cheap to test. Characters are limited to ASCII and the
eight block elements, which every PuTTY or tmux font draws. A value that was not reported is always "n/a".
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from functools import lru_cache

from rich.cells import chop_cells

from gputui.formatting import NA

SPARK_CHARS = "▁▂▃▄▅▆▇█"
# Sparkline cells for a missing reading: a space, so a gap never looks like a low value.
SPARK_GAP = " "

# Clock event reason -> (tag, style). `gpu_idle` is left out: an idle GPU is not a problem.
REASON_TAGS: dict[str, tuple[str, str]] = {
    "sw_thermal_slowdown": ("THERMAL", "bold red"),
    "hw_thermal_slowdown": ("HW-THERM", "bold red"),
    "hw_slowdown": ("HW-SLOW", "bold red"),
    "hw_power_brake": ("PWR-BRAKE", "bold red"),
    "sw_power_cap": ("PWR-CAP", "yellow"),
    "applications_clocks": ("APP-CLK", "cyan"),
    "sync_boost": ("SYNC", "cyan"),
    "display_clocks": ("DISPLAY", "bright_black"),
}
HIDDEN_REASONS = frozenset({"gpu_idle"})


# A bit that only repeats what a worse one beside it says (nvml.h): HW slowdown is set whenever the HW thermal
# slowdown or the power brake is, and the SW thermal slowdown comes before the HW one.
_SAID_BY = {"hw_slowdown": ("hw_thermal_slowdown", "hw_power_brake"), "sw_thermal_slowdown": ("hw_thermal_slowdown",)}


def reason_tags(reasons: Sequence[str] | None) -> list[tuple[str, str]]:
    """Short tags for the active clock event reasons, one per cause, worst first; unknown bits are shown as
    they are."""
    if not reasons:
        return []
    order = list(REASON_TAGS)
    named = [r for r in reasons if not any(cause in reasons for cause in _SAID_BY.get(r, ()))]
    known = sorted((r for r in named if r in REASON_TAGS), key=order.index)
    tags = [REASON_TAGS[r] for r in known]
    tags += [(r, "magenta") for r in named if r not in REASON_TAGS and r not in HIDDEN_REASONS]
    return tags


def fit_tags(tags: Sequence[tuple[str, str]], room: int | None = None) -> list[tuple[str, str]]:
    """The tags as (text, style) parts, each after a space and reversed; within `room` cells, those that fit whole
    and "+N" for the rest, so that a tag is never cut nor left out unsaid."""
    parts: list[tuple[str, str]] = []
    used = 0
    for n, (tag, style) in enumerate(tags):
        rest = len(tags) - n - 1
        if room is not None and used + 1 + len(tag) + (len(f" +{rest}") if rest else 0) > room:
            parts.append((f" +{len(tags) - n}", "bold red"))
            break
        parts += [(" ", ""), (tag, f"{style} reverse")]
        used += 1 + len(tag)
    return parts


def fmt_pcie(gen: int | None, width: int | None) -> str:
    if gen is None and width is None:
        return NA
    return f"Gen{gen if gen is not None else '?'} x{width if width is not None else '?'}"


def fmt_pstate(pstate: int | None) -> str:
    return NA if pstate is None else f"P{pstate}"


def bar(fraction: float | None, width: int) -> str:
    """A bar of `width` cells: '|' for the filled share, spaces for the rest, '?' across when unknown."""
    if width <= 0:
        return ""
    if fraction is None:
        return "?" * width
    filled = round(max(0.0, min(1.0, fraction)) * width)
    return "|" * filled + " " * (width - filled)


def spark_char(fraction: float | None) -> str:
    if fraction is None:
        return SPARK_GAP
    level = round(max(0.0, min(1.0, fraction)) * (len(SPARK_CHARS) - 1))
    return SPARK_CHARS[level]


def sparkline(values: Sequence[float | None], width: int, top: float = 100.0) -> str:
    """The newest `width` values as block characters, right-aligned, scaled against `top`."""
    if width <= 0:
        return ""
    tail = list(values)[-width:]
    cells = "".join(spark_char(None if v is None else v / top) for v in tail)
    return cells.rjust(width, SPARK_GAP)


def chart_rows(values: Sequence[float | None], width: int, height: int, top: float) -> list[str]:
    """A bar chart `height` rows tall of the newest `width` values, top row first, in block characters."""
    tail: list[float | None] = [None] * max(0, width - len(values))
    tail += list(values)[-width:]
    eighths = len(SPARK_CHARS)
    rows: list[str] = []
    for row in range(height - 1, -1, -1):
        cells = []
        for value in tail:
            if value is None or top <= 0:
                cells.append(" ")
                continue
            level = max(0.0, min(1.0, value / top)) * height * eighths
            part = level - row * eighths
            if part >= eighths:
                cells.append(SPARK_CHARS[-1])
            elif part >= 1:
                cells.append(SPARK_CHARS[int(part) - 1])
            elif row == 0 and value > 0:
                cells.append(SPARK_CHARS[0])
            else:
                cells.append(" ")
        rows.append("".join(cells))
    return rows


def short_gpu_name(name: str) -> str:
    """'NVIDIA H100 80GB HBM3' -> 'H100 80GB HBM3': the vendor is the same on every line (and the
    header already says when the machine is simulated)."""
    for prefix in ("simulated ", "NVIDIA ", "Tesla ", "GeForce "):
        if name.startswith(prefix):
            name = name[len(prefix) :]
    return name


@lru_cache(maxsize=64)
def wrap_text(text: str, width: int) -> tuple[str, ...]:
    """`text` on as many lines of `width` cells as it needs, broken between words where it is ASCII (cached:
    the header asks again each tick)."""
    width = max(1, width)
    if not text.isascii():
        return tuple(chop_cells(text, width))
    return tuple(textwrap.wrap(text, width, break_on_hyphens=False)) or ("",)
