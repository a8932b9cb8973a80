"""The lanes of the HTML report: the verdict over time, and one lane per finding key; each span a bar.

Lanes are named on a category axis rather than labelled with annotations, so that findings open at the same
time sit in their own rows instead of printing over each other. Every bar's colour has a legend entry beside
its row (the verdict's classes, the findings' severities), so the lanes read without hovering; clicking an
entry hides those bars. The chart is drawn from plain `Lane`s, not from findings, so that any strip of
coloured spans can be laid in as a lane.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from gputui.diagnostics.account import class_label
from gputui.diagnostics.verdict import gpu_list
from gputui.report.summary import FindingSpan, Report, severity_word

VERDICT_TITLE = "Verdict over time"
FINDINGS_TITLE = "Findings (one lane per rule and GPU)"
VERDICT_LEGEND_TITLE = "verdict"
FINDINGS_LEGEND_TITLE = "findings"
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
    "stopped": (120, 0, 0),
    "mixed": (188, 189, 34),
    "unknown": (215, 215, 215),
}
# Most points drawn along one bar: enough that hovering anywhere on it finds one, few enough for long spans.
_POINTS_PER_BAR = 60
# Points across the whole recording: one every 10 pixels or so of a wide chart, for the hover to find.
_POINTS_ACROSS = 100
SEVERITIES = ("critical", "warning", "info")
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
    """One bar: `end` is where it is drawn to; `open_end` says it was still open when the recording ended;
    `key`: its legend entry (the verdict's class, the finding's severity), which decides its colour."""

    start: float
    end: float
    colour: str
    label: str
    key: str
    open_end: bool = False
    name: str = ""  # its legend entry's words, where they are not the key (a verdict class's label)


@dataclass(frozen=True, slots=True)
class Lane:
    name: str
    spans: tuple[LaneSpan, ...]


def lane_name(span: FindingSpan) -> str:
    """The finding's key in words, its GPUs as the verdict names them, e.g. "thermal_throttle GPU 1" or
    "imbalance GPUs 0-7" (short, for the lane names set the left margin of every chart); a host-wide finding is
    its rule alone."""
    if not span.gpus:
        return span.rule
    return f"{span.rule} {gpu_list(span.gpus)}"


def drawn_end(span: FindingSpan, report: Report) -> float:
    """Where a span's bar ends: an open one runs to the end of the last tick, a closed one lasts a tick at least."""
    end = span.end if span.end is not None else report.end + report.interval_s
    return max(end, span.start + report.interval_s)


def verdict_colour(cls: str) -> str:
    """The verdict class's colour; a class this gputui does not know is drawn as `unknown`."""
    r, g, b = _VERDICT_RGB.get(cls, _VERDICT_RGB["unknown"])
    return f"rgba({r},{g},{b},1)"


def verdict_lanes(report: Report) -> list[Lane]:
    """The verdict over time as one lane, coloured by class; none when the recording kept no verdict."""
    bars = []
    for span in report.verdicts:
        end = span.end if span.end is not None else report.end + report.interval_s
        bars.append(
            LaneSpan(
                start=span.start,
                end=max(end, span.start + report.interval_s),
                colour=verdict_colour(span.cls),
                label=f"{class_label(span.cls)}: {span.summary}",
                key=span.cls,
                name=class_label(span.cls),
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
            label=f"{severity_word(span.severity)}: {span.title}",
            key=span.severity if span.severity in SEVERITIES else "info",
            name=severity_word(span.severity if span.severity in SEVERITIES else "info"),
            open_end=span.end is None,
        )
        spans.setdefault(lane_name(span), []).append(bar)
    return [Lane(name, tuple(bars)) for name, bars in spans.items()]


def lane_height_px(lanes: Sequence[Lane]) -> int:
    """Height of a row of lanes: room for each lane's name."""
    return 20 + 26 * len(lanes)


def timeline_traces(
    go: Any, lanes: Sequence[Lane], when: Callable[[float], str], *, legend: str, order: Sequence[str], span_s: float
) -> list[Any]:
    """Thick lines, one trace per lane and legend entry, the bars apart by gaps; each entry in the legend `legend`
    once, ranked by `order`. Lines rather than plotly's bars: the charts hover by time ("x unified"), and points
    along a line answer that for any moment of a span. `span_s`: the recording's length, which sets how many."""
    step = max(1.0, span_s / _POINTS_ACROSS)
    traces = []
    shown: set[str] = set()
    for lane in lanes:
        for key in dict.fromkeys(bar.key for bar in lane.spans):
            bars = [b for b in lane.spans if b.key == key]
            x: list[str | None] = []
            text: list[str | None] = []
            for bar in bars:
                until = "still open when the recording ended" if bar.open_end else when(bar.end)
                hover = f"{html.escape(bar.label)}<br>{when(bar.start)} to {until}"
                points = _points(bar.start, bar.end, step)
                x.extend([*(when(t) for t in points), None])
                text.extend([*([hover] * len(points)), None])
            traces.append(
                go.Scatter(
                    x=x[:-1],
                    y=[None if t is None else lane.name for t in x[:-1]],
                    text=text[:-1],
                    mode="lines",
                    name=bars[0].name or key,
                    legend=legend,
                    legendgroup=f"{legend}:{key}",
                    legendrank=1 + (order.index(key) if key in order else len(order)),
                    showlegend=key not in shown,
                    line={"width": 12, "color": bars[0].colour},
                    hovertemplate="%{text}<extra>" + html.escape(lane.name) + "</extra>",
                )
            )
            shown.add(key)
    return traces


def _points(start: float, end: float, step: float) -> list[float]:
    """Start, end and a point every `step` seconds between: `_POINTS_PER_BAR` steps at most."""
    steps = max(1, min(_POINTS_PER_BAR, int((end - start) / step)))
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
        "tickfont": {"size": 11},
    }
