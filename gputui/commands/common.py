"""Options and helpers shared by the commands: choosing a source, parsing GPU lists, exit codes."""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING

from gputui.argtypes import (
    MAX_DEMO_GPUS,
    MAX_INTERVAL,
    MIN_INTERVAL,
    cpu_list,
    demo_gpu_count,
    gpu_list,
    positive_seconds,
    sample_interval,
    usage_errors,
)
from gputui.diagnostics.findings import Severity
from gputui.sources.base import NoJobTrace, SourceUnavailable
from gputui.sources.sim.physics import BOARDS, DEFAULT_BOARD

if TYPE_CHECKING:
    from gputui.record.reader import Recording
    from gputui.session.source_choice import SourceChoice
    from gputui.sources.prometheus.client import PrometheusClient
    from gputui.store.reader import Store

EXIT_OK = 0
EXIT_WARNINGS = 1
EXIT_USAGE = 2
EXIT_NO_DRIVER = 3
EXIT_CRITICAL = 4
EXIT_NOT_KNOWN = 6  # 5 is probe's "could not run"

# `--fail-on`: the severities a health check may fail on (info never does).
FAIL_ON = {severity.label: severity for severity in (Severity.WARNING, Severity.CRITICAL)}


def exit_code(severities: Iterable[Severity], *, fail_on: Severity = Severity.WARNING, known: bool = True) -> int:
    """A health check's exit code from the worst finding at `fail_on` or above: 4 critical, 1 warnings; without
    one, 0 where the verdict is known and EXIT_NOT_KNOWN where it is not (no script is told "healthy" blind)."""
    worst = max((s for s in severities if s >= fail_on), default=None)
    if worst == Severity.CRITICAL:
        return EXIT_CRITICAL
    if worst == Severity.WARNING:
        return EXIT_WARNINGS
    return EXIT_OK if known else EXIT_NOT_KNOWN


def usage_error(message: object) -> int:
    """Say what the user asked wrongly (or what could not be opened), and give the exit code that means it."""
    print(f"gputui: error: {message}", file=sys.stderr)
    return EXIT_USAGE


def print_json(document: object, *, ensure_ascii: bool = True) -> None:
    """A command's JSON answer on stdout, indented and ending in a newline as every command writes it."""
    json.dump(document, sys.stdout, indent=2, ensure_ascii=ensure_ascii)
    sys.stdout.write("\n")


def add_store_option(parser: argparse.ArgumentParser, help: str) -> None:
    """`--store DIR`: the history store a command records into or reads; unset, the default one (store_dir)."""
    parser.add_argument("--store", type=Path, default=None, metavar="DIR", help=f"{help} {STORE_DEFAULT}")


STORE_DEFAULT = "(default: $GPUTUI_STORE, else /var/lib/gputui as root, else $XDG_STATE_HOME/gputui)"


def store_dir(args: argparse.Namespace) -> Path:
    """The store `--store` names, else the machine's default one."""
    from gputui.store.location import default_store_dir

    return Path(args.store) if args.store is not None else default_store_dir()


@usage_errors
def past_time(text: str) -> float:
    """`--since`, `--at`, `--from`, `--to`: the machine's local time (`03:10`, `2026-12-06 03:10`) or an age
    (`3h ago`), read when the command starts, as a UTC epoch second."""
    import time

    from gputui.store.when import parse_when

    return parse_when(text, time.time())


@usage_errors
def window_length(text: str) -> float:
    """`--window`: `10m`, `90s`, `1h30m`."""
    from gputui.store.when import parse_duration

    return parse_duration(text)


# How far back the views that read the store look when not told: the last hour.
DEFAULT_HISTORY_S = 3600.0

# What a view reads of the history, from its options and the store's extent (first, last tick): (start, end),
# UTC epoch seconds.
Span = Callable[[argparse.Namespace, tuple[float, float]], tuple[float, float]]


def add_recording_argument(parser: argparse.ArgumentParser, store_options: Iterable[tuple[str, str]] = ()) -> None:
    """FILE, a recording made with --record; or without it the history store (`--store DIR`, else the default one),
    read over the span the command's own `store_options` choose (each option with its dest: ("--from", "from_"))."""
    parser.add_argument(
        "file",
        type=Path,
        nargs="?",
        default=None,
        metavar="FILE",
        help="a recording made with --record (.jsonl or .jsonl.gz); without it, the history store",
    )
    add_store_option(parser, "without FILE: the history store to read")
    parser.set_defaults(store_options=(("--store", "store"), *store_options))


