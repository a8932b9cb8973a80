"""`gputui diagnose`: sample for a few seconds, print the verdict and every finding seen, exit with a health code.

A health check reports what it saw: a finding that opened and closed during the sampling is printed too,
marked with when it held. It never passes blind: it first collects the readings the verdict needs (half its
window), then samples the seconds asked for, judged (the account covers those). Exit codes make it a node health
check in scripts, from the worst finding seen at `--fail-on` or above: 1 warnings, 4 critical findings; without
one, 0 where the verdict is known, 6 where it never was; 2 usage or config error, 3 the driver cannot be read
(the `nvml_unavailable` finding is printed too, so a script reading the JSON sees why). The simulated
machine (`--demo`) runs on simulated time: its N seconds pass at once, and everything it prints says SIMULATED.
The lab's machine (`--demo-job`: a simulated GPU that follows a real job) runs in real time, as the job does.
The samples are taken by the one sampling loop (gputui/session/loop.py), on this thread, for N seconds' worth;
`--record` is a sink of its sampler, as in the monitor. The stacks of every GPU process are read once at the start
(gputui/session/stacks.py; not with `--no-stacks`, nor where its processes are not this machine's), and a window
that outlasts the sampling is waited for, so what is printed has each job's activity.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from contextlib import ExitStack
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gputui.argtypes import positive_seconds
from gputui.commands import common
from gputui.commands.config_options import add_config_option, add_price_options, config_of
from gputui.commands.diagnose_fleet import DEFAULT_SINCE_S, MAX_STEPS, MIN_STEP_S
from gputui.config import Config, ConfigError
from gputui.diagnostics.account import MAX_GAP_INTERVALS, Account, Accountant, Price, account_lines, account_to_dict
from gputui.diagnostics.catalog import text
from gputui.diagnostics.engine import Pending
from gputui.diagnostics.findings import (
    Finding,
    Severity,
    finding_to_dict,
)
from gputui.diagnostics.groups import group_findings, group_to_dict, sort_groups
from gputui.diagnostics.locale import LANGS, resolve_lang
from gputui.diagnostics.verdict import Verdict, verdict_to_dict
from gputui.formatting import NA
from gputui.model import Snapshot, SystemInfo
from gputui.session.diagnose import ClosedFindings
from gputui.sources.base import InvalidGpuSelection, NoJobTrace, SourceUnavailable
from gputui.text.findings_text import activity_lines, finding_lines

if TYPE_CHECKING:
    from gputui.commands.diagnose_history import FromHistory
    from gputui.diagnostics.tick import Tick
    from gputui.record.reader import Recording
    from gputui.session.builder import Session, StoreTarget
    from gputui.session.stacks import JobStacks

SCHEMA_VERSION = 1
DEFAULT_SECONDS = 10.0
# Beyond its window, what reading one process's stacks may take (starting py-spy, the in-process record's file).
STACKS_SLACK_S = 3.0


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "diagnose",
        help="sample a few seconds and print what slows the GPUs (exit 0 ok, 1 warnings, 4 critical, 6 not known)",
    )
    common.add_source_options(parser)
    common.add_prometheus_options(parser)
    parser.add_argument(
        "--since",
        type=common.duration,
        default=DEFAULT_SINCE_S,
        metavar="DURATION",
        help="with --prometheus: how far back to judge each node, e.g. 15m, 1h (default 15m)",
    )
    parser.add_argument(
        "--step",
        type=common.duration,
        default=None,
        metavar="DURATION",
        help=f"with --prometheus: the time between readings (default --since/{MAX_STEPS}, at least "
        f"{MIN_STEP_S:g}s, Prometheus's default scrape interval)",
    )
    parser.add_argument(
        "--seconds",
        type=positive_seconds,
        default=DEFAULT_SECONDS,
        metavar="N",
        help=f"how long to sample once the verdict has its readings (default {DEFAULT_SECONDS:g}); half the "
        "verdict's window (5 s by default) is collected first, and findings need a few seconds to confirm",
    )
    common.add_interval_option(parser, f"seconds between samples (default {common.DEFAULT_INTERVAL_S:g})")
    parser.add_argument(
        "--json",
        action="store_true",
        help="print JSON: {schema, system, verdict, findings, account}; with --prometheus {schema, nodes, findings}",
    )
    parser.add_argument(
        "--fail-on",
        choices=tuple(common.FAIL_ON),
        default=Severity.WARNING.label,
        help=f"the least severity of a finding that fails the check (default warning: exit 1 on warnings, 4 on "
        f"critical findings; critical: warnings exit 0); a verdict still not known exits {common.EXIT_NOT_KNOWN} "
        "whatever this says",
    )
    parser.add_argument("--lang", choices=LANGS, default=None, help="language of titles and advice (default: locale)")
    add_config_option(parser)
    parser.add_argument(
        "--no-stacks",
        action="store_true",
        help="do not read the GPU processes' Python stacks (by default each is sampled once, for [stacks] "
        "window_s seconds, with py-spy or the record `gputui run` publishes, to say what its main thread waits on)",
    )
    add_price_options(parser)
    from gputui.commands.record_options import add_record_options

    add_record_options(parser)
    history = parser.add_argument_group("the history (docs/history.md)")
    history.add_argument(
        "--at",
        type=common.past_time,
        default=None,
        metavar="T",
        help="answer from the history store for the --window before T (local time, e.g. 03:10, "
        "'2026-12-06 03:10', '3h ago'), as the live check answers for the seconds it samples; exit codes as live",
    )
    history.add_argument(
        "--window",
        type=common.window_length,
        default=None,
        metavar="DURATION",
        help=f"with --at: the span before T judged, e.g. 10m, 90s (default {DEFAULT_WINDOW_S / 60:g}m)",
    )
    history.add_argument(
        "--keep-history",
        action="store_true",
        help="also record this check into the history store, as `gputui record` does (fails where a recorder "
        "holds the store)",
    )
    common.add_store_option(history, "with --at or --keep-history: the history store")
    parser.set_defaults(func=run)


# `diagnose --at`: the span judged when --window does not say.
DEFAULT_WINDOW_S = 600.0


def _history_problem(args: argparse.Namespace) -> str | None:
    """What is wrong with the history options together, as a usage error's line."""
    if args.at is None:
        if args.window is not None:
            return "--window goes with --at"
        if args.store is not None and not args.keep_history:
            return "--store goes with --at (read the history) or --keep-history (record into it)"
        if args.keep_history and (args.record is not None or args.prometheus is not None):
            return "--keep-history records this machine's check into the store: not with --record or --prometheus"
        return None
    for given, option in (
        (args.keep_history, "--keep-history"),
        (args.record is not None, "--record"),
        (args.demo is not None, "--demo"),
        (args.demo_job is not None, "--demo-job"),
        (args.prometheus is not None, "--prometheus"),
    ):
        if given:
            return f"--at answers from the history store: it cannot be combined with {option}"
    return None


