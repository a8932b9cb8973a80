"""The HTML report: the text report and charts over time, in one file that opens offline (plotly.js inline).

Charts share one time axis in the recording machine's local time. Findings get a timeline of their own at the
top (report_lanes); on the charts a finding marks only what it is about: the lines its rule concerns (see
`_Line.rules`), of the GPUs it names, drawn thick and pale in its severity's colour for as long as it was open.
The SM clock chart is shaded grey where any GPU's clocks were held back (power cap, thermal, HW slowdown, power
brake). Long recordings are thinned to at most MAX_POINTS per line, keeping each bucket's lowest and highest
value so that a dip or a spike still shows. The efficiency row (SM, tensor and DRAM activity from GPM) is
drawn only when some GPU reported GPM, so a recording of pre-Hopper GPUs has no empty chart.
"""

from __future__ import annotations

import html
import importlib
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from gputui.model import CLOCK_EVENT_REASONS, GpuSample
from gputui.record.format import RecordingError
from gputui.record.reader import Recording
from gputui.record.report import THROTTLING_REASONS, FindingSpan, Report, render_text, tick_weights
from gputui.record.report_lanes import (
    TIMELINE_TITLE,
    drawn_end,
    finding_lanes,
    lane_height_px,
    severity_colour,
    timeline_axis,
    timeline_traces,
    verdict_lanes,
)

INSTALL_HINT = "pip install 'gputui[report]'  (in a checkout: .venv/bin/pip install plotly)"
MAX_POINTS = 4000
_THROTTLE_BITS = sum(bit for bit, name in CLOCK_EVENT_REASONS if name in THROTTLING_REASONS)
_ROW_HEIGHT_PX = 230

_Value = Callable[[GpuSample], float | None]


class _Line(NamedTuple):
    """One line per GPU of a chart; `rules`: prefixes of the rule ids whose findings are marked on it."""

    label: str  # after "GPU n" in the hover
    dash: str
    value: _Value
    rules: tuple[str, ...] = ()


# (row title, its lines per GPU); host CPU is the last row, apart.
_Row = tuple[str, tuple[_Line, ...]]
_Points = list[tuple[float, float | None]]

EFFICIENCY_TITLE = "Efficiency (%): SM active solid, tensor dashed, DRAM bandwidth dotted"
# GPM says how full a busy GPU is; it sits under utilization, and is left out when no GPU reported GPM.
_EFFICIENCY_ROW: _Row = (
    EFFICIENCY_TITLE,
    (
        _Line("SM active", "solid", lambda g: g.sm_active_pct, ("low_sm_activity",)),
        _Line("tensor", "dash", lambda g: g.tensor_active_pct, ("tensor_cores_idle",)),
        _Line("DRAM bw", "dot", lambda g: g.dram_bw_pct, ("memory_bound",)),
    ),
)
# Findings that hold the clocks back are about the SM clock and the power that capped it.
_CLOCK_RULES = ("power_cap", "hw_slowdown", "power_brake", "clocks_low")


def _one(title: str, value: _Value, rules: tuple[str, ...]) -> _Row:
    """A row of one line per GPU, as most rows are."""
    return title, (_Line("", "solid", value, rules),)


_SM_CLOCK_ROW = _one(
    "SM clock (MHz)", lambda g: None if g.sm_clock_mhz is None else float(g.sm_clock_mhz), _CLOCK_RULES
)
_GPU_ROWS: tuple[_Row, ...] = (
    _one("GPU utilization (%)", lambda g: g.utilization_gpu_pct, ("starvation_",)),
    _EFFICIENCY_ROW,
    _SM_CLOCK_ROW,
    _one("GPU temperature (°C)", lambda g: g.temperature_c, ("thermal_",)),
    _one("Power (W)", lambda g: g.power_w, _CLOCK_RULES),
    _one("PCIe rx (GB/s)", lambda g: None if g.pcie_rx_bytes_s is None else g.pcie_rx_bytes_s / 1e9, ("pcie_",)),
    _one("PCIe tx (GB/s)", lambda g: None if g.pcie_tx_bytes_s is None else g.pcie_tx_bytes_s / 1e9, ("pcie_",)),
)


def _plotly() -> tuple[Any, Any]:
    try:
        go = importlib.import_module("plotly.graph_objects")
        subplots = importlib.import_module("plotly.subplots")
    except ImportError:
        raise RecordingError(f"the HTML report needs plotly, which is not installed: {INSTALL_HINT}") from None
    return go, subplots


