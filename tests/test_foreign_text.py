"""Other users' text, made safe where it enters: no character that steers a terminal survives, and all else stays."""

from __future__ import annotations

import pytest

from gputui.foreign_text import clean, clean_all, clean_optional, is_clean

HOSTILE = "\x1b]0;PWNED\x07\x1b[2J\x9b31m\u202egnp.exe\u2066x\u2028y\x00\x7f"


def test_every_control_separator_and_bidi_character_becomes_a_visible_escape() -> None:
    shown = clean(HOSTILE)
    assert shown == "\\x1b]0;PWNED\\x07\\x1b[2J\\x9b31m\\u202egnp.exe\\u2066x\\u2028y\\x00\\x7f"
    assert all(0x20 <= ord(c) < 0x7F for c in shown)


@pytest.mark.parametrize(
    "code",
    [*range(0x20), 0x7F, *range(0x80, 0xA0), 0x061C, 0x200E, 0x200F, 0x202A, 0x202E, 0x2066, 0x2069, 0x2028, 0x2029],
)
def test_each_dangerous_character_is_replaced(code: int) -> None:
    assert chr(code) not in clean(f"a{chr(code)}b")
    assert not is_clean(f"a{chr(code)}b")


def test_ordinary_text_in_any_script_is_left_as_it_is() -> None:
    for text in ("python train.py --lr 3e-4", "训练任务 数据加载", "naïve café ÿ", "ä\u00a0b", "emoji 🚀", ""):
        assert clean(text) == text and is_clean(text)


def test_the_line_a_newline_would_have_forged_stays_one_line() -> None:
    assert clean("ok\nFAKE 99999") == "ok\\nFAKE 99999"
    assert clean_all(["a\tb", "c\rd"]) == ("a\\tb", "c\\rd")


def test_none_stays_none_so_that_unreported_is_never_empty_text() -> None:
    assert clean_optional(None) is None
    assert clean_optional("\x1b") == "\\x1b"


def test_a_command_lines_undecodable_bytes_become_visible_escapes_not_raw_bytes() -> None:
    """psutil reads argv with surrogateescape: byte 0x9b (CSI to an 8-bit terminal) arrives as U+DC9B, which would
    reach a terminal as the raw byte, and which a UTF-8 recording would refuse to encode."""
    shown = clean(b"x\x9b2J\xff".decode("utf-8", "surrogateescape"))
    assert shown == "x\\udc9b2J\\udcff"
    shown.encode("utf-8")  # a recording or a JSON answer can hold it
    assert not is_clean("\ud800")
