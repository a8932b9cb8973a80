"""One formatting module for every view: each width of a number is pinned, so no view drifts from the others."""

from __future__ import annotations

import pytest

from gputui import formatting

GIB = 1024**3


@pytest.mark.parametrize(
    "formatter",
    [
        formatting.fmt_num,
        formatting.fmt_pct,
        formatting.fmt_share,
        formatting.fmt_evidence_value,
        formatting.fmt_gib,
        formatting.fmt_bytes,
        formatting.fmt_bytes_short,
        formatting.fmt_rate,
        formatting.fmt_rate_short,
    ],
)
def test_a_missing_value_is_na_never_zero(formatter: object) -> None:
    assert formatter(None) == "n/a"  # type: ignore[operator]


def test_numbers_and_shares() -> None:
    assert formatting.fmt_num(1410.4) == "1410"
    assert formatting.fmt_num(3.14159, 1, " W") == "3.1 W"
    assert formatting.fmt_num(2.5e9, 2, " GB/s", scale=1e9) == "2.50 GB/s"
    assert formatting.fmt_pct(37.4) == "37%"
    assert formatting.fmt_pct(37.44, 1) == "37.4%"
    assert formatting.fmt_share(0.82) == "82%"  # a share of 1, as the report's verdict and throttling shares are
    assert formatting.fmt_share(0.256, 1) == "25.6%"
    assert formatting.fmt_gib(61 * GIB) == "61.0"
    assert formatting.fmt_gib(80 * GIB, 0) == "80"


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (1410.0, "1410"),
        (123.45, "123"),
        (12.0, "12"),
        (3.46, "3.5"),
        (-0.5, "-0.5"),
        ("python3 (4242)", "python3 (4242)"),
    ],
)
def test_an_evidence_figure_is_whole_from_100_up_or_when_whole_else_one_decimal(value: float | str, text: str) -> None:
    assert formatting.fmt_evidence_value(value) == text


@pytest.mark.parametrize(
    ("value", "table", "cell"),
    [
        (0, "0 B", "0B"),
        (512, "512 B", "512B"),
        (512 * 1024, "512.0 KiB", "512K"),
        (1.5 * 1024**2, "1.5 MiB", "1.5M"),
        (80 * GIB, "80.0 GiB", "80.0G"),
        (150 * GIB, "150.0 GiB", "150G"),
        (1536 * GIB, "1536.0 GiB", "1.5T"),
    ],
)
def test_sizes_in_a_table_and_in_a_cell(value: float, table: str, cell: str) -> None:
    assert formatting.fmt_bytes(value) == table
    assert formatting.fmt_bytes_short(value) == cell


def test_a_pair_is_in_the_unit_of_its_total() -> None:
    assert formatting.fmt_bytes_pair(61 * GIB, 80 * GIB) == "61.0 / 80.0 GiB"
    assert formatting.fmt_bytes_pair(512 * 1024**2, 80 * GIB) == "0.5 / 80.0 GiB"
    assert formatting.fmt_bytes_pair(None, 80 * GIB) == "n/a / 80.0 GiB"
    assert formatting.fmt_bytes_pair(61 * GIB, None) == "61.0 GiB / n/a"
    assert formatting.fmt_bytes_pair(100, 1000) == "100.0 / 1000.0 B"


def test_buffer_sizes_read_as_chosen() -> None:
    assert [formatting.fmt_size(v) for v in (512, 1024**2, 1.5 * GIB, 1022 * 1024**2)] == [
        "512 B",
        "1 MiB",
        "1.5 GiB",
        "1022 MiB",
    ]


@pytest.mark.parametrize(
    ("value", "table", "cell"),
    [
        (512, "512 B/s", "512 B/s"),
        (1500, "1.5 kB/s", "1.5 KB/s"),
        (150e6, "150.0 MB/s", "150 MB/s"),
        (12.34e9, "12.3 GB/s", "12.3 GB/s"),
    ],
)
def test_rates_are_decimal(value: float, table: str, cell: str) -> None:
    assert formatting.fmt_rate(value) == table
    assert formatting.fmt_rate_short(value) == cell


def test_hms_as_an_offset_and_as_a_tape_position() -> None:
    assert formatting.hms(3725.9) == "1:02:05"
    assert formatting.hms(65) == "0:01:05"
    assert formatting.hms(65, pad_hours=True) == "00:01:05"
    assert formatting.hms(8 * 3600, pad_hours=True) == "08:00:00"


def test_durations_are_short() -> None:
    assert [formatting.fmt_duration(s) for s in (0, 45.9, 125, 3725)] == ["0s", "45s", "2m05s", "1h02m"]


@pytest.mark.parametrize(
    ("indices", "text"),
    [((), ""), ((3,), "3"), ((0, 1), "0-1"), ((8, 0, 1, 2, 3), "0-3,8"), ((0, 2, 3, 4, 5, 6, 7), "0,2-7")],
)
def test_fmt_ranges_as_cpuset_files_write_them(indices: tuple[int, ...], text: str) -> None:
    assert formatting.fmt_ranges(indices) == text


@pytest.mark.parametrize(
    ("value", "unit", "text"),
    [
        (1.544e9, "FLOP/s", "1.5 GFLOP/s"),
        (312e12, "FLOP/s", "312 TFLOP/s"),
        (781.4e12, "FLOP/s", "781 TFLOP/s"),
        (12.34e9, "B/s", "12.3 GB/s"),
        (4.8e12, "B/s", "4.8 TB/s"),
        (999.7e9, "B/s", "1.0 TB/s"),  # never "1000 GB/s"
        (99.96e9, "B/s", "100 GB/s"),
        (1500.0, "B/s", "1.5 kB/s"),
        (0.5, "FLOP/s", "0.5 FLOP/s"),
        (0.0, "B/s", "0.0 B/s"),
        (None, "B/s", "n/a"),
    ],
)
def test_rates_take_an_si_prefix(value: float | None, unit: str, text: str) -> None:
    assert formatting.fmt_si(value, unit) == text


def test_a_probe_figure_is_re_prefixed_from_the_unit_it_came_in() -> None:
    assert formatting.fmt_figure(0.001544, "TFLOP/s") == "1.5 GFLOP/s"
    assert formatting.fmt_figure(612.0, "TFLOP/s") == "612 TFLOP/s"
    assert formatting.fmt_figure(4800.0, "GB/s") == "4.8 TB/s"
    assert formatting.fmt_figure(1500.0, "MB/s") == "1.5 GB/s"
    assert formatting.fmt_figure(1.5, "KB/s") == "1.5 kB/s"
    assert formatting.fmt_figure(4242.0, "pid") == "4242 pid"  # no SI base: as it came
    assert formatting.fmt_figure(None, "GB/s") == "n/a"
    assert formatting.si_scaled(1.544e9, "FLOP/s") == (1.5, "GFLOP/s")


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [
        (None, "n/a"),
        (0, "<1m"),
        (59.9, "<1m"),
        (60, "1m"),
        (3599, "59m"),
        (3600, "1h00m"),
        (7509, "2h05m"),
        (3 * 86400 + 2 * 3600 + 59, "3d02h"),
    ],
)
def test_elapsed_is_to_the_minute_so_a_row_does_not_change_every_second(seconds: float | None, shown: str) -> None:
    assert formatting.fmt_elapsed(seconds) == shown
