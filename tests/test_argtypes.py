"""The shared argparse types: every bad value is a one-line usage error that names it."""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable

import pytest

from gputui import argtypes
from gputui.commands import common


@pytest.mark.parametrize(
    ("parse", "text", "value"),
    [
        (argtypes.positive_int, "3", 3),
        (argtypes.positive_float, "0.5", 0.5),
        (argtypes.positive_seconds, "2", 2.0),
        (argtypes.positive_mb, "64", 64.0),
        (argtypes.byte_size, "64MiB", 64 * 1024**2),
        (argtypes.byte_size, "500MB", 500 * 1000**2),
        (argtypes.gpu_list, "0,2", (0, 2)),
        (argtypes.gpu_index, "0", 0),
        (argtypes.matrix_size, "8192", 8192),
        (argtypes.port_number, "0", 0),
        (argtypes.cpu_list, " 0-3,8 ", "0-3,8"),
        (argtypes.demo_gpu_count, "1", 1),
        (argtypes.demo_gpu_count, "32", 32),
    ],
)
def test_good_values(parse: Callable[[str], object], text: str, value: object) -> None:
    assert parse(text) == value


@pytest.mark.parametrize(
    ("parse", "text", "message"),
    [
        (argtypes.positive_int, "1.5", "not a whole number: '1.5'"),
        (argtypes.positive_int, "0", "must be greater than 0: '0'"),
        (argtypes.positive_float, "x", "not a number: 'x'"),
        (argtypes.positive_seconds, "soon", "not a number of seconds: 'soon'"),
        (argtypes.positive_seconds, "-1", "must be greater than 0: '-1'"),
        (argtypes.positive_seconds, "nan", "not a number of seconds: 'nan'"),
        (argtypes.positive_seconds, "inf", "not a number of seconds: 'inf'"),
        (argtypes.positive_float, "-Infinity", "not a number: '-Infinity'"),
        (argtypes.positive_mb, "big", "not a size in MB: 'big'"),
        (argtypes.byte_size, "64XB", "not a size: '64XB' (expected e.g. 4096, 64MiB, 1GiB, 500MB)"),
        (argtypes.byte_size, "0", "size must be greater than 0: '0'"),
        (argtypes.gpu_list, "a,b", "not a list of GPU indices: 'a,b' (expected e.g. 0,2)"),
        (argtypes.gpu_list, "-1", "not a list of GPU indices: '-1' (expected e.g. 0,2)"),
        (argtypes.gpu_index, "-1", "not a GPU index: '-1'"),
        (argtypes.gpu_index, "one", "not a GPU index: 'one'"),
        (argtypes.matrix_size, "big", "not a matrix size: 'big' (expected e.g. 8192)"),
        (argtypes.matrix_size, "0", "must be greater than 0: '0'"),
        (argtypes.port_number, "http", "not a port number: 'http'"),
        (argtypes.port_number, "70000", "not a port number: '70000' (0-65535; 0 picks a free one)"),
        (argtypes.cpu_list, "1-x", "not a CPU list: '1-x' (expected e.g. 0-3,8)"),
        (argtypes.cpu_list, "3-1", "not a CPU list: '3-1' (expected e.g. 0-3,8)"),
        (argtypes.demo_gpu_count, "0", "must be greater than 0: '0'"),
        (argtypes.demo_gpu_count, "-4", "must be greater than 0: '-4'"),
        (argtypes.demo_gpu_count, "four", "not a whole number: 'four'"),
        (argtypes.demo_gpu_count, "33", "the simulated machine has at most 32 GPUs, not 33"),
        (argtypes.demo_gpu_count, "100000", "the simulated machine has at most 32 GPUs, not 100000"),
        # A parser's own reason (its ValueError) is the usage error, whole.
        (common.prometheus_url, "ftp://x", "not an http(s) URL: 'ftp://x' (expected e.g. http://prometheus:9090)"),
        (common.remote_targets, "gpu01:x", "bad port in 'gpu01:x' (expected host:port, e.g. gpu01:9400)"),
        (
            common.match_selector,
            "{a=}",
            "--match '{a=}' is not a label selector at 'a=' (expected label=\"value\" pairs, e.g. "
            '{cluster="a",job=~"dcgm.*"})',
        ),
    ],
)
def test_bad_values_name_themselves(parse: Callable[[str], object], text: str, message: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError) as raised:
        parse(text)
    assert str(raised.value) == message


def test_usage_errors_keeps_the_type_functions_name_and_words_and_passes_other_errors_on() -> None:
    @argtypes.usage_errors
    def size(text: str) -> int:
        """A size."""
        if text == "?":
            raise LookupError(text)
        return int(text)

    assert (size.__name__, size.__doc__, size("3")) == ("size", "A size.", 3)
    with pytest.raises(argparse.ArgumentTypeError, match="invalid literal for int"):
        size("x")
    with pytest.raises(LookupError):
        size("?")


def test_argparse_turns_them_into_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    parser = argparse.ArgumentParser(prog="gputui")
    parser.add_argument("--interval", type=argtypes.positive_seconds)
    with pytest.raises(SystemExit) as exited:
        parser.parse_args(["--interval", "0"])
    assert exited.value.code == 2
    assert "argument --interval: must be greater than 0: '0'" in capsys.readouterr().err


def test_the_most_simulated_gpus_allowed_are_a_machine_the_simulator_builds_whole() -> None:
    """Each of MAX_DEMO_GPUS GPUs gets its own PCI bus id, two hex digits as the driver writes them."""
    from gputui.sources.sim.source import SimulatedSource

    source = SimulatedSource(scenario="healthy", gpu_count=argtypes.MAX_DEMO_GPUS, clock=lambda: 0.0)
    source.open()
    buses = [info.pci_bus_id for info in source.sample().gpu_info]
    assert len(set(buses)) == argtypes.MAX_DEMO_GPUS
    assert all(bus is not None and re.fullmatch(r"00000000:[0-9A-F]{2}:00\.0", bus) for bus in buses)
