"""A stack record's bytes checked against the bounds the sampler keeps, then parsed: the record is its user's to
write, who may be anyone with a process, so nothing in it is used before it is checked.

Checked, in one pass that refuses at the first fault: the size (agent.MAX_RECORD_BYTES) before JSON is parsed; no
`Infinity` or `NaN` (json's parse_constant) and no nesting deeper than the format's own (json's RecursionError
caught; every object is checked for exactly the format's keys, so nothing deeper is ever walked); the number of
frames, of frame indices in all, of a stack's frames, of slices and of a slice's threads; each name's length; each
number's type and range (finite; `written_at` within MAX_AGE_S before now and FUTURE_S after, the slices' times near
it; counts non-negative and no more than the slice's samples; a running share no more than its samples). Names are
cleaned (gputui.foreign_text) where they enter.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from gputui.agent import gputui_stacks_agent as agent
from gputui.foreign_text import clean
from gputui.sources.stacks.samples import Frame

MAX_AGE_S = 30 * 86_400.0  # a record written longer ago than this (or with a bad clock) is refused, not stale
FUTURE_S = 60.0  # how far ahead of this machine's clock a record's times may be (a clock set back meanwhile)
MAX_PID = 1 << 22  # the kernel's PID_MAX_LIMIT: pids and thread ids are below it
MAX_COUNT = 1 << 31  # start ticks aside, no line or rank reaches this
MAX_TICKS = round(agent.MAX_HZ * agent.MAX_WINDOW_S)  # samples in one slice

_KEYS = frozenset(
    {
        "format",
        "version",
        "pid",
        "ppid",
        "start_ticks",
        "rank",
        "local_rank",
        "rate_hz",
        "window_start",
        "window_end",
        "written_at",
        "frames",
        "slices",
    }
)
_SLICE_KEYS = frozenset({"start", "end", "ticks", "threads"})
_THREAD_KEYS = frozenset({"tid", "name", "stacks"})


class CorruptRecord(ValueError):
    """A record that is not what the sampler writes, or outside the bounds it keeps."""


# One distinct stack of a thread in one slice: its frames' indices in the record's table (innermost first), its
# samples, and their worth of time on a CPU.
SliceStack = tuple[tuple[int, ...], int, float]


@dataclass(frozen=True, slots=True)
class SliceThread:
    tid: int
    name: str
    stacks: tuple[SliceStack, ...]


@dataclass(frozen=True, slots=True)
class Slice:
    start: float
    end: float
    threads: tuple[SliceThread, ...]


@dataclass(frozen=True, slots=True)
class Record:
    """A record as checked: only what the reader uses of it."""

    pid: int
    start_ticks: int
    rank: int | None
    window_end: float
    written_at: float
    frames: tuple[Frame, ...]
    slices: tuple[Slice, ...]


def _no_constant(name: str) -> None:
    raise CorruptRecord(f"{name} is no number of a record")


def _number(value: object, what: str, low: float, high: float) -> float:
    """`value` as a float where it is a JSON number within [low, high] (a huge integer compares, never overflows)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise CorruptRecord(f"{what} is not a number")
    if isinstance(value, float) and not math.isfinite(value):  # 1e999 parses as infinity
        raise CorruptRecord(f"{what} is not finite")
    if not low <= value <= high:
        raise CorruptRecord(f"{what} is out of range")
    return float(value)


