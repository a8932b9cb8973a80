"""Print the README's table of simulated scenarios and the findings the diagnostics raise on each.

Produced by running the engine, not typed by hand: each scenario runs 30 simulated seconds (4 GPUs) on an
injected clock, and the table lists the findings open at the end and those that opened and cleared before.

Run: .venv/bin/python scripts/scenario_table.py
"""

from __future__ import annotations

from gputui.diagnostics.engine import DiagnosticsEngine, DiagnosticsState
from gputui.diagnostics.findings import Finding
from gputui.sources.scenarios import SCENARIOS
from gputui.sources.simulated import SimulatedSource

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


def describe(findings: tuple[Finding, ...]) -> str:
    """`rule` (severity, GPUs), one entry per rule and severity, GPUs merged."""
    merged: dict[tuple[str, str], list[int]] = {}
    for finding in findings:
        merged.setdefault((finding.rule, finding.severity.label), []).extend(finding.gpus)
    parts = []
    for (rule, severity), gpus in merged.items():
        where = f", GPU {','.join(str(g) for g in sorted(set(gpus)))}" if gpus else ""
        parts.append(f"`{rule}` ({severity}{where})")
    return ", ".join(parts) or "nothing"


def main() -> int:
    print(f"| scenario | findings open after {SECONDS} s | raised, then cleared |")
    print("|---|---|---|")
    for scenario in SCENARIOS:
        if scenario == "tour":
            continue
        state = run(scenario)
        cleared = describe(state.closed) if state.closed else ""
        print(f"| `{scenario}` | {describe(state.active)} | {cleared} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
