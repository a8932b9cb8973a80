"""`gputui replay FILE`: the monitor, fed from a recording instead of the driver."""

from __future__ import annotations

import argparse
import sys
import time
from contextlib import ExitStack
from typing import TYPE_CHECKING, Any

from gputui.commands import common

if TYPE_CHECKING:
    from gputui.record.reader import Recording


def speed(text: str) -> float:
    from gputui.sources.playback import SPEEDS

    try:
        value = float(text.rstrip("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a speed: {text!r} (e.g. 4 or 0.5)") from None
    if not SPEEDS[0] <= value <= SPEEDS[-1]:
        raise argparse.ArgumentTypeError(f"speed must be between {SPEEDS[0]:g} and {SPEEDS[-1]:g}, not {text}")
    return value


def register(sub: Any) -> None:
    parser = sub.add_parser("replay", help="play a recording back in the monitor (REPLAY badge, recorded time)")
    common.add_recording_argument(parser, (("--since", "since"), ("--at", "at")))
    parser.add_argument("--speed", type=speed, default=1.0, metavar="X", help="playback speed, 0.25 to 64 (default 1)")
    parser.add_argument(
        "--start",
        default=None,
        metavar="HH:MM:SS",
        help="start at this time of the recording machine's clock, or +H:MM:SS after the recording's start",
    )
    when = parser.add_mutually_exclusive_group()
    when.add_argument(
        "--since",
        type=common.past_time,
        default=None,
        metavar="T",
        help="without FILE: play the history from T (local time, e.g. 03:10, '2026-12-06 03:10', '3h ago') to its "
        "end (default: the last hour)",
    )
    when.add_argument(
        "--at",
        type=common.past_time,
        default=None,
        metavar="T",
        help=f"without FILE: start playing the history at T, with the {LEAD_IN_S / 60:g} minutes before it loaded "
        "(to go back to) and everything after it",
    )
    parser.set_defaults(func=common.on_recording(run, history_span))


# `--at T` loads this much before T, for the findings to build up to T and for ← to walk back into.
LEAD_IN_S = 300.0


def history_span(args: argparse.Namespace, extent: tuple[float, float]) -> tuple[float, float]:
    """What `replay` reads of the store: from `--at` less the lead-in, `--since`, or an hour ago, to its end."""
    end = max(time.time(), extent[1])
    if args.at is not None:
        return args.at - LEAD_IN_S, end
    return (args.since if args.since is not None else time.time() - common.DEFAULT_HISTORY_S), end


def run(args: argparse.Namespace, recording: Recording) -> int:
    from gputui.sources.base import SourceUnavailable
    from gputui.sources.playback import resolve_start

    for warning in recording.warnings:
        print(f"gputui: warning: {warning}", file=sys.stderr)
    start = None
    if args.at is not None and args.start is not None:
        return common.usage_error("--at and --start both say where to start: give one")
    if args.at is not None:
        start = max(0.0, args.at - recording.start)
    if args.start is not None and recording.ticks:
        try:
            start = resolve_start(recording, args.start)
        except ValueError as exc:
            return common.usage_error(f"--start: {exc}")
    from gputui.config import Config
    from gputui.session.builder import SessionOptions, open_session
    from gputui.session.sampling import MAX_INTERVAL, MIN_INTERVAL
    from gputui.session.source_choice import ReplayChoice

    # The findings are diagnosed again from the recorded readings, with the default thresholds: replay reads no
    # config file.
    options = SessionOptions(
        source=ReplayChoice(recording, speed=args.speed, start=start),
        interval_s=min(MAX_INTERVAL, max(MIN_INTERVAL, recording.header.interval_s)),
    )
    with ExitStack() as opened:
        try:
            session = opened.enter_context(open_session(options, Config()))
        except SourceUnavailable as exc:
            return common.usage_error(exc)
        from gputui.ui.app import GpuTuiApp

        assert session.replay is not None
        app = GpuTuiApp(session, now=session.replay.recording_now)
        app.run()
    return common.EXIT_OK if app.return_code is None else app.return_code
