"""The layers and the headless core, as pyproject.toml's import-linter contracts state them: `make test` fails when
an import breaks one, not only `make lint`."""

from __future__ import annotations

from pathlib import Path

import pytest
from importlinter.cli import lint_imports

ROOT = Path(__file__).resolve().parent.parent


def test_every_import_contract_is_kept(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(ROOT)  # import-linter reads pyproject.toml from the working directory
    kept = lint_imports(no_cache=True, no_logo=True) == 0
    assert kept, capsys.readouterr().out
