"""A frame's records (the recording's dicts: ticks and events) turned into bytes and back, exactly, in columns.

Ten seconds of ticks repeat themselves: the same keys, the same GPUs, the same processes, readings that move by a
little or not at all. As JSON lines each tick spells all of it again, and zstd finds the repeated text but not the
small moves of numbers. So a frame is written as:

- **shapes**: each record's structure (its keys in order, its lists' lengths) with every leaf a 0, as JSON, written
  once for all the records that share it (ten ticks with the same processes have one shape);
- **columns**: the leaves that share a path, list positions left out (`gpus[*].power_w`, `host.processes[*].cpu_pct`),
  taken shape by shape, each place in the shape over that shape's records in order (GPU 0's ten powers, then GPU
  1's...), so that neighbours in a column are one reading a second apart, and a frame has about a hundred columns
  however many GPUs and processes it holds;
- a column of one value (same type, same value) is written once; integers as the differences from each to the next,
  divided by their greatest common divisor (a timestamp moving by 1 s, memory moving by MiB), zigzagged and packed
  in the smallest fixed width that holds them, one byte plane after another; floats the same way as thousandths
  where that gives every value back exactly (the recording keeps 3 decimals; an integer among them is marked);
  everything else (strings, booleans, None, more decimals) as JSON, as runs where it repeats.

A shape's template does not depend on the values, so the chunk's first frame, the store's zstd dictionary, holds
nearly all of every later frame's structure. Decoding cleans every string (keys too) as a recording's reader does
(gputui.record.format.loads): a store file can be planted by another user. Damaged or hostile bytes raise
ValueError, and every count read is checked against the bytes that must hold it before anything is made.
"""

from __future__ import annotations

import json
import math
import sys
import threading
from array import array
from collections import Counter
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from itertools import accumulate
from operator import itemgetter, sub
from typing import Any

from gputui.record.format import loads

_MAGIC = b"GC1\n"
# Column kinds, the first item of each column's description.
_CONST = 0  # [0, value]
_INTS = 1  # [1, first, step, width]: the rest as width-byte deltas in steps of `step`
_MILLIS = 2  # [2, first, step, width(, [places of integers])]: the same for values * 1000
_VERBATIM = 3  # [3, [values...]]
_RUNS = 4  # [4, [values...], [how many times each...]]
_FLOAT_SCALE = 1000
_WIDTHS = {array(code).itemsize: code for code in "QLIHB"}  # unsigned, by width in bytes: 1, 2, 4 and 8
_LIMITS = ((1, 1 << 8), (2, 1 << 16), (4, 1 << 32), (8, 1 << 64))
_INT = frozenset((int,))
_FLOAT = frozenset((float,))
_INT_OR_FLOAT = frozenset((int, float))
_CONTAINERS = frozenset((dict, list, tuple))  # a tuple is written as JSON writes it: a list
_SCALARS = frozenset((str, int, float, bool, type(None)))
# What a frame may make, checked before anything is built: at most this many values (leaves and containers) a
# byte (the store's frames make under one: each record costs bytes, and a shape two bytes a value), and at most
# _MOST_VALUES in all (100 ticks of 64 GPUs make about a million). A frame that claims more is not one this module
# wrote, and would have it allocate far beyond the bytes it read.
_VALUES_PER_BYTE = 8
_MOST_VALUES = 1 << 22
# A column of numbers starts within 64 bits signed and steps within 64 bits unsigned; larger ones go verbatim.
_INT_LIMIT = 1 << 63
_STEP_LIMIT = 1 << 64

Path = tuple[Hashable, ...]
Builder = Callable[[tuple[Any, ...]], Any]


# ---- encoding ------------------------------------------------------------------------------------------------


