"""The fleet's windows in the session layer: each server's recent readings, bounded, judged side by side."""

from __future__ import annotations

from dataclasses import replace

import pytest

from gputui.diagnostics.findings import Finding, Severity
from gputui.model import Snapshot
from gputui.session import fleet_poll as fleet_session
from gputui.session.fleet_poll import (
    FLEET_HISTORY,
    FLEET_WINDOW_S,
    HostState,
    judge_fleet,
    node_window,
    poll_and_judge,
    with_reading,
)
from tests.snapshots import gpu, snapshot, system_info


def named(t: float, hostname: str = "gpu01", **changes: object) -> Snapshot:
    return replace(snapshot(t, [gpu(0, **changes)]), system=system_info(hostname=hostname))


def test_a_reading_is_kept_once_and_old_ones_fall_out_by_time() -> None:
    recent: tuple[Snapshot, ...] = ()
    for t in range(0, 400, 50):
        recent = with_reading(recent, named(float(t)))
    recent = with_reading(recent, recent[-1])  # the exporter has not sampled since: counted once
    assert recent[0].timestamp == 350 - FLEET_WINDOW_S
    assert [s.timestamp for s in recent] == [50.0, 100.0, 150.0, 200.0, 250.0, 300.0, 350.0]


def test_the_readings_kept_are_bounded_in_number() -> None:
    recent: tuple[Snapshot, ...] = ()
    for i in range(FLEET_HISTORY + 40):
        recent = with_reading(recent, named(i * 0.25))
    assert len(recent) == FLEET_HISTORY and recent[-1].timestamp == (FLEET_HISTORY + 39) * 0.25


def test_an_unreachable_server_has_an_empty_window() -> None:
    s = named(10.0)
    finding = Finding(rule="thermal_throttle", severity=Severity.CRITICAL, title="", advice="", gpus=(0,))
    up = HostState("gpu01:9400", "http://gpu01:9400/metrics", s, (finding,), recent=(s,))
    window = node_window(up)
    assert window.host == "gpu01" and window.source == "gputui" and window.snapshots == (s,)
    assert window.findings == (finding,)
    down = replace(up, snapshot=None, error="timed out")
    assert node_window(down).snapshots == () and node_window(down).findings == ()


def test_three_servers_judged_together_and_a_broken_rule_leaves_no_findings(monkeypatch: pytest.MonkeyPatch) -> None:
    def state(name: str, clock: int) -> HostState:
        recent = tuple(named(float(t), name, sm_clock_mhz=clock) for t in range(0, 16, 2))
        return HostState(f"{name}:9400", f"http://{name}:9400/metrics", recent[-1], recent=recent)

    states = (state("gpu01", 1980), state("gpu02", 1980), state("gpu03", 1400))

    class Poller:
        def poll(self) -> tuple[HostState, ...]:
            return states

    fleet = poll_and_judge(Poller())
    assert fleet.states == states and [f.hosts for f in fleet.findings] == [("gpu03",)]

    def broken(*_: object, **__: object) -> tuple[()]:
        raise RuntimeError("a bug in a fleet rule")

    monkeypatch.setattr(fleet_session, "fleet_findings", broken)
    assert judge_fleet(states) == ()
