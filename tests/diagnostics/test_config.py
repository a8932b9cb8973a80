"""The thresholds file: overrides land, and every bad key or value is a one-line error that names it."""

from __future__ import annotations

from pathlib import Path

import pytest

from gputui.diagnostics.config import ConfigError, DiagnosticsConfig, load_config
from gputui.diagnostics.thresholds import Thresholds


def write(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(body, encoding="utf-8")
    return path


def test_overrides_disabled_rules_and_hold_times(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
[ui]
theme = "dark"   # another part of gputui owns this table

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
    config = load_config(path)
    assert config.disabled == {"gpu_contention", "idle_allocation"}
    assert (config.open_after_s, config.close_after_s, config.history_size) == (2.0, 8.5, 5)
    assert config.thresholds.busy_util_pct == 40.0 and config.thresholds.thermal_margin_c == 3.5
    assert config.thresholds.vram_pressure_pct == Thresholds().vram_pressure_pct


def test_defaults_when_the_default_file_is_missing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    assert load_config() == DiagnosticsConfig()


def test_the_default_file_is_read_when_present(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / ".config" / "gputui").mkdir(parents=True)
    write(tmp_path / ".config" / "gputui", "[diagnostics]\ndisabled = ['xid']\n")
    assert load_config().disabled == {"xid"}


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
        ("[diagnostics]\ndisabled = ['thermal']\n", "'diagnostics.disabled' names an unknown rule 'thermal'"),
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
