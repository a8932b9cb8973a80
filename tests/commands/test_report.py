"""`gputui report` and `gputui replay` from the command line: output, exit codes, one-line errors."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any, ClassVar

import pytest

from gputui import cli
from gputui.config import Config
from gputui.record.format import mark_event
from gputui.session.builder import session_on
from gputui.sources.playback import ReplaySource
from tests.record.recdata import T0, snapshot, write_recording


def _recording(tmp_path: Path) -> Path:
    snaps = [snapshot(T0 + i, 2, util=float(i)) for i in range(120)]
    return write_recording(tmp_path / "r.jsonl", snaps, events=(mark_event("lr drop", T0 + 30),))


def test_report_prints_text(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["report", str(_recording(tmp_path))]) == 0
    out = capsys.readouterr().out
    assert "GPU 0  NVIDIA H100 80GB HBM3" in out and "lr drop" in out


def test_report_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["report", str(_recording(tmp_path)), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["ticks"] == 120 and data["gpus"][0]["utilization_pct"]["maximum"] == 119.0
    assert data["marks"] == [{"t": T0 + 30, "label": "lr drop"}]


def test_report_html(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "r.html"
    assert cli.main(["report", str(_recording(tmp_path)), "--html", str(out)]) == 0
    assert out.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert f"wrote {out}" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["report", "replay"])
def test_a_missing_file_is_one_line_and_exit_2(
    tmp_path: Path, command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main([command, str(tmp_path / "nope.jsonl")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no such recording" in err


@pytest.mark.parametrize("command", ["report", "replay"])
def test_a_header_without_samples_is_one_line_and_exit_2(
    tmp_path: Path, command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _recording(tmp_path)
    path.write_text(path.read_text().splitlines(keepends=True)[0])
    assert cli.main([command, str(path)]) == 2
    assert capsys.readouterr().err == (
        f"gputui: error: {path} has a header but no samples: the recorder stopped before its first tick\n"
    )


def test_a_header_whose_lines_are_all_unreadable_says_why_there_are_no_samples(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _recording(tmp_path)
    path.write_text(path.read_text().splitlines(keepends=True)[0] + '{"type": "tick"}\n')
    assert cli.main(["report", str(path)]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"gputui: warning: {path}: skipped 1 unreadable line (first: line 2: a tick's gpus must be a list of objects)",
        f"gputui: error: {path} has a header but no samples",
    ]


def test_report_warns_on_a_damaged_file_and_goes_on(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _recording(tmp_path)
    path.write_text(path.read_text()[:-100])
    assert cli.main(["report", str(path)]) == 0
    out = capsys.readouterr().out
    assert "2.0 min, 119 ticks every 1 s" in out and "GPU 1  NVIDIA H100 80GB HBM3  (119 samples, 0 lost)" in out
    assert out.rstrip().endswith(
        f"warning: {path}: the last line (line 122) is cut short, as when the recorder is killed mid-write; "
        "read the 119 ticks before it"
    )


class FakeApp:
    """Stands in for the Textual app: records what the command hands it."""

    made: ClassVar[list[FakeApp]] = []

    def __init__(self, session: Any, *, now: Any) -> None:
        self.source, self.system, self.interval, self.now = session.source, session.system, session.interval_s, now
        self.first: Any = None
        self.clock: Any = None
        self.return_code = None
        FakeApp.made.append(self)

    def run(self) -> None:
        """What the app would show first, while its session is open: the replay's reading at the start asked for,
        and the clock of the header."""
        self.source.pause()
        self.first = self.source.sample()
        self.clock = self.now()


@pytest.fixture
def fake_app(monkeypatch: pytest.MonkeyPatch) -> type[FakeApp]:
    import gputui.ui.app

    FakeApp.made = []
    monkeypatch.setattr(gputui.ui.app, "GpuTuiApp", FakeApp)
    return FakeApp


def test_replay_runs_the_monitor_on_a_replay_source(tmp_path: Path, fake_app: type[FakeApp]) -> None:
    assert cli.main(["replay", str(_recording(tmp_path)), "--speed", "4", "--start", "+1:00"]) == 0
    app = fake_app.made[0]
    assert isinstance(app.source, ReplaySource) and app.system.source == "replay"
    assert app.source.speed == 4.0 and app.interval == 1.0
    assert app.first.timestamp == T0 + 60
    assert app.clock == datetime(2026, 5, 28, 20, 27, 40)  # the recording's clock, not this machine's


def test_replay_start_outside_the_recording(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["replay", str(_recording(tmp_path)), "--start", "03:00:00"]) == 2
    assert "not in the recording: it runs from 20:26:40 to 20:28:39" in capsys.readouterr().err


def test_replay_bad_speed_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["replay", str(_recording(tmp_path)), "--speed", "1000"])
    assert exit_info.value.code == 2 and "speed must be between 0.25 and 64" in capsys.readouterr().err


async def test_the_monitor_shows_a_replay_with_its_badge_and_recorded_time(tmp_path: Path) -> None:
    from gputui.ui.app import GpuTuiApp
    from gputui.ui.widgets.header import badges

    source = ReplaySource(_recording(tmp_path), start=65.0)
    system = source.open()
    source.pause()
    app = GpuTuiApp(session_on(source, system, Config()), auto_sample=False, now=source.recording_now)
    async with app.run_test(size=(120, 40)):
        tick = await app.tick()
        assert tick.snapshot.timestamp == T0 + 65
        state = app.main.header.state
        assert state is not None and state.clock == "20:27:45"  # the recording's clock
        assert ("REPLAY", "bold black on magenta") in badges(state.system, paused=False)
