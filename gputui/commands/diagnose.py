"""`gputui diagnose`: sample for a few seconds, print the verdict and every finding seen, exit with a health code.

A health check reports what it saw: a finding that opened and closed during the sampling is printed too,
marked with when it held. Exit codes make it a node health check in scripts, from the worst finding seen:
0 nothing above info, 1 warnings, 4 critical findings, 2 usage or config error, 3 the driver cannot be read
(the `nvml_unavailable` finding is printed too, so a script reading the JSON sees why). The simulated
machine (`--demo`) runs on simulated time: its N seconds pass at once, and everything it prints says SIMULATED.
The lab's machine (`--demo-job`: a simulated GPU that follows a real job) runs in real time, as the job does.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gputui.argtypes import positive_seconds
from gputui.commands import common
from gputui.diagnostics.catalog import severity_label, text
from gputui.diagnostics.config import ConfigError, load_config
from gputui.diagnostics.findings import (
    Finding,
    Severity,
    finding_to_dict,
    format_evidence,
)
from gputui.diagnostics.groups import group_findings, group_to_dict, sort_groups
from gputui.diagnostics.locale import LANGS, resolve_lang
from gputui.diagnostics.verdict import Verdict, verdict_to_dict
from gputui.formatting import fmt_duration
from gputui.model import Snapshot, SystemInfo
from gputui.sources.base import InvalidGpuSelection, NoJobTrace, Source, SourceUnavailable

if TYPE_CHECKING:
    from gputui.record.writer import RecordingWriter

SCHEMA_VERSION = 1
DEFAULT_SECONDS = 10.0


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "diagnose",
        help="sample a few seconds and print what slows the GPUs (exit 0 ok, 1 warnings, 4 critical)",
    )
    common.add_source_options(parser)
    parser.add_argument(
        "--seconds",
        type=positive_seconds,
        default=DEFAULT_SECONDS,
        metavar="N",
        help=f"how long to sample (default {DEFAULT_SECONDS:g}); findings need a few seconds to confirm",
    )
    parser.add_argument("--interval", type=positive_seconds, default=1.0, metavar="S", help="seconds between samples")
    parser.add_argument("--json", action="store_true", help="print JSON: {schema, system, verdict, findings}")
    parser.add_argument("--lang", choices=LANGS, default=None, help="language of titles and advice (default: locale)")
    parser.add_argument(
        "--config",
        type=Path,
        default=None,
        metavar="FILE",
        help="thresholds file (default ~/.config/gputui/config.toml)",
    )
    from gputui.record.options import add_record_options

    add_record_options(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from gputui.diagnostics.engine import DiagnosticsEngine, unavailable_finding
    from gputui.diagnostics.verdict import unavailable_verdict

    lang = resolve_lang(args.lang)
    try:
        config = load_config(args.config)
    except ConfigError as exc:
        print(f"gputui: error: {exc}", file=sys.stderr)
        return common.EXIT_USAGE
    engine = DiagnosticsEngine(config, lang)
    from gputui.record.format import RecordingError
    from gputui.record.options import open_writer

    try:
        recorder = open_writer(args, args.interval)
    except RecordingError as exc:
        print(f"gputui: error: {exc}", file=sys.stderr)
        return common.EXIT_USAGE
    try:
        outcome = _diagnose(args, engine, recorder)
    except InvalidGpuSelection as exc:
        print(f"gputui: error: {exc}", file=sys.stderr)
        return common.EXIT_USAGE
    except NoJobTrace as exc:
        return common.report_unavailable(exc)  # no driver was asked: nothing for a driver finding to say
    except SourceUnavailable as exc:
        now = time.time()
        _emit(args, Outcome(None, unavailable_verdict(lang, now), (unavailable_finding(str(exc), lang, now),)), lang)
        return common.report_unavailable(exc)
    finally:
        if recorder is not None:
            recorder.close()
            if recorder.warning:
                print(f"gputui: {recorder.warning}", file=sys.stderr)
    _emit(args, outcome, lang)
    worst = max((f.severity for f in outcome.findings), default=None)
    if worst == Severity.CRITICAL:
        return common.EXIT_CRITICAL
    if worst == Severity.WARNING:
        return common.EXIT_WARNINGS
    return common.EXIT_OK


def _open(args: argparse.Namespace) -> tuple[Source, SystemInfo, list[float]]:
    """The source and, for the simulated one, the clock that this command moves forward itself."""
    if args.demo is None:
        source, system = common.make_source(args)
        return source, system, []
    from gputui.sources.sim.source import SimulatedSource

    now = [0.0]
    demo = SimulatedSource(
        scenario=args.demo, gpu_count=args.demo_gpus, gpu_indices=args.gpus, clock=lambda: now[0], board=args.demo_gpu
    )
    return demo, demo.open(), now


@dataclass(frozen=True, slots=True)
class Outcome:
    """What a health check saw: the machine, the verdict at the end, every finding that was open at some point
    (still open first, then those that closed) and the source's notices (an XID watch that failed...)."""

    system: SystemInfo | None
    verdict: Verdict | None
    findings: tuple[Finding, ...]
    notices: tuple[str, ...] = ()


