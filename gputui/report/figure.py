"""The HTML report's figure: the verdict over time on top, one chart per metric under it (report_charts), the
findings' lanes last, all on one time axis in the recording machine's local time, so that zooming one zooms all.

The findings come last because an hour of a busy machine can hold a hundred lanes, which on top would push
every chart off the first screen; on the charts a finding still marks what it is about: the lines its rule
concerns (`Chart.rules`), of the GPUs it names, drawn thick and pale in its severity's colour for as long as it
was open. The SM clock chart is shaded grey where any GPU's clocks were held back.

Laid out in pixels: plotly's toolbar (the modebar) has a band of its own above the first title, with the GPU
selector at its left, so that it never covers a title; the legends stand in the right margin beside the rows
they explain. Lines come on the report_series grid, each as a start and a step, so the page stays small.
"""

from __future__ import annotations

import html
import importlib
import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from gputui.record.format import RecordingError
from gputui.record.reader import Recording
from gputui.report.buckets import Grid
from gputui.report.charts import (
    GPU_CHARTS,
    HOST_CPU_TITLE,
    MIG_ACTIVITY_TITLE,
    SM_CLOCK_TITLE,
    UTILIZATION,
    Chart,
    gpu_colour,
)
from gputui.report.lanes import (
    FINDINGS_LEGEND_TITLE,
    FINDINGS_TITLE,
    SEVERITIES,
    VERDICT_LEGEND_TITLE,
    VERDICT_TITLE,
    Lane,
    drawn_end,
    finding_lanes,
    lane_height_px,
    severity_colour,
    timeline_axis,
    timeline_traces,
    verdict_lanes,
)
from gputui.report.mig_lines import InstanceLine, InstanceSeries
from gputui.report.summary import THROTTLE_BITS, FindingSpan, Report, tick_weights

INSTALL_HINT = "install plotly where gputui runs (in a checkout: .venv/bin/pip install plotly)"
MODEBAR_BAND_PX = 40  # the toolbar is 30 px high at most; nothing else is drawn in this band but the selector
TOP_MARGIN_PX = MODEBAR_BAND_PX + 36  # then the first row's title
# Selecting and the hover-mode switches do nothing useful on a report; fewer buttons make a shorter toolbar. No
# "share" button: it uploads the chart, and with it the machine's name, to Plotly's cloud.
CONFIG: dict[str, Any] = {
    "displaylogo": False,
    "displayModeBar": True,
    "showSendToCloud": False,
    "responsive": True,
    "modeBarButtonsToRemove": [
        "select2d",
        "lasso2d",
        "toggleSpikelines",
        "hoverClosestCartesian",
        "hoverCompareCartesian",
    ],
}
# Plotly's legend names: the GPUs' lines, the verdict's classes, the findings' severities.
GPU_LEGEND, VERDICT_LEGEND_ID, FINDINGS_LEGEND_ID = "legend", "legend2", "legend3"
_CHART_PX = 170
_GAP_PX = 64  # between rows: the row above's time labels, then the title of the row below
_RIGHT_PX = 190  # the legends
_BOTTOM_PX = 40
_LEGEND_ENTRY_PX = 20
_LEGEND_TITLE_PX = 28
# A MIG instance's line is in its GPU's colour, told from its GPU's other instances by its dash.
_INSTANCE_DASHES = ("solid", "dash", "dot", "dashdot", "longdash", "longdashdot")


def _plotly() -> tuple[Any, Any]:
    """plotly's graph_objects and subplots, or a RecordingError that says how to install them."""
    try:
        go = importlib.import_module("plotly.graph_objects")
        subplots = importlib.import_module("plotly.subplots")
    except ImportError:
        raise RecordingError(f"the HTML report needs plotly, which is not installed: {INSTALL_HINT}") from None
    return go, subplots


