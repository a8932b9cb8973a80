"""The host under the GPUs: per-core CPU, iowait, memory and swap, disk and network rates; inside a cgroup
with a quota or a memory limit, the CPU and memory measured against those limits, and the pressure the kernel
reports (PSI), since the host's figures say little about what the job may use.

Few cores are shown as numbers; many as a heat strip of one block character per core, wrapped over as
many lines as the width needs, so 128 cores fit in two lines of a 120-column terminal.
"""

from __future__ import annotations

from collections.abc import Sequence

from gputui.formatting import NA, fmt_bytes_short, fmt_num, fmt_pct, fmt_rate_short
from gputui.model import ContainerInfo, HostSample
from gputui.ui.cells import spark_char
from gputui.ui.marks import Marks
from gputui.ui.widgets.lines import Line, LineView, line_len

LABEL = "bright_black"
PREFIX = "CPU  "
NUMBER_CELL = 4  # " 42" plus a space, per core, when the cores are shown as numbers


def core_lines(cores: Sequence[float], width: int, marks: Marks) -> list[Line]:
    """Per-core load as numbers when they fit on one line, else as a wrapped strip of one cell per core.

    The strip is one colour (the block height is the load): a colour per cell would cost an escape
    sequence per core on every redraw.
    """
    room = max(1, width - len(PREFIX))
    if not cores:
        return [[(PREFIX, LABEL), (NA, LABEL)]]
    if len(cores) * NUMBER_CELL <= room:
        return [[(PREFIX, LABEL), *((f"{pct:>3.0f} ", marks.cpu.style(pct)) for pct in cores)]]
    lines: list[Line] = []
    for start in range(0, len(cores), room):
        strip = "".join(spark_char(pct / 100.0) for pct in cores[start : start + room])
        lines.append([(PREFIX if not lines else " " * len(PREFIX), LABEL), (strip, "cyan")])
    return lines


def stat_fields(host: HostSample, marks: Marks) -> list[Line]:
    def used_of(used: int | None, total: int | None) -> str:
        return f"{fmt_bytes_short(used)}/{fmt_bytes_short(total)}"

    mem_pct = None
    if host.memory_used_bytes is not None and host.memory_total_bytes:
        mem_pct = 100.0 * host.memory_used_bytes / host.memory_total_bytes
    iowait = host.iowait_pct
    cpu = host.cpu_pct
    return [
        [("avg ", LABEL), (f"{fmt_pct(cpu):>4}", marks.cpu.style(cpu))],
        [("iowait ", LABEL), (f"{fmt_num(iowait, 1, '%'):>5}", marks.iowait.style(iowait))],
        [
            ("DISK R ", LABEL),
            (f"{fmt_rate_short(host.disk_read_bytes_s):>9}", ""),
            (" W ", LABEL),
            (f"{fmt_rate_short(host.disk_write_bytes_s):>9}", ""),
        ],
        [
            ("NET RX ", LABEL),
            (f"{fmt_rate_short(host.net_rx_bytes_s):>9}", ""),
            (" TX ", LABEL),
            (f"{fmt_rate_short(host.net_tx_bytes_s):>9}", ""),
        ],
        [("MEM ", LABEL), (used_of(host.memory_used_bytes, host.memory_total_bytes), marks.host_memory.style(mem_pct))],
        [("SWAP ", LABEL), (used_of(host.swap_used_bytes, host.swap_total_bytes), "")],
    ]


def container_fields(host: HostSample, limits: ContainerInfo | None, marks: Marks) -> list[Line]:
    """The cgroup's own figures: CPU against the quota, periods throttled, memory against its limit, /dev/shm
    (in a container, or wherever it is small) and PSI. Nothing when there is no cgroup limit to measure against and
    no pressure reported."""
    out: list[Line] = []
    group = host.container
    quota = limits.cpu_quota_cores if limits else None
    if group is not None and quota is not None:
        used = group.cpu_pct_of_quota
        out.append(
            [
                ("QUOTA ", LABEL),
                (f"{fmt_pct(used)} of {quota:g} CPUs", marks.cpu.style(used)),
            ]
        )
        throttled = group.cpu_throttled_pct
        out.append([("throttled ", LABEL), (fmt_pct(throttled), marks.throttled(throttled))])
    if group is not None and group.memory_limit_bytes is not None:
        used_bytes = group.memory_used_bytes
        pct = None if used_bytes is None else 100.0 * used_bytes / group.memory_limit_bytes
        limit_text = f"{fmt_bytes_short(used_bytes)}/{fmt_bytes_short(group.memory_limit_bytes)}"
        out.append([("CGROUP MEM ", LABEL), (limit_text, marks.cgroup_memory.style(pct))])
    shm = limits.shm_bytes if limits else None
    small = shm is not None and marks.shm_small(shm)
    if shm is not None and ((limits is not None and limits.runtime is not None) or small):
        shm_pct = None if host.shm_used_bytes is None else 100.0 * host.shm_used_bytes / shm
        shm_text = f"{fmt_bytes_short(host.shm_used_bytes)}/{fmt_bytes_short(shm)}"
        out.append([("SHM ", LABEL), (shm_text, "yellow" if small else marks.shm.style(shm_pct))])
    psi = host.psi
    if psi is not None:
        out.append(
            [
                ("PSI cpu ", LABEL),
                (fmt_pct(psi.cpu_some_pct), ""),
                (" io ", LABEL),
                (fmt_pct(psi.io_full_pct), ""),
                (" mem ", LABEL),
                (fmt_pct(psi.memory_full_pct), ""),
            ]
        )
    return out


def pack(fields: Sequence[Line], width: int, indent: str = "     ") -> list[Line]:
    """Fields two spaces apart, wrapped onto as few lines as the width allows."""
    lines: list[Line] = [[(indent, "")]]
    used = len(indent)
    for field in fields:
        size = line_len(field)
        if used > len(indent) and used + 2 + size > width:
            lines.append([(indent, "")])
            used = len(indent)
        elif used > len(indent):
            lines[-1].append(("  ", ""))
            used += 2
        lines[-1].extend(field)
        used += size
    return lines


class HostPanel(LineView):
    def __init__(self, marks: Marks, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.marks = marks
        self.host: HostSample | None = None
        self.limits: ContainerInfo | None = None

    def show(self, host: HostSample, limits: ContainerInfo | None = None) -> None:
        self.host = host
        self.limits = limits
        self.redraw()

    def line_count(self, width: int) -> int:
        if width == self.known_width and self.lines:
            return len(self.lines)
        return len(self.build_lines(width)) if self.host is not None else 1

    def build_lines(self, width: int) -> Sequence[Line]:
        if self.host is None:
            return [[(PREFIX + NA, LABEL)]]
        fields = stat_fields(self.host, self.marks) + container_fields(self.host, self.limits, self.marks)
        return core_lines(self.host.cpu_pct_per_core, width, self.marks) + pack(fields, width)
