"""One server of a fleet as a compact block of lines: a title, one dense line per GPU, its worst findings.

The lines are built by pure functions from a HostState (cheap to test, no Textual needed to read them) and
painted through LineView, which repaints only the parts that changed. Only ASCII is used for gputui's own
marks, so a block reads the same in PuTTY, tmux and a Linux console.
"""

from __future__ import annotations

from collections.abc import Sequence
from urllib.parse import urlsplit

from gputui.diagnostics.catalog import severity_label
from gputui.diagnostics.findings import Finding
from gputui.diagnostics.groups import group_findings, sort_groups
from gputui.diagnostics.verdict import gpu_list
from gputui.formatting import NA, fmt_duration, fmt_gib, fmt_num, fmt_pct
from gputui.model import GpuInfo, GpuSample, HostSample, Snapshot, SystemInfo
from gputui.session.fleet_poll import HostState
from gputui.ui.cells import bar, fmt_pcie, reason_tags, short_gpu_name
from gputui.ui.marks import Marks
from gputui.ui.widgets.diagnostics import SEVERITY_STYLES
from gputui.ui.widgets.gpu_panel import MIG_STYLE, folded_item, mig_on, shown_instances
from gputui.ui.widgets.lines import Line, LineView, line_len

LABEL = "bright_black"
INDENT = "   "
NAME_WIDTH = 16
UTIL_BAR = 10
WIDE = 116  # narrower terminals get the GPU lines without the utilization bar


def data_badge(system: SystemInfo) -> tuple[str, str] | None:
    """SIMULATED (or REPLAY) when the exporter does not read a real driver right now, else None.

    A scenario name alone is enough: an exporter that names one serves a simulated machine whatever its
    `source` label says.
    """
    if system.remote_source == "simulated" or system.scenario:
        return ("SIMULATED" + (f": {system.scenario}" if system.scenario else ""), "bold black on yellow")
    if system.remote_source == "replay":
        return ("REPLAY", "bold black on magenta")
    return None


def host_parts(host: HostSample, marks: Marks) -> Line:
    """Mean CPU and iowait: the two host numbers that tell a starved GPU from a busy one at a glance."""
    cpu, iowait = host.cpu_pct, host.iowait_pct
    return [
        ("CPU ", LABEL),
        (f"{fmt_pct(cpu):>4}", marks.cpu.style(cpu)),
        ("  iowait ", LABEL),
        (f"{fmt_num(iowait, 1, '%'):>5}", marks.iowait.style(iowait)),
    ]


def gpu_line(info: GpuInfo, sample: GpuSample | None, marks: Marks, with_bar: bool = True) -> Line:
    """One GPU on one line: index, name, utilization, SM clock, temperature, power, VRAM, PCIe, throttling; in the
    monitor's panels' colours."""
    name = short_gpu_name(info.name)[:NAME_WIDTH]
    head: Line = [(INDENT, ""), (f"{info.index:>2} ", "bold"), (f"{name:<{NAME_WIDTH}}", "")]
    if sample is not None and sample.lost:
        return [
            *head,
            ("  ", ""),
            (" LOST ", "bold white on red"),
            (f" {sample.error or 'fell off the bus'}", "red"),
        ]
    s = sample
    util = None if s is None else s.utilization_gpu_pct
    frac = None if util is None else util / 100.0
    sm = None if s is None else s.sm_clock_mhz
    temp = None if s is None else s.temperature_c
    power = None if s is None else s.power_w
    limit = None if s is None else s.power_limit_w
    used = None if s is None else s.memory_used_bytes
    total = info.memory_total_bytes
    link = fmt_pcie(None if s is None else s.pcie_gen, None if s is None else s.pcie_width)
    best = fmt_pcie(info.pcie_max_gen, info.pcie_max_width)
    line = head
    split = mig_on(s)  # no whole-GPU utilization in MIG mode: "MIG" there, and each instance's activity after
    busy = marks.util(util, s is not None and bool(s.processes))
    if with_bar:
        line += [(" [", LABEL), (bar(frac, UTIL_BAR), busy), ("]", LABEL)]
    line += [
        (" ", ""),
        (f"{'MIG' if split else fmt_pct(util):>4}", MIG_STYLE if split else busy),
        (" CLK ", LABEL),
        (f"{fmt_num(sm):>4}/{fmt_num(info.max_sm_clock_mhz):<4}", marks.clock(s, info.max_sm_clock_mhz)),
        ("  ", ""),
        (
            f"{fmt_num(temp) + '/' + fmt_num(info.temperature_slowdown_c) + 'C':>7}",
            marks.temperature(temp, info.temperature_slowdown_c),
        ),
        ("  ", ""),
        (f"{fmt_num(power) + '/' + fmt_num(limit) + 'W':>9}", marks.power(s)),
        ("  VRAM ", LABEL),
        (
            f"{fmt_gib(used) + '/' + fmt_gib(total, 0) + 'G':>10}",
            marks.memory(used, total),
        ),
        ("  ", ""),
        (link, ""),
    ]
    if best not in (link, NA):
        line.append((f" of {best}", LABEL))
    for tag, style in reason_tags(None if s is None else s.clock_event_reasons):
        line += [(" ", ""), (tag, f"{style} reverse")]
    for device in shown_instances(s, None):
        line += [(" ", ""), *folded_item(device, marks)]
    return line


