"""What the commands' tests share: a user without a config file, in English."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def no_user_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """HOME without ~/.config/gputui, and an English locale, whatever the machine running the tests has."""
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("LANG", "en_US.UTF-8")
    monkeypatch.delenv("LC_ALL", raising=False)
    monkeypatch.delenv("LC_MESSAGES", raising=False)
