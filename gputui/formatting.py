"""Numbers to short strings for every view: the TUI, the text tables, the report and the probes.

A value that was not reported is always "n/a", never 0. Sizes come in three widths because they are read in
three places: a TUI cell has room for about five characters ("80.0G"), a text table lines up one decimal
("61.0 GiB"), and a buffer size is printed as it was chosen ("1 MiB", "1.5 GiB"). Rates are decimal, as link
and disk speeds are quoted.
"""

from __future__ import annotations

from collections.abc import Iterable

NA = "n/a"
# What a view shows for a GPU process NVML lists by a host PID that is no process here (GpuProcess.seen "hidden").
HIDDEN_PROCESS = "(host PID: outside this PID namespace)"

_BINARY_UNITS = (("TiB", 1024**4), ("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024))
# Tables stop at GiB: a host's 1.5 TiB reads as 1536.0 GiB beside GPUs counted in GiB.
_TABLE_UNITS = _BINARY_UNITS[1:]


def _table_unit(value: float) -> tuple[str, int]:
    return next(((unit, size) for unit, size in _TABLE_UNITS if abs(value) >= size), ("B", 1))


def fmt_num(value: float | None, digits: int = 0, unit: str = "", *, scale: float = 1.0) -> str:
    """`value / scale` with `digits` decimals and `unit` as written: (3.14, 1, " W") -> "3.1 W",
    (2.5e9, 2, " GB/s", scale=1e9) -> "2.50 GB/s"."""
    return NA if value is None else f"{value / scale:.{digits}f}{unit}"


def fmt_pct(value: float | None, digits: int = 0) -> str:
    """A percentage already on the 0-100 scale: 37%, or 37.4% with a decimal."""
    return NA if value is None else f"{value:.{digits}f}%"


def fmt_share(share: float | None, digits: int = 0) -> str:
    """A share of 0-1 as a percentage: 0.82 -> 82%, (0.256, 1) -> 25.6%."""
    return fmt_pct(None if share is None else share * 100, digits)


def fmt_evidence_value(value: float | str | None) -> str:
    """A figure as a finding's evidence states it: whole from 100 up or when whole, else one decimal (1410, 12,
    3.5); words pass through as they are."""
    if value is None:
        return NA
    if isinstance(value, str):
        return value
    if abs(value) >= 100 or float(value).is_integer():
        return f"{value:.0f}"
    return f"{value:.1f}"


def fmt_gib(value: int | None, digits: int = 1) -> str:
    """GiB without the unit, for "used/total" pairs that carry it once: 61.0/80G."""
    return fmt_num(value, digits, scale=1024**3)


def fmt_bytes(value: float | None) -> str:
    """Binary units with one decimal, so table columns line up: 61.0 GiB."""
    if value is None:
        return NA
    unit, size = _table_unit(value)
    return f"{value:.0f} B" if size == 1 else f"{value / size:.1f} {unit}"


def fmt_bytes_pair(used: float | None, total: float | None) -> str:
    """`61.0 / 80.0 GiB`: both in the unit of the total, so they compare at a glance."""
    if total is None:
        return f"{fmt_bytes(used)} / {NA}"
    unit, size = _table_unit(total)
    return f"{fmt_num(None if used is None else used / size, 1)} / {total / size:.1f} {unit}"


def fmt_bytes_short(value: float | None) -> str:
    """Binary units in at most four digits and a letter, for a TUI cell: 0B, 512K, 80.0G."""
    if value is None:
        return NA
    units = ("B", "K", "M", "G", "T", "P")
    size = float(value)
    for unit in units:
        if abs(size) < 1024 or unit == units[-1]:
            return f"{size:.0f}{unit}" if unit in ("B", "K") or size >= 100 else f"{size:.1f}{unit}"
        size /= 1024
    raise AssertionError("unreachable")


def fmt_size(value: float) -> str:
    """A buffer size as it was chosen, three significant digits: 1048576 -> "1 MiB", 1.5 GiB -> "1.5 GiB"."""
    for unit, factor in _BINARY_UNITS:
        if value >= factor:
            scaled = value / factor
            return f"{scaled:.3g} {unit}" if scaled < 100 else f"{scaled:.0f} {unit}"
    return f"{value:.0f} B"


def fmt_rate(value: float | None) -> str:
    """Bytes per second with one decimal, for text tables: 2.1 GB/s."""
    if value is None:
        return NA
    for unit, size in (("GB/s", 1e9), ("MB/s", 1e6), ("kB/s", 1e3)):
        if abs(value) >= size:
            return f"{value / size:.1f} {unit}"
    return f"{value:.0f} B/s"


def fmt_rate_short(value: float | None) -> str:
    """Bytes per second in at most four digits, for a TUI cell: 12.3 GB/s, 150 MB/s."""
    if value is None:
        return NA
    rate = float(value)
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if abs(rate) < 1000 or unit == "TB":
            return f"{rate:.0f} {unit}/s" if unit == "B" or rate >= 100 else f"{rate:.1f} {unit}/s"
        rate /= 1000
    raise AssertionError("unreachable")


# SI prefixes for the rates a probe measures (FLOP/s, B/s), largest first; "" is the base unit itself.
_SI_PREFIXES: tuple[tuple[str, float], ...] = (
    ("E", 1e18),
    ("P", 1e15),
    ("T", 1e12),
    ("G", 1e9),
    ("M", 1e6),
    ("k", 1e3),
    ("", 1.0),
)
_SI_BASES = ("FLOP/s", "B/s")


def si_scaled(value: float, unit: str) -> tuple[float, str]:
    """A value in a base unit ("FLOP/s", "B/s") as the number and prefixed unit that read best, rounded as
    fmt_si shows it: (1.544e9, "FLOP/s") -> (1.5, "GFLOP/s"). Under one base unit it stays unprefixed."""
    for i, (prefix, factor) in enumerate(_SI_PREFIXES):
        if abs(value) >= factor or factor == 1.0:
            number = round(value / factor, 1 if abs(value) / factor < 100 else 0)
            if abs(number) >= 1000 and i > 0:  # 999.7 GB/s reads "1.0 TB/s", not "1000 GB/s"
                prefix, factor = _SI_PREFIXES[i - 1]
                number = round(value / factor, 1)
            return number, f"{prefix}{unit}"
    raise AssertionError("unreachable")


def fmt_si(value: float | None, unit: str) -> str:
    """A rate with an SI prefix, one decimal under 100 and none above, as data sheets quote it:
    1.5 GFLOP/s, 312 TFLOP/s, 12.3 GB/s, 4.8 TB/s."""
    if value is None:
        return NA
    number, prefixed = si_scaled(value, unit)
    return f"{number:.{1 if abs(number) < 100 else 0}f} {prefixed}"


def rebase(value: float, unit: str) -> tuple[float, str]:
    """A figure in a prefixed unit, as a probe reports it (0.0015 "TFLOP/s"), in its base unit: (1.5e9,
    "FLOP/s"). A unit that is not a prefixed FLOP/s or B/s comes back as it is."""
    for prefix, factor in _SI_PREFIXES:
        for base in _SI_BASES:
            if unit in (f"{prefix}{base}", f"{prefix.upper()}{base}"):
                return value * factor, base
    return value, unit


def fmt_figure(value: float | None, unit: str) -> str:
    """A probe's figure in the unit it came in, re-prefixed to read well: (0.001544, "TFLOP/s") -> "1.5 GFLOP/s",
    (4800, "GB/s") -> "4.8 TB/s"; any other unit (a pid) is shown as it came."""
    if value is None:
        return NA
    base_value, base = rebase(value, unit)
    if base in _SI_BASES:
        return fmt_si(base_value, base)
    return f"{value:.4g} {unit}".rstrip()


def fmt_duration(seconds: float) -> str:
    """45s, 2m05s, 1h02m: how long a finding has been open, short enough for a narrow pane."""
    total = max(0, int(seconds))
    if total < 60:
        return f"{total}s"
    if total < 3600:
        return f"{total // 60}m{total % 60:02d}s"
    return f"{total // 3600}h{total % 3600 // 60:02d}m"


def fmt_elapsed(seconds: float | None) -> str:
    """How long a process has run, to the minute: <1m, 45m, 2h05m, 3d02h. Not `ps -o etime`'s seconds: a column
    that changed every second on every row was a tenth of what the monitor wrote to the terminal (8 processes,
    120 B/s of 1350), for a figure nobody reads to the second on a job that runs for hours."""
    if seconds is None:
        return NA
    minutes = max(0, int(seconds)) // 60
    if minutes < 1:
        return "<1m"
    hours, minutes = divmod(minutes, 60)
    days, hours = divmod(hours, 24)
    if days:
        return f"{days}d{hours:02d}h"
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m"


def hms(seconds: float, *, pad_hours: bool = False) -> str:
    """Whole seconds as H:MM:SS; `pad_hours` gives HH:MM:SS, as the replay header shows a tape position."""
    whole = int(seconds)
    hours = f"{whole // 3600:02d}" if pad_hours else f"{whole // 3600}"
    return f"{hours}:{whole % 3600 // 60:02d}:{whole % 60:02d}"


def fmt_ranges(indices: Iterable[int]) -> str:
    """(0, 1, 2, 5) -> "0-2,5", as cpuset files write CPU lists and the verdict and grouped findings name GPUs."""
    runs: list[list[int]] = []
    for index in sorted(indices):
        if runs and index == runs[-1][-1] + 1:
            runs[-1].append(index)
        else:
            runs.append([index])
    return ",".join(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]) for run in runs)


def fmt_owner(pod: str | None, namespace: str | None, job_id: str | None) -> str | None:
    """Whose job a GPU process is on a cluster: "ml/train-0" (namespace/pod), the pod's uid where the kubelet
    could not name it, "job 4242" for a Slurm job; None off a cluster."""
    if pod is not None:
        return f"{namespace}/{pod}" if namespace else pod
    return f"job {job_id}" if job_id is not None else None


# ProcSample.unreadable's files as a view names them.
_GUARDED_WORDS = {"fd": "open files", "io": "I/O", "environ": "environment"}


def fmt_unreadable(files: Iterable[str]) -> str | None:
    """What a view says of a process whose /proc files the kernel refused to gputui, and how to read them: "may
    not read its open files, I/O (root or CAP_SYS_PTRACE)"; None when nothing was refused."""
    words = [_GUARDED_WORDS.get(name, name) for name in files]
    return f"may not read its {', '.join(words)} (root or CAP_SYS_PTRACE)" if words else None
