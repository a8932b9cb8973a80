"""`gputui report FILE`: what a recording says: throttling, utilization, power, temperatures, findings."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gputui.commands import common
from gputui.commands.config_options import add_config_option, add_price_options

if TYPE_CHECKING:
    from gputui.record.reader import Recording


def register(sub: Any) -> None:
    parser = sub.add_parser("report", help="summarize a recording: per-GPU throttling, power, findings, marks")
    common.add_recording_argument(parser, (("--from", "from_"), ("--to", "to")))
    parser.add_argument(
        "--from",
        dest="from_",
        type=common.past_time,
        default=None,
        metavar="T",
        help="without FILE: report the history from T (local time, e.g. 02:00, '2026-12-06 02:00', '3h ago'; default: "
        "an hour before --to)",
    )
    parser.add_argument(
        "--to",
        type=common.past_time,
        default=None,
        metavar="T",
        help="without FILE: report the history up to T (default: now)",
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument(
        "--html",
        type=Path,
        default=None,
        metavar="OUT.html",
        help="also write one self-contained HTML page with charts (needs plotly: .venv/bin/pip install plotly)",
    )
    add_price_options(parser)
    add_config_option(parser)
    parser.set_defaults(func=common.on_recording(run, history_span))


def history_span(args: argparse.Namespace, extent: tuple[float, float]) -> tuple[float, float]:
    """What `report` reads of the store: --from to --to, by default the hour up to now (or up to --to)."""
    end = args.to if args.to is not None else max(time.time(), extent[1])
    return (args.from_ if args.from_ is not None else end - common.DEFAULT_HISTORY_S), end


def run(args: argparse.Namespace, recording: Recording) -> int:
    from gputui.commands.config_options import config_of
    from gputui.config import ConfigError
    from gputui.record.format import RecordingError
    from gputui.report.summary import build_report, render_text, report_to_dict

    try:
        price = config_of(args).cost.price
    except ConfigError as exc:
        return common.usage_error(exc)
    report = build_report(recording)
    if args.html is not None:
        from gputui.report.html import write_html

        try:
            write_html(recording, report, args.html, price)
        except RecordingError as exc:
            return common.usage_error(exc)
        print(f"gputui: wrote {args.html}", file=sys.stderr)
    if args.json:
        common.print_json(report_to_dict(report, price), ensure_ascii=False)
    else:
        sys.stdout.write(render_text(report, price))
    return common.EXIT_OK
