"""A config file built to break the reader: each is a ConfigError naming the file (and the line and key where they
are known), exit 2, never a traceback (exit 1, which `diagnose` uses for "warnings"), a RecursionError, or a value
no setting means (nan, inf) taken as a number."""

from __future__ import annotations

from pathlib import Path

import pytest

from gputui.cli import main
from gputui.config import MAX_CONFIG_BYTES, ConfigError, Setting, load_config, sections

NUMBER_KINDS = ("number", "price")


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(text)
    path.chmod(0o600)
    return path


def _numeric() -> list[tuple[str, Setting]]:
    return [
        (section.name, setting)
        for section in sections()
        for setting in section.settings
        if any(kind in setting.kind for kind in NUMBER_KINDS)
    ]


def test_every_numeric_setting_is_found() -> None:
    keys = {f"{table}.{setting.key}" for table, setting in _numeric()}
    assert {"stacks.cooldown_s", "alerts.min_interval_s", "cost.gpu_hour", "diagnostics.thresholds.window_s"} <= keys


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "+inf", "-nan"])
def test_nan_and_inf_are_refused_for_every_number(tmp_path: Path, value: str) -> None:
    for table, setting in _numeric():
        path = _write(tmp_path, f"[{table}]\n{setting.key} = {value}\n")
        with pytest.raises(ConfigError) as raised:
            load_config(path)
        assert str(raised.value).startswith(f"{path}:2: '{table}.{setting.key}' "), str(raised.value)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[alerts]\nretries = " + "9" * 5000 + "\n", ":2: not valid TOML: a number too long: Exceeds the limit"),
        (
            "[stacks]\nwindow_s = " + "9" * 4000 + "\n",
            ":2: 'stacks.window_s' must be a number of seconds, not a number",
        ),
        ("[alerts]\nretries = " + "9" * 4000 + "\n", ":2: 'alerts.retries' is too large: at most 2147483647, not a"),
        ("[alerts]\nretries = 4294967296\n", ":2: 'alerts.retries' is too large"),
        ("[diagnostics]\ndisabled = " + "[" * 100_000 + "\n", ": not valid TOML: lists or tables nested too deep"),
        ("[diagnostics]\ndisabled = " + "[" * 300 + "]" * 300 + "\n", ":2: 'diagnostics.disabled' nests lists or"),
        ("[diagnostics]\ndisabled = " + "[" * 17 + "]" * 17 + "\n", ":2: 'diagnostics.disabled' nests lists or"),
    ],
)
def test_huge_numbers_and_deep_nesting_are_errors_naming_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, message: str
) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(ConfigError) as raised:
        load_config(path)
    assert str(raised.value).startswith(f"{path}{message}"), str(raised.value)
    assert len(str(raised.value)) < 400
    assert main(["diagnose", "--demo", "healthy", "--seconds", "1", "--config", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("gputui: error: ") and err.count("\n") == 1 and "Traceback" not in err


def test_a_list_nested_as_deep_as_a_setting_ever_is_still_just_a_wrong_value(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"'diagnostics\.disabled' must be a list of rule ids"):
        load_config(_write(tmp_path, "[diagnostics]\ndisabled = [[['xid']]]\n"))


def test_a_file_larger_than_any_config_is_refused_unread(tmp_path: Path) -> None:
    path = _write(tmp_path, "# padding\n" * (MAX_CONFIG_BYTES // 10 + 1))
    with pytest.raises(ConfigError, match=f"{path}: not read: it is larger than 1024 KiB"):
        load_config(path)
