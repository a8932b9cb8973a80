"""The top lines: what machine, which driver, how often, when, a badge whenever the data is not live; then the
verdict, on every screen and at every size; then the sampling error and fresh notices."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

from rich.cells import cell_len, chop_cells

from gputui.diagnostics.verdict import Verdict
from gputui.formatting import NA, fmt_bytes, fmt_bytes_short
from gputui.model import ContainerInfo, SystemInfo
from gputui.ui.cells import wrap_text
from gputui.ui.notices import Level, Notice
from gputui.ui.widgets.lines import Line, LineView, line_len

LABEL = "bright_black"
LEVEL_STYLES: dict[Level, str] = {"alarm": "bold red", "warning": "yellow", "info": LABEL}
FLAG_STYLE = "bold black on yellow"  # a notice that stays true: the data lacks something for the whole session
# The verdict's label: green where the machine delivers, red where it fails, yellow where something holds it back.
VERDICT_STYLES = {
    "gpu_bound": "bold green",
    "idle": "bold",
    "unknown": "dim",
    "degraded": "bold red",
    "stopped": "bold red",
}
VERDICT_DEFAULT_STYLE = "bold yellow"
# The verdict is wrapped whole at word boundaries onto at most this many lines; a longer one ends at the last
# whole word that fits, with "…" (the pane and `gputui diagnose` give it whole).
VERDICT_MAX_LINES = 3
ELLIPSIS = "…"
REPLAY_NOTE_STYLE = "bold magenta"  # the replay's own words (its end, the marks passed), in its badge's colour
PAST_STYLE = "bold white on blue"  # the monitor walking back into the past: the panels show that tick, not now


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
    info: int = 0  # counted too: with the pane hidden, a finding the header does not count would be unseen
    recording: str | None = None  # the --record badge: "REC", or "REC STOPPED" once the writer gave up
    replay: str | None = None  # where a replay is and how fast: "01:12:30 / 08:00:00 x4"
    verdict: Verdict | None = None  # what bounds the job: under the facts, on every screen
    replay_notes: tuple[str, ...] = ()  # the end of the recording, the marks just passed: a row each, under the facts
    past: str | None = None  # walking back while paused: "PAST 03:10:22 — space/p: live", in place of PAUSED


def badges(system: SystemInfo, paused: bool, scenario: bool = True) -> list[tuple[str, str]]:
    """The labels that say the screen is not showing this machine's live data right now (with the simulated
    scenario's name unless `scenario` is False: a narrow terminal keeps SIMULATED, not the name)."""
    out: list[tuple[str, str]] = []
    simulated = "SIMULATED" + (f": {system.scenario}" if system.scenario and scenario else "")
    if system.source == "simulated":
        out.append((simulated, "bold black on yellow"))
    elif system.source == "replay":
        out.append(("REPLAY", "bold black on magenta"))
        if system.recorded_source == "simulated":
            out.append((simulated, "bold black on yellow"))
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


