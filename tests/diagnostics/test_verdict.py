"""The verdict: one answer on what bounds the job, from the open findings and the window."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from gputui.diagnostics.engine import DiagnosticsEngine, unavailable_finding
from gputui.diagnostics.findings import Finding, Severity
from gputui.diagnostics.locale import LANGS
from gputui.diagnostics.rules import ALL_RULES, RULE_TEXTS
from gputui.diagnostics.rules.base import Window
from gputui.diagnostics.thresholds import Thresholds
from gputui.diagnostics.verdict import (
    BOUNDS,
    CLASSES,
    Judgement,
    Verdict,
    VerdictTracker,
    classify,
    judge,
    verdict_to_dict,
)
from gputui.sources.sim.scenarios import BY_NAME, SCENARIO_TABLE, TOUR
from gputui.sources.sim.source import TOUR_SCENARIOS, TOUR_SEGMENT_S, SimulatedSource
from tests.conftest import Clock
from tests.diagnostics.builders import series
from tests.diagnostics.test_diagnostics_scenarios import run_scenario
from tests.snapshots import gpu

TH = Thresholds()


@pytest.mark.parametrize("scenario", sorted(BY_NAME))
def test_each_scenario_adds_up_to_its_verdict(scenario: str) -> None:
    state, _ = run_scenario(scenario)
    verdict = state.verdict
    assert verdict is not None
    assert (verdict.cls, *(g.cls for g in verdict.groups)) == BY_NAME[scenario].verdict


def test_the_tour_plays_each_scenario_to_its_verdict_and_so_shows_every_verdict() -> None:
    """`--demo tour` as a user sees it: every scenario of the table for TOUR_SEGMENT_S in turn, one engine
    throughout; each stage ends on its scenario's verdict, and `unknown` opens the session."""
    clock = Clock()
    source = SimulatedSource(TOUR, clock=clock)
    source.open()
    engine = DiagnosticsEngine()
    shown: set[str] = set()
    ended: dict[str, tuple[str, ...]] = {}
    for t in range(int(TOUR_SEGMENT_S * len(TOUR_SCENARIOS))):
        clock.now = float(t)
        verdict = engine.update(source.sample()).verdict
        assert verdict is not None
        classes = (verdict.cls, *(g.cls for g in verdict.groups))
        shown |= set(classes)
        ended[source.scenario_at(clock.now)[0]] = classes  # the last tick of a stage is kept
    assert ended == {scenario.name: scenario.verdict for scenario in SCENARIO_TABLE}
    # `stopped` takes `stopped_after_s` (240 s) of a spinning GPU without stacks, past a stage of the tour:
    # test_the_hang_scenario_is_stopped_once_it_held_stopped_after_s plays it that long.
    assert shown == set(CLASSES) - {"stopped"}
    assert TOUR not in BY_NAME  # the tour is the table played in turn, no scene of its own


def test_until_half_a_window_is_in_the_verdict_says_when_it_will_know() -> None:
    engine = DiagnosticsEngine()
    first = engine.update(series(1, lambda i: {})[0]).verdict
    assert first is not None and first.cls == "unknown"
    assert first.line == "Not known yet: collecting readings: a verdict in 5 s"
    for snap in series(8, lambda i: {})[1:]:
        state = engine.update(snap)
    assert state.verdict is not None and state.verdict.cls == "gpu_bound"


def test_a_verdict_changes_only_after_the_new_one_holds() -> None:
    tracker = VerdictTracker(hold_s=3.0)

    def verdict(cls: str, t: float) -> Judgement:
        said = Verdict(cls, cls, (0,), cls, cls, since=t)
        return Judgement(said.key, lambda: said)

    assert tracker.update(verdict("gpu_bound", 0.0), 0.0).cls == "gpu_bound"
    assert tracker.update(verdict("throttled", 1.0), 1.0).cls == "gpu_bound"
    assert tracker.update(verdict("gpu_bound", 2.0), 2.0).cls == "gpu_bound"  # the blip is forgotten
    assert tracker.update(verdict("throttled", 3.0), 3.0).cls == "gpu_bound"
    assert tracker.update(verdict("throttled", 5.0), 5.0).cls == "gpu_bound"
    taken = tracker.update(verdict("throttled", 6.0), 6.0)
    assert (taken.cls, taken.since) == ("throttled", 3.0)


