"""The screen's marks and the findings agree at each border: a reading just past a rule's line is marked on screen
and opens that rule's finding (the real rule, run through the diagnostics engine with the same Thresholds); a reading
just inside is neither. A config override of the line moves both.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from gputui.config import Config, load_config
from gputui.diagnostics.engine import DiagnosticsEngine
from gputui.diagnostics.settings import DiagnosticsConfig
from gputui.diagnostics.thresholds import Thresholds
from gputui.model import CLOCK_SW_POWER_CAP, ContainerInfo, ContainerSample, GpuSample, HostSample, Snapshot
from gputui.ui.app import GpuTuiApp
from gputui.ui.marks import Marks
from gputui.ui.widgets.fleet_block import gpu_line
from gputui.ui.widgets.gpu_panel import GpuPanel
from gputui.ui.widgets.host import container_fields, stat_fields
from gputui.ui.widgets.lines import Line
from tests.diagnostics.builders import SYSTEM, series
from tests.snapshots import GIB, MIB, gpu, gpu_info, host, proc
from tests.ui.monitor_helpers import FIXED_NOW, ScriptedSource, session_of

DEFAULTS = Thresholds()
INFO = gpu_info(0)  # an H100: 80 GiB, max SM clock 1980 MHz, slowdown at 89 C
TICKS = 12  # readings one second apart: more than the rules' 10 s window
DOCKER = ContainerInfo("docker", "/.dockerenv", 2, 8.0, None, 64 * GIB, 2 * GIB)  # 8 CPUs, 64 GiB, 2 GiB shm
IN_DOCKER = replace(SYSTEM, container=DOCKER)


def steady(
    make_gpu: Callable[[int], GpuSample] = lambda i: gpu(), make_host: Callable[[int], HostSample] = lambda i: host()
) -> list[Snapshot]:
    return series(TICKS, lambda i: {"gpus": [make_gpu(i)], "host_sample": make_host(i), "system": IN_DOCKER})


def judged(th: Thresholds, snaps: Sequence[Snapshot]) -> set[str]:
    """The rules open after the last reading, each also as "RULE:SEVERITY", and the verdict as "verdict:CLASS"."""
    engine = DiagnosticsEngine(DiagnosticsConfig(thresholds=th, open_after_s=0.0))
    states = [engine.update(snap) for snap in snaps]
    active, verdict = states[-1].active, states[-1].verdict
    severities = {f"{f.rule}:{f.severity.name.lower()}" for f in active}
    return {f.rule for f in active} | severities | ({f"verdict:{verdict.cls}"} if verdict else set())


def after(lines: Sequence[Line], label: str, skip: int = 0) -> str:
    """The style of the part `skip + 1` after the part `label`: what the screen shows there."""
    parts = [part for line in lines for part in line]
    at = next(n for n, (text, _) in enumerate(parts) if text == label)
    return parts[at + 1 + skip][1]


def panel(marks: Marks, sample: GpuSample) -> list[Line]:
    drawn = GpuPanel(INFO, marks)
    drawn.add_sample(INFO, sample)
    return drawn.build_lines(120, 3)


def host_lines(marks: Marks, sample: HostSample) -> list[Line]:
    return stat_fields(sample, marks) + container_fields(sample, DOCKER, marks)


@dataclass(frozen=True)
class Border:
    """A mark and the finding it stands for: the Thresholds field that draws the line, the readings just past it and
    just inside it (from the thresholds in force), the readings' snapshots, and the mark the screen shows."""

    field: str
    override: float  # a config value that moves the line to where the default marks nothing
    finding: str  # a rule id, or "verdict:CLASS"
    mark: str
    readings: Callable[[Thresholds], tuple[float, float]]  # (past, inside)
    snapshots: Callable[[float], list[Snapshot]]
    shown: Callable[[Marks, Snapshot], str]


def _last_gpu(marks: Marks, snap: Snapshot, label: str, skip: int = 0) -> str:
    return after(panel(marks, snap.gpus[0]), label, skip)


def _lowered_note(marks: Marks, snap: Snapshot) -> str:
    """The panel's note that someone lowered the power limit, in its style; "" when there is none."""
    parts = [part for line in panel(marks, snap.gpus[0]) for part in line]
    return next((style for text, style in parts if text.startswith("  power limit lowered")), "")


def _vram(used: float) -> Callable[[int], GpuSample]:
    """Memory that ends at `used` bytes after growing 8 MiB a second: nearly full and still growing."""
    return lambda i: gpu(memory_used_bytes=int(used) - (TICKS - 1 - i) * 8 * MIB)


def _starving(i: int) -> GpuSample:
    return gpu(utilization_gpu_pct=20.0)


def _bytes_at(pct: float, total: int) -> tuple[float, float]:
    """The fewest bytes at `pct`% of `total` or more, and a MiB under them."""
    past = math.ceil(pct / 100 * total)
    return past, past - MIB


