"""The store's frame encoding: any frame of records comes back exactly (values, types, key order), strings come back
cleaned as a recording's reader cleans them, real ticks shrink, and damaged or hostile bytes raise ValueError only,
at once, without building more than the bytes can describe."""

from __future__ import annotations

import json
import math
import random
import threading
import time
import zlib
from collections.abc import Iterator
from typing import Any

import pytest

from gputui.diagnostics.engine import DiagnosticsEngine
from gputui.foreign_text import clean, is_clean
from gputui.record.format import dumps, event_to_dict, finding_transitions, loads, tick_to_dict, verdict_event
from gputui.sources.sim.source import FIXED_EPOCH, SimulatedSource
from gputui.store.columns import _MAGIC, decode_records, encode_records
from tests.hostile import HOSTILE, hostile_snapshot

# ---- helpers -------------------------------------------------------------------------------------------------


def typed(value: Any) -> Any:
    """`value` with each leaf paired with its type, lists and dicts (key order included) kept apart: `==` alone takes
    1, 1.0 and True, or 0.0 and -0.0, for one another."""
    if isinstance(value, dict):
        return ("dict", [(key, typed(item)) for key, item in value.items()])
    if isinstance(value, list):
        return ("list", [typed(item) for item in value])
    if isinstance(value, float):
        return ("float", value.hex())  # tells -0.0 from 0.0, and NaN equals NaN
    return (type(value).__name__, value)


def assert_round_trip(records: list[dict[str, Any]]) -> bytes:
    data = encode_records(records)
    assert typed(decode_records(data)) == typed(records)
    return data


def varint(number: int) -> bytes:
    out = bytearray()
    while number >= 0x80:
        out.append((number & 0x7F) | 0x80)
        number >>= 7
    out.append(number)
    return bytes(out)


def frame(templates: list[Any], meta: Any, numbers: bytes = b"") -> bytes:
    """A frame assembled by hand, as the module lays one out: magic, the templates, the description, the numbers."""
    out = bytearray(_MAGIC) + varint(len(templates))
    for template in templates:
        raw = template if isinstance(template, bytes) else json.dumps(template).encode()
        out += varint(len(raw)) + raw
    raw_meta = meta if isinstance(meta, bytes) else json.dumps(meta).encode()
    return bytes(out + varint(len(raw_meta)) + raw_meta + numbers)


def simulated_records(scenario: str, *, gpus: int, seconds: int, hostile: bool = False) -> list[dict[str, Any]]:
    """What a recorder writes of a simulated session at 1 s: each tick as tick_to_dict makes it, and the finding
    and verdict events between them, in order."""
    now = [0.0]
    source = SimulatedSource(scenario, gpu_count=gpus, clock=lambda: now[0])
    source.open()
    engine = DiagnosticsEngine()
    written: dict[Any, Any] = {}
    records: list[dict[str, Any]] = []
    before: tuple[Any, ...] = ()
    verdict = None
    try:
        for second in range(seconds):
            now[0] = float(second)
            snapshot = source.sample()
            if hostile:
                snapshot = hostile_snapshot(snapshot)
            state = engine.update(snapshot)
            t = snapshot.timestamp
            records.append(tick_to_dict(snapshot, written))
            records += [event_to_dict(event) for event in finding_transitions(before, state.active, t)]
            if state.verdict is not None and state.verdict != verdict:
                records.append(event_to_dict(verdict_event(state.verdict, t)))
            before, verdict = state.active, state.verdict
    finally:
        source.close()
    assert records[0]["timestamp"] == FIXED_EPOCH
    return records


def frames_of(records: list[dict[str, Any]], seconds: float = 10.0) -> Iterator[list[dict[str, Any]]]:
    """The records cut into frames of `seconds`, as the store cuts them."""
    current: list[dict[str, Any]] = []
    start: float | None = None
    for record in records:
        t = record.get("timestamp", record.get("t"))
        assert isinstance(t, float)
        if start is None:
            start = t
        if t - start >= seconds and record["type"] == "tick" and current:
            yield current
            current, start = [], t
        current.append(record)
    if current:
        yield current