def on_recording(
    run: Callable[[argparse.Namespace, Recording], int], span: Span | None = None
) -> Callable[[argparse.Namespace], int]:
    """A command that reads the recording named by FILE (add_recording_argument), or, without FILE, the history
    store over the span `span` gives (default: the last hour): `run` is given it opened, as the same
    Recording either way. One that cannot be read, or holds no sample to read, ends the command with a usage error
    that says why (for the store: how to start one, or what it holds)."""

    def opened(args: argparse.Namespace) -> int:
        from gputui.record.format import RecordingError
        from gputui.store.errors import StoreError

        if args.file is not None:
            given = [option for option, dest in args.store_options if getattr(args, dest) is not None]
            if given:
                return usage_error(f"{', '.join(given)} read the history store: give them without FILE")
        try:
            recording = _history(args, span) if args.file is None else _file(args.file)
        except (RecordingError, StoreError) as exc:
            return usage_error(exc)
        if not recording.ticks:
            for warning in recording.warnings:  # why its lines gave none
                print(f"gputui: warning: {warning}", file=sys.stderr)
            why = "" if recording.warnings else ": the recorder stopped before its first tick"
            return usage_error(f"{args.file} has a header but no samples{why}")
        return run(args, recording)

    return opened


def _file(path: Path) -> Recording:
    from gputui.record.reader import load_recording

    return load_recording(path)


def _history(args: argparse.Namespace, span: Span | None) -> Recording:
    """The store's recording over the span asked (StoreError: see read_history)."""
    import time

    from gputui.store.errors import StoreError
    from gputui.store.reader import Store

    store = Store(store_dir(args))
    extent = store.extent()
    if extent is None:
        raise StoreError(f"{store.directory} holds no readings yet: a recorder writes its first within seconds")
    now = time.time()
    start, end = span(args, extent) if span is not None else (now - DEFAULT_HISTORY_S, max(now, extent[1]))
    return read_history(store, start, end)


def read_history(store: Store, start: float, end: float) -> Recording:
    """The store's readings from `start` to `end`, its damaged frames in `warnings` (the caller says them);
    StoreError: a span that ends before it starts, or holds nothing (then said with what the store does hold, and
    the warnings that may say why)."""
    from gputui.store.errors import StoreError

    if start >= end:
        raise StoreError(f"the span asked ends before it starts: from {clock(start)} to {clock(end)}")
    recording = store.read(start, end)
    if not recording.ticks:
        for warning in recording.warnings:
            print(f"gputui: warning: {warning}", file=sys.stderr)
        extent = store.extent()
        held = "nothing yet" if extent is None else f"{clock(extent[0])} to {clock(extent[1])}"
        raise StoreError(f"{store.directory} holds nothing from {clock(start)} to {clock(end)}: it holds {held}")
    return recording


def clock(t: float) -> str:
    """A time as the history's answers name it: the machine's local date and time, to the second."""
    import time

    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t))


# `--demo list` prints the scenarios, each with what it shows, and exits 0.
LIST_SCENARIOS = "list"


def scenario_name(text: str) -> str:
    from gputui.sources.sim.scenarios import SCENARIOS

    if text not in (*SCENARIOS, LIST_SCENARIOS):
        raise argparse.ArgumentTypeError(
            f"unknown scenario {text!r} (choose from {', '.join(SCENARIOS)}; `--demo list` describes them)"
        )
    return text


def print_scenarios() -> int:
    from gputui.sources.sim.scenarios import SCENARIO_DESCRIPTIONS

    width = max(len(name) for name in SCENARIO_DESCRIPTIONS)
    for name, description in SCENARIO_DESCRIPTIONS.items():
        print(f"{name:<{width}}  {description}")
    return EXIT_OK