def findings_line(findings: Sequence[Finding], width: int, closed: Sequence[Finding] = ()) -> Line:
    """The open findings, one item per rule and cause with the GPUs it covers, worst first, then those that
    closed while watched ("was"), as many as the width holds, then how many more there are: a summary that
    misses nothing that happened."""
    if not findings and not closed:
        return [(INDENT, ""), ("no findings", LABEL)]
    ordered = sort_groups(group_findings(findings)) + sort_groups(group_findings(closed))
    line: Line = [(INDENT, "")]
    for shown, group in enumerate(ordered):
        where = f" {gpu_list(group.gpus)}" if group.gpus else ""
        was: Line = [("was ", LABEL)] if not group.is_open else []
        style = SEVERITY_STYLES[group.severity] if group.is_open else LABEL
        item: Line = [
            *was,
            (severity_label(group.severity, "en").strip(), style),
            (" ", ""),
            (f"{group.rule}{where}", "" if group.is_open else LABEL),
        ]
        rest = len(ordered) - shown - 1
        more = len(f"  +{rest} more") if rest else 0
        gap: Line = [("  ", "")] if shown else []
        if shown and line_len(line) + line_len(gap) + line_len(item) + more > width:
            line.append((f"  +{len(ordered) - shown} more", LABEL))
            break
        line += gap + item
    return line


def title_line(state: HostState, name: str, now: float, marks: Marks) -> Line:
    line: Line = [(name, "bold")]
    snapshot = state.snapshot
    if snapshot is None:
        if state.last_attempt is None:
            return [*line, ("  connecting...", LABEL)]
        seen = "never reached"
        if state.last_ok is not None:
            seen = f"last seen {fmt_duration(now - state.last_ok)} ago"
        line += [("  ", ""), (" UNREACHABLE ", "bold white on red"), (f"  {seen}", "red")]
        return line if name == state.target else [*line, (f"  {_address(state)}", LABEL)]
    badge = data_badge(snapshot.system)
    if badge is not None:
        line += [("  ", ""), (f" {badge[0]} ", badge[1])]
    if state.stale:
        line += [("  ", ""), (" STALE ", "bold black on yellow")]
    system = snapshot.system
    gpus = len(snapshot.gpus)
    if state.source == "dcgm-exporter":
        line += [("  ", ""), ("dcgm-exporter only: host n/a", LABEL)]
    else:
        line += [("  ", ""), *host_parts(snapshot.host, marks)]
    line += [(f"  {gpus} GPU{'s' if gpus != 1 else ''}", "")]
    line += [("  drv ", LABEL), (system.driver_version or NA, ""), ("  CUDA ", LABEL)]
    line += [(system.cuda_driver_version or NA, ""), (f"  {_address(state)}", LABEL)]
    return line


def block_lines(state: HostState, width: int, now: float, marks: Marks, name: str | None = None) -> list[Line]:
    """The whole block for one server; `name` is the hostname last seen, kept while it is unreachable."""
    title = title_line(state, name or state.name, now, marks)
    snapshot = state.snapshot
    if snapshot is None:
        if state.error is None:
            return [title]
        error = state.error.removeprefix(f"{_address(state)}: ")
        return [title, [(INDENT, ""), (error, "red"), ("  (retried every poll)", LABEL)]]
    lines = [title]
    if state.stale and state.error is not None:
        lines.append([(INDENT, ""), (state.error, "yellow"), ("  (the last reading, retried every poll)", LABEL)])
    lines += [[(INDENT, ""), (event, "yellow")] for event in snapshot.events[-1:]]
    if state.verdict is not None:
        lines.append([(INDENT, ""), (state.verdict.label, "bold"), (f": {state.verdict.summary}", "")])
    lines += [gpu_line(info, sample, marks, with_bar=width >= WIDE) for info, sample in _gpus(snapshot)]
    lines.append(findings_line(state.findings, width, state.closed))
    return lines


def _address(state: HostState) -> str:
    """host:port of the exporter, however it was given (for --prometheus: the target it scraped)."""
    return urlsplit(state.url).netloc


