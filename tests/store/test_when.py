"""The times people type to ask the history: local times, ages and spans (gputui/store/when.py)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from gputui.store.when import parse_duration, parse_when
from tests.time_zone import local_time_zone


@pytest.fixture
def tokyo() -> Iterator[None]:
    """Local time is UTC+9 (no daylight saving) while the test runs: a zone that is not UTC, so that a parser that
    took UTC for local time fails."""
    with local_time_zone("Asia/Tokyo"):
        yield


# 2026-12-06 09:00:00 in Tokyo (00:00 UTC).
NOW = 1796515200.0


def test_now_is_tokyo_nine_oclock(tokyo: None) -> None:
    assert time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(NOW)) == "2026-12-06 09:00:00"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("03:10", NOW - (5 * 3600 + 50 * 60)),  # this morning's
        ("09:00", NOW),  # now itself is not after now
        ("09:00:01", NOW - 86400 + 1),  # a second later today: yesterday's
        ("23:00", NOW - 10 * 3600),  # last night's
        ("3:10:30", NOW - (5 * 3600 + 49 * 60 + 30)),
        ("2026-12-06 03:10", NOW - (5 * 3600 + 50 * 60)),
        ("2026-12-05 23:00:15", NOW - 10 * 3600 + 15),
        ("2026-12-05T23:00", NOW - 10 * 3600),
    ],
)
def test_local_times_are_the_machines(tokyo: None, text: str, expected: float) -> None:
    assert parse_when(text, NOW) == expected


@pytest.mark.parametrize(
    ("text", "age"),
    [("3h ago", 3 * 3600), ("90m ago", 90 * 60), ("2d ago", 2 * 86400), ("45s ago", 45), ("1h30m ago", 5400)],
)
def test_ages_count_back_from_now(text: str, age: float) -> None:
    assert parse_when(text, NOW) == NOW - age
    assert parse_when(f"  {text.upper()} ", NOW) == NOW - age


def test_now_is_now() -> None:
    assert parse_when("now", NOW) == NOW


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("yesterday", "not a time"),
        ("25:00", "no such time of day"),
        ("03:61", "no such time of day"),
        ("2026-02-30 03:10", "no such date"),
        ("2026-12-07 03:10", "in the future"),
        ("3 hours ago", "not an age"),
        ("ago", "not an age"),
        ("", "not a time"),
    ],
)
def test_what_names_no_past_time_is_said(tokyo: None, text: str, said: str) -> None:
    with pytest.raises(ValueError, match=said):
        parse_when(text, NOW)


@pytest.mark.parametrize(
    ("text", "seconds"), [("10m", 600), ("90s", 90), ("2h", 7200), ("1h30m", 5400), ("1d", 86400), ("0.5h", 1800)]
)
def test_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["10", "m", "-5m", "10 minutes", "0s", ""])
def test_what_is_not_a_duration_is_said(text: str) -> None:
    with pytest.raises(ValueError, match="duration"):
        parse_duration(text)
