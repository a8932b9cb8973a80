"""The languages the diagnostics speak, and which one to use: `--lang` when given, else the user's locale.

Apart from the catalog because choosing a language reads the environment, while looking a message up does not.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Literal

Lang = Literal["en", "zh"]
LANGS: tuple[Lang, ...] = ("en", "zh")

# Messages by key, in every language: the shape of the catalog's shared words and of each rule family's.
Texts = Mapping[Lang, Mapping[str, str]]


def resolve_lang(explicit: str | None = None, environ: Mapping[str, str] | None = None) -> Lang:
    """`--lang` when given, else Chinese when the locale (LC_ALL, LC_MESSAGES, LANG) starts with `zh`."""
    if explicit is not None:
        if explicit not in LANGS:
            raise ValueError(f"unknown language {explicit!r} (choose from {', '.join(LANGS)})")
        return "zh" if explicit == "zh" else "en"
    env = os.environ if environ is None else environ
    for name in ("LC_ALL", "LC_MESSAGES", "LANG"):
        value = env.get(name)
        if value:
            return "zh" if value.lower().startswith("zh") else "en"
    return "en"