def thin(points: Sequence[tuple[float, float | None]], limit: int = MAX_POINTS) -> list[tuple[float, float | None]]:
    """At most about `limit` points: each bucket keeps its lowest and highest value, in time order."""
    if len(points) <= limit:
        return list(points)
    size = -(-len(points) * 2 // limit)
    out: list[tuple[float, float | None]] = []
    for start in range(0, len(points), size):
        bucket = points[start : start + size]
        known = [(t, v) for t, v in bucket if v is not None]
        if not known:
            out.append(bucket[0])  # a gap stays a gap
            continue
        low = min(known, key=lambda p: p[1])
        high = max(known, key=lambda p: p[1])
        out.extend(sorted({low, high}))
    return out


def intervals(
    timestamps: Sequence[float], weights: Sequence[float], flags: Sequence[bool]
) -> list[tuple[float, float]]:
    """Time spans where the flag is up, each tick standing for its weight; touching spans merge."""
    spans: list[tuple[float, float]] = []
    for t, weight, flag in zip(timestamps, weights, flags, strict=True):
        if not flag:
            continue
        if spans and t <= spans[-1][1] + 1e-6:
            spans[-1] = (spans[-1][0], t + weight)
        else:
            spans.append((t, t + weight))
    return spans


def _series(
    recording: Recording, rows: Sequence[_Row]
) -> tuple[dict[tuple[int, int, int], _Points], _Points, list[bool]]:
    """Every chart line, read in one pass: (GPU index, row, line) -> points; host CPU points; throttled per tick."""
    lines: dict[tuple[int, int, int], _Points] = {
        (info.index, row, n): []
        for info in recording.header.gpu_info
        for row, (_, row_lines) in enumerate(rows)
        for n in range(len(row_lines))
    }
    host: _Points = []
    throttled: list[bool] = []
    for tick in recording.ticks:
        samples = {g.index: g for g in tick.gpus}
        for info in recording.header.gpu_info:
            sample = samples.get(info.index)
            for row, (_, row_lines) in enumerate(rows):
                for n, line in enumerate(row_lines):
                    shown = line.value(sample) if sample is not None and not sample.lost else None
                    lines[(info.index, row, n)].append((tick.timestamp, shown))
        host.append((tick.timestamp, tick.host.cpu_pct))
        throttled.append(
            any(
                g.clock_event_reasons_mask is not None and g.clock_event_reasons_mask & _THROTTLE_BITS
                for g in tick.gpus
            )
        )
    return lines, host, throttled


def build_figure(recording: Recording, report: Report) -> Any:
    go, subplots = _plotly()
    offset = report.utc_offset_s

    def when(t: float) -> str:
        return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(t + offset))

    gpm = any(gpu.gpm_reported for gpu in report.gpus)
    rows = [r for r in _GPU_ROWS if gpm or r is not _EFFICIENCY_ROW]  # no empty chart for pre-Hopper GPUs
    lanes = [*verdict_lanes(report), *finding_lanes(report)]
    top = 1 if lanes else 0  # the timeline's row, when there is a lane to draw
    titles = [TIMELINE_TITLE] * top + [title for title, _ in rows] + ["Host CPU, all cores (%)"]
    heights = [lane_height_px(lanes)] * top + [_ROW_HEIGHT_PX] * (len(rows) + 1)
    fig = subplots.make_subplots(
        rows=len(titles),
        cols=1,
        shared_xaxes=True,
        subplot_titles=titles,
        vertical_spacing=0.03,
        row_heights=heights,
    )
    if lanes:
        fig.add_traces(timeline_traces(go, lanes, when), rows=1, cols=1)
        fig.update_yaxes(timeline_axis(lanes), row=1, col=1)
    lines, host, throttled = _series(recording, rows)
    for span in report.findings:  # first, so that each GPU's line is drawn over its marks
        for row, gpu, points in _concerned(span, rows, lines):
            mark = _finding_mark(go, span, gpu, points, drawn_end(span, report), when)
            if mark is not None:
                fig.add_trace(mark, row=top + row + 1, col=1)
    for gpu_no, info in enumerate(recording.header.gpu_info):
        for row, (_, row_lines) in enumerate(rows):
            for n, line in enumerate(row_lines):
                shown = thin(lines[(info.index, row, n)])
                fig.add_trace(
                    go.Scatter(
                        x=[when(t) for t, _ in shown],
                        y=[v for _, v in shown],
                        mode="lines",
                        name=f"GPU {info.index} {line.label}".rstrip(),
                        legendgroup=f"gpu{info.index}",
                        showlegend=row == 0,
                        line={"width": 1.2, "color": _colour(gpu_no), "dash": line.dash},
                    ),
                    row=top + row + 1,
                    col=1,
                )
    if gpm:
        fig.update_yaxes(range=[0, 100], row=top + rows.index(_EFFICIENCY_ROW) + 1, col=1)
    shown_host = thin(host)
    fig.add_trace(
        go.Scatter(x=[when(t) for t, _ in shown_host], y=[v for _, v in shown_host], mode="lines", name="host CPU"),
        row=len(titles),
        col=1,
    )
    # Shapes and notes go in with one layout update: plotly's add_vrect re-validates the layout on each call.
    shapes: list[dict[str, Any]] = []
    notes: list[dict[str, Any]] = []
    timestamps = recording.ticks.timestamps
    weights = tick_weights(timestamps, recording.header.interval_s)
    clock_row = top + rows.index(_SM_CLOCK_ROW) + 1
    for start, end in intervals(timestamps, weights, throttled):
        shapes.append(_band(clock_row, when(start), when(end), "rgba(120,120,120,0.15)"))
    for t, label in report.marks:
        x = when(t)
        dotted = {"color": "grey", "dash": "dot", "width": 1}
        shapes.append(
            {"type": "line", "xref": "x", "yref": "paper", "x0": x, "x1": x, "y0": 0, "y1": 1, "line": dotted}
        )
        notes.append(_note(x, 0.0, label, "top"))
    fig.update_layout(shapes=shapes, annotations=[*fig.layout.annotations, *notes])
    fig.update_layout(
        height=sum(heights),
        hovermode="x unified",
        margin={"l": 60, "r": 20, "t": 60, "b": 40},
        title={
            "text": "findings: red critical, orange warning, blue info; on a chart, over the lines they concern"
            " · grey: clocks held back on some GPU · dotted: a mark"
        },
    )
    return fig


