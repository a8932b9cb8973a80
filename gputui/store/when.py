"""The times people type to ask the history: the machine's local time (`03:10`, `2026-12-06 03:10`), an age
(`3h ago`) or `now`, and the spans (`10m`, `1h30m`).

Local time is this machine's (time.localtime), as the recorder's chunks and every view show it. A bare time of day
is the latest such time not after now: at 09:00, `03:10` is this morning's, and `23:00` last night's, the one a
person asking about "last night" means.
"""

from __future__ import annotations

import datetime
import re

_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_DURATION = re.compile(r"(?:\d+(?:\.\d+)?[smhd])+")
_PART = re.compile(r"(\d+(?:\.\d+)?)([smhd])")
_CLOCK = re.compile(r"(\d{1,2}):(\d{2})(?::(\d{2}))?")
_DATE = re.compile(r"(\d{4})-(\d{2})-(\d{2})[ t]+(\d{1,2}):(\d{2})(?::(\d{2}))?")
_EXAMPLES = "e.g. 03:10, 2026-12-06 03:10, 3h ago, now"


def parse_duration(text: str) -> float:
    """`10m`, `90s`, `2h`, `1d`, `1h30m` -> seconds, above 0; ValueError with a sentence otherwise."""
    value = text.strip().lower().replace(" ", "")
    if not _DURATION.fullmatch(value):
        raise ValueError(f"not a duration: {text!r} (e.g. 10m, 90s, 2h, 1h30m)")
    seconds = sum(float(number) * _UNITS[unit] for number, unit in _PART.findall(value))
    if seconds <= 0:
        raise ValueError(f"a duration must be longer than 0: {text!r}")
    return seconds


def parse_when(text: str, now: float) -> float:
    """The UTC epoch second `text` names, as the machine's local time or an age before `now`; ValueError with a
    sentence for what names no time, or a time after `now`."""
    value = " ".join(text.strip().lower().split())
    if value == "now":
        return now
    if value.endswith(" ago") or value.endswith("ago"):
        age = value.removesuffix("ago").strip()
        try:
            return now - parse_duration(age)
        except ValueError:
            raise ValueError(f"not an age: {text!r} (e.g. 3h ago, 90m ago, 2d ago)") from None
    clock = _CLOCK.fullmatch(value)
    if clock is not None:
        return _latest_clock(text, now, *(int(part or 0) for part in clock.groups()))
    dated = _DATE.fullmatch(value)
    if dated is not None:
        year, month, day, hour, minute, second = (int(part or 0) for part in dated.groups())
        try:
            at = datetime.datetime(year, month, day, hour, minute, second).timestamp()  # naive: local time
        except ValueError:
            raise ValueError(f"no such date or time: {text!r} ({_EXAMPLES})") from None
        if at > now:
            raise ValueError(f"{text!r} is in the future: the history holds only the past")
        return at
    raise ValueError(f"not a time: {text!r} ({_EXAMPLES})")


def _latest_clock(text: str, now: float, hour: int, minute: int, second: int) -> float:
    """The latest local `hour:minute:second` not after `now`: today's, else yesterday's."""
    try:
        clock = datetime.time(hour, minute, second)
    except ValueError:
        raise ValueError(f"no such time of day: {text!r} ({_EXAMPLES})") from None
    today = datetime.datetime.fromtimestamp(now).date()
    at = datetime.datetime.combine(today, clock).timestamp()
    if at > now:
        at = datetime.datetime.combine(today - datetime.timedelta(days=1), clock).timestamp()
    return at