def _diagnose(args: argparse.Namespace, engine: Any, recorder: RecordingWriter | None = None) -> Outcome:
    """Feed the engine `--seconds` of samples (and the recording, with --record)."""
    source, system, sim_clock = _open(args)
    count = math.floor(args.seconds / args.interval + 1e-9) + 1
    torch_cuda: str | None = None
    try:
        with ThreadPoolExecutor(max_workers=1) as pool:
            probe = _start_torch_probe(pool) if system.is_live else None
            start = time.monotonic()
            state = None
            ended: dict[tuple[str, tuple[int, ...], float], Finding] = {}
            notices: dict[str, None] = {}
            for i in range(count):
                if sim_clock:
                    sim_clock[0] = i * args.interval
                elif i:
                    time.sleep(max(0.0, start + i * args.interval - time.monotonic()))
                snapshot = source.sample()
                if probe is not None and (probe.done() or i == count - 1):
                    torch_cuda = probe.result()
                    probe = None
                if torch_cuda is not None:
                    snapshot = _with_torch(snapshot, torch_cuda)
                state = engine.update(snapshot)
                notices.update(dict.fromkeys(snapshot.events))
                ended.update((_seen(f), f) for f in state.closed if f.ended_at is not None)
                if recorder is not None:
                    recorder.record(snapshot, state.active, state.verdict)
                system = snapshot.system
    finally:
        source.close()
    if state is None:
        return Outcome(system, None, ())
    closed = sorted(ended.values(), key=lambda f: (-f.severity, f.started_at))
    return Outcome(system, state.verdict, (*state.active, *closed), tuple(notices))


def _seen(finding: Finding) -> tuple[str, tuple[int, ...], float]:
    """A finding's identity over the run: the same rule on the same GPUs may open twice."""
    return finding.rule, finding.gpus, finding.started_at


def _start_torch_probe(pool: ThreadPoolExecutor) -> Future[str | None]:
    from gputui.sources.host.torch_cuda import torch_cuda_version

    return pool.submit(torch_cuda_version)


def _with_torch(snapshot: Snapshot, version: str) -> Snapshot:
    return replace(snapshot, system=replace(snapshot.system, torch_cuda_version=version))


def _emit(args: argparse.Namespace, outcome: Outcome, lang: str) -> None:
    system, verdict, findings = outcome.system, outcome.verdict, outcome.findings
    groups = sort_groups(group_findings(findings, lang))
    if args.json:
        from gputui.serialize import system_to_dict

        # A finding per GPU (as the exporter's `gpu` label has them), and the rows they make, by index.
        at = {id(f): n for n, f in enumerate(findings)}
        document = {
            "schema": SCHEMA_VERSION,
            "system": system_to_dict(system) if system is not None else None,
            "verdict": verdict_to_dict(verdict) if verdict is not None else None,
            "findings": [finding_to_dict(f) for f in findings],
            "groups": [group_to_dict(g, [at[id(f)] for f in g.findings]) for g in groups],
            "notices": list(outcome.notices),
        }
        json.dump(document, sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
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
    if not any(f.severity > Severity.INFO for f in findings):
        out.append(text("cli.none", lang))
    now = text("win.now", lang)
    for group in groups:
        where = group.rule
        ended = group.ended_at
        if ended is not None:
            held = f"{_clock(group.started_at)}-{_clock(ended)}"
            where += ", " + text("cli.was", lang, span=held)
        elif group.duration_s >= 1:
            where += ", " + text("cli.since", lang, duration=fmt_duration(group.duration_s))
        out.append(f"{severity_label(group.severity, lang)}  {group.title}  [{where}]")
        if group.evidence:
            out.append("      " + " | ".join(format_evidence(ev, quiet_window=now) for ev in group.evidence))
        out.append(f"      {text('cli.advice', lang)}: {group.advice}")
    print("\n".join(out))


def _clock(timestamp: float) -> str:
    """A time of day on this machine's clock, as the user's own logs show it."""
    return datetime.fromtimestamp(timestamp).strftime("%H:%M:%S")