@dataclass(frozen=True, slots=True)
class _Readings:
    """Every charted value per tick, read in one pass: (GPU index, chart) -> values; host CPU; throttled; the
    activity of every MIG instance, of which a line is drawn only when it reported some."""

    gpus: dict[tuple[int, Chart], list[float | None]]
    host_cpu: list[float | None]
    throttled: list[bool]
    instances: list[InstanceLine]

    @classmethod
    def of(cls, recording: Recording) -> _Readings:
        infos = recording.header.gpu_info
        gpus: dict[tuple[int, Chart], list[float | None]] = {(i.index, c): [] for i in infos for c in GPU_CHARTS}
        host: list[float | None] = []
        throttled: list[bool] = []
        instances = InstanceSeries()
        for tick in recording.ticks:
            samples = {g.index: g for g in tick.gpus}
            instances.add(samples)
            for info in infos:
                sample = samples.get(info.index)
                for chart in GPU_CHARTS:
                    value = chart.value(sample, info) if sample is not None and not sample.lost else None
                    gpus[(info.index, chart)].append(value)
            host.append(tick.host.cpu_pct)
            masks = (g.clock_event_reasons_mask for g in tick.gpus)
            throttled.append(any(mask is not None and mask & THROTTLE_BITS for mask in masks))
        return cls(gpus, host, throttled, instances.lines())

    def reported(self, chart: Chart) -> bool:
        return any(v is not None for (_, c), values in self.gpus.items() if c is chart for v in values)


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


@dataclass(frozen=True, slots=True)
class _Row:
    title: str
    height_px: int


class _Traces:
    """The traces as they are added, each with its row and the GPU it belongs to (None: every selection shows
    it); the selector's choices are read from the owners."""

    def __init__(self) -> None:
        self.rows: list[int] = []
        self.traces: list[Any] = []
        self.owners: list[int | None] = []

    def add(self, row: int, trace: Any, gpu: int | None = None) -> None:
        self.rows.append(row)
        self.traces.append(trace)
        self.owners.append(gpu)


@dataclass(frozen=True, slots=True)
class _Clock:
    """Times as the recording machine's wall clock showed them, in the forms plotly reads on a date axis."""

    utc_offset_s: int

    def at(self, t: float) -> str:
        return datetime.fromtimestamp(t + self.utc_offset_s, timezone.utc).strftime("%Y-%m-%d %H:%M:%S")

    def at_ms(self, t: float) -> str:
        return datetime.fromtimestamp(t + self.utc_offset_s, timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]


