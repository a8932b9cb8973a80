"""What the history store costs: bytes a day, seeking in a week, the writer's CPU, and its memory over 8 hours.

Every tick comes from the simulated 8-GPU machine on an injected clock (one tick a second, as fast as it can go), with
the diagnostics engine's findings and verdicts, as `gputui record --demo SCENARIO` would write them
(tests/store/storedata.py). Four parts, each also alone with `--only`; the whole takes about 5 minutes:

- size: N ticks of `tour` and of `healthy` written through a StoreWriter: bytes of the tick tier a tick and a day,
  the minute tier a day, and the same ticks as today's `--record FILE.jsonl.gz`. Also the frame encoding alone
  (gputui/store/columns.py): encode and decode CPU a tick, over the same records cut into 10 s frames; and where
  the tick tier's bytes are: how much less a tick takes (10 s frames, compressed as the store does) when a group
  of values is made constant, or the events are left out.
- cost: CPU a tick of the store's writer (tick_to_dict, the columns, zstd, the write, the minute tier; its thread
  included, the ticks made beforehand) and of `--record .gz`'s, against the exporter's tick: its sampling (source
  and diagnostics) and the page it writes once a reading. A recorder's tick is that sampling plus the store's writer.
- seek: a 7-day store built cheaply: 70 real minutes (tour, 8 GPUs, written as above), and before them the first
  hour's chunk copied under the names of the 166 hours before and the minute chunk under the 6 days before, so that
  the directory holds a week's files and bytes. The reader picks chunks by their names and frames by their own
  times, so the copies are never read for the real minutes. Opening the last hour (Store() and read(), every tick
  parsed into snapshots as the monitor loads them) and 20 jumps to random times in the real minutes (read() of
  10 s): wall and CPU ms, chunks decoded from, frames decompressed.
- memory (run first, in a process nothing else has grown): a StoreWriter fed 8 hours of ticks (tour, 8 GPUs, the
  engine's findings; made tick by tick, none kept): the process's RSS after 15 minutes and after 8 hours.

Run: .venv/bin/python benchmarks/bench_store.py [--ticks N] [--soak-hours H] [--only size cost seek memory]
"""

from __future__ import annotations

import argparse
import copy
import gc
import json
import random
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psutil
from prometheus_client import generate_latest

from gputui.export.page import SnapshotCollector
from gputui.export.server import ExportSampler
from gputui.record.format import dumps, event_to_dict, finding_transitions, tick_to_dict, verdict_event
from gputui.record.writer import RecordingWriter
from gputui.session.diagnose import new_diagnose
from gputui.session.sampling import Sampler
from gputui.sources.sim.source import SimulatedSource
from gputui.store import frames as store_frames
from gputui.store.codec import CODEC_NAMES, Dictionary, compress, preferred_codec
from gputui.store.columns import decode_records, encode_records
from gputui.store.reader import Store
from gputui.store.writer import StoreWriter
from tests.store.storedata import T0, Step, simulate

GPUS = 8
DAY = 86400
HOUR = 3600
BATCH = 100  # ticks queued before waiting for the writer: below its queue's limit, so none is dropped
PARTS = ("size", "cost", "seek", "memory")


def _say(name: str, value: float, digits: int, text: str) -> None:
    """One figure as run_all.py reads them: a name, the number, then words."""
    print(f"{name:<28}{value:10.{digits}f}  {text}", flush=True)