def encode_records(records: Sequence[dict[str, Any]]) -> bytes:
    """The records as bytes: decode_records gives them back equal (same keys in the same order, same values and
    types). The records must be what JSON can hold."""
    shape_index: dict[tuple[Hashable, ...], int] = {}
    shape_columns: list[list[int]] = []
    templates: list[bytes] = []
    column_of: dict[Path, int] = {}
    columns: list[list[Any]] = []
    rows: list[list[list[Any]]] = []  # each shape's records' leaves
    record_shapes: list[int] = []
    for record in records:
        leaves: list[Any] = []
        tokens: list[Hashable] = []
        _walk(record, leaves, tokens)
        key = tuple(tokens)
        shape = shape_index.get(key)
        if shape is None:
            known = _describe(key, record)
            shape = shape_index[key] = len(templates)
            templates.append(known.template)
            local = [column_of.setdefault(path, len(column_of)) for path in known.paths]
            columns.extend([] for _ in range(len(column_of) - len(columns)))
            if local == list(range(len(local))):
                shape_columns.append(known.slots)
            else:
                shape_columns.append(list(map(local.__getitem__, known.slots)))
            rows.append([])
        record_shapes.append(shape)
        rows[shape].append(leaves)
    for ids, shape_rows in zip(shape_columns, rows, strict=True):
        for column, place in zip(ids, zip(*shape_rows, strict=True), strict=True):
            columns[column].extend(place)
    descriptions: list[list[Any]] = []
    numbers = bytearray()
    for values in columns:
        description, packed = _encode_column(values)
        descriptions.append(description)
        numbers += packed
    out = bytearray(_MAGIC)
    out += _varint(len(templates))
    for template in templates:
        out += _varint(len(template))
        out += template
    meta = _dumps([shape_columns, record_shapes, descriptions]).encode()
    out += _varint(len(meta))
    out += meta
    out += numbers
    return bytes(out)


def _dumps(value: Any) -> str:
    # ASCII escapes: a string the encoder cannot write as UTF-8 (a lone surrogate) still goes in, and comes back
    # cleaned like every other.
    return json.dumps(value, separators=(",", ":"))


def _walk(value: Any, leaves: list[Any], tokens: list[Hashable]) -> None:
    """The leaves of `value` (a dict or list) in depth-first order, and tokens that tell its shape apart from any
    other's: each container adds (leaves before it, its keys or its length); a leaf adds nothing, so a flat
    object costs one token and one extend."""
    if type(value) is dict:
        children = value.values()
        tokens.append((len(leaves), tuple(value)))
    else:
        children = value
        tokens.append((len(leaves), len(value)))
    if _CONTAINERS.isdisjoint(map(type, children)):
        leaves.extend(children)
        return
    for child in children:
        if type(child) in _CONTAINERS:
            _walk(child, leaves, tokens)
        else:
            leaves.append(child)


@dataclass(frozen=True, slots=True)
class _Shape:
    """What encoding needs of a shape: its template (the record with each leaf as 0, as JSON), its columns' paths
    in the order they first appear, and each leaf's place in that order."""

    template: bytes
    paths: tuple[Path, ...]
    slots: list[int]


# Shapes recur frame after frame (a tick's, as long as its processes stay; an event kind's), so the last ones used
# are kept: a tick's shape holds ~10 KB, and a day of the tour meets a few hundred, most of them once.
_KEPT = 64
_SHAPES: dict[tuple[Hashable, ...], _Shape] = {}
_CACHES = threading.Lock()


def _describe(key: tuple[Hashable, ...], record: dict[str, Any]) -> _Shape:
    """The shape of `record`, whose tokens are `key`."""
    with _CACHES:
        known = _SHAPES.pop(key, None)
    if known is None:
        leaf_paths: list[Path] = []
        template = _dumps(_template(record, (), leaf_paths)).encode()
        order: dict[Path, int] = {}
        slots = [order.setdefault(path, len(order)) for path in leaf_paths]
        known = _Shape(template, tuple(order), slots)
    _keep(_SHAPES, key, known)
    return known


def _keep(kept: dict[Any, Any], key: Any, value: Any) -> None:
    """`value` as the newest in a cache of the last _KEPT used (the first is the one used longest ago); the lock,
    as a writer thread and reader threads may use the caches at once."""
    with _CACHES:
        kept.pop(key, None)
        while len(kept) >= _KEPT:
            del kept[next(iter(kept))]
        kept[key] = value


def _template(value: Any, path: Path, paths: list[Path]) -> Any:
    if type(value) is dict:
        return {name: _template(child, (*path, name), paths) for name, child in value.items()}
    if type(value) in _CONTAINERS:
        return [_template(child, (*path, None), paths) for child in value]
    paths.append(path)
    return 0


def _encode_column(values: list[Any]) -> tuple[list[Any], bytes]:
    """A column's description and its packed numbers (none unless it is one of the delta kinds)."""
    first = values[0]
    types = set(map(type, values))
    if len(types) == 1:
        if values.count(first) == len(values) and (
            type(first) is not float or first != 0 or len({math.copysign(1.0, v) for v in values}) == 1
        ):
            return [_CONST, first], b""
        if type(first) is int:
            packed = _pack_deltas(values)
            if packed is not None:
                return [_INTS, first, *packed[:2]], packed[2]
    if types in (_FLOAT, _INT_OR_FLOAT):
        millis = _as_millis(values)
        if millis is not None:
            packed = _pack_deltas(millis)
            if packed is not None:
                ints = [at for at, value in enumerate(values) if type(value) is int] if int in types else []
                return [_MILLIS, millis[0], *packed[:2], *([ints] if ints else [])], packed[2]
    return _verbatim(values), b""


