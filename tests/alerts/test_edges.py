"""Which alerts a stream of findings makes: an open and a close per finding, at most one pair per interval."""

from __future__ import annotations

from gputui.alerts.edges import Edges
from gputui.diagnostics.findings import Finding, Severity

HOT = Finding("thermal_throttle", Severity.CRITICAL, "GPU 1: thermal throttling", "cool it", gpus=(1,))
SLOW = Finding("pcie_link", Severity.INFO, "GPU 0: PCIe link below its maximum", "reseat it", gpus=(0,))


def states(edges: Edges, timeline: list[tuple[float, list[Finding]]]) -> list[tuple[float, str, str]]:
    out = []
    for now, active in timeline:
        out += [(now, state, f.rule) for state, f in edges.update(now, active)]
    return out


def test_a_finding_opens_once_and_closes_once_with_its_end_time() -> None:
    edges = Edges(Severity.WARNING, min_interval_s=300)
    assert states(edges, [(0, []), (1, [HOT]), (2, [HOT]), (3, [HOT])]) == [(1, "open", "thermal_throttle")]
    [(state, closed)] = edges.update(9, [])
    assert (state, closed.ended_at, closed.title) == ("closed", 9, HOT.title)


def test_the_engine_s_closed_finding_is_sent_when_the_tick_carries_it() -> None:
    edges = Edges(Severity.WARNING, min_interval_s=300)
    edges.update(1, [HOT])
    ended = Finding(**{**{f: getattr(HOT, f) for f in HOT.__slots__}, "ended_at": 7.5, "duration_s": 6.5})
    assert edges.update(9, [], [ended]) == [("closed", ended)]


def test_below_the_minimum_severity_nothing_is_sent() -> None:
    assert states(Edges(Severity.WARNING, 300), [(1, [SLOW]), (2, [])]) == []
    assert states(Edges(Severity.INFO, 300), [(1, [SLOW]), (2, [])]) == [
        (1, "open", "pcie_link"),
        (2, "closed", "pcie_link"),
    ]


def test_a_flapping_finding_sends_one_pair_per_interval_and_catches_up_after() -> None:
    """open/close/open/close within the interval: one pair; still open once the interval has passed: the open is
    sent then, so the receiver does not believe it closed."""
    edges = Edges(Severity.WARNING, min_interval_s=60)
    flaps = [(0, [HOT]), (5, []), (10, [HOT]), (15, []), (20, [HOT]), (59, [HOT])]
    assert states(edges, flaps) == [(0, "open", "thermal_throttle"), (5, "closed", "thermal_throttle")]
    assert states(edges, [(60, [HOT]), (61, [HOT])]) == [(60, "open", "thermal_throttle")]


def test_a_finding_is_its_rule_cause_and_gpus() -> None:
    edges = Edges(Severity.WARNING, min_interval_s=300)
    other_gpu = Finding("thermal_throttle", Severity.CRITICAL, "GPU 2: thermal throttling", "", gpus=(2,))
    other_cause = Finding("thermal_throttle", Severity.CRITICAL, "t", "", gpus=(1,), variant="hw_slowdown")
    opened = edges.update(0, [HOT, other_gpu, other_cause])
    assert [(s, f.gpus, f.variant) for s, f in opened] == [
        ("open", (1,), ""),
        ("open", (2,), ""),
        ("open", (1,), "hw_slowdown"),
    ]
