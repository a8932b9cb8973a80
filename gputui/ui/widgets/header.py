"""The top line: what machine, which driver, how often, when; and a badge whenever the data is not live."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from gputui.formatting import NA, fmt_bytes, fmt_bytes_short
from gputui.model import ContainerInfo, SystemInfo
from gputui.ui.notices import Level, Notice
from gputui.ui.text import wrap_text
from gputui.ui.widgets.lines import Line, LineView, line_len

LABEL = "bright_black"
LEVEL_STYLES: dict[Level, str] = {"alarm": "bold red", "warning": "yellow", "info": LABEL}
FLAG_STYLE = "bold black on yellow"  # a notice that stays true: the data lacks something for the whole session
REPLAY_NOTE_STYLE = "bold magenta"  # the replay's own words (its end, the marks passed), in its badge's colour


@dataclass(frozen=True, slots=True)
class HeaderState:
    system: SystemInfo
    interval_s: float
    clock: str  # already formatted, to the second: the header changes at most once a second
    paused: bool = False
    notices: tuple[Notice, ...] = ()  # in their first minute: each gets rows of its own, wrapped whole
    flags: tuple[str, ...] = ()  # badges of the notices that stay true ("NO XID"), after their rows are gone
    error: str | None = None  # the last sampling error, until a sample succeeds
    critical: int = 0  # open findings by severity, so they show even while the diagnostics pane is hidden
    warnings: int = 0
    recording: str | None = None  # the --record badge: "REC", or "REC STOPPED" once the writer gave up
    replay: str | None = None  # where a replay is and how fast: "01:12:30 / 08:00:00 x4"
    replay_notes: tuple[str, ...] = ()  # the end of the recording, the marks just passed: a row each, under the facts


def badges(system: SystemInfo, paused: bool) -> list[tuple[str, str]]:
    """The labels that say the screen is not showing this machine's live data right now."""
    out: list[tuple[str, str]] = []
    if system.source == "simulated":
        label = "SIMULATED" + (f": {system.scenario}" if system.scenario else "")
        out.append((label, "bold black on yellow"))
    elif system.source == "replay":
        out.append(("REPLAY", "bold black on magenta"))
        if system.recorded_source == "simulated":
            out.append(("SIMULATED" + (f": {system.scenario}" if system.scenario else ""), "bold black on yellow"))
    elif system.source == "remote":
        out.append(("REMOTE", "bold black on cyan"))
    if paused:
        out.append(("PAUSED", "bold white on red"))
    return out


def container_brief(container: ContainerInfo | None, *, wide: bool = True) -> str | None:
    """Where gputui runs and what it may use: "docker: 8 CPUs quota, 64.0 GiB", or "docker 8cpu 64.0G" when
    narrow; None on an unlimited host.

    A cgroup with a quota but no container runtime (a systemd slice) reads "cgroup: ...". ASCII only, as the
    rest of the screen, for the fonts of PuTTY and tmux.
    """
    if container is None:
        return None
    parts: list[str] = []
    cpus = container.cpu_quota_cores
    if cpus is None and container.cpuset_cpus:
        cpus = len(container.cpuset_cpus)
    if cpus is not None:
        quota = " quota" if container.cpu_quota_cores is not None else ""
        parts.append(f"{cpus:g} CPUs{quota}" if wide else f"{cpus:g}cpu")
    if container.memory_limit_bytes is not None:
        limit = container.memory_limit_bytes
        parts.append(fmt_bytes(limit) if wide else fmt_bytes_short(limit))
    if container.runtime is None and not parts:
        return None
    name = container.runtime or "cgroup"
    if not parts:
        return name
    return f"{name}: {', '.join(parts)}" if wide else " ".join([name, *parts])


class StatusHeader(LineView):
    """One line of facts, then the sampling error, the replay's notes and each fresh notice, whole, on as many
    lines as they need.

    The clock comes first: it changes every second, and Textual rewrites a line up to its last change.
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.state: HeaderState | None = None

    def show(self, state: HeaderState) -> None:
        self.state = state
        self.redraw()

    def line_count(self, width: int) -> int:
        return 1 + len(self._notice_lines(width))

    def _notice_lines(self, width: int) -> list[Line]:
        s = self.state
        if s is None:
            return []
        said = [(f"sampling failed: {s.error}", LEVEL_STYLES["alarm"])] if s.error else []
        said += [(note, REPLAY_NOTE_STYLE) for note in s.replay_notes]
        said += [(notice.text, LEVEL_STYLES[notice.report.level]) for notice in s.notices]
        return [[(row, style)] for text, style in said for row in wrap_text(text, width)]

    @staticmethod
    def _facts(s: HeaderState, wide: bool) -> Line:
        """The facts line; narrow terminals get it without the labels, badges first so they always show."""
        sysinfo = s.system
        line: Line = [(s.clock, ""), ("  ", "")]
        if wide:
            line.append(("gputui  ", "bold"))
        for label, style in badges(sysinfo, s.paused):
            line += [(f" {label} ", style), ("  ", "")]
            if label == "REPLAY" and s.replay:
                line += [(s.replay, "bold"), ("  ", "")]
        for flag in s.flags:
            line += [(f" {flag} ", FLAG_STYLE), ("  ", "")]
        if s.recording:
            line += [(f" {s.recording} ", "bold white on red"), ("  ", "")]
        if s.critical:
            line += [(f" {s.critical} CRITICAL ", "bold white on red"), ("  ", "")]
        if s.warnings:
            line += [(f" {s.warnings} WARNING{'S' if s.warnings > 1 else ''} ", "bold black on yellow"), ("  ", "")]
        line.append((sysinfo.hostname, ""))
        brief = container_brief(sysinfo.container, wide=wide)
        if brief:
            line.append((f"  {brief}", "cyan"))
        line += [
            ("  driver " if wide else "  drv ", LABEL),
            (sysinfo.driver_version or NA, ""),
            ("  CUDA ", LABEL),
            (sysinfo.cuda_driver_version or NA, ""),
            (f"  {sysinfo.gpu_count} GPU{'s' if sysinfo.gpu_count != 1 else ''}", ""),
            ("  every " if wide else "  ", LABEL),
            (f"{s.interval_s:g}s", ""),
        ]
        return line

    def build_lines(self, width: int) -> Sequence[Line]:
        s = self.state
        if s is None:
            return [[("gputui", "bold"), ("  starting...", LABEL)]]
        line = self._facts(s, wide=True)
        if line_len(line) > width:
            line = self._facts(s, wide=False)
        return [line, *self._notice_lines(width)]
