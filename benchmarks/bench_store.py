"""What the history store costs: bytes per tick and per day for 8 GPUs, the writer's CPU per tick, reading a span.

Ticks come from the simulated 8-GPU machine running the `tour` (every scenario in turn) on an injected clock, with
the diagnostics engine's findings and verdicts, as `gputui diagnose --demo tour --demo-gpus 8` makes them. The same
ticks go into a store and, for comparison, into a `--record FILE.jsonl.gz` recording. The writer's CPU is
time.process_time() over recording the ticks and waiting for them to be written (its thread included), less
nothing else: the ticks are made beforehand. The figures depend on gputui/store/columns.py's encoding.

Run: .venv/bin/python benchmarks/bench_store.py [--ticks N]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from gputui.record.writer import RecordingWriter
from gputui.store import codec
from gputui.store.reader import Store
from gputui.store.writer import StoreWriter
from tests.store.storedata import T0, Step, simulate

DAY = 86400
BATCH = 100  # ticks queued before waiting for the writer: below its queue's limit, so none is dropped


def _size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def _record(writer: StoreWriter | RecordingWriter, steps: list[Step]) -> float:
    """CPU seconds (all threads) to record the steps and have them written."""
    started = time.process_time()
    for i, step in enumerate(steps):
        writer.record(step.snapshot, step.active, step.verdict)
        if i % BATCH == BATCH - 1:
            writer.drain()
    writer.close()
    return time.process_time() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ticks", type=int, default=900)
    parser.add_argument("--gpus", type=int, default=8)
    args = parser.parse_args()
    steps = list(simulate("tour", gpus=args.gpus, seconds=args.ticks))
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        store_dir = root / "store"
        writer = StoreWriter(store_dir, interval_s=1.0)
        cpu = _record(writer, steps)
        assert writer.ticks_written == len(steps) and writer.ticks_dropped == 0
        ticks_bytes = _size(store_dir / "ticks")
        minute_bytes = _size(store_dir / "minutes")
        minutes = len(Store(store_dir).minutes(T0, T0 + args.ticks))
        gz_writer = RecordingWriter(root / "session.jsonl.gz", interval_s=1.0)
        gz_cpu = _record(gz_writer, steps)
        gz_bytes = (root / "session.jsonl.gz").stat().st_size
        store = Store(store_dir)
        started = time.perf_counter()
        whole = store.read(T0, T0 + args.ticks)
        list(whole.ticks)
        read_s = time.perf_counter() - started
        started = time.perf_counter()
        minute = store.read(T0 + args.ticks / 2, T0 + args.ticks / 2 + 60)
        list(minute.ticks)
        seek_s = time.perf_counter() - started
    n = len(steps)
    per_minute = minute_bytes / max(minutes, 1)
    used = codec.CODEC_NAMES[codec.preferred_codec()]
    print(f"{n} ticks of {args.gpus} GPUs (tour, with findings and verdicts); codec {used}")
    print(f"store, tick tier:   {ticks_bytes / n:8.0f} B/tick  {ticks_bytes / n * DAY / 1e6:6.1f} MB/day")
    print(f"store, minute tier: {per_minute:8.0f} B/minute  {per_minute * 1440 / 1e6:6.2f} MB/day")
    print(f"--record .jsonl.gz: {gz_bytes / n:8.0f} B/tick  {gz_bytes / n * DAY / 1e6:6.1f} MB/day")
    print(f"writer CPU:         store {cpu / n * 1e3:6.2f} ms/tick   --record .gz {gz_cpu / n * 1e3:6.2f} ms/tick")
    print(f"read {n} ticks:      {read_s * 1e3:6.0f} ms   read 60 s mid-span: {seek_s * 1e3:5.1f} ms")


if __name__ == "__main__":
    main()
