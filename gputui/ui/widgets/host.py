"""The host under the GPUs: per-core CPU, iowait, memory and swap, disk and network rates.

Few cores are shown as numbers; many as a heat strip of one block character per core, wrapped over as
many lines as the width needs, so 128 cores fit in two lines of a 120-column terminal.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text

from gputui.model import HostSample
from gputui.ui import text as t
from gputui.ui.widgets.lines import LineView

LABEL = "bright_black"
PREFIX = "CPU  "
NUMBER_CELL = 4  # " 42" plus a space, per core, when the cores are shown as numbers


def core_style(pct: float) -> str:
    return t.level_style(pct / 100.0)


def core_lines(cores: Sequence[float], width: int) -> list[Text]:
    """Per-core load as numbers when they fit on one line, else as a wrapped heat strip."""
    room = max(1, width - len(PREFIX))
    if not cores:
        return [Text.assemble((PREFIX, LABEL), ("n/a", LABEL))]
    if len(cores) * NUMBER_CELL <= room:
        line = Text(PREFIX, style=LABEL)
        for pct in cores:
            line.append(f"{pct:>3.0f} ", style=core_style(pct))
        return [line]
    lines: list[Text] = []
    for start in range(0, len(cores), room):
        line = Text(PREFIX if not lines else " " * len(PREFIX), style=LABEL)
        for pct in cores[start : start + room]:
            line.append(t.spark_char(pct / 100.0), style=core_style(pct))
        lines.append(line)
    return lines


def stat_fields(host: HostSample) -> list[Text]:
    def used_of(used: int | None, total: int | None) -> str:
        return f"{t.fmt_bytes(used)}/{t.fmt_bytes(total)}"

    mem_frac = None
    if host.memory_used_bytes is not None and host.memory_total_bytes:
        mem_frac = host.memory_used_bytes / host.memory_total_bytes
    iowait = host.iowait_pct
    return [
        Text.assemble(("avg ", LABEL), (f"{t.fmt_pct(host.cpu_pct):>4}", core_style(host.cpu_pct or 0.0))),
        Text.assemble(
            ("iowait ", LABEL),
            (f"{t.fmt_num(iowait, '.1f', '%'):>5}", "yellow" if iowait is not None and iowait >= 10 else ""),
        ),
        Text.assemble(
            ("MEM ", LABEL), (used_of(host.memory_used_bytes, host.memory_total_bytes), t.level_style(mem_frac))
        ),
        Text.assemble(("SWAP ", LABEL), used_of(host.swap_used_bytes, host.swap_total_bytes)),
        Text.assemble(
            ("DISK R ", LABEL),
            f"{t.fmt_rate(host.disk_read_bytes_s):>9}",
            (" W ", LABEL),
            f"{t.fmt_rate(host.disk_write_bytes_s):>9}",
        ),
        Text.assemble(
            ("NET RX ", LABEL),
            f"{t.fmt_rate(host.net_rx_bytes_s):>9}",
            (" TX ", LABEL),
            f"{t.fmt_rate(host.net_tx_bytes_s):>9}",
        ),
    ]


def pack(fields: Sequence[Text], width: int, indent: str = "     ") -> list[Text]:
    """Fields two spaces apart, wrapped onto as few lines as the width allows."""
    lines: list[Text] = [Text(indent)]
    for field in fields:
        line = lines[-1]
        if line.cell_len > len(indent) and line.cell_len + 2 + field.cell_len > width:
            line = Text(indent)
            lines.append(line)
        elif line.cell_len > len(indent):
            line.append("  ")
        line.append_text(field)
    return lines


class HostPanel(LineView):
    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.host: HostSample | None = None

    def show(self, host: HostSample) -> None:
        self.host = host
        self.redraw()

    def line_count(self, width: int) -> int:
        return len(self.build_lines(width)) if self.host is not None else 1

    def build_lines(self, width: int) -> Sequence[Text]:
        if self.host is None:
            return [Text(PREFIX + "n/a", style=LABEL)]
        return core_lines(self.host.cpu_pct_per_core, width) + pack(stat_fields(self.host), width)
