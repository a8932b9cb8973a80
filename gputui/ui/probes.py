"""The monitor's side of the probes: one ProbeRunner at a time, on the app's event loop, never blocking it.

The controller asks first where a probe would slow somebody down, starts the runner in an app worker, shows
its progress on the status line, keeps the snapshots the monitor takes meanwhile (the GPU under the probe's
load, for judge_run) and hands the result to the diagnostics engine as a finding. Quitting, a lost terminal or
unmounting stops the worker's whole process group: no probe outlives the monitor.
"""

from __future__ import annotations

import dataclasses
import os
from collections import deque
from collections.abc import Callable, Coroutine, Mapping
from typing import Any, Protocol

from rich.text import Text

from gputui.diagnostics.findings import Finding, Severity
from gputui.formatting import fmt_figure
from gputui.model import Snapshot
from gputui.probes.judge import (
    RunJudgement,
    judge_run,
    link_under_load,
    mig_device,
    other_users,
    pcie_link,
    peer_links,
    rejudge_pcie,
)
from gputui.probes.protocol import INSTALL_HINT, BadLine, Error, Final, Message, ProbeName, Progress, Result
from gputui.probes.result_finding import CPU_RUN, PROBE_NAMES, to_finding
from gputui.probes.runner import KILL_GRACE_S, ProbeRequest, ProbeRunner
from gputui.ui.screens.confirm_probe import ConfirmProbe
from gputui.ui.widgets.probe_status import ProbeStatus

# The worker's own default stress length, to show "12/30 s" before it says otherwise.
STRESS_DEFAULT_S = 30.0
# A result stays open (coloured, counted in the header) this long, then moves to the pane's history.
RESULT_OPEN_S = 60.0
# The status line keeps showing how the last probe ended for this long.
RESULT_SHOWN_S = 30.0
# A note on the status line (why a key did nothing) stays this long.
NOTE_SHOWN_S = 10.0
# What every probe key says in replay: a probe would load this machine's GPUs, not the ones recorded.
REPLAY_REFUSAL = "replay: probes test this machine, not the recorded one"
# Probes that load more than the selected GPU: no GPU of theirs to judge the run by.
_NOT_ONE_GPU = ("disk", "p2p")
# Snapshots kept for judging a run: an hour at 1 s, enough for any probe within its timeout.
MAX_RUN_SNAPSHOTS = 3600
CPU_RUN_STYLE = "bold reverse"
SEVERITY_STYLES = {Severity.CRITICAL: "bold red", Severity.WARNING: "yellow", Severity.INFO: "cyan"}


def format_progress(request: ProbeRequest, progress: Progress) -> str:
    """'12/30 s  612 TFLOP/s  (600 results checked)' or '40%  12.3 GB/s  (copy 8/20)': how far, the figure in
    SI units, and what the worker is at."""
    if request.probe == "stress":
        seconds = request.seconds or STRESS_DEFAULT_S
        parts = [f"{progress.fraction * seconds:.0f}/{seconds:.0f} s"]
    else:
        parts = [f"{100 * progress.fraction:.0f}%"]
    if progress.figure is not None:
        parts.append(fmt_figure(progress.figure, progress.unit))
    if progress.message:
        parts.append(f"({progress.message})")
    return "  ".join(parts)


def progress_line(request: ProbeRequest, progress: Progress, gpu: int | None) -> Text:
    """The running line: "CPU RUN stress probe  12/30 s  1.5 GFLOP/s ..." on the CPU, in plain sight; on a GPU
    "stress probe on GPU 0  12/30 s  612 TFLOP/s ...". A CPU run never names the GPU it was meant for."""
    line = Text()
    if progress.on_cpu:
        line.append(CPU_RUN, style=CPU_RUN_STYLE)
        line.append(" ")
    target = f" on GPU {gpu}" if gpu is not None and not progress.on_cpu else ""
    line.append(f"{PROBE_NAMES[request.probe]} probe{target}", style="bold")
    line.append(f"  {format_progress(request, progress)}")
    line.append("   x cancels", style="dim")
    return line


def describe_users(snapshot: Snapshot, pids: tuple[int, ...]) -> list[str]:
    """'pid 4242  bob  python3': who a probe would slow down, as the host sees them."""
    lines = []
    for pid in pids:
        host = snapshot.host.process(pid)
        user = host.user if host and host.user else "n/a"
        name = host.name if host else "n/a"
        lines.append(f"pid {pid:<8} {user:<12} {name}")
    return lines


def result_finding(
    final: Final, gpu: int | None, at: float, snapshots: list[Snapshot], started_at: float | None, lang: str = "en"
) -> Finding:
    """The finding for a finished run: judged against the snapshots taken during it when it used a GPU."""
    judgement: RunJudgement | None = None
    if isinstance(final, Result) and not final.on_cpu and final.probe not in _NOT_ONE_GPU and gpu is not None:
        if final.probe == "pcie":
            final = rejudge_pcie(final, link_under_load(snapshots, gpu))
        if started_at is not None:
            judgement = judge_run(snapshots, gpu, started_at)
    return to_finding(final, gpu, at, judgement, lang)


