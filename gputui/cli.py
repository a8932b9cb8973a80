"""Command line entry: `gputui` starts the monitor; sub-commands run headless.

Exit codes (also in `--help` and the README): 0 ok; 1 warnings found (`diagnose`); 2 usage error;
3 no NVIDIA driver or GPU could be read (with the reason); 4 critical findings (`diagnose`), a FAULTY GPU (`probe`);
5 a probe could not run; 6 not known, the verdict never had its readings (`diagnose`); `run` exits with its
command's status (EPILOG below).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from gputui import __version__
from gputui.commands import common

# Each module registers one sub-command; heavy imports wait inside its run function.
COMMAND_MODULES = ("snapshot", "topo", "probe", "export", "record", "history", "replay", "report", "diagnose", "run")

EPILOG = """exit codes:
  0  ok
  1  warnings found (diagnose)
  2  usage error
  3  no NVIDIA driver or GPU could be read (the reason is printed; try --demo)
  4  critical findings (diagnose); a FAULTY GPU (probe)
  5  a probe could not run (probe)
  6  not known: the verdict never had the readings it needs (diagnose; whatever --fail-on says)
  run: the command's own exit status (128+N where signal N ended it); 126 it cannot be run, 127 not found
"""


class _Parser(argparse.ArgumentParser):
    """argparse, with usage errors as one line and exit code 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(common.EXIT_USAGE, f"gputui: error: {message} (see 'gputui --help')\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="gputui",
        description="A live monitor that answers: why is my training slow?",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"gputui {__version__}")
    common.add_monitor_options(parser)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name in COMMAND_MODULES:
        module = importlib.import_module(f"gputui.commands.{name}")
        module.register(sub)
    shared = {action.dest for action in parser._actions}
    for command in sub.choices.values():
        for action in command._actions:
            if action.dest in shared and action.option_strings:
                # argparse lays a sub-command's defaults over what was given before it: `gputui --config F
                # diagnose` read no config. The top-level parser's default is the one default.
                action.default = argparse.SUPPRESS
    return parser


def _not_taken(parser: argparse.ArgumentParser, args: argparse.Namespace) -> str | None:
    """An option given before the sub-command that the sub-command does not take (`gputui --interval 2
    snapshot`): said, not silently dropped."""
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    taken = {action.dest for action in sub.choices[args.command]._actions}
    for action in parser._actions:
        if action.dest in taken or action.dest in ("help", "version") or not action.option_strings:
            continue
        if getattr(args, action.dest) != action.default:
            return f"{action.option_strings[0]} is not an option of `gputui {args.command}`"
    return None


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.demo == common.LIST_SCENARIOS:
        return common.print_scenarios()
    problem = common.source_option_problem(args)
    if problem is None and args.command is not None:
        problem = _not_taken(parser, args)
    if problem is not None:
        parser.error(problem)
    if args.command is None:
        from gputui.commands import monitor

        return monitor.run(args)
    try:
        return int(args.func(args))
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        sys.stderr.close()
        return 0
