"""The config file, read once into one Config: every table lands, every bad key or value is a one-line error that
names the key, the file and the line it is on, and every command that reads the file refuses the same things."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

import pytest

from gputui.cli import main
from gputui.config import (
    AlertsConfig,
    Config,
    ConfigError,
    CostConfig,
    MonitorConfig,
    StacksConfig,
    key_line,
    load_config,
    sections,
)
from gputui.diagnostics.account import Price
from gputui.diagnostics.findings import Severity
from gputui.diagnostics.settings import DiagnosticsConfig
from gputui.diagnostics.thresholds import Thresholds

EVERY_TABLE = """\
# gputui's config
[diagnostics]
disabled = ["gpu_contention", "idle_allocation"]
open_after_s = 2
close_after_s = 8.5
history_size = 5

[diagnostics.thresholds]
busy_util_pct = 40
thermal_margin_c = 3.5

[stacks]
enabled = false
window_s = 2
rate_hz = 50

[alerts]
webhook = "https://hooks.example/T/B/X"
format = "slack"
min_severity = "critical"
bell = true
retries = 0

[cost]
gpu_hour = 2.40
currency = "EUR"

[monitor]
readonly = true
"""


def write(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(body, encoding="utf-8")
    return path


def test_every_table_is_read_into_its_section(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, EVERY_TABLE))
    assert config == Config(
        diagnostics=DiagnosticsConfig(
            thresholds=Thresholds(busy_util_pct=40.0, thermal_margin_c=3.5),
            disabled=frozenset({"gpu_contention", "idle_allocation"}),
            open_after_s=2.0,
            close_after_s=8.5,
            history_size=5,
        ),
        stacks=StacksConfig(enabled=False, window_s=2.0, rate_hz=50),
        alerts=AlertsConfig(
            webhook="https://hooks.example/T/B/X", format="slack", min_severity=Severity.CRITICAL, bell=True, retries=0
        ),
        cost=CostConfig(gpu_hour=2.4, currency="EUR"),
        monitor=MonitorConfig(readonly=True),
    )
    assert config.cost.price == Price(2.4, "EUR")
    assert CostConfig().price is None


def test_overrides_disabled_rules_and_hold_times(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
[diagnostics]
disabled = ["gpu_contention", "idle_allocation"]
open_after_s = 2
close_after_s = 8.5
history_size = 5

[diagnostics.thresholds]
busy_util_pct = 40
thermal_margin_c = 3.5
""",
    )
    config = load_config(path).diagnostics
    assert config.disabled == {"gpu_contention", "idle_allocation"}
    assert (config.open_after_s, config.close_after_s, config.history_size) == (2.0, 8.5, 5)
    assert config.thresholds.busy_util_pct == 40.0 and config.thresholds.thermal_margin_c == 3.5
    assert config.thresholds.vram_pressure_pct == Thresholds().vram_pressure_pct


def test_defaults_when_the_default_file_is_missing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    assert load_config() == Config()


def test_the_default_file_is_read_when_present(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / ".config" / "gputui").mkdir(parents=True)
    write(tmp_path / ".config" / "gputui", "[diagnostics]\ndisabled = ['xid']\n")
    assert load_config().diagnostics.disabled == {"xid"}


def test_the_file_gputui_config_names_comes_before_the_default(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """$GPUTUI_CONFIG names the file where no --config is given (a service's, a container's, the suite's children's),
    and --config still comes first."""
    import gputui.config

    monkeypatch.setattr(gputui.config, "CONFIG_VARIABLE", "GPUTUI_CONFIG")
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / ".config" / "gputui").mkdir(parents=True)
    write(tmp_path / ".config" / "gputui", "[diagnostics]\ndisabled = ['xid']\n")
    named = tmp_path / "named"
    named.mkdir()
    monkeypatch.setenv("GPUTUI_CONFIG", str(write(named, "[cost]\ngpu_hour = 1.5\n")))
    config = load_config()
    assert config.cost.gpu_hour == 1.5 and config.diagnostics.disabled == DiagnosticsConfig().disabled
    given = tmp_path / "given"
    given.mkdir()
    assert load_config(write(given, "[cost]\ngpu_hour = 3.0\n")).cost.gpu_hour == 3.0
    monkeypatch.setenv("GPUTUI_CONFIG", str(tmp_path / "missing.toml"))
    with pytest.raises(ConfigError, match=r"missing\.toml: no such config file"):
        load_config()


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("[diagnostics.thresholds]\nbusy_util = 40\n", "unknown key 'diagnostics.thresholds.busy_util'"),
        ("[diagnostics]\nopen_after = 2\n", "unknown key 'diagnostics.open_after'"),
        (
            "[diagnostics.thresholds]\nbusy_util_pct = 'high'\n",
            "'diagnostics.thresholds.busy_util_pct' must be a number",
        ),
        ("[diagnostics.thresholds]\nbusy_util_pct = true\n", "'diagnostics.thresholds.busy_util_pct' must be a number"),
        ("[diagnostics.thresholds]\nwindow_s = -1\n", "'diagnostics.thresholds.window_s' must not be negative"),
        ("[diagnostics]\ndisabled = ['thermal']\n", "'diagnostics.disabled' names an unknown rule id \"thermal\""),
        ("[diagnostics]\ndisabled = 'xid'\n", "'diagnostics.disabled' must be a list of rule ids"),
        ("[diagnostics]\nhistory_size = 0\n", "'diagnostics.history_size' must be a whole number"),
        ("[diagnostics]\nthresholds = 3\n", "'diagnostics.thresholds' must be a table"),
        ("diagnostics = 3\n", "'diagnostics' must be a table"),
        ("[diagnostics\n", "not valid TOML"),
    ],
)
def test_bad_files_name_the_key(tmp_path: Path, body: str, message: str) -> None:
    path = write(tmp_path, body)
    with pytest.raises(ConfigError) as raised:
        load_config(path)
    assert message in str(raised.value)
    assert str(raised.value).startswith(str(path))
    assert "\n" not in str(raised.value).strip()


