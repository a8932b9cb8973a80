"""Signalling a GPU process: real child processes are signalled or refused, never a mock of os.kill."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from gputui.cli import build_parser, main
from gputui.config import ConfigError, load_config
from gputui.model import GpuProcess
from gputui.session.signals import Target, decide, send, targets
from tests.snapshots import gpu, host, proc, snapshot

SLEEPER = [sys.executable, "-c", "import time; time.sleep(60)"]


@pytest.fixture
def child() -> Iterator[subprocess.Popen[bytes]]:
    process = subprocess.Popen(SLEEPER)
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=10)


def as_sampled(process: subprocess.Popen[bytes]) -> Target:
    """The child as the table would have shown it: its PID and start time when sampled."""
    started = psutil.Process(process.pid).create_time()
    return Target(process.pid, process.pid, "me", "python -c sleep", started)


def test_your_own_process_gets_the_signal(child: subprocess.Popen[bytes]) -> None:
    target = as_sampled(child)
    (outcome,) = send([target], signal.SIGTERM)
    assert outcome.sent
    assert outcome.text == f"{child.pid} (me) python -c sleep: sent SIGTERM"
    assert child.wait(timeout=10) == -signal.SIGTERM


def test_another_users_process_is_refused_unless_root(child: subprocess.Popen[bytes]) -> None:
    target = as_sampled(child)
    someone_else = os.geteuid() + 1  # not root, and not the child's owner
    decision = decide(target, euid=someone_else)
    assert not decision.allowed
    assert decision.reason is not None and decision.reason.startswith("not your process")
    (outcome,) = send([target], signal.SIGTERM, euid=someone_else)
    assert not outcome.sent and "refused: not your process" in outcome.text
    assert child.poll() is None  # still running
    assert decide(target, euid=0).allowed  # root may


def test_a_pid_reused_since_it_was_sampled_is_refused(child: subprocess.Popen[bytes]) -> None:
    sampled = as_sampled(child)
    earlier = Target(sampled.shown_pid, sampled.pid, sampled.user, sampled.command, sampled.create_time - 5.0)
    (outcome,) = send([earlier], signal.SIGKILL)
    assert not outcome.sent
    assert "its PID now belongs to another process" in outcome.text
    assert child.poll() is None


def test_a_process_that_exited_is_refused() -> None:
    process = subprocess.Popen(SLEEPER)
    target = as_sampled(process)
    process.kill()
    process.wait(timeout=10)
    decision = decide(target)
    assert decision.reason == "it has already exited"


def test_read_only_refuses(child: subprocess.Popen[bytes]) -> None:
    (outcome,) = send([as_sampled(child)], signal.SIGTERM, readonly=True)
    assert not outcome.sent and "read-only session" in outcome.text
    assert child.poll() is None


def test_a_process_without_a_start_time_or_a_pid_here_is_refused() -> None:
    unknown_start = Target(os.getpid(), os.getpid(), "me", "pytest", None)
    assert "start time was not readable" in (decide(unknown_start).reason or "")
    elsewhere = Target(812345, None, None, None, None)
    assert "PID in this namespace is unknown" in (decide(elsewhere).reason or "")


def test_targets_are_the_rows_processes_by_the_pid_this_namespace_knows() -> None:
    processes = (
        GpuProcess(4242, None),
        GpuProcess(4243, None, seen="device", host_pid=91234),
        GpuProcess(812345, None, seen="hidden"),
    )
    box = snapshot(
        gpus=[gpu(0, processes=processes), gpu(1, processes=processes[:1])],
        host_sample=host([proc(4242, create_time=10.5), proc(4243, user="bob", cmdline="python serve.py")]),
    )
    found = targets(box, {"0:4242", "0:4243", "0:812345", "1:4242"})
    assert [t.label for t in found] == ["4242 (alice) python3 train.py", "4243 (bob) python serve.py", "812345 (?) ?"]
    assert [t.pid for t in found] == [4242, 4243, None]  # the device-file process by its PID here, not NVML's
    assert found[0].create_time == 10.5


def test_the_config_can_make_the_monitor_read_only(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text("[monitor]\nreadonly = true\n")
    assert load_config(config).monitor.readonly
    config.write_text("[diagnostics]\nopen_after_s = 2\n")
    assert not load_config(config).monitor.readonly  # unset: signals allowed
    config.write_text('[monitor]\nreadonly = "yes"\n')
    with pytest.raises(ConfigError) as raised:
        load_config(config)
    assert str(raised.value) == f"{config}:2: 'monitor.readonly' must be true or false, not a string (\"yes\")"
    with pytest.raises(ConfigError, match="no such config file"):
        load_config(tmp_path / "missing.toml")


def test_readonly_is_a_monitor_option() -> None:
    assert build_parser().parse_args(["--readonly"]).readonly
    assert not build_parser().parse_args([]).readonly


@pytest.mark.parametrize(
    ("argv", "config", "readonly"),
    [([], "", False), (["--readonly"], "", True), ([], "[monitor]\nreadonly = true\n", True)],
)
def test_the_monitor_starts_read_only_by_option_or_config(
    argv: list[str], config: str, readonly: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The default config file (under a HOME of the test's) or --readonly; the app is built but not run."""
    from gputui.commands import monitor
    from gputui.ui.app import GpuTuiApp

    monkeypatch.setenv("HOME", str(tmp_path))
    if config:
        (tmp_path / ".config" / "gputui").mkdir(parents=True)
        (tmp_path / ".config" / "gputui" / "config.toml").write_text(config)
    built: list[bool] = []
    monkeypatch.setattr(GpuTuiApp, "run", lambda app: built.append(app.readonly))
    monkeypatch.setattr(monitor, "settle_gc", lambda: None)
    assert main(["--demo", "healthy", *argv]) == 0
    assert built == [readonly]


def test_a_bad_readonly_value_stops_the_monitor_with_a_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / ".config" / "gputui").mkdir(parents=True)
    (tmp_path / ".config" / "gputui" / "config.toml").write_text("[monitor]\nreadonly = 1\n")
    assert main(["--demo", "healthy"]) == 2
    assert "'monitor.readonly' must be true or false, not 1" in capsys.readouterr().err