BORDERS = {
    "temperature": Border(
        "thermal_margin_c",
        10.0,
        "thermal_margin",
        "bold red",
        lambda th: (89 - th.thermal_margin_c, 89 - th.thermal_margin_c - 0.5),
        lambda temp: steady(lambda i: gpu(temperature_c=temp)),
        lambda marks, snap: _last_gpu(marks, snap, "   TEMP "),
    ),
    "sm_clock": Border(
        "clocks_low_ratio",
        0.9,
        "clocks_low",
        "bold red",
        lambda th: (math.ceil(th.clocks_low_ratio * 1980) - 1, math.ceil(th.clocks_low_ratio * 1980)),
        lambda clock: steady(lambda i: gpu(sm_clock_mhz=int(clock))),
        lambda marks, snap: _last_gpu(marks, snap, "CLK "),
    ),
    "power": Border(
        "busy_util_pct",
        30.0,
        "power_cap",
        "red",
        lambda th: (th.busy_util_pct, th.busy_util_pct - 0.5),
        lambda util: steady(lambda i: gpu(utilization_gpu_pct=util, clock_event_reasons_mask=CLOCK_SW_POWER_CAP)),
        lambda marks, snap: _last_gpu(marks, snap, "  POWER "),
    ),
    "power_lowered": Border(
        "power_cap_lowered_pct",
        1.0,
        "power_cap:critical",
        "yellow",
        lambda th: (700 * (1 - th.power_cap_lowered_pct / 100) - 0.5, 700 * (1 - th.power_cap_lowered_pct / 100)),
        lambda limit: steady(lambda i: gpu(power_limit_w=limit, clock_event_reasons_mask=CLOCK_SW_POWER_CAP)),
        _lowered_note,
    ),
    "vram": Border(
        "vram_pressure_pct",
        90.0,
        "vram_pressure",
        "yellow",
        lambda th: _bytes_at(th.vram_pressure_pct, 80 * GIB),
        lambda used: steady(_vram(used)),
        lambda marks, snap: _last_gpu(marks, snap, "  VRAM ", 1),
    ),
    "busy": Border(
        "verdict_busy_util_pct",
        70.0,
        "verdict:gpu_bound",
        "green",
        lambda th: (th.verdict_busy_util_pct, th.verdict_busy_util_pct - 0.5),
        lambda util: steady(lambda i: gpu(utilization_gpu_pct=util)),
        lambda marks, snap: _last_gpu(marks, snap, "UTIL ["),
    ),
    "waiting": Border(
        "starved_util_pct",
        70.0,
        "starvation_io",
        "yellow",
        lambda th: (th.starved_util_pct - 0.5, th.starved_util_pct),
        lambda util: steady(lambda i: gpu(utilization_gpu_pct=util), lambda i: host(iowait_pct=45.0)),
        lambda marks, snap: _last_gpu(marks, snap, "UTIL ["),
    ),
    "iowait": Border(
        "iowait_pct",
        10.0,
        "starvation_io",
        "red",
        lambda th: (th.iowait_pct, th.iowait_pct - 0.5),
        lambda iowait: steady(_starving, lambda i: host(iowait_pct=iowait)),
        lambda marks, snap: after(host_lines(marks, snap.host), "iowait "),
    ),
    "host_cpu": Border(
        "host_cpu_saturated_pct",
        80.0,
        "cpu_contention",
        "red",
        lambda th: (th.host_cpu_saturated_pct, th.host_cpu_saturated_pct - 0.5),
        # Eight cores busy with others' work: the job's own process uses a tenth of one.
        lambda cpu: steady(_starving, lambda i: host((proc(cpu_pct=10.0, children=0),), cpu_pct_per_core=(cpu,) * 8)),
        lambda marks, snap: after(host_lines(marks, snap.host), "avg "),
    ),
    "cgroup_memory": Border(
        "memory_limit_pct",
        80.0,
        "memory_limit",
        "red",
        lambda th: _bytes_at(th.memory_limit_pct, 64 * GIB),
        lambda used: steady(
            make_host=lambda i: host(
                container=ContainerSample(memory_used_bytes=int(used), memory_limit_bytes=64 * GIB)
            )
        ),
        lambda marks, snap: after(host_lines(marks, snap.host), "CGROUP MEM "),
    ),
    "throttled": Border(
        "cpu_throttled_pct",
        10.0,
        "cpu_throttled",
        "bold red",
        lambda th: (th.cpu_throttled_pct, th.cpu_throttled_pct - 0.5),
        lambda pct: steady(
            make_host=lambda i: host(container=ContainerSample(cpu_pct_of_quota=99.0, cpu_throttled_pct=pct))
        ),
        lambda marks, snap: after(host_lines(marks, snap.host), "throttled "),
    ),
    "shm": Border(
        "shm_used_pct",
        60.0,
        "shm_small",
        "red",
        lambda th: _bytes_at(th.shm_used_pct, 2 * GIB),
        lambda used: steady(make_host=lambda i: host(shm_used_bytes=int(used))),
        lambda marks, snap: after(host_lines(marks, snap.host), "SHM "),
    ),
}


