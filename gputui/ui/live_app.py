"""What the monitor and the fleet view share as live apps: how they run in a terminal, and the quit and pause keys.

Both draw what a thread polls until the user quits or the terminal goes: on our quiet input driver, with ANSI
colours and no animation, without Textual's command palette, ended by SIGHUP (a lost SSH session), and with `p`
pausing the drawing (not the polling). What they poll, how they draw and their other keys are each app's own.
"""

from __future__ import annotations

import asyncio
import signal
from abc import abstractmethod

from textual.app import App
from textual.binding import Binding, BindingType
from textual.driver import Driver

from gputui.ui.driver import quiet_driver

# The keys every live app starts its BINDINGS with. They are not the base class's BINDINGS because Textual merges
# bindings key by key along the MRO: a base's keys would come first in the footer (before the monitor's replay
# keys), and an app that binds `p` again (the monitor, for replay) would lose the pause key.
LIVE_KEYS: tuple[BindingType, ...] = (
    Binding("q", "quit", "Quit"),
    Binding("p", "toggle_pause", "Pause"),
)


class LiveApp(App[int]):
    """A terminal app drawing live data; a subclass draws it (`draw`) and starts its own polling."""

    ENABLE_COMMAND_PALETTE = False

    def __init__(self) -> None:
        super().__init__(ansi_color=True)
        self.animation_level = "none"
        self.paused = False  # drawing stops while paused; what is polled still arrives

    @abstractmethod
    def draw(self) -> None:
        """Show what is known now (while paused, at least that it is paused)."""

    def get_driver_class(self) -> type[Driver]:
        return quiet_driver(super().get_driver_class())

    def on_mount(self) -> None:
        asyncio.get_running_loop().add_signal_handler(signal.SIGHUP, self.exit)  # a lost SSH session ends it

    def on_unmount(self) -> None:
        asyncio.get_running_loop().remove_signal_handler(signal.SIGHUP)

    def action_toggle_pause(self) -> None:
        self.paused = not self.paused
        self.draw()
