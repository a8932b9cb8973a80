"""Invariants on every tick: the views of one session never contradict each other, whatever the machine.

Each case drives a headless session as `gputui diagnose --demo` does (open_session on the simulated machine, on
simulated time, through the one sampling loop) for every simulated scenario, on 1, 2, 4 and 8 GPUs, whole (h100)
and in MIG mode (h100-mig: two 3g.40gb instances per GPU; the MIG scenarios are in it already), and the tour; and
at each tick looks at the verdict shown, the findings open and closed, the text `diagnose` prints had it ended
there, and the account fed as `diagnose` feeds it. It fails on any of (the checks are in tests/invariants.py, one
function each):

1. figures: a figure in the verdict differs from the same figure in a finding's evidence: the same evidence key
   and window, on the same GPUs (MIG instances), have the same value as shown, a verdict group's being the mean
   of its GPUs'; a finding that states the clock in MHz is compared as its share of the max. A verdict about the
   clock (`throttled`) and a finding's clock agree whatever window the finding states it over (a 10 s mean in
   the verdict and "now" in the finding, 21% apart, is the issue's complaint). Two findings on one GPU state one
   figure alike, and the numbers of the verdict's sentence ("6% of the clock lost") are those its evidence holds.
   A finding whose condition lapsed this tick states its figures "when last seen": of another moment, said so.
2. health: "the GPUs look healthy" (cli.none) is printed before the warm-up ends, beside an open finding above
   info, or under a verdict that names a bound (memory-bandwidth-bound); the verdict says "not known yet" above
   an open finding above info it does not name; the verdict said nothing holds a GPU back at a tick inside the
   span a finding above info on that GPU says it has held (a condition still confirming itself is not
   "healthy"); and `gputui diagnose --seconds 3`, shorter than the warm-up, exits 0 or says "healthy" under "not
   known yet", or exits otherwise than the worst finding it prints says (4 critical, 1 warnings).
3. account: a GPU's seconds do not add up to the account's window, or the window to the ticks' intervals (each
   gap capped as account.py says); a tick's seconds go to another class than the verdict shown after it gives
   that GPU (its group's class in a `mixed` one; idle_allocated/idle_free for a GPU it leaves out; unknown
   before the warm-up); a GPU is billed GPU-bound, underused or idle once a finding above info that argues it is
   held back (degraded, throttled, interconnect, contended, inefficient: the classes that do not say the GPU
   waits) has been open for the verdict's hold (the verdict gives way to it by then; before, the verdict said
   what it watched, and health checks that).
4. gpu lists: a GPU list in the verdict's sentences or a finding's (or a row's) title is not written as
   fmt_ranges writes it ("GPUs 0,2-3", never "GPUs 0, 2, 3").
5. advice: two findings seen this tick give two numbers for one knob (num_workers <= 7 beside "about 1 per job
   here"); one that lapsed says its figures are of when it was last seen.
6. hidden: a line `diagnose` prints leaves something out ("…") without saying how many.

What is not here, and why: the TUI's half (the pane's "nothing slows the GPUs", what leaves the screen at 80x24
and 120x40 without a count, keys in hints and the footer missing from `?`) needs the app and lives with the TUI's
tests; the report of a recording and the alerts' messages are not driven here.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import re
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, replace

import pytest

from gputui.cli import main
from gputui.commands import diagnose
from gputui.config import Config
from gputui.diagnostics.account import MAX_GAP_INTERVALS
from gputui.diagnostics.findings import Evidence, Finding, Severity
from gputui.diagnostics.groups import group_findings, sort_groups
from gputui.diagnostics.settings import DiagnosticsConfig
from gputui.diagnostics.tick import Tick
from gputui.diagnostics.verdict import Verdict
from gputui.formatting import fmt_ranges
from gputui.session.builder import SessionOptions, open_session
from gputui.session.loop import SamplingLoop
from gputui.session.source_choice import SourceChoice
from gputui.sources.sim.physics import DEFAULT_BOARD
from gputui.sources.sim.scenarios import BY_NAME, SCENARIO_TABLE, TOUR, Stage
from gputui.sources.sim.source import TOUR_SEGMENT_S
from tests.invariants import (
    HEALTHY,
    LANG,
    Moment,
    SpanLog,
    check_account,
    check_account_lines,
    check_advice,
    check_exit_code,
    check_figures,
    check_gpu_lists,
    check_health,
    check_hidden,
)

SECONDS = 60  # past every scenario's phases: heating, the warm-up, findings that open and close
SHORT_DIAGNOSE_S = 3  # shorter than the warm-up: the issue's `diagnose --seconds 3`
INTERVAL_S = 1.0
# How long the verdict shown may stand over a newer judgement (verdict.py's VerdictTracker holds it that long).
HOLD_S = DiagnosticsConfig().open_after_s
KINDS_SHOWN = 6  # kinds of violation quoted per invariant in a failure (the first of each); the rest are counted
MAX_CLOCK = Evidence("max SM clock", 1980, "MHz", "", "max_sm_clock")


@dataclass(frozen=True, slots=True)
class Case:
    scenario: str
    gpus: int
    board: str
    seconds: int = SECONDS

    @property
    def name(self) -> str:
        return f"{self.scenario} on {self.gpus} {self.board}"


def _boards(scenario: str) -> tuple[str, ...]:
    """`--demo-gpu`: the machine whole and in MIG mode; only the default for a scenario whose scene runs on a board
    of its own (the MIG scenarios, pcie-box's RTX 4090s), which the option does not change."""
    own = BY_NAME[scenario].build(Stage(count=1, pid_base=1000, first=0, odd=0, last=0), 0.0).board
    return (DEFAULT_BOARD, "h100-mig") if own is None else (DEFAULT_BOARD,)


CASES = [
    *(Case(s, n, board) for s in BY_NAME for n in (1, 2, 4, 8) for board in _boards(s)),
    Case(TOUR, 4, DEFAULT_BOARD, round(TOUR_SEGMENT_S * len(SCENARIO_TABLE))),
]


def _printed(outcome: diagnose.Outcome, seconds: float) -> str:
    """What `gputui diagnose --seconds <seconds>` prints for this outcome (its private printing function: the one
    the command calls, with the options it reads)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        diagnose._emit(argparse.Namespace(json=False, seconds=seconds), outcome, LANG, None)
    return out.getvalue()


def moments(case: Case) -> Iterator[Moment]:
    """Each tick of the case's session, as `diagnose` takes it: sampled by the one loop for the case's seconds, then
    fed in order to diagnose's own _Seen (the account, the closed findings) and printed as it prints."""
    choice = SourceChoice(demo=case.scenario, demo_gpus=case.gpus, demo_gpu=case.board, simulated_time=True)
    options = SessionOptions(source=choice, interval_s=INTERVAL_S, lang=LANG)
    ticks: list[Tick] = []
    with open_session(options, Config()) as session:
        SamplingLoop(session.sampler.take, session.interval_s, ticks.append, pace=session.pace).run(case.seconds + 1)
        system = session.system
    seen = diagnose._Seen(INTERVAL_S)
    cap = MAX_GAP_INTERVALS * INTERVAL_S
    first = ticks[0].snapshot.timestamp
    elapsed, last = 0.0, first
    for tick in ticks:
        now = tick.snapshot.timestamp
        elapsed += min(max(0.0, now - last), cap)
        last = now
        before = seen.accountant.gpu_seconds()
        seen.add(tick)
        yield Moment(
            case=case.name,
            t=now - first,
            tick=tick,
            printed=_printed(seen.outcome(system), now - first),
            billed=seen.accountant.gpu_seconds(),
            billed_before=before,
            window_s=seen.accountant.account().window_s,
            elapsed_s=elapsed,
        )


def violations(case: Case) -> dict[str, list[str]]:
    """What each check found wrong over the case's ticks, by invariant, in tick order."""
    found: dict[str, list[str]] = defaultdict(list)
    health, bills = SpanLog(), SpanLog()
    for moment in moments(case):
        titles = [f.title for f in moment.tick.active]
        titles += [g.title for g in sort_groups(group_findings(moment.tick.active, LANG))]
        for invariant, messages in (
            ("figures", check_figures(moment)),
            ("health", check_health(moment, health)),
            ("account", check_account(moment, bills, HOLD_S)),
            ("account", check_account_lines(moment)),
            ("gpu lists", check_gpu_lists(moment, titles)),
            ("advice", check_advice(moment)),
            ("hidden", check_hidden(moment)),
        ):
            found[invariant] += messages
    return found


def short_diagnose(case: Case, capsys: pytest.CaptureFixture[str]) -> list[str]:
    """`gputui diagnose --seconds 3` on the case's machine, the real command: what it prints and its exit code."""
    argv = ["diagnose", "--demo", case.scenario, "--demo-gpus", str(case.gpus), "--demo-gpu", case.board]
    code = main([*argv, "--seconds", str(SHORT_DIAGNOSE_S)])
    return list(check_exit_code(f"{case.name} `diagnose --seconds {SHORT_DIAGNOSE_S}`", code, capsys.readouterr().out))


def first_of_each(messages: list[str]) -> list[str]:
    """The first message of each kind (the same words but for the tick and the figures), a few kinds at most."""
    kinds: dict[str, str] = {}
    for message in messages:
        kinds.setdefault(re.sub(r"[\d.]+", "#", message.partition("] ")[2]), message)
    return list(kinds.values())[:KINDS_SHOWN]


@pytest.mark.usefixtures("no_user_config")
@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c.scenario}-{c.gpus}x{c.board}")
def test_every_view_agrees_on_every_tick(case: Case, capsys: pytest.CaptureFixture[str]) -> None:
    """The six invariants of this module's docstring, on every tick of the case; every violation is counted, and
    the first few of each invariant are quoted with their tick and the two texts that disagree."""
    found = violations(case)
    found["health"] += short_diagnose(case, capsys)
    report = [
        f"{invariant}: {len(messages)} violation(s), the first of each kind:\n  " + "\n  ".join(first_of_each(messages))
        for invariant, messages in found.items()
        if messages
    ]
    assert not report, f"{case.name}, {case.seconds + 1} ticks:\n" + "\n".join(report)