def check(border: Border, th: Thresholds) -> None:
    marks = Marks.of(th)
    past, inside = border.readings(th)
    snaps = border.snapshots(past)
    assert border.shown(marks, snaps[-1]) == border.mark, f"{past} is past the line: marked"
    assert border.finding in judged(th, snaps), f"{past} is past the line: {border.finding}"
    snaps = border.snapshots(inside)
    assert border.shown(marks, snaps[-1]) != border.mark, f"{inside} is inside the line: not marked"
    assert border.finding not in judged(th, snaps), f"{inside} is inside the line: no {border.finding}"


@pytest.mark.parametrize("name", BORDERS)
def test_the_mark_and_the_finding_agree_at_the_border(name: str) -> None:
    check(BORDERS[name], DEFAULTS)


def configured(tmp_path: Path, toml: str) -> Config:
    """The config a file holding `toml` gives, read as every command reads it."""
    path = tmp_path / "config.toml"
    path.write_text(toml)
    return load_config(path)


def thresholds_with(tmp_path: Path, field: str, value: float) -> Thresholds:
    return configured(tmp_path, f"[diagnostics.thresholds]\n{field} = {value!r}\n").diagnostics.thresholds


@pytest.mark.parametrize("name", BORDERS)
def test_a_config_override_moves_the_mark_and_the_finding_together(name: str, tmp_path: Path) -> None:
    border = BORDERS[name]
    th = thresholds_with(tmp_path, border.field, border.override)
    moved, _ = border.readings(th)
    assert border.shown(Marks.of(DEFAULTS), border.snapshots(moved)[-1]) != border.mark, "the line did not move"
    check(border, th)


def _power_near(marks: Marks, pct: float) -> str:
    return after(panel(marks, gpu(utilization_gpu_pct=20.0, power_w=7.0 * pct, power_limit_w=700.0)), "  POWER ")


def _host_memory(marks: Marks, pct: float) -> str:
    sample = host(memory_used_bytes=math.ceil(64 * GIB * pct / 100), memory_total_bytes=64 * GIB)
    return after(host_lines(marks, sample), "MEM ")


@pytest.mark.parametrize(
    ("field", "override", "shown", "mark"),
    [("power_near_limit_pct", 80.0, _power_near, "yellow"), ("host_memory_pct", 50.0, _host_memory, "red")],
)
def test_a_mark_no_rule_draws_follows_its_threshold_and_the_config(
    field: str, override: float, shown: Callable[[Marks, float], str], mark: str, tmp_path: Path
) -> None:
    """The power draw near its limit and the host's memory: no finding stands for them, yet their line is one
    Thresholds field, which the config moves."""
    default, moved = getattr(DEFAULTS, field), thresholds_with(tmp_path, field, override)
    assert shown(Marks.of(DEFAULTS), default) == mark and shown(Marks.of(DEFAULTS), default - 1) != mark
    assert shown(Marks.of(moved), override) == mark and shown(Marks.of(moved), override - 1) != mark
    assert shown(Marks.of(DEFAULTS), override) != mark


def test_the_fleet_line_marks_a_gpu_as_its_panel_does() -> None:
    marks = Marks.of(DEFAULTS)
    hot = gpu(temperature_c=86.0, sm_clock_mhz=1400, clock_event_reasons_mask=CLOCK_SW_POWER_CAP)
    line = gpu_line(INFO, hot, marks)
    styles = {text.strip(): style for text, style in line}
    assert styles["86/89C"] == after(panel(marks, hot), "   TEMP ") == "bold red"
    assert styles["1400/1980"] == after(panel(marks, hot), "CLK ") == "bold red"
    assert styles["560/700W"] == after(panel(marks, hot), "  POWER ") == "red"


async def test_the_monitor_draws_with_the_thresholds_of_its_config(tmp_path: Path) -> None:
    """The app hands its widgets the engine's thresholds: with the margin at 10 C, 80 C of a board that slows down
    at 89 C is red in the panel, and the finding is open."""
    config = configured(
        tmp_path, "[diagnostics]\nopen_after_s = 0.0\n[diagnostics.thresholds]\nthermal_margin_c = 10.0\n"
    )
    snaps = steady(lambda i: gpu(temperature_c=80.0))
    source = ScriptedSource(snaps)
    app = GpuTuiApp(session_of(source, config=config), auto_sample=False, now=lambda: FIXED_NOW)
    assert app.marks.thresholds is app.engine.config.thresholds
    async with app.run_test(size=(120, 40)) as pilot:
        for _ in snaps:
            await app.tick()
        await pilot.pause()
        assert after(app.main.gpus.lines, "   TEMP ") == "bold red"
        assert app.latest is not None and "thermal_margin" in {f.rule for f in app.latest.active}
