"""`gputui replay FILE`: the monitor, fed from a recording instead of the driver."""

from __future__ import annotations

import argparse
import sys
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
    common.add_recording_argument(parser)
    parser.add_argument("--speed", type=speed, default=1.0, metavar="X", help="playback speed, 0.25 to 64 (default 1)")
    parser.add_argument(
        "--start",
        default=None,
        metavar="HH:MM:SS",
        help="start at this time of the recording machine's clock, or +H:MM:SS after the recording's start",
    )
    parser.set_defaults(func=common.on_recording(run))


def run(args: argparse.Namespace, recording: Recording) -> int:
    from gputui.sources.base import SourceUnavailable
    from gputui.sources.playback import resolve_start

    for warning in recording.warnings:
        print(f"gputui: warning: {warning}", file=sys.stderr)
    start = None
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
