"""A frame's records (the recording's dicts: ticks and events) turned into bytes and back, exactly.

Placeholder: JSON lines. Replaced by a columnar encoding (values constant over a frame written once, numbers as
deltas) that compresses two to three times better under zstd.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gputui.record.format import dumps, loads


def encode_records(records: Sequence[dict[str, Any]]) -> bytes:
    """The records as bytes: decode_records gives them back equal (same keys, values and types)."""
    return b"\n".join(dumps(record).encode() for record in records)


def decode_records(data: bytes) -> list[dict[str, Any]]:
    """The records encode_records wrote; ValueError when `data` is not such bytes."""
    return [loads(line) for line in data.split(b"\n") if line]