def as_json(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The records as a recording file gives them back (its tuples become lists)."""
    return [json.loads(dumps(record)) for record in records]


# ---- generated records ---------------------------------------------------------------------------------------

KEYS = ["a", "index", "pid", "power_w", "", " ", "0", "1.5", "a.b", "x[0]", "ключ", "名字", "k\u00e9y", "null", "true"]


def scalar(rng: random.Random) -> Any:
    kind = rng.randrange(12)
    if kind == 0:
        return rng.randrange(-5, 5)
    if kind == 1:
        return rng.choice([0, 1, -1, 2**31, -(2**31), 2**53 + 1, 2**63 - 1, -(2**63) + 1, 2**63, 2**64 + 7, -(2**70)])
    if kind == 2:
        return round(rng.uniform(-1000, 1000), rng.randrange(0, 4))
    if kind == 3:
        return rng.uniform(-1e6, 1e6)  # 17 digits: never thousandths
    if kind == 4:
        return rng.choice([0.0, -0.0, 1.0, -1.0, 0.001, -0.001, 1e300, -1e300, 5e-324, 1e15 + 0.5, 2.5e-4])
    if kind == 5:
        return rng.choice([True, False])
    if kind == 6:
        return None
    if kind == 7:
        return rng.choice(["", "S", "python3 train.py", "名字", "a\u00e9", "0", "1.0"])
    if kind == 8:
        return float(rng.randrange(-3, 3))  # floats equal to ints
    if kind == 9:
        return rng.choice([1, 1.0, True, 0, 0.0, -0.0, False])  # equal under ==, not the same
    if kind == 10:
        return rng.randrange(0, 10**12)
    return round(rng.uniform(0, 100), 1)


def value(rng: random.Random, depth: int) -> Any:
    kind = rng.randrange(10 if depth < 4 else 6)
    if kind < 6:
        return scalar(rng)
    if kind == 6:
        return {}
    if kind == 7:
        return []
    if kind == 8:
        return [value(rng, depth + 1) for _ in range(rng.randrange(1, 5))]
    return {rng.choice(KEYS): value(rng, depth + 1) for _ in range(rng.randrange(1, 5))}


def mutated(rng: random.Random, base: Any, depth: int = 0) -> Any:
    """`base` with some leaves changed, and now and then a key or item added or left out: the next tick."""
    if isinstance(base, dict):
        out = {key: mutated(rng, item, depth + 1) for key, item in base.items() if rng.random() > 0.05}
        if rng.random() < 0.05:
            out[rng.choice(KEYS)] = value(rng, depth + 1)
        return out
    if isinstance(base, list):
        out_list = [mutated(rng, item, depth + 1) for item in base if rng.random() > 0.05]
        if rng.random() < 0.05:
            out_list.append(value(rng, depth + 1))
        return out_list
    if isinstance(base, bool) or base is None or isinstance(base, str):
        return base if rng.random() < 0.8 else scalar(rng)
    if isinstance(base, int):
        return base + rng.randrange(-3, 4) if rng.random() < 0.8 else scalar(rng)
    if isinstance(base, float) and math.isfinite(base) and abs(base) < 1e12:
        return round(base + rng.uniform(-1, 1), 3) if rng.random() < 0.8 else scalar(rng)
    return base


def generated_frame(rng: random.Random) -> list[dict[str, Any]]:
    """A frame of 0-40 records: a few bases, each repeated with small changes, interleaved."""
    bases = [{rng.choice(KEYS): value(rng, 1) for _ in range(rng.randrange(0, 8))} for _ in range(rng.randrange(1, 4))]
    records = []
    for _ in range(rng.randrange(0, 41)):
        which = rng.randrange(len(bases))
        bases[which] = mutated(rng, bases[which])
        records.append(bases[which])
    return records


@pytest.mark.parametrize("seed", range(400))
def test_any_frame_of_json_records_comes_back_exactly(seed: int) -> None:
    assert_round_trip(generated_frame(random.Random(seed)))


def test_numbers_keep_their_types_and_signs_in_one_column() -> None:
    """A column that mixes 1, 1.0 and True, or 0.0 and -0.0, or ints and thousandths, gives each back as it was."""
    columns: list[list[Any]] = [
        [1, 1.0, True, 1, 1.0, True],
        [0.0, -0.0, 0.0, 0, False, -0.0],
        [-0.0, -0.0, -0.0],
        [0.0, 0.0, -0.0],
        [1, 2, 3.5, 4, 5.25, 6],  # ints among thousandths
        [0.1, 0.2, 0.30000000000000004, 0.4],  # one float is not a thousandth
        [1.0001, 1.0002, 1.0003],
        [float("inf"), 1.0, float("-inf"), 2.0],
        [2**63 - 1, -(2**63) + 1, 2**63 - 1],  # deltas beyond 64 bits
        [2**64, 2**64 + 1, 2**64 + 2],
        [10**30, 10**30 + 1],
        [1e300, 1e300, 2e300],
        [5e-324, 0.0, 5e-324],
        [2**53 + 1, 2**53, 2.0**53],
        [1767225600.0, 1767225601.0, 1767225602.0],
        [0.25, 0.5, 0.75, 1.0],
        [-97.8, -97.9, 97.8, 0.001, -0.001],
        [None, None, 0, None],
        ["S", "S", "R", "S", "S", "S"],
        [True, False, True],
    ]
    for values in columns:
        assert_round_trip([{"v": item} for item in values])
        assert_round_trip([{"gpus": [{"v": item}, {"v": item}]} for item in values])


def test_nan_comes_back_as_nan() -> None:
    decoded = decode_records(encode_records([{"v": float("nan")}, {"v": 1.5}, {"v": float("nan")}]))
    assert math.isnan(decoded[0]["v"]) and decoded[1]["v"] == 1.5 and math.isnan(decoded[2]["v"])


def test_empty_frames_and_empty_containers() -> None:
    assert_round_trip([])
    assert_round_trip([{}])
    assert_round_trip([{}, {}, {}])
    assert_round_trip([{"a": {}, "b": [], "c": [[]], "d": [{}], "e": {"f": {}}}] * 3)
    assert_round_trip([{"a": []}, {"a": [1]}, {"a": [1, 2]}, {"a": []}, {"a": {}}, {"a": 3}])


def test_keys_in_their_order_and_records_with_other_keys() -> None:
    data = assert_round_trip([{"b": 1, "a": 2}, {"a": 2, "b": 1}, {"z": [1, 2]}, {"b": 1, "a": 2, "": 0.5}])
    assert [list(record) for record in decode_records(data)] == [["b", "a"], ["a", "b"], ["z"], ["b", "a", ""]]


def test_processes_that_come_and_go_and_lists_that_change_length() -> None:
    records = []
    pids = [100, 101, 102]
    for second in range(30):
        if second % 7 == 3:
            pids = [*pids[1:], pids[-1] + 10]
        if second % 11 == 5:
            pids = [*pids, 999]
        processes = [{"pid": pid, "cpu_pct": round(second * 1.5 + pid % 7, 1), "name": f"p{pid}"} for pid in pids]
        records.append({"type": "tick", "timestamp": 1000.0 + second, "host": {"processes": processes}})
    assert_round_trip(records)


def test_a_tuple_comes_back_as_the_list_json_would_make_it() -> None:
    records = [{"load_avg": (1.5, 2.5, 3.5), "cpus": (0, 1)}, {"load_avg": (1.0, 2.0, 3.0), "cpus": (0, 1)}]
    assert decode_records(encode_records(records)) == as_json(records)


def test_many_shapes_in_one_frame_and_across_frames() -> None:
    """More shapes than the encoder and decoder keep between frames: every frame still comes back."""
    for first in range(0, 600, 50):
        assert_round_trip([{f"k{n}": n, "v": [n] * (n % 5)} for n in range(first, first + 50)])


# ---- real ticks ----------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tour8() -> list[dict[str, Any]]:
    return simulated_records("tour", gpus=8, seconds=120)


def test_a_simulated_recording_comes_back_exactly(tour8: list[dict[str, Any]]) -> None:
    """Real ticks (8 GPUs, processes, the tour's scenes) and the findings' and verdicts' events."""
    kinds = {record.get("kind") for record in tour8}
    assert {"finding_opened", "verdict"} <= kinds
    for records in frames_of(as_json(tour8)):
        assert_round_trip(records)
    for records in frames_of(as_json(tour8), seconds=2.5):  # other cuts: a frame may start anywhere
        assert_round_trip(records)


@pytest.mark.parametrize("scenario", ["mig-shared-slice", "mig-pending", "container", "oom"])
def test_other_machines_come_back_exactly(scenario: str) -> None:
    """MIG devices and their processes, a container's limits, a process killed."""
    records = as_json(simulated_records(scenario, gpus=2, seconds=25))
    if scenario.startswith("mig"):
        assert any(gpu.get("mig") for record in records if record["type"] == "tick" for gpu in record["gpus"])
    for frame_records in frames_of(records):
        assert_round_trip(frame_records)


def test_columns_shrink_a_recording_more_than_json_does(tour8: list[dict[str, Any]]) -> None:
    """The reason for the columns: compressed with the chunk's first frame as dictionary, the store's way, a
    frame of real ticks takes well under what the recording's JSON lines take."""
    frames = list(frames_of(as_json(tour8)))
    as_lines = ["".join(dumps(record) for record in records).encode() for records in frames]
    as_columns = [encode_records(records) for records in frames]

    def compressed(payloads: list[bytes]) -> int:
        total = 0
        for payload in payloads[1:]:
            packer = zlib.compressobj(6, zdict=payloads[0])
            total += len(packer.compress(payload) + packer.flush())
        return total

    assert compressed(as_columns) < 0.7 * compressed(as_lines)


def test_strings_come_back_cleaned_as_a_recording_reader_cleans_them() -> None:
    """Keys and values another user chose (a planted store file) come back as format.loads gives them back."""
    hostile = simulated_records("healthy", gpus=2, seconds=12, hostile=True)
    hostile.append({"type": "event", "kind": "mark", "t": 1.0, "label": HOSTILE, HOSTILE: {HOSTILE: [HOSTILE]}})
    for records in frames_of(hostile):
        data = encode_records(records)
        decoded = decode_records(data)
        assert decoded == [loads(dumps(record)) for record in records]
        assert all(is_clean(text) for text in texts(decoded))
    assert any(text == clean(HOSTILE) for text in texts(decoded))


def texts(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for item in value:
            yield from texts(item)
    elif isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from texts(item)


# ---- hostile bytes -------------------------------------------------------------------------------------------


def decodes_or_refuses(data: bytes) -> None:
    """decode_records gives records or raises ValueError: nothing else, and soon."""
    started = time.process_time()
    try:
        records = decode_records(data)
    except ValueError:
        pass
    else:
        assert isinstance(records, list) and all(isinstance(record, dict) for record in records)
        assert all(is_clean(text) for text in texts(records))
    assert time.process_time() - started < 1.0


@pytest.fixture(scope="module")
def small_frame() -> bytes:
    """Four seconds of a 2-GPU tour, with its first verdict: every kind of part, in a few KB."""
    records = as_json(simulated_records("tour", gpus=2, seconds=4))
    assert {record["type"] for record in records} == {"tick", "event"}
    return encode_records(records)


@pytest.fixture(scope="module")
def real_frame(tour8: list[dict[str, Any]]) -> bytes:
    return encode_records(next(frames_of(as_json(tour8[200:]))))


def test_every_cut_of_a_frame_is_refused(small_frame: bytes) -> None:
    for length in range(len(small_frame)):
        with pytest.raises(ValueError):
            decode_records(small_frame[:length])
    with pytest.raises(ValueError):
        decode_records(small_frame + b"\x00")


@pytest.mark.parametrize(("name", "tries"), [("small_frame", 1000), ("real_frame", 150)])
def test_flipped_bytes_decode_or_are_refused(name: str, tries: int, request: pytest.FixtureRequest) -> None:
    data: bytes = request.getfixturevalue(name)
    rng = random.Random(39)
    for _ in range(tries):
        damaged = bytearray(data)
        for _ in range(rng.randrange(1, 4)):
            damaged[rng.randrange(len(damaged))] ^= 1 << rng.randrange(8)
        decodes_or_refuses(bytes(damaged))


def test_random_bytes_are_refused() -> None:
    rng = random.Random(7)
    for _ in range(500):
        noise = bytes(rng.randrange(256) for _ in range(rng.randrange(0, 300)))
        with pytest.raises(ValueError):
            decode_records(noise)
        decodes_or_refuses(_MAGIC + noise)


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(_MAGIC + b"\xff\xff\xff\xff\x0f", id="a billion templates"),
        pytest.param(_MAGIC + b"\x01\xff\xff\xff\xff\x0f{}", id="a template longer than the frame"),
        pytest.param(_MAGIC + b"\xff\xff\xff\xff\xff\xff\xff\xff", id="a varint without end"),
        pytest.param(frame([], b"[[],[],[]"), id="description cut short"),
        pytest.param(frame([], b"\xff\xfe[]"), id="not utf-8"),
        pytest.param(frame([], [[], [], [], []]), id="description of four parts"),
        pytest.param(frame([{"a": 0}], [[[0]], [1], [[0, 5]]]), id="record of a shape not there"),
        pytest.param(frame([{"a": 0}], [[[0]], [True], [[0, 5]]]), id="shape named by a bool"),
        pytest.param(frame([{"a": 0}], [[[3]], [0], [[0, 5]]]), id="shape of a column not there"),
        pytest.param(frame([{"a": 0}], [[[0, 0]], [0], [[0, 5]]]), id="more columns than leaves"),
        pytest.param(frame([{"a": 0}], [[], [0], [[0, 5]]]), id="fewer column lists than shapes"),
        pytest.param(frame([{"a": "x"}], [[[0]], [0], [[0, 5]]]), id="a string in a template"),
        pytest.param(frame([[0]], [[[0]], [0], [[0, 5]]]), id="a record that is not an object"),
        pytest.param(frame([{"a": 0}], [[[0]], [0], [[0, [1]]]]), id="a container as a value"),
        pytest.param(frame([{"a": 0}], [[[0]], [0], [[3, [1, 2]]]]), id="verbatim of the wrong length"),
        pytest.param(frame([{"a": 0}], [[[0]], [0], [[3, [{}]]]]), id="verbatim container"),
        pytest.param(frame([{"a": 0}], [[[0]], [0], [[4, [1], [0]]]]), id="a run of none"),
        pytest.param(frame([{"a": 0}], [[[0]], [0], [[4, [1], [2]]]]), id="runs of the wrong length"),
        pytest.param(frame([{"a": 0}], [[[0]], [0, 0], [[1, 0, 1, 3]]], b"\x00\x00\x00"), id="width 3"),
        pytest.param(frame([{"a": 0}], [[[0]], [0, 0], [[1, 0, 0, 1]]], b"\x00"), id="step 0"),
        pytest.param(frame([{"a": 0}], [[[0]], [0, 0], [[1, 2**64, 1, 1]]], b"\x00"), id="first beyond 64 bits"),
        pytest.param(frame([{"a": 0}], [[[0]], [0, 0], [[1, 0, 1.5, 1]]], b"\x00"), id="a float step"),
        pytest.param(frame([{"a": 0}], [[[0]], [0, 0, 0], [[1, 0, 1, 8]]], b"\x00" * 15), id="numbers cut short"),
        pytest.param(frame([{"a": 0}], [[[0]], [0, 0], [[1, 0, 1, 1]]], b"\x00\x00"), id="bytes left over"),
        pytest.param(frame([{"a": 0}], [[[0]], [], [[1, 0, 1, 1]]]), id="a column of no numbers"),
        pytest.param(frame([{"a": 0}], [[[0]], [0, 0], [[2, 0, 1, 1, [5]]]], b"\x02"), id="an integer not there"),
        pytest.param(frame([{"a": 0}], [[[0]], [0, 0], [[2, 1, 1, 1, [1]]]], b"\x02"), id="an integer of thousandths"),
        pytest.param(frame([{"a": 0}], [[[0]], [0], [[9, 1]]]), id="unknown kind"),
        pytest.param(frame([{"a": 0}], [[[0]], [0], [[]]]), id="no kind"),
        pytest.param(frame([], b"[" * 100_000 + b"]" * 100_000), id="nested past the recursion limit"),
        pytest.param(frame([b"[" * 100_000 + b"]" * 100_000], [[[]], [0], []]), id="template nested too deep"),
    ],
)
def test_malformed_frames_are_refused_with_value_error(data: bytes) -> None:
    with pytest.raises(ValueError):
        decode_records(data)


def test_a_frame_claiming_more_values_than_its_bytes_is_refused_before_building() -> None:
    """Twenty thousand records of a 2,000-leaf shape from 60 KB: 40 million values, refused at once."""
    template = {f"k{n}": 0 for n in range(2000)}
    data = frame([template], [[[0] * 2000], [0] * 20_000, [[0, 1.5]]])
    started = time.process_time()
    with pytest.raises(ValueError, match="more values"):
        decode_records(data)
    assert time.process_time() - started < 0.5
    # the same with containers: a shape of empty lists
    data = frame([[[]] * 5000], [[[]], [0] * 20_000, []])
    with pytest.raises(ValueError, match="more values"):
        decode_records(data)


def test_a_frame_claiming_millions_of_values_is_refused_however_long() -> None:
    """Bytes enough for the values claimed (padding after the description), but more values than any frame the
    store writes: refused, rather than building four million of them."""
    data = frame([{"a": [0] * 100_000}], [[[0] * 100_000], [0] * 42, [[0, 1]]], b"\x00" * 600_000)
    with pytest.raises(ValueError, match="more values"):
        decode_records(data)


def test_a_legitimate_frame_of_forty_ticks_is_within_the_bound(tour8: list[dict[str, Any]]) -> None:
    """0.25 s ticks: 40 ticks of 8 GPUs in a frame, or 100 alike, stay well inside what the decoder accepts."""
    ticks = [record for record in as_json(tour8) if record["type"] == "tick"][:40]
    assert_round_trip(ticks)
    assert_round_trip([ticks[0]] * 100)


def test_threads_encoding_and_decoding_at_once_each_get_their_frames_back() -> None:
    """A writer thread and reader threads share the shapes kept between frames: many shapes, more than are kept,
    from four threads at once, each frame back exactly."""
    failures: list[BaseException] = []

    def work(seed: int) -> None:
        try:
            for n in range(150):
                records = [{f"k{seed}_{n % 97}": [n] * (n % 7), "t": float(n) + i / 4} for i in range(5)]
                assert_round_trip(records)
        except BaseException as exc:  # collected: an assert in a thread would go unseen
            failures.append(exc)

    threads = [threading.Thread(target=work, args=(seed,)) for seed in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not any(thread.is_alive() for thread in threads)
    assert failures == []
