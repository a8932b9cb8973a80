"""What the monitor reads of the history store, and how it walks the past: every store read goes through here.

The monitor never reads the store on its event loop: these functions run on worker threads and hand back frozen
results. The first frame never waits for them; the last hour then joins the charts, and the since-you-looked
line the header. Walking back shows a past tick as the live view would have: its findings and verdict judged again,
by an engine of its own, from the two minutes before it (as a replay's seek does), so that what the pane says of
03:10 is what these rules make of the readings held, whether they come from the monitor's ring or a span read from
the store at a jump.
"""

from __future__ import annotations

import bisect
import math
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from gputui.diagnostics.engine import DiagnosticsEngine, DiagnosticsState
from gputui.diagnostics.settings import DiagnosticsConfig
from gputui.diagnostics.tick import Tick, tick_of
from gputui.model import Snapshot, SystemInfo
from gputui.record.reader import TickSequence, TickStore
from gputui.store.errors import NoStore, StoreError
from gputui.store.minutes import MinuteRow
from gputui.store.reader import Store

# The monitor opens with this much of the past in its charts.
RECENT_S = 3600.0
# ...read this much at a time: a read holds its span's records decoded until it returns (an hour of 8 GPUs read at
# once peaked at 170 MB), and each piece is kept compact once read.
PIECE_S = 300.0
# A past tick's findings are judged from the readings this long before it.
JUDGE_S = 120.0
# A jump reads this much of the store on each side of the time asked for: ← and → walk within it.
JUMP_SPAN_S = 600.0
NO_HISTORY = "no history: start `gputui record` (README: Always on)"


# One reading of each GPU's utilization at a time: what a sparkline is built from.
UtilPoint = tuple[float, Mapping[int, float | None]]


@dataclass(frozen=True, slots=True)
class Since:
    """The minutes since the user last looked: what the since line says, read before the hour's ticks (a few
    dozen ms against seconds), so that the line shows first."""

    minutes: Sequence[MinuteRow]
    ticks_held: bool  # the tick tier holds ticks from the since line's start on


@dataclass(frozen=True, slots=True)
class Recent:
    """The last hour as the store holds it; `note` says why the charts leave the hour out."""

    ticks: Pieces  # oldest first, compact (lines kept compressed): an hour of 8 GPUs is a few MB
    warnings: tuple[str, ...] = ()
    note: str | None = None


def open_store(directory: Path) -> Store | None:
    """The store at `directory`; None where there is none; StoreError (its sentence) where it cannot be read."""
    try:
        return Store(directory)
    except NoStore:
        return None


def _kind(system: SystemInfo) -> str:
    return "the simulated machine" if system.source == "simulated" else f"a {system.source} source"


def load_since(directory: Path, since: float, now: float) -> Since | None:
    """The store's minutes from `since` to `now`; None: no store. StoreError goes to the caller, as below."""
    store = open_store(directory)
    if store is None:
        return None
    extent = store.extent()
    return Since(store.minutes(since, now), extent is not None and extent[1] >= since)


def load_recent(directory: Path, now: float, live: SystemInfo, span_s: float = RECENT_S) -> Recent | None:
    """The store's last `span_s` up to `now`; None: no store.
    StoreError (a newer store, a damaged one) goes to the caller, whose notice says it. A history of another kind
    of machine than the live one (a simulated recorder, a real monitor) stays out of the charts, and says so."""
    store = open_store(directory)
    if store is None:
        return None
    pieces: list[TickStore] = []
    warnings: list[str] = []
    recorded: SystemInfo | None = None
    start = now - span_s
    while start <= now:
        end = min(now, start + PIECE_S)
        recording = store.read(start, end if end == now else math.nextafter(end, -math.inf))
        warnings += [w for w in recording.warnings if w not in warnings]
        if recording.ticks:
            pieces.append(recording.ticks)
            recorded = recorded or recording.header.system
        start = end if end < now else math.inf
    note = None
    if recorded is not None and (recorded.source != live.source or recorded.hostname != live.hostname):
        note = f"the history at {directory} is of {_kind(recorded)} on {recorded.hostname}: the charts show only now"
    return Recent(Pieces(pieces), tuple(warnings), note)


