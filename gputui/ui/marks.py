"""What a reading's colour says (too hot, too slow, too full, busy, waiting), judged by the rules' own thresholds.

The screen and the findings must not disagree: a value is marked (red; GPU memory yellow) where the rule that
watches it would open its finding, and not before. So every mark compares with a field of the `Thresholds` the
diagnostics engine runs with (the config file's `[diagnostics.thresholds]` included), handed to the views as one
`Marks`; the only numbers here are the yellow "getting close" tints before a rule's line, each derived from that
line in `Marks.of`.

A GPU's colours say what is lost, not how high a number is: a busy GPU is green, a clock held down under load
red, and a full memory only yellow (caching allocators keep it full on purpose).
"""

from __future__ import annotations

from dataclasses import dataclass

from gputui.diagnostics.rules.base import has_bits, is_busy
from gputui.diagnostics.thresholds import Thresholds
from gputui.model import CLOCK_SW_POWER_CAP, GpuSample

UNKNOWN = "bright_black"
HOT = "bold red"  # temperature and clocks: what slows the GPU down now
FULL = "red"  # a share of a capacity at the rule's line


@dataclass(frozen=True, slots=True)
class Level:
    """A reading in %: red from `red_pct` (a rule's line), yellow from `yellow_pct`, `below` under that."""

    red_pct: float
    yellow_pct: float
    below: str = "green"  # a capacity with room left; a wait too small to matter is plain

    def style(self, pct: float | None) -> str:
        if pct is None:
            return UNKNOWN
        return FULL if pct >= self.red_pct else "yellow" if pct >= self.yellow_pct else self.below


@dataclass(frozen=True, slots=True)
class Marks:
    """The styles of the readings on screen, from one Thresholds; made once per session (`Marks.of`), so that a
    cell's style costs a comparison or two with numbers worked out beforehand."""

    thresholds: Thresholds
    warm_c: float  # yellow within this of the slowdown temperature
    clock_short_ratio: float  # yellow below this share of the max SM clock, under load
    cpu: Level
    host_memory: Level
    cgroup_memory: Level
    shm: Level
    iowait: Level

    @classmethod
    def of(cls, th: Thresholds) -> Marks:
        """The marks for these thresholds. Each red is a rule's line; each yellow tint before it is derived here,
        and only here, so that a config override of the line moves its tint along:

        - temperature: yellow from twice the rule's margin below the slowdown threshold (one more margin of heat
          and thermal_margin opens);
        - SM clock: yellow below a fifth of the way from the max to clocks_low's ratio (0.95 at 0.75): the clock
          short of its max under load, not yet the loss the rule reports;
        - a share of a capacity (CPU, memory, /dev/shm): yellow from 20 points under the rule's line, where a
          little more load reaches it;
        - iowait: yellow from half the rule's line; under a few % it is noise.
        """
        return cls(
            thresholds=th,
            warm_c=2 * th.thermal_margin_c,
            clock_short_ratio=1 - (1 - th.clocks_low_ratio) / 5,
            cpu=_capacity(th.host_cpu_saturated_pct),
            host_memory=_capacity(th.host_memory_pct),
            cgroup_memory=_capacity(th.memory_limit_pct),
            shm=_capacity(th.shm_used_pct),
            iowait=Level(th.iowait_pct, th.iowait_pct / 2, below=""),
        )

    def util(self, util: float | None, held: bool) -> str:
        """Green from the verdict's GPU-bound line; yellow where a process holds the GPU and it is under the line
        the starvation rules call waiting; plain between."""
        if util is None:
            return UNKNOWN
        if util >= self.thresholds.verdict_busy_util_pct:
            return "green"
        return "yellow" if held and util < self.thresholds.starved_util_pct else ""

    def temperature(self, temp: float | None, slowdown: float | None) -> str:
        """Red within thermal_margin's margin of the board's slowdown threshold, so 80 C reads as fine on one board
        and as hot on another; a board that reports no threshold is not judged, as the rule does not judge it."""
        if temp is None:
            return UNKNOWN
        if slowdown is None:
            return ""
        if temp >= slowdown - self.thresholds.thermal_margin_c:
            return HOT
        return "yellow" if temp >= slowdown - self.warm_c else "green"

    def clock(self, sample: GpuSample | None, top: float | None) -> str:
        """The SM clock of a busy GPU (is_busy, as the clock rules ask) against its max: red below clocks_low's
        ratio, whatever the reason (clocks_low opens without one, the throttle rules name the others)."""
        clock = None if sample is None else sample.sm_clock_mhz
        if clock is None or sample is None or not top or clock >= self.clock_short_ratio * top:
            return ""  # at full clocks (most ticks) without asking whether it is busy
        if not is_busy(sample, self.thresholds):
            return ""
        return HOT if clock < self.thresholds.clocks_low_ratio * top else "yellow"

    def power(self, sample: GpuSample | None) -> str:
        """Red where power_cap speaks: a busy GPU that the power policy holds down (the driver's SW power cap bit);
        yellow for a draw near the enforced limit."""
        if sample is None or sample.power_w is None or not sample.power_limit_w:
            return UNKNOWN
        if has_bits(sample, CLOCK_SW_POWER_CAP) and is_busy(sample, self.thresholds):
            return FULL
        return "yellow" if 100.0 * sample.power_w / sample.power_limit_w >= self.thresholds.power_near_limit_pct else ""

    def power_lowered(self, limit_w: float | None, default_w: float | None) -> bool:
        """The enforced power limit is below the board's default by more than power_cap's margin: where power_cap
        calls a cap "lowered" (critical), the panel names the default beside the limit."""
        if limit_w is None or default_w is None:
            return False
        return limit_w < default_w * (1 - self.thresholds.power_cap_lowered_pct / 100)

    def memory(self, used_bytes: int | None, total_bytes: int | None) -> str:
        """GPU memory: yellow from vram_pressure's line. Nearly full is a hint, not a fault (the caching allocator
        keeps what it freed): the rule opens only while it keeps growing, and never red."""
        if used_bytes is None or not total_bytes:
            return UNKNOWN
        return "yellow" if 100.0 * used_bytes / total_bytes >= self.thresholds.vram_pressure_pct else ""

    def throttled(self, pct: float | None) -> str:
        """A cgroup's CFS periods throttled: red from cpu_throttled's line."""
        return HOT if pct is not None and pct >= self.thresholds.cpu_throttled_pct else ""

    def shm_small(self, size_bytes: int) -> bool:
        """A /dev/shm under shm_small's line (Docker's 64 MiB): shown, and yellow, whatever its use."""
        return size_bytes < self.thresholds.shm_small_gib * (1 << 30)


def _capacity(red_pct: float) -> Level:
    return Level(red_pct, red_pct - 20.0)