def _verbatim(values: list[Any]) -> list[Any]:
    """[VERBATIM, values], or [RUNS, values, counts] where runs of one value make it shorter (a process's
    command line, repeated over the frame)."""
    runs: list[Any] = []
    counts: list[int] = []
    previous: Any = _verbatim
    for value in values:
        if value is previous or _same(value, previous):
            counts[-1] += 1
        else:
            runs.append(value)
            counts.append(1)
            previous = value
    if 2 * len(runs) <= len(values):
        return [_RUNS, runs, counts]
    return [_VERBATIM, values]


def _same(one: Any, other: Any) -> bool:
    """Equal and of one type, 0.0 and -0.0 told apart (== takes 1, 1.0 and True, or 0.0 and -0.0, as one)."""
    return (
        type(one) is type(other)
        and one == other
        and (type(one) is not float or math.copysign(1.0, one) == math.copysign(1.0, other))
    )


def _as_millis(values: list[float | int]) -> list[int] | None:
    """Each value times 1000 as an integer, where dividing by 1000 gives back every value exactly (sign of zero
    included; integers too, within what a float holds exactly); None where it does not (more decimals, inf,
    NaN). floor(x + 0.5) rounds as well as round() for this, in half the time."""
    floor = math.floor
    try:
        millis = [floor(value * _FLOAT_SCALE + 0.5) for value in values]
        if [milli / _FLOAT_SCALE for milli in millis] != values:
            return None
    except (ValueError, OverflowError):  # NaN, inf, an integer beyond any float
        return None
    if 0.0 in values and any(value == 0 and math.copysign(1.0, value) < 0 for value in values):
        return None
    return millis


