"""A fleet of exporters polled at once, each server's readings run through its own diagnostics.

Sources only turn a scrape into a Snapshot (gputui/sources/remote.py); running the diagnostics on what they read
belongs here, above them, as the monitor's sampling loop does for one machine.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from gputui.diagnostics.findings import Finding
from gputui.diagnostics.verdict import Verdict
from gputui.model import Snapshot
from gputui.session.diagnose import Diagnose, new_diagnose
from gputui.sources.base import SourceUnavailable
from gputui.sources.remote import DEFAULT_TIMEOUT_S, RemoteSource

# The fleet's poll period: parsing one 8-GPU scrape costs ~30 ms of CPU, so 2 s by default and never under 1 s.
FLEET_DEFAULT_INTERVAL = 2.0
FLEET_MIN_INTERVAL = 1.0

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

    @property
    def reachable(self) -> bool:
        return self.snapshot is not None

    @property
    def name(self) -> str:
        """The server's own hostname once known, else the address it was given as."""
        return self.snapshot.system.hostname if self.snapshot is not None else self.target


class FleetPoller:
    """Scrapes several exporters at once; one that stops answering is marked unreachable and tried again next poll.

    `poll()` blocks for at most about `timeout` seconds, whatever the number of servers: call it from a worker
    thread, one call at a time. Each server's readings go through its own diagnostics engine (`diagnose_factory()`;
    None turns them off). Reading one 8-GPU scrape costs ~30 ms of CPU (prometheus-client's parser): poll a fleet
    every few seconds, not many times a second.
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
        self._sources = [RemoteSource(target, timeout=timeout, clock=clock) for target in targets]
        self._diagnoses = [diagnose_factory() if diagnose_factory else None for _ in targets]
        self._states = [
            HostState(target=t, url=s.url, snapshot=None) for t, s in zip(targets, self._sources, strict=True)
        ]
        self._pool = ThreadPoolExecutor(max_workers=min(16, len(targets)), thread_name_prefix="gputui-fleet")

    @property
    def states(self) -> tuple[HostState, ...]:
        return tuple(self._states)

    def poll(self) -> tuple[HostState, ...]:
        """Scrape every server once (in parallel) and return the new states, in the order given."""
        self._states = list(self._pool.map(self._poll_one, range(len(self._sources))))
        return self.states

    def _poll_one(self, i: int) -> HostState:
        source, previous, now = self._sources[i], self._states[i], self._clock()
        try:
            snapshot = source.sample()
        except SourceUnavailable as exc:
            return HostState(
                previous.target, previous.url, snapshot=None, error=str(exc), last_ok=previous.last_ok, last_attempt=now
            )
        findings, closed, verdict = previous.findings, previous.closed, previous.verdict
        diagnose = self._diagnoses[i]
        is_new = previous.snapshot is None or snapshot.timestamp != previous.snapshot.timestamp
        if diagnose is not None and is_new:
            try:
                state = diagnose(snapshot)
                findings, closed, verdict = state.active, state.closed, state.verdict
            except Exception:  # the server's readings are still worth showing when a rule breaks on them
                log.exception("the diagnostics failed on %s", source.address)
                findings, closed, verdict = (), (), None
        return HostState(
            previous.target, previous.url, snapshot, findings, closed, verdict, last_ok=now, last_attempt=now
        )

    def close(self) -> None:
        self._pool.shutdown(wait=True)
