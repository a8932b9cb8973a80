"""`gputui export`: serve the GPUs' metrics to Prometheus, under dcgm-exporter's names (see gputui/export/).

Once serving, it serves until SIGINT (Ctrl-C) or SIGTERM, both handled alike: the main thread waits for one, then
the sampling loop and the server stop and the source closes. Both handlers are set explicitly, so SIGINT also ends
an exporter started with it ignored (any background job of a non-interactive shell), where Python raises no
KeyboardInterrupt.
"""

from __future__ import annotations

import argparse
import logging
import sys
import threading
from contextlib import ExitStack
from typing import Any

from gputui.argtypes import port_number
from gputui.commands import common
from gputui.commands.config_options import add_config_and_alert_options
from gputui.sources.base import InvalidGpuSelection, SourceUnavailable

DEFAULT_PORT = 9400  # dcgm-exporter's port: a scrape config written for it works unchanged


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "export",
        help="serve /metrics for Prometheus (dcgm-exporter's metric names, plus gputui's findings)",
        description="Serve /metrics in the Prometheus format until Ctrl-C. GPU metrics use dcgm-exporter's names "
        "and labels, so its Grafana dashboards work unchanged; gputui's own metrics start with gputui_.",
    )
    common.add_source_options(parser)
    add_config_and_alert_options(parser)
    parser.add_argument(
        "--port", type=port_number, default=DEFAULT_PORT, help=f"port to listen on (default {DEFAULT_PORT})"
    )
    parser.add_argument(
        "--bind",
        default="127.0.0.1",
        metavar="ADDR",
        help="address to listen on (default 127.0.0.1, this machine only; 0.0.0.0 for every interface)",
    )
    common.add_interval_option(parser, "seconds between readings; scrapes read the newest one (default 1)")
    parser.add_argument(
        "--legacy-hostname-label",
        action="store_true",
        help="name the host label Hostname, as dcgm-exporter's releases up to 4.8.2 write it, for dashboards and "
        "alerts that use it (default: hostname, as dcgm-exporter's main branch writes it since #655)",
    )
    parser.add_argument(
        "--ignore-own-cgroup",
        action="store_true",
        help="leave out the cgroup gputui runs in (CPU quota, memory limit, /dev/shm, pressure): for an exporter "
        "in a pod or service of its own (a Kubernetes DaemonSet, a systemd unit), whose limits are not the jobs'",
    )
    history = parser.add_argument_group("the history (docs/history.md)")
    history.add_argument(
        "--history",
        action="store_true",
        help="also keep the history store, as `gputui record` does: one gputui per node serves the metrics and "
        "keeps the past (a second recorder on the store is refused)",
    )
    common.add_store_option(history, "with --history: the store to record into")
    history.add_argument(
        "--shared",
        action="store_true",
        help="with --history: let every user of the machine read the store (0755/0644); job stacks are then not "
        "recorded",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from gputui.commands.config_options import config_of
    from gputui.commands.record_options import warn_of_recording
    from gputui.config import ConfigError
    from gputui.export.server import ExportBindError, Exporter
    from gputui.metric_schema import HOSTNAME_LABEL, LEGACY_HOSTNAME_LABEL
    from gputui.session.builder import SessionOptions, StoreTarget, open_session
    from gputui.session.sampling import Sampler
    from gputui.store.errors import StoreError

    logging.basicConfig(format="gputui: %(message)s", level=logging.WARNING)
    try:
        config = config_of(args)
    except ConfigError as exc:
        return common.usage_error(exc)
    if not args.history and (args.store is not None or args.shared):
        return common.usage_error("--store and --shared go with --history")
    options = SessionOptions(
        source=common.source_choice(args, long_running=True, own_cgroup=not args.ignore_own_cgroup),
        interval_s=common.interval_of(args),
        record=StoreTarget(common.store_dir(args), shared=args.shared) if args.history else None,
        stacks=True,
        alerts=True,  # said in the log: the session's alerts speak there until a front end attaches its own
        alert_flush_s=config.alerts.timeout_s,
        tolerate_rule_errors=True,  # a rule that breaks leaves the GPU metrics served
    )
    with ExitStack() as opened:
        try:
            session = opened.enter_context(open_session(options, config))
        except (InvalidGpuSelection, StoreError) as exc:  # StoreError: a recorder holds the store (its PID)...
            return common.usage_error(exc)
        except SourceUnavailable as exc:
            return common.report_unavailable(exc)
        assert isinstance(session.sampler, Sampler)  # a live machine's, never a replay's
        system = session.system
        hostname_label = LEGACY_HOSTNAME_LABEL if args.legacy_hostname_label else HOSTNAME_LABEL
        exporter = Exporter(
            session.sampler,
            system,
            bind=args.bind,
            port=args.port,
            interval=session.interval_s,
            hostname_label=hostname_label,
        )
        stop = threading.Event()
        try:
            try:
                exporter.start()
            except ExportBindError as exc:
                return common.usage_error(exc)
            with common.stop_on(common.STOP_SIGNALS, stop):
                first = exporter.sampler.state.snapshot
                what = f"{len(first.gpus) if first is not None else system.gpu_count} GPU(s)"
                if system.source == "simulated":
                    what = f"SIMULATED data (scenario {system.scenario})"
                kept = f"; keeping the history in {session.recorder.path}" if session.recorder is not None else ""
                print(f"gputui: serving {what} at {exporter.url}{kept} (Ctrl-C to stop)", file=sys.stderr, flush=True)
                stop.wait()
        finally:
            exporter.stop()
    warn_of_recording(session)
    return common.EXIT_OK
