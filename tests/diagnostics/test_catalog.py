"""The message catalog: Chinese covers every English key with the same placeholders."""

from __future__ import annotations

import string

import pytest

from gputui.diagnostics.catalog import MESSAGES, text
from gputui.diagnostics.rules import RULE_IDS


def fields(template: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(template) if name}


def test_chinese_has_every_english_key_and_no_other() -> None:
    assert set(MESSAGES["zh"]) == set(MESSAGES["en"])


@pytest.mark.parametrize("key", sorted(MESSAGES["en"]))
def test_both_languages_use_the_same_placeholders(key: str) -> None:
    assert fields(MESSAGES["zh"][key]) == fields(MESSAGES["en"][key])


def test_every_rule_has_a_title_and_advice() -> None:
    for rule in RULE_IDS:
        assert any(key.startswith(f"{rule}.title") for key in MESSAGES["en"]), rule
        assert any(key.startswith(f"{rule}.advice") for key in MESSAGES["en"]), rule


def test_text_fills_placeholders() -> None:
    assert text("xid.title", "en", gpu=3, codes="79") == "GPU 3: XID error 79"
    assert text("xid.title", "zh", gpu=3, codes="79") == "GPU 3：XID 错误 79"
