"""`--store DIR` and `--no-history` on the monitor: which store the app reads, and the default one otherwise."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gputui.cli import main
from gputui.store.location import STORE_ENV
from gputui.ui.app import GpuTuiApp


@pytest.fixture
def opened(monkeypatch: pytest.MonkeyPatch) -> list[GpuTuiApp]:
    """The apps the monitor built, not run: what they were given is what the test asserts."""
    apps: list[GpuTuiApp] = []
    monkeypatch.setattr(GpuTuiApp, "run", lambda app: apps.append(app))
    return apps


@pytest.mark.usefixtures("no_user_config")
def test_the_store_named_the_default_one_or_none(
    opened: list[GpuTuiApp], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert main(["--demo", "healthy", "--store", str(tmp_path / "mine")]) == 0
    assert main(["--demo", "healthy"]) == 0
    assert main(["--demo", "healthy", "--no-history"]) == 0
    named, default, none = opened
    assert (named.store, named.store_named) == (tmp_path / "mine", True)
    assert (default.store, default.store_named) == (Path(os.environ[STORE_ENV]), False)
    assert none.store is None and none.history_problem is not None


def test_the_fleet_view_has_no_store(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["--remote", "gpu01:9400", "--store", str(tmp_path)]) == 2
    assert "--store is this machine's history" in capsys.readouterr().err
