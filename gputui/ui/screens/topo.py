"""`t`: how the GPUs connect, as `gputui topo` prints it, with each GPU's NVLink traffic live; `esc` back.

The paths are read once, at start; only the links up and the traffic change, so each tick repaints just those
cells. Pair cells are coloured by how fast the path is, so a slow pair in a fast box stands out.
"""

from __future__ import annotations

from collections.abc import Sequence

from textual.widget import Widget

from gputui.formatting import NA, fmt_rate_short
from gputui.model import GpuSample, Snapshot, Topology
from gputui.text import topology_text as topo
from gputui.ui.screens.cover import CoverScreen
from gputui.ui.widgets.header import HeaderState
from gputui.ui.widgets.lines import Line, LineView, line_len

LABEL = "bright_black"
SPEED_STYLES: dict[topo.Speed, str] = {
    "self": "bold",
    "nvlink": "green",
    "switch": "yellow",
    "host": "dark_orange",
    "socket": "red",
    "unknown": LABEL,
}
LEGEND: tuple[tuple[str, topo.Speed, str], ...] = (
    ("NV#", "nvlink", "NVLink"),
    ("PIX/PXB", "switch", "PCIe switch"),
    ("PHB/NODE", "host", "host bridge"),
    ("SYS", "socket", "across sockets"),
    (NA, "unknown", "not read"),
)
NO_TOPOLOGY = "No topology: this source did not read how the GPUs connect. NVLink per GPU:"

Column = list[tuple[str, str]]  # the header, then one (text, style) cell per GPU


def _pair_columns(topology: Topology, names: list[str]) -> list[Column]:
    columns = []
    for col, name in enumerate(names):
        cells = [topo.matrix_cell(topology, row, col) for row in range(len(names))]
        columns.append([(name, "bold"), *((topo.cell_text(c), SPEED_STYLES[topo.speed(c)]) for c in cells)])
    return columns


def _nvlink_columns(snapshot: Snapshot) -> list[Column]:
    samples: dict[int, GpuSample] = {gpu.index: gpu for gpu in snapshot.gpus}
    links: Column = [("Links", "bold")]
    rx: Column = [("NVLink RX", "bold")]
    tx: Column = [("NVLink TX", "bold")]
    for info in snapshot.gpu_info:
        sample = samples.get(info.index)
        text = topo.links_text(info, sample)
        active = None if sample is None else sample.nvlink_links_active
        down = active is not None and info.nvlink_links_total is not None and active < info.nvlink_links_total
        links.append((text, "bold red" if down else ""))
        rx.append((fmt_rate_short(None if sample is None else sample.nvlink_rx_bytes_s), "cyan"))
        tx.append((fmt_rate_short(None if sample is None else sample.nvlink_tx_bytes_s), "cyan"))
    return [links, rx, tx]


def _table(columns: list[Column], gap: int) -> list[Line]:
    """Columns side by side, each as wide as its widest cell; the last three (rates) right-aligned."""
    widths = [max(len(text) for text, _ in column) for column in columns]
    rows: list[Line] = []
    for y in range(len(columns[0])):
        line: Line = []
        for x, (column, width) in enumerate(zip(columns, widths, strict=True)):
            text, style = column[y]
            cell = text.rjust(width) if x >= len(columns) - 2 else text.ljust(width)
            line += [(" " * gap if x else "", ""), (cell, style)]
        rows.append(line)
    return rows


def _wrapped(parts: Sequence[Line], width: int) -> list[Line]:
    """Short groups of parts, as many to a line as fit the width."""
    lines: list[Line] = [[]]
    for part in parts:
        if lines[-1] and line_len(lines[-1]) + line_len(part) > width:
            lines.append([])
        lines[-1] += part
    return lines


def _p2p_lines(topology: Topology, names: list[str], width: int) -> list[Line]:
    """The pairs without P2P (or unread) by name; one short line when every pair has it."""
    pairs: dict[str, list[str]] = {"no": [], NA: []}
    for row in range(len(names)):
        for col in range(row + 1, len(names)):
            status = topo.p2p_cell(topology, row, col)
            if status in pairs:
                pairs[status].append(f"{names[row]}-{names[col]}")
    if len(names) < 2:
        return [[("P2P: ", "bold"), ("no GPU pairs (one GPU)", LABEL)]]
    if not any(pairs.values()):
        return [[("P2P: ", "bold"), ("OK between every pair", "green")]]
    parts: list[Line] = [[("P2P: ", "bold")]]
    for status, style, words in (("no", "red", "no P2P "), (NA, LABEL, "P2P not read ")):
        if pairs[status]:
            parts.append([(words, style)])
            parts += [[(f"{pair} ", "")] for pair in pairs[status]]
    return _wrapped(parts, width)


class TopoView(LineView):
    def __init__(self) -> None:
        super().__init__(id="topo")
        self.snapshot: Snapshot | None = None

    def show(self, snapshot: Snapshot) -> None:
        self.snapshot = snapshot
        self.redraw()

    def build_lines(self, width: int) -> Sequence[Line]:
        snapshot = self.snapshot
        if snapshot is None:
            return [[("Topology: no data yet", LABEL)]]
        names = topo.labels(snapshot.gpu_info)
        topology = snapshot.system.topology
        labels: Column = [("", ""), *((name, "bold") for name in names)]
        nvlink = _nvlink_columns(snapshot)
        title: Line = [("Topology", "bold"), (f"  {len(names)} GPUs, paths read at start, NVLink traffic live", LABEL)]
        if topology is None:
            return [title, [(NO_TOPOLOGY, LABEL)], *_table([labels, *nvlink], 2)]
        numa: Column = [("NUMA", "bold"), *((topo.numa_text(topology, row), "") for row in range(len(names)))]
        near: Column = [("CPU affinity", "bold"), *((topo.affinity_text(topology, r), "") for r in range(len(names)))]
        pairs = _pair_columns(topology, names)
        table: list[Line] = []
        for columns, gap in (
            ([labels, *pairs, numa, near, *nvlink], 2),
            ([labels, *pairs, numa, near, *nvlink], 1),
            ([labels, *pairs, numa, *nvlink], 2),
            ([labels, *pairs, numa, *nvlink], 1),
        ):
            table = _table(columns, gap)
            if line_len(table[0]) <= width:
                break
        legend: list[Line] = [[(f"{key} ", SPEED_STYLES[speed]), (f"{words}  ", LABEL)] for key, speed, words in LEGEND]
        lines = [title, *table, [], *_wrapped(legend, width), *_p2p_lines(topology, names, width)]
        if near not in columns:  # too narrow for the column: one line per group of GPUs that share their CPUs
            for members, cpus in topo.affinity_groups(topology, names):
                lines.append([("CPUs near ", LABEL), (members, "bold"), (": ", LABEL), (cpus, "")])
        return lines


class TopoScreen(CoverScreen):
    """The same header as the main view (badges included), the topology, the footer."""

    def body(self) -> Widget:
        return TopoView()

    def show(self, snapshot: Snapshot, header: HeaderState) -> None:
        self.show_header(header)
        self.query_one(TopoView).show(snapshot)
