"""A one-line box asked for over the screen: the mark's label (`M`), the time to jump to (`g`)."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label


class LinePrompt(ModalScreen[str | None]):
    """Returns the text typed (stripped), or None when cancelled with escape or left empty; each prompt says what it
    asks for (`PROMPT`), gives an example (`EXAMPLE`) and names its input (`INPUT_ID`)."""

    PROMPT: ClassVar[str] = ""
    EXAMPLE: ClassVar[str] = ""
    INPUT_ID: ClassVar[str] = ""
    DEFAULT_CSS = """
    LinePrompt { align: center middle; }
    LinePrompt > Vertical { width: 70; height: auto; border: solid $accent; padding: 0 1; background: $surface; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel")]

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(self.PROMPT)
            yield Input(placeholder=self.EXAMPLE, id=self.INPUT_ID)

    def on_input_changed(self, event: Input.Changed) -> None:
        event.stop()  # the app's handler filters the process table with what the filter box says

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.dismiss(event.value.strip() or None)

    def action_cancel(self) -> None:
        self.dismiss(None)