def run(args: argparse.Namespace) -> int:
    from gputui.commands.record_options import record_target, warn_of_recording
    from gputui.diagnostics.engine import unavailable_finding
    from gputui.diagnostics.verdict import unavailable_verdict
    from gputui.record.format import RecordingError
    from gputui.session.builder import SessionOptions, open_session
    from gputui.store.errors import StoreError

    lang = resolve_lang(args.lang)
    try:
        config = config_of(args)
    except ConfigError as exc:
        return common.usage_error(exc)
    price = config.cost.price
    problem = _history_problem(args)
    if problem is not None:
        return common.usage_error(problem)
    if args.at is not None:
        return _diagnose_history(args, config, lang)
    if args.prometheus is not None:
        from gputui.commands import diagnose_fleet

        return diagnose_fleet.run(args, config.diagnostics, lang)
    options = SessionOptions(
        source=common.source_choice(args, simulated_time=True),  # the simulated machine's N seconds pass at once
        interval_s=common.interval_of(args),
        record=_history_target(args) if args.keep_history else record_target(args),
        stacks=not args.no_stacks and config.stacks.enabled,
        lang=lang,
        torch_cuda=True,
    )
    with ExitStack() as opened:
        try:
            session = opened.enter_context(open_session(options, config))
        except (InvalidGpuSelection, RecordingError, StoreError) as exc:
            return common.usage_error(exc)
        except NoJobTrace as exc:
            return common.report_unavailable(exc)  # no driver was asked: nothing for a driver finding to say
        except SourceUnavailable as exc:
            now = time.time()
            unavailable = Outcome(None, unavailable_verdict(lang, now), (unavailable_finding(str(exc), lang, now),))
            _emit(args, unavailable, lang, price)
            return common.report_unavailable(exc, reason_shown=not args.json)  # JSON: stdout is for the script
        if warm_up_s(session) > 0:
            print(
                f"gputui: collecting readings for {warm_up_s(session):g} s before the verdict, then sampling "
                f"{args.seconds:g} s",
                file=sys.stderr,
                flush=True,
            )
        outcome = _diagnose(session, args.seconds)
    warn_of_recording(session)
    _emit(args, outcome, lang, price)
    return common.exit_code(
        (f.severity for f in outcome.findings), fail_on=common.FAIL_ON[args.fail_on], known=outcome.known
    )


