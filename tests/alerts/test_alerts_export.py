"""The real `gputui export` process alerts: a throttling simulated GPU opens a finding, the test's webhook gets
the open, /metrics serves it as gputui_finding 1; a failing webhook is said once on stderr, its secret never."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

from tests.alerts.receiver import receiving, refused_url
from tests.commands.test_export import _start
from tests.export.export_helpers import fetch, one, parse, stopped_at_the_end

FAST = "[diagnostics]\nopen_after_s = 0\n[alerts]\nmin_interval_s = 1\ntimeout_s = 2\nretries = 0\n"


def test_the_exporter_posts_an_open_and_serves_the_open_finding(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text(FAST)
    with receiving() as receiver:
        child, url = _start(
            "--demo", "thermal", "--gpus", "0,1", "--interval", "0.25", "--config", str(config),
            "--alert-webhook", receiver.url,
        )  # fmt: skip
        with stopped_at_the_end(child):
            path, opened = receiver.wait_for_body(lambda body: body["rule"] == "thermal_throttle")
            series, _ = parse(fetch(url)[0])
    assert path == "/hook/T0SECRET/B0SECRET"
    assert (opened["state"], opened["rule"], opened["gpus"], opened["simulated"]) == (
        "open",
        "thermal_throttle",
        [1],
        True,
    )
    assert one(series, "gputui_finding", rule="thermal_throttle", severity="critical", gpu="1") == 1
    assert child.stderr is not None
    err = child.stderr.read()
    assert "Traceback" not in err and "T0SECRET" not in err


def wait_for_url(err_path: Path, child: subprocess.Popen[bytes]) -> str:
    """The URL the exporter says it serves at, read from its stderr as it writes it (bounded)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and child.poll() is None:
        found = re.search(r"(http://127\.0\.0\.1:\d+/metrics)", err_path.read_text())
        if found:
            return found.group(1)
        time.sleep(0.05)
    raise AssertionError(f"gputui export printed no URL: {err_path.read_text()}")


def throttling(url: str) -> bool:
    series, _ = parse(fetch(url)[0])
    return any(labels["rule"] == "thermal_throttle" for labels, _ in series.get("gputui_finding", []))


def test_a_failing_webhook_is_said_once_and_its_secret_never(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text(FAST + 'format = "slack"\n')
    err_path = tmp_path / "stderr.txt"
    argv = ["export", "--port", "0", "--demo", "thermal", "--gpus", "0,1", "--interval", "0.25", "--config"]
    argv += [str(config), "--alert-webhook", refused_url("/services/T0SECRET/B0SECRET/X0SECRET")]
    with err_path.open("w") as err_file:
        child = subprocess.Popen([sys.executable, "-m", "gputui", *argv], stdout=subprocess.DEVNULL, stderr=err_file)
    with stopped_at_the_end(child):
        url = wait_for_url(err_path, child)
        # Two findings open one after the other (the margin, then the throttling): two messages to the dead
        # target, whose failure is said once. The exporter tries what is queued before it exits.
        deadline = time.monotonic() + 30
        while not throttling(url):
            assert child.poll() is None and time.monotonic() < deadline
    err = err_path.read_text()
    said = [line for line in err.splitlines() if "alerts:" in line]
    assert len(said) == 1, err
    assert said[0].startswith("gputui: alerts: webhook http://127.0.0.1:") and "/… failed (" in said[0]
    assert "T0SECRET" not in err and "Traceback" not in err