class ProbeHost(Protocol):
    """What the probe controller needs of the monitor, and nothing more: the GPU the user chose, the newest
    reading, a place for findings, the recording, and Textual's services. GpuTuiApp is one. Everything the
    controller has to say goes on its status line, never in a pop-up over the findings."""

    def selected_gpu(self) -> int | None: ...

    def latest_snapshot(self) -> Snapshot | None: ...

    def add_finding(self, finding: Finding, open_for_s: float) -> None: ...

    def record_probe(self, message: Message | BadLine) -> None: ...

    def mount_probe_status(self, status: ProbeStatus) -> None: ...

    def push_screen(self, screen: ConfirmProbe, callback: Callable[[str | None], None]) -> object: ...

    def run_worker(self, work: Coroutine[Any, Any, None], *, name: str, group: str, exit_on_error: bool) -> object: ...

    def set_timer(self, delay: float, callback: Callable[[], None]) -> object: ...

    def refresh_bindings(self) -> None: ...


class ProbeController:
    """Owns the one running probe. `adjust` rewrites each request before it runs (tests: tiny CPU sizes) and
    `env` is added to the worker's environment. With a `refusal` (a replay: the probes would test this machine,
    not the recorded one) no probe ever starts: each probe key only shows the refusal. `lang` words the
    findings' evidence."""

    def __init__(
        self,
        host: ProbeHost,
        *,
        adjust: Callable[[ProbeRequest], ProbeRequest] = lambda request: request,
        env: Mapping[str, str] | None = None,
        kill_grace_s: float = KILL_GRACE_S,
        refusal: str | None = None,
        lang: str = "en",
    ) -> None:
        self.host = host
        self.adjust = adjust
        self.env = dict(env or {})
        self.kill_grace_s = kill_grace_s
        self.refusal = refusal
        self.lang = lang
        self.status = ProbeStatus(id="probe-status")
        self.runner: ProbeRunner | None = None
        self.last: Finding | None = None
        self._shown = 0  # counts what the status line showed, so that an old timer leaves a newer line alone
        self._asking = False
        self._gpu: int | None = None
        self._started_at: float | None = None
        self._snapshots: deque[Snapshot] = deque(maxlen=MAX_RUN_SNAPSHOTS)

    @property
    def running(self) -> bool:
        return self.runner is not None

    # -- starting ------------------------------------------------------------------------------------------

    def refuse(self) -> bool:
        """Show why probes do not run here, when they do not; True when refused."""
        if self.refusal is None:
            return False
        self._note(self.refusal, style="yellow")
        return True

    def start(self, probe: ProbeName) -> None:
        """The key for `probe`: on the selected GPU (or GPU 0), after asking where it would slow others."""
        if self._asking or self.refuse():
            return
        if self.runner is not None:
            self._note(f"a {PROBE_NAMES[self.runner.request.probe]} probe is running; x cancels it", style="yellow")
            return
        gpu = self.host.selected_gpu()
        gpu = 0 if gpu is None else gpu
        latest = self.host.latest_snapshot()
        if probe == "disk":
            self._ask(
                ProbeRequest("disk"), ConfirmProbe("Disk read probe: sequential read, never writes", path=os.getcwd())
            )
            return
        if latest is None:  # who else uses the GPU is not known yet
            self._note("no reading of the GPUs yet: try the probe again in a moment")
            return
        if probe == "p2p":
            self._ask_p2p(latest)
            return
        instance = mig_device(latest, gpu)
        request = ProbeRequest(
            probe, gpu=gpu, link=pcie_link(latest, gpu), mig_device=instance.uuid if instance is not None else None
        )
        others = other_users(latest, gpu, (os.getpid(),))
        if not others:
            self._launch(request)
            return
        title = (
            f"GPU {gpu} is used by {len(others)} other process{'es' if len(others) > 1 else ''}: "
            f"a {probe} probe would slow them down."
        )
        self._ask(request, ConfirmProbe(title, describe_users(latest, others)))

    def _ask_p2p(self, latest: Snapshot) -> None:
        """Always asked: every pair of GPUs gets copies, so the question names who all of them would slow."""
        count = len(latest.gpu_info)
        others = sorted({pid for info in latest.gpu_info for pid in other_users(latest, info.index, (os.getpid(),))})
        title = (
            f"GPU-to-GPU probe: peer copies between every pair of the {count} GPUs, "
            f"{count * (count - 1)} directions; their links and memory are busy meanwhile."
        )
        if others:
            title += f" Used by {len(others)} other process{'es' if len(others) > 1 else ''}:"
        request = ProbeRequest("p2p", peer_links=peer_links(latest))
        self._ask(request, ConfirmProbe(title, describe_users(latest, tuple(others))))

    def _ask(self, request: ProbeRequest, screen: ConfirmProbe) -> None:
        self._asking = True

        def answered(path: str | None) -> None:
            self._asking = False
            if path is not None:
                self._launch(dataclasses.replace(request, path=path) if request.probe == "disk" else request)

        self.host.push_screen(screen, answered)

    def _launch(self, request: ProbeRequest) -> None:
        request = self.adjust(request)
        runner = ProbeRunner(request, env=self.env, kill_grace_s=self.kill_grace_s)
        self.runner = runner
        self.host.refresh_bindings()  # `x Stop` shows in the footer while a probe runs
        self._gpu = None if request.probe in _NOT_ONE_GPU else request.gpu
        self._snapshots.clear()
        latest = self.host.latest_snapshot()
        if latest is not None:
            self._snapshots.append(latest)
        self._started_at = latest.timestamp if latest is not None else None
        starting = Text()
        if request.cpu:
            starting.append(CPU_RUN, style=CPU_RUN_STYLE)
            starting.append(" ")
        target = "" if self._gpu is None or request.cpu else f" for GPU {self._gpu}"
        starting.append(f"{PROBE_NAMES[request.probe]} probe starting{target}...", style="bold")
        starting.append("   x cancels", style="dim")
        self._show(starting)
        self.host.run_worker(self._run(runner), name=f"probe-{request.probe}", group="probe", exit_on_error=False)

    # -- running -------------------------------------------------------------------------------------------

    async def _run(self, runner: ProbeRunner) -> None:
        async for message in runner:
            self.host.record_probe(message)
            if isinstance(message, Progress):
                self._show(progress_line(runner.request, message, self._gpu))
        assert runner.final is not None, "the runner always ends with a final message"
        self._finish(runner.final)

    def observe(self, snapshot: Snapshot) -> None:
        """Every snapshot the monitor takes; those taken while a probe runs judge its run."""
        if self.runner is not None:
            self._snapshots.append(snapshot)

    def _finish(self, final: Final) -> None:
        latest = self.host.latest_snapshot()
        at = latest.timestamp if latest is not None else self._started_at or 0.0
        finding = result_finding(final, self._gpu, at, list(self._snapshots), self._started_at, self.lang)
        self.runner = None
        self.host.refresh_bindings()
        self._snapshots.clear()
        self.last = finding
        self.host.add_finding(finding, open_for_s=RESULT_OPEN_S)
        self._announce(final, finding)

    def _announce(self, final: Final, finding: Finding) -> None:
        """How the run ended, in the words of its finding; a CPU run keeps its label in front."""
        style = SEVERITY_STYLES[finding.severity]
        line = Text()
        if isinstance(final, Error) and final.code == "no_torch":
            line.append(f"{finding.title}: {INSTALL_HINT}", style=style)
        elif isinstance(final, Result) and final.on_cpu:
            line.append(CPU_RUN, style=CPU_RUN_STYLE)
            line.append(finding.title.removeprefix(CPU_RUN), style=style)
        else:
            line.append(finding.title, style=style)
        line.append("   details: d (diagnostics)", style="dim")
        self._show(line, for_s=RESULT_SHOWN_S)

    def _note(self, text: str, style: str = "") -> None:
        """A short word on the status line (why a key did nothing); a running probe's next line replaces it."""
        self._show(Text(text, style=style), for_s=NOTE_SHOWN_S)

    def _show(self, line: Text, for_s: float | None = None) -> None:
        """Put `line` on the status line; with `for_s`, hide it after that long unless something newer came."""
        self.host.mount_probe_status(self.status)
        self.status.show(line)
        self._shown += 1
        if for_s is not None:
            shown = self._shown
            self.host.set_timer(for_s, lambda: self._expire(shown))

    def _expire(self, shown: int) -> None:
        if self._shown == shown and self.runner is None:
            self.status.show(None)

    # -- stopping ------------------------------------------------------------------------------------------

    def cancel(self) -> None:
        """The `x` key: SIGTERM to the worker's group, SIGKILL after the grace period; the run ends as an Error
        with code `cancelled`, which _run turns into a finding like any other end."""
        if self.refuse():
            return
        runner = self.runner
        if runner is None:
            self._note("no probe is running")
            return
        self._show(Text(f"{PROBE_NAMES[runner.request.probe]} probe: cancelling...", style="bold"))
        self.host.run_worker(runner.cancel(), name="probe-cancel", group="probe-cancel", exit_on_error=False)

    def failed(self, error: BaseException) -> None:
        """The run's own worker raised (not the probe: the monitor's side of it): its process group is killed
        (the runner's iteration was left, not ended), the keys are free again, and the status line says so."""
        runner, self.runner = self.runner, None
        self.host.refresh_bindings()
        if runner is not None:
            runner.kill_now()
        self._snapshots.clear()
        name = PROBE_NAMES[runner.request.probe] if runner is not None else "the"
        self._show(
            Text(f"{name} probe stopped: {type(error).__name__}: {error}", style="bold red"), for_s=RESULT_SHOWN_S
        )

    async def shutdown(self) -> None:
        """Before quitting: stop the worker's group and wait until it is gone (at most twice the grace)."""
        if self.runner is not None:
            await self.runner.cancel()

    def kill_now(self) -> None:
        """The last resort on unmount and lost terminals: SIGKILL the worker's group without waiting."""
        if self.runner is not None:
            self.runner.kill_now()
