"""The processes on the GPUs, joined with what the host knows of them; updated cell by cell.

Each tick the wanted rows are compared with the table: gone rows are removed, new ones added, and only
cells whose text changed are rewritten, with just those cells repainted. Column widths are fixed, so an
update never triggers a layout.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rich.text import Text
from textual.coordinate import Coordinate
from textual.geometry import Region
from textual.widgets import DataTable
from typing_extensions import Self

from gputui.model import Snapshot
from gputui.ui import text as t


@dataclass(frozen=True, slots=True)
class Cell:
    """A table cell: what is shown, and the raw value it sorts by (None sorts first)."""

    shown: str
    value: float | str | None
    right: bool = True

    def __rich__(self) -> Text:
        return Text(self.shown, justify="right" if self.right else "left", no_wrap=True)

    @property
    def sort_key(self) -> tuple[int, float | str]:
        if self.value is None:
            return (0, 0.0)
        return (1, self.value)


# (key, label, width); the command column takes what is left.
COLUMNS: tuple[tuple[str, str, int], ...] = (
    ("gpu", "GPU", 3),
    ("pid", "PID", 8),
    ("user", "USER", 10),
    ("mem", "GPU MEM", 8),
    ("cpu", "CPU%", 6),
    ("threads", "THR", 4),
    ("workers", "WORKERS", 7),
    ("command", "COMMAND", 20),
)
COLUMN_KEYS = tuple(key for key, _, _ in COLUMNS)


def process_rows(snapshot: Snapshot, needle: str = "") -> dict[str, tuple[Cell, ...]]:
    """One row per (GPU, process), keyed 'gpu:pid'; `needle` keeps rows whose user, PID or command has it."""
    rows: dict[str, tuple[Cell, ...]] = {}
    needle = needle.lower()
    for gpu in snapshot.gpus:
        if gpu.lost:
            continue
        for proc in gpu.processes:
            host = snapshot.host.process(proc.pid)
            user = host.user if host else None
            command = (host.cmdline or host.name) if host else None
            if needle and not any(
                needle in text.lower() for text in (str(proc.pid), user or "", command or "") if text
            ):
                continue
            mem = proc.used_memory_bytes
            rows[f"{gpu.index}:{proc.pid}"] = (
                Cell(str(gpu.index), gpu.index),
                Cell(str(proc.pid), proc.pid),
                Cell(user or t.NA, user, right=False),
                Cell(t.fmt_bytes(mem), mem),
                Cell(t.fmt_num(host.cpu_pct if host else None, ".0f"), host.cpu_pct if host else None),
                Cell(t.fmt_num(host.threads if host else None, "d"), host.threads if host else None),
                Cell(t.fmt_num(host.children if host else None, "d"), host.children if host else None),
                Cell(command or t.NA, command, right=False),
            )
    return rows


class ProcessTable(DataTable[Any]):
    """A DataTable whose `show_rows` applies only the differences to what it holds."""

    def __init__(self, *, id: str | None = None) -> None:
        self._cell_refresh = False
        self._rows: dict[str, tuple[Cell, ...]] = {}
        self.sort_column = 0
        self.sort_reverse = False
        super().__init__(id=id, cursor_type="row", zebra_stripes=False)

    def on_mount(self) -> None:
        for key, label, width in COLUMNS:
            self.add_column(label, key=key, width=width)

    def set_command_width(self, total_width: int) -> None:
        """Give the command column the rest of the width; called on resize only."""
        used = sum(width + 2 * self.cell_padding for _, _, width in COLUMNS[:-1])
        column = self.columns.get(self._column_key("command"))
        width = max(10, total_width - used - 2 * self.cell_padding - 2)
        if column is not None and column.width != width:
            column.width = width
            self.refresh(layout=True)

    def _column_key(self, key: str) -> Any:
        return next(k for k in self.columns if k.value == key)

    def refresh(self, *regions: Region, repaint: bool = True, layout: bool = False, recompose: bool = False) -> Self:
        """While cells are being set, DataTable's own whole-table refresh is skipped: the changed cells are
        refreshed one by one instead, which is what keeps a busy table to a few bytes a second."""
        if self._cell_refresh and not regions and not layout and not recompose:
            return self
        return super().refresh(*regions, repaint=repaint, layout=layout, recompose=recompose)

    def show_rows(self, rows: dict[str, tuple[Cell, ...]]) -> None:
        old = self._rows
        structural = old.keys() != rows.keys()
        for key in old.keys() - rows.keys():
            self.remove_row(key)
        for key in rows.keys() - old.keys():
            self.add_row(*rows[key], key=key)
        changed: list[tuple[str, int]] = []
        self._cell_refresh = not structural
        try:
            for key, cells in rows.items():
                before = old.get(key)
                if before is None:
                    continue
                for col, (was, now) in enumerate(zip(before, cells, strict=True)):
                    if was != now:
                        self.update_cell(key, COLUMN_KEYS[col], now)
                        changed.append((key, col))
        finally:
            self._cell_refresh = False
        self._rows = rows
        if self._order_differs():
            self._sort()
        elif not structural:
            for key, col in changed:
                self.refresh_coordinate(Coordinate(self.get_row_index(key), col))

    def cycle_sort(self) -> None:
        """Next column; after the last one, the same columns again in reverse order."""
        self.sort_column += 1
        if self.sort_column >= len(COLUMNS):
            self.sort_column = 0
            self.sort_reverse = not self.sort_reverse
        self._sort()

    def sort_by(self, column: int) -> None:
        if column == self.sort_column:
            self.sort_reverse = not self.sort_reverse
        self.sort_column = column
        self._sort()

    def _sort_key(self, key: str) -> tuple[Any, ...]:
        cells = self._rows[key]
        return (cells[self.sort_column].sort_key, cells[0].sort_key, cells[1].sort_key)

    def _wanted_order(self) -> list[str]:
        return sorted(self._rows, key=self._sort_key, reverse=self.sort_reverse)

    def _order_differs(self) -> bool:
        current = [row.key.value for row in self.ordered_rows]
        return current != self._wanted_order()

    def _sort(self) -> None:
        order = {key: n for n, key in enumerate(self._wanted_order())}
        self.sort(key=lambda cells: order[f"{cells[0].shown}:{cells[1].shown}"])

    def on_data_table_header_selected(self, event: DataTable.HeaderSelected) -> None:
        """A click on a column header sorts by it; a second click reverses."""
        self.sort_by(event.column_index)
