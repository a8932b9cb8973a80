"""The config file, read once into one frozen Config: `--config PATH`, else the file $GPUTUI_CONFIG names, else
~/.config/gputui/config.toml where it exists, else the defaults.

The file may run a command (`[alerts] command`, through a shell where `shell = true`), so gputui reads only one
that no one else could have written: as root, a file owned by root and writable by neither its group nor others,
and the default one in root's own home (its password entry), never in $HOME, which `sudo -E` and `su` without `-`
keep from the user who asked; as another user, a file that user or root owns and others cannot write. The file is
bounded (MAX_CONFIG_BYTES, MAX_NESTING), and a number that does not fit is an error like any wrong value.

    [diagnostics]                 # thresholds, hysteresis, rules switched off (diagnostics/settings.py)
    [diagnostics.thresholds]      # the numbers the rules compare against (diagnostics/thresholds.py)
    [stacks]                      # when a job's Python stacks are read (session/stacks.py)
    [alerts]                      # where alerts go when a finding opens or closes (gputui/alerts)
    [cost]                        # what a GPU-hour costs
    [monitor]                     # what the live monitor may do

Each table is a frozen dataclass whose fields are its settings: a field's metadata holds its one-line description
and its check (gputui/config_values.py), so one walk of the fields reads every table and `sections()` lists them
for the reference. A wrong value, an unknown key or an unknown table is a ConfigError that names the key, the file
and the line the key is on. The command-line options that override a setting (--readonly, --price...) are applied
by the commands, over the Config this gives.
"""

from __future__ import annotations

import difflib
import os
import pwd
import re
import stat
import sys
from collections.abc import Iterator, Mapping
from dataclasses import MISSING, Field, dataclass, field, fields
from pathlib import Path
from typing import Any, Literal

from gputui.config_values import (
    CHECK,
    DOC,
    TABLE,
    Check,
    Invalid,
    described,
    flag,
    one_of,
    price,
    seconds,
    setting,
    table,
    text,
    url,
    whole,
)
from gputui.diagnostics.account import Price
from gputui.diagnostics.findings import Severity
from gputui.diagnostics.settings import DiagnosticsConfig
from gputui.trusted_file import Trust, UntrustedFile, read_trusted

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

CONFIG_IN_HOME = Path(".config/gputui/config.toml")
# A config of every table and key, commented, is ~10 KB; TOML's parser and the key lines read the whole file.
MAX_CONFIG_BYTES = 1 << 20
# Tables and lists inside each other: the deepest setting is 3 ([diagnostics.thresholds] key); the checks and their
# messages walk a value recursively.
MAX_NESTING = 16

# Stack sampling's bounds: py-spy samples at up to a few hundred Hz; below 1 Hz a window holds too few samples.
MAX_RATE_HZ = 1000
MAX_WINDOW_S = 60.0

WebhookFormat = Literal["json", "slack"]
SEVERITIES = {severity.label: severity for severity in Severity}


class ConfigError(ValueError):
    """The config file cannot be used; the message names the file, the line and the key."""


@dataclass(frozen=True, slots=True)
class StacksConfig:
    """When a job's stacks are read (gputui/session/stacks.py).

    A window costs ~0.17 s of CPU in its py-spy processes (benchmarks/bench_stacks.py, on a shared 2-core VM),
    against ~1 % of a core for the monitor itself: one every 60 s would add 20-30 % to the monitor's CPU while a job
    waits, one every 300 s adds ~5 %, inside the issue's 10 %."""

    enabled: bool = field(default=True, metadata=setting("false: no window is taken, automatic or asked for.", flag()))
    window_s: float = field(
        default=4.0, metadata=setting("Seconds of samples per window.", seconds(above_zero=True, at_most=MAX_WINDOW_S))
    )
    rate_hz: int = field(default=20, metadata=setting("Samples a second.", whole(1, MAX_RATE_HZ)))
    cooldown_s: float = field(
        default=300.0,
        metadata=setting("A process sampled automatically is not sampled again automatically before this.", seconds()),
    )
    # What the job does may have changed with what its GPU waits on (another verdict class, another starvation
    # finding): it gets a window sooner.
    recheck_s: float = field(
        default=60.0, metadata=setting("...unless what its GPU waits on changed: then after this.", seconds())
    )
    # A job that may have stopped (its GPUs idle, or busy at near-zero SM activity and power) has all its ranks here
    # sampled this often while it looks so: the windows must follow each other for `unchanged_since` to say how long
    # nothing moved, and three fit in `stopped_after_s` (240 s), so the finding comes 4-6 minutes in, before NCCL's
    # watchdog (10 min). A window of `window_s` cost py-spy ~0.12 s of CPU (benchmarks/bench_stacks.py --hung; +30 % on
    # the monitor's own CPU per rank at 60 s on a 2-core VM); these take `hang_window_s`, less than half of that.
    hang_recheck_s: float = field(
        default=120.0,
        metadata=setting(
            "A job that may have stopped (GPUs idle or spinning) has its ranks sampled again this often.",
            seconds(above_zero=True),
        ),
    )
    # A thread held for good shows in one place in every sample: a second of them says so as well as `window_s`
    # does, for less than half the CPU (py-spy's two runs on a 4-thread process: ~0.03 s for 1 s, ~0.07 s for 4 s).
    hang_window_s: float = field(
        default=1.0,
        metadata=setting(
            "Seconds of samples per window of a job that may have stopped.",
            seconds(above_zero=True, at_most=MAX_WINDOW_S),
        ),
    )


