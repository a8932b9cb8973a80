"""`gputui history`: what a store holds; `--import` a `--record` recording into it; `--export` a span as a recording
that replay and report read, or as CSV (issue 39, items 5 and 6)."""

from __future__ import annotations

import csv
import gzip
import json
import os
from pathlib import Path

import pytest

from gputui import cli
from gputui.commands.history import CSV_COLUMNS
from gputui.record.reader import load_recording
from gputui.store.reader import Store
from gputui.store.writer import StoreWriter

pytestmark = pytest.mark.usefixtures("utc", "no_user_config")

FIRST, LAST = "2026-01-01 00:00:00", "2026-01-01 00:00:25"
SPAN = ["--from", FIRST, "--to", LAST]


@pytest.fixture
def recorded(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """A `--record` recording of 26 readings of the simulated thermal machine (2 GPUs), from 2026-01-01 00:00 UTC."""
    path = tmp_path / "run.jsonl.gz"
    cli.main(["diagnose", "--demo", "thermal", "--demo-gpus", "2", "--seconds", "20", "--record", str(path)])
    capsys.readouterr()
    return path


@pytest.fixture
def store(tmp_path: Path, recorded: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    directory = tmp_path / "history"
    assert cli.main(["history", "--import", str(recorded), "--store", str(directory)]) == 0
    assert f"imported 26 of 26 readings from {recorded}" in capsys.readouterr().err
    return directory


@pytest.mark.usefixtures("utc")
def test_what_a_store_holds(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["history", "--store", str(store)]) == 0
    out = capsys.readouterr().out
    assert f"store      {store} (format 1)" in out
    assert f"readings   {FIRST} to {LAST} (0:00:25), 26 readings" in out
    assert "damaged    0 frames skipped" in out and "recorder   no recorder running" in out
    assert "7 days of readings, 90 days of per-minute summaries, at most 1 GiB" in out

    assert cli.main(["history", "--store", str(store), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert (data["ticks"], data["first"], data["last"]) == (26, 1_767_225_600.0, 1_767_225_625.0)
    assert data["recorder_pid"] is None and data["damaged_frames"] == 0 and data["bytes"] > 0
    assert data["retention"] == {"tick_days": 7.0, "minute_days": 90.0, "max_bytes": 1 << 30}


def test_an_import_holds_what_the_recording_held(recorded: Path, store: Path) -> None:
    original, imported = load_recording(recorded), Store(store).read(0, 4e9)
    assert imported.ticks.timestamps == original.ticks.timestamps
    assert [(e.kind, e.t) for e in imported.events if e.kind != "mark"] == [
        (e.kind, e.t) for e in original.events if e.kind != "mark"
    ]
    assert imported.ticks[-1].gpus == original.ticks[-1].gpus


def test_an_import_is_refused_while_a_recorder_holds_the_store(
    tmp_path: Path, recorded: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    directory = tmp_path / "history"
    writer = StoreWriter(directory, interval_s=1.0)
    try:
        assert cli.main(["history", "--import", str(recorded), "--store", str(directory)]) == 2
    finally:
        writer.close()
    assert f"another recorder (PID {os.getpid()}) records into {directory}" in capsys.readouterr().err


@pytest.mark.usefixtures("utc")
@pytest.mark.parametrize("name", ["span.jsonl", "span.jsonl.gz"])
def test_an_exported_span_replays_and_reports_as_a_recording(
    tmp_path: Path, store: Path, name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / name
    span = ["--from", "2026-01-01 00:00:05", "--to", "2026-01-01 00:00:14"]
    assert cli.main(["history", "--store", str(store), "--export", str(out), *span]) == 0
    assert f"wrote 10 readings to {out}" in capsys.readouterr().err
    exported = load_recording(out)
    assert exported.ticks.timestamps == [1_767_225_600.0 + s for s in range(5, 15)]
    assert cli.main(["report", str(out), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["ticks"] == 10
    assert cli.main(["history", "--store", str(store), "--export", str(out), *span]) == 2  # never overwritten
    assert "already exists" in capsys.readouterr().err


@pytest.mark.usefixtures("utc")
def test_a_csv_export_has_a_row_per_reading_and_gpu(
    tmp_path: Path, store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "span.csv"
    assert cli.main(["history", "--store", str(store), "--export", str(out), "--csv", *SPAN]) == 0
    with out.open(newline="") as file:
        rows = list(csv.DictReader(file))
    assert tuple(rows[0]) == CSV_COLUMNS
    assert len(rows) == 26 * 2 and [row["gpu"] for row in rows[:4]] == ["0", "1", "0", "1"]
    first = rows[0]
    assert (first["time"], first["local_time"], first["lost"]) == ("1767225600.000", FIRST, "0")
    assert float(first["temperature_c"]) > 20 and float(first["power_w"]) > 0
    assert first["nvlink_tx_bytes_s"] == "" or float(first["nvlink_tx_bytes_s"]) >= 0  # not reported: empty


def test_a_gzip_csv_is_gzip(tmp_path: Path, store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "span.csv.gz"
    assert cli.main(["history", "--store", str(store), "--export", str(out), "--csv", "--from", "2026-01-01 00:00",
                     "--to", "2026-01-01 00:01"]) == 0  # fmt: skip
    assert gzip.decompress(out.read_bytes()).decode().startswith(",".join(CSV_COLUMNS))


@pytest.mark.usefixtures("utc")
def test_an_empty_export_span_says_what_the_store_holds(
    tmp_path: Path, store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "none.jsonl"
    argv = [
        "history",
        "--store",
        str(store),
        "--export",
        str(out),
        "--from",
        "2026-01-02 00:00",
        "--to",
        "2026-01-02 01:00",
    ]
    assert cli.main(argv) == 2
    assert f"it holds {FIRST} to {LAST}" in capsys.readouterr().err and not out.exists()


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["history", "--from", "1h ago"], "--from goes with --export"),
        (["history", "--csv"], "--csv and --force go with --export"),
        (["history", "--import", "x", "--json"], "--json prints what the store holds"),
    ],
)
def test_options_that_go_with_another_are_usage_errors(
    argv: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(argv) == 2
    assert said in capsys.readouterr().err
