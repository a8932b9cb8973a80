"""One poll of one machine: read the source, run the diagnostics, hand the Tick to the sinks (the recording).

The monitor, `diagnose`, the exporter and each server of the fleet view poll through a Sampler; the loop
(gputui.session.loop) says when.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from gputui import argtypes
from gputui.diagnostics.tick import Tick, tick_of
from gputui.session.diagnose import Diagnose
from gputui.sources.base import Source

if TYPE_CHECKING:
    from gputui.session.stacks import JobStacks

# The refresh intervals `+` and `-` step through; `--interval`'s type (argtypes.sample_interval) keeps within them.
INTERVALS, MIN_INTERVAL, MAX_INTERVAL = argtypes.INTERVALS, argtypes.MIN_INTERVAL, argtypes.MAX_INTERVAL


# Takes every tick on the sampling thread, as it is made (the recording); must not block.
Sink = Callable[[Tick], object]


class Sampler:
    """Owns the source; `take()` runs one poll, one call at a time (the loop's thread, or a test's).

    With `stacks`, each reading's processes carry the latest activity read of their stacks before the diagnostics
    judge it (and the recording keeps it), and a tick whose GPUs wait on their job asks for a window."""

    def __init__(
        self,
        source: Source,
        diagnose: Diagnose | None = None,
        sinks: Sequence[Sink] = (),
        stacks: JobStacks | None = None,
    ) -> None:
        self.source = source
        self._diagnose = diagnose
        self._sinks = tuple(sinks)
        self.stacks = stacks

    @property
    def diagnoses(self) -> bool:
        """Each tick has the diagnostics' verdict and findings (not so for readings only)."""
        return self._diagnose is not None

    def take(self) -> Tick:
        snapshot = self.source.sample()
        if self.stacks is not None:
            snapshot = self.stacks.attach(snapshot)
        tick = tick_of(snapshot, None if self._diagnose is None else self._diagnose(snapshot))
        if self.stacks is not None:
            self.stacks.consider(tick)
        for sink in self._sinks:
            sink(tick)
        return tick