@dataclass(frozen=True, slots=True)
class AlertsConfig:
    """Where alerts go and how hard delivery tries; no webhook, no command and no bell: no alerts."""

    webhook: str | None = field(
        default=None, metadata=setting("POST a JSON message here when a finding opens or closes.", url())
    )
    format: WebhookFormat = field(
        default="json",
        metadata=setting(
            "The webhook's body: gputui's JSON, or Slack's {\"text\": ...}.", one_of({"json": "json", "slack": "slack"})
        ),
    )
    command: str | None = field(
        default=None, metadata=setting("Run this command with the alert's JSON on its stdin.", text())
    )
    shell: bool = field(default=False, metadata=setting("Run `command` through /bin/sh.", flag()))
    min_severity: Severity = field(
        default=Severity.WARNING, metadata=setting("Alert on findings of this severity and above.", one_of(SEVERITIES))
    )
    bell: bool = field(
        default=False, metadata=setting("The monitor rings the terminal bell when an alert opens.", flag())
    )
    min_interval_s: float = field(
        default=300.0,
        metadata=setting("A flapping finding sends at most one open/close pair this often.", seconds()),
    )
    timeout_s: float = field(default=5.0, metadata=setting("Seconds a delivery may take.", seconds()))
    retries: int = field(default=3, metadata=setting("Tries after the first, with a growing wait.", whole(0)))
    proxy_from_env: bool = field(
        default=False, metadata=setting("Reach the webhook through the proxy HTTP(S)_PROXY names.", flag())
    )

    @property
    def enabled(self) -> bool:
        return self.webhook is not None or self.command is not None or self.bell


@dataclass(frozen=True, slots=True)
class CostConfig:
    """What a GPU-hour costs: each verdict class's time gets its cost (`--price` and `--currency` override it)."""

    gpu_hour: float | None = field(default=None, metadata=setting("What one GPU-hour costs, e.g. 2.40.", price()))
    currency: str = field(
        default="USD", metadata=setting("The price's currency: a code (written after it) or a sign (before).", text())
    )

    @property
    def price(self) -> Price | None:
        """The price of a GPU-hour; None where none is set."""
        return None if self.gpu_hour is None else Price(self.gpu_hour, self.currency.strip())


@dataclass(frozen=True, slots=True)
class MonitorConfig:
    """What the live monitor may do."""

    readonly: bool = field(
        default=False, metadata=setting("Send no signal to a process: the K key is gone (as with --readonly).", flag())
    )


@dataclass(frozen=True, slots=True)
class Config:
    """The whole file: a table per part of gputui that has settings."""

    diagnostics: DiagnosticsConfig = field(
        default_factory=DiagnosticsConfig, metadata=table("Thresholds, hysteresis and the rules switched off.")
    )
    stacks: StacksConfig = field(
        default_factory=StacksConfig, metadata=table("When a training job's Python stacks are read.")
    )
    alerts: AlertsConfig = field(
        default_factory=AlertsConfig, metadata=table("Where alerts go when a finding opens or closes.")
    )
    cost: CostConfig = field(default_factory=CostConfig, metadata=table("What a GPU-hour costs."))
    monitor: MonitorConfig = field(default_factory=MonitorConfig, metadata=table("What the live monitor may do."))


CONFIG_VARIABLE = "GPUTUI_CONFIG"


def named_config_path() -> Path | None:
    """The file $GPUTUI_CONFIG names: a service's, a container's or a test's config without --config on every
    command line. It is read as --config's is (it must exist and pass the same checks of who may write it), so a
    user's environment kept by `sudo -E` can name a file but not make root read one that user could have written."""
    named = os.environ.get(CONFIG_VARIABLE)
    return Path(named) if named else None


