"""The monitor's garbage-collector settings: start-up frozen, young collections rarer, cycles still collected."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from gputui.commands.monitor import YOUNG_GC_THRESHOLD, settle_gc


@pytest.fixture
def restored_gc() -> Iterator[None]:
    threshold = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*threshold)


def test_settle_gc_freezes_start_up_and_raises_only_the_young_threshold(restored_gc: None) -> None:
    older = gc.get_threshold()[1:]
    settle_gc()
    assert gc.get_freeze_count() > 0
    assert gc.get_threshold() == (YOUNG_GC_THRESHOLD, *older)


def test_the_collector_stays_on(restored_gc: None) -> None:
    """Cycles (Textual's widgets and messages make them) are still collected: the collector is tuned, not off."""
    settle_gc()
    assert gc.isenabled()
