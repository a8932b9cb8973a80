"""The top line: what machine, which driver, how often, when; and a badge whenever the data is not live."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rich.text import Text

from gputui.model import SystemInfo
from gputui.ui.widgets.lines import LineView

LABEL = "bright_black"


@dataclass(frozen=True, slots=True)
class HeaderState:
    system: SystemInfo
    interval_s: float
    clock: str  # already formatted, to the second: the header changes at most once a second
    paused: bool = False
    notice: str | None = None  # the latest source event, e.g. the simulated tour changing scene
    error: str | None = None  # the last sampling error, until a sample succeeds


def badges(system: SystemInfo, paused: bool) -> list[tuple[str, str]]:
    """The labels that say the screen is not showing this machine's live data right now."""
    out: list[tuple[str, str]] = []
    if system.source == "simulated":
        label = "SIMULATED" + (f": {system.scenario}" if system.scenario else "")
        out.append((label, "bold black on yellow"))
    elif system.source == "replay":
        out.append(("REPLAY", "bold black on magenta"))
    elif system.source == "remote":
        out.append(("REMOTE", "bold black on cyan"))
    if paused:
        out.append(("PAUSED", "bold white on red"))
    return out


class StatusHeader(LineView):
    """One line of facts, plus a second line when there is a fallback reason, a notice or an error."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.state: HeaderState | None = None

    def show(self, state: HeaderState) -> None:
        self.state = state
        self.redraw()

    def line_count(self) -> int:
        s = self.state
        return 2 if s is not None and (s.system.fallback_reason or s.notice or s.error) else 1

    @staticmethod
    def _facts(s: HeaderState, wide: bool) -> Text:
        """The facts line; narrow terminals get it without the labels, badges first so they always show."""
        sysinfo = s.system
        line = Text()
        if wide:
            line.append("gputui  ", style="bold")
        for label, style in badges(sysinfo, s.paused):
            line.append(f" {label} ", style=style)
            line.append("  ")
        line.append(sysinfo.hostname)
        line.append("  driver " if wide else "  drv ", style=LABEL)
        line.append(sysinfo.driver_version or "n/a")
        line.append("  CUDA ", style=LABEL)
        line.append(sysinfo.cuda_driver_version or "n/a")
        line.append(f"  {sysinfo.gpu_count} GPU{'s' if sysinfo.gpu_count != 1 else ''}")
        line.append("  every " if wide else "  ", style=LABEL)
        line.append(f"{s.interval_s:g}s")
        line.append(f"  {s.clock}")
        return line

    def build_lines(self, width: int) -> Sequence[Text]:
        s = self.state
        if s is None:
            return [Text.assemble(("gputui", "bold"), ("  starting...", LABEL))]
        sysinfo = s.system
        line = self._facts(s, wide=True)
        if line.cell_len > width:
            line = self._facts(s, wide=False)
        lines = [line]
        if sysinfo.fallback_reason or s.notice or s.error:
            second = Text()
            if s.error:
                second.append(f"sampling failed: {s.error}  ", style="bold red")
            if sysinfo.fallback_reason:
                second.append(f"no live data ({sysinfo.fallback_reason}); showing a simulated machine  ", "yellow")
            if s.notice:
                second.append(s.notice, style=LABEL)
            lines.append(second)
        return lines
