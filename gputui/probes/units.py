"""Byte sizes as people type them ("64MiB", "1G", "4096") and as the probes print them."""

from __future__ import annotations

import argparse
import re

_UNITS = {
    "": 1,
    "B": 1,
    "K": 1024,
    "KB": 1000,
    "KIB": 1024,
    "M": 1024**2,
    "MB": 1000**2,
    "MIB": 1024**2,
    "G": 1024**3,
    "GB": 1000**3,
    "GIB": 1024**3,
    "T": 1024**4,
    "TB": 1000**4,
    "TIB": 1024**4,
}
_SIZE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*")


def parse_bytes(text: str) -> int:
    """`"64MiB"` -> 67108864; ValueError with a one-line reason for anything that is not a positive size."""
    match = _SIZE.fullmatch(text)
    unit = match.group(2).upper() if match else ""
    if match is None or unit not in _UNITS:
        raise ValueError(f"not a size: {text!r} (expected e.g. 4096, 64MiB, 1GiB, 500MB)")
    value = int(float(match.group(1)) * _UNITS[unit])
    if value <= 0:
        raise ValueError(f"size must be greater than 0: {text!r}")
    return value


def format_bytes(value: float) -> str:
    """Binary units, as buffer sizes are chosen: 1048576 -> "1 MiB", 1.5 GiB -> "1.5 GiB"."""
    for unit, factor in (("TiB", 1024**4), ("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if value >= factor:
            scaled = value / factor
            return f"{scaled:.3g} {unit}" if scaled < 100 else f"{scaled:.0f} {unit}"
    return f"{value:.0f} B"


def byte_size_arg(text: str) -> int:
    """`parse_bytes` for argparse: a bad size becomes a usage error naming the value."""
    try:
        return parse_bytes(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
