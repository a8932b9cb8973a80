"""`gputui snapshot`: the table, the JSON keys later work relies on, and every bad input as a one-line error."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pynvml
import pytest

from gputui import model
from gputui.cli import main
from gputui.serialize import SCHEMA_VERSION, snapshot_from_dict, snapshot_to_dict
from gputui.sources.base import SourceUnavailable
from gputui.sources.nvml.source import NvmlSource
from gputui.sources.sim.scenarios import SCENARIOS
from gputui.sources.sim.source import SimulatedSource
from gputui.text.snapshot_text import print_snapshot
from tests.snapshots import system_info

GPU_KEYS = {
    "index",
    "name",
    "uuid",
    "utilization_gpu_pct",
    "utilization_memory_pct",
    "sm_clock_mhz",
    "max_sm_clock_mhz",
    "memory_clock_mhz",
    "temperature_c",
    "temperature_slowdown_c",
    "power_w",
    "power_limit_w",
    "power_default_limit_w",
    "memory_used_bytes",
    "memory_total_bytes",
    "pcie_gen",
    "pcie_max_gen",
    "pcie_width",
    "pcie_max_width",
    "pcie_tx_bytes_s",
    "pcie_rx_bytes_s",
    "fan_pct",
    "pstate",
    "clock_event_reasons",
    "processes",
}
PROCESS_KEYS = {"pid", "used_memory_bytes", "name", "cpu_pct", "children"}
HOST_KEYS = {
    "cpu_pct_per_core",
    "iowait_pct",
    "memory_used_bytes",
    "memory_total_bytes",
    "swap_used_bytes",
    "disk_read_bytes_s",
    "disk_write_bytes_s",
    "net_rx_bytes_s",
    "net_tx_bytes_s",
}
SYSTEM_KEYS = {"hostname", "driver_version", "cuda_driver_version", "source"}


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    try:
        code = main(list(args))
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def test_table_is_labelled_and_ascii(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = cli(capsys, "snapshot", "--demo", "healthy")
    assert code == 0 and err == ""
    assert out.startswith("SIMULATED (scenario healthy)")
    assert out.rstrip().endswith("SIMULATED (scenario healthy) - not live data from this machine")
    for index in range(4):
        assert f"GPU {index}  simulated H100 80GB HBM3" in out
    assert "1980 / 1980 MHz" in out and "Gen5 x16 / Gen5 x16" in out
    assert "python3 train.py" in out and "alice" in out
    assert out.isascii()


def test_json_has_the_documented_keys(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(capsys, "snapshot", "--demo", "contention", "--json")
    assert code == 0
    data = json.loads(out)
    assert data["schema"] == SCHEMA_VERSION
    assert set(data["system"]) >= SYSTEM_KEYS and data["system"]["source"] == "simulated"
    assert data["system"]["scenario"] == "contention"
    assert set(data["host"]) >= HOST_KEYS
    assert [gpu["index"] for gpu in data["gpus"]] == [0, 1, 2, 3]
    for gpu in data["gpus"]:
        assert set(gpu) >= GPU_KEYS
        assert isinstance(gpu["clock_event_reasons"], list)
        assert gpu["fan_pct"] is None  # not reported: null, never 0
        for proc in gpu["processes"]:
            assert set(proc) >= PROCESS_KEYS
    users = {proc["user"] for proc in data["gpus"][0]["processes"]}
    assert users == {"alice", "bob"}


def test_gpu_selection(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(capsys, "snapshot", "--demo", "idle", "--gpus", "0,2", "--json")
    assert code == 0
    assert [gpu["index"] for gpu in json.loads(out)["gpus"]] == [0, 2]
    code, out, _ = cli(capsys, "snapshot", "--demo", "idle", "--gpus", "2")
    assert code == 0 and "GPU 2 " in out and "GPU 0 " not in out


def one_line_error(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


def test_unknown_scenario(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = cli(capsys, "snapshot", "--demo", "melting")
    assert code == 2 and out == ""
    assert "unknown scenario 'melting'" in one_line_error(err)


def test_gpu_that_does_not_exist(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = cli(capsys, "snapshot", "--demo", "healthy", "--gpus", "0,9")
    assert code == 2 and out == ""
    assert "GPU 9" in one_line_error(err)


@pytest.mark.parametrize("gpus", ["a,b", "-1", ","])
def test_malformed_gpu_list(capsys: pytest.CaptureFixture[str], gpus: str) -> None:
    code, _, err = cli(capsys, "snapshot", "--demo", "healthy", f"--gpus={gpus}")
    assert code == 2 and "GPU indices" in one_line_error(err)


@pytest.mark.parametrize("interval", ["0", "-1", "soon"])
def test_bad_interval(capsys: pytest.CaptureFixture[str], interval: str) -> None:
    code, _, err = cli(capsys, f"--interval={interval}", "snapshot", "--demo")
    assert code == 2 and "interval" in one_line_error(err)


def test_no_driver_exits_3_with_reason_and_hint(capsys: pytest.CaptureFixture[str], monkeypatch: Any) -> None:
    reason = "the NVIDIA driver is not installed (libnvidia-ml.so.1 not found)"

    def refuse(self: NvmlSource) -> model.SystemInfo:
        raise SourceUnavailable(reason)

    monkeypatch.setattr(NvmlSource, "open", refuse)
    code, out, err = cli(capsys, "snapshot")
    assert code == 3 and out == ""
    assert reason in err and "--demo" in err


def test_fallback_reason_is_shown(capsys: pytest.CaptureFixture[str]) -> None:
    source = SimulatedSource("idle", fallback_reason="NVIDIA driver not loaded")
    source.open()
    print_snapshot(source.sample())
    out = capsys.readouterr().out
    assert "the NVIDIA driver could not be read: NVIDIA driver not loaded" in out
    assert "idle: no jobs" in out


def test_missing_values_show_as_na(capsys: pytest.CaptureFixture[str]) -> None:
    source = SimulatedSource("healthy", gpu_count=1)
    source.open()
    snap = source.sample()
    bare = model.GpuSample(index=0, timestamp=snap.timestamp)
    print_snapshot(dataclasses.replace(snap, gpus=(bare,), host=model.HostSample(0.0)))
    out = capsys.readouterr().out
    assert "n/a / 1980 MHz" in out and "clock events: n/a" in out and "iowait n/a" in out
    assert "host  CPU n/a  iowait" in out and "0 cores" not in out  # no per-core figures: not a host of 0 cores
    assert " 0%" not in out


@pytest.mark.parametrize(
    ("changes", "label"),
    [
        ({"source": "replay", "recorded_source": "simulated"}, "SIMULATED (replay, scenario healthy)"),
        ({"source": "remote", "remote_source": "simulated"}, "SIMULATED (remote, scenario healthy)"),
        ({"source": "replay", "recorded_source": "nvml", "scenario": None}, "REPLAY"),
    ],
)
def test_banner_names_where_data_came_from(
    capsys: pytest.CaptureFixture[str], changes: dict[str, Any], label: str
) -> None:
    source = SimulatedSource("healthy", gpu_count=1)
    source.open()
    snap = source.sample()
    print_snapshot(dataclasses.replace(snap, system=dataclasses.replace(snap.system, **changes)))
    assert capsys.readouterr().out.startswith(f"{label} - not live data from this machine")


def test_live_data_has_no_banner(capsys: pytest.CaptureFixture[str]) -> None:
    source = SimulatedSource("healthy", gpu_count=1)
    source.open()
    snap = source.sample()
    live = dataclasses.replace(snap, system=system_info(hostname="node1"), gpu_info=(), gpus=())
    print_snapshot(live)
    out = capsys.readouterr().out
    assert "SIMULATED" not in out and out.startswith("node1")


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_serialize_round_trip(scenario: str) -> None:
    clock = iter([0.0, 7.5])
    source = SimulatedSource(scenario, clock=lambda: next(clock))
    source.open()
    source.sample()
    snap = source.sample()
    assert snapshot_from_dict(json.loads(json.dumps(snapshot_to_dict(snap)))) == snap


def test_clock_event_bits_match_pynvml() -> None:
    expected = {
        "gpu_idle": pynvml.nvmlClocksEventReasonGpuIdle,
        "applications_clocks": pynvml.nvmlClocksEventReasonApplicationsClocksSetting,
        "sw_power_cap": pynvml.nvmlClocksEventReasonSwPowerCap,
        "hw_slowdown": pynvml.nvmlClocksEventReasonHwSlowdown,
        "sync_boost": pynvml.nvmlClocksEventReasonSyncBoost,
        "sw_thermal_slowdown": pynvml.nvmlClocksEventReasonSwThermalSlowdown,
        "hw_thermal_slowdown": pynvml.nvmlClocksEventReasonHwThermalSlowdown,
        "hw_power_brake": pynvml.nvmlClocksEventReasonHwPowerBrakeSlowdown,
        "display_clocks": pynvml.nvmlClocksEventReasonDisplayClockSetting,
    }
    assert {name: bit for bit, name in model.CLOCK_EVENT_REASONS} == expected
    every = 0
    for bit in expected.values():
        every |= bit
    assert every == pynvml.nvmlClocksEventReasonAll


def test_a_mig_gpu_prints_its_instances_and_each_process_s_instance(capsys: pytest.CaptureFixture[str]) -> None:
    """`snapshot` on a split GPU: "MIG" where the missing utilization would read n/a, each instance with its
    activity, memory, processes and UUID, and the instance of each process."""
    source = SimulatedSource("mig-shared-slice", gpu_count=1)
    source.open()
    print_snapshot(source.sample())
    out = capsys.readouterr().out
    assert "| util       | MIG: per instance, below |" in out and "n/a (mem n/a)" not in out
    first, second = (line for line in out.splitlines() if line.startswith("  MIG 3g.40gb"))
    assert first.startswith("  MIG 3g.40gb (GI 1)  60 SMs  SM active ") and "GI 2" in second
    assert "2 processes" in out and "  1 process\n" in out and "MIG-" in out
    assert out.count("[MIG 3g.40gb (GI 1)]") == 2 and out.count("[MIG 3g.40gb (GI 2)]") == 1


def test_a_pending_mig_change_is_printed(capsys: pytest.CaptureFixture[str]) -> None:
    source = SimulatedSource("mig-pending", gpu_count=1)
    source.open()
    print_snapshot(source.sample())
    assert "MIG mode off now, on after the next GPU reset" in capsys.readouterr().out


def test_a_gpu_name_and_error_are_printed_as_written_never_read_as_markup(capsys: pytest.CaptureFixture[str]) -> None:
    """A remote exporter names its GPUs (the modelName label) and a recording carries each GPU's error: Rich markup in
    either is text, not a tag (`[/]` closing nothing raised MarkupError)."""
    source = SimulatedSource("healthy", gpu_count=2)
    source.open()
    snap = source.sample()
    named = dataclasses.replace(snap.gpu_info[0], name="H100 [/]x[red]y")
    lost = model.GpuSample(index=1, timestamp=0.0, lost=True, error="gone [/] [bold]now")
    print_snapshot(dataclasses.replace(snap, gpu_info=(named, snap.gpu_info[1]), gpus=(snap.gpus[0], lost)))
    out = capsys.readouterr().out
    assert "GPU 0  H100 [/]x[red]y" in out and "gone [/] [bold]now" in out