# -- the checks themselves: each catches the example, and passes the same views once they agree -------------


@pytest.fixture(scope="module")
def calm() -> Moment:
    """The tenth second of four busy GPUs with nothing wrong: the views a check is handed, before a test changes
    one of them."""
    *_, last = moments(Case("healthy", 4, DEFAULT_BOARD, 10))
    return last


def _verdict(moment: Moment) -> Verdict:
    assert moment.tick.verdict is not None
    return moment.tick.verdict


def _throttled(clock_of_max: float, sentence: str) -> Verdict:
    evidence = (Evidence("SM clock, share of its max", clock_of_max, "%", "mean over 10 s", "clock_of_max"),)
    return Verdict("throttled", "Throttled", (1,), sentence, f"Throttled: {sentence}", evidence)


def _finding(rule: str, *evidence: Evidence, advice: str = "", gpus: tuple[int, ...] = (1,)) -> Finding:
    return Finding(rule, Severity.CRITICAL, f"GPU {fmt_ranges(gpus)}: {rule}", advice, gpus, evidence=evidence)


def _with(moment: Moment, verdict: Verdict | None, *active: Finding, printed: str | None = None) -> Moment:
    tick = replace(moment.tick, verdict=verdict, active=active, closed=())
    return replace(moment, tick=tick, printed=moment.printed if printed is None else printed)


