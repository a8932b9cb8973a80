"""The simulated machine's noise: seeded slow sines, so that values drift without jumping and repeat per seed."""

from __future__ import annotations

import math
import random

_Sine = tuple[float, float, float]  # (angular frequency, phase, weight)


class Waves:
    """Seeded smooth noise in [-1, 1]: three slow sines per key, so values drift without jumping.

    A tick asks for ~150 of them, so the three sines are spelled out rather than summed over a generator.
    """

    def __init__(self, seed: int) -> None:
        self._seed = seed
        self._params: dict[str, tuple[_Sine, _Sine, _Sine]] = {}
        self._groups: dict[tuple[str, ...], list[tuple[_Sine, _Sine, _Sine]]] = {}

    def __call__(self, key: str, t: float) -> float:
        (omega1, phase1, weight1), (omega2, phase2, weight2), (omega3, phase3, weight3) = self._get(key)
        sin = math.sin
        return (
            weight1 * sin(omega1 * t + phase1) + weight2 * sin(omega2 * t + phase2) + weight3 * sin(omega3 * t + phase3)
        )

    def many(self, keys: tuple[str, ...], t: float) -> list[float]:
        """The waves of many keys at `t` (a host's cores, a job's workers): the values one call each gives."""
        group = self._groups.get(keys)
        if group is None:
            group = self._groups[keys] = [self._get(key) for key in keys]
        sin = math.sin
        return [
            weight1 * sin(omega1 * t + phase1) + weight2 * sin(omega2 * t + phase2) + weight3 * sin(omega3 * t + phase3)
            for (omega1, phase1, weight1), (omega2, phase2, weight2), (omega3, phase3, weight3) in group
        ]

    def _get(self, key: str) -> tuple[_Sine, _Sine, _Sine]:
        params = self._params.get(key)
        if params is None:
            params = self._params[key] = self._draw(key)
        return params

    def _draw(self, key: str) -> tuple[_Sine, _Sine, _Sine]:
        rng = random.Random(f"{self._seed}/{key}")
        raw = [
            (2 * math.pi / rng.uniform(6.0, 60.0), rng.uniform(0, 2 * math.pi), rng.uniform(0.3, 1.0)) for _ in range(3)
        ]
        total = sum(weight for _, _, weight in raw)
        first, second, third = ((omega, phase, weight / total) for omega, phase, weight in raw)
        return first, second, third


def clamp(value: float, low: float, high: float) -> float:
    """max(low, min(high, value)), ties and all, without two built-in calls: a tick clamps ~130 values."""
    capped = value if value < high else high
    return capped if capped > low else low


def smoothstep(x: float) -> float:
    """0 below 0, 1 above 1, an S-curve between: a clock that falls as a GPU heats, without a kink."""
    x = clamp(x, 0.0, 1.0)
    return x * x * (3 - 2 * x)
