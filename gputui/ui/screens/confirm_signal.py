"""Asks before a signal goes: each target named `PID (user) command`, those that may not be signalled shown with
why. Dismisses with the signal chosen, or None (Cancel): nothing is sent from here, the app sends it."""

from __future__ import annotations

import signal
from collections.abc import Sequence
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from gputui.session.signals import SIGNALS, Decision

# The key of each signal's button, as its name's first letter after SIG: i(nt), t(erm), k(ill).
SIGNAL_KEYS: dict[signal.Signals, str] = {signal.SIGINT: "i", signal.SIGTERM: "t", signal.SIGKILL: "k"}


def decision_lines(decisions: Sequence[Decision]) -> list[str]:
    """One line per target; a refused one says why on the next line."""
    lines = []
    for decision in decisions:
        lines.append(decision.target.label)
        if decision.reason is not None:
            lines.append(f"  refused: {decision.reason}")
    return lines


class ConfirmSignal(ModalScreen[signal.Signals | None]):
    """`i` `t` `k` (or their buttons) send SIGINT, SIGTERM or SIGKILL to the targets allowed; `n`, `c`, escape or
    Cancel send nothing. With no target allowed only Cancel is offered."""

    BINDINGS: ClassVar[list[BindingType]] = [
        *(Binding(key, f"send({int(signum)})", signum.name) for signum, key in SIGNAL_KEYS.items()),
        Binding("n,c,escape", "cancel", "Cancel"),
    ]

    def __init__(self, decisions: Sequence[Decision]) -> None:
        super().__init__()
        self.decisions = tuple(decisions)
        self.allowed = sum(1 for decision in self.decisions if decision.allowed)

    def compose(self) -> ComposeResult:
        count = len(self.decisions)
        title = f"Send a signal to {count} process{'es' if count != 1 else ''}"
        if self.allowed < count:
            title += f" ({self.allowed} allowed)"
        with Vertical(id="confirm-signal"):
            yield Static(title, id="confirm-signal-title")
            yield Static("\n".join(decision_lines(self.decisions)), id="confirm-signal-lines", markup=False)
            with Horizontal(id="confirm-signal-buttons"):
                for signum, key in SIGNAL_KEYS.items():
                    yield Button(
                        f"{signum.name} ({key})",
                        id=f"signal-{signum.name.lower()}",
                        variant="error" if signum == signal.SIGKILL else "warning",
                        disabled=not self.allowed,
                    )
                yield Button("Cancel (esc)", id="signal-cancel")

    def on_mount(self) -> None:
        self.query_one("#signal-cancel", Button).focus()  # enter on the dialog as it opens sends nothing

    def action_send(self, signum: int) -> None:
        if self.allowed:
            self.dismiss(signal.Signals(signum))

    def action_cancel(self) -> None:
        self.dismiss(None)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        chosen = {f"signal-{signum.name.lower()}": signum for signum in SIGNALS}.get(event.button.id or "")
        if chosen is None:
            self.action_cancel()
        else:
            self.action_send(int(chosen))
