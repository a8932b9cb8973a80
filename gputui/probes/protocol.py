"""The JSON-lines messages a probe worker prints on stdout, one object per line.

`progress` lines come while a probe runs; exactly one `result` or `error` ends it. Each line carries the
protocol version `v`, so a newer runner can refuse an older worker with a clear error instead of a KeyError.
A progress line's `device` came later: a line without it reads as "" (not said), so older lines still parse.
`BadLine` never travels on the wire: the runner makes one for each stdout line it cannot read.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any, Literal

PROTOCOL_VERSION = 1

ProbeName = Literal["pcie", "stress", "membw", "disk", "p2p"]
PROBES: tuple[ProbeName, ...] = ("pcie", "stress", "membw", "disk", "p2p")

# Why a probe gave no result; the UI words its hint from it (no_torch -> how to install torch).
ErrorCode = Literal["no_torch", "bad_args", "failed", "crashed", "timeout", "cancelled"]
ERROR_CODES: tuple[ErrorCode, ...] = ("no_torch", "bad_args", "failed", "crashed", "timeout", "cancelled")

# gputui is not on PyPI: torch goes into the environment gputui runs in (a checkout's .venv).
INSTALL_HINT = "install torch where gputui runs (in a checkout: .venv/bin/pip install torch)"


class ProtocolError(ValueError):
    """A line that is not a probe message; the message says what is wrong in one line."""


class _Ran:
    """A message that names the device the probe runs on: "cpu" is a CPU run (no CUDA device was used)."""

    __slots__ = ()
    device: str

    @property
    def on_cpu(self) -> bool:
        return self.device == "cpu"


@dataclass(frozen=True, slots=True)
class Progress(_Ran):
    """How far a probe is, and its live figure so far (e.g. 412.0 TFLOP/s in the last second)."""

    probe: ProbeName
    fraction: float  # 0..1
    figure: float | None = None
    unit: str = ""
    message: str = ""
    device: str = ""  # where it runs, as Result.device: "cpu" is a CPU run, to be said before its first figure


@dataclass(frozen=True, slots=True)
class Result(_Ran):
    """A finished probe. `ok` is False when a figure fails its check; `faulty` when the hardware computed wrong."""

    probe: ProbeName
    device: str  # "cuda:0 NVIDIA H100 80GB HBM3", or "cpu" when no CUDA device was used
    ok: bool
    figures: dict[str, float | None]
    verdict: str
    details: tuple[str, ...] = ()
    faulty: bool = False


@dataclass(frozen=True, slots=True)
class Error:
    """A probe that gave no result, with the reason and the last lines its process wrote to stderr."""

    probe: ProbeName
    code: ErrorCode
    message: str
    stderr_tail: str = ""


@dataclass(frozen=True, slots=True)
class BadLine:
    """A stdout line the runner could not read; reported so a stray print is visible, never fatal."""

    probe: ProbeName
    line: str
    reason: str = ""


Message = Progress | Result | Error
Final = Result | Error


def to_dict(message: Message) -> dict[str, Any]:
    if isinstance(message, Progress):
        body: dict[str, Any] = {
            "type": "progress",
            "probe": message.probe,
            "fraction": message.fraction,
            "figure": message.figure,
            "unit": message.unit,
            "message": message.message,
            "device": message.device,
        }
    elif isinstance(message, Result):
        body = {
            "type": "result",
            "probe": message.probe,
            "device": message.device,
            "ok": message.ok,
            "faulty": message.faulty,
            "figures": dict(message.figures),
            "verdict": message.verdict,
            "details": list(message.details),
        }
    else:
        body = {
            "type": "error",
            "probe": message.probe,
            "code": message.code,
            "message": message.message,
            "stderr_tail": message.stderr_tail,
        }
    return {"v": PROTOCOL_VERSION, **body}


def to_line(message: Message) -> str:
    """One JSON object without newlines inside; NaN and infinities become null (JSON has no such numbers)."""
    return json.dumps(_finite(to_dict(message)), ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


def _get(body: dict[str, Any], key: str, kinds: type | tuple[type, ...], what: str) -> Any:
    if key not in body:
        raise ProtocolError(f"{what} message lacks {key!r}")
    value = body[key]
    # bool is an int in Python; a number field must not accept true/false.
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in _as_tuple(kinds)):
        raise ProtocolError(f"{what} message: {key!r} has the wrong type ({type(value).__name__})")
    return value


def _as_tuple(kinds: type | tuple[type, ...]) -> tuple[type, ...]:
    return kinds if isinstance(kinds, tuple) else (kinds,)


def _number(value: Any) -> bool:
    return value is None or (isinstance(value, (int, float)) and not isinstance(value, bool))


def from_dict(body: Any) -> Message:
    if not isinstance(body, dict):
        raise ProtocolError(f"not a JSON object but {type(body).__name__}")
    version = body.get("v")
    if version != PROTOCOL_VERSION:
        raise ProtocolError(f"protocol version {version!r}, expected {PROTOCOL_VERSION}")
    kind = body.get("type")
    probe = body.get("probe")
    if probe not in PROBES:
        raise ProtocolError(f"unknown probe {probe!r} (expected one of {', '.join(PROBES)})")
    if kind == "progress":
        fraction = _get(body, "fraction", (int, float), "progress")
        figure = body.get("figure")
        if not _number(figure):
            raise ProtocolError("progress message: 'figure' is not a number")
        device = body.get("device", "")
        if not isinstance(device, str):
            raise ProtocolError(f"progress message: 'device' has the wrong type ({type(device).__name__})")
        return Progress(
            probe=probe,
            fraction=min(1.0, max(0.0, float(fraction))),
            figure=None if figure is None else float(figure),
            unit=_get(body, "unit", str, "progress"),
            message=_get(body, "message", str, "progress"),
            device=device,
        )
    if kind == "result":
        figures = _get(body, "figures", dict, "result")
        bad = [k for k, v in figures.items() if not _number(v)]
        if bad:
            raise ProtocolError(f"result message: figure {bad[0]!r} is not a number")
        details = _get(body, "details", list, "result")
        if not all(isinstance(d, str) for d in details):
            raise ProtocolError("result message: 'details' must be a list of strings")
        return Result(
            probe=probe,
            device=_get(body, "device", str, "result"),
            ok=_get(body, "ok", bool, "result"),
            faulty=_get(body, "faulty", bool, "result"),
            figures={k: None if v is None else float(v) for k, v in figures.items()},
            verdict=_get(body, "verdict", str, "result"),
            details=tuple(details),
        )
    if kind == "error":
        code = body.get("code")
        if code not in ERROR_CODES:
            raise ProtocolError(f"error message: unknown code {code!r}")
        return Error(
            probe=probe,
            code=code,
            message=_get(body, "message", str, "error"),
            stderr_tail=_get(body, "stderr_tail", str, "error"),
        )
    raise ProtocolError(f"unknown message type {kind!r} (expected progress, result or error)")


def parse_line(line: str) -> Message:
    """One stdout line -> a message; ProtocolError (one line, no traceback) for anything else."""
    text = line.strip()
    if not text:
        raise ProtocolError("empty line")
    try:
        body = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ProtocolError(f"not JSON ({exc.msg} at column {exc.colno})") from None
    return from_dict(body)
