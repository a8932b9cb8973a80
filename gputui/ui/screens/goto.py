"""`g`: a one-line box for the time to jump to in the history, e.g. "03:10" or "3h ago" (parse_when reads it)."""

from __future__ import annotations

from gputui.ui.screens.line_prompt import LinePrompt


class GotoScreen(LinePrompt):
    PROMPT = "Jump to a time in the history (enter: go, esc: cancel)"
    EXAMPLE = "e.g. 03:10, 2026-12-06 03:10, 3h ago"
    INPUT_ID = "goto-when"