def _diagnose_history(args: argparse.Namespace, config: Config, lang: str) -> int:
    """`--at T`: the check of [T - window, T] from the store's readings, printed and exiting as the live one."""
    from gputui.commands.diagnose_history import read_span
    from gputui.store.errors import StoreError

    window = args.window if args.window is not None else DEFAULT_WINDOW_S
    try:
        recording, source = read_span(common.store_dir(args), args.at - window, args.at)
    except StoreError as exc:
        return common.usage_error(exc)
    outcome = judge_recorded(recording, config, lang)
    judged_s = round(recording.end - recording.start - outcome.warm_up_s, 3)
    _emit(args, outcome, lang, config.cost.price, judged_s, source)
    return common.exit_code(
        (f.severity for f in outcome.findings), fail_on=common.FAIL_ON[args.fail_on], known=outcome.known
    )


def judge_recorded(recording: Recording, config: Config, lang: str) -> Outcome:
    """Every recorded reading through an engine of its own, one by one as replay feeds them, judged from the first
    known verdict on (or after a whole window's readings without one), as the live check judges: a span the store
    kept whole gives the verdict, findings, activity and account the live check printed."""
    from gputui.diagnostics.engine import DiagnosticsEngine
    from gputui.diagnostics.tick import tick_of

    interval = recording.header.interval_s
    engine = DiagnosticsEngine(config.diagnostics, lang, config.cost.price)
    warm_up = warm_up_polls(config.diagnostics.thresholds.window_s / 2, interval)
    seen = _Seen(interval)
    for taken, snapshot in enumerate(recording.ticks, start=1):
        tick = tick_of(snapshot, engine.update(snapshot))
        seen.add(tick, judged=seen.judged > 0 or is_known(tick.verdict) or taken > warm_up)
    return seen.outcome(recording.ticks[-1].system)


def _history_target(args: argparse.Namespace) -> StoreTarget:
    from gputui.session.builder import StoreTarget

    return StoreTarget(common.store_dir(args))


@dataclass(frozen=True, slots=True)
class Outcome:
    """What a health check saw: the machine, the verdict at the end, every finding that was open at some point
    (still open first, then those that closed) and the source's notices (an XID watch that failed...)."""

    system: SystemInfo | None
    verdict: Verdict | None
    findings: tuple[Finding, ...]
    notices: tuple[str, ...] = ()
    last: Snapshot | None = None  # the last reading: its GPU processes and whose job each is
    account: Account | None = None  # each GPU's and job's time in each verdict class over the judged sampling
    pending: tuple[Pending, ...] = ()  # conditions seen at the end, not held long enough yet to open
    warm_up_s: float = 0.0  # the readings before the first judged one, the verdict's warm-up

    @property
    def known(self) -> bool:
        return is_known(self.verdict)


