"""`gputui export` from the command line: usage errors in one line, a real process that serves and stops."""

from __future__ import annotations

import os
import re
import select
import signal
import socket
import subprocess
import sys
import time

import pytest

from gputui.cli import main
from tests.export.export_helpers import fetch, one, parse, stopped_at_the_end


def test_port_in_use_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        assert main(["export", "--demo", "healthy", "--port", str(port)]) == 2
    err = capsys.readouterr().err
    assert (
        err == f"gputui: error: port {port} is already in use on 127.0.0.1 (another exporter? choose one with --port)\n"
    )


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--port", "70000"], "not a port number: '70000'"),
        (["--port", "http"], "not a port number: 'http'"),
        (["--interval", "0"], "must be greater than 0"),
        (["--demo", "nosuch"], "unknown scenario 'nosuch'"),
    ],
)
def test_bad_options_are_one_line_usage_errors(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["export", *argv])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert message in err
    assert err.count("\n") == 1


def test_gpu_outside_the_machine_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["export", "--demo", "healthy", "--gpus", "9", "--port", "0"]) == 2
    assert "GPU 9 does not exist" in capsys.readouterr().err


def test_help_lists_the_legacy_hostname_label(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["export", "--help"])
    assert exit_info.value.code == 0
    assert "--legacy-hostname-label" in capsys.readouterr().out


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _start(*args: str, sigint_ignored: bool = False) -> tuple[subprocess.Popen[str], str]:
    """Run `gputui export` in a child process and wait for the URL it prints; `sigint_ignored` starts it with
    SIGINT ignored, as a non-interactive shell starts its background jobs."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    child = subprocess.Popen(
        [sys.executable, "-m", "gputui", "export", "--port", "0", *args],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
        env=env,
        preexec_fn=_ignore_sigint if sigint_ignored else None,
    )
    assert child.stderr is not None
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        ready, _, _ = select.select([child.stderr], [], [], 0.5)
        if ready:
            line = child.stderr.readline()
            found = re.search(r"(http://127\.0\.0\.1:\d+/metrics)", line)
            if found:
                return child, found.group(1)
            assert line, "gputui export exited before it served"
    child.kill()
    raise AssertionError("gputui export printed no URL in 30 s")


@pytest.mark.parametrize(
    ("stop_signal", "sigint_ignored"),
    [(signal.SIGTERM, False), (signal.SIGINT, False), (signal.SIGINT, True)],
    ids=["SIGTERM", "SIGINT", "SIGINT-ignored-at-start"],
)
def test_serves_simulated_data_labelled_then_stops_cleanly(stop_signal: signal.Signals, sigint_ignored: bool) -> None:
    """Both signals stop it alike, SIGINT too where it started ignored (and Python raises no KeyboardInterrupt)."""
    child, url = _start("--demo", "thermal", "--gpus", "0,1", "--interval", "0.25", sigint_ignored=sigint_ignored)
    with stopped_at_the_end(child, stop_signal):
        series, _ = parse(fetch(url)[0])
        assert one(series, "gputui_source_info", source="simulated", simulated="true", scenario="thermal") == 1
        assert {lab["gpu"] for lab, _ in series["DCGM_FI_DEV_GPU_TEMP"]} == {"0", "1"}
        assert all(lab["gputui_source"] == "simulated" for lab, _ in series["DCGM_FI_DEV_GPU_TEMP"])
    assert child.stderr is not None
    assert "Traceback" not in child.stderr.read()


def test_legacy_hostname_label_reaches_the_served_metrics() -> None:
    child, url = _start("--demo", "healthy", "--gpus", "0", "--legacy-hostname-label")
    try:
        series, _ = parse(fetch(url)[0])
    finally:
        child.terminate()
        child.wait(timeout=10)
    ((labels, _),) = series["DCGM_FI_DEV_GPU_TEMP"]
    assert "Hostname" in labels and "hostname" not in labels
    assert "Hostname" in next(iter(series["gputui_up"]))[0]