def _bytes_under(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def _write(writer: StoreWriter | RecordingWriter, steps: Iterator[Step] | list[Step]) -> float:
    """CPU seconds (every thread) to record the steps and have them written; the writer closed."""
    started = time.process_time()
    for i, step in enumerate(steps):
        writer.record(step.snapshot, step.active, step.verdict)
        if i % BATCH == BATCH - 1:
            writer.drain()
    writer.close()
    return time.process_time() - started


def _records(steps: list[Step]) -> list[dict[str, Any]]:
    """The records a store writer makes of the steps: each tick, then the events it brought."""
    written: dict[Any, Any] = {}
    records: list[dict[str, Any]] = []
    before: tuple[Any, ...] = ()
    verdict = None
    for step in steps:
        t = step.snapshot.timestamp
        records.append(tick_to_dict(step.snapshot, written))
        records += [event_to_dict(e) for e in finding_transitions(before, step.active, t)]
        if step.verdict is not None and (verdict is None or step.verdict.key != verdict.key):
            records.append(event_to_dict(verdict_event(step.verdict, t)))
            verdict = step.verdict
        before = step.active
    return [json.loads(dumps(record)) for record in records]


def _frames(records: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    frames: list[list[dict[str, Any]]] = [[]]
    ticks = 0
    for record in records:
        if record["type"] == "tick":
            if ticks == 10:
                frames.append([])
                ticks = 0
            ticks += 1
        frames[-1].append(record)
    return frames


def size(ticks: int) -> dict[str, float]:
    """Bytes a tick and a day for tour and healthy; the frame encoding's CPU; the writers' CPU (tour)."""
    out: dict[str, float] = {}
    print(f"-- size: {ticks} ticks of {GPUS} GPUs at 1 s, codec {CODEC_NAMES[preferred_codec()]}")
    for scenario in ("tour", "healthy"):
        steps = list(simulate(scenario, gpus=GPUS, seconds=ticks))
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            writer = StoreWriter(root / "store", interval_s=1.0)
            store_cpu = _write(writer, steps)
            assert writer.ticks_written == ticks and writer.ticks_dropped == 0, writer.warning
            tick_bytes = _bytes_under(root / "store" / "ticks")
            minute_bytes = _bytes_under(root / "store" / "minutes")
            minutes = len(Store(root / "store").minutes(T0, T0 + ticks))
            gz_cpu = _write(RecordingWriter(root / "x.jsonl.gz", interval_s=1.0), steps)
            gz_bytes = (root / "x.jsonl.gz").stat().st_size
        records = _records(steps)
        frames = _frames(records)
        started = time.process_time()
        encoded = [encode_records(frame) for frame in frames]
        encode_s = time.process_time() - started
        started = time.process_time()
        for data in encoded:
            decode_records(data)
        decode_s = time.process_time() - started
        per_tick = tick_bytes / ticks
        per_minute = minute_bytes / max(minutes, 1)
        print(f"{scenario}:")
        _say(f"{scenario}_b_per_tick", per_tick, 0, f"B a tick, the tick tier: {per_tick * DAY / 1e6:.1f} MB a day")
        _say(
            f"{scenario}_minutes_mb_day", per_minute * 1440 / 1e6, 2, f"MB a day, the minute tier ({per_minute:.0f} B)"
        )
        _say(
            f"{scenario}_gz_b_per_tick",
            gz_bytes / ticks,
            0,
            f"B a tick as .jsonl.gz: {gz_bytes / ticks * DAY / 1e6:.1f} MB a day",
        )
        _say(f"{scenario}_encode_ms", encode_s / ticks * 1e3, 3, "ms CPU a tick to encode 10 s frames (columns.py)")
        _say(f"{scenario}_decode_ms", decode_s / ticks * 1e3, 3, "ms CPU a tick to decode them")
        whole = _compressed(frames) / ticks
        for name, blank in _GROUPS.items():
            without = _compressed(_frames([blank(copy.deepcopy(record)) for record in records])) / ticks
            _say(f"{scenario}_bytes_{name}", whole - without, 0, f"B a tick: {_GROUP_WORDS[name]}")
        if scenario == "tour":
            out = {"store_ms": store_cpu / ticks * 1e3, "gz_ms": gz_cpu / ticks * 1e3}
    return out


def _compressed(frames: list[list[dict[str, Any]]]) -> int:
    """The frames' bytes as the store compresses them: encoded, the first one the dictionary of the others."""
    encoded = [encode_records(frame) for frame in frames]
    codec = preferred_codec()
    dictionary = Dictionary(encoded[0])
    return len(compress(encoded[0], codec)) + sum(len(compress(data, codec, dictionary)) for data in encoded[1:])


# Where the bytes are: what a tick costs less when a group of values is made constant (events: left out).
_GPU_RATES = ("pcie_rx_bytes_s", "pcie_tx_bytes_s", "nvlink_rx_bytes_s", "nvlink_tx_bytes_s")
_GPU_COUNTERS = ("energy_mj", "power_violation_ns", "thermal_violation_ns")
_GPU_KEPT = ("index", "timestamp", "processes", "mig", *_GPU_RATES, *_GPU_COUNTERS)
_PROC_KEPT = ("pid", "name", "user", "cmdline", "state", "ppid", "create_time", "cpus_allowed", "activity")


def _blank_gpus(record: dict[str, Any], names: Callable[[str], bool]) -> dict[str, Any]:
    for gpu in record.get("gpus", ()):
        for name in gpu:
            if names(name):
                gpu[name] = 0
    return record


def _blank_host(record: dict[str, Any], names: Callable[[str], bool]) -> dict[str, Any]:
    host = record.get("host", {})
    for name, value in host.items():
        if names(name):
            host[name] = [0] * len(value) if isinstance(value, list) else 0
    return record


def _blank_processes(record: dict[str, Any]) -> dict[str, Any]:
    for proc in record.get("host", {}).get("processes", ()):
        for name in proc:
            if name not in _PROC_KEPT:
                proc[name] = 0
    return record


_GROUPS: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "gpu_rates": lambda r: _blank_gpus(r, lambda name: name in _GPU_RATES),
    "gpu_counters": lambda r: _blank_gpus(r, lambda name: name in _GPU_COUNTERS),
    "gpu_other": lambda r: _blank_gpus(r, lambda name: name not in _GPU_KEPT),
    "host_cores": lambda r: _blank_host(r, lambda name: name == "cpu_pct_per_core"),
    "host_other": lambda r: _blank_host(r, lambda name: name not in ("cpu_pct_per_core", "processes", "timestamp")),
    "processes": _blank_processes,
    "events": lambda r: r if r["type"] == "tick" else {"type": "event"},
}
_GROUP_WORDS = {
    "gpu_rates": "the GPUs' PCIe and NVLink bytes a second",
    "gpu_counters": "the GPUs' energy and violation-time counters",
    "gpu_other": "the GPUs' other readings",
    "host_cores": "the host's per-core CPU",
    "host_other": "the host's other readings",
    "processes": "the host processes' readings",
    "events": "the findings' and verdicts' events",
}


def cost(ticks: int, writers: dict[str, float]) -> None:
    """The writers' CPU a tick against the exporter's tick on the same simulated machine."""
    if not writers:
        steps = list(simulate("tour", gpus=GPUS, seconds=ticks))
        with tempfile.TemporaryDirectory() as tmp:
            writers = {
                "store_ms": _write(StoreWriter(Path(tmp) / "store", interval_s=1.0), steps) / ticks * 1e3,
                "gz_ms": _write(RecordingWriter(Path(tmp) / "x.jsonl.gz", interval_s=1.0), steps) / ticks * 1e3,
            }
    clock = iter(range(10**9))
    source = SimulatedSource("tour", gpu_count=GPUS, clock=lambda: float(next(clock)))
    sampler = ExportSampler(Sampler(source, new_diagnose()), source.open(), interval=3600)
    collector = SnapshotCollector(lambda: sampler.state)
    sample = _cpu_ms(sampler.sample_once, ticks)
    page = _cpu_ms(lambda: generate_latest(collector), max(ticks // 5, 20))
    source.close()
    exporter = sample + page
    recorder = sample + writers["store_ms"]
    print(f"-- cost: CPU a tick, {GPUS} GPUs (tour); medians of {ticks} ticks (the page: of {max(ticks // 5, 20)})")
    _say("store_writer_ms", writers["store_ms"], 3, "ms a tick: the store's writer (its thread included)")
    _say("gz_writer_ms", writers["gz_ms"], 3, "ms a tick: --record .jsonl.gz's writer")
    _say("sampling_ms", sample, 3, "ms a tick: the exporter's reading (source, diagnostics, state)")
    _say("exporter_page_ms", page, 3, "ms a reading: the exporter's page (prometheus-client, one format)")
    _say("exporter_tick_ms", exporter, 3, "ms a tick: the exporter (reading + page)")
    _say("recorder_tick_ms", recorder, 3, "ms a tick: a recorder (reading + the store's writer)")
    _say("recorder_over_exporter", recorder / exporter, 2, "(goal: at most 1.10)")


def _cpu_ms(action: Callable[[], object], rounds: int) -> float:
    for _ in range(10):
        action()
    costs = []
    for _ in range(rounds):
        started = time.process_time()
        action()
        costs.append((time.process_time() - started) * 1e3)
    return statistics.median(costs)


class _Decodes:
    """While installed: the frames the reader decompresses, the chunks they are in, and the CPU seconds spent in
    decode_records (the columns back into records)."""

    def __init__(self) -> None:
        self.frames = 0
        self.chunks: set[str] = set()
        self.columns_s = 0.0
        self._decode = store_frames.ChunkReader.decode
        self._records = store_frames.decode_records

    def __enter__(self) -> _Decodes:
        counter, decode, records = self, self._decode, self._records

        def counted(reader: store_frames.ChunkReader, frame: Any, *, dictionary: bool = True) -> bytes | None:
            counter.frames += 1
            counter.chunks.add(reader.chunk.path.name)
            return decode(reader, frame, dictionary=dictionary)

        def timed(data: bytes) -> list[dict[str, Any]]:
            started = time.process_time()
            try:
                return records(data)
            finally:
                counter.columns_s += time.process_time() - started

        store_frames.ChunkReader.decode = counted  # type: ignore[method-assign]
        store_frames.decode_records = timed
        return self

    def __exit__(self, *_: object) -> None:
        store_frames.ChunkReader.decode = self._decode  # type: ignore[method-assign]
        store_frames.decode_records = self._records


def seek() -> None:
    """Opening the last hour of a week's store, and jumping to random times in it."""
    real_s = HOUR + 600  # the last hour straddles two hour chunks, as it mostly does
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp) / "store"
        started = time.perf_counter()
        _write(StoreWriter(directory, interval_s=1.0), simulate("tour", gpus=GPUS, seconds=real_s))
        first_hour = sorted((directory / "ticks").iterdir())[0]
        for back in range(1, 168 - 1):
            name = time.strftime("%Y%m%dT%H.gtc", time.gmtime(T0 - back * HOUR))
            shutil.copyfile(first_hour, directory / "ticks" / name)
        minute_chunk = sorted((directory / "minutes").iterdir())[0]
        for back in range(1, 7):
            name = time.strftime("%Y%m%d.gtm", time.gmtime(T0 - back * DAY))
            shutil.copyfile(minute_chunk, directory / "minutes" / name)
        built_s = time.perf_counter() - started
        files = len(list((directory / "ticks").iterdir())) + len(list((directory / "minutes").iterdir()))
        print(
            f"-- seek: a store of {files} chunk files, {_bytes_under(directory) / 1e6:.0f} MB ({real_s // 60} real "
            f"minutes of tour at {GPUS} GPUs, the rest copies; built in {built_s:.0f} s)"
        )
        last = T0 + real_s - 1
        gc.collect()
        with _Decodes() as decodes:
            started, cpu = time.perf_counter(), time.process_time()
            recording = Store(directory).read(last - HOUR, last)
            ticks = len(recording.ticks)
            open_ms, open_cpu_ms = (time.perf_counter() - started) * 1e3, (time.process_time() - cpu) * 1e3
        assert ticks >= HOUR, ticks
        _say("open_last_hour_ms", open_ms, 0, f"ms wall ({open_cpu_ms:.0f} ms CPU): Store(), read() of the last hour")
        print(f"{'':40}{ticks} ticks parsed into snapshots (goal: 200 ms)")
        _say("open_last_hour_columns_ms", decodes.columns_s * 1e3, 0, "ms CPU of it in decode_records")
        _say("open_last_hour_frames", decodes.frames, 0, f"frames decompressed, in {len(decodes.chunks)} chunks")
        rng = random.Random(39)
        times, cpus, frames, chunks = [], [], [], []
        for _ in range(20):
            at = T0 + rng.uniform(0, real_s - 10)
            with _Decodes() as decodes:
                started, cpu = time.perf_counter(), time.process_time()
                jump = Store(directory).read(at, at + 10)
                times.append((time.perf_counter() - started) * 1e3)
                cpus.append((time.process_time() - cpu) * 1e3)
            assert 10 <= len(jump.ticks) <= 11, len(jump.ticks)
            frames.append(decodes.frames)
            chunks.append(len(decodes.chunks))
        _say("jump_median_ms", statistics.median(times), 1, f"ms wall ({statistics.median(cpus):.1f} ms CPU):")
        print(f"{'':40}Store(), read() of 10 s at a random time (goal: 50 ms)")
        _say("jump_max_ms", max(times), 1, f"ms wall at most of 20 ({max(cpus):.1f} ms CPU)")
        _say("jump_frames_max", max(frames), 0, "frames decompressed at most (header, dictionary, data)")
        _say("jump_chunks_max", max(chunks), 0, "chunks decoded from at most (goal: 2)")


def memory(hours: float) -> None:
    """RSS of a process feeding a StoreWriter `hours` of ticks, after 15 minutes and at the end."""
    process = psutil.Process()
    ticks = int(hours * HOUR)
    checkpoints = {15 * 60: "15 min", **{h * HOUR: f"{h} h" for h in range(1, int(hours) + 1)}}
    checkpoints.setdefault(ticks, f"{hours:g} h")
    seen: dict[str, float] = {}
    gc.collect()
    before = process.memory_info().rss / 2**20
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        writer = StoreWriter(Path(tmp) / "store", interval_s=1.0)
        try:
            for i, step in enumerate(simulate("tour", gpus=GPUS, seconds=ticks), start=1):
                writer.record(step.snapshot, step.active, step.verdict)
                if i % BATCH == 0:
                    writer.drain()
                if i in checkpoints:
                    writer.drain()
                    gc.collect()
                    seen[checkpoints[i]] = process.memory_info().rss / 2**20
                    print(f"   after {checkpoints[i]:>6}: RSS {seen[checkpoints[i]]:6.1f} MiB", flush=True)
            assert writer.ticks_dropped == 0, writer.warning
        finally:
            writer.close()
    wall = time.perf_counter() - started
    end = seen[checkpoints[ticks]]
    print(f"-- memory: {ticks} ticks ({hours:g} h) of {GPUS} GPUs into a StoreWriter in {wall:.0f} s")
    _say("rss_start_mib", before, 1, "MiB before the first tick (gputui imported)")
    _say("rss_15min_mib", seen["15 min"], 1, "MiB after 15 minutes")
    _say("rss_end_mib", end, 1, f"MiB after {hours:g} h")
    _say("rss_growth_pct", (end / seen["15 min"] - 1) * 100, 1, "% (goal: within 10)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ticks", type=int, default=900, help="ticks for the size and cost parts (default 900)")
    parser.add_argument("--soak-hours", type=float, default=8.0, help="hours of ticks for the memory part (default 8)")
    parser.add_argument("--only", nargs="+", choices=PARTS, default=list(PARTS))
    args = parser.parse_args()
    if args.soak_hours < 0.25:
        parser.error("--soak-hours must be at least 0.25 (the first figure is after 15 minutes)")
    writers: dict[str, float] = {}
    if "memory" in args.only:  # first: what the other parts leave allocated would hide its RSS
        memory(args.soak_hours)
    if "size" in args.only:
        writers = size(args.ticks)
    if "cost" in args.only:
        cost(args.ticks, writers)
    if "seek" in args.only:
        seek()


if __name__ == "__main__":
    main()