def _int(value: object, what: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise CorruptRecord(f"{what} is not an integer")
    if not low <= value < high:
        raise CorruptRecord(f"{what} is out of range")
    return value


def _optional_int(value: object, what: str) -> int | None:
    return None if value is None else _int(value, what, 0, MAX_COUNT)


def _name(value: object, what: str) -> str:
    if not isinstance(value, str):
        raise CorruptRecord(f"{what} is not a string")
    if len(value) > agent.MAX_NAME:
        raise CorruptRecord(f"{what} is {len(value)} characters long, over {agent.MAX_NAME}")
    return clean(value)


def _list(value: object, what: str, most: int) -> list[Any]:
    if not isinstance(value, list):
        raise CorruptRecord(f"{what} is not a list")
    if len(value) > most:
        raise CorruptRecord(f"{what} holds {len(value)}, over {most}")
    return value


def _triple(value: object, what: str) -> tuple[Any, Any, Any]:
    if not isinstance(value, list) or len(value) != 3:
        raise CorruptRecord(f"{what} is not the format's list")
    return value[0], value[1], value[2]


def _object(value: object, what: str, keys: frozenset[str]) -> dict[str, Any]:
    if not isinstance(value, dict) or value.keys() != keys:
        raise CorruptRecord(f"{what} is not the format's object")
    return value


def _frames(value: object) -> tuple[Frame, ...]:
    frames = []
    for n, entry in enumerate(_list(value, "the frame table", agent.MAX_FRAMES)):
        function, file, line = _triple(entry, f"frame {n}")
        if line is not None:
            line = _int(line, f"frame {n}'s line", 0, MAX_COUNT)
        frames.append(Frame(_name(function, f"frame {n}'s function"), _name(file, f"frame {n}'s file"), line))
    return tuple(frames)


class _Checker:
    """The checks of the slices, which need the frame table's size, the time written and a budget of indices."""

    def __init__(self, frames: int, written_at: float) -> None:
        self.frames = frames
        self.low = written_at - agent.MAX_WINDOW_S - FUTURE_S
        self.high = written_at + FUTURE_S
        self.indices = 0

    def slices(self, value: object) -> tuple[Slice, ...]:
        return tuple(self.slice(entry, n) for n, entry in enumerate(_list(value, "the slices", agent.MAX_SLICES)))

    def slice(self, value: object, n: int) -> Slice:
        what = f"slice {n}"
        piece = _object(value, what, _SLICE_KEYS)
        start = _number(piece["start"], f"{what}'s start", self.low, self.high)
        end = _number(piece["end"], f"{what}'s end", self.low, self.high)
        ticks = _int(piece["ticks"], f"{what}'s samples", 0, MAX_TICKS + 1)
        threads = _list(piece["threads"], f"{what}'s threads", agent.MAX_THREADS)
        return Slice(
            start, end, tuple(self.thread(entry, f"{what}'s thread {t}", ticks) for t, entry in enumerate(threads))
        )

    def thread(self, value: object, what: str, ticks: int) -> SliceThread:
        thread = _object(value, what, _THREAD_KEYS)
        tid = _int(thread["tid"], f"{what}'s id", 1, MAX_PID)
        name = _name(thread["name"], f"{what}'s name")
        stacks = []
        total = 0
        for entry in _list(thread["stacks"], f"{what}'s stacks", ticks):
            indices, samples, running = _triple(entry, f"a stack of {what}")
            stacks.append((self.indices_of(indices, what), *self.counts(samples, running, what)))
            total += stacks[-1][1]
        if total > ticks:
            raise CorruptRecord(f"{what} has more samples than its slice")
        return SliceThread(tid, name, tuple(stacks))

    def indices_of(self, value: object, what: str) -> tuple[int, ...]:
        indices = _list(value, f"a stack of {what}", agent.MAX_DEPTH)
        self.indices += max(1, len(indices))  # an empty stack (a thread between frames) costs one
        if self.indices > agent.MAX_INDICES:
            raise CorruptRecord(f"its stacks hold over {agent.MAX_INDICES} frames in all")
        for index in indices:
            if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < self.frames:
                raise CorruptRecord(f"a stack of {what} names no frame of the table")
        return tuple(indices)

    def counts(self, samples: object, running: object, what: str) -> tuple[int, float]:
        count = _int(samples, f"a stack's samples in {what}", 1, MAX_TICKS + 1)
        return count, _number(running, f"a stack's time running in {what}", 0.0, count)


def parse(data: bytes, pid: int, now: float) -> Record:
    """The record of process `pid` in `data`, checked; CorruptRecord (a ValueError) says what is wrong with it."""
    if len(data) > agent.MAX_RECORD_BYTES:
        raise CorruptRecord(f"over {agent.MAX_RECORD_BYTES} bytes")
    try:
        record = json.loads(data, parse_constant=_no_constant)
    except RecursionError:
        raise CorruptRecord("nested deeper than a record is") from None
    except CorruptRecord:
        raise
    except ValueError as error:  # UnicodeDecodeError and json's errors among them
        raise CorruptRecord(f"not JSON ({type(error).__name__})") from None
    if not isinstance(record, dict) or record.get("format") != agent.FORMAT:
        raise CorruptRecord("not a gputui stack record")
    version = record.get("version")
    if version != agent.VERSION:
        said = version if isinstance(version, int) and not isinstance(version, bool) else "another"
        raise CorruptRecord(f"version {said}, where this gputui reads {agent.VERSION}")
    if record.get("pid") != pid:
        raise CorruptRecord(f"it names another pid than {pid}")
    if record.keys() != _KEYS:
        raise CorruptRecord("not the format's fields")
    written_at = _number(record["written_at"], "the time written", now - MAX_AGE_S, now + FUTURE_S)
    _int(record["ppid"], "the parent's pid", 0, MAX_PID)
    _number(record["rate_hz"], "the rate", 0.0, agent.MAX_HZ)
    checker = _Checker(len(frames := _frames(record["frames"])), written_at)
    if record["window_start"] is not None:
        _number(record["window_start"], "the window's start", checker.low, checker.high)
    _optional_int(record["local_rank"], "the local rank")
    return Record(
        pid=pid,
        start_ticks=_int(record["start_ticks"], "the start time", 0, 1 << 63),
        rank=_optional_int(record["rank"], "the rank"),
        window_end=_number(record["window_end"], "the window's end", checker.low, checker.high),
        written_at=written_at,
        frames=frames,
        slices=checker.slices(record["slices"]),
    )
