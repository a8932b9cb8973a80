"""`gputui diagnose --prometheus URL [--match SEL] [--since 15m] [--json]`: every node's history from Prometheus
through an engine of its own, then the fleet's findings; the exit code from the worst, as `diagnose` has it.

It needs no NVIDIA driver here: the readings are Prometheus's (gputui's and dcgm-exporter's series).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from gputui.commands import common
from gputui.diagnostics.catalog import severity_label, text
from gputui.diagnostics.findings import Severity, finding_to_dict
from gputui.diagnostics.fleet_rules import NodeWindow, fleet_finding_to_dict, fleet_findings
from gputui.diagnostics.groups import group_findings, sort_groups
from gputui.diagnostics.settings import DiagnosticsConfig, for_step
from gputui.diagnostics.thresholds import Thresholds
from gputui.diagnostics.verdict import verdict_to_dict
from gputui.formatting import fmt_duration
from gputui.text.findings_text import finding_lines

if TYPE_CHECKING:
    from gputui.session.fleet_poll import NodeDiagnosis

SCHEMA_VERSION = 1
DEFAULT_SINCE_S = 15 * 60.0
MIN_STEP_S = 15.0  # Prometheus's default scrape interval: a finer step repeats the same scrape
MAX_STEPS = 600  # readings per node at most; a longer --since gets a coarser step


def default_step(since_s: float) -> float:
    return max(MIN_STEP_S, since_s / MAX_STEPS)


def run(args: argparse.Namespace, config: DiagnosticsConfig, lang: str) -> int:
    from gputui.diagnostics.engine import DiagnosticsEngine
    from gputui.session.fleet_poll import diagnose_history
    from gputui.sources.prometheus.client import CredentialsError, PrometheusError
    from gputui.sources.prometheus.fleet_query import read_history

    try:
        client = common.prometheus_client(args)
    except CredentialsError as exc:
        return common.usage_error(exc)
    step = args.step or default_step(args.since)
    end = time.time()
    try:
        history = read_history(client, args.match, end - args.since, end, step)
    except PrometheusError as exc:
        print(f"gputui: {exc}", file=sys.stderr)
        return common.EXIT_NO_DRIVER
    if not history.hosts:
        where = " for --match" if args.match else ""
        print(f"gputui: {client.url}: no gputui or dcgm-exporter series in the window{where}", file=sys.stderr)
        return common.EXIT_NO_DRIVER
    judged = for_step(config, step)
    nodes = diagnose_history(history, lambda: DiagnosticsEngine(judged, lang).update)
    fleet = _fleet_findings(nodes, lang, judged.thresholds)
    notices = (*client.notices, *(f"Prometheus warns (partial data): {w}" for w in history.warnings))
    if args.json:
        common.print_json(
            {
                "schema": SCHEMA_VERSION,
                "prometheus": client.url,
                "since_s": args.since,
                "step_s": step,
                "nodes": [_node_dict(node) for node in nodes],
                "findings": [document for _, document in fleet],
                "notices": list(notices),
            },
            ensure_ascii=False,
        )
    else:
        print("\n".join(_text(client.url, args.since, step, nodes, fleet, notices, lang)))
    return common.exit_code(
        (*(f.severity for node in nodes for f in node.findings), *(severity for severity, _ in fleet)),
        fail_on=common.FAIL_ON[args.fail_on],
    )


def _fleet_findings(
    nodes: Sequence[NodeDiagnosis], lang: str, thresholds: Thresholds
) -> list[tuple[Severity, dict[str, Any]]]:
    """The fleet's own findings (straggler, idle_allocated) over every node's window, by the thresholds the nodes
    were judged by (the config's), each its severity (for the exit code) and its JSON."""
    windows = [NodeWindow(node.host, node.source, node.snapshots, node.open) for node in nodes]
    return [(f.severity, fleet_finding_to_dict(f)) for f in fleet_findings(windows, lang, thresholds=thresholds)]


def _node_dict(node: NodeDiagnosis) -> dict[str, Any]:
    from gputui.sources.prometheus.fleet_query import NOT_FROM_DCGM

    return {
        "host": node.host,
        "source": node.source,
        "verdict": verdict_to_dict(node.verdict) if node.verdict is not None else None,
        "findings": [finding_to_dict(f) for f in node.findings],
        "readings": len(node.snapshots),
        "not_available": NOT_FROM_DCGM if node.source == "dcgm-exporter" else None,
    }


def _text(
    url: str,
    since: float,
    step: float,
    nodes: Sequence[NodeDiagnosis],
    fleet: Sequence[tuple[Severity, dict[str, Any]]],
    notices: Sequence[str],
    lang: str,
) -> list[str]:
    out = [text("cli.fleet", lang, url=url, nodes=len(nodes), since=fmt_duration(since), step=fmt_duration(step))]
    out += [text("cli.notice", lang, notice=notice) for notice in notices]
    for node in nodes:
        out.append(text("cli.node", lang, host=node.host, source=node.source, readings=len(node.snapshots)))
        if node.source == "dcgm-exporter":
            out.append("   " + text("cli.dcgm_only", lang))
        if node.verdict is not None:
            out.append("   " + text("cli.verdict", lang, line=node.verdict.line))
        out += [
            "   " + line for line in finding_lines(sort_groups(group_findings(node.findings, lang)), lang, node.verdict)
        ]
    out.append(text("cli.fleet.findings", lang))
    if not fleet:
        out.append("   " + text("cli.fleet.none", lang))
    for severity, document in fleet:
        out.append(f"   {severity_label(severity, lang)}  {document['title']}  [{document['rule']}]")
        out.append(f"         {text('cli.advice', lang)}: {document['advice']}")
    return out
