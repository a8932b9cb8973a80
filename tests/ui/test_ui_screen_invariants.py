"""The screen invariants of the monitor (issue 38, item 8, the TUI's half), checked tick by tick.

Over every simulated scenario at 80x24 and 120x40 (and, for a few, at 1, 2, 4 and 8 GPUs), for the first ticks of a
session (the warm-up included) and a few later with the findings pane opened by `d`, read off the composited screen
as a user reads it:

1. Every GPU of the snapshot is drawn (its panel's first line) or counted: the drawn and the "+N GPUs" add up to
   the GPU count.
2. Every open finding (a row of the pane: findings alike on several GPUs are one) is shown (its title) or counted:
   in the pane, the titles drawn and its "+N findings" cover the open rows; with the pane hidden, the header's
   CRITICAL / WARNING / INFO counts add up to them.
3. Every process row of the table is drawn or counted: the rows drawn and the "+N processes" add up to the rows.
4. "nothing slows" / "look healthy" are never on screen beside an open finding above info, nor while the verdict
   is `unknown` (the warm-up: gputui does not know yet).
5. Every key the footer shows or a hint on screen names is listed by `?`.

A new view or layout stays honest by passing this test; it is how the next screen is held to the others.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import pytest

from gputui.diagnostics.findings import Severity
from gputui.diagnostics.groups import group_findings
from gputui.sources.sim.scenarios import SCENARIOS
from gputui.sources.sim.source import SimulatedSource
from gputui.ui.app import GpuTuiApp
from gputui.ui.widgets.lines import LineView
from tests.ui.monitor_helpers import (
    FIXED_NOW,
    footer_keys,
    help_key_set,
    hint_keys,
    screen_rows,
    session_of,
)

if TYPE_CHECKING:
    from conftest import Clock
    from textual.pilot import Pilot

SIZES = [(80, 24), (120, 40)]
# The scenarios also run at every GPU count: what draws most (MIG rows, a container's host lines, many findings).
ACROSS_COUNTS = ["thermal", "container", "mig-shared-slice"]
GPU_COUNTS = [1, 2, 8]  # and 4, every scenario's own count
# The ticks checked: each of the warm-up's and a few after, when the findings have opened.
CHECKED_TICKS = {1, 2, 3, 6, 10}
# From this tick the findings pane is open and has the keys (`d`), as someone reading the findings has it.
OPEN_PANE_AT = 6
GPUS_COUNTED = re.compile(r" \+(\d+) GPUs? \(")
FINDINGS_COUNTED = re.compile(r"\+(\d+) (?:findings?|项发现)")
PROCESSES_COUNTED = re.compile(r"^ \+(\d+) process(?:es)? ")
HEADER_COUNT = re.compile(r" (\d+) (?:CRITICAL|CRIT|WARNINGS?|WARN|INFO) ")
HEALTHY = re.compile(r"nothing slows|look healthy", re.IGNORECASE)


async def settled(app: GpuTuiApp, pilot: Pilot[object]) -> None:
    """Wait (bounded) until every line view has drawn at the size the layout gave it: a part whose height a tick
    changed repaints on its Resize event, a moment after the tick."""
    for _ in range(100):
        await pilot.pause(0.01)  # the screen's layout runs on its update timer, not on an idle queue alone
        if all(view.known_height == view.size.height for view in app.screen.query(LineView)):
            return
    unsettled = [
        (type(view).__name__, view.known_height, view.size.height)
        for view in app.screen.query(LineView)
        if view.known_height != view.size.height
    ]
    raise AssertionError(f"the layout never settled: {unsettled}")


def cases() -> list[tuple[str, int | None]]:
    """Every scenario at its own GPU count; a few at each count."""
    return [(name, None) for name in SCENARIOS] + [(name, n) for name in ACROSS_COUNTS for n in GPU_COUNTS]


def broken(app: GpuTuiApp, rows: list[str]) -> list[str]:
    """The invariants this screen breaks, in words (empty: none)."""
    tick = app.latest
    assert tick is not None
    main = app.main
    text = "\n".join(rows)
    found: list[str] = []
    # 1. GPUs
    gpu_rows = rows[main.gpus.region.y : main.gpus.region.bottom]
    indices = [info.index for info in tick.snapshot.gpu_info]
    drawn = {i for i in indices for row in gpu_rows if row.startswith(f"{i:>2} ")}
    counted = sum(int(n) for row in gpu_rows for n in GPUS_COUNTED.findall(row))
    if len(drawn) + counted != len(indices):
        found.append(f"GPUs: {sorted(drawn)} drawn and {counted} counted of {len(indices)}")
    # 2. findings
    groups = group_findings(tick.active, app.engine.lang)
    if main.diagnostics.display:
        pane = rows[main.diagnostics.region.y : main.diagnostics.region.bottom]
        pane_text = "\n".join(pane)
        shown = sum(1 for group in groups if group.title[:30] in pane_text)
        more = sum(int(n) for row in pane for n in FINDINGS_COUNTED.findall(row))
        if shown + more < len(groups):
            found.append(f"findings: {shown} shown and {more} counted in the pane of {len(groups)}")
    else:
        header = rows[main.header.region.y]
        counted = sum(int(n) for n in HEADER_COUNT.findall(header))
        if counted < len(groups):
            found.append(f"findings: the pane hidden and the header counts {counted} of {len(groups)}")
    # 3. processes
    table = main.table
    if not table.empty and table.order:
        table_rows = rows[table.region.y : table.region.bottom]
        listed = sum(1 for row in table_rows if row[:3].strip().isdigit() or row[:3].strip().startswith("+"))
        listed -= sum(1 for row in table_rows if PROCESSES_COUNTED.match(row))
        more = sum(int(n) for row in table_rows for n in PROCESSES_COUNTED.findall(row))
        if listed + more != len(table.order):
            found.append(f"processes: {listed} drawn and {more} counted of {len(table.order)}")
    # 4. never healthy beside a finding above info
    if HEALTHY.search(text) and any(f.severity > Severity.INFO for f in tick.active):
        found.append("'healthy' on screen beside an open finding above info")
    # 5. keys
    missing = (footer_keys(app) | hint_keys(text)) - help_key_set(app)
    if missing:
        found.append(f"keys named on screen but not in ?: {sorted(missing)}")
    return found


@pytest.mark.parametrize("size", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
@pytest.mark.parametrize(("scenario", "gpus"), cases(), ids=[f"{s}-{n or 'own'}" for s, n in cases()])
async def test_every_screen_keeps_the_invariants(
    scenario: str, gpus: int | None, size: tuple[int, int], clock: Clock
) -> None:
    source = SimulatedSource(scenario=scenario, gpu_count=gpus, seed=0, clock=clock)
    app = GpuTuiApp(session_of(source), auto_sample=False, now=lambda: FIXED_NOW)
    async with app.run_test(size=size) as pilot:
        for n in range(1, max(CHECKED_TICKS) + 1):
            if n == OPEN_PANE_AT:
                await pilot.press("d")
            await app.tick()
            clock.advance(1.0)
            if n in CHECKED_TICKS:
                await settled(app, pilot)
                problems = broken(app, screen_rows(app))
                assert not problems, (n, problems, "\n".join(screen_rows(app)))


@pytest.mark.parametrize("size", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
async def test_never_healthy_while_the_verdict_is_unknown(size: tuple[int, int], clock: Clock) -> None:
    """Invariant 4's second half: during the warm-up the screen says it does not know yet."""
    source = SimulatedSource(scenario="thermal", gpu_count=4, seed=0, clock=clock)
    app = GpuTuiApp(session_of(source), auto_sample=False, now=lambda: FIXED_NOW)
    async with app.run_test(size=size) as pilot:
        for _ in range(2):
            await app.tick()
            clock.advance(1.0)
            await settled(app, pilot)
            assert app.latest is not None
            if app.latest.verdict.cls == "unknown":
                assert not HEALTHY.search("\n".join(screen_rows(app)))
