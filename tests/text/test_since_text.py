"""The since-you-looked line, on its own: what it names, in what order, and what it says when there is nothing."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field

import pytest

from gputui.text.since_text import duration_words, since_clock, since_line

pytestmark = pytest.mark.usefixtures("utc")

# 2026-12-05 22:14 UTC (local time is UTC: the `utc` fixture), and 9 h later.
SINCE = 1796508840.0
NOW = SINCE + 9 * 3600


@dataclass(frozen=True)
class Row:
    start: float
    ticks: int = 60
    verdict_s: Mapping[tuple[str, tuple[int, ...]], float] = field(default_factory=dict)
    finding_s: Mapping[tuple[str, tuple[int, ...]], float] = field(default_factory=dict)


def night(minutes: int, **seconds: Mapping[tuple[str, tuple[int, ...]], float]) -> list[Row]:
    return [Row(SINCE + 60 * m, **seconds) for m in range(minutes)]  # type: ignore[arg-type]


def test_the_clock_is_local_and_dated_on_another_day() -> None:
    assert time.strftime("%H:%M", time.localtime(SINCE)) == "22:14"
    assert since_clock(SINCE, SINCE + 3600) == "22:14"
    assert since_clock(SINCE, NOW) == "2026-12-05 22:14"


def test_durations_to_the_minute() -> None:
    assert duration_words(7800) == "2 h 10 min"
    assert duration_words(720) == "12 min"
    assert duration_words(3600) == "1 h"
    assert duration_words(20) == "<1 min"
    assert duration_words(7800, "zh") == "2 小时 10 分钟"


def test_the_largest_first_named_in_the_monitors_words() -> None:
    gpus = tuple(range(8))
    rows = [
        Row(SINCE + 60 * m, verdict_s={("input_bound", gpus): 60.0}, finding_s={("thermal_throttle", (3,)): 60.0})
        for m in range(12)
    ]
    rows += [Row(SINCE + 60 * m, verdict_s={("input_bound", gpus): 60.0}) for m in range(12, 130)]
    line = since_line(rows, SINCE, SINCE + 130 * 60)
    assert line == "since 2026-12-05 22:14: Input-bound 2 h 10 min on GPUs 0-7, heat 12 min on GPU 3"


def test_at_most_three_items_and_the_rest_counted() -> None:
    rows = [
        Row(SINCE, verdict_s={("input_bound", (0,)): 400.0, ("throttled", (1,)): 300.0, ("idle", (2,)): 200.0}),
        Row(SINCE + 60, finding_s={("thermal_throttle", (1,)): 100.0, ("xid", (2,)): 10.0}),
    ]
    line = since_line(rows, SINCE, SINCE + 120)
    assert line == "since 22:14: Input-bound 7 min on GPU 0, Throttled 5 min on GPU 1, Idle 3 min on GPU 2, and 1 more"


def test_no_minutes_says_no_recorder_ran() -> None:
    assert since_line([], SINCE, NOW).startswith("no recorder ran since 2026-12-05 22:14")
    assert since_line([Row(SINCE, ticks=0)], SINCE, SINCE + 60).startswith("no recorder ran since 22:14")


def test_ticks_without_minutes_are_no_summary_not_no_recorder() -> None:
    line = since_line([], SINCE, SINCE + 60, ticks_held=True)
    assert line == "since 22:14: ticks recorded, but no per-minute summary of them to sum up here"


def test_minutes_without_a_verdict_say_nothing_was_recorded_never_healthy() -> None:
    line = since_line(night(30, verdict_s={("unknown", (0,)): 60.0}), SINCE, SINCE + 1800)
    assert line == "since 22:14: nothing recorded (no verdict or finding in 30 min of history)"


def test_a_partial_night_says_how_much_was_recorded() -> None:
    line = since_line(night(60, verdict_s={("gpu_bound", (0, 1)): 60.0}), SINCE, NOW)
    assert line == "since 2026-12-05 22:14: GPU-bound 1 h on GPUs 0-1 (recorded 1 h of 9 h)"


@pytest.mark.parametrize("finding", ["starvation_cpu", "starvation_cpu.too_few_workers"])
def test_chinese(finding: str) -> None:
    rows = night(12, finding_s={(finding, (3,)): 60.0})
    assert since_line(rows, SINCE, SINCE + 720, "zh") == "自 22:14 起：CPU 12 分钟（GPU 3）"


def test_an_unknown_id_is_named_as_it_is() -> None:
    rows = night(2, finding_s={("rule_of_a_newer_gputui", ()): 60.0})
    assert since_line(rows, SINCE, SINCE + 120) == "since 22:14: rule_of_a_newer_gputui 2 min"
