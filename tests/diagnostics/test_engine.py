"""The engine: hysteresis (no flapping at a threshold), worst values, history, disabled rules, languages."""

from __future__ import annotations

from dataclasses import replace

from gputui.diagnostics.engine import DiagnosticsEngine, DiagnosticsState, unavailable_finding
from gputui.diagnostics.findings import Finding, Severity, finding_to_dict
from gputui.diagnostics.settings import DiagnosticsConfig
from gputui.diagnostics.thresholds import Thresholds
from gputui.model import Snapshot
from tests.diagnostics.builders import T0, snap
from tests.snapshots import gpu, gpu_info


def warm(t: float, temp: float, index: int = 0) -> Snapshot:
    """thermal_margin holds from 84 C (slowdown 89 C, margin 5 C)."""
    return snap(t, gpus=[gpu(index, temperature_c=temp)])


def feed(engine: DiagnosticsEngine, snaps: list[Snapshot]) -> DiagnosticsState:
    state = DiagnosticsState()
    for s in snaps:
        state = engine.update(s)
    return state


def rules(state: DiagnosticsState) -> list[str]:
    return [f.rule for f in state.active]


def test_opens_only_after_the_condition_held_for_open_after_s() -> None:
    engine = DiagnosticsEngine()
    assert rules(feed(engine, [warm(t, 86.0) for t in range(3)])) == []
    state = engine.update(warm(3, 86.0))
    [finding] = state.active
    assert finding.rule == "thermal_margin" and finding.started_at == T0 and finding.duration_s == 3.0
    assert finding.is_open and finding.metric == "temperature_c"


def test_a_condition_not_yet_held_is_pending_with_the_time_until_it_opens() -> None:
    """What the views say as "watching: ... (opens in 2 s if it holds)" in place of "nothing slows the GPUs"."""
    engine = DiagnosticsEngine()
    state = feed(engine, [warm(t, 86.0) for t in range(2)])
    assert state.active == ()
    [pending] = state.pending
    assert (pending.rule, pending.gpus, pending.severity) == ("thermal_margin", (0,), Severity.WARNING)
    assert pending.opens_in_s == 2.0 and pending.title == "GPU 0: within 5 C of thermal slowdown (89 C)"
    state = feed(engine, [warm(t, 86.0) for t in range(2, 4)])
    assert rules(state) == ["thermal_margin"] and state.pending == ()
    assert feed(engine, [warm(t, 70.0) for t in range(4, 6)]).pending == ()  # a lapse of an open one: not pending


def test_a_value_wobbling_at_the_threshold_never_opens() -> None:
    engine = DiagnosticsEngine()
    states = [engine.update(warm(t, 84.1 if t % 2 else 83.9)) for t in range(60)]
    assert all(s.active == () and s.closed == () for s in states)


def test_once_open_brief_clears_do_not_close_it_and_nothing_flaps() -> None:
    engine = DiagnosticsEngine()
    feed(engine, [warm(t, 86.0) for t in range(5)])
    states = [engine.update(warm(t, 84.1 if t % 2 else 83.9)) for t in range(5, 60)]
    assert all(rules(s) == ["thermal_margin"] for s in states)
    assert states[-1].closed == ()
    assert len({f.started_at for s in states for f in s.active}) == 1


def test_closes_after_clear_for_close_after_s_into_history() -> None:
    engine = DiagnosticsEngine()
    feed(engine, [warm(t, 86.0) for t in range(10)])
    assert rules(feed(engine, [warm(t, 70.0) for t in range(10, 14)])) == ["thermal_margin"]
    state = engine.update(warm(14, 70.0))
    assert state.active == ()
    [closed] = state.closed
    assert closed.ended_at == T0 + 9 and closed.duration_s == 9.0 and not closed.is_open


def test_history_is_newest_first_and_bounded() -> None:
    engine = DiagnosticsEngine(DiagnosticsConfig(history_size=2))
    t = 0
    for _ in range(3):
        feed(engine, [warm(t + i, 86.0) for i in range(5)] + [warm(t + i, 70.0) for i in range(5, 11)])
        t += 11
    state = engine.update(warm(t, 70.0))
    assert [f.started_at for f in state.closed] == [T0 + 22, T0 + 11]


def test_worst_value_is_kept_in_the_rules_direction() -> None:
    engine = DiagnosticsEngine()
    state = feed(engine, [warm(t, temp) for t, temp in enumerate([85.0, 87.5, 86.0, 85.0, 85.5])])
    assert state.active[0].worst == 87.5
    engine = DiagnosticsEngine()
    clocks = [990, 900, 950, 990]
    state = feed(
        engine, [snap(t, gpus=[gpu(sm_clock_mhz=c, clock_event_reasons_mask=0x8)]) for t, c in enumerate(clocks)]
    )
    assert state.active[0].rule == "hw_slowdown" and state.active[0].worst == 900


def test_active_is_sorted_worst_first() -> None:
    engine = DiagnosticsEngine()
    capped = gpu(1, power_limit_w=400.0, clock_event_reasons_mask=0x4)
    snaps = [snap(t, gpus=[gpu(0, temperature_c=86.0), capped], infos=[gpu_info(0), gpu_info(1)]) for t in range(4)]
    state = feed(engine, snaps)
    assert [(f.rule, f.severity) for f in state.active] == [
        ("power_cap", Severity.CRITICAL),
        ("thermal_margin", Severity.WARNING),
    ]
    assert state.worst == Severity.CRITICAL


