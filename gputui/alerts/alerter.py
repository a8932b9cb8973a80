"""The alerter: a sink of the sampling loop's ticks that turns findings opening and closing into messages."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from gputui.alerts.delivery import FIRST_BACKOFF_S, Outbox, Say, Target, targets_for
from gputui.alerts.edges import Edges
from gputui.alerts.message import alert_message
from gputui.config import AlertsConfig
from gputui.diagnostics.tick import Tick


class Alerter:
    """`observe(tick)` runs on the sampling thread and only queues; `bell` (the monitor's) is called there when an
    alert opens and must not block; `say` gets the delivery's reports (a failing target, once) on its thread."""

    def __init__(
        self,
        config: AlertsConfig,
        say: Say,
        *,
        bell: Callable[[], object] | None = None,
        targets: Sequence[Target] | None = None,
        first_backoff_s: float = FIRST_BACKOFF_S,
    ) -> None:
        self.config = config
        self._edges = Edges(config.min_severity, config.min_interval_s)
        self._bell = bell if config.bell else None
        chosen = targets_for(config) if targets is None else targets
        self.outbox = Outbox(chosen, say, retries=config.retries, first_backoff_s=first_backoff_s) if chosen else None

    def observe(self, tick: Tick) -> None:
        snapshot = tick.snapshot
        system = snapshot.system
        opened = False
        for state, finding in self._edges.update(snapshot.timestamp, tick.active, tick.closed):
            opened = opened or state == "open"
            if self.outbox is not None:
                simulated = system.source == "simulated" or system.remote_source == "simulated"
                self.outbox.post(alert_message(finding, state, system.hostname, tick.verdict, simulated=simulated))
        if opened and self._bell is not None:
            self._bell()

    def close(self, timeout: float = 0.0) -> None:
        """Lets what is queued go out, waiting at most `timeout`."""
        if self.outbox is not None:
            self.outbox.close(timeout)
