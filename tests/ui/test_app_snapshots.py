"""Fixed frames of the monitor from a seeded simulated machine with a clock the test moves."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tests.activities import job_snapshot, waiting_for_data
from tests.topologies import nvswitch8
from tests.ui.monitor_helpers import nvlink_snapshot, run_ticks, scripted_app, simulated_app

if TYPE_CHECKING:
    from conftest import Clock


def frame(
    snap_compare: Any, clock: Clock, scenario: str, gpus: int, size: tuple[int, int], keys: tuple[str, ...] = ()
) -> bool:
    app = simulated_app(scenario, gpus=gpus, clock=clock)

    async def before(pilot: Any) -> None:
        await run_ticks(app, clock, 90)
        await pilot.pause()
        if keys:
            await pilot.press(*keys)
            await pilot.pause()

    return bool(snap_compare(app, terminal_size=size, run_before=before))


def test_healthy_120x40(snap_compare: Any, clock: Clock) -> None:
    assert frame(snap_compare, clock, "healthy", 8, (120, 40))


def test_thermal_120x40(snap_compare: Any, clock: Clock) -> None:
    assert frame(snap_compare, clock, "thermal", 4, (120, 40))


def test_eight_gpus_80x24(snap_compare: Any, clock: Clock) -> None:
    assert frame(snap_compare, clock, "healthy", 8, (80, 24))


def test_detail_view(snap_compare: Any, clock: Clock) -> None:
    assert frame(snap_compare, clock, "powercap", 4, (120, 40), keys=("down", "enter"))


def test_container_120x40(snap_compare: Any, clock: Clock) -> None:
    """The header names the container and its limits; the host panel measures CPU against the quota."""
    assert frame(snap_compare, clock, "container", 4, (120, 40))


def test_container_80x24(snap_compare: Any, clock: Clock) -> None:
    assert frame(snap_compare, clock, "container", 4, (80, 24))


def test_topology_120x40(snap_compare: Any) -> None:
    """`t` on an 8-GPU NVSwitch box with one GPU's links down, from hand-made snapshots (no simulator)."""
    app, _ = scripted_app([nvlink_snapshot(0.0, nvswitch8())])

    async def before(pilot: Any) -> None:
        await app.tick()
        await pilot.press("t")
        await pilot.pause()

    assert snap_compare(app, terminal_size=(120, 40), run_before=before)


def activity_frame(snap_compare: Any, size: tuple[int, int], keys: tuple[str, ...]) -> bool:
    """A training process whose stacks py-spy read 4 s before the last of 30 ticks (hand-made: tests/activities.py),
    beside one never sampled."""
    ticks = [job_snapshot(float(t), waiting_for_data(taken_at=26.0)) for t in range(1, 31)]
    app, _ = scripted_app(ticks)
    app.request_activity = lambda pid: None  # a live session that may sample: `a` is offered

    async def before(pilot: Any) -> None:
        for _ in ticks:
            await app.tick()
        app.main.table.focus()
        await pilot.pause()
        if keys:
            await pilot.press(*keys)
            await pilot.pause()

    return bool(snap_compare(app, terminal_size=size, run_before=before))


def test_activity_on_the_process_row_80x24(snap_compare: Any) -> None:
    """ "data 71%" before the command, in the colour of data; `a Activity` in the footer in topology's place."""
    assert activity_frame(snap_compare, (80, 24), ())


def test_detail_with_an_activity_120x40(snap_compare: Any) -> None:
    """`enter` on the process: its activity bar, legend, source and window, top frames and workers above the charts."""
    assert activity_frame(snap_compare, (120, 40), ("enter",))
