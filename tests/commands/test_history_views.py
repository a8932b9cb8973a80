"""The past, asked of the history store: `diagnose --at`, `report --from/--to`, `replay --since/--at` (issue 39,
items 3 and 5, and its "done when": a past span answers with the findings and verdict the live run had)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gputui import cli
from gputui.commands import replay
from gputui.session.builder import Session

pytestmark = pytest.mark.usefixtures("no_user_config")

# `diagnose --demo` runs on simulated time from 2026-01-01 00:00:00 UTC (sources/sim/source.py FIXED_EPOCH): 5 s of
# warm-up, then the 20 s asked, a reading a second; with the `utc` fixture that is the local time asked below.
LIVE = ["diagnose", "--demo", "thermal", "--seconds", "20"]
FIRST, LAST = "2026-01-01 00:00:00", "2026-01-01 00:00:25"
AT = ["--at", "2026-01-01 00:00:30", "--window", "40s"]


@pytest.fixture
def live(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[Path, int, dict[str, Any]]:
    """A live health check of the simulated thermal machine that also kept its readings in a store: the store,
    the check's exit code and its JSON."""
    store = tmp_path / "history"
    code = cli.main([*LIVE, "--keep-history", "--store", str(store), "--json"])
    return store, code, json.loads(capsys.readouterr().out)


def _judged(document: dict[str, Any]) -> dict[str, Any]:
    """What a health check concludes: the verdict, each finding (what, where, how bad, when), the account."""
    return {
        "verdict": document["verdict"],
        "findings": [
            {key: f[key] for key in ("rule", "variant", "severity", "gpus", "title", "started_at", "ended_at")}
            for f in document["findings"]
        ],
        "account": document["account"],
    }


@pytest.mark.usefixtures("utc")
def test_diagnose_at_answers_for_a_past_span_as_the_live_check_did(
    live: tuple[Path, int, dict[str, Any]], capsys: pytest.CaptureFixture[str]
) -> None:
    store, live_code, live_json = live
    assert live_code == 4 and any(f["rule"] == "thermal_throttle" for f in live_json["findings"])
    code = cli.main(["diagnose", *AT, "--store", str(store), "--json"])
    past = json.loads(capsys.readouterr().out)
    assert code == live_code
    assert _judged(past) == _judged(live_json)
    assert past["history"]["store"] == str(store) and past["history"]["readings"] == 26

    assert cli.main(["diagnose", *AT, "--store", str(store)]) == live_code
    text = capsys.readouterr().out.splitlines()
    assert text[0].startswith("FROM THE HISTORY  2025-12-31 23:59:50 to 2026-01-01 00:00:30 (26 readings)")
    assert str(store) in text[0] and "SIMULATED" in text[1] and text[2].startswith("VERDICT")
    assert "sampled 20 s, after 5 s of collecting readings" in "\n".join(text)


@pytest.mark.usefixtures("utc")
def test_report_of_the_span_lists_the_findings_the_live_check_had(
    live: tuple[Path, int, dict[str, Any]], capsys: pytest.CaptureFixture[str]
) -> None:
    store, _, live_json = live
    assert cli.main(["report", "--store", str(store), "--from", FIRST, "--to", LAST, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["ticks"] == 26
    assert {(f["rule"], tuple(f["gpus"])) for f in report["findings"]} == {
        (f["rule"], tuple(f["gpus"])) for f in live_json["findings"]
    }
    assert cli.main(["report", "--store", str(store), "--from", FIRST, "--to", LAST]) == 0
    assert "thermal throttling" in capsys.readouterr().out


@pytest.mark.usefixtures("utc")
@pytest.mark.parametrize(
    "command",
    [
        ["diagnose", "--at", "2026-01-01 01:00", "--window", "10m"],
        ["report", "--from", "2026-01-01 01:00", "--to", "2026-01-01 02:00"],
        ["replay", "--since", "2026-01-01 01:00"],
    ],
    ids=["diagnose", "report", "replay"],
)
def test_an_empty_span_says_what_the_store_holds(
    live: tuple[Path, int, dict[str, Any]], command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    store, _, _ = live
    assert cli.main([*command, "--store", str(store)]) == 2
    err = capsys.readouterr().err
    assert "holds nothing from 2026-01-01 0" in err and f"it holds {FIRST} to {LAST}" in err


@pytest.mark.parametrize(
    "command",
    [["diagnose", "--at", "03:10"], ["report"], ["replay"], ["report", "--from", "1h ago"], ["history"]],
)
def test_without_a_store_they_say_how_to_start_one(
    tmp_path: Path, command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main([*command, "--store", str(tmp_path / "none")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "start a recorder with `gputui record`" in err


@pytest.mark.parametrize(
    ("command", "said"),
    [
        (["report", "FILE", "--from", "1h ago"], "--from read the history store: give them without FILE"),
        (["report", "FILE", "--store", "DIR"], "--store read the history store"),
        (["replay", "FILE", "--since", "1h ago"], "--since read the history store"),
        (["replay", "FILE", "--at", "03:10"], "--at read the history store"),
        (["diagnose", "--window", "10m"], "--window goes with --at"),
        (["diagnose", "--store", "DIR"], "--store goes with --at"),
        (["diagnose", "--at", "03:10", "--demo"], "cannot be combined with --demo"),
        (["diagnose", "--at", "03:10", "--keep-history"], "cannot be combined with --keep-history"),
    ],
)
def test_store_options_where_they_mean_nothing_are_usage_errors(
    tmp_path: Path, command: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [
        str(tmp_path / "r.jsonl") if word == "FILE" else str(tmp_path) if word == "DIR" else word for word in command
    ]
    assert cli.main(argv) == 2
    assert said in capsys.readouterr().err


@pytest.mark.parametrize("text", ["tomorrow", "25:00", "3 hours ago"])
def test_a_time_that_names_no_past_is_a_usage_error(text: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main(["report", "--from", text])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("gputui: error: argument --from: ") and repr(text) in err and "e.g." in err


class _App:
    """Stands in for the monitor: keeps the session it was given, runs nothing."""

    opened: Session | None = None
    return_code = None

    def __init__(self, session: Session, now: object = None) -> None:
        _App.opened = session

    def run(self) -> None:
        pass


@pytest.mark.usefixtures("utc")
def test_replay_at_plays_from_t_with_the_minutes_before_it_loaded(
    live: tuple[Path, int, dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    store, _, _ = live
    monkeypatch.setattr(replay, "LEAD_IN_S", 10.0)
    monkeypatch.setattr("gputui.ui.app.GpuTuiApp", _App)
    assert cli.main(["replay", "--store", str(store), "--at", "2026-01-01 00:00:15"]) == 0
    assert _App.opened is not None and _App.opened.replay is not None
    played = _App.opened.replay
    assert played.tick_count == 21  # 00:00:05 to 00:00:25
    assert played.position == pytest.approx(10.0, abs=1.0)  # 00:00:15, 10 s after the first tick (it plays on)


def test_replay_span_defaults_to_the_last_hour_and_reads_to_the_end() -> None:
    import argparse

    extent = (0.0, 4e9)
    start, end = replay.history_span(argparse.Namespace(at=None, since=None), extent)
    assert end == 4e9 and abs(start - (_now() - 3600)) < 60
    assert replay.history_span(argparse.Namespace(at=1000.0, since=None), extent) == (700.0, 4e9)
    assert replay.history_span(argparse.Namespace(at=None, since=1000.0), extent) == (1000.0, 4e9)


def _now() -> float:
    import time

    return time.time()
