"""The per-minute tier: one row a UTC minute, its figures the ticks' own, its verdict and finding seconds those the
engine showed."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from gputui.store.reader import Store
from tests.store.storedata import T0, simulate, write_store

MINUTE = T0  # the first second of a minute


def test_each_minute_holds_the_min_mean_max_and_the_seconds_of_its_ticks(tmp_path: Path) -> None:
    steps = list(simulate("tour", gpus=2, seconds=150, t0=MINUTE))
    write_store(tmp_path, steps).close()
    rows = Store(tmp_path).minutes(MINUTE - 3600, MINUTE + 3600)
    assert [(row.start - MINUTE, row.ticks) for row in rows] == [(0.0, 60), (60.0, 60), (120.0, 30)]
    for row, part in zip(rows, (steps[:60], steps[60:120], steps[120:]), strict=True):
        util = [s.snapshot.gpus[1].utilization_gpu_pct for s in part]
        assert all(u is not None for u in util)
        low, mean, high = row.gpus[1]["utilization_gpu_pct"]
        assert (low, high) == (min(util), max(util))  # type: ignore[type-var]
        assert mean == pytest.approx(sum(util) / len(util), abs=1e-3)  # type: ignore[arg-type]
        cpu = [s.snapshot.host.cpu_pct for s in part]
        assert row.host["cpu_pct"][2] == pytest.approx(max(cpu), abs=1e-3)  # type: ignore[type-var]
        verdicts: dict[tuple[str, tuple[int, ...]], float] = {}
        findings: dict[tuple[str, tuple[int, ...]], float] = {}
        for step in part:
            assert step.verdict is not None
            for group in step.verdict.groups or (step.verdict,):
                verdicts[(group.cls, group.gpus)] = verdicts.get((group.cls, group.gpus), 0.0) + 1.0
            for finding in step.active:
                findings[(finding.rule, finding.gpus)] = findings.get((finding.rule, finding.gpus), 0.0) + 1.0
        assert dict(row.verdict_s) == verdicts
        assert dict(row.finding_s) == findings
    assert any(row.finding_s for row in rows)  # the tour opens findings in its first minutes


def test_a_reading_a_gpu_does_not_report_is_left_out_not_zero(tmp_path: Path) -> None:
    steps = [
        dataclasses.replace(
            step,
            snapshot=dataclasses.replace(
                step.snapshot,
                gpus=tuple(dataclasses.replace(g, sm_active_pct=None) for g in step.snapshot.gpus),
            ),
        )
        for step in simulate("healthy", gpus=1, seconds=30, t0=MINUTE)
    ]  # a board without GPM
    write_store(tmp_path, steps).close()
    (row,) = Store(tmp_path).minutes(MINUTE, MINUTE)
    assert "sm_active_pct" not in row.gpus[0] and "power_w" in row.gpus[0]


def test_the_summary_says_the_minute_tiers_span(tmp_path: Path) -> None:
    write_store(tmp_path, list(simulate("healthy", gpus=1, seconds=130, t0=MINUTE))).close()
    summary = Store(tmp_path).summary()
    assert (summary.minutes_first, summary.minutes_last) == (MINUTE, MINUTE + 120)
    assert summary.minute_chunks == 1 and summary.ticks == 130 and summary.first == MINUTE