class Pieces(TickSequence):
    """Spans read one after the other (each a compact TickStore), as one sequence oldest first, with the times of
    all its ticks (`timestamps`): what the walk steps by without decoding a tick."""

    def __init__(self, pieces: Sequence[TickStore]) -> None:
        self._pieces = list(pieces)
        self._starts: list[int] = []
        self.timestamps: list[float] = []
        for piece in self._pieces:
            self._starts.append(len(self.timestamps))
            self.timestamps += piece.timestamps

    def __len__(self) -> int:
        return len(self.timestamps)

    def _at(self, index: int) -> Snapshot:
        piece = bisect.bisect_right(self._starts, index) - 1
        return self._pieces[piece][index - self._starts[piece]]


def chart_tail(
    ticks: Pieces | TickStore, after: float, before: float, keep: int
) -> tuple[list[Snapshot], list[UtilPoint]]:
    """What the charts take of the past: the newest `keep` ticks from `after` to before `before` whole (the
    history's), and each GPU's utilization at every tick of that span (the sparklines'). Decoded one at a time,
    so that only `keep` snapshots are ever held: an hour of 8 GPUs whole would be a hundred MB."""
    first = bisect.bisect_left(ticks.timestamps, after)
    last = bisect.bisect_left(ticks.timestamps, before)
    kept: deque[Snapshot] = deque(maxlen=keep)
    points: list[UtilPoint] = []
    for index in range(first, last):
        snapshot = ticks[index]
        kept.append(snapshot)
        points.append((snapshot.timestamp, util_of(snapshot)))
    return list(kept), points


def util_of(snapshot: Snapshot) -> Mapping[int, float | None]:
    """Each GPU's utilization as its panel's sparkline takes it (a lost GPU: a gap)."""
    return {g.index: None if g.lost else g.utilization_gpu_pct for g in snapshot.gpus}


def read_around(directory: Path, t: float, span_s: float = JUMP_SPAN_S) -> TickStore:
    """The ticks held from `t - span_s` to `t + span_s`, oldest first (none: the caller says what is held)."""
    store = open_store(directory)
    if store is None:
        raise NoStore(NO_HISTORY)
    return store.read(t - span_s, t + span_s).ticks


def held_span(directory: Path) -> tuple[float, float] | None:
    """The first and last tick time the store holds; None when it holds none (or is gone)."""
    try:
        store = open_store(directory)
    except StoreError:
        return None
    return None if store is None else store.extent()


class Timeline(TickSequence):
    """The past the monitor holds, then the live ring, as one sequence oldest first; the ring's own ticks win
    where the two overlap (the store's copy of a tick the monitor saw itself)."""

    def __init__(self, past: Pieces | None, ring: Sequence[Snapshot]) -> None:
        self._ring = list(ring)
        first = self._ring[0].timestamp if self._ring else None
        times = past.timestamps if past is not None else []
        self._past: Sequence[Snapshot] = past if past is not None else ()
        self._past_len = bisect.bisect_left(times, first) if first is not None else len(times)
        self.timestamps = [*times[: self._past_len], *(s.timestamp for s in self._ring)]

    def __len__(self) -> int:
        return self._past_len + len(self._ring)

    def _at(self, index: int) -> Snapshot:
        return self._past[index] if index < self._past_len else self._ring[index - self._past_len]


@dataclass(frozen=True, slots=True)
class Walk:
    """A position in the past: the ticks walked (oldest first) and which one is shown."""

    ticks: Timeline | TickStore
    index: int

    @property
    def at(self) -> float:
        """Its time, from the times held (no tick is decoded on the event loop)."""
        return self.ticks.timestamps[self.index]

    def stepped(self, seconds: float) -> Walk | None:
        """The tick nearest `seconds` away (at least one tick on); None at either end."""
        target = self.at + seconds
        index = nearest(self.ticks.timestamps, target)
        if index == self.index:
            index += 1 if seconds > 0 else -1
        return Walk(self.ticks, index) if 0 <= index < len(self.ticks) else None


def nearest(times: Sequence[float], t: float) -> int:
    """The index of the time nearest `t` (times in order, at least one)."""
    low = bisect.bisect_left(times, t)
    if low == len(times):
        return low - 1
    if low > 0 and t - times[low - 1] <= times[low] - t:
        return low - 1
    return low


def judged(ticks: Sequence[Snapshot], index: int, config: DiagnosticsConfig, lang: str = "en") -> Tick:
    """The tick at `index` with the findings and verdict an engine of its own makes of the two minutes before."""
    engine = DiagnosticsEngine(config, lang)
    at = ticks[index].timestamp
    first = index
    while first > 0 and at - ticks[first - 1].timestamp <= JUDGE_S:
        first -= 1
    state: DiagnosticsState | None = None
    for snapshot in ticks[first : index + 1]:
        state = engine.update(snapshot)
    return tick_of(ticks[index], state)
