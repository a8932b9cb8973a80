"""`--record FILE [--force] [--record-max-mb N] [--record-group-readable]`, shared by the monitor and `diagnose`.

Who may read the recording is an option, not a setting of the config file: it is a choice about one file, made with
the others about it (where, whether to overwrite), and the config holds nothing else about recordings.

The session opens the writer before sampling starts, so a FILE that exists (without --force) or a directory that
does not is a one-line usage error and not a monitor that silently records nothing.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from gputui.argtypes import positive_mb

if TYPE_CHECKING:
    from gputui.session.builder import RecordTarget, Session


def add_record_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--record",
        type=Path,
        default=None,
        metavar="FILE",
        help="write every sample, finding and mark to FILE (JSON Lines; gzip when it ends in .gz), "
        "for `gputui replay` and `gputui report`",
    )
    parser.add_argument(
        "--force",
        action="store_true",
        help="with --record: replace FILE if it exists (by a new file; a symbolic link is refused, even so)",
    )
    parser.add_argument(
        "--record-group-readable",
        action="store_true",
        help="with --record: let FILE's group read it too (mode 0640); by default only its owner may (0600), for it "
        "holds every process's command line",
    )
    parser.add_argument(
        "--record-max-mb",
        type=positive_mb,
        default=None,
        metavar="N",
        help="with --record: stop recording (with a warning) once FILE reaches N MB",
    )


def record_target(args: argparse.Namespace) -> RecordTarget | None:
    """The file `--record` asks for, or None; the session opens it (RecordingError: exists, no such directory...)."""
    from gputui.session.builder import RecordTarget

    if args.record is None:
        return None
    return RecordTarget(
        args.record, force=args.force, max_mb=args.record_max_mb, group_readable=args.record_group_readable
    )


def warn_of_recording(session: Session) -> None:
    """Why the recording stopped early, if it did (a full disk, the size limit), once the session has ended."""
    if session.recorder is not None and session.recorder.warning:
        print(f"gputui: {session.recorder.warning}", file=sys.stderr)
