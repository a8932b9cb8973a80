"""The layers and the headless core, as pyproject.toml's import-linter contracts state them: `make test` fails when
an import breaks one, not only `make lint`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_every_import_contract_is_kept() -> None:
    # In a child process: import-linter configures logging in the process that runs it (it disables the loggers
    # already made), which would silence the app's logs for the tests that follow. It reads pyproject.toml from
    # its working directory.
    lint = "from importlinter.cli import lint_imports; raise SystemExit(lint_imports(no_cache=True, no_logo=True))"
    done = subprocess.run([sys.executable, "-c", lint], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
