"""`gputui diagnose`: the JSON shape, the text, and the exit codes a health-check script relies on."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from gputui.cli import main
from gputui.model import Snapshot, SystemInfo
from gputui.session import builder
from gputui.sources.base import SourceUnavailable
from gputui.sources.host import torch_cuda as torch_probe
from gputui.sources.sim.source import SimulatedSource

pytestmark = pytest.mark.usefixtures("no_user_config")


def diagnose_json(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, object]]:
    code = main(["diagnose", "--json", *args])
    return code, json.loads(capsys.readouterr().out)


def test_json_shape_and_critical_exit_code(capsys: pytest.CaptureFixture[str]) -> None:
    code, data = diagnose_json(capsys, "--demo", "thermal", "--seconds", "20")
    assert code == 4
    keys = ["schema", "system", "verdict", "findings", "groups", "pending", "notices", "processes", "account"]
    assert list(data) == keys
    first = data["processes"][0]  # type: ignore[index]
    assert {"gpu", "pid", "name", "user", "pod", "namespace", "k8s_container", "job_id"} <= set(first)
    assert first["pod"] is None and first["job_id"] is None  # the simulated machine runs no cluster
    assert data["schema"] == 1
    assert data["system"]["source"] == "simulated" and data["system"]["scenario"] == "thermal"  # type: ignore[index]
    [finding] = data["findings"]  # type: ignore[misc]
    assert list(finding) == [
        "rule",
        "variant",
        "severity",
        "gpus",
        "pids",
        "title",
        "evidence",
        "advice",
        "started_at",
        "ended_at",
        "duration_s",
    ]
    assert (finding["rule"], finding["severity"], finding["gpus"]) == ("thermal_throttle", "critical", [1])
    assert {"key", "label", "value", "unit", "window"} == set(finding["evidence"][0])


def test_the_verdict_comes_first(capsys: pytest.CaptureFixture[str]) -> None:
    code, data = diagnose_json(capsys, "--demo", "starved-io")
    verdict = data["verdict"]
    assert code == 1
    assert verdict["class"] == "input_bound" and verdict["gpus"] == [0, 1, 2, 3]  # type: ignore[index]
    assert "waiting for data (the disk)" in verdict["summary"]  # type: ignore[index]
    main(["diagnose", "--demo", "healthy"])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("SIMULATED")  # the label before anything else
    assert lines[1].startswith("VERDICT  GPU-bound: all 4 GPUs 9")


def test_a_finding_that_closed_during_the_run_is_reported_and_counts(capsys: pytest.CaptureFixture[str]) -> None:
    """The tour throttles GPU 1 from 60 to 90 s, then caps every GPU's power: a 100 s check saw both."""
    code, data = diagnose_json(capsys, "--demo", "tour", "--seconds", "100")
    findings = data["findings"]
    [thermal] = [f for f in findings if f["rule"] == "thermal_throttle"]  # type: ignore[attr-defined,index]
    assert thermal["ended_at"] is not None and thermal["ended_at"] > thermal["started_at"]
    assert all(f["ended_at"] is None for f in findings if f["rule"] == "power_cap")  # type: ignore[attr-defined,index]
    assert code == 4
    main(["diagnose", "--demo", "tour", "--seconds", "100"])
    [line] = [x for x in capsys.readouterr().out.splitlines() if "[thermal_throttle" in x]
    assert "was: " in line and line.endswith("]")


