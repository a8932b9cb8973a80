"""`--record FILE [--force] [--record-max-mb N]`, shared by the monitor and `diagnose`.

The writer is opened before anything starts, so a FILE that exists (without --force) or a directory that does
not is a one-line usage error and not a monitor that silently records nothing.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from gputui.argtypes import positive_mb
from gputui.record.writer import RecordingWriter


def add_record_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--record",
        type=Path,
        default=None,
        metavar="FILE",
        help="write every sample, finding and mark to FILE (JSON Lines; gzip when it ends in .gz), "
        "for `gputui replay` and `gputui report`",
    )
    parser.add_argument("--force", action="store_true", help="with --record: overwrite FILE if it exists")
    parser.add_argument(
        "--record-max-mb",
        type=positive_mb,
        default=None,
        metavar="N",
        help="with --record: stop recording (with a warning) once FILE reaches N MB",
    )


def open_writer(args: argparse.Namespace, interval_s: float) -> RecordingWriter | None:
    """The writer `--record` asks for, or None; raises RecordingError (exists, no such directory...)."""
    if args.record is None:
        return None
    return RecordingWriter(args.record, interval_s=interval_s, force=args.force, max_mb=args.record_max_mb)
