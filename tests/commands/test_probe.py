"""`gputui probe`: output, exit codes and usage errors, with the real worker on the CPU."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gputui.cli import build_parser, main
from gputui.commands import probe as command
from gputui.probes.judge import pcie_link
from gputui.probes.protocol import Error, Result
from gputui.probes.reference import PcieLink
from gputui.probes.worker import FAULT_ENV
from gputui.sources.base import SourceUnavailable
from gputui.sources.nvml import source as nvml_source
from tests.fake_pynvml import MIB, FakeGpu, FakeNvml


@pytest.fixture(autouse=True)
def no_driver(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same answer on every machine: no NVML, so nothing is watched (a GPU box would watch its GPU)."""

    def unavailable() -> None:
        raise SourceUnavailable("no NVIDIA driver (test)")

    monkeypatch.setattr(nvml_source, "_import_pynvml", unavailable)


def test_disk_json_is_the_protocol_result(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "f.bin").write_bytes(b"x" * 4096)
    assert main(["probe", "disk", "--path", str(tmp_path), "--json"]) == 0
    body = json.loads(capsys.readouterr().out)
    assert {"v", "type", "probe", "device", "ok", "faulty", "figures", "verdict", "details"} == set(body)
    assert body["type"] == "result" and body["figures"]["bytes"] == 4096


def test_disk_text_gives_the_bytes_read_as_a_size(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "f.bin").write_bytes(b"x" * 3 * MIB)
    main(["probe", "disk", "--path", str(tmp_path)])
    assert "\n  bytes                        3 MiB\n" in capsys.readouterr().out


def test_stress_on_the_cpu_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["probe", "stress", "--cpu", "--seconds", "0.3", "--size", "32", "--dtype", "fp32"])
    out = capsys.readouterr().out
    assert code == 0
    assert "stress probe on cpu" in out and "CPU RUN" in out
    assert "[100%] CPU RUN" in out and "FLOP/s" in out
    assert "peak_tflops                  n/a" in out
    assert out.rstrip().endswith("result: ok")


def test_a_crash_exits_5_with_the_stderr_tail(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(FAULT_ENV, "crash")
    assert main(["probe", "disk"]) == command.EXIT_PROBE_FAILED
    err = capsys.readouterr().err
    assert "gputui: disk read probe crashed: the probe worker ended with signal SIGABRT" in err
    assert "| simulated crash in the probe worker" in err


@pytest.mark.parametrize("json_out", [[], ["--json"]], ids=["text", "json"])
def test_a_missing_directory_is_a_usage_error(
    tmp_path: Path, json_out: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """Said as every usage error is, not with the protocol's code ("failed (bad_args)")."""
    assert main(["probe", "disk", "--path", str(tmp_path / "nope"), *json_out]) == 2
    assert capsys.readouterr().err == f"gputui: error: no such directory: {tmp_path / 'nope'}\n"


@pytest.mark.parametrize(
    ("error", "said"),
    [
        (
            Error("stress", "no_torch", "the stress probe needs torch (No module named 'torch'): install torch"),
            "gputui: the stress probe needs torch (No module named 'torch'): install torch",
        ),
        (Error("pcie", "timeout", "no result within 120 s"), "gputui: PCIe probe timed out: no result within 120 s"),
        (Error("membw", "cancelled", "the probe was cancelled"), "gputui: memory bandwidth probe cancelled"),
    ],
    ids=["no-torch", "timeout", "cancelled"],
)
def test_a_probe_that_could_not_run_is_said_in_words(
    error: Error, said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    command._print_result(error, None)
    assert capsys.readouterr().err == said + "\n"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["probe"], "the following arguments are required"),
        (["probe", "burn"], "invalid choice: 'burn'"),
        (["probe", "pcie", "--max-bytes", "lots"], "not a size: 'lots'"),
        (["probe", "stress", "--gpu", "-1"], "not a GPU index: '-1'"),
        (["probe", "stress", "--seconds", "0"], "must be greater than 0"),
        (["probe", "stress", "--size", "big"], "not a matrix size: 'big'"),
        (["probe", "stress", "--dtype", "int8"], "invalid choice: 'int8'"),
    ],
)
def test_usage_errors(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(argv)
    err = capsys.readouterr().err
    assert info.value.code == 2
    assert message in err and err.count("\n") == 1


@pytest.mark.parametrize(
    ("final", "worsened", "lost", "code"),
    [
        (Result("stress", "cuda:0 X", True, {}, "healthy"), False, None, 0),
        (Result("stress", "cuda:0 X", True, {}, "healthy"), True, None, 1),
        (Result("pcie", "cuda:0 X", False, {}, "slow"), False, None, 1),
        (Result("stress", "cuda:0 X", False, {}, "FAULTY", faulty=True), False, None, 4),
        (Result("stress", "cuda:0 X", True, {}, "healthy"), True, 12.0, 4),
        (Error("stress", "timeout", "no result"), False, None, 5),
        (Error("pcie", "no_torch", "no torch"), False, None, 5),
        (Error("disk", "bad_args", "no such directory"), False, None, 2),
    ],
)
def test_exit_codes(final: Result | Error, worsened: bool, lost: float | None, code: int) -> None:
    assert command.exit_code(final, worsened, lost) == code


def test_watcher_samples_the_gpu_and_survives_driver_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeNvml([FakeGpu(pcie_gen=3, pcie_width=8)])
    monkeypatch.setattr(nvml_source, "_import_pynvml", lambda: fake)
    args = build_parser().parse_args(["probe", "pcie"])
    watcher, note = command._open_watcher(args)
    assert watcher is not None and note == ""
    try:
        watcher.poll()
        watcher.poll()
        assert len(watcher.snapshots) == 2
        assert pcie_link(watcher.first, 0) == PcieLink(3, 8, 5, 16)

        def broken() -> None:
            raise RuntimeError("driver went away")

        monkeypatch.setattr(watcher._source, "sample", broken)
        watcher.poll()
        assert watcher.stopped == "GPU readings stopped: driver went away"
        assert len(watcher.snapshots) == 2
    finally:
        watcher.close()


def test_no_watcher_without_a_driver_or_for_disk() -> None:
    parser = build_parser()
    watcher, note = command._open_watcher(parser.parse_args(["probe", "stress"]))
    assert watcher is None and note == "not watched through NVML: no NVIDIA driver (test)"
    assert command._open_watcher(parser.parse_args(["probe", "disk"])) == (None, "")
