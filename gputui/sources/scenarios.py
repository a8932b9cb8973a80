"""Names of the simulated scenarios, each a real situation from the field (see simulated.py)."""

from __future__ import annotations

SCENARIOS: tuple[str, ...] = (
    "healthy",
    "idle",
    "thermal",
    "powercap",
    "hwslowdown",
    "pcie",
    "vram",
    "starved-cpu",
    "starved-io",
    "contention",
    "imbalance",
    "mismatch",
    "tour",
)
