"""What a value in the config file may be: the checks that every table's settings name, and their words when a value
is wrong.

A setting is a dataclass field whose metadata (`setting(...)`) holds its one-line description and its check;
gputui/config.py walks the fields to read the file and to list them for the reference. The checks raise Invalid with
words that follow the key ("must be true or false, not 1"), in TOML's notation: the file's author reads them.
Apart from config.py, and below the diagnostics (it imports nothing of gputui), so that the diagnostics, which sit
below the reader, declare their settings beside their fields; `--alert-webhook` checks its URL with `url()` too.
"""

from __future__ import annotations

import datetime
import json
import math
import sys
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

T = TypeVar("T")

DOC = "doc"
CHECK = "check"
TABLE = "table"


class Invalid(ValueError):
    """What is wrong with one value, in words that follow its key: "must be true or false, not 1"."""


@dataclass(frozen=True, slots=True)
class Check(Generic[T]):
    """How one kind of value is read: `what` it must be (said in errors and in the reference), `read` takes what
    tomllib gave and raises Invalid, `show` writes a value as the file would hold it."""

    what: str
    read: Callable[[object], T]
    show: Callable[[Any], str]


def setting(doc: str, check: Check[Any] | None = None) -> dict[str, object]:
    """A field's metadata: its one-line description, and its check (None: the table's own, see `table`)."""
    return {DOC: doc, CHECK: check}


def table(doc: str) -> dict[str, object]:
    """The metadata of a field that is a table of its own ([diagnostics.thresholds]): a dataclass of settings."""
    return {DOC: doc, TABLE: True}


def toml_text(value: object) -> str:
    """A value as a TOML file writes it: true, 2.5, "json", ["xid"]; unset as the empty string."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value) if math.isfinite(value) else str(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, (list, tuple, set, frozenset)):
        items = sorted(value) if isinstance(value, (set, frozenset)) else value
        return "[" + ", ".join(toml_text(item) for item in items) + "]"
    return str(value)


# A whole number longer than this is said by its count of digits, not written out in an error.
MAX_SHOWN_WHOLE = 10**20


def described(value: object) -> str:
    """What a value the file holds is, in words: a string ("high"), true, 3, a list ([1, 2]), a table."""
    if isinstance(value, str):
        return f"a string ({toml_text(value)})"
    if isinstance(value, Mapping):
        return "a table"
    if isinstance(value, list):
        return f"a list ({toml_text(value)})"
    if isinstance(value, (datetime.date, datetime.time)):
        return f"a date or time ({value.isoformat()})"
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_SHOWN_WHOLE:
        return f"a number of {len(str(abs(value)))} digits"
    return toml_text(value)


def _unquoted(text: str) -> object | None:
    """What TOML reads of `text` written without its quotes; None where that is not a value."""
    try:
        bare: object = tomllib.loads(f"v = {text.strip()}")["v"]
    except (tomllib.TOMLDecodeError, KeyError):
        return None
    return bare


def _wrong(value: object, what: str, noun: str, check: Callable[[object], object]) -> Invalid:
    """A value of the wrong type: where it is a string that would do without its quotes, names the type (the
    value is right, its type is not) and says how to write it."""
    if isinstance(value, str):
        bare = _unquoted(value)
        if bare is not None and not isinstance(bare, str):
            try:
                check(bare)
            except Invalid:
                pass
            else:
                return Invalid(f"is a string ({toml_text(value)}), not {noun}; write {value.strip()} without quotes")
    return Invalid(f"must be {what}, not {described(value)}")


def _real(value: object) -> float | None:
    """The number a value is (an integer or a float, not true or false); None for anything else, and for nan, inf
    and an integer too large for a float: no setting means any of them, and each would pass a bound it breaks
    (nan is neither below 0 nor above a maximum; an infinite cooldown never ends)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        real = float(value)
    except OverflowError:
        return None
    return real if math.isfinite(real) else None


def number() -> Check[float]:
    """Any number from 0 up (the thresholds: a share, a percentage, a count of MiB)."""

    def read(value: object) -> float:
        real = _real(value)
        if real is None:
            raise _wrong(value, "a number", "a number", read)
        if real < 0:
            raise Invalid(f"must not be negative, not {described(value)}")
        return real

    return Check("a number, 0 or more", read, toml_text)