def default_config_path() -> Path:
    """~/.config/gputui/config.toml of the user gputui runs as: for root, in root's home from the password database,
    whatever $HOME says."""
    if os.geteuid() == 0:
        return root_home() / CONFIG_IN_HOME
    return Path.home() / CONFIG_IN_HOME


def root_home() -> Path:
    """Root's home, from the password database."""
    return Path(pwd.getpwuid(0).pw_dir)


def skipped_config_path() -> Path | None:
    """The config file in $HOME that root does not read (it reads its own home's), where one is there to say so."""
    if os.geteuid() != 0 or named_config_path() is not None:
        return None
    home = os.environ.get("HOME")
    if not home:
        return None
    skipped = Path(home) / CONFIG_IN_HOME
    if skipped == default_config_path() or not skipped.exists():
        return None
    return skipped


def _trust() -> Trust:
    """Whose config gputui reads: the command it may run runs as the user gputui runs as."""
    euid = os.geteuid()
    if euid == 0:
        return Trust(
            frozenset({0}),
            stat.S_IWGRP | stat.S_IWOTH,
            "as root, gputui reads only a config that root owns and no group or other user may write",
        )
    return Trust(
        frozenset({euid, 0}), stat.S_IWOTH, "gputui reads only a config that you or root own and others may not write"
    )


def load_config(path: Path | None = None) -> Config:
    """The config in `path`, else in the file $GPUTUI_CONFIG names, else in the default file where it exists; the
    defaults otherwise. A file named (`path` or the variable) must exist. Raises ConfigError naming the file, the
    line and the key; and for a file that someone else could have written (see the module's doc), saying why it is
    not read."""
    if path is None:
        path = named_config_path()
    target = path if path is not None else default_config_path()
    try:
        source = read_trusted(target, _trust(), MAX_CONFIG_BYTES).decode("utf-8")
    except FileNotFoundError:
        if path is not None:
            raise ConfigError(f"{target}: no such config file") from None
        return Config()
    except UntrustedFile as exc:
        raise ConfigError(f"{target}: not read: {exc}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{target}: not valid TOML: not UTF-8 text") from None
    except OSError as exc:
        raise ConfigError(f"{target}: cannot read: {exc.strerror}") from None
    file = _File(target, source)
    try:
        data = tomllib.loads(source)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{target}: not valid TOML: {exc}") from None
    except ValueError as exc:  # an integer of more digits than Python converts (sys.set_int_max_str_digits)
        line = file.longest_number()
        where = f"{target}:{line}" if line is not None else f"{target}"
        raise ConfigError(f"{where}: not valid TOML: a number too long: {str(exc).split(';')[0]}") from None
    except RecursionError:
        raise ConfigError(f"{target}: not valid TOML: lists or tables nested too deep") from None
    deep = _too_deep(data, ())
    if deep is not None:
        raise file.error(deep, f"'{'.'.join(deep)}' nests lists or tables more than {MAX_NESTING} deep")
    config: Config = _read(Config, data, (), file)
    return config


def _too_deep(value: object, keys: tuple[str, ...], depth: int = 0) -> tuple[str, ...] | None:
    """The key of the first value that nests lists or tables more than MAX_NESTING deep; None where none does."""
    if depth > MAX_NESTING:
        return keys
    if isinstance(value, Mapping):
        inner = [((*keys, str(key)), item) for key, item in value.items()]
    elif isinstance(value, list):
        inner = [(keys, item) for item in value]
    else:
        return None
    for where, item in inner:
        found = _too_deep(item, where, depth + 1)
        if found is not None:
            return found
    return None


class _File:
    """The file being read, to say where a key is in it."""

    def __init__(self, path: Path, source: str) -> None:
        self.path = path
        self.source = source

    def error(self, keys: tuple[str, ...], message: str) -> ConfigError:
        line = key_line(self.source, keys)
        return ConfigError(f"{self.path}:{line}: {message}" if line is not None else f"{self.path}: {message}")

    def longest_number(self) -> int | None:
        """The line (from 1) of the longest run of digits, where a number too long to convert is."""
        runs = [
            (len(run), number)
            for number, line in enumerate(self.source.splitlines(), start=1)
            for run in re.findall(r"[0-9_]+", line)
        ]
        return max(runs, key=lambda run: run[0])[1] if runs else None


