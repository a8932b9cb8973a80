"""A fleet polled at once, each server's readings run through its own diagnostics: exporters scraped one by one
(FleetPoller, `--remote`) or the whole fleet read from Prometheus (PrometheusPoller, `--prometheus`).

Sources only turn a scrape or a query's answer into Snapshots (gputui/sources/remote.py, sources/prometheus/);
each server of `--remote` is polled by a Sampler of its own, as the monitor polls one machine, and the fleet view
runs `poll()` in the one sampling loop. Each server's recent readings stay in its HostState (`recent`) so that
`judge_fleet` can read every server's window side by side (the fleet findings, diagnostics/fleet.py) on that same
thread, never on the UI's.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Protocol

from gputui.diagnostics.findings import Finding
from gputui.diagnostics.fleet_rules import FleetFinding, NodeWindow, fleet_findings
from gputui.diagnostics.tick import Tick, tick_of
from gputui.diagnostics.verdict import Verdict
from gputui.model import Snapshot
from gputui.session.diagnose import ClosedFindings, Diagnose, new_diagnose, once_per_reading, tolerant
from gputui.session.sampling import Sampler
from gputui.sources.base import SourceUnavailable
from gputui.sources.prometheus.client import PrometheusClient, PrometheusError
from gputui.sources.prometheus.fleet_query import FleetHistory, NodeSource, read_fleet, read_history

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
    # The reading is the last one got, kept while its source (Prometheus) fails; `error` says why.
    stale: bool = False
    source: NodeSource = "gputui"  # whose series it was read from: gputui's, or only dcgm-exporter's
    # Its readings over the last FLEET_WINDOW_S, oldest first, the newest being `snapshot`; () while unreachable:
    # a gap ends a window, and stale readings are judged no more than they are shown.
    recent: tuple[Snapshot, ...] = ()

    @property
    def reachable(self) -> bool:
        return self.snapshot is not None

    def judged(self, tick: Tick, now: float) -> HostState:
        """This server with a new reading and what its diagnostics made of it, read at `now`."""
        return HostState(
            self.target,
            self.url,
            tick.snapshot,
            tick.active,
            tick.closed,
            tick.verdict,
            last_ok=now,
            last_attempt=now,
            source=self.source,
            recent=with_reading(self.recent, tick.snapshot),
        )

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
        timeout: float | None = None,
        diagnose_factory: Callable[[], Diagnose] | None = new_diagnose,
        clock: Callable[[], float] = time.time,
    ) -> None:
        # Imported here: the exporter's page parser comes from prometheus-client, which --prometheus does not need.
        from gputui.sources.remote import DEFAULT_TIMEOUT_S, RemoteSource

        timeout = DEFAULT_TIMEOUT_S if timeout is None else timeout
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
        return previous.judged(tick, now)

    def close(self) -> None:
        self._pool.shutdown(wait=True)


# What a host that Prometheus stops answering for is shown with: its series went stale or the node left.
VANISHED = "no longer in Prometheus's answer (the node or its exporter is down, or it left --match)"
# The history read at start, so the diagnostics' windows open on data rather than wait a minute.
WARM_UP_S = 60.0


class PrometheusPoller:
    """The whole fleet from one Prometheus server: the public surface of FleetPoller, one HostState per host found.

    Each `poll()` is one read_fleet (a few batched queries, never one per host); the first also reads the last
    `warm_up_s` seconds (query_range) through each host's diagnostics. Each host's readings go through its own
    engine, once each. A Prometheus that is down, slow or answers with an error leaves the last states as they
    were, marked stale with the reason; hosts that appear later are added (after those known), and a host that
    vanishes stays, unreachable, with when it was last seen.
    """

    def __init__(
        self,
        client: PrometheusClient,
        match: str | None = None,
        *,
        diagnose_factory: Callable[[], Diagnose] | None = new_diagnose,
        clock: Callable[[], float] = time.time,
        warm_up_s: float = WARM_UP_S,
        step_s: float = FLEET_DEFAULT_INTERVAL,
    ) -> None:
        self.client = client
        self.match = match
        self._factory = diagnose_factory
        self._clock = clock
        self._warm_up_s = warm_up_s
        self._step_s = max(FLEET_MIN_INTERVAL, step_s)
        self._states: dict[str, HostState] = {}
        self._diagnose: dict[str, Diagnose] = {}
        self._warnings: tuple[str, ...] = ()
        self._primed: dict[str, tuple[Snapshot, ...]] = {}  # each host's history read at start, for its window
        self.error: str | None = None  # why the last poll could not read Prometheus

    @property
    def states(self) -> tuple[HostState, ...]:
        return tuple(self._states.values())

    @property
    def notices(self) -> tuple[str, ...]:
        """What the view says beside the hosts: the connection's safety, Prometheus's warnings (partial data)."""
        partial = tuple(f"Prometheus warns (partial data): {w}" for w in self._warnings)
        failed = () if self.error is None else (f"Prometheus failed, showing the last readings: {self.error}",)
        return (*self.client.notices, *failed, *partial)

    def poll(self) -> tuple[HostState, ...]:
        """Read the fleet once and return every host's state, in the order they were found."""
        now = self._clock()
        if self._warm_up_s > 0:
            warm_up, self._warm_up_s = self._warm_up_s, 0.0
            self._prime(now - warm_up, now)
        try:
            reading = read_fleet(self.client, self.match, at=now)
        except PrometheusError as exc:
            self.error = str(exc)
            self._states = {
                host: replace(state, stale=state.snapshot is not None, error=str(exc), last_attempt=now)
                for host, state in self._states.items()
            }
            return self.states
        self.error, self._warnings = None, reading.warnings
        for host in sorted(set(reading.hosts) | set(reading.unreadable)):
            primed = self._primed.pop(host, ())
            self._states.setdefault(host, HostState(target=host, url=self.client.url, snapshot=None, recent=primed))
        for host, state in self._states.items():
            found = reading.hosts.get(host)
            if found is not None:
                tick = self._judge(host, found.snapshot)
                url = f"//{found.instance}" if found.instance else self.client.url
                self._states[host] = replace(state, url=url, source=found.source).judged(tick, now)
            else:
                why = reading.unreadable.get(host, VANISHED)
                self._states[host] = replace(
                    state,
                    snapshot=None,
                    findings=(),
                    closed=(),
                    verdict=None,
                    error=why,
                    last_attempt=now,
                    stale=False,
                    recent=(),
                )
        return self.states

    def _judge(self, host: str, snapshot: Snapshot) -> Tick:
        if self._factory is None:
            return Tick(snapshot)
        diagnose = self._diagnose.get(host)
        if diagnose is None:
            diagnose = self._diagnose[host] = once_per_reading(tolerant(self._factory(), host))
        state = diagnose(snapshot)
        return tick_of(snapshot, state)

    def _prime(self, start: float, end: float) -> None:
        """Feed each host's recent history through its diagnostics; without it (Prometheus failing now) the
        windows simply fill from the live readings."""
        if self._factory is None:
            return
        try:
            history = read_history(self.client, self.match, start, end, self._step_s)
        except PrometheusError:
            return
        for host, seen in history.hosts.items():
            for snapshot in seen.snapshots:
                self._judge(host, snapshot)
                self._primed[host] = with_reading(self._primed.get(host, ()), snapshot)

    def close(self) -> None:
        """Nothing is held between polls: each query opens its own connection."""


@dataclass(frozen=True, slots=True)
class NodeDiagnosis:
    """One node's history judged by its own engine: the verdict at the end, the findings open then, and every
    finding seen (open at the end first, then those that closed during the window)."""

    host: str
    source: NodeSource
    snapshots: tuple[Snapshot, ...]
    verdict: Verdict | None
    open: tuple[Finding, ...]
    findings: tuple[Finding, ...]


def diagnose_history(history: FleetHistory, diagnose_factory: Callable[[], Diagnose]) -> tuple[NodeDiagnosis, ...]:
    """Each node's readings, oldest first, through an engine of its own (`diagnose_factory()`), nodes by name."""
    out = []
    for host in sorted(history.hosts):
        node = history.hosts[host]
        diagnose = once_per_reading(tolerant(diagnose_factory(), host))
        last = None
        ended = ClosedFindings()
        for snapshot in node.snapshots:
            last = diagnose(snapshot)
            ended.add(last.closed)
        still = () if last is None else last.active
        closed = ended.worst_first()
        verdict = None if last is None else last.verdict
        out.append(NodeDiagnosis(host, node.source, node.snapshots, verdict, still, (*still, *closed)))
    return tuple(out)
