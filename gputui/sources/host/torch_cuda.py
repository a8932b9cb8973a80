"""Which CUDA version the local torch was built for, read from torch's own `version.py` as text.

The monitor never imports torch (it takes seconds and hundreds of MB, and may touch the GPU), and a source never
starts a process to ask: torch's build writes `cuda: Optional[str] = '12.4'` (`None` on a CPU build) into
torch/version.py, which is found on the import path without importing the package and read. Anything else (no
torch, a CPU-only build, a file this does not recognise) is "unknown", never an error: `cuda_mismatch` then has
nothing to compare.
"""

from __future__ import annotations

import importlib.machinery
import re
from collections.abc import Sequence
from pathlib import Path

# `cuda = '12.4'` or `cuda: Optional[str] = '12.4'`, as torch's setup writes it.
_CUDA_LINE = re.compile(r"""^cuda\s*(?::[^=\n]*)?=\s*['"](\d+\.\d+(?:\.\d+)?)['"]\s*$""", re.MULTILINE)


def torch_cuda_version(path: Sequence[str] | None = None) -> str | None:
    """`torch.version.cuda` of the torch found on `path` (default: this interpreter's sys.path), or None."""
    try:
        spec = importlib.machinery.PathFinder.find_spec("torch", list(path) if path is not None else None)
    except (ImportError, ValueError):
        return None
    for location in (spec.submodule_search_locations or ()) if spec is not None else ():
        try:
            source = (Path(location) / "version.py").read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        match = _CUDA_LINE.search(source)
        return match.group(1) if match else None
    return None
