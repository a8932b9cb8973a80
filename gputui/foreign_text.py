"""Text that other users chose, made safe to show: the one function every source applies where such text enters.

gputui often runs as root on a shared server, and much of what it shows is text other users control: their
processes' command lines and names, their user and pod names, the function, file and thread names in their jobs'
stacks, the host names and labels other servers report, and everything a recording holds. Shown raw, a control
character in it can retitle or clear the terminal of whoever runs gputui (ESC sequences), forge a line of output (a
newline), or reorder what a line appears to say (bidirectional overrides). `clean` replaces each such character
with a visible escape (`\\x1b`, `\\n`, `\\u202e`) before any view, text output, JSON or recording sees the text, so
what was there stays readable and nothing is lost silently.

Replaced: every C0 control (U+0000-U+001F, tab and newline included: every field is shown on one line), DEL, every
C1 control (U+0080-U+009F), the line and paragraph separators, the bidirectional marks, embeddings, overrides
and isolates, and lone surrogates (U+D800-U+DFFF): psutil and os decode a command line's undecodable bytes as
surrogates (surrogateescape), which reach a terminal as the raw bytes (0x9b is CSI to an 8-bit terminal) and
which a UTF-8 encoder refuses (a recording, a JSON answer). str.translate with a table made once: a command line
of a few hundred characters costs about a microsecond, so the sources apply it to every reading.
"""

from __future__ import annotations

from collections.abc import Iterable

# Bidirectional formatting characters (Unicode's Bidi_Control, UAX #9) and the line and paragraph separators.
_BIDI_AND_SEPARATORS = (0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A), 0x2028, 0x2029)
_SHORT = {0x09: "\\t", 0x0A: "\\n", 0x0D: "\\r"}


def _escape(code: int) -> str:
    if code in _SHORT:
        return _SHORT[code]
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


_TABLE: dict[int, str] = {
    code: _escape(code)
    for code in (*range(0x20), 0x7F, *range(0x80, 0xA0), *_BIDI_AND_SEPARATORS, *range(0xD800, 0xE000))
}


def clean(text: str) -> str:
    """`text` with every control, separator and bidirectional formatting character replaced by a visible escape."""
    return text.translate(_TABLE)


def clean_optional(text: str | None) -> str | None:
    """`clean` for a field that may be unreported (None stays None: "n/a" on screen, never "")."""
    return None if text is None else text.translate(_TABLE)


def clean_all(texts: Iterable[str]) -> tuple[str, ...]:
    """`clean` for each of several texts (a command line's arguments)."""
    return tuple(text.translate(_TABLE) for text in texts)


def is_clean(text: str) -> bool:
    """Whether `text` holds nothing `clean` would replace (what the tests assert of every output)."""
    return text.translate(_TABLE) == text