def test_the_clock_check_compares_a_finding_in_mhz_now_with_the_verdicts_mean(calm: Moment) -> None:
    now = _finding("thermal_throttle", Evidence("SM clock", 1561, "MHz", "now", "sm_clock"), MAX_CLOCK)
    mean = _finding("thermal_throttle", Evidence("SM clock, share", 93.7, "%", "mean over 10 s", "clock_of_max"))
    verdict = _throttled(93.7, "6% of the clock lost on GPU 1 (heat)")
    [message] = check_figures(_with(calm, verdict, now))
    assert "'6% of the clock lost on GPU 1 (heat)'" in message and "78.8% of max (now), 21% lost" in message
    assert list(check_figures(_with(calm, verdict, mean, now))) == []


def test_the_verdicts_sentence_must_say_the_figure_its_evidence_holds(calm: Moment) -> None:
    [message] = check_figures(_with(calm, _throttled(93.7, "21% of the clock lost on GPU 1 (heat)")))
    assert "says 21% for lost" in message


def test_healthy_is_caught_under_not_known_yet_and_beside_an_open_finding(calm: Moment) -> None:
    unknown = replace(_verdict(calm), cls="unknown", line="Not known yet: collecting readings")
    assert list(check_health(calm, SpanLog())) == []
    [before_warm_up] = check_health(_with(calm, unknown, printed=HEALTHY), SpanLog())
    assert "before the warm-up ended" in before_warm_up
    messages = list(check_health(_with(calm, calm.tick.verdict, _finding("ecc_errors"), printed=HEALTHY), SpanLog()))
    assert any("beside an open finding" in m for m in messages)