def seconds(*, above_zero: bool = False, at_most: float | None = None) -> Check[float]:
    """A number of seconds: 0 or more (`above_zero`: more than 0), `at_most` where given."""
    what = "a number of seconds above 0" if above_zero else "a number of seconds (0 or more)"
    if at_most is not None:
        what = f"{what.removesuffix(' (0 or more)')}, at most {at_most:g}"

    def read(value: object) -> float:
        real = _real(value)
        if real is None:
            raise _wrong(value, "a number of seconds", "a number", read)
        if real < 0 or (above_zero and real == 0) or (at_most is not None and real > at_most):
            raise Invalid(f"must be {what}, not {described(value)}")
        return real

    return Check(what, read, toml_text)


def price() -> Check[float]:
    """An amount of money above 0."""

    def read(value: object) -> float:
        real = _real(value)
        if real is None:
            raise _wrong(value, "a price above 0", "a number", read)
        if real <= 0:
            raise Invalid(f"must be a price above 0, not {described(value)}")
        return real

    return Check("a price above 0", read, toml_text)


# The most any whole number may be where its setting names no maximum: a count, which beyond this means nothing.
MAX_WHOLE = 2**31 - 1


def whole(minimum: int, maximum: int | None = None) -> Check[int]:
    """A whole number from `minimum` (to `maximum` where given, else MAX_WHOLE)."""
    what = f"a whole number of at least {minimum}"
    if maximum is not None:
        what = f"a whole number from {minimum} to {maximum}"

    def read(value: object) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise _wrong(value, what, "a whole number", read)
        if maximum is None and value > MAX_WHOLE:
            raise Invalid(f"is too large: at most {MAX_WHOLE}, not {described(value)}")
        if value < minimum or (maximum is not None and value > maximum):
            raise Invalid(f"must be {what}, not {described(value)}")
        return value

    return Check(what, read, toml_text)


def flag() -> Check[bool]:
    """true or false."""

    def read(value: object) -> bool:
        if not isinstance(value, bool):
            raise _wrong(value, "true or false", "true or false", read)
        return value

    return Check("true or false", read, toml_text)


def one_of(choices: Mapping[str, T]) -> Check[T]:
    """One of the names in `choices`, read as what it names."""
    names = ", ".join(choices)

    def show(value: object) -> str:
        return toml_text(next((name for name, named in choices.items() if named == value), value))

    def read(value: object) -> T:
        if not isinstance(value, str) or value not in choices:
            shown_value = toml_text(value) if isinstance(value, str) else described(value)
            raise Invalid(f"must be one of {names}, not {shown_value}")
        return choices[value]

    return Check(f"one of {names}", read, show)


def text() -> Check[str]:
    """Text that is not blank."""

    def read(value: object) -> str:
        if not isinstance(value, str):
            raise Invalid(f"must be text, not {described(value)}")
        if not value.strip():
            raise Invalid("must not be blank")
        return value

    return Check("text", read, toml_text)


def url() -> Check[str]:
    """An http(s) URL; an error never repeats it, for it may hold a secret (a Slack webhook's path does)."""

    def read(value: object) -> str:
        if not isinstance(value, str):
            raise Invalid(f"must be an http:// or https:// URL, not {described(value)}")
        if not value.startswith(("http://", "https://")):
            raise Invalid("must be an http:// or https:// URL")
        return value

    return Check("an http:// or https:// URL", read, lambda value: "" if value is None else "(a URL)")


def names_of(known: Collection[str], noun: str) -> Check[frozenset[str]]:
    """A list of names, each one of `known` (`noun` says what they name: "rule ids")."""

    def read(value: object) -> frozenset[str]:
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            raise Invalid(f"must be a list of {noun}, not {described(value)}")
        for item in value:
            if item not in known:
                raise Invalid(f"names an unknown {noun.removesuffix('s')} {toml_text(item)}")
        return frozenset(value)

    return Check(f"a list of {noun}", read, toml_text)
