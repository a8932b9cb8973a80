"""The language choice: the `--lang` flag first, then the locale."""

from __future__ import annotations

import pytest

from gputui.diagnostics.locale import resolve_lang


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
