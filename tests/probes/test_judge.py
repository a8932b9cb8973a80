"""judge.py on hand-made snapshots: slowdowns that begin during a run, sagging clocks, the link under load."""

from __future__ import annotations

from typing import Any

import pytest

from gputui.diagnostics.findings import Severity
from gputui.model import GpuProcess, GpuSample, HostSample, Snapshot
from gputui.probes.judge import judge_run, link_under_load, other_users, pcie_link, rejudge_pcie
from gputui.probes.protocol import Error, Result
from gputui.probes.reference import PcieLink
from gputui.probes.result_finding import to_finding
from tests.snapshots import snapshot, system_info

SYSTEM = system_info(cpu_count=32)
T0 = 1000.0
THERMAL = 0x20
POWER_CAP = 0x4


def snap(t: float, **fields: Any) -> Snapshot:
    """A tick at T0 + t whose GPU reports only `fields`: what the judge reads and nothing it might read instead."""
    return snapshot(
        T0 + t, [GpuSample(index=0, timestamp=T0 + t, **fields)], host_sample=HostSample(T0 + t), system=SYSTEM
    )


def stress_run(seconds: int, clock: Any, reasons: Any, temp: Any) -> list[Snapshot]:
    return [
        snap(
            t,
            sm_clock_mhz=clock(t),
            clock_event_reasons_mask=reasons(t),
            temperature_c=temp(t),
            utilization_gpu_pct=100,
        )
        for t in range(seconds)
    ]


def test_thermal_slowdown_and_clock_sag() -> None:
    run = stress_run(
        60,
        clock=lambda t: 1980 if t < 41 else 1410,
        reasons=lambda t: 0 if t < 41 else THERMAL,
        temp=lambda t: 45 + t * 0.65,
    )
    judged = judge_run(run, 0, T0)
    assert judged.text.startswith("thermal slowdown began after 41 s; SM clock 1980 -> 1410 MHz")
    assert "temperature 45 -> 83 °C" in judged.text
    assert judged.worsened
    assert (judged.sm_clock_start_mhz, judged.sm_clock_end_mhz, judged.samples) == (1980, 1410, 60)


def test_steady_run_with_power_cap_is_not_worse() -> None:
    run = stress_run(30, clock=lambda t: 1755, reasons=lambda t: 0 if t < 5 else POWER_CAP, temp=lambda t: 60)
    judged = judge_run(run, 0, T0)
    assert judged.text == "power cap began after 5 s; SM clock held at 1755 MHz; temperature 60 -> 60 °C (max)"
    assert not judged.worsened


def test_idle_clocks_before_the_load_do_not_count_as_the_start() -> None:
    run = [snap(0, sm_clock_mhz=345, utilization_gpu_pct=0)]
    run += [snap(t, sm_clock_mhz=1980, utilization_gpu_pct=100) for t in range(1, 10)]
    judged = judge_run(run, 0, T0)
    assert (judged.sm_clock_start_mhz, judged.sm_clock_end_mhz) == (1980, 1980)
    assert not judged.worsened


def test_a_slowdown_present_from_the_start_is_named_as_such() -> None:
    run = stress_run(10, clock=lambda t: 1200, reasons=lambda t: THERMAL, temp=lambda t: 88)
    judged = judge_run(run, 0, T0)
    assert "already held back at the start: thermal slowdown" in judged.text
    assert judged.onsets == ()


def test_snapshots_before_the_start_and_of_other_gpus_are_ignored() -> None:
    before = snap(-5, sm_clock_mhz=1980, clock_event_reasons_mask=THERMAL)
    judged = judge_run([before], 0, T0)
    assert judged.samples == 0 and not judged.worsened
    assert "not judged" in judged.text
    assert judge_run(stress_run(5, lambda t: 1, lambda t: 0, lambda t: 1), 3, T0).samples == 0


def test_lost_gpu_and_xids() -> None:
    run = [snap(0, sm_clock_mhz=1980), snap(1, sm_clock_mhz=1980, xid_events=(79,)), snap(2, lost=True)]
    judged = judge_run(run, 0, T0)
    assert judged.lost_after_s == 2.0
    assert "fell off the bus after 2 s" in judged.text and "XID 79" in judged.text
    assert judged.worsened


def test_link_under_load_takes_the_fastest_reading() -> None:
    run = [snap(0, pcie_gen=1, pcie_width=16), snap(1, pcie_gen=5, pcie_width=16), snap(2, pcie_gen=2, pcie_width=16)]
    assert pcie_link(run[0], 0) == PcieLink(1, 16, 5, 16)
    assert link_under_load(run, 0) == PcieLink(5, 16, 5, 16)
    assert link_under_load([], 0) is None
    assert pcie_link(run[0], 7) is None


