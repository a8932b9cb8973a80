"""`enter` on a GPU: its history as charts (utilization, SM clock, temperature, power, PCIe, and on GPUs with
GPM SM activity, tensor activity and DRAM bandwidth; in MIG mode each instance's activity now), `esc` back.

Above the charts, what a process of the GPU did, where its stacks were sampled
(gputui/ui/widgets/activity_lines.py): the one `enter` was pressed on in the process table, else the GPU's process
sampled last."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from textual.widget import Widget

from gputui.formatting import NA, fmt_num, fmt_pct, fmt_rate_short
from gputui.history import History
from gputui.model import GpuInfo, GpuSample, ProcSample, Snapshot
from gputui.ui.cells import chart_rows, fit_tags, fmt_pstate, reason_tags, wrap_text
from gputui.ui.marks import Marks
from gputui.ui.screens.cover import CoverScreen
from gputui.ui.widgets.activity_lines import activity_lines
from gputui.ui.widgets.gpu_panel import instance_line, shown_instances
from gputui.ui.widgets.header import HeaderState
from gputui.ui.widgets.lines import Line, LineView, line_len

LABEL = "bright_black"
MARGIN = 2  # the scale is in the title line of each chart


@dataclass(frozen=True, slots=True)
class Chart:
    title: str
    unit: str
    value: Callable[[GpuSample], float | int | None]
    top: Callable[[GpuInfo, list[float]], float]
    fmt: Callable[[float | None], str]
    style: str


def _max_or(values: list[float], floor: float) -> float:
    return max([floor, *values])


CHARTS: tuple[Chart, ...] = (
    Chart("UTIL", "%", lambda s: s.utilization_gpu_pct, lambda i, v: 100.0, fmt_pct, "green"),
    Chart(
        "SM CLOCK",
        "MHz",
        lambda s: s.sm_clock_mhz,
        lambda i, v: float(i.max_sm_clock_mhz or _max_or(v, 1.0)),
        lambda v: fmt_num(v, 0, " MHz"),
        "cyan",
    ),
    Chart(
        "TEMP",
        "C",
        lambda s: s.temperature_c,
        lambda i, v: _max_or(v, float(i.temperature_shutdown_c or i.temperature_slowdown_c or 90)),
        lambda v: fmt_num(v, 0, " C"),
        "yellow",
    ),
    Chart(
        "POWER",
        "W",
        lambda s: s.power_w,
        lambda i, v: _max_or(v, i.power_default_limit_w or 1.0),
        lambda v: fmt_num(v, 0, " W"),
        "magenta",
    ),
    Chart("PCIe TX", "B/s", lambda s: s.pcie_tx_bytes_s, lambda i, v: _max_or(v, 1e9), fmt_rate_short, "blue"),
    Chart("PCIe RX", "B/s", lambda s: s.pcie_rx_bytes_s, lambda i, v: _max_or(v, 1e9), fmt_rate_short, "blue"),
)

# GPM (Hopper and newer): how full the GPU was while utilization said busy. Drawn only where reported.
GPM_CHARTS: tuple[Chart, ...] = (
    Chart("SM ACT", "%", lambda s: s.sm_active_pct, lambda i, v: 100.0, fmt_pct, "green"),
    Chart("TENSOR", "%", lambda s: s.tensor_active_pct, lambda i, v: 100.0, fmt_pct, "bright_green"),
    Chart("DRAM BW", "%", lambda s: s.dram_bw_pct, lambda i, v: 100.0, fmt_pct, "magenta"),
)
NO_GPM = "SM activity, tensor activity, DRAM bandwidth: n/a (no GPM on this GPU; Hopper and newer report it)"
MIG_NOTE = "MIG mode: the driver gives no whole-GPU utilization (UTIL stays empty); the instances' activity now:"


def span_label(snapshots: int, seconds: float) -> str:
    minutes, secs = divmod(round(seconds), 60)
    return f"last {minutes}m{secs:02d}s, {snapshots} samples"


class DetailView(LineView):
    def __init__(self, index: int, marks: Marks, pid: int | None = None, activity_refusal: str | None = None) -> None:
        super().__init__(id="detail")
        self.index = index
        self.marks = marks
        self.pid = pid  # the process chosen in the table, its activity shown sampled or not
        self.activity_refusal = activity_refusal  # why `a` reads no stack here: said instead of offering `a`
        self.history: History | None = None
        self.snapshot: Snapshot | None = None
        self.process: ProcSample | None = None  # the process whose activity is shown (`a` samples it)

    def show(self, history: History, snapshot: Snapshot) -> None:
        self.history, self.snapshot = history, snapshot
        sample = next((g for g in snapshot.gpus if g.index == self.index), None)
        self.process = self._process(snapshot, sample)
        self.redraw()

    def build_lines(self, width: int) -> Sequence[Line]:
        snapshot, history = self.snapshot, self.history
        info = None if snapshot is None else snapshot.info(self.index)
        if snapshot is None or history is None or info is None:
            return [[(f"GPU {self.index}: no data yet", LABEL)]]
        sample = next((g for g in snapshot.gpus if g.index == self.index), None)
        columns = max(1, width - MARGIN)
        window = list(history)[-columns:]
        span = window[-1].timestamp - window[0].timestamp if window else 0.0
        lines = [self._title(info, sample, width)]
        if self.process is not None:
            fresh_s = self.marks.thresholds.activity_fresh_s
            lines += activity_lines(self.process, snapshot.timestamp, width, fresh_s, self.activity_refusal)
        lines.append([(f"{span_label(len(window), span)}, one column per sample", LABEL)])
        gpm = any(g.sm_active_pct is not None for snap in window for g in snap.gpus if g.index == self.index)
        charts = CHARTS + GPM_CHARTS if gpm else CHARTS
        instances = shown_instances(sample, snapshot.system.mig_slice)
        if instances:
            lines += [[(row, LABEL)] for row in wrap_text(MIG_NOTE, width)]
            lines += [instance_line(device, width, width >= 100, self.marks) for device in instances]
        elif not gpm:
            lines += [[(row, LABEL)] for row in wrap_text(NO_GPM, width)]
        room = self.known_height - len(lines)
        shown = charts if room >= 2 * len(charts) else charts[: max(0, (room - 1) // 2)]
        block = max(2, room // len(charts))
        for chart in shown:
            lines += self._chart(chart, info, history, columns, block - 1)
        if len(shown) < len(charts):  # two lines each at the least: those left out are named
            hidden = ", ".join(chart.title for chart in charts[len(shown) :])
            lines.append([(f"+{len(charts) - len(shown)} more charts, on a taller terminal: {hidden}", LABEL)])
        return lines

    def _process(self, snapshot: Snapshot, sample: GpuSample | None) -> ProcSample | None:
        """The process whose activity is shown: the chosen one while on this GPU, else the one sampled last."""
        pids = [p.pid for p in sample.processes if p.seen != "hidden"] if sample is not None else []
        found = [host for host in map(snapshot.host.process, pids) if host is not None]
        chosen = next((host for host in found if host.pid == self.pid), None)
        sampled = {host.activity.taken_at: host for host in found if host.activity is not None}
        return chosen or (sampled[max(sampled)] if sampled else None)

    def _title(self, info: GpuInfo, sample: GpuSample | None, width: int) -> Line:
        """The GPU, its state and tags; then its bus id and UUID, each only where it fits whole."""
        line: Line = [(f"GPU {info.index}  ", "bold"), (info.name, "bold")]
        if sample is not None and sample.lost:
            line += [("  ", ""), (" LOST ", "bold white on red"), (f" {sample.error or ''}", "red")]
        elif sample is not None:
            line.append((f"  {fmt_pstate(sample.pstate)}", ""))
            line += fit_tags(reason_tags(sample.clock_event_reasons), width - line_len(line))
        for label, value in (("bus", info.pci_bus_id), ("uuid", info.uuid)):
            part: Line = [(f"  {label} ", LABEL), (value or NA, "")]
            if line_len(line) + line_len(part) > width:
                break
            line += part
        return line

    def _chart(self, chart: Chart, info: GpuInfo, history: History, columns: int, rows: int) -> list[Line]:
        raw = history.gpu_series(self.index, chart.value, last=columns)
        values: list[float | None] = [None if v is None else float(v) for v in raw]
        known = [v for v in values if v is not None]
        top = chart.top(info, known)
        now = values[-1] if values else None
        head: Line = [
            (f"{chart.title:<9}", "bold"),
            ("now ", LABEL),
            (f"{chart.fmt(now):>10}", ""),
            ("  min ", LABEL),
            (f"{chart.fmt(min(known) if known else None):>10}", ""),
            ("  max ", LABEL),
            (f"{chart.fmt(max(known) if known else None):>10}", ""),
            ("  scale 0 to ", LABEL),
            (chart.fmt(top), ""),
        ]
        body: list[Line] = [[(" " * MARGIN, ""), (row, chart.style)] for row in chart_rows(values, columns, rows, top)]
        return [head, *body]


class DetailScreen(CoverScreen):
    """The same header as the main view (badges included), the charts, the footer."""

    def __init__(
        self,
        index: int,
        marks: Marks,
        on_shown: Callable[[], None],
        pid: int | None = None,
        activity_refusal: str | None = None,
    ) -> None:
        super().__init__(on_shown)
        self.index = index
        self.marks = marks
        self.pid = pid
        self.activity_refusal = activity_refusal

    def body(self) -> Widget:
        return DetailView(self.index, self.marks, self.pid, self.activity_refusal)

    @property
    def shown_pid(self) -> int | None:
        """The process whose activity the view shows: what `a` samples here."""
        process = self.query_one(DetailView).process
        return process.pid if process is not None else None

    def show(self, history: History, snapshot: Snapshot, header: HeaderState) -> None:
        self.show_header(header)
        shown = self.shown_pid
        self.query_one(DetailView).show(history, snapshot)
        if self.shown_pid != shown:
            self.app.refresh_bindings()  # `a` is in the footer while a process is shown
