"""Print the README's tables of the simulated scenarios, both read from the one table in scenarios.py.

The findings table is produced by running the engine, not typed by hand: each scenario runs 30 simulated
seconds (4 GPUs) on an injected clock, and the table lists the verdict and the findings open at the end and
those that opened and cleared before. `--descriptions` prints the table of what each scenario shows instead.

Run: .venv/bin/python scripts/scenario_table.py [--descriptions]
"""

from __future__ import annotations

import argparse

from gputui.diagnostics.engine import DiagnosticsEngine, DiagnosticsState
from gputui.diagnostics.findings import Finding
from gputui.sources.sim.scenarios import SCENARIO_DESCRIPTIONS, SCENARIO_TABLE
from gputui.sources.sim.source import SimulatedSource

SECONDS = 30


def run(scenario: str) -> DiagnosticsState:
    now = [0.0]
    source = SimulatedSource(scenario=scenario, clock=lambda: now[0])
    source.open()
    engine = DiagnosticsEngine()
    state = DiagnosticsState()
    for t in range(SECONDS + 1):
        now[0] = float(t)
        state = engine.update(source.sample())
    source.close()
    return state


def where(gpus: tuple[int, ...], instances: tuple[tuple[int, int], ...]) -> list[str]:
    """GPUs as "0", MIG instances as "0/GI 2"."""
    if instances:
        return [f"{gpu}/GI {gi}" for gpu, gi in instances]
    return [str(g) for g in gpus]


def describe(findings: tuple[Finding, ...]) -> str:
    """`rule` (severity, GPUs or MIG instances), one entry per rule and severity, GPUs merged."""
    merged: dict[tuple[str, str], list[str]] = {}
    for finding in findings:
        merged.setdefault((finding.rule, finding.severity.label), []).extend(where(finding.gpus, finding.mig_instances))
    parts = []
    for (rule, severity), units in merged.items():
        listed = f", GPU {','.join(sorted(set(units)))}" if units else ""
        parts.append(f"`{rule}` ({severity}{listed})")
    return ", ".join(parts) or "nothing"


def verdict(state: DiagnosticsState) -> str:
    """`class`, and for `mixed` its groups' classes and GPUs (or MIG instances)."""
    if state.verdict is None:
        return ""
    groups = ", ".join(f"`{g.cls}` GPU {','.join(where(g.gpus, g.mig_instances))}" for g in state.verdict.groups)
    return f"`{state.verdict.cls}`" + (f" ({groups})" if groups else "")


def findings_table() -> None:
    print(f"| scenario | verdict after {SECONDS} s | findings open after {SECONDS} s | raised, then cleared |")
    print("|---|---|---|---|")
    for scenario in SCENARIO_TABLE:
        state = run(scenario.name)
        cleared = describe(state.closed) if state.closed else ""
        print(f"| `{scenario.name}` | {verdict(state)} | {describe(state.active)} | {cleared} |")


def descriptions_table() -> None:
    print("| scenario | what it shows |")
    print("|---|---|")
    for name, description in SCENARIO_DESCRIPTIONS.items():
        print(f"| `{name}` | {description} |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--descriptions", action="store_true", help="print what each scenario shows instead")
    if parser.parse_args().descriptions:
        descriptions_table()
    else:
        findings_table()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
