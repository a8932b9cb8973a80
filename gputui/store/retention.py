"""How long and how much history a store keeps."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Retention:
    """Tick chunks wholly older than `tick_days` and minute chunks older than `minute_days` are deleted as chunks
    close, and the oldest chunks while the store holds more than `max_bytes`."""

    tick_days: float = 7.0
    minute_days: float = 90.0
    max_bytes: int = 1 << 30


DEFAULT_RETENTION = Retention()


def retention_to_dict(retention: Retention) -> dict[str, Any]:
    return asdict(retention)


def retention_from(store: dict[str, Any]) -> Retention:
    """The retention a recorder wrote into STORE; the defaults where it wrote none or one malformed."""
    kept = store.get("retention")
    if not isinstance(kept, dict):
        return DEFAULT_RETENTION
    try:
        return Retention(
            tick_days=float(kept.get("tick_days", DEFAULT_RETENTION.tick_days)),
            minute_days=float(kept.get("minute_days", DEFAULT_RETENTION.minute_days)),
            max_bytes=int(kept.get("max_bytes", DEFAULT_RETENTION.max_bytes)),
        )
    except (TypeError, ValueError, OverflowError):
        return DEFAULT_RETENTION
