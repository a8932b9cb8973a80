"""The one MIG slice this process was given, as its environment names it.

A Kubernetes device plugin (the "single" or "mixed" MIG strategy), Slurm or a person hands a process one MIG
instance by naming it in CUDA_VISIBLE_DEVICES (what CUDA obeys) or NVIDIA_VISIBLE_DEVICES (what the NVIDIA
container runtime obeys). A MIG instance is named "MIG-<uuid>" since R470, and "MIG-GPU-<gpu uuid>/<gi>/<ci>"
before. Only one MIG instance is ever visible to a CUDA process, so a list of several names no single slice.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

VARIABLES = ("CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES")  # CUDA's own first: it is what CUDA obeys
_HEX_UUID = r"[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}"
MIG_NAME = re.compile(rf"MIG-(?:{_HEX_UUID}|GPU-{_HEX_UUID}/\d+/\d+)")
# "MIG-GPU-<gpu uuid>/<gi>/<ci>": which GPU, and which instance on it.
OLD_MIG_NAME = re.compile(rf"MIG-(?P<gpu>GPU-{_HEX_UUID})/(?P<gi>\d+)/(?P<ci>\d+)")


def mig_slice(environ: Mapping[str, str] = os.environ) -> str | None:
    """The MIG instance named alone by the first of VARIABLES that names one; None otherwise."""
    for variable in VARIABLES:
        names = [name.strip() for name in environ.get(variable, "").split(",") if name.strip()]
        if len(names) == 1 and MIG_NAME.fullmatch(names[0]):
            return names[0]
    return None


def old_mig_name(name: str) -> tuple[str, int, int] | None:
    """(the GPU's UUID, GPU instance id, compute instance id) of a pre-R470 MIG name; None for any other."""
    match = OLD_MIG_NAME.fullmatch(name)
    return (match["gpu"], int(match["gi"]), int(match["ci"])) if match else None