def mig_slice_fact(uuid: str, wide: bool) -> Line:
    """'1 MIG slice: MIG-<uuid>': this process was given one instance, and the view shows that one. The UUID whole,
    as CUDA_VISIBLE_DEVICES names it: the less needed facts after it give way first."""
    return [("  1 MIG slice: " if wide else "  1 MIG slice ", "cyan"), (uuid, "cyan")]


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
        return 1 + len(self._verdict_lines(width)) + len(self._notice_lines(width))

    def _verdict_lines(self, width: int) -> list[Line]:
        verdict = self.state.verdict if self.state is not None else None
        return [] if verdict is None else verdict_lines(verdict, width)

    def _notice_lines(self, width: int) -> list[Line]:
        s = self.state
        if s is None:
            return []
        said = [(f"sampling failed: {s.error}", LEVEL_STYLES["alarm"])] if s.error else []
        said += [(note, REPLAY_NOTE_STYLE) for note in s.replay_notes]
        said += [(notice.text, LEVEL_STYLES[notice.report.level]) for notice in s.notices]
        return [[(row, style)] for text, style in said for row in wrap_text(text, width)]

    @staticmethod
    def _facts(s: HeaderState, width: int) -> Line:
        """The facts line at `width`: whole with its labels where it fits, else without them, leaving out the least
        needed facts (the GPU count, the versions, the container, the host) one by one from the end, so that
        nothing is cut mid-word. The clock, the badges and the refresh interval always show."""
        head, facts, tail = StatusHeader._fact_parts(s, wide=True)
        line = [*head, *(part for fact in facts for part in fact), *tail]
        if line_len(line) <= width:
            return line
        head, facts, tail = StatusHeader._fact_parts(s, wide=False)
        for keep in range(len(facts), 0, -1):
            line = [*head, *(part for fact in facts[:keep] for part in fact), *tail]
            if line_len(line) <= width:
                return line
        line = [*head, *tail]
        if line_len(line) <= width:
            return line
        head, _, tail = StatusHeader._fact_parts(s, wide=False, tight=True)
        return [*head, *tail]

    @staticmethod
    def _fact_parts(s: HeaderState, wide: bool, tight: bool = False) -> tuple[Line, list[Line], Line]:
        """What must show (the clock, the badges), the facts in the order they are given up last to first, and
        the refresh interval. `tight`, for a replay of a simulated machine in 80 columns: the badges without the
        scenario's name, the counts as CRIT and WARN."""
        sysinfo = s.system
        head: Line = [(s.clock, ""), ("  ", "")]
        if wide:
            head.append(("gputui  ", "bold"))
        if s.past:
            head += [(f" {s.past} ", PAST_STYLE), ("  ", "")]
        for label, style in badges(sysinfo, s.paused and not s.past, scenario=not tight):
            head += [(f" {label} ", style), ("  ", "")]
            if label == "REPLAY" and s.replay:
                head += [(s.replay, "bold"), ("  ", "")]
        for flag in s.flags:
            head += [(f" {flag} ", FLAG_STYLE), ("  ", "")]
        if s.recording:
            head += [(f" {s.recording} ", "bold white on red"), ("  ", "")]
        if s.critical:
            head += [(f" {s.critical} {'CRIT' if tight else 'CRITICAL'} ", "bold white on red"), ("  ", "")]
        if s.warnings:
            warnings = "WARN" if tight else f"WARNING{'S' if s.warnings > 1 else ''}"
            head += [(f" {s.warnings} {warnings} ", "bold black on yellow"), ("  ", "")]
        if s.info:
            head += [(f" {s.info} INFO ", "bold black on cyan"), ("  ", "")]
        facts: list[Line] = [[(sysinfo.hostname, "")]]
        if sysinfo.mig_slice:
            facts.append(mig_slice_fact(sysinfo.mig_slice, wide))
        brief = container_brief(sysinfo.container, wide=wide)
        if brief:
            facts.append([(f"  {brief}", "cyan")])
        facts += [
            [("  driver " if wide else "  drv ", LABEL), (sysinfo.driver_version or NA, "")],
            [("  CUDA ", LABEL), (sysinfo.cuda_driver_version or NA, "")],
            [(f"  {sysinfo.gpu_count} GPU{'s' if sysinfo.gpu_count != 1 else ''}", "")],
        ]
        tail: Line = [("  every " if wide else "  ", LABEL), (f"{s.interval_s:g}s", "")]
        return head, facts, tail

    def build_lines(self, width: int) -> Sequence[Line]:
        s = self.state
        if s is None:
            return [[("gputui", "bold"), ("  starting...", LABEL)]]
        return [self._facts(s, width), *self._verdict_lines(width), *self._notice_lines(width)]


def verdict_lines(verdict: Verdict, width: int, max_lines: int = VERDICT_MAX_LINES) -> list[Line]:
    """The verdict's sentence wrapped at word boundaries, its label in its class's colour; never cut mid-word."""
    return [list(line) for line in _wrapped(verdict.line, verdict.label, verdict.cls, width, max_lines)]


@functools.lru_cache(maxsize=8)
def _wrapped(sentence: str, label: str, cls: str, width: int, max_lines: int) -> tuple[Line, ...]:
    """The verdict's lines, worked out once per sentence and width: the layout asks for their count several times a
    tick, and the verdict's words are renewed on any tick a figure they state moves."""
    rows = list(wrap_text(sentence, width))
    if len(rows) > max_lines:
        rows = rows[:max_lines]
        words = rows[-1].split(" ")
        while len(words) > 1 and cell_len(" ".join(words)) + len(ELLIPSIS) > width:
            words.pop()
        last = " ".join(words)
        if cell_len(last) + len(ELLIPSIS) > width:  # one long word, or Chinese, which has no spaces to break at
            last = chop_cells(last, max(1, width - len(ELLIPSIS)))[0]
        rows[-1] = last + ELLIPSIS
    style = VERDICT_STYLES.get(cls, VERDICT_DEFAULT_STYLE)
    first = rows[0]
    head: Line = [(label, style), (first[len(label) :], "")] if first.startswith(label) else [(first, "")]
    return (head, *[[(row, "")] for row in rows[1:]])
