"""`gputui export`: serve the GPUs' metrics to Prometheus, under dcgm-exporter's names (see gputui/export/).

Once serving, it serves until SIGINT (Ctrl-C) or SIGTERM, both handled alike: the main thread waits for one, then
the sampling loop and the server stop and the source closes. Both handlers are set explicitly, so SIGINT also ends
an exporter started with it ignored (any background job of a non-interactive shell), where Python raises no
KeyboardInterrupt.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from types import FrameType
from typing import Any

from gputui.argtypes import port_number
from gputui.commands import common
from gputui.commands.config_options import add_config_and_alert_options
from gputui.sources.base import InvalidGpuSelection, SourceUnavailable

DEFAULT_PORT = 9400  # dcgm-exporter's port: a scrape config written for it works unchanged
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


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
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from gputui.commands.config_options import config_of
    from gputui.config import ConfigError
    from gputui.export.server import ExportBindError, Exporter
    from gputui.metric_schema import HOSTNAME_LABEL, LEGACY_HOSTNAME_LABEL
    from gputui.session.builder import SessionOptions, open_session
    from gputui.session.sampling import Sampler

    logging.basicConfig(format="gputui: %(message)s", level=logging.WARNING)
    try:
        config = config_of(args)
    except ConfigError as exc:
        return common.usage_error(exc)
    options = SessionOptions(
        source=common.source_choice(args, long_running=True, own_cgroup=not args.ignore_own_cgroup),
        interval_s=common.interval_of(args),
        stacks=True,
        alerts=True,  # said in the log: the session's alerts speak there until a front end attaches its own
        alert_flush_s=config.alerts.timeout_s,
        tolerate_rule_errors=True,  # a rule that breaks leaves the GPU metrics served
    )
    with ExitStack() as opened:
        try:
            session = opened.enter_context(open_session(options, config))
        except InvalidGpuSelection as exc:
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
            with _set_on(STOP_SIGNALS, stop):
                first = exporter.sampler.state.snapshot
                what = f"{len(first.gpus) if first is not None else system.gpu_count} GPU(s)"
                if system.source == "simulated":
                    what = f"SIMULATED data (scenario {system.scenario})"
                print(f"gputui: serving {what} at {exporter.url} (Ctrl-C to stop)", file=sys.stderr, flush=True)
                stop.wait()
        finally:
            exporter.stop()
    return common.EXIT_OK


@contextmanager
def _set_on(signals: tuple[signal.Signals, ...], stop: threading.Event) -> Iterator[None]:
    """`stop` set by any of `signals` while inside, whatever their handling was before (ignored included)."""

    def handler(signum: int, frame: FrameType | None) -> None:
        stop.set()

    previous = {signum: signal.signal(signum, handler) for signum in signals}
    try:
        yield
    finally:
        for signum, was in previous.items():
            signal.signal(signum, signal.SIG_DFL if was is None else was)  # None: set outside Python
