"""`gputui snapshot`: one reading, as a table or as JSON."""

from __future__ import annotations

import argparse
import json
import sys
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


def take_snapshot(args: argparse.Namespace) -> Snapshot:
    source, system = common.make_source(args)
    try:
        source.sample()
        if system.is_live or args.demo_job is not None:  # read in real time: let it pass
            time.sleep(RATE_WINDOW_S)
        return source.sample()
    finally:
        source.close()


def read_one(args: argparse.Namespace, take: Callable[[argparse.Namespace], Snapshot] | None = None) -> Snapshot | int:
    """One reading as the options ask (by `take`, default `take_snapshot`), or the exit code once the reason
    there is none has been printed."""
    try:
        return (take or take_snapshot)(args)
    except InvalidGpuSelection as exc:
        print(f"gputui: error: {exc}", file=sys.stderr)
        return common.EXIT_USAGE
    except SourceUnavailable as exc:
        return common.report_unavailable(exc)


def run(args: argparse.Namespace) -> int:
    snapshot = read_one(args)
    if isinstance(snapshot, int):
        return snapshot
    if args.json:
        from gputui.serialize import snapshot_to_dict

        json.dump(snapshot_to_dict(snapshot), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        from gputui.textview import print_snapshot

        print_snapshot(snapshot)
    return common.EXIT_OK
