"""The argparse types every command shares: a bad value becomes a one-line usage error that names it.

Byte sizes are read as people type them ("64MiB", "1G", "4096"): K/M/G/T and KiB/MiB/... are binary, KB/MB/...
decimal, as `dd` and data sheets use them.
"""

from __future__ import annotations

import argparse
import functools
import math
import re
from collections.abc import Callable
from typing import TypeVar

N = TypeVar("N", int, float)
T = TypeVar("T")

_BYTE_UNITS = {
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


def usage_errors(parse: Callable[[str], T]) -> Callable[[str], T]:
    """An argparse type of `parse`, whose ValueError says in one line what is wrong with the text: argparse shows
    an ArgumentTypeError's words, where of a ValueError it shows only "invalid <type> value"."""

    @functools.wraps(parse)
    def checked(text: str) -> T:
        try:
            return parse(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return checked


def positive(convert: Callable[[str], N], what: str, example: str = "") -> Callable[[str], N]:
    """An argparse type that reads `convert(text)` and refuses anything not above 0; `what` names the kind,
    `example` shows one."""
    hint = f" (expected e.g. {example})" if example else ""

    def parse(text: str) -> N:
        try:
            value = convert(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not {what}: {text!r}{hint}") from None
        if value != value or value in (math.inf, -math.inf):  # float("nan") and "inf" parse, and mean nothing here
            raise argparse.ArgumentTypeError(f"not {what}: {text!r}{hint}")
        if value <= 0:
            raise argparse.ArgumentTypeError(f"must be greater than 0: {text!r}")
        return value

    return parse


positive_int = positive(int, "a whole number")
positive_float = positive(float, "a number")
positive_seconds = positive(float, "a number of seconds")
positive_mb = positive(float, "a size in MB")
matrix_size = positive(int, "a matrix size", "8192")
price_per_hour = positive(float, "a price", "2.40")

# The refresh intervals the monitor's `+` and `-` step through: every command's `--interval` lies within them, so
# that a health check samples as the monitor it stands in for does (gputui/session/sampling.py keeps the steps).
INTERVALS: tuple[float, ...] = (0.25, 0.5, 1.0, 2.0, 3.0, 5.0, 10.0)
MIN_INTERVAL = INTERVALS[0]
MAX_INTERVAL = INTERVALS[-1]


def sample_interval(text: str) -> float:
    """`--interval`, the same for every command: seconds between readings, MIN_INTERVAL to MAX_INTERVAL."""
    seconds = positive_seconds(text)
    if not MIN_INTERVAL <= seconds <= MAX_INTERVAL:
        raise argparse.ArgumentTypeError(
            f"must be between {MIN_INTERVAL:g} and {MAX_INTERVAL:g} seconds, not {text.strip()}"
        )
    return seconds


def currency_name(text: str) -> str:
    """A currency as a price is written with it: a code (USD, EUR) or a sign ($, €), a few characters."""
    name = text.strip()
    if not name or len(name) > 8 or any(c.isspace() or c.isdigit() for c in name):
        raise argparse.ArgumentTypeError(f"not a currency code or sign: {text!r} (expected e.g. USD or $)")
    return name


# The most GPUs the simulated machine has: its PCI bus numbers (0xE0 + index past the eighth) fit a byte up to 32.
MAX_DEMO_GPUS = 32


def demo_gpu_count(text: str) -> int:
    """How many GPUs the simulated machine has: 1 to MAX_DEMO_GPUS."""
    count = positive_int(text)
    if count > MAX_DEMO_GPUS:
        raise argparse.ArgumentTypeError(f"the simulated machine has at most {MAX_DEMO_GPUS} GPUs, not {count}")
    return count


def gpu_index(text: str) -> int:
    """A GPU's index: a whole number from 0."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a GPU index: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"not a GPU index: {text!r}")
    return value


def parse_bytes(text: str) -> int:
    """`"64MiB"` -> 67108864; ValueError with a one-line reason for anything that is not a positive size."""
    match = _SIZE.fullmatch(text)
    unit = match.group(2).upper() if match else ""
    if match is None or unit not in _BYTE_UNITS:
        raise ValueError(f"not a size: {text!r} (expected e.g. 4096, 64MiB, 1GiB, 500MB)")
    value = int(float(match.group(1)) * _BYTE_UNITS[unit])
    if value <= 0:
        raise ValueError(f"size must be greater than 0: {text!r}")
    return value


@usage_errors
def byte_size(text: str) -> int:
    """`parse_bytes` for argparse."""
    return parse_bytes(text)


def port_number(text: str) -> int:
    """A TCP port to listen on; 0 lets the kernel pick a free one."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r} (0-65535; 0 picks a free one)")
    return port


def gpu_list(text: str) -> tuple[int, ...]:
    """`0,2` -> (0, 2)."""
    try:
        indices = tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a list of GPU indices: {text!r} (expected e.g. 0,2)") from None
    if not indices or any(i < 0 for i in indices):
        raise argparse.ArgumentTypeError(f"not a list of GPU indices: {text!r} (expected e.g. 0,2)")
    return indices


def cpu_list(text: str) -> str:
    """`0-3,8`: a cpulist as the kernel writes one (the CPUs near a GPU), kept as text once it reads."""
    from gputui.model import parse_cpus

    if not parse_cpus(text):
        raise argparse.ArgumentTypeError(f"not a CPU list: {text!r} (expected e.g. 0-3,8)")
    return text.strip()