def _judged(cls: str, t: float, quiet: tuple[int, ...] = (), flagged: tuple[int, ...] = ()) -> Judgement:
    said = Verdict(cls, cls, (0, 1), cls, cls, since=t)
    return Judgement(said.key, lambda: said, frozenset(quiet), frozenset(flagged))


def test_the_hold_counts_from_when_the_verdict_shown_stopped_being_judged_not_from_the_last_change() -> None:
    """A job starting reads idle, then underused, then GPU-bound: the holds of the judgements on the way do not
    add up. The verdict of the instant takes over, standing since it was first judged."""
    tracker = VerdictTracker(hold_s=3.0)
    assert tracker.update(_judged("idle", 0.0), 0.0).cls == "idle"
    assert tracker.update(_judged("underused", 1.0), 1.0).cls == "idle"
    assert tracker.update(_judged("gpu_bound", 3.0), 3.0).cls == "idle"
    taken = tracker.update(_judged("gpu_bound", 4.0), 4.0)
    assert (taken.cls, taken.since) == ("gpu_bound", 3.0)


def test_a_verdict_that_says_nothing_holds_a_gpu_back_gives_way_when_a_finding_opens_on_it() -> None:
    tracker = VerdictTracker(hold_s=3.0)
    tracker.update(_judged("gpu_bound", 0.0, quiet=(0, 1)), 0.0)
    taken = tracker.update(_judged("mixed", 5.0, flagged=(1,)), 5.0)  # GPU 1 throttles: its finding opens
    assert (taken.cls, taken.since) == ("mixed", 5.0)
    # One that names what holds the GPU back stays its hold, whatever else opens there.
    assert tracker.update(_judged("throttled", 6.0, flagged=(1,)), 6.0).cls == "mixed"


def test_a_standing_verdict_renews_its_words_on_the_tick_a_figure_it_states_changes() -> None:
    """A finding beside the verdict states its figures every tick (clock_of_max...): the verdict's words, held for
    10 s of old, said `6% of the clock lost` beside a finding at 21%. They now follow the figures they state."""
    tracker = VerdictTracker(hold_s=3.0)

    def busy(pct: int, t: float) -> Judgement:
        said = Verdict("gpu_bound", "GPU-bound", (0,), f"{pct}% busy", f"GPU-bound: {pct}% busy", since=t)
        return Judgement(said.key, lambda: said, stated=(float(pct),))

    tracker.update(busy(95, 0.0), 0.0)
    assert tracker.update(busy(95, 1.0), 1.0).summary == "95% busy"
    renewed = tracker.update(busy(93, 2.0), 2.0)
    assert (renewed.summary, renewed.since) == ("93% busy", 0.0)


def test_a_cause_that_opens_beside_the_same_class_is_named_on_its_tick() -> None:
    """Input-bound by the CPU quota, then the workers queue for CPUs too: the class stands, and its words name
    both causes at once, not 10 s later (the lab's quota case ended naming the quota alone)."""
    tracker = VerdictTracker(hold_s=3.0)

    def waiting(causes: tuple[str, ...], t: float) -> Judgement:
        said = Verdict("input_bound", "Input-bound", (0,), ", ".join(causes), ", ".join(causes), since=t)
        return Judgement(said.key, lambda: said, named=frozenset((rule, "", (0,)) for rule in causes))

    tracker.update(waiting(("starvation_cpu",), 0.0), 0.0)
    assert tracker.update(waiting(("starvation_cpu",), 1.0), 1.0).summary == "starvation_cpu"
    both = tracker.update(waiting(("starvation_cpu", "workers_oversubscribed"), 2.0), 2.0)
    assert (both.summary, both.since) == ("starvation_cpu, workers_oversubscribed", 0.0)
    assert tracker.update(waiting(("workers_oversubscribed",), 3.0), 3.0).summary == "workers_oversubscribed"


