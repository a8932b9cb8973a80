"""`gputui` with no sub-command: the live monitor (the Textual app, imported only here and only now)."""

from __future__ import annotations

import argparse
import gc
import sys
from contextlib import ExitStack

from gputui.commands import common
from gputui.sources.base import SourceUnavailable

# Container objects allocated (net) before a young-generation collection; Python's default is 700.
YOUNG_GC_THRESHOLD = 5000


def settle_gc() -> None:
    """Fewer, cheaper garbage collections for a process that lives for days and allocates the same each tick.

    What start-up made (modules, Textual's widgets, the scenario) is frozen out of every later collection, and a
    young collection waits for 5000 new objects instead of 700: at 1 s and 8 GPUs that is a few a minute in place
    of one or two a second, 0.10 ms of CPU a second in place of 0.19-0.30. Cycles are still collected; the
    history the monitor keeps is bounded, so memory is not.
    """
    gc.freeze()
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(YOUNG_GC_THRESHOLD, older, oldest)


def run_prometheus(args: argparse.Namespace) -> int:
    """The fleet view on a Prometheus: its first read (with the last minute's history) happens before the view
    opens, so a server that cannot be read is an error that says why, not an empty screen."""
    from gputui.session.fleet_poll import FLEET_DEFAULT_INTERVAL, PrometheusPoller
    from gputui.sources.prometheus.client import CredentialsError
    from gputui.ui.fleet_app import run_fleet_on

    interval = common.interval_of(args, FLEET_DEFAULT_INTERVAL)
    try:
        client = common.prometheus_client(args)
    except CredentialsError as exc:
        return common.usage_error(exc)
    poller = PrometheusPoller(client, args.match, step_s=interval)
    states = poller.poll()
    if not states:
        where = " for --match" if args.match else ""
        why = poller.error or f"{client.url}: no gputui or dcgm-exporter series there{where}"  # an error names it
        print(f"gputui: {why}", file=sys.stderr)
        return common.EXIT_NO_DRIVER
    return run_fleet_on(poller, interval, notices=lambda: poller.notices)


def run(args: argparse.Namespace) -> int:
    fleet = args.prometheus is not None or args.remote is not None
    if fleet and (args.alert_webhook is not None or args.alert_command is not None):
        return common.usage_error(
            "--alert-webhook and --alert-command alert on this machine's findings: run them with `gputui export` "
            "on each server, not with the fleet view"
        )
    if fleet and args.store is not None:
        return common.usage_error("--store is this machine's history: the fleet view reads none")
    if args.prometheus is not None:
        return run_prometheus(args)
    if args.remote is not None:
        from gputui.session.fleet_poll import FLEET_DEFAULT_INTERVAL
        from gputui.ui.fleet_app import run_fleet

        return run_fleet(args.remote, common.interval_of(args, FLEET_DEFAULT_INTERVAL))
    from gputui.commands.config_options import config_of
    from gputui.commands.record_options import record_target, warn_of_recording
    from gputui.config import ConfigError
    from gputui.record.format import RecordingError
    from gputui.session.builder import SessionOptions, open_session

    try:
        config = config_of(args)
    except ConfigError as exc:
        return common.usage_error(exc)
    options = SessionOptions(
        source=common.source_choice(args, fallback_demo=args.fallback_demo, long_running=True),
        interval_s=common.interval_of(args),
        record=record_target(args),
        stacks=True,
        alerts=True,
    )
    with ExitStack() as opened:
        try:
            session = opened.enter_context(open_session(options, config))
        except SourceUnavailable as exc:
            return common.report_unavailable(exc)
        except (ValueError, RecordingError) as exc:  # InvalidGpuSelection, a simulated machine with no GPU; --record
            return common.usage_error(exc)
        from gputui.store.location import default_store_dir
        from gputui.ui.app import GpuTuiApp

        store = None if args.no_history else args.store or default_store_dir()
        app = GpuTuiApp(session, store=store, store_named=args.store is not None)
        settle_gc()
        app.run()
    warn_of_recording(session)
    unnoted = app.remember_looked()
    if unnoted is not None:
        print(f"gputui: {unnoted}", file=sys.stderr)
    return common.EXIT_OK if app.return_code is None else app.return_code
