"""Whose config gputui reads: as root, root's own (its home from the password database, or an explicit file root
owns that no one else may write), never one in a $HOME that `sudo -E` or `su` without `-` kept from a user (the
issue: a root monitor with a user's HOME ran that user's `[alerts] command` with `shell = true`); as another user,
the user's own or root's, never one that others may write."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import gputui.config
from gputui.cli import build_parser, main
from gputui.commands.config_options import config_of
from gputui.config import CONFIG_IN_HOME, ConfigError, load_config
from tests.other_user import other_user, owned_by_other_user

USERS_COMMAND = '[alerts]\ncommand = "touch /tmp/owned-by-the-user"\nshell = true\n'
ROOTS_OWN = "[cost]\ngpu_hour = 2.5\n"


def _config_in(home: Path, text: str) -> Path:
    path = home / CONFIG_IN_HOME
    path.parent.mkdir(parents=True)
    path.write_text(text)
    path.chmod(0o644)
    return path


def _users_home(tmp_path: Path) -> Path:
    """A home and its config, every folder and the file owned by `nobody`, the file naming a command."""
    home = tmp_path / "user"
    path = _config_in(home, USERS_COMMAND)
    for owned in (home, home / ".config", path.parent, path):
        owned_by_other_user(owned)
    return home


def _roots_home(monkeypatch: pytest.MonkeyPatch, home: Path) -> None:
    home.mkdir(exist_ok=True)
    monkeypatch.setattr(gputui.config, "root_home", lambda: home)


def test_root_reads_no_config_from_a_users_home_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    other_user()
    home = _users_home(tmp_path)
    monkeypatch.setenv("HOME", str(home))
    _roots_home(monkeypatch, tmp_path / "root")
    config = config_of(build_parser().parse_args(["diagnose"]))
    assert config.alerts.command is None and not config.alerts.shell
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith(f"gputui: not reading {home / CONFIG_IN_HOME}: as root, gputui reads its config from ")
    assert str(tmp_path / "root" / CONFIG_IN_HOME) in err


def test_root_reads_its_own_homes_config_whatever_home_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    other_user()
    monkeypatch.setenv("HOME", str(_users_home(tmp_path)))
    _roots_home(monkeypatch, tmp_path / "root")
    _config_in(tmp_path / "root", ROOTS_OWN)
    config = config_of(build_parser().parse_args(["diagnose"]))
    assert config.cost.gpu_hour == 2.5 and config.alerts.command is None
    assert "not reading" in capsys.readouterr().err


def test_root_says_nothing_where_home_is_roots_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    other_user()
    monkeypatch.setenv("HOME", str(tmp_path / "root"))
    _roots_home(monkeypatch, tmp_path / "root")
    _config_in(tmp_path / "root", ROOTS_OWN)
    assert config_of(build_parser().parse_args(["diagnose"])).cost.gpu_hour == 2.5
    assert capsys.readouterr().err == ""


def test_root_refuses_an_explicit_config_owned_by_another_user(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    other_user()
    path = owned_by_other_user(_config_in(tmp_path, USERS_COMMAND))
    with pytest.raises(ConfigError, match=r"not read: it is owned by nobody \(uid \d+\): as root, gputui reads only"):
        load_config(path)
    assert main(["diagnose", "--demo", "healthy", "--seconds", "1", "--config", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"gputui: error: {path}: not read: it is owned by nobody") and err.count("\n") == 1


@pytest.mark.parametrize(("mode", "words"), [(0o664, "writable by its group"), (0o646, "writable by others")])
def test_root_refuses_a_config_that_others_may_write(tmp_path: Path, mode: int, words: str) -> None:
    other_user()
    path = _config_in(tmp_path, ROOTS_OWN)
    path.chmod(mode)
    with pytest.raises(ConfigError, match=f"it is {words} \\(mode {mode:o}\\): as root"):
        load_config(path)


def test_a_user_reads_their_own_or_roots_config_and_refuses_another_users(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not root (nobody's uid stands in for the user): a file of root's is read, one that another user owns or
    others may write is refused, saying why."""
    user = other_user()
    monkeypatch.setattr(os, "geteuid", lambda: user.pw_uid)
    roots = _config_in(tmp_path / "roots", ROOTS_OWN)
    assert load_config(roots).cost.gpu_hour == 2.5
    theirs = _config_in(tmp_path / "theirs", ROOTS_OWN)
    os.chown(theirs, user.pw_uid + 1, user.pw_gid)
    with pytest.raises(ConfigError, match=r"it is owned by .*: gputui reads only a config that you or root own"):
        load_config(theirs)
    roots.chmod(0o646)
    with pytest.raises(ConfigError, match="it is writable by others"):
        load_config(roots)
    roots.chmod(0o664)  # a group of the user's own: as common as a umask of 002
    assert load_config(roots).cost.gpu_hour == 2.5


def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path: Path) -> None:
    fifo = tmp_path / "config.toml"
    os.mkfifo(fifo)
    with pytest.raises(ConfigError, match="not a regular file"):
        load_config(fifo)


def test_root_refuses_a_users_file_that_gputui_config_names(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A user's environment kept by `sudo -E` may name a file, but root reads it only as it reads --config's."""
    other_user()
    monkeypatch.setattr(gputui.config, "CONFIG_VARIABLE", "GPUTUI_CONFIG")
    monkeypatch.setenv("GPUTUI_CONFIG", str(_users_home(tmp_path) / CONFIG_IN_HOME))
    with pytest.raises(ConfigError, match="not read: it is owned by"):
        load_config()