def test_rejudge_pcie_with_the_link_under_load() -> None:
    idle_judged = Result(
        "pcie",
        "cuda:0 NVIDIA H100 80GB HBM3",
        False,
        {"h2d_pinned_gb_s": 50.0, "d2h_pinned_gb_s": 48.0},
        "H2D 50.0 GB/s ... the link trained at Gen1 x16",
    )
    judged = rejudge_pcie(idle_judged, PcieLink(5, 16, 5, 16))
    assert judged.ok
    assert judged.verdict.startswith("H2D 50.0 GB/s = 79% of Gen5 x16")
    assert judged.figures["h2d_pinned_gb_s"] == 50.0
    cpu = Result("pcie", "cpu", True, {"copy_gb_s": 9.0}, "cpu run")
    assert rejudge_pcie(cpu, PcieLink(5, 16, 5, 16)) is cpu


def test_other_users_excludes_our_own_pids() -> None:
    procs = (GpuProcess(4242, 10**9), GpuProcess(77, None), GpuProcess(4242, 10**9))
    snapshot = snap(0, processes=procs)
    assert other_users(snapshot, 0) == (77, 4242)
    assert other_users(snapshot, 0, own_pids=[77]) == (4242,)
    assert other_users(snapshot, 1) == ()


@pytest.mark.parametrize(
    ("final", "severity"),
    [
        (Result("stress", "cuda:0 X", True, {"tflops": 800.0}, "healthy"), Severity.INFO),
        (Result("stress", "cuda:0 X", False, {"tflops": 400.0}, "below 70%"), Severity.WARNING),
        (Result("stress", "cuda:0 X", False, {"mismatches": 2.0}, "FAULTY", faulty=True), Severity.CRITICAL),
        (Error("stress", "crashed", "ended with signal SIGSEGV", "Segmentation fault"), Severity.WARNING),
        (Error("pcie", "no_torch", "torch missing"), Severity.INFO),
    ],
)
def test_to_finding_severity(final: Result | Error, severity: Severity) -> None:
    finding = to_finding(final, 0, T0)
    assert finding.severity == severity
    assert finding.rule == f"probe_{final.probe}" and finding.gpus == (0,)
    assert not finding.is_open


def test_to_finding_adds_what_happened_during_the_run() -> None:
    run = stress_run(50, lambda t: 1980 if t < 41 else 1410, lambda t: 0 if t < 41 else THERMAL, lambda t: 70)
    result = Result("stress", "cuda:0 X", True, {"tflops": 800.0, "pct_of_peak": None}, "healthy")
    finding = to_finding(result, 0, T0, judge_run(run, 0, T0))
    assert finding.severity == Severity.WARNING
    assert "thermal slowdown began after 41 s" in finding.advice
    assert [(e.key, e.label, e.value, e.unit) for e in finding.evidence] == [
        ("tflops", "matmul rate", 800.0, "TFLOP/s")
    ]
    assert finding.title.endswith("; thermal slowdown began after 41 s")
    assert ".venv/bin/pip install torch" in to_finding(Error("pcie", "no_torch", "x"), None, T0).advice


def _mig_snap(mig_slice: str | None = None) -> Snapshot:
    """GPU 0 in MIG mode: pid 10 in GI 1, pids 20 and 21 in GI 2."""
    from gputui.model import MigDevice, MigState

    def proc(pid: int, gi: int) -> GpuProcess:
        return GpuProcess(pid, 10**9, gpu_instance_id=gi, compute_instance_id=0)

    one = MigDevice(0, uuid="MIG-aaaa", profile="3g.40gb", gpu_instance_id=1, processes=(proc(10, 1),))
    two = MigDevice(1, uuid="MIG-bbbb", profile="3g.40gb", gpu_instance_id=2, processes=(proc(20, 2), proc(21, 2)))
    sample = GpuSample(
        index=0, timestamp=T0, processes=(proc(10, 1), proc(20, 2), proc(21, 2)), mig=MigState(True, True, (one, two))
    )
    return snapshot(T0, [sample], host_sample=HostSample(T0), system=system_info(mig_slice=mig_slice))


def test_a_probe_on_a_mig_gpu_runs_on_an_instance_and_asks_only_about_its_users() -> None:
    from gputui.probes.judge import mig_device

    whole = snap(0, processes=(GpuProcess(5, None),))
    assert mig_device(whole, 0) is None and other_users(whole, 0) == (5,)
    first = mig_device(_mig_snap(), 0)
    assert first is not None and first.uuid == "MIG-aaaa"
    assert other_users(_mig_snap(), 0) == (10,)  # GI 2's users are isolated from a probe in GI 1
    given = _mig_snap(mig_slice="MIG-bbbb")  # the slice this process was given
    assert mig_device(given, 0).uuid == "MIG-bbbb"  # type: ignore[union-attr]
    assert other_users(given, 0) == (20, 21)
