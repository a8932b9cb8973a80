"""One GPU as three, two or one dense lines of text, and a GPU in MIG mode with a row per instance under them.

Drawn through LineView (by GpuList). The columns stay put between frames, and the values that move
every tick (utilization, clocks, temperature, power, PCIe rates) sit towards the left of their line, since
Textual rewrites a changed line from the widget's left edge to the last changed cell.

In MIG mode the driver gives no whole-GPU utilization: the parent says "MIG" where it would be, keeps its own
readings (temperature, power, clocks, PCIe), and each instance gets a row with its activity, memory and process
count; where the rows do not fit, GpuList folds them onto the parent's line as "GI1 45%" items.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence

from gputui.formatting import fmt_gib, fmt_num, fmt_pct, fmt_rate_short
from gputui.model import GpuInfo, GpuSample, MigDevice
from gputui.ui.cells import (
    SPARK_GAP,
    bar,
    fit_tags,
    fmt_pcie,
    fmt_pstate,
    reason_tags,
    short_gpu_name,
    spark_char,
    sparkline,
)
from gputui.ui.marks import Marks
from gputui.ui.widgets.lines import Line, line_len

# Each sparkline cell is this many seconds (or one sample when the interval is longer): the line then
# shifts every few seconds instead of every tick, which is most of what an idle panel would send.
SPARK_BUCKET_S = 5.0
SPARK_CELLS = 240

LABEL = "bright_black"
# The SM clock's label on every layout: "SM" alone is never a clock here, SM activity reads "SM act" or "SMACT".
CLOCK_LABEL = "CLK"
MIG_STYLE = "cyan"
INSTANCE_PREFIX = "   - "
# Tags of a pending MIG mode change, after the clock tags: the change waits for a GPU reset.
MIG_PENDING_TAGS = {True: "MIG->ON", False: "MIG->OFF"}

# A finding names the GpuSample field it is about; these are the values on a panel that show each field.
METRIC_GROUPS: dict[str, str] = {
    "utilization_gpu_pct": "util",
    "temperature_c": "temp",
    "memory_temperature_c": "temp",
    "thermal_violation_ns": "temp",
    "power_w": "power",
    "power_limit_w": "power",
    "power_violation_ns": "power",
    "energy_mj": "power",
    "sm_clock_mhz": "clocks",
    "graphics_clock_mhz": "clocks",
    "memory_clock_mhz": "clocks",
    "clock_event_reasons_mask": "clocks",
    "pcie_gen": "pcie",
    "pcie_width": "pcie",
    "pcie_tx_bytes_s": "pcie",
    "pcie_rx_bytes_s": "pcie",
    "pcie_replay_count": "pcie",
    "memory_used_bytes": "vram",
    "memory_reserved_bytes": "vram",
    "sm_active_pct": "gpm",
    "tensor_active_pct": "gpm",
    "fp32_active_pct": "gpm",
    "dram_bw_pct": "gpm",
}


class UtilBuckets:
    """Mean utilization per time bucket, newest last: the history behind a panel's sparkline."""

    def __init__(self, bucket_s: float = SPARK_BUCKET_S, cells: int = SPARK_CELLS) -> None:
        self.bucket_s = bucket_s
        self._values: deque[float | None] = deque(maxlen=cells)
        self._bucket: int | None = None
        self._sum = 0.0
        self._n = 0
        self._drawn: tuple[int, int | None, str] = (0, None, "")  # (width, bucket, all cells but the newest)

    def add(self, timestamp: float, value: float | None) -> None:
        bucket = int(timestamp // self.bucket_s)
        if bucket != self._bucket:
            if self._bucket is not None:
                # A bucket with no sample between two with samples is a gap, shown as such.
                for _ in range(min(bucket - self._bucket - 1, self._values.maxlen or 0)):
                    self._values.append(None)
            self._bucket, self._sum, self._n = bucket, 0.0, 0
            self._values.append(None)
        if value is not None:
            self._sum += value
            self._n += 1
            self._values[-1] = self._sum / self._n

    @property
    def values(self) -> list[float | None]:
        return list(self._values)

    def sparkline(self, width: int, top: float = 100.0) -> str:
        """ui/cells.py's `sparkline` of the values, redrawn in full only when a new bucket starts (every few seconds);
        in between only the newest cell can change."""
        if width <= 0:
            return ""
        if not self._values:
            return SPARK_GAP * width
        if self._drawn[:2] != (width, self._bucket):
            older = list(self._values)[-width:-1] if width > 1 else []
            self._drawn = (width, self._bucket, sparkline(older, width - 1, top) if width > 1 else "")
        newest = self._values[-1]
        return self._drawn[2] + spark_char(None if newest is None else newest / top)


def mig_on(sample: GpuSample | None) -> bool:
    """The GPU runs in MIG mode now: whole-GPU utilization does not exist, its instances carry the activity."""
    return sample is not None and sample.in_mig_mode


def shown_instances(sample: GpuSample | None, only_slice: str | None) -> tuple[MigDevice, ...]:
    """The MIG instances to draw under a GPU: all of them, or only the slice this process was given
    (SystemInfo.mig_slice) where this GPU holds it; none off MIG mode."""
    if sample is None or sample.lost or sample.mig is None or not mig_on(sample):
        return ()
    devices = sample.mig.devices
    given = tuple(d for d in devices if only_slice is not None and d.uuid == only_slice)
    return given or devices


def instance_activity(device: MigDevice) -> tuple[str, float | None]:
    """The instance's activity and what it measures: SM activity (GPM), else the graphics engine's ("GR")."""
    if device.sm_active_pct is None and device.gr_engine_active_pct is not None:
        return "GR", device.gr_engine_active_pct
    return "SM", device.sm_active_pct


def process_count(device: MigDevice) -> str:
    count = len(device.processes)
    return f"{count} proc{'' if count == 1 else 's'}"


def instance_memory(device: MigDevice, bar_width: int, marks: Marks) -> Line:
    used, total = device.memory_used_bytes, device.memory_total_bytes
    frac = None if used is None or not total else used / total
    style = marks.memory(used, total)
    return [
        ("[", LABEL),
        (bar(frac, bar_width), style),
        ("] ", LABEL),
        (f"{fmt_gib(used)}/{fmt_gib(total, 0)}G", style),
    ]


def instance_line(device: MigDevice, width: int, full: bool, marks: Marks) -> Line:
    """One MIG instance under its GPU: its label, activity (SM, tensor, and DRAM when `full`), a memory bar and
    its process count; the activity lines up under the parent's GPM columns, and reads n/a when not given."""
    name, activity = instance_activity(device)
    style = marks.util(activity, bool(device.processes))
    line: Line = [(INSTANCE_PREFIX, LABEL)]
    if full:
        line += [(f"{device.label:<22}  ", MIG_STYLE), (f"{name} act ", ""), (f"{fmt_pct(activity):>4}", style)]
        line += [(" · tensor ", ""), (f"{fmt_pct(device.tensor_active_pct):>4}", "")]
        line += [(" · DRAM ", ""), (f"{fmt_pct(device.dram_bw_pct):>4}", ""), ("  VRAM ", LABEL)]
        line += instance_memory(device, 16 if width >= 120 else 8, marks)
    else:
        line += [(f"{device.label:<17} ", MIG_STYLE), (f"{name}ACT ", ""), (f"{fmt_pct(activity):>4}", style)]
        line += [(" TC ", ""), (f"{fmt_pct(device.tensor_active_pct):>4}", ""), ("  ", "")]
        line += instance_memory(device, 8, marks)
    return [*line, ("  ", ""), (process_count(device), LABEL)]


def panel_tags(sample: GpuSample | None) -> list[tuple[str, str]]:
    """The (tag, style) pairs a panel shows or counts: the clock event reasons, worst first, then a pending MIG
    mode change."""
    tags = reason_tags(None if sample is None else sample.clock_event_reasons)
    mig = None if sample is None else sample.mig
    if mig is not None and mig.change_pending and mig.pending_mode is not None:
        tags.append((MIG_PENDING_TAGS[mig.pending_mode], "yellow"))  # a reset is due; the findings say why
    return tags


def spaced(values: Sequence[Line], room: int) -> Line:
    """The values each followed by two spaces, or by one where two would not leave them all in `room` cells: a
    value is never cut for the sake of a gap."""
    gap = ("  ", "") if sum(map(line_len, values)) + 2 * len(values) <= room else (" ", "")
    line: Line = []
    for value in values:
        line += [*value, gap]
    return line


def folded_item(device: MigDevice, marks: Marks) -> Line:
    """An instance on its parent's line when the rows do not fit: "GI1 45%"."""
    name = f"GI{device.gpu_instance_id}" if device.gpu_instance_id is not None else f"MIG{device.index}"
    _, activity = instance_activity(device)
    return [(name, MIG_STYLE), (f"{fmt_pct(activity):>4}", marks.util(activity, bool(device.processes)))]


class GpuPanel:
    """One GPU's latest reading and utilization history, drawn as three, two or one lines.

    Not a widget: GpuList draws every panel in one widget, which costs Textual one refresh a tick instead
    of one per GPU.
    """

    def __init__(self, info: GpuInfo, marks: Marks) -> None:
        self.info = info
        self.marks = marks
        self.sample: GpuSample | None = None
        self.history = UtilBuckets()
        self.selected = False
        self.highlight: str | None = None  # a METRIC_GROUPS value: shown reversed, the chosen finding's evidence
        self.only_slice: str | None = None  # SystemInfo.mig_slice: the one instance this process was given
        self._head: tuple[object, Line] = (None, [])

    @property
    def gpu_index(self) -> int:
        return self.info.index

    def add_sample(self, info: GpuInfo, sample: GpuSample | None) -> None:
        """Keep the reading and its history; drawing is separate so hidden panels cost nothing."""
        self.info = info
        self.sample = sample
        if sample is not None:
            self.history.add(sample.timestamp, None if sample.lost else sample.utilization_gpu_pct)

    def instances(self) -> tuple[MigDevice, ...]:
        """The MIG instances drawn under this GPU: all of them, or only the slice this process was given."""
        return shown_instances(self.sample, self.only_slice)

    def height(self, mode: int, fold: bool) -> int:
        """Lines at this layout: the panel's own, and a row per instance unless they are folded onto its line."""
        return mode + (0 if fold else len(self.instances()))

    def build_lines(self, width: int, mode: int, fold: bool = False) -> list[Line]:
        sample = self.sample
        if sample is not None and sample.lost:
            return self._lost_lines(sample, mode)
        if mode >= 3:
            lines = self._three_lines(sample, width)
        elif mode == 2:
            lines = self._two_lines(sample, width)
        else:
            lines = [self._one_line(sample, width, fold)]
        if fold:
            return lines
        full = mode >= 3 and width >= 100
        return lines + [instance_line(device, width, full, self.marks) for device in self.instances()]

    # -- pieces ----------------------------------------------------------------------------------------

    def _mark(self, group: str, style: str) -> str:
        return f"{style} reverse" if self.highlight == group else style

    def _title(self, name_width: int) -> Line:
        style = "bold reverse" if self.selected else "bold"
        name = self.info.name if name_width >= 24 else short_gpu_name(self.info.name)
        return [(f"{self.info.index:>2}", style), (" ", ""), (f"{name[:name_width]:<{name_width}}", "bold")]

    def _util(self, s: GpuSample | None, bar_width: int) -> Line:
        if mig_on(s):  # no whole-GPU utilization in MIG mode: the instances carry the activity
            line: Line = []
            if bar_width:
                line += [("UTIL [", LABEL), (f"{'per instance':^{bar_width}}"[:bar_width], LABEL), ("] ", LABEL)]
            return [*line, (f"{'MIG':>4}", self._mark("util", MIG_STYLE))]
        util = None if s is None else s.utilization_gpu_pct
        frac = None if util is None else util / 100.0
        style = self.marks.util(util, s is not None and bool(s.processes))
        line = []
        if bar_width:
            line += [("UTIL [", LABEL), (bar(frac, bar_width), style), ("] ", LABEL)]
        return [*line, (f"{fmt_pct(util):>4}", self._mark("util", style))]

    def _gpm(self, s: GpuSample | None, labels: tuple[str, str, str | None], sep: str) -> Line:
        """How full the GPU is beside how often it is busy: SM and tensor-core activity, DRAM bandwidth (GPM)."""
        sm = None if s is None else s.sm_active_pct
        tensor = None if s is None else s.tensor_active_pct
        parts = [(labels[0], sm), (labels[1], tensor)]
        if labels[2] is not None:
            parts.append((labels[2], None if s is None else s.dram_bw_pct))
        # One part in one style: it changes every tick, and each style change costs escape codes on the wire.
        text = sep.join(f"{label}{fmt_pct(value):>4}" for label, value in parts)
        if mig_on(s) and not self._has_gpm(s):  # the instances' rows carry it, under these columns
            return [(f"{'activity per instance':<{len(text)}}", LABEL)]
        return [(text, self._mark("gpm", ""))]

    def _spark(self, width: int) -> Line:
        return [(self.history.sparkline(width), "cyan")]

    def _temp(self, s: GpuSample | None, full: bool) -> Line:
        temp = None if s is None else s.temperature_c
        slowdown = self.info.temperature_slowdown_c
        value = f"{fmt_num(temp, 0)}/{fmt_num(slowdown, 0)}C" if full else fmt_num(temp, 0, "C")
        return [(f"{value:>4}", self._mark("temp", self.marks.temperature(temp, slowdown)))]

    def _power(self, s: GpuSample | None, mark_default: bool, *, limit: bool = True) -> Line:
        """The draw against the enforced limit (`limit`), else the draw alone; `mark_default`: "<700", the
        board's default, after a lowered limit."""
        power = None if s is None else s.power_w
        enforced = None if s is None else s.power_limit_w
        text = f"{fmt_num(power):>3}/{fmt_num(enforced)}W" if limit else f"{fmt_num(power):>3}W"
        line: Line = [(text, self._mark("power", self.marks.power(s)))]
        if mark_default and self._lowered_limit(s):
            line.append((f"<{self.info.power_default_limit_w:.0f}", "yellow"))
        return line

    def _lowered_limit(self, s: GpuSample | None) -> bool:
        """The enforced power limit is below the board's default: someone capped it."""
        return self.marks.power_lowered(None if s is None else s.power_limit_w, self.info.power_default_limit_w)

    def _power_note(self) -> Line:
        if not self._lowered_limit(self.sample):
            return []
        return [(f"  power limit lowered from {self.info.power_default_limit_w:.0f} W", "yellow")]

    def _vram(self, s: GpuSample | None, bar_width: int) -> Line:
        used = None if s is None else s.memory_used_bytes
        total = self.info.memory_total_bytes
        frac = None if used is None or not total else used / total
        style = self.marks.memory(used, total)
        line: Line = []
        if bar_width:
            line += [("[", LABEL), (bar(frac, bar_width), style), ("] ", LABEL)]
        return [*line, (f"{fmt_gib(used)}/{fmt_gib(total, 0)}G", self._mark("vram", style))]

    def _clocks(self, s: GpuSample | None, memory: bool = True) -> Line:
        sm = None if s is None else s.sm_clock_mhz
        top = self.info.max_sm_clock_mhz
        sm_text = f"{fmt_num(sm):>4}/{fmt_num(top)}"
        lost = self.marks.clock(s, top)
        line: Line = [(f"{CLOCK_LABEL} ", LABEL), (sm_text, self._mark("clocks", lost))]
        if memory:
            mem = None if s is None else s.memory_clock_mhz
            line += [("  MEM ", LABEL), (f"{fmt_num(mem):>4}/{fmt_num(self.info.max_memory_clock_mhz)}", "")]
        return [*line, (" MHz", LABEL)]

    def _clock(self, s: GpuSample | None) -> Line:
        """The SM clock alone, "CLK 1560": the compact form of `_clocks`, in the same colour."""
        sm = None if s is None else s.sm_clock_mhz
        lost = self.marks.clock(s, self.info.max_sm_clock_mhz)
        return [(f"{CLOCK_LABEL} ", LABEL), (f"{fmt_num(sm):>4}", self._mark("clocks", lost))]

    def _link(self, s: GpuSample | None) -> Line:
        current = fmt_pcie(None if s is None else s.pcie_gen, None if s is None else s.pcie_width)
        best = fmt_pcie(self.info.pcie_max_gen, self.info.pcie_max_width)
        line: Line = [("PCIe ", LABEL), (current, self._mark("pcie", ""))]
        if best != current:
            line.append((f" of {best}", LABEL))
        return line

    def _rates(self, s: GpuSample | None) -> Line:
        tx = None if s is None else s.pcie_tx_bytes_s
        rx = None if s is None else s.pcie_rx_bytes_s
        return [("TX ", LABEL), (f"{fmt_rate_short(tx):>9}", ""), (" RX ", LABEL), (f"{fmt_rate_short(rx):>9}", "")]

    def _fan_pstate(self, s: GpuSample | None) -> Line:
        fan = None if s is None else s.fan_pct
        pstate = fmt_pstate(None if s is None else s.pstate)
        return [("Fan ", LABEL), (f"{fmt_pct(fan):>4}", ""), ("  ", ""), (f"{pstate:<3}", "")]

    def _tags(self, s: GpuSample | None, room: int | None = None) -> Line:
        """The panel's tags within `room` cells (those that fit whole, then "+N"), and the reading's error."""
        line = fit_tags(panel_tags(s), room)
        if s is not None and s.error:
            line.append((f" {s.error}", "red"))
        return line

    def _spark_and_tags(self, s: GpuSample | None, line: Line, width: int, tags: Line | None = None) -> Line:
        """After a compact line: the tags first call on the room left (they name what is lost, never cut), then
        the sparkline takes what they leave, up to 30 cells, or none under 4. `tags`: those to place, when the
        caller has chosen them."""
        room = width - line_len(line)
        tags = self._tags(s, room - 1) if tags is None else tags
        spark = min(30, room - line_len(tags) - 1)
        return [*(self._spark(spark) if spark >= 4 else []), *tags]

    # -- layouts ---------------------------------------------------------------------------------------

    def _three_lines(self, s: GpuSample | None, width: int) -> list[Line]:
        gap: Line = [("  ", "")]
        line2: Line = [("   ", ""), *self._util(s, 12), *gap]
        line2 += [*self._gpm(s, ("SM act ", "tensor ", "DRAM "), " · "), *gap, *self._clocks(s), *gap]
        line2 += self._spark(max(0, width - line_len(line2)))
        line3: Line = [("   TEMP ", LABEL), *self._temp(s, True), ("  POWER ", LABEL), *self._power(s, True)]
        line3 += [*gap, *self._rates(s), ("  VRAM ", LABEL), *self._vram(s, 16)]
        return [self._slow_head(s, width), line2, line3]

    def _slow_head(self, s: GpuSample | None, width: int) -> Line:
        """The first line of a full panel: facts that change rarely, so it is rebuilt only when they do; the tags
        that do not fit after them are counted."""
        key = (
            width,
            self.info,
            self.selected,
            self.highlight,
            None if s is None else (s.fan_pct, s.pstate, s.pcie_gen, s.pcie_width, s.power_limit_w),
            None if s is None else (s.clock_event_reasons_mask, s.error),
            None if s is None or s.mig is None else (s.mig.mode, s.mig.pending_mode),
        )
        if self._head[0] != key:
            gap: Line = [("  ", "")]
            head = [*self._title(26), *gap, *self._fan_pstate(s), *gap, *self._link(s), *self._power_note()]
            self._head = (key, head + self._tags(s, width - line_len(head)))
        return self._head[1]

    def _two_lines(self, s: GpuSample | None, width: int) -> list[Line]:
        gap: Line = [("  ", "")]
        values = [self._util(s, 0)]
        if self._has_gpm(s):
            values.append(self._gpm(s, ("SM act ", "tensor ", None), " "))
        values += [self._temp(s, False), self._power(s, True), self._vram(s, 0)]
        title = [*self._title(18), (" ", "")]
        head = title + spaced(values, width - line_len(title))
        line2: Line = [("   ", ""), *self._clocks(s), *gap]
        if width >= 100:
            line2 += [*self._rates(s), *gap]
        line2 += [*self._link(s), *gap, *self._fan_pstate(s)]
        tags = self._tags(s)
        if line_len(head) + line_len(tags) >= width:  # not all beside the values: they go to the line below's room
            line2 += self._tags(s, width - line_len(line2))
            tags = []
        return [head + self._spark_and_tags(s, head, width, tags), line2]

    def _one_line(self, s: GpuSample | None, width: int, fold: bool = False) -> Line:
        """8 GPUs in 80 columns: the clock is here (a verdict is often about it); the power limit and the PCIe link
        only where they are below the board's own (the two-line layout has them always, and the default limit)."""
        gap: Line = [(" ", "")]
        line = [*self._title(9), *gap, *self._util(s, 0), *gap]
        if self._has_gpm(s):
            line += [*self._gpm(s, ("SMACT ", "TC ", None), " "), *gap]
        line += [*self._clock(s), *gap, *self._temp(s, False), *gap]
        line += [*self._power(s, False, limit=self._lowered_limit(s)), *gap, *self._vram(s, 0), *gap]
        gen = None if s is None else s.pcie_gen
        lanes = None if s is None else s.pcie_width
        if (gen, lanes) != (self.info.pcie_max_gen, self.info.pcie_max_width):
            line += [(fmt_pcie(gen, lanes).replace(" ", ""), LABEL), *gap]
        if fold and self.instances():
            return line + self._folded_and_tags(s, line, width)
        return line + self._spark_and_tags(s, line, width)

    def _folded_and_tags(self, s: GpuSample | None, line: Line, width: int) -> Line:
        """The instances on the parent's line where the sparkline would be ("GI1 45% GI2 12%"), after the tags have
        had their room; those that do not fit are counted ("+3")."""
        room = width - line_len(line)
        tags = self._tags(s, room - 1)
        room -= line_len(tags)
        devices = self.instances()
        items: Line = []
        for n, device in enumerate(devices):
            item = folded_item(device, self.marks)
            rest = len(devices) - n - 1
            more = len(f" +{rest}") if rest else 0
            if line_len(items) + (1 if items else 0) + line_len(item) + more > room:
                items.append((f"{' ' if items else ''}+{len(devices) - n}", MIG_STYLE))
                break
            items += [(" ", ""), *item] if items else item
        return [*items, *tags]

    def _has_gpm(self, s: GpuSample | None) -> bool:
        """Compact layouts give GPM room only on GPUs that report it (Hopper and newer); the full one says n/a."""
        return s is not None and (s.sm_active_pct is not None or s.tensor_active_pct is not None)

    def _lost_lines(self, s: GpuSample, mode: int) -> list[Line]:
        line = self._title(26 if mode >= 3 else 14)
        line += [("  ", ""), (" LOST ", "bold white on red"), (f" {s.error or 'the GPU fell off the bus'}", "red")]
        return [line] + [[] for _ in range(mode - 1)]
