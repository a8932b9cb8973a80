"""One line above the diagnostics pane for the running probe: what it is doing now, then how it ended.

It sits outside the pane so it stays visible when the pane is hidden, and repaints only when its text changes
(a probe reports about once a second).
"""

from __future__ import annotations

from rich.text import Text
from textual.widget import Widget


class ProbeStatus(Widget):
    """Hidden until a probe starts; `show(None)` hides it again."""

    DEFAULT_CSS = """
    ProbeStatus {
        height: 1;
        padding: 0 1;
        display: none;
    }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.text = Text()

    @property
    def plain(self) -> str:
        return self.text.plain

    def show(self, text: Text | None) -> None:
        if text is None:
            self.display = False
            return
        text.no_wrap, text.overflow = True, "ellipsis"
        if text != self.text:
            self.text = text
            self.refresh()
        self.display = True

    def render(self) -> Text:
        return self.text
