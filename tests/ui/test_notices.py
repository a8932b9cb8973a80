"""Notices on their own: a minute of rows in snapshot time, then a badge for the ones that stay true."""

from __future__ import annotations

from dataclasses import replace

from gputui.model import XID_UNWATCHED
from gputui.ui.cells import wrap_text
from gputui.ui.notices import NO_DRIVER, Notices, Report, reports
from tests.ui.monitor_helpers import busy_gpu, snapshot

XID = f"{XID_UNWATCHED}: waiting for XID events failed: Unknown Error"


def texts(notices: Notices) -> list[str]:
    return [notice.text for notice in notices.rows()]


def test_a_notice_has_rows_for_a_minute_of_snapshot_time_and_a_lasting_one_keeps_its_badge() -> None:
    notices = Notices()
    notices.observe(100.0, [Report(XID, "warning", "NO XID"), Report("GPU 1: GPU is lost")])
    notices.observe(159.0, [])
    assert texts(notices) == [XID, "GPU 1: GPU is lost"] and notices.badges() == ("NO XID",)
    notices.observe(160.0, [])
    assert texts(notices) == [] and notices.badges() == ("NO XID",)
    assert notices.standing() == (XID,)  # the help still has its whole text; the passing one is forgotten


def test_a_notice_reported_every_tick_still_loses_its_rows_after_a_minute() -> None:
    notices = Notices()
    for t in range(0, 61):
        notices.observe(float(t), [Report("recording stopped: cannot write run.jsonl", "alarm")])
    assert texts(notices) == []
    assert notices.standing() == ("recording stopped: cannot write run.jsonl",)  # still reported: still true


def test_a_notice_that_comes_back_after_a_minute_away_gets_its_rows_again() -> None:
    notices = Notices()
    notices.observe(0.0, [Report("gpu01: the exporter runs but cannot read its GPUs")])
    notices.observe(30.0, [Report("gpu01: the exporter runs but cannot read its GPUs")])
    notices.observe(100.0, [])
    assert texts(notices) == [] and notices.standing() == ()
    notices.observe(200.0, [Report("gpu01: the exporter runs but cannot read its GPUs")])
    assert texts(notices) == ["gpu01: the exporter runs but cannot read its GPUs"]


def test_rows_come_alarm_first() -> None:
    notices = Notices()
    notices.observe(0.0, [Report("tour: now 'thermal'"), Report("driver", "warning"), Report("disk full", "alarm")])
    assert texts(notices) == ["disk full", "driver", "tour: now 'thermal'"]


def test_a_tick_reports_the_recording_the_fallback_and_the_source_events() -> None:
    snap = snapshot(5.0, [busy_gpu(0, 5.0)])
    snap = replace(snap, system=replace(snap.system, fallback_reason="no NVIDIA driver found"), events=(XID, "x"))
    said = reports(snap, "recording stopped at the 10 MB limit")
    assert [(r.level, r.badge) for r in said] == [
        ("alarm", None),
        ("warning", NO_DRIVER),
        ("warning", "NO XID"),
        ("info", None),
    ]
    assert said[1].text == "no live data (no NVIDIA driver found); showing a simulated machine"


def test_wrap_text_keeps_every_word_and_fits_the_width() -> None:
    text = "the NVIDIA driver library and the loaded kernel module are different versions, usually after a upgrade"
    rows = wrap_text(text, 30)
    assert " ".join(rows) == text and all(len(row) <= 30 for row in rows)
    assert "".join(wrap_text("显卡驱动无法读取" * 3, 10)) == "显卡驱动无法读取" * 3


def test_a_word_the_app_says_has_rows_for_a_minute_and_is_no_standing_notice() -> None:
    notices = Notices()
    notices.say("probe-stress failed: RuntimeError: boom", "alarm")  # before the first snapshot: shown at once,
    assert texts(notices) == ["probe-stress failed: RuntimeError: boom"]
    notices.observe(100.0, [])  # and its minute starts with it
    notices.say("mark recorded: workers 8")
    assert texts(notices) == ["probe-stress failed: RuntimeError: boom", "mark recorded: workers 8"]
    assert notices.standing() == ()  # said once, not true for good: the help does not list it
    notices.observe(159.0, [])
    assert len(texts(notices)) == 2
    notices.observe(161.0, [])
    assert texts(notices) == [] and notices.badges() == ()
