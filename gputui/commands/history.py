"""`gputui history`: what the history store holds; `--import FILE` brings a `--record` recording into it, and
`--export OUT --from T --to T [--csv]` takes a span out, as a recording (for replay, report and other tools) or as
a CSV of the GPUs' readings (one row per reading and GPU; the columns are CSV_COLUMNS, docs/history.md names them).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gputui.commands import common

if TYPE_CHECKING:
    from gputui.model import GpuSample, Snapshot
    from gputui.record.format import RecordedEvent
    from gputui.record.reader import Recording
    from gputui.record.writer import RecordingWriter
    from gputui.store.reader import StoreSummary
    from gputui.store.writer import StoreWriter

# The GPU readings a CSV export has, one column each, named as gputui/model.py GpuSample names them; an empty cell
# is a reading not reported (never 0).
CSV_READINGS = (
    "utilization_gpu_pct",
    "utilization_memory_pct",
    "sm_active_pct",
    "sm_occupancy_pct",
    "tensor_active_pct",
    "dram_bw_pct",
    "sm_clock_mhz",
    "memory_clock_mhz",
    "temperature_c",
    "memory_temperature_c",
    "power_w",
    "power_limit_w",
    "energy_mj",
    "memory_used_bytes",
    "memory_free_bytes",
    "pcie_tx_bytes_s",
    "pcie_rx_bytes_s",
    "nvlink_tx_bytes_s",
    "nvlink_rx_bytes_s",
    "fan_pct",
    "pstate",
    "clock_event_reasons_mask",
)
CSV_COLUMNS = ("time", "local_time", "gpu", "lost", *CSV_READINGS)
# Written to the converting writer at most this many at a time before waiting for it: its queue drops beyond 1000.
BATCH = 256


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "history",
        help="what the history store holds; --import a recording into it, --export a span out of it",
        description="Say what the history store holds (first and last time, readings, size, damaged frames, "
        "retention, the recorder); or convert a --record recording into it, or a span of it into a recording or "
        "a CSV.",
    )
    common.add_store_option(parser, "the history store")
    parser.add_argument("--json", action="store_true", help="print what the store holds as JSON")
    action = parser.add_mutually_exclusive_group()
    action.add_argument(
        "--import",
        dest="import_",
        type=Path,
        default=None,
        metavar="FILE",
        help="convert FILE, a recording made with --record (.jsonl or .jsonl.gz), into the store (not while a "
        "recorder records into it)",
    )
    action.add_argument(
        "--export",
        type=Path,
        default=None,
        metavar="OUT",
        help="write --from to --to as a recording to OUT (JSON Lines, gzip when it ends in .gz), for `gputui "
        "replay` and `gputui report`; with --csv, the GPUs' readings as CSV",
    )
    parser.add_argument(
        "--from",
        dest="from_",
        type=common.past_time,
        default=None,
        metavar="T",
        help="with --export: from T "
        "(local time, e.g. 02:00, '2026-12-06 02:00', '3h ago'; default: an hour before --to)",
    )
    parser.add_argument(
        "--to", type=common.past_time, default=None, metavar="T", help="with --export: up to T (default: now)"
    )
    parser.add_argument(
        "--csv",
        action="store_true",
        help="with --export: one row per reading and GPU: time (UTC epoch s), local_time, gpu, lost, then the "
        "readings (docs/history.md); an empty cell is a reading not reported",
    )
    parser.add_argument("--force", action="store_true", help="with --export: replace OUT if it exists")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from gputui.record.format import RecordingError
    from gputui.store.errors import StoreError

    exporting = args.export is not None
    for given, option in ((args.from_, "--from"), (args.to, "--to")):
        if given is not None and not exporting:
            return common.usage_error(f"{option} goes with --export")
    if (args.csv or args.force) and not exporting:
        return common.usage_error("--csv and --force go with --export")
    if args.json and (exporting or args.import_ is not None):
        return common.usage_error("--json prints what the store holds: not with --import or --export")
    try:
        if args.import_ is not None:
            return import_recording(args.import_, common.store_dir(args))
        if exporting:
            return export_span(args)
        return show(common.store_dir(args), as_json=args.json)
    except (StoreError, RecordingError) as exc:
        return common.usage_error(exc)


def show(directory: Path, *, as_json: bool) -> int:
    from gputui.store.reader import Store

    summary = Store(directory).summary()
    if as_json:
        common.print_json(summary_to_dict(summary))
    else:
        sys.stdout.write("".join(f"{line}\n" for line in summary_lines(summary)))
    return common.EXIT_OK


def summary_to_dict(summary: StoreSummary) -> dict[str, object]:
    retention = summary.retention
    return {
        "directory": str(summary.directory),
        "format": summary.format,
        "first": summary.first,
        "last": summary.last,
        "ticks": summary.ticks,
        "minutes_first": summary.minutes_first,
        "minutes_last": summary.minutes_last,
        "bytes": summary.bytes,
        "tick_chunks": summary.tick_chunks,
        "minute_chunks": summary.minute_chunks,
        "damaged_frames": summary.damaged_frames,
        "retention": {
            "tick_days": retention.tick_days,
            "minute_days": retention.minute_days,
            "max_bytes": retention.max_bytes,
        },
        "recorder_pid": summary.recorder_pid,
        "warnings": list(summary.warnings),
    }


def summary_lines(summary: StoreSummary) -> list[str]:
    """What `gputui history` prints: one line a fact, times in the machine's local time."""
    from gputui.commands.record import retention_text
    from gputui.formatting import fmt_bytes, hms

    def span(first: float | None, last: float | None) -> str:
        if first is None or last is None:
            return "none yet"
        return f"{common.clock(first)} to {common.clock(last)} ({hms(last - first)})"

    recorder = f"PID {summary.recorder_pid}" if summary.recorder_pid is not None else "no recorder running"
    lines = [
        f"store      {summary.directory} (format {summary.format})",
        f"readings   {span(summary.first, summary.last)}, {summary.ticks} readings",
        f"minutes    {span(summary.minutes_first, summary.minutes_last)}",
        f"size       {fmt_bytes(summary.bytes)} in {summary.tick_chunks} chunks of readings and "
        f"{summary.minute_chunks} of minutes",
        f"damaged    {summary.damaged_frames} frames skipped",
        f"retention  {retention_text(summary.retention)}",
        f"recorder   {recorder}",
    ]
    lines += [f"warning    {warning}" for warning in summary.warnings]
    return lines