def test_a_second_finding_of_a_rule_already_named_is_named_on_its_tick() -> None:
    """Two ranks underused: rank 1's own Python first, then rank 0 waiting for it in a collective, both job_waits
    (variants cpu and collective): the words name the second cause when it opens, not 10 s later (the lab's
    two-rank case ended naming rank 1's alone)."""
    window = Window(series(10, lambda i: {"gpus": [gpu(g, utilization_gpu_pct=24.0) for g in (0, 1)]}), TH.window_s)
    cpu = replace(_finding("job_waits", Severity.WARNING, gpus=(1,)), variant="cpu")
    collective = replace(_finding("job_waits", Severity.WARNING, gpus=(0,)), variant="collective")
    tracker = VerdictTracker(hold_s=3.0)
    first = tracker.update(classify(window, (cpu,), TH), 9.0)
    assert first.cls == "underused" and "in a collective" not in first.summary
    both = tracker.update(classify(window, (cpu, collective), TH), 10.0)
    assert (both.cls, both.since) == ("underused", 9.0) and "other ranks, in a collective" in both.summary


def test_the_words_are_made_only_when_the_verdict_shown_changes_or_what_it_says_does() -> None:
    tracker = VerdictTracker(hold_s=3.0)
    worded: list[float] = []

    def standing(t: float) -> Judgement:
        def words() -> Verdict:
            worded.append(t)
            return Verdict("gpu_bound", "GPU-bound", (0,), "busy", "GPU-bound: busy", since=t)

        return Judgement(("gpu_bound", (0,), ()), words)

    for t in range(12):
        tracker.update(standing(float(t)), float(t))
    assert worded == [0.0]


def test_idle_gpus_beside_a_busy_job_do_not_make_it_mixed() -> None:
    def make(i: int) -> dict[str, Any]:
        return {"gpus": [gpu(0), gpu(1), gpu(2, pids=(), utilization_gpu_pct=0.0), gpu(3, utilization_gpu_pct=0.0)]}

    snaps = series(10, make)
    verdict = judge(Window(snaps, TH.window_s), (), TH)
    assert (verdict.cls, verdict.gpus) == ("gpu_bound", (0, 1))
    assert "GPUs 0-1 97% busy at 100% of max clock" in verdict.summary


def test_a_gpu_that_waits_for_no_reason_seen_here_is_underused_not_gpu_bound() -> None:
    snaps = series(10, lambda i: {"gpus": [gpu(0, utilization_gpu_pct=21.0)]})
    verdict = judge(Window(snaps, TH.window_s), (), TH)
    assert verdict.cls == "underused"
    assert verdict.line == (
        "Underused: GPU 0 only 21% busy, and nothing on this machine explains the waiting: look inside the job "
        "(synchronisation, small batches, a slow Python step, other nodes); no stack of its main thread sampled yet"
    )
    unseen = series(10, lambda i: {"gpus": [gpu(0, utilization_gpu_pct=21.0, pids=(999,))]})
    assert judge(Window(unseen, TH.window_s), (), TH).summary.endswith("other nodes)")  # no process to sample
    busy = judge(Window(series(10, lambda i: {"gpus": [gpu(0, utilization_gpu_pct=85.0)]}), TH.window_s), (), TH)
    assert busy.cls == "gpu_bound"


@pytest.mark.parametrize("util", [21.0, 97.0])
def test_the_verdict_never_says_nothing_found_beside_an_open_warning(util: float) -> None:
    """A finding above info that argues for no class (memory nearly full) is named, not talked over."""
    window = Window(series(10, lambda i: {"gpus": [gpu(0, utilization_gpu_pct=util)]}), TH.window_s)
    verdict = judge(window, (_finding("vram_pressure", Severity.WARNING),), TH)
    assert verdict.cls == ("underused" if util < 80 else "gpu_bound")
    assert "GPU memory nearly full" in verdict.summary and "nothing" not in verdict.summary
    quiet = judge(window, (_finding("idle_allocation", Severity.INFO),), TH)
    assert "nothing on this machine" in quiet.summary


