"""The options every command reads are defined by its parser and read by name: a misspelt one fails loudly."""

from __future__ import annotations

import argparse

import pytest

from gputui.cli import build_parser, main
from gputui.commands import common
from gputui.session.source_choice import open_source

# Each command that reads a machine, with the least that makes it read the simulated one.
SOURCE_COMMANDS = ([], ["snapshot"], ["topo"], ["diagnose"], ["export"])


@pytest.mark.parametrize("command", SOURCE_COMMANDS, ids=lambda c: c[0] if c else "monitor")
def test_each_command_parses_every_source_option_it_reads(command: list[str]) -> None:
    args = build_parser().parse_args([*command, "--demo", "healthy", "--demo-gpus", "2", "--gpus", "1"])
    assert common.source_option_problem(args) is None
    source, system, _ = open_source(common.source_choice(args))
    try:
        assert (system.gpu_count, [g.index for g in source.sample().gpus]) == (2, [1])
    finally:
        source.close()


def test_a_namespace_without_an_option_is_an_error_not_a_default() -> None:
    """What getattr(args, name, default) used to hide: a name no parser defines now raises."""
    args = build_parser().parse_args(["snapshot", "--demo", "healthy"])
    del args.demo_gpu
    with pytest.raises(AttributeError, match="demo_gpu"):
        common.source_choice(args)
    with pytest.raises(AttributeError, match="remote"):
        common.source_option_problem(argparse.Namespace(demo_job="trace.json", demo_job_cpus=None, demo_gpus=None))


@pytest.mark.parametrize("command", SOURCE_COMMANDS, ids=lambda c: c[0] if c else "monitor")
def test_too_many_simulated_gpus_is_a_one_line_usage_error(
    command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main([*command, "--demo", "healthy", "--demo-gpus", "64"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err == (
        "gputui: error: argument --demo-gpus: the simulated machine has at most 32 GPUs, not 64 (see 'gputui --help')\n"
    )