def import_recording(path: Path, directory: Path) -> int:
    """FILE's ticks and events, in their order, into the store through a writer (StoreLocked: a recorder holds it)."""
    from gputui.record.reader import load_recording
    from gputui.store.writer import StoreWriter

    recording = load_recording(path)
    for warning in recording.warnings:
        print(f"gputui: warning: {warning}", file=sys.stderr)
    header = recording.header
    writer = StoreWriter(directory, interval_s=header.interval_s, utc_offset_s=header.utc_offset_s)
    _copy_into(recording, writer)
    print(
        f"gputui: imported {writer.ticks_written} of {len(recording.ticks)} readings from {path} into {directory}",
        file=sys.stderr,
    )
    return common.EXIT_OK if writer.ticks_written == len(recording.ticks) else common.EXIT_WARNINGS


def _copy_into(recording: Recording, writer: RecordingWriter | StoreWriter) -> None:
    """The recording's ticks and events, in their order, through `writer`, which is closed at the end (and on an
    error): waited for every BATCH items, so that its queue never fills and drops one; its warning said."""
    try:
        for queued, item in enumerate(_in_order(recording), start=1):
            if isinstance(item, tuple):
                writer.put_event(item[0])
            else:
                writer.put(item)
            if queued % BATCH == 0:
                writer.drain()
    finally:
        writer.close()
    if writer.warning:
        print(f"gputui: {writer.warning}", file=sys.stderr)


def _in_order(recording: Recording) -> Iterator[Snapshot | tuple[RecordedEvent]]:
    """The ticks and events (as 1-tuples) in the order a recorder writes them: each tick, then what happened
    with it, before the next."""
    events = sorted(recording.events, key=lambda event: event.t)
    next_event = 0
    for snapshot in recording.ticks:
        while next_event < len(events) and events[next_event].t < snapshot.timestamp:
            yield (events[next_event],)
            next_event += 1
        yield snapshot
    for event in events[next_event:]:
        yield (event,)


def export_span(args: argparse.Namespace) -> int:
    from gputui.store.reader import Store

    end = args.to if args.to is not None else time.time()
    start = args.from_ if args.from_ is not None else end - common.DEFAULT_HISTORY_S
    recording = common.read_history(Store(common.store_dir(args)), start, end)
    for warning in recording.warnings:
        print(f"gputui: warning: {warning}", file=sys.stderr)
    written = _write_csv(recording, args.export, args.force) if args.csv else _write_jsonl(recording, args)
    print(f"gputui: wrote {written} readings to {args.export}", file=sys.stderr)
    return common.EXIT_OK


def _write_jsonl(recording: Recording, args: argparse.Namespace) -> int:
    """The span as a recording made with --record (RecordingError: OUT exists, no such directory...)."""
    from gputui.record.writer import RecordingWriter

    header = recording.header
    writer = RecordingWriter(
        args.export, interval_s=header.interval_s, force=args.force, utc_offset_s=header.utc_offset_s
    )
    _copy_into(recording, writer)
    return writer.ticks_written


def _write_csv(recording: Recording, out: Path, force: bool) -> int:
    """One row per reading and GPU, CSV_COLUMNS, into a file created as a recording is (gzip for .gz)."""
    import csv
    import io

    from gputui.record.writer import RecordingFile

    file = RecordingFile(out, force=force)
    try:
        buffer = io.StringIO()
        rows = csv.writer(buffer, lineterminator="\n")
        rows.writerow(CSV_COLUMNS)
        for snapshot in recording.ticks:
            local = common.clock(snapshot.timestamp)
            for gpu in snapshot.gpus:
                rows.writerow([f"{snapshot.timestamp:.3f}", local, gpu.index, int(gpu.lost), *_readings(gpu)])
            file.write_line(buffer.getvalue().encode())
            buffer.seek(0)
            buffer.truncate()
    finally:
        file.close()
    return len(recording.ticks)


def _readings(gpu: GpuSample) -> list[str]:
    return ["" if value is None else str(value) for value in (getattr(gpu, name) for name in CSV_READINGS)]
