"""`gputui diagnose` is never "healthy" when it does not know (issue 38): it waits for the verdict's readings before
the seconds it was asked for, bills only the judged seconds, says "not known" with an exit code of its own, and
`--fail-on` chooses the severity a script fails on."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from gputui.cli import main
from gputui.commands import common
from gputui.diagnostics.findings import Severity
from gputui.model import Snapshot, SystemInfo
from gputui.session import builder
from gputui.session.loop import SimulatedTime
from gputui.sources.sim.source import SimulatedSource

pytestmark = pytest.mark.usefixtures("no_user_config")

HEALTHY = "the GPUs look healthy"


def diagnose(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["diagnose", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_a_check_shorter_than_the_warm_up_waits_for_the_verdict(capsys: pytest.CaptureFixture[str]) -> None:
    """`--demo thermal --seconds 3` printed "Not known yet", then "the GPUs look healthy", and exited 0 on a GPU at
    90.5 C over its 89 C slowdown."""
    code, out, err = diagnose(capsys, "--demo", "thermal", "--seconds", "3")
    assert code == common.EXIT_CRITICAL
    assert err == "gputui: collecting readings for 5 s before the verdict, then sampling 3 s\n"
    assert "Not known yet" not in out and HEALTHY not in out
    assert "VERDICT  Mixed: Throttled GPU 1" in out
    assert "CRIT  GPU 1: thermal throttling" in out


def test_a_verdict_not_known_never_sits_above_a_critical_finding(capsys: pytest.CaptureFixture[str]) -> None:
    """`--demo ecc --seconds 2` printed `Not known yet` above a CRIT finding."""
    code, out, _ = diagnose(capsys, "--demo", "ecc", "--seconds", "2")
    assert code == common.EXIT_CRITICAL
    verdict, finding = out.index("VERDICT"), out.index("CRIT  GPU 1: uncorrected memory errors")
    assert verdict < finding and "Not known yet" not in out
    assert "Degraded GPU 1" in out[verdict:finding]


def test_a_verdict_that_is_a_problem_is_not_called_healthy(capsys: pytest.CaptureFixture[str]) -> None:
    """`--demo membound` printed "the math waits on memory" and then "the GPUs look healthy"."""
    code, out, _ = diagnose(capsys, "--demo", "membound")
    assert code == common.EXIT_OK  # its one finding is info: no script fails on it
    assert "the math waits on memory" in out and HEALTHY not in out
    assert "No findings above info, but the verdict is not a healthy one: Memory-bandwidth-bound." in out


def test_the_account_bills_the_judged_seconds_not_the_warm_up(capsys: pytest.CaptureFixture[str]) -> None:
    """Every 10-second diagnose billed `Not known yet 4s`."""
    code, out, _ = diagnose(capsys, "--demo", "thermal", "--seconds", "10", "--json")
    account = json.loads(out)["account"]
    assert code == common.EXIT_CRITICAL and account["window_s"] == 10
    for gpu in account["gpus"]:
        assert "unknown" not in gpu["seconds"] and sum(gpu["seconds"].values()) == pytest.approx(10), gpu
    [hot] = [gpu for gpu in account["gpus"] if gpu["gpu"] == 1]
    assert hot["seconds"] == {"throttled": 10}


def test_a_healthy_machine_is_healthy_once_known(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = diagnose(capsys, "--demo", "healthy", "--seconds", "2")
    assert code == common.EXIT_OK and "No findings above info: the GPUs look healthy." in out


class NoActivity:
    """The simulated machine with no GPU's utilization reported: no verdict can be worked out, ever."""

    def __init__(self, scenario: str = "healthy") -> None:
        self.pace = SimulatedTime(1000.0)
        self.inner = SimulatedSource(scenario=scenario, gpu_count=2, seed=0, clock=self.pace.now)

    def open(self) -> SystemInfo:
        return self.inner.open()

    def sample(self) -> Snapshot:
        snap = self.inner.sample()
        return replace(snap, gpus=tuple(replace(gpu, utilization_gpu_pct=None) for gpu in snap.gpus))

    def close(self) -> None:
        pass


def _no_activity(monkeypatch: pytest.MonkeyPatch, scenario: str = "healthy") -> None:
    source = NoActivity(scenario)
    monkeypatch.setattr(builder, "open_source", lambda choice: (source, source.open(), source.pace))


def test_a_verdict_never_known_exits_not_known_whatever_fail_on_says(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _no_activity(monkeypatch)
    for fail_on in ("warning", "critical"):
        code, out, _ = diagnose(capsys, "--seconds", "2", "--fail-on", fail_on)
        assert code == common.EXIT_NOT_KNOWN == 6
        assert "VERDICT  Not known yet" in out and HEALTHY not in out
        assert "No findings yet: collecting readings" in out


def test_a_finding_above_info_decides_even_when_the_verdict_is_not_known(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _no_activity(monkeypatch, "ecc")
    code, out, _ = diagnose(capsys, "--seconds", "2")
    assert code == common.EXIT_CRITICAL and "CRIT" in out and "Not known yet" in out


@pytest.mark.parametrize(
    ("scenario", "fail_on", "code"),
    [
        ("contention", "warning", common.EXIT_WARNINGS),
        ("contention", "critical", common.EXIT_OK),
        ("thermal", "critical", common.EXIT_CRITICAL),
        ("healthy", "critical", common.EXIT_OK),
    ],
)
def test_fail_on_sets_the_least_severity_that_fails(
    capsys: pytest.CaptureFixture[str], scenario: str, fail_on: str, code: int
) -> None:
    assert diagnose(capsys, "--demo", scenario, "--fail-on", fail_on)[0] == code


def test_fail_on_info_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["diagnose", "--demo", "--fail-on", "info"])
    assert exited.value.code == common.EXIT_USAGE
    assert "argument --fail-on: invalid choice: 'info' (choose from 'warning', 'critical')" in capsys.readouterr().err


def test_the_exit_code_from_the_findings_the_threshold_and_what_is_known() -> None:
    warning, critical = Severity.WARNING, Severity.CRITICAL
    assert common.exit_code([Severity.INFO]) == common.EXIT_OK
    assert common.exit_code([Severity.INFO], known=False) == common.EXIT_NOT_KNOWN
    assert common.exit_code([warning], fail_on=critical) == common.EXIT_OK
    assert common.exit_code([warning], fail_on=critical, known=False) == common.EXIT_NOT_KNOWN
    assert common.exit_code([warning, critical], fail_on=critical, known=False) == common.EXIT_CRITICAL


def test_a_condition_not_yet_held_is_watched_not_healthy(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """A throttling GPU whose finding waits for the config's open_after_s: said as watched, in text and JSON."""
    config = tmp_path / "config.toml"
    config.write_text("[diagnostics]\nopen_after_s = 60\n", encoding="utf-8")
    code, out, _ = diagnose(capsys, "--demo", "thermal", "--config", str(config))
    assert code == common.EXIT_OK  # nothing opened: no script fails on a condition still being watched
    assert "watching: GPU 1: thermal throttling (opens in 48 s if it holds)" in out and HEALTHY not in out
    _, out, _ = diagnose(capsys, "--demo", "thermal", "--config", str(config), "--json")
    watched = json.loads(out)["pending"]
    assert {"rule": "thermal_throttle", "gpus": [1], "severity": "critical", "opens_in_s": 48} in [
        {key: value for key, value in p.items() if key != "title"} for p in watched
    ]
