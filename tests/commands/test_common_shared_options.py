"""The options several commands take are one option: one type, one default, the same refusal everywhere, and an
option given before the command is the command's (or refused), never dropped."""

from __future__ import annotations

import argparse

import pytest

from gputui.cli import build_parser, main


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def _options(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    return {name: action for action in parser._actions for name in action.option_strings}


def test_every_command_parses_a_shared_option_as_the_top_level_does() -> None:
    """Each sub-command's copy of an option the top-level parser has: the same type and choices (so the same
    values are refused in the same words), and no default of its own to lay over a value given before it."""
    parser = build_parser()
    top = _options(parser)
    checked = 0
    for command, sub in _subcommands(parser).items():
        for name, action in _options(sub).items():
            if name in top and name not in ("-h", "--help"):
                assert (action.type, action.choices) == (top[name].type, top[name].choices), (command, name)
                assert action.default is argparse.SUPPRESS, (command, name)
                checked += 1
    assert checked > 20


# Each command that samples, as little as makes it parse; --interval goes at the end.
SAMPLING = {"monitor": ["--demo"], "diagnose": ["diagnose", "--demo"], "export": ["export", "--demo"]}
BAD_INTERVALS = {
    "0.01": "must be between 0.25 and 10 seconds, not 0.01",
    "100000": "must be between 0.25 and 10 seconds, not 100000",
    "0": "must be greater than 0: '0'",
    "soon": "not a number of seconds: 'soon'",
}


@pytest.mark.parametrize("interval", BAD_INTERVALS)
def test_every_command_refuses_the_same_intervals_in_the_same_words(
    interval: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """`diagnose --interval 0.01` and `--interval 100000` were taken where the monitor refused them."""
    errors = []
    for command in SAMPLING.values():
        for argv in ([*command, "--interval", interval], ["--interval", interval, *command]):
            with pytest.raises(SystemExit) as exited:
                main(argv)
            assert exited.value.code == 2, argv
            errors.append(capsys.readouterr().err)
    expected = f"gputui: error: argument --interval: {BAD_INTERVALS[interval]} (see 'gputui --help')\n"
    assert errors == [expected] * len(errors)


def test_an_option_before_the_command_is_the_commands() -> None:
    args = build_parser().parse_args(["--interval", "2", "--demo", "thermal", "diagnose", "--seconds", "3"])
    assert (args.interval, args.demo, args.seconds) == (2.0, "thermal", 3.0)
    args = build_parser().parse_args(["--interval", "2", "diagnose", "--interval", "0.5"])
    assert args.interval == 0.5  # the one nearer the command wins, as it always did for the top-level options


def test_an_option_the_command_does_not_take_is_refused_not_dropped(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--interval", "2", "snapshot", "--demo"])
    assert exited.value.code == 2
    assert (
        capsys.readouterr().err
        == "gputui: error: --interval is not an option of `gputui snapshot` (see 'gputui --help')\n"
    )
