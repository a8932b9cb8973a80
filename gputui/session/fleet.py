"""A fleet of exporters polled at once, each server's readings run through its own diagnostics.

Sources only turn a scrape into a Snapshot (gputui/sources/remote.py); each server is polled by a Sampler of its
own, as the monitor polls one machine, and the fleet view runs `poll()` in the one sampling loop. Each server's
recent readings stay in its HostState (`recent`) so that `judge_fleet` can read every server's window side by side
(the fleet findings, diagnostics/fleet.py) on that same thread, never on the UI's.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Literal, Protocol

from gputui.diagnostics.findings import Finding
from gputui.diagnostics.fleet import FleetFinding, NodeWindow, fleet_findings
from gputui.diagnostics.verdict import Verdict
from gputui.model import Snapshot
from gputui.session.diagnose import Diagnose, new_diagnose, once_per_reading, tolerant
from gputui.session.sampling import Sampler
from gputui.sources.base import SourceUnavailable
from gputui.sources.remote import DEFAULT_TIMEOUT_S, RemoteSource

# The fleet's poll period: parsing one 8-GPU scrape costs ~30 ms of CPU, so 2 s by default and never under 1 s.
FLEET_DEFAULT_INTERVAL = 2.0
FLEET_MIN_INTERVAL = 1.0
# Each server's readings kept for the fleet findings: `idle_allocated` needs minutes (Thresholds.idle_allocation_s,
# 180 s) and a straggler most of its window; the count bounds memory at fast polls (150 readings at 2 s).
FLEET_WINDOW_S = 300.0
FLEET_HISTORY = 160

log = logging.getLogger(__name__)


def fleet_interval(requested: float) -> float:
    """The poll period for a fleet: what was asked, but at least FLEET_MIN_INTERVAL (reading a scrape costs CPU)."""
    return max(FLEET_MIN_INTERVAL, requested)


@dataclass(frozen=True, slots=True)
class HostState:
    """One server of a fleet as the view shows it: its newest reading, verdict and findings (open, and those that
    closed while it was watched), or why it is unreachable."""

    target: str  # host:port as given
    url: str
    snapshot: Snapshot | None  # None while unreachable: a stale reading is never shown as current
    findings: tuple[Finding, ...] = ()
    closed: tuple[Finding, ...] = ()  # newest first
    verdict: Verdict | None = None
    error: str | None = None  # why the last scrape failed
    last_ok: float | None = None  # wall-clock time of the last good scrape
    last_attempt: float | None = None
    # Its readings over the last FLEET_WINDOW_S, oldest first, the newest being `snapshot`; () while unreachable:
    # a gap ends a window, and stale readings are judged no more than they are shown.
    recent: tuple[Snapshot, ...] = ()
    source: Literal["gputui", "dcgm-exporter"] = "gputui"  # whose series it was read from

    @property
    def reachable(self) -> bool:
        return self.snapshot is not None

    @property
    def name(self) -> str:
        """The server's own hostname once known, else the address it was given as."""
        return self.snapshot.system.hostname if self.snapshot is not None else self.target


def with_reading(recent: tuple[Snapshot, ...], snapshot: Snapshot) -> tuple[Snapshot, ...]:
    """`recent` with a new reading at its end (a reading seen again is not added twice), cut to FLEET_WINDOW_S
    before it and at most FLEET_HISTORY readings."""
    if recent and recent[-1].timestamp >= snapshot.timestamp:
        return recent
    since = snapshot.timestamp - FLEET_WINDOW_S
    kept = [s for s in recent[-(FLEET_HISTORY - 1) :] if s.timestamp >= since]
    return (*kept, snapshot)


def node_window(state: HostState) -> NodeWindow:
    """A server's window as the fleet rules read it: its recent readings and its engine's open findings."""
    return NodeWindow(
        host=state.name,
        source=state.source,
        snapshots=state.recent if state.reachable else (),
        findings=state.findings if state.reachable else (),
    )


def judge_fleet(states: Sequence[HostState], lang: str = "en") -> tuple[FleetFinding, ...]:
    """The fleet findings over every server's window; a rule that raises is logged and leaves none, so the
    servers' own readings and findings are still shown."""
    try:
        return fleet_findings([node_window(state) for state in states], lang)
    except Exception:
        log.exception("the fleet diagnostics failed")
        return ()


class Polls(Protocol):
    """What polls a fleet: FleetPoller, or any poller with its surface."""

    def poll(self) -> tuple[HostState, ...]: ...


@dataclass(frozen=True, slots=True)
class FleetRound:
    """One poll of every server, and the fleet findings over their windows after it."""

    states: tuple[HostState, ...]
    findings: tuple[FleetFinding, ...] = ()


def poll_and_judge(poller: Polls, lang: str = "en") -> FleetRound:
    """Poll every server, then judge the fleet: what the fleet view's sampling loop runs, on its own thread."""
    states = poller.poll()
    return FleetRound(states, judge_fleet(states, lang))


class FleetPoller:
    """Scrapes several exporters at once; one that stops answering is marked unreachable and tried again next poll.

    `poll()` blocks for at most about `timeout` seconds, whatever the number of servers: call it from a worker
    thread, one call at a time. Each server's readings go through its own diagnostics engine (`diagnose_factory()`;
    None turns them off), once each: a reading the exporter has not replaced since is not judged again, and a
    rule that breaks leaves that server's readings shown without findings. Reading one 8-GPU scrape costs ~30 ms
    of CPU (prometheus-client's parser): poll a fleet every few seconds, not many times a second.
    """

    def __init__(
        self,
        targets: Sequence[str],
        *,
        timeout: float = DEFAULT_TIMEOUT_S,
        diagnose_factory: Callable[[], Diagnose] | None = new_diagnose,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if not targets:
            raise ValueError("no exporters to poll")
        self._clock = clock
        sources = [RemoteSource(target, timeout=timeout, clock=clock) for target in targets]
        self._samplers = [
            Sampler(s, None if diagnose_factory is None else once_per_reading(tolerant(diagnose_factory(), s.address)))
            for s in sources
        ]
        self._states = [HostState(target=t, url=s.url, snapshot=None) for t, s in zip(targets, sources, strict=True)]
        self._pool = ThreadPoolExecutor(max_workers=min(16, len(targets)), thread_name_prefix="gputui-fleet")

    @property
    def states(self) -> tuple[HostState, ...]:
        return tuple(self._states)

    def poll(self) -> tuple[HostState, ...]:
        """Scrape every server once (in parallel) and return the new states, in the order given."""
        self._states = list(self._pool.map(self._poll_one, range(len(self._samplers))))
        return self.states

    def _poll_one(self, i: int) -> HostState:
        previous, now = self._states[i], self._clock()
        try:
            tick = self._samplers[i].take()
        except SourceUnavailable as exc:
            return HostState(
                previous.target, previous.url, snapshot=None, error=str(exc), last_ok=previous.last_ok, last_attempt=now
            )
        return HostState(
            previous.target,
            previous.url,
            tick.snapshot,
            tick.active,
            tick.closed,
            tick.verdict,
            last_ok=now,
            last_attempt=now,
            recent=with_reading(previous.recent, tick.snapshot),
        )

    def close(self) -> None:
        self._pool.shutdown(wait=True)
