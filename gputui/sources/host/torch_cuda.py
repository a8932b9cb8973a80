"""Which CUDA version the local torch was built for, read in a short child process.

The monitor never imports torch (it takes seconds and hundreds of MB, and may touch the GPU); a child
interpreter prints `torch.version.cuda` and exits. Any failure (no torch, a CPU-only build, a timeout) is
"unknown", never an error: `cuda_mismatch` then has nothing to compare.
"""

from __future__ import annotations

import re
import subprocess
import sys

PROBE_CODE = "import torch; print(torch.version.cuda)"
DEFAULT_TIMEOUT_S = 20.0
_VERSION = re.compile(r"^\d+\.\d+(\.\d+)?$")


def torch_cuda_version(python: str | None = None, timeout_s: float = DEFAULT_TIMEOUT_S) -> str | None:
    """`torch.version.cuda` as `python` (default: this interpreter) sees it, or None when it cannot tell."""
    try:
        done = subprocess.run(
            [python or sys.executable, "-c", PROBE_CODE],
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        return None
    lines = done.stdout.strip().splitlines()
    version = lines[-1].strip() if lines else ""
    return version if _VERSION.match(version) else None