def _read(cls: type[Any], values: object, where: tuple[str, ...], file: _File) -> Any:
    """The dataclass `cls` (a table) from what tomllib read of it: each key checked by its field's check, each
    sub-table read as its field's dataclass."""
    name = ".".join(where)
    if not isinstance(values, Mapping):
        raise file.error(where, f"'{name}' must be a table, not {described(values)}")
    known = {f.name: f for f in fields(cls)}
    read: dict[str, object] = {}
    for key, value in values.items():
        keys = (*where, key)
        dotted = ".".join(keys)
        spec = known.get(key)
        if spec is None:
            kind = "table" if isinstance(value, Mapping) else "key"
            raise file.error(keys, f"unknown {kind} '{dotted}' ({_known(key, list(known))})")
        if spec.metadata.get(TABLE):
            read[key] = _read(type(_default(spec)), value, keys, file)
            continue
        check: Check[Any] = spec.metadata[CHECK]
        try:
            read[key] = check.read(value)
        except Invalid as exc:
            raise file.error(keys, f"'{dotted}' {exc}") from None
    return cls(**read)


# An unknown key's message lists the known ones up to this many; of more (the thresholds), the nearest.
KNOWN_LISTED = 12


def _known(key: str, known: list[str]) -> str:
    """The keys an unknown one might have meant: all of a short table's, else the nearest of a long one's."""
    if len(known) <= KNOWN_LISTED:
        return f"known: {', '.join(known)}"
    near = difflib.get_close_matches(key, known, n=3, cutoff=0.5)
    return f"did you mean {' or '.join(near)}?" if near else f"none of its {len(known)} keys is near it"


def _default(spec: Field[Any]) -> Any:
    return spec.default_factory() if spec.default_factory is not MISSING else spec.default


# A key as TOML writes it (bare, "quoted" or 'literal'), dotted or not; a table's header.
_KEY_PART = r"""(?:[A-Za-z0-9_-]+|"(?:[^"\\]|\\.)*"|'[^']*')"""
_DOTTED = rf"{_KEY_PART}(?:\s*\.\s*{_KEY_PART})*"
_HEADER = re.compile(rf"\s*\[\s*({_DOTTED})\s*\]")
_ASSIGNMENT = re.compile(rf"\s*({_DOTTED})\s*=")
_PART = re.compile(_KEY_PART)


def _parts(dotted: str) -> tuple[str, ...]:
    return tuple(part[1:-1] if part[0] in "\"'" else part for part in _PART.findall(dotted))


def key_line(source: str, keys: tuple[str, ...]) -> int | None:
    """The line (from 1) where the key `keys` names is set in the TOML `source`, or its table begins; where it is
    not written out (a key inside an inline table), the line of the nearest table or key above it that is. tomllib
    gives no positions: the headers and `key =` lines are read from the text, multi-line strings skipped."""
    where: dict[tuple[str, ...], int] = {}
    current: tuple[str, ...] = ()
    open_string: str | None = None
    for number, line in enumerate(source.splitlines(), start=1):
        if open_string is not None:
            if open_string in line:
                open_string = None
            continue
        header = _HEADER.match(line)
        assignment = None if header else _ASSIGNMENT.match(line)
        if header:
            current = _parts(header.group(1))
            where.setdefault(current, number)
        elif assignment:
            where.setdefault((*current, *_parts(assignment.group(1))), number)
        for quotes in ('"""', "'''"):
            if line.count(quotes) % 2:
                open_string = quotes
    for length in range(len(keys), 0, -1):
        wanted = keys[:length]
        found = [number for path, number in where.items() if path[:length] == wanted]
        if found:
            return min(found)
    return None


@dataclass(frozen=True, slots=True)
class Setting:
    """One key of a table, for the reference: what it must be, its default as the file writes it ("" where it has
    none) and what it does."""

    key: str
    kind: str
    default: str
    doc: str


@dataclass(frozen=True, slots=True)
class Section:
    """One table of the file ("diagnostics.thresholds"), what it is for, and its settings in order."""

    name: str
    doc: str
    settings: tuple[Setting, ...]


def sections() -> Iterator[Section]:
    """Every table of the config file with its settings, in the file's order: what docs/reference/config.md is
    generated from."""
    for spec in fields(Config):
        yield from _sections(type(_default(spec)), spec.name, spec.metadata[DOC])


def _sections(cls: type[Any], name: str, doc: str) -> Iterator[Section]:
    settings = tuple(
        Setting(spec.name, spec.metadata[CHECK].what, spec.metadata[CHECK].show(_default(spec)), spec.metadata[DOC])
        for spec in fields(cls)
        if not spec.metadata.get(TABLE)
    )
    yield Section(name, doc, settings)
    for spec in fields(cls):
        if spec.metadata.get(TABLE):
            yield from _sections(type(_default(spec)), f"{name}.{spec.name}", spec.metadata[DOC])
