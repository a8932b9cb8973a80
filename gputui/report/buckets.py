"""The HTML report's lines on one time grid: at most MAX_BUCKETS buckets, each drawn as its lowest and highest
reading in the order they came.

Lowest and highest rather than the mean: a one-second stall to 0% or a spike to the power limit is what a
reader looks for, and a mean over a few seconds hides it. Buckets rather than every tick: an hour of 8 GPUs is
3,600 readings per line, and 1,000 buckets are about one per pixel column of a wide chart, so nothing that
could be seen is lost while the page stays the same size for an hour or a night. The grid is uniform, so a
line is handed to plotly as its first time and a step (`x0`, `dx`) rather than thousands of times per line.

Bucket k is centred on `start + k * width`, so a tick a little early or late lands in its own bucket. A bucket
that no tick landed in takes the nearest reading within one width (a late tick left it empty), or stays a gap
(the recording stopped there); a bucket whose ticks reported nothing is a gap too, never a 0.
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

MAX_BUCKETS = 1000
POINTS_PER_BUCKET = 2  # its lowest and its highest reading


@dataclass(frozen=True, slots=True)
class Grid:
    """`count` buckets of `width` seconds from `start`; `members[k]`: the ticks (indices) that bucket k draws."""

    start: float
    width: float
    count: int
    members: tuple[tuple[int, ...], ...]

    @classmethod
    def over(cls, timestamps: Sequence[float], interval_s: float, max_buckets: int = MAX_BUCKETS) -> Grid:
        """The grid for these tick times: one bucket per tick (the ticks' usual spacing) until there would be more
        than `max_buckets`, then wider buckets."""
        if not timestamps:
            return cls(0.0, interval_s, 0, ())
        start = timestamps[0]
        span = max(timestamps[-1] - start, 0.0)
        steps = [b - a for a, b in itertools.pairwise(timestamps) if b > a]
        spacing = statistics.median(steps) if steps else interval_s
        width = round(max(spacing, span / (max_buckets - 1), 1e-3), 3)  # whole milliseconds: exact times
        count = min(max_buckets, math.floor(span / width + 0.5) + 1)
        landed: list[list[int]] = [[] for _ in range(count)]
        for i, t in enumerate(timestamps):
            landed[min(count - 1, max(0, math.floor((t - start) / width + 0.5)))].append(i)
        members = [
            tuple(ticks) or _nearest(timestamps, landed, k, start + k * width, width) for k, ticks in enumerate(landed)
        ]
        return cls(start, width, count, tuple(members))

    @property
    def step(self) -> float:
        """Seconds between two drawn points: two per bucket, a quarter width either side of its centre."""
        return self.width / POINTS_PER_BUCKET

    def point_time(self, n: int) -> float:
        """The time at which point n of a line on this grid is drawn."""
        return self.start - self.width / 4 + n * self.step

    def bucket(self, t: float) -> int:
        """The bucket a time falls in, clamped to the grid."""
        return min(self.count - 1, max(0, math.floor((t - self.start) / self.width + 0.5)))

    def line(self, values: Sequence[float | None], digits: int) -> list[float | None]:
        """Two points per bucket, its lowest and highest reading in time order, rounded to `digits` decimals."""
        out: list[float | None] = []
        for ticks in self.members:
            known = [(i, v) for i in ticks if (v := values[i]) is not None]
            if not known:
                out += [None, None]
                continue
            low = min(known, key=lambda p: p[1])
            high = max(known, key=lambda p: p[1])
            first, second = sorted((low, high))
            out += [_rounded(first[1], digits), _rounded(second[1], digits)]
        return out


def _nearest(
    timestamps: Sequence[float], landed: Sequence[list[int]], k: int, centre: float, width: float
) -> tuple[int, ...]:
    """For an empty bucket: the neighbouring buckets' tick closest to its centre if within one width, else none."""
    around = [i for j in (k - 1, k + 1) if 0 <= j < len(landed) for i in landed[j]]
    near = [i for i in around if abs(timestamps[i] - centre) <= width]
    return (min(near, key=lambda i: abs(timestamps[i] - centre)),) if near else ()


def _rounded(value: float, digits: int) -> float:
    """A reading to the page's precision: fewer digits are fewer bytes, and the sensors say no more."""
    return round(value) if digits == 0 else round(value, digits)
