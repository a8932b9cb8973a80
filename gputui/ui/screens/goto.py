"""`g`: a one-line box for the time to jump to in the history, e.g. "03:10" or "3h ago"."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label


class GotoScreen(ModalScreen[str | None]):
    """Returns the text typed (stripped), or None when cancelled with escape or left empty; parse_when reads it."""

    DEFAULT_CSS = """
    GotoScreen { align: center middle; }
    GotoScreen > Vertical { width: 70; height: auto; border: solid $accent; padding: 0 1; background: $surface; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel")]

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label("Jump to a time in the history (enter: go, esc: cancel)")
            yield Input(placeholder="e.g. 03:10, 2026-12-06 03:10, 3h ago", id="goto-when")

    def on_input_changed(self, event: Input.Changed) -> None:
        event.stop()  # the app's handler filters the process table with what the filter box says

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.dismiss(event.value.strip() or None)

    def action_cancel(self) -> None:
        self.dismiss(None)
