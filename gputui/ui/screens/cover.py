"""The frame of a screen that covers the main view (the detail charts, the topology): the same header, badges
included, the screen's own body, the footer; `esc` back. The app hands it each tick while it is shown."""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widget import Widget
from textual.widgets import Footer

from gputui.ui.lean_update import LeanScreen
from gputui.ui.widgets.header import HeaderState, StatusHeader


class CoverScreen(LeanScreen[None]):
    """Subclasses give `body()`; `on_shown` tells the app to send the newest tick at once."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "app.pop_screen", "Back")]

    def __init__(self, on_shown: Callable[[], None]) -> None:
        super().__init__()
        self._shown = on_shown

    def body(self) -> Widget:
        raise NotImplementedError

    def compose(self) -> ComposeResult:
        yield StatusHeader()
        yield self.body()
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self._shown()

    @property
    def header(self) -> StatusHeader:
        return self.query_one(StatusHeader)

    def show_header(self, header: HeaderState) -> None:
        self.header.show(header)
        self.header.styles.height = self.header.line_count(self.size.width)
