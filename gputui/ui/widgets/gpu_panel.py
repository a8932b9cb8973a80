"""One GPU as three, two or one dense lines of text.

One widget per GPU, drawn through LineView, keeps the per-tick cost to a few Rich Text lines; the columns
stay put between frames so only the digits that move are sent to the terminal.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from typing import ClassVar

from rich.text import Text
from textual.binding import Binding, BindingType

from gputui.model import GpuInfo, GpuSample
from gputui.ui import text as t
from gputui.ui.widgets.lines import LineView

# Each sparkline cell is this many seconds (or one sample when the interval is longer): the line then
# shifts every few seconds instead of every tick, which is most of what an idle panel would send.
SPARK_BUCKET_S = 5.0
SPARK_CELLS = 240

LABEL = "bright_black"


class UtilBuckets:
    """Mean utilization per time bucket, newest last: the history behind a panel's sparkline."""

    def __init__(self, bucket_s: float = SPARK_BUCKET_S, cells: int = SPARK_CELLS) -> None:
        self.bucket_s = bucket_s
        self._values: deque[float | None] = deque(maxlen=cells)
        self._bucket: int | None = None
        self._sum = 0.0
        self._n = 0

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


class GpuPanel(LineView):
    """Name, utilization with history, clocks, temperature, power, VRAM, PCIe, fan, P-state, throttle tags."""

    can_focus = True
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up,k", "app.focus_previous", "Previous", show=False),
        Binding("down,j", "app.focus_next", "Next", show=False),
    ]

    def __init__(self, info: GpuInfo, *, id: str | None = None) -> None:
        super().__init__(id=id, classes="gpu-panel")
        self.info = info
        self.sample: GpuSample | None = None
        self.history = UtilBuckets()
        self.mode = 3

    @property
    def gpu_index(self) -> int:
        return self.info.index

    def add_sample(self, info: GpuInfo, sample: GpuSample | None) -> None:
        """Keep the reading and its history; drawing waits for `redraw()` so hidden panels cost nothing."""
        self.info = info
        self.sample = sample
        if sample is not None:
            self.history.add(sample.timestamp, None if sample.lost else sample.utilization_gpu_pct)

    def on_focus(self) -> None:
        self.redraw()

    def on_blur(self) -> None:
        self.redraw()

    def build_lines(self, width: int) -> Sequence[Text]:
        sample = self.sample
        if sample is not None and sample.lost:
            return self._lost_lines(sample, width)
        if self.mode >= 3:
            return self._three_lines(sample, width)
        if self.mode == 2:
            return self._two_lines(sample, width)
        return [self._one_line(sample, width)]

    # -- pieces ----------------------------------------------------------------------------------------

    def _title(self, name_width: int) -> Text:
        style = "bold reverse" if self.has_focus else "bold"
        name = t.short_gpu_name(self.info.name) if name_width < 24 else self.info.name
        return Text.assemble((f"{self.info.index:>2}", style), " ", (f"{name[:name_width]:<{name_width}}", "bold"))

    def _util(self, s: GpuSample | None) -> tuple[float | None, Text]:
        util = None if s is None else s.utilization_gpu_pct
        frac = None if util is None else util / 100.0
        return frac, Text(f"{t.fmt_pct(util):>4}", style=t.level_style(frac) if util is not None else LABEL)

    def _spark(self, width: int) -> Text:
        return Text(t.sparkline(self.history.values, width), style="cyan")

    def _temp(self, s: GpuSample | None, full: bool) -> Text:
        temp = None if s is None else s.temperature_c
        slowdown = self.info.temperature_slowdown_c
        value = t.fmt_num(temp, ".0f", "C")
        if full:
            value = f"{t.fmt_num(temp, '.0f')}/{t.fmt_num(slowdown, 'd')}C"
        return Text(f"{value:>4}", style=t.temperature_style(temp, slowdown))

    def _power(self, s: GpuSample | None, full: bool) -> Text:
        power = None if s is None else s.power_w
        limit = None if s is None else s.power_limit_w
        frac = None if power is None or not limit else power / limit
        out = Text(f"{t.fmt_num(power)}/{t.fmt_num(limit)}W", style=t.level_style(frac))
        default = self.info.power_default_limit_w
        if limit is not None and default is not None and limit < default - 0.5:
            out.append(f" (default {default:.0f}W)" if full else f"<{default:.0f}", style="yellow")
        return out

    def _vram(self, s: GpuSample | None, bar_width: int) -> Text:
        used = None if s is None else s.memory_used_bytes
        total = self.info.memory_total_bytes
        frac = None if used is None or not total else used / total
        out = Text()
        if bar_width:
            out.append("[")
            out.append(t.bar(frac, bar_width), style=t.level_style(frac))
            out.append("] ")
        out.append(f"{t.fmt_gib(used)}/{t.fmt_gib(total, 0)}G")
        return out

    def _clocks(self, s: GpuSample | None) -> Text:
        sm = None if s is None else s.sm_clock_mhz
        mem = None if s is None else s.memory_clock_mhz
        return Text.assemble(
            ("SM ", LABEL),
            f"{t.fmt_num(sm):>4}/{t.fmt_num(self.info.max_sm_clock_mhz)}",
            ("  MEM ", LABEL),
            f"{t.fmt_num(mem):>4}/{t.fmt_num(self.info.max_memory_clock_mhz)}",
            (" MHz", LABEL),
        )

    def _pcie(self, s: GpuSample | None, rates: bool) -> Text:
        current = t.fmt_pcie(None if s is None else s.pcie_gen, None if s is None else s.pcie_width)
        best = t.fmt_pcie(self.info.pcie_max_gen, self.info.pcie_max_width)
        out = Text.assemble(("PCIe ", LABEL), current)
        if best != current:
            out.append(f"/{best}", style=LABEL)
        if rates:
            tx = None if s is None else s.pcie_tx_bytes_s
            rx = None if s is None else s.pcie_rx_bytes_s
            out.append_text(Text.assemble(("  TX ", LABEL), f"{t.fmt_rate(tx):>10}", (" RX ", LABEL)))
            out.append(f"{t.fmt_rate(rx):>10}")
        return out

    def _fan_pstate(self, s: GpuSample | None) -> Text:
        fan = None if s is None else s.fan_pct
        return Text.assemble(
            ("Fan ", LABEL),
            f"{t.fmt_pct(fan):>4}",
            ("  ", LABEL),
            f"{t.fmt_pstate(None if s is None else s.pstate):<3}",
        )

    def _tags(self, s: GpuSample | None) -> Text:
        out = Text()
        for tag, style in t.reason_tags(None if s is None else s.clock_event_reasons):
            out.append(" ")
            out.append(tag, style=f"{style} reverse")
        if s is not None and s.error:
            out.append(f" {s.error}", style="red")
        return out

    # -- layouts ---------------------------------------------------------------------------------------

    def _three_lines(self, s: GpuSample | None, width: int) -> list[Text]:
        head = self._title(26)
        head.append("  ")
        head.append_text(self._fan_pstate(s))
        head.append("  ")
        head.append_text(self._pcie(s, rates=True))
        head.append_text(self._tags(s))

        frac, util = self._util(s)
        clocks = self._clocks(s)
        spark_width = max(0, width - 38 - clocks.cell_len - 2)
        line2 = Text.assemble(("   UTIL [", LABEL), (t.bar(frac, 20), t.level_style(frac)), ("] ", LABEL), util)
        line2.append(" ")
        line2.append_text(self._spark(spark_width))
        line2.append("  ")
        line2.append_text(clocks)

        line3 = Text.assemble(("   TEMP ", LABEL), self._temp(s, full=True), ("  POWER ", LABEL))
        line3.append_text(self._power(s, full=True))
        line3.append("  VRAM ", style=LABEL)
        line3.append_text(self._vram(s, 20))
        return [head, line2, line3]

    def _two_lines(self, s: GpuSample | None, width: int) -> list[Text]:
        _, util = self._util(s)
        head = self._title(18)
        head.append(" ")
        head.append_text(util)
        head.append(" ")
        head.append_text(self._spark(max(4, min(30, width - 70))))
        head.append("  ")
        head.append_text(self._temp(s, full=False))
        head.append("  ")
        head.append_text(self._power(s, full=False))
        head.append("  ")
        head.append_text(self._vram(s, 0))
        head.append_text(self._tags(s))
        line2 = Text("   ")
        line2.append_text(self._clocks(s))
        line2.append("  ")
        line2.append_text(self._pcie(s, rates=width >= 100))
        line2.append("  ")
        line2.append_text(self._fan_pstate(s))
        return [head, line2]

    def _one_line(self, s: GpuSample | None, width: int) -> Text:
        _, util = self._util(s)
        line = self._title(14)
        line.append(" ")
        line.append_text(util)
        line.append(" ")
        line.append_text(self._spark(max(4, min(30, width - 74))))
        line.append(" ")
        line.append_text(self._temp(s, full=False))
        line.append(" ")
        line.append_text(self._power(s, full=False))
        line.append(" ")
        line.append_text(self._vram(s, 0))
        line.append(" ")
        gen = None if s is None else s.pcie_gen
        lanes = None if s is None else s.pcie_width
        line.append(t.fmt_pcie(gen, lanes).replace(" ", ""), style=LABEL)
        line.append_text(self._tags(s))
        return line

    def _lost_lines(self, s: GpuSample, width: int) -> list[Text]:
        line = self._title(26 if self.mode >= 3 else 14)
        line.append("  LOST ", style="bold white on red")
        line.append(f" {s.error or 'the GPU fell off the bus'}", style="red")
        return [line] + [Text("") for _ in range(self.mode - 1)]
