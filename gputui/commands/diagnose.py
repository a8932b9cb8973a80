"""`gputui diagnose`: sample for a few seconds, print the verdict and every finding seen, exit with a health code.

A health check reports what it saw: a finding that opened and closed during the sampling is printed too,
marked with when it held. Exit codes make it a node health check in scripts, from the worst finding seen:
0 nothing above info, 1 warnings, 4 critical findings, 2 usage or config error, 3 the driver cannot be read
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
import time
from contextlib import ExitStack
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gputui.argtypes import positive_seconds
from gputui.commands import common
from gputui.commands.config_options import add_config_option, add_price_options, config_of
from gputui.commands.diagnose_fleet import DEFAULT_SINCE_S, MAX_STEPS, MIN_STEP_S
from gputui.config import ConfigError
from gputui.diagnostics.account import MAX_GAP_INTERVALS, Account, Accountant, Price, account_lines, account_to_dict
from gputui.diagnostics.catalog import text
from gputui.diagnostics.findings import (
    Finding,
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
    from gputui.diagnostics.tick import Tick
    from gputui.session.builder import Session
    from gputui.session.stacks import JobStacks

SCHEMA_VERSION = 1
DEFAULT_SECONDS = 10.0
# Beyond its window, what reading one process's stacks may take (starting py-spy, the in-process record's file).
STACKS_SLACK_S = 3.0


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "diagnose",
        help="sample a few seconds and print what slows the GPUs (exit 0 ok, 1 warnings, 4 critical)",
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
        help=f"how long to sample (default {DEFAULT_SECONDS:g}); findings need a few seconds to confirm",
    )
    common.add_interval_option(parser, f"seconds between samples (default {common.DEFAULT_INTERVAL_S:g})")
    parser.add_argument(
        "--json",
        action="store_true",
        help="print JSON: {schema, system, verdict, findings, account}; with --prometheus {schema, nodes, findings}",
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
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from gputui.commands.record_options import record_target, warn_of_recording
    from gputui.diagnostics.engine import unavailable_finding
    from gputui.diagnostics.verdict import unavailable_verdict
    from gputui.record.format import RecordingError
    from gputui.session.builder import SessionOptions, open_session

    lang = resolve_lang(args.lang)
    try:
        config = config_of(args)
    except ConfigError as exc:
        return common.usage_error(exc)
    price = config.cost.price
    if args.prometheus is not None:
        from gputui.commands import diagnose_fleet

        return diagnose_fleet.run(args, config.diagnostics, lang)
    options = SessionOptions(
        source=common.source_choice(args, simulated_time=True),  # the simulated machine's N seconds pass at once
        interval_s=common.interval_of(args),
        record=record_target(args),
        stacks=not args.no_stacks and config.stacks.enabled,
        lang=lang,
        torch_cuda=True,
    )
    with ExitStack() as opened:
        try:
            session = opened.enter_context(open_session(options, config))
        except (InvalidGpuSelection, RecordingError) as exc:
            return common.usage_error(exc)
        except NoJobTrace as exc:
            return common.report_unavailable(exc)  # no driver was asked: nothing for a driver finding to say
        except SourceUnavailable as exc:
            now = time.time()
            unavailable = Outcome(None, unavailable_verdict(lang, now), (unavailable_finding(str(exc), lang, now),))
            _emit(args, unavailable, lang, price)
            return common.report_unavailable(exc, reason_shown=not args.json)  # JSON: stdout is for the script
        outcome = _diagnose(session, args.seconds)
    warn_of_recording(session)
    _emit(args, outcome, lang, price)
    return common.exit_code(f.severity for f in outcome.findings)


@dataclass(frozen=True, slots=True)
class Outcome:
    """What a health check saw: the machine, the verdict at the end, every finding that was open at some point
    (still open first, then those that closed) and the source's notices (an XID watch that failed...)."""

    system: SystemInfo | None
    verdict: Verdict | None
    findings: tuple[Finding, ...]
    notices: tuple[str, ...] = ()
    last: Snapshot | None = None  # the last reading: its GPU processes and whose job each is
    account: Account | None = None  # each GPU's and job's time in each verdict class over the sampling


class _Seen:
    """What a health check keeps of each tick: the last, every finding that closed, the source's notices."""

    def __init__(self, interval_s: float = 1.0) -> None:
        self.last: Tick | None = None
        self.ended = ClosedFindings()
        self.notices: dict[str, None] = {}
        self.accountant = Accountant(MAX_GAP_INTERVALS * interval_s)

    def add(self, tick: Tick) -> None:
        self.last = tick
        self.accountant.add(tick.snapshot, tick.verdict)
        self.notices.update(dict.fromkeys(tick.snapshot.events))
        self.ended.add(tick.closed)

    def outcome(self, system: SystemInfo) -> Outcome:
        if self.last is None:
            return Outcome(system, None, ())
        closed = self.ended.worst_first()
        last = self.last.snapshot
        active = (*self.last.active, *closed)
        account = self.accountant.account()
        return Outcome(last.system, self.last.verdict, active, tuple(self.notices), last, account)


def _diagnose(session: Session, seconds: float) -> Outcome:
    """`seconds` of the session's readings through its engine (and into its recording, with --record); with its
    stacks, those of every GPU process read once, from the first reading on."""
    from gputui.session.loop import SamplingLoop

    interval = session.interval_s
    polls = math.floor(seconds / interval + 1e-9) + 1
    seen = _Seen(interval)
    first = _SampleEveryProcess(session.stacks) if session.stacks is not None else None

    def deliver(tick: Tick) -> None:
        if first is not None:
            first(tick)
        seen.add(tick)

    sampler = session.sampler
    SamplingLoop(sampler.take, interval, deliver, pace=session.pace).run(polls)
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


def _emit(args: argparse.Namespace, outcome: Outcome, lang: str, price: Price | None) -> None:
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
            "notices": list(outcome.notices),
            # The GPU processes of the last reading, with their pod or Slurm job: who holds the GPUs judged.
            "processes": gpu_processes_to_dicts(outcome.last) if outcome.last is not None else [],
            # Each GPU's and job's seconds in each verdict class, their energy, and with a price each class's cost.
            "account": account_to_dict(outcome.account, price) if outcome.account is not None else None,
        }
        common.print_json(document, ensure_ascii=False)
        return
    out: list[str] = []
    if system is not None and not system.is_live:
        from gputui.sources.sim.job import is_job_scenario, job_banner

        if is_job_scenario(system.scenario):
            out.append(job_banner(system))
        else:
            out.append(text("cli.simulated", lang, scenario=system.scenario or system.source))
    if verdict is not None:
        out.append(text("cli.verdict", lang, line=verdict.line))
    if system is not None:
        out.append(text("cli.sampled", lang, host=system.hostname, seconds=f"{args.seconds:g}"))
    out += [text("cli.notice", lang, notice=notice) for notice in outcome.notices]
    out += _unreadable_lines(outcome.last, lang)
    out += activity_lines(outcome.last, lang)
    out += finding_lines(groups, lang)
    if outcome.account is not None:
        out += account_lines(outcome.account, price, lang)
    print("\n".join(out))
