"""Asks before a probe starts: who it would slow down (a stress or bandwidth probe on a busy GPU), or which
directory to read (the disk probe). Dismisses with the directory ("" when none is asked) or None to abort."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Static


class ConfirmProbe(ModalScreen[str | None]):
    """`y` (or enter in the path box) starts the probe; `n` or escape aborts it."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "confirm", "Start"),
        Binding("n,escape", "abort", "Cancel"),
    ]

    def __init__(self, title: str, lines: Sequence[str] = (), path: str | None = None) -> None:
        super().__init__()
        self._title = title
        self.lines = tuple(lines)
        self._path = path
        self.error = Static("", id="confirm-probe-error", markup=False)  # quotes the path typed

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm-probe"):
            # Plain text, never markup: the lines name other users' processes, the title a GPU.
            yield Static(self._title, id="confirm-probe-title", markup=False)
            if self.lines:
                yield Static("\n".join(self.lines), id="confirm-probe-lines", markup=False)
            if self._path is not None:
                yield Input(value=self._path, placeholder="directory to read", id="confirm-probe-path")
                yield self.error
                yield Static("enter: start   esc: cancel", classes="confirm-probe-keys")
            else:
                yield Static("y: start anyway   n / esc: cancel", classes="confirm-probe-keys")

    def action_confirm(self) -> None:
        if self._path is None:
            self.dismiss("")

    def action_abort(self) -> None:
        self.dismiss(None)

    def on_input_changed(self, event: Input.Changed) -> None:
        event.stop()  # the path, not a process filter: the app must not see it

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        path = event.value.strip()
        if not path or not Path(path).expanduser().is_dir():
            self.error.update(f"not a directory: {path!r}")
            return
        self.dismiss(str(Path(path).expanduser()))
