"""The charts of the HTML report: one metric per chart, one line per GPU (report_figure adds a GPU selector).

One chart per metric with every GPU on it, rather than small multiples of one GPU each: what the page has to
show is GPUs against each other (one hot GPU, one starved rank, all eight power-capped at once), and one axis
with a line per GPU shows that at a glance for 1 to 8 GPUs, where 8 panels per metric would hide a 5 °C
difference in separate scales and make the page eight times as long. The lines of one metric share a unit
and mostly agree, so 8 of them stay readable; when one GPU is the story, the selector shows that GPU alone on
every chart at once. A chart never mixes metrics: SM, tensor-core and DRAM activity are three charts, not 24
lines on one. Percentages sit on a fixed 0-100 axis, so a steady 97% reads flat rather than as a wild 95-99.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from gputui.model import GpuInfo, GpuSample

_Value = Callable[[GpuSample, GpuInfo], float | None]


@dataclass(frozen=True, slots=True)
class Chart:
    """A metric charted as one line per GPU; `rules`: prefixes of the rule ids whose findings are marked on it."""

    title: str
    value: _Value
    rules: tuple[str, ...] = ()
    percent: bool = False  # on a fixed 0-100 axis
    digits: int = 1  # decimals kept on the page
    gpm: bool = False  # reported by Hopper and newer only: left out when no GPU reported it


def _memory_used_pct(sample: GpuSample, info: GpuInfo) -> float | None:
    if sample.memory_used_bytes is None or not info.memory_total_bytes:
        return None
    return 100 * sample.memory_used_bytes / info.memory_total_bytes


def _per_second_gb(value: float | None) -> float | None:
    return None if value is None else value / 1e9


# Findings that hold the clocks back are about the SM clock and the power that capped it.
_CLOCK_RULES = ("power_cap", "hw_slowdown", "power_brake", "clocks_low")
SM_CLOCK_TITLE = "SM clock (MHz); grey: clocks held back on some GPU"
UTILIZATION = Chart("GPU utilization (%)", lambda g, _: g.utilization_gpu_pct, ("starvation_",), percent=True)
GPU_CHARTS: tuple[Chart, ...] = (
    UTILIZATION,
    Chart("SM active (%)", lambda g, _: g.sm_active_pct, ("low_sm_activity",), percent=True, gpm=True),
    Chart("Tensor cores active (%)", lambda g, _: g.tensor_active_pct, ("tensor_cores_idle",), percent=True, gpm=True),
    Chart("DRAM bandwidth (%)", lambda g, _: g.dram_bw_pct, ("memory_bound",), percent=True, gpm=True),
    Chart("GPU memory used (%)", _memory_used_pct, ("vram_",), percent=True),
    Chart(
        SM_CLOCK_TITLE, lambda g, _: None if g.sm_clock_mhz is None else float(g.sm_clock_mhz), _CLOCK_RULES, digits=0
    ),
    Chart("GPU temperature (°C)", lambda g, _: g.temperature_c, ("thermal_",), digits=0),
    Chart("Power (W)", lambda g, _: g.power_w, _CLOCK_RULES, digits=0),
    Chart("PCIe rx (GB/s)", lambda g, _: _per_second_gb(g.pcie_rx_bytes_s), ("pcie_",), digits=2),
    Chart("PCIe tx (GB/s)", lambda g, _: _per_second_gb(g.pcie_tx_bytes_s), ("pcie_",), digits=2),
)
HOST_CPU_TITLE = "Host CPU, all cores (%)"
# Where a GPU in MIG mode would have its utilization: a line per instance (report_mig), on 0-100 too.
MIG_ACTIVITY_TITLE = "MIG instance activity (%)"


def gpu_colour(n: int) -> str:
    """The n-th GPU's colour, the same on every chart."""
    palette = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf")
    return palette[n % len(palette)]