def build_figure(recording: Recording, report: Report) -> Any:
    """The whole figure; raises RecordingError when plotly is not installed."""
    go, subplots = _plotly()
    clock = _Clock(report.utc_offset_s)
    grid = Grid.over(recording.ticks.timestamps, report.interval_s)
    readings = _Readings.of(recording)
    charts = [c for c in GPU_CHARTS if not c.gpm or readings.reported(c)]  # no empty chart before Hopper
    if readings.instances and not readings.reported(UTILIZATION):
        charts.remove(UTILIZATION)  # every GPU in MIG mode: no whole-GPU utilization to draw
    instances = [line for line in readings.instances if line.reported]
    verdict = verdict_lanes(report)
    findings = finding_lanes(report)
    chart_rows = [_Row(c.title, _CHART_PX) for c in charts]
    if instances:  # where the utilization chart is, or would be
        chart_rows.insert(int(UTILIZATION in charts), _Row(MIG_ACTIVITY_TITLE, _CHART_PX))
    rows = (
        [_Row(VERDICT_TITLE, lane_height_px(verdict))] * bool(verdict)
        + chart_rows
        + [_Row(HOST_CPU_TITLE, _CHART_PX)]
        + [_Row(FINDINGS_TITLE, lane_height_px(findings))] * bool(findings)
    )
    number = {row.title: n + 1 for n, row in enumerate(rows)}  # plotly counts rows from 1
    traces = _Traces()
    span_s = report.duration_s + report.interval_s
    shares = list(report.verdict_shares())
    for trace in timeline_traces(go, verdict, clock.at, legend=VERDICT_LEGEND_ID, order=shares, span_s=span_s):
        traces.add(number[VERDICT_TITLE], trace)
    infos = recording.header.gpu_info
    for chart in charts:
        lines = {info.index: grid.line(readings.gpus[(info.index, chart)], chart.digits) for info in infos}
        for span in (s for s in report.findings if s.rule.startswith(chart.rules)):
            for gpu in (g for g in span.gpus if g in lines):
                mark = _finding_mark(go, span, gpu, lines[gpu], grid, drawn_end(span, report), clock)
                if mark is not None:
                    traces.add(number[chart.title], mark, gpu)  # before the lines, so each is drawn over its marks
        for n, info in enumerate(infos):
            line = _on_grid(
                go,
                grid,
                clock,
                lines[info.index],
                0,
                name=f"GPU {info.index}",
                legend=GPU_LEGEND,
                legendgroup=f"gpu{info.index}",
                showlegend=chart is charts[0],
                line={"width": 1.2, "color": gpu_colour(n)},
            )
            traces.add(number[chart.title], line, info.index)
    # After the GPUs' lines, so that in the legend each GPU's instances follow the GPU.
    colours = {info.index: gpu_colour(n) for n, info in enumerate(infos)}
    for gpu, line in _instance_lines(go, grid, clock, instances, colours):
        traces.add(number[MIG_ACTIVITY_TITLE], line, gpu)
    host_cpu = grid.line(readings.host_cpu, 1)
    host = _on_grid(
        go, grid, clock, host_cpu, 0, name="host CPU", showlegend=False, line={"width": 1.2, "color": "#444"}
    )
    traces.add(number[HOST_CPU_TITLE], host)
    for trace in timeline_traces(go, findings, clock.at, legend=FINDINGS_LEGEND_ID, order=SEVERITIES, span_s=span_s):
        traces.add(number[FINDINGS_TITLE], trace)

    plot_px = sum(r.height_px for r in rows) + _GAP_PX * (len(rows) - 1)
    fig = subplots.make_subplots(
        rows=len(rows),
        cols=1,
        shared_xaxes=True,
        subplot_titles=[r.title for r in rows],
        vertical_spacing=_GAP_PX / plot_px,
        row_heights=[r.height_px for r in rows],
    )
    fig.add_traces(traces.traces, rows=traces.rows, cols=[1] * len(traces.rows))
    for lanes, title in ((verdict, VERDICT_TITLE), (findings, FINDINGS_TITLE)):
        if lanes:
            fig.update_yaxes(timeline_axis(lanes), row=number[title], col=1)
    for title in [c.title for c in charts if c.percent] + [MIG_ACTIVITY_TITLE] * bool(instances) + [HOST_CPU_TITLE]:
        fig.update_yaxes(range=[0, 100], row=number[title], col=1)
    fig.update_xaxes(type="date", showticklabels=True, hoverformat="%H:%M:%S")
    shapes, notes = _shapes(recording, report, readings.throttled, number[SM_CLOCK_TITLE], clock)
    fig.update_layout(
        height=plot_px + TOP_MARGIN_PX + _BOTTOM_PX,
        hovermode="x unified",
        margin={"l": 70, "r": _RIGHT_PX, "t": TOP_MARGIN_PX, "b": _BOTTOM_PX},
        shapes=shapes,
        annotations=[*fig.layout.annotations, *notes],
        updatemenus=_selector(traces, [info.index for info in infos], plot_px),
        **_legends(rows, verdict, findings, len(infos) + len(instances), plot_px),
    )
    return fig


def _on_grid(go: Any, grid: Grid, clock: _Clock, y: list[float | None], first: int, **style: Any) -> Any:
    """A line on the grid from its point `first`: a start time and a step rather than an array of times."""
    return go.Scatter(x0=clock.at_ms(grid.point_time(first)), dx=grid.step * 1000, y=y, mode="lines", **style)


def _instance_lines(
    go: Any, grid: Grid, clock: _Clock, instances: Sequence[InstanceLine], colours: dict[int, str]
) -> list[tuple[int, Any]]:
    """A line per MIG instance with its GPU, in the GPU's legend group (hiding the GPU hides its instances),
    named for the instance ("GPU 0 GI 2 3g.40gb"), each of a GPU's instances in a dash of its own."""
    lines: list[tuple[int, Any]] = []
    for line in instances:
        position = sum(1 for gpu, _ in lines if gpu == line.gpu)
        lines.append(
            (
                line.gpu,
                _on_grid(
                    go,
                    grid,
                    clock,
                    grid.line(line.values, 1),
                    0,
                    name=line.name,
                    legend=GPU_LEGEND,
                    legendgroup=f"gpu{line.gpu}",
                    line={
                        "width": 1.2,
                        "color": colours.get(line.gpu, gpu_colour(line.gpu)),
                        "dash": _INSTANCE_DASHES[position % len(_INSTANCE_DASHES)],
                    },
                ),
            )
        )
    return lines