@pytest.mark.parametrize(("count", "line"), [(1, "Idle: no job on GPU 0"), (2, "Idle: no job on any of the 2 GPUs")])
def test_an_idle_verdict_names_what_is_open_on_its_gpus(count: int, line: str) -> None:
    """The job the container's memory limit killed leaves its GPUs idle: "no job" alone would talk over it."""
    window = Window(
        series(10, lambda i: {"gpus": [gpu(g, pids=(), utilization_gpu_pct=0.0) for g in range(count)]}), TH.window_s
    )
    quiet = classify(window, (), TH)
    assert (quiet.quiet, quiet.words().line) == (frozenset(range(count)), line)
    killed = replace(_finding("oom_kill", Severity.CRITICAL), gpus=())
    judged = classify(window, (killed,), TH)
    assert (judged.quiet, judged.flagged) == (frozenset(), frozenset(range(count)))
    assert judged.words().line == f"{line}; open here: processes killed for memory"
    assert classify(window, (killed,), TH, "zh").words().summary.endswith("；此处有未解决的问题：有进程因内存不足被杀")


def test_a_critical_quota_beside_a_waiting_gpu_makes_it_input_bound() -> None:
    """The real job under a 1-CPU quota: GPU 74% busy, the quota throttled in most periods (a machine-wide
    finding). It names the quota; a GPU that holds no job is not bound by it."""
    quota = replace(_finding("cpu_throttled", Severity.CRITICAL), gpus=())
    window = Window(
        series(10, lambda i: {"gpus": [gpu(0, utilization_gpu_pct=74.0), gpu(1, pids=(), utilization_gpu_pct=0.0)]}),
        TH.window_s,
    )
    verdict = judge(window, (quota,), TH)
    assert (verdict.cls, verdict.gpus) == ("input_bound", (0,))
    assert verdict.summary == "GPU 0 only 74% busy, waiting for data (the CPU quota)"


def test_causes_come_most_severe_first() -> None:
    window = Window(series(10, lambda i: {"gpus": [gpu(0, utilization_gpu_pct=30.0)]}), TH.window_s)
    far = replace(_finding("numa_mismatch", Severity.WARNING), started_at=1.0)
    quota = replace(_finding("cpu_throttled", Severity.CRITICAL), gpus=(), started_at=5.0)
    starving = replace(_finding("starvation_cpu", Severity.WARNING), variant="quota", started_at=2.0)
    verdict = judge(window, (far, starving, quota), TH)
    assert verdict.summary.endswith("(the CPU quota, a rank on CPUs away from its GPU)")  # the quota said once


def test_a_rank_that_only_drifts_to_the_far_socket_is_no_cause() -> None:
    window = Window(series(10, lambda i: {"gpus": [gpu(0, utilization_gpu_pct=30.0)]}), TH.window_s)
    verdict = judge(window, (_finding("numa_mismatch", Severity.INFO),), TH)
    assert verdict.cls == "underused" and "away from its GPU" not in verdict.summary


# The rules whose causes the verdict names: those that argue for a class (`bound=`, and the unreadable driver),
# and those above info, named beside GPU-bound and underused.
NAMED = sorted(set(BOUNDS) | {rule.id for rule in ALL_RULES if rule.severity > Severity.INFO})


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("rule", NAMED)
def test_every_rule_the_verdict_names_has_its_cause_words_beside_it_in_both_languages(rule: str, lang: str) -> None:
    # The family modules' words alone, each language without the English fallback: words elsewhere do not count.
    assert RULE_TEXTS[lang].get(f"{rule}.cause"), (rule, lang)


def test_an_unreadable_driver_is_degraded() -> None:
    snaps = series(10, lambda i: {})
    verdict = judge(Window(snaps, TH.window_s), (unavailable_finding("no driver"),), TH)
    assert (verdict.cls, verdict.summary) == ("degraded", "the NVIDIA driver cannot be read")


