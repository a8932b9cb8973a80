"""The alert webhook's URL off the command line, where every user sees it in `ps`: from GPUTUI_ALERT_WEBHOOK, or a
file (GPUTUI_ALERT_WEBHOOK_FILE, --alert-webhook-file) that, as root, must be root's and unreadable by others.
--alert-webhook wins, then --alert-webhook-file, then the environment, then the config."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gputui.cli import build_parser, main
from gputui.commands.config_options import WEBHOOK_ENV, WEBHOOK_FILE_ENV, config_of, webhook_from
from gputui.config import ConfigError
from tests.other_user import other_user, owned_by_other_user

FLAG, FILE, ENV, CONFIG = (f"https://hooks.example/{name}/SECRET" for name in ("flag", "file", "env", "config"))


def _file(tmp_path: Path, text: str, name: str = "webhook", mode: int = 0o600) -> Path:
    path = tmp_path / name
    path.write_text(text)
    path.chmod(mode)
    return path


def _webhook(tmp_path: Path, *argv: str) -> str | None:
    config = tmp_path / "config.toml"
    config.write_text(f'[alerts]\nwebhook = "{CONFIG}"\n')
    config.chmod(0o600)
    return config_of(build_parser().parse_args([*argv, "--config", str(config)])).alerts.webhook


@pytest.fixture
def no_webhook_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(WEBHOOK_ENV, raising=False)
    monkeypatch.delenv(WEBHOOK_FILE_ENV, raising=False)


@pytest.mark.usefixtures("no_webhook_env")
def test_the_flag_wins_then_the_file_flag_then_the_environment_then_the_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    webhook_file = str(_file(tmp_path, FILE + "\n"))
    assert _webhook(tmp_path) == CONFIG
    monkeypatch.setenv(WEBHOOK_ENV, ENV)
    assert _webhook(tmp_path) == ENV
    assert _webhook(tmp_path, "--alert-webhook-file", webhook_file) == FILE
    assert _webhook(tmp_path, "--alert-webhook", FLAG) == FLAG
    monkeypatch.delenv(WEBHOOK_ENV)
    monkeypatch.setenv(WEBHOOK_FILE_ENV, webhook_file)
    assert _webhook(tmp_path) == FILE
    assert _webhook(tmp_path, "--alert-webhook", FLAG) == FLAG


def test_the_file_gives_its_first_line_and_the_flags_exclude_each_other(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert webhook_from(_file(tmp_path, f"\n  {FILE}  \n# where alerts go\n"), {}) == FILE
    with pytest.raises(SystemExit) as raised:
        build_parser().parse_args(["--alert-webhook", FLAG, "--alert-webhook-file", "f"])
    assert raised.value.code == 2 and "not allowed with argument" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({WEBHOOK_ENV: ENV, WEBHOOK_FILE_ENV: "/x"}, f"both {WEBHOOK_ENV} and {WEBHOOK_FILE_ENV} are set: keep one"),
        ({WEBHOOK_ENV: "ftp://u:SECRET@host/"}, f"{WEBHOOK_ENV}: the alert webhook must be an http:// or https:// URL"),
        ({WEBHOOK_FILE_ENV: "/nonexistent/webhook"}, f"{WEBHOOK_FILE_ENV}: cannot read /nonexistent/webhook: No such"),
    ],
)
def test_a_wrong_value_is_one_line_that_never_repeats_the_secret(env: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError) as raised:
        webhook_from(None, env)
    assert str(raised.value).startswith(message) and "SECRET" not in str(raised.value)


def test_an_empty_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"--alert-webhook-file: .* is empty"):
        webhook_from(_file(tmp_path, "\n \n"), {})


@pytest.mark.parametrize(("mode", "words"), [(0o644, "readable by others"), (0o620, "writable by its group")])
def test_as_root_a_file_others_may_read_or_write_is_refused(tmp_path: Path, mode: int, words: str) -> None:
    other_user()
    path = _file(tmp_path, FILE, mode=mode)
    with pytest.raises(ConfigError) as raised:
        webhook_from(None, {WEBHOOK_FILE_ENV: str(path)})
    assert f"it is {words} (mode {mode:o}): as root, gputui takes a webhook only from a file root owns" in str(
        raised.value
    )
    assert "SECRET" not in str(raised.value)


@pytest.mark.usefixtures("no_webhook_env")
def test_as_root_another_users_file_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    other_user()
    path = owned_by_other_user(_file(tmp_path, FILE))
    argv = ["export", "--alert-webhook-file", str(path), "--demo", "healthy", "--port", "0"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"gputui: error: --alert-webhook-file: not reading {path}: it is owned by nobody")
    assert err.count("\n") == 1


def test_as_another_user_the_file_is_theirs_to_choose(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Not root (nobody's uid stands in for the user): a file the user can read is read as it is."""
    user = other_user()
    path = _file(tmp_path, FILE, mode=0o644)
    monkeypatch.setattr(os, "geteuid", lambda: user.pw_uid)
    assert webhook_from(path, {}) == FILE


def test_the_help_says_why_the_flag_is_not_the_place_for_a_secret(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "every user sees a command line in `ps`" in help_text and WEBHOOK_ENV in help_text
    assert "--alert-webhook-file FILE" in help_text
