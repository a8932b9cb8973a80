"""The report's lines on a time grid: a bucket per tick until there are too many, then each bucket's lowest and
highest reading, so that a dip or a spike survives thinning and a gap stays a gap."""

from __future__ import annotations

from gputui.report.buckets import MAX_BUCKETS, Grid


def test_a_short_recording_keeps_every_reading() -> None:
    grid = Grid.over([100.0 + i for i in range(5)], interval_s=1.0)
    assert (grid.count, grid.width) == (5, 1.0)
    assert grid.line([1.0, 2.0, None, 4.0, 5.0], digits=1) == [1.0, 1.0, 2.0, 2.0, None, None, 4.0, 4.0, 5.0, 5.0]
    assert [grid.point_time(n) for n in range(3)] == [99.75, 100.25, 100.75]  # a quarter tick either side


def test_an_hour_is_thinned_to_the_grid_keeping_dips_and_spikes_in_time_order() -> None:
    timestamps = [float(i) for i in range(3600)]
    grid = Grid.over(timestamps, interval_s=1.0)
    assert grid.count <= MAX_BUCKETS and grid.point_time(2 * grid.count - 1) >= 3599  # the whole hour
    spike, dip = grid.members[342][:2], grid.members[555][:2]  # two ticks of one bucket each
    values: list[float | None] = [50.0] * 3600
    values[spike[0]], values[spike[1]], values[dip[0]], values[dip[1]] = 100.0, 0.0, 0.0, 100.0
    line = grid.line(values, digits=1)
    assert len(line) == 2 * grid.count
    assert line[2 * 342 : 2 * 343] == [100.0, 0.0] and line[2 * 555 : 2 * 556] == [0.0, 100.0]  # as they came
    assert set(line) == {0.0, 50.0, 100.0}


def test_late_ticks_leave_no_gap_and_a_stopped_recording_does() -> None:
    jitter = [0.0, 1.02, 1.97, 3.49, 3.55, 5.0]  # 3.49 lands in bucket 3, 3.55 in bucket 4: none empty
    grid = Grid.over([*jitter, 20.0, 21.0], interval_s=1.0)
    line = grid.line([float(n) for n in range(8)], digits=0)
    assert None not in line[: 2 * 6]
    assert line[2 * 6 : 2 * 19] == [None] * 26  # 6 s to 19 s: nothing was recorded
    assert line[-4:] == [6, 6, 7, 7]


def test_an_empty_bucket_takes_a_neighbour_reading_within_one_width() -> None:
    grid = Grid.over([0.0, 1.0, 2.6, 4.0, 5.0, 6.0], interval_s=1.0)  # bucket 2 is empty: 2.6 rounds to 3
    assert grid.members[2] == (2,) and grid.members[3] == (2,)
    assert grid.line([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], digits=0)[2:10] == [2, 2, 3, 3, 3, 3, 4, 4]


def test_readings_are_rounded_to_the_charts_digits() -> None:
    grid = Grid.over([0.0, 1.0], interval_s=1.0)
    assert grid.line([97.345, 1754.6], digits=1) == [97.3, 97.3, 1754.6, 1754.6]
    assert grid.line([97.345, 1754.6], digits=0) == [97, 97, 1755, 1755]
    assert Grid.over([], interval_s=2.0).line([], digits=1) == []
