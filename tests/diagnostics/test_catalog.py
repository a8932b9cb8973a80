"""The message catalog: Chinese covers every English key with the same placeholders; the language choice."""

from __future__ import annotations

import string

import pytest

from gputui.diagnostics.catalog import MESSAGES, resolve_lang, text
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


@pytest.mark.parametrize(
    ("explicit", "env", "lang"),
    [
        ("zh", {"LANG": "en_US.UTF-8"}, "zh"),
        ("en", {"LANG": "zh_CN.UTF-8"}, "en"),
        (None, {"LANG": "zh_CN.UTF-8"}, "zh"),
        (None, {"LC_ALL": "zh_TW.UTF-8", "LANG": "en_US.UTF-8"}, "zh"),
        (None, {"LC_ALL": "C", "LANG": "zh_CN.UTF-8"}, "en"),
        (None, {}, "en"),
    ],
)
def test_language_from_the_flag_then_the_locale(explicit: str | None, env: dict[str, str], lang: str) -> None:
    assert resolve_lang(explicit, env) == lang


def test_unknown_language_is_an_error() -> None:
    with pytest.raises(ValueError, match="unknown language 'fr'"):
        resolve_lang("fr", {})
