"""The message catalog: Chinese covers every English key with the same placeholders; every rule has its
title and advice in every language; the lookup falls back to English."""

from __future__ import annotations

import string
from collections.abc import Mapping

import pytest

from gputui.diagnostics.catalog import MESSAGES, severity_label, text
from gputui.diagnostics.findings import Severity
from gputui.diagnostics.fleet_rules import FLEET_RULE_IDS
from gputui.diagnostics.locale import LANGS
from gputui.diagnostics.rules import RULE_IDS


def fields(template: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(template) if name}


def variants(table: Mapping[str, str], rule: str, part: str) -> set[str]:
    """The variants of a rule's title or advice in `table`: "" for `<rule>.<part>`, "x" for `<rule>.<part>.x`."""
    prefix = f"{rule}.{part}"
    return {key[len(prefix) + 1 :] for key in table if key == prefix or key.startswith(f"{prefix}.")}


def test_chinese_has_every_english_key_and_no_other() -> None:
    assert set(MESSAGES["zh"]) == set(MESSAGES["en"])


@pytest.mark.parametrize("key", sorted(MESSAGES["en"]))
def test_both_languages_use_the_same_placeholders(key: str) -> None:
    assert fields(MESSAGES["zh"][key]) == fields(MESSAGES["en"][key])


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("rule", sorted(RULE_IDS | set(FLEET_RULE_IDS)))
def test_every_rule_has_a_title_and_advice_for_each_variant_in_every_language(rule: str, lang: str) -> None:
    titles = variants(MESSAGES[lang], rule, "title")
    assert titles, (rule, lang)
    assert variants(MESSAGES[lang], rule, "advice") == titles, (rule, lang)


def test_fleet_rule_ids_are_not_node_rule_ids() -> None:
    """`straggler` and `idle_allocated` live beside the node rules in one JSON: one id, one meaning."""
    assert not set(FLEET_RULE_IDS) & RULE_IDS


def test_text_fills_placeholders() -> None:
    assert text("xid.title", "en", gpu=3, codes="79") == "GPU 3: XID error 79"
    assert text("xid.title", "zh", gpu=3, codes="79") == "GPU 3：XID 错误 79"


def test_an_unknown_language_falls_back_to_english() -> None:
    assert text("xid.title", "fr", gpu=3, codes="79") == "GPU 3: XID error 79"


@pytest.mark.parametrize("missing", ["deleted", "empty"])
def test_a_message_a_language_lacks_falls_back_to_english(monkeypatch: pytest.MonkeyPatch, missing: str) -> None:
    if missing == "deleted":
        monkeypatch.delitem(MESSAGES["zh"], "xid.title")
    else:
        monkeypatch.setitem(MESSAGES["zh"], "xid.title", "")
    assert text("xid.title", "zh", gpu=3, codes="79") == "GPU 3: XID error 79"


def test_an_unknown_key_is_an_error() -> None:
    with pytest.raises(KeyError):
        text("no_such_rule.title", "zh")


def test_a_severity_label_is_padded_to_terminal_cells_not_characters() -> None:
    assert severity_label(Severity.WARNING, "en") == "WARN"
    assert severity_label(Severity.CRITICAL, "zh", width=6) == "严重  "  # two wide characters fill four cells
