"""`?`: every key, with what it does, over the monitor; first the whole text of the notices still true."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import ClassVar

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

# Keys that are not app bindings but still work, and what they do.
EXTRA_KEYS: tuple[tuple[str, str], ...] = (
    ("esc", "back from the detail and topology views; close the filter, this help"),
    ("tab / up / down", "move between the GPU panels, the process table and the diagnostics pane"),
    ("click a column", "sort the process table by it (again: reverse)"),
)

DESCRIPTIONS: dict[str, str] = {
    "quit": "quit",
    "toggle_pause": "pause / resume drawing (sampling goes on)",
    "slower": "longer refresh interval (up to 10 s)",
    "faster": "shorter refresh interval (down to 0.25 s)",
    "toggle_diagnostics": "diagnostics pane: show and choose; again: hide",
    "detail": "detail view of the selected GPU: history charts, and its process's activity where sampled",
    "topo": "topology: NVLink and PCIe paths between the GPUs, P2P, NUMA node, CPUs near each; NVLink traffic",
    "filter": "filter the processes by user, PID, pod, job or command",
    "sort": "sort the processes by the next column",
    "fold_tree": "process table: fold / unfold the tree (the ranks of one job kept together, ┌ ├ └, and each "
    "one's data-loader workers under it where there is room)",
    "help": "this help",
    "mark": "while recording (--record): drop a labelled mark into the recording",
    "replay_stop": "replay: pause (p too)",
    "replay_play": "replay: play on (p too)",
    "replay_seek(-10)": "replay: back 10 s",
    "replay_seek(10)": "replay: forward 10 s",
    "replay_seek(-60)": "replay: back 1 min",
    "replay_seek(60)": "replay: forward 1 min",
    "past_step(-10)": "paused: walk back 10 s into the past (the history held: the store's last hour, then the "
    "session's ticks); the panels, the table and the findings show that moment",
    "past_step(10)": "paused: walk forward 10 s",
    "past_step(-60)": "paused: walk back 1 min",
    "past_step(60)": "paused: walk forward 1 min",
    "past_live": "walking the past: back to live (p too)",
    "past_goto": "jump to a time in the history store (03:10, 2026-12-06 03:10, 3h ago) and walk from there",
    "replay_slower": "replay: play slower (down to x0.25)",
    "replay_faster": "replay: play faster (up to x64)",
    "probe('stress')": "stress probe on the selected GPU: matmul TFLOP/s, clocks and heat under load",
    "probe('pcie')": "PCIe probe: host<->device copy bandwidth against what the link can carry",
    "probe('membw')": "memory bandwidth probe: device-to-device copies against the peak",
    "probe('disk')": "disk read probe: sequential read of a directory (asks which), never writes",
    "probe('p2p')": "GPU-to-GPU probe: peer copies between every pair, against NVLink or the PCIe link (asks first)",
    "cancel_probe": "cancel the running probe",
    "signal": "signal the tagged processes, else the selected one: SIGINT, SIGTERM or SIGKILL, after a confirmation "
    "(your own processes only, unless root; not with --readonly)",
    "sample_activity": "in the process table or the detail: read that process's Python stacks now, for a few "
    "seconds: what its main thread does shows on its row and in the detail (live on this machine only)",
    "tag": "in the process table: tag / untag the selected process for a signal (K)",
}
# How a key that cannot act in this session is listed: what it does, then why not here.
REFUSED = "{what} (not here: {why})"


# Why a GPU can read 100% busy and still be slow: the lines the panels' "SM act" needs, and what CLK is.
UTIL_VS_SM = (
    "UTIL: time any kernel ran. SM act (SMACT): share of SMs at work meanwhile (GPM).\n"
    "Full UTIL, low SM act: kernels too small. Low TC: math not on tensor cores.\n"
    "CLK: the SM clock in MHz against its max. A process's UTIL: its part of UTIL."
)


def key_rows(bindings: Sequence[BindingType], refusals: Mapping[str, str] | None = None) -> list[tuple[str, str]]:
    """(key, what it does) for each described binding, then the keys that are no binding of the app; a key that
    cannot act here (`refusals`: action -> why) is listed with why: `?` lists every key a footer or hint names."""
    refusals = refusals or {}
    rows: list[tuple[str, str]] = []
    for binding in bindings:
        if isinstance(binding, Binding) and binding.action in DESCRIPTIONS:
            what = DESCRIPTIONS[binding.action]
            why = refusals.get(binding.action)
            rows.append(
                (binding.key_display or binding.key, what if why is None else REFUSED.format(what=what, why=why))
            )
    return [*rows, *EXTRA_KEYS]


def help_keys(rows: Sequence[tuple[str, str]]) -> set[str]:
    """Each key the help's rows name: "tab / up / down" is three, "plus,equals_sign" shown as "+" one."""
    return {key.strip() for shown, _ in rows for key in shown.split("/") if key.strip()} | {
        "/" for shown, _ in rows if shown == "/"
    }


def key_table(bindings: Sequence[BindingType], refusals: Mapping[str, str] | None = None) -> Table:
    table = Table(box=None, show_header=False, padding=(0, 2))
    table.add_column(style="bold")
    table.add_column()
    for key, what in key_rows(bindings, refusals):
        table.add_row(Text(key), Text(what))  # never markup: a refusal may hold brackets
    return table


class HelpScreen(ModalScreen[None]):
    """Opaque (the monitor's live lines do not show through it), and it scrolls with the keys where it is taller
    than the terminal: at 80x24 it is twice the height."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,question_mark,q", "dismiss", "Close")]

    def __init__(
        self,
        bindings: Sequence[BindingType],
        notices: Sequence[str] = (),
        account: Sequence[str] = (),
        refusals: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__()
        self._keys = bindings
        self._refusals = refusals  # action -> why it cannot act in this session
        self._notices = notices
        self._account = account  # where the session's GPU time went, a line per verdict class

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help"):
            if self._notices:  # first: the header keeps only a badge for them after their first minute
                yield Static("Notices", classes="help-heading")
                # Plain text, never markup: a notice may quote another server's host name or a process's name.
                yield Static("\n".join(f"- {notice}" for notice in self._notices), id="help-notices", markup=False)
            if self._account:
                yield Static("\n".join(self._account), id="help-account", markup=False)
            yield Static("gputui keys  [dim](up/down, pgup/pgdn: scroll; esc: close)[/]", id="help-title")
            yield Static(key_table(self._keys, self._refusals))
            yield Static(UTIL_VS_SM, id="help-gpm")
