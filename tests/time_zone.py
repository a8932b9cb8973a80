"""Tests that read local times set this process's time zone, and put it back."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def local_time_zone(zone: str) -> Iterator[None]:
    """This process's local time is `zone` inside the `with`, and what it was after."""
    before = os.environ.get("TZ")
    os.environ["TZ"] = zone
    time.tzset()
    try:
        yield
    finally:
        if before is None:
            del os.environ["TZ"]
        else:
            os.environ["TZ"] = before
        time.tzset()