def _gpus(snapshot: Snapshot) -> list[tuple[GpuInfo, GpuSample | None]]:
    samples = {sample.index: sample for sample in snapshot.gpus}
    infos = {info.index: info for info in snapshot.gpu_info}
    indices = sorted(set(samples) | set(infos))
    return [(infos.get(i) or GpuInfo(index=i, name="unknown GPU"), samples.get(i)) for i in indices]


class FleetBlock(LineView):
    """One server; `show()` takes its newest state and redraws only the lines that changed."""

    def __init__(self, state: HostState, marks: Marks, *, id: str | None = None) -> None:
        super().__init__(id=id, classes="fleet-block")
        self.state = state
        self.marks = marks
        self.now = 0.0
        self.known_name: str | None = None

    def show(self, state: HostState, now: float, name: str | None = None) -> None:
        """`name`: the server's hostname last seen, when the caller keeps it (blocks change servers as they sort)."""
        self.state = state
        self.now = now
        self.known_name = state.snapshot.system.hostname if state.snapshot is not None else name
        self.redraw()

    def build_lines(self, width: int) -> Sequence[Line]:
        lines = block_lines(self.state, width, self.now, self.marks, self.known_name)
        if self.styles.height is None or self.styles.height.value != len(lines):
            self.styles.height = len(lines)
        return lines


def block_height(state: HostState, now: float, marks: Marks, name: str | None = None) -> int:
    """Lines the whole block of a server takes (its width changes what they say, not how many)."""
    return len(block_lines(state, WIDE, now, marks, name))


HOST_NAME_WIDTH = 20


def host_line(
    state: HostState, width: int, now: float, marks: Marks, name: str | None = None, flagged: bool = False
) -> Line:
    """A server on one line, for a fleet too large to show whole: its name, how it stands (UNREACHABLE, its
    worst finding, FLEET when a fleet finding names it), its GPUs at a glance and its findings."""
    name = (name or state.name)[:HOST_NAME_WIDTH]
    line: Line = [(f"{name:<{HOST_NAME_WIDTH}}", "bold")]
    snapshot = state.snapshot
    if snapshot is None:
        if state.last_attempt is None:
            return [*line, (" connecting...", LABEL)]
        seen = "never reached" if state.last_ok is None else f"last seen {fmt_duration(now - state.last_ok)} ago"
        error = (state.error or "").removeprefix(f"{_address(state)}: ")
        return [*line, (" ", ""), (" UNREACHABLE ", "bold white on red"), (f"  {seen}  ", "red"), (error, "red")]
    worst = max((f.severity for f in state.findings), default=None)
    status: Line = [(" ", ""), (severity_label(worst, "en"), SEVERITY_STYLES[worst])] if worst is not None else []
    if not status:
        status = [(" ok  ", "green")]
    line += status
    line += [(" FLEET", "bold magenta") if flagged else ("      ", "")]
    badge = data_badge(snapshot.system)
    gpus = [s for s in snapshot.gpus if not s.lost]
    utils = [s.utilization_gpu_pct for s in gpus if s.utilization_gpu_pct is not None]
    temps = [s.temperature_c for s in gpus if s.temperature_c is not None]
    util = sum(utils) / len(utils) if utils else None
    lost = len(snapshot.gpus) - len(gpus)
    line += [(f"  {len(snapshot.gpus):>2} GPU{'s' if len(snapshot.gpus) != 1 else ' '}", "")]
    line += [("  util ", LABEL), (f"{fmt_pct(util):>4}", marks.util(util, held=False))]
    line += [("  max ", LABEL), (f"{fmt_num(max(temps) if temps else None) + 'C':>4}", "")]
    if lost:
        line += [("  ", ""), (f" {lost} LOST ", "bold white on red")]
    if badge is not None:
        line += [("  ", ""), (f" {badge[0]} ", badge[1])]
    if state.verdict is not None:
        line += [("  ", ""), (state.verdict.label, "bold")]
    room = width - line_len(line) - 2
    if room > 10:
        line += [("  ", ""), *findings_line(state.findings, room, state.closed)[1:]]  # without its indent
    return line


class FleetHostLines(LineView):
    """Every server on one line each, in the order given: the fleet view when the whole blocks do not fit."""

    def __init__(self, marks: Marks, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.marks = marks
        self.rows: Sequence[tuple[HostState, str | None, bool]] = ()
        self.now = 0.0

    def show(self, rows: Sequence[tuple[HostState, str | None, bool]], now: float) -> None:
        """`rows`: each server's state, the hostname last seen, and whether a fleet finding names it."""
        self.rows, self.now = rows, now
        if self.styles.height is None or self.styles.height.value != len(rows):
            self.styles.height = len(rows)
        self.redraw()

    def build_lines(self, width: int) -> Sequence[Line]:
        return [host_line(state, width, self.now, self.marks, name, flagged) for state, name, flagged in self.rows]