def test_a_check_whose_only_finding_closed_still_fails(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Exit codes come from the worst finding seen, not the worst still open at the end."""
    from gputui.sources.sim import source as simulated

    class ThermalThenCool(SimulatedSource):
        def scenario_at(self, elapsed: float) -> tuple[str, float]:
            return ("thermal" if elapsed < 20 else "healthy"), elapsed

    monkeypatch.setattr(simulated, "SimulatedSource", ThermalThenCool)
    code, data = diagnose_json(capsys, "--demo", "healthy", "--seconds", "40")
    assert code == 4
    assert [(f["rule"], f["ended_at"] is not None) for f in data["findings"]] == [("thermal_throttle", True)]  # type: ignore[attr-defined,index]


def test_the_sources_notices_are_part_of_the_answer(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A health check that could not watch for XIDs must say so, once, however many samples said it."""
    from gputui.sources.sim import source as simulated

    class NoXid(SimulatedSource):
        def sample(self) -> Snapshot:
            return replace(super().sample(), events=("XID events are not collected: NVML says not supported",))

    monkeypatch.setattr(simulated, "SimulatedSource", NoXid)
    _, data = diagnose_json(capsys, "--demo", "healthy")
    assert data["notices"] == ["XID events are not collected: NVML says not supported"]
    main(["diagnose", "--demo", "healthy"])
    out = capsys.readouterr().out
    assert out.count("notice: XID events are not collected") == 1


def test_a_process_whose_files_are_refused_is_named_with_what_is_missing_and_how_to_read_it(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """gputui without CAP_SYS_PTRACE beside a root job: the job is judged on what could be read, and the check says
    which files the kernel refused and how to read them, in each language; never "another PID namespace"."""
    from gputui.sources.sim import source as simulated

    class Refused(SimulatedSource):
        def sample(self) -> Snapshot:
            snap = super().sample()
            first, *rest = snap.host.processes
            refused = replace(first, user="root", unreadable=("fd", "io"))
            return replace(snap, host=replace(snap.host, processes=(refused, *rest)))

    monkeypatch.setattr(simulated, "SimulatedSource", Refused)
    _, data = diagnose_json(capsys, "--demo", "healthy", "--seconds", "2")
    pid = data["processes"][0]["pid"]  # type: ignore[index]
    assert data["processes"][0]["unreadable"] == ["fd", "io"] and data["processes"][0]["user"] == "root"  # type: ignore[index]
    main(["diagnose", "--demo", "healthy", "--seconds", "2"])
    out = capsys.readouterr().out
    assert (
        f"notice: PID {pid} (python3, user root) holds a GPU, but the kernel refuses gputui its open files, I/O "
        "counters" in out
    )
    assert "Run gputui as root, or give it CAP_SYS_PTRACE" in out and "namespace" not in out
    main(["diagnose", "--demo", "healthy", "--seconds", "2", "--lang", "zh"])
    out = capsys.readouterr().out
    assert f"PID {pid}（python3，用户 root）占用着 GPU，但内核不允许 gputui 读取它的打开的文件、I/O 计数" in out


def test_warnings_exit_1(capsys: pytest.CaptureFixture[str]) -> None:
    code, data = diagnose_json(capsys, "--demo", "contention")
    assert code == 1
    assert [f["rule"] for f in data["findings"]] == ["gpu_contention"]  # type: ignore[attr-defined]


def test_an_nvswitch_board_with_every_gpu_short_alike_is_critical(capsys: pytest.CaptureFixture[str]) -> None:
    """No GPU has all its links to be held against: on NVSwitch the fabric is at fault, and the check fails."""
    code, data = diagnose_json(capsys, "--demo", "nvswitch")
    assert code == 4
    findings = data["findings"]
    assert [(f["rule"], f["severity"], f["gpus"]) for f in findings] == [  # type: ignore[attr-defined,index]
        ("nvlink_down", "critical", [gpu]) for gpu in range(4)
    ]
    assert data["verdict"]["class"] == "interconnect"  # type: ignore[index]
    assert "every peer short too: the NVSwitch fabric" in findings[0]["title"]  # type: ignore[index]


def test_a_row_of_nvswitch_gpus_says_whose_links_are_whose(capsys: pytest.CaptureFixture[str]) -> None:
    """The row of GPUs 0-3 gives each GPU's links once, under its number, not every GPU's peers run together."""
    main(["diagnose", "--demo", "nvswitch"])
    out = capsys.readouterr().out
    assert "NVLinks up: 16/18 | NVLinks up by GPU: 0-3: 16/18\n" in out


def test_healthy_exits_0_and_says_simulated(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["diagnose", "--demo", "healthy"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("SIMULATED data (scenario: healthy)")
    assert "No findings above info" in out


def test_text_names_rule_evidence_and_advice(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["diagnose", "--demo", "pcie", "--gpus", "1"]) == 4
    out = capsys.readouterr().out
    assert (
        "CRIT  GPU 1: PCIe link at Gen3 x8 under load (max Gen5 x16)  [pcie_downgrade, for 15s]" in out
    )  # 5 s of warm-up, then 10
    assert "PCIe link: Gen3 x8 |" in out and "advice: " in out and "nvidia-smi topo -m" in out  # "now" goes unsaid


def test_chinese_output(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["diagnose", "--demo", "mismatch", "--lang", "zh"]) == 1
    out = capsys.readouterr().out
    assert out.startswith("SIMULATED") and "驱动只支持 CUDA 12.2" in out and "建议" in out


def test_chinese_from_the_locale(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LANG", "zh_CN.UTF-8")
    _, data = diagnose_json(capsys, "--demo", "mismatch")
    assert "驱动" in data["findings"][0]["title"]  # type: ignore[index]


@pytest.fixture
def no_driver(monkeypatch: pytest.MonkeyPatch) -> None:
    """A machine whose driver cannot be read, for the reason a version mismatch gives."""

    def unavailable(args: object, **_: object) -> None:
        raise SourceUnavailable("NVIDIA driver/library version mismatch (reboot or reload the nvidia module)")

    monkeypatch.setattr(builder, "open_source", unavailable)


@pytest.mark.usefixtures("no_driver")
def test_no_driver_exits_3_and_prints_the_finding(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["diagnose", "--json"])
    captured = capsys.readouterr()
    assert code == 3
    data = json.loads(captured.out)
    assert data["system"] is None
    assert data["verdict"]["class"] == "degraded"
    [finding] = data["findings"]
    assert (finding["rule"], finding["severity"]) == ("nvml_unavailable", "critical")
    assert "version mismatch" in finding["evidence"][0]["value"] and "version mismatch" in captured.err


@pytest.mark.usefixtures("no_driver")
def test_no_driver_in_text_says_the_reason_once(capsys: pytest.CaptureFixture[str]) -> None:
    """The finding's evidence says why; stderr adds only the way to the simulated machine."""
    assert main(["diagnose"]) == 3
    captured = capsys.readouterr()
    assert (captured.out + captured.err).count("version mismatch") == 1
    assert "reason: NVIDIA driver/library version mismatch" in captured.out
    assert captured.err == "gputui: to see gputui on a simulated machine, add --demo\n"


class LiveLike:
    """The simulated machine dressed as a live one, one simulated second per sample."""

    def __init__(self) -> None:
        self.t = 0.0
        self.inner = SimulatedSource(scenario="healthy", clock=lambda: self.t)
        self.closed = False

    def open(self) -> SystemInfo:
        return replace(self.inner.open(), source="nvml")

    def sample(self) -> Snapshot:
        self.t += 1.0
        snap = self.inner.sample()
        return replace(snap, system=replace(snap.system, source="nvml", torch_cuda_version=None))

    def close(self) -> None:
        self.closed = True


def test_live_source_reads_torch_cuda_and_checks_it(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    source = LiveLike()
    monkeypatch.setattr(builder, "open_source", lambda choice: (source, source.open(), None))
    monkeypatch.setattr(torch_probe, "torch_cuda_version", lambda: "13.0")
    code, data = diagnose_json(capsys, "--seconds", "0.5", "--interval", "0.25")
    assert code == 4
    assert [(f["rule"], f["severity"]) for f in data["findings"]] == [("cuda_mismatch", "critical")]  # type: ignore[attr-defined]
    assert data["system"]["torch_cuda_version"] == "13.0"  # type: ignore[index]
    assert source.closed


def test_config_can_disable_a_rule(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "c.toml"
    config.write_text("[diagnostics]\ndisabled = ['gpu_contention']\n", encoding="utf-8")
    assert main(["diagnose", "--demo", "contention"]) == 1
    assert "[gpu_contention, for 15s]" in capsys.readouterr().out  # 5 s of warm-up, then 10
    assert main(["diagnose", "--demo", "contention", "--config", str(config)]) == 0
    out = capsys.readouterr().out
    assert "gpu_contention" not in out and "Contended" not in out
    assert "No findings above info: the GPUs look healthy." in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--lang", "fr"], "invalid choice: 'fr'"),
        (["--seconds", "0"], "must be greater than 0"),
        (["--demo", "nope"], "unknown scenario 'nope'"),
        (["--demo", "healthy", "--gpus", "9"], "GPU 9 does not exist"),
        (["--demo", "healthy", "--config", "/nonexistent/c.toml"], "no such config file"),
    ],
)
def test_usage_errors_exit_2_with_one_line(args: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    try:
        code = main(["diagnose", *args])
    except SystemExit as exit_:
        code = int(exit_.code or 0)
    err = capsys.readouterr().err
    assert code == 2
    assert message in err and len(err.strip().splitlines()) == 1


def test_bad_config_key_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "c.toml"
    config.write_text("[diagnostics.thresholds]\nbusy = 1\n", encoding="utf-8")
    assert main(["diagnose", "--demo", "healthy", "--config", str(config)]) == 2
    assert "unknown key 'diagnostics.thresholds.busy'" in capsys.readouterr().err


def test_a_closed_finding_is_printed_as_closed_by_diagnose_and_by_each_fleet_node() -> None:
    """One printer for `diagnose` and `diagnose --prometheus`: a finding that closed during the window says when
    it held (the fleet's nodes printed it as if still open); one still open says for how long."""
    from gputui.diagnostics.findings import Finding, Severity
    from gputui.diagnostics.groups import group_findings, sort_groups
    from gputui.text.findings_text import finding_lines

    closed = Finding(
        "thermal_throttle",
        Severity.WARNING,
        "hot",
        "cool it",
        gpus=(0,),
        started_at=100.0,
        duration_s=30.0,
        ended_at=130.0,
    )
    still = Finding("pcie_downgrade", Severity.CRITICAL, "slow link", "reseat", gpus=(1,), duration_s=42.0)
    lines = finding_lines(sort_groups(group_findings((still, closed), "en")), "en", None)
    assert lines[0].endswith("slow link  [pcie_downgrade, for 42s]")
    assert "hot  [thermal_throttle, was: " in lines[2] and lines[3].endswith("advice: cool it")
