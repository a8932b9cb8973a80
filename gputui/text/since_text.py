"""The monitor's "since you looked" line: what the history store says held the GPUs back while nobody watched.

"since 22:14: Input-bound 2 h 10 min on GPUs 0-7, heat 12 min on GPU 3", built from the per-minute tier's seconds
(a verdict class's, a finding's) summed over the minutes since the user last looked, the largest first. Verdict
classes are named as the verdict names them, findings by the words the verdict gives their cause. Where the store
holds no minute since then, it says no recorder ran; where the minutes hold no verdict or finding, that nothing
was recorded: never a quiet line that could read as "all was well".
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from typing import Protocol

from gputui.diagnostics.catalog import has_text, text
from gputui.diagnostics.verdict import gpu_list

# The items the line names at most; the rest are counted ("and 2 more").
SHOWN_ITEMS = 3
# An item open for less than this many seconds in all is left out: a blip is not what happened overnight.
LEAST_S = 30.0
# Below this share of the span recorded, the line says how much of it was.
COVERED_SHARE = 0.9
MINUTE_S = 60.0
# The verdict class that says nothing: not named as a thing that happened.
UNKNOWN_CLASS = "unknown"

TEXTS: Mapping[str, Mapping[str, str]] = {
    "en": {
        "line": "since {since}: {items}",
        "more": "and {count} more",
        "item": "{what} {duration} on {gpus}",
        "item.host": "{what} {duration}",
        "separator": ", ",
        "covered": " (recorded {recorded} of {span})",
        "nothing": "since {since}: nothing recorded (no verdict or finding in {recorded} of history)",
        "no_recorder": "no recorder ran since {since}: no history of that time (`gputui record` keeps it)",
        "no_summary": "since {since}: ticks recorded, but no per-minute summary of them to sum up here",
        "hours": "{h} h {m} min",
        "hours.even": "{h} h",
        "minutes": "{m} min",
        "under_minute": "<1 min",
    },
    "zh": {
        "line": "自 {since} 起：{items}",
        "more": "另有 {count} 项",
        "item": "{what} {duration}（{gpus}）",
        "item.host": "{what} {duration}",
        "separator": "，",
        "covered": "（{span} 中记录了 {recorded}）",
        "nothing": "自 {since} 起：没有记录到结论或问题（共 {recorded} 的历史）",
        "no_recorder": "自 {since} 起没有记录器运行：没有那段时间的历史（`gputui record` 会记录）",
        "no_summary": "自 {since} 起：有逐秒记录，但没有可汇总的逐分钟摘要",
        "hours": "{h} 小时 {m} 分钟",
        "hours.even": "{h} 小时",
        "minutes": "{m} 分钟",
        "under_minute": "不到 1 分钟",
    },
}


class MinuteSeconds(Protocol):
    """What the line needs of one row of the store's per-minute tier (store.reader.MinuteRow)."""

    @property
    def ticks(self) -> int: ...
    @property
    def verdict_s(self) -> Mapping[tuple[str, tuple[int, ...]], float]: ...
    @property
    def finding_s(self) -> Mapping[tuple[str, tuple[int, ...]], float]: ...


def _t(key: str, lang: str, **params: object) -> str:
    table = TEXTS.get(lang, TEXTS["en"])
    return table.get(key, TEXTS["en"][key]).format(**params)


def duration_words(seconds: float, lang: str = "en") -> str:
    """'2 h 10 min', '12 min', '<1 min': to the minute, as a night's figures are read."""
    minutes = round(seconds / MINUTE_S)
    if minutes < 1:
        return _t("under_minute", lang)
    hours, minutes = divmod(minutes, 60)
    if not hours:
        return _t("minutes", lang, m=minutes)
    return _t("hours", lang, h=hours, m=minutes) if minutes else _t("hours.even", lang, h=hours)


def since_clock(since: float, now: float) -> str:
    """The local time the user last looked: '22:14' the same day, else '2026-12-05 22:14'."""
    then, today = time.localtime(since), time.localtime(now)
    same_day = (then.tm_year, then.tm_yday) == (today.tm_year, today.tm_yday)
    return time.strftime("%H:%M" if same_day else "%Y-%m-%d %H:%M", then)


def class_name(cls: str, lang: str = "en") -> str:
    """A verdict class as the verdict labels it ("Input-bound"); an id this gputui does not know, as it is."""
    key = f"verdict.{cls}"
    return text(key, lang) if has_text(key) else cls


def finding_name(finding_id: str, lang: str = "en") -> str:
    """A finding by the words the verdict gives its cause ("heat"): its rule's, or its variant's ("rule.variant");
    an id this gputui has no words for, as it is."""
    for key in (f"{finding_id}.cause", f"{finding_id.partition('.')[0]}.cause"):
        if has_text(key):
            return text(key, lang)
    return finding_id


def _summed(rows: Iterable[Mapping[tuple[str, tuple[int, ...]], float]]) -> dict[tuple[str, tuple[int, ...]], float]:
    out: dict[tuple[str, tuple[int, ...]], float] = {}
    for seconds in rows:
        for key, value in seconds.items():
            out[key] = out.get(key, 0.0) + value
    return out


def since_line(
    rows: Iterable[MinuteSeconds], since: float, now: float, lang: str = "en", *, ticks_held: bool = False
) -> str:
    """The one line: the few largest verdict classes and findings since `since`, each with its GPUs; or that no
    recorder ran, or that nothing was recorded. `rows` are the minutes from `since` to `now`; `ticks_held`: the
    tick tier holds ticks of that time (no minute rows then is no summary, not no recorder)."""
    rows = list(rows)
    clock = since_clock(since, now)
    recorded_s = sum(MINUTE_S for row in rows if row.ticks > 0)
    if not recorded_s:
        return _t("no_summary" if ticks_held else "no_recorder", lang, since=clock)
    verdicts = _summed(row.verdict_s for row in rows)
    findings = _summed(row.finding_s for row in rows)
    items = [(s, class_name(cls, lang), gpus) for (cls, gpus), s in verdicts.items() if cls != UNKNOWN_CLASS]
    items += [(s, finding_name(rule, lang), gpus) for (rule, gpus), s in findings.items()]
    items = sorted((item for item in items if item[0] >= LEAST_S), key=lambda item: -item[0])
    if not items:
        return _t("nothing", lang, since=clock, recorded=duration_words(recorded_s, lang))
    words = [
        _t("item", lang, what=what, duration=duration_words(s, lang), gpus=gpu_list(gpus, lang))
        if gpus
        else _t("item.host", lang, what=what, duration=duration_words(s, lang))
        for s, what, gpus in items[:SHOWN_ITEMS]
    ]
    if len(items) > SHOWN_ITEMS:
        words.append(_t("more", lang, count=len(items) - SHOWN_ITEMS))
    line = _t("line", lang, since=clock, items=_t("separator", lang).join(words))
    span_s = max(0.0, now - since)
    if span_s > 0 and recorded_s < COVERED_SHARE * span_s:
        line += _t("covered", lang, recorded=duration_words(recorded_s, lang), span=duration_words(span_s, lang))
    return line
