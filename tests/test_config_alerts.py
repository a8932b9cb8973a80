"""[alerts] in config.toml, and the options that override it: every bad value is one line naming the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from gputui.cli import main
from gputui.commands.config_options import with_options
from gputui.config import AlertsConfig, ConfigError, load_config
from gputui.diagnostics.findings import Severity


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(text)
    return path


def test_the_table_is_read_and_a_missing_default_file_means_no_alerts(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        '[alerts]\nwebhook = "https://hooks.example/T/B/X"\nformat = "slack"\nmin_severity = "critical"\n'
        "bell = true\nmin_interval_s = 60\ntimeout_s = 2\nretries = 1\n"
        "[diagnostics]\nopen_after_s = 1\n[cost]\ngpu_hour = 2.4\n",
    )
    config = load_config(path).alerts
    assert config == AlertsConfig(
        webhook="https://hooks.example/T/B/X",
        format="slack",
        min_severity=Severity.CRITICAL,
        bell=True,
        min_interval_s=60.0,
        timeout_s=2.0,
        retries=1,
    )
    assert not AlertsConfig().enabled


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ('webhok = "x"', "unknown key 'alerts.webhok'"),
        ('format = "xml"', "'alerts.format' must be one of json, slack"),
        ('min_severity = "loud"', "'alerts.min_severity' must be one of info, warning, critical"),
        ("bell = 1", "'alerts.bell' must be true or false"),
        ("timeout_s = -1", "'alerts.timeout_s' must be a number of seconds"),
        ("retries = 1.5", "'alerts.retries' must be a whole number"),
        ('webhook = "ftp://user:T0SECRET@host/x"', "'alerts.webhook' must be an http:// or https:// URL"),
    ],
)
def test_a_bad_value_names_the_file_and_key(tmp_path: Path, table: str, message: str) -> None:
    path = write(tmp_path, f"[alerts]\n{table}\n")
    with pytest.raises(ConfigError) as raised:
        load_config(path)
    assert str(raised.value).startswith(f"{path}:2: ") and message in str(raised.value)
    assert "T0SECRET" not in str(raised.value)


def test_the_options_override_the_file(tmp_path: Path) -> None:
    path = write(tmp_path, '[alerts]\nwebhook = "https://a.example/x"\ncommand = "true"\n')
    config = with_options(load_config(path), alert_webhook="http://127.0.0.1:9/y").alerts
    assert (config.webhook, config.command) == ("http://127.0.0.1:9/y", "true")


def test_a_bad_webhook_option_is_a_usage_error_that_does_not_repeat_it(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["export", "--demo", "healthy", "--alert-webhook", "hooks.slack.com/services/T0SECRET"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "--alert-webhook: the alert webhook must be an http:// or https:// URL" in err
    assert "T0SECRET" not in err


@pytest.mark.parametrize("command", [["export", "--port", "0"], []])
def test_a_bad_config_file_stops_the_monitor_and_the_exporter(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: list[str]
) -> None:
    path = write(tmp_path, "[diagnostics]\nopen_after_s = -1\n")
    assert main([*command, "--demo", "healthy", "--config", str(path)]) == 2
    assert "'diagnostics.open_after_s' must be a number of seconds (0 or more), not -1" in capsys.readouterr().err


def test_the_fleet_view_refuses_the_alert_options(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--remote", "gpu01:9400", "--alert-command", "true"]) == 2
    assert "run them with `gputui export` on each server" in capsys.readouterr().err
