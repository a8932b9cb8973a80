"""The findings timeline of the HTML report: one lane per finding key, each span a bar from start to end.

Lanes are named on a category axis rather than labelled with annotations, so that findings open at the same
time sit in their own rows instead of printing over each other. The chart is drawn from plain `Lane`s, not
from findings, so that other strips (a verdict over time) can be laid in as lanes of their own.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from gputui.record.report import FindingSpan, Report

TIMELINE_TITLE = "Verdict and findings (one lane per rule and GPU)"
VERDICT_LANE = "verdict"
# One colour per verdict class, so the verdict lane reads at a glance: green where the machine delivers.
_VERDICT_RGB = {
    "gpu_bound": (44, 160, 44),
    "underused": (188, 220, 120),
    "input_bound": (148, 103, 189),
    "throttled": (214, 39, 40),
    "memory_bound_gpu": (23, 190, 207),
    "inefficient": (245, 140, 0),
    "interconnect": (140, 86, 75),
    "contended": (227, 119, 194),
    "idle": (170, 170, 170),
    "degraded": (40, 40, 40),
    "mixed": (188, 189, 34),
    "unknown": (215, 215, 215),
}
# Most points drawn along one bar: enough that hovering anywhere on it finds one, few enough for long spans.
_POINTS_PER_BAR = 60
_SEVERITY_RGB = {
    "critical": (214, 39, 40),
    "warning": (245, 140, 0),
    "info": (70, 130, 200),
}


def severity_colour(severity: str, alpha: float = 1.0) -> str:
    """Red, orange or blue; an unknown severity is drawn as info rather than failing the page."""
    r, g, b = _SEVERITY_RGB.get(severity, _SEVERITY_RGB["info"])
    return f"rgba({r},{g},{b},{alpha})"


@dataclass(frozen=True, slots=True)
class LaneSpan:
    """One bar: `end` is where it is drawn to; `open_end` says it was still open when the recording ended."""

    start: float
    end: float
    colour: str
    label: str
    open_end: bool = False


@dataclass(frozen=True, slots=True)
class Lane:
    name: str
    spans: tuple[LaneSpan, ...]


def lane_name(span: FindingSpan) -> str:
    """The finding's key in words, e.g. "thermal_throttle GPU 1"; a host-wide finding is its rule alone."""
    if not span.gpus:
        return span.rule
    return f"{span.rule} GPU {','.join(str(g) for g in span.gpus)}"


def drawn_end(span: FindingSpan, report: Report) -> float:
    """Where a span's bar ends: an open one runs to the end of the last tick, a closed one lasts a tick at least."""
    end = span.end if span.end is not None else report.end + report.interval_s
    return max(end, span.start + report.interval_s)


def verdict_lanes(report: Report) -> list[Lane]:
    """The verdict over time as one lane, coloured by class; none when the recording kept no verdict."""
    bars = []
    for span in report.verdicts:
        r, g, b = _VERDICT_RGB.get(span.cls, _VERDICT_RGB["unknown"])
        end = span.end if span.end is not None else report.end + report.interval_s
        bars.append(
            LaneSpan(
                start=span.start,
                end=max(end, span.start + report.interval_s),
                colour=f"rgba({r},{g},{b},1)",
                label=f"{span.cls}: {span.label}: {span.summary}",
                open_end=span.end is None,
            )
        )
    return [Lane(VERDICT_LANE, tuple(bars))] if bars else []


def finding_lanes(report: Report) -> list[Lane]:
    """One lane per finding key, in order of its first span; a key that opened twice has two bars."""
    spans: dict[str, list[LaneSpan]] = {}
    for span in report.findings:
        bar = LaneSpan(
            start=span.start,
            end=drawn_end(span, report),
            colour=severity_colour(span.severity),
            label=f"{span.severity}: {span.title}",
            open_end=span.end is None,
        )
        spans.setdefault(lane_name(span), []).append(bar)
    return [Lane(name, tuple(bars)) for name, bars in spans.items()]


def lane_height_px(lanes: Sequence[Lane]) -> int:
    """Height of the timeline row: room for each lane's name, and for a title on a short one."""
    return max(90, 40 + 26 * len(lanes))


def timeline_traces(go: Any, lanes: Sequence[Lane], when: Callable[[float], str]) -> list[Any]:
    """Thick lines, one trace per lane and colour, the bars apart by gaps. Lines rather than plotly's bars:
    the charts hover by time ("x unified"), and points along a line answer that for any moment of a span."""
    traces = []
    for lane in lanes:
        for colour in dict.fromkeys(bar.colour for bar in lane.spans):
            x: list[str | None] = []
            text: list[str | None] = []
            for bar in (b for b in lane.spans if b.colour == colour):
                until = "still open when the recording ended" if bar.open_end else when(bar.end)
                hover = f"{html.escape(bar.label)}<br>{when(bar.start)} to {until}"
                points = _points(bar.start, bar.end)
                x.extend([*(when(t) for t in points), None])
                text.extend([*([hover] * len(points)), None])
            traces.append(
                go.Scatter(
                    x=x[:-1],
                    y=[None if t is None else lane.name for t in x[:-1]],
                    text=text[:-1],
                    mode="lines",
                    name=lane.name,
                    showlegend=False,
                    line={"width": 12, "color": colour},
                    hovertemplate="%{text}<extra>" + html.escape(lane.name) + "</extra>",
                )
            )
    return traces


def _points(start: float, end: float) -> list[float]:
    """Start, end and evenly spaced points between: `_POINTS_PER_BAR` steps at most, none under a second."""
    steps = max(1, min(_POINTS_PER_BAR, int(end - start)))
    return [start + (end - start) * k / steps for k in range(steps + 1)]


def timeline_axis(lanes: Sequence[Lane]) -> dict[str, Any]:
    """The y axis: lane names top to bottom in the lanes' order, fixed so zooming in time keeps every lane."""
    names = [lane.name for lane in lanes]
    return {
        "type": "category",
        "categoryorder": "array",
        "categoryarray": names,
        "range": [len(names) - 0.5, -0.5],
        "fixedrange": True,
        "automargin": True,
    }
