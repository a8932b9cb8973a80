"""`M` while recording: a one-line box for a mark's label, e.g. "changed num_workers to 8"."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label


class MarkScreen(ModalScreen[str | None]):
    """Returns the label (stripped), or None when cancelled with escape or left empty."""

    DEFAULT_CSS = """
    MarkScreen { align: center middle; }
    MarkScreen > Vertical { width: 70; height: auto; border: solid $accent; padding: 0 1; background: $surface; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel")]

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label("Mark in the recording (enter: drop it, esc: cancel)")
            yield Input(placeholder="e.g. changed num_workers to 8", id="mark-label")

    def on_input_changed(self, event: Input.Changed) -> None:
        event.stop()  # the app's handler filters the process table with what the filter box says

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.dismiss(event.value.strip() or None)

    def action_cancel(self) -> None:
        self.dismiss(None)
