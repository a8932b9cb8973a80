"""The JSON-lines protocol: every message survives a round trip, and each kind of garbage is a one-line error."""

from __future__ import annotations

import json

import pytest

from gputui.probes.protocol import Error, Progress, ProtocolError, Result, parse_line, to_dict, to_line

RESULT = Result(
    probe="pcie",
    device="cuda:0 NVIDIA H100 80GB HBM3",
    ok=False,
    figures={"h2d_pinned_gb_s": 11.8, "link_gb_s": None},
    verdict="H2D 11.8 GB/s = 19% of Gen5 x16: the link trained at Gen3 x8, see pcie_downgrade",
    details=("pageable: H2D 6.0 GB/s",),
)


@pytest.mark.parametrize(
    "message",
    [
        Progress("stress", 0.5, 812.5, "TFLOP/s", "600 results checked"),
        Progress("disk", 1.0),
        Progress("membw", 0.2, 5.1, "GB/s", "copy 4/20", "cpu"),
        RESULT,
        Result("stress", "cpu", False, {"mismatches": 3.0}, "FAULTY: ...", faulty=True),
        Error("membw", "failed", "RuntimeError: boom", "Traceback ...\n"),
    ],
)
def test_round_trip(message: Progress | Result | Error) -> None:
    line = to_line(message)
    assert "\n" not in line
    assert parse_line(line + "\n") == message


def test_result_json_shape() -> None:
    body = json.loads(to_line(RESULT))
    assert body == {
        "v": 1,
        "type": "result",
        "probe": "pcie",
        "device": "cuda:0 NVIDIA H100 80GB HBM3",
        "ok": False,
        "faulty": False,
        "figures": {"h2d_pinned_gb_s": 11.8, "link_gb_s": None},
        "verdict": RESULT.verdict,
        "details": ["pageable: H2D 6.0 GB/s"],
    }
    assert to_dict(RESULT)["figures"] is not RESULT.figures


def test_non_finite_numbers_become_null() -> None:
    line = to_line(Result("membw", "cpu", True, {"pct_of_peak": float("nan"), "x": float("inf")}, "v"))
    assert json.loads(line)["figures"] == {"pct_of_peak": None, "x": None}


def test_fraction_is_clamped() -> None:
    line = '{"v":1,"type":"progress","probe":"disk","fraction":1.5,"figure":null,"unit":"","message":""}'
    assert parse_line(line) == Progress("disk", 1.0)


def test_a_progress_line_without_its_device_still_reads() -> None:
    """Recordings made before progress lines said where they ran: the device is then not said, not "cpu"."""
    line = '{"v":1,"type":"progress","probe":"stress","fraction":0.5,"figure":612,"unit":"TFLOP/s","message":""}'
    progress = parse_line(line)
    assert isinstance(progress, Progress) and progress.device == "" and not progress.on_cpu
    with pytest.raises(ProtocolError, match="'device' has the wrong type"):
        parse_line(line.replace('"message":""', '"message":"","device":0'))


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ("", "empty line"),
        ("hello world", "not JSON"),
        ("[1, 2]", "not a JSON object"),
        ('{"type":"progress","probe":"disk","fraction":0}', "protocol version None"),
        ('{"v":2,"type":"progress","probe":"disk","fraction":0}', "protocol version 2"),
        ('{"v":1,"type":"progress","probe":"gpu-burn","fraction":0}', "unknown probe 'gpu-burn'"),
        ('{"v":1,"type":"hello","probe":"disk"}', "unknown message type 'hello'"),
        ('{"v":1,"type":"progress","probe":"disk","unit":"","message":""}', "lacks 'fraction'"),
        ('{"v":1,"type":"progress","probe":"disk","fraction":"half","unit":"","message":""}', "'fraction' has the"),
        ('{"v":1,"type":"progress","probe":"disk","fraction":true,"unit":"","message":""}', "'fraction' has the"),
        ('{"v":1,"type":"progress","probe":"disk","fraction":0,"figure":"x","unit":"","message":""}', "'figure'"),
        (
            '{"v":1,"type":"result","probe":"disk","device":"cpu","ok":true,"faulty":false,'
            '"figures":{"a":"fast"},"verdict":"","details":[]}',
            "figure 'a' is not a number",
        ),
        (
            '{"v":1,"type":"result","probe":"disk","device":"cpu","ok":"yes","faulty":false,'
            '"figures":{},"verdict":"","details":[]}',
            "'ok' has the wrong type",
        ),
        (
            '{"v":1,"type":"result","probe":"disk","device":"cpu","ok":true,"faulty":false,'
            '"figures":{},"verdict":"","details":[1]}',
            "list of strings",
        ),
        ('{"v":1,"type":"error","probe":"disk","code":"oops","message":"","stderr_tail":""}', "unknown code 'oops'"),
    ],
)
def test_garbage_lines_give_one_line_errors(line: str, reason: str) -> None:
    with pytest.raises(ProtocolError) as info:
        parse_line(line)
    assert reason in str(info.value)
    assert "\n" not in str(info.value)