def _pack_deltas(values: list[int]) -> tuple[int, int, bytes] | None:
    """(step, width, bytes): the differences from each value to the next, divided by their common step,
    zigzagged (small magnitudes of either sign as small numbers) into the smallest width that holds them all,
    little-endian, written a byte plane at a time (every value's low byte, then every value's next byte...: the
    high planes are nearly all zeros, which zstd takes for almost nothing); None beyond 64 bits."""
    if not -_INT_LIMIT < values[0] < _INT_LIMIT:
        return None
    deltas = list(map(sub, values[1:], values[:-1]))
    step = math.gcd(*deltas) or 1
    if step >= _STEP_LIMIT:
        return None
    if step == 1:
        zigzags = [(delta << 1) ^ (delta >> 70) for delta in deltas]
    else:
        zigzags = [((delta // step) << 1) ^ (delta >> 70) for delta in deltas]
    largest = max(zigzags, default=0)
    for width, limit in _LIMITS:
        if largest < limit:
            packed = array(_WIDTHS[width], zigzags)
            if sys.byteorder == "big":
                packed.byteswap()
            raw = packed.tobytes()
            return step, width, raw if width == 1 else b"".join(raw[plane::width] for plane in range(width))
    return None


def _unpack_deltas(data: bytes, width: int, count: int) -> list[int]:
    """The `count` signed deltas _pack_deltas packed into `data`."""
    if width == 1:
        raw = data
    else:
        joined = bytearray(len(data))
        for plane in range(width):
            joined[plane::width] = data[plane * count : (plane + 1) * count]
        raw = bytes(joined)
    zigzags = array(_WIDTHS[width], raw)
    if sys.byteorder == "big":
        zigzags.byteswap()
    return [(zigzag >> 1) ^ -(zigzag & 1) for zigzag in zigzags]


def _varint(number: int) -> bytes:
    out = bytearray()
    while number >= 0x80:
        out.append((number & 0x7F) | 0x80)
        number >>= 7
    out.append(number)
    return bytes(out)


# ---- decoding ------------------------------------------------------------------------------------------------


def decode_records(data: bytes) -> list[dict[str, Any]]:
    """The records encode_records wrote; ValueError when `data` is not such bytes (damaged, cut short, or made to
    harm: no other exception, no allocation larger than what `data` can describe)."""
    try:
        return _decode(bytes(data))
    except RecursionError:
        raise ValueError("frame records nested too deeply") from None


def _decode(data: bytes) -> list[dict[str, Any]]:
    if not data.startswith(_MAGIC):
        raise ValueError("not a columnar frame (bad magic)")
    count, offset = _read_varint(data, len(_MAGIC))
    templates = []
    for _ in range(count):
        template, offset = _read_section(data, offset)
        templates.append(_compiled(template))
    meta_bytes, offset = _read_section(data, offset)
    meta = loads(meta_bytes)
    if not (isinstance(meta, list) and len(meta) == 3 and all(isinstance(part, list) for part in meta)):
        raise ValueError("frame description is not [shape columns, records, columns]")
    shape_columns, record_shapes, descriptions = meta
    if len(shape_columns) != len(templates):
        raise ValueError("frame has more or fewer shapes than column lists")
    for compiled, ids in zip(templates, shape_columns, strict=True):
        _check_columns(compiled, ids, len(descriptions))
    if not _is_index_list(record_shapes, len(templates)):
        raise ValueError("a record names a shape the frame does not have")
    uses: Counter[int] = Counter(record_shapes)
    claimed = sum(templates[shape].values * times for shape, times in uses.items())
    if claimed > min(_VALUES_PER_BYTE * len(data), _MOST_VALUES):
        raise ValueError("frame claims more values than its bytes can hold")
    counts = [0] * len(descriptions)
    for shape, times in uses.items():
        for column, repeats in Counter(shape_columns[shape]).items():
            counts[column] += repeats * times
    columns: list[list[Any]] = []
    for description, count in zip(descriptions, counts, strict=True):
        values, offset = _decode_column(description, count, data, offset)
        columns.append(values)
    if offset != len(data):
        raise ValueError("frame has bytes after its last column")
    records: list[Any] = [None] * len(record_shapes)
    cursor = [0] * len(columns)
    records_of: list[list[int]] = [[] for _ in shape_columns]
    for place, shape in enumerate(record_shapes):
        records_of[shape].append(place)
    for ids, places, compiled in zip(shape_columns, records_of, templates, strict=True):
        slices = []
        taken = len(places)
        for column in ids:  # a shape's values: a column's first place in the shape, then its next...
            at = cursor[column]
            slices.append(columns[column][at : at + taken])
            cursor[column] = at + taken
        build = compiled.build
        for place, row in zip(places, zip(*slices, strict=True) if slices else ((),) * len(places), strict=True):
            record = build(row)
            if type(record) is not dict:
                raise ValueError("a frame record is not a JSON object")
            records[place] = record
    return records


def _is_index_list(items: Any, size: int) -> bool:
    """Whether `items` is a list of integers from 0 to size - 1."""
    return isinstance(items, list) and (
        not items or (set(map(type, items)) == _INT and min(items) >= 0 and max(items) < size)
    )


def _read_varint(data: bytes, offset: int) -> tuple[int, int]:
    number = 0
    for shift in range(0, 35, 7):
        if offset >= len(data):
            raise ValueError("frame cut short in a length")
        byte = data[offset]
        offset += 1
        number |= (byte & 0x7F) << shift
        if byte < 0x80:
            return number, offset
    raise ValueError("frame length too large")


def _read_section(data: bytes, offset: int) -> tuple[bytes, int]:
    length, offset = _read_varint(data, offset)
    if length > len(data) - offset:
        raise ValueError("frame cut short: a part is longer than the bytes left")
    return data[offset : offset + length], offset + length


@dataclass(frozen=True, slots=True)
class _Compiled:
    """A shape read back: the function that makes a record from its leaf values (in depth-first order), how many
    leaves it takes, and how many values (leaves and containers) it makes."""

    build: Builder
    leaves: int
    values: int


_COMPILED: dict[bytes, _Compiled] = {}


def _compiled(template: bytes) -> _Compiled:
    """The shape whose template is `template`, kept by its bytes among the last _KEPT used."""
    with _CACHES:
        known = _COMPILED.pop(template, None)
    if known is None:
        counts = [0, 0]
        build = _builder(loads(template), counts)
        known = _Compiled(build, counts[0], counts[1])
    _keep(_COMPILED, template, known)
    return known


def _check_columns(compiled: _Compiled, ids: Any, columns: int) -> None:
    """That a shape's column list names a column of the frame for each of its leaves."""
    if not isinstance(ids, list) or len(ids) != compiled.leaves:
        raise ValueError("a frame shape's columns do not match its leaves")
    if not _is_index_list(ids, columns):
        raise ValueError("a frame shape names columns the frame does not have")


def _builder(template: Any, counts: list[int]) -> Builder:
    """A function that makes the template's value from a row of leaf values. `counts`: [leaves taken so far,
    values (leaves and containers) each record of this shape makes]."""
    counts[1] += 1
    if type(template) is int:
        position = counts[0]
        counts[0] += 1
        return itemgetter(position)
    if type(template) is dict:
        keys = tuple(template)
        assemble = _assembler(list(template.values()), counts)
        return lambda row: dict(zip(keys, assemble(row), strict=True))
    if type(template) is list:
        return _assembler(template, counts)
    raise ValueError("a frame shape holds something other than objects, lists and leaves")


def _assembler(children: list[Any], counts: list[int]) -> Callable[[tuple[Any, ...]], list[Any]]:
    """A function that makes the list of the children's values from a row: each run of leaves one slice of the row
    (a GPU's 45 readings), each container its builder's value."""
    pieces: list[slice | Builder] = []
    run_start: int | None = None
    for child in children:
        if type(child) is int:
            if run_start is None:
                run_start = counts[0]
            counts[0] += 1
            counts[1] += 1
            continue
        if run_start is not None:
            pieces.append(slice(run_start, counts[0]))
            run_start = None
        pieces.append(_builder(child, counts))
    if run_start is not None:
        pieces.append(slice(run_start, counts[0]))
    if len(pieces) == 1 and type(pieces[0]) is slice:
        only = pieces[0]
        return lambda row: list(row[only])

    def assemble(row: tuple[Any, ...]) -> list[Any]:
        values: list[Any] = []
        for piece in pieces:
            if type(piece) is slice:
                values += row[piece]
            else:
                values.append(piece(row))
        return values

    return assemble


def _decode_column(description: Any, count: int, data: bytes, offset: int) -> tuple[list[Any], int]:
    """A column's `count` values and the offset past its packed numbers."""
    if not (isinstance(description, list) and description and type(description[0]) is int):
        raise ValueError("a frame column has no kind")
    kind = description[0]
    if kind == _CONST and len(description) == 2:
        value = description[1]
        if type(value) not in _SCALARS:
            raise ValueError("a frame column holds a container")
        return [value] * count, offset
    if kind == _VERBATIM and len(description) == 2 and isinstance(description[1], list):
        values = description[1]
        if len(values) != count:
            raise ValueError("a frame column has more or fewer values than its records")
        if not _SCALARS.issuperset(map(type, values)):
            raise ValueError("a frame column holds a container")
        return values, offset
    if kind == _RUNS and len(description) == 3 and isinstance(description[1], list):
        runs, counts = description[1:]
        if not (
            isinstance(counts, list) and len(counts) == len(runs) and all(type(n) is int and n > 0 for n in counts)
        ):
            raise ValueError("a frame column's runs are described wrongly")
        if sum(counts) != count:
            raise ValueError("a frame column has more or fewer values than its records")
        if not _SCALARS.issuperset(map(type, runs)):
            raise ValueError("a frame column holds a container")
        return [value for value, times in zip(runs, counts, strict=True) for _ in range(times)], offset
    if (kind == _INTS and len(description) == 4) or (kind == _MILLIS and len(description) in (4, 5)):
        _, first, step, width = description[:4]
        if not (
            type(first) is int
            and -_INT_LIMIT < first < _INT_LIMIT
            and type(step) is int
            and 0 < step < _STEP_LIMIT
            and type(width) is int
            and width in _WIDTHS
        ):
            raise ValueError("a frame column's numbers are described wrongly")
        if count == 0:
            raise ValueError("a frame column of numbers has no values")
        size = (count - 1) * width
        if size > len(data) - offset:
            raise ValueError("frame cut short in a column of numbers")
        deltas = _unpack_deltas(data[offset : offset + size], width, count - 1)
        numbers = list(accumulate(deltas if step == 1 else [delta * step for delta in deltas], initial=first))
        if kind == _MILLIS:
            return _millis_back(numbers, description[4] if len(description) == 5 else []), offset + size
        return numbers, offset + size
    raise ValueError(f"a frame column of unknown kind {kind!r}")


def _millis_back(numbers: list[int], ints: Any) -> list[Any]:
    """Thousandths back to floats, but the values at `ints`, which were integers."""
    values: list[Any] = [number / _FLOAT_SCALE for number in numbers]  # within 2**64 steps of 2**64: no overflow
    if not isinstance(ints, list):
        raise ValueError("a frame column's integers are described wrongly")
    for at in ints:
        if not (type(at) is int and 0 <= at < len(numbers) and numbers[at] % _FLOAT_SCALE == 0):
            raise ValueError("a frame column's integers are described wrongly")
        values[at] = numbers[at] // _FLOAT_SCALE
    return values