class _Seen:
    """What a health check keeps of each tick: the last, every finding that closed, the source's notices; and,
    from the first tick judged on, the account of where the GPU time went."""

    def __init__(self, interval_s: float = 1.0) -> None:
        self.last: Tick | None = None
        self.ended = ClosedFindings()
        self.notices: dict[str, None] = {}
        self.accountant = Accountant(MAX_GAP_INTERVALS * interval_s)
        self.judged = 0  # the ticks in the account
        self.first_at: float | None = None
        self.warm_up_s = 0.0

    def add(self, tick: Tick, *, judged: bool = True) -> None:
        self.last = tick
        at = tick.snapshot.timestamp
        self.first_at = at if self.first_at is None else self.first_at
        if judged:
            if self.judged == 0:
                self.warm_up_s = at - self.first_at
            self.accountant.add(tick.snapshot, tick.verdict)
            self.judged += 1
        self.notices.update(dict.fromkeys(tick.snapshot.events))
        self.ended.add(tick.closed)

    def outcome(self, system: SystemInfo) -> Outcome:
        if self.last is None:
            return Outcome(system, None, ())
        closed = self.ended.worst_first()
        last = self.last.snapshot
        active = (*self.last.active, *closed)
        account = self.accountant.account()
        tick = self.last
        notices = tuple(self.notices)
        return Outcome(last.system, tick.verdict, active, notices, last, account, tick.pending, self.warm_up_s)


def is_known(verdict: Verdict | None) -> bool:
    """The rules have their readings: the verdict says what bounds the GPUs, not "not known yet"."""
    return verdict is not None and verdict.cls != "unknown"


def warm_up_s(session: Session) -> float:
    """The readings the verdict needs before it says anything (diagnostics/verdict.py classify: half its window)."""
    return session.config.diagnostics.thresholds.window_s / 2


def warm_up_polls(warm_up: float, interval: float) -> int:
    """The readings after which a verdict still unknown has nothing to wait for (a whole window's): from then on
    every reading is judged, known or not."""
    return math.ceil(2 * warm_up / interval + 1e-9)


def _diagnose(session: Session, seconds: float) -> Outcome:
    """The session's readings through its engine (and into its recording, with --record) until the verdict is
    known (at most a window's worth), then `seconds` more of judged readings, the account's; with its stacks,
    those of every GPU process read once, from the first reading on."""
    from gputui.session.loop import SamplingLoop

    interval = session.interval_s
    polls = math.floor(seconds / interval + 1e-9) + 1
    # Past a whole window the verdict still unknown has nothing to wait for (no GPU's activity can be read): the
    # seconds asked are sampled all the same, and the exit code says it was not known.
    warm_up = warm_up_polls(warm_up_s(session), interval)
    seen = _Seen(interval)
    first = _SampleEveryProcess(session.stacks) if session.stacks is not None else None
    taken = 0

    def deliver(tick: Tick) -> None:
        nonlocal taken
        taken += 1
        if first is not None:
            first(tick)
        seen.add(tick, judged=seen.judged > 0 or is_known(tick.verdict) or taken > warm_up)
        if seen.judged >= polls:
            loop.stop()

    sampler = session.sampler
    loop = SamplingLoop(sampler.take, interval, deliver, pace=session.pace)
    loop.run(warm_up + polls)
    if first is not None and first.outlasted_sampling():
        seen.add(sampler.take())  # a window ended after the last reading: one more, with its activity
    return seen.outcome(session.system)


class _SampleEveryProcess:
    """A sink that asks for a window of each GPU process of the first reading (those the host knows: a PID only
    the driver names may be another PID namespace's), and then waits (bounded) for them."""

    def __init__(self, stacks: JobStacks) -> None:
        self._stacks = stacks
        self._deadline: float | None = None

    def __call__(self, tick: Tick) -> None:
        if self._deadline is not None:
            return
        on_gpus = {proc.pid for gpu in tick.snapshot.gpus for proc in gpu.processes}
        pids = sorted(proc.pid for proc in tick.snapshot.host.processes if proc.pid in on_gpus)
        asked = sum(self._stacks.request(pid) is None for pid in pids)
        self._deadline = time.monotonic() + asked * (self._stacks.config.window_s + STACKS_SLACK_S)

    def outlasted_sampling(self) -> bool:
        """Waits for the windows still to be taken, until their time is up; True when one ended after the last
        reading took the activities."""
        if self._deadline is None:
            return False
        self._stacks.settle(max(0.0, self._deadline - time.monotonic()))
        return self._stacks.unattached


