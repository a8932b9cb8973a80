"""`M` while recording: a one-line box for a mark's label, e.g. "changed num_workers to 8"."""

from __future__ import annotations

from gputui.ui.screens.line_prompt import LinePrompt


class MarkScreen(LinePrompt):
    PROMPT = "Mark in the recording (enter: drop it, esc: cancel)"
    EXAMPLE = "e.g. changed num_workers to 8"
    INPUT_ID = "mark-label"