def test_an_explicit_file_must_exist(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no such config file"):
        load_config(tmp_path / "missing.toml")


# Each table's wrong values, each on the line given, below the rest of a file: (key, its line, value, error).
WRONG = [
    (
        "diagnostics",
        "open_after_s",
        '"3"',
        "'diagnostics.open_after_s' is a string (\"3\"), not a number; write 3 without quotes",
    ),
    ("diagnostics", "history_size", "2.5", "'diagnostics.history_size' must be a whole number of at least 1, not 2.5"),
    ("diagnostics", "disabled", "[1]", "'diagnostics.disabled' must be a list of rule ids, not a list ([1])"),
    (
        "diagnostics.thresholds",
        "busy_util_pct",
        "-5",
        "'diagnostics.thresholds.busy_util_pct' must not be negative, not -5",
    ),
    (
        "stacks",
        "enabled",
        '"true"',
        "'stacks.enabled' is a string (\"true\"), not true or false; write true without quotes",
    ),
    ("stacks", "rate_hz", "1001", "'stacks.rate_hz' must be a whole number from 1 to 1000, not 1001"),
    ("stacks", "cooldown_s", "nan", "'stacks.cooldown_s' must be a number of seconds, not nan"),
    ("alerts", "min_severity", '"loud"', "'alerts.min_severity' must be one of info, warning, critical, not \"loud\""),
    ("alerts", "format", "1", "'alerts.format' must be one of json, slack, not 1"),
    ("alerts", "command", '"  "', "'alerts.command' must not be blank"),
    ("alerts", "retries", "-1", "'alerts.retries' must be a whole number of at least 0, not -1"),
    ("alerts", "timeout_s", "{ s = 1 }", "'alerts.timeout_s' must be a number of seconds, not a table"),
    ("cost", "gpu_hour", '"2.40"', "'cost.gpu_hour' is a string (\"2.40\"), not a number; write 2.40 without quotes"),
    ("cost", "gpu_hour", "0", "'cost.gpu_hour' must be a price above 0, not 0"),
    ("cost", "currency", "1", "'cost.currency' must be text, not 1"),
    ("monitor", "readonly", '"yes"', "'monitor.readonly' must be true or false, not a string (\"yes\")"),
    ("monitor", "readonly", "1", "'monitor.readonly' must be true or false, not 1"),
]


@pytest.mark.parametrize(("table", "key", "value", "error"), WRONG, ids=[f"{t}.{k}={v}" for t, k, v, _ in WRONG])
def test_a_wrong_value_names_the_key_the_file_and_its_line(
    tmp_path: Path, table: str, key: str, value: str, error: str
) -> None:
    """The key is on line 8, after another table and a comment that reads like it: the line is the key's."""
    other = "cost" if table == "monitor" else "monitor"
    body = f"# gputui\n[{other}]\n\n# {key} = {value} in a comment\n[{table}]\n# settings\n\n{key} = {value}\n"
    path = write(tmp_path, body)
    with pytest.raises(ConfigError) as raised:
        load_config(path)
    assert str(raised.value) == f"{path}:8: {error}"


def test_an_unknown_table_or_key_is_an_error_naming_it(tmp_path: Path) -> None:
    path = write(tmp_path, '[diagnostics]\nopen_after_s = 2\n\n[ui]\ntheme = "dark"\n')
    with pytest.raises(ConfigError) as raised:
        load_config(path)
    assert str(raised.value) == f"{path}:4: unknown table 'ui' (known: diagnostics, stacks, alerts, cost, monitor)"
    path = write(tmp_path, "[alerts]\nbell = true\nwebhok = 'https://a.example'\n")
    with pytest.raises(ConfigError) as raised:
        load_config(path)
    assert str(raised.value).startswith(f"{path}:3: unknown key 'alerts.webhok' (known: webhook, format, command")
    path = write(tmp_path, "[diagnostics.thresholds]\nbusy_util = 40\n")
    with pytest.raises(
        ConfigError, match=r"unknown key 'diagnostics.thresholds.busy_util' \(did you mean busy_util_pct"
    ):
        load_config(path)


def test_a_webhook_that_is_wrong_is_never_repeated(tmp_path: Path) -> None:
    path = write(tmp_path, '[alerts]\nwebhook = "ftp://user:T0SECRET@host/x"\n')
    with pytest.raises(ConfigError) as raised:
        load_config(path)
    assert str(raised.value) == f"{path}:2: 'alerts.webhook' must be an http:// or https:// URL"


@pytest.mark.parametrize(
    ("source", "keys", "line"),
    [
        ("[a]\nx = 1\n[b]\nx = 2\n", ("b", "x"), 4),
        ("[diagnostics]\nthresholds.busy_util_pct = 'x'\n", ("diagnostics", "thresholds", "busy_util_pct"), 2),
        ('[cost]\n"gpu_hour" = "2.40"\n', ("cost", "gpu_hour"), 2),
        ("cost = { gpu_hour = '2.40' }\n", ("cost", "gpu_hour"), 1),  # inside an inline table: its line
        ('[alerts]\ncommand = """\nretries = 3\n"""\nretries = -1\n', ("alerts", "retries"), 5),
        ("[ diagnostics . thresholds ]  # spaced\n\nwindow_s = -1\n", ("diagnostics", "thresholds", "window_s"), 3),
        ("[diagnostics.thresholds]\nwindow_s = 1\n", ("diagnostics",), 1),  # a table named only by its sub-table
        ("[a]\n", ("b", "x"), None),
    ],
)
def test_the_line_of_a_key_is_found_in_the_text(source: str, keys: tuple[str, ...], line: int | None) -> None:
    assert key_line(source, keys) == line


def test_every_setting_is_documented_and_its_defaults_read_back_as_the_defaults(tmp_path: Path) -> None:
    """What the reference is generated from: each table, each key with what it must be, its default as the file
    writes it and a line that says what it does; a file of every default reads as the defaults."""
    tables = list(sections())
    assert [t.name for t in tables] == ["diagnostics", "diagnostics.thresholds", "stacks", "alerts", "cost", "monitor"]
    assert {s.key for s in tables[1].settings} == {f.name for f in fields(Thresholds)}
    body = []
    for table in tables:
        assert table.doc and table.settings
        body.append(f"[{table.name}]")
        for setting in table.settings:
            assert setting.doc and setting.kind and "\n" not in setting.doc, setting
            if setting.default:  # "" where unset by default (the webhook, the price)
                body.append(f"{setting.key} = {setting.default}")
    assert load_config(write(tmp_path, "\n".join(body) + "\n")) == Config()


# A value each command that reads the config must refuse (before, `diagnose` read only the tables it used), on line 2.
REFUSED = [
    ('[alerts]\nmin_severity = "loud"\n', "'alerts.min_severity' must be one of info, warning, critical"),
    ('[monitor]\nreadonly = "yes"\n', "'monitor.readonly' must be true or false"),
    ('[cost]\ngpu_hour = "2.40"\n', "'cost.gpu_hour' is a string (\"2.40\"), not a number; write 2.40 without quotes"),
    ("[stacks]\nrate_hz = 0\n", "'stacks.rate_hz' must be a whole number from 1 to 1000"),
    ("# no table of gputui's\n[export]\nport = 9400\n", "unknown table 'export'"),
]


@pytest.mark.parametrize(("body", "message"), REFUSED)
def test_every_command_that_reads_the_config_refuses_the_same_values(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], body: str, message: str
) -> None:
    """The monitor, diagnose, export and report, with --config after the command or before it (where argparse
    used to lay diagnose's own default over it, and the file went unread): one message, exit 2."""
    from gputui.ui.app import GpuTuiApp
    from tests.record.recdata import T0, snapshot, write_recording

    def started(app: GpuTuiApp) -> None:
        raise AssertionError("the monitor started")

    monkeypatch.setattr(GpuTuiApp, "run", started)
    path = write(tmp_path, body)
    recording = str(write_recording(tmp_path / "r.jsonl", [snapshot(T0 + i, 1) for i in range(3)]))
    demo = ["--demo", "healthy"]
    commands = ([*demo, "diagnose", "--seconds", "1"], demo, [*demo, "export", "--port", "0"], ["report", recording])
    errors = []
    for command in commands:
        for config in (["--config", str(path)], []):
            before = [] if config else ["--config", str(path)]
            assert main([*before, *command, *config]) == 2, (before, command)
            errors.append(capsys.readouterr().err)
    assert errors[0].startswith(f"gputui: error: {path}:2: {message}")
    assert errors == [errors[0]] * len(errors)
