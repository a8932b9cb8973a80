"""The diagnostics run where there is no terminal UI and no torch: importing them pulls in neither."""

from __future__ import annotations

import subprocess
import sys

CHECK = """
import sys
import gputui.commands.diagnose, gputui.diagnostics.engine, gputui.sources.host.torch_cuda
loaded = sorted(name for name in ("textual", "torch") if name in sys.modules)
print(",".join(loaded))
"""


def test_engine_and_command_import_neither_textual_nor_torch() -> None:
    done = subprocess.run([sys.executable, "-c", CHECK], capture_output=True, text=True, check=True, timeout=60)
    assert done.stdout.strip() == ""
