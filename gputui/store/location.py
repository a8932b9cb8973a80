"""Where the history lives when nobody says: one place per machine for root (anyone on the box may look back),
one per user otherwise, and an override for tests and odd setups."""

from __future__ import annotations

import os
from pathlib import Path

STORE_ENV = "GPUTUI_STORE"
SYSTEM_STORE = Path("/var/lib/gputui")


def default_store_dir() -> Path:
    """$GPUTUI_STORE where set; /var/lib/gputui when run as root; else $XDG_STATE_HOME/gputui
    (~/.local/state/gputui; a relative XDG_STATE_HOME is ignored, as the XDG spec asks)."""
    override = os.environ.get(STORE_ENV)
    if override:
        return Path(override)
    if os.geteuid() == 0:
        return SYSTEM_STORE
    state = os.environ.get("XDG_STATE_HOME", "")
    base = Path(state) if state and os.path.isabs(state) else Path.home() / ".local" / "state"
    return base / "gputui"