def test_disabled_rules_do_not_run() -> None:
    engine = DiagnosticsEngine(DiagnosticsConfig(disabled=frozenset({"thermal_margin"})))
    assert feed(engine, [warm(t, 86.0) for t in range(10)]).active == ()


def test_thresholds_and_hold_times_come_from_the_config() -> None:
    config = DiagnosticsConfig(thresholds=replace(Thresholds(), thermal_margin_c=2.0), open_after_s=0.0)
    assert DiagnosticsEngine(config).update(warm(0, 86.0)).active == ()
    assert rules(DiagnosticsEngine(config).update(warm(0, 87.5))) == ["thermal_margin"]


def test_events_open_at_once_and_stay_open_for_the_xid_hold() -> None:
    engine = DiagnosticsEngine()
    assert rules(engine.update(snap(0, gpus=[gpu(xid_events=(79,))]))) == ["xid"]
    assert rules(feed(engine, [snap(t, gpus=[gpu()]) for t in range(1, 300)])) == ["xid"]
    assert engine.update(snap(300, gpus=[gpu()])).active == ()


def test_idle_allocation_waits_minutes() -> None:
    engine = DiagnosticsEngine()
    idle = [snap(t, gpus=[gpu(utilization_gpu_pct=0.0)]) for t in range(180)]
    assert feed(engine, idle).active == ()
    assert rules(engine.update(snap(180, gpus=[gpu(utilization_gpu_pct=0.0)]))) == ["idle_allocation"]


def test_titles_advice_and_evidence_in_chinese() -> None:
    state = feed(DiagnosticsEngine(lang="zh"), [warm(t, 86.0) for t in range(4)])
    finding = state.active[0]
    assert "过热降频" in finding.title and "风道" in finding.advice
    assert finding.evidence[0].label == "温度" and finding.evidence[0].key == "temperature"


def test_evidence_is_in_words_with_its_window() -> None:
    state = feed(DiagnosticsEngine(), [warm(t, 86.0) for t in range(4)])
    temperature, threshold = state.active[0].evidence
    assert (temperature.label, temperature.value, temperature.unit, temperature.window) == (
        "temperature",
        86.0,
        "C",
        "now",
    )
    assert threshold.window == ""  # a board's fixed figure: no window to name


def test_nvml_unavailable_is_critical_and_says_why() -> None:
    finding = unavailable_finding("driver/library version mismatch.", "en", now=5.0)
    assert finding.rule == "nvml_unavailable" and finding.severity == Severity.CRITICAL
    assert "nvidia-smi" in finding.advice
    assert finding.evidence[0].value == "driver/library version mismatch."


def test_json_form_has_the_issues_keys() -> None:
    state = feed(DiagnosticsEngine(), [warm(t, 86.0) for t in range(4)])
    data = finding_to_dict(state.active[0])
    assert list(data) == [
        "rule",
        "variant",
        "severity",
        "gpus",
        "pids",
        "title",
        "evidence",
        "advice",
        "started_at",
        "ended_at",
        "duration_s",
    ]
    assert data["ended_at"] is None
    assert data["severity"] == "warning" and data["gpus"] == [0] and data["duration_s"] == 3.0
    assert data["evidence"][0] == {
        "key": "temperature",
        "label": "temperature",
        "value": 86.0,
        "unit": "C",
        "window": "now",
    }


def probe_result(at: float, severity: Severity = Severity.WARNING) -> Finding:
    return Finding("probe_stress", severity, "stress probe", "advice", gpus=(0,), started_at=at, ended_at=at)


def test_an_external_finding_is_open_for_its_time_then_kept_in_the_history() -> None:
    engine = DiagnosticsEngine(DiagnosticsConfig(history_size=2))
    feed(engine, [warm(t, 40.0) for t in range(2)])
    engine.add_external(probe_result(T0 + 1), open_for_s=5.0)
    state = engine.update(warm(3, 40.0))
    [shown] = state.active
    assert shown.rule == "probe_stress" and shown.is_open and shown.duration_s == 2.0
    assert state.worst == Severity.WARNING and state.closed == ()
    state = engine.update(warm(6, 40.0))
    assert state.active == () and [f.rule for f in state.closed] == ["probe_stress"]
    assert not state.closed[0].is_open
    # Rule closures come and go in the history; the probe result stays.
    for start in (10, 30, 50):
        feed(engine, [warm(t, 86.0) for t in range(start, start + 5)] + [warm(start + 17, 40.0)])
    state = engine.update(warm(80, 40.0))
    assert [f.rule for f in state.closed] == ["thermal_margin", "thermal_margin", "probe_stress"]


def test_an_external_finding_with_no_open_time_goes_straight_to_the_history() -> None:
    engine = DiagnosticsEngine()
    engine.add_external(probe_result(T0, Severity.INFO))
    state = engine.update(warm(0, 40.0))
    assert state.active == () and [f.title for f in state.closed] == ["stress probe"]
