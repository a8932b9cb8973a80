"""What the report's tests share: a user without a config file (a report reads the user's price)."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _without_user_config(no_user_config: None) -> None:
    """Every report test as a user without a config file (tests/conftest.py)."""