def add_source_options(parser: argparse.ArgumentParser) -> None:
    simulated = parser.add_mutually_exclusive_group()
    simulated.add_argument(
        "--demo",
        nargs="?",
        const="tour",
        default=None,
        type=scenario_name,
        metavar="SCENARIO",
        help="use the simulated machine (labelled SIMULATED everywhere); default scenario: tour; "
        "`--demo list` lists the scenarios",
    )
    simulated.add_argument(
        "--demo-job",
        type=Path,
        default=None,
        metavar="FILE",
        help="the lab: one simulated GPU that is busy exactly while a real job is in its GPU step, as the job "
        "reports in FILE (start examples/lab/train.py --trace FILE); the host, the job's processes and its "
        "cgroup are this machine's, read in real time; labelled SIMULATED everywhere",
    )
    parser.add_argument(
        "--demo-job-cpus",
        type=cpu_list,
        default=None,
        metavar="LIST",
        help="with --demo-job: the CPUs near the simulated GPU, e.g. 0-3 (default: every CPU of this machine)",
    )
    parser.add_argument(
        "--demo-gpu",
        choices=tuple(BOARDS),
        default=DEFAULT_BOARD,
        help=f"with --demo or --demo-job: the simulated GPU model (default {DEFAULT_BOARD}; a100 has no GPM, so "
        "SM and tensor activity read n/a; rtx4090 has neither GPM nor NVLink; h100-mig is an H100 in MIG mode, "
        "split into two 3g.40gb instances)",
    )
    parser.add_argument(
        "--demo-gpus",
        type=demo_gpu_count,
        default=None,
        metavar="N",
        help=f"with --demo: how many GPUs the simulated machine has (default 4, at most {MAX_DEMO_GPUS})",
    )
    parser.add_argument("--gpus", type=gpu_list, default=None, metavar="LIST", help="only these GPUs, e.g. 0,2")


@usage_errors
def remote_targets(text: str) -> tuple[str, ...]:
    """`gpu01:9400,gpu02:9400` -> the exporters' /metrics URLs; a bad one is a usage error."""
    try:
        from gputui.sources.remote import parse_targets
    except ImportError:
        raise argparse.ArgumentTypeError(
            "needs prometheus-client, installed where gputui runs (in a checkout: .venv/bin/pip install "
            "prometheus-client)"
        ) from None
    return parse_targets(text)


@usage_errors
def prometheus_url(text: str) -> str:
    """`--prometheus`: the server's root URL; a bad one is a usage error."""
    from gputui.sources.prometheus.client import base_url

    return base_url(text)


@usage_errors
def match_selector(text: str) -> str | None:
    """`--match`: a label selector; what is wrong with one is a usage error that says where."""
    from gputui.sources.prometheus.fleet_query import parse_match

    return parse_match(text)


_DURATION_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def duration(text: str) -> float:
    """`15m`, `1h`, `90s` or plain seconds -> seconds (above 0)."""
    value = text.strip()
    unit = _DURATION_UNITS.get(value[-1:])
    number = value[:-1] if unit is not None else value
    seconds = positive_seconds(number) * (unit or 1)
    return float(seconds)


def add_prometheus_options(parser: argparse.ArgumentParser) -> None:
    """--prometheus and what goes with it; credentials are not options (they would show in `ps`): see --help."""
    parser.add_argument(
        "--prometheus",
        type=prometheus_url,
        default=None,
        metavar="URL",
        help="read the fleet from this Prometheus (gputui's and dcgm-exporter's series), e.g. http://prom:9090; "
        "credentials from the environment only: GPUTUI_PROMETHEUS_TOKEN[_FILE] (bearer) or GPUTUI_PROMETHEUS_USER "
        "+ GPUTUI_PROMETHEUS_PASSWORD[_FILE] (basic); a private CA from GPUTUI_PROMETHEUS_CA_FILE",
    )
    parser.add_argument(
        "--match",
        type=match_selector,
        default=None,
        metavar="SELECTOR",
        help='with --prometheus: only the series this label selector selects, e.g. {cluster="a"}',
    )
    parser.add_argument(
        "--prometheus-insecure",
        action="store_true",
        help="with --prometheus: do not verify its TLS certificate (said on screen the whole time)",
    )
    parser.add_argument(
        "--prometheus-proxy-from-env",
        action="store_true",
        help="with --prometheus: go through the proxy HTTP(S)_PROXY names (by default none is used)",
    )


DEFAULT_INTERVAL_S = 1.0


def add_interval_option(parser: argparse.ArgumentParser, help: str) -> None:
    """`--interval S`, one type for every command that samples (argtypes.sample_interval); unset it is None, and
    `interval_of` gives the command's default."""
    within = f"{MIN_INTERVAL:g} to {MAX_INTERVAL:g}"
    parser.add_argument("--interval", type=sample_interval, default=None, metavar="S", help=f"{help}; {within}")


def interval_of(args: argparse.Namespace, default: float = DEFAULT_INTERVAL_S) -> float:
    """The seconds between readings `--interval` asks for, else `default`."""
    return default if args.interval is None else float(args.interval)