def test_a_tick_billed_to_another_class_than_the_verdicts_is_caught(calm: Moment) -> None:
    assert list(check_account(calm, SpanLog(), HOLD_S)) == []
    throttled = _throttled(93.7, "6% of the clock lost on GPU 1 (heat)")
    gpu_bound = replace(_verdict(calm), gpus=(0, 2, 3))
    verdict = replace(_verdict(calm), cls="mixed", groups=(throttled, gpu_bound))
    messages = list(check_account(_with(calm, verdict), SpanLog(), HOLD_S))
    assert len(messages) == 1 and "GPU 1 billed gpu_bound" in messages[0] and "says throttled" in messages[0]


def test_an_account_line_that_does_not_say_which_gpus_had_how_long_is_caught(calm: Moment) -> None:
    assert list(check_account_lines(calm)) == []
    lines = calm.printed.splitlines()
    at = next(n for n, line in enumerate(lines) if line.startswith("Where"))
    heading, line = lines[at], lines[at + 1]
    assert line.startswith("GPU-bound all 4 GPUs")
    then = calm.printed.replace(line, "GPU-bound 6s on 4 GPUs: 0.00528 GPU-hours")  # as main printed it before
    [message] = check_account_lines(replace(calm, printed=then))
    assert "no GPU and no time" in message and heading in calm.printed


def test_gpu_lists_must_read_as_fmt_ranges_writes_them(calm: Moment) -> None:
    assert list(check_gpu_lists(calm, ["GPUs 0,2-3: thermal throttling"])) == []
    [message] = check_gpu_lists(calm, ["GPUs 0, 2, 3: thermal throttling"])
    assert "'0,2-3'" in message


def test_what_is_left_out_is_counted(calm: Moment) -> None:
    row = "      process: python3 (34428), python3 (34429), python3 (34430), …"
    [message] = check_hidden(replace(calm, printed=row))
    assert "python3 (34430), …" in message
    assert list(check_hidden(replace(calm, printed=row.replace("…", "… (+1 more)")))) == []
    assert list(check_hidden(calm)) == []


def test_two_numbers_for_num_workers_are_caught(calm: Moment) -> None:
    quota = _finding("cpu_throttled", advice="use fewer data-loader workers: num_workers <= 7.", gpus=())
    workers = _finding("workers_oversubscribed", advice="num_workers by the quota instead: about 1 per job here")
    [message] = check_advice(_with(calm, calm.tick.verdict, quota, workers))
    assert "advises 7" in message and "advises 1" in message
    assert list(check_advice(_with(calm, calm.tick.verdict, quota))) == []