def _unreadable_lines(last: Snapshot | None, lang: str) -> list[str]:
    """A line for each GPU process whose /proc files the kernel refused to gputui: what could not be read, why,
    and how to read it; what could (its name, user, CPU) is judged as usual."""
    if last is None:
        return []
    out = []
    for proc in last.host.processes:
        if proc.unreadable:
            files = text("cli.and", lang).join(text(f"cli.unreadable.{name}", lang) for name in proc.unreadable)
            user = proc.user or NA
            out.append(text("cli.unreadable", lang, pid=proc.pid, name=proc.name, user=user, files=files))
    return out


def _pending_to_dict(pending: Pending) -> dict[str, object]:
    return {
        "rule": pending.rule,
        "gpus": list(pending.gpus),
        "severity": pending.severity.label,
        "title": pending.title,
        "opens_in_s": round(pending.opens_in_s, 3),
    }


def _emit(
    args: argparse.Namespace,
    outcome: Outcome,
    lang: str,
    price: Price | None,
    sampled_s: float | None = None,
    history: FromHistory | None = None,
) -> None:
    """The check's answer on stdout: text, or JSON with --json; `sampled_s` is the judged seconds (default: those
    --seconds asked), `history` says where and when an answer from the store comes from (its text is the first
    line; JSON's "history")."""
    system, verdict, findings = outcome.system, outcome.verdict, outcome.findings
    groups = sort_groups(group_findings(findings, lang))
    if args.json:
        from gputui.serialize import gpu_processes_to_dicts, system_to_dict

        # A finding per GPU (as the exporter's `gpu` label has them), and the rows they make, by index.
        at = {id(f): n for n, f in enumerate(findings)}
        document = {
            "schema": SCHEMA_VERSION,
            "system": system_to_dict(system) if system is not None else None,
            "verdict": verdict_to_dict(verdict) if verdict is not None else None,
            "findings": [finding_to_dict(f) for f in findings],
            "groups": [group_to_dict(g, [at[id(f)] for f in g.findings]) for g in groups],
            # Conditions seen at the end that had not held long enough to open their finding.
            "pending": [_pending_to_dict(p) for p in outcome.pending],
            "notices": list(outcome.notices),
            # The GPU processes of the last reading, with their pod or Slurm job: who holds the GPUs judged.
            "processes": gpu_processes_to_dicts(outcome.last) if outcome.last is not None else [],
            # Each GPU's and job's seconds in each verdict class, their energy, and with a price each class's cost.
            "account": account_to_dict(outcome.account, price) if outcome.account is not None else None,
        }
        if history is not None:
            document["history"] = history.to_dict()
        common.print_json(document, ensure_ascii=False)
        return
    out: list[str] = []
    if history is not None:
        out.append(history.line())
    if system is not None and not system.is_live:
        from gputui.sources.sim.job import is_job_scenario, job_banner

        if is_job_scenario(system.scenario):
            out.append(job_banner(system))
        else:
            out.append(text("cli.simulated", lang, scenario=system.scenario or system.source))
    if verdict is not None:
        out.append(text("cli.verdict", lang, line=verdict.line))
    if system is not None:
        seconds = f"{args.seconds if sampled_s is None else sampled_s:g}"
        warm_up = f"{outcome.warm_up_s:g}"
        key = "cli.sampled.warm" if outcome.warm_up_s > 0 else "cli.sampled"
        out.append(text(key, lang, host=system.hostname, seconds=seconds, warm_up=warm_up))
    out += [text("cli.notice", lang, notice=notice) for notice in outcome.notices]
    out += _unreadable_lines(outcome.last, lang)
    out += activity_lines(outcome.last, lang)
    out += finding_lines(groups, lang, verdict, outcome.pending)
    if outcome.account is not None:
        out += account_lines(outcome.account, price, lang)
    print("\n".join(out))