def add_monitor_options(parser: argparse.ArgumentParser) -> None:
    add_source_options(parser)
    add_prometheus_options(parser)
    parser.add_argument(
        "--remote",
        type=remote_targets,
        default=None,
        metavar="TARGETS",
        help="watch several servers at once through their exporters (`gputui export` there), e.g. "
        "gpu01:9400,gpu02:9400; one poll every --interval seconds, at least 1",
    )
    parser.add_argument(
        "--fallback-demo",
        action="store_true",
        help="if the NVIDIA driver cannot be read, run on the simulated machine and say why",
    )
    add_interval_option(parser, "seconds between samples (default 1; 2 with --remote, where each scrape costs more)")
    parser.add_argument(
        "--readonly",
        action="store_true",
        help="send no signal to a process: the monitor's K key is gone (as with [monitor] readonly = true in the "
        "config)",
    )
    from gputui.commands.config_options import add_config_and_alert_options, add_price_options
    from gputui.commands.record_options import add_record_options

    add_price_options(parser)
    add_config_and_alert_options(parser)
    add_record_options(parser)


def source_option_problem(args: argparse.Namespace) -> str | None:
    """What is wrong with the source options together (argparse checks each alone), as a usage error's line.
    The top-level parser defines them all (add_monitor_options), so every command's namespace has them."""
    job = args.demo_job
    if args.demo_job_cpus is not None and job is None:
        return "--demo-job-cpus needs --demo-job"
    if job is not None and args.demo_gpus is not None:
        return "--demo-gpus is for --demo: the --demo-job machine has one GPU"
    if job is not None and args.remote is not None:
        return "--remote watches other servers: it cannot be combined with --demo-job"
    remote = args.remote
    if args.prometheus is not None:
        if remote is not None:
            return "--prometheus and --remote both name the servers to watch: give one"
        if args.record is not None:
            return "--record records one machine; with --prometheus, Prometheus keeps the fleet's history"
        if args.demo is not None or job is not None:
            demo = "--demo" if args.demo is not None else "--demo-job"
            return f"--prometheus reads real servers: it cannot be combined with {demo}"
    elif args.match is not None or args.prometheus_insecure or args.prometheus_proxy_from_env:
        return "--match, --prometheus-insecure and --prometheus-proxy-from-env go with --prometheus"
    if remote is not None and args.demo is not None:
        return "--remote watches other servers: it cannot be combined with --demo"
    return None


def source_choice(
    args: argparse.Namespace,
    *,
    fallback_demo: bool = False,
    long_running: bool = False,
    own_cgroup: bool = True,
    simulated_time: bool = False,
) -> SourceChoice:
    """The machine the source options name (those of add_source_options, each read by name), and how the command
    reads it: see SourceChoice. The session opens it (gputui/session/builder.py)."""
    from gputui.session.source_choice import SourceChoice

    return SourceChoice(
        demo=args.demo,
        demo_job=args.demo_job,
        demo_job_cpus=args.demo_job_cpus,
        demo_gpu=args.demo_gpu,
        demo_gpus=args.demo_gpus,
        gpus=args.gpus,
        fallback_demo=fallback_demo,
        long_running=long_running,
        own_cgroup=own_cgroup,
        simulated_time=simulated_time,
    )


def report_unavailable(exc: SourceUnavailable, *, reason_shown: bool = False) -> int:
    """Why no source opened, on stderr, with the way to the simulated machine; `reason_shown`: the command's own
    output said why already (diagnose's text), so only the way is added."""
    if not reason_shown:
        print(f"gputui: {exc}", file=sys.stderr)
    if not isinstance(exc, NoJobTrace):  # that one says how to start the job it waits for
        print("gputui: to see gputui on a simulated machine, add --demo", file=sys.stderr)
    return EXIT_NO_DRIVER


def prometheus_client(args: argparse.Namespace) -> PrometheusClient:
    """The client --prometheus and its options ask for; CredentialsError (a ValueError) says what is wrong with
    the credentials' environment."""
    from gputui.sources.prometheus.client import PrometheusClient

    return PrometheusClient(
        args.prometheus, verify_tls=not args.prometheus_insecure, proxy_from_env=args.prometheus_proxy_from_env
    )


# What ends a headless command that runs until told (`export`, `record`): both alike.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@contextmanager
def stop_on(signals: tuple[signal.Signals, ...], stop: threading.Event) -> Iterator[None]:
    """`stop` set by any of `signals` while inside, whatever their handling was before (ignored included)."""

    def handler(signum: int, frame: FrameType | None) -> None:
        stop.set()

    previous = {signum: signal.signal(signum, handler) for signum in signals}
    try:
        yield
    finally:
        for signum, was in previous.items():
            signal.signal(signum, signal.SIG_DFL if was is None else was)  # None: set outside Python
