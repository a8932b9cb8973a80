"""The per-minute tier: what a week of ticks says, kept for three months in ~1/60 of the room.

Each UTC minute becomes one row: min/mean/max of the readings that answer "why was it slow" (per GPU: utilization,
SM activity where the GPU reports it, SM clock, memory used, power, temperature, PCIe traffic; the host's CPU,
iowait and memory), the seconds each verdict class held on which GPUs (a `mixed` verdict counts its groups), and
the seconds each finding was open on which GPUs. A reading not reported is left out, never counted as 0.
Rows go into DIR/minutes/<UTC day>.gtm in frames of MINUTES_PER_FRAME rows (and at close).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gputui.diagnostics.findings import Finding
from gputui.diagnostics.verdict import Verdict
from gputui.foreign_text import clean
from gputui.model import GpuSample, Snapshot

GPU_READINGS: tuple[str, ...] = (
    "utilization_gpu_pct",
    "sm_active_pct",
    "sm_clock_mhz",
    "memory_used_bytes",
    "power_w",
    "temperature_c",
    "pcie_rx_bytes_s",
    "pcie_tx_bytes_s",
)
HOST_READINGS: tuple[str, ...] = ("cpu_pct", "iowait_pct", "memory_used_bytes")
MINUTES_PER_FRAME = 10
MINUTE_S = 60.0

Key = tuple[str, tuple[int, ...]]
Stats = tuple[float, float, float]


@dataclass(frozen=True, slots=True)
class MinuteRow:
    """One minute of the summary tier."""

    start: float  # the minute's first second (UTC epoch)
    ticks: int
    verdict_s: Mapping[Key, float]  # (verdict class id, its GPUs) -> seconds that minute
    finding_s: Mapping[Key, float]  # (finding id, its GPUs) -> seconds open that minute
    gpus: Mapping[int, Mapping[str, Stats]]  # GPU -> reading -> (min, mean, max)
    host: Mapping[str, Stats]


class _Range:
    """min, sum and count of one reading over a minute."""

    __slots__ = ("count", "high", "low", "total")

    def __init__(self) -> None:
        self.low = math.inf
        self.high = -math.inf
        self.total = 0.0
        self.count = 0

    def add(self, value: float) -> None:
        self.low = min(self.low, value)
        self.high = max(self.high, value)
        self.total += value
        self.count += 1

    def stats(self) -> Stats:
        return (self.low, self.total / self.count, self.high)


@dataclass
class _Open:
    start: float
    ticks: int = 0
    verdict_s: dict[Key, float] = field(default_factory=dict)
    finding_s: dict[Key, float] = field(default_factory=dict)
    gpus: dict[int, dict[str, _Range]] = field(default_factory=dict)
    host: dict[str, _Range] = field(default_factory=dict)

    def row(self) -> MinuteRow:
        return MinuteRow(
            start=self.start,
            ticks=self.ticks,
            verdict_s=dict(self.verdict_s),
            finding_s=dict(self.finding_s),
            gpus={index: {name: r.stats() for name, r in readings.items()} for index, readings in self.gpus.items()},
            host={name: r.stats() for name, r in self.host.items()},
        )


class MinuteAccumulator:
    """Feeds on ticks in the order recorded; hands back each minute's row once a tick of another minute comes."""

    def __init__(self, interval_s: float) -> None:
        self.interval_s = interval_s
        self._open: _Open | None = None

    def add(self, snapshot: Snapshot, active: Sequence[Finding] | None, verdict: Verdict | None) -> MinuteRow | None:
        start = math.floor(snapshot.timestamp / MINUTE_S) * MINUTE_S
        done = None
        if self._open is not None and self._open.start != start:
            done = self.finish()
        if self._open is None:
            self._open = _Open(start)
        row = self._open
        row.ticks += 1
        for gpu in snapshot.gpus:
            _add_readings(row.gpus.setdefault(gpu.index, {}), gpu)
        host = snapshot.host
        for name in HOST_READINGS:
            value = getattr(host, name)
            if isinstance(value, (int, float)) and math.isfinite(value):
                row.host.setdefault(name, _Range()).add(float(value))
        for finding in active or ():
            key = (finding.rule, tuple(finding.gpus))
            row.finding_s[key] = row.finding_s.get(key, 0.0) + self.interval_s
        if verdict is not None:
            for part in verdict.groups or (verdict,):
                key = (part.cls, tuple(part.gpus))
                row.verdict_s[key] = row.verdict_s.get(key, 0.0) + self.interval_s
        return done

    def finish(self) -> MinuteRow | None:
        """The open minute's row (cut short: a recorder that stops mid-minute), None where none is open."""
        done, self._open = self._open, None
        return None if done is None else done.row()


def _add_readings(readings: dict[str, _Range], gpu: GpuSample) -> None:
    for name in GPU_READINGS:
        value = getattr(gpu, name)
        if isinstance(value, (int, float)) and math.isfinite(value):
            readings.setdefault(name, _Range()).add(float(value))


def _stats_out(stats: Stats) -> list[float]:
    return [round(v, 3) for v in stats]


def row_to_dict(row: MinuteRow) -> dict[str, Any]:
    return {
        "type": "minute",
        "start": row.start,
        "ticks": row.ticks,
        "verdict_s": [[cls, list(gpus), round(s, 3)] for (cls, gpus), s in row.verdict_s.items()],
        "finding_s": [[rule, list(gpus), round(s, 3)] for (rule, gpus), s in row.finding_s.items()],
        "gpus": [
            {"index": index, **{name: _stats_out(s) for name, s in readings.items()}}
            for index, readings in row.gpus.items()
        ],
        "host": {name: _stats_out(s) for name, s in row.host.items()},
    }


def row_from_dict(data: Mapping[str, Any]) -> MinuteRow:
    """A row as row_to_dict wrote it; ValueError (or TypeError, KeyError) where it is not one. Names this gputui
    does not know are kept (a newer recorder's readings), cleaned as every string read from a store; values must be
    numbers."""
    if data.get("type") != "minute":
        raise ValueError("not a minute row")
    gpus: dict[int, dict[str, Stats]] = {}
    for gpu in data["gpus"]:
        index = gpu["index"]
        if not isinstance(index, int):
            raise TypeError("a GPU index must be an int")
        gpus[index] = {clean(str(name)): _stats_in(value) for name, value in gpu.items() if name != "index"}
    return MinuteRow(
        start=_number(data["start"]),
        ticks=int(data["ticks"]),
        verdict_s=_seconds(data["verdict_s"]),
        finding_s=_seconds(data["finding_s"]),
        gpus=gpus,
        host={clean(str(name)): _stats_in(value) for name, value in data["host"].items()},
    )


def _number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"not a number: {value!r}")
    return float(value)


def _stats_in(value: Any) -> Stats:
    low, mean, high = value
    return (_number(low), _number(mean), _number(high))


def _seconds(items: Any) -> dict[Key, float]:
    out: dict[Key, float] = {}
    for name, gpus, seconds in items:
        if not isinstance(name, str):
            raise TypeError("a class or finding id must be a string")
        key = (clean(name), tuple(int(g) for g in gpus))
        out[key] = out.get(key, 0.0) + _number(seconds)
    return out