def _finding_mark(
    go: Any, span: FindingSpan, gpu: int, line: list[float | None], grid: Grid, end: float, clock: _Clock
) -> Any | None:
    """The GPU's own line while the finding was open, thick and pale in its severity's colour; None when the
    GPU reported nothing then. In the GPU's legend group, so hiding the GPU hides its marks too."""
    first = grid.bucket(span.start) * 2
    during = line[first : grid.bucket(end) * 2 + 2]
    if all(v is None for v in during):
        return None
    return _on_grid(
        go,
        grid,
        clock,
        during,
        first,
        name=f"GPU {gpu} {span.rule}",
        legend=GPU_LEGEND,
        legendgroup=f"gpu{gpu}",
        showlegend=False,
        hoverinfo="skip",
        line={"width": 8, "color": severity_colour(span.severity, 0.35)},
    )


def _shapes(
    recording: Recording, report: Report, throttled: list[bool], clock_row: int, clock: _Clock
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Grey bands where clocks were held back (SM clock chart), a dotted line and a label for each mark. They go
    in with one layout update: plotly's add_vrect re-validates the layout on each call."""
    shapes: list[dict[str, Any]] = []
    notes: list[dict[str, Any]] = []
    timestamps = recording.ticks.timestamps
    weights = tick_weights(timestamps, recording.header.interval_s)
    for start, end in intervals(timestamps, weights, throttled):
        shapes.append(_band(clock_row, clock.at(start), clock.at(end), "rgba(120,120,120,0.15)"))
    for t, label in report.marks:
        x = clock.at(t)
        dotted = {"color": "grey", "dash": "dot", "width": 1}
        shapes.append(
            {"type": "line", "xref": "x", "yref": "paper", "x0": x, "x1": x, "y0": 0, "y1": 1, "line": dotted}
        )
        notes.append(_note(x, 0.0, label, "top"))
    return shapes, notes


def _legends(
    rows: Sequence[_Row], verdict: list[Lane], findings: list[Lane], gpus: int, plot_px: int
) -> dict[str, Any]:
    """The three legends in the right margin, each beside its row and below the one above it, never over it."""
    titles = [r.title for r in rows]
    tops = list(itertools.accumulate((r.height_px + _GAP_PX for r in rows[:-1]), initial=0))  # px under the top

    def entries(lanes: list[Lane]) -> int:
        return len({bar.key for lane in lanes for bar in lane.spans})

    placed: dict[str, Any] = {}
    below = 0
    for legend, title, row, count in (
        (VERDICT_LEGEND_ID, VERDICT_LEGEND_TITLE, VERDICT_TITLE, entries(verdict)),
        (GPU_LEGEND, "GPUs", titles[bool(verdict)], gpus),
        (FINDINGS_LEGEND_ID, FINDINGS_LEGEND_TITLE, FINDINGS_TITLE, entries(findings)),
    ):
        if row not in titles or not count:
            continue
        top = max(tops[titles.index(row)], below)
        placed[legend] = {
            "title": {"text": title},
            "x": 1.025,  # clear of the time labels that overhang the right edge
            "xanchor": "left",
            "y": 1 - top / plot_px,
            "yanchor": "top",
            "tracegroupgap": 2,
        }
        below = top + _LEGEND_TITLE_PX + _LEGEND_ENTRY_PX * count + 16
    return placed


def _selector(traces: _Traces, gpus: Sequence[int], plot_px: int) -> list[dict[str, Any]]:
    """A dropdown at the left of the toolbar's band: every GPU, or one GPU alone on every chart (its lines and
    its marks; the lanes and the host CPU stay). None for a single GPU."""
    if len(gpus) < 2:
        return []
    owners = traces.owners
    choices = [("All GPUs", None), *((f"GPU {g} only", g) for g in gpus)]
    return [
        {
            "type": "dropdown",
            "buttons": [
                {
                    "label": label,
                    "method": "restyle",
                    "args": [{"visible": [chosen is None or owner is None or owner == chosen for owner in owners]}],
                }
                for label, chosen in choices
            ],
            "active": 0,
            "showactive": True,
            "x": 0,
            "xanchor": "left",
            "y": 1 + (TOP_MARGIN_PX - 6) / plot_px,
            "yanchor": "top",
            "pad": {"t": 0, "b": 0, "l": 0, "r": 0},
        }
    ]


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