def _concerned(
    span: FindingSpan, rows: Sequence[_Row], lines: dict[tuple[int, int, int], _Points]
) -> list[tuple[int, int, _Points]]:
    """(row, GPU, its points) of every line a finding is about: its rule's lines, of its GPUs."""
    out: list[tuple[int, int, _Points]] = []
    for row, (_, row_lines) in enumerate(rows):
        for n, line in enumerate(row_lines):
            if not span.rule.startswith(line.rules):
                continue
            out.extend((row, gpu, lines[(gpu, row, n)]) for gpu in span.gpus if (gpu, row, n) in lines)
    return out


def _finding_mark(
    go: Any, span: FindingSpan, gpu: int, points: _Points, end: float, when: Callable[[float], str]
) -> Any | None:
    """The GPU's own line while the finding was open, thick and pale in its severity's colour; None when the
    GPU reported nothing then. In the GPU's legend group, so hiding the GPU hides its marks too."""
    during = thin([(t, v) for t, v in points if span.start <= t <= end])
    if all(v is None for _, v in during):
        return None
    colour = severity_colour(span.severity, 0.35)
    return go.Scatter(
        x=[when(t) for t, _ in during],
        y=[v for _, v in during],
        mode="lines" if len(during) > 1 else "markers",
        name=f"GPU {gpu} {span.rule}",
        legendgroup=f"gpu{gpu}",
        showlegend=False,
        hoverinfo="skip",
        line={"width": 8, "color": colour},
        marker={"size": 10, "color": colour},
    )


def _band(row: int, x0: str, x1: str, colour: str) -> dict[str, Any]:
    """A shaded time span on one chart row only."""
    suffix = "" if row == 1 else str(row)
    return {
        "type": "rect",
        "xref": f"x{suffix}",
        "yref": f"y{suffix} domain",
        "x0": x0,
        "x1": x1,
        "y0": 0,
        "y1": 1,
        "fillcolor": colour,
        "line": {"width": 0},
        "layer": "below",
    }


def _note(x: str, y: float, text: str, anchor: str) -> dict[str, Any]:
    return {
        "x": x,
        "y": y,
        "xref": "x",
        "yref": "paper",
        "text": html.escape(text[:40]),
        "showarrow": False,
        "xanchor": "left",
        "yanchor": anchor,
        "font": {"size": 10},
    }


def _colour(n: int) -> str:
    palette = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf")
    return palette[n % len(palette)]


def render_html(recording: Recording, report: Report) -> str:
    """One self-contained page: the SIMULATED label when it applies, the text report, the charts."""
    fig = build_figure(recording, report)
    charts = fig.to_html(full_html=False, include_plotlyjs=True, config={"displaylogo": False})
    banner = ""
    if report.simulated:
        banner = (
            '<p class="sim">SIMULATED'
            + (f" (scenario {html.escape(report.scenario)})" if report.scenario else "")
            + ": not measured on a real machine</p>"
        )
    title = f"gputui report: {html.escape(report.hostname)}"
    return (
        '<!DOCTYPE html>\n<html><head><meta charset="utf-8">'
        f"<title>{title}</title><style>"
        "body{font-family:system-ui,sans-serif;margin:1em 2em}"
        "pre{background:#f6f6f6;padding:1em;overflow-x:auto;font-size:13px}"
        ".sim{background:#ffd500;color:#000;font-weight:bold;padding:.4em .8em;display:inline-block}"
        f"</style></head><body>{banner}<h1>{title}</h1>"
        f"<pre>{html.escape(render_text(report))}</pre>{charts}</body></html>\n"
    )


def write_html(recording: Recording, report: Report, out: Path) -> None:
    """Write the page (a report is made again from its recording, so it may be overwritten)."""
    page = render_html(recording, report)
    try:
        out.write_text(page, encoding="utf-8")
    except OSError as exc:
        raise RecordingError(f"cannot write {out}: {exc.strerror or exc}") from exc
