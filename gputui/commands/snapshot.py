"""`gputui snapshot`: one reading, as a table or as JSON."""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

from gputui.commands import common
from gputui.model import Snapshot
from gputui.sources.base import InvalidGpuSelection, SourceUnavailable

# Rates (PCIe, disk, network, CPU %) need two readings; this far apart they are real and still quick.
RATE_WINDOW_S = 0.5


def register(sub: Any) -> None:
    parser = sub.add_parser("snapshot", help="print one reading of the GPUs and the host")
    common.add_source_options(parser)
    parser.add_argument("--json", action="store_true", help="print JSON (the keys recordings and exports use)")
    parser.set_defaults(func=run)


def take_reading(args: argparse.Namespace, *, rates: bool = True) -> Snapshot:
    """One reading from the machine the options name, in a session of its own that only reads (no diagnostics, no
    config); with `rates`, the second of two taken RATE_WINDOW_S apart, so that rates have a span to be measured
    over."""
    from gputui.config import Config
    from gputui.session.builder import SessionOptions, open_session

    options = SessionOptions(source=common.source_choice(args), diagnose=False)
    with open_session(options, Config()) as session:
        take = session.sampler.take
        if rates:
            take()
            if session.system.is_live or args.demo_job is not None:  # read in real time: let it pass
                time.sleep(RATE_WINDOW_S)
        return take().snapshot


def read_one(args: argparse.Namespace, take: Callable[[argparse.Namespace], Snapshot]) -> Snapshot | int:
    """One reading taken by `take`, or the exit code once the reason there is none has been printed."""
    try:
        return take(args)
    except InvalidGpuSelection as exc:
        return common.usage_error(exc)
    except SourceUnavailable as exc:
        return common.report_unavailable(exc)


def show(
    args: argparse.Namespace,
    take: Callable[[argparse.Namespace], Snapshot],
    to_dict: Callable[[Snapshot], object],
    print_table: Callable[[Snapshot], None],
) -> int:
    """One reading taken by `take`, printed as `--json` asks: `to_dict`'s JSON, or `print_table`'s text."""
    snapshot = read_one(args, take)
    if isinstance(snapshot, int):
        return snapshot
    if args.json:
        common.print_json(to_dict(snapshot))
    else:
        print_table(snapshot)
    return common.EXIT_OK


def run(args: argparse.Namespace) -> int:
    from gputui.serialize import snapshot_to_dict

    return show(args, take_reading, snapshot_to_dict, _print_table)


def _print_table(snapshot: Snapshot) -> None:
    from gputui.text.snapshot_text import print_snapshot  # rich's tables, loaded only when one is printed

    print_snapshot(snapshot)
