"""The processes on the GPUs, joined with what the host knows of them; updated cell by cell.

This is a LineView rather than a DataTable: a DataTable re-renders every cell of a row through Rich when
one of its cells changes, which at 1 Hz with 8 busy processes costs ~19 ms a tick, twice the whole CPU
budget of the app. Here a row is a list of cell parts; rows whose cells did not change are not touched,
and a changed row repaints only from its first to its last changed cell. The volatile column (CPU %) comes
early for that reason. Rows are keyed 'gpu:pid', so the cursor stays on its process when the order changes.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar

from textual import events
from textual.binding import Binding, BindingType
from textual.message import Message

from gputui.formatting import HIDDEN_PROCESS, NA, fmt_bytes_short, fmt_elapsed, fmt_num, fmt_owner, fmt_unreadable
from gputui.model import GpuProcess, GpuSample, ProcSample, Snapshot
from gputui.ui.widgets.activity_lines import row_mark
from gputui.ui.widgets.lines import Line, LineView

LABEL = "bright_black"


@dataclass(frozen=True, slots=True)
class Cell:
    """A table cell: what is shown, and the raw value it sorts by (None sorts first); a mark, in its own style,
    goes before what is shown (the command's "data 71%")."""

    shown: str
    value: float | str | None
    mark: str = ""
    mark_style: str = ""

    @property
    def sort_key(self) -> tuple[int, float | str]:
        if self.value is None:
            return (0, 0.0)
        return (1, self.value)


@dataclass(frozen=True, slots=True)
class Column:
    key: str
    label: str
    width: int  # 0: whatever is left (the command)
    right: bool = True
    optional: bool = False  # shown only while some row has a value in it
    spare: bool = False  # the first left out when the command would have too little room
    # Left out, lowest first, after the spare columns (which are weighed without these), while the command would
    # have under MIN_COMMAND cells (0: kept at every width).
    drop: int = 0


COLUMNS: tuple[Column, ...] = (
    Column("gpu", "GPU", 3),
    Column("pid", "PID", 8),
    # NVML's PID where it is not the PID here: a process found in this container through its device file.
    Column("host_pid", "HOST PID", 8, optional=True),
    # The MIG instance it runs in ("GI2 3g.40gb"); left out early on a narrow terminal, the panels name it too.
    Column("mig", "MIG", 12, right=False, optional=True, spare=True),
    Column("cpu", "CPU%", 5),
    # Its share of the GPU's time in the driver's last process-utilization sample: the process's part of UTIL
    # (not SM activity, which the panels call SM act; "SM" alone names nothing here).
    Column("sm", "UTIL", 4),
    Column("mem", "GPU MEM", 8),
    # On the host: its resident memory, that as a share of the host's, and how long it has run (to the minute).
    Column("rss", "RSS", 6, drop=3),
    Column("pmem", "%MEM", 5, drop=4),
    Column("time", "TIME", 8, drop=5),
    Column("threads", "THR", 4, drop=1),
    Column("workers", "WORKERS", 7, drop=2),
    # Seen from the host: the container or pod a GPU process runs in, and its PID in there.
    Column("container", "CONTAINER", 12, right=False, optional=True),
    # On a cluster: the pod (namespace/name, or its uid without the kubelet's names) or the Slurm job.
    Column("owner", "POD/JOB", 20, right=False, optional=True, spare=True),
    Column("user", "USER", 10, right=False),
    # Marked with what its main thread did in the last window of stack samples ("data 71%"), where one was taken:
    # a column of its own would leave the command too little room at 80 columns.
    Column("command", "COMMAND", 0, right=False),
)
# The PID column's mark for a process matched through its open /dev/nvidiaN rather than by NVML's PID.
DEVICE_MARK = "*"
# The first column's mark of a row tagged for a signal (space), and its colour.
TAG_MARK = "+"
TAGGED = "bold yellow"
GAP = "  "
# Below this the command is too cut to tell one job from another: the spare columns make room (80x24 keeps it),
# then the host columns (THR, WORKERS, RSS, %MEM, TIME, in that order).
MIN_COMMAND = 20
# The marks before the command of the ranks of one job (one launcher), kept together in tree order.
TREE_FIRST, TREE_MIDDLE, TREE_LAST = "┌ ", "├ ", "└ "
# Where the line of a process's data-loader workers starts: under its PID.
WORKERS_INDENT = " " * 8

Row = tuple[Cell, ...]
_PID = [column.key for column in COLUMNS].index("pid")


def process_rows(snapshot: Snapshot, fresh_s: float, needle: str = "") -> dict[str, Row]:
    """One row per (GPU, process), keyed 'gpu:pid'; `needle` keeps rows whose user, PID, pod or job, command or
    MIG instance has it. An activity older than `fresh_s` (the rules' activity_fresh_s) is marked stale."""
    rows: dict[str, Row] = {}
    needle = needle.lower()
    for key, gpu, proc, host in _hosted(snapshot):
        user = host.user if host else None
        command = (host.cmdline or host.name) if host else None
        if proc.seen == "hidden":
            command = HIDDEN_PROCESS
        refused = fmt_unreadable(host.unreadable) if host else None
        if refused is not None:
            command = f"[{refused}] {command or NA}"
        owner = fmt_owner(host.pod, host.namespace, host.job_id) if host else None
        instance = _instance(gpu, proc)
        texts = (str(proc.pid), user or "", owner or "", command or "", instance or "")
        if needle and not any(needle in text.lower() for text in texts):
            continue
        cpu = host.cpu_pct if host else None
        rss = host.rss_bytes if host else None
        host_memory = snapshot.host.memory_total_bytes
        pmem = None if rss is None or not host_memory else rss / host_memory * 100.0
        started = host.create_time if host else None
        elapsed = None if started is None else max(0.0, snapshot.timestamp - started)
        threads = host.threads if host else None
        children = host.children if host else None
        container = _container(host.container, host.container_pid) if host else None
        pid_text = f"{proc.pid}{DEVICE_MARK}" if proc.seen == "device" else str(proc.pid)
        mark, mark_style = row_mark(host.activity if host else None, snapshot.timestamp, fresh_s)
        rows[key] = (
            Cell(str(gpu.index), gpu.index),
            Cell(pid_text, proc.pid),
            Cell("" if proc.host_pid is None else str(proc.host_pid), proc.host_pid),
            Cell(instance or "", proc.gpu_instance_id if instance else None),
            Cell(fmt_num(cpu, 0), cpu),
            Cell(fmt_num(proc.sm_pct, 0), proc.sm_pct),
            Cell(fmt_bytes_short(proc.used_memory_bytes), proc.used_memory_bytes),
            Cell(fmt_bytes_short(rss), rss),
            Cell(fmt_num(pmem, 1), pmem),
            Cell(fmt_elapsed(elapsed), elapsed),
            Cell(fmt_num(threads, 0), threads),
            Cell(fmt_num(children, 0), children),
            Cell(container or "", container),
            Cell(owner or "", owner),
            Cell(user or NA, user),
            Cell(command or NA, command, f"{mark} " if mark else "", mark_style),
        )
    return rows


def _hosted(snapshot: Snapshot) -> Iterator[tuple[str, GpuSample, GpuProcess, ProcSample | None]]:
    """Each GPU process of the GPUs read, keyed 'gpu:pid' as the rows are, with what the host knows of it (None for
    one in another PID namespace, or not found)."""
    for gpu in snapshot.gpus:
        if gpu.lost:
            continue
        for proc in gpu.processes:
            host = snapshot.host.process(proc.pid) if proc.seen != "hidden" else None
            yield f"{gpu.index}:{proc.pid}", gpu, proc, host


def process_jobs(snapshot: Snapshot) -> dict[str, int]:
    """The job (its launcher's PID) of each row, keyed as process_rows keys them, for the rows whose parent started
    another GPU process too: torchrun's ranks. A process alone under its parent is a job of its own: not listed."""
    parents = {key: (host.ppid, proc.pid) for key, _, proc, host in _hosted(snapshot) if host and host.ppid is not None}
    children: dict[int, set[int]] = {}
    for ppid, pid in parents.values():
        children.setdefault(ppid, set()).add(pid)
    return {key: ppid for key, (ppid, _) in parents.items() if len(children[ppid]) > 1}


def process_workers(snapshot: Snapshot) -> dict[str, tuple[int, float | None]]:
    """Each row's data-loader workers (its child processes) and their CPU together (100 = one core; None unread),
    keyed as process_rows keys them, for the rows that have any: the tree's lines under their processes."""
    return {
        key: (host.children, host.workers_cpu_pct) for key, _, _, host in _hosted(snapshot) if host and host.children
    }


def workers_text(count: int, cpu_pct: float | None) -> str:
    """The tree's line under a process: "└ 16 data-loader workers, CPU 120% together"."""
    return f"└ {count} data-loader worker{'' if count == 1 else 's'}, CPU {fmt_num(cpu_pct, 0, '%')} together"


def process_count(snapshot: Snapshot) -> int:
    """The rows `process_rows` gives without a filter: what a filter's "2 of 9" counts against."""
    return sum(len(gpu.processes) for gpu in snapshot.gpus if not gpu.lost)


def _instance(gpu: GpuSample, proc: GpuProcess) -> str | None:
    """'GI2 3g.40gb': the MIG instance a process runs in, by its GPU instance id and the instance's profile."""
    if proc.gpu_instance_id is None:
        return None
    device = gpu.instance_of(proc)
    profile = device.profile if device is not None else None
    return f"GI{proc.gpu_instance_id}" + (f" {profile}" if profile else "")


def _container(name: str | None, pid: int | None) -> str | None:
    """'3f2a9c1b7d0e:1': the container and the process's PID inside it, as `docker top` would name them."""
    if name is None:
        return None
    return name if pid is None else f"{name}:{pid}"


def shown_columns(rows: dict[str, Row]) -> list[int]:
    """Indices of the columns to draw: every column but an optional one that no row fills."""
    return [
        n
        for n, column in enumerate(COLUMNS)
        if not column.optional or any(row[n].value is not None for row in rows.values())
    ]


def _fixed(shown: Sequence[int]) -> int:
    """The room the columns before the last (the command) take, with their gaps."""
    return sum(COLUMNS[n].width + len(GAP) for n in shown[:-1])


def fit(text: str, width: int, right: bool) -> str:
    """A cell of exactly `width`; a longer text ends in "…" so that a cut never passes for the whole."""
    if len(text) > width:
        text = text[: max(0, width - 1)] + "…" if width > 0 else ""
    return text.rjust(width) if right else text.ljust(width)


def more_processes_text(count: int, focused: bool) -> str:
    """The rows out of view, counted: " +3 processes (tab, up/down)" (the "+N processes" shape the screen
    invariants look for)."""
    keys = "up/down" if focused else "tab, up/down"
    return f" +{count} process{'' if count == 1 else 'es'} ({keys})"


class ProcessTable(LineView):
    """Header line plus one line per process; a cursor row when focused; sorted by one column. Rows out of view are
    counted on the last line; an active filter is named on a title line above the header, with what it keeps."""

    can_focus = True
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up,k", "move(-1)", "Up", show=False),
        Binding("down,j", "move(1)", "Down", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
        Binding("home", "move(-1000000)", "First", show=False),
        Binding("end", "move(1000000)", "Last", show=False),
        Binding("enter", "choose", "Detail", show=False),
        # Live, where a signal may be sent (`taggable`); in a replay its priority space plays and pauses first.
        Binding("space", "tag", "Tag", key_display="space", show=False),
    ]

    class Chosen(Message):
        """`enter` on a process: open the detail view of its GPU, with the process's activity."""

        def __init__(self, gpu: int, pid: int) -> None:
            super().__init__()
            self.gpu = gpu
            self.pid = pid

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.rows: dict[str, Row] = {}
        self.filter_text = ""  # the rows are those this filter kept, of `total`
        self.total = 0
        self.shown: list[int] = shown_columns({})
        self.order: list[str] = []
        self.sort_column = 0
        self.sort_reverse = False
        self.cursor: str | None = None
        self.tagged: set[str] = set()  # rows tagged for a signal, of those shown
        self.taggable = True  # False where no signal may be sent: space tags nothing, and says why
        self.jobs: Mapping[str, int] = {}  # row -> its job's launcher PID, for the ranks of a job (process_jobs)
        self.row_workers: Mapping[str, tuple[int, float | None]] = {}  # row -> its workers, CPU (process_workers)
        self.job_tree = True  # the ranks of a job kept together under one bracket; `f` folds it to a plain sort
        self._top = 0

    # -- data ------------------------------------------------------------------------------------------

    @property
    def empty(self) -> bool:
        """No GPU process at all (not merely none that matches the filter): the table is one line then."""
        return not self.rows and not self.filter_text

    @property
    def wanted_height(self) -> int:
        """The lines it takes to show every row: the header, the rows, and the filter's title line."""
        if self.empty:
            return 1
        return 1 + max(1, len(self.rows)) + int(bool(self.filter_text))

    def show_rows(
        self,
        rows: dict[str, Row],
        filter_text: str = "",
        total: int | None = None,
        jobs: Mapping[str, int] | None = None,
        workers: Mapping[str, tuple[int, float | None]] | None = None,
    ) -> None:
        """The rows to list; with `filter_text`, they are those it kept of `total` (all of them by default);
        `jobs`: the launcher of the rows that are ranks of one job (process_jobs)."""
        self.rows = rows
        self.jobs = {key: job for key, job in (jobs or {}).items() if key in rows}
        self.row_workers = {key: of for key, of in (workers or {}).items() if key in rows}
        self.filter_text = filter_text
        self.total = len(rows) if total is None else total
        self.shown = shown_columns(rows)
        self.tagged &= rows.keys()  # what is signalled is what is seen: a row gone or filtered out loses its tag
        if self.sort_column not in self.shown:
            self.sort_column = 0
        self._sort()
        self.redraw()

    def _sort(self) -> None:
        col = self.sort_column

        def key(row_key: str) -> tuple[object, ...]:
            cells = self.rows[row_key]
            return (cells[col].sort_key, cells[0].sort_key, cells[_PID].sort_key)

        self.order = sorted(self.rows, key=key, reverse=self.sort_reverse)
        if self.job_tree and self.jobs:
            self.order = self._grouped(self.order)
        if self.cursor not in self.rows:
            self.cursor = self.order[0] if self.order else None

    def _grouped(self, order: list[str]) -> list[str]:
        """`order` with the ranks of each job together, where the first of them stands, each job in `order`."""
        grouped: list[str] = []
        placed: set[int] = set()
        for row_key in order:
            job = self.jobs.get(row_key)
            if job is None:
                grouped.append(row_key)
            elif job not in placed:
                placed.add(job)
                grouped += [k for k in order if self.jobs.get(k) == job]
        return grouped

    def toggle_tree(self) -> None:
        """`f`: the jobs' brackets folded into a plain sort, or back."""
        self.job_tree = not self.job_tree
        self._sort()
        self.redraw()

    def _tree_mark(self, position: int) -> str:
        """The bracket before a row's command in tree order: where it stands among its job's ranks."""
        row_key = self.order[position]
        job = self.jobs.get(row_key) if self.job_tree else None
        if job is None:
            return ""
        before = position > 0 and self.jobs.get(self.order[position - 1]) == job
        after = position + 1 < len(self.order) and self.jobs.get(self.order[position + 1]) == job
        return TREE_MIDDLE if before and after else TREE_LAST if before else TREE_FIRST

    def cycle_sort(self) -> None:
        """Next column shown; after the last one, the same columns again in reverse order."""
        position = self.shown.index(self.sort_column) + 1
        if position >= len(self.shown):
            position = 0
            self.sort_reverse = not self.sort_reverse
        self.sort_column = self.shown[position]
        self._sort()
        self.redraw()

    def sort_by(self, column: int) -> None:
        """A click on a header: sort by it; a second click reverses."""
        if column == self.sort_column:
            self.sort_reverse = not self.sort_reverse
        self.sort_column = column
        self._sort()
        self.redraw()

    class TagRefused(Message):
        """space where no signal may be sent: the app says why, rather than the key doing nothing."""

    def action_tag(self) -> None:
        """Tag the cursor's row for a signal, or untag it; where no signal may be sent, ask the app to say why."""
        if not self.taggable:
            self.post_message(self.TagRefused())
        elif self.cursor is not None:
            self.tagged ^= {self.cursor}
            self.redraw()

    def chosen_rows(self) -> set[str]:
        """What a signal acts on: the tagged rows, else the cursor's."""
        if self.tagged:
            return set(self.tagged)
        return {self.cursor} if self.cursor is not None else set()

    # -- drawing ---------------------------------------------------------------------------------------

    def columns_at(self, width: int) -> list[tuple[int, int]]:
        """(column index, width) of the columns drawn at `width`, in order; the last (the command) takes what
        is left, and the spare columns are left out when that would be under MIN_COMMAND."""
        shown = self.shown
        if width - _fixed([n for n in shown if not COLUMNS[n].drop]) < MIN_COMMAND:
            shown = [n for n in shown if not COLUMNS[n].spare]
        for rank in sorted({COLUMNS[n].drop for n in shown if COLUMNS[n].drop}):
            if width - _fixed(shown) >= MIN_COMMAND:
                break
            shown = [n for n in shown if COLUMNS[n].drop != rank]
        fixed = _fixed(shown)
        return [(n, COLUMNS[n].width or max(10, width - fixed)) for n in shown]

    def build_lines(self, width: int) -> Sequence[Line]:
        if self.empty:
            return [[("GPU processes: none", LABEL)]]  # one line, no header: the room goes to what has content
        layout = self.columns_at(width)
        header: Line = []
        for n, (index, w) in enumerate(layout):
            column = COLUMNS[index]
            if n:
                header.append((GAP, ""))
            if index == self.sort_column:
                mark = "v" if self.sort_reverse else "^"  # where it fits: the underline says it too
                label = column.label + mark if len(column.label) < w else column.label
                header.append((fit(label, w, column.right), "bold underline"))
            else:
                header.append((fit(column.label, w, column.right), "bold"))
        if self.known_height == 1 and self.order:  # no room for a row beside the header: the count says it
            return [[(more_processes_text(len(self.order), self.has_focus), LABEL)]]
        lines: list[Line] = [header]
        if self.filter_text:
            kept = f'filter "{self.filter_text}": {len(self.rows)} of {self.total} processes (/ to change)'
            lines.insert(0, [(kept, "bold yellow")])
        visible = max(0, self.known_height - len(lines))
        if len(self.order) > visible:
            visible = max(0, visible - 1)  # a line for the count of those out of view
        index = self.order.index(self.cursor) if self.cursor in self.order else 0
        self._top = min(max(0, self._top, index - visible + 1), index, max(0, len(self.order) - visible))
        # The workers' lines only where every row and every such line fits: the rows are never pushed out for them.
        room = self.known_height - len(lines) - len(self.order)
        workers = self.row_workers if self.job_tree and len(self.row_workers) <= room else {}
        for position in range(self._top, min(len(self.order), self._top + visible)):
            row_key = self.order[position]
            branch = self._tree_mark(position)
            cells = self.rows[row_key]
            tagged = row_key in self.tagged
            style = "reverse" if row_key == self.cursor and self.has_focus else ""
            if tagged:
                style = f"{style} {TAGGED}".strip()
            line: Line = []
            for n, (index, w) in enumerate(layout):
                if n:
                    line.append((GAP, style))
                cell = cells[index]
                if branch and COLUMNS[index].key == "command":
                    line.append((branch[:w], f"{style} {LABEL}".strip()))
                    w -= len(branch[:w])
                mark = cell.mark[:w]
                if mark:
                    line.append((mark, f"{style} {cell.mark_style}".strip()))
                text = fit(cell.shown, w - len(mark), COLUMNS[index].right)
                if tagged and n == 0:
                    text = TAG_MARK + text[1:]
                line.append((text, style))
            lines.append(line)
            if row_key in workers:  # under the PID, as a child process is
                lines.append([(fit(WORKERS_INDENT + workers_text(*workers[row_key]), width, False), LABEL)])
        if not self.order:
            lines.append([("no processes match the filter", LABEL)])
        elif len(self.order) > visible:
            lines.append([(more_processes_text(len(self.order) - visible, self.has_focus), LABEL)])
        return lines

    def watch_has_focus(self, has_focus: bool) -> None:
        """The cursor is marked only while focused; `on_focus` would run before `has_focus` is set."""
        super().watch_has_focus(has_focus)
        self.redraw()

    def on_click(self, event: events.Click) -> None:
        if event.y != 0:
            return
        x = 0
        for index, w in self.columns_at(self.known_width):
            if event.x < x + w + len(GAP):
                self.sort_by(index)
                return
            x += w + len(GAP)

    # -- keys ------------------------------------------------------------------------------------------

    def action_move(self, delta: int) -> None:
        if not self.order:
            return
        index = self.order.index(self.cursor) if self.cursor in self.order else 0
        self.cursor = self.order[max(0, min(len(self.order) - 1, index + delta))]
        self.redraw()

    def action_page(self, direction: int) -> None:
        self.action_move(direction * max(1, self.known_height - 2))

    def action_choose(self) -> None:
        if self.cursor is not None:
            gpu, pid = self.cursor.split(":", 1)
            self.post_message(self.Chosen(int(gpu), int(pid)))
