"""`gputui report FILE`: what a recording says: throttling, utilization, power, temperatures, findings."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gputui.commands import common
from gputui.commands.config_options import add_config_option, add_price_options

if TYPE_CHECKING:
    from gputui.record.reader import Recording


def register(sub: Any) -> None:
    parser = sub.add_parser("report", help="summarize a recording: per-GPU throttling, power, findings, marks")
    common.add_recording_argument(parser)
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
    parser.set_defaults(func=common.on_recording(run))


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
