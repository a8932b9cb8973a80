"""`gputui diagnose --at T [--window 10m]`: the health check of a past span, answered from the history store.

The recorded readings of [T - window, T] go through a diagnostics engine of their own, one by one, as replay feeds
them (gputui/session/replay_sampler.py) and as the live check judged them: the readings before the verdict is
known are the warm-up, those after it are judged and accounted. So a span the store kept whole gives the verdict,
findings, activity and account the live check printed, and the same exit code; the first line says it comes from
the history, which span, and which store.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

from gputui.commands import common
from gputui.commands.diagnose import (
    DEFAULT_WINDOW_S,
    _emit,
    _Seen,
    is_known,
    warm_up_polls,
)
from gputui.config import Config
from gputui.diagnostics.engine import DiagnosticsEngine
from gputui.diagnostics.tick import tick_of
from gputui.record.reader import Recording


@dataclass(frozen=True, slots=True)
class FromHistory:
    """Where an answer from the store comes from: the store, the span asked, the readings found in it."""

    store: Path
    start: float
    end: float
    readings: int

    def line(self) -> str:
        return (
            f"FROM THE HISTORY  {common.clock(self.start)} to {common.clock(self.end)} "
            f"({self.readings} readings), store {self.store}"
        )

    def to_dict(self) -> dict[str, object]:
        return {"store": str(self.store), "from": self.start, "to": self.end, "readings": self.readings}


def run(args: argparse.Namespace, config: Config, lang: str) -> int:
    from gputui.store.errors import StoreError
    from gputui.store.reader import Store

    window = args.window if args.window is not None else DEFAULT_WINDOW_S
    start, end = args.at - window, args.at
    try:
        store = Store(common.store_dir(args))
        recording = store.read(start, end)
        extent = store.extent() if not recording.ticks else None
    except StoreError as exc:
        return common.usage_error(exc)
    for warning in recording.warnings:
        print(f"gputui: warning: {warning}", file=sys.stderr)
    if not recording.ticks:
        held = "nothing yet" if extent is None else f"{common.clock(extent[0])} to {common.clock(extent[1])}"
        return common.usage_error(
            f"{store.directory} holds nothing from {common.clock(start)} to {common.clock(end)}: it holds {held}"
        )
    seen = judge(recording, config, lang)
    outcome = seen.outcome(recording.ticks[-1].system)
    judged_s = (recording.end - recording.start) - outcome.warm_up_s
    source = FromHistory(store.directory, start, end, len(recording.ticks))
    _emit(args, outcome, lang, config.cost.price, round(judged_s, 3), source)
    return common.exit_code(
        (f.severity for f in outcome.findings), fail_on=common.FAIL_ON[args.fail_on], known=outcome.known
    )


def judge(recording: Recording, config: Config, lang: str) -> _Seen:
    """Every recorded reading through a fresh engine, judged from the first known verdict on (or after a whole
    window's readings without one), as the live check judges."""
    interval = recording.header.interval_s
    engine = DiagnosticsEngine(config.diagnostics, lang)
    warm_up = warm_up_polls(config.diagnostics.thresholds.window_s / 2, interval)
    seen = _Seen(interval)
    for taken, snapshot in enumerate(recording.ticks, start=1):
        tick = tick_of(snapshot, engine.update(snapshot))
        seen.add(tick, judged=seen.judged > 0 or is_known(tick.verdict) or taken > warm_up)
    return seen
