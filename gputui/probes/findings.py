"""A finished probe as a Finding, so the monitor keeps it in the diagnostics pane with the rules' findings."""

from __future__ import annotations

from gputui.diagnostics.findings import Evidence, Finding, Severity
from gputui.probes.judge import RunJudgement
from gputui.probes.protocol import INSTALL_HINT, Error, Final

_UNITS = (("_gb_s", "GB/s"), ("_mb_s", "MB/s"), ("tflops", "TFLOP/s"), ("_pct", "%"), ("pct_", "%"))
_QUIET_ERRORS = ("no_torch", "cancelled")


def _unit(key: str) -> str:
    return next((unit for part, unit in _UNITS if part in key), "")


def to_finding(final: Final, gpu: int | None, at: float, judgement: RunJudgement | None = None) -> Finding:
    """Severity: critical when the GPU computed wrong answers or fell off the bus, warning when a figure
    failed its check, a slowdown began, or the probe crashed; info otherwise."""
    rule = f"probe_{final.probe}"
    gpus = (gpu,) if gpu is not None else ()
    if isinstance(final, Error):
        severity = Severity.INFO if final.code in _QUIET_ERRORS else Severity.WARNING
        advice = INSTALL_HINT if final.code == "no_torch" else final.stderr_tail.strip()[-400:]
        title = f"{final.probe} probe: {final.code}: {final.message}"
        return Finding(rule, severity, title, advice, gpus=gpus, started_at=at, ended_at=at)
    severity = Severity.INFO
    if not final.ok or (judgement is not None and judgement.worsened):
        severity = Severity.WARNING
    if final.faulty or (judgement is not None and judgement.lost_after_s is not None):
        severity = Severity.CRITICAL
    advice = final.verdict if judgement is None else f"{final.verdict}. During the run: {judgement.text}"
    evidence = tuple(
        Evidence(key, value, _unit(key), final.device) for key, value in final.figures.items() if value is not None
    )
    title = f"{final.probe} probe on {final.device}: {final.verdict.split(';')[0]}"
    return Finding(rule, severity, title, advice, gpus=gpus, evidence=evidence, started_at=at, ended_at=at)
