"""`gputui record`: keep the history while nobody watches: the monitor's session, headless, into the store.

The same session as the monitor (the sampling loop, the rules, the automatic stack windows where the machine's
processes are this one's, the alerts), with the store as its recording, until SIGTERM or SIGINT (both handled, as
`gputui export` handles them, so that a recorder started with SIGINT ignored still stops on it); then it closes
cleanly and exits 0. One recorder per store: a second is refused with the first one's PID. `--detach` starts the
same command in a session of its own and returns once it records (gputui/commands/detach.py).
"""

from __future__ import annotations

import argparse
import logging
import sys
import threading
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gputui.commands import common
from gputui.commands.config_options import add_config_and_alert_options
from gputui.sources.base import InvalidGpuSelection, SourceUnavailable

if TYPE_CHECKING:
    from gputui.diagnostics.tick import Tick
    from gputui.model import SystemInfo
    from gputui.store.retention import Retention
    from gputui.store.writer import StoreWriter

LOG = logging.getLogger("gputui.record")


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "record",
        help="keep the history: record this machine into the store until stopped (headless; see docs/history.md)",
        description="Record this machine into the history store until SIGTERM or Ctrl-C: the monitor's sampling, "
        "findings, stack windows and alerts, without a screen. One recorder per store.",
    )
    common.add_source_options(parser)
    add_config_and_alert_options(parser)
    common.add_store_option(parser, "the store to record into")
    common.add_interval_option(parser, f"seconds between readings (default {common.DEFAULT_INTERVAL_S:g})")
    parser.add_argument(
        "--detach",
        action="store_true",
        help="run in the background (a session of its own): returns once it records, leaving DIR/recorder.pid and "
        "its output in DIR/recorder.log; for a machine without systemd",
    )
    parser.add_argument(
        "--shared",
        action="store_true",
        help="let every user of the machine read the store (directory 0755, files 0644); the job stacks (what "
        "other users' processes were doing) are then not recorded",
    )
    parser.add_argument(
        "--ignore-own-cgroup",
        action="store_true",
        help="leave out the cgroup gputui runs in: for a recorder in a service or pod of its own (systemd, "
        "Kubernetes), whose limits are not the jobs'",
    )
    # The child `--detach` starts: records in the foreground, and says so in DIR/recorder.pid once it does.
    parser.add_argument("--detached-child", action="store_true", help=argparse.SUPPRESS)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.detach and not args.detached_child:
        from gputui.commands.detach import detach

        return detach(common.store_dir(args), sys.argv[1:], shared=args.shared)
    return record(args)


def record(args: argparse.Namespace) -> int:
    from gputui.commands.config_options import config_of
    from gputui.config import ConfigError
    from gputui.session.builder import SessionOptions, StoreTarget, open_session
    from gputui.store.errors import StoreError
    from gputui.store.writer import StoreWriter

    logging.basicConfig(format="gputui: %(message)s", level=logging.WARNING)
    try:
        config = config_of(args)
    except ConfigError as exc:
        return common.usage_error(exc)
    directory = common.store_dir(args)
    target = StoreTarget(directory, shared=args.shared)
    options = SessionOptions(
        source=common.source_choice(args, long_running=True, own_cgroup=not args.ignore_own_cgroup),
        interval_s=common.interval_of(args),
        record=target,
        stacks=True,  # where the machine's processes are this one's (stacks_for decides, as for the monitor)
        alerts=True,  # said in the log, as the exporter's
        alert_flush_s=config.alerts.timeout_s,
        tolerate_rule_errors=True,  # a rule that breaks costs its findings, not the history
    )
    stop = threading.Event()
    with ExitStack() as opened:
        try:
            session = opened.enter_context(open_session(options, config))
        except InvalidGpuSelection as exc:
            return common.usage_error(exc)
        except StoreError as exc:  # another recorder holds it (its PID), a newer store, a directory not ours
            return common.usage_error(exc)
        except SourceUnavailable as exc:
            return common.report_unavailable(exc)
        writer = session.recorder
        assert isinstance(writer, StoreWriter)  # the store's, opened with the session
        started = _started(args, directory, session.system, session.interval_s, target.retention)
        watch = _Watch(writer, on_first=started)
        loop = session.sampling_loop(watch.tick, watch.failed)
        with common.stop_on(common.STOP_SIGNALS, stop):
            loop.start()
            stop.wait()
    if args.detached_child:
        from gputui.commands.detach import remove_pid_file

        remove_pid_file(directory)
    print(f"gputui: stopped; readings recorded into {directory}: {writer.ticks_written}", file=sys.stderr)
    return common.EXIT_OK


def _what(system: SystemInfo) -> str:
    if system.source == "simulated":
        return f"SIMULATED data (scenario {system.scenario})"
    return f"{system.gpu_count} GPU(s)"


def retention_text(retention: Retention) -> str:
    """The store's retention in words: "keeps 7 days of readings, 90 days of per-minute summaries, at most 1 GiB"."""
    return (
        f"keeps {retention.tick_days:g} days of readings, {retention.minute_days:g} days of per-minute summaries, "
        f"at most {retention.max_bytes / (1 << 30):g} GiB"
    )


def _started(
    args: argparse.Namespace, directory: Path, system: SystemInfo, interval_s: float, retention: Retention
) -> Callable[[], None]:
    """What is said once the first reading is in the writer's hands: where it records and what the store keeps;
    and, for the child `--detach` started, DIR/recorder.pid, which its parent waits for."""

    def started() -> None:
        if args.detached_child:
            from gputui.commands.detach import write_pid_file

            write_pid_file(directory, shared=args.shared)
        print(
            f"gputui: recording {_what(system)} into {directory} every {interval_s:g} s; {retention_text(retention)} "
            "(SIGTERM or Ctrl-C stops it)",
            file=sys.stderr,
            flush=True,
        )

    return started


class _Watch:
    """The recorder's sink of the loop: says once that it records (`on_first`), and in the log what changes: the
    store's warning (a full disk pauses the history, sampling goes on) and a poll that failed."""

    def __init__(self, writer: StoreWriter, on_first: Callable[[], object] | None = None) -> None:
        self._writer = writer
        self._on_first = on_first
        self._warning: str | None = None
        self._failure: str | None = None

    def tick(self, tick: Tick) -> None:
        if self._on_first is not None:
            first, self._on_first = self._on_first, None
            first()
        self._failure = None
        warning = self._writer.warning
        if warning != self._warning:
            LOG.warning(warning if warning is not None else f"history resumed ({self._writer.path})")
            self._warning = warning

    def failed(self, exc: Exception) -> None:
        from gputui.session.loop import failure_text

        text = failure_text(exc)
        if text != self._failure:  # once, not every second while it lasts
            LOG.warning("a reading failed: %s; sampling goes on", text)
            self._failure = text