def test_json_shape_and_chinese_words() -> None:
    state, _ = run_scenario("thermal")
    assert state.verdict is not None
    doc = verdict_to_dict(state.verdict)
    assert set(doc) == {"class", "label", "gpus", "summary", "evidence", "since", "groups"}
    assert [g["class"] for g in doc["groups"]] == ["throttled", "gpu_bound"]
    assert doc["groups"][0]["gpus"] == [1]
    assert {e["key"] for e in doc["groups"][0]["evidence"]} >= {"gpu_util", "clock_of_max"}
    engine = DiagnosticsEngine(lang="zh")
    for snap in series(10, lambda i: {"gpus": [replace(gpu(), utilization_gpu_pct=0.0, processes=())]}):
        state = engine.update(snap)
    assert state.verdict is not None and state.verdict.line == "空闲：GPU 0 上没有任务"


def _finding(rule: str, severity: Severity, gpus: tuple[int, ...] = (0,)) -> Finding:
    return Finding(rule=rule, severity=severity, title=rule, advice="", gpus=gpus)


def test_a_finding_let_down_to_info_does_not_make_the_verdict() -> None:
    """p2p_unavailable's info variant (P2P works, the path crosses sockets) is worth a line, not the verdict."""
    snaps = series(10, lambda i: {})
    window = Window(snaps, TH.window_s)
    assert judge(window, (_finding("p2p_unavailable", Severity.INFO),), TH).cls == "gpu_bound"
    assert judge(window, (_finding("p2p_unavailable", Severity.WARNING),), TH).cls == "interconnect"


def test_a_busy_gpu_is_not_input_bound_whatever_its_rank_runs_on() -> None:
    far = (_finding("numa_mismatch", Severity.WARNING),)
    busy = Window(series(10, lambda i: {}), TH.window_s)
    waiting = Window(series(10, lambda i: {"gpus": [gpu(utilization_gpu_pct=70.0)]}), TH.window_s)
    assert judge(busy, far, TH).cls == "gpu_bound"
    assert judge(waiting, far, TH).cls == "input_bound"


@pytest.mark.parametrize("scenario", ["contention", "thermal", "mig-starving"])
def test_a_mixed_verdict_stands_from_when_it_took_over(scenario: str) -> None:
    """A mixed verdict that does not change is the same verdict tick after tick: it keeps the moment it took
    over (it was taken again every hold, with a new `since`, while its judgement's key was compared with the
    shown verdict's, which names its groups and not the findings the judgement notes)."""
    now = [0.0]
    source = SimulatedSource(scenario=scenario, clock=lambda: now[0])
    source.open()
    engine = DiagnosticsEngine()
    taken = set()
    for t in range(40):
        now[0] = float(t)
        verdict = engine.update(source.sample()).verdict
        if verdict is not None and verdict.cls == "mixed" and t >= 20:
            taken.add(verdict.since)
    source.close()
    assert len(taken) == 1


def test_the_hang_scenario_is_stopped_once_it_held_stopped_after_s() -> None:
    """`--demo hang`: no stack is read on the simulated machine, so it is the warning without stacks, and the
    verdict says the spinning GPUs are stopped (the blocked rank's idle GPU is left out beside them). Until it held,
    each spinning GPU was a kernel that spins (low_sm_activity's `spinning`), which stays open beside it."""
    state, raised = run_scenario("hang", seconds=int(TH.stopped_after_s) + 15)
    assert {(f.rule, f.severity.label, f.gpus, f.variant) for f in state.active} == {
        *(("gpu_stalled", "warning", (i,), "") for i in (0, 2, 3)),
        *(("low_sm_activity", "warning", (i,), "spinning") for i in (0, 2, 3)),
        ("idle_allocation", "info", (1,), ""),  # the stuck rank's GPU, held and idle
    }
    assert "imbalance" not in raised
    assert state.verdict is not None and state.verdict.cls == "stopped"
    assert state.verdict.gpus == (0, 2, 3)
