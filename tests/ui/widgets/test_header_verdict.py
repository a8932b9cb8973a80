"""The verdict under the header: on every screen, whole at any width, never cut mid-word."""

from __future__ import annotations

import pytest

from gputui.diagnostics.verdict import Verdict
from gputui.ui.widgets.header import VERDICT_MAX_LINES, verdict_lines
from gputui.ui.widgets.lines import Line, line_len

UNDERUSED = Verdict(
    "underused",
    "Underused",
    (0,),
    "GPU 0 only 21% busy, and nothing on this machine explains the waiting: look inside the job "
    "(synchronisation, small batches, a slow Python step, other nodes)",
    "Underused: GPU 0 only 21% busy, and nothing on this machine explains the waiting: look inside the job "
    "(synchronisation, small batches, a slow Python step, other nodes)",
)


def plain(lines: list[Line]) -> list[str]:
    return ["".join(text for text, _ in line) for line in lines]


@pytest.mark.parametrize("width", [80, 120, 200])
def test_the_verdict_is_whole_and_wrapped_between_words(width: int) -> None:
    lines = verdict_lines(UNDERUSED, width)
    rows = plain(lines)
    assert " ".join(rows) == UNDERUSED.line
    assert all(line_len(line) <= width for line in lines)
    assert lines[0][0] == ("Underused", "bold yellow")  # its class's colour on the label


def test_a_verdict_longer_than_its_lines_ends_at_a_whole_word_with_an_ellipsis() -> None:
    rows = plain(verdict_lines(UNDERUSED, 40))
    assert len(rows) == VERDICT_MAX_LINES and rows[-1].endswith("…")
    words = set(UNDERUSED.line.split())
    assert all(word in words for row in rows for word in row.removesuffix("…").split())
