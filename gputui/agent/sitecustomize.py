"""Starts gputui's stack sampler in every Python process that has this directory on its path (`gputui run` puts
it first on PYTHONPATH, which the job's children inherit), then runs the sitecustomize it hides.

Python imports the first sitecustomize on sys.path only, and Debian's and conda's Pythons ship one that must
still run: the next one on the path after this directory is found and run as Python would have run it.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import os
import sys


def _start_sampler() -> None:
    try:
        # By name: beside this file on the job's path, which is not gputui's (mypy sees both as gputui's).
        importlib.import_module("gputui_stacks_agent").install()
    except Exception as error:  # the job runs on without its stacks
        sys.stderr.write(f"gputui stack sampler: not started: {error!r}\n")


def _run_hidden_sitecustomize() -> None:
    """Run the next sitecustomize on sys.path after this one's directory; its errors are its own, reported by
    site as they would have been."""
    here = os.path.dirname(os.path.abspath(__file__))
    entries = [os.path.abspath(entry or os.curdir) for entry in sys.path]
    after = entries[entries.index(here) + 1 :] if here in entries else entries
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", [entry for entry in after if entry != here])
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)


_start_sampler()
_run_hidden_sitecustomize()
