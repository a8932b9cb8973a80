"""The monitor's pure parts: text helpers, line diffs, the command's errors (the sampling loop: tests/session/)."""

from __future__ import annotations

import pytest

from gputui.cli import main
from gputui.model import decode_clock_event_reasons
from gputui.sources.base import SourceUnavailable
from gputui.ui import cells as text
from gputui.ui.widgets.gpu_panel import UtilBuckets
from gputui.ui.widgets.host import core_lines
from gputui.ui.widgets.lines import changed_span
from tests.ui.monitor_helpers import MARKS, plain


def test_missing_values_are_na() -> None:
    assert text.fmt_pcie(None, None) == "n/a"
    assert text.fmt_pstate(None) == "n/a"
    assert text.bar(None, 4) == "????"


def test_numbers_are_short() -> None:
    assert text.fmt_pcie(5, 16) == "Gen5 x16"
    assert text.fmt_pstate(0) == "P0"
    assert text.bar(0.5, 4) == "||  "


def test_idle_is_not_a_problem_tag_and_bad_reasons_come_first() -> None:
    reasons = decode_clock_event_reasons(0x1 | 0x4 | 0x40 | 0x400)
    assert [tag for tag, _ in text.reason_tags(reasons)] == ["HW-THERM", "PWR-CAP", "0x400"]
    assert text.reason_tags(decode_clock_event_reasons(0x1)) == []


def test_temperature_grades_against_the_slowdown_threshold() -> None:
    assert MARKS.temperature(60, 89) == "green"
    assert MARKS.temperature(78, 89) == "green"
    assert MARKS.temperature(82, 89) == "yellow"
    assert MARKS.temperature(86, 89) == "bold red"  # within thermal_margin's 5 C: the clocks are about to go
    assert MARKS.temperature(92, 100) == "yellow"
    assert MARKS.temperature(92, None) == ""  # no threshold: not judged, as thermal_margin does not judge it


def test_sparklines_and_charts_use_only_block_characters_and_show_gaps() -> None:
    line = text.sparkline([0.0, 50.0, None, 100.0], 6)
    assert line == "  ▁▅ █"
    rows = text.chart_rows([100.0, 50.0, None], 3, 2, 100.0)
    assert rows == ["█  ", "██ "]
    assert set("".join(rows)) <= set(text.SPARK_CHARS + " ")


def test_util_buckets_average_within_a_bucket_and_leave_gaps() -> None:
    buckets = UtilBuckets(bucket_s=5.0, cells=10)
    buckets.add(0.0, 10.0)
    buckets.add(1.0, 30.0)
    buckets.add(12.0, 50.0)
    assert buckets.values == [20.0, None, 50.0]


def test_many_cores_become_a_wrapped_strip_and_few_are_numbers() -> None:
    strip = core_lines([50.0] * 128, 120, MARKS)
    assert len(strip) == 2 and sum(len(part[1][0]) for part in strip) == 128
    numbers = plain(core_lines([5.0, 95.0], 120, MARKS))
    assert numbers == "CPU    5  95 "


def test_changed_span_covers_only_the_parts_that_differ() -> None:
    old = [("UTIL ", "dim"), (" 50%", "green"), ("  SM ", "dim"), ("1980", "")]
    new = [("UTIL ", "dim"), (" 51%", "green"), ("  SM ", "dim"), ("1980", "")]
    assert changed_span(old, new) == (5, 9)
    assert changed_span(old, list(old)) is None
    assert changed_span(old, [*old, (" HOT", "red")]) == (18, 22)
    assert changed_span(old, [("UTIL ", "dim"), (" 50%", "red"), *old[2:]]) == (5, 9)  # a style change counts
    moved = [("UTIL ", "dim"), (" 100%", "green"), ("  SM ", "dim"), ("1980", "")]
    assert changed_span(old, moved) == (5, 19)  # the equal parts after it moved right: repainted too
    assert changed_span(moved, old) == (5, 19)  # and the cell they leave is blanked


@pytest.mark.parametrize("interval", ["0.1", "11"])
def test_an_interval_outside_the_bounds_is_a_usage_error(interval: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--demo", "healthy", "--interval", interval])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "argument --interval: must be between 0.25 and 10 seconds" in err and err.count("\n") == 1


def test_a_simulated_machine_needs_a_gpu(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--demo", "healthy", "--demo-gpus", "0"])
    assert exited.value.code == 2
    assert "--demo-gpus: must be greater than 0" in capsys.readouterr().err


def test_no_driver_exits_3_with_the_reason(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from gputui.session import builder

    def unavailable(*args: object, **kwargs: object) -> None:
        raise SourceUnavailable("NVML library not found (libnvidia-ml.so.1)")

    monkeypatch.setattr(builder, "open_source", unavailable)
    assert main([]) == 3
    err = capsys.readouterr().err
    assert "libnvidia-ml.so.1" in err and "--demo" in err


@pytest.mark.parametrize("argv", [["--demo", "list"], ["diagnose", "--demo", "list"]])
def test_demo_list_describes_every_scenario_and_exits_0(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    from gputui.sources.sim.scenarios import SCENARIO_DESCRIPTIONS

    assert main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines] == list(SCENARIO_DESCRIPTIONS)
    assert all(SCENARIO_DESCRIPTIONS[line.split()[0]] in line for line in lines)
